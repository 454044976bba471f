"""The build's own numbers, in the book: where a chapter's markdown holds, on a line of its own,

    <!-- build-measurements -->

its page (and the printed edition) shows instead what the build of that copy measured: how long running the
chapters and writing the HTML book took, on how many cores and in which mode, and the PDF's pages and the
time one printing took. The build prints the same sentence at its end. A number the prose would otherwise
type (and which would go out of date with the next chapter or machine) comes from the build that made the
copy in the reader's hands.
"""

from __future__ import annotations

import html
import os
import re
from dataclasses import dataclass

MARKER = "<!-- build-measurements -->"
MARKER_LINE = re.compile(rf"^[ \t]*{re.escape(MARKER)}[ \t]*$", re.M)  # a line of its own in the markdown
PLACE = '<div class="book-measurements"></div>'  # where the page will show them, once they are measured


def usable_cores() -> int:
    """The cores this process may run on (its affinity, where the system tells it), else all of them."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def duration(seconds: float) -> str:
    """'48 s', '3 min 05 s'."""
    seconds = round(seconds)
    return f"{seconds} s" if seconds < 60 else f"{seconds // 60} min {seconds % 60:02d} s"


@dataclass
class Measurements:
    """What one build measured. ``html_seconds``: from the start to the HTML book written (the chapters run,
    their pages, the search index); ``pdf_seconds``: one printing of the PDF (the first: the build prints
    twice, the second time with the contents' page numbers); ``no_pdf``: why there is no PDF, if there is none."""

    chapters: int
    quick: bool
    jobs: int
    html_seconds: float
    cores: int = 0
    pdf_pages: int | None = None
    pdf_seconds: float | None = None
    no_pdf: str = ""

    def __post_init__(self):
        self.cores = self.cores or usable_cores()

    def command(self) -> str:
        return "python -m minitorch book" + (" --quick" if self.quick else "")

    def sentence(self) -> str:
        """The measurements as one sentence of plain text."""
        mode = "in quick mode, with shortened training" if self.quick else "in full mode"
        at_once = "one chapter at a time" if self.jobs == 1 else f"{self.jobs} chapters at a time"
        cores = f"{self.cores} core{'s' if self.cores != 1 else ''}"
        chapters = f"{self.chapters} chapter{'s' if self.chapters != 1 else ''}"
        said = (f"This copy of the book was built by `{self.command()}` on a machine with {cores} ({mode}, "
                f"{at_once}): running its {chapters} and writing the HTML book took {duration(self.html_seconds)}")
        if self.pdf_pages is not None and self.pdf_seconds is not None:
            return (said + f", and printing the PDF, {self.pdf_pages} pages, {duration(self.pdf_seconds)} (the "
                    f"build prints it twice: the second time with the page numbers in the contents).")
        return said + (f"; no PDF was printed ({self.no_pdf})." if self.no_pdf else ".")

    def html(self) -> str:
        """The sentence as a paragraph of the page, the command as code."""
        text = re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(self.sentence(), quote=False))
        return f'<div class="book-measurements"><p>{text}</p></div>'


def mark_places(markdown: str) -> str:
    """A chapter's ``markdown`` with each marker that stands on a line of its own made the place (PLACE) where
    the page shows the measurements (a marker inside a line stays a comment)."""
    return MARKER_LINE.sub(PLACE, markdown)


def fill_in(page: str, measured: Measurements) -> str:
    """``page`` (HTML) with the measurements in each of its places."""
    return page.replace(PLACE, measured.html())
