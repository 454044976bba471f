"""Specification of minitorch.fast.attention: the fused attention gives the readable attention's numbers.

The fused `attend` and `attend_stacked` must equal `minitorch.paper.attention.attend` (one minitorch
operation per step) in values and gradients, to float precision.
"""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from minitorch.gradcheck import gradcheck
from minitorch.paper import attention
from minitorch.paper.attention import causal_mask
from minitorch.fast.attention import attend, attend_stacked


def readable_attend(queries, keys, values, normaliser):
    """The reference: attention.attend, one minitorch operation per step."""
    return attention.attend(queries, keys, values, normaliser)[0]


@pytest.mark.parametrize("normaliser", ["softmax", "relu"])
def test_fused_attend_gradient_matches_finite_differences(normaliser):
    rng = np.random.default_rng(2)
    queries, keys, values = (rng.normal(size=(2, 2, 5, 3)) for _ in range(3))
    gradcheck(lambda q, k, v: attend(q, k, v, normaliser)[0], [queries, keys, values])


@pytest.mark.parametrize("normaliser", ["softmax", "relu", "softmax1", "sigmoid", "softpick"])
def test_fused_attend_gives_the_values_and_gradients_of_the_unfused_composition(normaliser):
    rng = np.random.default_rng(3)
    arrays = [rng.normal(size=(3, 2, 6, 4)) for _ in range(3)]
    grad_output = rng.normal(size=(3, 2, 6, 4))
    results = []
    for function in (lambda q, k, v: attend(q, k, v, normaliser)[0], lambda q, k, v: readable_attend(q, k, v, normaliser)):
        leaves = [minitorch.tensor(a, requires_grad=True) for a in arrays]
        output = function(*leaves)
        output.backward(grad_output)
        results.append((output.data, [leaf.grad for leaf in leaves]))
    (fused, fused_grads), (plain, plain_grads) = results
    np.testing.assert_allclose(fused, plain, rtol=1e-12, atol=1e-14, err_msg="fused attend: wrong output")
    for name, got, expected in zip("QKV", fused_grads, plain_grads):
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-13, err_msg=f"fused attend: wrong dℓ/d{name}")


def test_attend_passes_gradients_to_a_normaliser_with_its_own_parameter(monkeypatch):
    """A normaliser may hold learned numbers (chapter 10): the fused backward must reach them."""
    monkeypatch.setattr(attention, "NORMALISERS", dict(attention.NORMALISERS))
    temperature = minitorch.tensor(np.array(0.7), requires_grad=True)

    @attention.register_normaliser("tempered")
    def tempered(scores, future):
        return minitorch.softmax((scores * temperature).masked_fill(future, -np.inf), axis=-1)

    rng = np.random.default_rng(4)
    queries, keys, values = (minitorch.tensor(rng.normal(size=(2, 5, 3))) for _ in range(3))
    attend(queries, keys, values, "tempered")[0].sum().backward()
    fused = temperature.grad.copy()
    temperature.zero_grad()
    readable_attend(queries, keys, values, "tempered").sum().backward()
    assert fused is not None and np.isclose(fused, temperature.grad, rtol=1e-10), (
        f"the normaliser's parameter got gradient {fused} through attend, {temperature.grad} without fusion"
    )


def test_attend_stacked_equals_attend_on_the_three_slices_values_and_gradients():
    rng = np.random.default_rng(5)
    stacked = rng.normal(size=(3, 2, 4, 6, 3))  # (3, H, B, L, d)
    grad_output = rng.normal(size=(2, 4, 6, 3))
    leaf = minitorch.tensor(stacked, requires_grad=True)
    output, weights = attend_stacked(leaf, "softmax")
    output.backward(grad_output)
    parts = [minitorch.tensor(stacked[index], requires_grad=True) for index in range(3)]
    expected, expected_weights = attend(*parts, "softmax")
    expected.backward(grad_output)
    np.testing.assert_allclose(output.data, expected.data, rtol=1e-12, err_msg="attend_stacked: wrong output")
    np.testing.assert_allclose(weights.data, expected_weights.data, rtol=1e-12, err_msg="attend_stacked: wrong weights")
    for index, name in enumerate("QKV"):
        np.testing.assert_allclose(leaf.grad[index], parts[index].grad, rtol=1e-10, atol=1e-14,
                                   err_msg=f"attend_stacked: slice {index} should hold dℓ/d{name}")


def test_attend_stacked_rejects_a_first_axis_other_than_three():
    with pytest.raises(ValueError, match=r"\(3, \.\.\., L, d\)"):
        attend_stacked(minitorch.tensor(np.zeros((2, 4, 5, 3))))
