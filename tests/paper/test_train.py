"""Specification of minitorch.paper.train: the paper's training recipe (chapters 07 and 08)."""

from __future__ import annotations

import numpy as np
import pytest

from minitorch.paper import metrics
from minitorch.gradcheck import gradcheck
from minitorch.paper.models import build_model
from minitorch.paper.task import make_test_set
from minitorch.tensor import Tensor, no_grad
from minitorch.paper.train import BETAS, STOP_ERROR, mse_loss, train


def _trained_single_layer(normaliser: str):
    model = build_model(16, 1, 1, normaliser, residual=False, seed=0)
    result = train(model, lr=1e-3, max_steps=3000, seed=0, record_every=50, progress=False)
    x, y, triggers = make_test_set(residual=False)
    with no_grad():
        prediction, attention = model(x, return_attention=True)
    return result, prediction.data, y, attention[0], triggers


@pytest.fixture(scope="module")
def softmax_1x1():
    return _trained_single_layer("softmax")


@pytest.fixture(scope="module")
def relu_1x1():
    return _trained_single_layer("relu")


def test_the_recipe_is_the_papers():
    assert BETAS == (0.9, 0.95) and STOP_ERROR == 5e-3


def test_mse_averages_over_batch_positions_and_coordinates():
    prediction = Tensor(np.zeros((2, 3, 4)))
    target = np.ones((2, 3, 4))
    target[0, 0, 0] = 3.0  # one squared error of 9, the other 23 of 1
    assert mse_loss(prediction, target).item() == pytest.approx((9 + 23) / 24)


def test_mse_gradient_matches_finite_differences():
    target = np.random.default_rng(1).normal(size=(2, 3, 4))
    gradcheck(lambda prediction: mse_loss(prediction, target), [np.random.default_rng(2).normal(size=(2, 3, 4))])


def test_mse_refuses_a_prediction_and_target_with_no_elements():
    """An empty pair gave a loss of nan, with NumPy's "Mean of empty slice"."""
    with pytest.raises(ValueError, match=r"mse_loss: prediction and target of shape \(0, 3\) hold no elements"):
        mse_loss(Tensor(np.zeros((0, 3)), requires_grad=True), np.zeros((0, 3)))


def test_mse_refuses_a_target_of_another_shape():
    with pytest.raises(ValueError, match=r"\(2, 3, 4\).*\(3, 4\)"):
        mse_loss(Tensor(np.zeros((2, 3, 4))), np.zeros((3, 4)))


def _assert_stopped_early(name: str, result) -> None:
    assert result.converged, f"{name} did not reach max error < {STOP_ERROR:g} in {result.steps} steps"
    assert result.steps < 1500, f"{name} took {result.steps} steps; runs of the author's code stop after ~600-900"


@pytest.mark.slow
def test_softmax_1x1_stops_early_with_a_sink(softmax_1x1):
    result, prediction, y, attention, triggers = softmax_1x1
    _assert_stopped_early("softmax 1x1", result)
    bos = metrics.bos_mass_at_non_trigger_rows(attention, triggers)
    assert bos.min() >= 0.99, f"softmax 1x1 should sink: min BOS mass at non-trigger rows is {bos.min():.4f} < 0.99"
    trigger = metrics.trigger_row(attention, triggers)[:, 0]  # (B, L)
    assert trigger[:, 0].mean() < 0.01, "the trigger row should put ~0 on BOS"
    np.testing.assert_allclose(trigger[:, 1:8].mean(axis=0), 1 / 7, atol=0.01,
                               err_msg="the trigger row should put ~1/7 on each of keys 2..8 (1-based)")


@pytest.mark.slow
def test_relu_1x1_stops_early_without_a_sink(relu_1x1):
    result, prediction, y, attention, triggers = relu_1x1
    _assert_stopped_early("ReLU 1x1", result)
    rows = metrics.non_trigger_row_mass(attention, triggers)
    assert np.all(rows == 0.0), f"ReLU 1x1 non-trigger rows should be exactly 0; largest row mass {rows.max():.3g}"
    assert metrics.trigger_row(attention, triggers)[:, 0, 1:8].min() > 0, \
        "the ReLU trigger row must attend to the content"


@pytest.mark.slow
def test_trained_1x1_models_solve_the_test_set(softmax_1x1, relu_1x1):
    for name, (_, prediction, y, _, _) in {"softmax": softmax_1x1, "relu": relu_1x1}.items():
        error = np.abs(prediction - y).max()
        assert error < 0.05, f"{name} 1x1: max error {error:.3g} on the test set after the early stop"


@pytest.mark.slow
def test_history_records_the_sink_forming(softmax_1x1):
    history = softmax_1x1[0].history
    steps = history["step"]
    assert steps[0] == 0 and steps[-1] == softmax_1x1[0].steps, "history runs from step 0 to the stopping step"
    assert all(b > a for a, b in zip(steps, steps[1:])), "history steps must increase"
    for name in ("loss", "max_error", "bos_mass_mean", "bos_mass_min", "trigger_bos", "trigger_content"):
        assert len(history[name]) == len(steps), f"history['{name}'] has one value per record"
    assert history["bos_mass_mean"][0] < 0.5 < history["bos_mass_mean"][-1], \
        "BOS mass should start low (untrained) and end near 1 (the sink)"


def test_history_records_every_heads_bos_mass_without_changing_training():
    def run(record_every):
        model = build_model(6, 2, 2, "softmax", residual=True, seed=0)
        return train(model, lr=1e-3, max_steps=12, record_every=record_every, probe_size=8, progress=False)

    result = run(4)
    per_head = np.array(result.history["head_bos_mass"])  # (records, layers, H)
    assert per_head.shape == (len(result.history["step"]), 2, 2), \
        "history['head_bos_mass'] must hold one (layers, H) table per record"
    np.testing.assert_allclose(per_head.mean(axis=(1, 2)), result.history["bos_mass_mean"], rtol=1e-12,
                               err_msg="the heads' BOS masses must average to the recorded mean BOS mass")
    rarely = run(12).model.state_dict()
    for name, weight in result.model.state_dict().items():  # measuring 3x as often must change no weight
        assert np.array_equal(weight, rarely[name]), \
            f"recording the probe set more often changed {name}: measuring must not touch training"


def test_snapshots_are_mean_attention_maps_at_the_requested_steps():
    model = build_model(6, 2, 2, "softmax", residual=True, seed=0)
    result = train(model, lr=1e-3, max_steps=20, record_every=5, snapshot_every=10, probe_size=8, progress=False)
    assert [step for step, _ in result.snapshots] == [0, 10, 20]
    for _, weights in result.snapshots:
        assert weights.shape == (2, 2, 16, 16), "a snapshot is (layers, H, L, L)"
        np.testing.assert_allclose(weights.sum(axis=-1), 1.0, err_msg="softmax snapshot rows must sum to 1")


def test_same_seed_same_numbers():
    weights = []
    for _ in range(2):
        model = build_model(8, 1, 1, "softmax", residual=False, seed=3)
        train(model, lr=1e-3, max_steps=15, seed=7, progress=False)
        weights.append(model.state_dict())
    for name in weights[0]:
        np.testing.assert_array_equal(weights[0][name], weights[1][name], err_msg=f"{name} differs between runs")


def test_float32_models_train_in_float32():
    model = build_model(8, 1, 1, "relu", residual=False, dtype=np.float32)
    train(model, lr=1e-3, max_steps=5, progress=False)
    assert all(p.dtype == np.float32 for p in model.parameters()), "training must not upcast float32 parameters"


@pytest.mark.parametrize("argument", [dict(max_steps=0), dict(batch_size=0), dict(record_every=0)])
def test_bad_arguments_are_rejected(argument):
    model = build_model(8, 1, 1, "softmax", residual=False)
    with pytest.raises(ValueError, match=next(iter(argument))):
        train(model, lr=1e-3, progress=False, **argument)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the overflow to inf is the point
@pytest.mark.parametrize("record_every", [1, 50])
def test_weights_gone_non_finite_blame_the_learning_rate_not_the_softmax(record_every):
    """The readable softmax refuses inf scores with a ValueError; train must still say what went wrong."""
    model = build_model(16, 1, 1, "softmax", False, seed=0, dtype=np.float32)
    with pytest.raises(FloatingPointError, match="at step [12] .*learning rate may be too high"):
        train(model, lr=1e39, max_steps=5, record_every=record_every, progress=False)  # one step reaches inf


@pytest.mark.parametrize("change,error,culprit", [  # names probe and y, which NumPy's broadcast message does not
    (dict(y=np.zeros((3, 16, 15))), ValueError, r"probe: x and its targets y must have one shape .*y \(3, 16, 15\)"),
    (dict(y=np.zeros((16, 16))), ValueError, r"probe: .*y \(16, 16\)"),
    (dict(triggers=np.full(2, 7)), ValueError, r"probe: .*triggers \(B,\).*triggers \(2,\)"),
    (dict(x=np.zeros((16, 16))), ValueError, r"probe: .*got x \(16, 16\)"),
    (dict(model=None), TypeError, r"probe: model must be an attention model .*got NoneType"),
], ids=["y-one-coordinate-short", "y-without-batch", "two-triggers-for-three", "x-without-batch", "no-model"])
def test_probe_names_inputs_whose_shapes_disagree(change, error, culprit):
    from minitorch.paper.train import probe

    x, y, triggers = make_test_set(size=3)
    arguments = dict(model=build_model(16, 1, 1, "softmax", residual=False), x=x, y=y, triggers=triggers)
    with pytest.raises(error, match=culprit):
        probe(**{**arguments, **change})


@pytest.mark.parametrize("target, error, culprit", [
    ("abc", TypeError, r"target must be finite numbers, got 'abc'"),  # not NumPy's "could not convert string"
    (["1", "2", "3"], TypeError, r"target must be finite numbers, got \['1', '2', '3'\]"),
    ([True, False, True], TypeError, r"target must be finite numbers, got \[True, False, True\] \(dtype bool\)"),
    ([1.0, float("nan"), 3.0], ValueError, r"target must be finite numbers"),
    (Tensor(np.array([1.0, np.inf, 3.0])), ValueError, r"target must be finite numbers"),
    (Tensor(np.zeros(3), requires_grad=True), TypeError,  # its gradient would be dropped without a word
     r"the target requires grad, but a target is data here and gets no gradient; pass target.detach\(\)"),
])
def test_mse_loss_names_a_target_that_is_not_data_of_finite_numbers(target, error, culprit):
    with pytest.raises(error, match=rf"mse_loss: {culprit}"):
        mse_loss(Tensor(np.ones(3)), target)


@pytest.mark.parametrize("progress", ["line", "bar", 2, None])
def test_train_names_a_progress_it_does_not_know_before_training(progress):
    """A typo ('line' for 'lines') is refused, not trained with the redrawn bar without a word."""
    model = build_model(16, 1, 1, "softmax", False, seed=0)
    before = [parameter.data.copy() for parameter in model.parameters()]
    with pytest.raises(ValueError, match=r"train: progress must be True \(a bar\), 'lines'"):
        train(model, 1e-3, max_steps=1, progress=progress)
    assert all(np.array_equal(old, new.data) for old, new in zip(before, model.parameters())), "it trained"
