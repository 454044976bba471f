"""Specification of the class grader (minitorch/exercises/grading.py, gradebook.py, grade_command.py).

Fast tests graft, report and write the gradebook on tiny synthetic projects, and check the conftest's
per-test timeout, manifest and --scoreboard-json options on the tiny project of test_exercises.py.
The slow test grades a class of 9 copies of this book's student edition, broken in the ways an
instructor meets, and checks every row, the Gradescope fields, and that this checkout is untouched.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import minitorch
from minitorch.exercises import edition as edition_module
from minitorch.exercises import grading
from minitorch.exercises import gradebook
from minitorch.exercises.gradebook import grades_csv
from minitorch.exercises.registry import EXERCISES

from test_exercises import _clean_environment, run_pytest, tiny_project

ROOT = Path(minitorch.__file__).resolve().parent.parent

GRADER_OPS = '''\
def double(x):
    # BEGIN EXERCISE 1.1
    return 2 * x
    # END EXERCISE 1.1


def triple(x):
    # BEGIN EXERCISE 1.2
    return 3 * x
    # END EXERCISE 1.2


def helper(x):
    return x
'''


def tiny_grader(folder: Path) -> Path:
    """A grader's project: minitorch/ops.py with regions 1.1 and 1.2, and the real registry."""
    (folder / "minitorch" / "exercises").mkdir(parents=True)
    (folder / "tests").mkdir()
    (folder / "minitorch" / "__init__.py").write_text("")
    (folder / "minitorch" / "ops.py").write_text(GRADER_OPS)
    shutil.copy(ROOT / "minitorch" / "exercises" / "registry.py", folder / "minitorch" / "exercises" / "registry.py")
    (folder / "tests" / "test_ops.py").write_text("def test_nothing():\n    pass\n")
    return folder


def student_copy(grader: Path, folder: Path, ops: str) -> Path:
    shutil.copytree(grader, folder)
    (folder / "minitorch" / "ops.py").write_text(ops)
    return folder


@pytest.fixture
def grader(tmp_path, monkeypatch):
    root = tiny_grader(tmp_path / "grader")
    import minitorch.exercises.registry as registry
    monkeypatch.setattr(registry, "EXERCISES", {"1.1": ("doubling", 1), "1.2": ("tripling", 2)})
    return root


def test_grafting_takes_only_the_students_regions_and_reports_edits_outside_them(grader, tmp_path):
    ops = GRADER_OPS.replace("return 2 * x", "return x + x").replace("return x\n", "return True  # sneaky\n")
    student = student_copy(grader, tmp_path / "student", ops)
    (student / "minitorch" / "extra.py").write_text("x = 1\n")
    report = grading.graft_submission(student, grader, tmp_path / "graded", ["1.1"])
    graded = (tmp_path / "graded" / "minitorch" / "ops.py").read_text()
    assert "return x + x" in graded, "the student's region 1.1 should be grafted in"
    assert "return True" not in graded and "def helper(x):\n    return x\n" in graded, (
        "code outside the regions must be the grader's")
    assert "return 3 * x" in graded, "a region not graded keeps the grader's reference solution"
    assert report.grafted == ["1.1"] and not report.not_compiling and not report.not_found
    assert report.edited_outside == {"minitorch/ops.py": "+1 -1 lines", "minitorch/extra.py": "added"}
    assert not (tmp_path / "graded" / "minitorch" / "extra.py").exists()


def test_only_the_students_edits_are_flagged_not_the_graders_changes_since_the_edition(grader, tmp_path):
    import minitorch.exercises.registry as registry
    edition_module.make_student_edition(tmp_path / "student", registry.load_exercises(grader)[:1], grader)
    student = tmp_path / "student"
    ops = grader / "minitorch" / "ops.py"
    ops.write_text(ops.read_text() + "\n\ndef added_by_the_grader_later():\n    pass\n")
    (student / "tests" / "test_ops.py").write_text("def test_nothing():\n    assert True\n")
    report = grading.graft_submission(student, grader, tmp_path / "graded", ["1.1"])
    assert report.edited_outside == {"tests/test_ops.py": "+1 -1 lines"}, report.edited_outside


def test_a_region_that_does_not_compile_fails_alone_with_the_compilers_message(grader, tmp_path):
    ops = GRADER_OPS.replace("return 2 * x", "return (2 * x").replace("return 3 * x", "return 4 * x")
    student = student_copy(grader, tmp_path / "student", ops)
    report = grading.graft_submission(student, grader, tmp_path / "graded", ["1.1", "1.2"])
    assert list(report.not_compiling) == ["1.1"] and "does not compile" in report.not_compiling["1.1"]
    assert "never closed" in report.not_compiling["1.1"] or "was never closed" in report.not_compiling["1.1"] or \
        "line 3" in report.not_compiling["1.1"], report.not_compiling
    assert report.grafted == ["1.2"]
    namespace = {}
    exec(compile((tmp_path / "graded" / "minitorch" / "ops.py").read_text(), "ops.py", "exec"), namespace)
    assert namespace["triple"](1) == 4, "the other exercise of the same file is still graded"
    with pytest.raises(SyntaxError, match="does not compile"):
        namespace["double"](1)


def test_a_missing_region_or_file_fails_that_exercise_as_region_not_found(grader, tmp_path):
    ops = GRADER_OPS.replace("    # BEGIN EXERCISE 1.2\n", "").replace("    # END EXERCISE 1.2\n", "")
    student = student_copy(grader, tmp_path / "student", ops)
    report = grading.graft_submission(student, grader, tmp_path / "graded", ["1.1", "1.2"])
    assert report.grafted == ["1.1"] and "region not found" in report.not_found["1.2"]
    (student / "minitorch" / "ops.py").unlink()
    report = grading.graft_submission(student, grader, tmp_path / "graded-2", ["1.1"])
    assert "is missing" in report.not_found["1.1"]


def test_a_zip_with_one_top_folder_is_unpacked_and_found(grader, tmp_path):
    student = student_copy(grader, tmp_path / "alice", GRADER_OPS)
    archive = tmp_path / "alice.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for path in student.rglob("*"):
            zipped.write(path, Path("alice-copy") / path.relative_to(student))
    report = grading.graft_submission(archive, grader, tmp_path / "graded", ["1.1"])
    assert report.grafted == ["1.1"] and report.edited_outside == {}



def test_a_copy_holding_a_symbolic_link_is_refused_not_followed(grader, tmp_path):
    student = student_copy(grader, tmp_path / "mallory", GRADER_OPS.replace("return 2 * x", "return 0"))
    (student / "minitorch" / "ops.py").unlink()
    (student / "minitorch" / "ops.py").symlink_to(grader / "minitorch" / "ops.py")  # the grader's own solutions
    with pytest.raises(grading.ExerciseError, match=r"symbolic link.*\(minitorch/ops\.py\)") as refused:
        grading.graft_submission(student, grader, tmp_path / "graded", ["1.1"])
    assert str(grader) not in str(refused.value), (
        "the reason, which the student reads, must not show the grader's files")


def test_a_zip_that_would_unpack_too_large_is_refused_before_unpacking(grader, tmp_path, monkeypatch):
    archive = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        zipped.writestr("bomb/minitorch/ops.py", GRADER_OPS)
        zipped.writestr("bomb/zeros.bin", bytes(2 << 20))  # 2 MiB that compress to a few KiB
    monkeypatch.setattr(grading, "MAX_UNPACKED_BYTES", 1 << 20)
    with pytest.raises(grading.ExerciseError, match=r"would unpack to 2 files and 2 MiB"):
        grading.graft_submission(archive, grader, tmp_path / "graded", ["1.1"])
    assert not (tmp_path / "graded").exists(), "nothing may be unpacked or copied for a refused .zip"


def test_a_copy_that_is_itself_a_link_is_refused(grader, tmp_path):
    (tmp_path / "mallory").mkdir()
    (tmp_path / "mallory" / "my-copy").symlink_to(grader, target_is_directory=True)  # the grader's own book
    with pytest.raises(grading.ExerciseError, match=r"symbolic link.*\(my-copy\)"):
        grading.graft_submission(tmp_path / "mallory", grader, tmp_path / "graded", ["1.1"])
    (tmp_path / "eve").symlink_to(grader, target_is_directory=True)
    with pytest.raises(grading.ExerciseError, match=r"symbolic link.*\(eve\)"):
        grading.graft_submission(tmp_path / "eve", grader, tmp_path / "graded", ["1.1"])


def test_a_syntax_error_is_reported_at_the_line_of_the_students_file(grader, tmp_path):
    ops = "# my notes\n" * 10 + GRADER_OPS.replace("return 2 * x", "x = 1\n    return (2 * x")
    student = student_copy(grader, tmp_path / "student", ops)
    report = grading.graft_submission(student, grader, tmp_path / "graded", ["1.1"])
    wrong_line = 1 + ops.splitlines().index("    return (2 * x")
    assert f"line {wrong_line} of ops.py" in report.not_compiling["1.1"], (
        f"the student's unclosed bracket is on line {wrong_line} of their ops.py: {report.not_compiling['1.1']}")


def test_a_copy_that_could_not_be_graded_says_why_everywhere_and_stays_out_of_the_class_statistics():
    problem = "could not be graded: lee.zip is not a valid .zip: File is not a zip file"
    lee = grading.results_json("lee", {"tests/test_ops.py::test_a": "1.1"}, {}, grading.GraftReport(),
                               exercise_ids=["1.1"], seed=0, version="v", elapsed=0.0, problem=problem)
    ann = grading.results_json("ann", {"tests/test_ops.py::test_a": "1.1"},
                               {"tests/test_ops.py::test_a": {"status": "passed"}},
                               grading.GraftReport(handed_out=["1.1"]), exercise_ids=["1.1"], seed=0, version="v",
                               elapsed=0.0)
    assert lee["extra_data"]["flags"] == [problem] and ann["extra_data"]["flags"] == []
    assert problem in grades_csv([lee], ["1.1"]), "the gradebook must say why a copy scored 0 without running"
    statistics = gradebook.exercise_statistics([ann, lee], ["1.1"])["1.1"]
    assert statistics["full_marks"] == 1.0 and sum(statistics["failures"].values()) == 0, (
        f"a copy that never ran must not count as failed tests: {statistics}")
    summary = gradebook.summary_markdown([ann, lee], ["1.1"], {"graded_at": "now", "exercise_seed": 0, "timeout": 1,
                                                               "grader_version": "v"})
    assert "1 copy could not be graded (lee" in summary and problem in summary, summary
    assert "over the 1 copy graded: mean" in summary and "lowest 1.00" in summary, (
        f"the class total must average the copies graded, not count the others as 0: {summary}")
    feedback = gradebook.feedback_markdown(lee)
    assert feedback.count(problem) == 1 and "What failed" not in feedback and "| exercise |" not in feedback, feedback


def test_a_copy_without_the_editions_manifest_is_flagged():
    graded = grading.results_json("max", {}, {}, grading.GraftReport(handed_out=None), exercise_ids=[], seed=0,
                                  version="v", elapsed=0.0)
    assert any("not a student edition" in flag for flag in graded["extra_data"]["flags"]), graded["extra_data"]


CHAINED_OPS = GRADER_OPS.replace("return 3 * x", "return double(double(x))")  # 1.2 calls 1.1's code
CHAINED_TESTS = """\
import pytest
import minitorch


@pytest.mark.exercise("1.1")
def test_double_doubles():
    assert minitorch.double(2) == 4, "double(2) should be 4"


@pytest.mark.exercise("1.2")
@pytest.mark.parametrize("x", [1, 2])
def test_quadruple_quadruples(x):
    assert minitorch.quadruple(x) == 4 * x, "quadruple is wrong"
"""


def test_an_exercise_is_graded_on_its_own_code_not_on_a_bug_in_another_it_calls(grader, tmp_path):
    (grader / "minitorch" / "ops.py").write_text(CHAINED_OPS.replace("def triple", "def quadruple"))
    (grader / "minitorch" / "__init__.py").write_text("from minitorch.ops import double, quadruple\n")
    (grader / "tests" / "test_ops.py").write_text(CHAINED_TESTS)
    shutil.copy(Path(__file__).parents[1] / "conftest.py", grader / "tests" / "conftest.py")
    wrong_double = (grader / "minitorch" / "ops.py").read_text().replace("return 2 * x", "return 3 * x")
    student = student_copy(grader, tmp_path / "student", wrong_double)
    graded = grading.grade_submission(student, tmp_path / "out", exercise_ids=["1.1", "1.2"], seed=0, timeout=30,
                                      grader_root=grader)
    earned = {i: row["earned"] for i, row in graded["extra_data"]["exercises"].items()}
    assert earned == {"1.1": 0.0, "1.2": grading.EXERCISES["1.2"][1]}, (
        f"a correct 1.2 must earn its points although the student's own 1.1, which it calls, is wrong: {earned}")
    notes = [test["output"] for test in graded["tests"] if test["number"] == "1.2"]
    assert all("with the grader's solutions of the other exercises" in note and "quadruple is wrong" in note
               for note in notes), f"each such test should say how it failed with all of the student's code: {notes}"
    feedback = (tmp_path / "out" / "feedback.md").read_text()
    assert "## Passed on their own" in feedback and "test_quadruple_quadruples[1]" in feedback, feedback


def test_what_is_run_again_alone_failures_that_an_earlier_exercise_may_have_caused():
    collected = {"a1": "1.1", "a2": "1.1", "b1": "1.2", "b2": "1.2", "c1": "1.3"}
    hung_in_test = {"status": "failed", "message": "TimeoutError: timed out after 1 s (--test-timeout)"}

    def again(statuses: dict, grafted=("1.1", "1.2", "1.3"), stubs=()) -> dict:
        results = {n: s if isinstance(s, dict) else {"status": s} for n, s in statuses.items()}
        results = {**{n: {"status": "passed"} for n in collected}, **results}
        report = grading.GraftReport(grafted=list(grafted), stubs=list(stubs))
        return grading.to_regrade_alone(collected, results, report)

    assert again({"a1": "failed", "b1": "blocked"}) == {"1.2": ["b1"]}, (
        "a failure below an earlier exercise that failed is run again; the earliest failure is its own")
    assert again({"b1": "failed"}) == {}, "with every earlier exercise passing, a failure is the exercise's own"
    assert again({"a1": "not attempted", "a2": "blocked"}) == {}, "an exercise whose own stub raised is not run again"
    assert again({"a1": "timed out", "a2": "timed out"}) == {}, "a hang in the earliest exercise is its own"
    assert again({"a1": "crashed", "b1": "crashed", "c1": hung_in_test}) == {"1.2": ["b1"], "1.3": ["c1"]}, (
        "hangs and crashes below an earlier one may be its fault; a hang caught by the test's alarm counts too")
    assert again({"a1": "failed", "b1": hung_in_test}) == {}, (
        "a hang is run again only below an earlier hang or crash: it would cost another timeout")
    assert again({"a1": "failed", "b1": "failed"}, grafted=["1.2"]) == {}, (
        "with one region grafted, the others are already the grader's")
    assert again({"a1": "blocked", "a2": "blocked", "b1": "failed"}, stubs=["1.1"]) == {"1.2": ["b1"]}, (
        "a region still holding the edition's stub is not run again, even when its tests were all blocked")


def test_a_region_left_as_the_editions_stub_is_recognised(grader, tmp_path):
    import minitorch.exercises.registry as registry
    edition_module.make_student_edition(tmp_path / "edition", registry.load_exercises(grader), grader)
    ops = tmp_path / "edition" / "minitorch" / "ops.py"
    ops.write_text(ops.read_text().replace("    # END EXERCISE 1.2", "    # my first try:\n    # END EXERCISE 1.2"))
    report = grading.graft_submission(tmp_path / "edition", grader, tmp_path / "graded", ["1.1", "1.2"])
    assert sorted(report.stubs) == ["1.1", "1.2"], f"both regions still raise the edition's stub: {report}"
    ops.write_text(ops.read_text().replace("    # my first try:\n", "    y = 2\n"))
    report = grading.graft_submission(tmp_path / "edition", grader, tmp_path / "graded-2", ["1.1", "1.2"])
    assert report.stubs == ["1.1"], f"code added to region 1.2 makes it an attempt: {report}"


def fake_results(student: str, earned: dict, flags=()) -> dict:
    return {"score": sum(earned.values()), "tests": [],
            "extra_data": {"student": student, "max_score": 3, "flags": list(flags), "complete": True,
                           "exercises": {i: {"earned": e} for i, e in earned.items()}}}


def test_grades_csv_has_one_column_per_exercise_and_the_flags():
    text = grades_csv([fake_results("ann", {"3.1": 1, "3.2": 0.5}, ["timed out"]),
                       fake_results("bob", {"3.1": 0, "3.2": 2})], ["3.2", "3.1"])
    rows = list(csv.reader(io.StringIO(text)))
    assert rows == [["student", "total", "max_total", "3.1", "3.2", "flags"],
                    ["ann", "1.50", "3", "1.00", "0.50", "timed out"],
                    ["bob", "2.00", "3", "0.00", "2.00", ""]]


@pytest.mark.parametrize("at_import, kind, message", [
    ("import os\nos._exit(3)\n", "crashed", "exited with status 3 before running this test"),
    ("import time\ntime.sleep(600)\n", "timed out", "timed out after 1 s"),
])
def test_a_child_that_dies_or_hangs_before_any_test_fails_every_test_with_the_reason(
        tmp_path, monkeypatch, at_import, kind, message):
    project = tiny_project(tmp_path / "tiny", solved=True)
    init = project / "minitorch" / "__init__.py"
    init.write_text(at_import + init.read_text())
    (tmp_path / "work").mkdir()
    monkeypatch.setattr(grading, "NO_PROGRESS_MARGIN", 1.0)
    expected = {"tests/test_tiny.py::test_double_doubles": "1.1"}
    collected, results = grading.run_tests(project, ["1.1"], seed=5, timeout=1, work=tmp_path / "work",
                                           expected=expected)
    assert collected == expected
    result = results["tests/test_tiny.py::test_double_doubles"]
    assert result["status"] == kind and message in result["message"], result


def test_a_test_hung_where_the_alarm_cannot_reach_is_stopped_soon_after_its_timeout(tmp_path, monkeypatch):
    project = tiny_project(tmp_path / "tiny", solved=True)
    tests = project / "tests" / "test_tiny.py"
    hang = "    import signal, time; signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM}); time.sleep(600)\n"
    tests.write_text(tests.read_text().replace("def test_needs_double():\n", "def test_needs_double():\n" + hang))
    (tmp_path / "work").mkdir()
    monkeypatch.setattr(grading, "HUNG_TEST_MARGIN", 0.5)  # the start-up margin stays a minute
    collected, results = grading.run_tests(project, ["1.1", "1.2"], seed=5, timeout=1, work=tmp_path / "work")
    result = results["tests/test_tiny.py::test_needs_double"]
    assert result["status"] == "timed out" and "no progress for 1.5 s" in result["message"], (
        f"a running test that ignores its alarm must be stopped after timeout + HUNG_TEST_MARGIN, not after "
        f"the minute allowed for starting up: {result}")


def test_a_child_that_crashes_mid_run_fails_that_test_and_a_new_child_runs_the_rest(tmp_path):
    project = tiny_project(tmp_path / "tiny", solved=True)
    tests = project / "tests" / "test_tiny.py"
    tests.write_text(tests.read_text().replace("def test_needs_double():\n",
                                               "def test_needs_double():\n    import os; os._exit(0)\n"))
    (tmp_path / "work").mkdir()
    collected, results = grading.run_tests(project, ["1.1", "1.2"], seed=5, timeout=30, work=tmp_path / "work")
    status = {nodeid.split("::")[-1]: result["status"] for nodeid, result in results.items()}
    assert status == {"test_double_doubles": "passed", "test_needs_double": "crashed",
                      "test_triple_triples": "passed", "test_triple_is_four": "failed"}, results
    assert "exited with status 0 during this test" in results["tests/test_tiny.py::test_needs_double"]["message"]


def test_after_two_crashes_in_one_exercise_its_other_tests_fail_unrun(tmp_path):
    project = tiny_project(tmp_path / "tiny", solved=True)
    tests = project / "tests" / "test_tiny.py"
    tests.write_text(tests.read_text() + '\n\n@pytest.mark.exercise("1.2")\n@pytest.mark.parametrize("n", range(5))\n'
                                         'def test_exits(n):\n    import os; os._exit(0)\n')
    (tmp_path / "work").mkdir()
    collected, results = grading.run_tests(project, ["1.2"], seed=5, timeout=30, work=tmp_path / "work")
    exits = [results[f"tests/test_tiny.py::test_exits[{n}]"] for n in range(5)]
    assert [result["status"] for result in exits] == ["crashed"] * 5
    assert ["not run" in result["message"] for result in exits] == [False, False, True, True, True]
    assert len(list((tmp_path / "work").glob("output-*.txt"))) == 2, "no third child for the tests given up on"
    assert results["tests/test_tiny.py::test_triple_triples"]["status"] == "passed"


# ----------------------------------------------------------------------
# the conftest: per-test timeout, the manifest, --scoreboard-json's folder

HANGING_TEST = """
import pytest

@pytest.mark.exercise("1.2")
@pytest.mark.parametrize("n", [1, 2, 3])
def test_hangs(n):
    while True:
        pass
"""


def test_a_hung_test_fails_as_timed_out_and_the_scoreboard_still_prints(tmp_path):
    project = tiny_project(tmp_path / "tiny", solved=True)
    (project / "tests" / "test_hang.py").write_text(HANGING_TEST)
    completed = run_pytest(project, "--test-timeout=1", "-m", "ex1_2", "tests/test_hang.py", "-k", "1")
    assert "timed out after 1 s" in completed.stdout, completed.stdout[-2000:]
    assert "exercise scoreboard" in completed.stdout and completed.returncode == 1


def test_the_grader_stops_waiting_for_an_exercise_after_two_timeouts(tmp_path):
    project = tiny_project(tmp_path / "tiny", solved=True)
    (project / "tests" / "test_hang.py").write_text(HANGING_TEST)
    completed = run_pytest(project, "--test-timeout=1", "tests/test_hang.py", MINITORCH_TIMEOUTS_PER_EXERCISE="2")
    assert completed.stdout.count("TimeoutError: timed out after 1 s") == 2, completed.stdout[-3000:]
    assert "not run, 2 tests of exercise 1.2 already timed out" in completed.stdout, completed.stdout[-3000:]


def test_the_scoreboard_of_an_untouched_edition_counts_only_what_it_handed_out(tmp_path):
    project = tiny_project(tmp_path / "tiny")  # exercise 1.1 a stub, 1.2's tests present
    (project / "minitorch" / "exercises" / "edition.json").write_text(json.dumps({"handed_out": ["1.1"]}))
    completed = run_pytest(project, "--exercise-seed=5", f"--scoreboard-json={tmp_path / 'board.json'}")
    board = json.loads((tmp_path / "board.json").read_text())
    assert list(board["exercises"]) == ["1.1"], "only the exercise handed out is graded"
    assert board["total"] == {"points": EXERCISES["1.1"][1], "earned": 0.0}
    assert re.search(rf"^total .* 0\.00 / {EXERCISES['1.1'][1]}$", completed.stdout, re.MULTILINE), completed.stdout


def test_the_scoreboard_json_folder_is_checked_before_any_test_runs(tmp_path):
    project = tiny_project(tmp_path / "tiny", solved=True)
    completed = run_pytest(project, f"--scoreboard-json={tmp_path / 'missing' / 'board.json'}")
    assert completed.returncode == 4, completed.stdout
    assert f"the folder {tmp_path / 'missing'} does not exist" in completed.stderr + completed.stdout
    assert "passed" not in completed.stdout


def test_the_edition_writes_its_manifest_and_is_built_aside(tmp_path, monkeypatch):
    grader = tiny_grader(tmp_path / "grader")
    import minitorch.exercises.registry as registry
    exercises = registry.load_exercises(grader, {"1.1": ("doubling", 1), "1.2": ("tripling", 2)})
    edition_module.make_student_edition(tmp_path / "edition", exercises[:1], grader)
    manifest = json.loads((tmp_path / "edition" / "minitorch" / "exercises" / "edition.json").read_text())
    assert manifest["handed_out"] == ["1.1"] and "made_at" in manifest and "made_from" in manifest

    def disk_full(*arguments):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(edition_module, "stub_source", disk_full)
    with pytest.raises(OSError, match="No space left"):
        edition_module.make_student_edition(tmp_path / "broken", exercises[:1], grader)
    assert not (tmp_path / "broken").exists(), "a failed build must not leave a copy with the solutions"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["edition", "grader"], "nothing left aside"


def test_copies_of_the_project_leave_out_sockets(grader, tmp_path):
    import socket
    left_behind = socket.socket(socket.AF_UNIX)  # as a Jupyter kernel on IPC transport leaves in the cwd
    left_behind.bind(str(grader / "tests" / "kernel-ipc-1"))
    try:
        import minitorch.exercises.registry as registry
        edition_module.make_student_edition(tmp_path / "edition", registry.load_exercises(grader)[:1], grader)
        grading.graft_submission(tmp_path / "edition", grader, tmp_path / "graded", ["1.1"])
    finally:
        left_behind.close()
    for copy in ("edition", "graded"):
        names = {path.name for path in (tmp_path / copy).rglob("*")}
        assert "ops.py" in names and "kernel-ipc-1" not in names, (
            f"the {copy} copy should hold the project's files but not the socket: {names}")


# ----------------------------------------------------------------------
# a class of 9, from this book's student edition

HANDED_OUT = ["1.3", "3.1", "3.2", "4.1"]
FILES = {"1.3": "minitorch/ops.py", "3.1": "minitorch/paper/attention.py", "3.2": "minitorch/paper/attention.py",
         "4.1": "minitorch/paper/task.py"}


def region_body(text: str, exercise_id: str) -> str:
    return re.search(rf"# BEGIN EXERCISE {re.escape(exercise_id)}\n(.*?)\n\s*# END EXERCISE", text, re.S)[1]


def set_region(copy: Path, exercise_id: str, body: str) -> None:
    """Write `body` (lines at the region's indentation, given unindented) into the copy's region."""
    path = copy / FILES[exercise_id]
    text = path.read_text()
    old = region_body(text, exercise_id)
    indent = re.match(r"\s*", old)[0]
    new = "\n".join(indent + line if line else line for line in body.splitlines())
    path.write_text(text.replace(old, new, 1))


def solve(copy: Path, *ids: str) -> None:
    for exercise_id in ids:
        reference = region_body((ROOT / FILES[exercise_id]).read_text(), exercise_id)
        path = copy / FILES[exercise_id]
        path.write_text(path.read_text().replace(region_body(path.read_text(), exercise_id), reference, 1))


def build_class(edition: Path, folder: Path) -> None:
    def copy(name):
        return Path(shutil.copytree(edition, folder / name))
    solve(copy("solved"), *HANDED_OUT)
    copy("untouched")
    solve(hang := copy("hang"), "1.3", "3.1", "3.2")
    set_region(hang, "4.1", "while True:\n    pass")
    solve(exits := copy("exits"), "1.3", "3.2", "4.1")
    set_region(exits, "3.1", "import os\nos._exit(0)")
    solve(syntax := copy("syntax"), "1.3", "3.1", "4.1")
    set_region(syntax, "3.2", "return softmax(scores.masked_fill(future, -np.inf), axis=-1")
    solve(deletes := copy("deletes"), "1.3", "3.1", "3.2", "4.1")
    text = (deletes / FILES["4.1"]).read_text()
    (deletes / FILES["4.1"]).write_text(text.replace("    # BEGIN EXERCISE 4.1\n", "    # BEGIN EXERCISE 4.1\n"
                                                     "    import os\n    if os.path.exists('README.md'):\n"
                                                     "        os.remove('README.md')\n", 1))
    solve(helper := copy("helper"), "3.1", "3.2", "4.1")
    set_region(helper, "1.3", "return (grad * out * 2,)")
    gradcheck = helper / "minitorch" / "gradcheck.py"
    gradcheck.write_text(gradcheck.read_text().replace('    """Check the gradient', '    return True\n    """Check', 1))
    solve(prints := copy("prints"), *HANDED_OUT)
    set_region(prints, "3.1", "print('x' * 3_000_000)\n" + region_body((ROOT / FILES["3.1"]).read_text(), "3.1").strip())
    solve(zipped := copy("zipped"), *HANDED_OUT)
    shutil.make_archive(str(folder / "zipped"), "zip", zipped.parent, zipped.name)
    shutil.rmtree(zipped)


def checkout_digest(root: Path) -> dict[str, str]:
    return {path.relative_to(root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(root.rglob("*")) if path.is_file() and "__pycache__" not in path.parts
            and ".git" not in path.parts and ".pytest_cache" not in path.parts}


GRADESCOPE_TEST_FIELDS = {"name": str, "score": (int, float), "max_score": (int, float), "status": str, "output": str}


def assert_gradescope_results(results: dict, student: str) -> None:
    assert isinstance(results["score"], (int, float)), f"{student}: results.json needs a numeric 'score'"
    assert isinstance(results["tests"], list) and results["tests"], f"{student}: results.json needs 'tests'"
    for test in results["tests"]:
        for name, kind in GRADESCOPE_TEST_FIELDS.items():
            assert isinstance(test.get(name), kind), f"{student}: test field {name!r} is missing or not {kind}"
        assert test["status"] in ("passed", "failed") and 0 <= test["score"] <= test["max_score"] + 1e-9
        assert len(test["output"]) <= grading.OUTPUT_CAP
    assert results["score"] == pytest.approx(sum(test["score"] for test in results["tests"]), abs=1e-4)


@pytest.mark.slow
def test_a_class_is_graded_isolated_time_limited_and_the_checkout_is_untouched(tmp_path):
    before = checkout_digest(ROOT)
    subprocess.run([sys.executable, "-m", "minitorch.exercises", "student-edition", str(tmp_path / "edition"),
                    "--only", ",".join(HANDED_OUT)], cwd=ROOT, check=True, capture_output=True,
                   env=_clean_environment())
    build_class(tmp_path / "edition", tmp_path / "class")
    command = [sys.executable, "-m", "minitorch.exercises", "grade", str(tmp_path / "class"), "--out",
               str(tmp_path / "out"), "--jobs", "2", "--timeout", "3", "--exercise-seed", "7"]
    completed = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900,
                               env=_clean_environment())
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert checkout_digest(ROOT) == before, "grading changed a file of the grader's checkout"
    assert len(re.findall(r"^\[\d/9\] ", completed.stdout, re.MULTILINE)) == 9, completed.stdout

    rows = {row["student"]: row for row in csv.DictReader((tmp_path / "out" / "grades.csv").open())}
    points = {i: EXERCISES[i][1] for i in HANDED_OUT}
    full = {i: float(p) for i, p in points.items()}

    def expect(student, flags="", **zeroed):
        row = rows[student]
        earned = {**full, **{i.replace("_", "."): 0.0 for i in zeroed}}
        got = {i: float(row[i]) for i in HANDED_OUT}
        assert got == pytest.approx(earned), f"{student}: points per exercise {got}, expected {earned}"
        assert float(row["total"]) == pytest.approx(sum(earned.values())) and row["max_total"] == str(sum(points.values()))
        assert flags in row["flags"], f"{student}: flags {row['flags']!r} should mention {flags!r}"
        return row

    assert expect("solved")["flags"] == "" and expect("zipped")["flags"] == ""
    expect("untouched", **{"1_3": 0, "3_1": 0, "3_2": 0, "4_1": 0})
    expect("hang", "timed out", **{"4_1": 0})
    expect("exits", "crashed", **{"3_1": 0})
    expect("syntax", "does not compile: 3.2", **{"3_2": 0})
    expect("deletes")
    expect("helper", "edited outside the regions: minitorch/gradcheck.py", **{"1_3": 0})
    expect("prints")
    assert set(rows) == {"solved", "zipped", "untouched", "hang", "exits", "syntax", "deletes", "helper", "prints"}

    for student in rows:
        results = json.loads((tmp_path / "out" / student / "results.json").read_text())
        assert_gradescope_results(results, student)
        assert (tmp_path / "out" / student / "feedback.md").read_text().startswith(f"# Grading of {student}")
        assert results["extra_data"]["exercise_seed"] == 7
    feedback = (tmp_path / "out" / "syntax" / "feedback.md").read_text()
    assert "does not compile" in feedback and "'(' was never closed" in feedback
    assert "timed out after 3 s" in (tmp_path / "out" / "hang" / "feedback.md").read_text()
    for name in ("summary.md", "class.png", "run.json"):
        assert (tmp_path / "out" / name).stat().st_size > 0

    again = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300, env=_clean_environment())
    assert "Grading 0 of 9 students" in again.stdout and "keeping 9 already graded" in again.stdout, again.stdout


def test_the_edition_tells_graders_the_grade_command_and_the_root_option_with_equals(tmp_path, capsys):
    from minitorch.exercises import __main__ as exercises_cli
    assert exercises_cli.main(["student-edition", str(tmp_path / "edition"), "--only", "3.1,3.2"]) == 0
    printed = capsys.readouterr().out
    assert "python -m minitorch.exercises grade SUBMISSIONS --out" in printed
    assert "--minitorch-root=PATH" in printed and "--minitorch-root PATH" not in printed
    manifest = json.loads((tmp_path / "edition" / "minitorch" / "exercises" / "edition.json").read_text())
    assert manifest["handed_out"] == ["3.1", "3.2"]
