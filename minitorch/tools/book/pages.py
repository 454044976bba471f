"""The book's HTML pages: a chapter's cells through nbconvert, and one layout around every page.

Every page has the chapter's title in the tab and at the top, a contents sidebar listing every chapter
(the current one marked, with its own sections), previous and next, and on a chapter page a link that
downloads its executed notebook. A quick build says so in a banner on every page. Styles and scripts are
shared files in _static/ (assets.py); figures are embedded in the page, so a page is one file.
"""

from __future__ import annotations

import base64
import html
import mimetypes
import re
from pathlib import Path

from minitorch.tools.book.assets import MATHJAX_CONFIG
from minitorch.tools.book.chapters import Chapter
from minitorch.tools.book.figures import prepare_notebook
from minitorch.tools.book.measurements import mark_places
from minitorch.tools.book.search import SEARCH_INDEX
from minitorch.tools.book.references import Labels, add_anchors, find_labels, link_references, outside_tags

BOOK_TITLE = "Attention sinks, from scratch"
PDF_NAME = "attention-sinks-from-scratch.pdf"  # the printed edition (printed.py), linked from the index
TEMPLATE_DIR = Path(__file__).resolve().parent / "template"
# nbconvert's order of preference among an output's formats, with image/gif (the animations) added.
DISPLAY_PRIORITY = ["text/html", "text/markdown", "image/svg+xml", "text/latex", "image/gif", "image/png",
                    "image/jpeg", "text/plain"]
# "chapter 04", "Chapters 07 and 08", "chapters 01-02": every two-digit number of the run is a reference.
NUMBER_SEPARATOR = r"(?:,\s*|\s+and\s+|\s+or\s+|\s*(?:-|–|&ndash;)\s*)"
CHAPTER_REFERENCE = re.compile(rf"\b([Cc]hapters?\s+)(\d\d(?:{NUMBER_SEPARATOR}\d\d)*)\b")
NOTEBOOK_LINK = re.compile(r'href="(\d\d)_[^"/]*?\.ipynb(#[^"]*)?"')  # [see](02_x.ipynb#y), as Jupyter links
SECTION_HEADING = re.compile(r'<h2 id="([^"]+)">(.*?)<a class="anchor-link"', re.S)
LONG_CODE_LINE = 100  # characters: a longer line of code may wrap on paper (about 110 fit), and gets its mark
CODE_BLOCK = re.compile(r'(<div class="highlight[^"]*"><pre>)(.*?)(</pre>)', re.S)  # a code cell's code, highlighted
QUICK_BANNER = (
    '<div class="book-banner book-quick" role="note"><strong>Quick build.</strong> The chapters ran in quick mode '
    "(<code>--quick</code>): chapters 05 and 06 check their theorems on fewer inputs, and chapter 10 trains its own "
    "models for 60 steps instead of 1500, so its numbers there are for illustration (chapter 00 lists what quick "
    "mode changes). Build without <code>--quick</code> for the outputs the prose describes.</div>")


def link_chapters(page: str, pages: dict[str, str]) -> str:
    """``page`` (HTML) with each reference such as "chapter 04" linked to that chapter's page
    (``pages``: number -> its href, `Chapter.link`); text inside links, code and scripts is left alone."""
    def link_numbers(match: re.Match) -> str:
        numbers = re.sub(r"\d\d", lambda number: (f'<a class="book-xref" href="{pages[number.group(0)]}">'
                                                  f"{number.group(0)}</a>" if number.group(0) in pages
                                                  else number.group(0)), match.group(2))
        return match.group(1) + numbers

    return outside_tags(page, lambda text: CHAPTER_REFERENCE.sub(link_numbers, text),
                        skip=("a", "code", "pre", "script", "style"))


def cells_html(notebook_json: str, chapter: Chapter, pages: dict[str, str], labels: Labels | None = None) -> str:
    """The chapter's cells as HTML (code, its outputs, markdown), images embedded and figures numbered
    (figures.py), references linked (references.py; ``labels``: the book's numbered things); no page
    around them."""
    import nbformat
    from nbconvert import HTMLExporter
    from traitlets.config import Config

    labels = labels if labels is not None else find_labels([chapter])
    config = Config({"NbConvertBase": {"display_data_priority": DISPLAY_PRIORITY}})
    exporter = HTMLExporter(config=config, extra_template_basedirs=[str(TEMPLATE_DIR.parent)],
                            template_name=TEMPLATE_DIR.name, embed_images=True,
                            exclude_input_prompt=True, exclude_output_prompt=True)
    others = {number: page for number, page in pages.items() if number != chapter.number}  # no link to itself
    exporter.register_filter("link_references", lambda text: link_chapters(
        link_references(text, chapter.number, labels, others), others))
    resources = {"metadata": {"path": str(chapter.path.parent), "name": chapter.path.stem}}
    notebook = nbformat.reads(notebook_json, as_version=4)
    prepare_notebook(notebook, chapter.number)
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            cell.source = mark_places(cell.source)  # filled in at the end of the build (measurements.py)
    body, _ = exporter.from_notebook_node(notebook, resources=resources)
    body = add_anchors(body, chapter.number, labels)
    body = NOTEBOOK_LINK.sub(lambda link: f'href="{pages[link.group(1)]}{link.group(2) or ""}"' if link.group(1) in
                             pages else link.group(0), body)  # a link to a chapter's notebook goes to its page
    body = CODE_BLOCK.sub(lambda match: match.group(1) + code_lines(match.group(2)) + match.group(3), body)
    return embed_local_images(body, chapter.path.parent)  # images the exporter's embed_images missed


def code_lines(code: str) -> str:
    """Highlighted code (the HTML inside a <pre>) with each line in its own <span class="book-line">, so that
    the printed page can mark where a long line wraps (book.css: only a line longer than LONG_CODE_LINE, class
    book-long, carries the mark, which costs the PDF a drawing per line). A highlighted span that runs over
    several lines (a docstring) is closed at each line's end and opened again on the next."""
    lines, line, open_tags = [], "", []
    for piece in re.split(r"(<[^>]+>)", code):
        if piece.startswith("</"):
            if open_tags:
                open_tags.pop()
            line += piece
        elif piece.startswith("<"):
            open_tags.append(piece)
            line += piece
        else:
            *ended, line_rest = piece.split("\n")
            for text in ended:
                lines.append(line + text + "</span>" * len(open_tags))
                line = "".join(open_tags)
            line += line_rest
    lines.append(line)
    if lines and re.fullmatch(r"(?:<[^>]+>)*", lines[-1]):  # the newline ending the last line
        lines[-2:] = ["".join(lines[-2:])] if len(lines) > 1 else lines[-1:]
    def long(text: str) -> bool:
        return len(html.unescape(re.sub(r"<[^>]+>", "", text))) > LONG_CODE_LINE

    return "".join(f'<span class="book-line{" book-long" if long(text) else ""}">{text}</span>' for text in lines)


def embed_local_images(page: str, base: Path) -> str:
    """Replace src="relative/path" of local images by data URIs read from ``base``."""
    def embed(match: re.Match) -> str:
        source = match.group(2)
        if source.startswith(("http://", "https://", "data:", "//")) or not (base / source).is_file():
            return match.group(0)
        mime = mimetypes.guess_type(source)[0] or "application/octet-stream"
        data = base64.b64encode((base / source).read_bytes()).decode("ascii")
        return f"{match.group(1)}data:{mime};base64,{data}{match.group(3)}"

    return re.sub(r'(<img[^>]*?src=")([^"]+)(")', embed, page)


def sections(cells: str) -> list[tuple[str, str]]:
    """The page's own sections: (anchor, heading HTML) of each '## ' heading, in order."""
    return [(anchor, re.sub(r"</?a\b[^>]*>", "", heading).strip())  # a link in a heading would nest links
            for anchor, heading in SECTION_HEADING.findall(cells)]


def sidebar(chapters: list[Chapter], built: set[str], current: Chapter | None = None,
            current_sections: list[tuple[str, str]] = ()) -> str:
    """The contents: every chapter in order (linked if built), the current one marked with its sections."""
    items = []
    for chapter in chapters:
        label = f'<span class="book-number">{chapter.number}</span> {html.escape(chapter.short_title)}'
        if chapter.path.name not in built:
            items.append(f'<li class="book-not-built">{label} <em>(not built)</em></li>')
        elif chapter == current:
            links = "".join(f'<li><a href="#{anchor}">{heading}</a></li>' for anchor, heading in current_sections)
            items.append(f'<li class="book-current"><a href="{chapter.link}" aria-current="page">{label}</a>'
                         f'<ol class="book-sections">{links}</ol></li>')
        else:
            items.append(f'<li><a href="{chapter.link}">{label}</a></li>')
    home = ' aria-current="page"' if current is None else ""
    return (f'<nav class="book-sidebar" id="book-sidebar" aria-label="Contents">'
            f'<a class="book-home" href="index.html"{home}>{BOOK_TITLE}</a>'
            f'<ol class="book-toc">{"".join(items)}</ol></nav>')


def previous_next(previous: Chapter | None, following: Chapter | None) -> str:
    """The links to the previous and the next built page (the index comes before the first chapter)."""
    def link(chapter: Chapter | None, rel: str, arrow: str) -> str:
        if chapter is None and rel == "prev":
            return f'<a class="book-prev" rel="prev" href="index.html">{arrow} Contents</a>'
        if chapter is None:
            return "<span></span>"
        title = html.escape(chapter.title)
        text = f"{arrow} {title}" if rel == "prev" else f"{title} {arrow}"
        return f'<a class="book-{rel}" rel="{rel}" href="{chapter.link}">{text}</a>'

    return f'<nav class="book-prevnext">{link(previous, "prev", "&larr;")}{link(following, "next", "&rarr;")}</nav>'


def layout(*, title: str, body: str, sidebar_html: str, quick: bool, notebook: str = "") -> str:
    """A whole page: head (tab title, the shared stylesheet and scripts), top bar, sidebar, banner, body."""
    download = (f'<a class="book-download" href="{notebook}" download>Download the notebook</a>'
                if notebook else "")
    tab = html.escape(title if title == BOOK_TITLE else f"{title} · {BOOK_TITLE}")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{tab}</title>
<link rel="stylesheet" href="_static/book.css">
<script src="_static/book.js"></script>
<script src="_static/mathjax/MathJax.js?config={MATHJAX_CONFIG}" defer></script>
</head>
<body>
<header class="book-topbar">
<button class="book-menu" type="button" aria-controls="book-sidebar" aria-expanded="false">&#9776; Contents</button>
<a class="book-name" href="index.html">{BOOK_TITLE}</a>
<div class="book-search" role="search">
<input type="search" class="book-search-input" placeholder="Search the book" aria-label="Search the book"
 autocomplete="off" data-index="_static/{SEARCH_INDEX}">
<ol class="book-search-results" hidden></ol>
</div>
{download}
</header>
<div class="book-columns">
{sidebar_html}
<main class="book-main">
{QUICK_BANNER if quick else ""}
{body}
</main>
</div>
</body>
</html>
"""


def chapter_page(cells: str, chapters: list[Chapter], built: set[str], chapter: Chapter, quick: bool,
                 failure: str = "") -> str:
    """A chapter's page: its cells in the book's layout, previous and next among the built chapters."""
    reachable = [other for other in chapters if other.path.name in built]
    position = reachable.index(chapter)
    previous = reachable[position - 1] if position > 0 else None
    following = reachable[position + 1] if position + 1 < len(reachable) else None
    banner = ""
    if failure:
        banner = (f'<div class="book-banner book-failure" role="alert">This chapter did not build: '
                  f"{html.escape(failure)}. The outputs below stop there.</div>")
    body = f"{banner}\n{cells}\n{previous_next(previous, following)}"
    return layout(title=chapter.title, body=body, quick=quick, notebook=chapter.notebook_link,
                  sidebar_html=sidebar(chapters, built, chapter, sections(cells)))


def readme_opening(readme: Path) -> str:
    """The README's paragraphs before its first '## ' section, as HTML, images embedded."""
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    if not readme.is_file():
        return ""
    opening = readme.read_text(encoding="utf-8").split("\n## ", 1)[0]
    return embed_local_images(markdown2html_mistune(opening), readme.parent)


def index_page(chapters: list[Chapter], built: set[str], failed: set[str], opening: str, quick: bool,
               pdf: bool = False) -> str:
    """index.html: the README's opening, then every chapter in order (linked where built) with its notebook,
    and the printed edition (print.html, and its PDF if ``pdf``)."""
    rows = []
    for chapter in chapters:
        title = html.escape(chapter.short_title)
        if chapter.path.name not in built:
            rows.append(f"<tr><td>{chapter.number}</td><td>{title} <em>(not built)</em></td><td></td></tr>")
            continue
        note = " <em>(did not build)</em>" if chapter.path.name in failed else ""
        rows.append(f'<tr><td>{chapter.number}</td><td><a href="{chapter.link}">{title}</a>{note}</td>'
                    f'<td><a href="{chapter.notebook_link}" download>notebook</a></td></tr>')
    first = next((chapter for chapter in chapters if chapter.path.name in built), None)
    start = f'<p class="book-start"><a href="{first.link}">Start reading: {html.escape(first.title)} &rarr;</a></p>' \
        if first else ""
    body = f"""<div class="book-index jp-RenderedHTMLCommon">
{opening}
<h2 id="chapters">Chapters</h2>
<table class="book-contents">
<thead><tr><th>#</th><th>Chapter</th><th>Executed notebook</th></tr></thead>
<tbody>
{chr(10).join(rows)}
</tbody>
</table>
{start}
<p class="book-printed-links">The printed edition: <a href="print.html">every chapter on one page</a>, after a
contents page{f', and <a href="{PDF_NAME}">as one PDF</a>' if pdf else ''}.</p>
<p class="book-colophon">Each chapter was run top to bottom from a fresh kernel to make these pages
{"in quick mode " if quick else ""}(<code>python -m minitorch book{" --quick" if quick else ""}</code>).
The folder works offline: figures are embedded in the pages, and math is typeset by MathJax from
<code>_static/</code>.</p>
</div>"""
    return layout(title=BOOK_TITLE, body=body, quick=quick, sidebar_html=sidebar(chapters, built))
