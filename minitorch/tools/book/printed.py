"""The printed edition: every chapter of the built book on one page (print.html), after a title page and a
contents page, and that page printed to one PDF by headless Chromium.

print.html is made from the chapter pages already written: each chapter's content, with its anchors made
unique (``c05-theorem-1``) and its links between pages turned into links within the one page, so that the
contents page and every cross-reference still work in the PDF. Answers are open (a closed ``details`` prints
only its summary). Chromium lays the page out at the width of the printed text (A4 less the margins of
book.css), so that book.js fits each printed table to that width before the page is printed.
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import time
from pathlib import Path

from minitorch.tools.book.pages import BOOK_TITLE, PDF_NAME, QUICK_BANNER, sections

PRINT_PAGE = "print.html"
PRINT_WIDTH = 703  # CSS pixels: A4's 210 mm less book.css's 2 x 12 mm margins, at 96 pixels per inch
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
PDF_TIMEOUT = 900  # seconds Chromium may take to typeset and print the whole book
MAIN = re.compile(r'<main class="book-main">(.*)</main>', re.S)


def find_chromium() -> str | None:
    """The path of a headless-capable Chromium or Chrome on PATH, or None."""
    return next((path for path in map(shutil.which, BROWSERS) if path), None)


def chapter_body(page: str, number: str, pages: dict[str, str]) -> str:
    """A chapter page's content for the printed book: anchors prefixed with c<number>-, links to other
    chapters' pages made links within print.html, banners and previous/next left out, answers open."""
    body = MAIN.search(page).group(1)
    body = re.sub(r'<div class="book-banner[^"]*"[^>]*>.*?</div>', "", body, flags=re.S)
    body = re.sub(r'<nav class="book-prevnext">.*?</nav>', "", body, flags=re.S)
    body = re.sub(r'\bid="([^"]+)"', rf'id="c{number}-\1"', body)
    body = re.sub(r'href="#([^"]+)"', rf'href="#c{number}-\1"', body)
    for other, file_name in pages.items():
        body = re.sub(rf'href="{re.escape(file_name)}#([^"]+)"', rf'href="#c{other}-\1"', body)
        body = body.replace(f'href="{file_name}"', f'href="#chapter-{other}"')
    return body.replace('<details class="book-answer">', '<details class="book-answer" open>')


def print_page(book: Path, chapters, quick: bool, opening: str = "") -> str:
    """print.html for the ``chapters`` written in ``book``: title page, contents, then every chapter."""
    pages = {chapter.number: chapter.page for chapter in chapters}
    contents, bodies = [], []
    for chapter in chapters:
        page = (book / chapter.page).read_text(encoding="utf-8")
        own = "".join(f'<li><a href="#c{chapter.number}-{anchor}">{heading}</a></li>'
                      for anchor, heading in sections(page))
        contents.append(f'<li><a href="#chapter-{chapter.number}">{html.escape(chapter.title)}</a><ol>{own}</ol></li>')
        bodies.append(f'<section class="book-print-chapter" id="chapter-{chapter.number}">'
                      f"{chapter_body(page, chapter.number, pages)}</section>")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{BOOK_TITLE} (printed edition)</title>
<link rel="stylesheet" href="_static/book.css">
<script src="_static/book.js"></script>
<script src="_static/mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full" defer></script>
</head>
<body class="book-printed">
<main class="book-main">
<section class="book-print-title jp-RenderedHTMLCommon">
{opening or f"<h1>{BOOK_TITLE}</h1>"}
{QUICK_BANNER if quick else ""}
<p class="book-colophon">The printed edition of the HTML book: every chapter was run top to bottom from a fresh
kernel{" in quick mode" if quick else ""} (<code>python -m minitorch book{" --quick" if quick else ""}</code>).
The answers to "predict, then check" are printed open: try each question before you read on.</p>
</section>
<nav class="book-print-contents" aria-label="Contents"><h1>Contents</h1><ol>{"".join(contents)}</ol></nav>
{"".join(bodies)}
</main>
</body>
</html>
"""


def write_pdf(book: Path, report, chromium: str | None = None) -> Path | None:
    """Print ``book``/print.html to ``book``/PDF_NAME with headless Chromium; return its path, or None after
    reporting why there is none (no Chromium, or Chromium failed)."""
    chromium = chromium or find_chromium()
    if chromium is None:
        report("No PDF: the printed edition is made by headless Chromium, which is not installed "
               "(e.g. apt-get install chromium); the HTML book is complete without it.")
        return None
    pdf = book / PDF_NAME
    command = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-pdf-header-footer",
               "--virtual-time-budget=600000", f"--window-size={PRINT_WIDTH},1000", f"--print-to-pdf={pdf}",
               (book / PRINT_PAGE).resolve().as_uri()]
    start = time.perf_counter()
    try:
        finished = subprocess.run(command, capture_output=True, text=True, timeout=PDF_TIMEOUT)
    except subprocess.TimeoutExpired:
        report(f"No PDF: Chromium took more than {PDF_TIMEOUT} s to print {PRINT_PAGE}.")
        pdf.unlink(missing_ok=True)
        return None
    if finished.returncode != 0 or not pdf.is_file() or pdf.stat().st_size == 0:
        last_line = (finished.stderr.strip().splitlines() or ["no message"])[-1]
        report(f"No PDF: Chromium failed to print {PRINT_PAGE} (exit {finished.returncode}: {last_line}).")
        pdf.unlink(missing_ok=True)
        return None
    report(f"Printed {PDF_NAME} ({pdf.stat().st_size / 1e6:.1f} MB, {count_pages(pdf)} pages) "
           f"in {time.perf_counter() - start:.0f} s")
    return pdf


def count_pages(pdf: Path) -> int:
    """How many pages the PDF has (its /Type /Page objects; Chromium writes them uncompressed)."""
    return len(re.findall(rb"/Type\s*/Page\b", pdf.read_bytes()))
