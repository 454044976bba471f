"""One wrapper around every command's ``main`` (``python -m minitorch ...``, ``python -m minitorch.exercises ...``,
``python -m minitorch.tools.bench ...``), so that every command stops the same way:

- **Every signal that would end the process takes the Ctrl-C path** (SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGALRM,
  ...: `STOPPING_SIGNALS`). They raise KeyboardInterrupt in the main thread, as Ctrl-C does, so the code that
  already cleans up after Ctrl-C runs for them too: worker processes stopped, folders being built aside deleted,
  the old output left as it was. The exit status is 128 + the signal's number (130 for Ctrl-C, 143 for SIGTERM,
  129 for SIGHUP), as a shell reports a process the signal ended. (SIGKILL cannot be caught; SIGSEGV and the
  other faults of the process itself are not a request to stop.) A stop that comes again within a second (a
  terminal's Ctrl-C reaches `timeout` too, which forwards it) is the same one: it does not interrupt the first's
  clean-up or its line.
- **A stop after the work is done changes nothing**: once main has returned (its work done and reported), a
  command's own process ignores stops until it exits, with main's status (`run_command`'s `exits`).
- **An OSError is one line** naming the path and what to do (a full disk, a name too long, a read-only folder,
  a symbolic-link loop, ...), not a traceback.
- **Running out of memory is one line** (a MemoryError, NumPy's or ours naming the array), with what to do.
- **A closed pipe is quiet** (``python -m minitorch.exercises list | head -1``): the reader has what it wanted.
- **A standard stream started closed** (``2>&-``, ``<&-``) is /dev/null, as with ``2>/dev/null``
  (`open_closed_standard_streams`); a closed stdout (``>&-``) is said at the end, as the output it lost. So is
  ``--help``'s, which argparse ends with SystemExit.
- **An error the command explains is one line** (`explain`): in a student edition, a command that reaches the stub
  of an exercise (``reproduce`` needs 4.1's ``make_targets``) says which exercise to write first, and exits with
  status 2. The course's commands pass `minitorch.exercises.registry.exercise_needed`; this module knows nothing
  of the exercises, so that the course's package may import it and not the other way round.
"""

from __future__ import annotations

import errno
import math
import os
import resource
import shutil
import signal
import sys
import time

from minitorch.outputs.signals import STOPPING_SIGNALS, ignore_stops, signal_name

# what to do about an OSError, by errno: the advice printed after the path and the system's reason
_ADVICE = {
    errno.ENOSPC: "the disk is full: free some space, or write somewhere else",
    errno.EDQUOT: "your disk quota is used up: free some space, or write somewhere else",
    errno.EFBIG: "a file would be larger than the limit on a file's size (ulimit -f): raise the limit (ulimit -f "
                 "unlimited), or write less",
    errno.ENAMETOOLONG: "a name is too long (at most 255 bytes per name on most file systems): choose a shorter one",
    errno.ELOOP: "a symbolic link points back to itself (a loop): remove it, or name another path",
    errno.EACCES: "permission denied: choose a place you may write to (or read from)",
    errno.EPERM: "the operation is not permitted there: choose another place",
    errno.EROFS: "the file system is read-only: choose another place",
    errno.ENOENT: "no such file or folder (was it, or the working folder, deleted?)",
    errno.ENOTDIR: "a part of the path is a file, not a folder",
    errno.EISDIR: "it is a folder where a file was expected",
    errno.EEXIST: "something already exists there",
    errno.ENOTEMPTY: "the folder is not empty (another run writing to it at the same time?)",
    errno.EIO: "an input/output error of the disk or device",
    errno.EMFILE: "too many open files: raise the limit (ulimit -n) or run fewer jobs",
}


def describe_os_error(error: OSError) -> str:
    """One line for `error`: the path(s) it names, the system's reason and what to do."""
    if isinstance(error, shutil.Error) and error.args and isinstance(error.args[0], list) and error.args[0]:
        source, destination, reason = error.args[0][0]  # copytree's list of (source, destination, why)
        more = len(error.args[0]) - 1
        tail = f" (and {more} more)" if more else ""
        return f"copying {source} to {destination}: {_copy_reason(str(reason))}{tail}"
    if _no_temporary_folder(error):  # tempfile's own words, whatever failed in each folder it tried
        limit = _file_size_limit()
        if limit is not None and limit < 4:  # tempfile tries each folder by writing 4 bytes
            return (f"{error.strerror}; no file can be written under the limit on a file's size, {_file_size(limit)}"
                    f": raise the limit (ulimit -f unlimited)")
        return (f"{error.strerror}; none of these folders takes a new file (missing, read-only or full?): set TMPDIR "
                f"to a folder you may write to")
    paths = [str(path) for path in (error.filename, error.filename2) if path is not None]
    where = " -> ".join(paths) + ": " if paths else ""
    reason = error.strerror or str(error) or type(error).__name__
    advice = _ADVICE.get(error.errno)
    return f"{where}{reason}" + (f"; {advice}" if advice else "")


def _copy_reason(reason: str) -> str:
    """copytree's reason for one file, the text of an OSError ("[Errno 28] No space left on device: 'a' -> 'b'"),
    without the paths said already, and with what to do about its errno."""
    number, _, rest = reason.partition("] ")
    if not number.startswith("[Errno ") or not number[7:].isdigit():
        return reason
    advice = _ADVICE.get(int(number[7:]))
    return f"{number}] {rest.partition(': ')[0]}" + (f"; {advice}" if advice else "")


def _no_temporary_folder(error: OSError) -> bool:
    """Whether `error` is tempfile's "No usable temporary directory found in [...]", which it raises as ENOENT
    when it cannot write a small file in any folder it tries, for whatever reason (a file-size limit of 0 too)."""
    return error.errno == errno.ENOENT and str(error.strerror).startswith("No usable temporary directory")


def _file_size_limit() -> int | None:
    """The most bytes this process may write to one file now (``ulimit -f``), or None if unlimited."""
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    return None if limit == resource.RLIM_INFINITY else limit


def _file_size(count: int) -> str:
    """'32 KiB (ulimit -f 32)': bash's ulimit -f counts KiB."""
    size = f"{count / 2**20:g} MiB" if count >= 2**20 else f"{count / 2**10:g} KiB" if count >= 2**10 else (
        f"{count} bytes")
    return f"{size} (ulimit -f {count // 1024})"


def _raise_soft_limit(kind: int, needed: int, refusal) -> None:
    """Raise this process's soft limit `kind` (a ``resource.RLIMIT_*``) to `needed` where it is lower and the hard
    limit allows it (its children inherit it); else raise the OSError `refusal(hard)` names."""
    soft, hard = resource.getrlimit(kind)
    if soft != resource.RLIM_INFINITY and soft < needed:
        if hard != resource.RLIM_INFINITY and hard < needed:
            raise refusal(hard)
        resource.setrlimit(kind, (needed, hard))


def ensure_file_size(what: str, needed: int) -> None:
    """Raise the limit on a file's size (``ulimit -f``) to `needed` bytes, else an OSError (EFBIG) saying that
    `what` needs more. Under a lower limit the grader's sandbox cannot set its own (prlimit fails), and a check
    process that cannot write its log crashes, which would look like a student's crash."""
    _raise_soft_limit(resource.RLIMIT_FSIZE, needed, lambda hard: OSError(
        errno.EFBIG, f"{what} needs files of up to {needed >> 20} MiB, and this shell allows {_file_size(hard)}"))


def ensure_address_space(what: str, needed: int) -> None:
    """Raise the limit on a process's address space (``ulimit -v``) to `needed` bytes, else an OSError (ENOMEM)
    saying that `what` needs more. Under a lower hard limit the grader's sandbox cannot set its own (prlimit fails,
    in its words), which looked like a grader with no tests."""
    _raise_soft_limit(resource.RLIMIT_AS, needed, lambda hard: OSError(
        errno.ENOMEM, f"{what} needs {needed / 2**30:g} GiB of address space per process, and this shell allows "
                      f"{hard / 2**30:.2g} GiB (ulimit -v {hard // 1024}): raise the limit (ulimit -v unlimited)"))


class _Stopped:
    """The signal that asked the command to stop (SIGINT unless a handler here saw another), and when."""
    signum = signal.SIGINT
    at = -math.inf  # time.monotonic() of the last stop raised


SAME_STOP_SECONDS = 1.0  # a stop this soon after the last is the same request, delivered twice: a terminal sends
# Ctrl-C to the whole group, and `timeout` (or another parent in it) forwards it once more


def note_stop(signum: int) -> None:
    """For a handler of its own (the book's kernels need one): the signal that stopped the command, so that
    `run_command` exits with 128 + it."""
    _Stopped.signum = signum


def stopped_by() -> str:
    """For a command that handles the stop itself and says so: 'Ctrl-C', or the signal that stopped it."""
    return "Ctrl-C" if _Stopped.signum == signal.SIGINT else signal_name(_Stopped.signum)


def _stop(signum, frame) -> None:
    """Raise KeyboardInterrupt, unless a stop was raised less than SAME_STOP_SECONDS ago: raised again, it would
    cut short the clean-up, or the line, of the first (two chained tracebacks and a death by the signal). A stop
    that comes later is raised, in case the first was lost (Python drops one raised inside a __del__)."""
    now = time.monotonic()
    if now - _Stopped.at < SAME_STOP_SECONDS:
        return
    _Stopped.at = now
    note_stop(signum)
    raise KeyboardInterrupt


OPEN_FILES_NEEDED = 256  # files, sockets and pipes open at once: kernels or check processes, workers, channels


def ensure_open_files(what: str, needed: int = OPEN_FILES_NEEDED) -> None:
    """Raise the limit of open files (``ulimit -n``) to `needed`, else an OSError (EMFILE) saying that `what` needs
    more. Under a low limit a kernel or a grading worker fails to start half-way, which would look like a failed
    chapter or a student's crash."""
    _raise_soft_limit(resource.RLIMIT_NOFILE, needed, lambda hard: OSError(
        errno.EMFILE, f"{what} needs at least {needed} open files, and this shell allows {hard} (ulimit -n)"))


def open_closed_standard_streams() -> None:
    """Open /dev/null on each of the file descriptors 0, 1 and 2 (stdin, stdout, stderr) that is closed. Started
    with ``2>&-``, a command would otherwise have no sys.stderr (a progress bar refused it), and the first file it
    opened would take the number 2: a warning, or a worker's error text, would be written into that file. Python
    gives no sys.stderr or sys.stdin for a closed descriptor; they become streams on /dev/null here. A closed
    stdout stays sys.stdout None, so that `run_command` can say the output was lost."""
    for descriptor in (0, 1, 2):
        try:
            os.fstat(descriptor)
        except OSError:  # closed (EBADF)
            null = os.open(os.devnull, os.O_RDWR)  # the lowest free number: this one, as those before are open
            if null != descriptor:
                os.dup2(null, descriptor)
                os.close(null)
            os.set_inheritable(descriptor, True)  # os.open's are not: a child process would find it closed again
    if sys.stdin is None:
        sys.stdin = open(0, encoding="utf-8", closefd=False)
    if sys.stderr is None:
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)


def run_command(main, argv=None, name: str = "python -m minitorch", explain=None, exits: bool = False) -> int:
    """``main(argv)`` with the stops described in the module docstring; returns the exit status. `explain(error)`
    gives the rest of the line "<command> needs ..." for an error it recognises, else None (the traceback stays).
    `exits`: the caller is a command's own process, which exits with the status at once
    (``sys.exit(run_command(main, ..., exits=True))``). Once main has returned, its work is done and reported, so
    a stop that comes then is ignored until the process exits: the status is main's, with no second line. Without
    it (a test calling a command in its own process), the handlers found are put back."""
    open_closed_standard_streams()
    previous = {signum: signal.signal(signum, _stop) for signum in STOPPING_SIGNALS}
    previous[signal.SIGINT] = signal.signal(signal.SIGINT, _stop)  # Ctrl-C: KeyboardInterrupt
    _Stopped.signum, _Stopped.at = signal.SIGINT, -math.inf
    original_stdout = sys.stdout
    if sys.stdout is None:  # started with stdout closed (`>&-`): the work still runs; what it prints is lost
        sys.stdout = _ClosedStdout()
    else:  # `... | head -1`: once the reader has gone, what is printed goes nowhere, and the work goes on
        sys.stdout = _QuietOnceClosed(sys.stdout)
    try:
        status = _status_of(main, argv)
        if exits:
            ignore_stops()
        sys.stdout.flush()  # here, not at exit, so that a full disk or a closed pipe is handled below
        status = 0 if status is None else status
        if status == 128 + signal.SIGINT and _Stopped.signum != signal.SIGINT:
            status = 128 + _Stopped.signum  # main handled the stop as Ctrl-C; report the signal it was
        if status == 0 and isinstance(sys.stdout, _ClosedStdout) and sys.stdout.lost and sys.stderr is not None:
            print(f"{name}: error: standard output is closed (started with >&-), so what the command printed was "
                  f"lost; give it an output (> FILE)", file=sys.stderr)  # as `> /dev/full` fails
            status = 1
        failed = getattr(sys.stdout, "failed", None)
        if failed is not None and sys.stderr is not None:  # (> /dev/full): the work went on; its report was lost
            print(f"{name}: error: standard output could not be written ({failed.strerror or failed}), so what the "
                  f"command printed was lost; its work went on{' and is done' if status == 0 else ''}: give it an "
                  f"output that takes it (> FILE)", file=sys.stderr)
            status = status or 1
        return status
    except KeyboardInterrupt:
        if exits:  # the command is stopping: nothing may cut its line short
            ignore_stops()
        print(f"{name}: stopped by {signal_name(_Stopped.signum)}", file=sys.stderr)
        return 128 + _Stopped.signum
    except BrokenPipeError:
        _silence_stdout()
        return 128 + signal.SIGPIPE
    except MemoryError as error:  # raw from NumPy, or ours naming the array: one line, not a traceback
        what = f": {error}." if str(error) else "."
        print(f"{name}: error: out of memory{what} Give the process more memory (see `ulimit -v`) or use "
              f"smaller sizes", file=sys.stderr)
        return 1
    except OSError as error:
        if error.filename is None and error.errno is not None:  # a failed write to stdout (> /dev/full) names no
            # file, and what is still buffered would fail again at exit
            _silence_stdout()
        print(f"{name}: error: {describe_os_error(error)}", file=sys.stderr)
        return 1
    except Exception as error:  # an exercise's stub (a student edition), raised here or in a worker process
        needed = None if explain is None else explain(error)
        if needed is None:
            raise
        print(f"{_command_line(name, argv)} needs {needed}", file=sys.stderr)
        return 2
    finally:
        if sys.stdout is not original_stdout and isinstance(sys.stdout, _QuietOnceClosed):
            sys.stdout = original_stdout
        if exits:
            ignore_stops()
        else:
            for signum, handler in previous.items():
                signal.signal(signum, handler)


def _status_of(main, argv) -> int | None:
    """``main(argv)``'s status, also when it ends by SystemExit with a number: argparse's ``--help`` exits 0 once
    it has printed, and that output is checked as any command's (``--help > /dev/full`` must not say nothing)."""
    try:
        return main(argv)
    except SystemExit as stop:
        if stop.code is not None and not isinstance(stop.code, int):  # sys.exit("a message"): Python prints it
            raise
        return stop.code


def _command_line(name: str, argv) -> str:
    """The command as typed, up to its subcommand: 'python -m minitorch reproduce'."""
    words = sys.argv[1:] if argv is None else list(argv)
    subcommand = next((word for word in words if not str(word).startswith("-")), None)
    return f"{name} {subcommand}" if subcommand else name


class _ClosedStdout:
    """Standard output when the command was started without one (``>&-``): what is written is counted, and lost."""

    lost = 0

    def write(self, text: str) -> int:
        self.lost += len(text)
        return len(text)

    def flush(self) -> None:
        pass


class _QuietOnceClosed:
    """A text stream that, once a write finds its pipe closed (the reader, such as `head`, has gone), sends the
    rest to /dev/null instead of raising: a run of minutes is not lost to its log's reader leaving early. A write
    that fails otherwise (``> /dev/full``) does the same, and is kept in `failed` for `run_command` to report
    once the work is done; a character the stream's encoding lacks (LC_ALL=C) is written as its escape."""

    failed: OSError | None = None

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._close_quietly()
        except UnicodeEncodeError as error:
            return self.write(text.encode(error.encoding, "backslashreplace").decode(error.encoding))
        except OSError as error:
            self._failed(error)
        return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._close_quietly()
        except OSError as error:
            self._failed(error)

    def _failed(self, error: OSError) -> None:
        self.failed = self.failed or error
        self._close_quietly()

    def _close_quietly(self) -> None:
        _silence_stdout(self._stream)
        self._stream = open(os.devnull, "w", encoding="utf-8")

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _silence_stdout(stream=None) -> None:
    """Point stdout at /dev/null: what is still buffered would fail again when Python flushes it at exit."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, (stream or sys.stdout).fileno())
        os.close(null)
    except (OSError, ValueError):
        pass
