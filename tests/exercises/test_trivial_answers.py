"""Points measure solving: a trivial answer earns 0 points on every exercise.

For each exercise, each answer of `TRIVIAL_ANSWERS` that fits its function's signature (zeros of the right
shape, a constant, the input returned unchanged, the identity matrix, None, ...) becomes the function's body, and
the exercise's graded tests run with it, public and hidden (the files its table line names, ``-m "not slow"``),
scored by the student's own scoreboard (tests/course_plugin.py). Every one must earn 0 points.

All of it is one pytest process: the plugin `TrivialAnswers` runs each graded test once per trivial answer of its
exercise, with that answer compiled into the function's code object for the test (so every reference to the
function, in the library and in the probes, runs it), and the reference put back after.

The table of trivial answers against points is also a script:

    python tests/exercises/test_trivial_answers.py [OUT.md]

prints it as Markdown (and writes it to OUT.md), for the closing note; with exercise IDs after OUT.md, only
those are measured, and the tests each trivial answer passes are listed on stderr.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parents[2]))  # run as a script: the repository's registry
from minitorch.exercises.registry import EXERCISES, function_node, replace_bodies, sort_key  # noqa: E402

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


PARAMETER = "trivial_answer"  # the parameter the plugin adds to each graded test


@functools.cache
def trivial_code(exercise_id: str, body: str):
    """The code object of the exercise's function with `body` as its body, compiled in its module."""
    exercise = EXERCISES[exercise_id]
    source = replace_bodies((ROOT / exercise.module).read_text(encoding="utf-8"), {exercise.function: body},
                            exercise.module)
    node = function_node(ast.parse(source), exercise.function)
    node.decorator_list = []  # the decorators wrap the function object, whose code is what changes
    namespace = {}
    exec(compile(ast.Module([node], type_ignores=[]), str(ROOT / exercise.module), "exec"),
         dict(vars(_module_of(exercise_id))), namespace)
    return namespace[exercise.function].__code__


def _module_of(exercise_id: str):
    return importlib.import_module(EXERCISES[exercise_id].module.removesuffix(".py").replace("/", "."))


class TrivialAnswers:
    """A pytest plugin: every graded test of `exercise_ids` runs once per trivial answer of its exercise, with that
    answer as the body of the exercise's function; the other tests are deselected. At the end it writes `record`:
    per exercise and trivial answer, the scoreboard's row of those tests and the tests passed."""

    def __init__(self, exercise_ids, record):
        self.exercise_ids, self.record, self.answer_of = set(exercise_ids), Path(record), {}

    @staticmethod
    def _exercise(node) -> str | None:
        mark = node.get_closest_marker("exercise")
        return str(mark.args[0]) if mark else None

    def pytest_generate_tests(self, metafunc):
        exercise_id = self._exercise(metafunc.definition)
        if exercise_id in self.exercise_ids:
            metafunc.fixturenames.append(PARAMETER)  # a parameter the test's own signature does not name
            metafunc.parametrize(PARAMETER, list(TRIVIAL_ANSWERS[exercise_id]))

    def pytest_collection_modifyitems(self, config, items):
        kept = [item for item in items if PARAMETER in getattr(getattr(item, "callspec", None), "params", {})]
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept
        self.answer_of = {item.nodeid: (self._exercise(item), item.callspec.params[PARAMETER]) for item in kept}

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        exercise_id, name = self.answer_of[item.nodeid]
        function = inspect.unwrap(getattr(_module_of(exercise_id), EXERCISES[exercise_id].function))
        reference, function.__code__ = function.__code__, trivial_code(exercise_id, TRIVIAL_ANSWERS[exercise_id][name])
        try:
            return (yield)
        finally:
            function.__code__ = reference

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session):
        board = next(plugin for plugin in session.config.pluginmanager.get_plugins()
                     if type(plugin).__name__ == "Scoreboard")
        rows = {}
        for exercise_id, name in dict.fromkeys(self.answer_of.values()):
            part = object.__new__(type(board))  # the scoreboard of this answer's tests alone
            part.exercise_of = {nodeid: exercise_id for nodeid, case in self.answer_of.items()
                                if case == (exercise_id, name)}
            part.results = board.results
            row = part.exercise_table().get(exercise_id, {"earned": 0.0, "points": EXERCISES[exercise_id].points,
                                                          "passed": 0, "tests": 0})
            row["passed tests"] = sorted(nodeid for nodeid in part.exercise_of
                                         if board.results.get(nodeid, {}).get("status") == "passed")
            rows[f"{exercise_id} {name}"] = row
        self.record.write_text(json.dumps(rows), encoding="utf-8")


CHILD = ("import sys, pytest; sys.path.insert(0, sys.argv[1]); from test_trivial_answers import TrivialAnswers; "
         "sys.exit(pytest.main(sys.argv[4:], plugins=[TrivialAnswers(sys.argv[2].split(','), sys.argv[3])]))")


def measure(exercise_ids=None) -> dict[tuple[str, str], dict]:
    """{(exercise ID, trivial answer): its scoreboard row} for every trivial answer of the exercises named (all of
    them by default), in one pytest process."""
    exercise_ids = sorted(exercise_ids or TRIVIAL_ANSWERS, key=sort_key)
    files = sorted({name for exercise_id in exercise_ids for name in graded_test_files(ROOT, exercise_id)})
    with tempfile.TemporaryDirectory(prefix="trivial-answers-") as scratch:
        record = Path(scratch) / "rows.json"
        completed = subprocess.run(
            [sys.executable, "-c", CHILD, str(HERE.parent), ",".join(exercise_ids), str(record), "-q",
             "-p", "no:cacheprovider", "-m", "not slow", *files],
            cwd=ROOT, capture_output=True, text=True, timeout=3600, env=_environment())
        if not record.exists():
            raise RuntimeError(f"the graded tests did not run:\n{completed.stdout[-2000:]}{completed.stderr[-2000:]}")
        rows = json.loads(record.read_text(encoding="utf-8"))
    return {(exercise_id, name): rows[f"{exercise_id} {name}"]
            for exercise_id in exercise_ids for name in TRIVIAL_ANSWERS[exercise_id]}


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
