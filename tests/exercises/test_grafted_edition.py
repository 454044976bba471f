"""Instructor-only (a student edition leaves this file out: it needs the full book's answers): a student who
solves every exercise sees only passing tests (chapter 00).

The slow test builds the full student edition (every exercise a stub), grafts the reference answers back into
its regions, and runs that edition's own fast tests there, ``python -m pytest -q -m "not slow"`` (its slow
tests, which train models and run every chapter, would double the suite's time; the chapters run in quick mode
in `tests/exercises/test_book_order.py`). Nothing may fail: a test that needs the reference answers or this
repository's instructor tests is out of the edition or skips there, saying why, and the scoreboard adds up to
every point. The speed copies the edition removed stay removed, so the readable path trains, as in a student's
copy.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import minitorch
from minitorch.exercises import load_exercises
from minitorch.exercises.registry import EXERCISES, INSTRUCTOR_ONLY, replace_regions

from test_exercises import _clean_environment, build_edition

ROOT = Path(minitorch.__file__).resolve().parent.parent  # the project under test (--minitorch-root)


def graft_reference_answers(edition: Path, root: Path = ROOT) -> None:
    """Put the body of every region of `root` into the same region of `edition`."""
    bodies = {}
    for exercise in load_exercises(root):
        lines = exercise.path.read_text(encoding="utf-8").splitlines(keepends=True)
        bodies[exercise.id] = textwrap.dedent("".join(lines[exercise.begin_line:exercise.end_line - 1]))
    by_file: dict[Path, list] = {}
    for exercise in load_exercises(edition):
        by_file.setdefault(exercise.path, []).append(exercise)
    for path, exercises in by_file.items():  # all of a file's regions at once: their line numbers stay valid
        text = replace_regions(path.read_text(encoding="utf-8"), exercises, lambda exercise: bodies[exercise.id])
        path.write_text(text, encoding="utf-8")


def test_grafting_puts_back_exactly_the_reference_answers(tmp_path):
    edition = tmp_path / "edition"
    build_edition(edition)
    graft_reference_answers(edition)
    for exercise in load_exercises(ROOT):
        relative = exercise.path.relative_to(ROOT)
        assert (edition / relative).read_text(encoding="utf-8") == exercise.path.read_text(encoding="utf-8"), (
            f"{relative} differs from the reference after grafting its answers back")
    assert not any((edition / name).exists() for name in INSTRUCTOR_ONLY), "the edition holds instructor tests"


@pytest.mark.slow
def test_a_student_who_solves_every_exercise_sees_only_passing_tests(tmp_path):
    edition = tmp_path / "edition"
    build_edition(edition)
    graft_reference_answers(edition)
    board = tmp_path / "board.json"
    completed = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "not slow", "-p", "no:cacheprovider", "-rs",
                                f"--scoreboard-json={board}"], cwd=edition, capture_output=True, text=True,
                               timeout=1800, env=_clean_environment())
    output = completed.stdout + completed.stderr
    summary = output.strip().splitlines()[-1] if output.strip() else ""
    failed = [line for line in output.splitlines() if line.startswith(("FAILED", "ERROR"))]
    assert completed.returncode == 0 and not failed, (
        f"in the full student edition with every exercise solved (the reference answers grafted back), "
        f"`pytest -m \"not slow\"` should pass; these fail:\n" + "\n".join(failed[:30]) + f"\n{summary}\n"
        + output[-3000:])
    total = json.loads(board.read_text())["total"]
    points = sum(points for _, points in EXERCISES.values())
    assert total == {"points": points, "earned": float(points)}, (
        f"the scoreboard should read {points} / {points}: {total}")
    skipped = sorted(set(re.findall(r"^SKIPPED \[\d+\] [^:]+:\d+: (.*)$", output, flags=re.MULTILINE)))
    print(f"{summary}\nskipped, with their reasons:\n" + "\n".join(skipped))
