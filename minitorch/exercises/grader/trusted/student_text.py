"""Text that came from a student, written as data wherever it goes (chapter 11, "What you get").

A student chooses their entry's name, the messages their code raises and what it prints. None of it reaches
a terminal, a Markdown page, a JSON file or a spreadsheet as it is:

- `shown` (one line: a name, a flag) writes every character that is not printable as its escape, so a newline
  cannot add a line and a terminal's escape sequence (ESC, OSC, a bell) cannot move the cursor or set a title;
- `plain` (a message or a log of several lines) does the same but keeps newlines and tabs;
- `in_markdown` is `shown` with Markdown's and HTML's own characters escaped, so ``<script>`` is text and a
  ``|`` cannot open a table cell;
- `csv_cell` is `shown` with a leading ' before what a spreadsheet would run as a formula (=, +, -, @);
- `capped` shortens a long list of names to a count and the first few.

Bytes that are not UTF-8 are read with errors="replace" (U+FFFD) or as surrogate escapes, which `shown` writes as
their escape (\\udcff).
"""

from __future__ import annotations

NAMES_SHOWN = 20  # names of a long list shown in a flag line; the rest are counted
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # a cell starting so is a formula to a spreadsheet
_MARKDOWN = {character: "\\" + character for character in "\\`*_[]|#~!{}"} | {"<": "&lt;", ">": "&gt;",
                                                                               "&": "&amp;"}


def shown(text) -> str:
    """`text` as one printable line: every character that is not printable (a newline, a terminal's escape, a
    Unicode line or paragraph separator, a zero-width mark, an undecodable byte) written as its escape, e.g. a\\nb
    for a newline."""
    text = str(text)
    if text.isprintable():  # (most text: no character to look at one by one)
        return text
    return "".join(character if character.isprintable() else _escape(character) for character in text)


def plain(text) -> str:
    """`text` as printable lines: like `shown`, but newlines and tabs stay (a message, a log)."""
    return "\n".join("\t".join(shown(part) for part in line.split("\t")) for line in str(text).split("\n"))


def in_markdown(text) -> str:
    """`text` as one line of Markdown that shows it as written: `shown`, with Markdown's and HTML's characters
    escaped (``<script>`` is text, ``*`` no emphasis, ``|`` no table cell)."""
    return "".join(_MARKDOWN.get(character, character) for character in shown(text))


def csv_cell(text) -> str:
    """`text` as a CSV cell a spreadsheet shows as text: `shown`, and a ' before a leading =, +, -, @ (a formula
    would run)."""
    text = shown(text)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def capped(names, first: int = NAMES_SHOWN, what: str = "files") -> str:
    """Names for a flag line, each `shown`: all of them separated by spaces if there are at most `first`, else
    e.g. "99,000 files (first 20: a.py b.py ...)", so that a line stays a line."""
    names = [shown(name) for name in names]
    if len(names) <= first:
        return " ".join(names)
    return f"{len(names):,} {what} (first {first}: {' '.join(names[:first])} ...)"


def _escape(character: str) -> str:
    named = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
    if character in named:
        return named[character]
    code = ord(character)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
