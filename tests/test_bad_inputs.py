"""Bad input gets a clear error naming the culprit, and loses nothing on disk.

One test per case: the error's type, that its message names what was wrong,
and, where a file could be lost, that the files on disk did not change.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from minitorch.paper.models import ModelFileError, build_model, load_model, save_model

ROOT = Path(__file__).resolve().parent.parent


def file_hashes(folder: Path) -> dict:
    """{relative path: sha256} of every file under `folder`."""
    return {str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(folder.rglob("*")) if path.is_file()}


def tiny_model(**changes):
    config = dict(width=16, heads=1, layers=1, normaliser="softmax", residual=False)
    config.update(changes)
    return build_model(**config)


# ----------------------------------------------------------------------
# models on disk


def test_save_model_accepts_numpy_integers_in_the_config(tmp_path):
    model = tiny_model(width=np.int64(16), heads=np.int32(1))
    save_model(model, tmp_path / "m.npz")
    assert load_model(tmp_path / "m.npz").config == tiny_model().config, "NumPy integers must save as plain ints"


def test_failed_save_leaves_the_previous_file_intact(tmp_path):
    path = tmp_path / "m.npz"
    save_model(tiny_model(), path)
    before = file_hashes(tmp_path)
    broken = tiny_model()
    broken.config["width"] = object()  # a config that cannot be written as JSON
    with pytest.raises(TypeError, match="config"):
        save_model(broken, path)
    assert file_hashes(tmp_path) == before, "a failed save must not touch the existing model file nor leave a temporary"


def _write_random_bytes(path):
    path.write_bytes(np.random.default_rng(0).bytes(200))


def _write_empty(path):
    path.write_bytes(b"")


def _write_truncated(path):
    save_model(tiny_model(), path)
    path.write_bytes(path.read_bytes()[:300])


def _write_foreign_npz(path):
    with open(path, "wb") as file:
        np.savez(file, weights=np.zeros(3))


def _write_config(text):
    def write(path):
        with open(path, "wb") as file:
            np.savez(file, __config__=np.array(text))
    return write


@pytest.mark.parametrize("write,culprit", [
    (_write_random_bytes, "neither an .npz archive"),
    (_write_empty, "empty"),
    (_write_truncated, "truncated"),
    (_write_foreign_npz, "without a model config"),
    (_write_config("{not json"), "not JSON"),
    (_write_config(json.dumps(dict(width=16, heads=1, layers=1, normaliser="softmax", colour="red"))), "colour"),
    (_write_config(json.dumps(dict(width=16, heads=-1, layers=1, normaliser="softmax", residual=False))), "heads"),
], ids=["random-bytes", "empty", "truncated", "foreign-npz", "config-not-json", "unknown-key", "bad-value"])
def test_load_model_names_the_file_and_what_is_wrong(tmp_path, write, culprit):
    path = tmp_path / "model.npz"
    write(path)
    with pytest.raises(ModelFileError) as error:
        load_model(path)
    message = str(error.value)
    assert message.startswith("not a minitorch model file") and str(path) in message and culprit in message, message
    assert "pickle" not in message, "never suggest loading pickles: they can run arbitrary code"


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
    with np.errstate(all="ignore"), pytest.raises(FloatingPointError, match=r"loss became (nan|inf) at step \d+.*learning rate"):
        train(model, lr=1e10, max_steps=50, progress=False)


def test_optimizer_refuses_a_non_finite_learning_rate():
    from minitorch.nn import Parameter
    from minitorch.optim import SGD, Adam

    for optimizer in (SGD, Adam):
        with pytest.raises(ValueError, match="learning rate"):
            optimizer([Parameter(np.zeros(2))], lr=float("nan"))
