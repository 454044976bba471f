"""The README's worked example runs and prints what its comments promise."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _worked_example() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## A worked example of the engine", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@pytest.mark.skipif((ROOT / "minitorch" / "exercises" / "edition.json").exists(),
                    reason="a student edition's README is the students' own, without the worked example")
def test_readme_worked_example_prints_what_its_comments_say():
    code = _worked_example()
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, "README.md", "exec"), {})
    promised = [line.split("#", 1)[1].split("=")[0].strip() for line in code.splitlines()
                if line.startswith("print(") and "#" in line]
    got = printed.getvalue().splitlines()
    assert got == promised, f"README example prints {got}, its comments promise {promised}"
