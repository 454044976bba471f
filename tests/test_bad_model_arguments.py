"""The paper's code, training and the optimizers name a bad argument before any work (round two of the bad-input
catalogue)."""

from __future__ import annotations

import numpy as np
import pytest

from bad_input_helpers import tiny_model


def _paper_call(name):
    from minitorch.paper.task import make_batch
    from minitorch.paper.train import train

    return {
        "input-of-length-0": lambda: tiny_model()(np.zeros((2, 0, 16))),
        "make-batch-without-rng": lambda: make_batch(4, None),
        "train-without-model": lambda: train(None, lr=1e-3, progress=False),
        "width-1e6": lambda: tiny_model(width=10**6),
        "200k-layers": lambda: tiny_model(layers=200_000, residual=True),
    }[name]


@pytest.mark.parametrize("name,error,culprit", [
    ("input-of-length-0", ValueError, r"expected input of shape \(B, L, 16\) with L >= 1.*got \(2, 0, 16\)"),
    ("make-batch-without-rng", TypeError, "rng must be a NumPy Generator.*got NoneType"),
    ("train-without-model", TypeError, "train: model must be an attention model.*got NoneType"),
    ("width-1e6", ValueError, "width 1000000.*4,000,000,000,000 weights.*builds models of up to"),
    ("200k-layers", ValueError, "200000 layer.*204,800,000 weights"),
])
def test_the_paper_layer_names_a_bad_argument_before_any_work(name, error, culprit):
    with pytest.raises(error, match=culprit) as raised:
        _paper_call(name)()
    assert len(str(raised.value)) < 400, "one line"


@pytest.mark.parametrize("argument,value,error", [
    ("seed", -1, ValueError), ("seed", 1.5, TypeError), ("heads", 2.5, TypeError), ("width", 0, ValueError),
    ("layers", True, TypeError),
])
def test_build_model_names_a_bad_argument(argument, value, error):
    changes = {argument: value, **({"residual": True} if argument == "layers" else {})}
    with pytest.raises(error, match=argument):
        tiny_model(**changes)


# ----------------------------------------------------------------------
# training


@pytest.mark.parametrize("arguments,error,culprit", [
    (dict(lr=float("nan")), ValueError, "lr"),
    (dict(lr=float("inf")), ValueError, "lr"),
    (dict(lr="0.001"), TypeError, "lr"),
    (dict(lr=1e-3, max_steps=2.5), TypeError, "max_steps"),
    (dict(lr=1e-3, stop_error=float("nan")), ValueError, "stop_error"),
    (dict(lr=1e-3, probe_size=0), ValueError, "probe_size"),
    (dict(lr=1e-3, length=2), ValueError, "length"),
    (dict(lr=1e-3, batch_size=0), ValueError, "batch_size"),
    (dict(lr=1e-3, seed=-3), ValueError, "seed"),
    (dict(lr=1e-3, snapshot_every=0), ValueError, "snapshot_every"),
], ids=["lr-nan", "lr-inf", "lr-string", "max-steps-float", "stop-error-nan", "probe-size-0", "length-2",
        "batch-size-0", "seed-negative", "snapshot-every-0"])
def test_train_names_a_bad_argument_before_training(arguments, error, culprit):
    from minitorch.paper.train import train

    model = tiny_model(normaliser="relu")
    before = model.state_dict()
    with pytest.raises(error, match=culprit):
        train(model, progress=False, **arguments)
    after = model.state_dict()
    assert all(np.array_equal(before[name], after[name]) for name in before), "a refused run must not train"


@pytest.mark.parametrize("normaliser", ["relu", "softmax"])
def test_training_stops_at_the_first_non_finite_loss_and_blames_the_learning_rate(normaliser):
    from minitorch.paper.train import train

    model = tiny_model(normaliser=normaliser, dtype=np.float32)
    blames_the_learning_rate = r"loss became (nan|inf) at step \d+.*learning rate"
    with np.errstate(all="ignore"), pytest.raises(FloatingPointError, match=blames_the_learning_rate):
        train(model, lr=1e10, max_steps=50, progress=False)


@pytest.mark.parametrize("optimizer,arguments,culprit", [
    ("SGD", dict(momentum=-0.5), "momentum"), ("SGD", dict(weight_decay=float("nan")), "weight_decay"),
    ("Adam", dict(eps=float("inf")), "eps"), ("Adam", dict(weight_decay=-1.0), "weight_decay"),
    ("Adam", dict(betas=(float("nan"), 0.9)), "betas"),
])
def test_optimizer_names_a_bad_hyperparameter(optimizer, arguments, culprit):
    from minitorch import optim
    from minitorch.nn import Parameter

    with pytest.raises(ValueError, match=culprit):
        getattr(optim, optimizer)([Parameter(np.zeros(2))], lr=0.1, **arguments)


def test_optimizer_refuses_a_non_finite_learning_rate():
    from minitorch.nn import Parameter
    from minitorch.optim import SGD, Adam

    for optimizer in (SGD, Adam):
        with pytest.raises(ValueError, match="learning rate"):
            optimizer([Parameter(np.zeros(2))], lr=float("nan"))
