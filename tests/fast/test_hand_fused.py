"""Specification of minitorch.fast.hand_fused: the hand-written NumPy floor of the benchmark (and the fast
path's normalisers).

The floor is only a fair yardstick if it computes exactly the step minitorch
computes: same forward pass, same gradients, same Adam update.
"""

from __future__ import annotations

import numpy as np
import pytest

from minitorch.paper.models import build_model
from minitorch.optim import Adam
from minitorch.paper.task import make_batch
from minitorch.paper.train import BETAS, mse_loss

# A student edition leaves the floor out: it repeats answers to exercises 2.4, 2.5 and 3.1-3.3.
hand_fused = pytest.importorskip("minitorch.fast.hand_fused", reason="a student edition has no hand-fused floor: it "
                                                                      "repeats answers to exercises")
NumpyStep = hand_fused.NumpyStep


@pytest.mark.parametrize("layers, heads, normaliser", [(1, 1, "softmax"), (1, 2, "relu"), (2, 2, "softmax"),
                                                       (3, 2, "relu")])
def test_the_floor_takes_the_same_steps_as_minitorch_in_float64(layers, heads, normaliser):
    residual = layers > 1
    model = build_model(16, heads, layers, normaliser, residual, seed=5)
    floor = NumpyStep(model.state_dict(), model.config, lr=1e-3, betas=BETAS)
    optimizer = Adam(model.parameters(), lr=1e-3, betas=BETAS)
    rng = np.random.default_rng(0)
    for step in range(3):
        x, y, _ = make_batch(32, rng, residual)
        loss = mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        floor_loss = floor.step(x, y)
        assert np.isclose(floor_loss, loss.item(), rtol=1e-12), (
            f"step {step}: loss {floor_loss} vs minitorch {loss.item()}")
    expected = model.state_dict()
    for name, weights in floor.state_dict().items():
        np.testing.assert_allclose(weights, expected[name], rtol=1e-9, atol=1e-13,
                                   err_msg=f"after 3 steps the floor's {name} differs from minitorch's")


def test_the_floor_keeps_float32_in_float32():
    model = build_model(16, 2, 2, "softmax", True, dtype=np.float32)
    floor = NumpyStep(model.state_dict(), model.config)
    x, y, _ = make_batch(8, np.random.default_rng(0), True)
    floor.step(x.astype(np.float32), y.astype(np.float32))
    assert {w.dtype for w in floor.state_dict().values()} == {np.dtype(np.float32)}, "float32 weights became float64"


def test_the_floor_refuses_a_normaliser_it_does_not_implement():
    model = build_model(16, 1, 1, "softmax", False)
    with pytest.raises(ValueError, match="written by hand"):
        NumpyStep(model.state_dict(), dict(model.config, normaliser="sigmoid"))


@pytest.mark.parametrize("change, x_width, culprit", [
    ({"heads": 2}, 16, r"NumpyStep: layers.0.W_Q.weight must have shape \(32, 16\) for the config's width 16 and 2"),
    ({"layers": 2}, 16, r"NumpyStep: layers.1.W_Q.weight must have shape \(16, 16\) .* got \(\)"),
    ({}, 7, r"NumpyStep: x must have shape \(B, L, 16\), got \(1, 4, 7\)"),
], ids=["config-heads-2", "config-layers-2", "x-of-width-7"])
def test_the_floor_names_a_config_or_input_that_does_not_fit_the_weights(change, x_width, culprit):
    model = build_model(16, 1, 1, "softmax", False)  # not NumPy's "cannot reshape array of size ..."
    with pytest.raises(ValueError, match=culprit):
        NumpyStep(model.state_dict(), dict(model.config, **change)).step(np.ones((1, 4, x_width)),
                                                                          np.ones((1, 4, x_width)))


@pytest.mark.parametrize("layers, extra, culprit", [
    (1, {}, r"unexpected keys \['layers\.1\.W_K\.weight', .*\(config\['layers'\] is 1: "),
    (2, {"layers.0.W_Q.bias": np.zeros(16)}, r"unexpected keys \['layers\.0\.W_Q\.bias'\]"),
], ids=["config-of-fewer-layers", "a-key-it-does-not-read"])
def test_the_floor_refuses_a_state_holding_weights_the_config_leaves_unread(layers, extra, culprit):
    """A state of two layers and a config of one: the floor would time and train a shallower model than the state's,
    so it refuses the keys it would not read, as load_state_dict does."""
    model = build_model(16, 1, 2, "softmax", True)
    with pytest.raises(ValueError, match=rf"^NumpyStep: missing keys \[\], {culprit}"):
        NumpyStep(dict(model.state_dict(), **extra), dict(model.config, layers=layers))

@pytest.mark.parametrize("change, culprit", [({"lr": -0.1}, r"lr \(the learning rate\) must be a finite number > 0"),
                                             ({"lr": float("nan")}, r"lr \(the learning rate\) must be a finite"),
                                             ({"betas": (1.0, 1.0)}, r"betas must lie in \[0, 1\)"),  # divided by 0
                                             ({"betas": 0.9}, r"betas must be a pair \(beta1, beta2\)"),
                                             ({"eps": -1e-8}, r"eps must be a finite number >= 0"),
                                             ({"config": "no residual"}, r"the config lacks residual")])
def test_the_floor_refuses_a_learning_rate_betas_eps_or_config_adam_would_refuse(change, culprit):
    model = build_model(4, 1, 1, "softmax", False)
    config = dict(model.config)
    if change.pop("config", None):
        del config["residual"]
    with pytest.raises(ValueError, match=rf"^NumpyStep: {culprit}"):
        NumpyStep(model.state_dict(), config, **change)


@pytest.mark.parametrize("change, culprit", [
    ({"lr": True}, r"lr \(the learning rate\) must be a finite number > 0, got True \(bool\)"),
    ({"residual": "no"}, r"config\['residual'\] must be True or False, got 'no' \(str\)"),
    ({"layers": "1"}, r"config\['layers'\] must be an integer >= 1, got '1' \(str\)"),
    ({"width": 4.0}, r"config\['width'\] must be an integer >= 1, got 4.0 \(float\)"),
    ({"heads": True}, r"config\['heads'\] must be an integer >= 1, got True \(bool\)"),
    ({"state": "int"}, r"the state's weights must be float arrays, got int64 for layers.0.W_Q.weight"),
], ids=["lr-true", "residual-str", "layers-str", "width-float", "heads-bool", "int-weights"])
def test_the_floor_refuses_a_setting_of_another_type_as_the_optimizers_and_build_model_do(change, culprit):
    model = build_model(4, 1, 1, "softmax", False)
    state, config, options = model.state_dict(), dict(model.config), {}
    for key, value in change.items():
        if key == "lr":
            options["lr"] = value
        elif key == "state":
            state = {name: weights.astype(np.int64) for name, weights in state.items()}
        else:
            config[key] = value
    with pytest.raises(TypeError, match=rf"^NumpyStep: {culprit}"):
        NumpyStep(state, config, **options)  # at construction: not a wrong model, nor NumPy's words at a step


def test_the_floors_softmax_names_a_row_with_every_key_masked_as_minitorchs_does():
    scores = np.full((1, 2, 2), -np.inf)
    with pytest.raises(ValueError, match=r"every entry masked \(-inf\)"):
        hand_fused.softmax_normaliser(scores, np.triu(np.ones((2, 2), dtype=bool), k=1))


def test_the_benchmarks_floor_given_a_closed_npz_file_says_so_too(tmp_path):
    model = build_model(4, 1, 1, "softmax", False)
    np.savez(tmp_path / "model.npz", **model.state_dict())
    with np.load(tmp_path / "model.npz") as state:
        pass
    with pytest.raises(ValueError, match=r"NumpyStep: the \.npz file is closed"):
        NumpyStep(state, model.config)
