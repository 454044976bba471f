"""Running the chapters: each one top to bottom in a fresh kernel, several kernels at once."""

from __future__ import annotations

import os
import signal
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from minitorch.tools.book.chapters import Chapter

CELL_TIMEOUT = 1800  # seconds one cell may run before the build gives up on it
# Figures reach the page through the inline backend (each plt.show() becomes a PNG output); a shell's
# MPLBACKEND=Agg would draw them nowhere, so the kernel's backend is set here, not inherited.
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"
KERNEL_ARGUMENTS = [
    # A cell's error reaches the build through the notebook; the kernel's own log (a warning at every start,
    # a traceback when Ctrl-C closes its sockets mid-reply) would only bury the progress lines.
    "--IPKernelApp.log_level=CRITICAL",
    # Figures as PNG whatever a reader's IPython profile says. ("retina", twice the pixels, measured 1.2-1.8x
    # slower on chapter 09 and twice the bytes: not worth it for the book.)
    "--InlineBackend.figure_formats=png",
]


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


def _stop_on_sigterm(signum, frame):
    raise KeyboardInterrupt  # unwinds nbclient's context, which shuts the kernel down


def execute_chapter(chapter: Chapter, quick: bool) -> Run:
    """Run one chapter top to bottom in a fresh kernel (working directory: its folder); a raising cell
    stops it and is recorded."""
    import nbclient
    import nbformat

    os.environ["MPLBACKEND"] = INLINE_BACKEND
    os.environ["MINITORCH_QUICK"] = "1" if quick else "0"
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
            run = execute_chapter(chapter, quick)
            report(progress_line(run))
            yield run
            if run.failed_cell and not keep_going:
                return
        return
    executor = ProcessPoolExecutor(max_workers=jobs)
    try:
        futures = [executor.submit(execute_chapter, chapter, quick) for chapter in chapters]
        for future in as_completed(futures):
            run = future.result()
            report(progress_line(run))
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


def progress_line(run: Run) -> str:
    status = f"FAILED at cell {run.failed_cell}" if run.failed_cell else "ok"
    return f"  {run.chapter.path.stem:<40s} {run.seconds:7.1f} s  {status}"
