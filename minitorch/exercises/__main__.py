"""The course's command line (chapters 00 and 11): ``python -m minitorch.exercises COMMAND --help`` says each in full.

    list | student-edition DEST | carry-over OLD NEW | gradescope-bundle OUT.zip | grade SUBMISSIONS --out OUT
    | canvas-csv OUT --roster ROSTER.csv --assignment NAME --to FILE.csv
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from minitorch import checks
from minitorch.exercises.edition import TEMPLATES, carry_over, make_student_edition, prerequisites_refused
from minitorch.exercises.grader.trusted.gradescope import HIDDEN_VISIBILITIES, PUBLIC_SEED, build_bundle
from minitorch.exercises.grader.trusted.isolation import KINDS
from minitorch.exercises.registry import (HIDDEN_TESTS, ROOT, ExerciseError, chosen, is_hidden_test, load_exercises,
                                          part_points, read_manifest_data, secret_output_refused)
from minitorch.outputs import OwnFile, PathError, check_readable
from minitorch.tools.exit_policy import stopped_by
from minitorch.tools.options import CommandParser, comma_list

MINIMUM_TIMEOUT = 1.0  # a test's calls start a sandboxed process: below a second a right answer would time out too
SEED = checks.number_argument("--exercise-seed", integer=True, minimum=0)
LISTS = {"--only": "comma-separated exercise IDs, e.g. 3.1,3.2", "--chapter": "comma-separated chapters, e.g. 3 or 1,2",
         "--release": "exercise IDs whose answers the edition keeps (last week's, after its deadline)",
         "--handed-out-before": "exercise IDs an earlier edition handed out, whose answers the students bring "
                                "(carry-over); every exercise handed out needs those it builds on handed out, "
                                "released or named here"}


def _parser() -> CommandParser:
    parser = CommandParser(prog="python -m minitorch.exercises", description="The book's graded exercises, the "
                                                                             "student edition and grading.")
    commands = parser.add_subparsers(dest="command", required=True)
    add = commands.add_parser
    add("list", help="every exercise: ID, chapter, title, where, points (public, hidden), public and hidden tests")
    edition = add("student-edition", help="copy the project to DEST with the chosen exercises' functions stubbed",
                  description="Copy the project to DEST with the functions of the exercises chosen (--only and "
                              "--chapter: their union; neither: every one) stubbed, the cells tagged 'solution' "
                              "removed ('self-check' cells stay) and the other exercises' answers held back.")
    edition.add_argument("dest", help="a new (or empty) folder")
    carry = add("carry-over", help="copy the exercise functions a student wrote in OLD into the new edition NEW")
    carry.add_argument("old", help="your copy of the earlier edition")
    carry.add_argument("new", help="the new edition, as handed out; only its stubs change")
    bundle = add("gradescope-bundle", help="write a Gradescope autograder zip that grades the chosen exercises",
                 description="Write OUT.zip, a Gradescope autograder: setup.sh, run_autograder, this grader's library "
                             "and tests, and its settings (exercises, seed, timeouts), which students never see.")
    bundle.add_argument("out", help="the zip to write, e.g. ../autograder.zip")
    grade = add("grade", help="grade a folder of returned copies (sandboxed, time-limited) into a gradebook",
                description=(TEMPLATES / "grade_help.txt").read_text(encoding="utf-8"),
                formatter_class=argparse.RawDescriptionHelpFormatter)
    grade.add_argument("submissions", help="folder with one copy (folder or .zip) per student")
    grade.add_argument("--out", required=True, help="folder for the gradebook (created if needed; not in SUBMISSIONS)")
    for command, names in ((edition, LISTS), (bundle, ("--only", "--chapter")), (grade, ("--only", "--chapter"))):
        for name in names:
            command.add_argument(name, type=comma_list(name), default="", help=LISTS[name])
    edition.add_argument("--solutions", action="store_true", help="every answer, nothing handed out (after the term)")
    for command, timeout in ((bundle, 20.0), (grade, 60.0)):
        command.add_argument("--exercise-seed", type=SEED, help="seed of the graded tests' inputs (default: a fresh "
                                                                "secret one; students' own runs use 0)")
        command.add_argument("--timeout", default=timeout, help=f"seconds per graded test (default {timeout:g})",
                             type=checks.number_argument("--timeout", minimum=MINIMUM_TIMEOUT, maximum=3600))
    _bundle_options(bundle)
    _grade_options(grade)
    canvas = add("canvas-csv", help="write a gradebook CSV that Canvas imports (Grades > Import)",
                 description="Write OUT's grades (autograded plus adjustments.csv as it is now) as the CSV Canvas "
                             "imports. The roster, Canvas's exported gradebook with a column 'submission', maps each "
                             "submission to its student.")
    canvas.add_argument("out", help="the folder grade wrote (with grades.csv)")
    canvas.add_argument("--roster", required=True, help="CSV: submission, Student, ID, SIS User ID, SIS Login ID, "
                                                        "Section")
    canvas.add_argument("--assignment", required=True, help='the assignment\'s column as Canvas names it, e.g. "Week '
                                                            '3 (12345)" (with its ID Canvas updates that assignment)')
    canvas.add_argument("--to", required=True, help="the CSV to write, e.g. ../canvas-week3.csv")
    canvas.add_argument("--leave-out-unlisted", action="store_true", help="leave out (and list) graded submissions "
                                                                          "the roster lacks (dropped students)")
    canvas.add_argument("--force", action="store_true", help="replace --to even if canvas-csv did not write it")
    return parser


def _bundle_options(bundle: argparse.ArgumentParser) -> None:
    """gradescope-bundle's own options (its --only, --chapter, --exercise-seed and --timeout are grade's too)."""
    bundle.add_argument("--deadline", default=540.0, type=checks.number_argument(
        "--deadline", minimum=MINIMUM_TIMEOUT, maximum=86400), help="seconds for a whole submission; the bundle "
                                                                    "writes its results by then (default 540)")
    bundle.add_argument("--hidden-tests", choices=HIDDEN_VISIBILITIES, default="after_due_date",
                        help="when students see the hidden tests' results (default after_due_date)")
    bundle.add_argument("--late-penalty", default=10.0, type=checks.number_argument("--late-penalty", minimum=0,
                                                                                     maximum=100),
                        help="percent of the score taken off per started day past the due date (default 10)")
    bundle.add_argument("--over-deadline", action="store_true", help="build even if a copy that hangs everywhere "
                                                                     "could outlast --deadline")
    bundle.add_argument("--force", action="store_true", help="replace OUT.zip even if gradescope-bundle did not "
                                                             "write it")


def _grade_options(grade: argparse.ArgumentParser) -> None:
    """grade's own options."""
    grade.add_argument("--jobs", default=1, type=checks.number_argument("--jobs", integer=True, minimum=1, maximum=64),
                       help="students graded at once (default 1; one per core)")
    grade.add_argument("--budget", default=900.0, help="seconds per student; the tests not run by then fail as timed "
                                                       "out (default 900)",
                       type=checks.number_argument("--budget", minimum=MINIMUM_TIMEOUT, maximum=86400))
    grade.add_argument("--edition", default="", help="the student edition you handed out: grade what its "
                                                     "minitorch/exercises/edition.json names")
    grade.add_argument("--isolation", default="auto", choices=["auto", *KINDS], help="how the students' code is "
                                                                                     "sandboxed (default auto)")
    again = grade.add_mutually_exclusive_group()
    again.add_argument("--regrade", "--force", dest="regrade", action="store_true",
                       help="grade every student again (adjustments.csv is kept)")
    again.add_argument("--student", action="append", type=comma_list("--student"), default=[], metavar="NAME",
                       help="grade only these students again (NAME or NAME,NAME); the others are kept")


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "grade":
            from minitorch.exercises.grader.trusted.class_run import grade_class

            check_readable(Path(args.submissions), args.submissions, "SUBMISSIONS", ExerciseError)
            return grade_class(args, ROOT)
        return {"list": _list, "student-edition": _edition, "carry-over": _carry_over, "canvas-csv": _write_canvas,
                "gradescope-bundle": _bundle}[args.command](args)
    except ExerciseError as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")


def _list(args) -> int:
    from minitorch.exercises.grader.trusted.grading import collect_tests

    exercises, has_hidden = load_exercises(ROOT), (ROOT / HIDDEN_TESTS).is_dir()  # an edition holds no hidden tests
    try:
        counts = collect_tests(ROOT, [e.id for e in exercises])  # {node ID: exercise}; collection only
    except ExerciseError:
        counts = None
    rows = [("ID", "chapter", "title", "where", "points", "of them hidden", "public tests", "hidden tests")]
    for e in exercises:
        found = [is_hidden_test(nodeid) for nodeid, owner in (counts or {}).items() if owner == e.id]
        rows.append((e.id, f"{e.chapter:02d}", e.title, f"{e.module}: {e.function}", str(e.points),
                     f"{part_points(e)[1]:g}", "?" if counts is None else str(found.count(False)),
                     "?" if counts is None else str(found.count(True)) if has_hidden else "-"))
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) if column < 4 else cell.rjust(width)
                        for column, (cell, width) in enumerate(zip(row, widths))).rstrip())
    points, hidden = sum(e.points for e in exercises), round(sum(part_points(e)[1] for e in exercises), 6)
    print(f"\n{len(exercises)} exercises, {points} points, in chapters "
          f"{', '.join(sorted({f'{e.chapter:02d}' for e in exercises}))}.\nPoints: the public tests carry "
          f"{round(points - hidden, 6):g}, the hidden tests {hidden:g} (each exercise's hidden_share in "
          f"minitorch/exercises/registry.py; an exercise without hidden tests gives the public ones all its points).")
    if not has_hidden:
        print(f"This copy holds no hidden tests ({HIDDEN_TESTS}/ is the instructor's): your own run earns the public "
              f"points; the hidden tests grade the rest, on inputs of their own, when the class is graded.")
    if counts is None:
        print("(test counts unknown: collecting the tests failed; run python -m pytest --collect-only to see why)")
    print("Run one exercise's tests with: python -m pytest -m ex3_2 (or a chapter's: -m ch03)")
    return 0


def _edition(args) -> int:
    exercises = load_exercises(ROOT)
    if args.solutions and (args.only or args.chapter or args.release or args.handed_out_before):
        raise ExerciseError("--solutions releases every answer and hands out nothing: give it alone")
    handed_out = [] if args.solutions else chosen(exercises, args.only, args.chapter)
    released = exercises if args.solutions else chosen(exercises, args.release) if args.release else []
    before = [e.id for e in chosen(exercises, args.handed_out_before)] if args.handed_out_before else []
    prerequisites_refused(handed_out, released, before)
    summary = make_student_edition(args.dest, handed_out, ROOT, released, before=before)
    stubbed = [exercise_id for exercise_id in summary["stubbed"] if exercise_id not in summary["handed_out"]]
    print(f"{'Solutions' if args.solutions else 'Student'} edition written to {Path(args.dest).resolve()}\n"
          f"  handed out (graded): {', '.join(summary['handed_out']) or 'none'}\n"
          f"  answers released: {'every one' if args.solutions else ', '.join(summary['released']) or 'none'}"
          + (f"; handed out before (students bring their own): {', '.join(before)}" if before else "")
          + (f"; every other exercise is a stub ({len(stubbed)})" if stubbed else "")
          + f"\n  solution cells removed from the chapters: {summary['solution_cells_removed']}")
    if summary["handed_out"]:
        print(f"Students run: python -m pytest -m {handed_out[0].marker}  (one exercise), python -m pytest -m \"not "
              f"slow\"  (everything), and bring last week's work with: python -m minitorch.exercises carry-over "
              f"LAST_WEEKS_COPY THIS_EDITION\nTo grade the copies that come back (one folder or .zip per student in "
              f"SUBMISSIONS), from this repository:\n  python -m minitorch.exercises grade SUBMISSIONS --out GRADES "
              f"--edition {Path(args.dest).resolve()} --jobs 2\n  (--edition grades what this edition handed out, on "
              f"a fresh secret seed kept in GRADES/run.json)\nor one copy in this process: python -m pytest -m \"not "
              f"slow\" --minitorch-root=PATH/TO/THEIR/COPY")
    return 0


def _carry_over(args) -> int:
    carried = None  # the IDs carry_over put in NEW, once it has returned
    try:
        carried, not_carried = carry_over(Path(args.old), Path(args.new))
        _report_carried(args, carried, not_carried)
    except KeyboardInterrupt:  # carry_over moves its files into place all together, or not at all
        state = ("is as it was: nothing was carried over" if carried is None
                 else f"is complete: {', '.join(carried) or 'nothing'} carried over")
        print(f"carry-over: stopped by {stopped_by()}; {args.new} {state}", file=sys.stderr)
        return 130
    return 1 if not_carried else 0


def _report_carried(args, carried: list[str], not_carried: dict[str, str]) -> None:
    old, new = Path(args.old).resolve(), Path(args.new).resolve()
    print(f"Carried over into {new}: {', '.join(carried) or 'nothing'} (functions written in {old} whose new copy "
          f"was still a stub)")
    released = (read_manifest_data(Path(args.new)) or {}).get("released") or []
    if released:
        print(f"The new edition already holds the answers the instructor released: {', '.join(released)} (your own "
              f"versions of those stay in {old})")
    for exercise_id, why in not_carried.items():
        print(f"NOT carried over: {exercise_id}, {why}; fix it in the old copy and run carry-over again",
              file=sys.stderr)


def _bundle(args) -> int:
    settings = build_bundle(args.out, chosen(load_exercises(ROOT), args.only, args.chapter), seed=args.exercise_seed,
                            timeout=args.timeout, deadline=args.deadline, over_deadline=args.over_deadline, root=ROOT,
                            hidden_visibility=args.hidden_tests, late_penalty=args.late_penalty, force=args.force)
    seed = "the exercise seed you gave" if args.exercise_seed is not None else "a fresh secret exercise seed (128 bits)"
    hidden, hidden_points, needed = len(settings["hidden_tests"]), settings["hidden_points"], args.deadline + 60
    public, public_points = len(settings["collected"]) - hidden, settings["points"] - hidden_points
    print(f"Gradescope autograder written to {Path(args.out).resolve()}\n  grades exercises "
          f"{', '.join(settings['exercise_ids'])} ({settings['points']} points), {seed}, {args.timeout:g} s per test\n"
          f"  {public} public tests visible at once ({public_points:g} points), {hidden} hidden tests "
          f"({hidden_points:g} points) "
          + ("shown after the due date" if args.hidden_tests == "after_due_date" else "never shown")
          + f"; late submissions lose {args.late_penalty:g}% per started day past the due date\n  The zip holds the "
          f"seed and the graded tests: keep it out of any repository the students can read.")
    if settings["exercise_seed"] == PUBLIC_SEED:
        print("  WARNING: --exercise-seed 0 is the seed of the students' own test runs: they know every graded input. "
              "Leave --exercise-seed out for a fresh secret one.")
    print(f"  worst case (every exercise hangs twice): about {settings['worst_case']:g} s; the bundle stops grading at "
          f"{args.deadline:g} s and reports what it graded.\n  The platform's timeout (a minute more for the container "
          f"to start) must be at least {needed:g} s: "
          + ("Gradescope's default (10 minutes) is enough." if needed <= 600
             else "raise it from Gradescope's default of 10 minutes (40 at most).")
          + "\nUpload it as the assignment's autograder (see chapter 11, For instructors).")
    return 0


def _is_canvas_csv(path: Path) -> bool:
    """Whether `path` is a CSV canvas-csv wrote: its first line is Canvas's five columns and one assignment's, which
    is not a roster's `submission` column (next week's roster, in the layout the help asks for, is no output)."""
    import csv

    from minitorch.exercises.grader.trusted.gradebook import CANVAS_COLUMNS

    with open(path, encoding="utf-8", newline="") as file:
        header = next(csv.reader([file.readline(4096)]), [])
    return len(header) == len(CANVAS_COLUMNS) + 1 and tuple(header[:-1]) == CANVAS_COLUMNS and \
        header[-1].strip().casefold() != "submission"


CANVAS_CSV = OwnFile("a Canvas CSV that canvas-csv wrote (Student, ID, SIS User ID, SIS Login ID, Section and one "
                     "assignment)", _is_canvas_csv)


def _write_canvas(args) -> int:
    """The Canvas CSV of OUT's grades, with adjustments.csv as it is now (a change typed into grades.csv is not
    read)."""
    import csv
    import io

    from minitorch.exercises.grader.trusted import gradebook
    from minitorch.exercises.grader.trusted.student_text import shown
    from minitorch.outputs import check_input_file, check_output_file, refuse_a_file_not_its_own, write_atomically

    run, out = gradebook.read_run(Path(args.out)), Path(args.out)
    if run is None or not (out / "grades.csv").is_file():
        raise ExerciseError(f"{args.out} holds no gradebook (run.json and grades.csv); run grade first")
    altered = gradebook.changed_results(out, run.get("results"))
    if altered:  # a grade is what grade wrote and recorded, never what the handed-back folder says now
        raise ExerciseError(f"{out / gradebook.FEEDBACK_FOLDER}: the results.json of {', '.join(map(shown, altered))} "
                            f"is not the one grade recorded (changed since it was graded); run grade again (it "
                            f"regrades them), then canvas-csv")
    graded = gradebook.class_rows(out, recorded=run.get("results"))
    adjustments = gradebook.read_adjustments(out, gradebook.maximum_of(run.get("exercises") or []))
    gradebook.refuse_unknown_students(args.out, adjustments, [row["extra_data"]["student"] for row in graded],
                                      f"have no grade in {args.out} (a misspelt name, or a student not graded yet)")
    rows = list(csv.DictReader(io.StringIO(gradebook.grades_csv(graded, run["exercises"], adjustments))))
    try:
        target, roster = check_output_file(args.to, "--to"), check_input_file(args.roster, "--roster")
        if target == roster or target.is_relative_to(out.resolve()):
            what = ("the roster" if target == roster
                    else f"a file in the gradebook folder {args.out} (its students' too)")
            raise ExerciseError(f"--to {args.to}: would replace {what}; write the Canvas CSV elsewhere")
        secret_output_refused(target, "--to", ROOT, holding="every student's grade")  # as a gradebook is refused
        refuse_a_file_not_its_own(target, args.to, "--to", CANVAS_CSV, args.force)  # (after what --force never lifts)
    except (PathError, FileNotFoundError) as error:
        raise ExerciseError(str(error)) from None
    args.assignment = _as_typed(args.assignment, "--assignment")
    if not args.assignment.strip() or any(character in args.assignment for character in "\r\n"):
        raise ExerciseError(f"--assignment {args.assignment!r}: name the assignment's column in one line, as Canvas "
                            f"names it, e.g. \"Week 3 (12345)\"")
    entries = {row["extra_data"]["student"]: row["extra_data"].get("entry") or row["extra_data"]["student"]
               for row in graded}
    not_graded = {student: entry for student, entry in (run.get("found") or {}).items() if student not in entries}
    text, without, left_out = gradebook.canvas_csv(rows, roster, args.assignment, entries, args.leave_out_unlisted,
                                                   not_graded)
    write_atomically(target, text, mode=0o600)  # every student's grade: its owner's only, as run.json is
    print(f"Canvas gradebook CSV written to {target}: {len(rows) - len(left_out)} grades in the column "
          f"{args.assignment!r}. Import it in Canvas: Grades > Import.")
    for names, what in ((left_out, "graded submissions have no roster row and were left out (--leave-out-unlisted)"),
                        (without, "students of the roster have no submission; their cells are empty")):
        if names:
            print(f"  {len(names)} {what}:\n" + "".join(f"    {shown(name)}\n" for name in names), end="")
    return 0


def _as_typed(text: str, option: str) -> str:
    """An option's text as typed: in a C or POSIX locale (PYTHONUTF8=0) Python reads a UTF-8 'ö' as two escaped
    bytes, which a file would get as '\\udcc3\\udcb6'; they are read as UTF-8 again, or refused if they are not."""
    if not any("\udc80" <= character <= "\udcff" for character in text):
        return text
    try:
        return os.fsencode(text).decode("utf-8")
    except UnicodeError:
        raise ExerciseError(f"{option} {text.encode('ascii', 'backslashreplace').decode()}: holds bytes that are not "
                            f"UTF-8 text; type it in a UTF-8 terminal") from None


if __name__ == "__main__":
    from minitorch.exercises.registry import exercise_needed
    from minitorch.tools.exit_policy import run_command

    sys.exit(run_command(main, name="python -m minitorch.exercises", explain=exercise_needed, exits=True))
