"""The course's commands and pytest's options: a clear line, before any work."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from bad_input_helpers import ROOT


the_full_book = pytest.mark.skipif((ROOT / "minitorch" / "exercises" / "edition.json").exists(),
                                   reason="a student edition builds no bundle and holds no reference answers")


def _course(*arguments: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "minitorch.exercises", *arguments], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.parametrize("arguments,culprit", [
    (["--timeout", "nan"], "argument --timeout: must be a finite number >= 1"),
    (["--timeout", "inf"], "argument --timeout: must be a finite number >= 1"),
    (["--timeout", "0"], "argument --timeout: must be a finite number >= 1"),
    (["--timeout", "1e-9"], "argument --timeout: must be a finite number >= 1"),
    (["--jobs", "1.5"], "argument --jobs: must be a whole number >= 1"),
    (["--budget", "-1"], "argument --budget: must be a finite number >= 1"),
    (["--budget", "0.01"], "argument --budget: must be a finite number >= 1"),
    (["--exercise-seed", "x"], "argument --exercise-seed: must be a whole number >= 0"),
    (["--isolation", "jail"], "argument --isolation: invalid choice"),
], ids=["timeout-nan", "timeout-inf", "timeout-0", "timeout-too-short-for-any-answer", "jobs", "budget",
        "budget-too-short-for-any-answer", "seed", "isolation"])
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
    (["--timeout", "inf"], "argument --timeout: must be a finite number >= 1"),
    (["--timeout", "nan"], "argument --timeout: must be a finite number >= 1"),
    (["--timeout", "1e-9"], "argument --timeout: must be a finite number >= 1"),
    (["--deadline", "0"], "argument --deadline: must be a finite number >= 1"),
    (["--exercise-seed", "-3"], "argument --exercise-seed: must be a whole number >= 0"),
], ids=["timeout-inf", "timeout-nan", "timeout-too-short-for-any-answer", "deadline", "seed"])
def test_gradescope_bundle_refuses_a_bad_number_before_building(tmp_path, arguments, culprit):
    completed = _course("gradescope-bundle", str(tmp_path / "autograder.zip"), "--only", "3.1", *arguments)
    assert completed.returncode == 2 and culprit in completed.stderr, completed.stderr
    assert not (tmp_path / "autograder.zip").exists()


@pytest.mark.parametrize("arguments,culprit", [
    (["--timeout=nan"], "--timeout must be a finite number of seconds"),
    (["--timeout=inf"], "--timeout must be a finite number of seconds"),
    (["--exercise-seed=1.5"], "--exercise-seed must be a whole number"),
    (["-m", "ex9_9"], "there is no exercise 9.9"),
    (["-m", "ch08"], "chapter 08 has no graded exercises"),
    (["-m", "ch1"], "no test is marked ch1; write ch01"),
    (["-m", "ex1.2 or slow"], "no test is marked ex1.2; write ex1_2"),
    (["-m", "EX1_2"], "no test is marked EX1_2; write ex1_2"),
    (["-m", "not CH01"], "no test is marked CH01; write ch01"),
    (["--scoreboard-json={tmp}"], "is a folder; name a file"),
], ids=["timeout-nan", "timeout-inf", "seed", "no-such-exercise", "no-such-chapter", "chapter-without-its-zero",
        "exercise-with-a-dot", "exercise-in-capitals", "chapter-in-capitals", "scoreboard-folder"])
def test_pytest_refuses_a_bad_option_naming_it_before_any_test(tmp_path, arguments, culprit):
    arguments = [argument.replace("{tmp}", str(tmp_path)) for argument in arguments]
    completed = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *arguments,
                                "tests/test_readme.py"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert completed.returncode == 4, completed.stdout + completed.stderr
    assert culprit in completed.stdout + completed.stderr, completed.stdout + completed.stderr
    assert "passed" not in completed.stdout


def test_a_grading_plan_variable_left_set_in_a_shell_is_refused_once_naming_it(tmp_path):
    """MINITORCH_GRADING_PLAN (the grader's check processes' variable) naming a file that is gone made every graded
    test error with pathlib's FileNotFoundError, and nothing named the variable."""
    completed = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-m", "ex1_2",
                                "tests/test_ops.py"], cwd=ROOT, capture_output=True, text=True, timeout=300,
                               env={**os.environ, "MINITORCH_GRADING_PLAN": str(tmp_path / "gone.json")})
    printed = completed.stdout + completed.stderr
    assert completed.returncode == 4 and "MINITORCH_GRADING_PLAN=" in printed and "unset" in printed, printed
    assert "FileNotFoundError" not in printed and "passed" not in completed.stdout, printed


def test_pytest_with_pytest_timeout_turned_off_runs_the_tests_without_a_time_limit():
    """-p no:timeout (pytest-timeout's own way to turn it off, e.g. for pdb) stopped pytest with an INTERNALERROR,
    "no option named '--timeout'"; the tests' own timeout markers must stay declared for --strict-markers."""
    completed = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:timeout",
                                "--strict-markers", "-k", "line_length and course_plugin", "tests/test_line_length.py",
                                "tests/exercises/test_exercises.py"], cwd=ROOT, capture_output=True, text=True,
                               timeout=300)
    printed = completed.stdout + completed.stderr
    assert completed.returncode == 0 and "1 passed" in completed.stdout, printed
    assert "INTERNALERROR" not in printed and "Unknown pytest.mark" not in printed, printed


def test_student_edition_refuses_a_destination_it_cannot_write_before_any_work(tmp_path):
    (tmp_path / "taken").write_text("a file")
    completed = _course("student-edition", str(tmp_path / "taken" / "edition"))
    assert completed.returncode == 2 and "is a file, so nothing can be created below it" in completed.stderr


def test_grade_refuses_an_output_folder_holding_someones_own_files_and_keeps_them(tmp_path):
    """G08: an --out folder with no run.json of an earlier grading is not the grader's to overwrite."""
    (tmp_path / "subs" / "ann" / "minitorch").mkdir(parents=True)
    mine = tmp_path / "grades"
    mine.mkdir()
    (mine / "grades.csv").write_text("my own marks\n")
    (mine / "summary.md").write_text("my notes\n")
    completed = _course("grade", str(tmp_path / "subs"), "--out", str(mine), "--only", "3.1")
    assert completed.returncode == 2 and "holds files and no run.json" in completed.stderr, completed.stderr
    assert completed.stderr.count("\n") == 1, completed.stderr
    assert (mine / "grades.csv").read_text() == "my own marks\n" and (mine / "summary.md").read_text() == "my notes\n"


def test_grade_refuses_a_copy_of_the_project_given_as_the_folder_of_submissions(tmp_path):
    """G12: `grade .` names a copy, not a folder of copies."""
    completed = _course("grade", str(ROOT), "--out", str(tmp_path / "g"), "--only", "1.2")
    assert completed.returncode == 2 and "is a copy of the project, not a folder of copies" in completed.stderr, (
        completed.stderr)
    assert not (tmp_path / "g").exists()


def test_a_student_edition_is_readable_by_the_class_and_a_broken_chapter_is_named(tmp_path):
    """X25, X38: the edition's folder is 0755, not mkdtemp's 0700; X35: a chapter that is not JSON is named."""
    completed = _course("student-edition", str(tmp_path / "ed"), "--only", "1.1,1.2")
    assert completed.returncode == 0, completed.stderr
    assert (tmp_path / "ed").stat().st_mode & 0o777 == 0o755
    from minitorch.exercises.edition import make_student_edition
    from minitorch.exercises.registry import EXERCISES, ExerciseError

    book = tmp_path / "book"
    for name in ("minitorch", "chapters"):
        shutil.copytree(ROOT / name, book / name, ignore=shutil.ignore_patterns("__pycache__"))
    (book / "chapters" / "03_attention_two_ways.ipynb").write_text('{"cells": [')
    with pytest.raises(ExerciseError, match=r"chapters/03_attention_two_ways.ipynb is not a valid notebook"):
        make_student_edition(tmp_path / "ed2", [EXERCISES["1.2"]], book)
    assert not (tmp_path / "ed2").exists()


def _graded_class(tmp_path) -> Path:
    """A gradebook folder as `grade` leaves it, without grading anyone for real."""
    out = tmp_path / "grades"
    out.mkdir()
    (out / "run.json").write_text(json.dumps({"exercises": ["1.2"], "exercise_seed": 1}))
    (out / "grades.csv").write_text("student,total\n")
    return out


@pytest.mark.parametrize("where", ["roster", "gradebook", "a student's feedback"])
def test_canvas_csv_refuses_to_write_over_its_roster_or_the_gradebook(tmp_path, where):
    """--to naming the roster, a file of the gradebook folder, or a student's feedback one folder down is
    refused, so none of them is replaced."""
    out = _graded_class(tmp_path)
    roster = tmp_path / "roster.csv"
    roster.write_text("Student,ID,submission\nAnn,1,ann\n")
    (out / "adjustments.csv").write_text("student,points,late_penalty,comment\n")
    (out / "feedback" / "ann").mkdir(parents=True)
    (out / "feedback" / "ann" / "feedback.md").write_text("# Ann's feedback\n")
    to = {"roster": roster, "gradebook": out / "adjustments.csv",
          "a student's feedback": out / "feedback" / "ann" / "feedback.md"}[where]
    before = to.read_text()
    completed = _course("canvas-csv", str(out), "--roster", str(roster), "--assignment", "Week 1", "--to", str(to))
    assert completed.returncode == 2 and "write the Canvas CSV elsewhere" in completed.stderr, completed.stderr
    assert to.read_text() == before


def test_canvas_csv_names_the_assignment_as_typed_in_a_posix_locale(tmp_path):
    """PYTHONUTF8=0 LC_ALL=POSIX: --assignment 'Wöche 3' reached the CSV's header as 'W\\udcc3\\udcb6che 3' (Canvas
    would match no column) and printing it ended in a UnicodeEncodeError traceback."""
    out = _graded_class(tmp_path)
    roster = tmp_path / "roster.csv"
    roster.write_text("Student,ID,SIS User ID,SIS Login ID,Section,submission\nAnn,1,a1,ann,S1,ann\n")
    completed = subprocess.run([sys.executable, "-m", "minitorch.exercises", "canvas-csv", str(out), "--roster",
                                str(roster), "--assignment", "Wöche 3", "--to", str(tmp_path / "canvas.csv")],
                               cwd=ROOT, capture_output=True, text=True, timeout=300,
                               env={**os.environ, "PYTHONUTF8": "0", "LC_ALL": "POSIX", "LANG": "POSIX"})
    assert completed.returncode == 0 and "Traceback" not in completed.stderr, completed.stderr
    header = (tmp_path / "canvas.csv").read_text(encoding="utf-8").splitlines()[0]
    assert header.endswith(",Wöche 3"), f"the assignment's column should be named as typed: {header!r}"


def test_canvas_csv_refuses_a_fifo_roster_and_an_assignment_name_canvas_cannot_use(tmp_path):
    """A roster that is a FIFO is refused at once rather than blocking forever, and so is an empty
    --assignment."""
    out = _graded_class(tmp_path)
    fifo = tmp_path / "roster.csv"
    os.mkfifo(fifo)
    completed = _course("canvas-csv", str(out), "--roster", str(fifo), "--assignment", "W", "--to",
                        str(tmp_path / "c.csv"))
    assert completed.returncode == 2 and "named pipe" in completed.stderr, completed.stderr
    fifo.unlink()
    fifo.write_text("Student,ID,submission\n")
    completed = _course("canvas-csv", str(out), "--roster", str(fifo), "--assignment", "", "--to",
                        str(tmp_path / "c.csv"))
    assert completed.returncode == 2 and "--assignment is empty" in completed.stderr


@pytest.mark.parametrize("command", ["grade", "canvas-csv"])
def test_a_run_record_that_is_a_named_pipe_is_refused_without_waiting(tmp_path, command):
    """GRADES/run.json as a FIFO would block grade and canvas-csv forever; both refuse it at once."""
    out = _graded_class(tmp_path)
    (out / "run.json").unlink()
    os.mkfifo(out / "run.json")
    (tmp_path / "subs" / "ann" / "minitorch").mkdir(parents=True)
    (tmp_path / "roster.csv").write_text("Student,ID,submission\n")
    arguments = (["grade", str(tmp_path / "subs"), "--out", str(out), "--only", "1.2"] if command == "grade" else
                 ["canvas-csv", str(out), "--roster", str(tmp_path / "roster.csv"), "--assignment", "W", "--to",
                  str(tmp_path / "c.csv")])
    completed = _course(*arguments)
    assert completed.returncode == 2 and "run.json is not a regular file" in completed.stderr, completed.stderr


@pytest.mark.parametrize("text,message", [
    ("student,points,late_penalty,comment\nann,,-3,\n", "is negative; a bonus goes in points"),
    ("student,points,late_penalty,comment\nann,1,,late, but fine\n", "more cells than the header's columns"),
    (b"student,points,late_penalty,comment\n\xe9l\xe8ve,1,,\n", "cannot be read as a UTF-8 CSV"),
    (None, "not a regular file"),
    ("student,points,late_penalty,comment\nann,1,,\"an open quote\nbob,2,,\n",  # it swallowed bob's row
     r"adjustments.csv, line 2: not a well-formed CSV .*a quote left open"),
    ("student,points,late_penalty,points\nann,1,,-1\n",  # it would have kept only the -1
     r"adjustments.csv, line 1: the column\(s\) 'points' are named twice"),
    ("student,points,late_penalty,comment\nbob,0_5,0,\n",  # Python's float read it as 5
     r"adjustments.csv, line 2: points '0_5' is not a number"),
    ("student,points,late_penalty,comment\nbob,0,1_0%,\n", r"line 2: late_penalty '1_0' is not a number"),
    ("student,points,late_penalty,comment\nbob,\u0661,0,\n", r"line 2: points '\u0661' is not a number"),
    ("student,points,late_penalty,comment\nbob,,%,\n", r"line 2: late_penalty '%' is not a number"),  # read as 0
    ("student,points,late_penalty,comment\n,,,\n,-2,,late\n",  # the blank row is skipped, the -2 was too
     r"adjustments.csv, line 3: points, a late_penalty or a comment but no student"),
], ids=["negative-penalty", "unquoted-comma", "not-utf-8", "a-fifo", "an-open-quote", "a-column-twice",
        "an-underscore-in-points", "an-underscore-in-a-share", "an-arabic-digit", "a-share-without-its-number",
        "a-change-for-no-one"])
def test_a_bad_adjustments_file_is_named_with_its_line(tmp_path, text, message):
    """A bonus given as a penalty, a comment cut at a comma, a Latin-1 file, a FIFO, an open quote, a column named
    twice, a share without its number or a change naming no student is refused with the file's line, not read as
    something else (or dropped)."""
    from minitorch.exercises.grader.trusted.gradebook import read_adjustments
    from minitorch.exercises.registry import ExerciseError

    path = tmp_path / "adjustments.csv"
    if text is None:  # grade would block reading a FIFO named adjustments.csv
        os.mkfifo(path)
    else:
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(ExerciseError, match=message):
        read_adjustments(tmp_path)


@pytest.mark.parametrize("points, penalty, shown", [("1.0000001", "", "points 1.0000001 is more"),
                                                    ("", "100.00001%", "late_penalty 100.00001% is more"),
                                                    ("", "1.00000001", "late_penalty 1.00000001 is more")],
                         ids=["points", "a-share", "a-penalty"])
def test_an_adjustment_beyond_the_maximum_is_refused_with_its_value_as_written(tmp_path, points, penalty, shown):
    """'points 1 is more than the assignment's 1 points' said 1 > 1: the value was rounded to 6 decimals."""
    from minitorch.exercises.grader.trusted.gradebook import read_adjustments
    from minitorch.exercises.registry import ExerciseError

    (tmp_path / "adjustments.csv").write_text(f"student,points,late_penalty,comment\nbob,{points},{penalty},\n")
    with pytest.raises(ExerciseError) as refused:
        read_adjustments(tmp_path, maximum=1)
    assert shown in str(refused.value), f"the refusal should show the value as written ({shown}): {refused.value}"


def test_carry_over_refuses_what_is_not_a_copy_of_the_book(tmp_path):
    """A folder that does not exist, or a .zip, is refused, not reported as 'nothing' to carry with exit 0."""
    edition = tmp_path / "ed"
    assert _course("student-edition", str(edition), "--only", "1.1,1.2").returncode == 0
    for old in (tmp_path / "nowhere", tmp_path / "copy.zip"):
        completed = _course("carry-over", str(old), str(edition))
        assert completed.returncode == 2 and "is not a copy of the book" in completed.stderr, completed.stderr


@pytest.fixture(scope="module")
def week_one(tmp_path_factory) -> Path:
    """A student edition handing out 1.1 and 1.2 (mul_backward, in minitorch/ops.py)."""
    edition = tmp_path_factory.mktemp("carry") / "week-1"
    made = _course("student-edition", str(edition), "--only", "1.1,1.2")
    assert made.returncode == 0, made.stderr
    return edition



@the_full_book
def test_carry_over_refuses_the_books_own_checkout_as_the_old_copy(tmp_path, week_one):
    """`carry-over .` run from the instructor's checkout wrote all the reference answers into an edition."""
    new = Path(shutil.copytree(week_one, tmp_path / "new"))
    before = (new / "minitorch" / "ops.py").read_text()
    completed = _course("carry-over", ".", str(new))
    assert completed.returncode == 2 and "so it is no student edition" in completed.stderr, completed.stderr
    assert (new / "minitorch" / "ops.py").read_text() == before, "carry-over wrote into NEW"

WRITTEN = "return np.zeros_like(a), np.zeros_like(b)  # written in week 1"  # a body the student wrote (not the answer)


def _student_copy(edition: Path, folder: Path, after=None) -> Path:
    """A copy of `edition` whose mul_backward is written (`after(ops_path)` then spoils it, if given)."""
    from minitorch.exercises.registry import replace_bodies

    shutil.copytree(edition / "minitorch", folder / "minitorch")
    ops = folder / "minitorch" / "ops.py"
    ops.write_text(replace_bodies(ops.read_text(), {"mul_backward": WRITTEN}, "minitorch/ops.py"))
    if after is not None:
        after(ops)
    return folder


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


@pytest.mark.parametrize("spoil, returncode, said", [
    (lambda ops: ops.write_text(ops.read_text() + "\ndef broken(:\n"), 0, "Carried over into"),
    (lambda ops: ops.write_bytes(ops.read_bytes() + b"\n# G\xe9rard\n"), 1,
     "NOT carried over: 1.2, cannot be read"),
    (_fifo, 1, "NOT carried over: 1.2, cannot be read: OLD "),
    (lambda ops: ops.write_text(ops.read_text().replace(WRITTEN, "return _mine(grad, a, b)")
                                + f"\n\ndef _mine(grad, a, b):\n    {WRITTEN}\n"), 1,
     "NOT carried over: 1.2, helper outside the function: mul_backward uses _mine"),
], ids=["a syntax error elsewhere in the file", "a Latin-1 byte without a coding cookie", "a named pipe",
        "a helper outside the function"])
def test_carry_over_takes_the_function_as_the_grader_does_and_says_what_it_could_not(tmp_path, week_one, spoil,
                                                                                      returncode, said):
    """A copy's file that does not parse or decode, or is a FIFO, is named rather than reported as 'nothing' (or
    hanging); a function calling a helper outside it is not carried, since it would fail as a NameError in the
    new edition."""
    old = _student_copy(week_one, tmp_path / "old", spoil)
    new = tmp_path / "new"
    shutil.copytree(week_one, new)
    completed = _course("carry-over", str(old), str(new))
    assert completed.returncode == returncode and said in completed.stdout + completed.stderr, (
        completed.stdout + completed.stderr)
    carried = WRITTEN in (new / "minitorch" / "ops.py").read_text()
    assert carried == (returncode == 0), "carried over exactly when it says so"


@pytest.mark.parametrize("link, exercise", [("minitorch/ops.py", "1.2"), ("minitorch/paper", "3.1")],
                         ids=["the-file", "a-folder-on-the-way"])
def test_carry_over_refuses_a_file_of_the_old_copy_reached_through_a_symbolic_link(tmp_path, week_one, link,
                                                                                    exercise):
    """OLD's ops.py (or its paper/ folder) a link to the instructor's reference file carried the reference answers
    into NEW, those of exercises still stubbed in OLD too; grade refuses such a copy, and carry-over now does."""
    old = _student_copy(week_one, tmp_path / "old")
    shutil.rmtree(old / link) if (old / link).is_dir() else (old / link).unlink()
    (old / link).symlink_to(ROOT / link)
    new = tmp_path / "new"
    shutil.copytree(week_one, new)
    before = {path: path.read_bytes() for path in new.rglob("*.py")}
    completed = _course("carry-over", str(old), str(new))
    said = f"NOT carried over: {exercise}, cannot be read: OLD's {link} is a symbolic link"
    assert completed.returncode == 1 and said in completed.stderr, (
        f"a linked file must not be carried over, and be named: {completed.stdout + completed.stderr}")
    changed = [str(path.relative_to(new)) for path, text in before.items() if path.read_bytes() != text]
    assert changed == (["minitorch/ops.py"] if link == "minitorch/paper" else []), (
        f"only what the student wrote in a regular file may reach NEW (their ops.py); changed: {changed}")


def test_carry_over_removes_the_empty_folders_a_killed_one_left_beside_new_even_when_it_carries_nothing(
        tmp_path, week_one):
    """carry-over killed by SIGKILL as it moved the files left '.new.old-*/' (empty) and
    '.new.partial-minitorch-*/minitorch/' beside NEW; the next run, carrying nothing, wrote nothing and kept both."""
    from minitorch.exercises.edition import carry_over

    new = Path(shutil.copytree(week_one, tmp_path / "new"))
    for left in (".new.old-minitorch-abcdefgh", ".new.partial-minitorch-abcdefgh"):
        (tmp_path / left / "minitorch").mkdir(parents=True)
    only_copy = tmp_path / ".new.old-minitorch-keepsake" / "minitorch" / "ops.py"  # a kill between two renames
    only_copy.parent.mkdir(parents=True)
    only_copy.write_text("the only copy of the old ops.py")
    assert carry_over(week_one, new) == ([], {}), "week one's own stubs carry nothing"
    assert sorted(path.name for path in tmp_path.iterdir()) == [".new.old-minitorch-keepsake", "new"], (
        "the empty folders a killed carry-over left beside NEW should be removed, and the one holding a file kept")
    assert only_copy.read_text() == "the only copy of the old ops.py"


def test_carry_over_refuses_an_edition_whose_file_is_a_named_pipe_without_waiting(tmp_path, week_one):
    """NEW's ops.py as a FIFO would block forever; carry-over refuses it at once."""
    old = _student_copy(week_one, tmp_path / "old")
    new = tmp_path / "new"
    shutil.copytree(week_one, new)
    _fifo(new / "minitorch" / "ops.py")
    completed = _course("carry-over", str(old), str(new))
    assert completed.returncode == 2 and "new/minitorch/ops.py is not a regular file" in completed.stderr, (
        completed.stderr)


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("mount") is None, reason="mounting a small tmpfs needs root")
def test_carry_over_on_a_full_disk_leaves_the_editions_file_whole(tmp_path, week_one):
    """On a full disk, NEW's ops.py stays whole: a write cut short mid-string would lose most of its functions."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)]).returncode != 0:
        pytest.skip("no tmpfs can be mounted here")
    try:
        new = disk / "new"
        shutil.copytree(week_one / "minitorch", new / "minitorch", ignore=shutil.ignore_patterns("__pycache__"))
        before = (new / "minitorch" / "ops.py").read_bytes()
        old = _student_copy(week_one, tmp_path / "old", lambda ops: ops.write_text(ops.read_text().replace(
            WRITTEN + "\n", WRITTEN + "\n" + "    _ = 0\n" * 100, 1)))
        for block in (1 << 16, 1 << 12, 1):  # to the last byte
            with open(disk / f"filler-{block}", "wb", buffering=0) as filler:
                try:
                    while True:
                        filler.write(bytes(block))
                except OSError:
                    pass
        completed = _course("carry-over", str(old), str(new))
        assert completed.returncode != 0 and "ops.py" in completed.stderr, completed.stderr
        assert (new / "minitorch" / "ops.py").read_bytes() == before, "the edition's ops.py was changed half-way"
    finally:
        subprocess.run(["umount", "-l", str(disk)])


def _two_files_written(edition: Path, folder: Path) -> Path:
    """A copy of `edition` whose mul_backward (ops.py) and topological_order (tensor.py) are written."""
    from minitorch.exercises.registry import replace_bodies

    _student_copy(edition, folder)
    tensor = folder / "minitorch" / "tensor.py"
    tensor.write_text(replace_bodies(tensor.read_text(), {"topological_order": "return []  # written in week 1"},
                                     "minitorch/tensor.py"))
    return folder


def test_a_manifest_nested_too_deep_to_decode_is_named_as_not_a_manifest(tmp_path):
    """A returned copy's edition.json is the student's: JSON nested too deep for Python's decoder is one error
    naming the file, as any other broken manifest is, not a RecursionError from the grader's own code."""
    from minitorch.exercises.registry import MANIFEST, ExerciseError, read_manifest_data

    (tmp_path / MANIFEST).parent.mkdir(parents=True)
    (tmp_path / MANIFEST).write_text("[" * 100_000)
    with pytest.raises(ExerciseError, match=r"edition.json is not a valid edition manifest \(maximum recursion"):
        read_manifest_data(tmp_path)


CARRIED_MODULES = ("minitorch/ops.py", "minitorch/tensor.py")


@pytest.mark.parametrize("which", ["old", "new"])
def test_carry_over_checks_both_manifests_before_writing_anything(tmp_path, week_one, which):
    """A NEW whose edition.json is corrupt had every function written into it, then the error: both copies are
    checked before anything is written."""
    old = _two_files_written(week_one, tmp_path / "old")
    new = tmp_path / "new"
    shutil.copytree(week_one, new)
    (tmp_path / which / "minitorch" / "exercises" / "edition.json").write_text("{")
    before = {module: (new / module).read_text() for module in CARRIED_MODULES}
    completed = _course("carry-over", str(old), str(new))
    assert completed.returncode == 2 and f"carry-over: {which.upper()}'s " in completed.stderr and (
        "is not a valid edition manifest" in completed.stderr), completed.stderr
    assert "Carried over" not in completed.stdout, completed.stdout
    assert {module: (new / module).read_text() for module in CARRIED_MODULES} == before, "NEW was written"


@pytest.mark.slow  # one carry-over per file operation it makes (10-20 s)
@pytest.mark.parametrize("when", ["before", "after"])
def test_carry_over_stopped_at_any_moment_leaves_new_as_it_was_or_complete(tmp_path, week_one, monkeypatch, capsys,
                                                                           when):
    """A Ctrl-C during carry-over left NEW with some functions carried and others still stubs, saying only
    "stopped". Here a Ctrl-C comes as it starts, or just `when` one of its file operations that write (one per run,
    each in turn): NEW is then as it was, and the line says so (status 130), or complete (status 0, or 130 with a
    line saying so); nothing is left beside it."""
    import minitorch.exercises.__main__ as course
    from minitorch.tools.exit_policy import run_command

    old = _two_files_written(week_one, tmp_path / "old")
    before = {module: (week_one / module).read_text() for module in CARRIED_MODULES}
    calls = {"count": 0, "stop_at": None}

    def stopping(operation):
        def stopped_at_its_turn(*args, **kwargs):
            calls["count"] += 1
            stop = calls["count"] == calls["stop_at"]
            if stop and when == "before":
                os.kill(os.getpid(), signal.SIGINT)
            result = operation(*args, **kwargs)
            if stop and when == "after":
                os.kill(os.getpid(), signal.SIGINT)
            return result
        return stopped_at_its_turn

    operations = [(os, "replace"), (os, "chmod"), (os, "open"), (os, "scandir"), (tempfile, "mkstemp"),
                  (tempfile, "mkdtemp"), (Path, "mkdir")]  # what writes, and the reads of the folders it writes in
    for owner, name in operations:
        monkeypatch.setattr(owner, name, stopping(getattr(owner, name)))
    carry_over = course.carry_over

    def counted_from_the_start(*args):  # (the stops while the command reads its options are another test's)
        calls["count"] = 0
        if calls["stop_at"] == 0:  # while it reads the copies
            os.kill(os.getpid(), signal.SIGINT)
        return carry_over(*args)

    monkeypatch.setattr(course, "carry_over", counted_from_the_start)
    outcomes, new = set(), tmp_path / "new"
    shutil.copytree(week_one, new)
    for stop_at in range(1000):
        for module, text in before.items():  # NEW as handed out
            (new / module).write_text(text)
        calls.update(count=-10**6, stop_at=stop_at)
        status = run_command(course.main, ["carry-over", str(old), str(new)], name="python -m minitorch.exercises")
        reached, calls["stop_at"] = calls["count"] >= stop_at, None
        error = capsys.readouterr().err
        after = {module: (new / module).read_text() for module in CARRIED_MODULES}
        if after == before:
            assert status == 130 and "is as it was: nothing was carried over" in error, (
                f"stopped at operation {stop_at}, NEW is as it was: the command should say so, with status 130; got "
                f"status {status}, {error!r}")
        else:
            assert WRITTEN in after["minitorch/ops.py"] and "written in week 1" in after["minitorch/tensor.py"], (
                f"stopped at operation {stop_at}, NEW holds some functions carried and others not: {error}")
            assert status == 0 or (status == 130 and "is complete: 1.1, 1.2 carried over" in error), (
                f"stopped at operation {stop_at}, NEW is complete: the command should finish or say so; got status "
                f"{status}, {error!r}")
        assert sorted(path.name for path in tmp_path.iterdir()) == ["new", "old"], (
            f"stopped at operation {stop_at}, something was left beside NEW")
        outcomes.add(status)
        if not reached:  # the run ended before that operation: every moment has been tried
            break
    assert outcomes == {0, 130}, f"the stops should have come both before and after the files moved: {outcomes}"


@the_full_book
def test_a_bundle_is_refused_inside_a_student_edition_and_takes_no_file_of_yours(tmp_path, week_one):
    """A bundle, or a gradebook, written into the edition about to be handed out would hold the seed (and the
    answers, or what the hidden tests found), so both are refused there; and the bundle's temporary name must
    not overwrite, then delete, a file of the user's."""
    inside = _course("gradescope-bundle", str(week_one / "ag.zip"), "--only", "1.2")
    assert inside.returncode == 2 and "would lie inside the student edition" in inside.stderr, inside.stderr
    assert not (week_one / "ag.zip").exists()
    (tmp_path / "subs" / "ann" / "minitorch").mkdir(parents=True)  # the gradebook too (run.json's seed)
    graded = _course("grade", str(tmp_path / "subs"), "--out", str(week_one / "grades"), "--edition", str(week_one))
    assert graded.returncode == 2 and "would lie inside the student edition" in graded.stderr, graded.stderr
    assert not (week_one / "grades").exists()
    (tmp_path / "out").mkdir()
    mine = tmp_path / "out" / ".ag.zip.partial"
    mine.write_text("mine")
    built = _course("gradescope-bundle", str(tmp_path / "out" / "ag.zip"), "--only", "1.2")
    assert built.returncode == 0, built.stderr
    assert mine.read_text() == "mine", "the bundle took a file of the user's as its temporary one"
    assert sorted(path.name for path in (tmp_path / "out").iterdir()) == [".ag.zip.partial", "ag.zip"], (
        "a temporary file was left")


@the_full_book
def test_a_bundle_is_refused_inside_the_checkout_as_an_edition_is(tmp_path):
    """The zip holds the seed, the hidden tests and every answer: inside the checkout it is one `git add .` from
    the students."""
    for place in (ROOT / "autograder-test.zip", ROOT / "figures" / "autograder-test.zip"):
        completed = _course("gradescope-bundle", str(place), "--only", "3.1")
        assert completed.returncode == 2 and "would lie inside the project" in completed.stderr, completed.stderr
        assert "write it outside" in completed.stderr and not place.exists()


@pytest.mark.parametrize("place", ["grades_here", "figures/grades"])
def test_a_gradebook_is_refused_inside_the_checkout_as_a_bundle_is(tmp_path, place):
    """The gradebook holds the secret seed (run.json) and what the hidden tests found: inside the checkout it is
    one `git add .` from the students, so `grade --out` refuses it there before any work."""
    (tmp_path / "subs" / "ann" / "minitorch").mkdir(parents=True)
    completed = _course("grade", str(tmp_path / "subs"), "--out", str(ROOT / place), "--only", "1.2")
    assert completed.returncode == 2 and "would lie inside the project" in completed.stderr, (
        f"grade --out {place} inside the checkout should be refused naming the project; got {completed.stderr}")
    assert "write it outside" in completed.stderr, completed.stderr
    assert not (ROOT / place).exists(), f"a refused grade run left {ROOT / place} in the checkout"


def test_grade_refuses_an_edition_inside_the_submissions(tmp_path):
    """--edition subs/carol (a returned copy named by mistake): carol's own edited edition.json decided what counted
    for the whole class, her failed exercise dropped; a student's own copy never decides, as --out there is refused."""
    carol = tmp_path / "subs" / "carol" / "minitorch" / "exercises"
    carol.mkdir(parents=True)
    (carol / "edition.json").write_text(json.dumps({"handed_out": ["1.2"]}))
    completed = _course("grade", str(tmp_path / "subs"), "--out", str(tmp_path / "g"), "--edition",
                        str(tmp_path / "subs" / "carol"))
    assert completed.returncode == 2 and "--edition" in completed.stderr and "inside SUBMISSIONS" in completed.stderr, (
        f"an --edition inside SUBMISSIONS should be refused, naming it; got {completed.stderr}")
    assert completed.stderr.count("\n") == 1 and not (tmp_path / "g").exists(), completed.stderr


@pytest.mark.parametrize("place", ["the student edition", "the checkout"])
def test_a_canvas_csv_is_refused_inside_an_edition_or_the_checkout_as_a_gradebook_is(tmp_path, place):
    """canvas-csv --to wrote every student's grade inside the edition about to be handed out, or one `git add .`
    from the students in the checkout, where grade --out and gradescope-bundle refuse to write."""
    out, edition = _graded_class(tmp_path), tmp_path / "week-1"
    (edition / "minitorch" / "exercises").mkdir(parents=True)
    (edition / "minitorch" / "exercises" / "edition.json").write_text(json.dumps({"handed_out": ["1.2"]}))
    roster = tmp_path / "roster.csv"
    roster.write_text("Student,ID,SIS User ID,SIS Login ID,Section,submission\n")
    to = {"the student edition": edition / "canvas.csv", "the checkout": ROOT / "figures" / "canvas-test.csv"}[place]
    completed = _course("canvas-csv", str(out), "--roster", str(roster), "--assignment", "Week 1", "--to", str(to))
    assert completed.returncode == 2 and "would lie inside" in completed.stderr, (
        f"a Canvas CSV inside {place} should be refused, as a gradebook is there; got {completed.stderr}")
    assert not to.exists(), f"a refused canvas-csv left {to}"


@pytest.mark.parametrize("arguments, fix", [
    (["--only", "5.1,9.1"], "--release 1.1,1.2,1.3,1.4,2.1,2.2,2.3,2.4,3.1,3.2,3.5"),
    (["--only", "3.2", "--release", "1.1,1.2,1.3,1.4,2.1,2.2,2.3"], "--only 2.4,3.2"),
    (["--chapter", "2"], "--handed-out-before 1.1,1.2"),
], ids=["5.1-and-9.1-alone", "3.2-without-the-softmax", "chapter-2-after-week-1"])
def test_an_edition_whose_exercises_build_on_ones_it_neither_hands_out_nor_releases_is_refused_with_the_fix(
        tmp_path, arguments, fix):
    """--only 5.1,9.1 without 3.1, 3.5, ... was made: the students' tests and chapters were blocked by stubs no one
    would hand them."""
    completed = _course("student-edition", str(tmp_path / "edition"), *arguments)
    assert completed.returncode == 2 and "prerequisites it neither hands out nor releases" in completed.stderr, (
        completed.stderr)
    assert fix in completed.stderr and completed.stderr.count("\n") == 1, completed.stderr
    assert not (tmp_path / "edition").exists()


def test_an_edition_after_an_earlier_week_names_what_students_bring_and_says_so(tmp_path):
    completed = _course("student-edition", str(tmp_path / "week-2"), "--chapter", "2", "--handed-out-before",
                        "1.1,1.2,1.3,1.4")
    assert completed.returncode == 0, completed.stderr
    assert "handed out before (students bring their own): 1.1, 1.2, 1.3, 1.4" in completed.stdout, completed.stdout
    manifest = json.loads((tmp_path / "week-2" / "minitorch" / "exercises" / "edition.json").read_text())
    assert manifest["handed_out_before"] == ["1.1", "1.2", "1.3", "1.4"] and manifest["released"] == []
    readme = (tmp_path / "week-2" / "README.md").read_text()
    assert "Your own answers to exercise(s) 1.1, 1.2, 1.3, 1.4 come from an earlier edition" in readme


@pytest.mark.parametrize("arguments, said", [
    (["--only", "3.1", "--handed-out-before", "3.1"], "3.1 are both handed out and handed out before"),
    (["--only", "2.1", "--release", "1.1,1.2", "--handed-out-before", "1.1,1.2"],
     "1.1, 1.2 are both released and handed out before"),
], ids=["handed-out-and-before", "released-and-before"])
def test_an_edition_naming_an_exercise_in_two_of_its_options_is_refused(tmp_path, arguments, said):
    """--only 3.1 --handed-out-before 3.1 wrote an edition that stubs 3.1 for the students to write and tells them
    to bring their own 3.1 from an earlier edition; --release 1.1 --handed-out-before 1.1 dropped the second option
    while the summary said it was kept. Contradictory, as --only 3.1 --release 3.1 is."""
    completed = _course("student-edition", str(tmp_path / "edition"), *arguments)
    assert completed.returncode == 2 and said in completed.stderr and completed.stderr.count("\n") == 1, (
        f"the contradiction should be refused in one line naming the exercises ({said}); got: {completed.stderr}")
    assert not (tmp_path / "edition").exists(), "a refused edition must write nothing"


@the_full_book
@pytest.mark.parametrize("command", ["student-edition", "gradescope-bundle"])
def test_a_legal_255_byte_name_is_written_not_refused_for_a_longer_temporary_one(tmp_path, command):
    """The temporary name beside it ('.NAME.building-...', '.NAME.partial') must not be longer than the
    filesystem allows."""
    name = "e" * 255 if command == "student-edition" else "z" * 251 + ".zip"
    completed = _course(command, str(tmp_path / name), "--only", "1.1")
    assert completed.returncode == 0, completed.stderr
    assert [path.name for path in tmp_path.iterdir()] == [name], "written under its name, nothing else left"


@the_full_book
@pytest.mark.parametrize("limit, low, refusal", [
    ("RLIMIT_NOFILE", 12, "grading needs at least 256 open files"),
    ("RLIMIT_FSIZE", 32 << 10, "grading needs files of up to 64 MiB, and this shell allows 32 KiB (ulimit -f 32)"),
    ("RLIMIT_AS", 512 << 20, "of address space per process, and this shell allows 0.5 GiB (ulimit -v 524288)"),
], ids=["open-files", "file-size", "address-space"])
@pytest.mark.parametrize("soft_only", [True, False], ids=["a low soft limit", "a low hard limit"])
def test_grading_under_a_low_limit_raises_it_or_stops_before_any_student(tmp_path, soft_only, limit, low, refusal):
    """Under `ulimit -n 12`, a right answer must not be recorded as 0 points, 'crashed', with no word; nor under
    `ulimit -Sf 32`, where a check process could not write its record. Under `ulimit -f 32` the sandbox's own limit
    could not be set, and grade advised installing bubblewrap, which was installed."""
    import resource

    shutil.copytree(ROOT / "minitorch", tmp_path / "subs" / "ann" / "minitorch",
                    ignore=shutil.ignore_patterns("__pycache__"))  # this book's answers: a right copy

    def low_limit():
        which = getattr(resource, limit)
        hard = resource.getrlimit(which)[1]
        resource.setrlimit(which, (low, hard if soft_only else low))

    completed = subprocess.run([sys.executable, "-m", "minitorch.exercises", "grade", str(tmp_path / "subs"), "--out",
                                str(tmp_path / "out"), "--only", "3.1", "--isolation", "none"], cwd=ROOT,
                               capture_output=True, text=True, timeout=600, preexec_fn=low_limit)
    if soft_only:
        assert completed.returncode == 0 and "ann: 1 / 1" in completed.stdout, (
            f"the grader's own limit cost a right copy its point:\n{completed.stdout}{completed.stderr}")
    else:
        assert completed.returncode == 1 and refusal in completed.stderr, completed.stderr
        assert "Traceback" not in completed.stderr and "bubblewrap" not in completed.stderr, completed.stderr


@the_full_book
def test_grading_under_a_hard_limit_on_address_space_above_its_needs_grades(tmp_path):
    """Under `ulimit -v 3000000` (more than a worker gets) grade failed with prlimit's words, 'collecting the
    grader's own tests found none': the check process's limit tried to raise the hard limit, which only root may."""
    import resource

    shutil.copytree(ROOT / "minitorch", tmp_path / "subs" / "ann" / "minitorch",
                    ignore=shutil.ignore_patterns("__pycache__"))  # this book's answers: a right copy
    completed = subprocess.run([sys.executable, "-m", "minitorch.exercises", "grade", str(tmp_path / "subs"), "--out",
                                str(tmp_path / "out"), "--only", "3.1", "--isolation", "none", "--jobs", "1"],
                               cwd=ROOT, capture_output=True, text=True, timeout=600,
                               preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30)))
    assert completed.returncode == 0 and "ann: 1 / 1" in completed.stdout, (
        f"a hard limit above the grader's own cost a right copy its point:\n{completed.stdout}{completed.stderr}")


@pytest.mark.skipif(os.geteuid() != 0 and shutil.which("bwrap") is None, reason="no sandbox here to start a worker in")
def test_grading_run_by_an_interpreter_named_through_dot_dot_starts_its_sandboxed_workers(tmp_path):
    """`cd repo; ../venv/bin/python -m minitorch.exercises grade ...` said 'no isolation is possible here ... Install
    bubblewrap', bubblewrap installed: the workers were started as repo/../venv/bin/python, and no worker sees repo/."""
    elsewhere = tmp_path / "repo"
    elsewhere.mkdir()
    python = os.path.relpath(sys.executable, elsewhere)
    assert ".." in python, f"the interpreter should be named through '..' from {elsewhere}: {python}"
    script = ("import sys; from minitorch.exercises.grader.trusted import isolation as sandbox; "
              "print(sys.executable); print(sandbox.PYTHON); print(sandbox.choose('auto').kind)")
    completed = subprocess.run([python, "-c", script], cwd=elsewhere, capture_output=True, text=True, timeout=600,
                               env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert completed.returncode == 0, f"a worker should start as with the absolute path: {completed.stderr[-2000:]}"
    named, used, kind = completed.stdout.split("\n")[:3]
    assert ".." in named and ".." not in used and os.path.samefile(used, sys.executable), (
        f"the workers should run this Python by a path without '..': {named} -> {used}")
    assert kind in ("bubblewrap", "chroot"), completed.stdout


def test_canvas_csv_writes_a_roster_name_that_looks_like_a_formula_as_text_as_grades_csv_does(tmp_path):
    """A Student or Section cell starting with = (or +, -, @) is a formula to a spreadsheet: the Canvas CSV quotes it
    with the rule grades.csv uses (csv_cell), and keeps the IDs Canvas matches a row by as the roster has them."""
    from minitorch.exercises.grader.trusted.gradebook import canvas_csv

    roster = tmp_path / "roster.csv"
    roster.write_text('Student,ID,SIS User ID,SIS Login ID,Section,submission\n'
                      '"=HYPERLINK(""http://x.example"",""Ann"")",101,s1,ann@u,+A,ann\n', encoding="utf-8")
    text, _, _ = canvas_csv([{"student": "ann", "total": "3"}], roster, "Week 1 (123)")
    row = list(csv.reader(io.StringIO(text)))[1]
    assert row == ["'=HYPERLINK(\"http://x.example\",\"Ann\")", "101", "s1", "ann@u", "'+A", "3"], (
        f"a name or section a spreadsheet would run as a formula should start with ', the IDs unchanged; got {row}")


def test_canvas_csv_matches_submissions_that_differ_only_in_spaces_at_their_ends_as_written(tmp_path):
    """Students 'alice', 'alice ' and ' alice' (grade keeps them apart, and flags them): the roster's cells were
    trimmed, so all three matched 'alice' and the export was refused for a duplicate the instructor never wrote."""
    from minitorch.exercises.grader.trusted.gradebook import canvas_csv

    roster = tmp_path / "roster.csv"
    roster.write_text('Student,ID,SIS User ID,SIS Login ID,Section,submission\nA One,1,s1,a1,S,"alice "\n'
                      'A Two,2,s2,a2,S," alice"\nA Three,3,s3,a3,S,alice\nB,4,s4,b,S, bob \n', encoding="utf-8")
    grades = [{"student": "alice", "total": "1"}, {"student": "alice ", "total": "2"},
              {"student": " alice", "total": "3"}, {"student": "bob", "total": "4"}]
    text, _, _ = canvas_csv(grades, roster, "W")
    totals = {row[0]: row[-1] for row in csv.reader(io.StringIO(text))}
    assert totals == {"Student": "W", "A One": "2", "A Two": "3", "A Three": "1", "B": "4"}, (
        f"each roster row should get the grade of its submission as written (a cell with spaces alone trimmed): "
        f"{totals}")


def test_canvas_csv_refuses_a_roster_with_a_column_named_twice_rather_than_swap_grades(tmp_path):
    """A roster with two `submission` columns: a CSV row keeps only the last cell of a name, so ann's row would
    have read bob's submission and each taken the other's grade. It is refused, naming the column."""
    from minitorch.exercises.grader.trusted.gradebook import canvas_csv
    from minitorch.exercises.registry import ExerciseError

    roster = tmp_path / "roster.csv"
    roster.write_text("submission,Student,ID,SIS User ID,SIS Login ID,Section,submission\n"
                      "ann,Ann A,1,s1,ann,S1,bob\nbob,Bob B,2,s2,bob,S1,ann\n", encoding="utf-8")
    grades = [{"student": "ann", "total": "3"}, {"student": "bob", "total": "0"}]
    with pytest.raises(ExerciseError, match=r"roster.csv, line 1: the column\(s\) 'submission' are named twice"):
        text, _, _ = canvas_csv(grades, roster, "Week 1 (123)")
        pytest.fail(f"a roster naming `submission` twice should be refused, not read by its last column:\n{text}")


@pytest.mark.parametrize("assignment", ["Student", "SIS User ID", " section "])
def test_canvas_csv_refuses_an_assignment_named_as_one_of_its_columns(tmp_path, assignment):
    """--assignment Student wrote a header naming Student twice: Canvas would have read the grades as the names or
    the names as the grades. It is refused, naming the column, before the roster is read."""
    from minitorch.exercises.grader.trusted.gradebook import canvas_csv
    from minitorch.exercises.registry import ExerciseError

    roster = tmp_path / "roster.csv"
    roster.write_text("submission,Student,ID,SIS User ID,SIS Login ID,Section\nann,Ann A,1,s1,ann,S1\n",
                      encoding="utf-8")
    with pytest.raises(ExerciseError, match=r"--assignment .*Canvas's gradebook already has a column"):
        text, _, _ = canvas_csv([{"student": "ann", "total": "3"}], roster, assignment)
        pytest.fail(f"--assignment {assignment!r} should be refused, not written as a second column:\n{text}")


def test_grade_run_from_a_student_edition_is_refused_as_the_bundle_is(tmp_path):
    """A TA grading from the handed-out edition (no tests/hidden) graded on the public tests alone, which took the
    hidden share too, under 'a fresh secret seed' that decided nothing; gradescope-bundle refuses such a copy."""
    edition = tmp_path / "edition"
    assert _course("student-edition", str(edition), "--only", "3.1").returncode == 0
    (tmp_path / "subs" / "ann" / "minitorch").mkdir(parents=True)
    completed = _course("grade", str(tmp_path / "subs"), "--out", str(tmp_path / "grades"), "--only", "3.1",
                        cwd=edition)
    assert completed.returncode == 2 and "is a student edition" in completed.stderr, (
        f"grading from an edition should be refused: {completed.stdout}{completed.stderr}")
    assert "grade from the full book" in completed.stderr and not (tmp_path / "grades").exists()


def test_an_edition_made_from_an_edition_cannot_release_the_stubs_as_answers(tmp_path):
    """student-edition --release 1.1,...,2.4 run in a student edition wrote an edition.json saying they were
    released, while mul_backward and the rest were still the stubs, blocking 3.2's tests."""
    edition = tmp_path / "edition"
    assert _course("student-edition", str(edition), "--only", "3.1").returncode == 0
    completed = _course("student-edition", str(tmp_path / "q3"), "--only", "3.2", "--release",
                        "1.1,1.2,1.3,1.4,2.1,2.2,2.3,2.4", cwd=edition)
    assert completed.returncode == 2 and "holds no answer to exercise(s) 1.1, 1.2" in completed.stderr, (
        f"releasing a stub should be refused: {completed.stdout}{completed.stderr}")
    assert not (tmp_path / "q3").exists(), "a refused edition must write nothing"


@pytest.mark.parametrize("handed_out, said", [
    ([], "its minitorch/exercises/edition.json hands out no exercise (a solutions edition?)"),
    (["9.9"], "its minitorch/exercises/edition.json hands out unknown exercise ID(s) 9.9"),
], ids=["nothing-a-solutions-edition", "an-unknown-id"])
def test_grade_refuses_an_edition_that_hands_out_nothing_or_an_unknown_exercise(tmp_path, handed_out, said):
    """--edition of a solutions edition (handed_out []) graded all 18 exercises, 1 / 36 for a right 3.1; an
    edition.json naming 9.9 was refused as if 9.9 had been typed, the file unnamed."""
    edition = tmp_path / "edition"
    (edition / "minitorch" / "exercises").mkdir(parents=True)
    (edition / "minitorch" / "exercises" / "edition.json").write_text(json.dumps({"handed_out": handed_out}))
    (tmp_path / "subs" / "ann" / "minitorch").mkdir(parents=True)
    completed = _course("grade", str(tmp_path / "subs"), "--out", str(tmp_path / "grades"), "--edition", str(edition))
    assert completed.returncode == 2 and f"--edition {edition}: {said}" in completed.stderr, (
        f"the edition's manifest should be named as the reason: {completed.stderr}")
    assert not (tmp_path / "grades").exists(), "nothing may be graded"


@pytest.mark.parametrize("manifest,named", [
    ({"handed_out": "1.2"}, r"field handed_out should be a list of exercise IDs .*got str '1\.2'"),
    ({"handed_out": [1.2]}, r"field handed_out should be a list of exercise IDs .*got list \[1\.2\]"),
    ({"released": ["1.1"]}, r"field handed_out should be a list of exercise IDs .*got no such field"),
    (["1.2"], r"it holds a JSON list, not an object with the field handed_out"),
], ids=["a-string", "a-number", "missing", "not-an-object"])
def test_an_edition_manifest_whose_handed_out_is_not_a_list_of_ids_is_named_with_the_field(tmp_path, manifest,
                                                                                              named):
    """An edition.json with handed_out "1.2" was read as the IDs 1, ., 2: the error blamed unknown exercises and
    named neither the file nor its field."""
    from minitorch.exercises.registry import MANIFEST, ExerciseError, read_manifest_data

    path = tmp_path / MANIFEST
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(ExerciseError, match=named) as refused:
        read_manifest_data(tmp_path)
        pytest.fail(f"an edition.json of {manifest!r} should be refused naming handed_out")
    assert str(path) in str(refused.value), f"the error should name {path}: {refused.value}"


def test_two_student_editions_at_once_into_one_new_folder_keep_one_and_refuse_the_other(tmp_path, monkeypatch, capsys):
    """Two student-edition runs at once into one new folder both said they wrote it; the folder held the last one.
    Here the other run's edition moves in while this one builds: this one must say so and keep nothing."""
    from minitorch.exercises import __main__ as course
    from minitorch.exercises import edition
    from minitorch.tools.exit_policy import run_command

    dest = tmp_path / "edition"
    build = edition._build

    def built_while_another_run_finished(building, *arguments):
        summary = build(building, *arguments)
        dest.mkdir()
        (dest / "the-other-run.txt").write_text("the other run's edition", encoding="utf-8")
        return summary

    monkeypatch.setattr(edition, "_build", built_while_another_run_finished)
    status = run_command(course.main, ["student-edition", str(dest), "--only", "1.1"],
                         name="python -m minitorch.exercises")
    captured = capsys.readouterr()
    assert status == 1 and "written" not in captured.out, f"status {status}, said: {captured.out!r}"
    assert captured.err.count("\n") == 1 and "another run wrote it meanwhile" in captured.err, captured.err
    assert sorted(path.name for path in dest.iterdir()) == ["the-other-run.txt"], "the other run's edition was replaced"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["edition"], "the refused edition was left beside it"
