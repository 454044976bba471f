"""The graded exercises, declared once (chapter 00).

An exercise is one function of the library with a fixed signature, in the module of its concept, as in
Cornell's minitorch: mul's backward rule is `minitorch.ops.mul_backward`, which mul's graph node calls.
The student writes its body; the stub a student edition hands out is that body replaced by::

    raise NotImplementedError("Exercise X.Y (chapter 0X): <title>. Write the body of <function> in
                               minitorch/<file>.py; check with: python -m pytest -m exX_Y")

Everything else is derived from the table `EXERCISES` below: the stubs (`minitorch.exercises.edition`),
the stand-ins and the grader's answers to them (`grader.sandboxed.stand_in`, `grader.trusted.reference_answers`), the
test markers (``pytest -m exX_Y``, tests/conftest.py) and the scoreboard. Adding an exercise touches its
function, its tests and one line of the table.

This module uses only the standard library: the tests' conftest, the grader and the sandboxed worker load
it by path, without importing the minitorch under test.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the project this file belongs to


DEFAULT_HIDDEN_SHARE = 0.5  # an exercise's hidden tests carry this share of its points unless its line says otherwise
HIDDEN_TESTS = "tests/hidden"  # graded tests students never get: the class grader and the bundle run them


def is_hidden_test(name: str) -> bool:
    """Whether a test file, or a test's node ID ("tests/hidden/test_x.py::test_y"), is one of the hidden tests."""
    return name.split("::", 1)[0].startswith(HIDDEN_TESTS + "/")


@dataclass(frozen=True)
class Exercise:
    """One graded exercise: the function a student writes, and what grading it needs."""

    id: str  # X.Y, X its chapter
    title: str
    points: int
    module: str  # the file that defines the function, relative to the project
    function: str  # its name, at the top level of `module`
    needs: tuple[str, ...] = ()  # the exercises whose functions its tests call besides its own (stand-ins)
    tests: tuple[str, ...] = ()  # the test files holding its graded tests (tests/hidden/ ones: the instructor's)
    hidden_share: float = DEFAULT_HIDDEN_SHARE  # the share of `points` its hidden tests carry (see the table)

    @property
    def hidden_test_files(self) -> tuple[str, ...]:
        """The files of its hidden tests (those of `tests` under tests/hidden/)."""
        return tuple(name for name in self.tests if is_hidden_test(name))

    @property
    def chapter(self) -> int:
        return int(self.id.split(".")[0])

    @property
    def marker(self) -> str:
        """The pytest marker selecting its tests: 2.4 -> ex2_4."""
        return "ex" + self.id.replace(".", "_")

    @property
    def python_module(self) -> str:
        """'minitorch.ops' for 'minitorch/ops.py'."""
        return self.module[:-len(".py")].replace("/", ".")

    def stub_message(self) -> str:
        return stub_message(self.id, self.title, self.function, self.module)


# The table: one line per exercise. `needs` lists the exercises whose functions X's graded tests reach besides X's
# own (a whole backward pass needs topological_order, say), and, for the functions that work on Tensors, those an
# honest answer may build on (the engine's backward rules), and sum_to_shape for every backward rule: the engine
# folds a rule's gradient with it, so an honest answer of a wrong, broadcastable shape reaches it (the failed test
# is then the student's mistake, not a refusal). While X is graded, a request for any other exercise's
# function is refused and the copy flagged: 2.4 cannot borrow 3.2's softmax. tests/exercises/test_exercises.py
# checks that the graded tests need nothing more.
# Points: an exercise's hidden tests (its `tests` under tests/hidden/, which no edition holds) carry `hidden_share` of
# its points and its public tests the rest. The instructor sets it per line (hidden_share=0.75, say; 0 gives every
# point to the public tests); left out, it is DEFAULT_HIDDEN_SHARE, one half. An exercise without hidden tests gives
# all its points to its public tests. A student's own run has no hidden tests: its scoreboard shows what the public
# tests earn of their share (`points_per_test`), as class grading and the Gradescope bundle count them.
_ENGINE = ("1.1", "1.2", "1.3", "1.4", "2.1", "2.2", "2.3")  # the backward rules, their order and sum_to_shape
_PAPER_HIDDEN = "tests/hidden/test_paper_hidden.py"  # the hidden tests of every exercise of chapters 03-09
EXERCISES = {exercise.id: exercise for exercise in (
    Exercise("1.1", "topological_order, the order in which backward visits the graph", 3, "minitorch/tensor.py",
             "topological_order", tests=("tests/test_tensor.py", "tests/hidden/test_tensor_hidden.py")),
    Exercise("1.2", "mul's backward rule", 1, "minitorch/ops.py", "mul_backward", ("1.1", "2.1"),
             tests=("tests/test_ops.py", "tests/hidden/test_ops_hidden.py")),
    Exercise("1.3", "exp's backward rule", 1, "minitorch/ops.py", "exp_backward", ("1.1", "2.1"),
             tests=("tests/test_ops.py", "tests/hidden/test_ops_hidden.py")),
    Exercise("1.4", "log's backward rule", 1, "minitorch/ops.py", "log_backward", ("1.1", "2.1"),
             tests=("tests/test_ops.py", "tests/hidden/test_ops_hidden.py")),
    Exercise("2.1", "sum_to_shape, the gradient of broadcasting", 3, "minitorch/tensor.py", "sum_to_shape",
             ("1.1", "1.2"),
             tests=("tests/test_ops.py", "tests/test_tensor.py", "tests/hidden/test_tensor_hidden.py")),
    Exercise("2.2", "matmul's backward rule", 3, "minitorch/ops.py", "matmul_backward", ("1.1", "2.1"),
             tests=("tests/test_ops.py", "tests/hidden/test_ops_hidden.py")),
    Exercise("2.3", "sum's backward rule", 2, "minitorch/ops.py", "sum_backward", ("1.1", "2.1"),
             tests=("tests/test_ops.py", "tests/hidden/test_ops_hidden.py")),
    Exercise("2.4", "the stable softmax, forward and fused backward", 3, "minitorch/softmax.py", "stable_softmax",
             ("1.1", "1.2", "2.1", "2.3"),
             tests=("tests/test_softmax.py", "tests/hidden/test_softmax_hidden.py")),
    Exercise("2.5", "the Adam update", 3, "minitorch/optim.py", "adam_update",
             tests=("tests/test_optim.py", "tests/hidden/test_adam_hidden.py")),
    Exercise("3.1", "the causal mask", 1, "minitorch/paper/attention.py", "causal_mask",
             tests=("tests/paper/test_attention.py", _PAPER_HIDDEN)),
    Exercise("3.2", "softmax attention", 2, "minitorch/paper/attention.py", "softmax_attention", (*_ENGINE, "2.4"),
             tests=("tests/paper/test_attention.py", _PAPER_HIDDEN)),
    Exercise("3.3", "ReLU attention", 2, "minitorch/paper/attention.py", "relu_attention", _ENGINE,
             tests=("tests/paper/test_attention.py", _PAPER_HIDDEN)),
    Exercise("3.4", "the BOS mass at non-trigger rows", 2, "minitorch/paper/metrics.py",
             "bos_mass_at_non_trigger_rows", tests=("tests/paper/test_metrics.py", _PAPER_HIDDEN)),
    Exercise("3.5", "Gu et al.'s sink score alpha_k", 2, "minitorch/paper/metrics.py", "gu_sink_scores",
             tests=("tests/paper/test_metrics.py", _PAPER_HIDDEN)),
    Exercise("4.1", "the task's targets", 2, "minitorch/paper/task.py", "make_targets",
             tests=("tests/paper/test_task.py", _PAPER_HIDDEN)),
    Exercise("5.1", "the softmax construction: a sink of strength c", 2, "minitorch/paper/theory/constructions.py",
             "softmax_construction_weights", ("2.4", "3.1", "3.2"),
             tests=("tests/paper/test_theory.py", _PAPER_HIDDEN)),
    Exercise("6.1", "the ReLU construction of Theorem 3", 2, "minitorch/paper/theory/constructions.py",
             "relu_construction_weights", ("3.1", "3.3"),
             tests=("tests/paper/test_theory.py", _PAPER_HIDDEN)),
    Exercise("9.1", "the share of heads that sink, Sink_(k+1)^eps at 0-based key k", 1,
             "minitorch/paper/metrics.py", "sink_share", ("3.5",),
             tests=("tests/paper/test_metrics.py", _PAPER_HIDDEN)),
)}

# What a copy of the project holds (the repository's fixed top level); missing entries are skipped.
PROJECT_PATHS = ("README.md", "requirements.txt", "LICENSE", ".gitignore", ".ci",
                 "chapters", "minitorch", "tests", "figures")
NOT_COPIED = ("__pycache__", "*.pyc", ".ipynb_checkpoints", ".pytest_cache")  # the trained models are copied:
# chapter 09 loads them instead of training for a quarter of an hour
# The instructor's own files, which a student edition leaves out: tests that hold every reference answer or
# put them back, the grader's own tests (their honest and hostile copies answer exercises), and the hand-fused
# NumPy floor of the benchmark and the fast path (it repeats answers as array code).
INSTRUCTOR_ONLY = ("tests/exercises/test_answer_leaks.py", "tests/exercises/test_solved_edition.py",
                   "tests/exercises/test_grading.py", "tests/exercises/test_student_code.py",
                   "tests/exercises/test_budgets.py", "minitorch/fast/hand_fused.py", HIDDEN_TESTS,
                   "minitorch/exercises/grader/trusted/reference_answers.py")  # it rebuilds graphs, a template for 1.1
MAX_UNPACKED_BYTES = 200 << 20  # a returned .zip that would unpack to more is refused (the project is a few MiB)
MANIFEST = Path("minitorch") / "exercises" / "edition.json"  # in a student edition: what it handed out
SOLUTION_TAG = "solution"  # notebook cells with this tag answer a graded exercise; the student edition drops them
LINE_LENGTH = 120  # the book's longest line of code, stubs included (tests/test_line_length.py)
SELF_CHECK_TAG = "self-check"  # the answer to a predict-then-check question: the student edition keeps it
MAX_FUNCTION_LINES = 400  # an exercise function longer than this is refused unread (the longest answer has 20)
MAX_MODULE_BYTES = 1 << 20  # a file holding an exercise may be at most this big (the largest has 20 KB)

_ID = re.compile(r"[1-9]\.[1-9][0-9]*")


class ExerciseError(ValueError):
    """The table, a function or a manifest is malformed; the message says where."""


def sort_key(exercise_id: str) -> tuple[int, ...]:
    """'2.10' after '2.9': compare IDs as numbers."""
    return tuple(int(part) for part in exercise_id.split("."))


def paid_tests(passed: list[bool], requires_values: list[bool], hidden: list[bool] | None = None) -> list[bool]:
    """Which of one exercise's tests earn what they are worth (`points_per_test`), given for each test
    whether it passed and whether it is declared ``@pytest.mark.exercise("X.Y", requires_values=True)``: a test
    that a trivial answer (zeros, a constant, the input returned) passes, because it checks only shape, dtype, an
    input left unchanged, a check the library makes outside the function, or a property such an answer has
    (rows summing to one, zero on future keys, a gradient consistent with its forward). A passed test
    is paid, except one of those, which is paid only when its part (the public tests, or the hidden ones: `hidden`
    says which each test is) has value tests (the others) and every one of them passed. The student's scoreboard
    (tests/conftest.py) and class grading (grading.results_json) both score with this rule."""
    hidden = [False] * len(passed) if hidden is None else [bool(flag) for flag in hidden]
    values_pass = {}
    for part in (False, True):
        values = [ok for ok, gated, in_part in zip(passed, requires_values, hidden) if in_part == part and not gated]
        values_pass[part] = bool(values) and all(values)
    return [ok and (values_pass[part] or not gated) for ok, gated, part in zip(passed, requires_values, hidden)]


def split_points(points: float, count: int) -> list[float]:
    """`points` split over `count` tests, each a decimal of at most 6 places, adding up to `points` exactly."""
    cumulative = [round(points * k / count, 6) for k in range(count + 1)]
    return [round(after - before, 6) for before, after in zip(cumulative, cumulative[1:])]


def part_points(exercise: Exercise, has_hidden_tests: bool | None = None) -> tuple[float, float]:
    """(points of its public tests, points of its hidden tests), decimals of at most 6 places adding up to its
    points. The hidden tests carry `hidden_share` of them if the exercise has hidden tests (`has_hidden_tests`; by
    default, if its table line names a file of tests/hidden/); otherwise the public tests carry them all."""
    if not (bool(exercise.hidden_test_files) if has_hidden_tests is None else has_hidden_tests):
        return float(exercise.points), 0.0
    hidden = round(exercise.points * exercise.hidden_share, 6)
    return round(exercise.points - hidden, 6), hidden


def points_per_test(exercise: Exercise, hidden: list[bool], hidden_tests_expected: bool = True) -> list[float]:
    """What each of the exercise's tests is worth, given which of them are hidden (`hidden`, one flag per test):
    the public tests split the public part of its points equally (`part_points`), the hidden ones the hidden part.
    A part of which no test ran is missing from the sum: a student's own run (no hidden tests) is worth the public
    part. `hidden_tests_expected` False (class grading: the grader ran every test it has) gives the public tests
    every point when no hidden test of the exercise was collected."""
    has_hidden = any(hidden) or (hidden_tests_expected and bool(exercise.hidden_test_files))
    public_points, hidden_points = part_points(exercise, has_hidden)
    shares = {False: iter(split_points(public_points, hidden.count(False) or 1)),
              True: iter(split_points(hidden_points, hidden.count(True) or 1))}
    return [next(shares[bool(flag)]) for flag in hidden]


def stub_message(exercise_id: str, title: str, function: str, module: str) -> str:
    """The error a stub raises. tests/conftest.py recognises it by this wording (`STUB_ERROR`)."""
    return (f"Exercise {exercise_id} (chapter {int(exercise_id.split('.')[0]):02d}): {title}. "
            f"Write the body of {function} in {module}; "
            f"check with: python -m pytest -m ex{exercise_id.replace('.', '_')}")


# The stub's error as it appears in any text (a traceback, a notebook's CellExecutionError):
STUB_ERROR = re.compile(r"Exercise (\d+\.\d+) \(chapter \d+\): [^\n]*? Write the body of \w+ in [\w/.]+"
                        r"(?:; check with: python -m pytest -m ex\d+_\d+)?")
_ANSI_COLOUR = re.compile(r"\x1b\[[0-9;]*m")  # notebook tracebacks come coloured


def stub_error(exception: BaseException | None) -> tuple[str, str] | None:
    """(exercise ID, message) of the exercise stub that raised `exception`, also when the stub's
    error is quoted in the text of another error (a notebook's CellExecutionError, a pytest.fail)
    or is its cause; None if no stub is involved."""
    seen = set()
    while exception is not None and id(exception) not in seen:
        seen.add(id(exception))
        found = list(STUB_ERROR.finditer(_ANSI_COLOUR.sub("", str(exception))))
        if found:
            return found[-1][1], found[-1][0]  # in a quoted traceback the error raised comes last
        exception = exception.__cause__ or exception.__context__
    return None


def edition_holding(path: Path) -> Path | None:
    """The student edition that `path` lies in (or is), if any: what is written there is handed out with it."""
    path = Path(path).absolute()
    return next((folder for folder in (path, *path.parents) if (folder / MANIFEST).is_file()), None)


def secret_output_refused(path, what: str) -> None:
    """ExerciseError if `path` (a gradebook, a bundle: they hold the secret seed, hidden inputs or answers) would lie
    inside a student edition."""
    edition = edition_holding(path)
    if edition is not None:
        raise ExerciseError(f"{what} {path} would lie inside the student edition {edition}: it holds the secret seed "
                            f"and what the hidden tests found, and handing out the edition would hand them out; "
                            f"write it where students cannot read it")


def read_manifest_data(root: Path) -> dict | None:
    """The manifest of the edition at `root` ({"handed_out": [IDs], "module_names", "made_from", "made_at"}),
    checked; None without one (the full book); ExerciseError naming the file if it is not a valid manifest."""
    path = Path(root) / MANIFEST
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        manifest["handed_out"] = [str(exercise_id) for exercise_id in manifest["handed_out"]]
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as error:
        raise ExerciseError(f"{path} is not a valid edition manifest ({error})") from None
    if "files" in manifest:  # the fingerprints only editions of marked regions recorded
        raise ExerciseError(OLD_EDITION)
    return manifest


# An edition handed out before exercises were functions is refused, not converted: its answers sit in regions of
# functions that no longer exist, and guessing where they go is what this design removed.
OLD_EDITION = ("an edition made before exercises became functions (its minitorch/exercises/edition.json lists "
               "fingerprints; its answers sit between BEGIN/END EXERCISE markers): make a new edition and copy each "
               "answer into the function its chapter names")


# ----------------------------------------------------------------------
# the functions in the source: found by the syntax tree, never by guessing where code ends


def function_node(tree: ast.Module, name: str) -> ast.FunctionDef | None:
    """The function `name` defined at the top level of a module's tree (the last one, as Python keeps it)."""
    found = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == name]
    return found[-1] if found else None


def body_after_docstring(node: ast.FunctionDef) -> list[ast.stmt]:
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    return body


def replace_bodies(text: str, bodies: dict[str, str], where: str = "") -> str:
    """`text` (a module's source) with the body of each top-level function named in `bodies` replaced by the
    code given for it (written at indentation 0; indented like the body). The def line, its decorators and its
    docstring stay."""
    tree = ast.parse(text, where or "<source>")
    lines = text.splitlines(keepends=True)
    spans = []
    for name, code in bodies.items():
        node = function_node(tree, name)
        if node is None:
            raise ExerciseError(f"{where}: no function {name} at the top level")
        body = body_after_docstring(node)
        if not body:
            raise ExerciseError(f"{where}: function {name} has no body after its docstring")
        indent = " " * body[0].col_offset
        if lines[body[0].lineno - 1][:body[0].col_offset].strip():
            raise ExerciseError(f"{where}:{body[0].lineno}: {name}'s body must start on a line of its own")
        new = [indent + line if line.strip() else "\n" for line in code.splitlines(keepends=True)]
        spans.append((body[0].lineno - 1, node.end_lineno, [line.rstrip("\n") + "\n" for line in new]))
    for start, end, new in sorted(spans, reverse=True):  # bottom up: line numbers stay valid
        lines[start:end] = new
    return "".join(lines)


def raise_statement(exception: str, message: str, indent: str) -> str:
    """The code ``raise exception("message")``, to be written at `indent`: one line, or the message split over
    several so that no line is longer than LINE_LENGTH. (Returned without the indent.)"""
    one_line = f"raise {exception}({json.dumps(message, ensure_ascii=False)})"
    if len(indent + one_line) <= LINE_LENGTH:
        return one_line
    width = LINE_LENGTH - len(indent) - len("    )")  # what one line of the message may take
    literals = [json.dumps(piece, ensure_ascii=False) for piece in _split_words(message, width)]
    return f"raise {exception}(\n" + "\n".join(f"    {literal}" for literal in literals) + ")"


def _split_words(message: str, width: int) -> list[str]:
    """`message` in pieces that join back to it, each (as a JSON string literal) at most `width` long where a
    word allows: every piece but the last ends with its space."""
    pieces = [""]
    for word in message.split(" "):
        candidate = f"{pieces[-1]} {word}" if pieces[-1] else word
        if pieces[-1] and len(json.dumps(candidate + " ", ensure_ascii=False)) > width:
            pieces[-1] += " "
            pieces.append(word)
        else:
            pieces[-1] = candidate
    return pieces


def stub_body(exercise: Exercise) -> str:
    """The body a student edition gives the exercise's function: its NotImplementedError."""
    return raise_statement("NotImplementedError", exercise.stub_message(), "    ") + "\n"


def stubbed_source(text: str, exercises, where: str = "") -> str:
    """One module's source with the functions of `exercises` stubbed."""
    return replace_bodies(text, {exercise.function: stub_body(exercise) for exercise in exercises}, where)


def is_stub(node: ast.FunctionDef, exercise: Exercise) -> bool:
    """True if the function's only code is the edition's ``raise NotImplementedError(<its stub message>)``."""
    body = body_after_docstring(node)
    if len(body) != 1 or not isinstance(body[0], ast.Raise):
        return False
    raised = body[0].exc
    if not (isinstance(raised, ast.Call) and isinstance(raised.func, ast.Name)
            and raised.func.id == "NotImplementedError" and len(raised.args) == 1 and not raised.keywords
            and isinstance(raised.args[0], ast.Constant) and isinstance(raised.args[0].value, str)):
        return False
    found = STUB_ERROR.search(raised.args[0].value)
    return bool(found) and found[1] == exercise.id


def load_exercises(root: Path = ROOT, table: dict | None = None) -> list[Exercise]:
    """The table's exercises in ID order, each checked against the source at `root`: its module exists and
    defines its function at the top level; ExerciseError naming what is wrong."""
    table = EXERCISES if table is None else table
    trees: dict[str, ast.Module] = {}
    for exercise_id, exercise in table.items():
        if not _ID.fullmatch(exercise_id) or exercise.id != exercise_id:
            raise ExerciseError(f"EXERCISES in minitorch/exercises/registry.py: ID {exercise_id!r} is not of the "
                                f"form X.Y with X a chapter in 1..9, or differs from its entry's")
        if not isinstance(exercise.points, int) or exercise.points <= 0:
            raise ExerciseError(f"EXERCISES: exercise {exercise_id} needs a positive whole number of points")
        share = exercise.hidden_share
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share <= 1:
            raise ExerciseError(f"EXERCISES: exercise {exercise_id}: hidden_share is the share of its points that "
                                f"its hidden tests carry, a number from 0 to 1; got {share!r}")
        unknown = [needed for needed in exercise.needs if needed not in table or needed == exercise_id]
        if unknown:
            raise ExerciseError(f"EXERCISES: exercise {exercise_id} needs {', '.join(unknown)}, which is not "
                                f"another exercise of the table")
        later = [needed for needed in exercise.needs if needed in table and needed.split(".")[0] == str(
            exercise.chapter) and sort_key(needed) > sort_key(exercise_id)]
        if later:  # a student works in ID order: what an exercise's tests need must come before it
            raise ExerciseError(f"EXERCISES: exercise {exercise_id} needs {', '.join(later)} of its own chapter, "
                                f"numbered after it; number the exercises in the order a student can do them")
        path = Path(root) / exercise.module
        if exercise.module not in trees:
            if path.exists() and not path.is_file():  # a named pipe would block the read forever
                raise ExerciseError(f"exercise {exercise_id}: {path} is not a regular file (a folder, a named pipe "
                                    f"or a device); it should be the module that defines {exercise.function}")
            try:
                trees[exercise.module] = ast.parse(path.read_text(encoding="utf-8"), str(path))
            except (OSError, SyntaxError, UnicodeDecodeError) as error:
                raise ExerciseError(f"exercise {exercise_id}: cannot read {path} ({error})") from None
        if function_node(trees[exercise.module], exercise.function) is None:
            raise ExerciseError(f"exercise {exercise_id}: {exercise.module} defines no function "
                                f"{exercise.function} at its top level")
    return sorted(table.values(), key=lambda exercise: sort_key(exercise.id))


def select(exercises: list[Exercise], only=(), chapters=()) -> list[Exercise]:
    """The exercises named in `only` plus those of `chapters`; all of them if both are empty."""
    known = {exercise.id for exercise in exercises}
    unknown = [exercise_id for exercise_id in only if exercise_id not in known]
    if unknown:
        raise ExerciseError(f"unknown exercise ID(s) {', '.join(unknown)}; the exercises are "
                            f"{', '.join(sorted(known, key=sort_key))}")
    with_exercises = sorted({exercise.chapter for exercise in exercises})
    empty = [chapter for chapter in chapters if chapter not in with_exercises]
    if empty:
        raise ExerciseError(f"chapter(s) {', '.join(map(str, empty))} have no exercises; chapters with exercises: "
                            f"{', '.join(map(str, with_exercises))}")
    if not only and not chapters:
        return list(exercises)
    return [exercise for exercise in exercises if exercise.id in only or exercise.chapter in chapters]
