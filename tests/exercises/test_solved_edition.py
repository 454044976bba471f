"""Instructor-only (a student edition leaves this file out: it needs the full book's answers): putting the
reference answers back into a student edition's functions gives back the book (chapter 00).

`put_back_answers` is what the self-check in `tests/exercises/test_exercises.py` uses to check that a student who
solves every exercise sees only passing tests: it builds the full student edition, runs its fast tests, puts
the answers back and runs again every test that stopped at a stub.
"""

from __future__ import annotations

from pathlib import Path

import minitorch
from minitorch.exercises.registry import INSTRUCTOR_ONLY, load_exercises

from test_exercises import build_edition, put_back_answers

ROOT = Path(minitorch.__file__).resolve().parent.parent  # the project under test (--minitorch-root)


def test_putting_the_answers_back_gives_back_exactly_the_reference_modules(tmp_path):
    edition = tmp_path / "edition"
    build_edition(edition)
    put_back_answers(edition)
    for module in sorted({exercise.module for exercise in load_exercises(ROOT)}):
        assert (edition / module).read_text(encoding="utf-8") == (ROOT / module).read_text(encoding="utf-8"), (
            f"{module} differs from the reference after its answers are put back")
    assert not any((edition / name).exists() for name in INSTRUCTOR_ONLY), "the edition holds instructor tests"
