"""The gradebook of a class: grades.csv, summary.md, a figure, and each student's feedback.md (chapter 00).

Everything here reads the students' results.json (written by `grading.grade_submission`), so the
gradebook can be rebuilt at any time from OUT/*/results.json. Every file is written atomically.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from minitorch.exercises.registry import EXERCISES, sort_key
from minitorch.outputs import write_atomically

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
        if students is not None and path.parent.name not in students:
            continue
        try:
            graded = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            continue
        if graded.get("extra_data", {}).get("complete"):
            rows.append(graded)
    return rows


def grades_csv(rows: list[dict], exercise_ids) -> str:
    """student,total,max_total,<one column per exercise>,flags"""
    ids = sorted(exercise_ids, key=sort_key)
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(["student", "total", "max_total", *ids, "flags"])
    for graded in rows:
        extra = graded["extra_data"]
        earned = [points(extra["exercises"][i]["earned"]) if i in extra["exercises"] else "" for i in ids]
        writer.writerow([extra["student"], points(graded["score"]), extra["max_score"], *earned,
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


def summary_markdown(rows: list[dict], exercise_ids, run: dict) -> str:
    statistics = exercise_statistics(rows, exercise_ids)
    totals = [row["score"] for row in rows if _was_graded(row)]
    maximum = sum(EXERCISES[i].points for i in exercise_ids)
    lines = [f"# Grades of {len(rows)} students", "",
             f"Graded {run['graded_at']} with exercise seed {run['exercise_seed']}, per-test timeout "
             f"{run['timeout']:g} s, grader {run['grader_version']}. Isolation: {run.get('isolation', 'unknown')}.",
             ""]
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


def write_gradebook(out: Path, exercise_ids, run: dict, students=None) -> list[dict]:
    """grades.csv, summary.md, class.png and run.json in OUT, from the students' results.json."""
    rows = class_rows(out, students)
    write_atomically(Path(out) / "grades.csv", grades_csv(rows, exercise_ids))
    write_atomically(Path(out) / "summary.md", summary_markdown(rows, exercise_ids, run))
    write_atomically(Path(out) / "run.json", json.dumps({**run, "students": len(rows)}, indent=1) + "\n")
    class_figure(rows, exercise_ids, Path(out) / "class.png")
    return rows
