"""Specification of the class grader (minitorch/exercises/grader/trusted/grading.py, gradebook.py, class_run.py).

Fast tests check the results (exact points, no seed, kinds and flags, the exercises that count) and the
conftest's per-test timeout, manifest and --scoreboard-json options on the tiny project of
test_exercises.py. The slow test grades a class of this book's student edition: honest mistakes and
hostile copies that try to forge their grade, read the grader's answers, touch other students' files
or the grader's, leave processes behind, or stop the run; it checks every score, that the grader's
checkout, the submissions and the other students' results are byte-identical, and that no process of
the run survives it.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import hashlib
import io
import json
import os
import re
import shutil
import stat
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import zipfile
from pathlib import Path

import pytest

import minitorch
from minitorch.exercises import edition as edition_module
from minitorch.exercises.grader.trusted import gradebook
from minitorch.exercises.grader.trusted import grading
from minitorch.exercises.grader.trusted import isolation as sandbox
from minitorch.exercises.grader.trusted import submissions as submissions_module
from minitorch.exercises.grader.trusted.gradebook import grades_csv
from minitorch.exercises.grader.trusted.worker_library import StudentFiles
from minitorch.exercises import registry
from minitorch.exercises.registry import EXERCISES, load_exercises, replace_bodies

from test_exercises import _clean_environment, reference_body, run_pytest, tiny_project

ROOT = Path(minitorch.__file__).resolve().parent.parent


def a_run(exercise_ids=("1.2", "2.2"), tests_per_exercise=3) -> grading.Run:
    """A run's settings with a made-up list of graded tests (nothing is collected or started)."""
    collected = {f"tests/test_x.py::test_{exercise_id}_{n}": exercise_id for exercise_id in exercise_ids
                 for n in range(tests_per_exercise)}
    return grading.Run(list(exercise_ids), 4711, 5.0, 60.0, sandbox.Isolation("none"), ROOT, "v", known_tests=collected)


def passed(run: grading.Run, *ids: str) -> dict:
    return {nodeid: {"status": "passed"} for nodeid, owner in run.collected().items() if owner in ids}


@pytest.mark.parametrize("points, count", [(3, 60), (2, 3), (1, 7), (3, 11), (2, 22), (1, 1)])
def test_points_split_over_tests_add_up_to_the_exercises_points_exactly(points, count):
    shares = registry.split_points(points, count)
    assert len(shares) == count and all(round(share, 6) == share for share in shares)
    assert grading.add_points(shares) == points, f"{count} shares of {points} points add up to {sum(shares)!r}"


@pytest.mark.parametrize("count", [-1, 0, 2.0, True])
def test_points_are_split_over_a_whole_number_of_tests_at_least_one(count):
    with pytest.raises(ValueError, match=rf"^split_points: count must be a whole number of tests >= 1, got {count!r}$"):
        registry.split_points(3, count)


def test_a_solved_copys_total_and_maximum_equal_the_sums_of_its_tests_exactly():
    run = a_run(("2.1", "2.2", "2.4"), tests_per_exercise=11)
    graded = grading.results_json("ann", run, passed(run, "2.1", "2.2", "2.4"), StudentFiles(handed_out=[]), 1.0)
    tests = graded["tests"]
    assert graded["score"] == grading.add_points(test["score"] for test in tests) == 9
    assert graded["extra_data"]["max_score"] == grading.add_points(test["max_score"] for test in tests) == 9
    rows = list(csv.DictReader(io.StringIO(grades_csv([graded], run.exercise_ids))))
    assert rows[0]["total"] == "9" and [rows[0][i] for i in run.exercise_ids] == ["3", "3", "3"]


@pytest.mark.parametrize("value_tests, earned", [(("passed", "passed"), 1.0), (("passed", "failed"), 0.25),
                                                 (("failed", "failed"), 0.0)], ids=["values pass", "one fails", "none"])
def test_tests_requiring_values_pay_only_when_every_value_test_passes_in_both_scoreboards(value_tests, earned,
                                                                                          monkeypatch):
    """Exercise 3.1 (1 point, all of it on these tests: hidden_share 0) with two value tests and two passed tests of
    shape and dtype (requires_values): the class grader's results.json and the student's own scoreboard
    (tests/course_plugin.py) give the same points."""
    import dataclasses

    import course_plugin

    for table in (EXERCISES, course_plugin.registry.EXERCISES):  # (the scoreboard's registry is loaded by its path)
        monkeypatch.setitem(table, "3.1", dataclasses.replace(table["3.1"], hidden_share=0.0))
    run = a_run(("3.1",), tests_per_exercise=4)
    statuses = [*value_tests, "passed", "passed"]
    results = {nodeid: {"status": status, "blocked_by": None, "requires_values": index >= 2}
               for index, (nodeid, status) in enumerate(zip(run.collected(), statuses))}
    graded = grading.results_json("ann", run, results, StudentFiles(handed_out=[]), 1.0)
    board = object.__new__(course_plugin.Scoreboard)
    board.exercise_of, board.results = dict(run.collected()), results
    assert graded["extra_data"]["exercises"]["3.1"]["earned"] == earned, "class grading pays the wrong tests"
    public, _ = registry.part_points(EXERCISES["3.1"])  # the student's own run holds no hidden test: its share
    assert board.exercise_table()["3.1"]["earned"] == earned * public, "the student's scoreboard pays the wrong tests"
    unpaid = [test for test in graded["tests"] if test["status"] == "passed" and test["score"] == 0]
    assert all("earns nothing until every value test" in test["output"] for test in unpaid), unpaid


ADAM_TESTS = {**{f"tests/test_optim.py::test_{n}": "2.5" for n in range(2)},
              **{f"tests/hidden/test_adam_hidden.py::test_{n}": "2.5" for n in range(3)}}


@pytest.mark.parametrize("statuses, earned", [
    ((("passed", False), ("passed", False), ("passed", False), ("passed", False), ("passed", True)), 3.0),
    ((("passed", False), ("passed", False), ("failed", False), ("failed", False), ("failed", False)), 1.5),
    ((("failed", False), ("passed", True), ("passed", False), ("passed", False), ("passed", True)), 1.5),
    ((("passed", False), ("failed", False), ("passed", False), ("passed", False), ("failed", False)), 0.75 + 1.0),
], ids=["all pass", "public only", "requires_values per part", "some of each"])
def test_hidden_tests_carry_the_exercises_hidden_share_in_both_scoreboards(statuses, earned):
    """Exercise 2.5 (3 points, half of them hidden) with two public tests (worth 0.75 each) and three hidden ones
    (0.5 each); a passed test declared requires_values pays only when the value tests of its own part all pass.
    results.json (class grading, Gradescope) and the student's own scoreboard (tests/conftest.py) agree."""
    import course_plugin

    assert registry.part_points(EXERCISES["2.5"]) == (1.5, 1.5), "this test assumes 2.5's default share, one half"
    run = grading.Run(["2.5"], 4711, 5.0, 60.0, sandbox.Isolation("none"), ROOT, "v", known_tests=ADAM_TESTS)
    results = {nodeid: {"status": status, "blocked_by": None, "requires_values": gated}
               for nodeid, (status, gated) in zip(ADAM_TESTS, statuses)}
    graded = grading.results_json("ann", run, results, StudentFiles(handed_out=[]), 1.0)
    assert [test["max_score"] for test in graded["tests"]] == [0.75, 0.75, 0.5, 0.5, 0.5]
    assert graded["extra_data"]["exercises"]["2.5"]["earned"] == graded["score"] == earned
    assert graded["extra_data"]["max_score"] == 3 and graded["extra_data"]["exercises"]["2.5"]["hidden_points"] == 1.5
    board = object.__new__(course_plugin.Scoreboard)
    board.exercise_of, board.results = dict(ADAM_TESTS), results
    row = board.exercise_table()["2.5"]
    assert (row["earned"], row["max"], row["points"]) == (earned, 3.0, 3), "the student's scoreboard differs"


def test_a_students_own_run_shows_the_public_share_and_class_grading_without_hidden_tests_pays_them_all():
    """Without hidden tests the student's scoreboard shows what the public tests earn of their share; a class graded
    without any hidden test of an exercise (none collected) gives its public tests every point, never a total
    below the exercise's points."""
    import course_plugin

    public = {nodeid: exercise for nodeid, exercise in ADAM_TESTS.items() if not registry.is_hidden_test(nodeid)}
    results = {nodeid: {"status": "passed", "blocked_by": None} for nodeid in public}
    board = object.__new__(course_plugin.Scoreboard)
    board.exercise_of, board.results = dict(public), results
    row = board.exercise_table()["2.5"]
    assert (row["earned"], row["max"], row["points"]) == (1.5, 1.5, 3)
    run = grading.Run(["2.5"], 4711, 5.0, 60.0, sandbox.Isolation("none"), ROOT, "v", known_tests=public)
    graded = grading.results_json("ann", run, results, StudentFiles(handed_out=[]), 1.0)
    assert graded["score"] == graded["extra_data"]["max_score"] == 3


def test_nothing_a_student_sees_names_the_seed():
    run = a_run()
    graded = grading.results_json("ann", run, passed(run, "1.2"), StudentFiles(handed_out=[]), 1.0)
    for text in (json.dumps(graded), gradebook.feedback_markdown(graded)):
        assert "4711" not in text and "seed" not in text.lower().replace("seen", ""), (
            "results.json and feedback.md go to students: the seed must not appear")


def test_what_the_worker_and_the_files_found_is_each_tests_kind_and_a_flag():
    run = a_run(("1.2", "1.3", "2.2", "2.3", "3.1"))
    report = StudentFiles(copied={"1.2": "minitorch/ops.py"}, missing={"2.3": "function not found: no ops.py"},
                          handed_out=["1.2"])
    results = {**passed(run, "1.2"),
               **{nodeid: {"status": "not attempted"} for nodeid, owner in run.collected().items() if owner == "1.3"},
               **{nodeid: {"status": "does not compile", "message": "does not compile: x"}
                  for nodeid, owner in run.collected().items() if owner == "2.2"},
               **{nodeid: {"status": "passed" if nodeid.endswith("0") else "refused", "message": "refused: asked 3.2"}
                  for nodeid, owner in run.collected().items() if owner == "3.1"}}
    graded = grading.results_json("ann", run, results, report, 1.0)
    kinds = {row: graded["extra_data"]["exercises"][row]["kinds"] for row in run.exercise_ids}
    assert kinds == {"1.2": {"passed": 3}, "1.3": {"not attempted": 3}, "2.2": {"does not compile": 3},
                     "2.3": {"function not found": 3}, "3.1": {"refused": 3}}, (
        "a test that passed before its exercise asked for what it does not need earns nothing either")
    assert graded["extra_data"]["exercises"]["3.1"]["earned"] == 0
    flags = "; ".join(graded["extra_data"]["flags"])
    assert "does not compile: 2.2" in flags and "function not found: 2.3" in flags and "refused: exercise(s) 3.1" \
        in flags


def test_a_copy_that_could_not_be_graded_says_why_everywhere_and_stays_out_of_the_class_statistics():
    run = a_run(("1.2",), tests_per_exercise=1)
    problem = "could not be graded: the entry is a named pipe, not a folder or a .zip of the copy (it was not opened)"
    lee = grading.results_json("lee", run, {}, StudentFiles(), 0.0, problem)
    ann = grading.results_json("ann", run, passed(run, "1.2"), StudentFiles(handed_out=["1.2"]), 0.0)
    assert lee["extra_data"]["flags"] == [problem] and ann["extra_data"]["flags"] == []
    assert problem in grades_csv([lee], ["1.2"]), "the gradebook must say why a copy scored 0 without running"
    statistics = gradebook.exercise_statistics([ann, lee], ["1.2"])["1.2"]
    assert statistics["full_marks"] == 1.0 and sum(statistics["failures"].values()) == 0, statistics
    summary = gradebook.summary_markdown([ann, lee], ["1.2"], {"graded_at": "now", "exercise_seed": 0, "timeout": 1,
                                                               "grader_version": "v"})
    assert "1 copy could not be graded (lee" in summary and problem in summary, summary
    feedback = gradebook.feedback_markdown(lee)
    assert feedback.count(problem) == 1 and "What failed" not in feedback and "| exercise |" not in feedback


HIDDEN_INPUTS = "[0.8123, -1.9981, 0.0457]"  # what a hostile copy's error quotes of its (secret) arguments


@pytest.mark.parametrize("kind, message, shown", [
    ("failed", f"ValueError: called with {HIDDEN_INPUTS}", "raised ValueError"),
    ("failed", f"AssertionError: Not equal to tolerance rtol=1e-07\nMismatched elements: 3 / 3\n x: array("
               f"{HIDDEN_INPUTS})", "wrong values"),
    ("failed", f"AssertionError: Arrays are not equal (shapes (3,), (4,) mismatch)\n x: array({HIDDEN_INPUTS})",
     "wrong shape"),
    ("failed", f"StudentError: MyError: {HIDDEN_INPUTS}", "raised an exception of a class of its own"),
    ("failed", f"GradcheckError: gradcheck failed for mul at {HIDDEN_INPUTS}", "wrong gradients"),
    ("failed", f"AssertionError: {HIDDEN_INPUTS} != 3", "a check of the answer failed"),
    ("crashed", f"crashed: the process died by SIGSEGV (a segmentation fault); it printed: ...{HIDDEN_INPUTS}",
     "crashed: the process died by SIGSEGV"),
    ("crashed", f"not run: 2 tests of exercise 1.2 already crashed (crashed: ...; it printed: {HIDDEN_INPUTS})",
     "crashed: not run"),
    ("timed out", "timed out after 5 s (the test's time limit)", "timed out: the code did not return within 5 s"),
    ("refused", f"refused: while exercise 1.2 was graded, its code asked the grader for '{HIDDEN_INPUTS[:20]}'",
     "refused: the exercise's code asked the grader for another exercise's function"),
    ("not attempted", f"Exercise 1.2 (chapter 01): {HIDDEN_INPUTS} Write the body of x in y.py",
     "not attempted: Exercise 1.2 (chapter 01): mul's backward rule. Write the body of mul_backward"),
], ids=["raised", "wrong-values", "wrong-shape", "own-class", "gradients", "own-assert", "crashed", "not-run",
        "timed-out", "refused", "stub-quoting"])
def test_feedback_says_the_kind_and_the_tests_reason_never_what_the_code_raised_or_printed(kind, message, shown):
    """A hostile copy whose function raised an error quoting its own arguments got the hidden inputs printed back in
    feedback.md and results.json (and at once on Gradescope); the full text stays in the instructor's check log."""
    run = a_run(("1.2",), tests_per_exercise=1)
    nodeid = next(iter(run.collected()))
    graded = grading.results_json("ann", run, {nodeid: {"status": kind, "message": message}},
                                  StudentFiles(handed_out=["1.2"]), 1.0)
    test = graded["tests"][0]
    for text in (json.dumps(graded), gradebook.feedback_markdown(graded)):
        assert "0.8123" not in text and "1.9981" not in text, f"the hidden inputs reached the student:\n{text}"
    assert test["output"].startswith(shown) and test["extra_data"]["message"] == test["output"], test["output"]
    if kind not in ("not attempted",):
        assert test["output"].endswith("(the test: 1.2 0)"), "the test's own reason: its name in words"


def test_a_tests_own_reason_is_its_docstrings_first_paragraph_else_its_name_in_words(tmp_path):
    from minitorch.exercises.grader.trusted.student_text import reason_of

    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text(textwrap.dedent('''\
        def test_rows_sum_to_one(student):
            pass


        class TestAttention:
            def test_future_keys(self, student):
                """Every future key gets exactly
                zero weight.

                Details a student need not read."""
        '''))
    found = {nodeid: reason_of(tmp_path, nodeid) for nodeid in ["tests/test_x.py::test_rows_sum_to_one[5]",
                                                                 "tests/test_x.py::TestAttention::test_future_keys",
                                                                 "tests/missing.py::test_gone"]}
    assert found == {"tests/test_x.py::test_rows_sum_to_one[5]": "rows sum to one",
                     "tests/test_x.py::TestAttention::test_future_keys": "Every future key gets exactly zero weight.",
                     "tests/missing.py::test_gone": "gone"}


def test_names_and_messages_from_students_reach_no_file_as_markup_escapes_or_formulas():
    run = a_run(("1.2",), tests_per_exercise=1)
    nodeid = next(iter(run.collected()))
    hostile = "<script>alert(1)</script> \x1b]0;owned\x07\x1b[2J \udcff"
    results = {nodeid: {"status": "does not compile", "message": f"does not compile: {hostile}"}}
    graded = grading.results_json("=HYPERLINK(\"x\")", run, results, StudentFiles(handed_out=["1.2"]), 1.0)
    feedback = gradebook.feedback_markdown(graded)
    summary = gradebook.summary_markdown([graded], ["1.2"], {"graded_at": "now", "timeout": 1, "grader_version": "v"})
    table = grades_csv([graded], ["1.2"])
    for name, text in (("results.json", json.dumps(graded, ensure_ascii=False)), ("feedback.md", feedback),
                       ("summary.md", summary), ("grades.csv", table)):
        assert "\x1b" not in text and "\x07" not in text and "\udcff" not in text, f"{name} holds a raw control"
    assert "<script>" not in feedback and "&lt;script&gt;" in feedback, feedback
    assert list(csv.reader(io.StringIO(table)))[1][0].startswith("'="), "a formula would run in a spreadsheet"


def test_a_copy_without_the_editions_manifest_is_flagged():
    graded = grading.results_json("max", a_run(), {}, StudentFiles(handed_out=None), 0.0)
    assert any("not a student edition" in flag for flag in graded["extra_data"]["flags"]), graded["extra_data"]


def test_the_exercises_that_count_come_from_the_instructor_never_from_a_students_copy(tmp_path):
    from minitorch.exercises.grader.trusted.class_run import chosen_exercises

    class Options:
        only, chapter, edition = "", "", ""

    options = Options()
    everything, source = chosen_exercises(options, ROOT)
    assert everything == list(EXERCISES) and source.startswith("every exercise")
    options.chapter = "3"
    assert chosen_exercises(options, ROOT)[0] == ["3.1", "3.2", "3.3", "3.4", "3.5"]
    edition = tmp_path / "edition" / "minitorch" / "exercises"
    edition.mkdir(parents=True)
    (edition / "edition.json").write_text(json.dumps({"handed_out": ["3.1", "3.2"]}))
    options.chapter, options.edition = "", str(tmp_path / "edition")
    assert chosen_exercises(options, ROOT)[0] == ["3.1", "3.2"]


# ----------------------------------------------------------------------
# the conftest: per-test timeout, the manifest, --scoreboard-json's folder

HANGING_TEST = """
import pytest

@pytest.mark.exercise("1.1")
@pytest.mark.parametrize("n", [1, 2, 3])
def test_hangs(n):
    while True:
        pass
"""


def test_a_hung_test_fails_as_timed_out_and_the_scoreboard_still_prints(tmp_path):
    project = tiny_project(tmp_path / "tiny", solved=True)
    (project / "tests" / "test_hang.py").write_text(HANGING_TEST)
    completed = run_pytest(project, "--timeout=1", "-m", "ex1_1", "tests/test_hang.py", "-k", "1")
    assert "Timeout (>1.0s) from pytest-timeout" in completed.stdout, completed.stdout[-2000:]
    assert "exercise scoreboard" in completed.stdout and completed.returncode == 1


def test_every_kind_of_failure_counts_in_the_scoreboards_failed_column():
    """Class grading's extra kinds (timed out, crashed, ...) are failures: the printed row must add up."""
    import course_plugin

    class Terminal:  # the two calls of pytest's terminal reporter that the scoreboard makes
        def __init__(self):
            self.lines: list[str] = []

        def section(self, title, sep):
            self.lines.append(title)

        def write_line(self, line):
            self.lines.append(line)

    board = object.__new__(course_plugin.Scoreboard)
    board.seed, board.counted = 0, None
    kinds = ["passed", "failed", "timed out", "crashed", "does not compile", "function not found"]
    board.exercise_of = {f"test_{n}": "1.1" for n in range(len(kinds))}
    board.results = {f"test_{n}": {"status": kind, "blocked_by": None} for n, kind in enumerate(kinds)}
    terminal = Terminal()
    board.write_scoreboard(terminal)
    text = "\n".join(terminal.lines)
    row = next(line for line in terminal.lines if line.startswith("1.1 "))
    counts = row.split("/")[0].split()[-5:-1]  # passed, failed, not attempted, blocked
    assert counts == ["1", "5", "0", "0"], f"a test that timed out or crashed must count as failed:\n{text}"
    assert ("(the failed column includes 1 timed out, 1 crashed, 1 does not compile, 1 function not found)"
            in terminal.lines), f"the scoreboard must name the kinds in its failed column:\n{text}"


def test_a_check_process_that_ends_before_any_test_runs_is_the_graders_failure_not_a_zero(tmp_path, monkeypatch):
    """A grader whose Python lacks pytest-timeout: the check process ended with status 4 before any test, and a right
    answer got 0 with every test 'did not run: the check process ended before it'; only the hidden log said why."""
    def check_process_without_its_plugin(grader_root, exercise_ids, extra, environment, log, patience, run=None):
        log.write_text("ERROR: No module named 'pytest_timeout': pip install -r requirements.txt\n")
        return 4

    monkeypatch.setattr(grading, "_run_pytest", check_process_without_its_plugin)
    copy = tmp_path / "alice"
    shutil.copytree(ROOT / "minitorch", copy / "minitorch", ignore=shutil.ignore_patterns("__pycache__", "paper"))
    out = tmp_path / "graded"
    with pytest.raises(grading.CheckProcessFailed, match="status 4 before any test ran: .*pytest_timeout") as failed:
        grading.grade_submission(submissions_module.Entry("alice", copy), out, a_run(("1.2",)), scratch_root=tmp_path)
    assert not (out / "results.json").exists(), (
        f"a check process that ran no test is the grader's failure, said as such ({failed.value}), never a grade")


def test_the_scoreboard_of_an_untouched_edition_counts_only_what_it_handed_out(tmp_path):
    project = tiny_project(tmp_path / "tiny")  # exercise 1.2 a stub, 1.1's tests present
    (project / "minitorch" / "exercises" / "edition.json").write_text(json.dumps({"handed_out": ["1.2"]}))
    completed = run_pytest(project, "--exercise-seed=5", f"--scoreboard-json={tmp_path / 'board.json'}")
    board = json.loads((tmp_path / "board.json").read_text())
    assert list(board["exercises"]) == ["1.2"], "only the exercise handed out is graded"
    public, _ = registry.part_points(EXERCISES["1.2"])  # the edition holds no hidden tests: its public share
    assert board["total"] == {"points": EXERCISES["1.2"].points, "max": public, "earned": 0.0}
    assert re.search(rf"^total .* 0\.00 / {public:g} of {EXERCISES['1.2'].points}$", completed.stdout,
                     re.MULTILINE), completed.stdout
    assert "the instructor's hidden tests, on inputs of their own, grade the other" in completed.stdout


def test_selecting_only_an_exercise_the_edition_did_not_hand_out_says_so(tmp_path):
    """`pytest -m ex1_3` in an edition without 1.3 ended with "8 skipped" and no reason, while `-m ch01` said which
    exercises the edition did not hand out."""
    project = tiny_project(tmp_path / "tiny")  # exercise 1.2 a stub
    (project / "minitorch" / "exercises" / "edition.json").write_text(json.dumps({"handed_out": ["1.1"]}))
    completed = run_pytest(project, "-m", "ex1_2")
    assert "1 skipped" in completed.stdout and "exercise scoreboard" not in completed.stdout, completed.stdout
    assert "wait for exercise(s) 1.2, which this edition did not hand out (it hands out 1.1)" in completed.stdout, (
        f"a run of only an exercise not handed out should say so, not just 'skipped': {completed.stdout}")


def test_the_scoreboard_json_folder_is_checked_before_any_test_runs(tmp_path):
    project = tiny_project(tmp_path / "tiny", solved=True)
    completed = run_pytest(project, f"--scoreboard-json={tmp_path / 'missing' / 'board.json'}")
    assert completed.returncode == 4, completed.stdout
    assert f"the folder {tmp_path / 'missing'} does not exist" in completed.stderr + completed.stdout
    assert "passed" not in completed.stdout


def tiny_grader(folder: Path) -> Path:
    """A grader's project: minitorch/ops.py with the functions of exercises 1.2 and 1.1, and the real registry."""
    (folder / "minitorch" / "exercises").mkdir(parents=True)
    (folder / "tests").mkdir()
    (folder / "minitorch" / "__init__.py").write_text("")
    (folder / "minitorch" / "ops.py").write_text("def double(x):\n    return 2 * x\n\n\n"
                                                 "def triple(x):\n    return 3 * x\n")
    shutil.copy(ROOT / "minitorch" / "exercises" / "registry.py", folder / "minitorch" / "exercises" / "registry.py")
    (folder / "tests" / "test_ops.py").write_text("def test_nothing():\n    pass\n")
    return folder


def test_the_edition_writes_its_manifest_and_is_built_aside(tmp_path, monkeypatch):
    grader = tiny_grader(tmp_path / "grader")
    import minitorch.exercises.registry as registry
    table = {"1.2": registry.Exercise("1.2", "doubling", 1, "minitorch/ops.py", "double"),
             "1.1": registry.Exercise("1.1", "tripling", 2, "minitorch/ops.py", "triple")}
    exercises = registry.load_exercises(grader, table)
    edition_module.make_student_edition(tmp_path / "edition", exercises[:1], grader, table=table)
    manifest = json.loads((tmp_path / "edition" / "minitorch" / "exercises" / "edition.json").read_text())
    assert manifest["handed_out"] == [exercises[0].id] and "made_at" in manifest and "made_from" in manifest

    def disk_full(*arguments):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(edition_module, "stubbed_source", disk_full)
    with pytest.raises(OSError, match="No space left"):
        edition_module.make_student_edition(tmp_path / "broken", exercises[:1], grader, table=table)
    assert not (tmp_path / "broken").exists(), "a failed build must not leave a copy with the solutions"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["edition", "grader"], "nothing left aside"


def test_an_edition_leaves_out_sockets(tmp_path):
    import socket
    project = tiny_project(tmp_path / "tiny", solved=True)
    left_behind = socket.socket(socket.AF_UNIX)  # as a Jupyter kernel on IPC transport leaves in the cwd
    left_behind.bind(str(project / "tests" / "kernel-ipc-1"))
    try:
        edition_module.copy_folder(project / "tests", tmp_path / "copied")
    finally:
        left_behind.close()
    names = {path.name for path in (tmp_path / "copied").rglob("*")}
    assert "test_tiny.py" in names and "kernel-ipc-1" not in names, names


# ----------------------------------------------------------------------
# a class, from this book's student edition: honest mistakes, then hostile copies

GRADED = ["1.3", "2.4", "3.1", "3.2", "3.5", "4.1"]
POINTS = {exercise_id: EXERCISES[exercise_id].points for exercise_id in GRADED}
SEED = 80_531  # distinctive: it must appear in no file a student sees


def set_body(copy: Path, exercise_id: str, body: str) -> None:
    """Write `body` (unindented lines) as the body of the exercise's function in the copy."""
    exercise = EXERCISES[exercise_id]
    path = copy / exercise.module
    path.write_text(replace_bodies(path.read_text(), {exercise.function: body}, exercise.module))


def solve(copy: Path, *ids: str) -> Path:
    for exercise_id in ids or GRADED:
        set_body(copy, exercise_id, reference_body(EXERCISES[exercise_id]))
    return copy


HANG = "while True:\n    pass"
LESS = "less than full marks"  # a wrong answer may still pass a few of its exercise's tests
HOSTILE = {  # the body of 3.1's function in each hostile copy; {out}, {class_}, {root} are filled in with real paths
    "forger": """\
import glob, json, os, numpy.testing
numpy.testing.assert_allclose = numpy.testing.assert_array_equal = lambda *a, **k: None
for pattern in ("/**/results.json", "/**/board.json", "/**/grades.csv", "{out}/**/*.json"):
    for path in glob.glob(pattern, recursive=True)[:50]:
        try:
            open(path, "w").write(json.dumps({{"score": 99, "tests": []}}))
        except OSError:
            pass
print("PASSED " * 1000)
return None""",
    "reader": """\
import glob, os
found = []
for pattern in ("{root}/minitorch/softmax.py", "/**/minitorch/softmax.py", "/proc/*/environ", "/proc/*/cmdline"):
    for path in glob.glob(pattern, recursive=True)[:400]:
        try:
            text = open(path, "rb").read().decode("utf-8", "replace")
        except OSError:
            continue
        if "MINITORCH_EXERCISE_SEED" in text or "weights * (grad -" in text or "exponentials.sum" in text:
            found.append(path + ": " + text[:3000])
try:  # the checkout's history holds every answer
    import subprocess
    shown = subprocess.run(["git", "-C", "{root}", "show", "HEAD:minitorch/softmax.py"], capture_output=True,
                           text=True, timeout=60).stdout
    found += ["git: " + shown[:3000]] if "exponentials.sum" in shown or "weights * (grad -" in shown else []
except OSError:
    pass
raise ValueError("leaked: " + " || ".join(found))""",
    "vandal": """\
import os, shutil
for victim in ("{out}/solved", "{out}/grades.csv", "{class_}/solved", "{root}/tests/test_softmax.py"):
    try:
        shutil.rmtree(victim) if os.path.isdir(victim) else open(victim, "w").write("vandalised")
    except OSError:
        pass
return None""",
    "daemon": """\
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.environ["MINITORCH_TEST_DAEMON"] = "1"
        for _ in range(600):
            for victim in ("{out}/solved/results.json", "{out}/daemon/results.json"):
                try:
                    open(victim, "w").write('{{"score": 99}}')
                except OSError:
                    pass
            time.sleep(0.5)
    os._exit(0)
return np.triu(np.ones((length, length), dtype=bool), k=1)""",
    "signaller": """\
import os, signal
for pid in [os.getppid(), 1] + [int(p) for p in os.listdir("/proc") if p.isdigit()]:
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            if pid != os.getpid():
                os.kill(pid, sig)
        except OSError:
            pass
return np.triu(np.ones((length, length), dtype=bool), k=1)""",
    "hog": "block = bytearray(64 << 30)\nreturn None",
}


def build_honest_class(edition: Path, folder: Path) -> dict[str, dict[str, float]]:
    """The honest copies; returns each student's expected points per exercise."""
    def copy(name):
        return Path(shutil.copytree(edition, folder / name))

    full, expected = dict(POINTS), {}
    solve(copy("solved"))
    expected["solved"] = full
    copy("untouched")
    expected["untouched"] = dict.fromkeys(GRADED, 0)
    set_body(solve(copy("hang")), "3.5", HANG)  # (in 4.1 the loop alone fails it, before anything runs)
    expected["hang"] = {**full, "3.5": 0}
    set_body(solve(copy("exits")), "3.1", "import os\nos._exit(0)")
    expected["exits"] = {**full, "3.1": 0}
    set_body(solve(copy("syntax")), "3.2", "return softmax(scores.masked_fill(future, -np.inf), axis=-1")
    expected["syntax"] = {**full, "3.2": 0}
    set_body(solve(copy("wrong_softmax")), "2.4", "weights = np.ones_like(scores.data) / scores.shape[axis]\n\n"
                                                     "def backward(grad):\n    return (grad,)")
    expected["wrong_softmax"] = {**full, "2.4": LESS}  # 3.2 calls the grader's softmax: it keeps its points
    stub = solve(copy("stub_softmax"), "1.3", "3.1", "3.2", "3.5", "4.1")
    expected["stub_softmax"] = {**full, "2.4": 0}
    set_body(solve(copy("slow_softmax")), "2.4", "import time\ntime.sleep(60)\n" +
               reference_body(EXERCISES["2.4"]))
    expected["slow_softmax"] = {**full, "2.4": 0}
    set_body(solve(copy("markers")), "3.1", "# BEGIN EXERCISE 3.1\n" + reference_body(EXERCISES["3.1"]) +
               "        # END EXERCISE 3.1\n")  # an old edition's markers, anywhere: nothing to read
    expected["markers"] = full
    latin = solve(copy("latin1"))
    attention = latin / EXERCISES["3.1"].module
    attention.write_bytes(("# -*- coding: latin-1 -*-\n# Größe\n" + attention.read_text()).encode("latin-1", "replace"))
    expected["latin1"] = full
    helper = solve(copy("helper_outside"))
    set_body(helper, "3.1", "return _upper(length)")
    with open(helper / EXERCISES["3.1"].module, "a") as module:
        module.write("\n\ndef _upper(length):\n    return np.triu(np.ones((length, length), dtype=bool), k=1)\n")
    expected["helper_outside"] = {**full, "3.1": 0}
    set_body(solve(copy("borrower")), "2.4", "from minitorch.paper import attention\n"  # 2.4 does not need 3.2
               "return attention.softmax_attention(scores, np.zeros(scores.shape[-2:], dtype=bool))")
    expected["borrower"] = {**full, "2.4": 0}
    set_body(solve(copy("tracer")), "4.1", "import sys\nsys.settrace(None)\n"  # a loop, hidden from any tracer
               "y = x.copy() if residual else np.zeros_like(x)\nfor b in range(x.shape[0]):\n"
               "    y[b, triggers[b]] += x[b, 1:triggers[b] + 1].mean(axis=0)\nreturn y")
    expected["tracer"] = {**full, "4.1": 0}
    set_body(solve(copy("huge")), "3.1", "x = 0\n" * 2_000_000 + reference_body(EXERCISES["3.1"]))
    expected["huge"] = {**full, "3.1": 0, "3.2": 0}  # a 12 MB attention.py is refused unread, and 3.2 lives there
    claims = solve(copy("claims_less"), "3.1")
    (claims / "minitorch" / "exercises" / "edition.json").write_text(json.dumps({"handed_out": ["3.1"]}))
    expected["claims_less"] = {**dict.fromkeys(GRADED, 0), "3.1": POINTS["3.1"]}
    zipped = solve(copy("zipped"))
    shutil.make_archive(str(folder / "zipped"), "zip", zipped.parent, zipped.name)
    shutil.rmtree(zipped)
    expected["zipped"] = full
    del stub
    return expected


def build_hostile_class(edition: Path, folder: Path, out: Path, class_: Path) -> dict[str, dict[str, float]]:
    expected = {}
    for name, body in HOSTILE.items():
        copy = Path(shutil.copytree(edition, folder / name))
        solve(copy, *[i for i in GRADED if i != "3.1"])
        set_body(copy, "3.1", body.format(out=out, class_=class_, root=ROOT))
        # the signaller's 3.1 is right, but it brings down its own sandbox (bubblewrap): its own tests crash
        expected[name] = {**POINTS, "3.1": {"daemon": POINTS["3.1"], "signaller": LESS}.get(name, 0)}
    return expected


def digest_tree(root: Path) -> dict[str, str]:
    return {path.relative_to(root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(root.rglob("*")) if path.is_file() and "__pycache__" not in path.parts
            and ".git" not in path.parts and ".pytest_cache" not in path.parts}


def workers_alive() -> list[str]:
    """Processes of a student's worker of this test session's runs still running (every grader this session
    starts inherits its run marker; a grading beside it on the machine has another and does not count)."""
    alive = []
    for pid in sandbox.processes_of_run(sandbox.RUN_MARKER):
        try:
            alive.append(f"{pid}: {Path(f'/proc/{pid}/cmdline').read_bytes()[:120]!r}")
        except OSError:
            pass
    return alive


os.environ.setdefault(sandbox.RUN_MARKER_VARIABLE, sandbox.RUN_MARKER)  # the graders this module starts carry it


def grade(submissions: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "minitorch.exercises", "grade", str(submissions), "--out", str(out), "--jobs",
               "2", "--timeout", "4", "--exercise-seed", str(SEED), "--only", ",".join(GRADED), *extra]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=1800,
                          env=_clean_environment())


def check_row(row: dict, student: str, expected: dict, flags: str = "") -> None:
    got = {exercise_id: float(row[exercise_id]) for exercise_id in GRADED}
    exact = {i: points for i, points in expected.items() if points != LESS}
    assert {i: got[i] for i in exact} == pytest.approx(exact), (
        f"{student}: points per exercise {got}, expected {expected}")
    assert all(got[i] < POINTS[i] for i in expected if expected[i] == LESS), f"{student}: {got} should lose points"
    assert float(row["total"]) == pytest.approx(sum(got.values())), f"{student}: total {row['total']} is not the sum"
    assert row["max_total"] == str(sum(POINTS.values())), f"{student}: max_total {row['max_total']} is not the course's"
    assert flags in row["flags"], f"{student}: flags {row['flags']!r} should mention {flags!r}"


@pytest.mark.slow
def test_a_class_earns_exactly_its_own_code_and_hostile_copies_touch_nothing_else(tmp_path):
    """Honest mistakes cost only their own exercise; hostile copies cannot forge a grade, read the grader's
    answers or seed, change another student's results, the submissions or the grader's checkout, stop the run,
    or leave a process behind. (In the isolation `auto` picks here; a `bwrap` that fails, first on PATH, makes it
    the chroot fallback, as in Gradescope's Docker container.)"""
    before = digest_tree(ROOT)
    subprocess.run([sys.executable, "-m", "minitorch.exercises", "student-edition", str(tmp_path / "edition")],
                   cwd=ROOT, check=True, capture_output=True, env=_clean_environment())
    class_, out = tmp_path / "class", tmp_path / "out"
    expected = build_honest_class(tmp_path / "edition", class_)
    honest = grade(class_, out)
    assert honest.returncode == 0, honest.stdout + honest.stderr
    assert honest.stdout.startswith("Isolation: "), "the run's first line names the isolation in force"
    rows = {row["student"]: row for row in csv.DictReader((out / "grades.csv").open())}
    flags = {"hang": "timed out", "exits": "crashed", "syntax": "does not compile: 3.2", "slow_softmax": "timed out",
             "helper_outside": "helper outside the function: 3.1", "borrower": "refused: exercise(s) 2.4",
             "huge": "too large: 3.1"}
    for student, points in expected.items():
        check_row(rows[student], student, points, flags.get(student, ""))
    results_before = {student: (out / "feedback" / student / "results.json").read_bytes() for student in expected}

    expected_hostile = build_hostile_class(tmp_path / "edition", class_, out, class_)
    submissions_before = digest_tree(class_)
    hostile = grade(class_, out)
    assert hostile.returncode == 0, hostile.stdout + hostile.stderr
    assert "Interrupted" not in hostile.stdout and len(re.findall(r"^\[\d+/\d+\] ", hostile.stdout, re.M)) == len(
        HOSTILE), "the run must go on to the end whatever a copy does, naming each student"
    assert digest_tree(ROOT) == before, "grading changed a file of the grader's checkout"
    assert digest_tree(class_) == submissions_before, "a copy changed the submissions"
    assert {s: (out / "feedback" / s / "results.json").read_bytes() for s in expected} == results_before, (
        "a copy changed another student's results")
    time.sleep(1)
    assert workers_alive() == [], "a process a student started outlived the run"

    rows = {row["student"]: row for row in csv.DictReader((out / "grades.csv").open())}
    if hostile.stdout.startswith("Isolation: chroot"):  # no PID namespace: it can signal only its own user's
        expected_hostile["signaller"]["3.1"] = POINTS["3.1"]  # processes, and the worker's child answers all the same
    for student, points in expected_hostile.items():
        crashed = student == "signaller" and expected_hostile[student]["3.1"] == LESS
        check_row(rows[student], student, points, "crashed" if crashed else "")
    assert "crashed" in rows["hog"]["flags"] or "failed" in (out / "feedback" / "hog" / "feedback.md").read_text()
    for student in [*expected, *expected_hostile]:
        for name in ("results.json", "feedback.md"):
            text = (out / "feedback" / student / name).read_text()
            assert str(SEED) not in text, f"{student}/{name} names the hidden seed"
            assert "exponentials.sum" not in text and "weights * (grad -" not in text, (
                f"{student}/{name} quotes the grader's reference answer")
    run = json.loads((out / "run.json").read_text())
    assert run["exercise_seed"] == SEED, "the seed stays with the instructor, in run.json"

    again = grade(class_, out)
    assert f"Grading 0 of {len(rows)} students" in again.stdout, again.stdout


INDEPENDENT_3_5 = """\
totals = weights.sum(axis=-1, keepdims=True)
rescaled = np.divide(weights, totals, out=np.zeros_like(weights), where=totals > 0)
return rescaled.mean(axis=0).sum(axis=1) / np.arange(weights.shape[-1], 0, -1)
"""  # dan's own 3.5, written otherwise than the book's
DISGUISED_3_5 = """\
# my own work, honestly
s = weights.sum(axis = -1, keepdims = True)   # row sums
r = np.divide(weights, s, out = np.zeros_like(weights), where = s > 0)
return (r.mean(axis=0).sum(axis=1)
        / np.arange(weights.shape[-1], 0, -1))
"""  # cat's: dan's, carried over with other names, comments and line breaks
FLOOD = "\x1b]0;owned\x07\x1b[2J\x1b[31m\r\x08\x00\u202e<script>alert(1)</script>" * 200
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f\u202e]")


@pytest.mark.slow
def test_a_class_of_hostile_entries_is_graded_to_the_end_with_a_row_each_and_honest_copies_keep_every_point(
        tmp_path):
    """An entry nested 1,200 deep ended grade with a RecursionError before anyone was graded; one named
    adjustments.csv made every run exit 1; .sneaky got no row; a ./-spelt duplicate in a zip chose one copy; a
    student's control bytes, <script> and undecodable bytes reached the terminal, feedback.md, results.json and the
    check log raw. Copying shows in similarity.md."""
    ids = ["3.1", "3.5"]
    full = {exercise_id: EXERCISES[exercise_id].points for exercise_id in ids}
    edition, class_, out = tmp_path / "edition", tmp_path / "class", tmp_path / "out"
    subprocess.run([sys.executable, "-m", "minitorch.exercises", "student-edition", str(edition), "--only",
                    ",".join(ids)], cwd=ROOT, check=True, capture_output=True, env=_clean_environment())

    def copy(name: str) -> Path:
        return solve(Path(shutil.copytree(edition, class_ / name)), *ids)

    expected = {}  # student ID in the gradebook -> points per exercise, or the reason it is not graded
    for name in ("ann", "adjustments.csv", "grades.csv", "feedback", ".sneaky"):
        copy(name)
        expected["student .sneaky-submission" if name == ".sneaky" else name] = full
    zipped = copy("run.json")
    shutil.make_archive(str(class_ / "run.json"), "zip", zipped.parent, zipped.name)
    shutil.rmtree(zipped)
    expected["run.json"] = full
    set_body(copy("dan"), "3.5", INDEPENDENT_3_5)
    set_body(copy("cat"), "3.5", DISGUISED_3_5)
    expected.update(dan=full, cat=full)
    eve = "eve\x1b]0;owned\x07\x1b[2J\udcff" + "\x1b" * 100  # (\udcff: a byte that is not UTF-8)
    copy(eve)
    expected[next(entry.student for entry in submissions_module.entries(class_).values()
                  if entry.path.name == eve)] = full  # (under a safe name, cut to fit a folder's)
    set_body(copy("mallory"), "3.5", f"print({FLOOD!r} * 50)\nraise ValueError(repr(weights) + {FLOOD!r})")
    expected["mallory"] = {"3.1": full["3.1"], "3.5": 0}
    deep = copy("deep") / "notes"
    for _ in range(1200):
        deep = deep / "d"
        deep.mkdir(parents=True)
    expected["deep"] = "nested more than 64 deep"
    with zipfile.ZipFile(class_ / "dup.zip", "w") as archive:
        for path in sorted((class_ / "ann").rglob("*")):
            archive.write(path, Path("copy") / path.relative_to(class_ / "ann"))
        archive.writestr("./copy/minitorch/paper/metrics.py", "def gu_sink_scores(weights, triggers=None):\n"
                                                             "    return 0\n")
    expected["dup"] = "copy/minitorch/paper/metrics.py twice"
    try:
        graded = subprocess.run([sys.executable, "-m", "minitorch.exercises", "grade", str(class_), "--out", str(out),
                                 "--jobs", "2", "--timeout", "20", "--only", ",".join(ids)], cwd=ROOT,
                                capture_output=True, text=True, timeout=1800, env=_clean_environment(),
                                errors="surrogateescape")
    finally:
        while deep != class_ / "deep" / "notes":  # (pytest's clean-up would run out of recursion)
            deep.rmdir()
            deep = deep.parent
    assert graded.returncode == 0, graded.stdout + graded.stderr
    assert not RAW_CONTROL.search(graded.stdout + graded.stderr), "a student's bytes reached the terminal raw"
    rows = grades_of(out)
    assert set(rows) == set(expected), f"one row per entry: {sorted(rows)} != {sorted(expected)}"
    for student, wanted in expected.items():
        if isinstance(wanted, str):
            assert rows[student]["total"] == "0" and wanted in rows[student]["flags"], (student, rows[student])
        else:
            got = {exercise_id: float(rows[student][exercise_id]) for exercise_id in ids}
            assert got == pytest.approx(wanted), f"{student}: {got}, expected {wanted}\n{rows[student]['flags']}"
    for path in out.rglob("*"):
        if path.is_file() and path.suffix != ".png":
            text = path.read_text(encoding="utf-8", errors="surrogateescape")
            assert not RAW_CONTROL.search(text) and "\udcff" not in text, f"{path} holds a student's raw bytes"
            if path.suffix == ".md":
                assert "<script>" not in text, f"{path} would run a student's script in a Markdown viewer"
    for folder in (out / "feedback").iterdir():
        assert sorted(path.name for path in folder.iterdir()) == ["feedback.md", "results.json"], (
            "a student's folder, handed back, holds nothing of the instructor's")
    mallory = (out / "feedback" / "mallory" / "feedback.md").read_text()
    assert "raised ValueError" in mallory and "array(" not in mallory, mallory
    assert "array(" in (out / "private" / "mallory" / "check-log.txt").read_text(), "the full text stays with you"
    table = (out / "similarity.md").read_text()
    assert re.search(r"^\| 3\.5 [^|]+ \| cat, dan \|  \| \d+ \|$", table, re.MULTILINE), table
    assert re.search(r"^\| 3\.5 [^|]+ \| [^|]*ann[^|]* \| minitorch/paper/metrics\.py: gu\\_sink\\_scores \(the "
                     r"reference answer\)", table, re.MULTILINE), table
    assert "dan" not in next(line for line in table.splitlines() if "gu\\_sink\\_scores" in line), (
        "an independent honest answer is not paired with the book's")


@pytest.mark.slow
def test_ctrl_c_keeps_the_students_graded_and_writes_nothing_for_the_one_being_graded(tmp_path):
    """Ctrl-C while a student is being graded: those finished keep their grades, the one stopped half-way gets no
    results.json (a partial score kept by the next run would cost them points), and the same command again grades
    them in full."""
    subprocess.run([sys.executable, "-m", "minitorch.exercises", "student-edition", str(tmp_path / "edition")],
                   cwd=ROOT, check=True, capture_output=True, env=_clean_environment())
    class_, out = tmp_path / "class", tmp_path / "out"
    solve(shutil.copytree(tmp_path / "edition", class_ / "a_first"))
    slow = solve(shutil.copytree(tmp_path / "edition", class_ / "b_slow"))
    reference = reference_body(EXERCISES["3.1"])
    set_body(slow, "3.1", "import time\ntime.sleep(1.5)\n" + reference)  # right, but 8 tests take 12 s or more
    command = [sys.executable, "-m", "minitorch.exercises", "grade", str(class_), "--out", str(out), "--jobs", "1",
               "--timeout", "20", "--exercise-seed", str(SEED), "--only", ",".join(GRADED)]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env=_clean_environment(), start_new_session=True)
    printed = []
    for line in process.stdout:
        printed.append(line)
        if line.startswith("[1/2] a_first"):
            time.sleep(2)  # b_slow's check process is running
            os.killpg(process.pid, signal.SIGINT)  # as Ctrl-C in a terminal: the whole foreground group
            break
    rest, _ = process.communicate(timeout=300)
    output = "".join(printed) + rest
    assert process.returncode == 130 and "Interrupted: the 1 students graded in this run are kept" in output, output
    assert (out / "feedback" / "a_first" / "results.json").exists(), "the student graded before Ctrl-C keeps it"
    assert not (out / "feedback" / "b_slow" / "results.json").exists(), (
        f"the student stopped half-way must get no results.json, or the next run keeps a partial score:\n{output}")
    time.sleep(1)
    assert workers_alive() == [], "a process of the stopped student outlived the run"

    again = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900, env=_clean_environment())
    assert again.returncode == 0 and "Grading 1 of 2 students" in again.stdout, again.stdout + again.stderr
    rows = {row["student"]: row for row in csv.DictReader((out / "grades.csv").open())}
    for student in ("a_first", "b_slow"):
        check_row(rows[student], student, dict(POINTS))


def test_the_edition_tells_graders_the_grade_command_and_the_root_option_with_equals(tmp_path, capsys):
    from minitorch.exercises import __main__ as exercises_cli
    assert exercises_cli.main(["student-edition", str(tmp_path / "edition"), "--only", "3.1,3.4"]) == 0
    printed = capsys.readouterr().out
    assert "python -m minitorch.exercises grade SUBMISSIONS --out" in printed
    assert f"--edition {(tmp_path / 'edition').resolve()} --jobs 2" in printed, (
        "the printed grade command grades what this edition handed out")
    assert "--exercise-seed" not in printed, "a seed on a command line can be read by other users: the default is a " \
                                             "fresh secret one, kept in run.json"
    assert "--minitorch-root=PATH" in printed and "--minitorch-root PATH" not in printed
    manifest = json.loads((tmp_path / "edition" / "minitorch" / "exercises" / "edition.json").read_text())
    assert manifest["handed_out"] == ["3.1", "3.4"]


# ----------------------------------------------------------------------
# a term's workflow, command by command (the grading itself is faked: these check the command's choices)

ONE = ["1.2", "2.2"]  # the exercises the fake class is graded on


class FakeGrader:
    """Stands in for grading.grade_submission: writes a complete results.json (every test passed, or those of
    `failing` students failed) and records the run each student was graded with."""

    def __init__(self, failing=(), block=()):
        self.graded: list[tuple[str, int]] = []  # (student, seed)
        self.failing, self.block = set(failing), set(block)
        self.answers: dict[str, dict] = {}  # student -> what the check process recorded of their answers
        self.blocking = threading.Event()  # set once a student of `block` is being graded

    def __call__(self, entry, out_dir, run, slot=0, scratch_root=None, log_file=None, answers_file=None):
        if entry.student in self.block:  # waits like a long check process until the run is stopped
            self.blocking.set()
            run.stopped.wait(60)
            raise grading.GradingStopped(entry.student)
        self.graded.append((entry.student, run.seed))
        collected = {f"tests/test_x.py::test_{i}_{n}": i for i in run.exercise_ids for n in range(2)}
        outcome = "failed" if entry.student in self.failing else "passed"
        results = {nodeid: {"status": outcome} for nodeid in collected}
        graded = grading.results_json(entry.student, run, results, StudentFiles(handed_out=list(run.exercise_ids)),
                                      0.1, "could not be graded: " + entry.problem if entry.problem else "",
                                      collected=collected, entry=entry)
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        (Path(out_dir) / "results.json").write_text(json.dumps(graded))
        (Path(out_dir) / "feedback.md").write_text(gradebook.feedback_markdown(graded))
        if log_file is not None:  # as the real check log does, it quotes the seed
            Path(log_file).write_text(f"exercise_seed = {run.seed}\n")
            os.chmod(log_file, 0o600)
        if answers_file is not None:
            Path(answers_file).write_text(json.dumps(self.answers.get(entry.student, {})))
        return graded


@pytest.fixture
def fake_class(tmp_path, monkeypatch):
    """(SUBMISSIONS with ann, bob and cat, OUT, the fake grader, run(*options) -> (exit status, printed))."""
    from minitorch.exercises import __main__ as exercises_cli
    from minitorch.exercises.grader.trusted import class_run
    from minitorch.tools.exit_policy import run_command

    submissions = tmp_path / "submissions"
    for student in ("ann", "bob", "cat"):
        (submissions / student / "minitorch").mkdir(parents=True)
        (submissions / student / "minitorch" / "ops.py").write_text(f"# {student}'s copy\n")
    fake = FakeGrader()
    monkeypatch.setattr(class_run, "grade_submission", fake)
    monkeypatch.setattr(class_run.sandbox, "choose", lambda *arguments: sandbox.Isolation("none"))
    monkeypatch.setattr(grading, "grader_version", lambda root: "v1")
    out = tmp_path / "out"

    def run(*options):
        import contextlib
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            try:
                status = run_command(exercises_cli.main, ["grade", str(submissions), "--out", str(out), *options])
            except SystemExit as exit:
                status = exit.code
        return status, printed.getvalue()

    return submissions, out, fake, run


def grades_of(out: Path) -> dict[str, dict]:
    return {row["student"]: row for row in csv.DictReader((out / "grades.csv").open())}


def test_grade_without_a_choice_of_exercises_refuses_in_one_line(fake_class):
    submissions, out, fake, run = fake_class
    status, printed = run()
    assert status == 2 and fake.graded == [], "nothing is graded when the exercises that count are not named"
    assert len(printed.strip().splitlines()) == 1 and "--edition" in printed, printed
    assert printed.count("error:") == 1


def test_without_a_seed_grade_draws_a_fresh_128_bit_secret_kept_in_an_owner_only_run_json(fake_class, tmp_path):
    submissions, out, fake, run = fake_class
    status, printed = run("--only", ",".join(ONE))
    assert status == 0, printed
    seeds = {seed for _, seed in fake.graded}
    assert len(seeds) == 1 and min(seeds) >= 2**128, f"one fresh seed of at least 128 bits for the run: {seeds}"
    seed = seeds.pop()
    record = json.loads((out / "run.json").read_text())
    assert record["exercise_seed"] == seed and (out / "run.json").stat().st_mode & 0o777 == 0o600, (
        "run.json holds the seed: recorded there, readable by its owner only")
    for name in ("grades.csv", "summary.md", "feedback/ann/results.json", "feedback/ann/feedback.md"):
        assert str(seed) not in (out / name).read_text(), f"{name} must not name the seed"
    assert str(seed) not in printed, "the seed is never printed"
    other = tmp_path / "other"
    from minitorch.exercises import __main__ as exercises_cli
    assert exercises_cli.main(["grade", str(submissions), "--out", str(other), "--only", ",".join(ONE)]) == 0
    assert json.loads((other / "run.json").read_text())["exercise_seed"] != seed, "each new run draws its own"


def test_grade_removes_the_scratch_folder_a_killed_run_left_in_the_temporary_folder(fake_class, tmp_path,
                                                                                      monkeypatch):
    """grade killed by SIGKILL left /tmp/minitorch-grading-*/ (the stand-ins, the students' plans), and every later
    run left it too."""
    submissions, out, fake, run = fake_class
    temporary = tmp_path / "tmp"
    (temporary / "minitorch-grading-dge59dem" / "base").mkdir(parents=True)  # what the killed run left
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    status, printed = run("--only", ",".join(ONE))
    assert status == 0, printed
    assert list(temporary.iterdir()) == [], (
        f"grade should delete the scratch folder a killed run left, and its own: {list(temporary.iterdir())}")


def test_a_resume_keeps_the_recorded_settings_and_refuses_other_ones_naming_the_difference(fake_class, monkeypatch):
    submissions, out, fake, run = fake_class
    assert run("--only", ",".join(ONE))[0] == 0
    seed = json.loads((out / "run.json").read_text())["exercise_seed"]
    status, printed = run()  # the same command without options: what run.json recorded
    assert status == 0 and "Grading 0 of 3 students" in printed and "keeping 3" in printed, printed
    for options, named in [(["--exercise-seed", "5"], "another --exercise-seed than the one recorded"),
                           (["--only", "1.2"], "exercises 1.2 (recorded: 1.2, 2.2)")]:
        status, printed = run(*options)
        assert status == 2 and named in printed and "--regrade" in printed, printed
        assert str(seed) not in printed
    monkeypatch.setattr(grading, "grader_version", lambda root: "v2")  # a fix of the grader
    status, printed = run()
    assert status == 2 and "grader v2 (recorded: v1)" in printed, printed
    fake.graded.clear()
    status, printed = run("--regrade")
    assert status == 0 and sorted(student for student, _ in fake.graded) == ["ann", "bob", "cat"], printed
    assert {s for _, s in fake.graded} == {seed}, "--regrade after a fix keeps the recorded seed"
    assert "a fresh secret one" not in printed and "the one recorded in" in printed, printed
    assert json.loads((out / "run.json").read_text())["grader_version"] == "v2"


def test_a_resume_under_another_isolation_is_refused_as_other_settings_are(fake_class, monkeypatch):
    """A class graded with --isolation none, resumed without it, kept every grade and rewrote run.json and
    summary.md to say 'Isolation: bubblewrap': the record claimed a sandbox the grades were not made in."""
    submissions, out, fake, run = fake_class
    assert run("--only", ",".join(ONE))[0] == 0
    monkeypatch.setattr(sandbox, "choose", lambda *arguments: sandbox.Isolation("bubblewrap"))
    status, printed = run()
    assert status == 2 and "--isolation bubblewrap (recorded: none)" in printed and "--regrade" in printed, (
        f"a resume under another isolation than the grades were made in should be refused, naming both: {printed}")
    assert "NONE" in (out / "summary.md").read_text(), "the refused run must leave the record as it was"
    fake.graded.clear()
    assert run("--regrade")[0] == 0 and len(fake.graded) == 3, "--regrade grades everyone under the new isolation"
    assert json.loads((out / "run.json").read_text())["isolation_kind"] == "bubblewrap"


def test_a_changed_submission_is_regraded_on_resume_and_student_regrades_one(fake_class):
    submissions, out, fake, run = fake_class
    assert run("--only", ",".join(ONE))[0] == 0
    fake.graded.clear()
    (submissions / "bob" / "minitorch" / "ops.py").write_text("# bob's second try\n")
    (submissions / "cat" / "minitorch" / "__pycache__").mkdir()  # running the tests is no change
    (submissions / "cat" / "minitorch" / "__pycache__" / "ops.pyc").write_bytes(b"\0")
    status, printed = run()
    assert status == 0 and [student for student, _ in fake.graded] == ["bob"], printed
    assert "Regrading 1 whose submission changed since it was graded: bob" in printed, printed
    fake.graded.clear()
    status, printed = run("--student", "cat")
    assert status == 0 and [student for student, _ in fake.graded] == ["cat"], printed
    assert "keeping 2 already graded" in printed, printed
    assert set(grades_of(out)) == {"ann", "bob", "cat"}, "the others stay in the gradebook"
    status, printed = run("--student", "dan")
    assert status == 2 and "--student dan: no such entry" in printed, printed


def test_a_results_json_changed_in_the_handed_back_folder_never_decides_the_gradebook(fake_class, tmp_path, capsys):
    """feedback/bob/results.json edited to score 1 was kept on resume ('Grading 0'), and grades.csv gave bob the
    edited total beside a 0 for the exercise; the folder is handed back, run.json's digest is the record."""
    submissions, out, fake, run = fake_class
    fake.failing.add("bob")
    assert run("--only", ",".join(ONE))[0] == 0
    edited = out / "feedback" / "bob" / "results.json"
    edited.write_text(edited.read_text().replace('"score": 0.0', '"score": 4.0', 1))
    assert '"score": 4.0' in edited.read_text(), "the test should have raised bob's score in his handed-back file"
    roster = tmp_path / "roster.csv"
    roster.write_text("Student,ID,SIS User ID,SIS Login ID,Section,submission\nAnn,1,a,a,S,ann\nBob,2,b,b,S,bob\n"
                      "Cat,3,c,c,S,cat\n")
    from minitorch.exercises import __main__ as exercises_cli
    with pytest.raises(SystemExit):
        exercises_cli.main(["canvas-csv", str(out), "--roster", str(roster), "--assignment", "W", "--to",
                            str(tmp_path / "canvas.csv")])
    refusal = capsys.readouterr().err
    assert "the results.json of bob is not the one grade recorded" in refusal, refusal
    assert not (tmp_path / "canvas.csv").exists(), "canvas-csv must not write a grade from an edited feedback file"
    fake.graded.clear()
    status, printed = run()
    assert status == 0 and [student for student, _ in fake.graded] == ["bob"], (
        f"bob's edited results.json must be regraded, not kept: {printed}")
    assert "is not the one the grader recorded" in printed and "bob" in printed, printed
    assert grades_of(out)["bob"]["total"] == "0", f"bob failed: {grades_of(out)['bob']}"


def test_a_student_whose_private_answers_are_gone_is_graded_again_so_similarity_compares_everyone(fake_class):
    """private/ moved away, then a resume: 'Graded 0 students', and similarity.md rewritten as '0 students compared
    ... No two students share an answer' though ann and cat share one; deleting feedback/ grades everyone again."""
    submissions, out, fake, run = fake_class
    shared = {"1.2": {"fingerprint": "a" * 20, "nodes": 40}}
    fake.answers.update(ann=shared, cat=shared)
    assert run("--only", ",".join(ONE))[0] == 0
    assert "| ann, cat |" in (out / "similarity.md").read_text(), "the fake class should share an answer"
    shutil.rmtree(out / "private")
    fake.graded.clear()
    status, printed = run()
    assert status == 0 and sorted(student for student, _ in fake.graded) == ["ann", "bob", "cat"], (
        f"every student whose private answers are gone should be graded again: {printed}")
    assert "answers.json is gone" in printed, f"the run should say why it grades them again: {printed}"
    table = (out / "similarity.md").read_text()
    assert "3 students compared" in table and "| ann, cat |" in table, f"similarity.md compared too few: {table}"
    (out / "private" / "bob" / "answers.json").unlink()
    fake.graded.clear()
    status, printed = run("--student", "ann")
    assert sorted(student for student, _ in fake.graded) == ["ann", "bob"], (
        f"--student grades bob again too, whose answers are gone: {printed}")


def test_a_student_whose_entry_left_the_submissions_is_named_not_dropped_silently(fake_class):
    """bob's copy taken out of SUBMISSIONS: his row left grades.csv with no word, his feedback folder still there."""
    submissions, out, fake, run = fake_class
    assert run("--only", ",".join(ONE))[0] == 0
    shutil.rmtree(submissions / "bob")
    status, printed = run()
    assert status == 0 and "1 student(s) graded before are no longer in" in printed and "bob" in printed, (
        f"bob's leaving the gradebook should be said: {printed}")
    assert set(grades_of(out)) == {"ann", "cat"}


@pytest.mark.parametrize("field, value", [("exercise_seed", "abc"), ("exercise_seed", True), ("exercises", "1.2"),
                                          ("exercises", ["1.2", "9.9"]), ("submissions", ["ann"]), ("timeout", "5")])
def test_a_run_record_with_a_field_of_the_wrong_kind_is_not_a_run_record(fake_class, field, value):
    """run.json's exercise_seed "abc" was read as no seed, and the refusal blamed the command line for using
    'another --exercise-seed than the one recorded'."""
    submissions, out, fake, run = fake_class
    assert run("--only", ",".join(ONE))[0] == 0
    record = json.loads((out / "run.json").read_text())
    (out / "run.json").write_text(json.dumps({**record, field: value}))
    fake.graded.clear()
    status, printed = run("--only", ",".join(ONE))
    assert status == 2 and "run.json is not a run record" in printed and f"its {field} is" in printed, (
        f"a corrupt {field} should be named as run.json's, not blamed on the options: {printed}")
    assert "other settings" not in printed and fake.graded == []


def test_student_names_an_entry_graded_under_a_safe_name_by_the_entrys_own_name(fake_class):
    """--student=-rf said 'no such entry' though the entry -rf exists: it is graded as 'student -rf-submission'."""
    submissions, out, fake, run = fake_class
    (submissions / "-rf" / "minitorch").mkdir(parents=True)
    assert run("--only", ",".join(ONE))[0] == 0
    fake.graded.clear()
    status, printed = run("--student=-rf")
    assert status == 0 and [student for student, _ in fake.graded] == ["student -rf-submission"], (
        f"--student -rf should regrade the entry -rf: {printed}")


def test_student_on_a_new_gradebook_claims_no_other_student_already_graded(fake_class):
    submissions, out, fake, run = fake_class
    status, printed = run("--only", ",".join(ONE), "--student", "ann")
    assert status == 0 and "Grading 1 of 3 students" in printed and "already graded" not in printed, printed


def test_adjustments_are_applied_on_top_and_kept_across_reruns(fake_class):
    submissions, out, fake, run = fake_class
    fake.failing.add("cat")
    assert run("--only", ",".join(ONE))[0] == 0
    assert (out / "adjustments.csv").read_text() == "student,points,late_penalty,comment\n"
    maximum = sum(EXERCISES[i].points for i in ONE)
    adjustments = ("student,points,late_penalty,comment\nann,,10%,one day late\nbob,-1,,copied a docstring\n"
                   "bob,0.5,,\"good plot, though\"\ncat,2,3,manual points; late\n")
    (out / "adjustments.csv").write_text(adjustments)
    assert run("--regrade")[0] == 0
    assert (out / "adjustments.csv").read_text() == adjustments, "the grader never writes the instructor's file"
    rows = grades_of(out)
    assert (rows["ann"]["autograded"], rows["ann"]["late_penalty"]) == (str(maximum), points(0.1 * maximum))
    assert float(rows["ann"]["total"]) == pytest.approx(0.9 * maximum)
    assert float(rows["bob"]["total"]) == maximum - 0.5 and rows["bob"]["comment"] == "copied a docstring; " \
                                                                                     "good plot, though"
    assert rows["cat"]["total"] == "0", "a penalty larger than the points leaves 0, never a negative total"
    (out / "adjustments.csv").write_text("student,points,late_penalty,comment\nann,two,,\n")
    fake.graded.clear()
    status, printed = run("--regrade")
    assert status == 2 and "adjustments.csv, line 2: points 'two' is not a number" in printed, printed
    assert fake.graded == [], "a broken adjustments.csv stops the run before anyone is graded"


@pytest.mark.parametrize("rows, said", [
    ("ann,,110%,\n", r"line 2: late_penalty 110% is more than 100%"),
    ("ann,,15,\n", r"line 2: late_penalty 15 is more than the assignment's 4 points"),
    ("ann,-9,,\n", r"line 2: points -9 is more than the assignment's 4"),
    ("bob,,3,\nann,1,,\nbob,,2,\n", r"lines 2, 4 \(together, for bob\): late_penalty 5 is more than"),
], ids=["110-percent", "15-of-4-points", "minus-9-points", "two-rows-together"])
def test_an_adjustment_beyond_the_assignments_maximum_is_refused_naming_its_row(fake_class, rows, said):
    """110% and a 15-point penalty on a 4-point assignment were taken without a word."""
    submissions, out, fake, run = fake_class
    assert run("--only", ",".join(ONE))[0] == 0
    (out / "adjustments.csv").write_text("student,points,late_penalty,comment\n" + rows)
    fake.graded.clear()
    status, printed = run("--regrade")
    assert status == 2 and re.search(said, printed), printed
    assert fake.graded == [], "nothing is graded on a refused adjustments.csv"


def test_an_entry_the_grader_fails_on_gets_a_row_saying_so_the_class_goes_on_and_the_next_run_retries(
        fake_class, monkeypatch):
    from minitorch.exercises.grader.trusted import class_run
    submissions, out, fake, run = fake_class

    def fails_on_bob(entry, *arguments, **options):
        if entry.student == "bob":
            raise RecursionError("maximum recursion depth exceeded")
        return fake(entry, *arguments, **options)

    monkeypatch.setattr(class_run, "grade_submission", fails_on_bob)
    status, printed = run("--only", ",".join(ONE))
    assert status == 1 and "bob: NOT GRADED, the grader failed: RecursionError" in printed, printed
    rows = grades_of(out)
    assert set(rows) == {"ann", "bob", "cat"} and "the grader failed" in rows["bob"]["flags"], rows
    monkeypatch.setattr(class_run, "grade_submission", fake)
    fake.graded.clear()
    status, printed = run()
    assert status == 0 and [student for student, _ in fake.graded] == ["bob"], printed


def test_an_entry_moved_away_while_the_class_is_graded_gets_no_grade_so_the_next_run_grades_it(tmp_path):
    """zed/ moved away while another student was graded got 0 'could not be unpacked (FileNotFoundError ...)', a
    finished grade: put back unchanged, every later run kept the 0 as 'already graded'."""
    entry = submissions_module.Entry("zed", tmp_path / "submissions" / "zed")  # listed, then moved away
    with pytest.raises(FileNotFoundError, match="the entry was moved or deleted while it was graded"):
        grading.grade_submission(entry, tmp_path / "out" / "zed", a_run(), scratch_root=tmp_path)
    assert not (tmp_path / "out").exists(), "no grade may be written for a copy that was never read: the class's " \
                                            "run writes a row that the next run grades again"


def test_entries_named_like_the_gradebooks_files_hidden_or_deep_each_get_a_row(fake_class):
    """An entry named adjustments.csv made every run exit 1, .sneaky got no row, and a folder nested 1,200 deep
    ended grade with a RecursionError before anyone was graded."""
    submissions, out, fake, run = fake_class
    for name in ("adjustments.csv", "grades.csv", ".sneaky", "feedback"):
        (submissions / name / "minitorch").mkdir(parents=True)
    folder = submissions / "deep" / "minitorch"
    for _ in range(1200):
        folder = folder / "d"
        folder.mkdir(parents=True)
    try:
        status, printed = run("--only", ",".join(ONE))
    finally:
        while folder != submissions / "deep":  # (pytest's clean-up would run out of recursion)
            folder.rmdir()
            folder = folder.parent
    assert status == 0, printed
    rows = grades_of(out)
    assert set(rows) == {"ann", "bob", "cat", "adjustments.csv", "grades.csv", "student .sneaky-submission",
                         "feedback", "deep"}, sorted(rows)
    assert "nested more than 64 deep" in rows["deep"]["flags"] and rows["deep"]["total"] == "0"
    assert (out / "adjustments.csv").read_text() == "student,points,late_penalty,comment\n"


def test_a_gradebook_of_the_earlier_layout_is_named_so_its_check_logs_are_not_handed_back(fake_class):
    submissions, out, fake, run = fake_class
    assert run("--only", ",".join(ONE))[0] == 0
    (out / "ann").mkdir()  # as the grader wrote it before: OUT/STUDENT/results.json, check-log.txt beside it
    (out / "ann" / "results.json").write_text("{}")
    status, printed = run("--regrade")
    assert status == 0 and "holds 1 student folders of an earlier layout (ann)" in printed, printed
    assert set(grades_of(out)) == {"ann", "bob", "cat"}


def test_an_adjustment_for_a_student_not_in_the_class_stops_the_run_naming_them(fake_class):
    """A row for `summary.md` (graded as summary.md-submission) or `kim.zip` would otherwise be lost."""
    submissions, out, fake, run = fake_class
    assert run("--only", ",".join(ONE))[0] == 0
    (out / "adjustments.csv").write_text("student,points,late_penalty,comment\nann,1,,\nkim.zip,2,,\n")
    fake.graded.clear()
    status, printed = run("--regrade")
    assert status == 2 and "names student(s) kim.zip, who are not in" in printed, printed
    assert fake.graded == []


def test_a_resume_with_another_time_limit_is_refused_and_the_gradebook_is_private(fake_class):
    submissions, out, fake, run = fake_class
    assert run("--only", ",".join(ONE))[0] == 0
    assert out.stat().st_mode & 0o777 == 0o700, "the grades are the instructor's: the folder is theirs only"
    status, printed = run("--timeout", "7")
    assert status == 2 and "--timeout 7 (recorded: " in printed, printed
    assert run("--timeout", "7", "--regrade")[0] == 0
    assert json.loads((out / "run.json").read_text())["timeout"] == 7, "run.json records the new time limit"


def points(value: float) -> str:
    return gradebook.points(value)


def test_a_macosx_folder_gets_no_gradebook_row(fake_class):
    submissions, out, fake, run = fake_class
    (submissions / "__MACOSX" / "ann").mkdir(parents=True)
    assert run("--only", ",".join(ONE))[0] == 0
    assert set(grades_of(out)) == {"ann", "bob", "cat"}


@pytest.mark.parametrize("signal_name", ["SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1"])
def test_a_signal_that_would_end_grade_takes_the_ctrl_c_path(fake_class, signal_name):
    """The student being graded is stopped and gets nothing; those finished are kept; the same command resumes;
    the signal handlers are given back. (Left to their default, SIGQUIT and SIGUSR1 would kill grade at once,
    leaving its check process and the sandbox running the student's code.)"""
    submissions, out, fake, run = fake_class
    fake.block.add("cat")
    number = getattr(signal, signal_name)
    before = signal.getsignal(number)
    finished = threading.Event()

    def recorded() -> set[str]:
        try:
            return set(json.loads((out / "run.json").read_text())["submissions"])
        except (OSError, ValueError, KeyError):
            return set()

    def signal_while_cat_is_graded():  # once ann and bob are recorded (a fixed delay may land earlier, loaded)
        while not finished.wait(0.05):
            if fake.blocking.is_set() and recorded() >= {"ann", "bob"}:
                os.kill(os.getpid(), number)
                return

    sender = threading.Thread(target=signal_while_cat_is_graded)
    sender.start()
    try:
        status, printed = run("--only", ",".join(ONE), "--jobs", "1")
    finally:
        finished.set()
        sender.join()
    assert status == 128 + number and "Interrupted: the 2 students graded" in printed, (
        f"stopped by {signal_name}, grade exits with {status}, not 128 + {number} as a shell reports it:\n{printed}")
    assert f"(Stopped by {signal_name}.)" in printed, printed
    assert signal.getsignal(number) == before, "the command must give the signal's handler back"
    assert set(grades_of(out)) == {"ann", "bob"} and not (out / "feedback" / "cat" / "results.json").exists()
    fake.block.clear()
    status, printed = run()
    assert status == 0 and "Grading 1 of 3 students" in printed, printed


@pytest.mark.parametrize("regraded", ["named with --student", "its submission changed"])
def test_a_regrade_stopped_half_way_keeps_the_students_earlier_grade(fake_class, regraded):
    """Ctrl-C while cat was graded again dropped cat's earlier row from grades.csv (and run.json) while saying that
    nothing of the students being graded was written: the earlier grade stays until the new one is complete."""
    submissions, out, fake, run = fake_class
    assert run("--only", ",".join(ONE))[0] == 0
    earlier = grades_of(out)["cat"]
    fake.block.add("cat")
    if regraded == "its submission changed":
        (submissions / "cat" / "minitorch" / "ops.py").write_text("# cat's copy, changed\n")
    finished = threading.Event()

    def stop_while_cat_is_graded():
        if fake.blocking.wait(60) and not finished.is_set():
            os.kill(os.getpid(), signal.SIGINT)

    sender = threading.Thread(target=stop_while_cat_is_graded)
    sender.start()
    try:
        status, printed = run(*(["--student", "cat"] if regraded.startswith("named") else []))
    finally:
        finished.set()
        fake.blocking.set()
        sender.join()
    assert status == 130 and "Interrupted" in printed, printed
    assert grades_of(out).get("cat") == earlier, (
        f"cat's earlier grade must stay until a new one is complete; grades.csv holds {sorted(grades_of(out))}")
    assert "cat" in json.loads((out / "run.json").read_text())["results"], "run.json forgot cat's earlier grade"
    fake.block.clear()
    status, printed = run(*(["--student", "cat"] if regraded.startswith("named") else []))
    assert status == 0 and "Grading 1 of 3 students" in printed, f"the same command grades cat again:\n{printed}"


def test_copies_of_another_edition_than_the_one_graded_are_said_once_and_cost_nothing(capsys):
    """--edition of another week graded a class on the wrong exercises with no word, though every copy's own
    edition.json said which it was: a note, once; the copies still decide nothing."""
    from minitorch.exercises.grader.trusted import class_run

    rows = [{"extra_data": {"handed_out": handed_out}} for handed_out in (["1.1", "1.2"], ["1.2", "1.1"], None)]
    class_run._say_other_editions(rows, ["2.1", "2.2"], "/editions/week-2")
    printed = capsys.readouterr().out
    assert printed.count("\n") == 1 and "2 of 3 copies are of another edition" in printed and (
        "hands out 1.1, 1.2; this run grades 2.1, 2.2" in printed and "--edition /editions/week-2" in printed), printed
    class_run._say_other_editions(rows, ["1.1", "1.2"], "/editions/week-1")
    assert capsys.readouterr().out == "", "copies of the edition graded need no note, whatever their order"


def test_a_second_grade_into_a_gradebook_being_graded_is_refused(fake_class):
    """Two grade runs into one --out a second apart (a TA and the instructor) both graded the same students, each on
    a fresh seed of its own, and run.json kept one: the gradebook mixed students graded on two seeds."""
    from minitorch.exercises import __main__ as exercises_cli
    from minitorch.exercises.grader.trusted import class_run
    from minitorch.exercises.registry import ExerciseError

    submissions, out, fake, run = fake_class
    fake.block.add("cat")
    second: list[str] = []

    def grade_again_while_cat_is_graded():
        if fake.blocking.wait(120):
            arguments = exercises_cli._parser().parse_args(["grade", str(submissions), "--out", str(out), "--only",
                                                            ",".join(ONE)])
            try:
                second.append(f"graded, status {class_run.grade_class(arguments, ROOT)}")
            except ExerciseError as error:
                second.append(str(error))
        os.kill(os.getpid(), signal.SIGTERM)  # ends the first run, as the signal test does

    other = threading.Thread(target=grade_again_while_cat_is_graded)
    other.start()
    try:
        status, printed = run("--only", ",".join(ONE), "--jobs", "1")
    finally:
        other.join()
    assert status == 128 + signal.SIGTERM, printed
    assert len(second) == 1 and "is being graded by another grade run right now" in second[0], (
        f"the second run should be refused while the first holds the gradebook: {second}")
    assert sorted({seed for _, seed in fake.graded}) == [json.loads((out / "run.json").read_text())["exercise_seed"]]
    fake.block.clear()
    assert run()[0] == 0, "once the first run has ended, the gradebook is free again"


def test_the_canvas_csv_has_canvass_columns_and_each_students_total(fake_class, tmp_path):
    from minitorch.exercises import __main__ as exercises_cli
    submissions, out, fake, run = fake_class
    assert run("--only", ",".join(ONE))[0] == 0
    (out / "adjustments.csv").write_text("student,points,late_penalty,comment\nbob,-1,,\n")  # no rerun needed
    roster = tmp_path / "roster.csv"
    roster.write_text("Student,ID,SIS User ID,SIS Login ID,Section,submission\n"
                      "    Points Possible,,,,,\n"
                      "\"Lee, Ann\",101,s1,ann@u,A,ann\n\"Roe, Bob\",102,s2,bob@u,A,bob\n"
                      "\"Day, Cat\",103,s3,cat@u,B,cat\n\"Fox, Dan\",104,s4,dan@u,B,\n")
    canvas = tmp_path / "exports" / "canvas.csv"
    canvas.parent.mkdir()
    assert exercises_cli.main(["canvas-csv", str(out), "--roster", str(roster), "--assignment", "Week 3 (777)",
                               "--to", str(canvas)]) == 0
    rows = list(csv.reader(canvas.open()))
    maximum = sum(EXERCISES[i].points for i in ONE)
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Week 3 (777)"]
    assert rows[1:] == [["Lee, Ann", "101", "s1", "ann@u", "A", str(maximum)],
                        ["Roe, Bob", "102", "s2", "bob@u", "A", str(maximum - 1)],
                        ["Day, Cat", "103", "s3", "cat@u", "B", str(maximum)],
                        ["Fox, Dan", "104", "s4", "dan@u", "B", ""]], "the total with adjustments; no grade, no value"
    roster.write_text("Student,ID,SIS User ID,SIS Login ID,Section,submission\n\"Lee, Ann\",101,s1,ann@u,A,ann\n")
    with pytest.raises(SystemExit):
        exercises_cli.main(["canvas-csv", str(out), "--roster", str(roster), "--assignment", "W", "--to",
                            str(canvas)])


def test_canvas_csv_matches_zip_names_leaves_out_dropped_students_on_request_and_lists_one_per_line(
        fake_class, tmp_path):
    from minitorch.exercises import __main__ as exercises_cli
    submissions, out, fake, run = fake_class
    shutil.make_archive(str(submissions / "s017"), "zip", submissions / "cat")  # Canvas's downloads are zips
    shutil.rmtree(submissions / "cat")
    assert run("--only", ",".join(ONE))[0] == 0
    roster, canvas = tmp_path / "roster.csv", tmp_path / "canvas.csv"
    roster.write_text("Student,ID,SIS User ID,SIS Login ID,Section,submission\n"
                      "\"Lee, Ann\",101,s1,ann@u,A,ann\n\"Day, Cat\",103,s3,cat@u,B,s017.zip\n"
                      "\"Fox, Dan\",104,s4,dan@u,B,\n\"Roe, Eve\",105,s5,eve@u,B,eve\n")
    command = ["canvas-csv", str(out), "--roster", str(roster), "--assignment", "W", "--to", str(canvas)]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed), pytest.raises(SystemExit):
        exercises_cli.main(command)  # bob, graded, has no roster row: his grade would be lost
    assert "no roster row for 1 graded submission(s):\n  bob\n" in printed.getvalue(), printed.getvalue()
    assert "--leave-out-unlisted" in printed.getvalue() and not canvas.exists()
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert exercises_cli.main([*command, "--leave-out-unlisted"]) == 0
    maximum = str(sum(EXERCISES[i].points for i in ONE))
    assert [row[-1] for row in csv.reader(canvas.open())] == ["W", maximum, maximum, "", ""], (
        "s017.zip in the roster is the entry s017.zip, graded as s017")
    assert stat.S_IMODE(canvas.stat().st_mode) == 0o600, "the CSV holds every grade: its owner's only, as run.json"
    assert ("1 graded submissions have no roster row and were left out (--leave-out-unlisted):\n    bob\n"
            in printed.getvalue()), printed.getvalue()
    assert ("2 students of the roster have no submission; their cells are empty:\n    Fox, Dan\n    Roe, Eve\n"
            in printed.getvalue()), "one per line: 'Last, First' names joined by ', ' cannot be read"


def test_canvas_csv_refuses_a_roster_student_whose_submission_was_found_but_not_graded(fake_class, tmp_path):
    """grade --student ann into a new OUT, then canvas-csv with a roster of ann and bob: bob's cell was empty, and
    the message said 'students of the roster have no submission', though bob had handed one in."""
    from minitorch.exercises import __main__ as exercises_cli
    submissions, out, fake, run = fake_class
    assert run("--only", ",".join(ONE), "--student", "ann")[0] == 0
    roster, canvas = tmp_path / "roster.csv", tmp_path / "canvas.csv"
    roster.write_text("Student,ID,SIS User ID,SIS Login ID,Section,submission\n"
                      "\"Lee, Ann\",101,s1,ann@u,A,ann\n\"Bob, B\",102,s2,bob@u,A,bob\n")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed), pytest.raises(SystemExit):
        exercises_cli.main(["canvas-csv", str(out), "--roster", str(roster), "--assignment", "W", "--to",
                            str(canvas)])
    assert "Bob, B handed in a submission that is not graded yet" in printed.getvalue() and not canvas.exists(), (
        f"bob's submission is in SUBMISSIONS but not graded: canvas-csv must say so, not give him an empty cell as "
        f"if he handed in nothing: {printed.getvalue()}")


def test_a_name_typed_in_another_unicode_form_than_the_entrys_names_that_student_everywhere(fake_class, tmp_path):
    """An entry macOS named with a decomposed é (NFD) was not the josé typed (NFC) in adjustments.csv, after
    --student or in a roster: each was refused, or left the graded student an empty cell, naming a name that looks
    the same."""
    from minitorch.exercises import __main__ as exercises_cli
    submissions, out, fake, run = fake_class
    entry, typed = "jose\u0301", "jos\u00e9"
    shutil.copytree(submissions / "ann", submissions / entry)
    assert run("--only", ",".join(ONE))[0] == 0
    (out / "adjustments.csv").write_text(f"student,points,late_penalty,comment\n{typed},1,,\n", encoding="utf-8")
    status, printed = run("--only", ",".join(ONE), "--student", typed)
    assert status == 0, f"--student and adjustments.csv should name the entry whatever the Unicode form: {printed}"
    maximum = sum(EXERCISES[i].points for i in ONE)
    assert grades_of(out)[entry]["total"] == str(maximum + 1), "the adjustment typed in NFC belongs to the entry"
    assert (submissions / entry).is_dir() and not (submissions / typed).exists(), "the entry on disk is never renamed"
    roster, canvas = tmp_path / "roster.csv", tmp_path / "canvas.csv"
    roster.write_text("Student,ID,SIS User ID,SIS Login ID,Section,submission\n\"J, Jose\",301,,,S1,"
                      f"{typed}\nAnn A,302,,,S1,ann\nBob B,303,,,S1,bob\nCat C,304,,,S1,cat\n", encoding="utf-8")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        status = exercises_cli.main(["canvas-csv", str(out), "--roster", str(roster), "--assignment", "W", "--to",
                                     str(canvas), "--leave-out-unlisted"])
    assert status == 0 and "have no submission" not in printed.getvalue(), printed.getvalue()
    assert [row[-1] for row in csv.reader(canvas.open())][1] == str(maximum + 1), (
        "the roster's josé (NFC) should get the grade of the entry josé (NFD)")


@pytest.mark.parametrize("roster_rows, adjustments, refusal", [
    ('ann,Ann,1\nbob,"Bob,2\n', "", r"roster.csv, line 3: not a well-formed CSV .*a quote left open"),
    ("ann,Ann,1\nbob,Bob\n", "", r"the row of 'Bob' has fewer cells than the header's 3 columns"),
    ("ann,Ann,1\nbob,Bob,2\ncat,Cat,3\n", "nobody,1,,\n", r"names student\(s\) nobody, who have no grade"),
    ("ann,Ann,1\nbob,Ann,1\ncat,Cat,3\n", "", r"ID '1' is in two rows \('Ann' and 'Ann'\)"),  # two grades for one ID
], ids=["an-open-quote", "a-row-cut-short", "an-adjustment-for-nobody", "one-student-in-two-rows"])
def test_canvas_csv_refuses_a_roster_or_adjustments_that_would_lose_a_grade(fake_class, tmp_path, capsys,
                                                                           roster_rows, adjustments, refusal):
    """An open quote would swallow the rest of the roster into one student's name, written with no ID, which
    Canvas cannot match; an adjustment for a misspelt name would be dropped (grade refuses the same file)."""
    from minitorch.exercises import __main__ as exercises_cli
    submissions, out, fake, run = fake_class
    assert run("--only", ",".join(ONE))[0] == 0
    (out / "adjustments.csv").write_text("student,points,late_penalty,comment\n" + adjustments)
    (tmp_path / "roster.csv").write_text("submission,Student,ID\n" + roster_rows)
    canvas = tmp_path / "canvas.csv"
    capsys.readouterr()
    with pytest.raises(SystemExit):
        exercises_cli.main(["canvas-csv", str(out), "--roster", str(tmp_path / "roster.csv"), "--assignment", "W",
                            "--to", str(canvas)])
    error = capsys.readouterr().err
    assert re.search(refusal, error), error
    assert not canvas.exists(), "nothing may be written"


@pytest.mark.parametrize("raised, said", [
    (OSError(errno.EFBIG, "File too large"), r"File too large; .*limit on a file's size \(ulimit -f\)"),
    (OSError(errno.ENOSPC, "No space left on device", "/g/ann/results.json"),
     r"/g/ann/results.json: No space left on device; the disk is full"),
], ids=["ulimit-f", "disk-full"])
def test_a_student_the_machine_stops_from_grading_is_named_with_the_reason_and_what_to_do(fake_class, monkeypatch,
                                                                                          raised, said):
    from minitorch.exercises.grader.trusted import class_run
    submissions, out, fake, run = fake_class

    def fails(entry, *arguments, **options):
        raise raised

    monkeypatch.setattr(class_run, "grade_submission", fails)
    status, printed = run("--only", ",".join(ONE))
    assert status == 1 and re.search(rf"ann: NOT GRADED, the grader failed: {said}", printed), printed


def test_the_check_log_which_quotes_the_seed_is_readable_by_its_owner_only(fake_class):
    submissions, out, fake, run = fake_class
    assert run("--only", ",".join(ONE))[0] == 0
    modes = {path.parent.name: path.stat().st_mode & 0o777 for path in out.glob("private/*/check-log.txt")}
    assert modes == dict.fromkeys(["ann", "bob", "cat"], 0o600), modes
    assert {path.name for path in out.glob("feedback/*/*")} == {"feedback.md", "results.json"}, (
        "a student's folder, handed back, holds nothing of the instructor's")


def test_the_seed_reaches_the_check_process_in_its_environment_never_on_its_command_line(tmp_path, monkeypatch):
    """Any user can read /proc/PID/cmdline; /proc/PID/environ only the same user (and root)."""
    seen = {}

    class Process:  # stands in for the check process: records how it was started, ends at once
        pid = -1

        def __init__(self, command, env=None, **options):
            seen.update(command=command, env=env)

        def wait(self, timeout=None):
            return 0

        def poll(self):
            return 0

    monkeypatch.setattr(grading.subprocess, "Popen", Process)
    run = a_run()
    run.seed = 2**128 + 424242
    (tmp_path / "private").mkdir()
    with contextlib.suppress(grading.CheckProcessFailed):  # (the stand-in ran no test: the grader's failure)
        grading._check(run, StudentFiles(), tmp_path)
    assert str(run.seed) not in " ".join(map(str, seen["command"])), "the seed must not be on a command line"
    assert seen["env"]["MINITORCH_EXERCISE_SEED"] == str(run.seed)


@pytest.mark.slow
def test_a_term_graded_for_real_resumes_regrades_a_resubmission_and_keeps_the_adjustments(tmp_path):
    """The real grader (honest copies, so no sandbox is needed): a fresh seed, a resubmission found by its
    content and graded on the same seed, adjustments kept, and the Canvas CSV."""
    edition, class_, out = tmp_path / "edition", tmp_path / "class", tmp_path / "out"
    subprocess.run([sys.executable, "-m", "minitorch.exercises", "student-edition", str(edition), "--only", "3.1"],
                   cwd=ROOT, check=True, capture_output=True, env=_clean_environment())
    solve(shutil.copytree(edition, class_ / "ann"), "3.1")
    shutil.copytree(edition, class_ / "bob")
    command = [sys.executable, "-m", "minitorch.exercises", "grade", str(class_), "--out", str(out), "--edition",
               str(edition), "--isolation", "none"]
    first = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900, env=_clean_environment())
    assert first.returncode == 0, first.stdout + first.stderr
    seed = json.loads((out / "run.json").read_text())["exercise_seed"]
    assert seed >= 2**128 and str(seed) not in first.stdout
    assert {s: row["3.1"] for s, row in grades_of(out).items()} == {"ann": str(POINTS_31), "bob": "0"}
    (out / "adjustments.csv").write_text("student,points,late_penalty,comment\nbob,,50%,late\nann,1,,bonus\n")
    solve(class_ / "bob", "3.1")  # bob hands in his solution
    second = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900, env=_clean_environment())
    assert second.returncode == 0 and "Regrading 1 whose submission changed since it was graded: bob" in (
        second.stdout), second.stdout + second.stderr
    assert json.loads((out / "run.json").read_text())["exercise_seed"] == seed, "a resume keeps the run's seed"
    rows = grades_of(out)
    assert (rows["bob"]["autograded"], float(rows["bob"]["total"])) == (str(POINTS_31), POINTS_31 / 2)
    assert float(rows["ann"]["total"]) == POINTS_31 + 1
    assert (out / "adjustments.csv").read_text().endswith("ann,1,,bonus\n")


POINTS_31 = EXERCISES["3.1"].points


@pytest.mark.parametrize("kind, message, shown", [
    ("timed out", "timed out after 5 s (the test's time limit)", "timed out: the code did not return within 5 s"),
    ("timed out", "not run: 2 tests of exercise 1.3 already timed out (timed out after 5 s (the test's time limit))",
     "timed out: not run, as earlier tests of this exercise timed out (after 5 s)"),
    ("crashed", "the worker died by SIGKILL while x = [secret, inputs]", "crashed: the process died by SIGKILL"),
    ("failed", "MemoryError", "raised MemoryError"),
    ("failed", "MemoryError: Unable to allocate 3.35 GiB", "raised MemoryError"),
    ("crashed", "crashed while defining causal_mask: FileNotFoundError: [Errno 2] No such file: '/x/leak.txt'",
     "crashed: defining the function raised FileNotFoundError (a default value on its def line ran when it was "
     "defined)"),
    ("crashed", "crashed while defining causal_mask: Leak: /x/leak.txt",
     "crashed: defining the function raised an exception of a class of its own (a default value on its def line "
     "ran when it was defined)"),
], ids=["timed-out", "not-run-after-timeouts", "signal", "an-error-without-a-message", "an-error-with-a-message",
        "a-default-value-raised", "a-default-value-raised-its-own-class"])
def test_a_failed_test_says_its_kind_and_its_time_limit_and_nothing_of_the_graders_message(kind, message, shown):
    """What a student reads of a failure is fixed words plus a number of seconds or a signal's name: the time limit
    stays visible on the tests not run after two timeouts, and nothing else of the message (which may quote the
    hidden inputs) is copied."""
    from minitorch.exercises.grader.trusted.student_text import what_happened

    assert what_happened(kind, message, "1.3") == shown, f"a {kind} test saying {message!r} should read {shown!r}"
