"""The printed edition: every chapter of the built book on one page (print.html), after a title page and a
contents page, and that page printed to one PDF by headless Chromium.

print.html is made from the chapter pages already written: each chapter's content, with its anchors made
unique (``c05-theorem-1``) and its links between pages turned into links within the one page, so that the
contents page and every cross-reference still work in the PDF. Answers are open (a closed ``details`` prints
only its summary). Chromium lays the page out at the width of the printed text (A4 less the margins of
book.css), so that book.js fits each printed table to that width before the page is printed.

The PDF has its page numbers at the foot of each page (book.css), bookmarks made by Chromium from the
headings (--generate-pdf-document-outline), and a contents page with the page of each chapter and section.
Only a printing tells on which page a heading falls, so the book is printed twice: first to read the page
of every heading the contents link to (the PDF's named destinations, read with the package pypdf), then
with those numbers written into the contents. The first printing holds a placeholder of the same width for
each number, so that the second lays out the same; the pages are read again after it, and in the rare case
that they moved, the book is printed once more. Last, the bookmarks of headings that wrap get their spaces
back (`mend_bookmarks`).
"""

from __future__ import annotations

import html
import logging
import re
import shutil
import subprocess
import time
from dataclasses import replace
from pathlib import Path

from minitorch.tools.book.figures import printed_stills
from minitorch.tools.book.measurements import Measurements, fill_in
from minitorch.tools.book.pages import BOOK_TITLE, PDF_NAME, QUICK_BANNER, sections
from minitorch.tools.book.search import FORMULA, plain_text

PRINT_PAGE = "print.html"
PRINT_WIDTH = 703  # CSS pixels: A4's 210 mm less book.css's 2 x 12 mm margins, at 96 pixels per inch
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
PDF_TIMEOUT = 900  # seconds Chromium may take to typeset and print the whole book
PRINTINGS = 3  # at most: one to find the pages, one with their numbers, one more if the numbers moved a heading
PAGE_PLACEHOLDER = 888  # the page number of every contents line in the first printing (as wide as the real ones)
MAIN = re.compile(r'<main class="book-main">(.*)</main>', re.S)
logging.getLogger("pypdf").setLevel(logging.ERROR)  # its warnings about Chromium's PDFs (a trailer's size) are noise


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
    for other, href in pages.items():  # (``pages``: number -> the href of its page, URL-escaped)
        body = re.sub(rf'href="{re.escape(href)}#([^"]+)"', rf'href="#c{other}-\1"', body)
        body = body.replace(f'href="{href}"', f'href="#chapter-{other}"')
    return body.replace('<details class="book-answer">', '<details class="book-answer" open>')


def print_page(book: Path, chapters, quick: bool, opening: str = "", page_numbers: dict | None = None) -> str:
    """print.html for the ``chapters`` written in ``book``: title page, contents, then every chapter.
    ``page_numbers`` (anchor -> page) puts each contents line's page beside it; a missing anchor gets
    PAGE_PLACEHOLDER, and without ``page_numbers`` the contents have no page numbers."""
    pages = {chapter.number: chapter.link for chapter in chapters}  # their hrefs

    def entry(anchor: str, heading: str) -> str:
        number = "" if page_numbers is None else page_numbers.get(anchor, PAGE_PLACEHOLDER)
        return (f'<span class="book-entry"><a href="#{anchor}">{heading}</a><span class="book-leader"></span>'
                f'<span class="book-page">{number}</span></span>')

    contents, bodies = [], []
    for chapter in chapters:
        page = (book / chapter.page).read_text(encoding="utf-8")
        own = "".join(f"<li>{entry(f'c{chapter.number}-{anchor}', heading)}</li>" for anchor, heading in sections(page))
        contents.append(f"<li>{entry(f'chapter-{chapter.number}', html.escape(chapter.title))}<ol>{own}</ol></li>")
        bodies.append(f'<section class="book-print-chapter" id="chapter-{chapter.number}">'
                      f"{chapter_body(page, chapter.number, pages)}</section>")
    cover = printed_stills(opening, frames=1) if opening else f"<h1>{BOOK_TITLE}</h1>"  # the trained model on paper
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
{cover}
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


def write_printed_edition(book: Path, chapters, quick: bool, opening: str, report, measured: Measurements,
                          pdf: bool = True, chromium: str | None = None) -> Path | None:
    """Write print.html into ``book`` and, with ``pdf``, print it to PDF_NAME with page numbers in its
    contents; return the PDF's path, or None (no ``pdf``, or Chromium missing or failing: reported, and said
    in ``measured.no_pdf``). ``measured`` gets the PDF's pages and the time of one printing, and its
    sentence takes the place of the build-measurements markers in print.html."""
    def write(page_numbers: dict | None, numbers: Measurements) -> None:
        page = print_page(book, chapters, quick, opening, page_numbers)
        (book / PRINT_PAGE).write_text(fill_in(page, numbers), encoding="utf-8")

    if not pdf:
        measured.no_pdf = "--no-pdf"
        write(None, measured)
        return None
    write({}, replace(measured, pdf_pages=PAGE_PLACEHOLDER, pdf_seconds=88))  # placeholders as wide as the numbers
    start = time.perf_counter()
    printed = print_pdf(book, report, chromium)
    if printed is None:
        measured.no_pdf = "Chromium failed to print it" if chromium or find_chromium() else "Chromium is not installed"
        write(None, measured)
        return None
    measured.pdf_seconds = time.perf_counter() - start
    for _ in range(PRINTINGS - 1):
        page_numbers, measured.pdf_pages = heading_pages(printed)
        write(page_numbers, measured)
        printed = print_pdf(book, report, chromium)
        if printed is None:
            measured.no_pdf, measured.pdf_pages = "Chromium failed to print it a second time", None
            write(None, measured)
            return None
        if heading_pages(printed) == (page_numbers, measured.pdf_pages):
            break
    else:
        report(f"The contents' page numbers may be a page off: the headings still moved after {PRINTINGS} printings.")
    mend_bookmarks(printed, (book / PRINT_PAGE).read_text(encoding="utf-8"))
    report(f"Printed {PDF_NAME} ({printed.stat().st_size / 1e6:.1f} MB, {measured.pdf_pages} pages; one printing "
           f"took {measured.pdf_seconds:.0f} s)")
    return printed


def print_pdf(book: Path, report, chromium: str | None = None) -> Path | None:
    """Print ``book``/print.html to ``book``/PDF_NAME with headless Chromium, with bookmarks from its headings;
    return its path, or None after reporting why there is none (no Chromium, or Chromium failed)."""
    chromium = chromium or find_chromium()
    if chromium is None:
        report("No PDF: the printed edition is made by headless Chromium, which is not installed "
               "(e.g. apt-get install chromium); the HTML book is complete without it.")
        return None
    pdf = book / PDF_NAME
    command = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-pdf-header-footer",
               "--generate-pdf-document-outline", "--virtual-time-budget=600000", f"--window-size={PRINT_WIDTH},1000",
               f"--print-to-pdf={pdf}", (book / PRINT_PAGE).resolve().as_uri()]
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
    try:
        count_pages(pdf)
    except Exception as error:  # noqa: BLE001 - pypdf's many errors for a file that is no PDF: one line
        report(f"No PDF: Chromium exited 0 but wrote no readable PDF ({type(error).__name__}: {error}).")
        pdf.unlink(missing_ok=True)
        return None
    return pdf


def heading_pages(pdf: Path) -> tuple[dict[str, int], int]:
    """The page (1 for the first) of every anchor the PDF links to (its named destinations: Chromium makes one
    for each target of a link within the page, so for every line of the contents), and its number of pages."""
    from pypdf import PdfReader

    reader = PdfReader(pdf)
    pages = {str(name).lstrip("/"): reader.get_destination_page_number(destination) + 1
             for name, destination in reader.named_destinations.items()}
    return pages, len(reader.pages)


def mend_bookmarks(pdf: Path, page: str) -> None:
    """Chromium writes the bookmark of a heading that wraps onto two lines without the space between them
    ("TheReLU model trainswithout a sink"), and leaves out its formulas: each bookmark whose letters are those
    of a heading of ``page`` (the printed HTML; formulas aside) gets that heading's words back, formulas
    written as text. The PDF is rewritten aside, then moved into place."""
    from pypdf import PdfWriter
    from pypdf.generic import NameObject, TextStringObject

    def letters(text: str) -> str:
        return re.sub(r"[^A-Za-z]", "", FORMULA.sub("", text))

    headings = [re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", "", heading))).replace("¶", "").strip()
                for heading in re.findall(r"<h[1-6][^>]*>(.*?)</h[1-6]>", page, re.S)]  # "¶": the anchor's link
    spelled = {letters(heading): plain_text(heading) for heading in headings if letters(heading)}
    writer = PdfWriter(clone_from=pdf)
    outlines = writer.root_object.get("/Outlines")
    waiting = [outlines.get_object().get("/First")] if outlines is not None else []
    mended = 0
    while waiting:
        item = waiting.pop()
        if item is None:
            continue
        item = item.get_object()
        title = str(item.get("/Title", ""))
        words = spelled.get(letters(title))
        if words and words != title:
            item[NameObject("/Title")] = TextStringObject(words)
            mended += 1
        waiting += [item.get("/Next"), item.get("/First")]
    if mended:
        aside = pdf.with_name(pdf.name + ".mending")
        with open(aside, "wb") as file:
            writer.write(file)
        aside.replace(pdf)


def count_pages(pdf: Path) -> int:
    """How many pages the PDF has."""
    return heading_pages(pdf)[1]


def check_pdf_package() -> None:
    """A BookError saying how to install pypdf if it is missing (checked before any chapter runs)."""
    from minitorch.tools.book.chapters import BookError

    try:
        import pypdf  # noqa: F401
    except ImportError:
        raise BookError("the printed edition's contents get their page numbers with the package pypdf, which is "
                        "not installed: pip install -r requirements.txt (or build with --no-pdf)") from None
