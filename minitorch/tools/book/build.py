"""The build: check where the book goes, run the chapters, write the pages beside the old book, then swap.

    python -m minitorch book [--out book] [--quick] [--only 03,07] [--jobs 2] [--keep-going] [--force]
                             [--no-pdf]

The output folder is checked before any work (minitorch.outputs): not a file, not the chapters or the
project's sources, writable, and, if it already holds files, an earlier book of this command and nothing the user
added to it (or --force: the book's marker lists the files it wrote, as reproduce's results.json does).
The book is written into a new folder beside it and replaces it whole only when every chapter ran: a
failure (without --keep-going) or Ctrl-C leaves the earlier book exactly as it was.

Every book has a search index (search.py) and print.html, all its chapters on one page after a contents
page; with ``pdf`` (the command's default, unless --no-pdf) headless Chromium prints that page to one PDF,
where Chromium is installed (printed.py; the build says why there is no PDF where it is not). The build's
measured time and the PDF's pages take the place of each build-measurements marker of the chapters
(measurements.py), and the build ends by printing the same sentence.
"""

from __future__ import annotations

import os
import sys
import time
from contextlib import closing
from pathlib import Path

from minitorch import checks
from minitorch.outputs import (OutputPathError, building_aside, check_output_folder, not_recorded, read_recorded_run,
                               recorded_run_text, some_of, written_files)
from minitorch.tools.book.assets import mathjax_folder, write_assets
from minitorch.tools.book.chapters import BookError, Chapter, find_chapters, not_chapters
from minitorch.tools.book.execute import CELL_TIMEOUT, Run, execute_all
from minitorch.tools.book.measurements import Measurements, fill_in
from minitorch.tools.book.pages import cells_html, chapter_page, index_page, readme_opening
from minitorch.tools.book.printed import PDF_NAME, check_pdf_package, write_printed_edition
from minitorch.tools.book.references import Labels, find_labels
from minitorch.tools.book.search import check_search_package, write_search_index
from minitorch.tools.exit_policy import ensure_open_files, stopped_by

ROOT = Path(__file__).resolve().parents[3]
MARKER = ".minitorch-book"  # in every book this command writes, listing its files: the next build may replace them


def check_book_folder(out, chapters_dir, force: bool = False) -> Path:
    """``out`` as the folder the book may replace whole, or OutputPathError (one line, naming --out). Without
    `force`, a folder that is not empty must hold an earlier book of this command and nothing else: its MARKER
    lists every file that build wrote, and a file or folder it does not list (the user's own notes) is named."""
    chapters_dir = Path(chapters_dir)
    target = check_output_folder(out, "--out", inputs=(chapters_dir, chapters_dir.parent / "figures"))
    if force or not target.is_dir() or not any(target.iterdir()):
        return target
    earlier = read_recorded_run(target / MARKER)
    if earlier is None:
        raise OutputPathError(f"--out {out}: holds files that are not a book built by this command (or a book too "
                              f"old to list its files), and the build replaces the whole folder; name a new folder, "
                              f"or add --force to replace it")
    foreign = [name for name in earlier.files if not _a_books_file(name) and os.path.lexists(target / name)]
    if foreign:  # a record edited by hand: the build would delete the user's file on its word
        raise OutputPathError(f"--out {out}: its record of the book ({MARKER}) lists {some_of(foreign, 1)}, which no "
                              f"build of the book writes (was the record edited?), and the build replaces the whole "
                              f"folder; move it elsewhere, or add --force to replace the folder with it")
    added = not_recorded(target, earlier)
    if added:
        raise OutputPathError(f"--out {out}: holds {some_of(added, 1)}, which the book built there did not write, and "
                              f"the build replaces the whole folder; move it elsewhere, or add --force to replace "
                              f"the folder with it")
    return target


def _a_books_file(name: str) -> bool:
    """Whether a build of the book may have written `name` (a path relative to its folder): its pages, assets,
    notebooks, printed edition and record."""
    return name in (MARKER, PDF_NAME) or name.startswith(("_static/", "notebooks/")) or (
        "/" not in name and name.endswith(".html"))


def build_book(out, *, chapters_dir=ROOT / "chapters", readme=ROOT / "README.md", quick: bool = False,
               only: list[str] | None = None, jobs: int = 1, keep_going: bool = False, force: bool = False,
               pdf: bool = False, report=None, cell_timeout: int = CELL_TIMEOUT) -> list[Run]:
    """Execute the chapters and write the book into ``out``; return the failed runs (empty if none).

    A failure stops the build and leaves ``out`` as it was, unless ``keep_going``: then every chapter
    runs and the book is written with the failed chapters' pages marked (outputs up to the error)."""
    report = report or (lambda line: print(line, flush=True))
    cell_timeout = checks.integer("build_book", "cell_timeout", cell_timeout, maximum=86400)  # the kernel's whole s
    target = check_book_folder(out, chapters_dir, force)
    ensure_open_files("building the book")  # a kernel that cannot open its sockets fails half-way
    mathjax_folder()  # a missing package is found before the chapters run, not after
    check_search_package()
    if pdf:
        check_pdf_package()
    chapters = find_chapters(chapters_dir)
    chosen = find_chapters(chapters_dir, only)
    built = {chapter.path.name for chapter in chosen}  # the book is kept only if all of them ran
    pages = {chapter.number: chapter.link for chapter in chapters if chapter.path.name in built}  # the hrefs
    jobs = min(jobs, len(chosen))  # --jobs 200 for one chapter starts one kernel, not 200 workers
    labels = find_labels(chapters)  # theorems, exercises, sections...: where each is stated
    report(f"Building {len(chosen)} chapter(s) into {target}/ ({'quick' if quick else 'full'} mode, {jobs} at once)")
    left_out = not_chapters(chapters_dir)
    if left_out:
        report(left_out)
    start = time.perf_counter()
    failures: list[Run] = []
    try:
        # (what the user puts into the earlier book while this one is built is not replaced either)
        with building_aside(target, earlier=None if force else read_recorded_run(target / MARKER)) as staging:
            write_assets(staging / "_static")
            runs = execute_all(chosen, quick, jobs, keep_going, report, cell_timeout)
            with closing(runs):  # closed: kernels stopped
                for run in runs:
                    write_chapter(staging, run, chapters, built, pages, labels, quick)
                    if run.failed:
                        failures.append(run)
            if failures and not keep_going:
                raise _Discard  # building_aside deletes the new book and leaves the earlier one
            failed = {run.chapter.path.name for run in failures}
            opening = readme_opening(Path(readme))
            printed = [chapter for chapter in chapters if chapter.path.name in built]
            write_search_index(staging, printed)
            measured = Measurements(chapters=len(chosen), quick=quick, jobs=jobs,
                                    html_seconds=time.perf_counter() - start)
            printed_pdf = write_printed_edition(staging, printed, quick, opening, report, measured, pdf=pdf)
            for chapter in printed:  # the measurements in place of their markers, as print.html has them
                page = staging / chapter.page
                page.write_text(fill_in(page.read_text(encoding="utf-8"), measured), encoding="utf-8")
            (staging / "index.html").write_text(index_page(chapters, built, failed, opening, quick,
                                                           pdf=printed_pdf is not None), encoding="utf-8")
            command = " ".join(["book"] + ["--quick"] * quick + (["--only", ",".join(only)] if only else []))
            (staging / MARKER).write_text(recorded_run_text(command, written_files(staging) + [MARKER]),
                                          encoding="utf-8")  # last: it lists every file of the book
    except _Discard:
        return failures
    report(f"Wrote {target / 'index.html'} in {time.perf_counter() - start:.1f} s")
    report(f"Measured: {measured.sentence()}")
    return failures



class _Discard(Exception):
    """Raised inside the build to throw the new book away."""


def write_chapter(book: Path, run: Run, chapters: list[Chapter], built: set[str], pages: dict[str, str],
                  labels: Labels, quick: bool) -> None:
    """The chapter's page and its executed notebook (notebooks/NN_title.ipynb, the page's download)."""
    cells = cells_html(run.notebook_json, run.chapter, pages, labels)
    failure = run.failure if run.failed else ""
    (book / run.chapter.page).write_text(chapter_page(cells, chapters, built, run.chapter, quick, failure),
                                         encoding="utf-8")
    (book / "notebooks").mkdir(exist_ok=True)
    (book / run.chapter.notebook_copy).write_text(run.notebook_json, encoding="utf-8")


def main(args) -> int:
    """The ``book`` subcommand (arguments parsed by minitorch.__main__); every refusal is one line."""
    only = None if args.only is None else [number.strip() for number in args.only.split(",")]
    chapters_dir = Path(args.chapters) if args.chapters else ROOT / "chapters"
    try:
        failures = build_book(args.out, chapters_dir=chapters_dir, quick=args.quick, only=only, jobs=args.jobs,
                              keep_going=args.keep_going, force=args.force, pdf=not args.no_pdf,
                              cell_timeout=getattr(args, "cell_timeout", CELL_TIMEOUT))
    except (OutputPathError, BookError) as error:
        print(f"python -m minitorch book: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"Interrupted by {stopped_by()}: kernels stopped; {args.out} is as it was.", file=sys.stderr)
        return 130
    if failures:
        kept = "" if args.keep_going else (f"; the book was not written ({args.out} is as it was; --keep-going "
                                            f"writes it with the failed chapters marked)")
        print(f"{len(failures)} chapter(s) failed{kept}:", file=sys.stderr)
        for run in failures:
            print(f"  {run.failure}", file=sys.stderr)
        return 1
    print(f"Open {Path(args.out) / 'index.html'} in a browser (no network needed).")
    if (Path(args.out) / PDF_NAME).is_file():
        print(f"The printed edition, every chapter in one PDF: {Path(args.out) / PDF_NAME}")
    return 0
