"""Copying made visible: which answers are the same up to names, formatting and comments (chapter 11).

While a class is graded, the check process receives each exercise's function source from the student's worker
before any of the student's code runs (`student_code.WorkerPool`), and records its *fingerprint*: the
function parsed with `ast`, docstrings, annotations and bare strings dropped, every name the function binds
(its own name, its parameters, its local variables, nested functions, loop and comprehension variables)
renamed in order of first appearance, and the rest (NumPy's functions, attributes, keywords, constants) kept;
then hashed. Comments and formatting are gone with the parsing. Two answers with one fingerprint differ at most
in names, formatting, comments and docstrings.

`grade` then writes similarity.md: per exercise, the students who share an answer, and the answers equal to a
function of the book itself (the reference answer, or any function of its library, tests or chapters), which
`known_sources` fingerprints the same way. Nothing leaves the machine. A function of more than
`registry.MAX_FUNCTION_LINES` lines or MAX_SOURCE_CHARACTERS characters, or one nested too deeply to parse, gets no
fingerprint (the table counts it).
"""

from __future__ import annotations

import ast
import hashlib
import json
from pathlib import Path

from minitorch.exercises.edition import is_stub
from minitorch.exercises.registry import EXERCISES, MAX_FUNCTION_LINES, sort_key
from minitorch.exercises.grader.trusted.student_text import in_markdown

MAX_SOURCE_CHARACTERS = 64_000  # the longest answer has 20 lines; 400 lines of 160 characters
SHORT = 30  # an answer of fewer syntax nodes has few ways to be written: groups of it are counted, not listed
NAMES_LISTED = 12  # students named in one row of the table; more are counted
_BINDING = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def fingerprint(source: str) -> dict | None:
    """{"fingerprint": hex, "nodes": n} of the first function defined in `source`, or None if it cannot be parsed
    within the limits (too long, too deeply nested, not a function)."""
    try:
        node = _function_in(source)
        return None if node is None else _fingerprint_of(node)
    except (RecursionError, MemoryError):
        return None


def answer_event(exercise_id: str, source) -> dict:
    """The line the check process adds to its record for the function source a worker sent: its fingerprint, or
    that it is the edition's stub (not an answer), or that it has none."""
    try:
        node = _function_in(source)
        if node is not None and exercise_id in EXERCISES and is_stub(node, EXERCISES[exercise_id]):
            return {"answer": exercise_id, "stub": True}
        found = None if node is None else _fingerprint_of(node)
    except (RecursionError, MemoryError):
        found = None
    return {"answer": exercise_id, **(found or {"fingerprint": None})}


def _function_in(source) -> ast.FunctionDef | None:
    """The first function `source` defines at its top level, parsed within the limits; None if there is none or it
    is too long or cannot be parsed. RecursionError or MemoryError for one nested too deeply."""
    if not isinstance(source, str) or len(source) > MAX_SOURCE_CHARACTERS or \
            source.count("\n") > MAX_FUNCTION_LINES + 10:
        return None
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    return next((statement for statement in tree.body if isinstance(statement, _BINDING[:2])), None)


def _fingerprint_of(function: ast.FunctionDef) -> dict:
    """The function's fingerprint: its syntax tree written out node by node (with a stack: no recursion, however
    deep), without docstrings, bare strings, annotations and decorators, each name it binds renamed v0, v1, ... in
    order of first appearance; then hashed."""
    tokens, bound, nodes, waiting = [], set(), 0, [function]
    while waiting:
        item = waiting.pop()
        if not isinstance(item, ast.AST):
            tokens.append(item)  # a bracket, a constant, or ("name", identifier)
            continue
        nodes += 1
        if isinstance(item, ast.AnnAssign):  # x: int = 1 is x = 1
            item = ast.Assign(targets=[item.target], value=item.value) if item.value is not None else ast.Pass()
        tokens.append(type(item).__name__)
        bound.update(_bound_names(item))
        names = _NAME_FIELDS.get(type(item), ())
        parts = []
        for field in item._fields:
            value = getattr(item, field, None)
            if field in _LEFT_OUT:
                continue
            if isinstance(value, list):
                kept = [element for element in value if not _is_bare_string(element)]
                parts += ["[", *[("name", e) if field in names else e if isinstance(e, ast.AST) else repr(e)
                                 for e in kept], "]"]
            elif isinstance(value, ast.AST):
                parts.append(value)
            else:
                parts.append(("name", value) if field in names and value is not None else repr(value))
        waiting += ["(", *parts, ")"][::-1]
    renamed: dict[str, str] = {}
    text = []
    for token in tokens:
        if isinstance(token, tuple):
            token = renamed.setdefault(token[1], f"v{len(renamed)}") if token[1] in bound else token[1]
        text.append(token)
    return {"fingerprint": hashlib.sha256(" ".join(text).encode("utf-8", "surrogatepass")).hexdigest()[:20],
            "nodes": nodes}


# The fields that hold a name a function may bind (renamed if it does); every other string is kept as it is.
_NAME_FIELDS = {ast.Name: ("id",), ast.arg: ("arg",), ast.FunctionDef: ("name",), ast.AsyncFunctionDef: ("name",),
                ast.ClassDef: ("name",), ast.ExceptHandler: ("name",), ast.alias: ("asname",),
                ast.Global: ("names",), ast.Nonlocal: ("names",)}
_LEFT_OUT = {"annotation", "returns", "decorator_list", "type_comment", "ctx", "type_params", "kind"}


def _is_bare_string(statement) -> bool:
    """A docstring, or a string written as a statement (a comment in disguise)."""
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant) and \
        isinstance(statement.value.value, str)


def _bound_names(node: ast.AST) -> list[str]:
    """The names `node` binds: a definition's name, an argument, an assigned or deleted name, an exception's name,
    an import's alias."""
    if isinstance(node, _BINDING):
        return [node.name]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
        return [node.id]
    if isinstance(node, ast.ExceptHandler) and node.name:
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [alias.asname for alias in node.names if alias.asname]
    return []


# ----------------------------------------------------------------------
# the book's own code


def known_sources(grader_root: Path) -> dict[str, str]:
    """{fingerprint: where} for every function of the book at `grader_root` (library, tests, chapters' code cells),
    as "minitorch/softmax.py: stable_softmax"; an exercise's own function is marked as its reference answer."""
    root, known = Path(grader_root), {}
    references = {(exercise.module, exercise.function) for exercise in EXERCISES.values()}
    files = sorted((root / "minitorch").rglob("*.py")) + sorted((root / "tests").rglob("*.py"))
    sources = [(path.relative_to(root).as_posix(), _read(path)) for path in files]
    for path in sorted((root / "chapters").glob("*.ipynb")):
        sources += [(f"{path.relative_to(root).as_posix()}, cell {number}", cell)
                    for number, cell in _code_cells(path)]
    for where, text in sources:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            label = f"{where}: {node.name}" + (" (the reference answer)" if (where, node.name) in references and
                                              node in tree.body else "")
            found = _fingerprint_of(node)
            if found["fingerprint"] not in known or "reference answer" in label:
                known[found["fingerprint"]] = label
    return known


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def _code_cells(path: Path) -> list[tuple[int, str]]:
    """(number, source) of a notebook's code cells, IPython's % and ! lines left out."""
    try:
        cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
    except (OSError, ValueError, UnicodeDecodeError, AttributeError):
        return []
    found = []
    for number, cell in enumerate(cells):
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            lines = "".join(cell.get("source", [])).splitlines()
            found.append((number, "\n".join(line for line in lines if not line.lstrip().startswith(("%", "!")))))
    return found


# ----------------------------------------------------------------------
# the table


def shared_answers(answers: dict[str, dict], exercise_ids, known: dict[str, str]) -> list[dict]:
    """The rows of the table: per exercise, each answer that two or more students share or that equals a function
    of the book, as {"exercise", "students", "nodes", "known"}; `answers` is {student: {exercise ID: event}}."""
    rows = []
    for exercise_id in sorted(exercise_ids, key=sort_key):
        groups: dict[str, list[str]] = {}
        sizes: dict[str, int] = {}
        for student, found in sorted(answers.items()):
            event = found.get(exercise_id) or {}
            if event.get("fingerprint"):
                groups.setdefault(event["fingerprint"], []).append(student)
                sizes[event["fingerprint"]] = int(event.get("nodes", 0))
        for print_, students in groups.items():
            if len(students) > 1 or print_ in known:
                rows.append({"exercise": exercise_id, "students": students, "nodes": sizes[print_],
                             "known": known.get(print_, "")})
    rows.sort(key=lambda row: (sort_key(row["exercise"]), -len(row["students"]), row["students"]))
    return rows


def similarity_markdown(answers: dict[str, dict], exercise_ids, known: dict[str, str]) -> str:
    """similarity.md: the shared answers as a table an instructor reads in a minute."""
    rows = shared_answers(answers, exercise_ids, known)
    unreadable = sum(1 for found in answers.values() for exercise_id in exercise_ids
                     if (found.get(exercise_id) or {}).get("fingerprint", "") is None)
    lines = ["# Answers students share, or that are the book's own", "",
             f"Per exercise, the students whose functions are the same once comments, docstrings, formatting and "
             f"every name the function binds (its parameters, its variables) are set aside, and the answers that "
             f"are the same as a function of the book (its reference answer, or another function of its library, "
             f"tests or chapters). {len(answers)} students compared. The same answer is not proof of copying: "
             f"an exercise has few ways to be written, and a group of answers shorter than {SHORT} syntax nodes "
             f"is counted, not named. Read the copies side by side before you decide.", ""]
    if not rows:
        lines.append("No two students share an answer, and no answer is the same as a function of the book.")
    else:
        lines += ["| exercise | students | the same as the book's | size (nodes) |", "| --- | --- | --- | ---: |"]
        for row in rows:
            students = row["students"]
            if row["nodes"] < SHORT and len(students) > 1:
                who = f"{len(students)} students (a short answer)"
            else:
                who = ", ".join(in_markdown(student) for student in students[:NAMES_LISTED]) + (
                    f" and {len(students) - NAMES_LISTED} more" if len(students) > NAMES_LISTED else "")
            title = EXERCISES[row["exercise"]].title if row["exercise"] in EXERCISES else ""
            lines.append(f"| {row['exercise']} {in_markdown(title)} | {who} | {in_markdown(row['known'])} | "
                         f"{row['nodes']} |")
    if unreadable:
        lines += ["", f"{unreadable} answer(s) could not be compared (longer than {MAX_FUNCTION_LINES} lines, or "
                      f"nested too deeply to parse)."]
    return "\n".join(lines) + "\n"
