"""A student's exercise function, read from its source (chapter 11, "How grading works").

When a class is graded, the sandboxed worker reads the student's file under its own budget (`load`), takes the
exercise's function alone, compiles it in the grader's module and swaps it in (`swap_in`): every reference to
the function, wherever the library keeps one, then runs the student's code. The function is all that is
taken, so a helper written outside it does not exist when graded: `helpers_outside` finds such names, and the
student's own ``pytest -m exX_Y`` says so in the same words (tests/conftest.py).

`loops_in` answers "does this function loop in Python?" from the syntax tree, for checks on how an answer is
written (exercise 4.1), in the grader's own process, from the source the worker read: nothing the student's
code does at run time can change it.

This module uses only the standard library: the worker loads it by path.
"""

from __future__ import annotations

import __future__
import ast
import builtins
import inspect
import io
import textwrap
import tokenize

NOT_FOUND, DOES_NOT_COMPILE, TOO_LARGE, HELPER_OUTSIDE = ("function not found", "does not compile", "too large",
                                                        "helper outside the function")


class StudentFunctionError(Exception):
    """The student's function cannot be graded; `kind` is one of the kinds above, the message says why."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def decode(data: bytes) -> str:
    """A Python file's text, in the encoding its coding cookie declares (UTF-8 without one)."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding)


def module_text(data: bytes, exercise, max_bytes: int) -> str:
    """The text of the student's file that defines the exercise's function (`data`, its first bytes at least up to
    one past `max_bytes`), or StudentFunctionError: too large, or not text in its declared encoding."""
    if len(data) > max_bytes:
        raise StudentFunctionError(TOO_LARGE, f"{TOO_LARGE}: {exercise.module} is larger than {max_bytes:,} bytes")
    try:
        return decode(data)
    except (SyntaxError, UnicodeDecodeError, LookupError) as error:
        raise StudentFunctionError(DOES_NOT_COMPILE, f"{DOES_NOT_COMPILE}: {exercise.module}: {error}") from None


def find(text: str, exercise, max_lines: int) -> ast.FunctionDef:
    """The exercise's function in one module's source (its last top-level definition, as Python keeps it)."""
    from minitorch.exercises.registry import function_node  # noqa (the worker loads registry by path first)

    try:
        tree = ast.parse(text, exercise.module)
    except (SyntaxError, ValueError) as error:
        tree = _the_function_alone(text, exercise.function, max_lines)  # the error may lie in another function
        if tree is None:
            line = f" (line {error.lineno})" if getattr(error, "lineno", None) else ""
            raise StudentFunctionError(DOES_NOT_COMPILE, f"{DOES_NOT_COMPILE}: {exercise.module}: "
                                                         f"{getattr(error, 'msg', error)}{line}") from None
    node = function_node(tree, exercise.function)
    if node is None:
        other = [type(statement).__name__ for statement in tree.body if getattr(statement, "name", None) ==
                 exercise.function]
        how = {"AsyncFunctionDef": "an async def", "ClassDef": "a class"}.get(other[-1] if other else "", "")
        raise StudentFunctionError(NOT_FOUND, f"{NOT_FOUND}: {exercise.module} defines no function "
                                              f"{exercise.function} at its top level (exercise {exercise.id})"
                                              + (f"; it is {how}: write a plain def" if how else ""))
    rebound = [statement.lineno for statement in tree.body if statement.lineno > node.lineno and any(
        isinstance(target, ast.Name) and target.id == exercise.function for target in ast.walk(statement)
        if isinstance(target, ast.Name) and isinstance(target.ctx, ast.Store))]
    if rebound:  # `mul_backward = None` after the def: the library would call that, not the function
        raise StudentFunctionError(NOT_FOUND, f"{NOT_FOUND}: {exercise.module} assigns {exercise.function} again at "
                                              f"line {rebound[0]}, after its def, so the library would not call "
                                              f"the function; remove that assignment")
    lines = node.end_lineno - node.lineno + 1
    if lines > max_lines:
        raise StudentFunctionError(TOO_LARGE, f"{TOO_LARGE}: {exercise.function} has {lines:,} lines; an exercise "
                                              f"function may have at most {max_lines:,}")
    return node


def _the_function_alone(text: str, name: str, max_lines: int) -> ast.Module | None:
    """For a file that does not parse as a whole: the function `name` parsed on its own (its line numbers kept),
    if a run of lines from its top-level ``def`` to just before a later line at column 0 parses; else None."""
    lines = text.splitlines(keepends=True)
    starts = [index for index, line in enumerate(lines) if line.startswith((f"def {name}(", f"def {name} ("))]
    if not starts:
        return None
    start = starts[-1]
    while start > 0 and lines[start - 1].startswith("@"):  # its decorators
        start -= 1
    ends = [index for index in range(start + 1, min(len(lines), start + max_lines + 1))
            if lines[index][:1] not in ("", " ", "\t", "\n", "\r", "#", ")", "]", "}")] + [len(lines)]
    for end in ends:
        try:
            return ast.parse("\n" * start + "".join(lines[start:end]))
        except (SyntaxError, ValueError):
            continue
    return None


def bound_and_read(node: ast.AST) -> tuple[set[str], set[str]]:
    """(names the function binds anywhere inside it, names it reads)."""
    bound, read = set(), set()
    for child in ast.walk(node):
        if isinstance(child, ast.Name):
            (read if isinstance(child.ctx, ast.Load) else bound).add(child.id)
        elif isinstance(child, ast.arg):
            bound.add(child.arg)
        elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and child is not node:
            bound.add(child.name)
        elif isinstance(child, (ast.Import, ast.ImportFrom)):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in child.names)
        elif isinstance(child, ast.ExceptHandler) and child.name:
            bound.add(child.name)
        elif isinstance(child, ast.Global):
            read.update(child.names)
    return bound, read


def helpers_outside(node: ast.FunctionDef, available) -> list[str]:
    """The names the function reads that neither it, the builtins nor `available` (its module's names as the
    library defines them) provide: helpers written outside the function."""
    bound, read = bound_and_read(node)
    read -= {node.name}  # a recursive call reaches the function itself
    return sorted(read - bound - set(dir(builtins)) - set(available))


def helper_message(exercise, names) -> str:
    return (f"{HELPER_OUTSIDE}: {exercise.function} uses {', '.join(names)}, defined outside it in "
            f"{exercise.module}. The grader takes {exercise.function} alone, so write helpers (functions, imports, "
            f"constants) inside {exercise.function}")


def source_of(function) -> str:
    """The source of a function of this process's library (its decorators' wrapper unwrapped), dedented."""
    return textwrap.dedent(inspect.getsource(inspect.unwrap(function)))


def compile_alone(node: ast.FunctionDef, filename: str, namespace: dict):
    """The function defined by `node` alone (no decorators), compiled with `namespace` as its globals at
    definition time; its line numbers are the file's."""
    bare = ast.FunctionDef(name=node.name, args=node.args, body=node.body, decorator_list=[], returns=node.returns,
                           type_comment=None, lineno=node.lineno, col_offset=node.col_offset,
                           end_lineno=node.end_lineno, end_col_offset=node.end_col_offset,
                           **({"type_params": []} if "type_params" in ast.FunctionDef._fields else {}))
    scratch = dict(namespace)
    # annotations stay unevaluated, as in the library's modules (`from __future__ import annotations`)
    code = compile(ast.Module(body=[bare], type_ignores=[]), filename, "exec",
                   flags=__future__.annotations.compiler_flag, dont_inherit=True)
    exec(code, scratch)
    return scratch[node.name]


def swap_in(library_function, new_function) -> None:
    """Make `library_function` (unwrapped from any checking decorator) run `new_function`'s code: every
    reference to it, wherever kept (a registry, a re-export, a method), then runs the new code."""
    target = inspect.unwrap(library_function)
    target.__code__ = new_function.__code__
    target.__defaults__, target.__kwdefaults__ = new_function.__defaults__, new_function.__kwdefaults__


# ----------------------------------------------------------------------
# how an answer is written, from its syntax tree

LOOPING_CALLS = ("map", "vectorize", "apply_along_axis", "apply_over_axes", "frompyfunc", "fromiter", "reduce")


def loops_in(source: str) -> list[str]:
    """Each Python loop in the function's source, as 'for (line 3)': for, while, comprehensions, recursion and
    calls that loop in Python for you (map, np.vectorize, np.apply_along_axis, ...). [] for whole-array code."""
    try:
        node = ast.parse(textwrap.dedent(source)).body[0]
    except (SyntaxError, ValueError, IndexError, RecursionError, MemoryError):
        return ["source that does not parse as one function"]
    found = []
    for child in ast.walk(node):
        kind = {ast.For: "for", ast.AsyncFor: "for", ast.While: "while", ast.ListComp: "a list comprehension",
                ast.SetComp: "a set comprehension", ast.DictComp: "a dict comprehension",
                ast.GeneratorExp: "a generator expression"}.get(type(child))
        if isinstance(child, ast.Call):
            name = child.func.attr if isinstance(child.func, ast.Attribute) else getattr(child.func, "id", "")
            if name in LOOPING_CALLS:
                kind = f"a call to {name}"
            elif name == getattr(node, "name", None):
                kind = "a recursive call"
        if kind:
            found.append(f"{kind} (line {child.lineno})")
    return found
