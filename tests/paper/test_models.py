"""Specification of minitorch.paper.models: the paper's attention-only models (chapter 03).

A layer has H heads of full width n: W_Q, W_K, W_V are (H n) x n and W_O is
n x (H n), acting on column vectors (q_i = W_Q x_i). No biases, no MLP, no
LayerNorm; weights start as N(0, 0.02^2). The sink-free normalisers (minitorch.paper.sink_free) may add
a learned sink logit per head (layers.l.sink_logit, (H, 1, 1, 1)) or an output gate
(layers.l.W_G.weight, (H n) x n, applied as o^h_i ⊙ σ(W_G^h x_i) before W_O).
"""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from minitorch.paper.attention import causal_mask, get_normaliser
from minitorch.paper.models import (
    AttentionLayer, ResidualModel, SingleLayerModel, build_model, load_model, save_model,
)
from minitorch.paper.task import make_batch, make_inputs

SINK_FREE = ["softmax1", "sink_logit", "sigmoid", "softpick", "gated"]


def inputs(batch=3, length=6, width=8, seed=0):
    x, _ = make_inputs(batch, np.random.default_rng(seed), length=length, width=width)
    return x


def layer_by_formula(layer: AttentionLayer, x: np.ndarray, normaliser: str) -> tuple[np.ndarray, np.ndarray]:
    """One layer written out with column vectors, head by head, sequence by sequence."""
    n, heads = layer.width, layer.heads
    batch, length, _ = x.shape
    W_Q, W_K, W_V, W_O = (linear.weight.data for linear in (layer.W_Q, layer.W_K, layer.W_V, layer.W_O))
    W_G = layer.W_G.weight.data if normaliser == "gated" else None
    output = np.zeros((batch, length, n))
    weights = np.zeros((batch, heads, length, length))
    for b in range(batch):
        head_outputs = []
        for h in range(heads):
            rows = slice(h * n, (h + 1) * n)  # head h's block of W_Q, W_K, W_V
            q = np.array([W_Q[rows] @ x[b, i] for i in range(length)])  # q_i = W_Q^h x_i
            k = np.array([W_K[rows] @ x[b, i] for i in range(length)])
            v = np.array([W_V[rows] @ x[b, i] for i in range(length)])
            scores = np.array([[q[i] @ k[kk] for kk in range(length)] for i in range(length)])  # s_ik = q_i . k_k
            own = {"sink_logit": layer.sink_logit.data[h, 0]} if normaliser == "sink_logit" else {}  # head h's S
            a = get_normaliser(normaliser)(minitorch.tensor(scores), causal_mask(length), **own).data
            weights[b, h] = a
            o = np.array([sum(a[i, kk] * v[kk] for kk in range(length)) for i in range(length)])
            if W_G is not None:  # o^h_i ⊙ σ(W_G^h x_i)
                o = o * np.array([1.0 / (1.0 + np.exp(-W_G[rows] @ x[b, i])) for i in range(length)])
            head_outputs.append(o)
        joined = np.concatenate(head_outputs, axis=1)  # (L, H n): heads concatenated
        output[b] = np.array([W_O @ joined[i] for i in range(length)])
    return output, weights


# ----------------------------------------------------------------------
# parameters


@pytest.mark.parametrize("heads", [1, 2, 4])
def test_heads_have_full_width_so_W_QKV_are_Hn_by_n_and_W_O_is_n_by_Hn(heads):
    layer = AttentionLayer(width=8, heads=heads, normaliser="softmax", rng=np.random.default_rng(0))
    for name in ("W_Q", "W_K", "W_V"):
        shape = getattr(layer, name).weight.shape
        assert shape == (heads * 8, 8), f"{name} should be (H n) x n = ({heads * 8}, 8), got {shape}"
    assert layer.W_O.weight.shape == (8, heads * 8), (
        f"W_O should be n x (H n) = (8, {heads * 8}), got {layer.W_O.weight.shape}"
    )


@pytest.mark.parametrize("layers, heads", [(1, 1), (2, 2), (4, 4)])
def test_parameter_names_and_count(layers, heads):
    model = ResidualModel(width=16, heads=heads, layers=layers)
    names = [name for name, _ in model.named_parameters()]
    expected = [f"layers.{l}.{w}.weight" for l in range(layers) for w in ("W_Q", "W_K", "W_V", "W_O")]
    assert names == expected, f"parameter names should be {expected}, got {names}"
    count = sum(p.size for p in model.parameters())
    assert count == layers * 4 * heads * 16 * 16, (
        f"a {layers}x{heads} model has layers * 4 * H n^2 parameters, got {count}"
    )


@pytest.mark.parametrize("model", [SingleLayerModel(heads=2), ResidualModel(heads=2, layers=2)],
                         ids=["single", "residual"])
def test_models_have_no_biases(model):
    for index, layer in enumerate(model.layers):
        for name in ("W_Q", "W_K", "W_V", "W_O"):
            assert getattr(layer, name).bias is None, f"layers.{index}.{name} has a bias; the paper's models have none"


def test_initial_weights_are_normal_with_standard_deviation_0_02():
    model = ResidualModel(width=16, heads=4, layers=4, seed=0)
    values = np.concatenate([p.data.ravel() for p in model.parameters()])  # 16,384 draws
    assert abs(values.std() - 0.02) < 0.001, f"initial weights should have std 0.02, got {values.std():.5f}"
    assert abs(values.mean()) < 0.001, f"initial weights should have mean 0, got {values.mean():.5f}"
    share_within_one_std = (np.abs(values) < 0.02).mean()
    assert abs(share_within_one_std - 0.6827) < 0.02, (
        f"weights look not normal: {share_within_one_std:.3f} lie within one std"
    )


def test_the_seed_fixes_the_initial_weights():
    same = [ResidualModel(heads=2, layers=2, seed=3).state_dict() for _ in range(2)]
    other = ResidualModel(heads=2, layers=2, seed=4).state_dict()
    assert all(np.array_equal(same[0][name], same[1][name]) for name in same[0]), "same seed, different weights"
    assert not np.array_equal(same[0]["layers.0.W_Q.weight"], other["layers.0.W_Q.weight"]), (
        "different seeds, same weights"
    )


# ----------------------------------------------------------------------
# the forward pass


@pytest.mark.parametrize("normaliser", ["softmax", "relu", *SINK_FREE])
@pytest.mark.parametrize("heads", [1, 2])
def test_single_layer_model_computes_W_O_times_the_attention_weighted_values(normaliser, heads):
    model = SingleLayerModel(width=8, heads=heads, normaliser=normaliser, seed=1)
    for parameter in model.parameters():  # larger weights, so that the attention is far from uniform
        parameter.data *= 25.0
    if normaliser == "sink_logit":  # a different S per head, so that a head given another's S would show
        model.layers[0].sink_logit.data[...] = np.arange(heads).reshape(heads, 1, 1, 1) - 0.5
    x = inputs(width=8)
    prediction, (weights,) = model(x, return_attention=True)
    expected_output, expected_weights = layer_by_formula(model.layers[0], x, normaliser)
    assert np.allclose(weights, expected_weights), (
        "the attention weights differ from the normaliser of s_ik = (W_Q x_i) . (W_K x_k)"
    )
    assert np.allclose(prediction.data, expected_output), (
        "the prediction differs from W_O [head outputs concatenated], head output sum_k a_ik W_V x_k "
        "(weights act on column vectors: nn.Linear computes x W^T)"
    )


@pytest.mark.parametrize("normaliser", ["softmax", "relu", *SINK_FREE])
def test_residual_model_adds_each_layer_update_to_the_stream(normaliser):
    model = ResidualModel(width=8, heads=2, layers=2, normaliser=normaliser, seed=2)
    for parameter in model.parameters():
        parameter.data *= 25.0
    x = inputs(width=8)
    stream = x
    for layer in model.layers:
        update, _ = layer_by_formula(layer, stream, normaliser)
        stream = stream + update  # x <- x + Attention_l(x)
    assert np.allclose(model(x).data, stream), (
        "a residual model's prediction is x + update_1 + update_2 + ... layer by layer"
    )


@pytest.mark.parametrize("layers, heads", [(1, 1), (2, 2), (4, 3)])
def test_return_attention_gives_one_B_H_L_L_array_per_layer(layers, heads):
    model = ResidualModel(width=8, heads=heads, layers=layers)
    prediction, attention = model(inputs(batch=5, length=7, width=8), return_attention=True)
    assert prediction.shape == (5, 7, 8), f"prediction should be (B, L, n) = (5, 7, 8), got {prediction.shape}"
    assert isinstance(attention, list) and len(attention) == layers, (
        f"expected a list of {layers} arrays, got {type(attention).__name__} of length {len(attention)}"
    )
    for index, weights in enumerate(attention):
        assert isinstance(weights, np.ndarray), f"layer {index}: attention should be a NumPy array"
        assert weights.shape == (5, heads, 7, 7), (
            f"layer {index}: attention should be (B, H, L, L) = (5, {heads}, 7, 7), got {weights.shape}"
        )


def test_softmax_model_rows_sum_to_one_and_relu_model_rows_need_not():
    x = inputs(width=8)
    _, (softmax_weights,) = SingleLayerModel(width=8, normaliser="softmax")(x, return_attention=True)
    _, (relu_weights,) = SingleLayerModel(width=8, normaliser="relu")(x, return_attention=True)
    assert np.allclose(softmax_weights.sum(-1), 1.0), "softmax attention rows must sum to 1"
    assert not np.allclose(relu_weights.sum(-1), 1.0), "untrained ReLU rows summing to 1 would be a coincidence"
    assert (relu_weights[..., causal_mask(6)] == 0).all(), "ReLU weights on future keys must be 0"


def test_a_float32_model_computes_in_float32():
    model = SingleLayerModel(width=8, dtype=np.float32)
    assert all(p.dtype == np.float32 for p in model.parameters())
    assert model(inputs(width=8)).dtype == np.float32, "a float32 model should turn float64 inputs into float32"


# ----------------------------------------------------------------------
# the sink-free normalisers' extra parameters


EXTRA_PARAMETERS = {"sink_logit": ["sink_logit"], "gated": ["W_G.weight"]}


@pytest.mark.parametrize("normaliser", SINK_FREE)
def test_a_sink_free_model_has_the_parameters_its_normaliser_declares(normaliser):
    model = ResidualModel(width=8, heads=3, layers=2, normaliser=normaliser)
    names = [name for name, _ in model.named_parameters()]
    per_layer = ["W_Q.weight", "W_K.weight", "W_V.weight", "W_O.weight", *EXTRA_PARAMETERS.get(normaliser, [])]
    expected = [f"layers.{l}.{name}" for l in range(2) for name in per_layer]
    assert names == expected, f"a {normaliser} model's parameters should be {expected}, got {names}"
    parameters = dict(model.named_parameters())
    if normaliser == "sink_logit":
        S = parameters["layers.0.sink_logit"]
        assert S.shape == (3, 1, 1, 1) and (S.data == 0).all(), (
            f"the sink logit should be one S per head, shape (H, 1, 1, 1) = (3, 1, 1, 1), starting at 0; got {S.shape}"
        )
    if normaliser == "gated":
        shape = parameters["layers.0.W_G.weight"].shape
        assert shape == (24, 8), f"W_G should be (H n) x n = (24, 8), like W_Q; got {shape}"


@pytest.mark.parametrize("normaliser", ["sink_logit", "gated"])
def test_extra_parameters_come_after_W_O_so_a_one_layer_model_shares_the_softmax_models_weights(normaliser):
    extended, plain = SingleLayerModel(heads=2, normaliser=normaliser, seed=3), SingleLayerModel(heads=2, seed=3)
    for name, values in plain.state_dict().items():
        assert np.array_equal(extended.state_dict()[name], values), (
            f"{name} of a {normaliser} model differs from the softmax model's of the same seed: "
            f"draw the normaliser's extra weights after W_O"
        )


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("layers", [1, 2], ids=["single", "residual_2x2"])
@pytest.mark.parametrize("normaliser", SINK_FREE)
def test_a_sink_free_model_runs_forward_and_backward(normaliser, layers, dtype):
    model = build_model(width=8, heads=2, layers=layers, normaliser=normaliser, residual=layers > 1, seed=0,
                        dtype=dtype)
    x, y, _ = make_batch(4, np.random.default_rng(0), residual=layers > 1, length=6, width=8)
    prediction = model(x)
    ((prediction - y) ** 2).mean().backward()
    assert prediction.dtype == dtype, f"a {np.dtype(dtype).name} {normaliser} model predicted in {prediction.dtype}"
    for name, parameter in model.named_parameters():
        assert parameter.grad is not None, f"{name} got no gradient: the loss does not reach it"
        assert parameter.grad.shape == parameter.shape and parameter.grad.dtype == dtype, (
            f"{name}: gradient of shape {parameter.grad.shape} and dtype {parameter.grad.dtype}, "
            f"expected {parameter.shape} and {np.dtype(dtype).name}"
        )
        assert np.isfinite(parameter.grad).all(), f"{name}: the gradient is not finite"


# ----------------------------------------------------------------------
# gradients: the whole model against finite differences


MODEL_KINDS = {
    "single_layer_softmax": dict(layers=1, heads=1, normaliser="softmax", residual=False),
    "single_layer_relu": dict(layers=1, heads=1, normaliser="relu", residual=False),
    "residual_2x2_softmax": dict(layers=2, heads=2, normaliser="softmax", residual=True),
    "residual_2x2_relu": dict(layers=2, heads=2, normaliser="relu", residual=True),
    **{f"single_layer_{name}": dict(layers=1, heads=2, normaliser=name, residual=False) for name in SINK_FREE},
    **{f"residual_2x2_{name}": dict(layers=2, heads=2, normaliser=name, residual=True) for name in SINK_FREE},
}


@pytest.mark.parametrize("kind", list(MODEL_KINDS))
def test_model_gradient_matches_finite_differences_in_float64(kind):
    model = build_model(width=5, seed=0, **MODEL_KINDS[kind])
    names = [name for name, _ in model.named_parameters()]
    rng = np.random.default_rng(0)
    # weights of std 0.5 instead of 0.02: attention far from uniform, gradients far from zero
    start = [rng.normal(0.0, 0.5, size=parameter.shape) for parameter in model.parameters()]
    x = inputs(batch=2, length=4, width=5)

    def model_output(x, *weights):
        for name, weight in zip(names, weights):  # run the model with gradcheck's leaves as its weights
            *path, attribute = name.split(".")
            owner = model
            for step in path:
                owner = owner[int(step)] if step.isdigit() else getattr(owner, step)
            setattr(owner, attribute, weight)
        return model(x)

    model_output.__name__ = f"{kind} model"
    assert minitorch.gradcheck(model_output, [x, *start])


# ----------------------------------------------------------------------
# saving, loading, bad input


@pytest.mark.parametrize("kind", list(MODEL_KINDS))
def test_save_then_load_gives_identical_outputs(kind, tmp_path):
    model = build_model(width=8, seed=5, **MODEL_KINDS[kind])
    for parameter in model.parameters():  # as if trained: not the weights a fresh model would draw
        parameter.data += 0.1
    path = tmp_path / "model.npz"
    save_model(model, path)
    loaded = load_model(path)
    assert type(loaded) is type(model) and loaded.config == model.config, (
        f"load_model rebuilt {type(loaded).__name__} {loaded.config}, expected {type(model).__name__} {model.config}"
    )
    x = inputs(width=8)
    original, original_attention = model(x, return_attention=True)
    again, again_attention = loaded(x, return_attention=True)
    assert np.array_equal(original.data, again.data), "a loaded model must give exactly the saved model's outputs"
    assert all(np.array_equal(a, b) for a, b in zip(original_attention, again_attention))


@pytest.mark.parametrize("shape", [(3, 6), (3, 6, 7), (2, 3, 6, 8)])
def test_wrong_input_shape_raises_value_error_naming_the_expected_shape(shape):
    model = SingleLayerModel(width=8)
    with pytest.raises(ValueError, match=r"\(B, L, 8\)"):
        model(np.zeros(shape))


def test_unknown_normaliser_fails_when_the_model_is_built():
    with pytest.raises(ValueError, match="softmax"):
        SingleLayerModel(normaliser="cosine")


@pytest.mark.parametrize("arguments", [dict(heads=0), dict(layers=0)])
def test_non_positive_heads_or_layers_raise_value_error(arguments):
    name = next(iter(arguments))
    with pytest.raises(ValueError, match=name):
        ResidualModel(**arguments)


def test_build_model_rejects_a_multi_layer_model_without_residual():
    with pytest.raises(ValueError, match="layers"):
        build_model(width=8, heads=1, layers=2, normaliser="softmax", residual=False)


def test_model_name_says_normaliser_layers_and_heads():
    assert ResidualModel(heads=4, layers=4, normaliser="relu").name == "relu_4x4"
    assert SingleLayerModel(normaliser="softmax").name == "softmax_1x1"


def test_save_model_writes_exactly_the_path_it_is_given(tmp_path):
    model = build_model(5, 1, 1, "softmax", residual=False)
    path = tmp_path / "weights.bin"  # no .npz suffix: numpy would otherwise add one
    save_model(model, path)
    assert path.is_file()
    np.testing.assert_array_equal(load_model(path).layers[0].W_Q.weight.data, model.layers[0].W_Q.weight.data)


@pytest.mark.parametrize("path", ["nope", None, 3])
def test_a_training_path_that_is_no_function_is_refused_when_it_is_set(path):
    """use_training_path('nope') is refused when set, not at the next for_training: 'str' object is not callable."""
    from minitorch.paper import models

    before = models.training_path()
    with pytest.raises(TypeError, match="use_training_path: path must be a function from a model"):
        models.use_training_path(path)
    assert models.training_path() is before, "a refused path must leave the training path as it was"
