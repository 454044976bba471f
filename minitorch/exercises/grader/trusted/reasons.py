"""What a student reads of a graded test that failed (chapter 11, "What a student sees").

The graded tests run on inputs drawn from the instructor's secret seed. What the student's code raised or
printed, and what a check printed of the arrays it compared, may quote those inputs (a function can raise an
error holding its own arguments). So a student never reads them: `for_student` gives each failed test

- the kind of failure, read from the outcome alone: wrong values, wrong shape, wrong gradients, raised
  TypeError (its class, one of Python's), did not raise, timed out, crashed (by which signal, or which exit
  status), refused, not attempted; and
- the test's own reason: the first paragraph of its docstring, else its name in words
  (``test_softmax_attention_rows_sum_to_one`` -> "softmax attention rows sum to one").

The grader's own messages about the copy's file (does not compile, function not found, too large, helper
outside the function), which are about the student's source and were made before any of it ran, stay as they
are. Everything in full (values, tracebacks, what the code printed) is in the instructor's check log; the
student sees it by running the same test on the public inputs in their copy (``python -m pytest -m exX_Y``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from minitorch.exercises.grader.channel import REBUILT
from minitorch.exercises.grader.trusted.worker_client import DOWNS_PER_EXERCISE
from minitorch.exercises.grader.trusted.student_text import plain
from minitorch.exercises.registry import EXERCISES

FROM_THE_FILE = ("function not found", "does not compile", "too large", "helper outside the function")
MESSAGE_KEPT = 2000  # characters of a message about the student's file
REASON_KEPT = 200  # characters of a test's reason
_TYPE = re.compile(r"([A-Za-z_]\w{0,60}): ")
_COMPARISON = ("Not equal to tolerance", "Arrays are not", "Items are not", "Mismatched elements")


def test_reasons(grader_root: Path, nodeids) -> dict[str, str]:
    """{node ID: the test's reason} for the graded tests `nodeids`, read from the grader's own test files."""
    trees: dict[str, ast.Module | None] = {}
    reasons = {}
    for nodeid in nodeids:
        path, *names = nodeid.split("[", 1)[0].split("::")
        if path not in trees:
            try:
                trees[path] = ast.parse((Path(grader_root) / path).read_text(encoding="utf-8"))
            except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
                trees[path] = None
        reasons[nodeid] = _reason_in(trees[path], names)
    return reasons


def _reason_in(tree: ast.Module | None, names: list[str]) -> str:
    """The first paragraph of the docstring of the test `names` (class, function) in `tree`, else its name in
    words."""
    node = tree
    for name in names:
        children = getattr(node, "body", []) if node is not None else []
        node = next((child for child in children if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                       ast.ClassDef)) and child.name == name), None)
    docstring = ast.get_docstring(node) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
    if docstring:
        reason = " ".join(docstring.split("\n\n", 1)[0].split())
    else:
        reason = (names[-1] if names else "the test").removeprefix("test_").replace("_", " ")
    return reason[:REASON_KEPT] + ("..." if len(reason) > REASON_KEPT else "")


def for_student(kind: str, message: str, exercise_id: str, reason: str) -> str:
    """The message a student reads for a test of `exercise_id` that ended as `kind` with the grader's `message`
    (which may quote the hidden inputs), given the test's `reason`: "what happened (the test: reason)"."""
    what = what_happened(kind, message, exercise_id)
    return what if kind in ("passed", "not attempted", "not graded", *FROM_THE_FILE) else f"{what} (the test: {reason})"


def what_happened(kind: str, message: str, exercise_id: str) -> str:
    """The kind of failure in words, from `message` read for known forms only: nothing of it is copied but a
    class name of Python's, a signal's name, an exit status or a number of seconds (or, for the kinds about the
    student's file, the grader's message about it)."""
    if kind == "passed":
        return message
    if kind == "not attempted":
        return f"not attempted: {EXERCISES[exercise_id].stub_message()}" if exercise_id in EXERCISES else kind
    if kind in FROM_THE_FILE or kind == "not graded":
        text = plain(message)
        return text[:MESSAGE_KEPT] + ("..." if len(text) > MESSAGE_KEPT else "")
    return _what_happened(kind, message)


def _what_happened(kind: str, message: str) -> str:
    """The kind of failure in words, from `message` read for known forms only: nothing of it is copied but a
    class name of Python's, a signal's name, an exit status or a number of seconds."""
    if kind == "timed out":
        limit = re.search(r"timed out after (\d+(?:\.\d+)?) s", message)
        if "budget" in message:
            return "timed out: the time budget for your whole grading ran out"
        if message.startswith("not run:"):
            return f"timed out: not run, as {DOWNS_PER_EXERCISE} earlier tests of this exercise timed out" + (
                f" (after {limit[1]} s)" if limit else "")
        return f"timed out: the code did not return within {limit[1]} s" if limit else "timed out"
    if kind == "crashed":
        signal = re.search(r"died by (SIG[A-Z0-9]{1,10})\b", message)
        status = re.search(r"exit status (-?\d{1,4})\b", message)
        if message.startswith("not run:"):
            return f"crashed: not run, as {DOWNS_PER_EXERCISE} earlier tests of this exercise crashed"
        how = f"the process died by {signal[1]}" if signal else f"the code ended the process (exit status " \
            f"{status[1]})" if status else "the process running the code ended before the test did"
        return f"crashed: {how}"
    if kind == "refused":
        return ("refused: the exercise's code asked the grader for another exercise's function, which it does not "
                "need; the exercise earns nothing")
    if kind == "blocked":
        return "blocked: it needs another exercise first"
    if kind != "failed":
        return kind
    if message.startswith(("did not run", "grader error:")):
        return message.split(";")[0][:200]
    typename = _TYPE.match(message)
    typename = typename[1] if typename else ""
    if typename == "AssertionError" and any(form in message for form in _COMPARISON):
        return "wrong shape" if re.search(r"shapes? .{0,80}mismatch", message) else "wrong values"
    if typename == "GradcheckError":
        return "wrong gradients: they differ from finite differences of the forward pass"
    if typename == "Failed" and "DID NOT RAISE" in message:
        return "did not raise the error the test expects"
    if typename == "StudentError":
        return "raised an exception of a class of its own"
    if typename in REBUILT and typename != "AssertionError":
        return f"raised {typename}"
    return "a check of the answer failed"
