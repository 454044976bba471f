"""The book's chapters: which notebooks, in which order, under which file names and titles."""

from __future__ import annotations

import os
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from minitorch.outputs import PathError, check_input_file

# nbformat's notice that a notebook saved by an older Jupyter has cells without ids (it gives them ids as it reads) is
# no fault of the chapter: not printed under the build's lines, nor an error under PYTHONWARNINGS=error.
warnings.filterwarnings("ignore", message="Cell is missing an id field", category=FutureWarning)
CHAPTER_NAME = re.compile(r"^(\d\d)_.+\.ipynb$")
TITLE_PREFIX = re.compile(r"^Chapter\s+\d\d\s*[—–:-]\s*")  # "Chapter 03 — " before the title proper
IMPORTS_MINITORCH = re.compile(r"^\s*(?:import|from)\s+minitorch\b", re.MULTILINE)


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
    def link(self) -> str:
        """`page` as a link's href, URL-escaped: a browser reads '?' or '#' in a file name as the start of a query
        or a fragment ('02_what next?.html' is linked as '02_what%20next%3F.html')."""
        return quote(self.page)

    @property
    def notebook_copy(self) -> str:
        return "notebooks/" + self.path.name

    @property
    def notebook_link(self) -> str:
        """`notebook_copy` as a link's href, URL-escaped as `link` is."""
        return quote(self.notebook_copy)


def find_chapters(chapters_dir, only: list[str] | None = None) -> list[Chapter]:
    """The chapters NN_title.ipynb of ``chapters_dir`` in order; ``only`` keeps those numbered so (["03", "07"]).
    A copy of a chapter (`copies`) is left out; two other notebooks of one number are refused, naming both: each
    would be chapter NN, and every link to chapter NN would go to one of them."""
    notebooks = sorted(Path(chapters_dir).glob("*.ipynb"))
    copied = copies(notebooks)
    paths = [path for path in notebooks if CHAPTER_NAME.match(path.name) and path.name not in copied]
    if not paths:
        raise BookError(f"no chapters NN_title.ipynb in {chapters_dir}")
    for number in sorted({path.name[:2] for path in paths}):
        same = [path.name for path in paths if path.name[:2] == number]
        if len(same) > 1:
            raise BookError(f"{chapters_dir}: {' and '.join(same)} are both chapter {number}, and a book has one; "
                            f"move one out of the folder, or rename it without the number in front "
                            f"(my_notes_{number}.ipynb), which the book leaves out")
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


def copies(notebooks) -> set[str]:
    """The names of the notebooks NN_title.ipynb whose name extends another one's: copies of a chapter (Jupyter's
    Duplicate makes 01_x-Copy1.ipynb; a reader's notes, 01_x_my_notes.ipynb), which the book leaves out."""
    stems = [path.stem for path in notebooks if CHAPTER_NAME.match(path.name)]
    return {f"{stem}.ipynb" for stem in stems if any(stem != other and stem.startswith(other) for other in stems)}


def not_chapters(chapters_dir) -> str:
    """A line naming the notebooks of ``chapters_dir`` that the build leaves out, those not named NN_title.ipynb (a
    reader's Untitled.ipynb) and copies of a chapter; "" if there are none. Said, so that a chapter misnamed by a
    digit is not missing from the book in silence."""
    notebooks = sorted(Path(chapters_dir).glob("*.ipynb"))
    left_out = [path.name for path in notebooks if not CHAPTER_NAME.match(path.name)] + sorted(copies(notebooks))
    if not left_out:
        return ""
    return (f"Left out, not named NN_title.ipynb (two digits, an underscore, a title) or a copy of a chapter "
            f"(its name extends the chapter's): {', '.join(left_out[:5])}"
            f"{f' and {len(left_out) - 5} more' if len(left_out) > 5 else ''} (rename one as 01_title.ipynb to "
            f"build it)")


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
    check_cells(notebook, path)
    check_inside_the_project(notebook, path)
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return path.stem


CELL_TYPES = ("code", "markdown", "raw")


def check_inside_the_project(notebook, path) -> None:
    """BookError, before any chapter runs, for a chapter that imports minitorch but lies outside the project: its
    set-up cell finds the project by walking up from the folder its kernel runs in (the folder the chapter is
    named in, as the working folder, links resolved) to one holding minitorch/, and found none (a bare
    StopIteration, mid-build). Nothing is installed, so there is no other way to import it."""
    if not any(cell.get("cell_type") == "code" and IMPORTS_MINITORCH.search(cell.get("source") or "")
               for cell in notebook.cells):
        return
    folder = Path(os.path.realpath(Path(path).parent))
    if not any((above / "minitorch" / "__init__.py").is_file() for above in [folder, *folder.parents]):
        raise BookError(f"{path}: imports minitorch, but it lies outside the project: it runs in {folder}, and its "
                        f"set-up cell looks for minitorch/ there and in the folders above; put the chapter in a "
                        f"folder inside the project (a link to a chapter counts where the link is)")


def check_cells(notebook, path) -> None:
    """BookError naming the first cell of `notebook` (read from `path`) that is no notebook cell: a cell type
    other than code, markdown or raw, or a source that is not text. nbformat reads such a file with a
    warning, and nbclient would fail on the cell mid-build with a long traceback (a source 42, say)."""
    cells = notebook.get("cells")
    if not isinstance(cells, list):
        raise BookError(f"{path}: its 'cells' are {type(cells).__name__}, not a list of cells; is it a notebook?")
    for number, cell in enumerate(cells, 1):
        kind = cell.get("cell_type") if isinstance(cell, dict) else None
        if kind not in CELL_TYPES:
            raise BookError(f"{path}: cell {number} is not a cell of type {', '.join(CELL_TYPES)} "
                            f"(its type: {str(kind)[:40]!r}); fix it in Jupyter or delete it")
        source = cell.get("source")
        if not isinstance(source, str):
            raise BookError(f"{path}: the source of cell {number} ({kind}) is {str(source)[:40]!r} "
                            f"({type(source).__name__}), not text; a cell's source is a string or a list of strings")
