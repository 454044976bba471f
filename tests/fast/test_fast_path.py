"""Specification of minitorch.fast.speed_up: a model on the fast path is the same model, computed faster.

A sped-up model keeps its parameters (the same objects, names and shapes) and gives the readable
model's outputs, attention weights and every gradient, to float precision, for every normaliser;
a short training run on each path ends at the same weights.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from minitorch import fast
from minitorch.fast.layer import FusedAttentionLayer
from minitorch.optim import Adam
from minitorch.paper.attention import NORMALISERS
from minitorch.paper.models import AttentionLayer, build_model, load_model, save_model
from minitorch.paper.task import make_batch
from minitorch.paper.train import mse_loss, train

NORMALISER_NAMES = sorted(NORMALISERS)  # the paper's two and the five of minitorch.paper.sink_free
SHAPES = {"1x1": (1, 1, False), "2x3": (2, 3, True)}  # name -> (layers, heads, residual)


def model_pair(normaliser: str, shape: str, seed: int = 3, dtype=np.float64):
    """(readable, fast): two models built from the same seed, the second sped up."""
    layers, heads, residual = SHAPES[shape]
    readable = build_model(8, heads, layers, normaliser, residual, seed=seed, dtype=dtype)
    return readable, fast.speed_up(build_model(8, heads, layers, normaliser, residual, seed=seed, dtype=dtype))


def randomise(model, seed: int = 0) -> None:
    """Weights large enough that every head attends unevenly (the N(0, 0.02²) start is nearly uniform)."""
    draw = np.random.default_rng(seed)
    for parameter in model.parameters():
        parameter.data = draw.normal(0.0, 0.5, size=parameter.shape)


def forward_and_gradients(model, x, y):
    """(prediction, attention per layer, {name: gradient}) for the loss mse(model(x), y)."""
    prediction, attention = model(x, return_attention=True)
    mse_loss(prediction, y).backward()
    return prediction.data, attention, {name: p.grad for name, p in model.named_parameters()}


def test_speed_up_swaps_every_layer_and_keeps_the_very_same_parameters():
    model = build_model(8, 2, 3, "sink_logit", residual=True, seed=0)
    before = list(model.named_parameters())
    assert fast.speed_up(model) is model, "speed_up changes the model in place and returns it"
    assert all(type(layer) is FusedAttentionLayer for layer in model.layers), "every layer should be fused"
    after = list(model.named_parameters())
    assert [name for name, _ in after] == [name for name, _ in before], "the parameters' names must not change"
    assert all(a is b for (_, a), (_, b) in zip(before, after)), (
        "a fused layer must hold the readable layer's own Parameter objects (an optimizer built before holds them)")


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("normaliser", NORMALISER_NAMES)
def test_the_fast_path_gives_the_readable_outputs_weights_and_every_gradient(normaliser, shape):
    readable, sped_up = model_pair(normaliser, shape)
    for model in (readable, sped_up):
        randomise(model)
    x, y, _ = make_batch(4, np.random.default_rng(1), residual=SHAPES[shape][2], length=7, width=8)
    expected, got = forward_and_gradients(readable, x, y), forward_and_gradients(sped_up, x, y)
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-10, atol=1e-12,
                               err_msg=f"{normaliser} {shape}: the fast path predicts differently")
    for layer, (fast_weights, readable_weights) in enumerate(zip(got[1], expected[1])):
        np.testing.assert_allclose(fast_weights, readable_weights, rtol=1e-10, atol=1e-12,
                                   err_msg=f"{normaliser} {shape}: layer {layer}'s attention weights differ")
    for name, gradient in expected[2].items():
        np.testing.assert_allclose(got[2][name], gradient, rtol=1e-9, atol=1e-12,
                                   err_msg=f"{normaliser} {shape}: the gradient of {name} differs on the fast path")


@pytest.mark.parametrize("normaliser", ["softmax", "relu", "gated"])
def test_a_model_trains_to_the_same_weights_on_the_fast_and_the_readable_path(normaliser):
    trained = []
    for model in model_pair(normaliser, "2x3"):
        optimiser, rng = Adam(model.parameters(), lr=1e-3), np.random.default_rng(0)
        for _ in range(5):
            inputs, targets = make_batch(8, rng, residual=True, length=7, width=8)[:2]
            optimiser.zero_grad()
            mse_loss(model(inputs), targets).backward()
            optimiser.step()
        trained.append(model.state_dict())
    for name, readable in trained[0].items():
        np.testing.assert_allclose(trained[1][name], readable, rtol=1e-9, atol=1e-12,
                                   err_msg=f"{name}: the fast and the readable path trained apart")


def test_train_runs_the_same_float32_steps_on_both_paths():
    """`train` itself: its history and early stop agree; float32 rounding differs only in the last bits."""
    results = [train(model, lr=1e-3, max_steps=40, record_every=10, progress=False)
               for model in model_pair("softmax", "1x1", seed=0, dtype=np.float32)]
    assert results[0].steps == results[1].steps
    np.testing.assert_allclose(results[1].history["loss"], results[0].history["loss"], rtol=1e-4,
                               err_msg="the probe loss of the two paths drifted apart during training")


def test_a_sped_up_model_saves_loads_and_pickles_as_the_same_model(tmp_path):
    _, sped_up = model_pair("gated", "2x3")
    save_model(sped_up, tmp_path / "model.npz")
    loaded = load_model(tmp_path / "model.npz")  # a readable model
    assert all(type(layer) is AttentionLayer for layer in loaded.layers), "load_model builds the readable model"
    for name, values in sped_up.state_dict().items():
        assert np.array_equal(loaded.state_dict()[name], values), f"{name} changed on the way through a file"
    copy = pickle.loads(pickle.dumps(sped_up))  # how a reproduce worker hands its model back
    assert type(copy.layers[0]) is FusedAttentionLayer and copy.state_dict().keys() == sped_up.state_dict().keys()
