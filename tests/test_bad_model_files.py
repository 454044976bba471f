"""Model files that are not what load_model expects, and saves that fail: a ModelFileError naming the file and
what is wrong with it, and the file already on disk left intact."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from minitorch.paper.models import ModelFileError, load_model, save_model
from bad_input_helpers import file_hashes, tiny_model


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


def _write_object_weights(path):
    with open(path, "wb") as file:
        np.savez(file, __config__=np.array(json.dumps(tiny_model().config)),
                 **{name: np.array([None] * 3, dtype=object) for name in tiny_model().state_dict()})


def _write_pickled_npy(path):
    with open(path, "wb") as file:
        np.save(file, np.array([{"weights": 1}], dtype=object), allow_pickle=True)


def _write_complex_weights(path):
    model = tiny_model()
    with open(path, "wb") as file:
        np.savez(file, __config__=np.array(json.dumps(model.config)),
                 **{name: values + 1j for name, values in model.state_dict().items()})


@pytest.mark.parametrize("write,culprit", [
    (_write_random_bytes, "neither an .npz archive"),
    (_write_object_weights, "stores Python objects, not arrays of numbers"),
    (_write_pickled_npy, "stores Python objects, not arrays of numbers"),
    (_write_complex_weights, "'layers.0.W_Q.weight' holds complex128 values"),
    (_write_config(json.dumps(dict(width=16, heads=1, layers=200_000, normaliser="softmax", residual=True))),
     "200000 layer"),
    (_write_config(json.dumps(dict(width=10**6, heads=1, layers=1, normaliser="softmax", residual=False))),
     "width 1000000"),
    (_write_empty, "empty"),
    (_write_truncated, "truncated"),
    (_write_foreign_npz, "without a model config"),
    (_write_config("{not json"), "not JSON"),
    (_write_config(json.dumps(dict(width=16, heads=1, layers=1, normaliser="softmax", colour="red"))), "colour"),
    (_write_config(json.dumps(dict(width=16, heads=-1, layers=1, normaliser="softmax", residual=False))), "heads"),
], ids=["random-bytes", "object-weights", "pickled-npy", "complex-weights", "200k-layers", "width-1e6", "empty",
        "truncated", "foreign-npz", "config-not-json", "unknown-key", "bad-value"])
def test_load_model_names_the_file_and_what_is_wrong(tmp_path, write, culprit):
    path = tmp_path / "model.npz"
    write(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # e.g. NumPy's ComplexWarning: a warning is no answer
        with pytest.raises(ModelFileError) as error:
            load_model(path)
    message = str(error.value)
    assert len(message) < 1000, f"one line, not {len(message):,} characters"
    assert message.startswith("not a minitorch model file") and str(path) in message and culprit in message, message
    assert "pickle" not in message, "never suggest loading pickles: they can run arbitrary code"


@pytest.mark.parametrize("target,model,error,culprit", [
    ("missing/model.npz", "tiny", FileNotFoundError, r"the folder .*missing does not exist; create it first"),
    (".", "tiny", IsADirectoryError, "is a folder; name the file"),
    ("model.npz", "a string", TypeError, "expected a model .*got str"),
])
def test_save_model_names_a_bad_target_or_model_and_writes_nothing(tmp_path, target, model, error, culprit):
    with pytest.raises(error, match=culprit):
        save_model(tiny_model() if model == "tiny" else model, tmp_path / target)
    assert not any(tmp_path.iterdir()), "a refused save must write nothing"


@pytest.mark.parametrize("path,reason", [
    ("/proc/self/m.npz", "No such file or directory"),  # F4-03: the error named '/proc/<pid>/.m.npz.<random>.tmp'
    ("/sys/m.npz", "Permission denied"),
])
@pytest.mark.parametrize("writer", ["save_model", "write_atomically"])
def test_a_file_that_cannot_be_created_is_named_as_the_caller_gave_it_not_by_a_temporary_name(path, reason, writer):
    from minitorch.outputs import write_atomically

    with pytest.raises(OSError) as refused:
        save_model(tiny_model(), path) if writer == "save_model" else write_atomically(path, "text")
    message = str(refused.value)
    assert f"writing {path}: cannot create a file in" in message and reason in message, message
    assert ".tmp" not in message, f"the caller never gave a temporary name: {message}"
