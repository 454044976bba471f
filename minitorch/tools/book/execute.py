"""Running the chapters: each one top to bottom in a fresh kernel, several kernels at once."""

from __future__ import annotations

import os
import signal
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from minitorch.paper.reproduce import THREAD_VARIABLES
from minitorch.tools.book.chapters import Chapter

CELL_TIMEOUT = 1800  # seconds one cell may run before the build gives up on it
KERNEL_STARTUP_TIMEOUT = 300  # seconds a kernel may take to start (nbclient's 60 is short on a loaded machine)
KERNEL_START_ATTEMPTS = 2  # a second try when a kernel does not start (two kernels may race for one port)
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
    """What executing one chapter gave: the executed notebook (JSON text) and, if it failed, why: a cell
    raised (``failed_cell`` says which) or the kernel never started (``failed_cell`` is None)."""

    chapter: Chapter
    notebook_json: str
    seconds: float
    failed_cell: int | None = None  # 1-based position among all the notebook's cells
    error: str = ""

    @property
    def failed(self) -> bool:
        return bool(self.error)

    @property
    def failure(self) -> str:
        if self.failed_cell is None:
            return f"{self.chapter.path.name}: {self.error}"
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
    start = time.perf_counter()
    previous_handler = signal.signal(signal.SIGTERM, _stop_on_sigterm)
    try:
        for attempt in range(1, KERNEL_START_ATTEMPTS + 1):
            notebook = nbformat.read(chapter.path, as_version=4)
            client = nbclient.NotebookClient(notebook, timeout=CELL_TIMEOUT, startup_timeout=KERNEL_STARTUP_TIMEOUT,
                                             kernel_name="python3", extra_arguments=KERNEL_ARGUMENTS,
                                             resources={"metadata": {"path": str(chapter.path.parent)}})
            try:
                failed_cell, error = _execute_cells(client, notebook)
                break
            except _KernelDidNotStart as not_started:
                failed_cell, error = None, f"the kernel did not start ({attempt} tries): {not_started}"
    finally:
        signal.signal(signal.SIGTERM, previous_handler)
    return Run(chapter, nbformat.writes(notebook), time.perf_counter() - start, failed_cell, error)


class _KernelDidNotStart(Exception):
    """The kernel failed before the first cell ran (a timeout, a port taken by another kernel)."""


def _execute_cells(client, notebook) -> tuple[int | None, str]:
    """Run the cells in order; return the 1-based position of the one that raised and its error."""
    import nbclient

    kernel = client.setup_kernel()
    try:
        kernel.__enter__()  # starts the kernel; nbclient shuts down what it started if this fails
    except Exception as error:  # noqa: BLE001 - whatever stops a kernel starting is reported in one line
        raise _KernelDidNotStart(f"{type(error).__name__}: {error}") from None
    try:
        for index, cell in enumerate(notebook.cells):
            try:
                client.execute_cell(cell, index)
            except nbclient.exceptions.CellExecutionError as raised:
                return index + 1, f"{raised.ename}: {raised.evalue}"
            except nbclient.exceptions.CellTimeoutError:
                return index + 1, f"timed out after {CELL_TIMEOUT} s"
            except nbclient.exceptions.DeadKernelError:
                return index + 1, "DeadKernelError: the kernel died (the cell crashed Python or ran out of memory)"
    finally:
        kernel.__exit__(None, None, None)  # shuts the kernel down
    return None, ""


def execute_all(chapters: list[Chapter], quick: bool, jobs: int, keep_going: bool, report=print):
    """Yield each chapter's Run as it finishes, ``jobs`` kernels at once; stop early on a failure
    unless ``keep_going`` (chapters already running still finish and are yielded)."""
    if jobs == 1:
        for chapter in chapters:
            run = execute_chapter(chapter, quick)
            report(progress_line(run))
            yield run
            if run.failed and not keep_going:
                return
        return
    executor = ProcessPoolExecutor(max_workers=jobs, initializer=_one_blas_thread)
    try:
        futures = [executor.submit(execute_chapter, chapter, quick) for chapter in chapters]
        for future in as_completed(futures):
            run = future.result()
            report(progress_line(run))
            yield run
            if run.failed and not keep_going:
                for pending in futures:
                    pending.cancel()
    except BaseException:
        for process in list(getattr(executor, "_processes", {}).values()):
            process.terminate()  # each worker shuts its kernel down on SIGTERM
        executor.shutdown(wait=True, cancel_futures=True)
        raise
    executor.shutdown(wait=True, cancel_futures=True)


def _one_blas_thread() -> None:
    """In a worker of `execute_all`: its kernels use one BLAS thread each. Kernels side by side that each
    start a BLAS thread per core fight over the cores: with --jobs 2 on 2 cores, chapter 07's training took
    21.7 s instead of 1.9 s."""
    os.environ.update({name: "1" for name in THREAD_VARIABLES})


def progress_line(run: Run) -> str:
    status = "ok"
    if run.failed:
        status = f"FAILED at cell {run.failed_cell}" if run.failed_cell else "FAILED: the kernel did not start"
    return f"  {run.chapter.path.stem:<40s} {run.seconds:7.1f} s  {status}"
