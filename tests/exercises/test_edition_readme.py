"""The student edition's own README (minitorch/exercises/edition.py): what a student needs, and nothing of the
instructor's (chapter 11)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import minitorch
from minitorch.exercises.edition import make_student_edition
from minitorch.exercises.registry import load_exercises, select

ROOT = Path(minitorch.__file__).resolve().parent.parent  # the project under test (--minitorch-root)
pytestmark = pytest.mark.skipif((ROOT / "minitorch" / "exercises" / "edition.json").exists(),
                                reason="builds editions from the book's answers, which a student edition holds back")
INSTRUCTOR_COMMANDS = ("minitorch.exercises grade", "gradescope-bundle", "canvas-csv", "student-edition",
                       "--exercise-seed", "## For instructors")


@pytest.fixture(scope="module")
def week_3(tmp_path_factory) -> tuple[Path, list]:
    exercises = load_exercises(ROOT)
    handed_out = select(exercises, only=["4.1"], chapters=[3])
    released = select(exercises, chapters=[1, 2])
    edition = tmp_path_factory.mktemp("editions") / "week-3"
    make_student_edition(edition, handed_out, ROOT, released=released)
    return edition, handed_out


def test_the_edition_readme_names_every_handed_out_function_its_file_and_its_check(week_3):
    edition, handed_out = week_3
    readme = (edition / "README.md").read_text(encoding="utf-8")
    missing = [f"{exercise.id}: {exercise.function} in {exercise.module}, python -m pytest -m {exercise.marker}"
               for exercise in handed_out
               if not re.search(rf"\| {re.escape(exercise.id)} \|.*`{exercise.function}` in `{exercise.module}`.*"
                                rf"`python -m pytest -m {exercise.marker}`", readme)]
    assert not missing, f"the edition's README should list each handed-out exercise on one row; missing:\n{missing}"
    assert "1.2" in readme and "released" in readme, "the README should say which answers were released"
    assert "python -m minitorch.exercises carry-over" in readme, "the README should say how to bring last week's work"
    assert "zip" in readme, "the README should say how to hand in"


def test_the_edition_readme_holds_no_instructor_command_and_links_only_existing_chapters(week_3):
    edition, _ = week_3
    readme = (edition / "README.md").read_text(encoding="utf-8")
    found = [command for command in INSTRUCTOR_COMMANDS if command in readme]
    assert not found, f"the student edition's README names instructor commands {found}: it is the instructor's?"
    links = re.findall(r"\]\((chapters/[^)]+)\)", readme)
    assert links and all((edition / link).is_file() for link in links), f"broken chapter links: {links}"
    assert "chapters/00_" in links[0], "the README should start the student at chapter 00"


def test_a_solutions_edition_readme_describes_the_solutions_edition(tmp_path):
    """It said every other exercise was a stub, and told students how to write, check, carry over and hand in
    exercises that were all solved."""
    exercises = load_exercises(ROOT)
    make_student_edition(tmp_path / "solutions", [], ROOT, released=exercises)
    readme = (tmp_path / "solutions" / "README.md").read_text(encoding="utf-8")
    assert readme.startswith("# Attention sinks, from scratch: the solutions edition"), readme[:300]
    assert "hands out no exercise" in readme and "every exercise solved" in readme, readme[:1500]
    for wrong in ("stub", "carry-over", "Handing in", "NotImplementedError", "your instructor grades"):
        assert wrong not in readme, f"the solutions edition's README speaks of {wrong!r}: nothing is to be written"
    assert not [command for command in INSTRUCTOR_COMMANDS if command in readme]
    links = re.findall(r"\]\((chapters/[^)]+)\)", readme)
    assert links and all((tmp_path / "solutions" / link).is_file() for link in links), links
