"""The gradebook of a class: grades.csv, summary.md, a figure, and each student's feedback.md (chapter 11).

Everything here reads the students' results.json (written by `grading.grade_submission`) and the
instructor's adjustments.csv, so the gradebook can be rebuilt at any time from OUT. Every file is
written atomically; run.json (it holds the secret exercise seed) is readable by its owner only.

adjustments.csv is the instructor's: the grader creates it with its header if it is missing and never
writes it again. One row per change (a student may have several):

    student,points,late_penalty,comment
    ann,2,,manual points for the write-up of 3.2
    lee,,10%,two days late
    max,-1,1.5,

`points` are added to the autograded total (negative to take off); `late_penalty` is taken off, either
points ("1.5") or a share of the autograded total ("10%"). The total never goes below 0.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from minitorch.exercises.registry import EXERCISES, ExerciseError, sort_key
from minitorch.outputs import PathError, check_input_file, write_atomically

FAILURE_KINDS = ("failed", "not attempted", "blocked", "timed out", "crashed", "does not compile", "function not found",
                 "too large", "helper outside the function", "refused", "not graded")
KIND_COLOURS = dict(zip(FAILURE_KINDS, ("tab:red", "tab:gray", "silver", "tab:orange", "tab:purple", "tab:brown",
                                        "tab:pink", "tab:olive", "tab:cyan", "maroon", "black")))  # none is the blue or
# green of the other panels


def feedback_markdown(graded: dict) -> str:
    """What a student reads: the score, each exercise's points, and what failed and why (shortest first)."""
    extra = graded["extra_data"]
    lines = [f"# Grading of {extra['student']}: {points(graded['score'])} / {extra['max_score']}", "",
             f"Graded {extra['graded_at']} (grader {extra['grader_version']}), on inputs you have not seen: your "
             f"own `python -m pytest -m exX_Y` runs the same tests on other inputs.", ""]
    if not _was_graded(graded):  # nothing ran: the reason is all there is to say
        return "\n".join(lines + ["**" + graded["output"][:3000] + "**"]) + "\n"
    lines += ["| exercise | title | points | tests |", "| --- | --- | ---: | --- |"]
    for exercise_id, row in extra["exercises"].items():
        kinds = ", ".join(f"{count} {kind}" for kind, count in row["kinds"].items())
        lines.append(f"| {exercise_id} | {row['title']} | {points(row['earned'])} / {row['points']} | {kinds} |")
    failing = [test for test in graded["tests"] if test["status"] != "passed"]
    if failing:
        lines += ["", "## What failed, and why", ""]
    for exercise_id in extra["exercises"]:
        lines += _failures_of(exercise_id, [test for test in failing if test["number"] == exercise_id])
    return "\n".join(lines) + "\n"


def points(value: float) -> str:
    """Points as written in the gradebook: up to 6 decimals, no trailing zeros (2, 1.5, 0.666667)."""
    return f"{value:.6f}".rstrip("0").rstrip(".")


def _failures_of(exercise_id: str, failing: list[dict]) -> list[str]:
    """One paragraph per distinct reason, the tests it took, the shortest message first, and how to see
    the failures in full (the student's own run, on public inputs)."""
    by_message: dict[str, list[dict]] = {}
    for test in failing:
        by_message.setdefault(test["extra_data"]["message"] or "(no message)", []).append(test)
    lines = []
    for message, tests in sorted(by_message.items(), key=lambda item: len(item[0])):
        kind = tests[0]["extra_data"]["kind"]
        names = ", ".join(test["extra_data"]["nodeid"].split("::", 1)[-1] for test in tests[:5]) + (
            ", ..." if len(tests) > 5 else "")
        lines += [f"**{exercise_id}, {kind}: {len(tests)} test(s)** ({names})", "", message, ""]
    if failing:
        marker = "ex" + exercise_id.replace(".", "_")
        lines += [f"To see these failures in full, run in your copy: python -m pytest -m {marker}", ""]
    return lines


def _was_graded(graded: dict) -> bool:
    """False for a copy that could not be graded at all (not a project, a refused .zip, ...)."""
    return graded["extra_data"].get("graded", True)


def _copies(count: int) -> str:
    return f"{count} cop{'y' if count == 1 else 'ies'}"


def class_rows(out: Path, students=None) -> list[dict]:
    """Every complete OUT/STUDENT/results.json (of `students`, if given), in student order."""
    rows = []
    for path in sorted(Path(out).glob("*/results.json")):
        if students is not None and path.parent.name not in students or not path.is_file():
            continue  # (not a file the grader wrote: that student is graded again)
        try:
            graded = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            continue
        if graded.get("extra_data", {}).get("complete"):
            rows.append(graded)
    return rows


ADJUSTMENTS_NAME = "adjustments.csv"
ADJUSTMENT_COLUMNS = ("student", "points", "late_penalty", "comment")
RUN_NAME = "run.json"  # the run's settings, the secret seed among them: owner-only


@dataclass
class Adjustment:
    """The instructor's changes to one student's autograded total (the sum of their adjustments.csv rows)."""

    points: float = 0.0  # added
    penalty_points: float = 0.0  # taken off
    penalty_share: float = 0.0  # taken off, as a share of the autograded total (0.1 for "10%")
    comments: list[str] = field(default_factory=list)

    def late_penalty(self, autograded: float) -> float:
        return self.penalty_points + self.penalty_share * autograded

    def total(self, autograded: float) -> float:
        """autograded + points - late penalty, never below 0."""
        return max(0.0, round(autograded + self.points - self.late_penalty(autograded), 6))


def ensure_adjustments_file(out: Path) -> Path:
    """OUT/adjustments.csv, created with its header only if it does not exist: it is never overwritten."""
    path = Path(out) / ADJUSTMENTS_NAME
    if not path.exists():
        write_atomically(path, ",".join(ADJUSTMENT_COLUMNS) + "\n")
    return path


def read_adjustments(out: Path) -> dict[str, Adjustment]:
    """Student -> their Adjustment, from OUT/adjustments.csv (none if it is missing); ExerciseError naming the
    line of a cell that is not a number."""
    path = Path(out) / ADJUSTMENTS_NAME
    if not path.exists():
        return {}
    try:
        check_input_file(path, ADJUSTMENTS_NAME)  # a FIFO there would block the run
        text = path.read_text(encoding="utf-8-sig")  # -sig: a spreadsheet may add a byte-order mark
    except (OSError, UnicodeDecodeError, PathError) as error:
        raise ExerciseError(f"{path}: cannot be read as a UTF-8 CSV ({error}); save it as CSV UTF-8") from None
    columns, rows = _strict_csv(text, path)
    missing = [name for name in ("student", "points", "late_penalty") if name not in columns]
    if missing:
        raise ExerciseError(f"{path}: the header lacks {', '.join(missing)}; it should read "
                            f"{','.join(ADJUSTMENT_COLUMNS)}")
    found: dict[str, Adjustment] = {}
    for row, line in rows:
        student = (row.get("student") or "").strip()
        if not student:
            continue
        if None in row:  # more cells than columns: an unquoted comma in the comment, most likely
            raise ExerciseError(f"{path}, line {line}: more cells than the header's columns; put a comment "
                                f"with a comma in double quotes")
        adjustment = found.setdefault(student, Adjustment())
        adjustment.points += _number(row.get("points"), path, line, "points")
        penalty = (row.get("late_penalty") or "").strip()
        if penalty.startswith("-"):
            raise ExerciseError(f"{path}, line {line}: late_penalty {penalty!r} is negative; a bonus goes in "
                                f"points")
        if penalty.endswith("%"):
            adjustment.penalty_share += _number(penalty[:-1], path, line, "late_penalty") / 100
        else:
            adjustment.penalty_points += _number(penalty, path, line, "late_penalty")
        if (row.get("comment") or "").strip():
            adjustment.comments.append(row["comment"].strip())
    return found


def _strict_csv(text: str, path) -> tuple[list[str], list[tuple[dict, int]]]:
    """A CSV's header and its rows, each with its line number, read strictly: a quote left open is an error naming
    the line, not the rest of the file swallowed into one cell."""
    reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)
    try:
        rows = [(row, reader.line_num) for row in reader]
    except csv.Error as error:
        raise ExerciseError(f"{path}, line {reader.line_num + 1}: not a well-formed CSV ({error}): a quote left "
                            f"open?") from None  # (line_num counts the lines read before it)
    return list(reader.fieldnames or []), rows


def refuse_unknown_students(out: Path, adjustments: dict, students, who: str) -> None:
    """An ExerciseError if adjustments.csv names a student not among `students`: that adjustment would be lost.
    `who` says what the names must be: 'are not in SUBMISSIONS (...)', 'have no grade in OUT (...)'."""
    unknown = sorted(set(adjustments) - set(students))
    if unknown:
        raise ExerciseError(f"{Path(out) / ADJUSTMENTS_NAME} names student(s) {', '.join(unknown)}, who {who}: fix "
                            f"the names, or their adjustments would be lost")


def _number(text, path: Path, line: int, column: str) -> float:
    text = (text or "").strip()
    try:
        value = float(text) if text else 0.0
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise ExerciseError(f"{path}, line {line}: {column} {text!r} is not a number (write 2, -1.5, or for "
                            f"late_penalty 10%)")
    return value


def grades_csv(rows: list[dict], exercise_ids, adjustments: dict[str, Adjustment] | None = None) -> str:
    """student,total,max_total,<one column per exercise>,autograded,adjustment,late_penalty,comment,flags

    total = autograded + adjustment - late_penalty (adjustments.csv), never below 0."""
    ids = sorted(exercise_ids, key=sort_key)
    adjustments = adjustments or {}
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(["student", "total", "max_total", *ids, "autograded", "adjustment", "late_penalty", "comment",
                     "flags"])
    for graded in rows:
        extra = graded["extra_data"]
        earned = [points(extra["exercises"][i]["earned"]) if i in extra["exercises"] else "" for i in ids]
        adjustment = adjustments.get(extra["student"], Adjustment())
        writer.writerow([extra["student"], points(adjustment.total(graded["score"])), extra["max_score"], *earned,
                         points(graded["score"]), points(adjustment.points),
                         points(round(adjustment.late_penalty(graded["score"]), 6)), "; ".join(adjustment.comments),
                         "; ".join(extra["flags"])])
    return text.getvalue()


def exercise_statistics(rows: list[dict], exercise_ids) -> dict[str, dict]:
    """Per exercise, over the copies that could be graded: mean points, share with full marks, tests
    failed by kind."""
    rows = [row for row in rows if _was_graded(row)]
    statistics = {}
    for exercise_id in sorted(exercise_ids, key=sort_key):
        graded = [row["extra_data"]["exercises"][exercise_id] for row in rows
                  if exercise_id in row["extra_data"]["exercises"]]
        points = EXERCISES[exercise_id].points
        kinds = {kind: sum(row["kinds"].get(kind, 0) for row in graded) for kind in FAILURE_KINDS}
        statistics[exercise_id] = {
            "title": EXERCISES[exercise_id].title, "points": points,
            "mean": sum(row["earned"] for row in graded) / len(graded) if graded else 0.0,
            "full_marks": sum(abs(row["earned"] - points) < 1e-9 for row in graded) / len(graded) if graded else 0.0,
            "tests": sum(row["tests"] for row in graded), "failures": kinds}
    return statistics


def summary_markdown(rows: list[dict], exercise_ids, run: dict, adjustments: dict | None = None) -> str:
    """The class at a glance, for the instructor. It names no seed (that is in run.json only)."""
    statistics = exercise_statistics(rows, exercise_ids)
    totals = [row["score"] for row in rows if _was_graded(row)]
    maximum = sum(EXERCISES[i].points for i in exercise_ids)
    lines = [f"# Grades of {len(rows)} students", "",
             f"Graded {run['graded_at']} on the exercise seed in {RUN_NAME}, per-test timeout "
             f"{run['timeout']:g} s, grader {run['grader_version']}. Isolation: {run.get('isolation', 'unknown')}. "
             f"Totals here are autograded; grades.csv's total adds {ADJUSTMENTS_NAME}.", ""]
    if totals:
        lines += [f"Total over the {_copies(len(totals))} graded: mean {sum(totals) / len(totals):.2f} / {maximum}, "
                  f"lowest {min(totals):.2f}, highest {max(totals):.2f}.", ""]
    lines += ["![the class per exercise](class.png)", "",
              "| exercise | title | mean | full marks | " + " | ".join(FAILURE_KINDS) + " |",
              "| --- | --- | ---: | ---: | " + " | ".join("---:" for _ in FAILURE_KINDS) + " |"]
    for exercise_id, row in statistics.items():
        lines.append(f"| {exercise_id} | {row['title']} | {row['mean']:.2f} / {row['points']} | "
                     f"{row['full_marks']:.0%} | " + " | ".join(str(row["failures"][k]) for k in FAILURE_KINDS) + " |")
    not_graded = [row["extra_data"]["student"] for row in rows if not _was_graded(row)]
    if not_graded:
        lines += ["", f"{_copies(len(not_graded))} could not be graded "
                      f"({', '.join(not_graded)}; why: under Flags). They score 0 in grades.csv and are left out "
                      f"of the table and the figure."]
    flagged = [row for row in rows if row["extra_data"]["flags"]]
    if flagged:
        lines += ["", "## Flags", ""]
        lines += [f"- {row['extra_data']['student']}: {'; '.join(row['extra_data']['flags'])}" for row in flagged]
    unknown = sorted(set(adjustments or {}) - {row["extra_data"]["student"] for row in rows})
    if unknown:
        lines += ["", f"{ADJUSTMENTS_NAME} names students with no grade here (a typo?): {', '.join(unknown)}"]
    return "\n".join(lines) + "\n"


def class_figure(rows: list[dict], exercise_ids, path: Path) -> None:
    """Three panels per exercise: mean share of the points, share with full marks, and the share of its
    tests (over the class) not passed, by kind: exercises with many tests do not dominate."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    statistics = exercise_statistics(rows, exercise_ids)
    ids = list(statistics)
    x = range(len(ids))
    figure, (top, middle, bottom) = plt.subplots(3, 1, figsize=(max(6, 0.6 * len(ids) + 2), 8), sharex=True)
    top.bar(x, [statistics[i]["mean"] / statistics[i]["points"] for i in ids], color="tab:blue")
    top.set_ylabel("mean points\n(share of max)")
    top.set_ylim(0, 1.05)
    middle.bar(x, [statistics[i]["full_marks"] for i in ids], color="tab:green")
    middle.set_ylabel("share with\nfull marks")
    middle.set_ylim(0, 1.05)
    base = [0] * len(ids)
    for kind in FAILURE_KINDS:
        counts = [statistics[i]["failures"][kind] / max(statistics[i]["tests"], 1) for i in ids]
        if any(counts):
            bottom.bar(x, counts, bottom=base, label=kind, color=KIND_COLOURS[kind])
            base = [b + c for b, c in zip(base, counts)]
    bottom.set_ylabel("share of tests\nnot passed")
    bottom.set_ylim(0, 1.05)
    if any(base):
        bottom.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))  # beside the bars, never on them
    bottom.set_xticks(list(x), ids)
    bottom.set_xlabel("exercise")
    graded = sum(_was_graded(row) for row in rows)
    not_graded = f" ({len(rows) - graded} more could not be graded)" if graded < len(rows) else ""
    figure.suptitle(f"{graded} students{not_graded}")
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    plt.close(figure)
    write_atomically(path, buffer.getvalue())


def write_run(out: Path, run: dict) -> None:
    """OUT/run.json, readable and writable by its owner only: it holds the secret exercise seed."""
    write_atomically(Path(out) / RUN_NAME, json.dumps(run, indent=1) + "\n", mode=0o600)


def read_run(out: Path) -> dict | None:
    """OUT/run.json, or None if there is none; ExerciseError if it cannot be read."""
    path = Path(out) / RUN_NAME
    if not path.exists():
        return None
    if not path.is_file():  # a named pipe would block the read forever
        raise ExerciseError(f"{path} is not a regular file (a folder, a named pipe or a device), so it is no run "
                            f"record; grade into a new --out, or restore it")
    try:
        run = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ExerciseError(f"{path} cannot be read ({error}); grade into a new --out, or restore it") from None
    if not isinstance(run, dict):
        raise ExerciseError(f"{path} is not a run record; grade into a new --out, or restore it")
    return run


def write_gradebook(out: Path, exercise_ids, run: dict, students=None) -> list[dict]:
    """grades.csv, summary.md, class.png and run.json in OUT, from the students' results.json and the
    instructor's adjustments.csv (created empty if missing, never overwritten)."""
    ensure_adjustments_file(out)
    adjustments = read_adjustments(out)
    rows = class_rows(out, students)
    write_atomically(Path(out) / "grades.csv", grades_csv(rows, exercise_ids, adjustments))
    write_atomically(Path(out) / "summary.md", summary_markdown(rows, exercise_ids, run, adjustments))
    write_run(out, {**run, "students": len(rows)})
    class_figure(rows, exercise_ids, Path(out) / "class.png")
    return rows


# ----------------------------------------------------------------------
# Canvas

CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")  # the first columns of its gradebook


def canvas_csv(grades: list[dict], roster_path: Path, assignment: str) -> tuple[str, list[str]]:
    """(the CSV Canvas's gradebook import takes, the roster's students with no grade).

    `grades` are grades.csv's rows (student, total); the roster is a CSV with a column `submission` (the name
    of the student's entry in SUBMISSIONS) and Canvas's own columns Student, ID, SIS User ID, SIS Login ID,
    Section: the easiest roster is Canvas's gradebook export with a `submission` column added. `assignment`
    is the assignment's column as Canvas names it, "Week 3 (12345)": with the ID in brackets Canvas updates
    that assignment; a new name makes a new one. Students of the roster without a grade get an empty cell,
    which Canvas leaves as it was."""
    try:
        text = Path(roster_path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise ExerciseError(f"{roster_path}: cannot be read as a UTF-8 CSV ({error})") from None
    columns, rows = _strict_csv(text, roster_path)
    if "submission" not in columns or "Student" not in columns or not {"ID", "SIS User ID", "SIS Login ID"} & set(
            columns):
        raise ExerciseError(f"{roster_path}: the roster needs the columns submission, Student and one of ID, SIS "
                            f"User ID, SIS Login ID (Canvas's gradebook export with a submission column added); "
                            f"it has {', '.join(columns) or 'none'}")
    roster = [row for row, _ in rows if (row.get("Student") or "").strip()
              and "Points Possible" not in (row.get("Student") or "")]
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
    by_submission: dict[str, dict] = {}
    for row in roster:
        name = (row.get("submission") or "").strip()
        if name in by_submission:
            raise ExerciseError(f"{roster_path}: the submission {name!r} is named twice; each student has their own")
        if name:
            by_submission[name] = row
    unknown = sorted(row["student"] for row in grades if row["student"] not in by_submission)
    if unknown:
        raise ExerciseError(f"{roster_path}: no roster row for {len(unknown)} graded submission(s): "
                            f"{', '.join(unknown[:20])}; add them to its submission column (their grades would "
                            f"otherwise be lost)")
    totals = {row["student"]: row["total"] for row in grades}
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow([*CANVAS_COLUMNS, assignment])
    for row in roster:
        name = (row.get("submission") or "").strip()
        writer.writerow([*(row.get(column, "") for column in CANVAS_COLUMNS), totals.get(name, "")])
    without = [row["Student"] for row in roster if (row.get("submission") or "").strip() not in totals]
    return text.getvalue(), without
