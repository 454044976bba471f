"""The graded exercises, declared once (chapter 00).

An exercise is one function of the library with a fixed signature, in the module of its concept: mul's backward
rule is `minitorch.ops.mul_backward`, which mul's graph node calls. A student writes its body; a student edition
hands it out as a stub raising `stub_message`. Everything else derives from the table `EXERCISES`: the stubs, the
stand-ins of class grading, the pytest markers (``pytest -m ex3_2``), the scoreboard and the Gradescope bundle.
Adding an exercise is its function, its tests and one row (tests/exercises/test_new_exercise.py shows it).

Standard library only: the tests' plugin and the sandboxed worker load this file without the minitorch under test.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the project this file belongs to
HIDDEN_TESTS = "tests/hidden"  # graded tests no edition holds: class grading and the bundle run them
DEFAULT_HIDDEN_SHARE = 0.5  # the share of an exercise's points its hidden tests carry, unless its row says otherwise
PROJECT_PATHS = ("README.md", "requirements.txt", "LICENSE", ".gitignore", ".ci", "chapters", "minitorch", "tests",
                 "figures")  # what a copy of the project holds (the trained models too: chapter 09 loads them)
NOT_COPIED = ("__pycache__", "*.pyc", ".ipynb_checkpoints", ".pytest_cache")
# The instructor's files, which no edition holds: the tests that hold or put back every answer, the grader's own
# tests (their copies answer exercises), the hand-fused floor (array code of answers), the hidden tests, and the
# reference answers the grader serves (they rebuild graphs: a template for 1.1).
INSTRUCTOR_ONLY = ("tests/exercises/test_answer_leaks.py", "tests/exercises/test_solved_edition.py",
                   "tests/exercises/test_grading.py", "tests/exercises/test_student_code.py",
                   "tests/exercises/test_budgets.py", "minitorch/fast/hand_fused.py", HIDDEN_TESTS,
                   "minitorch/exercises/grader/trusted/reference_answers.py")
MANIFEST = Path("minitorch") / "exercises" / "edition.json"  # in a student edition: what it handed out
SOLUTION_TAG = "solution"  # a notebook cell answering a graded exercise: the student edition drops it
SELF_CHECK_TAG = "self-check"  # the answer to a predict-then-check question: the student edition keeps it
LINE_LENGTH = 120  # the book's longest line of code, stubs included (tests/test_line_length.py)
MAX_UNPACKED_BYTES = 200 << 20  # a returned .zip that would unpack to more is refused (the project is a few MiB)
MAX_FUNCTION_LINES = 400  # an exercise function longer than this is refused unread (the longest answer has 20)
MAX_MODULE_BYTES = 1 << 20  # a file holding an exercise may be at most this big (the largest has 20 KB)


class ExerciseError(ValueError):
    """The table, a function, a choice of exercises or a manifest is wrong; the message says where."""


@dataclass(frozen=True)
class Exercise:
    """One graded exercise: the function a student writes, and what grading it needs."""

    id: str  # X.Y, X its chapter
    title: str
    points: int
    module: str  # the file that defines the function, relative to the project
    function: str  # its name, at the top level of `module`
    needs: tuple[str, ...] = ()  # the exercises whose functions its tests reach besides its own (see the table)
    tests: tuple[str, ...] = ()  # the files of its graded tests (those under tests/hidden/: the instructor's)
    hidden_share: float = DEFAULT_HIDDEN_SHARE  # the share of `points` its hidden tests carry

    chapter = property(lambda self: int(self.id.split(".")[0]))
    marker = property(lambda self: "ex" + self.id.replace(".", "_"))  # the pytest marker of its tests: ex2_4
    python_module = property(lambda self: self.module.removesuffix(".py").replace("/", "."))
    hidden_test_files = property(lambda self: tuple(name for name in self.tests if is_hidden_test(name)))

    def stub_message(self) -> str:
        return stub_message(self.id, self.title, self.function, self.module)


# One row per exercise. `needs`: the exercises whose functions X's graded tests reach besides X's own (a backward
# pass needs topological_order), those an honest answer may build on (the engine's rules), and sum_to_shape for
# every backward rule (the engine folds a rule's gradient with it). While X is graded a stand-in answers only
# those; any other is refused and the copy flagged. `hidden_share`: the share of the points its hidden tests carry
# (0 gives every point to the public tests); an exercise without hidden tests gives the public ones all its points.
_OPS = ("tests/test_ops.py", "tests/hidden/test_ops_hidden.py")
_TENSOR = ("tests/test_tensor.py", "tests/hidden/test_tensor_hidden.py")
_PAPER_HIDDEN = "tests/hidden/test_paper_hidden.py"
_ATTENTION, _METRICS = ("tests/paper/test_attention.py", _PAPER_HIDDEN), ("tests/paper/test_metrics.py", _PAPER_HIDDEN)
_THEORY = ("tests/paper/test_theory.py", _PAPER_HIDDEN)
_ENGINE = ("1.1", "1.2", "1.3", "1.4", "2.1", "2.2", "2.3")  # the backward rules, their order and sum_to_shape
EXERCISES = {exercise.id: exercise for exercise in (
    Exercise("1.1", "topological_order, the order in which backward visits the graph", 3, "minitorch/tensor.py",
             "topological_order", tests=_TENSOR),
    Exercise("1.2", "mul's backward rule", 1, "minitorch/ops.py", "mul_backward", ("1.1", "2.1"), _OPS),
    Exercise("1.3", "exp's backward rule", 1, "minitorch/ops.py", "exp_backward", ("1.1", "2.1"), _OPS),
    Exercise("1.4", "log's backward rule", 1, "minitorch/ops.py", "log_backward", ("1.1", "2.1"), _OPS),
    Exercise("2.1", "sum_to_shape, the gradient of broadcasting", 3, "minitorch/tensor.py", "sum_to_shape",
             ("1.1", "1.2"), ("tests/test_ops.py", *_TENSOR)),
    Exercise("2.2", "matmul's backward rule", 3, "minitorch/ops.py", "matmul_backward", ("1.1", "2.1"), _OPS),
    Exercise("2.3", "sum's backward rule", 2, "minitorch/ops.py", "sum_backward", ("1.1", "2.1"), _OPS),
    Exercise("2.4", "the stable softmax, forward and fused backward", 3, "minitorch/softmax.py", "stable_softmax",
             ("1.1", "1.2", "2.1", "2.3"), ("tests/test_softmax.py", "tests/hidden/test_softmax_hidden.py")),
    Exercise("2.5", "the Adam update", 3, "minitorch/optim.py", "adam_update",
             tests=("tests/test_optim.py", "tests/hidden/test_adam_hidden.py")),
    Exercise("3.1", "the causal mask", 1, "minitorch/paper/attention.py", "causal_mask", tests=_ATTENTION),
    Exercise("3.2", "softmax attention", 2, "minitorch/paper/attention.py", "softmax_attention", (*_ENGINE, "2.4"),
             _ATTENTION),
    Exercise("3.3", "ReLU attention", 2, "minitorch/paper/attention.py", "relu_attention", _ENGINE, _ATTENTION),
    Exercise("3.4", "the BOS mass at non-trigger rows", 2, "minitorch/paper/metrics.py",
             "bos_mass_at_non_trigger_rows", tests=_METRICS),
    Exercise("3.5", "Gu et al.'s sink score alpha_k", 2, "minitorch/paper/metrics.py", "gu_sink_scores",
             tests=_METRICS),
    Exercise("4.1", "the task's targets", 2, "minitorch/paper/task.py", "make_targets",
             tests=("tests/paper/test_task.py", _PAPER_HIDDEN)),
    Exercise("5.1", "the softmax construction: a sink of strength c", 2, "minitorch/paper/theory/constructions.py",
             "softmax_construction_weights", ("2.4", "3.1", "3.2"), _THEORY),
    Exercise("6.1", "the ReLU construction of Theorem 3", 2, "minitorch/paper/theory/constructions.py",
             "relu_construction_weights", ("3.1", "3.3"), _THEORY),
    Exercise("9.1", "the share of heads that sink, Sink_(k+1)^eps at 0-based key k", 1, "minitorch/paper/metrics.py",
             "sink_share", ("3.5",), _METRICS),
)}


def sort_key(exercise_id: str) -> tuple[int, ...]:
    """'2.10' after '2.9': IDs compare as numbers, in the order a student can do them."""
    return tuple(int(part) for part in exercise_id.split("."))


def is_hidden_test(name: str) -> bool:
    """Whether a test file or node ID ("tests/hidden/test_x.py::test_y") is one of the hidden tests."""
    return name.split("::", 1)[0].startswith(HIDDEN_TESTS + "/")


# ----------------------------------------------------------------------
# points: the student's scoreboard (tests/course_plugin.py), class grading and the bundle score alike


def paid_tests(passed: list[bool], requires_values: list[bool], hidden: list[bool] | None = None) -> list[bool]:
    """Which passed tests are paid. A test declared ``requires_values=True`` (a trivial answer passes it: it checks a
    shape, a dtype, an input left unchanged) is paid only when every other test of its part (public, or hidden:
    `hidden`) passed."""
    hidden = [bool(flag) for flag in hidden] if hidden is not None else [False] * len(passed)
    values = {part: [ok for ok, gated, hid in zip(passed, requires_values, hidden) if hid == part and not gated]
              for part in (False, True)}
    return [ok and (not gated or (bool(values[hid]) and all(values[hid])))
            for ok, gated, hid in zip(passed, requires_values, hidden)]


def split_points(points: float, count: int) -> list[float]:
    """`points` split over `count` tests, decimals of at most 6 places adding up to `points` exactly."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:  # no tests would carry the points
        raise ValueError(f"split_points: count must be a whole number of tests >= 1, got {count!r}")
    cumulative = [round(points * k / count, 6) for k in range(count + 1)]
    return [round(after - before, 6) for before, after in zip(cumulative, cumulative[1:])]


def part_points(exercise: Exercise, has_hidden_tests: bool | None = None) -> tuple[float, float]:
    """(points of its public tests, of its hidden ones): the hidden carry `hidden_share` if the exercise has hidden
    tests (by default: its row names a file of tests/hidden/), else the public tests carry them all."""
    if not (bool(exercise.hidden_test_files) if has_hidden_tests is None else has_hidden_tests):
        return float(exercise.points), 0.0
    hidden = round(exercise.points * exercise.hidden_share, 6)
    return round(exercise.points - hidden, 6), hidden


def points_per_test(exercise: Exercise, hidden: list[bool], hidden_tests_expected: bool = True) -> list[float]:
    """What each test is worth, given which are hidden: each part's points split equally over its tests. A student's
    own run (no hidden tests) is worth the public part; class grading (`hidden_tests_expected` False, it ran every test
    it has) gives the public tests every point when it collected no hidden test of the exercise."""
    public, secret = part_points(exercise, any(hidden) or (hidden_tests_expected and bool(exercise.hidden_test_files)))
    shares = {False: iter(split_points(public, hidden.count(False) or 1)),
              True: iter(split_points(secret, hidden.count(True) or 1))}
    return [next(shares[bool(flag)]) for flag in hidden]


# ----------------------------------------------------------------------
# the stub's error, and finding it again in any text (a traceback, a notebook's CellExecutionError)


def stub_message(exercise_id: str, title: str, function: str, module: str) -> str:
    return (f"Exercise {exercise_id} (chapter {int(exercise_id.split('.')[0]):02d}): {title}. Write the body of "
            f"{function} in {module}; check with: python -m pytest -m ex{exercise_id.replace('.', '_')}")


STUB_ERROR = re.compile(r"Exercise (?P<id>\d+\.\d+) \(chapter (?P<chapter>\d+)\): (?P<title>[^\n]*?)\. Write the body "
                        r"of (?P<function>\w+) in (?P<module>[\w/.]+)(?:; check with: python -m pytest -m ex\d+_\d+)?")
_ANSI_COLOUR = re.compile(r"\x1b\[[0-9;]*m")  # notebook tracebacks come coloured


def stub_error(exception: BaseException | None) -> tuple[str, str] | None:
    """(exercise ID, message) of the stub that raised `exception`, or whose error it quotes or has as its cause;
    None if no stub is involved."""
    seen = set()
    while exception is not None and id(exception) not in seen:
        seen.add(id(exception))
        found = list(STUB_ERROR.finditer(_ANSI_COLOUR.sub("", str(exception))))
        if found:
            return found[-1]["id"], found[-1][0]  # in a quoted traceback the error raised comes last
        exception = exception.__cause__ or exception.__context__
    return None


def exercise_needed(error: BaseException) -> str | None:
    """For a command stopped by a stub (`minitorch.tools.exit_policy`): which exercise to write first, and how to
    check it; None for any other error."""
    found = stub_error(error)
    if found is None:
        return None
    stub, marker = STUB_ERROR.search(found[1]), "ex" + found[0].replace(".", "_")
    return (f"exercise {stub['id']} ({stub['function']} in {stub['module']}) first: write its body (chapter "
            f"{stub['chapter']}, {stub['title']}), then check it with: python -m pytest -m {marker}")


# ----------------------------------------------------------------------
# the functions in the source: found by the syntax tree, never by guessing where code ends


def function_node(tree: ast.Module, name: str) -> ast.FunctionDef | None:
    """The function `name` defined at the top level of a module's tree (the last one, as Python keeps it)."""
    found = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == name]
    return found[-1] if found else None


def body_after_docstring(node: ast.FunctionDef) -> list[ast.stmt]:
    body = node.body
    docstring = body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
    return body[1:] if docstring and isinstance(body[0].value.value, str) else body


def replace_bodies(text: str, bodies: dict[str, str], where: str = "") -> str:
    """A module's source with the body of each function named in `bodies` replaced by the code given for it
    (written at indentation 0); its def line, decorators and docstring stay."""
    tree, lines, spans = ast.parse(text, where or "<source>"), text.splitlines(keepends=True), []
    for name, code in bodies.items():
        node = function_node(tree, name)
        body = body_after_docstring(node) if node is not None else None
        if not body:
            raise ExerciseError(f"{where}: no function {name} with a body after its docstring at the top level")
        first = body[0]
        if lines[first.lineno - 1][:first.col_offset].strip():
            raise ExerciseError(f"{where}:{first.lineno}: {name}'s body must start on a line of its own")
        new = [" " * first.col_offset + line.rstrip("\n") + "\n" if line.strip() else "\n"
               for line in code.splitlines(keepends=True)]
        spans.append((first.lineno - 1, node.end_lineno, new))
    for start, end, new in sorted(spans, reverse=True):  # bottom up: line numbers stay valid
        lines[start:end] = new
    return "".join(lines)


# ----------------------------------------------------------------------
# the table checked against a project, choices of exercises, an edition's manifest


def _row_problem(exercise_id: str, exercise: Exercise, table: dict) -> str | None:
    """What is wrong with one row of the table, or None."""
    share, chapter = exercise.hidden_share, exercise_id.split(".")[0]
    if not re.fullmatch(r"[1-9]\.[1-9][0-9]*", exercise_id) or exercise.id != exercise_id:
        return "its ID is not of the form X.Y with X a chapter in 1..9, or differs from its entry's"
    if not isinstance(exercise.points, int) or exercise.points <= 0:
        return "needs a positive whole number of points"
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share <= 1:
        return f"hidden_share is the share of its points its hidden tests carry, a number from 0 to 1; got {share!r}"
    unknown = [needed for needed in exercise.needs if needed not in table or needed == exercise_id]
    if unknown:
        return f"needs {', '.join(unknown)}, which is not another exercise of the table"
    later = [needed for needed in exercise.needs if needed.split(".")[0] == chapter and sort_key(needed) > sort_key(
        exercise_id)]  # a student works in ID order
    if later:
        return (f"needs {', '.join(later)} of its own chapter, numbered after it; number the exercises in the order a "
                f"student can do them")
    return None


def load_exercises(root: Path = ROOT, table: dict | None = None) -> list[Exercise]:
    """The table's exercises in ID order, each row checked, and checked against the source at `root`: its module
    defines its function at the top level. ExerciseError naming what is wrong."""
    table, trees = EXERCISES if table is None else table, {}
    for exercise_id, exercise in table.items():
        problem = _row_problem(exercise_id, exercise, table)
        if problem:
            raise ExerciseError(f"EXERCISES in minitorch/exercises/registry.py, row {exercise_id}: {problem}")
        if exercise.module not in trees:
            path = Path(root) / exercise.module
            try:
                if path.exists() and not path.is_file():  # a named pipe would block the read forever
                    raise OSError(f"{path} is not a regular file")
                trees[exercise.module] = ast.parse(path.read_text(encoding="utf-8"), str(path))
            except (OSError, SyntaxError, UnicodeDecodeError) as error:
                raise ExerciseError(f"exercise {exercise_id}: cannot read {path} ({error})") from None
        if function_node(trees[exercise.module], exercise.function) is None:
            raise ExerciseError(f"exercise {exercise_id}: {exercise.module} defines no function {exercise.function} "
                                f"at its top level")
    return sorted(table.values(), key=lambda exercise: sort_key(exercise.id))


def select(exercises: list[Exercise], only=(), chapters=()) -> list[Exercise]:
    """The exercises named in `only` and those of `chapters`; all of them if both are empty."""
    known, with_exercises = {e.id for e in exercises}, sorted({e.chapter for e in exercises})
    unknown, empty = [i for i in only if i not in known], [c for c in chapters if c not in with_exercises]
    if unknown:
        raise ExerciseError(f"unknown exercise ID(s) {', '.join(unknown)}; the exercises are "
                            f"{', '.join(sorted(known, key=sort_key))}")
    if empty:
        raise ExerciseError(f"chapter(s) {', '.join(map(str, empty))} have no exercises; chapters with exercises: "
                            f"{', '.join(map(str, with_exercises))}")
    return [e for e in exercises if not (only or chapters) or e.id in only or e.chapter in chapters]


def chosen(exercises: list[Exercise], only: str = "", chapter: str = "") -> list[Exercise]:
    """`select` by the options' text: --only 3.1,3.2 and --chapter 3 or 1,2 (their union; neither: every one)."""
    try:
        chapters = [int(part) for part in chapter.split(",") if part.strip()]
    except ValueError:
        raise ExerciseError(f"--chapter takes chapter numbers such as 3 or 1,2, got {chapter!r}") from None
    return select(exercises, only=[part.strip() for part in only.split(",") if part.strip()], chapters=chapters)


# An edition of exercises as marked regions (before they were functions) is refused, not converted: its answers sit
# in functions that no longer exist.
OLD_EDITION = ("an edition made before exercises became functions (its minitorch/exercises/edition.json lists "
               "fingerprints; its answers sit between BEGIN/END EXERCISE markers): make a new edition and copy each "
               "answer into the function its chapter names")


def read_manifest_data(root: Path) -> dict | None:
    """The checked manifest of the edition at `root` ({"handed_out": [IDs], "module_names", ...}); None without one
    (the full book)."""
    path = Path(root) / MANIFEST
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as error:  # (a student's copy holds it)
        raise ExerciseError(f"{path} is not a valid edition manifest ({str(error)[:200]})") from None
    if not isinstance(manifest, dict):
        raise ExerciseError(f"{path} is not a valid edition manifest: it holds a JSON {type(manifest).__name__}, not "
                            f"an object with the field handed_out")
    handed_out = manifest.get("handed_out")
    if not isinstance(handed_out, list) or not all(isinstance(exercise_id, str) for exercise_id in handed_out):
        got = f"{type(handed_out).__name__} {handed_out!r}"[:200] if "handed_out" in manifest else "no such field"
        raise ExerciseError(f"{path} is not a valid edition manifest: its field handed_out should be a list of "
                            f"exercise IDs such as [\"1.1\", \"1.2\"], got {got}")
    if "files" in manifest:  # the fingerprints only editions of marked regions recorded
        raise ExerciseError(OLD_EDITION)
    return manifest


def secret_output_refused(path, what: str, root: Path, holding: str = "") -> None:
    """ExerciseError if `path` (a gradebook, a bundle: the seed, hidden inputs, answers; a Canvas CSV: `holding`
    every student's grade) lies in the project `root` (one `git add .` would hand it to the students) or in a
    student edition."""
    path, root = Path(path).absolute(), Path(root).resolve()
    if path.is_relative_to(root):  # as student-edition refuses a folder inside the project
        raise ExerciseError(f"{what} {path} would lie inside the project {root}: it holds "
                            f"{holding or 'the secret seed and the answers to the hidden tests'}, one `git add .` "
                            f"from the students; write it outside, e.g. {root.parent / path.name}")
    edition = next((folder for folder in (path, *path.parents) if (folder / MANIFEST).is_file()), None)
    if edition is not None:
        raise ExerciseError(f"{what} {path} would lie inside the student edition {edition}: it holds "
                            f"{holding or 'the secret seed and what the hidden tests found'}, and handing out the "
                            f"edition would hand them out; write it where students cannot read it")
