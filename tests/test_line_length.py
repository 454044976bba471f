"""One line length throughout: no line of Python in minitorch/ or tests/ is longer than LINE_LENGTH (120)
characters, in the book and in a student edition, whose stubs are written to fit."""

from __future__ import annotations

from pathlib import Path

import pytest

import minitorch
from minitorch.exercises.registry import LINE_LENGTH

ROOT = Path(minitorch.__file__).resolve().parent.parent  # the project under test (--minitorch-root)
SOURCES = sorted(path for folder in ("minitorch", "tests") for path in (ROOT / folder).rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda path: path.relative_to(ROOT).as_posix())
def test_no_line_is_longer_than_the_books_line_length(path):
    long_lines = [f"line {number}: {len(line)} characters"
                  for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
                  if len(line) > LINE_LENGTH]
    assert not long_lines, (f"{path.relative_to(ROOT)} has lines longer than {LINE_LENGTH} characters, the book's "
                            f"line length; break them:\n" + "\n".join(long_lines))
