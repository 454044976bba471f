"""reproduce: what it writes, and where. A bad output folder is refused before any work, a run that does not
complete changes nothing, a rerun replaces exactly the files of the earlier run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bad_input_helpers import ROOT, file_hashes


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



def test_the_default_folder_of_a_selection_is_the_same_in_any_order_as_its_recorded_command(monkeypatch):
    """reproduce --quick --only 2x2,1x1 recorded itself as --only 1x1,2x2 but wrote to runs/quick_only-2x2-1x1: the
    same run had two default folders, and a rerun in the other order neither found nor replaced the first."""
    from minitorch.__main__ import main
    from minitorch.paper.reproduce import run_command

    folders = []
    monkeypatch.setattr("minitorch.paper.reproduce.reproduce", lambda out, **kwargs: folders.append(out))
    for order in ("2x2,1x1", "1x1,2x2"):
        main(["reproduce", "--quick", "--only", order])
    assert folders == ["runs/quick_only-1x1-2x2"] * 2, f"one default folder for one selection, got {folders}"
    assert run_command(True, ["2x2", "1x1"], 0) == "reproduce --quick --only 1x1,2x2", "and one recorded command"

def _one_seeds_run(shape, normaliser, seed, quick):
    """Stands in for `beyond.train_seed`: one seed's record, in no time."""
    return dict(shape=shape, normaliser=normaliser, seed=seed, steps=10, converged=True, wall_time_seconds=0.1,
                test_max_error=1e-3, bos_mass_mean=0.9, bos_mass_min=0.9, heads_sinking=1, heads_total=1)


def test_run_seeds_of_other_seeds_is_another_run_than_the_command_lines_and_needs_force(tmp_path, monkeypatch):
    """beyond.run_seeds(seeds=[3]) recorded itself as `reproduce --seeds --quick --only 1x1`, the ten-seed command
    line's run: it replaced that run's 20 runs with 2 of seed 3 without --force, and said the command line wrote it."""
    from minitorch.__main__ import main
    from minitorch.outputs import OutputPathError
    from minitorch.paper import beyond

    monkeypatch.setattr(beyond, "train_seed", _one_seeds_run)
    out = tmp_path / "S"
    main(["reproduce", "--seeds", "--quick", "--only", "1x1", "--jobs", "1", "--out", str(out)])
    before = file_hashes(out)
    assert json.loads((out / "results.json").read_text())["command"] == "reproduce --seeds --quick --only 1x1"
    with pytest.raises(OutputPathError, match=r"holds an earlier, different run \(reproduce --seeds --quick .*--force"):
        beyond.run_seeds(out, seeds=[3], quick=True, shapes=("1x1",), log=lambda message: None)
    assert file_hashes(out) == before, "run_seeds of one seed must not replace the ten-seed run without force"
    results = beyond.run_seeds(out, seeds=[3], quick=True, shapes=("1x1",), log=lambda message: None, force=True)
    assert results["command"] == "beyond.run_seeds(seeds=[3], quick=True, shapes=('1x1',))", \
        f"the command recorded must name the seeds that ran, got {results['command']!r}"
    assert "Written by `beyond.run_seeds(seeds=[3]" in (out / "results.md").read_text(), \
        "results.md must not say that the command line wrote a run of seed 3"
    beyond.run_seeds(out, seeds=[3], quick=True, shapes=("1x1",), log=lambda message: None)  # its own run: replaced


def test_run_beyond_with_a_budget_of_its_own_is_another_run_than_the_command_lines(tmp_path, monkeypatch):
    """run_beyond(out, Budget(..., quick=False)) with a small budget recorded `reproduce --beyond`, so it replaced
    the command line's run (or was replaced by it) without --force."""
    from minitorch.outputs import OutputPathError
    from minitorch.paper import beyond
    from minitorch.paper.reproduce import write_record

    def record_only(out_folder, budget, jobs, command):
        results = dict(command=command, wall_time_seconds=0.0)
        write_record(out_folder, results)
        return results, 0

    monkeypatch.setattr(beyond, "_run_beyond_into", record_only)
    out = tmp_path / "B"
    beyond.run_beyond(out, beyond.QUICK, log=lambda message: None)
    before = file_hashes(out)
    small = beyond.Budget(zoo_seeds=[0], zoo_max_steps=1, law_lengths=[8], law_max_steps=1, seeds_4x4=[0], quick=True)
    with pytest.raises(OutputPathError, match=r"holds an earlier, different run \(reproduce --beyond --quick\)"):
        beyond.run_beyond(out, small, log=lambda message: None)
    assert file_hashes(out) == before, "a run of another budget must not replace the command line's without force"
    assert beyond.run_beyond(out, small, log=lambda message: None, force=True)["command"] \
        == f"beyond.run_beyond(budget={small!r})", "the command recorded must name the budget that ran"
    same = beyond.Budget(**{**vars(beyond.QUICK), "zoo_seeds": [0]})  # QUICK's budget, a list for a tuple
    with pytest.raises(OutputPathError, match="--force"):
        beyond.run_beyond(out, same, log=lambda message: None)
    assert beyond.run_beyond(out, same, log=lambda message: None, force=True)["command"] \
        == "reproduce --beyond --quick", "QUICK's budget is the command line's run, however its seeds are given"


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


@pytest.mark.parametrize("command", ["book --no-pdf", "reproduce --quick --only 1x1", "reproduce --beyond --quick"])
@pytest.mark.parametrize("place", ["~", "."])
def test_force_never_replaces_the_home_or_the_current_folder(tmp_path, monkeypatch, capsys, command, place):
    """`book --force --out ~` deleted every file of the home folder, as the refusal without --force had advised."""
    from minitorch.__main__ import main

    home, here = tmp_path / "home", tmp_path / "here"  # stand-ins: the real home is never named
    for folder in (home, here):
        (folder / "Documents").mkdir(parents=True)
        (folder / "Documents" / "tax.txt").write_text("the user's taxes")
        (folder / ".bashrc").write_text("the user's shell")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(here)
    for work in ["minitorch.paper.reproduce._reproduce_into", "minitorch.paper.beyond._run_beyond_into",
                 "minitorch.tools.book.build.execute_all"]:
        monkeypatch.setattr(work, _no_work)
    before, folder = file_hashes(tmp_path), {"~": home, ".": here}[place]
    for force in ([], ["--force"]):
        try:
            status = main(command.split() + ["--out", place, *force])
        except SystemExit as exit_info:
            status = exit_info.code
        error = capsys.readouterr().err.strip().splitlines()[-1]
        what = {"~": "the home folder", ".": "the current folder"}[place]
        assert status == 2 and f"--out {place}: {folder} is {what}" in error, error
        assert "choose a folder of its own" in error and "--force" not in error, f"never advise --force: {error}"
        assert file_hashes(tmp_path) == before, f"{' '.join(force)}: every file of {what} must be kept"


@pytest.mark.parametrize("command", ["reproduce --quick --only 1x1", "reproduce --beyond --quick"])
def test_force_never_deletes_a_folder_named_like_a_file_the_run_writes(tmp_path, monkeypatch, capsys, command):
    """`reproduce --force` deleted the user's folder results.md/ with the drafts in it, to write its results.md."""
    from minitorch.__main__ import main

    out = tmp_path / "DIR"
    (out / "results.md").mkdir(parents=True)
    (out / "results.md" / "draft.txt").write_text("chapter draft")
    monkeypatch.setattr("minitorch.paper.reproduce._reproduce_into", _no_work)
    monkeypatch.setattr("minitorch.paper.beyond._run_beyond_into", _no_work)
    for force in ([], ["--force"]):
        with pytest.raises(SystemExit) as exit_info:
            main(command.split() + ["--out", str(out), *force])
        error = capsys.readouterr().err.strip().splitlines()[-1]
        assert exit_info.value.code == 2 and "results.md is a folder" in error and "add --force" not in error, error
        assert (out / "results.md" / "draft.txt").read_text() == "chapter draft", "the user's draft must be kept"


def test_the_books_own_runs_are_recognised_as_such(tmp_path):
    from minitorch.paper.beyond import FILES
    from minitorch.paper.reproduce import ARCHITECTURES, recorded_run, run_files

    book = recorded_run(ROOT / "figures")
    assert book is not None and book.command == "reproduce", "`reproduce` must replace figures/ without --force"
    assert set(book.files) == set(run_files(list(ARCHITECTURES))), "figures/ holds what a full run writes"
    assert all((ROOT / "figures" / name).is_file() for name in book.files)
    beyond = recorded_run(ROOT / "figures" / "beyond")
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


@pytest.fixture
def mount_point(tmp_path):
    """An empty folder that is a file system of its own (a tmpfs): only root can make one, where mount is allowed."""
    if sys.platform != "linux" or os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root on Linux")
    point = tmp_path / "mounted"
    point.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(point)], capture_output=True,
                             text=True)
    if mounted.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield point
    finally:
        subprocess.run(["umount", str(point)], check=True)


@pytest.mark.parametrize("command", ["reproduce --quick --only 1x1 --out", "book --no-pdf --out",
                                     "student-edition --only 1.1"])
def test_an_output_folder_that_is_a_mount_point_is_refused_before_any_work(tmp_path, monkeypatch, capsys,
                                                                          mount_point, command):
    """What a command builds beside its folder cannot be moved onto a mount point, nor its files into one: the
    system said so only when the work was done (after minutes of training), in words about an internal name."""
    from minitorch.__main__ import main as minitorch_main
    from minitorch.exercises.__main__ import main as exercises_main

    for work in ["minitorch.paper.reproduce._reproduce_into", "minitorch.tools.book.build.execute_all",
                 "minitorch.exercises.edition._build"]:
        monkeypatch.setattr(work, _no_work)
    chapters = tmp_path / "chapters"  # (the book reads its chapters before it builds)
    chapters.mkdir()
    (chapters / "01_one.ipynb").write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    if command.startswith("student-edition"):
        main, arguments = exercises_main, ["student-edition", str(mount_point), *command.split()[1:]]
    else:
        main, arguments = minitorch_main, command.split() + [str(mount_point)]
        arguments += ["--chapters", str(chapters)] * command.startswith("book")
    try:
        status = main(arguments)
    except SystemExit as exit_info:
        status = exit_info.code
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert status == 2 and f"{mount_point}: is a mount point" in error and "use a folder inside it" in error, \
        error
    assert ".partial" not in error and not any(mount_point.iterdir())
    assert sorted(path.name for path in tmp_path.iterdir()) == ["chapters", "mounted"], "nothing left beside it"


@pytest.mark.parametrize("arguments,culprit", [(dict(seed=-1), "seed"), (dict(jobs=0), "jobs"),
                                               (dict(seed=0.5), "seed"),
                                               (dict(quick="no"), "reproduce: quick must be True or False"),
                                               (dict(log=None), "reproduce: log must be a function")])
def test_reproduce_names_a_bad_argument_before_writing(tmp_path, arguments, culprit):
    from minitorch.paper.reproduce import reproduce

    arguments = {"progress": False, "log": lambda message: None, **arguments}
    with pytest.raises((TypeError, ValueError), match=culprit):
        reproduce(tmp_path / "out", **arguments)
    assert not any(tmp_path.iterdir()), "a refused run must write nothing"


def _group_is_gone(group: int) -> bool:
    """No live process of the process group is left. A zombie has ended (only its exit status waits to be
    collected): when an earlier test made this pytest process a subreaper, the run's orphans end as this
    process's zombies, which kill(0) would still count."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[2]) == group and fields[0] != "Z":  # fields: state, ppid, pgrp, ...
                return False
    return True


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


def test_a_build_whose_staging_folder_was_deleted_fails_naming_the_output_folder(tmp_path):
    import shutil

    from minitorch.outputs import building_aside, write_atomically

    target = tmp_path / "parent" / "run"
    with pytest.raises(OSError) as refusal:
        with building_aside(target) as staging:
            (staging / "model.npz").write_text("written before the deletion")
            shutil.rmtree(tmp_path / "parent")  # a user deletes the folder holding --out while the run works
            write_atomically(staging / "results.json", "{}")  # a later write makes the staging folder again
    assert str(target) in str(refusal.value) and "deleted" in str(refusal.value), (
        f"a build whose folder vanished midway must fail naming the output folder, said: {refusal.value}")
    assert not target.exists(), "an incomplete build (its first files lost) must never take the output's place"


def test_an_error_about_a_file_being_built_names_it_under_the_output_folder(tmp_path):
    from minitorch.outputs import building_aside

    target = tmp_path / "run"
    with pytest.raises(OSError) as failure:
        with building_aside(target) as staging:
            raise OSError(27, "File too large", str(staging / "figure.png"))
    assert failure.value.filename == str(target / "figure.png"), (
        f"the error must name the file under --out, not the hidden staging folder: {failure.value}")


def test_a_read_only_file_of_an_earlier_run_is_refused_before_any_work(tmp_path):
    from minitorch.outputs import RecordedRun, files_to_replace
    from minitorch.outputs.paths import OutputPathError

    (tmp_path / "results.md").write_text("the earlier run's")
    (tmp_path / "results.md").chmod(0o444)
    earlier = RecordedRun("reproduce --quick", ["results.md", "results.json"])
    with pytest.raises(OutputPathError, match="read-only") as refusal:
        files_to_replace(tmp_path, ["results.md", "results.json"], earlier, "reproduce --quick")
    assert "results.md" in str(refusal.value), (
        f"a run must refuse, before any work, to replace a file its owner made read-only: {refusal.value}")


def test_our_own_error_about_a_file_being_built_names_it_under_the_output_folder(tmp_path):
    import errno

    from minitorch.outputs import UnwritableFileError, building_aside

    target = tmp_path / "run"
    with pytest.raises(OSError) as failure:
        with building_aside(target) as staging:
            error = UnwritableFileError(f"save: path {staging / 'figure.png'}: writing it failed (File too large)")
            error.errno = errno.EFBIG  # as write_atomically sets it, for the command's advice
            raise error
    assert str(failure.value) == f"save: path {target / 'figure.png'}: writing it failed (File too large)", (
        f"the error must name the file under --out, not the hidden staging folder: {failure.value}")
