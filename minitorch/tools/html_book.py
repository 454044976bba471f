"""The executed HTML book: run every chapter from a fresh kernel and write static pages.

    python -m minitorch book [--out book] [--quick] [--only 03,07] [--jobs 2] [--keep-going]

Each chapter runs with nbclient in its own kernel (working directory chapters/, MPLBACKEND=Agg,
MINITORCH_QUICK=1 with --quick); nbconvert's HTMLExporter turns it into a page, with a small template
of ours (book_template/) for the previous/contents/next links. Figures are embedded as data URIs so
the folder works offline; math is typeset by MathJax from the web when there is a network and stays
readable $...$ source when there is not. This module only runs notebooks: it imports nothing from
minitorch's paper code.
"""

from __future__ import annotations

import base64
import html
import mimetypes
import os
import re
import signal
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE_DIR = Path(__file__).resolve().parent / "book_template"
CELL_TIMEOUT = 1800  # seconds one cell may run before the build gives up on it
# A cell's error reaches the build through the notebook; the kernel's own log (a warning at every start,
# a traceback when Ctrl-C closes its sockets mid-reply) would only bury the progress lines.
KERNEL_ARGUMENTS = ["--IPKernelApp.log_level=CRITICAL"]
CHAPTER_NAME = re.compile(r"^(\d\d)_.+\.ipynb$")


@dataclass
class Chapter:
    """One chapter: its notebook and the names the book gives it."""

    path: Path

    @property
    def number(self) -> str:
        return self.path.name[:2]

    @property
    def page(self) -> str:
        return self.path.stem + ".html"

    @property
    def notebook_copy(self) -> str:
        return "notebooks/" + self.path.name


@dataclass
class Run:
    """What executing one chapter gave: the executed notebook (JSON text) and, if a cell raised, where."""

    chapter: Chapter
    notebook_json: str
    seconds: float
    failed_cell: int | None = None  # 1-based position among all the notebook's cells
    error: str = ""

    @property
    def failure(self) -> str:
        return f"{self.chapter.path.name}: cell {self.failed_cell} raised {self.error}"


class BookError(Exception):
    """A build that cannot start: no chapters, or chapters asked for that do not exist."""


def find_chapters(chapters_dir: Path, only: list[str] | None = None) -> list[Chapter]:
    """The chapters NN_title.ipynb in order; ``only`` keeps those numbered so (e.g. ["03", "07"])."""
    chapters = [Chapter(path) for path in sorted(Path(chapters_dir).glob("*.ipynb"))
                if CHAPTER_NAME.match(path.name)]
    if not chapters:
        raise BookError(f"no chapters NN_title.ipynb in {chapters_dir}")
    if only:
        valid = [chapter.number for chapter in chapters]
        wanted = [number.zfill(2) for number in only]
        unknown = [number for number in only if number.zfill(2) not in valid]
        if unknown:
            raise BookError(f"--only: unknown chapter(s) {', '.join(unknown)}; valid: {', '.join(valid)}")
        chapters = [chapter for chapter in chapters if chapter.number in wanted]
    return chapters


def chapter_title(notebook) -> str:
    """The first '# ' heading of the notebook's markdown, or '' if it has none."""
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return ""


# --- executing ---------------------------------------------------------------------------------

def _stop_on_sigterm(signum, frame):
    raise KeyboardInterrupt  # unwinds nbclient's context, which shuts the kernel down


def execute_chapter(path: Path, quick: bool) -> Run:
    """Run one chapter top to bottom in a fresh kernel; a raising cell stops it and is recorded."""
    import nbclient
    import nbformat

    os.environ["MPLBACKEND"] = "Agg"
    if quick:
        os.environ["MINITORCH_QUICK"] = "1"
    chapter = Chapter(Path(path))
    notebook = nbformat.read(chapter.path, as_version=4)
    client = nbclient.NotebookClient(notebook, timeout=CELL_TIMEOUT, kernel_name="python3",
                                     extra_arguments=KERNEL_ARGUMENTS,
                                     resources={"metadata": {"path": str(chapter.path.parent)}})
    start = time.perf_counter()
    previous_handler = signal.signal(signal.SIGTERM, _stop_on_sigterm)
    try:
        failed_cell, error = _execute_cells(client, notebook)
    finally:
        signal.signal(signal.SIGTERM, previous_handler)
    return Run(chapter, nbformat.writes(notebook), time.perf_counter() - start, failed_cell, error)


def _execute_cells(client, notebook) -> tuple[int | None, str]:
    """Run the cells in order; return the 1-based position of the one that raised and its error."""
    import nbclient

    with client.setup_kernel():
        for index, cell in enumerate(notebook.cells):
            try:
                client.execute_cell(cell, index)
            except nbclient.exceptions.CellExecutionError as raised:
                return index + 1, f"{raised.ename}: {raised.evalue}"
            except nbclient.exceptions.CellTimeoutError:
                return index + 1, f"timed out after {CELL_TIMEOUT} s"
            except nbclient.exceptions.DeadKernelError:
                return index + 1, "DeadKernelError: the kernel died (the cell crashed Python or ran out of memory)"
    return None, ""


def execute_all(chapters: list[Chapter], quick: bool, jobs: int, keep_going: bool, report=print):
    """Yield each chapter's Run as it finishes, ``jobs`` kernels at once; stop early on a failure
    unless ``keep_going`` (chapters already running still finish and are yielded)."""
    if jobs == 1:
        for chapter in chapters:
            run = execute_chapter(chapter.path, quick)
            report(_progress_line(run))
            yield run
            if run.failed_cell and not keep_going:
                return
        return
    executor = ProcessPoolExecutor(max_workers=jobs)
    try:
        futures = [executor.submit(execute_chapter, chapter.path, quick) for chapter in chapters]
        for future in as_completed(futures):
            run = future.result()
            report(_progress_line(run))
            yield run
            if run.failed_cell and not keep_going:
                for pending in futures:
                    pending.cancel()
    except BaseException:
        for process in list(getattr(executor, "_processes", {}).values()):
            process.terminate()  # each worker shuts its kernel down on SIGTERM
        executor.shutdown(wait=True, cancel_futures=True)
        raise
    executor.shutdown(wait=True, cancel_futures=True)


def _progress_line(run: Run) -> str:
    status = f"FAILED at cell {run.failed_cell}" if run.failed_cell else "ok"
    return f"  {run.chapter.path.stem:<40s} {run.seconds:7.1f} s  {status}"


# --- writing pages -----------------------------------------------------------------------------

def write_atomically(path: Path, data: str | bytes) -> None:
    """Write ``path`` aside, then os.replace it: an interrupted build never leaves half a page."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix="." + path.name, suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.chmod(temporary, 0o644)  # mkstemp makes files only their owner can read
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def navigation(chapters: list[Chapter], position: int) -> str:
    """The previous / contents / next links of the chapter at ``position``, plus its notebook."""
    def link(index: int, label: str) -> str:
        if 0 <= index < len(chapters):
            return f'<a href="{chapters[index].page}">{label}</a>'
        return f"<span>{label}</span>"

    notebook = chapters[position].notebook_copy
    return ('<nav class="book-nav">'
            f'{link(position - 1, "&larr; previous")}'
            '<a href="index.html">contents</a>'
            f'<a href="{notebook}">this chapter\'s notebook</a>'
            f'{link(position + 1, "next &rarr;")}'
            "</nav>")


def chapter_page(run: Run, chapters: list[Chapter], position: int) -> str:
    """The chapter's HTML page through nbconvert's HTMLExporter (figures embedded as data URIs)."""
    import nbformat
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(extra_template_basedirs=[str(TEMPLATE_DIR.parent)],
                            template_name=TEMPLATE_DIR.name, embed_images=True)
    banner = ""
    if run.failed_cell:
        banner = (f'<div class="book-failure">This chapter did not build: cell {run.failed_cell} raised '
                  f"{html.escape(run.error)}. The outputs below stop there.</div>")
    resources = {"metadata": {"path": str(run.chapter.path.parent), "name": run.chapter.path.stem},
                 "book": {"nav": navigation(chapters, position), "banner": banner}}
    body, _ = exporter.from_notebook_node(nbformat.reads(run.notebook_json, as_version=4), resources=resources)
    return embed_local_images(body, run.chapter.path.parent)  # images the exporter's embed_images missed


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


def readme_opening(readme: Path) -> str:
    """The README's paragraphs before '## Set-up', as HTML (nbconvert's mistune markdown), images embedded."""
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    if not readme.is_file():
        return ""
    text = readme.read_text(encoding="utf-8")
    opening = text.split("\n## ", 1)[0]
    return embed_local_images(markdown2html_mistune(opening), readme.parent)


def index_page(chapters: list[Chapter], titles: dict[str, str], built: set[str], failed: set[str],
               opening: str) -> str:
    """index.html: the README's opening and the table of chapters in order (linked where built)."""
    rows = []
    for chapter in chapters:
        title = html.escape(titles.get(chapter.path.name) or chapter.path.stem)
        if chapter.path.name not in built:
            rows.append(f"<tr><td>{chapter.number}</td><td>{title} <em>(not built)</em></td><td></td></tr>")
            continue
        note = " <em>(did not build)</em>" if chapter.path.name in failed else ""
        rows.append(f'<tr><td>{chapter.number}</td><td><a href="{chapter.page}">{title}</a>{note}</td>'
                    f'<td><a href="{chapter.notebook_copy}">notebook</a></td></tr>')
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Attention sinks, from scratch</title>
<style>
  body {{ font-family: sans-serif; max-width: 900px; margin: 2em auto; padding: 0 1em; line-height: 1.5; }}
  img {{ max-width: 100%; }}
  table {{ border-collapse: collapse; }} td {{ padding: 0.3em 0.8em; border-bottom: 1px solid #ddd; }}
</style></head>
<body>
{opening}
<h2>Chapters</h2>
<table class="book-contents">
{chr(10).join(rows)}
</table>
<p>Each chapter was run top to bottom from a fresh kernel to make these pages. Math is typeset by
MathJax when the page can reach the web; offline it shows as LaTeX source.</p>
</body></html>
"""


# --- the build ---------------------------------------------------------------------------------

def build_book(out: Path, *, chapters_dir: Path = ROOT / "chapters", readme: Path = ROOT / "README.md",
               quick: bool = False, only: list[str] | None = None, jobs: int = 1,
               keep_going: bool = False, report=None) -> list[Run]:
    """Execute the chapters and write the book into ``out``; return the failed runs (empty if none).

    Pages are written as chapters finish; a failure stops the build (after writing the pages that
    did build, including the failed chapter's, up to its error) unless ``keep_going``.
    """
    import nbformat

    report = report or (lambda line: print(line, flush=True))
    chapters = find_chapters(chapters_dir, only)
    out = Path(out)
    titles = {chapter.path.name: chapter_title(nbformat.read(chapter.path, as_version=4)) for chapter in chapters}
    position = {chapter.path.name: index for index, chapter in enumerate(chapters)}
    failures: list[Run] = []
    built: set[str] = set()
    report(f"Building {len(chapters)} chapter(s) into {out}/ ({'quick' if quick else 'default'} mode, "
           f"{jobs} at once)")
    start = time.perf_counter()
    for run in execute_all(chapters, quick, jobs, keep_going, report):
        write_atomically(out / run.chapter.page, chapter_page(run, chapters, position[run.chapter.path.name]))
        write_atomically(out / run.chapter.notebook_copy, run.notebook_json)
        built.add(run.chapter.path.name)
        if run.failed_cell:
            failures.append(run)
    failed = {run.chapter.path.name for run in failures}
    write_atomically(out / "index.html", index_page(chapters, titles, built, failed, readme_opening(Path(readme))))
    report(f"Wrote {out / 'index.html'} in {time.perf_counter() - start:.1f} s")
    return failures


def main(args) -> int:
    """The ``book`` subcommand (arguments already parsed and validated by minitorch.__main__)."""
    only = [number.strip() for number in args.only.split(",") if number.strip()]
    try:
        failures = build_book(Path(args.out), chapters_dir=Path(args.chapters), quick=args.quick,
                              only=only, jobs=args.jobs, keep_going=args.keep_going)
    except KeyboardInterrupt:
        print("Interrupted: kernels stopped; pages already written are complete.", file=sys.stderr)
        return 130
    if failures:
        print(f"{len(failures)} chapter(s) failed:", file=sys.stderr)
        for run in failures:
            print(f"  {run.failure}", file=sys.stderr)
        return 1
    print(f"Open {Path(args.out) / 'index.html'} in a browser.")
    return 0
