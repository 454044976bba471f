"""The command line: ``python -m minitorch.exercises <command>``.

    python -m minitorch.exercises list
    python -m minitorch.exercises student-edition DEST [--only 3.1,3.2] [--chapter 3] [--release 1.2,2.4]
                                                  [--handed-out-before 1.1,1.2] | --solutions
    python -m minitorch.exercises carry-over OLD_COPY NEW_EDITION
    python -m minitorch.exercises gradescope-bundle OUT.zip [--only 3.1] [--chapter 3] [--exercise-seed N]
                                                    [--timeout S] [--deadline S] [--over-deadline]
                                                    [--hidden-tests after_due_date|hidden] [--late-penalty P]
    python -m minitorch.exercises grade SUBMISSIONS --out OUT (--edition DIR | --only IDS | --chapter N)
                                        [--jobs N] [--timeout S] [--budget S] [--exercise-seed N]
                                        [--isolation auto|bubblewrap|chroot|none]
                                        [--student NAME | --regrade]
    python -m minitorch.exercises canvas-csv OUT --roster ROSTER.csv --assignment "Week 3 (12345)" --to FILE.csv
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from minitorch import checks
from minitorch.exercises.edition import make_student_edition, prerequisites_refused
from minitorch.exercises.grader.trusted.gradescope import HIDDEN_VISIBILITIES, PUBLIC_SEED, build_bundle
from minitorch.exercises.grader.trusted.grading import collect_tests
from minitorch.exercises.registry import (HIDDEN_TESTS, ROOT, ExerciseError, is_hidden_test, load_exercises,
                                          part_points, read_manifest_data, select)
from minitorch.exercises.grader.trusted.isolation import KINDS
from minitorch.outputs import OutputPathError, OwnFile, check_readable, refuse_a_file_not_its_own
from minitorch.tools.options import CommandParser, comma_list

# A test's calls start the student's exercise in its sandbox (a fresh process that imports the library): below a
# second, a right answer would time out too, and every student would get 0.
MINIMUM_TIMEOUT = 1.0
TIMEOUT = checks.number_argument("--timeout", minimum=MINIMUM_TIMEOUT, maximum=3600)



def count_tests(root: Path = ROOT) -> dict[str, dict[str, int]] | None:
    """Graded tests collected per exercise ID, {"public": n, "hidden": m} (collection only: nothing runs); None if
    collection fails."""
    try:
        collected = collect_tests(root, [exercise.id for exercise in load_exercises(root)])
    except ExerciseError:
        return None
    counts: dict[str, dict[str, int]] = {}
    for nodeid, exercise_id in collected.items():
        row = counts.setdefault(exercise_id, {"public": 0, "hidden": 0})
        row["hidden" if is_hidden_test(nodeid) else "public"] += 1
    return counts


# ----------------------------------------------------------------------
# command line


def _print_list(root: Path) -> None:
    exercises = load_exercises(root)  # (in ID order: the order a student can do them)
    counts = count_tests(root)
    has_hidden = (Path(root) / HIDDEN_TESTS).is_dir()  # a student edition holds none: the instructor keeps them
    rows = [("ID", "chapter", "title", "where", "points", "of them hidden", "public tests", "hidden tests")]
    for exercise in exercises:
        found = None if counts is None else counts.get(exercise.id, {"public": 0, "hidden": 0})
        rows.append((exercise.id, f"{exercise.chapter:02d}", exercise.title, f"{exercise.module}: {exercise.function}",
                     str(exercise.points), f"{part_points(exercise)[1]:g}",
                     "?" if found is None else str(found["public"]),
                     "?" if found is None else str(found["hidden"]) if has_hidden else "-"))
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    for row in rows:
        cells = [cell.ljust(width) if column < 4 else cell.rjust(width)
                 for column, (cell, width) in enumerate(zip(row, widths))]
        print("  ".join(cells).rstrip())
    total_points = sum(exercise.points for exercise in exercises)
    hidden_total = round(sum(part_points(exercise)[1] for exercise in exercises), 6)
    print(f"\n{len(exercises)} exercises, {total_points} points, in chapters "
          f"{', '.join(sorted({f'{e.chapter:02d}' for e in exercises}))}.")
    print(f"Points: the public tests carry {round(total_points - hidden_total, 6):g}, the hidden tests "
          f"{hidden_total:g} (each exercise's hidden_share in minitorch/exercises/registry.py, set by the "
          f"instructor; an exercise without hidden tests gives the public ones all its points).")
    if not has_hidden:
        print(f"This copy holds no hidden tests ({HIDDEN_TESTS}/ is the instructor's): your own run earns the public "
              f"points; the hidden tests grade the rest, on inputs of their own, when the class is graded.")
    if counts is None:
        print("(test counts unknown: collecting the tests failed; run python -m pytest --collect-only to see why)")
    print("Run one exercise's tests with: python -m pytest -m ex3_2 (or a chapter's: -m ch03)")


def _print_bundle(out: str, settings: dict, seed_given: bool) -> int:
    print(f"Gradescope autograder written to {Path(out).resolve()}")
    seed = "the exercise seed you gave" if seed_given else "a fresh secret exercise seed (128 bits)"
    print(f"  grades exercises {', '.join(settings['exercise_ids'])} ({settings['points']} points), {seed}, "
          f"{settings['timeout']:g} s per test")
    hidden, hidden_points = len(settings["hidden_tests"]), settings.get("hidden_points", 0)
    print(f"  {len(settings['collected']) - hidden} public tests visible at once "
          f"({settings['points'] - hidden_points:g} points), {hidden} hidden tests ({hidden_points:g} points) "
          + ("shown after the due date" if settings["hidden_visibility"] == "after_due_date" else "never shown")
          + f"; late submissions lose {settings['late_penalty']:g}% per started day past the due date")
    print("  The zip holds the seed and the graded tests: keep it out of any repository the students can read.")
    if settings["exercise_seed"] == PUBLIC_SEED:
        print("  WARNING: --exercise-seed 0 is the seed of the students' own test runs: they know every graded input. "
              "Leave --exercise-seed out for a fresh secret one.")
    print(f"  worst case (every exercise hangs twice): about {settings['worst_case']:g} s; the bundle stops grading at "
          f"{settings['deadline']:g} s and reports what it graded.")
    needed = settings["deadline"] + 60  # a minute for the container to start and results.json to be read
    print(f"  The platform's timeout must be at least {needed:g} s: "
          + ("Gradescope's default (10 minutes) is enough." if needed <= 600 else
             "raise it from Gradescope's default of 10 minutes (40 at most)."))
    print("Upload it as the assignment's autograder (see chapter 11, For instructors).")
    return 0


def _split_list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


GRADE_HELP = """\
Grade a whole class. SUBMISSIONS holds one entry per student: a returned copy of the project (a
folder) or a .zip of one; the entry's name (without .zip) is the student's ID (a name that is hidden,
not printable, too long or a spreadsheet formula is graded as NAME-submission, flagged). Every entry
gets a row in the gradebook, the litter macOS leaves (__MACOSX/, .DS_Store) aside; one that cannot be
graded (a file, a pipe, a link, a broken .zip, more than 200 MiB, 100,000 files or 64 folders deep)
says why, and the class goes on.

Each exercise is graded on the student's own code for it: the tests run in a check process of yours,
on your library and your hidden seed, and reach the student's code only through a sandboxed worker
(bubblewrap, else a root of its own when run as root; the first line says which) that holds their
code for that one exercise and your code for everything else. Only data comes back; the checks that
decide pass or fail never run the student's code. A test whose calls take longer than --timeout fails
as timed out; after two such (or crashed) tests an exercise's other tests fail at once; a student's
whole grading stops at --budget. Only each exercise's function is taken from a copy: code outside it never runs.

Which exercises count: --edition (the student edition you handed out), or --only/--chapter; without
them the command refuses, unless OUT records a run (then it grades what that run graded). A student's
own copy never decides.

The seed of the hidden inputs: without --exercise-seed a fresh secret one of 128 bits, recorded in
OUT/run.json (readable by you only) and handed to the check processes in their environment, never on
a command line. Running the same command again resumes with the recorded settings; a run whose seed,
exercises, edition or grader version differ from the recorded ones is refused (--regrade accepts
them and grades everyone again, e.g. after a fix of the grader).

OUT receives grades.csv (student,total,max_total,<points per exercise>,autograded,adjustment,
late_penalty,comment,flags), summary.md, similarity.md (per exercise, the students whose answers are
the same up to names, formatting and comments, and the answers that are the book's own code),
class.png, run.json, adjustments.csv (yours: student,points,late_penalty,comment; created empty, never
overwritten, applied to the total at every run; points or a penalty beyond the assignment's maximum are
refused), feedback/STUDENT/ (feedback.md and results.json, the Gradescope format: hand each student
their folder; neither names the seed or quotes what the code raised or printed) and private/STUDENT/
(check-log.txt, the full failures on the hidden inputs, and answers.json: for you only). Running again
keeps the students graded, except those whose submission changed (found by its content); --student
NAME grades one again, --regrade all. Ctrl-C, SIGTERM and SIGHUP stop, keeping the students already
graded; the command then exits with 130, 143 or 129.
"""


def _add_grade_command(commands) -> None:
    grade = commands.add_parser("grade", help="grade a folder of returned copies (sandboxed, time-limited) into a "
                                              "gradebook", description=GRADE_HELP,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    grade.add_argument("submissions", help="folder with one copy (folder or .zip) per student")
    grade.add_argument("--out", required=True, help="folder for the gradebook (created if needed; not inside "
                                                     "SUBMISSIONS)")
    grade.add_argument("--jobs", type=checks.number_argument("--jobs", integer=True, minimum=1, maximum=64),
                       default=1, help="students graded at once (default 1; one per core)")
    grade.add_argument("--timeout", type=TIMEOUT, default=60.0, help="seconds per test (default 60)")
    grade.add_argument("--budget", type=checks.number_argument("--budget", minimum=MINIMUM_TIMEOUT, maximum=86400),
                       default=900.0,
                       help="seconds per student; the tests not run by then fail as timed out (default 900)")
    grade.add_argument("--exercise-seed", type=checks.number_argument("--exercise-seed", integer=True, minimum=0),
                       default=None, help="seed of the graded tests' random inputs (default: the one OUT/run.json "
                                          "records, else a fresh secret one; students' own runs use 0)")
    grade.add_argument("--only", type=comma_list("--only"),
                       default="", help="comma-separated exercise IDs to grade, e.g. 3.1,3.2")
    grade.add_argument("--chapter", type=comma_list("--chapter"),
                       default="", help="comma-separated chapters whose exercises to grade")
    grade.add_argument("--edition", default="", help="the student edition you handed out: grade the exercises its "
                                                     "minitorch/exercises/edition.json names")
    grade.add_argument("--isolation", default="auto", choices=["auto", *KINDS],
                       help="how the students' code is sandboxed (default auto: bubblewrap, else chroot as root; "
                            "none runs it as you and is only used when named)")
    again = grade.add_mutually_exclusive_group()
    again.add_argument("--regrade", "--force", dest="regrade", action="store_true",
                       help="grade every student again (after a fix of the grader, or with new settings); "
                            "adjustments.csv is kept")
    again.add_argument("--student", action="append", type=comma_list("--student"), default=[], metavar="NAME",
                       help="grade only these students again (NAME or NAME,NAME); the others are kept")


def _add_canvas_command(commands) -> None:
    canvas = commands.add_parser(
        "canvas-csv", help="write a gradebook CSV that Canvas imports (Grades > Import)",
        description="Write the grades of OUT (each total computed afresh, autograded plus adjustments.csv as it "
                    "is now: a change typed into grades.csv is not read; put it in adjustments.csv) as a CSV that "
                    "Canvas's gradebook imports: Student, ID, SIS User ID, SIS Login ID, Section, then the "
                    "assignment's column. The roster maps each submission's name to its student: export "
                    "Canvas's gradebook and add a column 'submission'.")
    canvas.add_argument("out", help="the folder grade wrote (with grades.csv)")
    canvas.add_argument("--roster", required=True, help="CSV with columns submission, Student, ID, SIS User ID, "
                                                         "SIS Login ID, Section")
    canvas.add_argument("--assignment", required=True,
                        help='the assignment\'s column as Canvas names it, e.g. "Week 3 (12345)": with its ID in '
                             'brackets Canvas updates that assignment, without it Canvas makes a new one')
    canvas.add_argument("--to", required=True, help="the CSV to write, e.g. canvas-week3.csv")
    canvas.add_argument("--leave-out-unlisted", action="store_true",
                        help="leave out (and list) the graded submissions the roster has no row for, such as students "
                             "who dropped the course; without it they stop the command")
    canvas.add_argument("--force", action="store_true",
                        help="replace --to even if it is not a Canvas CSV this command wrote")


def _is_canvas_csv(path: Path) -> bool:
    """Whether `path` is a CSV canvas-csv wrote: its first line is Canvas's five columns and one assignment's."""
    import csv

    from minitorch.exercises.grader.trusted.gradebook import CANVAS_COLUMNS

    with open(path, encoding="utf-8", newline="") as file:
        header = next(csv.reader([file.readline(4096)]), [])
    return len(header) == len(CANVAS_COLUMNS) + 1 and tuple(header[:-1]) == CANVAS_COLUMNS


CANVAS_CSV = OwnFile("a Canvas CSV that canvas-csv wrote (Student, ID, SIS User ID, SIS Login ID, Section and one "
                     "assignment)", _is_canvas_csv)


def _write_canvas(args) -> int:
    """The Canvas CSV of OUT's grades, with adjustments.csv as it is now (edited since the last run or not)."""
    import csv
    import io

    from minitorch.exercises.grader.trusted import gradebook
    from minitorch.exercises.grader.trusted.student_text import shown
    from minitorch.outputs import PathError, check_input_file, check_output_file, write_atomically

    run = gradebook.read_run(Path(args.out))
    if run is None or not (Path(args.out) / "grades.csv").is_file():
        raise ExerciseError(f"{args.out} holds no gradebook (run.json and grades.csv); run grade first")
    graded = gradebook.class_rows(Path(args.out))
    adjustments = gradebook.read_adjustments(Path(args.out), gradebook.maximum_of(run.get("exercises") or []))
    gradebook.refuse_unknown_students(args.out, adjustments, [row["extra_data"]["student"] for row in graded],
                                      f"have no grade in {args.out} (a misspelt name, or a student not graded yet)")
    text = gradebook.grades_csv(graded, run["exercises"], adjustments)
    rows = list(csv.DictReader(io.StringIO(text)))
    try:
        target = check_output_file(args.to, "--to")
        roster = check_input_file(args.roster, "--roster")
    except (PathError, FileNotFoundError) as error:
        raise ExerciseError(str(error)) from None
    if target == roster or target.is_relative_to(Path(args.out).resolve()):
        what = "the roster" if target == roster else f"a file in the gradebook folder {args.out} (its students' too)"
        raise ExerciseError(f"--to {args.to}: would replace {what}; write the Canvas CSV elsewhere")
    try:  # (after the refusals that --force does not lift)
        refuse_a_file_not_its_own(target, args.to, "--to", CANVAS_CSV, args.force)
    except PathError as error:
        raise ExerciseError(str(error)) from None
    if not args.assignment.strip() or any(character in args.assignment for character in "\r\n"):
        raise ExerciseError(f"--assignment {args.assignment!r}: name the assignment's column in one line, as Canvas "
                            f"names it, e.g. \"Week 3 (12345)\"")
    entries = {row["extra_data"]["student"]: row["extra_data"].get("entry") or row["extra_data"]["student"]
               for row in graded}
    text, without, left_out = gradebook.canvas_csv(rows, roster, args.assignment, entries, args.leave_out_unlisted)
    write_atomically(target, text)
    print(f"Canvas gradebook CSV written to {target}: {len(rows) - len(left_out)} grades in the column "
          f"{args.assignment!r}. Import it in Canvas: Grades > Import.")
    for count, what, names in ((len(left_out), "graded submissions have no roster row and were left out "
                                               "(--leave-out-unlisted)", left_out),
                               (len(without), "students of the roster have no submission; their cells are empty",
                                without)):
        if count:
            print(f"  {count} {what}:")
            print("".join(f"    {shown(name)}\n" for name in names), end="")
    return 0


def main(argv=None) -> int:
    parser = CommandParser(prog="python -m minitorch.exercises",
                                     description="The book's graded exercises and the student edition.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="every exercise: ID, chapter, title, where, points (public and hidden), "
                                     "number of public and hidden tests")
    edition = commands.add_parser(
        "student-edition", help="copy the project to DEST with the chosen exercises' functions stubbed",
        description="Copy the project to DEST with the chosen exercises' functions replaced by "
                    "raise NotImplementedError(...) and notebook cells tagged 'solution' (answers to graded "
                    "exercises) removed; 'self-check' cells (predict-then-check answers) stay. "
                    "--only and --chapter together select the union; neither selects every exercise.")
    edition.add_argument("dest", help="a new (or empty) folder")
    edition.add_argument("--only", type=comma_list("--only"),
                         default="", help="comma-separated exercise IDs, e.g. 3.1,3.2")
    edition.add_argument("--chapter", type=comma_list("--chapter"),
                         default="", help="comma-separated chapter numbers, e.g. 3 or 1,2")
    edition.add_argument("--release", type=comma_list("--release"),
                         default="", help="comma-separated exercise IDs whose answers the edition keeps (e.g. "
                                          "last week's, after its deadline); every other exercise is a stub")
    edition.add_argument("--handed-out-before", type=comma_list("--handed-out-before"), default="",
                         help="comma-separated exercise IDs an earlier edition handed out, whose answers your "
                              "students bring themselves (carry-over); they stay stubs. An exercise handed out must "
                              "have every exercise it builds on handed out, released or named here")
    edition.add_argument("--solutions", action="store_true", help="a solutions edition: every answer, nothing "
                                                                   "handed out (after the term)")
    carry = commands.add_parser(
        "carry-over", help="copy the exercise functions a student wrote in OLD into the new edition NEW",
        description="For a student: copy every exercise function you wrote in your copy of an earlier edition "
                    "(OLD) into the new edition (NEW), where NEW still has its stub. Nothing else changes.")
    carry.add_argument("old", help="your copy of the earlier edition")
    carry.add_argument("new", help="the new edition, as handed out")
    bundle = commands.add_parser(
        "gradescope-bundle", help="write a Gradescope autograder zip that grades the chosen exercises",
        description="Write OUT.zip, a Gradescope autograder (setup.sh, run_autograder, this grader's library and "
                    "tests). The exercises, the seed and the timeout are fixed in it; students never see them.")
    bundle.add_argument("out", help="the zip to write, e.g. autograder.zip")
    bundle.add_argument("--only", type=comma_list("--only"),
                        default="", help="comma-separated exercise IDs, e.g. 3.1,3.2")
    bundle.add_argument("--chapter", type=comma_list("--chapter"),
                        default="", help="comma-separated chapter numbers, e.g. 3 or 1,2")
    bundle.add_argument("--exercise-seed", type=checks.number_argument("--exercise-seed", integer=True, minimum=0),
                        default=None, help="seed of the graded tests' inputs (default: a fresh random one, kept in "
                                           "the bundle)")
    bundle.add_argument("--timeout", type=TIMEOUT, default=20.0,
                        help="seconds per graded test (default 20)")
    bundle.add_argument("--deadline", type=checks.number_argument("--deadline", minimum=MINIMUM_TIMEOUT,
                                                                   maximum=86400),
                        default=540.0, help="seconds for a whole submission; the bundle writes its results by then "
                                            "(default 540, below Gradescope's default limit of 10 minutes)")
    bundle.add_argument("--hidden-tests", choices=HIDDEN_VISIBILITIES, default="after_due_date",
                        help="when students see the hidden tests' results (the public ones they see at once; "
                             "default after_due_date)")
    bundle.add_argument("--late-penalty", type=checks.number_argument("--late-penalty", minimum=0, maximum=100),
                        default=10.0, help="percent of the score taken off per started day past the due date "
                                           "(default 10; 0 for none)")
    bundle.add_argument("--force", action="store_true",
                        help="replace OUT.zip even if it is not a bundle this command wrote")
    bundle.add_argument("--over-deadline", action="store_true",
                        help="build even if a copy that hangs everywhere could outlast --deadline (or the deadline "
                             "is close to the platform's limit)")
    _add_grade_command(commands)
    _add_canvas_command(commands)
    args = parser.parse_args(argv)
    root = ROOT
    if args.command in ("grade", "canvas-csv"):
        from minitorch.exercises.grader.trusted.class_run import grade_class
        try:
            if args.command == "grade":
                check_readable(Path(args.submissions), args.submissions, "SUBMISSIONS", ExerciseError)
            return grade_class(args, root) if args.command == "grade" else _write_canvas(args)
        except ExerciseError as error:
            parser.exit(2, f"{parser.prog}: error: {error}\n")

    try:
        if args.command == "list":
            _print_list(root)
            return 0
        if args.command == "carry-over":
            from minitorch.exercises.edition import carry_over
            carried, not_carried = carry_over(Path(args.old), Path(args.new))
            print(f"Carried over into {Path(args.new).resolve()}: {', '.join(carried) or 'nothing'} "
                  f"(functions written in {Path(args.old).resolve()} whose new copy was still a stub)")
            released = (read_manifest_data(Path(args.new)) or {}).get("released") or []
            if released:
                print(f"The new edition already holds the answers the instructor released: {', '.join(released)} "
                      f"(your own versions of those stay in {Path(args.old).resolve()})")
            for exercise_id, why in not_carried.items():
                print(f"NOT carried over: {exercise_id}, {why}; fix it in the old copy and run carry-over again",
                      file=sys.stderr)
            return 1 if not_carried else 0
        exercises = load_exercises(root)
        try:
            chapters = [int(part) for part in _split_list(args.chapter)]
        except ValueError:
            raise ExerciseError(f"--chapter takes chapter numbers such as 3 or 1,2, got {args.chapter!r}") from None
        selected = select(exercises, only=_split_list(args.only), chapters=chapters)
        if args.command == "gradescope-bundle":
            settings = build_bundle(args.out, selected, seed=args.exercise_seed, timeout=args.timeout,
                                    deadline=args.deadline, over_deadline=args.over_deadline, root=root,
                                    hidden_visibility=args.hidden_tests, late_penalty=args.late_penalty,
                                    force=args.force)
            return _print_bundle(args.out, settings, seed_given=args.exercise_seed is not None)
        if args.solutions and (args.only or args.chapter or args.release or args.handed_out_before):
            raise ExerciseError("--solutions releases every answer and hands out nothing: give it alone")
        released = exercises if args.solutions else select(exercises, only=_split_list(args.release)) \
            if args.release else []
        before = [exercise.id for exercise in select(exercises, only=_split_list(args.handed_out_before))] \
            if args.handed_out_before else []
        handed_out = [] if args.solutions else selected
        prerequisites_refused(handed_out, released, before)
        summary = make_student_edition(args.dest, handed_out, root, released, before=before)
    except ExerciseError as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    print(f"{'Solutions' if args.solutions else 'Student'} edition written to {Path(args.dest).resolve()}")
    print(f"  handed out (graded): {', '.join(summary['handed_out']) or 'none'}")
    stubbed = [exercise_id for exercise_id in summary["stubbed"] if exercise_id not in summary["handed_out"]]
    print(f"  answers released: {'every one' if args.solutions else ', '.join(summary['released']) or 'none'}"
          + (f"; handed out before (students bring their own): {', '.join(before)}" if before else "")
          + (f"; every other exercise is a stub ({len(stubbed)})" if stubbed else ""))
    print(f"  solution cells removed from the chapters: {summary['solution_cells_removed']}")
    if not summary["handed_out"]:
        return 0
    print(f"Students run: python -m pytest -m ex{summary['handed_out'][0].replace('.', '_')}  (one exercise), "
          f"python -m pytest -m \"not slow\"  (everything), and bring last week's work with: python -m "
          f"minitorch.exercises carry-over LAST_WEEKS_COPY THIS_EDITION")
    print("To grade the copies that come back (one folder or .zip per student in SUBMISSIONS), from this repository:")
    print(f"  python -m minitorch.exercises grade SUBMISSIONS --out GRADES --edition {Path(args.dest).resolve()} "
          f"--jobs 2")
    print("  (--edition grades what this edition handed out, on a fresh secret seed kept in GRADES/run.json)")
    print("or one copy in this process: python -m pytest -m \"not slow\" --minitorch-root=PATH/TO/THEIR/COPY")
    return 0


if __name__ == "__main__":
    from minitorch.tools.commands import run_command

    sys.exit(run_command(main, name="python -m minitorch.exercises"))
