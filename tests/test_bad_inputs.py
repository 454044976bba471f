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
import warnings
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


# ----------------------------------------------------------------------
# reproduce: what it writes, and where


def test_only_with_nothing_selected_is_a_usage_error(capsys):
    from minitorch.__main__ import main

    for selection in (",", "", "1x1,,2x2", "1x1,1x1"):
        with pytest.raises(SystemExit) as exit_info:
            main(["reproduce", "--only", selection])
        assert exit_info.value.code == 2, f"--only {selection!r} must be refused, not run"
        assert "--only" in capsys.readouterr().err


def test_reproduce_refuses_an_empty_selection(tmp_path):
    from minitorch.paper.reproduce import reproduce

    with pytest.raises(ValueError, match="only"):
        reproduce(tmp_path, only=[], progress=False, log=lambda message: None)
    assert not any(tmp_path.iterdir()), "a refused run must write nothing"


@pytest.mark.parametrize("arguments,expected", [
    (["reproduce"], "runs/full"),
    (["reproduce", "--only", "1x1,2x2,4x4"], "runs/full"),
    (["reproduce", "--only", "1x1", "--seed", "1"], "runs/seed1_only-1x1"),
    (["reproduce", "--only", "1x1"], "runs/only-1x1"),
    (["reproduce", "--seed", "2"], "runs/seed2"),
    (["reproduce", "--quick"], "runs/quick"),
    (["reproduce", "--quick", "--seed", "3"], "runs/quick_seed3"),
    (["reproduce", "--quick", "--only", "1x1"], "runs/quick_only-1x1"),
    (["reproduce", "--out", ""], ""),
    (["reproduce", "--seed", "2", "--out", "elsewhere"], "elsewhere"),
    (["reproduce", "--out", "figures"], "figures"),
])
def test_every_run_defaults_to_an_untracked_folder_and_figures_only_by_name(monkeypatch, arguments, expected):
    from minitorch.__main__ import main

    calls = {}
    monkeypatch.setattr("minitorch.paper.reproduce.reproduce", lambda out, **kwargs: calls.setdefault("out", out))
    main(arguments)
    assert calls["out"] == expected, (f"{' '.join(arguments)} must write to {expected!r}, not {calls['out']!r} "
                                      f"(a first run must leave the checkout's tracked figures/ as they were)")


def _fake_previous_run(folder: Path, only=("1x1",), quick=False, seed=0) -> dict:
    """Every file a run of `only` writes, with a results.json that records them, as a real run's does."""
    from minitorch.paper.reproduce import run_command, run_files

    files = run_files(list(only))
    for name in files:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(f"previous {name}".encode())
    (folder / "results.json").write_text(json.dumps(dict(command=run_command(quick, list(only), seed), files=files)))
    return file_hashes(folder)


def _write_a_run(out_folder, *args):
    """Stands in for `_reproduce_into`: a completed 1x1 run, in no time."""
    from minitorch.paper.reproduce import run_files

    for name in run_files(["1x1"]):
        (out_folder / name).parent.mkdir(parents=True, exist_ok=True)
        (out_folder / name).write_text("new")
    return {"total_wall_time_seconds": 1}, 0


def _no_work(*args):
    pytest.fail("the run started its work although its output folder was refused")


def test_a_run_that_fails_midway_leaves_the_previous_results_untouched(tmp_path, monkeypatch):
    from minitorch.paper import reproduce as reproduce_module

    out = tmp_path / "figures"
    before = _fake_previous_run(out)

    def fail_after_writing_some(out_folder, *args):
        (out_folder / "results.json").write_text("{}")  # a half-finished run
        raise RuntimeError("a model failed")

    monkeypatch.setattr(reproduce_module, "_reproduce_into", fail_after_writing_some)
    with pytest.raises(RuntimeError):
        reproduce_module.reproduce(out, only=["1x1"], progress=False, log=lambda message: None)
    assert file_hashes(out) == before, "a run that did not complete must not replace any file of the previous run"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["figures"], "no partial folder may be left behind"


def test_a_rerun_replaces_the_previous_files_and_touches_no_other(tmp_path, monkeypatch):
    from minitorch.paper import reproduce as reproduce_module

    out = tmp_path / "figures"
    _fake_previous_run(out)
    (out / "beyond").mkdir()
    (out / "beyond" / "results.md").write_text("chapter 10")
    (out / "models" / "mine.npz").write_text("a reader's own model")

    monkeypatch.setattr(reproduce_module, "_reproduce_into", _write_a_run)
    reproduce_module.reproduce(out, only=["1x1"], progress=False, log=lambda message: None)
    assert (out / "models" / "softmax_1x1.npz").read_text() == "new" and (out / "results.json").read_text() == "new"
    assert (out / "beyond" / "results.md").read_text() == "chapter 10", "a run must not touch files it does not own"
    assert (out / "models" / "mine.npz").read_text() == "a reader's own model", "nor files in its folders"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["figures"]


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to oneself is POSIX")
def test_ctrl_c_while_a_completed_run_is_moved_into_place_does_not_cut_it_in_half(tmp_path, monkeypatch):
    from minitorch.paper import reproduce as reproduce_module

    out = tmp_path / "figures"
    _fake_previous_run(out)
    replace = os.replace

    def interrupted_replace(source, target):
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C between two files of the move
        replace(source, target)

    monkeypatch.setattr(reproduce_module, "_reproduce_into", _write_a_run)
    monkeypatch.setattr(reproduce_module.os, "replace", interrupted_replace)
    try:
        reproduce_module.reproduce(out, only=["1x1"], progress=False, log=lambda message: None)
    except KeyboardInterrupt:  # caught, so that a failure here does not stop the whole test session
        pytest.fail("Ctrl-C interrupted the move of a completed run into its folder")
    monkeypatch.undo()
    assert (out / "results.json").read_text() == (out / "results.md").read_text() == "new", \
        "the move of a completed run must finish: results.json and results.md must come from the same run"


def test_a_partial_run_without_out_leaves_the_books_figures_untouched(tmp_path, monkeypatch):
    from minitorch.__main__ import main
    from minitorch.paper import reproduce as reproduce_module

    monkeypatch.chdir(tmp_path)
    before = _fake_previous_run(tmp_path / "figures", only=("1x1", "2x2", "4x4"))
    monkeypatch.setattr(reproduce_module, "_reproduce_into", _write_a_run)
    main(["reproduce", "--only", "1x1", "--seed", "1", "--no-progress"])
    assert file_hashes(tmp_path / "figures") == before, "reproduce --only 1x1 --seed 1 must not touch figures/"
    assert (tmp_path / "runs" / "seed1_only-1x1" / "results.json").is_file(), "it writes to runs/seed1_only-1x1/"


def test_an_interrupted_run_says_what_was_kept_and_changes_nothing(tmp_path, monkeypatch):
    from minitorch.paper import reproduce as reproduce_module

    out = tmp_path / "figures"
    before = _fake_previous_run(out, only=("1x1", "2x2", "4x4"))

    def interrupted(out_folder, *args):
        (out_folder / "sink_forming.gif").write_bytes(b"GIF89a")  # a shorter GIF, as the issue saw
        raise KeyboardInterrupt

    monkeypatch.setattr(reproduce_module, "_reproduce_into", interrupted)
    said = []
    with pytest.raises(KeyboardInterrupt):
        reproduce_module.reproduce(out, progress=False, log=said.append)
    assert file_hashes(out) == before and sorted(path.name for path in tmp_path.iterdir()) == ["figures"]
    assert any("nothing was written" in line and str(out) in line for line in said), said


def _in_the_way(kind: str):
    """Write into a folder what stands in the way of a quick 1x1 run: (its files' hashes, what a refusal says)."""
    def write(folder: Path):
        if kind == "a-file-named-models":
            folder.mkdir()
            (folder / "models").write_text("not a folder")
            return "holds models where this run writes its own files"
        if kind == "results-json-of-no-run":
            folder.mkdir()
            (folder / "results.json").write_text("my own notes")
            return "holds results.json where"
        only, quick, seed = {"an-earlier-full-run": (("1x1", "2x2", "4x4"), False, 0),
                             "an-earlier-quick-run": (("1x1", "2x2", "4x4"), True, 0),
                             "another-seed": (("1x1",), True, 1)}[kind]
        _fake_previous_run(folder, only, quick, seed)
        return "holds an earlier, different run (reproduce"
    return write


@pytest.mark.parametrize("kind", ["a-file-named-models", "results-json-of-no-run", "an-earlier-full-run",
                                  "an-earlier-quick-run", "another-seed"])
def test_a_folder_holding_another_run_is_refused_before_any_work_naming_force(tmp_path, monkeypatch, capsys, kind):
    from minitorch.__main__ import main

    out = tmp_path / "DIR"
    culprit = _in_the_way(kind)(out)
    before = file_hashes(out)
    monkeypatch.setattr("minitorch.paper.reproduce._reproduce_into", _no_work)
    with pytest.raises(SystemExit) as exit_info:
        main(["reproduce", "--quick", "--only", "1x1", "--out", str(out)])
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert exit_info.value.code == 2 and culprit in error and "--force" in error, error
    assert file_hashes(out) == before and sorted(path.name for path in tmp_path.iterdir()) == ["DIR"]


@pytest.mark.parametrize("kind", ["a-file-named-models", "results-json-of-no-run", "an-earlier-full-run"])
def test_force_replaces_the_earlier_run_whole_and_keeps_every_other_file(tmp_path, monkeypatch, kind):
    from minitorch.__main__ import main
    from minitorch.paper.reproduce import recorded_run, run_files

    out = tmp_path / "DIR"
    _in_the_way(kind)(out)
    (out / "beyond").mkdir()
    (out / "beyond" / "zoo_mass.png").write_text("another command's figure")
    (out / "notes.txt").write_text("a reader's notes")

    def write_a_recorded_run(out_folder, *args):
        from minitorch.paper.reproduce import write_record

        _write_a_run(out_folder)
        write_record(out_folder, dict(command="reproduce --quick --only 1x1"))
        return {"total_wall_time_seconds": 1}, 0

    monkeypatch.setattr("minitorch.paper.reproduce._reproduce_into", write_a_recorded_run)
    main(["reproduce", "--quick", "--only", "1x1", "--out", str(out), "--force"])
    own = set(run_files(["1x1"]))
    left = {path.relative_to(out).as_posix() for path in out.rglob("*") if not path.is_dir()}
    assert left == own | {"beyond/zoo_mass.png", "notes.txt"}, \
        f"the earlier run must be replaced whole and nothing else touched; left over: {sorted(left - own)}"
    assert recorded_run(out).command == "reproduce --quick --only 1x1" and set(recorded_run(out).files) == own


def test_the_books_own_runs_are_recognised_as_such(tmp_path):
    from minitorch.paper.beyond import FILES, _recorded_before_files
    from minitorch.paper.reproduce import ARCHITECTURES, recorded_run, run_files

    book = recorded_run(ROOT / "figures")
    assert book is not None and book.command == "reproduce", "`reproduce` must replace figures/ without --force"
    assert set(book.files) == set(run_files(list(ARCHITECTURES))), "figures/ holds what a full run writes"
    assert all((ROOT / "figures" / name).is_file() for name in book.files)
    beyond = recorded_run(ROOT / "figures" / "beyond", legacy=_recorded_before_files)
    assert beyond is not None and beyond.command == "reproduce --beyond" and set(beyond.files) == set(FILES)
    (tmp_path / "results.json").write_text(json.dumps(dict(command="reproduce", files=["../../etc/passwd"])))
    assert recorded_run(tmp_path) is None, "a record naming files outside its folder is no record"


def _bad_output_path(tmp_path: Path, kind: str, wants_folder: bool) -> tuple[str, str]:
    """(a path of this kind, what the refusal must say)."""
    (tmp_path / "taken").write_text("a file")
    if kind == "read-only":
        if os.geteuid() == 0:
            pytest.skip("root may write in any folder, so a read-only folder cannot be made")
        (tmp_path / "locked").mkdir()
        (tmp_path / "locked").chmod(0o500)
        return str(tmp_path / "locked" / "out"), "cannot write"
    return {
        "empty": ("", "is empty"),
        "root": ("/", "is the filesystem root"),
        "file-or-folder": (str(tmp_path / "taken"), "is a file, not a folder") if wants_folder
        else (str(tmp_path), "is a folder; name a file"),
        "below-a-file": (str(tmp_path / "taken" / "below"), "is a file, so nothing can be created below it"),
        "in-the-sources": (str(ROOT / "minitorch" / "out"), "lies inside the project's own minitorch/"),
    }[kind]


@pytest.mark.parametrize("command", ["reproduce --quick --only 1x1 --out", "reproduce --beyond --quick --out",
                                     "bench --json"])
@pytest.mark.parametrize("kind", ["empty", "root", "file-or-folder", "below-a-file", "in-the-sources", "read-only"])
def test_an_output_path_is_checked_before_any_work(tmp_path, monkeypatch, capsys, command, kind):
    from minitorch.__main__ import main

    monkeypatch.setattr("minitorch.paper.reproduce._reproduce_into", _no_work)
    monkeypatch.setattr("minitorch.paper.beyond._run_beyond_into", _no_work)
    monkeypatch.setattr("minitorch.tools.bench.run_steps", _no_work)
    option = command.split()[-1]
    path, reason = _bad_output_path(tmp_path, kind, wants_folder=option == "--out")
    try:
        with pytest.raises(SystemExit) as exit_info:
            main(command.split() + [path])
    finally:
        if (tmp_path / "locked").exists():
            (tmp_path / "locked").chmod(0o700)
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert exit_info.value.code == 2 and f"{option} " in error and reason in error, error


@pytest.mark.parametrize("arguments,culprit", [(dict(seed=-1), "seed"), (dict(jobs=0), "jobs"),
                                               (dict(seed=0.5), "seed")])
def test_reproduce_names_a_bad_seed_or_jobs_before_writing(tmp_path, arguments, culprit):
    from minitorch.paper.reproduce import reproduce

    with pytest.raises((TypeError, ValueError), match=culprit):
        reproduce(tmp_path / "out", progress=False, log=lambda message: None, **arguments)
    assert not any(tmp_path.iterdir()), "a refused run must write nothing"


def _group_is_gone(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="process groups and SIGINT are POSIX")
def test_ctrl_c_stops_every_worker_promptly_and_keeps_the_previous_run(tmp_path):
    out = tmp_path / "run"
    before = _fake_previous_run(out, only=("1x1", "2x2", "4x4"), quick=True)
    process = subprocess.Popen(
        [sys.executable, "-m", "minitorch", "reproduce", "--quick", "--jobs", "2", "--out", str(out)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    output = []
    for line in process.stdout:  # wait until the workers are training: a progress line names a model
        output.append(line)
        if "softmax" in line or "relu" in line:
            break
    time.sleep(1.0)
    os.killpg(process.pid, signal.SIGINT)  # as Ctrl-C in a terminal: the whole foreground group
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        pytest.fail("reproduce --jobs 2 did not exit within 15 s of Ctrl-C:\n" + "".join(output))
    output.append(process.stdout.read())
    assert process.returncode == 130, f"Ctrl-C must exit with 130, got {process.returncode}:\n{''.join(output)}"
    deadline = time.monotonic() + 10
    while not _group_is_gone(process.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _group_is_gone(process.pid), "a worker process outlived the interrupted run"
    assert file_hashes(out) == before, "an interrupted run must leave the previous run's files byte-identical"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["run"], "an interrupted run must leave nothing beside"
    assert "nothing was written" in "".join(output), "the run must say what was kept"


# ----------------------------------------------------------------------
# the engine


def test_editing_an_input_in_place_before_backward_is_refused():
    from minitorch import tensor

    x = tensor([1.0, 2.0, 3.0], requires_grad=True)
    loss = (x * x).sum()
    with pytest.raises(ValueError, match="read-only"):
        x.data[0] = 5.0  # mul's backward needs the old x: editing it now would give a wrong gradient
    loss.backward()
    np.testing.assert_array_equal(x.grad, [2.0, 4.0, 6.0])
    x.data[0] = 5.0  # after backward, the values are the student's again (an optimizer step does this)


def test_replacing_an_input_before_backward_names_the_operation():
    from minitorch import tensor

    x = tensor([1.0, 2.0, 3.0], requires_grad=True)
    loss = (x * x).sum()
    x.data = np.array([5.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match=r"input 0 of 'mul'.*after 'mul' used it.*copy"):
        loss.backward()


def test_the_documented_way_to_edit_before_backward_works_and_the_old_graph_refuses():
    from minitorch import tensor

    x = tensor([1.0, 2.0], requires_grad=True)
    old_loss = (x * x).sum()
    x.data = x.data.copy()  # as Tensor's docstring says
    x.data[0] = 3.0
    (x * x).sum().backward()
    np.testing.assert_array_equal(x.grad, [6.0, 4.0])
    with pytest.raises(RuntimeError, match="'mul'"):
        old_loss.backward()


def test_editing_a_saved_result_in_place_before_backward_is_refused():
    from minitorch import tensor

    x = tensor([0.5, 1.0], requires_grad=True)
    out = x.exp()  # exp's backward reuses its own result
    with pytest.raises(ValueError, match="read-only"):
        out.data *= 2


def test_optimizer_steps_still_update_parameters_in_place():
    from minitorch.optim import Adam

    model = tiny_model()
    optimizer = Adam(model.parameters(), lr=1e-3)
    x = np.random.default_rng(0).normal(size=(2, 16, 16))
    for _ in range(2):  # forward, backward, step, twice: the step must find the parameters writable
        optimizer.zero_grad()
        (model(x) ** 2).mean().backward()
        optimizer.step()


def test_load_state_dict_works_while_a_graph_holds_the_old_weights():
    model, other = tiny_model(), tiny_model(seed=1)
    loss = model(np.ones((1, 4, 16))).sum()
    model.load_state_dict(other.state_dict())
    with pytest.raises(RuntimeError, match="was given new values"):
        loss.backward()  # the graph was built from the weights just replaced


def test_reductions_of_an_empty_tensor_behave_as_numpy_and_pytorch():
    from minitorch import tensor

    empty = tensor(np.zeros((0, 3)), requires_grad=True)
    assert np.isnan(empty.mean().item()), "the mean of no numbers is NaN (NumPy, PyTorch)"
    assert empty.sum().item() == 0.0
    assert empty.softmax(0).shape == (0, 3) and empty.softmax(1).shape == (0, 3), "a softmax of nothing is empty"
    with pytest.raises(ValueError, match=r"max: a tensor of shape \(0, 3\) has no elements"):
        empty.max()
    with pytest.raises(ValueError, match="no elements along axis 0"):
        empty.max(axis=0)
    empty.mean().backward()
    assert empty.grad.shape == (0, 3)


@pytest.mark.parametrize("function,point,op", [
    (lambda t: t.relu(), [0.0, 1.0], "relu"),
    (lambda t: t.log(), [0.0, 1.0], "log"),
])
def test_gradcheck_at_a_kink_says_the_point_is_not_differentiable(function, point, op):
    from minitorch.gradcheck import GradcheckError, gradcheck

    with np.errstate(all="ignore"), pytest.raises(GradcheckError, match=f"not differentiable: '{op}'"):
        gradcheck(function, [np.array(point)])


def test_gradcheck_away_from_kinks_passes_and_says_nothing_of_them():
    from minitorch.gradcheck import gradcheck

    assert gradcheck(lambda t: t.relu() + t.log(), [np.array([0.5, 2.0])])


def _refusing_softmax(scores, future):
    """Softmax attention as exercise 2.3's contract allows it to meet NaN: a ValueError, in its own words."""
    if not np.isfinite(scores.data).all():
        raise ValueError("my softmax will not normalise these scores")
    from minitorch.paper import attention
    return attention.softmax_attention(scores, future)


@pytest.mark.parametrize("path", ["readable", "fast", "a softmax refusing in its own words"])
def test_training_on_nan_data_says_the_data_is_to_blame(path, monkeypatch):
    """Whatever trains (the library's softmax, which raises ValueError on NaN as exercise 2.3 asks; the fast
    path, whose array softmax lets NaN through to the loss, or runs the student's softmax in an edition that
    removed it; any softmax raising ValueError), the error says the batch holds NaN."""
    from minitorch import fast
    from minitorch.paper import attention
    from minitorch.paper import train as train_module

    make_batch = train_module.make_batch

    def batch_with_nan(*args, **kwargs):
        x, y, triggers = make_batch(*args, **kwargs)
        x[0, 1, 2] = np.nan  # e.g. a student's task code that divides by zero
        return x, y, triggers

    monkeypatch.setattr(train_module, "make_batch", batch_with_nan)
    model = tiny_model()
    if path == "fast":
        model = fast.speed_up(model)
    elif path != "readable":
        monkeypatch.setitem(attention.NORMALISERS, "softmax", _refusing_softmax)
    with pytest.raises(FloatingPointError, match="at step 1 .*batch itself holds NaN"):
        train_module.train(model, lr=1e-3, max_steps=5, progress=False)


def _tensor_of(data, **options):
    from minitorch import tensor

    return lambda: tensor(data, **options)


@pytest.mark.parametrize("make,error,culprit", [
    (_tensor_of(None), TypeError, "from NoneType"),
    (_tensor_of("1.5"), TypeError, "from str"),
    (_tensor_of({"a": 1.0}), TypeError, "from dict"),
    (_tensor_of([[1.0, 2.0], [3.0]]), ValueError, "list"),
    (_tensor_of([2**2000]), TypeError, "holding int"),
    (_tensor_of([1j]), TypeError, "complex128"),
    (lambda: _tensor_of([_tensor_of(1.0)(), _tensor_of(2.0)()])(), TypeError, r"list of Tensors.*stack"),
    (_tensor_of([1.0], requires_grad="False"), TypeError, r"requires_grad must be True or False, got 'False'"),
], ids=["None", "str", "dict", "ragged", "int-beyond-float", "complex", "list-of-tensors", "requires-grad-str"])
def test_tensor_construction_names_what_was_passed(make, error, culprit):
    with pytest.raises(error, match=culprit):
        make()


def test_tensor_of_an_integer_beyond_64_bits_is_the_float_it_rounds_to():
    from minitorch import tensor

    assert tensor([2**70]).item() == float(2**70), "a float tensor holds 2**70 as NumPy's float would"


def _engine_call(name):
    import minitorch
    from minitorch.nn import Linear

    x = minitorch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    return {
        "sum-axis-float": lambda: x.sum(axis=1.5),
        "sum-axis-twice": lambda: x.sum(axis=(0, -2)),
        "mean-axis-bool": lambda: x.mean(axis=True),
        "transpose-axis-5": lambda: x.transpose(0, 5),
        "stack-nothing": lambda: minitorch.stack([]),
        "concatenate-nothing": lambda: minitorch.concatenate([]),
        "stack-one-tensor": lambda: minitorch.stack(x),
        "gradcheck-step-0": lambda: minitorch.gradcheck(lambda t: t * t, [np.ones(2)], step=0),
        "gradcheck-step-nan": lambda: minitorch.gradcheck(lambda t: t * t, [np.ones(2)], step=float("nan")),
        "linear-float-size": lambda: Linear(2.5, 3),
        "linear-zero-size": lambda: Linear(2, 0),
    }[name]


@pytest.mark.parametrize("name,error,culprit", [
    ("sum-axis-float", TypeError, r"sum: an axis must be an integer, got 1.5"),
    ("sum-axis-twice", ValueError, "sum: axis .* same axis twice"),
    ("mean-axis-bool", TypeError, "mean: an axis must be an integer"),
    ("transpose-axis-5", ValueError, "transpose: axis 5 is out of range for a tensor with 2 dimensions"),
    ("stack-nothing", ValueError, "stack: got no tensors"),
    ("concatenate-nothing", ValueError, "concatenate: got no tensors"),
    ("stack-one-tensor", TypeError, r"stack: expected a list of tensors, got one Tensor"),
    ("gradcheck-step-0", ValueError, "gradcheck: step must be a finite number > 0, got 0"),
    ("gradcheck-step-nan", ValueError, "gradcheck: step must be a finite number > 0, got nan"),
    ("linear-float-size", TypeError, "Linear: in_features must be an integer >= 1, got 2.5"),
    ("linear-zero-size", ValueError, "Linear: out_features must be an integer >= 1, got 0"),
])
def test_an_engine_operation_names_a_bad_argument(name, error, culprit):
    with pytest.raises(error, match=culprit):
        _engine_call(name)()


@pytest.mark.parametrize("question,culprit", [
    (lambda x, y: len(x.sum()), "len\\(\\) of a 0-d tensor"),
    (lambda x, y: x < "a", "'<' not supported between instances of 'Tensor' and 'str'"),
    (lambda x, y: x in [y], r"any\(t is x for t in tensors\)"),
    (lambda x, y: bool(x == y), r"\(x == y\).all\(\)"),
], ids=["len-0d", "less-than-str", "in-list", "if-equal"])
def test_a_python_question_a_tensor_cannot_answer_says_what_to_ask_instead(question, culprit):
    from minitorch import tensor

    x, y = tensor([1.0, 2.0]), tensor([1.0, 3.0])
    with pytest.raises(TypeError, match=culprit):
        question(x, y)


def test_python_questions_a_tensor_can_answer_keep_working():
    from minitorch import tensor

    x, y = tensor([1.0, 2.0]), tensor([1.0, 3.0])
    assert x in [x, y], "`in` finds the very same tensor (Python compares identity before values)"
    assert tensor([2.0]) in [tensor([2.0])], "one element: `in` compares the values, as in PyTorch"
    assert x != "a" and not (x == None), "a Tensor equals no string and not None"  # noqa: E711
    np.testing.assert_array_equal(x.data[x > 1.5], [2.0])
    assert repr(x == y) == "array([ True, False])" and type((x == y).all()) is np.bool_, "a mask reads as NumPy's"


def test_the_gradient_of_x_to_the_power_0_is_0_everywhere_also_at_0():
    from minitorch import tensor

    x = tensor([0.0, 2.0], requires_grad=True)
    with np.errstate(all="raise"):  # no 0 * inf on the way
        (x**0).sum().backward()
    np.testing.assert_array_equal(x.grad, [0.0, 0.0], err_msg="d(x^0)/dx = 0, as PyTorch gives, not nan at 0")


@pytest.mark.parametrize("change", ["SGD", "Adam", "in-place-edit", "new-data"])
def test_a_second_backward_after_the_parameters_changed_raises_instead_of_a_wrong_gradient(change):
    from minitorch import optim, tensor

    x = tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    if change in ("SGD", "Adam"):
        getattr(optim, change)([x], lr=0.1).step()
    elif change == "in-place-edit":
        x.data[0] = 5.0
    else:
        x.data = np.array([5.0, 2.0])
    x.zero_grad()
    with pytest.raises(RuntimeError, match=r"input 0 of 'mul' .*was given new values.*optimizer step.*forward pass"):
        y.backward()
    assert x.grad is None, "a refused backward must not leave a partial gradient"


def test_a_second_backward_through_an_unchanged_graph_gives_the_same_gradient():
    from minitorch import tensor

    x = tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    x.zero_grad()
    y.backward()
    np.testing.assert_array_equal(x.grad, [2.0, 4.0], err_msg="nothing changed: the same gradient, 2x")


@pytest.mark.parametrize("make,error,culprit", [
    (lambda p, model: optim_of("Adam", model), TypeError, "got a model; pass model.parameters()"),
    (lambda p, model: optim_of("SGD", p), TypeError, r"got a single Tensor; pass model.parameters\(\) or \[p\]"),
    (lambda p, model: optim_of("Adam", [np.zeros(3)]), TypeError, "parameter 0 is of type ndarray, not a Tensor"),
    (lambda p, model: optim_of("Adam", [p, p]), ValueError, "parameter 1 is parameter 0 again"),
    (lambda p, model: optim_of("SGD", [p, p]), ValueError, "parameter 1 is parameter 0 again"),
    (lambda p, model: optim_of("Adam", [p], betas=(0.9,)), ValueError, r"betas must be a pair \(beta1, beta2\)"),
    (lambda p, model: optim_of("Adam", [p], betas=(0.9, "0.99")), TypeError, "betas must be a finite number"),
], ids=["adam-of-a-model", "sgd-of-one-tensor", "adam-of-arrays", "adam-p-p", "sgd-p-p", "one-beta", "beta-str"])
def test_an_optimizer_names_what_is_not_a_list_of_distinct_parameters(make, error, culprit):
    from minitorch.nn import Linear, Parameter

    with pytest.raises(error, match=culprit):
        make(Parameter(np.zeros(2)), Linear(2, 3))


def optim_of(name, parameters, **options):
    from minitorch import optim

    return getattr(optim, name)(parameters, lr=0.1, **options)


# ----------------------------------------------------------------------
# numbers and flags typed by a person: one parser


@pytest.mark.parametrize("value,quick", [("1", True), ("true", True), ("YES", True), ("on", True), ("0", False),
                                         ("false", False), ("no", False), ("Off", False), ("", False), (None, False)])
def test_minitorch_quick_accepts_the_usual_spellings_of_on_and_off(monkeypatch, value, quick):
    from minitorch.paper import quick_mode

    if value is None:
        monkeypatch.delenv("MINITORCH_QUICK", raising=False)
    else:
        monkeypatch.setenv("MINITORCH_QUICK", value)
    assert quick_mode() is quick, f"MINITORCH_QUICK={value!r} must mean {'quick' if quick else 'not quick'}"


@pytest.mark.parametrize("value", ["abc", "2", "quick", "1.0"])
def test_minitorch_quick_refuses_anything_else_naming_the_variable(monkeypatch, value):
    from minitorch.paper import quick_mode

    monkeypatch.setenv("MINITORCH_QUICK", value)
    with pytest.raises(ValueError, match=f"MINITORCH_QUICK must be one of 1, 0, true, false.*got {value!r}"):
        quick_mode()


def test_every_chapter_reads_minitorch_quick_through_the_one_parser():
    readers = {path.name: path.read_text(encoding="utf-8").count("quick_mode()")
               for path in sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))}
    by_hand = [name for name in readers if 'environ.get(\\"MINITORCH_QUICK' in (ROOT / "chapters" / name).read_text()]
    assert not by_hand and all(readers.values()), f"chapters reading MINITORCH_QUICK by hand: {by_hand}; {readers}"


@pytest.mark.parametrize("arguments,option,wanted", [
    (["reproduce", "--seed", "-1"], "--seed", "a whole number >= 0"),
    (["reproduce", "--seed", "1.5"], "--seed", "a whole number >= 0"),
    (["reproduce", "--seed", "abc"], "--seed", "a whole number >= 0"),
    (["reproduce", "--jobs", "0"], "--jobs", "a whole number >= 1"),
    (["reproduce", "--jobs", "nan"], "--jobs", "a whole number >= 1"),
    (["bench", "--steps", "0"], "--steps", "a whole number >= 1"),
    (["bench", "--threads", "inf"], "--threads", "a whole number >= 1"),
    (["bench", "--rounds", "2.5"], "--rounds", "a whole number >= 1"),
    (["bench", "--jobs", "-2"], "--jobs", "a whole number >= 1"),
])
def test_a_number_option_names_itself_and_the_values_allowed(capsys, arguments, option, wanted):
    from minitorch.__main__ import main

    with pytest.raises(SystemExit) as exit_info:
        main(arguments)
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert exit_info.value.code == 2 and f"argument {option}: must be {wanted}, got '{arguments[-1]}'" in error, error


# ----------------------------------------------------------------------
# the course's commands and pytest's options: a clear line, before any work


def _course(*arguments: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "minitorch.exercises", *arguments], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.parametrize("arguments,culprit", [
    (["--timeout", "nan"], "argument --timeout: must be a finite number > 0"),
    (["--timeout", "inf"], "argument --timeout: must be a finite number > 0"),
    (["--timeout", "0"], "argument --timeout: must be a finite number > 0"),
    (["--jobs", "1.5"], "argument --jobs: must be a whole number >= 1"),
    (["--budget", "-1"], "argument --budget: must be a finite number > 0"),
    (["--exercise-seed", "x"], "argument --exercise-seed: must be a whole number >= 0"),
    (["--isolation", "chroot"], "argument --isolation: invalid choice"),
], ids=["timeout-nan", "timeout-inf", "timeout-0", "jobs", "budget", "seed", "isolation"])
def test_grade_refuses_a_bad_number_or_choice_before_any_work(tmp_path, arguments, culprit):
    (tmp_path / "subs" / "ann" / "minitorch").mkdir(parents=True)
    completed = _course("grade", str(tmp_path / "subs"), "--out", str(tmp_path / "grades"), *arguments)
    assert completed.returncode == 2 and culprit in completed.stderr, completed.stderr
    assert not (tmp_path / "grades").exists(), "nothing may be written for a refused command"


@pytest.mark.parametrize("out", ["subs", "subs/grades", "subs/ann/notes.txt", ""], ids=["the-submissions",
                                                                                     "inside-them", "a-file", "empty"])
def test_grade_refuses_an_output_folder_that_would_mix_with_the_submissions(tmp_path, out):
    (tmp_path / "subs" / "ann" / "minitorch").mkdir(parents=True)
    (tmp_path / "subs" / "ann" / "notes.txt").write_text("mine")
    before = sorted(path.relative_to(tmp_path) for path in tmp_path.rglob("*"))
    completed = _course("grade", str(tmp_path / "subs"), "--out", str(tmp_path / out) if out else "")
    assert completed.returncode == 2 and "--out" in completed.stderr, completed.stderr
    assert sorted(path.relative_to(tmp_path) for path in tmp_path.rglob("*")) == before, "a refused run wrote"


@pytest.mark.parametrize("arguments,culprit", [
    (["--timeout", "inf"], "argument --timeout: must be a finite number > 0"),
    (["--timeout", "nan"], "argument --timeout: must be a finite number > 0"),
    (["--deadline", "0"], "argument --deadline: must be a finite number > 0"),
    (["--exercise-seed", "-3"], "argument --exercise-seed: must be a whole number >= 0"),
], ids=["timeout-inf", "timeout-nan", "deadline", "seed"])
def test_gradescope_bundle_refuses_a_bad_number_before_building(tmp_path, arguments, culprit):
    completed = _course("gradescope-bundle", str(tmp_path / "autograder.zip"), "--only", "3.1", *arguments)
    assert completed.returncode == 2 and culprit in completed.stderr, completed.stderr
    assert not (tmp_path / "autograder.zip").exists()


@pytest.mark.parametrize("arguments,culprit", [
    (["--test-timeout=nan"], "--test-timeout must be a finite number of seconds"),
    (["--test-timeout=inf"], "--test-timeout must be a finite number of seconds"),
    (["--exercise-seed=1.5"], "--exercise-seed must be a whole number"),
    (["-m", "ex9_9"], "there is no exercise 9.9"),
    (["-m", "ch08"], "chapter 08 has no graded exercises"),
    (["--scoreboard-json={tmp}"], "is a folder; name a file"),
], ids=["timeout-nan", "timeout-inf", "seed", "no-such-exercise", "no-such-chapter", "scoreboard-folder"])
def test_pytest_refuses_a_bad_option_naming_it_before_any_test(tmp_path, arguments, culprit):
    arguments = [argument.replace("{tmp}", str(tmp_path)) for argument in arguments]
    completed = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *arguments,
                                "tests/test_readme.py"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert completed.returncode == 4, completed.stdout + completed.stderr
    assert culprit in completed.stdout + completed.stderr, completed.stdout + completed.stderr
    assert "passed" not in completed.stdout


def test_student_edition_refuses_a_destination_it_cannot_write_before_any_work(tmp_path):
    (tmp_path / "taken").write_text("a file")
    completed = _course("student-edition", str(tmp_path / "taken" / "edition"))
    assert completed.returncode == 2 and "is a file, so nothing can be created below it" in completed.stderr
