"""The gradebook of a class: grades.csv, summary.md, similarity.md, a figure, and each student's feedback
(chapter 11).

    OUT/grades.csv, summary.md, similarity.md, class.png   the class, for you
    OUT/adjustments.csv                                    yours: manual points, late penalties
    OUT/run.json                                           the settings and the secret seed (owner-only)
    OUT/feedback/STUDENT/feedback.md, results.json         what a student may read: hand each their folder
    OUT/private/STUDENT/check-log.txt, answers.json        yours only: the full failures (they quote the seed
                                                           and the hidden inputs), the answers' fingerprints

Students live in the two folders of their own, so no entry's name can take a file of the run's. Everything here
reads the students' results.json (written by `grading.grade_submission`) and the instructor's adjustments.csv, so
the gradebook can be rebuilt at any time from OUT. Every file is written atomically; what quotes the seed is
readable by its owner only. Names and messages from students are written as text (`student_text`).

adjustments.csv is the instructor's: the grader creates it with its header if it is missing and never
writes it again. One row per change (a student may have several):

    student,points,late_penalty,comment
    ann,2,,manual points for the write-up of 3.2
    lee,,10%,two days late
    max,-1,1.5,

`points` are added to the autograded total (negative to take off); `late_penalty` is taken off, either
points ("1.5") or a share of the autograded total ("10%"). The total never goes below 0. A row beyond the
assignment's maximum (points or a penalty of more than the maximum, a penalty of more than 100%), or a student's
rows adding up beyond it, is refused, naming the line: it is a typo more often than a grade.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from minitorch.exercises.registry import EXERCISES, ExerciseError, sort_key
from minitorch.exercises.grader.trusted.student_text import csv_cell, in_markdown, shown
from minitorch.outputs import PathError, check_input_file, write_atomically

FEEDBACK_FOLDER = "feedback"  # OUT/feedback/STUDENT/: what the student may read
PRIVATE_FOLDER = "private"  # OUT/private/STUDENT/: the instructor's only

FAILURE_KINDS = ("failed", "not attempted", "blocked", "timed out", "crashed", "does not compile", "function not found",
                 "too large", "helper outside the function", "refused", "not graded")
KIND_COLOURS = dict(zip(FAILURE_KINDS, ("tab:red", "tab:gray", "silver", "tab:orange", "tab:purple", "tab:brown",
                                        "tab:pink", "tab:olive", "tab:cyan", "maroon", "black")))  # none is the blue or
# green of the other panels


def feedback_folder(out: Path, student: str) -> Path:
    """OUT/feedback/STUDENT: feedback.md and results.json, what the student may read."""
    return Path(out) / FEEDBACK_FOLDER / student


def private_folder(out: Path, student: str) -> Path:
    """OUT/private/STUDENT: the check log and the answers' fingerprints, the instructor's only."""
    return Path(out) / PRIVATE_FOLDER / student


def feedback_markdown(graded: dict) -> str:
    """What a student reads: the score, each exercise's points, and what failed and why (shortest first)."""
    extra = graded["extra_data"]
    lines = [f"# Grading of {in_markdown(extra['student'])}: {points(graded['score'])} / {extra['max_score']}", "",
             f"Graded {extra['graded_at']} (grader {extra['grader_version']}), on inputs you have not seen. Each "
             f"failed test says what kind of failure it was and what the test checks; your own "
             f"`python -m pytest -m exX_Y` runs the same tests on other inputs and shows every failure in full.", ""]
    if not _was_graded(graded):  # nothing ran: the reason is all there is to say
        return "\n".join(lines + ["**" + in_markdown(graded["output"][:3000]) + "**"]) + "\n"
    lines += ["| exercise | title | points | tests |", "| --- | --- | ---: | --- |"]
    for exercise_id, row in extra["exercises"].items():
        kinds = ", ".join(f"{count} {kind}" for kind, count in row["kinds"].items())
        lines.append(f"| {exercise_id} | {in_markdown(row['title'])} | {points(row['earned'])} / {row['points']} | "
                     f"{kinds} |")
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
    """One paragraph per kind of failure (the shortest first), listing its tests with what each checks, and how to
    see the failures in full (the student's own run, on public inputs)."""
    by_what: dict[str, list[dict]] = {}
    for test in failing:
        extra = test["extra_data"]
        by_what.setdefault(extra.get("what") or extra["message"] or "(no message)", []).append(test)
    lines = []
    for what, tests in sorted(by_what.items(), key=lambda item: len(item[0])):
        lines += [f"**{exercise_id}, {in_markdown(tests[0]['extra_data']['kind'])}: {len(tests)} test(s)**", "",
                  "  \n".join(in_markdown(line) for line in what.splitlines()[:40]), ""]
        lines += [_test_line(test) for test in tests[:20]] + ([f"- and {len(tests) - 20} more"]
                                                             if len(tests) > 20 else []) + [""]
    if failing:
        marker = "ex" + exercise_id.replace(".", "_")
        lines += [f"To see these failures in full, run in your copy: python -m pytest -m {marker}", ""]
    return lines


def _test_line(test: dict) -> str:
    """A failed test in the feedback's list: its name, and what it checks if its docstring says more."""
    name = test["extra_data"]["nodeid"].split("::", 1)[-1]
    reason = test["extra_data"].get("reason") or ""
    in_words = name.split("::")[-1].split("[")[0].removeprefix("test_").replace("_", " ")
    shown_name = shown(name).replace("`", "'")  # (the grader's own test: a code span shows it as it is)
    return f"- `{shown_name}`" + (f": {in_markdown(reason)}" if reason and reason != in_words else "")


def _was_graded(graded: dict) -> bool:
    """False for a copy that could not be graded at all (not a project, a refused .zip, ...)."""
    return graded["extra_data"].get("graded", True)


def _copies(count: int) -> str:
    return f"{count} cop{'y' if count == 1 else 'ies'}"


def class_rows(out: Path, students=None) -> list[dict]:
    """Every complete OUT/feedback/STUDENT/results.json (of `students`, if given), in student order."""
    rows, folder = [], Path(out) / FEEDBACK_FOLDER
    for name in sorted(os.listdir(folder)) if folder.is_dir() else []:
        path = folder / name / "results.json"
        if students is not None and name not in students or not path.is_file():
            continue  # (not a file the grader wrote: that student is graded again)
        try:
            graded = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
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


def read_adjustments(out: Path, maximum: float | None = None) -> dict[str, Adjustment]:
    """Student -> their Adjustment, from OUT/adjustments.csv (none if it is missing); ExerciseError naming the
    line of a cell that is not a number, or (given the assignment's `maximum`) of points or a penalty beyond it."""
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
    lines: dict[str, list[int]] = {}
    for row, line in rows:
        student = (row.get("student") or "").strip()
        if not student:
            continue
        if None in row:  # more cells than columns: an unquoted comma in the comment, most likely
            raise ExerciseError(f"{path}, line {line}: more cells than the header's columns; put a comment "
                                f"with a comma in double quotes")
        adjustment = found.setdefault(student, Adjustment())
        lines.setdefault(student, []).append(line)
        added = _number(row.get("points"), path, line, "points")
        penalty = (row.get("late_penalty") or "").strip()
        if penalty.startswith("-"):
            raise ExerciseError(f"{path}, line {line}: late_penalty {penalty!r} is negative; a bonus goes in "
                                f"points")
        share = _number(penalty[:-1], path, line, "late_penalty") / 100 if penalty.endswith("%") else 0.0
        taken = 0.0 if penalty.endswith("%") else _number(penalty, path, line, "late_penalty")
        if maximum is not None:
            _refuse_beyond(Adjustment(added, taken, share), maximum, f"{path}, line {line}")
        adjustment.points += added
        adjustment.penalty_points += taken
        adjustment.penalty_share += share
        if (row.get("comment") or "").strip():
            adjustment.comments.append(row["comment"].strip())
    for student, adjustment in found.items():
        if maximum is not None and len(lines[student]) > 1:
            _refuse_beyond(adjustment, maximum, f"{path}, lines {', '.join(map(str, lines[student]))} (together, "
                                                f"for {student})")
    return found


def _refuse_beyond(adjustment: Adjustment, maximum: float, where: str) -> None:
    """ExerciseError naming `where` if the adjustment's points or penalty exceed what the assignment is worth."""
    if abs(adjustment.points) > maximum + 1e-9:
        raise ExerciseError(f"{where}: points {points(adjustment.points)} is more than the assignment's "
                            f"{points(maximum)}; a typo? (an adjustment may add or take off at most the maximum)")
    if adjustment.penalty_points > maximum + 1e-9:
        raise ExerciseError(f"{where}: late_penalty {points(adjustment.penalty_points)} is more than the "
                            f"assignment's {points(maximum)} points; a typo? (write it in points up to "
                            f"{points(maximum)}, or as a share up to 100%)")
    if adjustment.penalty_share > 1 + 1e-9:
        raise ExerciseError(f"{where}: late_penalty {points(100 * adjustment.penalty_share)}% is more than 100%; "
                            f"a typo? (100% takes off every autograded point)")


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

    total = autograded + adjustment - late_penalty (adjustments.csv), never below 0. Text cells are written so
    that a spreadsheet shows them as text (`student_text.csv_cell`)."""
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
        writer.writerow([csv_cell(extra["student"]), points(adjustment.total(graded["score"])), extra["max_score"],
                         *earned, points(graded["score"]), points(adjustment.points),
                         points(round(adjustment.late_penalty(graded["score"]), 6)),
                         csv_cell("; ".join(adjustment.comments)), csv_cell("; ".join(extra["flags"]))])
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
    not_graded = [in_markdown(row["extra_data"]["student"]) for row in rows if not _was_graded(row)]
    if not_graded:
        lines += ["", f"{_copies(len(not_graded))} could not be graded "
                      f"({', '.join(not_graded)}; why: under Flags). They score 0 in grades.csv and are left out "
                      f"of the table and the figure."]
    flagged = [row for row in rows if row["extra_data"]["flags"]]
    if flagged:
        lines += ["", "## Flags", ""]
        lines += [f"- {in_markdown(row['extra_data']['student'])}: {in_markdown('; '.join(row['extra_data']['flags']))}"
                  for row in flagged]
    unknown = sorted(set(adjustments or {}) - {row["extra_data"]["student"] for row in rows})
    if unknown:
        lines += ["", f"{ADJUSTMENTS_NAME} names students with no grade here (a typo?): "
                      f"{', '.join(map(in_markdown, unknown))}"]
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


def write_gradebook(out: Path, exercise_ids, run: dict, students=None, grader_root: Path | None = None,
                    compare_answers: bool = True) -> list[dict]:
    """grades.csv, summary.md, similarity.md (unless not `compare_answers`: a run stopped half-way leaves the last
    one), class.png and run.json in OUT, from the students' results.json and answers.json and the instructor's
    adjustments.csv (created empty if missing, never overwritten). The answers are compared with the functions of
    the book at `grader_root`, if given."""
    ensure_adjustments_file(out)
    adjustments = read_adjustments(out, maximum_of(exercise_ids))
    rows = class_rows(out, students)
    write_atomically(Path(out) / "grades.csv", grades_csv(rows, exercise_ids, adjustments))
    write_atomically(Path(out) / "summary.md", summary_markdown(rows, exercise_ids, run, adjustments))
    if compare_answers:
        write_similarity(out, [row["extra_data"]["student"] for row in rows], exercise_ids, run, grader_root)
    write_run(out, {**run, "students": len(rows)})
    class_figure(rows, exercise_ids, Path(out) / "class.png")
    return rows


def maximum_of(exercise_ids) -> int:
    """What an assignment of these exercises is worth."""
    return sum(EXERCISES[exercise_id].points for exercise_id in exercise_ids if exercise_id in EXERCISES)


KNOWN_NAME = "book-fingerprints.json"  # in OUT/private: the book's functions, fingerprinted once per grader version


def write_similarity(out: Path, students: list[str], exercise_ids, run: dict, grader_root: Path | None) -> None:
    """OUT/similarity.md from the students' OUT/private/STUDENT/answers.json (`similarity`)."""
    from minitorch.exercises.grader.trusted import similarity

    answers = {}
    for student in students:
        try:
            found = json.loads((private_folder(out, student) / "answers.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        answers[student] = found if isinstance(found, dict) else {}
    known: dict[str, str] = {}
    if grader_root is not None and any((event or {}).get("fingerprint") for found in answers.values()
                                       for event in found.values() if isinstance(event, dict)):
        cache = Path(out) / PRIVATE_FOLDER / KNOWN_NAME
        try:
            cached = json.loads(cache.read_text(encoding="utf-8"))
            known = cached["known"] if cached.get("grader_version") == run.get("grader_version") else {}
        except (OSError, ValueError, KeyError, AttributeError):
            pass
        if not known:
            known = similarity.known_sources(grader_root)
            write_atomically(cache, json.dumps({"grader_version": run.get("grader_version"), "known": known}) + "\n",
                             mode=0o600)
    write_atomically(Path(out) / "similarity.md", similarity.similarity_markdown(answers, exercise_ids, known))


# ----------------------------------------------------------------------
# Canvas

CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")  # the first columns of its gradebook


def canvas_csv(grades: list[dict], roster_path: Path, assignment: str, entries: dict[str, str] | None = None,
               leave_out_unlisted: bool = False) -> tuple[str, list[str], list[str]]:
    """(the CSV Canvas's gradebook import takes, the roster's students with no grade, the graded students left out
    because the roster has no row for them).

    `grades` are grades.csv's rows (student, total); the roster is a CSV with a column `submission` (the name
    of the student's entry in SUBMISSIONS, with or without its .zip) and Canvas's own columns Student, ID, SIS User
    ID, SIS Login ID, Section: the easiest roster is Canvas's gradebook export with a `submission` column added.
    `entries` maps a student to their entry's name, when it differs (s017.zip, or a name graded under a safe one).
    `assignment` is the assignment's column as Canvas names it, "Week 3 (12345)": with the ID in brackets Canvas
    updates that assignment; a new name makes a new one. Students of the roster without a grade get an empty cell,
    which Canvas leaves as it was. A graded student the roster lacks is refused (their grade would be lost), or
    with `leave_out_unlisted` (a student who dropped the course) left out and named."""
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
    totals = {row["student"]: row["total"] for row in grades}
    names = _submission_names(totals, entries or {})
    by_student: dict[str, dict] = {}
    for row in roster:
        name = (row.get("submission") or "").strip()
        student = names.get(name) or names.get(name[:-4] if name.lower().endswith(".zip") else "")
        if student in by_student:
            raise ExerciseError(f"{roster_path}: the submission {name!r} is named twice (as {student!r}); each "
                                f"student has their own")
        if student:
            by_student[student] = row
    unlisted = sorted(student for student in totals if student not in by_student)
    if unlisted and not leave_out_unlisted:
        raise ExerciseError(f"{roster_path}: no roster row for {len(unlisted)} graded submission(s):\n" +
                            "".join(f"  {shown(student)}\n" for student in unlisted[:50]) +
                            (f"  ... and {len(unlisted) - 50} more\n" if len(unlisted) > 50 else "") +
                            "add them to its submission column (their grades would otherwise be lost), or leave "
                            "them out with --leave-out-unlisted (students who dropped the course)")
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow([*CANVAS_COLUMNS, assignment])
    graded = {id(row): student for student, row in by_student.items()}
    for row in roster:
        writer.writerow([*(row.get(column, "") for column in CANVAS_COLUMNS), totals.get(graded.get(id(row)), "")])
    without = [row["Student"] for row in roster if id(row) not in graded]
    return text.getvalue(), without, unlisted


def _submission_names(totals: dict[str, str], entries: dict[str, str]) -> dict[str, str]:
    """{a name the roster may give: student}: each student's ID, their entry's name, and that name without .zip."""
    names = {}
    for student in totals:
        entry = entries.get(student, student)
        for name in (entry[:-4] if entry.lower().endswith(".zip") else entry, entry, student):
            names.setdefault(name, student)
    return names
