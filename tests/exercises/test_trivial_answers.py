"""Points measure solving: a trivial answer earns 0 points on every exercise.

For each exercise, each answer of `TRIVIAL_ANSWERS` that fits its function's signature (zeros of the right
shape, a constant, the input returned unchanged, the identity matrix, None, ...) is pasted as the function's
body in a copy of the project, and the exercise's graded tests run there, public and hidden (the files its table
line names; ``pytest -m "exX_Y and not slow"`` with the scoreboard that sums both parts). Every one must earn 0
points.

The table of trivial answers against points is also a script:

    python tests/exercises/test_trivial_answers.py [OUT.md]

prints it as Markdown (and writes it to OUT.md), for the closing note; with exercise IDs after OUT.md, only
those are measured, and the tests each trivial answer passes are listed on stderr.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parents[2]))  # run as a script: the repository's registry
from minitorch.exercises.registry import EXERCISES, replace_bodies, sort_key  # noqa: E402

ROOT = HERE.parents[2]  # the project these tests belong to (the harness measures its own tests)

# Zeros and constants of the shape the function returns, written from its inputs as a student could.
_ZEROS_LIKE_ARRAYS = {"zeros": "return np.zeros_like({0}), np.zeros_like({1})\n",
                      "ones": "return np.ones_like({0}), np.ones_like({1})\n",
                      "0.5 (full)": "return np.full(np.shape({0}), 0.5), np.full(np.shape({1}), 0.5)\n",
                      "0.5 (scalar)": "return 0.5, 0.5\n"}
_ONE_GRADIENT = {"zeros": "return (np.zeros_like({0}),)\n", "ones": "return (np.ones_like({0}),)\n",
                 "0.5 (full)": "return (np.full(np.shape({0}), 0.5),)\n", "0.5 (scalar)": "return (0.5,)\n"}
_TENSOR = {"zeros": "return Tensor(np.zeros_like(scores.data))\n",
           "0.5 (full)": "return Tensor(np.full(scores.shape, 0.5))\n",
           "uniform 1/L": "return Tensor(np.full(scores.shape, 1.0 / scores.shape[-1]))\n",
           "input returned": "return scores\n"}
_FOUR_MATRICES = {"zeros": "return tuple(np.zeros((width, width)) for _ in range(4))\n",
                  "identity": "return tuple(np.eye(width) for _ in range(4))\n",
                  "0.5 (full)": "return tuple(np.full((width, width), 0.5) for _ in range(4))\n"}
_NONE = {"None": "return None\n"}

# exercise ID -> {name of the trivial answer: the body pasted into its function}
TRIVIAL_ANSWERS = {
    "1.2": {**{name: code.format("a", "b") for name, code in _ZEROS_LIKE_ARRAYS.items()},
            "input returned": "return grad, grad\n", **_NONE},
    "1.1": {"empty": "return []\n", "the root alone": "return [root]\n", **_NONE},
    "1.3": {**{name: code.format("out") for name, code in _ONE_GRADIENT.items()},
            "input returned": "return (grad,)\n", "out returned": "return (out,)\n", **_NONE},
    "1.4": {**{name: code.format("a") for name, code in _ONE_GRADIENT.items()},
            "input returned": "return (grad,)\n", **_NONE},
    "2.1": {"zeros": "return np.zeros(shape)\n", "ones": "return np.ones(shape)\n",
            "0.5 (full)": "return np.full(shape, 0.5)\n", "0.5 (scalar)": "return 0.5\n",
            "input returned": "return grad\n", **_NONE},
    "2.2": {**{name: code.format("a", "b") for name, code in _ZEROS_LIKE_ARRAYS.items()},
            "input returned": "return grad, grad\n", **_NONE},
    "2.4": {**_TENSOR, **_NONE},
    "2.3": {"zeros": "return (np.zeros(shape),)\n", "ones": "return (np.ones(shape),)\n",
            "0.5 (full)": "return (np.full(shape, 0.5),)\n", "0.5 (scalar)": "return (0.5,)\n",
            "input returned": "return (grad,)\n", **_NONE},
    "2.5": {"zeros": "return np.zeros_like(theta), np.zeros_like(m), np.zeros_like(v)\n",
            "0.5 (full)": "return np.full(theta.shape, 0.5), np.full(m.shape, 0.5), np.full(v.shape, 0.5)\n",
            "input returned": "return theta, m, v\n",
            "copies returned": "return theta.copy(), m.copy(), v.copy()\n", **_NONE},
    "3.1": {"zeros": "return np.zeros((length, length), dtype=bool)\n",
            "ones": "return np.ones((length, length), dtype=bool)\n",
            "identity": "return np.eye(length, dtype=bool)\n",
            "0.5 (full)": "return np.full((length, length), 0.5)\n", "0.5 (scalar)": "return 0.5\n",
            "input returned": "return length\n", **_NONE},
    "3.2": {**_TENSOR, **_NONE},
    "3.3": {**_TENSOR, **_NONE},
    "3.4": {"zeros": "return np.zeros(weights.shape[:2] + (weights.shape[2] - 2,))\n",
            "0.5 (full)": "return np.full(weights.shape[:2] + (weights.shape[2] - 2,), 0.5)\n",
            "0.5 (scalar)": "return 0.5\n", "input returned": "return weights\n", **_NONE},
    "3.5": {"zeros": "return np.zeros((weights.shape[1], weights.shape[3]))\n",
            "ones": "return np.ones((weights.shape[1], weights.shape[3]))\n",
            "0.5 (full)": "return np.full((weights.shape[1], weights.shape[3]), 0.5)\n",
            "0.5 (scalar)": "return 0.5\n", "input returned": "return weights\n", **_NONE},
    "4.1": {"zeros": "return np.zeros_like(x)\n", "0.5 (full)": "return np.full(x.shape, 0.5)\n",
            "0.5 (scalar)": "return 0.5\n", "input returned": "return x\n", **_NONE},
    "5.1": {**_FOUR_MATRICES, **_NONE},
    "6.1": {**_FOUR_MATRICES, **_NONE},
    "9.1": {"zero": "return 0.0\n", "one": "return 1.0\n", "0.5 (scalar)": "return 0.5\n",
            "input returned": "return per_layer_weights\n", **_NONE},
}


def graded_test_files(root: Path, exercise_id: str) -> list[str]:
    """The files of the exercise's graded tests, as the table declares them, that `root` holds."""
    return [name for name in EXERCISES[exercise_id].tests if (root / name).is_file()]


def _environment() -> dict:
    """The student's own run: no MINITORCH_ROOT, no grading plan, no options from outside."""
    return {key: value for key, value in os.environ.items()
            if not key.startswith("MINITORCH_") and key != "PYTEST_ADDOPTS"}


def _copy_project(into: Path) -> Path:
    for name in ("minitorch", "tests"):
        shutil.copytree(ROOT / name, into / name, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    return into


def _points(copy: Path, exercise_id: str, body: str) -> dict:
    """The exercise's scoreboard row with `body` as its function's body, in `copy` (restored afterwards)."""
    exercise = EXERCISES[exercise_id]
    path = copy / exercise.module
    original = path.read_text(encoding="utf-8")
    board = copy / "board.json"
    board.unlink(missing_ok=True)
    path.write_text(replace_bodies(original, {exercise.function: body}, exercise.module), encoding="utf-8")
    try:
        completed = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", f"{exercise.marker} and not slow",
             f"--scoreboard-json={board}", *graded_test_files(copy, exercise_id)],
            cwd=copy, capture_output=True, text=True, timeout=900, env=_environment())
    finally:
        path.write_text(original, encoding="utf-8")
    if not board.exists():
        raise RuntimeError(f"the tests of {exercise_id} did not run:\n{completed.stdout[-2000:]}"
                           f"{completed.stderr[-2000:]}")
    report = json.loads(board.read_text(encoding="utf-8"))
    return {**report["exercises"][exercise_id],
            "passed tests": sorted(nodeid for nodeid, test in report["tests"].items() if test["status"] == "passed")}


def measure(exercise_ids=None, workers: int = 2) -> dict[tuple[str, str], dict]:
    """{(exercise ID, trivial answer): its scoreboard row} for every trivial answer of the exercises named
    (all of them by default), run in `workers` copies of the project at once."""
    cases = [(exercise_id, name, body) for exercise_id in sorted(exercise_ids or TRIVIAL_ANSWERS, key=sort_key)
             for name, body in TRIVIAL_ANSWERS[exercise_id].items()]
    with tempfile.TemporaryDirectory(prefix="trivial-answers-") as scratch:
        copies = [_copy_project(Path(scratch) / f"copy{index}") for index in range(workers)]
        shares = [cases[index::workers] for index in range(workers)]

        def run(copy, share):
            return {(exercise_id, name): _points(copy, exercise_id, body) for exercise_id, name, body in share}

        with ThreadPoolExecutor(workers) as pool:
            rows = {}
            for result in pool.map(run, copies, shares):
                rows.update(result)
    return {(exercise_id, name): rows[exercise_id, name] for exercise_id, name, _ in cases}


def markdown_table(rows: dict[tuple[str, str], dict]) -> str:
    """One line per exercise and trivial answer: the points it earned, and its passed tests of all."""
    lines = ["| exercise | trivial answer | points earned | tests passed |", "|---|---|---|---|"]
    for (exercise_id, name), row in rows.items():
        lines.append(f"| {exercise_id} {EXERCISES[exercise_id].title} | {name} | "
                     f"{row['earned']:.2f} / {row['points']} | {row['passed']} / {row['tests']} |")
    earning = sum(1 for row in rows.values() if row["earned"])
    lines.append(f"\n{earning} of {len(rows)} trivial answers earn points.")
    return "\n".join(lines) + "\n"


def test_every_exercise_has_trivial_answers():
    assert sorted(TRIVIAL_ANSWERS, key=sort_key) == sorted(EXERCISES, key=sort_key), (
        "TRIVIAL_ANSWERS should list trivial answers for every exercise of the registry, and only those")


@pytest.mark.slow
def test_no_trivial_answer_earns_points():
    rows = measure()
    earning = [f"{exercise_id} returning {name}: {row['earned']:.2f} of {row['points']} points "
               f"({row['passed']} of {row['tests']} tests passed: {', '.join(row['passed tests'])})"
               for (exercise_id, name), row in rows.items() if row["earned"]]
    assert not earning, ("a trivial answer should earn nothing: add a value test the answer fails, or declare the "
                         "tests it passes requires_values=True:\n" + "\n".join(earning))


if __name__ == "__main__":
    measured = measure(sys.argv[2:] or None)
    table = markdown_table(measured)
    print(table)
    for (exercise_id, name), row in measured.items():
        if row["passed"]:
            print(f"{exercise_id} returning {name} passes: {', '.join(row['passed tests'])}", file=sys.stderr)
    if len(sys.argv) > 1:
        Path(sys.argv[1]).write_text(table, encoding="utf-8")
