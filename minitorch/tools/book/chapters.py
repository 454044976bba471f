"""The book's chapters: which notebooks, in which order, under which file names and titles."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from minitorch.outputs import PathError, check_input_file

CHAPTER_NAME = re.compile(r"^(\d\d)_.+\.ipynb$")
TITLE_PREFIX = re.compile(r"^Chapter\s+\d\d\s*[—–:-]\s*")  # "Chapter 03 — " before the title proper


class BookError(Exception):
    """A build that cannot start: no chapters, or chapters asked for that do not exist."""


@dataclass(frozen=True)
class Chapter:
    """One chapter: its notebook, its title, and the names the book gives it."""

    path: Path
    title: str  # the notebook's first '# ' heading, e.g. "Chapter 03 — Attention, two ways"

    @property
    def number(self) -> str:
        return self.path.name[:2]

    @property
    def short_title(self) -> str:
        """The title without its "Chapter NN — ", e.g. "Attention, two ways" (for the contents)."""
        return TITLE_PREFIX.sub("", self.title) or self.path.stem

    @property
    def page(self) -> str:
        return self.path.stem + ".html"

    @property
    def notebook_copy(self) -> str:
        return "notebooks/" + self.path.name


def find_chapters(chapters_dir, only: list[str] | None = None) -> list[Chapter]:
    """The chapters NN_title.ipynb of ``chapters_dir`` in order; ``only`` keeps those numbered so (["03", "07"])."""
    paths = [path for path in sorted(Path(chapters_dir).glob("*.ipynb")) if CHAPTER_NAME.match(path.name)]
    if not paths:
        raise BookError(f"no chapters NN_title.ipynb in {chapters_dir}")
    if only is not None and (not only or not all(number.strip() for number in only)):
        raise BookError("--only: name the chapters to build, e.g. --only 03,07 (leave --only out for every chapter)")
    if only:
        valid = [path.name[:2] for path in paths]
        unknown = [number for number in only if number.zfill(2) not in valid]
        if unknown:
            raise BookError(f"--only: unknown chapter(s) {', '.join(unknown)}; valid: {', '.join(valid)}")
        wanted = {number.zfill(2) for number in only}
        paths = [path for path in paths if path.name[:2] in wanted]
    return [Chapter(path, chapter_title(path)) for path in paths]


def chapter_title(path: Path) -> str:
    """The first '# ' heading of the notebook's markdown, or its file name if it has none."""
    import nbformat

    try:
        check_input_file(path, "a chapter")  # a FIFO named like a chapter would block the read forever
    except (PathError, OSError) as error:
        raise BookError(str(error)) from None
    try:
        notebook = nbformat.read(path, as_version=4)
    except Exception as error:  # not JSON, not a notebook: name the file
        raise BookError(f"{path} is not a readable notebook: {error}") from None
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return path.stem
