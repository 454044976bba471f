"""The executed HTML book: every output on its page, typeset math offline, the same layout on every page,
and an output folder that is checked first and replaced whole.

The slow tests build the real chapters once per module in quick mode (MINITORCH_QUICK=1); the fast ones
build synthetic notebooks of a cell or two.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import unquote

import pytest

from minitorch.tools.book.build import MARKER, ROOT, build_book
from minitorch.tools.book.chapters import BookError, find_chapters, not_chapters
from minitorch.tools.book.pages import QUICK_BANNER, link_chapters, sidebar

nbformat = pytest.importorskip("nbformat")
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
OBJECT_REPR = re.compile(r"&lt;[\w.]+ object(?: at 0x[0-9a-f]+)?&gt;|&lt;Figure size [^&]*&gt;|&lt;matplotlib\.")
OUTPUT_IMAGE = re.compile(r'<div class="jp-RenderedImage jp-OutputArea-output[^"]*">\s*<figure[^>]*>\s*<img ')


def _notebook(path: Path, title: str, *code: str) -> Path:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_markdown_cell(f"# {title}\n\nSome $x^2$ math.\n\n## A section\n\nText."),
                      *[nbformat.v4.new_code_cell(source) for source in code]]
    nbformat.write(notebook, path)
    return path


def _local_links(page: str) -> list[str]:
    links = re.findall(r'(?:href|src)="([^"#?]+)', page)
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


def _figures_drawn(notebook_path: Path) -> int:
    """How many figures the code cells draw, at least: each plt.show() and each display(Image(...)) in the
    source shows one (a function that shows, called twice, shows two: the count is a lower bound)."""
    notebook = nbformat.read(notebook_path, as_version=4)
    return sum(cell.source.count("plt.show()") + cell.source.count("display(Image(")
               for cell in notebook.cells if cell.cell_type == "code")


def _book(*arguments: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "minitorch", "book", *arguments], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout)


def _quiet(line: str) -> None:
    pass


# --- fast: pieces of a page ---------------------------------------------------------------------

def test_chapter_references_in_the_prose_link_to_their_pages_but_not_inside_code_or_links():
    pages = {"04": "04_task.html", "07": "07_sink.html", "08": "08_relu.html"}
    page = link_chapters('<p>As chapter 04 showed; Chapters 07 and 08 train; <code>chapter 04</code>, '
                         '<a href="x.html">chapter 07</a>, chapter 99.</p>', pages)
    assert 'chapter <a class="book-xref" href="04_task.html">04</a> showed' in page, page
    assert '<a class="book-xref" href="07_sink.html">07</a> and <a class="book-xref" href="08_relu.html">08</a>' \
        in page, "each number of 'Chapters 07 and 08' should link to its chapter"
    assert "<code>chapter 04</code>" in page, "a reference inside code must stay as it is"
    assert '<a href="x.html">chapter 07</a>' in page, "a reference that is already a link must not be linked again"
    assert "chapter 99" in page and "99.html" not in page, "a chapter that is not in the book is not linked"


# --- fast: a synthetic book ---------------------------------------------------------------------

@pytest.fixture
def tiny_book(tmp_path):
    chapters = tmp_path / "chapters"
    chapters.mkdir()
    _notebook(chapters / "01_first.ipynb", "Chapter 01 — One", "print('hello from one')")
    _notebook(chapters / "02_second.ipynb", "Chapter 02 — Two", "print('hello from two')")
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "dot.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    notebook = nbformat.read(chapters / "01_first.ipynb", as_version=4)
    notebook.cells[0].source += "\n\n![a figure](../figures/dot.png) See chapter 02."
    nbformat.write(notebook, chapters / "01_first.ipynb")
    return chapters


def test_the_sidebar_lists_every_chapter_and_marks_the_current_one_with_its_sections(tiny_book):
    first, second = find_chapters(tiny_book)
    html = sidebar([first, second], {first.path.name, second.path.name}, second, [("A-section", "A section")])
    assert 'href="01_first.html"' in html and 'href="02_second.html" aria-current="page"' in html, html
    assert '<a href="#A-section">A section</a>' in html, "the current chapter lists its own sections"
    assert html.count("book-current") == 1


def test_only_with_an_unknown_chapter_names_the_valid_ones(tiny_book):
    with pytest.raises(BookError, match="unknown chapter.*07.*valid: 01, 02"):
        find_chapters(tiny_book, ["07"])


def test_tiny_book_has_every_part_of_a_page(tiny_book, tmp_path):
    notebook = nbformat.read(tiny_book / "02_second.ipynb", as_version=4)
    notebook.cells += [nbformat.v4.new_code_cell("import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()"),
                       nbformat.v4.new_code_cell(
                           "from IPython.display import Image, display\n"
                           "gif = bytes.fromhex('474946383961010001000000002c00000000010001000002024401003b')\n"
                           "display(Image(data=gif, format='gif'))")]
    nbformat.write(notebook, tiny_book / "02_second.ipynb")
    out = tmp_path / "book"
    assert build_book(out, chapters_dir=tiny_book, readme=tmp_path / "none.md", jobs=2, report=_quiet) == []
    _check_pages(out, ["01_first.ipynb", "02_second.ipynb"])
    first = (out / "01_first.html").read_text(encoding="utf-8")
    second = (out / "02_second.html").read_text(encoding="utf-8")
    index = (out / "index.html").read_text(encoding="utf-8")
    assert "<title>Chapter 02 — Two · Attention sinks, from scratch</title>" in second, "the tab shows the title"
    assert re.search(r'<h1 id="[^"]+">Chapter 02 — Two<a class="anchor-link"', second), "the title heads the page"
    assert "hello from two" in second
    assert len(OUTPUT_IMAGE.findall(second)) == 2, "the figure of plt.show() and the GIF must both be on the page"
    assert "data:image/gif;base64," in second and not OBJECT_REPR.search(second), "the GIF must show, not its repr"
    assert "../figures/dot.png" not in first and "data:image/png;base64," in first, \
        "a figure that markdown links as ../figures/x.png must be embedded in the page"
    assert 'See chapter <a class="book-xref" href="02_second.html">02</a>' in first
    assert '<a class="book-next" rel="next" href="02_second.html">' in first
    assert '<a class="book-prev" rel="prev" href="01_first.html">' in second
    assert '<a class="book-download" href="notebooks/02_second.ipynb" download>' in second, \
        "the notebook link must download the file (the download attribute), not open its JSON"
    for page in (first, second, index):
        assert "<style" not in page and '<link rel="stylesheet" href="_static/book.css">' in page, \
            "pages share one stylesheet, _static/book.css, instead of inlining one each"
        assert '<script src="_static/book.js"></script>' in page
        assert not re.search(r'<(?:script|link)[^>]+(?:src|href)="(?:https?:)?//', page), \
            "a page loads a script or a stylesheet from the web; the book must work offline"
        assert QUICK_BANNER not in page, "a full build has no quick-build banner"
    assert index.index("01_first.html") < index.index("02_second.html"), "the index lists chapters out of order"
    assert (out / "_static" / "mathjax" / "MathJax.js").is_file(), "MathJax must be served from the book folder"
    assert (out / "notebooks" / "02_second.ipynb").is_file() and (out / MARKER).is_file()
    assert not [path for path in tmp_path.iterdir() if ".partial-" in path.name or ".old-" in path.name], \
        "the folder the book was built in was left behind"


def test_kernels_side_by_side_use_one_blas_thread_each(tiny_book, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    for name in ("01_first", "02_second"):
        _notebook(tiny_book / f"{name}.ipynb", name,
                  "import os\nprint('BLAS threads:', os.environ.get('OPENBLAS_NUM_THREADS'))")
    out = tmp_path / "book"
    assert build_book(out, chapters_dir=tiny_book, readme=tmp_path / "none.md", jobs=2, report=_quiet) == []
    for name in ("01_first", "02_second"):
        page = (out / f"{name}.html").read_text(encoding="utf-8")
        assert "BLAS threads: 1" in page, (
            f"{name}: a kernel of a --jobs 2 build should get OPENBLAS_NUM_THREADS=1 (two kernels each running a "
            f"BLAS thread per core fight over the cores: chapter 07 trained 11x slower)")


def test_a_quick_build_says_so_on_every_page(tiny_book, tmp_path):
    out = tmp_path / "book"
    build_book(out, chapters_dir=tiny_book, readme=tmp_path / "none.md", quick=True, report=_quiet)
    for page in ("index.html", "01_first.html", "02_second.html"):
        assert QUICK_BANNER in (out / page).read_text(encoding="utf-8"), f"{page} does not say it is a quick build"


@pytest.mark.slow  # a book build with a kernel (4-10 s): the tests of a failing or stopped build are slow ones
def test_a_kernels_tornado_log_stays_out_of_the_builds_lines(tmp_path):
    """ipykernel logs tornado's errors to the kernel's own stderr: a kernel stopped after a failed chapter could
    print 'ERROR:tornado.general:Uncaught exception in ZMQStream callback' under the build's one-line report."""
    chapters = tmp_path / "chapters"
    chapters.mkdir()
    _notebook(chapters / "01_first.ipynb", "Chapter 01 — One",
              "import logging\nlogging.getLogger('tornado.general').error('Uncaught exception in ZMQStream callback')")
    run = _book("--chapters", str(chapters), "--out", str(tmp_path / "book"), "--no-pdf")
    assert run.returncode == 0 and "tornado" not in run.stderr, run.stderr


@pytest.mark.slow
def test_a_raising_cell_fails_the_build_and_leaves_the_earlier_book(tiny_book, tmp_path):
    out = tmp_path / "book"
    build_book(out, chapters_dir=tiny_book, readme=tmp_path / "none.md", report=_quiet)
    earlier = (out / "01_first.html").read_text(encoding="utf-8")
    _notebook(tiny_book / "01_first.ipynb", "One", "raise ValueError('broken on purpose')")
    _notebook(tiny_book / "03_third.ipynb", "Three", "1 / 0")
    run = _book("--chapters", str(tiny_book), "--out", str(out), "--jobs", "1")
    assert run.returncode == 1, "a raising cell must fail the build"
    assert "01_first.ipynb: cell 2 raised ValueError: broken on purpose" in run.stderr, run.stderr
    assert "03_third" not in run.stderr, "without --keep-going the build stops at the first failure"
    assert "the book was not written" in run.stderr, run.stderr
    assert "WARNING" not in run.stderr and "Traceback" not in run.stderr, (
        f"the build's errors should be its own lines, not the kernels' logs or a traceback:\n{run.stderr}")
    assert (out / "01_first.html").read_text(encoding="utf-8") == earlier, "a failed build replaced the book"


@pytest.mark.slow
def test_keep_going_builds_the_other_chapters_and_marks_each_failed_one(tiny_book, tmp_path):
    out = tmp_path / "book"
    _notebook(tiny_book / "01_first.ipynb", "One", "raise ValueError('broken on purpose')")
    _notebook(tiny_book / "03_third.ipynb", "Three", "1 / 0")
    _notebook(tiny_book / "04_fourth.ipynb", "Four", "import os\nos._exit(3)")
    run = _book("--chapters", str(tiny_book), "--out", str(out), "--jobs", "2", "--keep-going")
    assert run.returncode == 1
    assert "3 chapter(s) failed:" in run.stderr, run.stderr
    assert "03_third.ipynb: cell 2 raised ZeroDivisionError" in run.stderr
    assert "04_fourth.ipynb: cell 2 raised DeadKernelError: the kernel died" in run.stderr, run.stderr
    _check_pages(out, ["02_second.ipynb"])  # the good chapter still built, between the failures
    assert "This chapter did not build: 01_first.ipynb: cell 2 raised ValueError" in \
        (out / "01_first.html").read_text(encoding="utf-8"), "--keep-going marks a failed chapter's page"


SLOW = pytest.mark.slow  # the other stops than one Ctrl-C of one kernel


@pytest.mark.parametrize("jobs,signum", [
    pytest.param("1", signal.SIGINT, id="1-INT"), pytest.param("2", signal.SIGINT, id="2-INT", marks=SLOW),
    pytest.param("2", signal.SIGQUIT, id="2-QUIT", marks=SLOW),
    pytest.param("1", signal.SIGUSR1, id="1-USR1", marks=SLOW)])
def test_ctrl_c_stops_the_build_and_leaves_the_earlier_book(tiny_book, tmp_path, jobs, signum):
    """Ctrl-C, and any other signal that would end the build (SIGQUIT too), leaves no .book.partial-*/ behind."""
    out = tmp_path / "book"
    build_book(out, chapters_dir=tiny_book, readme=tmp_path / "none.md", report=_quiet)
    earlier = sorted(path.relative_to(out) for path in out.rglob("*"))
    _notebook(tiny_book / "02_second.ipynb", "Two", "import time\ntime.sleep(600)")
    build = subprocess.Popen([sys.executable, "-m", "minitorch", "book", "--chapters", str(tiny_book), "--out",
                              str(out), "--jobs", jobs], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    assert "01_first" in build.stdout.readline() + build.stdout.readline(), "the build did not start"
    time.sleep(2)  # on a loaded machine this may land in chapter 01's page or chapter 02's kernel start
    build.send_signal(signum)
    try:
        _, stderr = build.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        build.kill()
        _, stderr = build.communicate()
        pytest.fail(f"the build (--jobs {jobs}) or a process holding its output was still running 120 s after "
                    f"Ctrl-C:\n{stderr}")
    # 130, or death by SIGINT: Python 3.11 run with -m exits so when the interrupt passed through exec()
    # (nbconvert's templates); a shell shows 130 for both.
    expected = (130, -signal.SIGINT) if signum == signal.SIGINT else (128 + signum,)
    assert build.returncode in expected, f"exit status {build.returncode}, expected {expected}:\n{stderr}"
    if signum != signal.SIGINT:
        assert f"Interrupted by {signal.Signals(signum).name}" in stderr, f"the stop must name its signal:\n{stderr}"
    assert "is as it was" in stderr and "Traceback" not in stderr and "Exception ignored" not in stderr, stderr
    assert sorted(path.relative_to(out) for path in out.rglob("*")) == earlier, "Ctrl-C changed the earlier book"
    assert [path.name for path in tmp_path.iterdir() if path.name.startswith(".book")] == [], \
        "Ctrl-C left the half-built book behind"


def test_a_lost_ctrl_c_still_stops_the_running_cell(tiny_book, tmp_path):
    """Python drops a KeyboardInterrupt raised inside a finalizer; the stop must not depend on it."""
    import threading

    from minitorch.tools.book.chapters import find_chapters as chapters_in
    from minitorch.tools.book.execute import Stop, execute_chapter

    started = tmp_path / "started"
    _notebook(tiny_book / "02_second.ipynb", "Two",
              f"import pathlib, time\npathlib.Path({str(started)!r}).touch()\ntime.sleep(600)")
    stop = Stop()
    kernel_group = []

    def ctrl_c_whose_interrupt_is_lost():
        while not started.exists():
            time.sleep(0.1)
        kernel_group.append(stop.client.km.provisioner.pgid)
        stop.request()  # what the Ctrl-C handler does before it raises

    threading.Thread(target=ctrl_c_whose_interrupt_is_lost, daemon=True).start()
    outcome = []

    def run_chapter():
        try:
            outcome.append(execute_chapter(chapters_in(tiny_book)[1], quick=True, stop=stop))
        except KeyboardInterrupt:
            outcome.append("interrupted")

    chapter = threading.Thread(target=run_chapter, daemon=True)
    chapter.start()
    chapter.join(timeout=300)
    assert not chapter.is_alive(), "the 600 s cell kept running after the stop: a lost Ctrl-C waits for the cell"
    assert outcome == ["interrupted"], f"a stopped chapter must raise KeyboardInterrupt, not return {outcome}"
    with pytest.raises(ProcessLookupError):
        os.killpg(kernel_group[0], 0)  # no process left in the kernel's group (a zombie would still count)


@pytest.mark.parametrize("case", ["a file", "the filesystem root", "empty", "the chapters' parent",
                                  "inside the chapters", "the project's chapters", "a folder of other files",
                                  "read-only"])
def test_an_output_folder_that_cannot_be_the_book_is_refused_before_any_work(tiny_book, tmp_path, case):
    if case == "read-only" and os.geteuid() == 0:
        pytest.skip("root may write in a read-only folder, so the case cannot arise")
    others = tmp_path / "others"
    others.mkdir()
    (others / "thesis.tex").write_text("mine")
    out = {"a file": str(others / "thesis.tex"), "the filesystem root": "/", "empty": "",
           "the chapters' parent": str(tiny_book.parent), "inside the chapters": str(tiny_book / "book"),
           "the project's chapters": str(ROOT / "chapters"), "a folder of other files": str(others),
           "read-only": str(others / "book")}[case]
    if case == "read-only":
        others.chmod(0o555)
    try:
        run = _book("--chapters", str(tiny_book), "--out", out, timeout=60)
    finally:
        others.chmod(0o755)
    assert run.returncode == 2, f"--out {out!r} ({case}) was not refused:\n{run.stdout}{run.stderr}"
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "--out" in lines[0], f"expected one line naming --out, got:\n{run.stderr}"
    assert "Building" not in run.stdout, "the output folder must be checked before any chapter runs"
    assert (others / "thesis.tex").read_text() == "mine" and (tiny_book / "01_first.ipynb").is_file()


def test_force_replaces_a_folder_of_other_files(tiny_book, tmp_path):
    others = tmp_path / "others"
    others.mkdir()
    (others / "old.txt").write_text("old")
    build_book(others, chapters_dir=tiny_book, readme=tmp_path / "none.md", force=True, report=_quiet)
    assert (others / "index.html").is_file() and not (others / "old.txt").exists(), "replaced whole, never merged"


@pytest.mark.slow  # two builds of a one-chapter book
def test_a_rebuild_over_a_book_holding_what_it_did_not_write_is_refused_naming_it_before_any_work(tmp_path, capsys):
    """The build replaces its folder whole: a file or folder the user added to an earlier book would go with it."""
    from minitorch.__main__ import main

    chapters = tmp_path / "chapters"
    chapters.mkdir()
    _notebook(chapters / "01_only.ipynb", "Chapter 01 — Only", "print('hello')")
    out = tmp_path / "book"
    rebuild = ["book", "--chapters", str(chapters), "--out", str(out), "--no-pdf"]
    build_book(out, chapters_dir=chapters, readme=tmp_path / "none.md", report=_quiet)
    built = sorted(path.relative_to(out) for path in out.rglob("*"))
    for added, options, named in [("notes.txt", [], "notes.txt"), ("mydir/essay.txt", [], "mydir/"),
                                  ("notes.txt", ["--keep-going"], "notes.txt"),
                                  ("_static/mine.css", [], "_static/mine.css")]:
        (out / added).parent.mkdir(exist_ok=True)
        (out / added).write_text("mine")
        status, printed = main(rebuild + options), capsys.readouterr()
        assert status == 2 and f"holds {named}, which the book built there did not write" in printed.err \
            and "--force" in printed.err, f"{added} added to the book; rebuild {options}:\n{printed.err}"
        assert "Building" not in printed.out, "the folder must be checked before any chapter runs"
        assert (out / added).read_text() == "mine", f"the rebuild deleted {added}, which the user put in the book"
        (out / added).unlink()
        if added.startswith("mydir"):
            (out / "mydir").rmdir()
    assert sorted(path.relative_to(out) for path in out.rglob("*")) == built
    status, printed = main(rebuild), capsys.readouterr()
    assert status == 0, f"a book as it was built is rebuilt without --force (it lists every file):\n{printed.err}"


def test_jobs_must_be_a_positive_whole_number():
    for jobs in ("0", "1.5", "two"):
        run = _book("--jobs", jobs, timeout=60)
        assert run.returncode == 2 and "argument --jobs: must be a whole number >= 1" in run.stderr, run.stderr


# --- slow: the real book in quick mode ----------------------------------------------------------

@pytest.mark.slow
def test_every_chapter_builds_in_quick_mode(quick_book):
    _, failures = quick_book
    assert not failures, "chapters failed in the book build:\n" + "\n".join(run.failure for run in failures)


@pytest.mark.slow
@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda path: path.stem[:2])
def test_every_figure_a_chapter_draws_is_on_its_page_and_no_output_is_an_object_repr(quick_book, chapter):
    out, _ = quick_book
    page = (out / (chapter.stem + ".html")).read_text(encoding="utf-8")
    drawn, shown = _figures_drawn(chapter), len(OUTPUT_IMAGE.findall(page))
    assert shown >= drawn, (f"{chapter.stem}: its code cells draw at least {drawn} figure(s) (plt.show(), "
                            f"display(Image(...))) but its page shows {shown}")
    reprs = OBJECT_REPR.findall(page)
    assert not reprs, f"{chapter.stem} shows outputs as object reprs instead of themselves: {reprs[:3]}"
    assert QUICK_BANNER in page, f"{chapter.stem}: a quick build must say so on the page"


@pytest.mark.slow
def test_every_built_chapter_page_has_outputs_no_errors_and_resolving_links(quick_book):
    out, failures = quick_book
    failed = {run.chapter.path.name for run in failures}
    _check_pages(out, [chapter.name for chapter in CHAPTERS if chapter.name not in failed])


@pytest.mark.slow
def test_index_lists_every_chapter_in_order(quick_book):
    out, _ = quick_book
    index = (out / "index.html").read_text(encoding="utf-8")
    table = index[index.index('<table class="book-contents">'):]
    positions = [table.find(f'href="{chapter.stem}.html"') for chapter in CHAPTERS]
    assert -1 not in positions, f"index.html misses chapters: {[c.name for c, p in zip(CHAPTERS, positions) if p < 0]}"
    assert positions == sorted(positions), "index.html lists the chapters out of order"
    for link in _local_links(index):
        assert (out / link).exists(), f"index.html links to {link}, which is not in the book folder"


# --- slow: the pages in a browser, with no network ----------------------------------------------

def _browser() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def _open_offline(page: Path, profile: Path) -> subprocess.CompletedProcess:
    """Headless Chromium's DOM of ``page`` after its scripts ran, with every host name unresolvable
    (no network: anything the page fetched from the web would fail)."""
    browser = _browser()
    if browser is None:
        pytest.skip("no Chromium installed (apt-get install -y chromium): the browser checks need one")
    return subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           "--disable-background-networking", "--disable-component-update", "--disable-sync",
                           f"--user-data-dir={profile}", "--host-resolver-rules=MAP * ~NOTFOUND",
                           "--enable-logging=stderr", "--v=0", "--virtual-time-budget=30000", "--dump-dom",
                           page.as_uri()], capture_output=True, text=True, timeout=180)


@pytest.mark.slow
def test_chapter_05s_math_is_typeset_offline(quick_book, tmp_path):
    out, _ = quick_book
    page = next(out.glob("05_*.html"))
    run = _open_offline(page, tmp_path / "profile")
    assert run.returncode == 0, f"chromium could not load {page.name}:\n{run.stderr[-2000:]}"
    dom = run.stdout
    typeset = dom.count('class="MathJax"') + dom.count('class="MathJax_Display"')
    assert typeset > 100, f"{page.name}: only {typeset} typeset math elements; MathJax did not run offline"
    failed = dom.count('class="MathJax_Error"') + dom.count('class="noError"')
    assert not failed, f"{page.name}: {failed} math expression(s) failed to typeset"
    visible = re.sub(r"<(script|style)\b.*?</\1>", "", dom, flags=re.S)
    visible = re.sub(r"<[^>]+>", "", visible)
    assert "$$" not in visible, f"{page.name}: raw $$ left in the visible text: math was not typeset"


@pytest.mark.slow
def test_pages_load_in_a_browser_without_javascript_errors_or_missing_files(quick_book, tmp_path):
    out, _ = quick_book
    for page in ["index.html"] + [chapter.stem + ".html" for chapter in CHAPTERS]:
        run = _open_offline(out / page, tmp_path / "profile")
        assert run.returncode == 0, f"chromium could not load {page}:\n{run.stderr[-2000:]}"
        assert "</html>" in run.stdout or "</body>" in run.stdout, f"chromium rendered nothing for {page}"
        console = [line for line in run.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
        errors = [line for line in console if "Uncaught" in line or "ERR_" in line or "error" in line.lower()]
        assert not errors, f"{page} has JavaScript errors or missing files in the browser:\n" + "\n".join(errors)


def _is_running(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie has ended: only its exit status waits to be collected)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="finds the kernel's processes in /proc")
def test_what_a_cell_starts_in_a_session_of_its_own_ends_with_the_build(tiny_book, tmp_path):
    """A cell's subprocess.Popen(['sleep', '300'], start_new_session=True) was still running after the build: out
    of the kernel's process group, which is all a stop killed, and the build's end killed nothing."""
    spawned = tmp_path / "spawned.pid"
    _notebook(tiny_book / "03_third.ipynb", "Chapter 03 — Three",
              f"import pathlib, subprocess\nchild = subprocess.Popen(['sleep', '300'], start_new_session=True, "
              f"stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
              f"pathlib.Path({str(spawned)!r}).write_text(str(child.pid))")
    completed = _book("--no-pdf", "--quick", "--chapters", str(tiny_book), "--out", str(tmp_path / "book"))
    assert completed.returncode == 0, completed.stderr
    pid = int(spawned.read_text())
    running = _is_running(pid)
    if running:
        os.kill(pid, signal.SIGKILL)
    assert not running, "the process a cell started in a new session outlived the build"


def test_a_kernel_that_does_not_start_is_one_line_not_a_traceback(tiny_book, tmp_path, monkeypatch):
    from minitorch.tools.book.chapters import find_chapters as chapters_in
    from minitorch.tools.book.execute import KERNEL_START_ATTEMPTS, execute_chapter

    dying = tmp_path / "dying"
    dying.mkdir()
    (dying / "sitecustomize.py").write_text("import os\nos._exit(7)\n")  # every new Python, the kernel too, dies
    monkeypatch.setenv("PYTHONPATH", str(dying))
    run = execute_chapter(chapters_in(tiny_book)[0], quick=True)
    assert run.failed and run.failed_cell is None, "a kernel that never started must fail the chapter, at no cell"
    assert f"01_first.ipynb: the kernel did not start ({KERNEL_START_ATTEMPTS} tries): " in run.failure, run.failure
    assert "\n" not in run.failure, f"the reason must be one line:\n{run.failure}"


# --- fast: the page as a reader sees it (figures.py, references.py, search.py, printed.py) ----------------

def _executed(*cells) -> "nbformat.NotebookNode":
    notebook = nbformat.v4.new_notebook()
    notebook.cells = list(cells)
    return notebook


def test_github_only_cells_are_left_out_and_each_figure_gets_its_number_caption_and_description():
    from minitorch.tools.book.figures import prepare_notebook

    image = nbformat.v4.new_output("display_data", data={"image/png": "iVBORw0KGgo="})
    drawn = nbformat.v4.new_code_cell("plt.show(); plt.show()", outputs=[image, image])
    drawn.metadata["figures"] = [{"caption": "The first.", "alt": "A line."}, {"caption": "The second."}]
    note = nbformat.v4.new_markdown_cell("*On GitHub: the figure below.*\n\n![old](../figures/x.png)")
    note.metadata["tags"] = ["github-only"]
    notebook = _executed(nbformat.v4.new_markdown_cell("# Chapter 07"), note, drawn)
    figures = prepare_notebook(notebook, "07")
    assert [cell.cell_type for cell in notebook.cells] == ["markdown", "code"], \
        "a cell tagged github-only shows a static copy of the live figure: the page must leave it out"
    assert [figure["number"] for figure in figures] == ["7.1", "7.2"], "figures are numbered chapter.figure"
    assert figures[0]["alt"] == "A line." and figures[1]["alt"] == "The second.", \
        "every image needs alt text: its description, or else its caption"


def _film(frames: int) -> bytes:
    """An animated GIF of ``frames`` frames, frame k a grey of k / frames."""
    import io

    from PIL import Image

    pictures = [Image.new("L", (20, 10), round(255 * k / frames)) for k in range(frames)]
    film = io.BytesIO()
    pictures[0].save(film, format="GIF", save_all=True, append_images=pictures[1:], duration=100)
    return film.getvalue()


def test_an_animation_prints_a_strip_of_its_frames_and_screen_words_stay_on_screen():
    import base64
    import io

    from PIL import Image

    from minitorch.tools.book.figures import PRINTED_FRAMES, prepare_notebook, printed_frames, printed_stills

    film = nbformat.v4.new_output("display_data", data={"image/gif": base64.b64encode(_film(9)).decode()})
    drawn = nbformat.v4.new_code_cell("display(Image(gif))", outputs=[film])
    drawn.metadata["figures"] = [{"caption": "The film of training (click to enlarge).", "alt": "Maps."}]
    figure, = prepare_notebook(_executed(drawn), "07")
    assert figure["caption"] == "The film of training." and figure["screen_note"] == "(click to enlarge)", \
        "'click to enlarge' means nothing on paper: it is kept apart, for the screen only"
    strip = Image.open(io.BytesIO(base64.b64decode(figure["printed_still"])))
    assert strip.size == (20 * PRINTED_FRAMES, 10), "paper shows frames of the film side by side, not its first"
    assert figure["printed_note"] == \
        f"On paper: {PRINTED_FRAMES} of the film's 9 frames, first to last, in reading order."
    last, frames = printed_frames(_film(9), 1)
    assert frames == 9 and Image.open(io.BytesIO(last)).convert("L").getpixel((0, 0)) == round(255 * 8 / 9), \
        "one frame is the last: the trained model, not step 0"
    page = printed_stills(f'<img alt="x" src="data:image/gif;base64,{base64.b64encode(_film(3)).decode()}" />', 1)
    assert re.fullmatch(r'<img class="book-screen-only" alt="x"\s+src="data:image/gif;base64,[^"]+">'
                        r'<img class="book-print-only" alt="x"\s+src="data:image/png;base64,[^"]+">', page), page


EXERCISE_LIST = "".join(f"{row[0]:<5}{row[1]:<9}{row[2]:<45}{row[3]:<41}{row[4]:>6}{row[5]:>7}\n" for row in [
    ("ID", "chapter", "title", "where", "points", "tests"),
    ("1.1", "01", "topological_order, the order of the graph", "minitorch/tensor.py: topological_order", "3", "6"),
    ("1.2", "01", "mul's backward rule", "minitorch/ops.py: mul_backward", "1", "5"),
    ("2.1", "02", "sum_to_shape, the gradient of broadcasting", "minitorch/tensor.py: sum_to_shape", "3", "56")])


def test_a_wide_table_printed_as_text_becomes_a_table_and_other_text_stays_text():
    from minitorch.tools.book.tables import split_tables, tables_as_html

    text = "The exercises:\n" + EXERCISE_LIST + "4 exercises, 8 points.\n"
    pieces = split_tables(text, wider_than=90)
    assert [kind for kind, _ in pieces] == ["text", "table", "text"], pieces
    rows = pieces[1][1]
    assert rows[0] == ["ID", "chapter", "title", "where", "points", "tests"], rows[0]
    assert rows[3][2] == "sum_to_shape, the gradient of broadcasting" and rows[3][5] == "56", rows[3]
    outputs = tables_as_html([nbformat.v4.new_output("stream", name="stdout", text=text)])
    table = outputs[1]["data"]["text/html"]
    assert [output["output_type"] for output in outputs] == ["stream", "display_data", "stream"]
    assert '<thead><tr><th class="book-number-cell">ID</th>' in table, "the header, aligned as its column"
    assert '<td class="book-number-cell">56</td>' in table, "a column of numbers is aligned right"
    assert split_tables(EXERCISE_LIST, wider_than=200) == [("text", EXERCISE_LIST)], "a table that fits stays text"
    arrays = ("row sums:  [0.     0.936  0.342  0.274]  of 4\nrow max:   [0.     0.5    0.1    0.2  ]  of 4\n"
              "row min:   [0.     0.1    0.1    0.2  ]  of 4\n")
    kind, rows = split_tables(arrays)[0]
    assert kind == "table" and rows[0] == ["row sums:", "[0.     0.936  0.342  0.274]", "of 4"], \
        f"the spaces inside a printed array split nothing: {rows}"
    rows = [("softmax", "1,024 parameters, beyond W: -", "row sums in [1.000, 1.000]"),
            ("relu", "1,024 parameters, beyond W: -", "row sums in [0.000, 0.038]"),
            ("softmax1", "1,024 parameters, beyond W: -", "row sums in [0.663, 0.942]"),
            ("sink_logit", "1,025 parameters, beyond W: sink_logit", "row sums in [0.663, 0.942]"),
            ("gated", "-1,280 parameters, beyond W: W_G", "row sums in [1.000, 1.000]")]
    printed = "".join(f"{a:10s} {b:45s} {c}\n" for a, b, c in rows) + "every row sums to one at most: True  (5 of 5)\n"
    kind, table = split_tables(printed)[0]
    assert kind == "table" and [tuple(row) for row in table] == rows, \
        f"a name that fills its column and a minus sign stay in the table, the sentence after it does not: {table}"
    prose = "a sentence that goes on  and on,  with double spaces\nand a second  one\nand  a third\n"
    assert all(kind == "text" for kind, _ in split_tables(prose)), "prose is no table"


def test_the_build_measurements_marker_becomes_the_measured_sentence(tiny_book, tmp_path):
    notebook = nbformat.read(tiny_book / "02_second.ipynb", as_version=4)
    notebook.cells.append(nbformat.v4.new_markdown_cell("Building this book:\n\n<!-- build-measurements -->\n\n"
                                                        "Inline <!-- build-measurements --> stays a comment."))
    nbformat.write(notebook, tiny_book / "02_second.ipynb")
    lines = []
    assert build_book(tmp_path / "book", chapters_dir=tiny_book, readme=tmp_path / "none.md", report=lines.append) == []
    said = next(line for line in lines if line.startswith("Measured: "))
    assert re.fullmatch(r"Measured: This copy of the book was built by `python -m minitorch book` on a machine with "
                        r"\d+ cores? \(in full mode, one chapter at a time\): running its 2 chapters and writing the "
                        r"HTML book took \d+ s; no PDF was printed \(--no-pdf\)\.", said), said
    sentence = said[len("Measured: "):].replace("`python -m minitorch book`", "<code>python -m minitorch book</code>")
    for name in ("02_second.html", "print.html"):
        page = (tmp_path / "book" / name).read_text(encoding="utf-8")
        assert f'<div class="book-measurements"><p>{sentence}</p></div>' in page, f"{name}: the marker was not filled"
        assert page.count("<!-- build-measurements -->") == 1, f"{name}: only the marker on a line of its own is filled"
    assert "build-measurements" not in (tmp_path / "book" / "01_first.html").read_text(encoding="utf-8")


@pytest.mark.slow
def test_the_pdf_has_bookmarks_and_a_contents_page_with_the_pages_of_its_headings(tiny_book, tmp_path):
    """Printed twice: the first printing tells on which page each heading falls, the second writes it into the
    contents; the measured sentence gives the PDF's page count."""
    if _browser() is None:
        pytest.skip("no Chromium installed: the printed edition needs one")
    pypdf = pytest.importorskip("pypdf")
    notebook = nbformat.read(tiny_book / "02_second.ipynb", as_version=4)
    notebook.cells.append(nbformat.v4.new_markdown_cell("\n\n".join(["A long paragraph. " * 60] * 12)
                                                        + "\n\n## A late section\n\n<!-- build-measurements -->"
                                                        + "\n\n## A heading long enough to wrap onto a second line "
                                                          "of the printed page, with a formula $\\delta$ in it"))
    nbformat.write(notebook, tiny_book / "02_second.ipynb")
    out, lines = tmp_path / "book", []
    assert build_book(out, chapters_dir=tiny_book, readme=tmp_path / "none.md", pdf=True, report=lines.append) == []
    reader = pypdf.PdfReader(out / "attention-sinks-from-scratch.pdf")
    pages = {str(name).lstrip("/"): reader.get_destination_page_number(destination) + 1
             for name, destination in reader.named_destinations.items()}
    printed = (out / "print.html").read_text(encoding="utf-8")
    listed = dict(re.findall(r'<a href="#([^"]+)">.*?</a><span class="book-leader"></span>'
                             r'<span class="book-page">(\d+)</span>', printed))
    assert listed and {anchor: int(page) for anchor, page in listed.items()} == \
        {anchor: pages[anchor] for anchor in listed}, "each contents line must give the page its heading is on"
    assert pages["chapter-01"] == 3 and pages["c02-A-late-section"] > pages["chapter-02"] >= 4, pages
    titles = [item.title for item in reader.outline if not isinstance(item, list)]
    assert "Chapter 01 — One" in titles and "Chapter 02 — Two" in titles, f"the PDF's bookmarks: {titles}"
    sections = [item.title for item in reader.outline[-1]]
    assert "A heading long enough to wrap onto a second line of the printed page, with a formula δ in it" in \
        sections, f"a bookmark keeps the words of a heading that wraps, and its formula as text: {sections}"
    text = reader.pages[pages["c02-A-late-section"] - 1].extract_text()
    assert f"printing the PDF, {len(reader.pages)} pages," in " ".join(text.split()), text[-600:]


def test_one_loops_prints_are_one_box_and_a_redrawn_line_shows_its_last_state():
    from minitorch.tools.book.figures import merged_streams

    outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"step {step}\n") for step in range(3)]
    outputs.append(nbformat.v4.new_output("stream", name="stdout", text="bar 10%\rbar 50%\rbar 100%\x1b[K\n"))
    merged = merged_streams(outputs)
    assert len(merged) == 1, "consecutive prints of one cell must share one output box"
    assert merged[0]["text"] == "step 0\nstep 1\nstep 2\nbar 100%\n", repr(merged[0]["text"])


def test_theorems_sections_equations_and_exercises_get_anchors_and_their_references_link_to_them(tiny_book):
    from minitorch.tools.book.references import Labels, add_anchors, link_references

    labels = Labels()
    labels.stated["theorem"]["1"] = "05"
    labels.stated["exercise"].update({"4.2": "04", "4.3": "04"})
    labels.sections.update({"05": {"6.2"}, "04": {"3"}})
    labels.equations["05"] = {"2"}
    pages = {"04": "04_task.html", "05": "05_sink.html"}
    stated = add_anchors('<p><strong>Theorem 1 (sinks).</strong> $$x \\tag{2}$$</p>'
                         '<h3 id="6.2-One-head">6.2 One head</h3>', "05", labels)
    assert '<strong id="theorem-1">Theorem 1' in stated and 'id="equation-2"></span>$$x' in stated
    assert 'id="section-6.2"></span><h3' in stated, "a numbered heading gets the anchor section-<number>"
    text = ("<p>By Theorem 1 and inequality (2); see chapter 05, section 6.2, exercises 4.2 to 4.3, and "
            "Gu et al. and arXiv:2410.10781. <code>Theorem 1</code></p>")
    linked = link_references(text, "04", labels, pages)
    assert '<a class="book-ref" href="05_sink.html#theorem-1">Theorem 1</a>' in linked, linked
    assert 'href="05_sink.html#section-6.2">section 6.2</a>' in linked, "chapter 05, section 6.2 is chapter 05's"
    assert 'href="#exercise-4.2">4.2</a> to <a class="book-ref" href="#exercise-4.3">4.3</a>' in linked, linked
    assert "inequality (2)" in linked and "equation-2" not in linked, "chapter 04 has no equation (2) of its own"
    assert 'href="https://arxiv.org/abs/2410.10781">Gu et al.</a>' in linked, "a cited work links to its source"
    assert 'href="https://arxiv.org/abs/2410.10781">arXiv:2410.10781</a>' in linked
    assert "<code>Theorem 1</code>" in linked, "code is never linked"


def test_a_tiny_book_has_answers_behind_a_click_captioned_figures_a_search_index_and_a_printed_page(tiny_book,
                                                                                                    tmp_path):
    notebook = nbformat.read(tiny_book / "02_second.ipynb", as_version=4)
    answer = nbformat.v4.new_code_cell("# Answer: 42\nprint(6 * 7)")
    answer.metadata["tags"] = ["self-check"]
    figure = nbformat.v4.new_code_cell("import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()")
    figure.metadata["figures"] = [{"caption": "A rising line.", "alt": "One straight line going up."}]
    notebook.cells += [nbformat.v4.new_markdown_cell("**Exercise 2.1 (predict, then check): six times seven?**"),
                       answer, figure]
    nbformat.write(notebook, tiny_book / "02_second.ipynb")
    out = tmp_path / "book"
    assert build_book(out, chapters_dir=tiny_book, readme=tmp_path / "none.md", report=_quiet) == []
    second = (out / "02_second.html").read_text(encoding="utf-8")
    details = second[second.index('<details class="book-answer">'):second.index("</details>")]
    assert "42" in details and "<summary>" in details, "a self-check cell's answer must wait behind a click"
    assert re.search(r'<figure class="book-figure" id="figure-2.1">\s*<img [^>]*alt="One straight line going up."',
                     second), "a figure carries its description as alt text"
    assert '<span class="book-figure-number">Figure 2.1.</span> A rising line.</figcaption>' in second
    assert "No description has been provided" not in second
    index = (out / "_static" / "search-index.js").read_text(encoding="utf-8")
    assert index.startswith("window.BOOK_SEARCH = ") and "six times seven" in index, \
        "the search index is a script holding every section's text (a page from file:// cannot fetch JSON)"
    printed = (out / "print.html").read_text(encoding="utf-8")
    assert '<nav class="book-print-contents"' in printed and 'href="#chapter-02"' in printed, "a contents page"
    assert '<a href="print.html">' in (out / "index.html").read_text(encoding="utf-8"), "the index links to it"
    assert 'id="c02-exercise-2.1"' in printed and '<details class="book-answer" open>' in printed, \
        "the printed page's anchors are made unique per chapter, and its answers are open"


def test_the_search_index_stems_words_and_scores_each_section():
    pytest.importorskip("lunr")
    from minitorch.tools.book.search import build_index

    documents = [{"link": "a.html#x", "chapter": "A", "title": "Lemmas", "text": "Lemma 4 says the corner is far."},
                 {"link": "b.html#y", "chapter": "B", "title": "Other", "text": "Nothing about that here."}]
    index = build_index(documents)
    assert index["words"]["lemmas"] == index["words"]["lemma"] == "lemma", "lunr stems lemmas and lemma alike"
    assert [document for document, _ in index["terms"]["lemma"]] == [0], "only the first section has the word"
    assert "4" in index["terms"] and "the" not in index["terms"], "numbers are kept, stop words left out"


def test_each_line_of_code_is_a_block_so_that_paper_can_mark_where_it_wraps():
    from minitorch.tools.book.pages import code_lines

    code = '<span class="k">def</span> f():\n    <span class="sd">"""one\ntwo"""</span>\n\n    return 1\n'
    lines = re.findall(r'<span class="book-line">(.*?)</span>(?=<span class="book-line">|$)', code_lines(code))
    assert lines == ['<span class="k">def</span> f():', '    <span class="sd">"""one</span>',
                     '<span class="sd">two"""</span>', "", "    return 1"], \
        "one block per line of the code; a docstring's span closes at each line's end and opens again on the next"


def test_search_snippets_are_plain_text_and_a_section_knows_what_it_states():
    pytest.importorskip("pylatexenc")
    from minitorch.tools.book.search import section_documents

    page = ('<main class="book-main"><h2 id="Intro">Intro<a class="anchor-link" href="#Intro">&#182;</a></h2>'
            "<p>Theorem 2 is used here, with $a_{i0} \\ge 1 - \\delta$.</p>"
            '<h2 id="Appendix">Appendix<a class="anchor-link" href="#Appendix">&#182;</a></h2>'
            '<h3 id="A-step">A step<a class="anchor-link" href="#A-step">&#182;</a></h3>'
            "<p>Every row sums to one.</p>"
            '<p><strong id="theorem-2">Theorem 2.</strong> Every row has $$\\frac{1}{j} \\tag{3}$$</p></main>')
    intro, appendix = section_documents(page, "05.html", "Chapter 05")
    assert re.fullmatch(r"Theorem 2 is used here, with a_i0 ?≥ ?1 - δ\.", intro["text"]), intro["text"]
    assert "¶" not in appendix["text"] and "1/j" in appendix["text"] and "$" not in appendix["text"], appendix
    assert "A step Every row" in appendix["text"], "a heading and the paragraph after it are two words apart"
    assert "\\delta" in intro["indexed"], "the index keeps the formula's words: 'delta' can be searched"
    assert appendix["states"] == ["Theorem 2"] and "states" not in intro or not intro["states"], \
        "the section where a theorem is stated says so, so that a search for its name leads there first"


# --- slow: the real book as its reader meets it -------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda path: path.stem[:2])
def test_each_figure_is_shown_once_numbered_captioned_and_described(quick_book, chapter):
    out, _ = quick_book
    page = (out / (chapter.stem + ".html")).read_text(encoding="utf-8")
    assert "On GitHub, where the notebook shows no outputs" not in page and "../figures/" not in page, \
        f"{chapter.stem}: the GitHub-only copy of a figure must not stand beside the live one"
    figures = page.count('<figure class="book-figure"')
    captions = re.findall(r'<figcaption><span class="book-figure-number">Figure ([0-9.]+)\.</span> ([^<]*)'
                          r'(?:\s*<span class="book-(?:screen|print)-only">[^<]*</span>)*</fig', page)
    assert len(captions) == figures and all(text.strip() for _, text in captions), \
        (f"{chapter.stem}: {figures} figures but {sum(1 for _, text in captions if text.strip())} captions; write "
         f"them in the drawing cell's metadata 'figures' (minitorch/tools/book/figures.py)")
    assert [number for number, _ in captions] == [f"{int(chapter.stem[:2])}.{k}" for k in range(1, figures + 1)]
    assert 'alt=""' not in page and "No description has been provided" not in page, f"{chapter.stem}: an image " \
        "has no description"


@pytest.mark.slow
def test_every_reference_link_in_the_book_lands_on_an_anchor(quick_book):
    out, _ = quick_book
    for page_path in sorted(out.glob("[0-9][0-9]_*.html")):
        page = page_path.read_text(encoding="utf-8")
        for href, text in re.findall(r'<a class="book-ref" href="([^"]+)">([^<]*)</a>', page):
            if href.startswith("https://"):
                continue
            target, _, anchor = href.partition("#")
            html = (out / target).read_text(encoding="utf-8") if target else page
            assert f'id="{anchor}"' in html, f"{page_path.name}: '{text}' links to {href}, which has no such anchor"


@pytest.mark.slow
@pytest.mark.parametrize("query", ["Lemma 4", "Theorem 2"])
def test_search_finds_where_a_lemma_or_theorem_is_stated_from_file_in_a_browser(quick_book, tmp_path, query):
    out, _ = quick_book
    page = (out / "index.html").read_text(encoding="utf-8")
    typing = ("<script>window.addEventListener('load', function () { var box = document.querySelector("
              f"'.book-search-input'); box.value = '{query}'; box.dispatchEvent(new Event('input')); }});</script>")
    searching = out / "_search_test.html"
    searching.write_text(page.replace("</body>", typing + "</body>"), encoding="utf-8")
    try:
        run = _open_offline(searching, tmp_path / "profile")
    finally:
        searching.unlink()
    results = re.search(r'<ol class="book-search-results">(.*?)</ol>', run.stdout, re.S)
    assert results, "the search box showed no results: its index did not load from file://"
    first = re.search(r'<a href="([^"#]+)#([^"]+)">', results.group(1))
    assert first, f"no result for {query!r}"
    target = (out / first.group(1)).read_text(encoding="utf-8")
    section = target[target.index(f'<h2 id="{first.group(2)}"'):]
    section = section[:section.find("<h2 ", 10)] if "<h2 " in section[10:] else section
    anchor = query.lower().replace(" ", "-")
    assert f'id="{anchor}"' in section, f"{query!r} should lead first to where it is stated, not to {first.group(0)}"
    word, number = query.split()
    assert f"<mark>{word}</mark> <mark>{number}</mark>" in results.group(1), "the snippet shows the words found"
    snippets = re.sub(r"<[^>]+>", "", results.group(1))
    assert "$" not in snippets and "\\" not in snippets and "¶" not in snippets, f"LaTeX in the snippets: {snippets}"


@pytest.mark.slow
def test_the_scrubber_is_on_chapter_07s_page_and_its_slider_moves(quick_book, tmp_path):
    out, _ = quick_book
    page_path = next(out.glob("07_*.html"))
    page = page_path.read_text(encoding="utf-8")
    assert page.count('class="sink-scrubber"') == 1 and "fetch(" not in page
    moving = ("<script>window.addEventListener('load', function () { var slider = document.querySelector("
              "'.scrubber-step'); slider.value = slider.max; slider.dispatchEvent(new Event('input')); });</script>")
    moved = out / "_scrubber_test.html"
    moved.write_text(page.replace("</body>", moving + "</body>"), encoding="utf-8")
    try:
        dom = _open_offline(moved, tmp_path / "profile").stdout
    finally:
        moved.unlink()
    captions = re.findall(r'<figcaption[^>]*aria-live="polite"[^>]*>([^<]*)</figcaption>', dom)
    assert len(captions) == 2 and captions[0].startswith("softmax, step ") and captions[1].startswith("ReLU"), \
        f"the scrubber should show both runs at the slider's last step: {captions}"
    assert " 0:" not in captions[0], "moved to the end, the softmax map is no longer the one of step 0"


@pytest.mark.slow
def test_the_printed_edition_is_one_pdf_with_a_contents_page_bookmarks_and_words_for_paper(quick_book):
    """One printing of the real book (the build prints twice; the page numbers are tested on a tiny book)."""
    from minitorch.tools.book.printed import PDF_NAME, print_pdf

    pypdf = pytest.importorskip("pypdf")
    out, _ = quick_book
    if _browser() is None:
        pytest.skip("no Chromium installed: the printed edition needs one")
    lines = []
    pdf = print_pdf(out, lines.append)
    assert pdf == out / PDF_NAME, f"no PDF: {lines}"
    reader = pypdf.PdfReader(pdf)
    assert len(reader.pages) > 50, f"the whole book should print to many pages, not {len(reader.pages)}"
    printed = (out / "print.html").read_text(encoding="utf-8")
    bookmarks = [item.title for item in reader.outline if not isinstance(item, list)]
    destinations = {str(name).lstrip("/") for name in reader.named_destinations}
    for chapter in CHAPTERS:
        number = chapter.stem[:2]
        assert f'<a href="#chapter-{number}">' in printed and f'id="chapter-{number}"' in printed, \
            f"the contents page must link to chapter {number}, printed in full"
        assert f"chapter-{number}" in destinations, f"the contents' link to chapter {number} must work in the PDF"
        assert any(title.startswith(f"Chapter {number}") for title in bookmarks), \
            f"the PDF's bookmarks should hold chapter {number}: {bookmarks}"
    text = " ".join(" ".join(page.extract_text().split()) for page in reader.pages)
    assert "Drag the slider" not in text and "click to enlarge" not in text, "screen words printed on paper"
    assert len(re.findall(r"step \d+: BOS \d\.\d\d", text)) >= 12, \
        "chapter 07's slider should print as a strip of snapshots (its maps and their steps), not empty boxes"
    assert text.count("On paper: ") >= 2, "Figures 7.4 and 8.3 should print frames of their films, not step 0 alone"


def test_a_book_without_the_search_package_is_refused_before_any_chapter_runs(tiny_book, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "lunr", None)  # as if lunr were not installed
    with pytest.raises(BookError, match="lunr, which is not installed: pip install -r requirements.txt"):
        build_book(tmp_path / "book", chapters_dir=tiny_book, report=_quiet)
    assert not (tmp_path / "book").exists(), "nothing may be written when the build cannot finish"


def test_without_chromium_the_build_says_why_there_is_no_pdf(tmp_path, monkeypatch):
    from minitorch.tools.book import printed

    monkeypatch.setattr(printed, "BROWSERS", ("no-such-browser-here",))
    lines = []
    assert printed.print_pdf(tmp_path, lines.append) is None
    assert len(lines) == 1 and "Chromium, which is not installed" in lines[0], lines
    assert not (tmp_path / printed.PDF_NAME).exists()


def test_a_chromium_that_writes_no_pdf_is_one_line_and_the_html_book_stands(tmp_path):
    """A 'chromium' that exits 0 but writes 'garbage' as the PDF ended the build with pypdf's traceback
    (PdfStreamError: Stream has ended unexpectedly), and no book at all."""
    from minitorch.tools.book import printed

    chromium = tmp_path / "chromium"
    chromium.write_text('#!/bin/sh\nfor a; do case "$a" in --print-to-pdf=*) echo garbage > "${a#*=}";; esac; done\n')
    chromium.chmod(0o755)
    (tmp_path / printed.PRINT_PAGE).write_text("<html><body><h1>One</h1></body></html>")
    lines = []
    assert printed.print_pdf(tmp_path, lines.append, str(chromium)) is None, "garbage is no PDF"
    assert len(lines) == 1 and "Chromium exited 0 but wrote no readable PDF" in lines[0], lines
    assert not (tmp_path / printed.PDF_NAME).exists(), "the garbage must not be left as the book's PDF"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs a HOME no one may write to")
def test_a_home_no_one_may_write_to_still_builds_the_book(tiny_book, tmp_path):
    """HOME=/proc: every kernel failed to start ('No such file or directory: /proc/.ipython'), HOME not named;
    the kernels now keep their files in a temporary folder for the build, and the build says so."""
    out = tmp_path / "book"
    completed = subprocess.run([sys.executable, "-m", "minitorch", "book", "--no-pdf", "--quick", "--chapters",
                                str(tiny_book), "--out", str(out)], capture_output=True, text=True, cwd=ROOT,
                               timeout=300, env={**os.environ, "HOME": "/proc"})
    assert completed.returncode == 0, f"the book should build with HOME=/proc: {completed.stdout}{completed.stderr}"
    assert "HOME=/proc is not a folder you may write to" in completed.stdout, completed.stdout
    assert (out / "01_first.html").is_file() and (out / "02_second.html").is_file()


def _cells_changed(path: Path, change) -> Path:
    """The notebook at `path` with `change` applied to its JSON (a dict), written back as JSON."""
    import json

    document = json.loads(path.read_text(encoding="utf-8"))
    change(document)
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


@pytest.mark.parametrize("change,culprit", [
    (lambda nb: nb["cells"][1].update(source=42), r"the source of cell 2 \(code\) is '42' \(int\), not text"),
    (lambda nb: nb["cells"][1].update(source=None), r"the source of cell 2 \(code\) is 'None' \(NoneType\)"),
    (lambda nb: nb["cells"][0].update(source={"a": 1}), r"the source of cell 1 \(markdown\) is .*, not text"),
    (lambda nb: nb["cells"][1].update(cell_type="python"), r"cell 2 is not a cell of type code, markdown, raw"),
    (lambda nb: nb["cells"][1].update(source=True), r"the source of cell 2 \(code\) is 'True' \(bool\)"),
], ids=["source-42", "source-null", "source-a-dict", "cell-type-python", "source-true"])
def test_a_chapter_whose_cells_are_not_cells_is_named_before_any_chapter_runs(tiny_book, capsys, change, culprit):
    """A code cell whose source is the JSON number 42 would stop the build with a 20-line AttributeError
    ('int' object has no attribute 'strip') from nbclient, after the chapters before it had run."""
    from minitorch.__main__ import main

    path = _cells_changed(tiny_book / "02_second.ipynb", change)
    with pytest.raises(BookError, match=culprit):
        find_chapters(tiny_book)
    out = tiny_book.parent / "book"
    assert main(["book", "--no-pdf", "--quick", "--chapters", str(tiny_book), "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert f"{path}: " in error and "Traceback" not in error and not out.exists(), error


def test_a_chapter_saved_without_cell_ids_builds_even_with_warnings_as_errors(tiny_book, tmp_path):
    """PYTHONWARNINGS=error: a notebook saved by an older Jupyter (cells without ids) was refused as 'not a readable
    notebook: Cell is missing an id field', nbformat's notice that it gives them ids; without it, the notice was
    printed under the build's lines."""
    _cells_changed(tiny_book / "02_second.ipynb", lambda nb: [cell.pop("id", None) for cell in nb["cells"]])
    assert '"id"' not in (tiny_book / "02_second.ipynb").read_text(), "the test's chapter should have no cell ids"
    out = tmp_path / "book"
    completed = subprocess.run([sys.executable, "-m", "minitorch", "book", "--no-pdf", "--quick", "--chapters",
                                str(tiny_book), "--out", str(out)], capture_output=True, text=True, cwd=ROOT,
                               timeout=300, env={**os.environ, "PYTHONWARNINGS": "error"})
    assert completed.returncode == 0, f"the book should build as without PYTHONWARNINGS: {completed.stderr}"
    assert (out / "02_second.html").is_file() and "missing an id" not in completed.stdout + completed.stderr


def test_a_source_written_as_a_list_of_lines_is_text(tiny_book):
    _cells_changed(tiny_book / "02_second.ipynb", lambda nb: nb["cells"][1].update(source=["x = 1\n", "print(x)"]))
    assert [chapter.path.name for chapter in find_chapters(tiny_book)] == ["01_first.ipynb", "02_second.ipynb"]


def test_a_limit_of_open_files_too_low_for_the_kernels_stops_the_build_before_any_chapter(tmp_path):
    """Under `ulimit -n 14` a kernel would fail half-way, printing its own 25-line traceback, and a .partial
    folder would stay."""
    import resource

    def low_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (14, 14))

    completed = subprocess.run([sys.executable, "-m", "minitorch", "book", "--out", str(tmp_path / "book"), "--only",
                                "00", "--no-pdf"], capture_output=True, text=True, timeout=300, cwd=ROOT,
                               preexec_fn=low_limit)
    assert completed.returncode == 1, completed.stderr
    said = completed.stderr
    assert said.count("\n") == 1 and "building the book needs at least 256 open files" in said, said
    assert list(tmp_path.iterdir()) == [], "the build left a folder behind"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork, as the build's --jobs workers are forked")
def test_a_process_forked_while_the_build_handles_stops_ends_quietly_on_one():
    """A --jobs worker is forked with the building process's handler and sets its own only later; a SIGTERM from
    the stopping build in between raised KeyboardInterrupt in it, whose traceback came before the build's line."""
    from minitorch.tools.book.execute import Stop

    with Stop().installed():
        child = os.fork()
        if child == 0:
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(5)
            finally:
                os._exit(0)
        _, status = os.waitpid(child, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 128 + signal.SIGTERM, (
        f"the forked process did not end quietly with 128 + SIGTERM: wait status {status}")


@pytest.mark.parametrize("how", ["copied", "linked"])
def test_a_chapter_that_imports_minitorch_from_outside_the_project_is_refused_before_any_chapter_runs(
        tmp_path, capsys, monkeypatch, how):
    """A chapter copied (or linked) into a folder outside the project ran, and its set-up cell, which walks up from
    its kernel's folder to the one holding minitorch/, stopped the build with "cell 2 raised StopIteration: "."""
    from minitorch.__main__ import main
    from minitorch.tools.book import build

    if any((folder / "minitorch" / "__init__.py").is_file() for folder in tmp_path.resolve().parents):
        pytest.skip("the temporary folder lies inside a project, so no chapter in it lies outside one")
    chapters = tmp_path / "mine"
    chapters.mkdir()
    path = chapters / "01_my chapter.ipynb"
    (os.symlink if how == "linked" else shutil.copy)(CHAPTERS[1], path)
    monkeypatch.setattr(build, "execute_all", lambda *args, **kwargs: pytest.fail("a chapter ran"))
    out = tmp_path / "book"
    assert main(["book", "--no-pdf", "--quick", "--chapters", str(chapters), "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert f"{path}: imports minitorch, but it lies outside the project" in error and "put the chapter in a folder " \
        "inside the project" in error, f"the refusal should say the chapter must sit inside the project: {error}"
    assert not out.exists(), "a refused build wrote a book"


def test_a_chapter_outside_the_project_that_does_not_import_minitorch_is_accepted(tmp_path):
    """The rule concerns chapters that need minitorch: a chapter of text and plain Python may lie anywhere."""
    chapters = tmp_path / "mine"
    chapters.mkdir()
    _notebook(chapters / "01_plain.ipynb", "Plain", "import math  # not minitorch\nprint(math.pi)")
    assert [chapter.path.name for chapter in find_chapters(chapters)] == ["01_plain.ipynb"]


def test_a_notebook_not_named_nn_title_is_named_by_the_build_not_left_out_in_silence(tiny_book, tmp_path,
                                                                                       monkeypatch):
    from minitorch.tools.book import build

    class Stop(Exception):
        pass

    def stop(*args, **kwargs):
        raise Stop  # the report came before any chapter runs: nothing more is needed

    for name in ("1_one", "Untitled"):
        _notebook(tiny_book / f"{name}.ipynb", name, "print(1)")
    monkeypatch.setattr(build, "execute_all", stop)
    lines = []
    with pytest.raises(Stop):
        build.build_book(tmp_path / "out", chapters_dir=tiny_book, readme=tmp_path / "none.md", report=lines.append)
    assert any("1_one.ipynb, Untitled.ipynb" in line and "NN_title" in line for line in lines), (
        f"a build must name the notebooks it leaves out (a chapter misnamed by a digit would be missing): {lines}")
    assert [chapter.path.name for chapter in find_chapters(tiny_book)] == ["01_first.ipynb", "02_second.ipynb"]


@pytest.mark.parametrize("only", [None, ["02"]], ids=["every-chapter", "only-02"])
def test_two_notebooks_of_one_chapter_number_are_refused_naming_both(tiny_book, only):
    """Two notebooks numbered 01, neither a copy of the other, were both built as chapter 01, and every link to
    chapter 01 went to one of them, without a word: a book has one chapter of each number."""
    shutil.copy(tiny_book / "01_first.ipynb", tiny_book / "01_other.ipynb")
    with pytest.raises(BookError, match=r"01_first.ipynb and 01_other.ipynb are both chapter 01.*move one out of the "
                                        r"folder, or rename it"):
        find_chapters(tiny_book, only)


@pytest.mark.parametrize("copy", ["01_first-Copy1.ipynb", "01_first_my_notes.ipynb"])
def test_a_copy_of_a_chapter_beside_it_is_left_out_and_named(tiny_book, copy):
    """Jupyter's Duplicate (01_first-Copy1.ipynb) or a reader's notes saved beside the chapter were built as a second
    chapter 01; the copy is left out, and the report line names it, as it names an Untitled.ipynb."""
    shutil.copy(tiny_book / "01_first.ipynb", tiny_book / copy)
    assert [chapter.path.name for chapter in find_chapters(tiny_book)][:1] == ["01_first.ipynb"]
    assert copy not in [chapter.path.name for chapter in find_chapters(tiny_book)]
    assert copy in not_chapters(tiny_book) and "a copy of a chapter" in not_chapters(tiny_book)


def _two_chapter_book(tmp_path, first: str, second: str, first_ends_with: str) -> Path:
    """A book built from two chapters named `first` and `second`, the first's opening cell ending with the markdown
    `first_ends_with`; the book's folder."""
    chapters = tmp_path / "chapters"
    chapters.mkdir()
    _notebook(chapters / first, "Chapter 01 — One", "print(1)")
    _notebook(chapters / second, "Chapter 02 — Two", "print(2)")
    notebook = nbformat.read(chapters / first, as_version=4)
    notebook.cells[0].source += "\n\n" + first_ends_with
    nbformat.write(notebook, chapters / first)
    out = tmp_path / "book"
    assert build_book(out, chapters_dir=chapters, readme=tmp_path / "none.md", report=_quiet) == []
    return out


def test_a_link_to_a_chapters_notebook_goes_to_its_page(tmp_path):
    """[next](02_second.ipynb), a link as Jupyter writes it between notebooks, was left as href="02_second.ipynb",
    a file the book does not have: it is linked to the chapter's page, its fragment kept."""
    out = _two_chapter_book(tmp_path, "01_first.ipynb", "02_second.ipynb",
                            "[the next one](02_second.ipynb) and [its end](02_second.ipynb#the-end).")
    page = (out / "01_first.html").read_text(encoding="utf-8")
    assert 'href="02_second.html"' in page and 'href="02_second.html#the-end"' in page, "links not to the page"
    assert 'href="02_second.ipynb' not in page, "a link to the notebook, which the book does not have, was kept"


def test_a_chapter_whose_name_a_url_would_misread_is_linked_url_escaped_everywhere(tmp_path):
    """'02_what next?.ipynb' was linked as href="02_what next?.html": a browser takes '?' for a query and opens
    '02_what next', which does not exist. Every link to a page or a notebook is URL-escaped (02_what%20next%3F)."""
    out = _two_chapter_book(tmp_path, "01_intro.ipynb", "02_what next?.ipynb", "Chapter 02 comes next.")
    _check_pages(out, ["01_intro.ipynb", "02_what next?.ipynb"])  # every local href resolves to a file
    for name in ("index.html", "01_intro.html", "02_what next?.html", "print.html", "_static/search-index.js"):
        text = (out / name).read_text(encoding="utf-8")
        assert not re.search(r'(?:href="|"link":")[^"]*02_what next', text), f"{name} links to '02_what next?' as is"
    assert 'href="02_what%20next%3F.html"' in (out / "index.html").read_text(encoding="utf-8")
    assert 'href="notebooks/02_what%20next%3F.ipynb"' in (out / "index.html").read_text(encoding="utf-8")
    assert '"link":"02_what%20next%3F.html' in (out / "_static" / "search-index.js").read_text(encoding="utf-8")
    assert 'href="02_what%20next%3F.html"' in (out / "01_intro.html").read_text(encoding="utf-8"), \
        "the reference 'Chapter 02' links to the escaped page"
