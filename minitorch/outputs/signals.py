"""Signals: a stop held off while a command finishes a step that must complete, and the worker processes a
command starts ending with it.

The commands turn every stop (Ctrl-C, SIGTERM, SIGHUP, ...) into a KeyboardInterrupt (`minitorch.tools.exit_policy`);
`signals_held` keeps one from raising between the two renames that put a finished output in place. A SIGKILL
cannot be caught: the workers a command started learn of it from the system (`end_with_parent`). A Ctrl-C or another of
the `STOPPING_SIGNALS` before the command's own handlers are set, while it imports the library, ends it in one line
(`stop_quietly_while_starting`).

This module uses only the standard library.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading

# the signals besides Ctrl-C whose default action ends the process and that are a request from outside (kill, a
# terminal, a timer, a CPU-time limit): a fault of the process itself (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, ...)
# is left alone. The commands' exit policy (`minitorch.tools.exit_policy`) reads them from here.
_STOP_NAMES = ("SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGVTALRM", "SIGPROF", "SIGXCPU",
               "SIGIO", "SIGPWR", "SIGSTKFLT")
_REAL_TIME = range(signal.SIGRTMIN, signal.SIGRTMAX + 1) if hasattr(signal, "SIGRTMIN") else range(0)
STOPPING_SIGNALS = tuple(getattr(signal, name) for name in _STOP_NAMES if hasattr(signal, name)) + tuple(_REAL_TIME)


def signal_name(signum: int) -> str:
    """'SIGUSR1' for 10; 'SIGRTMIN+3' for a real-time signal, which has no name of its own; 'signal 999' for a
    number that is no signal here (no name is made up for it)."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"SIGRTMIN+{signum - signal.SIGRTMIN}" if signum in _REAL_TIME else f"signal {signum}"


@contextlib.contextmanager
def signals_held():
    """Hold every signal this process handles in Python while the block runs: Ctrl-C, and the stops that the
    commands turn into Ctrl-C (SIGTERM, SIGHUP, ...: `minitorch.tools.exit_policy`). None can raise inside it.
    Yields the list of those that came, in order: the caller delivers them (``signal.raise_signal``) or, when
    the block finished the work they would stop, drops them. Only the main thread sets (and runs) handlers;
    elsewhere the block runs as it is.

    They are also blocked in this thread while the block runs, and a process or thread started inside inherits
    the block: a stop sent to the whole process group (Ctrl-\\ in a terminal) waits in a worker process just
    started until the worker sets what it does with stops (`ignore_stops`), instead of ending it before the
    command has handed it its task (the command would report a broken pool, not the stop)."""
    came: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield came
        return
    held = {signum: handler for signum in signal.valid_signals() if callable(handler := signal.getsignal(signum))}
    for signum in held:
        signal.signal(signum, lambda signum, frame: came.append(signum))
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield came
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)  # one that waited is delivered now, into `came`
        for signum, handler in held.items():
            signal.signal(signum, handler)


def ignore_stops() -> None:
    """Ignore Ctrl-C and every other stop (`STOPPING_SIGNALS`) from now on, and drop one that waits. A worker
    process calls it as it starts (`signals_held` blocked the stops in the command as it started the worker): the
    command handles the stop and ends its workers itself, where a stop sent to the whole process group would
    otherwise end them too. A command whose work is done calls it until it exits (`run_command`)."""
    stops = (signal.SIGINT, *STOPPING_SIGNALS)
    for signum in stops:
        signal.signal(signum, signal.SIG_IGN)  # one waiting is dropped as its signal becomes ignored
    signal.pthread_sigmask(signal.SIG_UNBLOCK, stops)


PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when the thread that started it ends


def end_with_parent(parent: int, signum: int = signal.SIGTERM) -> None:
    """In a worker process, as it starts: receive `signum` when the process that started it (pid `parent`) ends,
    however it ends. A SIGKILL of a command reaches no handler of its own, so its workers would live on under
    PID 1, and multiprocessing's resource tracker with them. Linux's prctl(PR_SET_PDEATHSIG) asks the system to
    send the signal; a parent that ended before the call (the worker is then adopted by another process) is
    found by comparing the worker's parent pid with `parent`. Elsewhere it does nothing."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0)
    except (OSError, AttributeError):  # no prctl: the worker ends as before, when its pipe closes
        return
    if os.getppid() != parent:
        os.kill(os.getpid(), signum)


def end_processes_marked(variable: str, marker: str) -> int:
    """SIGKILL every process but this one whose environment sets `variable` to `marker`: what a worker started,
    through any fork, new session or double fork (each inherits the environment), and left running when the worker
    itself ended. Linux's /proc; elsewhere nothing. Returns how many were ended."""
    needle, ended = f"{variable}={marker}".encode(), 0
    for entry in os.scandir("/proc") if os.path.isdir("/proc") else ():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            with open(os.path.join(entry.path, "environ"), "rb") as environment:
                if needle in environment.read().split(b"\0"):
                    os.kill(int(entry.name), signal.SIGKILL)
                    ended += 1
        except OSError:  # gone, or another user's
            continue
    return ended


COMMANDS = ("minitorch", "minitorch.exercises", "minitorch.tools.bench")  # run by minitorch.tools.exit_policy


def stop_quietly_while_starting() -> None:
    """Until `minitorch.tools.exit_policy.run_command` takes over: Ctrl-C or another of the `STOPPING_SIGNALS`
    while one of the `COMMANDS` imports the library ends it with one line and status 128 + the signal (130 for
    Ctrl-C, 143 for SIGTERM), not a traceback or a death by the signal (the package calls this first, when
    ``python -m minitorch...`` starts). Any other module run with -m keeps Python's own handling."""
    module = _module_run()
    if module not in COMMANDS:
        return
    stopping: list[int] = []

    def stopped(signum, frame):
        if stopping:  # a second stop while the first's line is printed (a terminal's, then `timeout`'s): one line
            return
        stopping.append(signum)
        print(f"python -m {module}: stopped by {signal_name(signum)} while starting; nothing was done",
              file=sys.stderr, flush=True)
        os._exit(128 + signum)  # not SystemExit: NumPy's C import turns an exception raised inside it into an
        # ImportError traceback; the command has opened and written nothing yet, so there is nothing to clean up

    for signum in (signal.SIGINT, *STOPPING_SIGNALS):
        signal.signal(signum, stopped)


def _module_run() -> str | None:
    """The module of ``python [options] -m MODULE ...`` (also written -mMODULE), from the command line as typed."""
    words = list(getattr(sys, "orig_argv", []))
    for position, word in enumerate(words[1:], start=1):
        if word == "-m":
            return words[position + 1] if position + 1 < len(words) else None
        if word.startswith("-m"):
            return word[2:]
    return None
