"""A student's exercise function, taken alone from its file (chapter 11, "How grading works").

The worker reads the file under the sandbox's budget (`read_module`, `find`), compiles the function alone in the
library's module (`compile_alone`) and swaps it in (`swap_in`): a helper written outside it does not exist when
graded (`helpers_outside`). Only the standard library: the worker loads it before NumPy.
"""

from __future__ import annotations

import __future__
import ast
import builtins
import copy
import inspect
import io
import tokenize

NOT_FOUND, DOES_NOT_COMPILE, TOO_LARGE, HELPER_OUTSIDE = ("function not found", "does not compile", "too large",
                                                        "helper outside the function")
KINDS = (NOT_FOUND, DOES_NOT_COMPILE, TOO_LARGE, HELPER_OUTSIDE)  # why a student's function cannot be graded


class StudentFunctionError(Exception):
    """The student's function cannot be graded; `kind` is one of the kinds above, the message says why."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def decode(data: bytes) -> str:
    """A Python file's text, in the encoding its coding cookie declares (UTF-8 without one)."""
    return data.decode(tokenize.detect_encoding(io.BytesIO(data).readline)[0])


def read_module(path, exercise) -> str:
    """The text of the file at `path` that defines the exercise's function; a larger file than MAX_MODULE_BYTES is
    refused once that many bytes (and one) are read."""
    from minitorch.exercises.registry import MAX_MODULE_BYTES  # (the worker has loaded the table by then)

    with open(path, "rb") as file:
        data = file.read(MAX_MODULE_BYTES + 1)
    if len(data) > MAX_MODULE_BYTES:
        raise StudentFunctionError(TOO_LARGE, f"{TOO_LARGE}: {exercise.module} is larger than {MAX_MODULE_BYTES:,} "
                                              f"bytes")
    try:
        return decode(data)
    except (SyntaxError, UnicodeDecodeError, LookupError) as error:
        raise StudentFunctionError(DOES_NOT_COMPILE, f"{DOES_NOT_COMPILE}: {exercise.module}: {error}") from None


def find(text: str, exercise) -> ast.FunctionDef:
    """The exercise's function in its module's text: its last top-level definition, as Python keeps it; refused as
    not found if the name is bound again below it (`_bound_again`), since Python would then call something else."""
    from minitorch.exercises.registry import MAX_FUNCTION_LINES, function_node

    try:
        tree = ast.parse(text, exercise.module)
    except (SyntaxError, ValueError, RecursionError) as error:  # the error may lie in another function
        tree = _the_function_alone(text, exercise.function, MAX_FUNCTION_LINES)
        if tree is None:
            raise does_not_compile(exercise, error) from None
    node, name = function_node(tree, exercise.function), exercise.function
    if node is None:
        other = [type(statement).__name__ for statement in tree.body if getattr(statement, "name", None) == name]
        how = {"AsyncFunctionDef": "an async def", "ClassDef": "a class"}.get(other[-1] if other else "")
        raise StudentFunctionError(NOT_FOUND, f"{NOT_FOUND}: {exercise.module} defines no function {name} at its top "
                                              f"level (exercise {exercise.id})" + (f"; it is {how}: write a plain "
                                                                                   f"def" if how else ""))
    rebound = [(line, how) for statement in tree.body if statement.lineno > node.lineno
               for line, how in _bound_again(statement, name)]
    if rebound:  # `causal_mask = None` after the def, or a def in a try: block: Python keeps that, not the function
        line, how = min(rebound)
        raise StudentFunctionError(NOT_FOUND, f"{NOT_FOUND}: {exercise.module} {how} {name} again at line {line}, "
                                              f"after its def at line {node.lineno}, so the library would not call "
                                              f"the function the grader takes; " + (
                                                  "remove that assignment" if how == "assigns" else
                                                  f"write it in the def at line {node.lineno}, and remove the other"))
    if node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES:
        raise StudentFunctionError(TOO_LARGE, f"{TOO_LARGE}: {name} has {node.end_lineno - node.lineno + 1:,} "
                                              f"lines; an exercise function may have at most {MAX_FUNCTION_LINES:,}")
    return node


def _bound_again(statement: ast.stmt, name: str) -> list[tuple[int, str]]:
    """(line, how) of each place in `statement` that binds `name` again: an assignment anywhere in it, or a def, a
    class or an import of that name in the module's own scope, inside if, try or with blocks too (a method of that
    name binds no module name). Which of them Python ran last depends on the run; the grader takes the top-level def."""
    found = [(child.lineno, "assigns") for child in ast.walk(statement)
             if isinstance(child, ast.Name) and child.id == name and isinstance(child.ctx, ast.Store)]
    nodes = [statement]
    while nodes:
        child = nodes.pop()
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found += [(child.lineno, "defines")] if child.name == name else []
            continue  # its body is a scope of its own
        if isinstance(child, (ast.Import, ast.ImportFrom)) and any(
                (alias.asname or alias.name).split(".")[0] == name for alias in child.names):
            found.append((child.lineno, "imports"))
        nodes.extend(ast.iter_child_nodes(child))
    return found


def _the_function_alone(text: str, name: str, max_lines: int) -> ast.Module | None:
    """For a file that does not parse: the function parsed alone (its line numbers kept), from its top-level def
    (and decorators) to the first later line at column 0 after which it parses; None if there is none."""
    lines = python_lines(text)
    starts = [index for index, line in enumerate(lines) if line.startswith((f"def {name}(", f"def {name} ("))]
    if not starts:
        return None
    start = starts[-1]
    while start > 0 and lines[start - 1].startswith("@"):
        start -= 1
    ends = [index for index in range(start + 1, min(len(lines), start + max_lines + 1))
            if lines[index][:1] not in ("", " ", "\t", "\n", "\r", "#", ")", "]", "}")] + [len(lines)]
    for end in ends:
        try:
            return ast.parse("\n" * start + "".join(lines[start:end]))
        except RecursionError:  # too deep for the parser: so is every longer part, which holds this one
            return None
        except (SyntaxError, ValueError):
            continue
    return None


def does_not_compile(exercise, error: Exception) -> StudentFunctionError:
    """Why Python cannot compile the exercise's file: `error`, from parsing or compiling it. A RecursionError is
    not the student's code running: an expression nested too deeply (a sum of 100,000 terms) for Python's parser."""
    why = too_deep(error) if isinstance(error, RecursionError) else f"{getattr(error, 'msg', error)}" + (
        f" (line {error.lineno})" if getattr(error, "lineno", None) else "")
    return StudentFunctionError(DOES_NOT_COMPILE, f"{DOES_NOT_COMPILE}: {exercise.module}: {why}")


def too_deep(error: RecursionError) -> str:
    return f"an expression is nested too deeply for Python to compile it ({error})"


def bound_and_read(node: ast.AST) -> tuple[set[str], set[str]]:
    """(the names a function binds anywhere inside it, the names it reads)."""
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
    """The names the function reads that neither it, the builtins nor `available` (its module's names) provide."""
    bound, read = bound_and_read(node)
    return sorted(read - bound - {node.name} - set(dir(builtins)) - set(available))


def helper_message(exercise, names) -> str:
    return (f"{HELPER_OUTSIDE}: {exercise.function} uses {', '.join(names)}, defined outside it in "
            f"{exercise.module}. The grader takes {exercise.function} alone, so write helpers (functions, imports, "
            f"constants) inside {exercise.function}")


def compile_alone(node: ast.FunctionDef, filename: str, namespace: dict):
    """The function `node` alone, without its decorators, defined with a copy of `namespace` as its globals;
    its annotations stay unevaluated, as in the library's modules."""
    bare, scratch = copy.copy(node), dict(namespace)
    bare.decorator_list = []
    try:
        code = compile(ast.Module(body=[bare], type_ignores=[]), filename, "exec",
                       flags=__future__.annotations.compiler_flag, dont_inherit=True)
    except RecursionError as error:  # nested too deeply for the compiler; none of the student's code ran
        raise SyntaxError(too_deep(error)) from None
    exec(code, scratch)  # (runs the default values on the def line: the student's code)
    return scratch[node.name]


def swap_in(library_function, new_function) -> None:
    """Make the library's function (unwrapped from any checking decorator) run `new_function`'s code: every
    reference to it, wherever kept (a registry, a re-export, a method), then runs the student's code."""
    target = inspect.unwrap(library_function)
    target.__code__ = new_function.__code__
    target.__defaults__, target.__kwdefaults__ = new_function.__defaults__, new_function.__kwdefaults__


def python_lines(text: str) -> list[str]:
    """`text` cut into lines, each with its end, where Python's tokenizer ends one (\\n, \\r\\n, \\r) and nowhere
    else: str.splitlines() also cuts at a form feed, U+2028 and others, which would shift `ast`'s line numbers."""
    lines, start = [], 0
    for index, character in enumerate(text):
        if character == "\n" or (character == "\r" and text[index + 1:index + 2] != "\n"):
            lines.append(text[start:index + 1])
            start = index + 1
    if start < len(text):
        lines.append(text[start:])
    return lines


def function_text(text: str, node: ast.FunctionDef) -> str:
    """The source of the function `node` of the module `text`, from its def line to its last line."""
    return "".join(python_lines(text)[node.lineno - 1:node.end_lineno])
