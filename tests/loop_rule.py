"""Exercise 4.1's rule, "no Python loop", read from the syntax tree of the student's make_targets (chapter 04).

The graded tests of 4.1 (tests/paper/test_task.py, tests/hidden/) ask for the function's source as the grader's
worker read it from the file, before any of the student's code ran (`student.function_source("4.1")`), and check
it here, in the test's own process: nothing the student's code does at run time can change what is read.

An allow-list, not a list of looping calls: a loop-free answer calls NumPy's functions (all but those that call
back into Python per element), methods of its arrays and of NumPy's ufuncs (np.add.reduce), a few builtins, and
inner functions of its own that do the same and never call back into each other. Any other call (exec, eval,
getattr with a name built at run time, functools.reduce under any name, itertools.starmap, a function of the
library, a name bound to something the syntax cannot show) could hide a loop, so it counts as one.
"""

from __future__ import annotations

import ast
import builtins
import textwrap

import numpy

from minitorch.exercises.grader.sandboxed.student_function import bound_and_read

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
