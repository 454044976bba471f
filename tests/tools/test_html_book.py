"""The executed HTML book: pages for every chapter, with outputs, working links and no errors.

The slow tests build the real chapters once per session in quick mode (MINITORCH_QUICK=1);
the fast ones build synthetic two-cell notebooks.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import pytest

from minitorch.tools.html_book import ROOT, BookError, build_book, find_chapters, navigation

nbformat = pytest.importorskip("nbformat")
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))


def _notebook(path: Path, title: str, code: str) -> Path:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_markdown_cell(f"# {title}\n\nSome $x^2$ math."),
                      nbformat.v4.new_code_cell(code)]
    nbformat.write(notebook, path)
    return path


def _local_links(page: str) -> list[str]:
    links = re.findall(r'(?:href|src)="([^"#]+)', page)
    return [unquote(link) for link in links
            if not link.startswith(("http://", "https://", "data:", "//", "mailto:", "javascript:"))]


def _check_pages(out: Path, names: list[str]) -> None:
    for name in names:
        page_path = out / (Path(name).stem + ".html")
        assert page_path.is_file(), f"{page_path.name} was not written"
        page = page_path.read_text(encoding="utf-8")
        assert "jp-OutputArea-output" in page, f"{page_path.name} shows no output at all"
        assert 'data-mime-type="application/vnd.jupyter.error"' not in page, f"{page_path.name} has an error output"
        for link in _local_links(page):
            assert (out / link).exists(), f"{page_path.name} links to {link}, which is not in the book folder"


def _quiet(line: str) -> None:
    pass


# --- fast: a synthetic book ---------------------------------------------------------------------

@pytest.fixture
def tiny_book(tmp_path):
    chapters = tmp_path / "chapters"
    chapters.mkdir()
    _notebook(chapters / "01_first.ipynb", "One", "print('hello from one')")
    _notebook(chapters / "02_second.ipynb", "Two", "print('hello from two')")
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "dot.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    notebook = nbformat.read(chapters / "01_first.ipynb", as_version=4)
    notebook.cells[0].source += "\n\n![a figure, with Theorem 1's region](../figures/dot.png)"
    nbformat.write(notebook, chapters / "01_first.ipynb")
    return chapters


def test_navigation_links_previous_contents_next_and_the_notebook(tiny_book):
    chapters = find_chapters(tiny_book)
    first, second = navigation(chapters, 0), navigation(chapters, 1)
    assert 'href="02_second.html"' in first and 'href="01_first.html"' not in first, first
    assert 'href="01_first.html"' in second and 'href="index.html"' in second, second
    assert 'href="notebooks/02_second.ipynb"' in second, "a page must link to its own notebook"


def test_only_with_an_unknown_chapter_names_the_valid_ones(tiny_book):
    with pytest.raises(BookError, match="unknown chapter.*07.*valid: 01, 02"):
        find_chapters(tiny_book, ["07"])


def test_tiny_book_has_pages_index_in_order_and_resolving_links(tiny_book, tmp_path):
    out = tmp_path / "book"
    failures = build_book(out, chapters_dir=tiny_book, readme=tmp_path / "none.md", report=_quiet)
    assert failures == []
    _check_pages(out, ["01_first.ipynb", "02_second.ipynb"])
    index = (out / "index.html").read_text(encoding="utf-8")
    assert index.index("01_first.html") < index.index("02_second.html"), "the index lists chapters out of order"
    assert "hello from two" in (out / "02_second.html").read_text(encoding="utf-8")
    first = (out / "01_first.html").read_text(encoding="utf-8")
    assert "../figures/dot.png" not in first and "data:image/png;base64," in first, \
        "a figure that markdown links as ../figures/x.png must be embedded in the page"
    assert not list(out.rglob("*.tmp")), "a temporary file was left behind"


def test_a_raising_cell_fails_the_build_naming_chapter_cell_and_error(tiny_book, tmp_path):
    _notebook(tiny_book / "01_first.ipynb", "One", "raise ValueError('broken on purpose')")
    _notebook(tiny_book / "03_third.ipynb", "Three", "1 / 0")
    out = tmp_path / "book"
    run = subprocess.run([sys.executable, "-m", "minitorch", "book", "--chapters", str(tiny_book),
                          "--out", str(out), "--jobs", "1"], capture_output=True, text=True, cwd=ROOT)
    assert run.returncode != 0, "a raising cell must fail the build"
    assert "01_first.ipynb: cell 2 raised ValueError: broken on purpose" in run.stderr, run.stderr
    assert "03_third" not in run.stderr, "without --keep-going the build stops at the first failure"
    assert "WARNING" not in run.stderr and "Traceback" not in run.stderr, (
        f"the build's errors should be its own lines, not the kernels' logs or a traceback:\n{run.stderr}")
    assert (out / "01_first.html").is_file() and (out / "index.html").is_file()

    _notebook(tiny_book / "04_fourth.ipynb", "Four", "import os\nos._exit(3)")

    run = subprocess.run([sys.executable, "-m", "minitorch", "book", "--chapters", str(tiny_book),
                          "--out", str(out), "--jobs", "2", "--keep-going"], capture_output=True, text=True,
                         cwd=ROOT)
    assert run.returncode != 0
    assert "3 chapter(s) failed" in run.stderr, run.stderr
    assert "01_first.ipynb: cell 2 raised ValueError" in run.stderr
    assert "03_third.ipynb: cell 2 raised ZeroDivisionError" in run.stderr
    assert "04_fourth.ipynb: cell 2 raised DeadKernelError: the kernel died" in run.stderr, run.stderr
    _check_pages(out, ["02_second.ipynb"])  # the good chapter still built, between the failures


def test_jobs_must_be_positive():
    run = subprocess.run([sys.executable, "-m", "minitorch", "book", "--jobs", "0"], capture_output=True,
                         text=True, cwd=ROOT)
    assert run.returncode == 2 and "--jobs must be >= 1" in run.stderr, run.stderr


# --- slow: the real book in quick mode ----------------------------------------------------------

@pytest.fixture(scope="module")
def quick_book(tmp_path_factory):
    out = tmp_path_factory.mktemp("book")
    failures = build_book(out, quick=True, jobs=2, keep_going=True, report=_quiet)
    return out, failures


@pytest.mark.slow
def test_every_chapter_builds_in_quick_mode(quick_book):
    _, failures = quick_book
    assert not failures, "chapters failed in the book build:\n" + "\n".join(run.failure for run in failures)


@pytest.mark.slow
def test_every_built_chapter_page_has_outputs_no_errors_and_resolving_links(quick_book):
    out, failures = quick_book
    failed = {run.chapter.path.name for run in failures}
    _check_pages(out, [chapter.name for chapter in CHAPTERS if chapter.name not in failed])


@pytest.mark.slow
def test_index_lists_every_chapter_in_order(quick_book):
    quick_book, _ = quick_book
    index = (quick_book / "index.html").read_text(encoding="utf-8")
    positions = [index.find(f'href="{chapter.stem}.html"') for chapter in CHAPTERS]
    assert -1 not in positions, f"index.html misses chapters: {[c.name for c, p in zip(CHAPTERS, positions) if p < 0]}"
    assert positions == sorted(positions), "index.html lists the chapters out of order"
    for link in _local_links(index):
        assert (quick_book / link).exists(), f"index.html links to {link}, which is not in the book folder"


def _browser() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.slow
def test_pages_load_in_a_browser_without_javascript_errors_or_missing_files(quick_book, tmp_path):
    browser = _browser()
    if browser is None:
        pytest.skip("no chromium installed (apt-get install -y chromium); the browser check needs one")
    quick_book, _ = quick_book
    for page in ["index.html"] + [chapter.stem + ".html" for chapter in CHAPTERS]:
        run = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                              "--disable-background-networking", "--disable-component-update", "--disable-sync",
                              f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0",
                              "--dump-dom", (quick_book / page).as_uri()],
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, f"chromium could not load {page}:\n{run.stderr[-2000:]}"
        assert "</html>" in run.stdout or "</body>" in run.stdout, f"chromium rendered nothing for {page}"
        console = [line for line in run.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
        errors = [line for line in console if "Uncaught" in line or "ERR_FILE_NOT_FOUND" in line]
        assert not errors, f"{page} has JavaScript errors or missing files in the browser:\n" + "\n".join(errors)
