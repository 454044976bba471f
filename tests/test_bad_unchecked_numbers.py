"""Numbers and flags checked where they enter: data that is not numbers, values that overflow a dtype, a flag that
is not True or False, scores the ReLU path would turn into NaN, a gradcheck point where no finite difference can
be measured, an index or a result too large; each refused in one line of our own, never NumPy's or Python's."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from minitorch import tensor
from minitorch.nn import Linear


@pytest.mark.parametrize("data,culprit", [
    (bytearray(b"12"), "bytearray"),  # read as the character codes 49, 50
    (memoryview(b"ab"), "a memoryview of bytes"),  # 97, 98
    (np.ma.masked_array([1.0, 2.0], mask=[0, 1]), "a masked array: its mask would be dropped"),
])
def test_data_that_is_not_numbers_is_refused(data, culprit):
    with pytest.raises(TypeError, match=f"cannot make a Tensor from {culprit}"):
        tensor(data)


def test_numbers_behind_a_buffer_or_an_unmasked_array_are_accepted():
    np.testing.assert_array_equal(tensor(memoryview(np.array([1.5, 2.5]))).data, [1.5, 2.5])
    np.testing.assert_array_equal(tensor(np.ma.masked_array([1.0, 2.0])).data, [1.0, 2.0])


def test_values_too_large_for_float32_are_refused_not_made_inf():
    with pytest.raises(OverflowError, match="a value of size 1e\\+40 does not fit in float32"):
        tensor([1e40, 1.0], dtype=np.float32)
    layer = Linear(2, 2, dtype=np.float32)
    before = layer.state_dict()
    with pytest.raises(ValueError, match="load_state_dict for Linear: parameter 'weight': a value of size 1e\\+40"):
        layer.load_state_dict({"weight": np.full((2, 2), 1e40), "bias": np.zeros(2)})
    np.testing.assert_array_equal(layer.weight.data, before["weight"], err_msg="a refused load changes nothing")
    assert tensor([np.inf], dtype=np.float32).data[0] == np.inf, "an inf given stays inf: only overflow is refused"


def test_requires_grad_cannot_be_switched_off_inside_a_graph():
    x = tensor([1.0, 2.0], requires_grad=True)
    z = x * 2
    loss = (z * z).sum()
    with pytest.raises(RuntimeError, match="requires_grad = False on the result of 'mul'.*y.detach()"):
        z.requires_grad = False  # backward would stop at z, and x.grad stay None without a word
    loss.backward()
    np.testing.assert_array_equal(x.grad, [8.0, 16.0])


def test_gradcheck_says_when_no_finite_difference_can_be_measured():
    with pytest.raises(ValueError, match=r"element \(0,\) is 1e\+300, where a step of 1e-06 is below float64"):
        minitorch.gradcheck(lambda t: t.sum(), [np.array([1e300, 1.0])])  # it blamed a correct gradient
    with pytest.raises(ValueError, match=r"gradcheck: inputs\[0\] holds NaN \(element \(0,\)\)"):
        minitorch.gradcheck(lambda t: t * t, [np.array([np.nan, 1.0])])
    assert minitorch.gradcheck(lambda t: t.softmax(-1), [np.array([-np.inf, 1.0, 2.0])]), "a masked -inf still works"
    with pytest.raises(minitorch.GradcheckError, match="The inputs reach 1e\\+10, where float64 rounds"):
        minitorch.gradcheck(lambda t: t.sum() * 3, [np.array([1e10, 1.0])])  # imprecise there: says why


def test_an_index_or_a_result_too_large_is_named_by_the_operation():
    with pytest.raises(IndexError, match=r"getitem: x\[9223372036854775808\] on a tensor of shape \(2,\): an index "
                                         r"is out of bounds"):
        tensor([1.0, 2.0])[2**63]
    with pytest.raises(MemoryError, match=r"sum: the result of shape \(1000000000000,\) would need"):
        tensor(np.zeros((0, 10**12))).sum(axis=0)
    with pytest.raises(MemoryError, match=r"sum: the result"):
        tensor(np.zeros((0, 10**12))).mean(axis=0)
    assert tensor(np.zeros((0, 3))).sum(axis=0).shape == (3,), "an empty sum of a small result is zeros"
    with pytest.raises(MemoryError, match=r"add: the result of shape \(1000000, 1000000\) would need"):
        tensor(np.zeros((10**6, 1))) + tensor(np.zeros((1, 10**6)))  # small inputs, a 7 TiB broadcast


@pytest.mark.parametrize("arguments,error,message", [
    (dict(init_std=float("nan")), ValueError, "Linear: init_std must be a finite number >= 0, got nan"),
    (dict(init_std=-1.0), ValueError, "Linear: init_std must be a finite number >= 0, got -1.0"),
    (dict(rng=42), TypeError, r"Linear: rng must be a NumPy Generator .* got 42 \(int\)"),
])
def test_linear_checks_its_initialisation(arguments, error, message):
    with pytest.raises(error, match=message):
        Linear(2, 2, **arguments)


def test_linear_takes_a_list_or_an_array_as_the_model_does():
    layer = Linear(2, 3)
    assert layer([[1.0, 2.0]]).shape == (1, 3) and layer(np.ones((4, 2))).shape == (4, 3)
    with pytest.raises(TypeError, match="cannot combine a Tensor with an object of type str"):
        layer("x")


def test_a_model_checks_the_return_attention_flag():
    from bad_input_helpers import tiny_model

    with pytest.raises(TypeError, match="SingleLayerModel: return_attention must be True or False, got 'no'"):
        tiny_model()(np.zeros((1, 4, 16)), return_attention="no")


@pytest.mark.parametrize("normaliser", ["relu", "softmax", "sigmoid"])
def test_scores_of_inf_or_nan_are_refused_for_every_normaliser(normaliser):
    from bad_input_helpers import tiny_model
    from minitorch.fast import speed_up
    from minitorch.paper.attention import attend

    infinite = tensor(np.full((1, 1, 3, 4), np.inf))
    owner = "softmax: the scores" if normaliser == "softmax" else rf"attend \({normaliser}\): the scores Q Kᵀ"
    with pytest.raises(ValueError, match=rf"{owner} contain \+inf or NaN"):
        attend(infinite, infinite, infinite, normaliser)
    for model in (tiny_model(normaliser=normaliser), speed_up(tiny_model(normaliser=normaliser))):
        with np.errstate(over="ignore", invalid="ignore"), pytest.raises(ValueError, match="contain \\+inf or NaN"):
            model(np.full((1, 4, 16), 1e200))  # the scores overflow; ReLU gave NaN weights


@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_relu_attention_called_on_its_own_refuses_scores_of_inf_or_nan(bad):
    """relu_attention (exercise 3.3) checks its scores outside the student's body, as attend does: +inf times the
    mask's 0 would otherwise give NaN weights with only NumPy's warning."""
    from minitorch.paper.attention import causal_mask, relu_attention

    with pytest.raises(ValueError, match=r"relu_attention \(relu\): the scores Q Kᵀ contain \+inf or NaN"):
        weights = relu_attention(tensor(np.full((3, 3), bad)), causal_mask(3))
        pytest.fail(f"relu_attention of {bad} scores returned {weights.data.tolist()} instead of refusing them")


@pytest.mark.parametrize("bad", [np.inf, np.nan])
@pytest.mark.parametrize("name", ["softmax", "relu", "softmax1", "sink_logit", "sigmoid", "softpick", "gated"])
def test_every_normaliser_called_on_its_own_refuses_scores_of_inf_or_nan(name, bad):
    """softpick_attention turned a +inf score into a row of NaN weights (inf / inf) with only NumPy's warning,
    where softmax_attention and relu_attention refuse such scores: each normaliser checks them as `attend` does."""
    import minitorch.paper  # noqa: F401  (registers the sink-free normalisers)
    from minitorch.paper.attention import causal_mask, get_normaliser, normaliser_options

    scores = np.array([[[[bad, 0.0], [0.0, 1.0]]]])  # (H, B, L, L) = (1, 1, 2, 2), as a layer's
    parameters = {key: tensor(initial(1)) for key, initial in normaliser_options(name).parameters.items()}
    with pytest.raises(ValueError, match=r"contain \+inf or NaN"):
        weights = get_normaliser(name)(tensor(scores), causal_mask(2), **parameters)
        pytest.fail(f"the normaliser {name!r} gave the weights {weights.data.tolist()} for a score of {bad}")


def _inf_at(position, shape=(1, 1, 3, 4), value=np.inf) -> np.ndarray:
    array = np.ones(shape)
    array[position] = value
    return array


@pytest.mark.parametrize("normaliser", ["softmax", "relu", "softpick", "sigmoid"])
@pytest.mark.parametrize("queries, keys, values, culprit", [
    (np.full((1, 1, 3, 4), -np.inf), np.full((1, 1, 3, 4), np.inf), None, "queries, keys and values"),
    (np.ones((1, 1, 3, 4)), np.ones((1, 1, 3, 4)), _inf_at((0, 0, 1, 0)), "values"),  # 0 · inf on row 0
    (np.ones((1, 1, 3, 4)), np.ones((1, 1, 3, 4)), _inf_at((0, 0, 2, 3), value=np.nan), "values"),
    (np.ones((1, 1, 3, 4)), _inf_at((0, 0, 2, 0), value=-np.inf), np.ones((1, 1, 3, 4)), "keys"),  # key 2 "masked"
], ids=["minus-inf-queries", "an-inf-value", "a-nan-value", "a-minus-inf-key"])
@pytest.mark.parametrize("path", ["readable", "fast"])
def test_attend_names_queries_keys_or_values_that_are_not_finite(normaliser, queries, keys, values, culprit, path):
    """-inf scores were read as masked keys (weight 0) and an inf value gave NaN outputs, each without a word where
    the softmax refuses a row of -inf scores; both paths now name the inputs that hold inf or NaN."""
    import minitorch.paper  # noqa: F401  (registers the sink-free normalisers)
    from minitorch.fast.attention import attend_stacked
    from minitorch.paper.attention import attend

    values = queries if values is None else values
    ours = rf"attend \({normaliser}\): the {culprit} hold inf or NaN; attention needs finite numbers"
    if normaliser == "softmax" and culprit.startswith("queries"):  # every score -inf: the softmax's own refusal
        ours = r"softmax: a slice along the softmax axis has every entry masked \(-inf\)"
    with pytest.raises(ValueError, match=ours):
        if path == "fast":
            output, _ = attend_stacked(tensor(np.stack([queries, keys, values])), normaliser)
        else:
            output, _ = attend(tensor(queries), tensor(keys), tensor(values), normaliser)
        pytest.fail(f"attend ({normaliser}) gave {output.data.tolist()} instead of refusing the inputs")


def test_all_equal_inputs_needs_a_content_coordinate():
    from minitorch.paper import theory

    with pytest.raises(ValueError, match=r"all_equal_inputs: contents must be \(B, d\) with d >= 1"):
        theory.all_equal_inputs([], trigger=3)
    with pytest.raises(ValueError, match="all_equal_inputs: contents must be finite numbers"):
        theory.all_equal_inputs([[np.nan] * 13], trigger=3)
    assert theory.all_equal_inputs([[0.5] * 13], trigger=3).shape == (1, 16, 16)


def test_save_refuses_a_dpi_that_gives_an_empty_image(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from minitorch.paper import plotting

    with pytest.raises(ValueError, match="save: dpi=0.001 makes a figure of .* less than 1 pixel across"):
        plotting.save(plt.figure(figsize=(4, 3)), tmp_path / "x.png", dpi=0.001)
    assert not any(tmp_path.iterdir())
    plt.close("all")
