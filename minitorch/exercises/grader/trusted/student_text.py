"""A student's bytes as data, and what a failed test shows a student (chapter 11, "What a student sees").

Names, messages and output from students reach no terminal, Markdown page, JSON file or spreadsheet as they are.
A failed test shows the kind of failure and the test's own reason, never what the code raised or printed: on
the hidden inputs that could quote the inputs. The full text is in the instructor's check log.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

from minitorch.exercises.grader.channel import MAX_ARRAY_ELEMENTS
from minitorch.exercises.registry import EXERCISES

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # a cell starting so is a formula to a spreadsheet
MARKDOWN_ESCAPES = {character: "\\" + character for character in "\\`*_[]|#~!{}"} | {"<": "&lt;", ">": "&gt;",
                                                                                    "&": "&amp;"}
ABOUT_THE_FILE = ("function not found", "does not compile", "too large", "helper outside the function")
REASON_KEPT, MESSAGE_KEPT = 200, 2000  # characters of a test's reason, and of a message about the student's file


def shown(text) -> str:
    """`text` as one printable line: a newline, a terminal's escape or an undecodable byte as its escape (\\n)."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def plain(text) -> str:
    """`text` as printable lines: `shown`, but newlines and tabs stay (a message, a log)."""
    return "\n".join("\t".join(map(shown, line.split("\t"))) for line in str(text).split("\n"))


def in_markdown(text) -> str:
    """`text` as Markdown that shows it as written (``<script>`` is text, ``|`` opens no cell)."""
    return "".join(MARKDOWN_ESCAPES.get(character, character) for character in shown(text))


def csv_cell(text) -> str:
    """`text` as a cell a spreadsheet shows as text: `shown`, with a ' before what it would run as a formula."""
    text = shown(text)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


@functools.lru_cache(maxsize=None)
def _test_file(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None


def reason_of(grader_root: Path, nodeid: str) -> str:
    """A graded test's own reason: the first paragraph of its docstring, else its name in words."""
    path, *names = nodeid.split("[", 1)[0].split("::")
    node = _test_file(Path(grader_root) / path)
    for name in names:  # (a class, then its test)
        node = next((child for child in getattr(node, "body", []) if getattr(child, "name", None) == name), None)
    docstring = ast.get_docstring(node) if isinstance(node, ast.FunctionDef) else None
    if docstring:
        reason = " ".join(docstring.split("\n\n")[0].split())
    else:
        reason = names[-1].removeprefix("test_").replace("_", " ")
    return reason[:REASON_KEPT] + ("..." if len(reason) > REASON_KEPT else "")


# What a student reads of a test that ended as a kind below: the words of the first form (a regular expression) the
# grader's message matches, with what the form captured. Nothing else of the message is copied: it may quote the
# hidden inputs. A class name is Python's (the channel turns a class of the student's into StudentError).
FORMS = {
    "timed out": [(r"budget", "timed out: the time budget for your whole grading ran out"),
                  (r"^not run:.*timed out after (\d+(?:\.\d+)?) s",
                   "timed out: not run, as earlier tests of this exercise timed out (after {} s)"),
                  (r"^not run:", "timed out: not run, as earlier tests of this exercise timed out"),
                  (r"timed out after (\d+(?:\.\d+)?) s", "timed out: the code did not return within {} s")],
    "crashed": [(r"^not run:", "crashed: not run, as earlier tests of this exercise crashed"),
                (r"^crashed while defining \w{1,60}: ([A-Z]\w{0,60}(?:Error|Exception))\b",
                 "crashed: defining the function raised {} (a default value on its def line ran when it was defined)"),
                (r"^crashed while defining ", "crashed: defining the function raised an exception of a class of its "
                                              "own (a default value on its def line ran when it was defined)"),
                (r"died by (SIG[A-Z0-9]{1,10})\b", "crashed: the process died by {}"),
                (r"exit status (-?\d{1,4})\b", "crashed: the code ended the process (exit status {})"),
                (r"", "crashed: the process running the code ended before the test did")],
    "failed": [(r"^did not run", "did not run: the check process ended before it"),
               (r"^the answer cannot be sent to the grader", "the answer cannot be sent to the grader: it is not plain "
                                                              "data, or an array of more than the "
                                                              f"{MAX_ARRAY_ELEMENTS:,} elements it takes"),
               (r"^grader error:", "grader error: the test never called your code (the instructor's to fix)"),
               (r"^AssertionError: (?s:.*)shapes? .{0,80}mismatch", "wrong shape"),
               (r"^AssertionError: (?s:.*)(Not equal to tolerance|Arrays are not|Mismatched)", "wrong values"),
               (r"^GradcheckError: ", "wrong gradients: they differ from finite differences of the forward pass"),
               (r"^Failed: DID NOT RAISE", "did not raise the error the test expects"),
               (r"^StudentError: ", "raised an exception of a class of its own"),
               (r"^(?!AssertionError)([A-Z]\w{0,60}(?:Error|Exception))(?:: |$)", "raised {}"),  # (no message too)
               (r"", "a check of the answer failed")],
    "refused": [(r"", "refused: the exercise's code asked the grader for another exercise's function, which it "
                      "does not need")],
    "blocked": [(r"", "blocked: it needs another exercise first")],
}


def what_happened(kind: str, message: str, exercise_id: str) -> str:
    """The kind of failure in words (`FORMS`); a message about the student's file, made before any of it ran,
    stays as it is."""
    if kind == "not attempted":
        return f"not attempted: {EXERCISES[exercise_id].stub_message()}"
    for form, words in FORMS.get(kind, []):
        found = re.search(form, message)
        if found:
            return words.format(*found.groups())
    return plain(message)[:MESSAGE_KEPT] if kind in ("passed", "not graded", *ABOUT_THE_FILE) else kind
