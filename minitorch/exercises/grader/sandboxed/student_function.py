"""A student's exercise function, read from its source (chapter 11, "How grading works").

When a class is graded, the sandboxed worker reads the student's file under its own budget (`load`), takes the
exercise's function alone, compiles it in the grader's module and swaps it in (`swap_in`): every reference to
the function, wherever the library keeps one, then runs the student's code. The function is all that is
taken, so a helper written outside it does not exist when graded: `helpers_outside` finds such names, and the
student's own ``pytest -m exX_Y`` says so in the same words (tests/conftest.py).

`loops_in` answers "could this function loop in Python?" from the syntax tree, for checks on how an answer is
written (exercise 4.1), in the grader's own process, from the source the worker read (`function_text`, lines cut
where Python cuts them): nothing the student's code does at run time can change it. It accepts what a list allows
(NumPy without callbacks, array and ufunc methods, a few builtins, inner functions that do not recurse) and
reports everything else, since a loop can hide in any other call (exec, getattr, functools.reduce by any name).

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
    lines = python_lines(text)
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
# the function's text, as Python reads it


def python_lines(text: str) -> list[str]:
    """`text` split into lines where Python's tokenizer ends one (\\n, \\r\\n, \\r), each with its end: the lines
    that `ast` numbers. str.splitlines() also splits at a form feed, U+2028, \\x1c..\\x1e and \\x85, which Python
    reads as characters of a line (a form feed or U+2028 in a comment would shift every later line)."""
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


# ----------------------------------------------------------------------
# how an answer is written, from its syntax tree (exercise 4.1: no Python loop)
#
# An allow-list, not a list of looping calls: a loop-free answer calls NumPy's functions (all but those that call
# back into Python per element), methods of its arrays and of NumPy's ufuncs (np.add.reduce), a few builtins, and
# inner functions of its own that do the same and never call back into each other. Any other call (exec, eval,
# getattr with a name built at run time, functools.reduce under any name, itertools.starmap, a function of the
# library, a name bound to something the syntax cannot show) could hide a loop, so it counts as one.

NUMPY_CALLBACKS = frozenset({"vectorize", "frompyfunc", "apply_along_axis", "apply_over_axes", "fromfunction",
                             "piecewise", "fromiter", "nditer", "ndindex", "ndenumerate"})  # call Python per element
UFUNC_METHODS = frozenset({"reduce", "accumulate", "reduceat", "outer", "at"})
ARRAY_METHODS = frozenset({
    "all", "any", "argmax", "argmin", "argpartition", "argsort", "astype", "choose", "clip", "compress", "conj",
    "conjugate", "copy", "cumprod", "cumsum", "diagonal", "dot", "fill", "flatten", "item", "max", "mean", "min",
    "nonzero", "partition", "prod", "put", "ravel", "repeat", "reshape", "round", "searchsorted", "sort",
    "squeeze", "std", "sum", "swapaxes", "take", "tolist", "trace", "transpose", "var", "view"})
SAFE_BUILTINS = frozenset({"abs", "all", "any", "bool", "divmod", "float", "int", "isinstance", "len", "list", "max",
                           "min", "pow", "print", "range", "round", "slice", "sum", "tuple", "zip", "str", "repr",
                           "dict", "set"}) | frozenset(
    name for name in dir(builtins) if isinstance(getattr(builtins, name), type)
    and issubclass(getattr(builtins, name), BaseException))  # raising ValueError(...) is no loop
MODULE_NAMES = {"np": "numpy", "numpy": "numpy"}  # the names an exercise's module binds to a module
_LOOPS = {ast.For: "for", ast.AsyncFor: "for", ast.While: "while", ast.ListComp: "a list comprehension",
          ast.SetComp: "a set comprehension", ast.DictComp: "a dict comprehension",
          ast.GeneratorExp: "a generator expression", ast.Lambda: "a lambda", ast.ClassDef: "a class",
          ast.Yield: "yield", ast.YieldFrom: "yield"}


def loops_in(source: str) -> list[str]:
    """Each Python loop, or code that could hide one, in the function's source, as 'for (line 3 of f)' (its lines
    counted from its def): for, while,
    comprehensions, recursion, and every call the allow-list above does not cover (map, np.vectorize, exec,
    getattr, ...). [] for whole-array code. Read from the syntax tree alone: nothing is run."""
    try:
        node = ast.parse(textwrap.dedent(source)).body[0]
    except (SyntaxError, ValueError, IndexError, RecursionError, MemoryError):
        return ["source that does not parse as one function"]
    if not isinstance(node, ast.FunctionDef):
        return ["source that is not one function"]
    try:
        return _Reader(node).found
    except RecursionError:
        return ["code nested too deeply to read"]


class _Reader:
    """Reads one function's tree against the allow-list; `found` lists what it could not accept, in line order."""

    def __init__(self, function: ast.FunctionDef):
        self.function = function
        self.inner = {child.name: child for part in function.body for child in ast.walk(part)
                      if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.bound, _ = bound_and_read(function)
        self.aliases = self._aliases()
        self.found: list[tuple[int, str]] = []
        nodes = [node for part in (function.args, *function.body) for node in ast.walk(part)]  # (its decorators
        called = {id(child.func) for child in nodes if isinstance(child, ast.Call)}  # are no part of the answer)
        for child in nodes:
            if type(child) in _LOOPS:
                self._add(child, _LOOPS[type(child)])
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and child.decorator_list:
                self._add(child, f"a decorator on {child.name}")
            elif isinstance(child, ast.AsyncFunctionDef):
                self._add(child, f"an async function {child.name}")
            elif isinstance(child, ast.Call):
                self._call(child)
            elif isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load) and id(child) not in called and \
                    child.id in (*self.inner, function.name) and not self._shadowed(child.id):
                self._add(child, f"{child.id} used as a value (whatever receives it may call it once per element)")
        for name in self._recursive():
            self._add(self.inner.get(name, function), f"a recursive call ({name} calls itself again)")
        self.found = [f"{what} (line {line} of {function.name})" for line, what in sorted(set(self.found))]

    def _add(self, node: ast.AST, what: str) -> None:
        self.found.append((getattr(node, "lineno", 0), what))

    def _shadowed(self, name: str) -> bool:
        """`name` is bound in the function by something other than an inner def (a parameter, an assignment)."""
        return name in self.bound and name not in self.inner and name != self.function.name

    def _aliases(self) -> dict[str, tuple[str, ...]]:
        """Local names bound, once, to a module or to a dotted path that can be read: ``import numpy as xp``,
        ``from functools import reduce as r``, ``v = np.vectorize``."""
        bindings: dict[str, list] = {}
        for child in ast.walk(self.function):
            if isinstance(child, ast.Import):
                for alias in child.names:
                    path = tuple(alias.name.split("."))
                    bindings.setdefault(alias.asname or path[0], []).append(path if alias.asname else path[:1])
            elif isinstance(child, ast.ImportFrom) and child.module and not child.level:
                for alias in child.names:
                    bindings.setdefault(alias.asname or alias.name, []).append(
                        (*child.module.split("."), alias.name))
            elif isinstance(child, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
                targets = child.targets if isinstance(child, ast.Assign) else [child.target]
                for target in targets:
                    for name in ast.walk(target):
                        if isinstance(name, ast.Name):
                            path = None if isinstance(child, ast.AugAssign) or len(targets) > 1 or \
                                not isinstance(target, ast.Name) else self._dotted(child.value, {})
                            bindings.setdefault(name.id, []).append(path)
            elif isinstance(child, ast.arg):
                bindings.setdefault(child.arg, []).append(None)
        return {name: paths[0] for name, paths in bindings.items() if len(paths) == 1 and paths[0] is not None}

    def _dotted(self, node: ast.AST, aliases=None) -> tuple[str, ...] | None:
        """The dotted path that `node` (a name or an attribute of one) refers to: ('numpy', 'add', 'reduce') for
        np.add.reduce; None for data (a parameter, a call's result) or a name bound more than once."""
        aliases = self.aliases if aliases is None else aliases
        if isinstance(node, ast.Attribute):
            base = self._dotted(node.value, aliases)
            return None if base is None else (*base, node.attr)
        if not isinstance(node, ast.Name):
            return None
        if node.id in aliases:
            return aliases[node.id]
        if node.id in self.bound or node.id in self.inner:
            return None
        if node.id in MODULE_NAMES:
            return (MODULE_NAMES[node.id],)
        if hasattr(builtins, node.id):
            return ("builtins", node.id)
        return None

    def _call(self, call: ast.Call) -> None:
        callee = call.func
        if isinstance(callee, ast.Name) and callee.id in (*self.inner, self.function.name) and \
                not self._shadowed(callee.id):
            return  # an inner function (read with the rest), or recursion (found by _recursive)
        path = self._dotted(callee)
        if path is not None:
            problem = _path_problem(path)
            if problem:
                self._add(call, f"{problem}")
            return
        if isinstance(callee, ast.Attribute) and callee.attr in ARRAY_METHODS and \
                not self._refers_to_code(callee.value):
            return  # a method of an array (x.sum(), (a * b).cumsum(axis=1))
        self._add(call, f"a call to {_shown(callee)}, which the checker cannot follow")

    def _refers_to_code(self, node: ast.AST) -> bool:
        """`node` names a module, a function or a class rather than data (an array, a call's result)."""
        if isinstance(node, ast.Name) and node.id in (*self.inner, self.function.name):
            return not self._shadowed(node.id)
        return self._dotted(node) is not None

    def _recursive(self) -> list[str]:
        """The functions (the answer and its inner ones) that can reach themselves through calls by name."""
        functions = {self.function.name: self.function, **self.inner}
        calls = {name: {called for called in _calls_by_name(node) if called in functions
                        and not self._shadowed(called)} for name, node in functions.items()}
        found = []
        for start in functions:
            seen, frontier = set(), set(calls[start])
            while frontier and start not in seen:
                name = frontier.pop()
                if name not in seen:
                    seen.add(name)
                    frontier |= calls[name]
            if start in seen:
                found.append(start)
        return found


def _calls_by_name(function: ast.AST) -> set[str]:
    """The names that `function`'s own code calls (the code of the functions defined inside it is theirs)."""
    found, stack = set(), [*function.args.defaults, *function.body]
    while stack:
        child = stack.pop()
        if isinstance(child, ast.Call) and isinstance(child.func, ast.Name):
            found.add(child.func.id)
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            stack.extend(child.decorator_list + child.args.defaults)
        else:
            stack.extend(ast.iter_child_nodes(child))
    return found


def _path_problem(path: tuple[str, ...]) -> str | None:
    """Why a call of the dotted `path` could loop in Python; None if it cannot (NumPy without callbacks, a ufunc
    method, math, a builtin of the allow-list)."""
    shown = ".".join(("np", *path[1:]) if path[0] == "numpy" else path[1:] if path[0] == "builtins" else path)
    if path[0] == "builtins" and len(path) == 2:
        return None if path[1] in SAFE_BUILTINS else f"a call to {shown}, which the checker cannot follow"
    if path[0] == "math":
        return None
    if path[0] != "numpy":
        return f"a call to {shown}, which the checker cannot follow"
    if any(part in NUMPY_CALLBACKS for part in path[1:]):
        return f"a call to {shown}, which calls Python once per element"
    import numpy  # (only here: the worker loads this module before NumPy)

    target = numpy
    for position, part in enumerate(path[1:], start=1):
        if isinstance(target, numpy.ufunc) and part in UFUNC_METHODS and position == len(path) - 1:
            return None  # np.add.reduce, np.maximum.accumulate, ...
        if part.startswith("_") or not hasattr(target, part):
            return f"a call to {shown}, which is not a NumPy function"
        target = getattr(target, part)
    return None if callable(target) else f"a call to {shown}, which is not a NumPy function"


def _shown(node: ast.AST) -> str:
    try:
        return ast.unparse(node)[:60]
    except (ValueError, RecursionError):
        return type(node).__name__
