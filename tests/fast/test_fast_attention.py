"""Specification of minitorch.fast.attention: the fused attention gives the readable attention's numbers.

`attend_stacked` on queries, keys and values stacked as (3, ..., L, d) must equal
`minitorch.paper.attention.attend` on the three slices (one minitorch operation per step), in values and
gradients, to float precision, for every normaliser; its own gradient must match finite differences.
"""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from minitorch.fast.attention import attend_stacked, fast_normaliser
from minitorch.gradcheck import gradcheck
from minitorch.paper import attention

NORMALISER_NAMES = sorted(attention.NORMALISERS)


def with_normaliser_parameters(normaliser: str, heads: int, rng) -> dict:
    """The parameters `normaliser` declares (e.g. sink_logit), drawn at random, as leaves that need a gradient."""
    declared = attention.normaliser_options(normaliser).parameters
    return {name: minitorch.tensor(rng.normal(size=initial(heads).shape), requires_grad=True)
            for name, initial in declared.items()}


@pytest.mark.parametrize("normaliser", ["softmax", "relu", "sink_logit"])
def test_fused_attention_gradient_matches_finite_differences(normaliser):
    rng = np.random.default_rng(2)
    stacked = rng.normal(size=(3, 2, 2, 5, 3))  # (3, H, B, L, d)
    parameters = {name: p.data for name, p in with_normaliser_parameters(normaliser, 2, rng).items()}
    names = list(parameters)

    def fused(projected, *values):
        return attend_stacked(projected, normaliser, **dict(zip(names, values)))[0]

    gradcheck(fused, [stacked, *parameters.values()])


@pytest.mark.parametrize("normaliser", NORMALISER_NAMES)
def test_fused_attention_gives_the_values_and_gradients_of_the_readable_composition(normaliser):
    rng = np.random.default_rng(3)
    stacked = rng.normal(size=(3, 2, 3, 6, 4))  # (3, H, B, L, d)
    grad_output = rng.normal(size=(2, 3, 6, 4))
    parameters = with_normaliser_parameters(normaliser, 2, rng)
    leaf = minitorch.tensor(stacked, requires_grad=True)
    output, weights = attend_stacked(leaf, normaliser, **parameters)
    output.backward(grad_output)
    fused_parameter_grads = {name: p.grad.copy() for name, p in parameters.items()}
    for p in parameters.values():
        p.zero_grad()
    parts = [minitorch.tensor(stacked[index], requires_grad=True) for index in range(3)]
    expected, expected_weights = attention.attend(*parts, normaliser, **parameters)
    expected.backward(grad_output)
    np.testing.assert_allclose(output.data, expected.data, rtol=1e-12, atol=1e-14,
                               err_msg="fused attention: wrong output")
    np.testing.assert_allclose(weights.data, expected_weights.data, rtol=1e-12, atol=1e-14,
                               err_msg="fused attention: wrong weights")
    for index, name in enumerate("QKV"):
        np.testing.assert_allclose(leaf.grad[index], parts[index].grad, rtol=1e-10, atol=1e-13,
                                   err_msg=f"fused attention: slice {index} should hold dℓ/d{name}")
    for name, p in parameters.items():
        np.testing.assert_allclose(fused_parameter_grads[name], p.grad, rtol=1e-10, atol=1e-13,
                                   err_msg=f"fused attention: the normaliser's parameter {name} got the wrong gradient")


def test_a_normaliser_holding_its_own_learned_number_gets_its_gradient(monkeypatch):
    """A normaliser may close over learned numbers (chapter 10): the fused backward must reach them."""
    monkeypatch.setattr(attention, "NORMALISERS", dict(attention.NORMALISERS))
    temperature = minitorch.tensor(np.array(0.7), requires_grad=True)

    @attention.register_normaliser("tempered")
    def tempered(scores, future):
        return attention.softmax_attention(scores * temperature, future)

    stacked = minitorch.tensor(np.random.default_rng(4).normal(size=(3, 2, 5, 3)))  # data: no gradient of its own
    attend_stacked(stacked, "tempered")[0].sum().backward()
    fused = temperature.grad.copy()
    temperature.zero_grad()
    attention.attend(*(stacked[index] for index in range(3)), "tempered")[0].sum().backward()
    assert np.isclose(fused, temperature.grad, rtol=1e-10), (
        f"the normaliser's number got gradient {fused} through the fused attention, {temperature.grad} without")


@pytest.mark.parametrize("normaliser", ["softmax", "relu"])
def test_the_array_normalisers_are_the_registered_ones_as_arrays(normaliser):
    if fast_normaliser(normaliser) is None:  # the edition replaced the copy by `return None`
        pytest.skip(f"this student edition removed the array copy of the {normaliser} normaliser: it repeats "
                    f"{'exercises 2.4 and 3.2' if normaliser == 'softmax' else 'exercise 3.3'}; "
                    f"the fused attention runs yours")
    rng = np.random.default_rng(6)
    scores, grad = rng.normal(size=(2, 3, 7, 7)), rng.normal(size=(2, 3, 7, 7))
    future = attention.causal_mask(7)
    weights, backward = fast_normaliser(normaliser)(scores, future)
    leaf = minitorch.tensor(scores, requires_grad=True)
    expected = attention.get_normaliser(normaliser)(leaf, future)
    expected.backward(grad)
    np.testing.assert_allclose(weights, expected.data, rtol=1e-13, atol=1e-15, err_msg=f"{normaliser}: weights")
    np.testing.assert_allclose(backward(grad), leaf.grad, rtol=1e-12, atol=1e-14, err_msg=f"{normaliser}: ∂ℓ/∂S")


def test_a_name_registered_to_another_function_has_no_array_copy(monkeypatch):
    monkeypatch.setattr(attention, "NORMALISERS", {**attention.NORMALISERS, "relu": attention.softmax_attention})
    assert fast_normaliser("relu") is None, "a replaced 'relu' must run as registered, not as the book's copy"
    assert fast_normaliser("softpick") is None


def test_attend_stacked_rejects_a_first_axis_other_than_three():
    with pytest.raises(ValueError, match=r"\(3, \.\.\., L, d\)"):
        attend_stacked(minitorch.tensor(np.zeros((2, 4, 5, 3))))


def test_attend_stacked_names_an_array_given_for_a_tensor():
    with pytest.raises(TypeError, match=r"attend_stacked: projected must be a Tensor of shape \(3, ..., L, d\), got "
                                        r"ndarray"):
        attend_stacked(np.zeros((3, 1, 4, 2)), "softmax")


def test_attend_stacked_names_a_parameter_its_normaliser_does_not_take():
    stacked = minitorch.tensor(np.random.default_rng(0).normal(size=(3, 1, 4, 2)), requires_grad=True)
    with pytest.raises(TypeError, match=r"attend_stacked: sink_logit=.* is not a parameter of the normaliser "
                                        r"'softmax', which takes no parameters"):
        attend_stacked(stacked, "softmax", sink_logit=minitorch.tensor(0.0))  # not '_scores_as_tensor() got ...'


@pytest.mark.parametrize("normaliser", ["softmax", "relu"])
def test_attend_stacked_of_no_positions_gives_the_readable_paths_empty_results(normaliser):
    stacked = minitorch.tensor(np.zeros((3, 2, 0, 4)), requires_grad=True)
    fused = attend_stacked(stacked, normaliser)
    readable = attention.attend(stacked[0], stacked[1], stacked[2], normaliser)
    assert [t.shape for t in fused] == [t.shape for t in readable] == [(2, 0, 4), (2, 0, 0)], \
        "L = 0: the fused attention must give what the readable one gives (it refused a maximum over no keys)"
    fused[0].sum().backward()
    assert stacked.grad.shape == (3, 2, 0, 4)
