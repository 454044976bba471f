"""Copying made visible: answers the same up to names, formatting and comments (chapter 11, similarity.md).

An answer's *fingerprint* hashes its function's syntax tree without docstrings, annotations and decorators, each name
the function binds renamed in order of first appearance; library names, attributes, keywords and constants stay.
"""

from __future__ import annotations

import ast
import hashlib
import json
from pathlib import Path

from minitorch.exercises.edition import is_stub
from minitorch.exercises.grader.sandboxed.student_function import bound_and_read
from minitorch.exercises.registry import EXERCISES, MAX_FUNCTION_LINES, sort_key
from minitorch.exercises.grader.trusted.student_text import in_markdown

MAX_SOURCE_CHARACTERS = 64_000  # 400 lines of 160 characters (the longest answer has 20 lines)
SHORT = 30  # an answer of fewer syntax nodes has few ways to be written: its groups are counted, not named
NAMES_LISTED = 12  # students named in one row of the table; more are counted
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
NAME_FIELDS = {ast.Name: "id", ast.arg: "arg", ast.FunctionDef: "name", ast.AsyncFunctionDef: "name",
               ast.ClassDef: "name", ast.ExceptHandler: "name", ast.alias: "asname", ast.Global: "names",
               ast.Nonlocal: "names"}  # the fields that hold a name a function may bind


def fingerprint(source) -> dict | None:
    """{"fingerprint": hex, "nodes": n} of the first function `source` defines; None beyond the limits."""
    function = _function_in(source)
    return None if function is None else _fingerdigestof(function)


def answer_event(exercise_id: str, source) -> dict:
    """The check process's record of the function source a worker sent: its fingerprint, or that it is a stub."""
    function = _function_in(source)
    if function is not None and is_stub(function, EXERCISES[exercise_id]):
        return {"answer": exercise_id, "stub": True}
    return {"answer": exercise_id, **(fingerprint(source) or {"fingerprint": None})}


def _function_in(source) -> ast.FunctionDef | None:
    if not isinstance(source, str) or len(source) > MAX_SOURCE_CHARACTERS or \
            source.count("\n") > MAX_FUNCTION_LINES + 10:
        return None
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # (nested too deeply to parse)
        return None
    return next((node for node in tree.body if isinstance(node, FUNCTIONS)), None)


def _fingerdigestof(function: ast.FunctionDef) -> dict:
    """The tree written out breadth first (no recursion, however deep it is), then hashed."""
    for node in ast.walk(function):  # what does not change the answer goes
        for field, value in ast.iter_fields(node):
            if field in ("annotation", "returns", "type_comment", "decorator_list"):
                setattr(node, field, [] if field == "decorator_list" else None)
            elif isinstance(value, list):
                setattr(node, field, [item for item in value if not _is_bare_string(item)])
    kept = [node for node in ast.walk(function) if not isinstance(node, ast.expr_context)]
    bound = bound_and_read(function)[0] | {function.name}  # (as the grader finds a helper outside the function)
    renamed, tokens = {}, []
    for node in kept:
        tokens.append(type(node).__name__)
        for field, value in ast.iter_fields(node):
            tokens.append(field)
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, ast.AST):
                    tokens.append("*")  # (written out in its turn)
                elif field == NAME_FIELDS.get(type(node)) and item in bound:
                    tokens.append(renamed.setdefault(item, f"v{len(renamed)}"))
                else:
                    tokens.append(repr(item))
    digest = hashlib.sha256(" ".join(tokens).encode("utf-8", "surrogatepass")).hexdigest()
    return {"fingerprint": digest[:20], "nodes": len(kept)}


def _is_bare_string(statement) -> bool:
    """A docstring, or a string written as a statement (a comment in disguise)."""
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant) and \
        isinstance(statement.value.value, str)


def known_sources(grader_root: Path) -> dict[str, str]:
    """{fingerprint: where} of every function of the book (library, tests, chapters' code cells), e.g.
    "minitorch/softmax.py: stable_softmax"; an exercise's own function is marked as its reference answer."""
    root, sources = Path(grader_root), []
    for path in sorted((root / "minitorch").rglob("*.py")) + sorted((root / "tests").rglob("*.py")):
        sources.append((path.relative_to(root).as_posix(), path.read_text(encoding="utf-8", errors="replace")))
    for path in sorted((root / "chapters").glob("*.ipynb")):
        for number, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
            lines = "".join(cell["source"]).splitlines(keepends=True)
            if cell["cell_type"] == "code":  # (IPython's own % and ! lines left out)
                sources.append((f"{path.relative_to(root).as_posix()}, cell {number}",
                                "".join(line for line in lines if not line.lstrip().startswith(("%", "!")))))
    references = {(exercise.module, exercise.function) for exercise in EXERCISES.values()}
    known = {}
    for where, text in sources:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for node in [node for node in ast.walk(tree) if isinstance(node, FUNCTIONS)]:
            reference = (where, node.name) in references and node in tree.body
            found = _fingerdigestof(node)["fingerprint"]
            if reference or found not in known:
                known[found] = f"{where}: {node.name}" + (" (the reference answer)" if reference else "")
    return known


def shared_answers(answers: dict[str, dict], exercise_ids, known: dict[str, str]) -> list[dict]:
    """Per exercise, each answer two or more students share or that is the book's, as {"exercise", "students",
    "nodes", "known"}; `answers` is {student: {exercise ID: fingerprint}}."""
    rows = []
    for exercise_id in sorted(exercise_ids, key=sort_key):
        groups, sizes = {}, {}
        for student, found in sorted(answers.items()):
            digest = (found.get(exercise_id) or {}).get("fingerprint")
            if digest:
                groups.setdefault(digest, []).append(student)
                sizes[digest] = int(found[exercise_id].get("nodes", 0))
        rows += [{"exercise": exercise_id, "students": students, "nodes": sizes[digest], "known": known.get(digest, "")}
                 for digest, students in groups.items() if len(students) > 1 or digest in known]
    return sorted(rows, key=lambda row: (sort_key(row["exercise"]), -len(row["students"]), row["students"]))


def similarity_markdown(answers: dict[str, dict], exercise_ids, known: dict[str, str], missing=()) -> str:
    """similarity.md: the shared answers as a table an instructor reads in a minute; the `missing` students (graded,
    their private/STUDENT/answers.json gone) are named as not compared."""
    rows = shared_answers(answers, exercise_ids, known)
    unreadable = sum((found.get(exercise_id) or {}).get("fingerprint", "") is None
                     for found in answers.values() for exercise_id in exercise_ids)
    lines = ["# Answers students share, or that are the book's own", "",
             f"Per exercise, the students whose functions are the same up to comments, docstrings, formatting and the "
             f"names they bind, and the answers the same as a function of the book. {len(answers)} students compared. "
             f"The same answer is not proof of copying: an exercise has few ways to be written, and a group of "
             f"answers shorter than {SHORT} syntax nodes is counted, not named. Read the copies before you decide.",
             ""]
    if missing:
        lines += [f"**{len(missing)} graded student(s) not compared: their private/STUDENT/answers.json is gone or "
                  f"unreadable ({', '.join(map(in_markdown, missing[:NAMES_LISTED]))}"
                  f"{', ...' if len(missing) > NAMES_LISTED else ''}). Run grade again: it grades them again.**", ""]
    if not rows:
        lines.append(f"No two {'of the students compared' if missing else 'students'} share an answer, and no answer "
                     f"is the same as a function of the book.")
    else:
        lines += ["| exercise | students | the same as the book's | size (nodes) |", "| --- | --- | --- | ---: |"]
    for row in rows:
        students = row["students"]
        who = ", ".join(map(in_markdown, students[:NAMES_LISTED])) + (
            f" and {len(students) - NAMES_LISTED} more" if len(students) > NAMES_LISTED else "")
        if row["nodes"] < SHORT and len(students) > 1:
            who = f"{len(students)} students (a short answer)"
        lines.append(f"| {row['exercise']} {in_markdown(EXERCISES[row['exercise']].title)} | {who} | "
                     f"{in_markdown(row['known'])} | {row['nodes']} |")
    if unreadable:
        lines += ["", f"{unreadable} answer(s) could not be compared (longer than {MAX_FUNCTION_LINES} lines, or "
                      f"nested too deeply to parse)."]
    return "\n".join(lines) + "\n"
