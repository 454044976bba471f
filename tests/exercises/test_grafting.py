"""Specification of minitorch/exercises/grafting.py: the libraries a student's worker runs.

Each library holds the student's code for one exercise and the grader's stand-ins (which ask the grader)
everywhere else; it holds no reference answer. The student's regions are read leniently: a missing END
marker, an earlier edition's exercise number.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from minitorch.exercises import grafting
from minitorch.exercises.edition import fingerprint, project_files
from minitorch.exercises.grafting import build_libraries
from minitorch.exercises.registry import MANIFEST, ROOT, load_exercises
from minitorch.exercises.services import STAND_INS

from test_answer_leaks import ANSWER_SIGNATURES, code_only

EXERCISES = {exercise.id: exercise for exercise in load_exercises(ROOT)}
pytestmark = pytest.mark.skipif((ROOT / MANIFEST).exists(), reason="a student edition: these tests graft the full "
                                                                   "book's reference answers, which it does not hold")


def a_copy(folder: Path) -> Path:
    """The grader's minitorch/ and tests/ (solved), with a manifest listing every file, as an edition has."""
    for name in ("minitorch", "tests"):
        shutil.copytree(ROOT / name, folder / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    manifest = {"handed_out": list(EXERCISES), "made_from": None,
                "files": {name: fingerprint(folder / name) for name in project_files(folder)}}
    (folder / "minitorch" / "exercises" / "edition.json").write_text(json.dumps(manifest))
    return folder


def edit_region(copy: Path, exercise_id: str, body: str, end_marker: bool = True) -> Path:
    """Put `body` (unindented lines) in the copy's region of `exercise_id`; drop its END marker if asked."""
    exercise = EXERCISES[exercise_id]
    path = copy / exercise.path.relative_to(ROOT)
    lines = path.read_text().splitlines(keepends=True)
    begin = next(i for i, line in enumerate(lines) if line.strip() == f"# BEGIN EXERCISE {exercise_id}")
    end = next(i for i, line in enumerate(lines) if line.strip() == f"# END EXERCISE {exercise_id}")
    new = [exercise.indent + line + "\n" for line in body.splitlines()]
    lines[begin + 1:end + (0 if end_marker else 1)] = new
    path.write_text("".join(lines))
    return path


def test_a_library_holds_the_students_code_for_its_exercise_only_and_no_reference_answer(tmp_path):
    copy = a_copy(tmp_path / "copy")
    edit_region(copy, "2.3", "weights = scores.data  # the student's own try\n\n"
                             "def backward(grad):\n    return (grad,)")
    helper = copy / "minitorch" / "softmax.py"
    helper.write_text(helper.read_text().replace("def _explain_non_finite", "def _explain_non_finite_changed"))
    report = build_libraries(ROOT, copy, ["2.3", "3.2"], tmp_path / "lib")
    assert report.grafted == ["2.3", "3.2"] and not report.stubs and not report.not_found
    own = (tmp_path / "lib" / "2.3" / "minitorch" / "softmax.py").read_text()
    assert "the student's own try" in own, "library 2.3 holds the student's softmax"
    assert "def _explain_non_finite(" in own, "code outside the regions is the grader's, never the student's"
    other = (tmp_path / "lib" / "3.2" / "minitorch" / "softmax.py").read_text()
    assert "the student's own try" not in other and "ask_grader('2.3', 'forward'" in other, (
        "in the library of 3.2, exercise 2.3 is the grader's stand-in")
    assert report.edited_outside == {"minitorch/softmax.py": "+1 -1 lines"}
    leaks = []
    for path in (tmp_path / "lib").rglob("*.py"):
        text = code_only(path.read_text())
        for exercise_id, signatures in ANSWER_SIGNATURES.items():
            in_own_library = path.is_relative_to(tmp_path / "lib" / exercise_id)
            leaks += [f"{path.relative_to(tmp_path)}: {exercise_id}" for signature in signatures
                      if re.search(signature, text) and not in_own_library]
    assert not leaks, f"a worker's library must hold no reference answer: {leaks}"


def test_every_stand_in_compiles_in_its_region():
    sources = grafting.stand_in_sources(ROOT, list(EXERCISES.values()))
    for relative, text in sources.items():
        compile(text, relative, "exec")
    assert set(STAND_INS) == set(EXERCISES), "every exercise needs a stand-in, and every stand-in an exercise"


def test_a_missing_end_marker_ends_the_region_where_the_graders_code_resumes_and_says_so(tmp_path):
    copy = a_copy(tmp_path / "copy")
    reference = "".join(EXERCISES["2.3"].path.read_text().splitlines(keepends=True)[
        EXERCISES["2.3"].begin_line:EXERCISES["2.3"].end_line - 1])
    edit_region(copy, "2.3", re.sub(r"(?m)^    ", "", reference), end_marker=False)
    report = build_libraries(ROOT, copy, ["2.3", "3.2"], tmp_path / "lib")
    assert report.grafted == ["2.3", "3.2"], f"one missing marker costs nothing else: {report}"
    assert "END EXERCISE 2.3 marker is missing" in report.notes["2.3"], report.notes
    graded = (tmp_path / "lib" / "2.3" / "minitorch" / "softmax.py").read_text()
    assert graded.count('return Tensor.from_op(weights, (scores,), backward, "softmax")') == 1, (
        "the region must end before the grader's line after it, not swallow it")


def test_a_region_under_an_earlier_editions_number_is_graded_as_the_exercise_it_holds(tmp_path):
    copy = a_copy(tmp_path / "copy")
    optim = copy / "minitorch" / "optim.py"
    optim.write_text(optim.read_text().replace("EXERCISE 2.5", "EXERCISE 7.1"))
    report = build_libraries(ROOT, copy, ["2.5"], tmp_path / "lib")
    assert report.grafted == ["2.5"] and "this copy calls it 7.1" in report.notes["2.5"], report


def test_a_region_that_does_not_compile_fails_alone_at_the_students_line(tmp_path):
    copy = a_copy(tmp_path / "copy")
    path = edit_region(copy, "3.2", "x = 1\nreturn softmax(scores.masked_fill(future, -np.inf), axis=-1")
    report = build_libraries(ROOT, copy, ["3.1", "3.2", "3.3"], tmp_path / "lib")
    wrong_line = 1 + path.read_text().splitlines().index("    return softmax(scores.masked_fill(future, -np.inf), "
                                                           "axis=-1")
    assert list(report.not_compiling) == ["3.2"] and report.grafted == ["3.1", "3.3"], report
    assert f"line {wrong_line} of minitorch/paper/attention.py" in report.not_compiling["3.2"], report.not_compiling


def test_a_region_still_holding_the_editions_stub_is_recognised(tmp_path):
    copy = a_copy(tmp_path / "copy")
    message = EXERCISES["3.1"].stub_message(ROOT)
    edit_region(copy, "3.1", f"raise NotImplementedError({json.dumps(message)})")
    edit_region(copy, "3.3", f"x = 1\nraise NotImplementedError({json.dumps(EXERCISES['3.3'].stub_message(ROOT))})")
    report = build_libraries(ROOT, copy, ["3.1", "3.3"], tmp_path / "lib")
    assert report.stubs == ["3.1"], f"3.1 is the stub; 3.3 has code of the student's: {report}"
    assert not (tmp_path / "lib" / "3.1").exists(), "no library is built for a stub: its tests are not run"


def test_a_missing_region_is_not_found_and_names_where_it_belongs(tmp_path):
    copy = a_copy(tmp_path / "copy")
    metrics = copy / "minitorch" / "paper" / "metrics.py"
    metrics.write_text(metrics.read_text().replace("# BEGIN EXERCISE 3.4", "# BEGIN EXERCISE 3.4x"))
    report = build_libraries(ROOT, copy, ["3.4"], tmp_path / "lib")
    assert "region not found" in report.not_found["3.4"] and "minitorch/paper/metrics.py" in report.not_found["3.4"]


def test_without_fingerprints_the_edition_is_read_from_the_graders_history_and_only_real_edits_are_flagged(
        tmp_path):
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    files = grafting.edition_files_at(ROOT, head, [])
    if files is None:
        pytest.skip("the grader's checkout has no git history here")
    copy = tmp_path / "copy"
    for name, text in files.items():  # the copy as that commit had it, with one real edit
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        (copy / name).write_text(text)
    (copy / "minitorch" / "exercises" / "edition.json").write_text(json.dumps({"handed_out": [], "made_from": head}))
    task = copy / "minitorch" / "paper" / "task.py"
    task.write_text(task.read_text() + "\nEXTRA = 1\n")
    assert grafting.edits_outside_regions(copy, ROOT, files) == {"minitorch/paper/task.py": "+2 -0 lines"}
    assert grafting.edits_outside_regions(copy, ROOT, None) == {}, (
        "without fingerprints or history the grader cannot tell the student's edits: it flags nothing")
