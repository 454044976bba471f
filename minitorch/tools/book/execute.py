"""Running the chapters: each one top to bottom in a fresh kernel, several kernels at once."""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import shutil
import signal
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from minitorch.outputs import end_processes_marked, end_with_parent
from minitorch.tools.exit_policy import STOPPING_SIGNALS, note_stop
from minitorch.paper.reproduce import THREAD_VARIABLES
from minitorch.tools.book.chapters import Chapter

# A kernel stopped on purpose (a chapter that failed, Ctrl-C) can leave ZMQ callbacks behind, which tornado logs as
# uncaught exceptions with a traceback; the build reports each failure itself, in one line.
logging.getLogger("tornado").setLevel(logging.CRITICAL)

CELL_TIMEOUT = 600  # default seconds one cell may run before the build gives up on it (--cell-timeout); the
# longest cell of the book, full mode, takes well under a minute on 2 cores
KERNEL_STARTUP_TIMEOUT = 300  # seconds a kernel may take to start (nbclient's 60 is short on a loaded machine)
KERNEL_START_ATTEMPTS = 2  # a second try when a kernel does not start (two kernels may race for one port)
# Figures reach the page through the inline backend (each plt.show() becomes a PNG output); a shell's
# MPLBACKEND=Agg would draw them nowhere, so the kernel's backend is set here, not inherited.
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"
KERNEL_MARKER = "MINITORCH_BOOK_KERNEL"  # in a kernel's environment: names it and every process its cells start
KERNEL_FILES = ("IPYTHONDIR", "JUPYTER_RUNTIME_DIR", "MPLCONFIGDIR")  # their folders, in HOME unless set
KERNEL_ARGUMENTS = [
    # A cell's error reaches the build through the notebook; the kernel's own log (a warning at every start,
    # a traceback when Ctrl-C closes its sockets mid-reply) would only bury the progress lines.
    "--IPKernelApp.log_level=CRITICAL",
    # ipykernel gives tornado's logger a handler on the kernel's real stderr: a kernel stopped on purpose (a
    # chapter that failed) could print "ERROR:tornado.general:Uncaught exception in ZMQStream callback" under
    # the build's lines. Silenced at start, without a name left in the chapter's namespace.
    "--IPKernelApp.exec_lines=[\"__import__('logging').getLogger('tornado').setLevel(50)\"]",
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


class Stop:
    """Ctrl-C (SIGINT), or SIGTERM, SIGHUP, SIGQUIT or another of `STOPPING_SIGNALS`, while chapters run. The
    handler remembers it, kills the running kernel at once, and then:
    - in the building process, ends the ``--jobs`` workers and raises KeyboardInterrupt;
    - in a worker (``worker=True``), exits the worker: its parent reports the stop.

    Killing at once matters because a KeyboardInterrupt can be lost: Python drops an exception raised in
    a finalizer or a weakref callback, and a Ctrl-C that landed there while a kernel started used to leave
    the build waiting for the next cell to finish (a 120 s cell: 120 s). With the kernel dead, that cell
    ends within a second and `check` raises the interrupt again; Python's note about the lost one is not
    printed. A worker exits rather than raise because one that lives on waits forever on the pool's queue
    if an idle worker died holding its lock."""

    def __init__(self, worker: bool = False):
        self.worker = worker
        self.requested = False
        self.client = None  # the NotebookClient of the chapter running in this process
        self.workers = None  # the ProcessPoolExecutor of `execute_all`, in the building process
        self.installed_by = os.getpid()  # the process whose stop this handles

    def __call__(self, signum, frame):
        if os.getpid() != self.installed_by:  # a --jobs worker forked with this handler, before it set its own:
            os._exit(128 + signum)  # it ends quietly (raising would print a traceback and kill its parent's kernel)
        self.request()
        if self.worker:
            os._exit(128 + signum)  # the kernel is dead; nothing of the worker's is worth unwinding
        note_stop(signum)  # the command exits with 128 + signum
        self.end_workers()
        raise KeyboardInterrupt

    def request(self) -> None:
        """Remember the stop and kill the running kernel (its cell ends; `check` then raises)."""
        self.requested = True
        kernel_manager = getattr(self.client, "km", None)
        kernel_group = getattr(getattr(kernel_manager, "provisioner", None), "pgid", None)
        if kernel_group:
            with suppress(OSError):  # already gone
                os.killpg(kernel_group, signal.SIGKILL)  # the kernel and anything a cell started

    def check(self) -> None:
        """Raise KeyboardInterrupt if a stop was asked for, even if the first one was lost."""
        if self.requested:
            raise KeyboardInterrupt

    @contextmanager
    def installed(self):
        """Handle SIGINT and the other stopping signals with this Stop inside the block (main thread only)."""
        signals = (signal.SIGINT, *STOPPING_SIGNALS)
        self.installed_by = os.getpid()
        previous = {signum: signal.signal(signum, self) for signum in signals}
        previous_hook = sys.unraisablehook
        sys.unraisablehook = self._unraisable
        try:
            yield self
        finally:
            sys.unraisablehook = previous_hook
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def end_workers(self) -> None:
        for process in list((getattr(self.workers, "_processes", None) or {}).values()):
            with suppress(OSError):
                process.terminate()  # each worker kills its kernel and exits

    def _unraisable(self, unraisable) -> None:
        if not (self.requested and unraisable.exc_type is KeyboardInterrupt):  # a lost stop is raised again
            sys.__unraisablehook__(unraisable)


def execute_chapter(chapter: Chapter, quick: bool, stop: Stop | None = None, cell_timeout: int = CELL_TIMEOUT) -> Run:
    """Run one chapter top to bottom in a fresh kernel (working directory: its folder); a raising cell
    stops it and is recorded. Ctrl-C or SIGTERM raise KeyboardInterrupt once the kernel is down; ``stop``
    is the caller's Stop, already installed (by default the chapter installs its own)."""
    if stop is None:
        with Stop().installed() as own_stop:
            return execute_chapter(chapter, quick, own_stop, cell_timeout)
    import nbclient
    import nbformat

    os.environ["MPLBACKEND"] = INLINE_BACKEND
    os.environ["MINITORCH_QUICK"] = "1" if quick else "0"
    os.environ[KERNEL_MARKER] = f"{os.getpid()}-{chapter.number}-{secrets.token_hex(4)}"  # its kernel's processes
    start = time.perf_counter()
    for attempt in range(1, KERNEL_START_ATTEMPTS + 1):
        stop.check()
        notebook = nbformat.read(chapter.path, as_version=4)
        stop.client = nbclient.NotebookClient(notebook, timeout=cell_timeout, startup_timeout=KERNEL_STARTUP_TIMEOUT,
                                              kernel_name="python3", extra_arguments=KERNEL_ARGUMENTS,
                                              resources={"metadata": {"path": str(chapter.path.parent)}})
        try:
            failed_cell, error = _execute_cells(stop, notebook, cell_timeout)
            break
        except _KernelDidNotStart as not_started:
            failed_cell, error = None, f"the kernel did not start ({attempt} tries): {not_started}"
    stop.client = None
    return Run(chapter, nbformat.writes(notebook), time.perf_counter() - start, failed_cell, error)


def _execute_in_worker(chapter: Chapter, quick: bool, cell_timeout: int) -> Run:
    """`execute_chapter` in a ``--jobs`` worker: a stop kills the kernel and exits the worker."""
    with Stop(worker=True).installed() as stop:
        return execute_chapter(chapter, quick, stop, cell_timeout)


class _KernelDidNotStart(Exception):
    """The kernel failed before the first cell ran (a timeout, a port taken by another kernel)."""


def _execute_cells(stop: Stop, notebook, cell_timeout: int) -> tuple[int | None, str]:
    """Run the cells in order with ``stop.client``; return the 1-based position of the one that raised
    and its error."""
    import nbclient

    client = stop.client
    kernel = client.setup_kernel()
    try:
        kernel.__enter__()  # starts the kernel; nbclient shuts down what it started if this fails
    except KeyboardInterrupt:
        _finish_abandoned_tasks()
        raise
    except Exception as error:  # noqa: BLE001 - whatever stops a kernel starting is reported in one line
        stop.check()  # the kernel died because Ctrl-C killed it
        raise _KernelDidNotStart(f"{type(error).__name__}: {error}") from None
    try:
        for index, cell in enumerate(notebook.cells):
            stop.check()
            try:
                client.execute_cell(cell, index)
            except nbclient.exceptions.CellExecutionError as raised:
                stop.check()
                return index + 1, f"{raised.ename}: {raised.evalue}"
            except nbclient.exceptions.CellTimeoutError:
                return index + 1, f"timed out after {cell_timeout:g} s (--cell-timeout)"
            except nbclient.exceptions.DeadKernelError:
                stop.check()  # the kernel died because Ctrl-C killed it
                return index + 1, "DeadKernelError: the kernel died (the cell crashed Python or ran out of memory)"
        stop.check()
    except KeyboardInterrupt:
        _finish_abandoned_tasks()
        raise
    finally:
        try:
            kernel.__exit__(None, None, None)  # shuts the kernel down
        finally:  # and what its cells started and left running, in a new session too (it inherits the marker)
            end_processes_marked(KERNEL_MARKER, os.environ[KERNEL_MARKER])
    return None, ""


def _finish_abandoned_tasks() -> None:
    """Cancel and finish what a KeyboardInterrupt left pending in nbclient's event loop (the running
    cell's tasks), keeping their errors. Left alone, the cell's task would fail when the shutdown finds
    the killed kernel dead, and asyncio would print "Task exception was never retrieved" with a
    traceback after the build's last line."""
    with suppress(RuntimeError):  # no event loop in this thread: nothing was left
        loop = asyncio.get_event_loop_policy().get_event_loop()
        abandoned = asyncio.all_tasks(loop)
        for task in abandoned:
            task.cancel()
        if abandoned and not loop.is_running():
            finished = asyncio.gather(*abandoned, return_exceptions=True)  # their errors are taken, not printed
            loop.run_until_complete(asyncio.wait_for(finished, timeout=10))


@contextmanager
def kernel_files_folder(report):
    """Where the kernels keep their files (~/.ipython, Jupyter's runtime folder, matplotlib's cache): in HOME, or,
    where HOME is no folder this user may write to (HOME=/proc, a service's /nonexistent), in a temporary folder
    for this build, said once; a kernel failed to start, naming /proc/.ipython."""
    home = os.path.expanduser("~")
    try:  # (tried, not asked with os.access: root may "write" to /proc)
        tempfile.TemporaryDirectory(dir=home, prefix=".minitorch-book-").cleanup()
        writable = True
    except OSError:
        writable = False
    if writable:
        yield
        return
    folder, saved = tempfile.mkdtemp(prefix="minitorch-book-home-"), dict(os.environ)
    os.environ.update({name: os.path.join(folder, name.lower()) for name in KERNEL_FILES if not os.environ.get(name)})
    report(f"Note: HOME={home} is not a folder you may write to; the kernels keep their files in {folder} for this "
           f"build")
    try:
        yield
    finally:
        for name in KERNEL_FILES:
            os.environ.pop(name, None) if name not in saved else os.environ.update({name: saved[name]})
        shutil.rmtree(folder, ignore_errors=True)


def execute_all(chapters: list[Chapter], quick: bool, jobs: int, keep_going: bool, report=print,
                cell_timeout: int = CELL_TIMEOUT):
    """Yield each chapter's Run as it finishes, ``jobs`` kernels at once; stop early on a failure
    unless ``keep_going`` (chapters already running still finish and are yielded). Ctrl-C or SIGTERM
    stop every kernel and raise KeyboardInterrupt."""
    with Stop().installed() as stop, kernel_files_folder(report):
        if jobs == 1:
            for chapter in chapters:
                run = execute_chapter(chapter, quick, stop, cell_timeout)
                report(progress_line(run))
                yield run
                if run.failed and not keep_going:
                    return
            return
        stop.workers = ProcessPoolExecutor(max_workers=min(jobs, len(chapters)), initializer=_start_worker,
                                           initargs=(os.getpid(),))
        try:
            futures = [stop.workers.submit(_execute_in_worker, chapter, quick, cell_timeout) for chapter in chapters]
            for future in as_completed(futures):
                run = future.result()
                report(progress_line(run))
                yield run
                if run.failed and not keep_going:
                    for pending in futures:
                        pending.cancel()
        except BaseException as error:
            stop.end_workers()
            stop.workers.shutdown(wait=True, cancel_futures=True)
            if isinstance(error, Exception):
                stop.check()  # a worker ended by Ctrl-C broke the pool: report the Ctrl-C, not the broken pool
            raise
        stop.workers.shutdown(wait=True, cancel_futures=True)


def _start_worker(parent: int) -> None:
    """Set up a worker of `execute_all`.

    Its kernels use one BLAS thread each: kernels side by side that each start a BLAS thread per core
    fight over the cores (with --jobs 2 on 2 cores, chapter 07's training took 21.7 s instead of 1.9 s).

    A forked worker inherits the parent's Stop; between chapters it should rather die quietly when the
    parent ends it (SIGTERM) and leave Ctrl-C to the parent. `_execute_in_worker` installs its own Stop. A
    SIGKILL of the parent, which no handler sees, reaches the worker as a SIGTERM (`end_with_parent`): it stops
    its kernel and ends."""
    os.environ.update({name: "1" for name in THREAD_VARIABLES})
    for signum in STOPPING_SIGNALS:
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    end_with_parent(parent, signal.SIGTERM)


def progress_line(run: Run) -> str:
    status = "ok"
    if run.failed:
        status = f"FAILED at cell {run.failed_cell}" if run.failed_cell else "FAILED: the kernel did not start"
    return f"  {run.chapter.path.stem:<40s} {run.seconds:7.1f} s  {status}"
