"""The gradebook of a class (chapter 11): what each student gets back, and the class's tables.

    OUT/grades.csv, summary.md, similarity.md        the class, for you
    OUT/adjustments.csv                              yours: manual points, late penalties (never written again)
    OUT/run.json                                     the settings and the secret seed (owner-only)
    OUT/feedback/STUDENT/feedback.md, results.json   what a student may read: hand each their folder
    OUT/private/STUDENT/check-log.txt, answers.json  yours only: the full failures (they quote the hidden inputs)

Students live in folders of their own, so no entry's name can take a file of the run's. Everything here is rebuilt
from the students' results.json and adjustments.csv, written atomically, with student text as data.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from minitorch.exercises.registry import EXERCISES, ExerciseError, sort_key
from minitorch.exercises.grader.trusted import similarity
from minitorch.exercises.grader.trusted.student_text import csv_cell, in_markdown, shown
from minitorch.exercises.grader.trusted.submissions import named, student_of
from minitorch.outputs import write_atomically

FEEDBACK_FOLDER, PRIVATE_FOLDER = "feedback", "private"
ADJUSTMENTS_NAME, RUN_NAME = "adjustments.csv", "run.json"
ADJUSTMENT_COLUMNS = ("student", "points", "late_penalty", "comment")
CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")  # the first columns of its gradebook
PLAIN_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")  # no _, no other digits
FAILURE_KINDS = ("failed", "not attempted", "blocked", "timed out", "crashed", "does not compile", "function not found",
                 "too large", "helper outside the function", "refused", "not graded")


def points(value: float) -> str:
    """Points as the gradebook writes them: up to 6 decimals, no trailing zeros (2, 1.5, 0.666667)."""
    return f"{value:.6f}".rstrip("0").rstrip(".")


def feedback_markdown(graded: dict) -> str:
    """What a student reads: the score, each exercise's points, and what failed and why (shortest first)."""
    extra = graded["extra_data"]
    lines = [f"# Grading of {in_markdown(extra['student'])}: {points(graded['score'])} / {extra['max_score']}", "",
             f"Graded {extra['graded_at']} (grader {extra['grader_version']}), on inputs you have not seen. Each "
             f"failed test says what kind of failure it was and what the test checks; your own "
             f"`python -m pytest -m exX_Y` runs the same tests on other inputs and shows every failure in full.", ""]
    if not extra["graded"]:  # nothing ran: the reason is all there is to say
        return "\n".join(lines + ["**" + in_markdown(graded["output"][:3000]) + "**"]) + "\n"
    lines += ["| exercise | title | points | tests |", "| --- | --- | ---: | --- |"]
    for exercise_id, row in extra["exercises"].items():
        kinds = ", ".join(f"{count} {kind}" for kind, count in row["kinds"].items())
        lines.append(f"| {exercise_id} | {in_markdown(row['title'])} | {points(row['earned'])} / {row['points']} | "
                     f"{kinds} |")
    failing = [test for test in graded["tests"] if test["status"] != "passed"]
    lines += ["", "## What failed, and why", ""] if failing else []
    for exercise_id in extra["exercises"]:
        by_what: dict[str, list[dict]] = {}
        for test in failing:
            if test["number"] == exercise_id:
                by_what.setdefault(test["extra_data"]["what"] or "(no message)", []).append(test)
        for what, tests in sorted(by_what.items(), key=lambda item: len(item[0])):
            lines += [f"**{exercise_id}, {in_markdown(tests[0]['extra_data']['kind'])}: {len(tests)} test(s)**", "",
                      "  \n".join(in_markdown(line) for line in what.splitlines()[:40]), ""]
            lines += [_test_line(test) for test in tests[:20]]
            lines += [f"- and {len(tests) - 20} more", ""] if len(tests) > 20 else [""]
        if by_what:
            lines += [f"To see these failures in full, run in your copy: python -m pytest -m "
                      f"ex{exercise_id.replace('.', '_')}", ""]
    return "\n".join(lines) + "\n"


def _test_line(test: dict) -> str:
    """A failed test in the feedback: its name, and what it checks if its docstring says more."""
    name, reason = test["extra_data"]["nodeid"].split("::", 1)[-1], test["extra_data"]["reason"]
    in_words = name.split("::")[-1].split("[")[0].removeprefix("test_").replace("_", " ")
    code = shown(name).replace("`", "'")  # (the grader's own test, shown as it is in a code span)
    return f"- `{code}`" + (f": {in_markdown(reason)}" if reason != in_words else "")


def class_rows(out: Path, students=None, recorded: dict | None = None) -> list[dict]:
    """Every complete OUT/feedback/STUDENT/results.json (of `students`, if given), in student order; with `recorded`
    (run.json's digests of the files grade wrote), only those still as written: the folder is handed back, so a
    file changed there is not the grade (a gradebook of an earlier grader records none, and is read as it is)."""
    rows, folder = [], Path(out) / FEEDBACK_FOLDER
    for path in sorted(folder.glob("*/results.json")) if folder.is_dir() else []:
        if students is not None and path.parent.name not in students:
            continue
        try:
            data = path.read_bytes()
            if recorded is not None and recorded.get(path.parent.name) != digest_of(data):
                continue
            graded = json.loads(data.decode("utf-8"))
        except (OSError, ValueError):
            continue  # (not a file the grader wrote: that student is graded again)
        if graded.get("extra_data", {}).get("complete"):
            rows.append(graded)
    return rows


def digest_of(data: bytes) -> str:
    """What run.json records of a student's results.json as grade wrote it: "sha256:HEX" of its bytes."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def results_digest(out: Path, student: str) -> str:
    """`digest_of` OUT/feedback/STUDENT/results.json, or "" if it cannot be read."""
    try:
        return digest_of((Path(out) / FEEDBACK_FOLDER / student / "results.json").read_bytes())
    except OSError:
        return ""


def changed_results(out: Path, recorded: dict | None) -> list[str]:
    """The students of `recorded` (run.json's digests) whose results.json in OUT/feedback is no longer as written."""
    return sorted(student for student, digest in (recorded or {}).items() if results_digest(out, student) != digest)


def _read(path: Path, kind: str, fix: str) -> str:
    """The text of a file of the instructor's (UTF-8, a spreadsheet's byte-order mark dropped)."""
    if not path.is_file():  # (a named pipe would block the read forever)
        raise ExerciseError(f"{path} is not a regular file (a folder, a named pipe or a device); {fix}")
    try:
        return path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise ExerciseError(f"{path} cannot be read as a UTF-8 {kind} ({error}); {fix}") from None


def write_run(out: Path, run: dict) -> None:
    """OUT/run.json, readable and writable by its owner only: it holds the secret exercise seed."""
    write_atomically(Path(out) / RUN_NAME, json.dumps(run, indent=1) + "\n", mode=0o600)


def read_run(out: Path) -> dict | None:
    """OUT/run.json, or None if there is none; ExerciseError if it cannot be read."""
    path, fix = Path(out) / RUN_NAME, "grade into a new --out, or restore it"
    if not path.exists():
        return None
    try:
        run = json.loads(_read(path, "run record", fix))
    except ValueError as error:
        raise ExerciseError(f"{path} is not a run record ({error}); {fix}") from None
    if not isinstance(run, dict):
        raise ExerciseError(f"{path} is not a run record; {fix}")
    wrong = _wrong_field(run)
    if wrong:  # (a seed of "abc" was read as no seed, and blamed on the command line's --exercise-seed)
        raise ExerciseError(f"{path} is not a run record ({wrong}); {fix}")
    return run


def _wrong_field(run: dict) -> str:
    """What of run.json's fields grade reads is not of the kind grade writes, in words; "" if none."""
    def number(value, whole=False):
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0 \
            and (isinstance(value, int) or not whole)

    table = ("a table of students", lambda value: isinstance(value, dict) and all(
        isinstance(item, str) for item in (*value, *value.values())))
    kinds = {"exercise_seed": ("a whole number >= 0", lambda value: number(value, whole=True)),
             "timeout": ("a number of seconds", number), "budget": ("a number of seconds", number),
             "exercises": ("a list of this book's exercise IDs (python -m minitorch.exercises list)",
                           lambda value: isinstance(value, list) and all(
                               isinstance(item, str) and item in EXERCISES for item in value)),
             "edition": ("a folder's name", lambda value: isinstance(value, str)),
             "submissions": table, "results": table, "found": table}
    for name, (kind, right) in kinds.items():
        if name in run and not right(run[name]):
            return f"its {name} is {shown(repr(run[name]))[:60]}, not {kind}"
    return ""


@dataclass
class Adjustment:
    """The instructor's changes to one student's autograded total: the sum of their rows of adjustments.csv."""

    points: float = 0.0  # added
    penalty_points: float = 0.0  # taken off
    penalty_share: float = 0.0  # taken off, as a share of the autograded total (0.1 for "10%")
    comments: list[str] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)  # its rows in adjustments.csv

    def late_penalty(self, autograded: float) -> float:
        return round(self.penalty_points + self.penalty_share * autograded, 6)

    def total(self, autograded: float) -> float:
        """autograded + points - late penalty, never below 0."""
        return max(0.0, round(autograded + self.points - self.late_penalty(autograded), 6))


def read_adjustments(out: Path, maximum: float | None = None) -> dict[str, Adjustment]:
    """Student -> Adjustment from OUT/adjustments.csv, one row per change: `points` added (negative to take off),
    `late_penalty` taken off in points ("1.5") or as a share ("10%"). ExerciseError naming the line of a cell that
    is not a number, or the rows of a student's changes beyond the assignment's `maximum`: a typo."""
    path = Path(out) / ADJUSTMENTS_NAME
    if not path.exists():
        return {}
    columns, rows = _strict_csv(_read(path, "CSV", "save it as CSV UTF-8"), path)
    if not {"student", "points", "late_penalty"} <= set(columns):
        raise ExerciseError(f"{path}: the header should read {','.join(ADJUSTMENT_COLUMNS)}")
    found: dict[str, Adjustment] = {}
    for row, line in rows:
        student, where = (row.get("student") or "").strip(), f"{path}, line {line}"
        penalty, comment = (row.get("late_penalty") or "").strip(), (row.get("comment") or "").strip()
        if not student:  # (a wholly blank row is skipped; a change for no one would be lost)
            if any((row.get(column) or "").strip() for column in ADJUSTMENT_COLUMNS[1:]):
                raise ExerciseError(f"{where}: points, a late_penalty or a comment but no student; name the student")
            continue
        if None in row:  # more cells than columns: an unquoted comma in the comment, most likely
            raise ExerciseError(f"{where}: more cells than the header's columns; put a comment with a comma in "
                                f"double quotes")
        if penalty.startswith("-"):
            raise ExerciseError(f"{where}: late_penalty {penalty!r} is negative; a bonus goes in points")
        adjustment = found.setdefault(student, Adjustment())
        adjustment.points += _number(row.get("points"), where, "points")
        if penalty.endswith("%"):
            adjustment.penalty_share += _number(penalty, where, "late_penalty", share=True) / 100
        else:
            adjustment.penalty_points += _number(penalty, where, "late_penalty")
        adjustment.comments += [comment] if comment else []
        adjustment.lines.append(line)
    for student, adjustment in found.items():
        if maximum is not None:
            _refuse_beyond(adjustment, maximum, f"{path}, line {adjustment.lines[0]}" if len(adjustment.lines) == 1
                           else f"{path}, lines {', '.join(map(str, adjustment.lines))} (together, for {student})")
    return found


def _refuse_beyond(adjustment: Adjustment, maximum: float, where: str) -> None:
    typo = f"is more than the assignment's {points(maximum)} points; a typo?"
    if abs(adjustment.points) > maximum + 1e-9:  # (shown to 15 digits: 1.0000001 is not "1", more than 1)
        raise ExerciseError(f"{where}: points {adjustment.points:.15g} {typo} (an adjustment adds or takes off at "
                            f"most the maximum)")
    if adjustment.penalty_points > maximum + 1e-9:
        raise ExerciseError(f"{where}: late_penalty {adjustment.penalty_points:.15g} {typo} (write it in points "
                            f"up to the maximum, or as a share up to 100%)")
    if adjustment.penalty_share > 1 + 1e-9:
        raise ExerciseError(f"{where}: late_penalty {100 * adjustment.penalty_share:.15g}% is more than 100%; "
                            f"a typo? (100% takes off every autograded point)")


def _number(text, where: str, column: str, share: bool = False) -> float:
    """A cell as a number written plainly (2, -1.5, .5, 1e2; with `share`, followed by %), an empty cell as 0:
    Python's float reads "1_0" as 10 and "١" as 1, which no spreadsheet writes, and "%" alone lacks its number; a
    typo, refused."""
    text = (text or "").strip()
    number = text.removesuffix("%").strip() if share else text
    value = float(number) if PLAIN_NUMBER.fullmatch(number) else 0.0 if not text else math.nan
    if not math.isfinite(value):
        raise ExerciseError(f"{where}: {column} {number or text!r} is not a number (write 2, -1.5, or for "
                            f"late_penalty 10%)")
    return value


def _strict_csv(text: str, path) -> tuple[list[str], list[tuple[dict, int]]]:
    """A CSV's header and its rows with their line numbers; a quote left open is an error naming its line, and so is
    a column named twice (a row keeps only the last cell of a name: a student would get another's grade)."""
    reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)
    try:
        rows = [(row, reader.line_num) for row in reader]
    except csv.Error as error:
        raise ExerciseError(f"{path}, line {reader.line_num + 1}: not a well-formed CSV ({error}): a quote left "
                            f"open?") from None
    columns = list(reader.fieldnames or [])
    twice = sorted({name for name in columns if name.strip() and columns.count(name) > 1})
    if twice:
        raise ExerciseError(f"{path}, line 1: the column(s) {', '.join(map(repr, twice))} are named twice; keep one "
                            f"of each (which one is meant cannot be told)")
    return columns, rows


def refuse_unknown_students(out: Path, adjustments: dict, students, who: str) -> None:
    """ExerciseError if adjustments.csv names a student not among `students` (`who` says where the names are):
    that adjustment would be lost; or names one student in two spellings (Unicode forms), whose rows would not add."""
    matched = [named(cell, students) for cell in adjustments]
    unknown = sorted(cell for cell, student in zip(adjustments, matched) if student is None)
    if unknown:
        raise ExerciseError(f"{Path(out) / ADJUSTMENTS_NAME} names student(s) {', '.join(unknown)}, who {who}: fix "
                            f"the names, or their adjustments would be lost")
    twice = sorted(cell for cell, student in zip(adjustments, matched) if matched.count(student) > 1)
    if twice:
        raise ExerciseError(f"{Path(out) / ADJUSTMENTS_NAME} names {', '.join(map(ascii, twice))}, one student in "
                            f"two Unicode forms (accents composed and decomposed); write the name one way")


def adjustments_of(adjustments: dict[str, Adjustment], students) -> dict[str, Adjustment]:
    """Student -> Adjustment, adjustments.csv's names matched to `students` as `named` matches them."""
    return {named(cell, students): adjustment for cell, adjustment in adjustments.items()}


def maximum_of(exercise_ids) -> int:
    return sum(EXERCISES[exercise_id].points for exercise_id in exercise_ids if exercise_id in EXERCISES)


def grades_csv(rows: list[dict], exercise_ids, adjustments: dict[str, Adjustment] | None = None) -> str:
    """student,total,max_total,<points per exercise>,autograded,adjustment,late_penalty,comment,flags: total is
    autograded + adjustment - late_penalty, never below 0; text cells read as text in a spreadsheet."""
    ids, text = sorted(exercise_ids, key=sort_key), io.StringIO()
    mine = adjustments_of(adjustments or {}, [graded["extra_data"]["student"] for graded in rows])
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(["student", "total", "max_total", *ids, "autograded", "adjustment", "late_penalty", "comment",
                     "flags"])
    for graded in rows:
        extra, score = graded["extra_data"], graded["score"]
        earned = [points(extra["exercises"][i]["earned"]) if i in extra["exercises"] else "" for i in ids]
        adjustment = mine.get(extra["student"], Adjustment())
        writer.writerow([csv_cell(extra["student"]), points(adjustment.total(score)), extra["max_score"], *earned,
                         points(score), points(adjustment.points), points(adjustment.late_penalty(score)),
                         csv_cell("; ".join(adjustment.comments)), csv_cell("; ".join(extra["flags"]))])
    return text.getvalue()


def exercise_statistics(rows: list[dict], exercise_ids) -> dict[str, dict]:
    """Per exercise, over the copies that could be graded: mean points, share with full marks, failures by kind."""
    statistics = {}
    for exercise_id in sorted(exercise_ids, key=sort_key):
        graded = [row["extra_data"]["exercises"][exercise_id] for row in rows
                  if row["extra_data"]["graded"] and exercise_id in row["extra_data"]["exercises"]]
        count, worth = max(len(graded), 1), EXERCISES[exercise_id].points
        statistics[exercise_id] = {
            "title": EXERCISES[exercise_id].title, "points": worth,
            "mean": sum(row["earned"] for row in graded) / count,
            "full_marks": sum(abs(row["earned"] - worth) < 1e-9 for row in graded) / count,
            "failures": {kind: sum(row["kinds"].get(kind, 0) for row in graded) for kind in FAILURE_KINDS}}
    return statistics


def summary_markdown(rows: list[dict], exercise_ids, run: dict) -> str:
    """The class at a glance, for the instructor. It names no seed (that is in run.json only)."""
    totals = [row["score"] for row in rows if row["extra_data"]["graded"]]
    lines = [f"# Grades of {len(rows)} students", "",
             f"Graded {run['graded_at']} on the exercise seed in {RUN_NAME}, per-test timeout {run['timeout']:g} s, "
             f"grader {run['grader_version']}. Isolation: {run.get('isolation', 'unknown')}. Totals here are "
             f"autograded; grades.csv's total adds {ADJUSTMENTS_NAME}.", ""]
    if totals:
        lines += [f"Total over the {len(totals)} copies graded: mean {sum(totals) / len(totals):.2f} / "
                  f"{maximum_of(exercise_ids)}, lowest {min(totals):.2f}, highest {max(totals):.2f}.", ""]
    lines += ["| exercise | title | mean | full marks | " + " | ".join(FAILURE_KINDS) + " |",
              "| --- | --- | ---: | ---: | " + " | ".join("---:" for _ in FAILURE_KINDS) + " |"]
    for exercise_id, row in exercise_statistics(rows, exercise_ids).items():
        lines.append(f"| {exercise_id} | {row['title']} | {row['mean']:.2f} / {row['points']} | "
                     f"{row['full_marks']:.0%} | " + " | ".join(str(row["failures"][k]) for k in FAILURE_KINDS) + " |")
    not_graded = [in_markdown(row["extra_data"]["student"]) for row in rows if not row["extra_data"]["graded"]]
    if not_graded:
        lines += ["", f"{len(not_graded)} cop{'y' if len(not_graded) == 1 else 'ies'} could not be graded "
                      f"({', '.join(not_graded)}; why: under Flags). They score 0 in grades.csv and are left out "
                      f"of the table."]
    flagged = [row["extra_data"] for row in rows if row["extra_data"]["flags"]]
    lines += ["", "## Flags", ""] if flagged else []
    lines += [f"- {in_markdown(extra['student'])}: {in_markdown('; '.join(extra['flags']))}" for extra in flagged]
    return "\n".join(lines) + "\n"


def write_gradebook(out: Path, exercise_ids, run: dict, students=None, grader_root: Path | None = None,
                    compare_answers: bool = True) -> list[dict]:
    """grades.csv, summary.md and (unless not `compare_answers`) similarity.md, from the students' files in OUT and
    adjustments.csv; the answers are also compared with the functions of the book at `grader_root`, if given."""
    out = Path(out)
    if not (out / ADJUSTMENTS_NAME).exists():  # created with its header; the instructor's file is never rewritten
        write_atomically(out / ADJUSTMENTS_NAME, ",".join(ADJUSTMENT_COLUMNS) + "\n")
    adjustments = read_adjustments(out, maximum_of(exercise_ids))
    rows = class_rows(out, students, run.get("results"))
    write_atomically(out / "grades.csv", grades_csv(rows, exercise_ids, adjustments))
    write_atomically(out / "summary.md", summary_markdown(rows, exercise_ids, run))
    if compare_answers:
        answers, missing = {}, []
        for student in (row["extra_data"]["student"] for row in rows):
            try:
                answers[student] = dict(json.loads((out / PRIVATE_FOLDER / student / "answers.json").read_text()))
            except (OSError, ValueError, TypeError):
                missing.append(student)  # (named in similarity.md: never a table claiming to compare them)
        fingerprinted = any(isinstance(event, dict) and event.get("fingerprint") for found in answers.values()
                            for event in found.values())
        known = similarity.known_sources(grader_root) if grader_root is not None and fingerprinted else {}
        table = similarity.similarity_markdown(answers, exercise_ids, known, missing)
        write_atomically(out / "similarity.md", table)
    return rows


def _refuse_not_graded(roster_path: Path, roster: list[dict], cells: list[str], matched: list,
                       not_graded: dict[str, str]) -> None:
    """ExerciseError naming the roster's students without a grade whose submission (`cells`, the roster's column)
    was found but not graded (grade --student graded others only, or a run was stopped)."""
    submitted = {student_of(name) for student, entry in not_graded.items() for name in (student, entry)}
    waiting = [row["Student"] for row, cell, student in zip(roster, cells, matched) if student is None and (
        named(student_of(cell), submitted) is not None or named(student_of(cell.strip()), submitted) is not None)]
    if waiting:
        raise ExerciseError(f"{roster_path}: {', '.join(map(shown, waiting))} handed in a submission that is not "
                            f"graded yet (the last grade run found it, but graded other students only); their cells "
                            f"would be empty, as if they handed in nothing. Run grade without --student to grade them, "
                            f"then canvas-csv")


def canvas_csv(grades: list[dict], roster_path: Path, assignment: str, entries: dict[str, str] | None = None,
               leave_out_unlisted: bool = False, not_graded: dict[str, str] | None = None) -> tuple[str, list[str],
                                                                                                list[str]]:
    """(the CSV Canvas's gradebook imports, the roster's students without a grade, the graded students the roster
    lacks). `grades` are grades.csv's rows; the roster is Canvas's gradebook export with a column `submission`, each
    student's entry with or without .zip (`entries`: student -> entry, where they differ). A graded student the
    roster lacks is refused (the grade would be lost), or with `leave_out_unlisted` (a student who dropped) left out.
    A roster's student among `not_graded` (student -> entry: submitted, but not graded yet) is refused: an empty
    cell would say they handed in nothing."""
    clash = next((column for column in CANVAS_COLUMNS if column.casefold() == assignment.strip().casefold()), None)
    if clash is not None:  # a header naming a column twice: Canvas would read one as the other
        raise ExerciseError(f"--assignment {assignment!r}: Canvas's gradebook already has a column {clash!r}; name "
                            f"the assignment's column as Canvas names it, e.g. \"Week 3 (12345)\"")
    columns, rows = _strict_csv(_read(Path(roster_path), "CSV", "save it as CSV UTF-8"), roster_path)
    if not {"submission", "Student"} <= set(columns) or not {"ID", "SIS User ID", "SIS Login ID"} & set(columns):
        raise ExerciseError(f"{roster_path}: the roster needs the columns submission, Student and one of ID, SIS "
                            f"User ID, SIS Login ID (Canvas's gradebook export with a submission column added); "
                            f"it has {', '.join(columns) or 'none'}")
    roster = [row for row, _ in rows if (row.get("Student") or "").strip() and "Points Possible" not in row["Student"]]
    for row in roster:
        if None in row or None in row.values():  # more or fewer cells than columns: Canvas could not match it
            raise ExerciseError(f"{roster_path}: the row of {row['Student']!r} has {'more' if None in row else 'fewer'}"
                                f" cells than the header's {len(columns)} columns; quote a cell with a comma in it")
    for column in ("ID", "SIS User ID", "SIS Login ID"):  # one student in two rows: Canvas keeps one grade
        seen: dict[str, str] = {}
        for row in roster:
            value = (row.get(column) or "").strip()
            if value and value in seen:
                raise ExerciseError(f"{roster_path}: {column} {value!r} is in two rows ({seen[value]!r} and "
                                    f"{row['Student']!r}); each student has one row")
            seen[value] = row["Student"]
    totals = {row["student"]: row["total"] for row in grades}
    names = {}  # what a roster's submission cell may say -> the student
    for student in totals:
        for name in (student, (entries or {}).get(student, student)):
            names.setdefault(student_of(name), student)
    cells = [row.get("submission") or "" for row in roster]  # as written first: grade keeps 'alice ' apart
    matched = [names.get(named(student_of(cell), names), names.get(named(student_of(cell.strip()), names)))
               for cell in cells]  # row -> student
    twice = sorted({student for student in matched if student is not None and matched.count(student) > 1})
    if twice:
        raise ExerciseError(f"{roster_path}: the submission of {twice[0]!r} is in two rows; each student has one")
    _refuse_not_graded(roster_path, roster, cells, matched, not_graded or {})
    unlisted = sorted(set(totals) - set(matched))
    if unlisted and not leave_out_unlisted:
        raise ExerciseError(f"{roster_path}: no roster row for {len(unlisted)} graded submission(s):\n" +
                            "".join(f"  {shown(student)}\n" for student in unlisted) + "add them to its submission "
                            "column (their grades would otherwise be lost), or leave them out with "
                            "--leave-out-unlisted (students who dropped the course)")
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow([*CANVAS_COLUMNS, assignment])
    for row, student in zip(roster, matched):  # names as grades.csv writes them; the IDs Canvas matches unchanged
        writer.writerow([*(csv_cell(row.get(column, "")) if column in ("Student", "Section") else row.get(column, "")
                           for column in CANVAS_COLUMNS), totals.get(student, "")])
    return text.getvalue(), [row["Student"] for row, student in zip(roster, matched) if student is None], unlisted
