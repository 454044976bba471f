"""The command line: ``python -m minitorch.exercises <command>``.

    python -m minitorch.exercises list
    python -m minitorch.exercises student-edition DEST [--only 3.1,3.2] [--chapter 3]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
from pathlib import Path

from minitorch.exercises.edition import make_student_edition
from minitorch.exercises.registry import ROOT, ExerciseError, load_exercises, select



def count_tests(root: Path = ROOT) -> dict[str, int] | None:
    """Tests collected per exercise ID (collection only: nothing runs); None if collection fails."""
    try:
        import pytest
    except ImportError:
        return None

    class CountMarkers:
        def __init__(self):
            self.counts: dict[str, int] = {}

        def pytest_collection_modifyitems(self, items):
            for item in items:
                mark = item.get_closest_marker("exercise")  # as tests/conftest.py reads it
                if mark is not None:
                    self.counts[str(mark.args[0])] = self.counts.get(str(mark.args[0]), 0) + 1

    counter = CountMarkers()
    # only the files that mark exercises: collecting the others (plotting, chapters) costs seconds
    marking = [str(path) for path in sorted((Path(root) / "tests").rglob("test_*.py"))
               if "mark.exercise" in path.read_text(encoding="utf-8")]
    if not marking:
        return {}
    arguments = ["--collect-only", "-qq", "-p", "no:cacheprovider", f"--minitorch-root={root}", *marking]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        status = pytest.main(arguments, plugins=[counter])
    return counter.counts if status == 0 else None


# ----------------------------------------------------------------------
# command line


def _print_list(root: Path) -> None:
    exercises = load_exercises(root)
    counts = count_tests(root)
    rows = [("ID", "chapter", "title", "where", "points", "tests")]
    for exercise in exercises:
        tests = "?" if counts is None else str(counts.get(exercise.id, 0))
        rows.append((exercise.id, f"{exercise.chapter:02d}", exercise.title, exercise.location(root),
                     str(exercise.points), tests))
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    for row in rows:
        cells = [cell.ljust(width) if column < 4 else cell.rjust(width)
                 for column, (cell, width) in enumerate(zip(row, widths))]
        print("  ".join(cells).rstrip())
    total_points = sum(exercise.points for exercise in exercises)
    print(f"\n{len(exercises)} exercises, {total_points} points, in chapters "
          f"{', '.join(sorted({f'{e.chapter:02d}' for e in exercises}))}.")
    if counts is None:
        print("(test counts unknown: collecting the tests failed; run python -m pytest --collect-only to see why)")
    print("Run one exercise's tests with: python -m pytest -m ex3_2 (or a chapter's: -m ch03)")


def _split_list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minitorch.exercises",
                                     description="The book's graded exercises and the student edition.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="every exercise: ID, chapter, title, where, points, number of tests")
    edition = commands.add_parser(
        "student-edition", help="copy the project to DEST with exercise regions replaced by stubs",
        description="Copy the project to DEST with the chosen exercise regions replaced by "
                    "raise NotImplementedError(...) and notebook cells tagged 'solution' (answers to graded "
                    "exercises) removed; 'self-check' cells (predict-then-check answers) stay. "
                    "--only and --chapter together select the union; neither selects every exercise.")
    edition.add_argument("dest", help="a new (or empty) folder")
    edition.add_argument("--only", default="", help="comma-separated exercise IDs, e.g. 3.1,3.2")
    edition.add_argument("--chapter", default="", help="comma-separated chapter numbers, e.g. 3 or 1,2")
    args = parser.parse_args(argv)
    root = ROOT

    try:
        if args.command == "list":
            _print_list(root)
            return 0
        exercises = load_exercises(root)
        try:
            chapters = [int(part) for part in _split_list(args.chapter)]
        except ValueError:
            raise ExerciseError(f"--chapter takes chapter numbers such as 3 or 1,2, got {args.chapter!r}") from None
        selected = select(exercises, only=_split_list(args.only), chapters=chapters)
        summary = make_student_edition(args.dest, selected, root)
    except ExerciseError as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    print(f"Student edition written to {Path(args.dest).resolve()}")
    print(f"  exercises replaced by stubs: {', '.join(summary['stubbed'])}")
    print(f"  solution cells removed from the chapters: {summary['solution_cells_removed']}")
    print(f"Students run: python -m pytest -m ex{summary['stubbed'][0].replace('.', '_')}  (one exercise), "
          f"python -m pytest -m \"not slow\"  (everything)")
    print("To grade a copy that comes back, from this repository: "
          "python -m pytest -m \"not slow\" --minitorch-root PATH/TO/THEIR/COPY")
    return 0


if __name__ == "__main__":
    sys.exit(main())
