"""The path rule (minitorch.outputs): a path too long, a symbolic-link loop, a deleted working folder or a special
file is refused in one line before any work; a save goes through a symbolic link; an output folder's files belong
to a recorded run or are refused; nothing waits forever."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import tempfile
import threading
from pathlib import Path

import numpy as np
import pytest

from minitorch.paper.models import ModelFileError, load_model, save_model
from bad_input_helpers import ROOT, file_hashes, tiny_model


def _finishes_within(seconds: float, function):
    """function() in a thread; its exception or result, or a test failure if it is still waiting after `seconds`
    (a FIFO opened for reading waits forever for a writer)."""
    outcome = {}

    def run():
        try:
            outcome["result"] = function()
        except BaseException as error:  # noqa: BLE001 - handed to the test
            outcome["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"still waiting after {seconds} s: a special file must be refused before it is opened")
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("result")


# ----------------------------------------------------------------------
# the path rule


def _bad_path(tmp_path: Path, kind: str) -> str:
    if kind == "name-too-long":
        return str(tmp_path / ("n" * 300))
    if kind == "path-too-long":
        return str(tmp_path / "/".join(["d" * 200] * 25))
    if kind == "symlink-loop":
        os.symlink("loop", tmp_path / "loop")
        return str(tmp_path / "loop")
    if kind == "loop-in-a-folder-above":
        os.symlink("up", tmp_path / "up")
        return str(tmp_path / "up" / "run")
    raise AssertionError(kind)


@pytest.mark.parametrize("kind,reason", [
    ("name-too-long", r"a name of 300 bytes is too long \(at most 255\)"),
    ("path-too-long", r"the path is \d+ bytes long \(at most 4095\)"),
    ("symlink-loop", r"points back to itself \(a loop\)"),
    ("loop-in-a-folder-above", r"points back to itself \(a loop\)"),
])
@pytest.mark.parametrize("check", ["folder", "file", "input"])
def test_a_path_that_cannot_be_opened_is_refused_in_one_line_naming_why(tmp_path, kind, reason, check):
    from minitorch.outputs import PathError, check_input_file, check_output_file, check_output_folder

    path = _bad_path(tmp_path, kind)
    calls = {"folder": lambda: check_output_folder(path, "--out"), "file": lambda: check_output_file(path, "--json"),
             "input": lambda: check_input_file(path, "load_model")}
    with pytest.raises(PathError, match=reason) as refused:
        calls[check]()
    assert "\n" not in str(refused.value) and len(str(refused.value)) < 300, "one short line, not the whole path"


def test_a_deleted_working_folder_is_named_as_such(tmp_path, monkeypatch):
    from minitorch.outputs import OutputPathError, check_output_folder

    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    with pytest.raises(OutputPathError, match="the working folder no longer exists"):
        check_output_folder("runs/quick")


@pytest.mark.parametrize("check", ["folder", "file", "input", "a figure", "a model"])
def test_a_home_folder_of_no_user_is_named_not_a_pathlib_traceback(check):
    """'~nosuchuser/x' made pathlib raise RuntimeError('Could not determine home directory.'), a traceback naming no
    path, from every command's --out, --json and --chapters and from a figure's or a model's path."""
    import matplotlib.pyplot as plt

    from minitorch.outputs import PathError, check_input_file, check_output_file, check_output_folder
    from minitorch.paper.plotting import canvas

    path = "~no-user-has-this-name/out.png"
    calls = {"folder": lambda: check_output_folder(path, "--out"), "file": lambda: check_output_file(path, "--json"),
             "input": lambda: check_input_file(path, "--chapters"), "a model": lambda: load_model(path),
             "a figure": lambda: canvas.save(plt.figure(), path)}
    with pytest.raises(PathError, match="~no-user-has-this-name names no home folder on this machine") as refused:
        calls[check]()
    assert "\n" not in str(refused.value), f"one line: {refused.value}"


@pytest.mark.parametrize("length", [200, 246, 251])
def test_save_model_of_a_legal_long_name_leaves_room_for_its_temporary_name(tmp_path, length):
    """M18: a 250-character name failed on its temporary name, '.<name>.<random>.tmp'."""
    path = tmp_path / ("a" * (length - len(".npz")) + ".npz")
    save_model(tiny_model(), path)
    assert load_model(path).config == tiny_model().config and sorted(tmp_path.iterdir()) == [path]


def test_text_is_written_as_utf_8_whatever_the_locale(tmp_path):
    """Under LC_ALL=en_US.ISO-8859-1, write_text takes the locale's encoding, and reproduce would fail after 120 s
    of training writing 'a₁'. Every text file the library writes names its encoding (minitorch/exercises is not
    checked here)."""
    import ast

    from minitorch.outputs import write_atomically

    write_atomically(tmp_path / "results.md", "Theorem 1: a₁ ≥ 1 − δ")
    assert (tmp_path / "results.md").read_bytes().decode("utf-8") == "Theorem 1: a₁ ≥ 1 − δ"
    unnamed = []
    for source in sorted((ROOT / "minitorch").rglob("*.py")):
        if "exercises" in source.parts:
            continue
        for call in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) \
                    and call.func.attr in ("write_text", "read_text") \
                    and not any(keyword.arg == "encoding" for keyword in call.keywords):
                unnamed.append(f"{source.relative_to(ROOT)}:{call.lineno}")
    assert not unnamed, f"text read or written in the locale's encoding, not UTF-8: {unnamed}"


# ----------------------------------------------------------------------
# cause 3: who owns an output folder


def _recorded_folders_then_rerun(tmp_path, monkeypatch):
    """Rerun over a record naming folders ('models', 'beyond') that hold the user's files, which it must not
    delete; return the folder and those files."""
    from minitorch.paper import reproduce as reproduce_module

    out = tmp_path / "run"
    (out / "models").mkdir(parents=True)
    (out / "models" / "mine.npz").write_text("the user's own model")
    (out / "beyond").mkdir()
    (out / "beyond" / "results.md").write_text("the user's own results")
    (out / "results.json").write_text(json.dumps({"command": "reproduce --quick --only 1x1",
                                                  "files": ["results.json", "models", "beyond"]}))
    monkeypatch.setattr(reproduce_module, "_reproduce_into", _write_a_1x1_run)
    reproduce_module.reproduce(out, quick=True, only=["1x1"], progress=False, log=lambda line: None)
    return out, ["models/mine.npz", "beyond/results.md"]


def _recorded_user_file_then_rerun(tmp_path, monkeypatch):
    """A record of the same command edited to list the user's notes.txt: refused without --force, notes kept."""
    from minitorch.outputs import OutputPathError
    from minitorch.paper import reproduce as reproduce_module

    out = tmp_path / "run"
    out.mkdir()
    (out / "notes.txt").write_text("the user's own notes")
    (out / "results.json").write_text(json.dumps({"command": "reproduce --quick --only 1x1",
                                                  "files": ["results.json", "notes.txt"]}))
    monkeypatch.setattr(reproduce_module, "_reproduce_into", _write_a_1x1_run)
    with pytest.raises(OutputPathError, match=r"record of an earlier run of this command lists notes.txt, which this "
                                              r"command does not write .*--force"):
        reproduce_module.reproduce(out, quick=True, only=["1x1"], progress=False, log=lambda line: None)
    assert sorted(path.name for path in out.iterdir()) == ["notes.txt", "results.json"], "the refusal changed files"
    return out, ["notes.txt"]


def _book_record_naming_a_users_file(tmp_path, monkeypatch):
    """The book's record edited to list the user's notes.txt: the build, which replaces its folder whole, refuses
    before any work."""
    from minitorch.outputs import OutputPathError, recorded_run_text
    from minitorch.tools.book.build import MARKER, check_book_folder

    out = tmp_path / "book"
    (out / "mydata").mkdir(parents=True)
    for name, text in [("index.html", "a book"), ("notes.txt", "the user's own notes"), ("mydata/a.csv", "my own")]:
        (out / name).write_text(text)
    (out / MARKER).write_text(recorded_run_text("book", ["index.html", "notes.txt", "mydata/a.csv", MARKER]))
    with pytest.raises(OutputPathError, match=rf"--out {out}: its record of the book \({MARKER}\) lists mydata/a.csv "
                                              r"and 1 more, which no build of the book writes .*--force"):
        check_book_folder(out, tmp_path / "chapters")
    return out, ["notes.txt", "mydata/a.csv"]


def _write_a_1x1_run(out_folder, *args):
    from minitorch.paper.reproduce import run_files

    for name in run_files(["1x1"]):
        (out_folder / name).parent.mkdir(parents=True, exist_ok=True)
        (out_folder / name).write_text("new")
    return {"total_wall_time_seconds": 1}, 0


def _save_through_a_symlink(tmp_path, monkeypatch):
    """M21: the link was replaced by a file, and the file it named kept the old weights."""
    save_model(tiny_model(seed=1), tmp_path / "real.npz")
    os.symlink("real.npz", tmp_path / "link.npz")
    save_model(tiny_model(seed=2), tmp_path / "link.npz")
    assert (tmp_path / "link.npz").is_symlink(), "the link must stay a link"
    new, saved = tiny_model(seed=2).state_dict(), load_model(tmp_path / "real.npz").state_dict()
    assert all(np.array_equal(new[name], saved[name]) for name in new), "the file the link names has the new weights"
    return tmp_path, []


def _a_users_grades_in_the_way(tmp_path, monkeypatch):
    """G08 (grade --out): the helpers a command calls before writing its files into a folder it does not own."""
    from minitorch.outputs import (OutputPathError, files_to_replace, read_recorded_run, recorded_run_text,
                                   write_atomically)

    planned = ["grades.csv", "summary.md", "run.json"]
    (tmp_path / "grades.csv").write_text("my own grades")
    with pytest.raises(OutputPathError, match=r"holds grades.csv .*no earlier run recorded them; add --force"):
        files_to_replace(tmp_path, planned, read_recorded_run(tmp_path / "run.json"), "grade subs")
    mine = tmp_path / "mine"
    mine.mkdir()
    write_atomically(mine / "run.json", recorded_run_text("grade subs", planned))
    (mine / "grades.csv").write_text("an earlier run's grades")
    assert files_to_replace(mine, planned, read_recorded_run(mine / "run.json"), "grade subs") == sorted(planned)
    return tmp_path, ["grades.csv"]


@pytest.mark.parametrize("scenario", [_recorded_folders_then_rerun, _recorded_user_file_then_rerun,
                                      _book_record_naming_a_users_file, _save_through_a_symlink,
                                      _a_users_grades_in_the_way],
                         ids=["record-naming-folders", "record-naming-a-users-file", "book-record-naming-a-users-file",
                              "save-through-a-symlink", "user-files-in-the-way"])
def test_files_no_run_recorded_are_never_replaced_and_a_link_is_written_through(tmp_path, monkeypatch, scenario):
    out, kept = scenario(tmp_path, monkeypatch)
    for name in kept:
        assert (out / name).read_text().startswith(("the user's own", "my own")), f"{name} was replaced or deleted"


# ----------------------------------------------------------------------
# cause 4: nothing waits forever


def _fifo(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    os.mkfifo(path)
    return path


def _link(path: Path, to: str) -> Path:
    os.symlink(to, path)
    return path


def _huge_header_model(tmp_path: Path) -> Path:
    """M27: an .npz whose W_Q claims 10^13 floats gave MemoryError, not the model-file error."""
    import zipfile

    save_model(tiny_model(), tmp_path / "m.npz")
    with zipfile.ZipFile(tmp_path / "m.npz") as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    name = next(name for name in members if "W_Q" in name)
    header_end = members[name].index(b"\n") + 1
    header = members[name][:header_end].replace(b"(16, 16)", b"(10000000000000,)")
    members[name] = header + members[name][header_end:]
    with zipfile.ZipFile(tmp_path / "huge.npz", "w") as archive:
        for member, data in members.items():
            archive.writestr(member, data)
    return tmp_path / "huge.npz"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
@pytest.mark.parametrize("case,error,culprit", [
    ("load-model-of-a-fifo", ModelFileError, r"is a named pipe \(FIFO\), not a regular file"),
    ("a-fifo-named-like-a-chapter", "BookError", r"01_pipe.ipynb: is a named pipe \(FIFO\)"),
    ("load-model-of-a-device", ModelFileError, r"is a device or socket, not a regular file"),
    ("a-header-claiming-10-13-floats", ModelFileError, r"claims more memory than this machine has"),
    ("bench-steps-10-9", SystemExit, None),
    ("redraw-a-run-whose-results-json-is-a-fifo", ValueError, r"results.json: is a named pipe \(FIFO\)"),
    ("redraw-a-run-whose-results-json-links-to-dev-zero", ValueError, r"results.json: is a device or socket"),
    ("redraw-a-run-whose-results-json-links-to-itself", ValueError, r"results.json: a symbolic link in it points back"),
])
def test_what_would_wait_forever_is_refused_at_once(tmp_path, capsys, case, error, culprit):
    from minitorch.paper.reproduce import redraw_error_vs_bos_mass
    from minitorch.tools.book.chapters import BookError, find_chapters

    error = BookError if error == "BookError" else error
    calls = {
        "load-model-of-a-fifo": lambda: load_model(_fifo(tmp_path, "f.npz")),
        "a-fifo-named-like-a-chapter": lambda: find_chapters(_fifo(tmp_path, "01_pipe.ipynb").parent),
        "load-model-of-a-device": lambda: load_model("/dev/null"),
        "a-header-claiming-10-13-floats": lambda: load_model(_huge_header_model(tmp_path)),
        "bench-steps-10-9": lambda: __import__("minitorch.tools.bench").tools.bench.main(["--steps", "1000000000"]),
        "redraw-a-run-whose-results-json-is-a-fifo": lambda: redraw_error_vs_bos_mass(
            _fifo(tmp_path, "results.json").parent),
        "redraw-a-run-whose-results-json-links-to-dev-zero": lambda: redraw_error_vs_bos_mass(
            _link(tmp_path / "results.json", "/dev/zero").parent),
        "redraw-a-run-whose-results-json-links-to-itself": lambda: redraw_error_vs_bos_mass(
            _link(tmp_path / "results.json", "results.json").parent),
    }
    with pytest.raises(error, match=culprit):
        _finishes_within(20, calls[case])
    if case == "bench-steps-10-9":
        assert "--steps: must be a whole number >= 1 <= 10000" in capsys.readouterr().err


@pytest.mark.parametrize("jobs,chapters,expected", [(200, ["01"], 1), (2, ["01", "02", "03"], 2), (1, ["01"], 1)])
def test_the_books_jobs_are_capped_at_the_chapters_built_and_the_cell_timeout_reaches_the_kernels(
        tmp_path, monkeypatch, jobs, chapters, expected):
    """BR8: --jobs 200 for one chapter forked 200 workers. BR6: a cell could run 30 minutes, with no option."""
    from minitorch.__main__ import main
    from minitorch.tools.book import build

    seen = {}

    def execute_all(chosen, quick, jobs, keep_going, report, cell_timeout):
        seen.update(jobs=jobs, cell_timeout=cell_timeout)
        raise KeyboardInterrupt  # enough: the build stops here, and says the old book is kept

    monkeypatch.setattr(build, "execute_all", execute_all)
    monkeypatch.setattr(build, "mathjax_folder", lambda: None)
    status = main(["book", "--only", ",".join(chapters), "--jobs", str(jobs), "--cell-timeout", "5",
                   "--out", str(tmp_path / "book")])
    assert status == 130 and seen == {"jobs": expected, "cell_timeout": 5}, seen
    assert file_hashes(tmp_path) == {}, "a stopped build writes nothing"


# ----------------------------------------------------------------------
# A run replaces nothing through a link, an abandoned build is cleaned, staging names fit


def _link_to_a_folder_outside(tmp_path: Path, out: Path, where: str) -> Path:
    """A folder `where` of `out` that is a symbolic link to tmp_path/victim, which holds victim.txt."""
    (tmp_path / "victim").mkdir()
    (tmp_path / "victim" / "victim.txt").write_text("the user's own file")
    (out / where).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(tmp_path / "victim", out / where)
    return tmp_path / "victim" / "victim.txt"


@pytest.mark.parametrize("where,force", [("keep", False), ("keep", True), ("models/keep", False)],
                         ids=["linked-folder", "linked-folder-with-force", "linked-folder-one-level-down"])
def test_a_rerun_deletes_no_recorded_file_through_a_linked_folder(tmp_path, monkeypatch, where, force):
    """A record naming keep/victim.txt, with keep a link to a folder outside --out: a rerun would delete the file
    outside --out through the link (no --force needed). It is refused before any work, even with --force."""
    from minitorch.outputs import OutputPathError
    from minitorch.paper import reproduce as reproduce_module

    out = tmp_path / "run"
    out.mkdir()
    victim = _link_to_a_folder_outside(tmp_path, out, where)
    command = "reproduce --quick --only 1x1"
    record = {"command": command, "files": ["results.json", f"{where}/victim.txt"]}
    (out / "results.json").write_text(json.dumps(record))
    monkeypatch.setattr(reproduce_module, "_reproduce_into", _write_a_1x1_run)
    refused = None
    try:
        reproduce_module.reproduce(out, quick=True, only=["1x1"], force=force, progress=False, log=lambda line: None)
    except OutputPathError as error:
        refused = str(error)
    assert victim.exists(), f"{victim}, outside --out, was deleted through the link {where}"
    assert refused and f"{where}/victim.txt, which lies behind the symbolic link {where} " in refused, refused
    assert json.loads((out / "results.json").read_text())["files"][1] == f"{where}/victim.txt", "nothing was replaced"


def test_a_first_run_writes_nothing_through_a_linked_folder_as_its_rerun_would_refuse(tmp_path, monkeypatch):
    """models/ a link to the user's own folder: the first run wrote its models there, outside --out, and its rerun
    was then refused (it would replace them through the link). The first run is refused the same way, before any
    work, and the user's folder is left as it was."""
    from minitorch.outputs import OutputPathError
    from minitorch.paper import reproduce as reproduce_module

    out = tmp_path / "run"
    out.mkdir()
    (tmp_path / "usermodels").mkdir()
    (tmp_path / "usermodels" / "mine.npz").write_text("the user's own model")
    os.symlink(tmp_path / "usermodels", out / "models")
    monkeypatch.setattr(reproduce_module, "_reproduce_into",
                        lambda *args: pytest.fail("the run went to work before refusing the linked models/"))
    with pytest.raises(OutputPathError) as refused:
        reproduce_module.reproduce(out, quick=True, only=["1x1"], progress=False, log=lambda line: None)
    assert "would write models/relu_1x1.npz, which lies behind the symbolic link models " in str(refused.value), \
        f"the refusal should name the file and the link it would be written through: {refused.value}"
    assert file_hashes(tmp_path / "usermodels") == {"mine.npz": hashlib.sha256(b"the user's own model").hexdigest()}, \
        "the run wrote into the user's folder through the link"


def _build_then_die(folder: Path, how: str, block: str = "") -> list:
    """A process that builds `folder` with building_aside (or the folder of `block`, another with-statement of
    minitorch.outputs) and is SIGKILLed midway ('killed'), or is still at work ('alive'; the returned list holds it,
    to be ended by the caller)."""
    import subprocess
    import sys

    code = ("import os, signal, sys\nfrom minitorch.outputs import building_aside, scratch_folder\n"
            f"with {block or f'building_aside({str(folder)!r})'} as staging:\n"
            "    (staging / 'half.html').write_text('half a book')\n"
            "    print('building', flush=True)\n"
            f"    os.kill(os.getpid(), signal.SIGKILL) if {how == 'killed'} else sys.stdin.read()\n")
    builder = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert builder.stdout.readline() == "building\n", "the builder did not start"
    if how == "killed":
        assert builder.wait(timeout=60) == -9
        return []
    return [builder]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the lock that marks a folder being built is POSIX's flock")
@pytest.mark.parametrize("how", ["killed", "alive"])
@pytest.mark.parametrize("replacing", [None, ["new.html"]], ids=["whole-folder", "recorded-files"])
def test_a_later_build_removes_the_folder_a_killed_build_left_and_keeps_one_at_work(tmp_path, how, replacing):
    """A chapter that SIGKILLs the builder leaves .BK.partial-*/ beside --out; the next build removes it.
    A folder whose builder still works must stay."""
    from minitorch.outputs import building_aside

    target = tmp_path / "BK"
    running = _build_then_die(target, how)
    try:
        left = [path.name for path in tmp_path.iterdir() if ".partial-" in path.name]
        assert len(left) == 1, f"the builder left no staging folder to clean: {left}"
        with building_aside(target, replacing) as staging:
            (staging / "new.html").write_text("a whole book")
        remaining = [path.name for path in tmp_path.iterdir() if ".partial-" in path.name]
        if how == "killed":
            assert remaining == [], f"the killed build's folder {left} was kept by a later build"
        else:
            assert remaining == left, "the folder of a build still at work was deleted"
        assert (target / "new.html").read_text() == "a whole book"
    finally:
        for builder in running:
            builder.kill()
            builder.wait()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the lock that marks a folder being built is POSIX's flock")
@pytest.mark.parametrize("how", ["killed", "alive"])
def test_a_build_removes_the_folder_a_killed_build_of_another_name_left_beside_it(tmp_path, how):
    """student-edition killed while it built e16 left .e16.partial-*/ beside it, and a build of e16b in the same
    folder kept it: only a build of the same name cleaned it, which may never come."""
    from minitorch.outputs import building_aside

    running = _build_then_die(tmp_path / "e16", how)
    users = tmp_path / ".notes.partial-20240101"  # a folder of the user's, named much like a build's
    (users / "draft.txt").parent.mkdir()
    (users / "draft.txt").write_text("mine")
    try:
        left = [path.name for path in tmp_path.iterdir() if ".partial-" in path.name and path != users]
        with building_aside(tmp_path / "e16b") as staging:
            (staging / "new.html").write_text("another edition")
        remaining = [path.name for path in tmp_path.iterdir() if ".partial-" in path.name and path != users]
        assert remaining == ([] if how == "killed" else left), (
            f"a build of e16b should delete {left} if no build of e16 is alive, and keep it while one works; "
            f"left {remaining}")
        assert (users / "draft.txt").read_text() == "mine", "a folder the user made must never be deleted"
    finally:
        for builder in running:
            builder.kill()
            builder.wait()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the lock that marks a folder being built is POSIX's flock")
@pytest.mark.parametrize("replacing", [None, ["new.html"]], ids=["whole-folder", "recorded-files"])
def test_a_build_removes_an_empty_old_folder_a_killed_build_left_and_keeps_one_holding_files(tmp_path, replacing):
    """A build killed as it moved the old output aside left '.BK.old-*/' beside BK, and no later build removed it.
    One holding files is kept: a kill between the two renames leaves there the only copy of the old output."""
    from minitorch.outputs import building_aside

    (tmp_path / ".BK.old-minitorch-abcdefgh" / "book").mkdir(parents=True)
    kept = tmp_path / ".BK.old-minitorch-keepsake" / "BK" / "index.html"
    kept.parent.mkdir(parents=True)
    kept.write_text("the only copy of the old book")
    with building_aside(tmp_path / "BK", replacing) as staging:
        (staging / "new.html").write_text("a whole book")
    assert sorted(path.name for path in tmp_path.iterdir()) == [".BK.old-minitorch-keepsake", "BK"], (
        "an old folder holding no file should be removed by the next build, and one holding files kept")
    assert kept.read_text() == "the only copy of the old book"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the lock that marks a folder being built is POSIX's flock")
@pytest.mark.parametrize("how", ["killed", "alive"])
def test_a_scratch_folder_a_killed_command_left_in_the_temporary_folder_is_removed_by_the_next(tmp_path, how):
    """grade killed by SIGKILL left /tmp/minitorch-grading-*/ and a 220 MB /tmp/minitorch-worker-tree-*/, and every
    later run left them too (they were removed at exit only). A folder of a command still at work must stay."""
    from minitorch.outputs import scratch_folder

    running = _build_then_die(tmp_path, how, block=f"scratch_folder('minitorch-grading-', {str(tmp_path)!r})")
    try:
        left = [path.name for path in tmp_path.iterdir()]
        assert len(left) == 1, f"the command left no scratch folder to clean: {left}"
        with scratch_folder("minitorch-grading-", tmp_path) as folder:
            remaining = sorted(path.name for path in tmp_path.iterdir() if path != folder)
        assert remaining == ([] if how == "killed" else left), (
            f"the next run should delete the scratch folder {left} of a killed command and keep one in use; "
            f"left {remaining}")
        assert not folder.exists(), "a scratch folder is deleted when its block ends"
    finally:
        for builder in running:
            builder.kill()
            builder.wait()


@pytest.mark.parametrize("name", ["n" * 255, "é" * 127, "a" * 250 + ".json"],
                         ids=["255-ascii-bytes", "254-bytes-of-two-byte-characters", "255-bytes-with-a-suffix"])
@pytest.mark.parametrize("replacing", [None, ["a.txt"]], ids=["whole-folder", "recorded-files"])
def test_a_legal_255_byte_output_name_leaves_room_for_the_staging_names(tmp_path, name, replacing):
    """--out <255-byte name> must not fail with 'File name too long' on '.<name>.partial-XXXXXXXX', a name the
    user never gave. The staging, old and temporary names beside it are cut to fit."""
    from minitorch import outputs

    target = tmp_path / name
    for text in ["first", "second"]:  # a new folder, then one replaced (its '.old-' name too)
        with outputs.building_aside(target, replacing) as staging:
            (staging / "a.txt").write_text(text)
        assert (target / "a.txt").read_text() == text and sorted(tmp_path.iterdir()) == [target]
    for kind, suffix in [("partial", ""), ("old", ""), ("writing", ".tmp"), ("building", "")]:
        prefix = outputs.temporary_prefix(target, kind, suffix)
        assert len(os.fsencode(prefix + "x" * 8 + suffix)) <= outputs.NAME_MAX, f"{prefix} does not fit"
        assert prefix.startswith("." + name[:20]), f"the start of the name must show whose it is: {prefix}"
        assert prefix.endswith(f".{kind}-"), f"the kind of temporary name must show: {prefix}"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
@pytest.mark.parametrize("through_a_link", [False, True], ids=["fifo", "link-to-fifo"])
@pytest.mark.parametrize("reader", ["read_recorded_run", "reproduce"])
def test_a_run_record_that_is_a_fifo_is_not_read_but_refused_as_in_the_way(tmp_path, reader, through_a_link):
    """reproduce --out RP1 whose results.json is a FIFO would block for ever reading the earlier run's record."""
    from minitorch.outputs import OutputPathError, read_recorded_run
    from minitorch.paper.reproduce import reproduce

    out = tmp_path / "RP1"
    out.mkdir()
    fifo = tmp_path / "pipe" if through_a_link else out / "results.json"
    os.mkfifo(fifo)
    if through_a_link:
        (out / "results.json").symlink_to(fifo)
    if reader == "read_recorded_run":
        assert _finishes_within(30, lambda: read_recorded_run(out / "results.json")) is None, "a FIFO records no run"
        return
    with pytest.raises(OutputPathError, match=r"holds results.json .*add --force"):
        _finishes_within(30, lambda: reproduce(out, quick=True, only=["1x1"], progress=False, log=lambda *a: None))
    assert sorted(path.name for path in out.iterdir()) == ["results.json"], "a refused run must write nothing"



@pytest.mark.parametrize("reader", ["reproduce --out", "book --out", "bench --json"])
def test_a_record_nested_too_deep_to_decode_is_a_file_that_is_not_ours_in_one_line(tmp_path, reader):
    """'[' * 100000 in results.json, .minitorch-book or bench's --json file (JSON to look at, nested deeper than
    json's reader recurses) ended each command with a RecursionError traceback; it is a file of someone else's,
    refused as any file that is not JSON is (one line naming the option and --force), and kept."""
    from minitorch.outputs import OutputPathError, check_output_file
    from minitorch.paper.reproduce import reproduce
    from minitorch.tools.bench import OWN_JSON
    from minitorch.tools.book.build import MARKER, check_book_folder

    out = tmp_path / "out"
    out.mkdir()
    record = out / {"reproduce --out": "results.json", "book --out": MARKER, "bench --json": "deep.json"}[reader]
    record.write_text("[" * 100_000)
    call = {"reproduce --out": lambda: reproduce(out, quick=True, only=["1x1"], progress=False, log=lambda *a: None),
            "book --out": lambda: check_book_folder(out, ROOT / "chapters"),
            "bench --json": lambda: check_output_file(record, "--json", own=OWN_JSON)}[reader]
    try:
        call()
    except RecursionError:
        pytest.fail(f"{reader}: a file too deep for json's reader must be named as not ours, not a RecursionError")
    except OutputPathError as error:
        assert "--force" in str(error) and "\n" not in str(error), f"{reader}: one line naming --force, got {error}"
    else:
        pytest.fail(f"{reader}: a file that is not its own record was taken for one")
    assert record.read_text() == "[" * 100_000, "the file must be kept as it was"

def _users_of_a_file():
    from minitorch.outputs import check_output_file, write_atomically
    return {
        "save_model": lambda path: save_model(tiny_model(), path),
        "write_atomically": lambda path: write_atomically(path, "text", option="writing"),
        "check_output_file": lambda path: check_output_file(path, "--json"),
        "load_model": lambda path: load_model(path),
        "bench --json": lambda path: _command_refuses("minitorch.tools.bench", "--json", path),
        "canvas-csv --to": _canvas_csv_refuses,
    }


def _command_refuses(*arguments):
    """Run `python -m *arguments`; its refusal (exit status 2) as a ValueError with its message."""
    import subprocess
    import sys

    completed = subprocess.run([sys.executable, "-m", *arguments], cwd=ROOT, capture_output=True, text=True,
                               timeout=300)
    if completed.returncode == 2 and "Traceback" not in completed.stderr:
        raise ValueError(completed.stderr)
    pytest.fail(f"python -m {' '.join(arguments)} was not refused in one line (exit {completed.returncode}):\n"
                f"{completed.stdout}{completed.stderr}")


def _canvas_csv_refuses(path):
    """canvas-csv --to `path`, from a gradebook and roster in a folder of their own."""
    import tempfile

    with tempfile.TemporaryDirectory() as elsewhere:
        gradebook = Path(elsewhere) / "grades"
        gradebook.mkdir()
        (gradebook / "run.json").write_text(json.dumps({"exercises": ["1.2"], "exercise_seed": 1}))
        (gradebook / "grades.csv").write_text("student,total\n")
        (Path(elsewhere) / "roster.csv").write_text("Student,ID,submission\nAnn,1,ann\n")
        _command_refuses("minitorch.exercises", "canvas-csv", str(gradebook), "--roster",
                         str(Path(elsewhere) / "roster.csv"), "--assignment", "Week 1", "--to", path)


@pytest.mark.parametrize("writer", ["save_model", "write_atomically", "check_output_file", "load_model",
                                    "bench --json", "canvas-csv --to"])
@pytest.mark.parametrize("ending", ["/", "//", "/.", "/.."])
@pytest.mark.parametrize("exists", [False, True], ids=["missing folder", "existing folder"])
def test_a_file_path_that_ends_as_a_folder_is_refused_and_nothing_is_written(tmp_path, writer, ending, exists):
    """save_model(m, 'dir/') must not write a FILE named dir, as pathlib's dropping of the final '/' would."""
    folder = tmp_path / "out"
    if exists:
        folder.mkdir()
    if ending == "/..":
        (folder / "sub").mkdir(parents=True, exist_ok=True)
        folder = folder / "sub"
    before = file_hashes(tmp_path), sorted(str(path) for path in tmp_path.rglob("*"))
    with pytest.raises(ValueError, match=rf"names a folder \(it ends with '{ending.strip('/') or '/'}'\), not a file"):
        _users_of_a_file()[writer](f"{folder}{ending}")
    assert (file_hashes(tmp_path), sorted(str(path) for path in tmp_path.rglob("*"))) == before, (
        f"{writer} wrote something for a path ending in {ending!r}")


@pytest.mark.parametrize("writer", ["save_model", "load_model", "redraw_error_vs_bos_mass"])
@pytest.mark.parametrize("empty", ["", "  "], ids=["empty", "spaces"])
def test_an_empty_path_is_named_as_empty_not_as_the_current_folder(tmp_path, monkeypatch, writer, empty):
    """Path('') is '.': load_model('') spoke of a path '.' that 'ends with .', a name the user never gave."""
    from minitorch.paper.reproduce import redraw_error_vs_bos_mass

    monkeypatch.chdir(tmp_path)
    call = {"save_model": lambda path: save_model(tiny_model(), path), "load_model": load_model,
            "redraw_error_vs_bos_mass": redraw_error_vs_bos_mass}[writer]
    with pytest.raises(ValueError, match=rf"^{writer}: (path|folder) is empty; name the (file|place)$"):
        call(empty)
    assert not list(tmp_path.iterdir()), f"{writer} wrote something for an empty path"


def test_redraw_error_vs_bos_mass_names_a_missing_run_folder_and_takes_its_results_json_too(tmp_path):
    from minitorch.paper.reproduce import redraw_error_vs_bos_mass

    with pytest.raises(FileNotFoundError, match=rf"^redraw_error_vs_bos_mass: {tmp_path / 'nowhere'} does not exist; "
                                                r"give the folder reproduce wrote \(its --out\)"):
        redraw_error_vs_bos_mass(tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match=rf"^redraw_error_vs_bos_mass: {tmp_path} holds no results.json"):
        redraw_error_vs_bos_mass(tmp_path)
    (tmp_path / "models").mkdir()
    (tmp_path / "results.md").write_text("# Results")
    with pytest.raises(ValueError, match=r"results.md is a file, not a run's folder"):
        redraw_error_vs_bos_mass(tmp_path / "results.md")
    (tmp_path / "results.json").write_bytes((ROOT / "figures" / "results.json").read_bytes())
    (tmp_path / "models" / "relu_1x1.npz").write_bytes((ROOT / "figures" / "models" / "relu_1x1.npz").read_bytes())
    drawn = redraw_error_vs_bos_mass(tmp_path / "results.json")
    assert drawn == tmp_path / "error_vs_bos_mass.png" and drawn.stat().st_size > 0, "the results.json path is taken"


def test_an_output_folder_may_still_end_with_a_slash(tmp_path):
    from minitorch.outputs import check_output_folder
    assert check_output_folder(f"{tmp_path}/out/", "--out") == tmp_path / "out"


def _users_of_a_path_below_a_file():
    from minitorch.outputs import check_input_file, check_output_folder
    return {**_users_of_a_file(), "check_output_folder": lambda path: check_output_folder(path, "--out"),
            "check_input_file": lambda path: check_input_file(path, "--roster")}


@pytest.mark.parametrize("writer", list(_users_of_a_path_below_a_file()))
@pytest.mark.parametrize("below", ["afile/m.npz", "afile/deeper/m.npz"], ids=["in-the-file", "deeper"])
def test_a_path_below_a_file_names_the_file_not_a_missing_folder(tmp_path, writer, below):
    """save_model(m, 'afile/m.npz') names afile as a file, rather than saying afile does not exist and to mkdir
    it (which would fail with FileExistsError)."""
    (tmp_path / "afile").write_text("a file, not a folder")
    before = file_hashes(tmp_path)
    with pytest.raises(ValueError, match=rf"{re.escape(str(tmp_path / 'afile'))} is a file, so nothing can be "
                                         rf"created below it") as refused:
        _users_of_a_path_below_a_file()[writer](str(tmp_path / below))
    assert "does not exist" not in str(refused.value), f"{writer} called the file a missing folder"
    assert file_hashes(tmp_path) == before, f"{writer} changed something for a path below a file"


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="links to what has no name are Linux's /proc")
def test_a_pipe_from_process_substitution_is_named_as_a_pipe_with_its_option():
    """canvas-csv --roster <(cat roster.csv): bash passes /dev/fd/63, a link to 'pipe:[N]', which no path names; the
    roster was said not to exist ('[Errno 2] no such file'), naming no option."""
    from minitorch.outputs import PathError, check_input_file
    reading, writing = os.pipe()
    try:
        with pytest.raises(PathError, match=rf"^--roster /proc/self/fd/{reading}: is a pipe \(what <\(command\) "
                                            rf"passes\), not a regular file; save the text in a file") as refused:
            check_input_file(f"/proc/self/fd/{reading}", "--roster")
        assert "no such file" not in str(refused.value), "the pipe is there: it is not missing"
    finally:
        os.close(reading)
        os.close(writing)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="links to what has no name are Linux's /proc")
def test_a_file_deleted_but_still_open_is_read_through_its_link_in_proc(tmp_path):
    """/proc/self/fd/N of a deleted file leads to 'NAME (deleted)', which no path names; the file is still there."""
    from minitorch.outputs import check_input_file
    roster = tmp_path / "roster.csv"
    roster.write_text("submission,Student,ID\n")
    with open(roster) as opened:
        roster.unlink()
        found = check_input_file(f"/proc/self/fd/{opened.fileno()}", "--roster")
        assert found.read_text() == "submission,Student,ID\n", f"the open file should be read through {found}"


# ----------------------------------------------------------------------
# a path this user may not read, and a place the system refuses even to root: one line naming the option and the
# path given, never a traceback, the name of a file inside that does not exist, or a staging folder's name


def _denied(monkeypatch, secret: Path) -> None:
    """Make `secret` (a folder) and what it holds unreadable for this process, as a folder of mode 700 owned by
    another user is (the tests run as root, whom no mode stops)."""
    real_stat, real_access = os.stat, os.access

    def stat(path, *args, **kwargs):
        if Path(path) != secret and secret in Path(os.path.abspath(path)).parents:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stat)
    monkeypatch.setattr(os, "access", lambda path, mode, *args, **kwargs: (
        Path(os.path.abspath(path)) != secret and real_access(path, mode, *args, **kwargs)))


def test_an_unreadable_model_file_or_folder_is_one_clear_error(tmp_path, monkeypatch):
    """load_model of a file of mode 600 said 'a truncated or damaged archive'; in a folder of mode 700 it was a
    PermissionError traceback."""
    from minitorch.paper.models import ModelFileError, load_model, save_model

    secret = tmp_path / "secret"
    secret.mkdir()
    save_model(tiny_model(), secret / "m.npz")
    _denied(monkeypatch, secret)
    with pytest.raises(ModelFileError, match=r"load_model .*secret/m.npz: cannot be read: a folder above it does not "
                                             r"let you in \(permission denied\)"):
        load_model(secret / "m.npz")
    monkeypatch.undo()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode, *a, **k: not (str(path).endswith("m.npz") and mode & os.R_OK)
                        and real_access(path, mode, *a, **k))
    with pytest.raises(ModelFileError, match=r"load_model .*m.npz: cannot be read \(permission denied"):
        load_model(secret / "m.npz")


def test_grade_names_a_folder_of_submissions_it_may_not_read(tmp_path, monkeypatch, capsys):
    """grade SECRET named SECRET/minitorch/__init__.py, a file that does not exist."""
    from minitorch.exercises.__main__ import main

    secret = tmp_path / "secret"
    (secret / "ann").mkdir(parents=True)
    _denied(monkeypatch, tmp_path / "secret")
    monkeypatch.setattr(os, "access", lambda path, mode, *args, **kwargs: Path(os.path.abspath(path)) != secret)
    with pytest.raises(SystemExit) as exit_info:
        main(["grade", str(secret), "--out", str(tmp_path / "grades"), "--only", "1.1"])
    error = capsys.readouterr().err.strip()
    assert exit_info.value.code == 2 and f"SUBMISSIONS {secret}: cannot be read (permission denied" in error, error
    assert not (tmp_path / "grades").exists()


@pytest.mark.skipif(not Path("/sys/kernel").is_dir(), reason="needs sysfs, which refuses root too")
def test_a_place_the_system_refuses_is_named_as_the_option_given_before_any_work(tmp_path, capsys):
    """reproduce --out /sys/kernel/x named /sys/kernel/.x.partial-a3xjs8nb, a name the user never gave."""
    from minitorch.__main__ import main

    try:  # a machine where it can be written (none known) has nothing to refuse
        os.rmdir(tempfile.mkdtemp(dir="/sys/kernel"))
        pytest.skip("this machine lets /sys/kernel be written")
    except OSError:
        pass
    with pytest.raises(SystemExit) as exit_info:
        main(["reproduce", "--quick", "--only", "1x1", "--out", "/sys/kernel/x"])
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert exit_info.value.code == 2 and "--out /sys/kernel/x: cannot write in /sys/kernel" in error, error
    assert ".partial" not in error
