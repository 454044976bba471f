"""Model files that are not what load_model expects, and saves that fail: a ModelFileError naming the file and
what is wrong with it, and the file already on disk left intact."""

from __future__ import annotations

import json
import os
import stat
import warnings
from pathlib import Path

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


def _write_weights_with(value):
    def write(path):
        model = tiny_model()
        state = {name: np.array(values) for name, values in model.state_dict().items()}
        state["layers.0.W_V.weight"][0, 0] = value
        with open(path, "wb") as file:
            np.savez(file, __config__=np.array(json.dumps(model.config)), **state)
    return write


@pytest.mark.parametrize("write,culprit", [
    (_write_random_bytes, "neither an .npz archive"),
    (_write_weights_with(np.nan), "layers.0.W_V.weight holds 1 NaN or inf value(s) of 256"),  # not the scores blamed
    (_write_weights_with(np.inf), "layers.0.W_V.weight holds 1 NaN or inf value(s) of 256"),
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
    (_write_config('{"width": ' * 5000), "its config is JSON nested too deep to read"),  # json's RecursionError
    (_write_config(json.dumps(dict(width=16, heads=1, layers=1, normaliser="softmax", colour="red"))), "colour"),
    (_write_config(json.dumps(dict(width=16, heads=-1, layers=1, normaliser="softmax", residual=False))), "heads"),
], ids=["random-bytes", "nan-weight", "inf-weight", "object-weights", "pickled-npy", "complex-weights", "200k-layers",
        "width-1e6", "empty", "truncated", "foreign-npz", "config-not-json", "config-nested-too-deep", "unknown-key",
        "bad-value"])
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
    ("/proc/self/m.npz", "No such file or directory"),  # not '/proc/<pid>/.m.npz.<random>.tmp'
    ("/sys/m.npz", "Permission denied"),
    ("/sys/kernel/m.npz", "Permission denied"),  # not '/sys/kernel/.m.npz.1b2no63j.tmp'
])
@pytest.mark.parametrize("writer", ["save_model", "write_atomically"])
def test_a_file_that_cannot_be_created_is_named_as_the_caller_gave_it_not_by_a_temporary_name(path, reason, writer):
    from minitorch.outputs import write_atomically

    with pytest.raises(OSError) as refused:
        save_model(tiny_model(), path) if writer == "save_model" else write_atomically(path, "text")
    message = str(refused.value)
    caller = "save_model: path" if writer == "save_model" else "writing"
    assert f"{caller} {path}: cannot create a file in" in message and reason in message, message
    assert ".tmp" not in message, f"the caller never gave a temporary name: {message}"


_WRITE_THEN_PRINT = """
import resource, sys
from bad_input_helpers import tiny_model
from minitorch.outputs import write_atomically
from minitorch.paper.models import save_model
from minitorch.tools.exit_policy import run_command
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[3]), resource.RLIM_INFINITY))  # ulimit -f
write = {"save_model": lambda: save_model(tiny_model(), sys.argv[2]),
         "write_atomically": lambda: write_atomically(sys.argv[2], "x" * 100_000)}[sys.argv[1]]
sys.exit(run_command(lambda argv: write(), []))
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="a file-size limit (ulimit -f) is POSIX")
@pytest.mark.parametrize("limit", [0, 1024, 4096], ids=["nothing", "1KiB", "4KiB"])
@pytest.mark.parametrize("writer", ["save_model", "write_atomically"])
def test_a_write_that_fails_half_way_names_the_callers_path_and_leaves_nothing(tmp_path, writer, limit):
    """Under `ulimit -f` a command names the file, not only 'error: File too large' (the OSError names none)."""
    import subprocess
    import sys

    target = tmp_path / "out.npz"
    tests = Path(__file__).parent
    result = subprocess.run([sys.executable, "-c", _WRITE_THEN_PRINT, writer, str(target), str(limit)],
                            cwd=tests.parent, env={**os.environ, "PYTHONPATH": str(tests)}, capture_output=True,
                            text=True, timeout=120)
    caller = "save_model: path" if writer == "save_model" else "writing"
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert f"{caller} {target}: writing it failed (File too large)" in result.stderr, result.stderr
    assert "ulimit -f" in result.stderr, f"no advice on the limit: {result.stderr}"
    assert not any(tmp_path.iterdir()), f"a failed write left {[p.name for p in tmp_path.iterdir()]}"


# ----------------------------------------------------------------------
# What is no path, a read-only file, a link to nowhere, a pipe behind /proc/self/fd


@pytest.mark.parametrize("function,path,error,culprit", [
    ("save_model", 123, TypeError, "save_model: path: expected a path .*got int 123"),
    ("save_model", None, TypeError, "save_model: path: expected a path .*got NoneType None"),
    ("save_model", b"m.npz", TypeError, "save_model: path: expected a path .*got bytes"),
    ("save_model", "a\x00b.npz", ValueError, r"save_model: path 'a\\x00b.npz': holds a NUL character"),
    ("load_model", 123, TypeError, "load_model: path: expected a path .*got int 123"),
    ("load_model", 1.5, TypeError, "load_model: path: expected a path .*got float 1.5"),
    ("load_model", "a\x00b.npz", ValueError, r"load_model: path 'a\\x00b.npz': holds a NUL character"),
], ids=["save-int", "save-none", "save-bytes", "save-nul", "load-int", "load-float", "load-nul"])
def test_a_path_that_is_no_path_is_named_with_the_function(tmp_path, monkeypatch, function, path, error, culprit):
    """Pathlib's 'expected str, bytes or os.PathLike object, not int' and Python's 'embedded null byte' name
    neither the function nor its argument; the error here names both."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(error, match=culprit):
        save_model(tiny_model(), path) if function == "save_model" else load_model(path)
    assert not any(tmp_path.iterdir()), "a refused save must write nothing"


@pytest.mark.parametrize("mode,refused", [(0o444, True), (0o400, True), (0o555, True), (0o600, False),
                                          (0o640, False)])
@pytest.mark.parametrize("writer", ["save_model", "write_atomically"])
def test_a_read_only_file_is_not_replaced_and_a_writable_one_keeps_its_mode(tmp_path, mode, refused, writer):
    """A model the user made read-only (chmod 444) must not be replaced by a 0644 file, silently dropping the
    protection. It is refused (as cp and an editor refuse it); a writable file keeps its mode (0600 stays
    private), as open() would keep it."""
    from minitorch.outputs import write_atomically

    path = tmp_path / "ok.npz"
    save_model(tiny_model(seed=1), path)
    os.chmod(path, mode)
    before = file_hashes(tmp_path)
    save = (lambda: save_model(tiny_model(seed=2), path)) if writer == "save_model" else \
        (lambda: write_atomically(path, b"new"))
    if refused:
        with pytest.raises(OSError, match=rf"ok.npz: the file is read-only \(mode {mode:o}\).*chmod u\+w"):
            save()
        assert file_hashes(tmp_path) == before, "a read-only file was replaced, or a temporary file left"
    else:
        save()
        assert file_hashes(tmp_path) != before, "a writable file must be replaced"
    assert stat.S_IMODE(path.stat().st_mode) == mode, f"the file's mode changed to {path.stat().st_mode & 0o777:o}"


@pytest.mark.parametrize("why,culprit", [
    ("read-only-file-system", r"ok.npz: lies on a read-only file system, so it cannot be replaced; name a file "
                              r"elsewhere$"),
    ("another-users-file", r"ok.npz: the file is read-only \(mode 644\), so it is not replaced; it is another user's"),
])
def test_a_file_that_cannot_be_written_is_refused_with_the_cause_that_applies(tmp_path, monkeypatch, why, culprit):
    """A file of mode 644 on a read-only file system was called 'read-only (mode 644)', with the advice chmod u+w,
    which cannot help there (nor for another user's file, which only its owner may chmod)."""
    from types import SimpleNamespace

    from minitorch.outputs import write_atomically

    path = tmp_path / "ok.npz"
    save_model(tiny_model(seed=1), path)
    os.chmod(path, 0o644)
    before = file_hashes(tmp_path)
    monkeypatch.setattr(os, "access", lambda name, how, **options: False)  # as on either, for this user
    if why == "read-only-file-system":
        real_statvfs = os.statvfs
        monkeypatch.setattr(os, "statvfs", lambda name: SimpleNamespace(f_flag=os.ST_RDONLY)
                            if Path(name) == path else real_statvfs(name))
    else:
        monkeypatch.setattr(os, "geteuid", lambda: path.stat().st_uid + 1)
    with pytest.raises(OSError, match=culprit) as refused:
        write_atomically(path, b"new")
    assert "chmod" not in str(refused.value), f"chmod cannot help here, yet the error advises it: {refused.value}"
    assert file_hashes(tmp_path) == before, "the file was replaced, or a temporary file left"


@pytest.mark.parametrize("link_to,written", [("nowhere/target.npz", None), ("nowhere/deeper/target.npz", None),
                                             ("there/target.npz", "there/target.npz")],
                         ids=["folder-missing", "two-folders-missing", "folder-exists"])
@pytest.mark.parametrize("writer", ["save_model", "write_atomically", "check_output_file"])
def test_a_link_to_nowhere_creates_no_folder_where_it_points(tmp_path, link_to, written, writer):
    """save_model through dangling.npz -> nowhere/target.npz must not create nowhere/ and write there, since a
    plain path in a missing folder is refused. A link is written through only into a folder that exists, as open()
    would."""
    from minitorch.outputs import check_output_file, write_atomically

    (tmp_path / "there").mkdir()
    os.symlink(link_to, tmp_path / "dangling.npz")
    calls = {"save_model": lambda: save_model(tiny_model(), tmp_path / "dangling.npz"),
             "write_atomically": lambda: write_atomically(tmp_path / "dangling.npz", b"new"),
             "check_output_file": lambda: check_output_file(tmp_path / "dangling.npz", "--json")}
    if written is None:
        with pytest.raises(OSError if writer != "check_output_file" else ValueError,
                           match="nowhere.* does not exist.*create it first"):
            calls[writer]()
        assert not (tmp_path / "nowhere").exists(), "the folder a link points into was created"
    else:
        calls[writer]()
        assert (tmp_path / written).exists() == (writer != "check_output_file"), "not written where the link points"
    assert (tmp_path / "dangling.npz").is_symlink(), "the link must stay a link"


@pytest.mark.parametrize("writer", ["save_model", "write_atomically", "check_output_file"])
def test_a_pipe_named_through_proc_self_fd_is_refused_as_a_pipe(writer):
    """save_model(m, '/proc/self/fd/1') with stdout a pipe is refused as a pipe, not with 'No such file or
    directory: /proc/<pid>/fd/.pipe:[914676].g6d0vur6.tmp' (the link followed to the pipe's pseudo-name)."""
    from minitorch.outputs import check_output_file, write_atomically

    reading, writing = os.pipe()
    try:
        path = f"/proc/self/fd/{writing}"
        calls = {"save_model": lambda: save_model(tiny_model(), path),
                 "write_atomically": lambda: write_atomically(path, "text"),
                 "check_output_file": lambda: check_output_file(path, "--json")}
        with pytest.raises((OSError, ValueError), match=rf"{path}: is a named pipe \(FIFO\), not a regular file"):
            calls[writer]()
    finally:
        os.close(reading)
        os.close(writing)


def test_load_state_dict_of_a_closed_npz_file_says_to_load_inside_the_with_block(tmp_path):
    from minitorch.nn import Linear

    path = tmp_path / "linear.npz"
    np.savez(path, **Linear(2, 2).state_dict())
    with np.load(path) as state:
        pass
    layer = Linear(2, 2)
    before = layer.state_dict()
    with pytest.raises(ValueError, match=r"load_state_dict for Linear: the \.npz file is closed: pass "
                                         r"dict\(np\.load\(path\)\), or load inside the `with"):
        layer.load_state_dict(state)  # NumPy's own words: 'NoneType' object has no attribute 'open'
    np.testing.assert_array_equal(layer.weight.data, before["weight"], err_msg="a refused load changes nothing")
