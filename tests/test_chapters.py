"""Every chapter runs top to bottom in quick mode; the book's hygiene rules hold.

Quick mode (MINITORCH_QUICK=1) shrinks training so that the whole book runs
inside the test suite; a chapter's default settings are for readers.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

# The project under test: conftest.py sets MINITORCH_ROOT from --minitorch-root, so grading a
# student's copy runs that copy's chapters.
ROOT = Path(os.environ.get("MINITORCH_ROOT") or Path(__file__).resolve().parent.parent)
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))


def _load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.slow
@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_runs_top_to_bottom_in_quick_mode(chapter, quick_book):
    """Every chapter is executed from a fresh kernel in quick mode when the quick HTML book is built (the
    `quick_book` fixture of tests/conftest.py, shared with the book's own tests)."""
    _, failures = quick_book
    failed = {run.chapter.path.name: run for run in failures}
    if chapter.name in failed:
        pytest.fail(f"{chapter.name} failed in quick mode at cell {failed[chapter.name].failed_cell}:\n"
                    f"{failed[chapter.name].failure}", pytrace=False)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_is_committed_without_outputs(chapter):
    dirty = [index for index, cell in enumerate(_load(chapter)["cells"])
             if cell["cell_type"] == "code" and (cell.get("outputs") or cell.get("execution_count"))]
    assert not dirty, (f"{chapter.name}: code cells {dirty} have outputs; clear them before committing "
                       f"(jupyter nbconvert --clear-output --inplace {chapter.name})")


def _embedded_images(markdown: str) -> list[str]:
    links = re.findall(r"!\[[^\]]*\]\(([^)\s]+)", markdown)
    links += re.findall(r"<img[^>]+src=[\"']([^\"']+)", markdown)
    return [link for link in links if not link.startswith(("http://", "https://", "attachment:", "data:"))]


def _documents():
    yield ROOT / "README.md", ROOT
    for chapter in CHAPTERS:
        yield chapter, chapter.parent


@pytest.mark.parametrize("document,base", list(_documents()), ids=lambda p: getattr(p, "name", ""))
def test_every_embedded_figure_exists(document, base):
    if document.suffix == ".ipynb":
        text = "\n".join("".join(c["source"]) for c in _load(document)["cells"] if c["cell_type"] == "markdown")
    else:
        text = document.read_text(encoding="utf-8")
    missing = [link for link in _embedded_images(text) if not (base / link).exists()]
    assert not missing, (
        f"{document.name} embeds figures that do not exist: {missing} "
        f"(run python -m minitorch reproduce --out figures?)")
