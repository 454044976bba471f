"""The command line: ``python -m minitorch.exercises <command>``.

    python -m minitorch.exercises list
    python -m minitorch.exercises student-edition DEST [--only 3.1,3.2] [--chapter 3]
    python -m minitorch.exercises gradescope-bundle OUT.zip [--only 3.1] [--chapter 3] [--exercise-seed N] [--timeout S]
    python -m minitorch.exercises grade SUBMISSIONS --out OUT [--jobs N] [--timeout S] [--exercise-seed N]
                                        [--only IDS] [--chapter N] [--force]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
from pathlib import Path

from minitorch.exercises.edition import make_student_edition
from minitorch.exercises.gradescope import build_bundle
from minitorch.exercises.grading import HUNG_TEST_MARGIN, NO_PROGRESS_MARGIN
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


def _print_bundle(out: str, settings: dict) -> int:
    print(f"Gradescope autograder written to {Path(out).resolve()}")
    print(f"  grades exercises {', '.join(settings['exercise_ids'])} ({settings['points']} points), "
          f"exercise seed {settings['exercise_seed']}, timeout {settings['timeout']:g} s")
    # a hung exercise costs two timeouts, and one more when run again alone below an earlier hang; each up to
    # HUNG_TEST_MARGIN longer for a hang in C; then starting up
    hangs = 3 * len(settings["exercise_ids"]) - 1
    worst = hangs * (settings["timeout"] + HUNG_TEST_MARGIN) + NO_PROGRESS_MARGIN
    print(f"  if every graded exercise hung, grading would take about {worst:g} s: set the platform's timeout "
          f"above that")
    print("Upload it as the assignment's autograder (see README.md, For instructors).")
    return 0


def _split_list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


GRADE_HELP = """\
Grade a whole class. SUBMISSIONS holds one entry per student: a returned copy of the project (a
folder) or a .zip of one; the entry's name (without .zip) is the student's ID.

Each student is graded in a child process, in a scratch folder (never this checkout), on a pristine
copy of THIS project into which only the student's exercise regions are grafted: their code outside
the regions never runs, and the tests and their helpers are yours. A region that does not compile
fails its own exercise with the compiler's message. A test that fails with all of the student's
regions runs again with only its own exercise's region (your solutions for the rest), so a bug in
one exercise does not cost the points of another that calls it. A test running longer than --timeout fails
("timed out"); a child that crashes (os._exit, a segfault, out of memory) fails the test it was
running and a new child goes on. Children run with limits: 4 GiB of memory, CPU time, 256 MiB per
file written; each test's output is capped at 10 kB in the feedback. A copy holding a symbolic link,
or a .zip that would unpack to more than 200 MiB, is refused. This guards against mistakes, not against
a hostile student: for that, run this command inside a container.

Which exercises count: --only/--chapter if given, else those the class's student edition handed out
(its minitorch/exercises/edition.json; the most common one in the class), else all of them.

OUT receives grades.csv (student,total,max_total,<points per exercise>,flags), summary.md,
class.png, run.json, and per student STUDENT/results.json (the Gradescope autograder format) and
STUDENT/feedback.md. Running again resumes: graded students are kept unless --force. Ctrl-C stops,
keeping the students already graded.
"""


def _add_grade_command(commands) -> None:
    grade = commands.add_parser("grade", help="grade a folder of returned copies (isolated, time-limited) into a "
                                              "gradebook", description=GRADE_HELP,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    grade.add_argument("submissions", help="folder with one copy (folder or .zip) per student")
    grade.add_argument("--out", required=True, help="folder for the gradebook (created if needed)")
    grade.add_argument("--jobs", type=int, default=1, help="students graded at once (default 1; one per core)")
    grade.add_argument("--timeout", type=float, default=60.0, help="seconds per test (default 60)")
    grade.add_argument("--exercise-seed", type=int, default=0,
                       help="seed of the graded tests' random inputs (default 0; use one the students never saw)")
    grade.add_argument("--only", default="", help="comma-separated exercise IDs to grade, e.g. 3.1,3.2")
    grade.add_argument("--chapter", default="", help="comma-separated chapters whose exercises to grade")
    grade.add_argument("--force", action="store_true", help="grade again students already graded in OUT")


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
    bundle = commands.add_parser(
        "gradescope-bundle", help="write a Gradescope autograder zip that grades the chosen exercises",
        description="Write OUT.zip, a Gradescope autograder (setup.sh, run_autograder, this grader's library and "
                    "tests). The exercises, the seed and the timeout are fixed in it; students never see them.")
    bundle.add_argument("out", help="the zip to write, e.g. autograder.zip")
    bundle.add_argument("--only", default="", help="comma-separated exercise IDs, e.g. 3.1,3.2")
    bundle.add_argument("--chapter", default="", help="comma-separated chapter numbers, e.g. 3 or 1,2")
    bundle.add_argument("--exercise-seed", type=int, default=None,
                        help="seed of the graded tests' inputs (default: a fresh random one, kept in the bundle)")
    bundle.add_argument("--timeout", type=float, default=60.0, help="seconds per graded test (default 60)")
    _add_grade_command(commands)
    args = parser.parse_args(argv)
    root = ROOT
    if args.command == "grade":
        from minitorch.exercises.grade_command import grade_class
        try:
            return grade_class(args, root)
        except ExerciseError as error:
            parser.exit(2, f"{parser.prog}: error: {error}\n")

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
        if args.command == "gradescope-bundle":
            return _print_bundle(args.out, build_bundle(args.out, selected, seed=args.exercise_seed,
                                                        timeout=args.timeout, root=root))
        summary = make_student_edition(args.dest, selected, root)
    except ExerciseError as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    print(f"Student edition written to {Path(args.dest).resolve()}")
    print(f"  exercises replaced by stubs: {', '.join(summary['stubbed'])}")
    print(f"  solution cells removed from the chapters: {summary['solution_cells_removed']}")
    print(f"Students run: python -m pytest -m ex{summary['stubbed'][0].replace('.', '_')}  (one exercise), "
          f"python -m pytest -m \"not slow\"  (everything)")
    print("To grade the copies that come back (one folder or .zip per student in SUBMISSIONS), from this repository:")
    print("  python -m minitorch.exercises grade SUBMISSIONS --out GRADES --jobs 2")
    print("or one copy in this process: python -m pytest -m \"not slow\" --minitorch-root=PATH/TO/THEIR/COPY")
    return 0


if __name__ == "__main__":
    sys.exit(main())
