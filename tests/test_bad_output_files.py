"""A file the user named is never replaced unasked: an output file follows the rule of the output folders (an
earlier output of the same command is replaced; anything else only with --force, which the error names). A
command knows its own file by a mark only its writer puts in it (minitorch.outputs.paths.OwnFile)."""

from __future__ import annotations

import importlib.util
import json
import zipfile

import pytest

from bad_input_helpers import ROOT

the_full_book = pytest.mark.skipif((ROOT / "minitorch" / "exercises" / "edition.json").exists(),
                                   reason="a student edition builds no bundle")


def _no_measuring(*args, **kwargs):
    return {"softmax 1x1": {}}


@pytest.mark.skipif(importlib.util.find_spec("minitorch.fast.hand_fused") is None,
                    reason="a student edition has no NumPy floor: bench stops before writing")
def test_bench_json_replaces_its_own_file_and_refuses_the_users(tmp_path, monkeypatch, capsys):
    from minitorch.tools import bench

    monkeypatch.setattr(bench, "run_steps", _no_measuring)
    thesis = tmp_path / "thesis.txt"
    thesis.write_text("three years of work")
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--json", str(thesis)])
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert exit_info.value.code == 2 and "--json" in error and "add --force to replace it" in error, error
    assert thesis.read_text() == "three years of work", "the user's file must be kept"

    measurements = tmp_path / "bench.json"
    assert bench.main(["--json", str(measurements)]) == 0
    assert json.loads(measurements.read_text())["written_by"] == bench.WRITER, "the mark of bench's own file"
    assert bench.main(["--json", str(measurements)]) == 0, "bench's own earlier file is replaced without --force"
    assert bench.main(["--json", str(thesis), "--force"]) == 0, "--force replaces the user's file, as asked"
    assert json.loads(thesis.read_text())["steps"] == {"softmax 1x1": {}}


@pytest.mark.skipif(importlib.util.find_spec("minitorch.fast.hand_fused") is None,
                    reason="a student edition has no NumPy floor: bench stops before writing")
def test_bench_json_keeps_a_file_saved_there_while_it_measured_and_prints_the_measurements(tmp_path, monkeypatch,
                                                                                         capsys):
    """--json was checked only before minutes of measuring: a file someone saved there meanwhile (another run's
    results.json, the user's notes) was replaced at the end without a word."""
    from minitorch.tools import bench

    notes = tmp_path / "notes.json"

    def measuring_while_the_user_saves(*arguments):
        notes.write_text("my notes")
        return _no_measuring()

    monkeypatch.setattr(bench, "run_steps", measuring_while_the_user_saves)
    assert bench.main(["--json", str(notes)]) == 1, "bench must say it could not write its file"
    error = capsys.readouterr().err
    assert notes.read_text() == "my notes", "the file saved while bench measured must be kept"
    assert "holds a file that is not" in error and '"softmax 1x1": {}' in error, (
        f"the error should name the file and give the measurements instead: {error}")


@the_full_book
def test_gradescope_bundle_refuses_to_replace_the_users_own_zip(tmp_path):
    import subprocess
    import sys

    mine = tmp_path / "mine.zip"
    with zipfile.ZipFile(mine, "w") as archive:
        archive.writestr("thesis.txt", "mine")
    before = mine.read_bytes()
    completed = subprocess.run([sys.executable, "-m", "minitorch.exercises", "gradescope-bundle", str(mine), "--only",
                                "1.1"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert completed.returncode == 2 and "add --force to replace it" in completed.stderr, completed.stderr
    assert mine.read_bytes() == before, "the user's zip must be kept"


def test_a_bundle_a_canvas_csv_and_a_bench_file_are_recognised_by_their_mark(tmp_path):
    from minitorch.exercises.__main__ import CANVAS_CSV
    from minitorch.exercises.grader.trusted.gradescope import OWN_BUNDLE, SETTINGS_NAME
    from minitorch.outputs import OutputPathError, check_output_file
    from minitorch.tools.bench import OWN_JSON

    files = {"bundle.zip": (OWN_BUNDLE, None), "canvas.csv": (CANVAS_CSV, None), "bench.json": (OWN_JSON, None)}
    with zipfile.ZipFile(tmp_path / "bundle.zip", "w") as archive:
        archive.writestr(SETTINGS_NAME, "{}")
    (tmp_path / "canvas.csv").write_text("Student,ID,SIS User ID,SIS Login ID,Section,Week 3 (12345)\nAnn,1,a,a,S,3\n")
    (tmp_path / "bench.json").write_text(json.dumps({"written_by": "python -m minitorch bench", "steps": {}}))
    for name, (own, _) in files.items():
        assert check_output_file(tmp_path / name, "--out", own=own) == tmp_path / name, f"{name} is its own output"
    foreign = {"notes.csv": "my,own,notes\n", "export.csv": "Student,ID,SIS User ID,SIS Login ID,Section,A,B\n",
               "data.json": json.dumps({"steps": {}}), "other.zip": b"PK\x05\x06" + bytes(18),
               "notes.zip": "not a zip at all\n", "empty.zip": b""}  # (a file named .zip need not be one)
    for name, content in foreign.items():
        path = tmp_path / name
        path.write_bytes(content) if isinstance(content, bytes) else path.write_text(content)
        own = OWN_JSON if name.endswith("json") else OWN_BUNDLE if name.endswith("zip") else CANVAS_CSV
        with pytest.raises(OutputPathError, match="holds a file that is not .* add --force to replace it"):
            check_output_file(path, "--to", own=own)
        assert check_output_file(path, "--to", own=own, force=True) == path, "--force replaces it"


def test_canvas_csv_refuses_to_replace_a_roster_in_the_layout_it_reads(tmp_path):
    """--to roster_week4.csv (a slip of the tab key) replaced next week's roster, Student, ID, SIS User ID, SIS Login
    ID, Section, submission: five Canvas columns and one more passed for 'a Canvas CSV that canvas-csv wrote'."""
    import subprocess
    import sys

    from test_bad_course_commands import _graded_class

    out = _graded_class(tmp_path)
    roster = tmp_path / "roster.csv"
    roster.write_text("Student,ID,SIS User ID,SIS Login ID,Section,submission\nAnn,1,a1,ann,S1,ann\n")
    week4 = tmp_path / "roster_week4.csv"
    week4.write_text("Student,ID,SIS User ID,SIS Login ID,Section,submission\nAnn,1,a1,ann,S1,ann\nCarl,3,c,c,S1,\n")
    before = week4.read_text()
    completed = subprocess.run([sys.executable, "-m", "minitorch.exercises", "canvas-csv", str(out), "--roster",
                                str(roster), "--assignment", "A", "--to", str(week4)], cwd=ROOT, capture_output=True,
                               text=True, timeout=300)
    assert completed.returncode == 2 and "add --force" in completed.stderr, (
        f"a roster is not canvas-csv's to replace: {completed.stderr}")
    assert week4.read_text() == before, "next week's roster must be kept as it was"


def test_canvas_csv_replaces_its_own_file_and_refuses_the_users(tmp_path):
    import subprocess
    import sys

    from test_bad_course_commands import _graded_class

    out = _graded_class(tmp_path)
    roster = tmp_path / "roster.csv"
    roster.write_text("Student,ID,SIS User ID,SIS Login ID,Section,submission\nAnn,1,a1,ann,S1,ann\n")
    notes = tmp_path / "mycanvas.csv"
    notes.write_text("my notes on the class\n")

    def canvas(*extra):
        return subprocess.run([sys.executable, "-m", "minitorch.exercises", "canvas-csv", str(out), "--roster",
                               str(roster), "--assignment", "Week 1 (1)", "--to", str(notes), *extra], cwd=ROOT,
                              capture_output=True, text=True, timeout=300)

    completed = canvas()
    assert completed.returncode == 2 and "--to" in completed.stderr and "add --force" in completed.stderr, \
        completed.stderr
    assert notes.read_text() == "my notes on the class\n", "the user's file must be kept"
    assert canvas("--force").returncode == 0 and notes.read_text().startswith("Student,ID,SIS User ID")
    assert canvas().returncode == 0, "canvas-csv's own earlier file is replaced without --force"


def _authors_scripts(tmp_path, monkeypatch, capsys, *arguments):
    """authors_scripts on a stand-in checkout whose scripts are never run (a run counts as work done): (exit status,
    the last line of stderr, whether a script ran)."""
    from minitorch.tools import authors_scripts

    checkout, ran = tmp_path / "checkout", []
    for script in ("fig_single_layer.py", "fig_multilayer.py"):
        (checkout / "figure_code").mkdir(parents=True, exist_ok=True)
        (checkout / "figure_code" / script).write_text("")
    monkeypatch.setattr(authors_scripts, "missing_requirements", lambda: [])
    monkeypatch.setattr(authors_scripts, "versions", lambda checkout: {"python": "3"})
    monkeypatch.setattr(authors_scripts, "run_script", lambda *a: ran.append(a) or (
        "Training (softmax):   2%|#   | 960/50000 [00:01<01:10]\n", 1.0))
    try:
        status = authors_scripts.main([str(checkout), "--only", "1x1", *arguments])
    except SystemExit as stop:
        status = stop.code
    return status, (capsys.readouterr().err.strip().splitlines() or [""])[-1], bool(ran)


def test_authors_scripts_log_replaces_its_own_log_and_refuses_the_users_file_before_the_scripts_run(
        tmp_path, monkeypatch, capsys):
    """--log thesis.md replaced the user's file with the log without a word (and --log figures/results.md the book's
    committed results), after minutes of the author's scripts: --log follows bench --json's rule, checked first."""
    thesis = tmp_path / "thesis.md"
    thesis.write_text("My thesis notes: three months of work\n")
    status, error, ran = _authors_scripts(tmp_path, monkeypatch, capsys, "--log", str(thesis))
    assert status == 2 and "--log" in error and "add --force to replace it" in error, error
    assert not ran, "--log must be refused before the author's scripts run (they take minutes)"
    assert thesis.read_text() == "My thesis notes: three months of work\n", "the user's file must be kept"

    log = tmp_path / "authors.md"
    assert _authors_scripts(tmp_path, monkeypatch, capsys, "--log", str(log))[0] == 0
    assert log.read_text().startswith("# A run of the author's released scripts"), "the log is written"
    assert _authors_scripts(tmp_path, monkeypatch, capsys, "--log", str(log))[0] == 0, \
        "the command's own earlier log is replaced without --force"
    assert _authors_scripts(tmp_path, monkeypatch, capsys, "--log", str(thesis), "--force")[0] == 0, \
        "--force replaces the user's file, as asked"
    assert (ROOT / "figures" / "authors_scripts.md").read_text().startswith(
        "# A run of the author's released scripts\n\nMade by `python -m minitorch.tools.authors_scripts "), \
        "the book's own log must be one the command recognises as its own"


@pytest.mark.parametrize("log", ["folder/", "/proc/x.md"])
def test_authors_scripts_log_that_cannot_be_written_is_refused_before_the_scripts_run(tmp_path, monkeypatch, capsys,
                                                                                      log):
    """--log w/ (a folder) and --log /proc/x.md were refused only after the scripts had run, minutes later."""
    status, error, ran = _authors_scripts(tmp_path, monkeypatch, capsys, "--log", log)
    assert status == 2 and "--log" in error and not ran, f"refused before any script runs, got {status}: {error}"


def test_authors_scripts_refuses_force_without_log(tmp_path, monkeypatch, capsys):
    status, error, ran = _authors_scripts(tmp_path, monkeypatch, capsys, "--force")
    assert status == 2 and "--force applies only to the file --log names" in error and not ran, error


def test_pytest_scoreboard_json_replaces_its_own_file_and_refuses_the_users_before_any_test(tmp_path):
    """A student's `pytest --scoreboard-json=my-notes.md` replaced their notes with the scoreboard, no word said;
    pytest has no --force, so the refusal says to delete or rename the file."""
    import subprocess
    import sys

    def pytest_run(board):
        return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--scoreboard-json={board}",
                               "tests/test_readme.py"], cwd=ROOT, capture_output=True, text=True, timeout=300)

    notes = tmp_path / "my-notes.md"
    notes.write_text("# my notes for week 1\n")
    completed = pytest_run(notes)
    said = completed.stdout + completed.stderr
    assert completed.returncode == 4 and "holds a file that is not an earlier scoreboard" in said, (
        f"the student's own file must be refused before any test, naming it: {said}")
    assert "delete or rename it" in said and "--force" not in said and "passed" not in completed.stdout, said
    assert notes.read_text() == "# my notes for week 1\n", "the student's notes must be kept"
    board = tmp_path / "board.json"
    assert pytest_run(board).returncode == 0 and json.loads(board.read_text())["tests"], "a new scoreboard is written"
    assert pytest_run(board).returncode == 0, "the scoreboard's own earlier file is replaced without a word"

