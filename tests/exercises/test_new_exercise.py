"""Adding an exercise is its function, its tests and one row of the table (minitorch/exercises/registry.py).

In a copy of the project a toy exercise is added exactly that way (a function in a module of its own, one test file,
one row), and the course's commands must take it from the row alone: ``list`` names it, the student's scoreboard
pays it in the book and counts it not attempted in a student edition, where its function is a stub, the
Gradescope bundle holds it, and ``grade`` pays a class exactly what each copy's toy earns. The toy's test reaches
the student's function through the generic probe ``student.call``, so it needs no probe of its own.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import minitorch
from minitorch.exercises.registry import NOT_COPIED, PROJECT_PATHS, read_manifest_data

ROOT = Path(minitorch.__file__).resolve().parent.parent  # the project under test (--minitorch-root)
if read_manifest_data(ROOT) is not None:
    pytest.skip("a student edition builds no editions or bundles: this test runs in the full book",
                allow_module_level=True)

TOY_MODULE = '''"""A toy exercise's module (tests/exercises/test_new_exercise.py adds it to a copy of the book)."""

import numpy as np


def clipped(x: np.ndarray, bound: float) -> np.ndarray:
    """x with every entry clipped to [-bound, bound]."""
    return np.clip(x, -bound, bound)
'''
TOY_TESTS = '''import numpy as np
import pytest

TOY = "2.6"  # the toy exercise's ID (the project's own tests name no exercise the table lacks)


@pytest.mark.exercise(TOY)
def test_clipped_keeps_entries_inside_and_bounds_the_others(student):
    clipped = student.call(TOY, np.array([-3.0, 0.5, 3.0]), 1.0)
    assert np.array_equal(clipped, [-1.0, 0.5, 1.0]), "clip to [-1, 1]"
'''
TOY_ROW = ('    Exercise("2.6", "a toy: entries clipped", 1, "minitorch/toy.py", "clipped", '
           'tests=("tests/test_toy.py",)),\n')
LAST_ROW = '             "sink_share", ("3.5",), _METRICS),\n'  # the table's last row: the toy's goes after it


def _run(cwd: Path, *arguments: str) -> subprocess.CompletedProcess:
    environment = {key: value for key, value in os.environ.items()
                   if not key.startswith("MINITORCH_") and key != "PYTEST_ADDOPTS"}
    return subprocess.run([sys.executable, *arguments], cwd=cwd, capture_output=True, text=True, timeout=600,
                          env={**environment, "PYTHONDONTWRITEBYTECODE": "1"})


def _scoreboard(project: Path, board: Path) -> dict:
    completed = _run(project, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "ex2_6",
                     f"--scoreboard-json={board}", "tests/test_toy.py")
    assert board.is_file(), f"the toy's tests did not run:\n{completed.stdout[-3000:]}{completed.stderr[-2000:]}"
    return json.loads(board.read_text(encoding="utf-8"))["exercises"]


@pytest.fixture(scope="module")
def book_with_a_toy(tmp_path_factory) -> Path:
    """A copy of the project with the toy exercise added: its module, its test file and its row, nothing else."""
    copy = tmp_path_factory.mktemp("new-exercise") / "book"
    for name in PROJECT_PATHS:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, copy / name, ignore=shutil.ignore_patterns(*NOT_COPIED))
        elif (ROOT / name).is_file():
            copy.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / name, copy / name)
    (copy / "minitorch" / "toy.py").write_text(TOY_MODULE, encoding="utf-8")
    (copy / "tests" / "test_toy.py").write_text(TOY_TESTS, encoding="utf-8")
    registry = copy / "minitorch" / "exercises" / "registry.py"
    text = registry.read_text(encoding="utf-8")
    if text.count(LAST_ROW) != 1:
        pytest.fail("the registry's last row changed: update LAST_ROW in this test")
    registry.write_text(text.replace(LAST_ROW, LAST_ROW + TOY_ROW), encoding="utf-8")
    return copy


@pytest.mark.slow
def test_a_new_exercise_is_listed_and_paid_in_the_book(book_with_a_toy, tmp_path):
    listed = _run(book_with_a_toy, "-m", "minitorch.exercises", "list")
    assert listed.returncode == 0 and "a toy: entries clipped" in listed.stdout, listed.stdout + listed.stderr
    row = _scoreboard(book_with_a_toy, tmp_path / "board.json")["2.6"]
    assert (row["passed"], row["earned"], row["points"]) == (1, 1.0, 1), row


@pytest.mark.slow
def test_a_new_exercise_is_stubbed_and_not_attempted_in_a_student_edition(book_with_a_toy, tmp_path):
    edition = tmp_path / "edition"
    built = _run(book_with_a_toy, "-m", "minitorch.exercises", "student-edition", str(edition), "--only", "2.6")
    assert built.returncode == 0, built.stderr
    source = (edition / "minitorch" / "toy.py").read_text(encoding="utf-8")
    assert "np.clip" not in source and "raise NotImplementedError" in source, f"the toy was not stubbed:\n{source}"
    row = _scoreboard(edition, tmp_path / "board.json")["2.6"]
    assert (row["not attempted"], row["earned"]) == (1, 0.0), row


@pytest.mark.slow
def test_a_new_exercise_is_in_the_gradescope_bundle(book_with_a_toy, tmp_path):
    out = tmp_path / "autograder.zip"
    built = _run(book_with_a_toy, "-m", "minitorch.exercises", "gradescope-bundle", str(out), "--only", "2.6",
                 "--exercise-seed", "7")
    assert built.returncode == 0, built.stderr
    with zipfile.ZipFile(out) as bundle:
        settings = json.loads(bundle.read("bundle.json"))
        names = set(bundle.namelist())
    assert settings["exercise_ids"] == ["2.6"] and settings["points"] == 1, settings
    assert any(name.endswith("tests/test_toy.py") for name in names) and any(
        name.endswith("minitorch/toy.py") for name in names), sorted(names)


@pytest.mark.slow
def test_a_new_exercise_is_graded_for_a_class_copy_by_copy(book_with_a_toy, tmp_path):
    edition, class_, out = tmp_path / "edition", tmp_path / "class", tmp_path / "gradebook"
    built = _run(book_with_a_toy, "-m", "minitorch.exercises", "student-edition", str(edition), "--only", "2.6")
    assert built.returncode == 0, built.stderr
    shutil.copytree(edition, class_ / "untouched")
    solved = shutil.copytree(edition, class_ / "solved")
    (solved / "minitorch" / "toy.py").write_text(TOY_MODULE, encoding="utf-8")
    graded = _run(book_with_a_toy, "-m", "minitorch.exercises", "grade", str(class_), "--out", str(out),
                  "--edition", str(edition), "--exercise-seed", "7")
    assert graded.returncode == 0, graded.stdout[-2000:] + graded.stderr[-3000:]
    with open(out / "grades.csv", newline="", encoding="utf-8") as file:
        earned = {row["student"]: float(row["2.6"]) for row in csv.DictReader(file)}
    assert earned == {"solved": 1.0, "untouched": 0.0}, f"the toy's points per copy: {earned}"


GIVE_AWAY = ("minitorch/paper/bounds.py", "import numpy as np\n\n\ndef within(values, limit):\n"
             "    return np.minimum(np.maximum(values, -limit), limit)\n")  # computes the toy's answer


@pytest.mark.slow
def test_the_give_away_search_covers_a_new_exercise(book_with_a_toy, tmp_path):
    """The search of tests/exercises/test_answer_leaks.py takes the toy's inputs from its row, its signature and
    its public test alone: a function planted in the library that computes the toy's answer is found, and only it."""
    if shutil.which("bwrap") is None:
        pytest.skip("the give-away search runs an edition's functions only inside bubblewrap, which is not installed")
    planted = shutil.copytree(book_with_a_toy, tmp_path / "book")
    (planted / GIVE_AWAY[0]).write_text(GIVE_AWAY[1], encoding="utf-8")
    searched = _run(planted, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/exercises/test_answer_leaks.py",
                    "-k", "full_edition_computes_an_exercise and 2.6")
    output = searched.stdout + searched.stderr
    if "skipped" in searched.stdout and "1 failed" not in searched.stdout:
        pytest.skip(f"the search skipped here: {searched.stdout[-500:]}")
    flagged = re.findall(r"^E +(\S+\.py:\w+) \(", output, flags=re.MULTILINE)  # one line per function it flags
    assert searched.returncode == 1 and "1 failed" in searched.stdout, (
        f"the search did not fail on the toy's planted give-away:\n{output[-3000:]}")
    assert flagged == [f"{GIVE_AWAY[0]}:within"], (
        f"the search should flag the planted function alone: {flagged}\n{output[-3000:]}")
