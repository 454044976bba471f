"""Every graded test reaches the student's code only through the ``student`` fixture (chapter 11, "How grading
works").

When a class is graded, the body of a graded test runs in the grader's check process, where ``minitorch`` is
the grader's reference library; only ``student.<probe>(...)`` calls reach the student's code. A graded test
that calls, say, ``minitorch.softmax`` itself would check the grader's softmax and give every student its
points; in a student's own run it would compare their code with itself. So these checks read every test file
that grades an exercise and require of each graded test (a test marked ``exercise``, directly or through a
``pytest.param``) that it

- takes the ``student`` fixture and uses it;
- refers to no library code that runs an exercise's function: the exercises' functions themselves,
  the library functions that call one of those by name (``div`` calls ``mul``, ``gradcheck`` calls
  ``topological_order``, ...), the Tensor itself and the ``backward``/``backward_fn`` methods, the probes
  themselves (called directly they run here), also not through a helper function of the test file.
  Expected values come from test-side code (loops, NumPy).

Not seen: what a model's forward pass runs (5.1 and 6.1 evaluate the student's construction, loaded into a
model built in the test, with the grader's library on purpose) and method calls on objects built in the test.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import pkgutil
import re
import textwrap
import types
from pathlib import Path

import pytest

import minitorch
from minitorch.exercises.grader.sandboxed import probes
from minitorch.exercises.registry import load_exercises

REPOSITORY = Path(__file__).resolve().parents[2]
TESTS = REPOSITORY / "tests"
ENGINE_METHODS = ("backward", "backward_fn")  # Tensor methods that run the backward rules, exercises among them


def graded_test_files() -> list[Path]:
    """The test files that mark tests ``exercise`` (the course's own tests in tests/exercises aside)."""
    return [path for path in sorted(TESTS.rglob("test_*.py"))
            if "exercises" not in path.relative_to(TESTS).parts[:-1]
            and "mark.exercise(" in path.read_text(encoding="utf-8")]


def import_test_file(path: Path) -> types.ModuleType:
    """The test file `path` as a module of its own (pytest's copy, if it has one, is left alone)."""
    name = "_graded_tests_" + re.sub(r"\W", "_", str(path.with_suffix("")))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def exercises_graded_by(function, module: types.ModuleType) -> set[str]:
    """The exercise IDs a test function is marked with, directly or in the marks of its parameters."""
    found, module_marks = set(), getattr(module, "pytestmark", [])
    module_marks = module_marks if isinstance(module_marks, list) else [module_marks]
    for mark in [*getattr(function, "pytestmark", []), *(getattr(mark, "mark", mark) for mark in module_marks)]:
        if mark.name == "exercise":
            found.add(str(mark.args[0]))
        elif mark.name == "parametrize":
            for value in mark.args[1] if len(mark.args) > 1 else mark.kwargs.get("argvalues", []):
                for inner in getattr(value, "marks", ()):
                    inner = getattr(inner, "mark", inner)  # a MarkDecorator holds its Mark
                    if inner.name == "exercise":
                        found.add(str(inner.args[0]))
    return found


# ----------------------------------------------------------------------
# what runs an exercise's function


def library_modules() -> list[types.ModuleType]:
    """The engine and the paper layer (the course's tooling, minitorch.exercises and minitorch.tools, aside)."""
    names = [info.name for info in pkgutil.walk_packages(minitorch.__path__, "minitorch.")
             if not info.name.startswith(("minitorch.exercises", "minitorch.tools", "minitorch.__main__"))]
    return [minitorch, *(importlib.import_module(name) for name in names)]


def exercise_functions() -> dict[object, tuple[str, str]]:
    """Each exercise's function -> (why it is off limits, what it runs)."""
    owners = {}
    for exercise in load_exercises(REPOSITORY):
        module = importlib.import_module(exercise.python_module)
        owners[getattr(module, exercise.function)] = (f"it is exercise {exercise.id}", f"exercise {exercise.id}")
    return owners


def resolve(node: ast.expr, namespace: dict):
    """The object a name or a dotted name (``minitorch.ops.mul``) stands for in `namespace`; None if it is
    anything else, or reached through an object other than a module or a class."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in namespace:
        return None
    found = namespace[node.id]
    for part in reversed(parts):
        if not isinstance(found, (types.ModuleType, type)):
            return None
        found = inspect.getattr_static(found, part, None)
    return found


def references(tree: ast.AST) -> list[ast.expr]:
    """Every name and outermost dotted name in `tree` (``a.b.c`` once, not also ``a.b``)."""
    inner = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    return [node for node in ast.walk(tree) if isinstance(node, (ast.Name, ast.Attribute)) and id(node) not in inner]


def _is_hashable(value) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def library_functions() -> set:
    """The module-level functions of the engine and the paper layer."""
    return {function for module in library_modules() for _, function in inspect.getmembers(module, inspect.isfunction)
            if function.__module__.startswith("minitorch.") and function.__name__ != "<lambda>"
            and not function.__module__.startswith(("minitorch.exercises", "minitorch.tools"))}


def off_limits() -> dict[object, tuple[str, str]]:
    """Library code a graded test may not refer to -> (why, what it runs): the exercises' functions, the Tensor,
    and every library function that refers by name to one of those (looked for again until nothing new is found)."""
    found = exercise_functions()
    tensors = "the exercises' backward rules"
    found[minitorch.Tensor] = ("its operations run the exercises' backward rules", tensors)
    found[minitorch.tensor] = ("it builds a Tensor, whose operations run the exercises' backward rules", tensors)
    functions = library_functions()
    trees = {function: ast.parse(textwrap.dedent(inspect.getsource(function))) for function in functions}
    grew = True
    while grew:
        grew = False
        for function in sorted(functions - set(found), key=lambda f: f.__qualname__):
            for node in references(trees[function]):
                target = resolve(node, function.__globals__)
                if target is not function and _is_hashable(target) and target in found:
                    runs = found[target][1]
                    found[function] = (f"it calls {_name_of(target)}, which runs {runs}", runs)
                    grew = True
                    break
    for name, probe in inspect.getmembers(probes, inspect.isfunction):  # run here, a probe checks the grader's code
        if probe.__module__ == probes.__name__:
            found[probe] = (f"it is a probe: ask the student fixture, student.{name}(...)", "the library under test")
    return found


def _name_of(target) -> str:
    return f"{target.__module__.removeprefix('minitorch.')}.{target.__qualname__}"


# ----------------------------------------------------------------------
# the checks


def problems_of(name: str, module: types.ModuleType, tree: ast.Module, forbidden: dict) -> list[str]:
    """What is wrong with the graded test `name` of `module` (parsed as `tree`): one sentence each."""
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    test = functions[name]
    problems = []
    if "student" not in [argument.arg for argument in test.args.args]:
        problems.append("does not take the student fixture: add the argument `student` and call the code under test "
                        "as student.<probe>(...) (minitorch/exercises/grader/sandboxed/probes.py)")
    elif not any(isinstance(node, ast.Name) and node.id == "student" for node in ast.walk(test)):
        problems.append("takes the student fixture but never uses it")
    seen, to_read = set(), [test]
    while to_read:  # the test and the helper functions of its file that it calls, and theirs
        function = to_read.pop()
        where = "" if function is test else f" (in its helper {function.name})"
        for node in references(function):
            if isinstance(node, ast.Attribute) and node.attr in ENGINE_METHODS:
                problems.append(f"calls .{node.attr}() at line {node.lineno}{where}: that runs the library's backward "
                                f"rules, exercises among them, in the test itself")
                continue
            target = resolve(node, vars(module))
            if _is_hashable(target) and target in forbidden:
                problems.append(f"refers to {ast.unparse(node)} at line {node.lineno}{where}, library code that runs "
                                f"an exercise's function ({forbidden[target][0]})")
            elif isinstance(node, ast.Name) and node.id in functions and node.id not in seen and node.id != name:
                seen.add(node.id)
                to_read.append(functions[node.id])
    return problems


def graded_test_problems(paths) -> dict[str, list[str]]:
    """{"path::test": [problems]} for every graded test of the files `paths` that has any."""
    forbidden, found = off_limits(), {}
    for path in paths:
        module, tree = import_test_file(path), ast.parse(path.read_text(encoding="utf-8"))
        for name, function in vars(module).items():
            if name.startswith("test") and inspect.isfunction(function) and exercises_graded_by(function, module):
                problems = problems_of(name, module, tree, forbidden)
                if problems:
                    shown = path.relative_to(REPOSITORY) if path.is_relative_to(REPOSITORY) else path
                    found[f"{shown.as_posix()}::{name}"] = problems
    return found


def test_every_graded_test_reaches_the_students_code_only_through_the_student_fixture():
    paths = graded_test_files()
    assert len(paths) >= 8, f"expected the graded test files of every chapter, found {[str(p) for p in paths]}"
    problems = graded_test_problems(paths)
    assert not problems, (
        "graded tests that would check the grader's own library when a class is graded (their body runs in the "
        "grader's check process; only student.<probe>(...) calls reach the student's code):\n" +
        "\n".join(f"- {test}: {'; '.join(sorted(set(found)))}" for test, found in problems.items()))


def library_imports(path: Path) -> list[str]:
    """The modules of the library (minitorch, but its course tooling minitorch.exercises) that a file imports."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        modules = [alias.name for alias in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
        found += [f"{module} (line {node.lineno})" for module in modules if module.split(".")[0] == "minitorch"
                  and not module.startswith("minitorch.exercises")]
    return found


def test_hidden_tests_compare_with_references_of_their_own():
    """A hidden test's reference is written in it, never the library: an instructor may run it by hand on a
    student's copy (MINITORCH_ROOT=copy), where the library is the student's, and the check would then compare the
    student's code with itself."""
    if not (TESTS / "hidden").is_dir():
        pytest.skip("a student edition holds no hidden tests (they are the instructor's)")
    hidden = sorted((TESTS / "hidden").rglob("test_*.py"))
    assert hidden, "no hidden tests found under tests/hidden"
    found = {path.relative_to(REPOSITORY).as_posix(): library_imports(path) for path in hidden}
    found = {path: imports for path, imports in found.items() if imports}
    assert not found, f"hidden tests import the library under test (write their reference in NumPy): {found}"


def test_the_library_code_off_limits_covers_every_exercise_and_what_calls_it():
    forbidden = off_limits()
    held = {runs.removeprefix("exercise ") for why, runs in forbidden.values() if why.startswith("it is exercise")}
    assert held == {exercise.id for exercise in load_exercises(REPOSITORY)}, "an exercise's function was missed"
    from minitorch.paper import task, theory

    for wrapper in (minitorch.div, minitorch.gradcheck, task.make_batch, theory.softmax_family, theory.worst_case):
        assert wrapper in forbidden, f"{_name_of(wrapper)} runs an exercise's function but is not off limits"
    for helper in (task.make_inputs, theory.predict_with_attention, theory.stress_inputs):
        assert helper not in forbidden, f"{_name_of(helper)} runs no exercise, yet: {forbidden.get(helper)}"


def test_a_graded_test_that_calls_the_library_or_skips_the_fixture_is_named(tmp_path):
    path = tmp_path / "test_made_up.py"
    path.write_text(textwrap.dedent('''
        import numpy as np
        import pytest
        import minitorch
        from minitorch import Tensor
        from minitorch.exercises.grader.sandboxed import probes

        def weights(scores):
            return minitorch.softmax(Tensor(scores)).data

        @pytest.mark.exercise("2.4")
        def test_calls_the_library_through_a_helper(student):
            assert np.allclose(weights(np.zeros(3)), student.softmax(np.zeros(3)))

        @pytest.mark.parametrize("n", [pytest.param(1, marks=pytest.mark.exercise("1.2")), 2])
        def test_without_the_fixture(n):
            minitorch.mul(Tensor(1.0), Tensor(2.0)).backward()

        @pytest.mark.exercise("3.1")
        def test_runs_the_probe_here(student):
            assert probes.causal_mask(3)["shape"] == (3, 3)

        def test_ungraded():
            minitorch.softmax(Tensor(np.zeros(3)))
    '''), encoding="utf-8")
    problems = graded_test_problems([path])
    by_test = {test.split("::")[-1]: " ".join(found) for test, found in problems.items()}
    assert set(by_test) == {"test_calls_the_library_through_a_helper", "test_without_the_fixture",
                            "test_runs_the_probe_here"}, by_test
    assert "takes the student fixture but never uses it" in by_test["test_runs_the_probe_here"]
    assert "it is a probe: ask the student fixture, student.causal_mask(...)" in by_test["test_runs_the_probe_here"]
    assert "minitorch.softmax" in by_test["test_calls_the_library_through_a_helper"] and "helper weights" in \
        by_test["test_calls_the_library_through_a_helper"], by_test
    without = by_test["test_without_the_fixture"]
    assert "does not take the student fixture" in without and "minitorch.mul" in without and ".backward()" in without
