"""Where a student's code runs while a class is graded: the isolation, chosen once per run (chapter 00).

Three kinds, the strongest available first (``--isolation auto``):

- **bubblewrap** (the ``bwrap`` command, from the Linux distribution's package ``bubblewrap``): the
  worker runs in its own mount, PID, network and user namespaces and sees only the system's programs
  and libraries, Python, read-only, and its own scratch folder; the grader's checkout, the bundle, the
  submissions, the output folder and other students' folders do not exist for it. No process it
  starts can outlive it: when the sandbox's first process ends, the kernel ends every process in it.
- **unprivileged user** (the grader runs as root, without bubblewrap): the worker runs as a user of
  its own (a numeric uid no account uses, one per student graded at once) with no supplementary
  groups; it can write only its own scratch folder, and read what every user may read. Every process
  of that uid is killed when the student's grading ends.
- **none** (neither is possible): the worker runs as you, in its own process group, and a hostile copy
  could read and write your files. The grader says so in its first line. As root, with no isolation
  possible, the grader refuses to run unless ``--isolation none`` is given.

The grader checks the isolation before the first student: a worker tries to read the grader's library
and every folder the run must keep from students, and the first line of the run names what it could
read.
"""

from __future__ import annotations

import ctypes
import os
import pwd
import resource
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from minitorch.exercises.registry import ExerciseError
from minitorch.exercises.grader.sandboxed.worker import reap_exited

KINDS = ("bubblewrap", "unprivileged user", "none")
FIRST_WORKER_UID = 61_000  # worker uids are taken from here up, skipping any an account or a process uses
SANDBOX_ROOT = "/grading"  # inside bubblewrap: SANDBOX_ROOT/lib (read-only) and SANDBOX_ROOT/home
WORKER_MEMORY = 2 << 30  # bytes of address space per worker process, unless the machine has less to give
WORKER_PROCESSES = 64  # processes per worker uid (unprivileged user): a fork bomb stops there
WORKER_FILE_SIZE = 64 << 20  # bytes of the largest file a worker may write
SYSTEM_FOLDERS = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc/ld.so.cache", "/etc/alternatives")


class IsolationError(ExerciseError):
    """The isolation asked for cannot be had here; the message says why and what to do."""


@dataclass
class Isolation:
    """How every worker of a run is started; `kind` is one of KINDS."""

    kind: str
    python: str = sys.executable
    readable_folders: list[str] = field(default_factory=list)  # what bubblewrap shows the worker, read-only
    memory: int = WORKER_MEMORY
    exposed: list[str] = field(default_factory=list)  # guarded paths a worker could read (the check's finding)

    def describe(self) -> str:
        """One line for the top of the run."""
        if self.kind == "bubblewrap":
            text = ("bubblewrap: each student's code runs in a sandbox that sees only Python and its own "
                    "scratch folder, with no network; every process it starts ends with it")
        elif self.kind == "unprivileged user":
            text = ("an unprivileged user per student (no bubblewrap): their code can write only its scratch "
                    "folder and read what every user may read; every process of that user is killed at the end")
        else:
            text = ("NONE: the students' code runs as you and a hostile copy could read and write your files "
                    "(install bubblewrap to sandbox it)")
        if self.exposed:
            text += (f". WARNING: a worker could read {', '.join(self.exposed)}: hide them from other users "
                     f"(chmod o-rwx) or install bubblewrap")
        return text


# ----------------------------------------------------------------------
# choosing


def choose(requested: str = "auto", guarded: dict[str, str] | None = None) -> Isolation:
    """The isolation to use: `requested` (one of KINDS) or the strongest that works here ("auto"). Each kind is
    tried with a real worker process, which also tries to read each path of `guarded` ({what: path}); the
    isolation's `exposed` names what it could read."""
    if requested not in ("auto", *KINDS):
        raise IsolationError(f"--isolation must be auto, {', '.join(KINDS)}; got {requested!r}")
    guarded, problems = dict(guarded or {}), {}
    for kind in KINDS if requested == "auto" else (requested,):
        if kind == "none" and requested == "auto" and os.geteuid() == 0:
            break  # as root, the students' code would run as root: only on request
        isolation = Isolation(kind, readable_folders=_python_folders() if kind == "bubblewrap" else [],
                              memory=_worker_memory())
        try:
            readable = _try_to_read(isolation, list(guarded.values()))
        except IsolationError as error:
            problems[kind] = str(error)
            continue
        isolation.exposed = [what for what, path in guarded.items() if path in readable]
        return isolation
    found = "; ".join(f"{kind}: {problem}" for kind, problem in problems.items())
    if requested != "auto":
        raise IsolationError(f"{requested} cannot be used here: {found}")
    raise IsolationError(f"no isolation is possible ({found}). As root, the students' code would run as root: "
                         f"install bubblewrap (e.g. apt-get install bubblewrap), or pass --isolation none to accept "
                         f"that")


_TRY_TO_READ = """
import os, sys
import numpy
for path in sys.argv[1:]:
    try:
        os.listdir(path) if os.path.isdir(path) else open(path, "rb").close()
    except OSError:
        continue
    print(path)
"""


def _try_to_read(isolation: Isolation, paths: list[str]) -> list[str]:
    """Which of `paths` a worker of this isolation can read (a real worker process tries each, after importing
    NumPy); IsolationError if such a worker cannot run here."""
    if isolation.kind == "bubblewrap" and shutil.which("bwrap") is None:
        raise IsolationError("the bwrap command is not installed")
    if isolation.kind == "unprivileged user" and os.geteuid() != 0:
        raise IsolationError("the grader is not running as root, so it cannot switch to another user")
    uid = worker_uid(0) if os.geteuid() == 0 and isolation.kind != "none" else None
    script = [isolation.python, "-I", "-c", _TRY_TO_READ, *paths]
    if isolation.kind == "bubblewrap":
        command = _bubblewrap_command(isolation.readable_folders, None, None, script, uid)
        preexec = _limits(isolation.memory, uid=None)
    else:
        command, preexec = script, _limits(isolation.memory, uid=uid)
    try:
        finished = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd="/",
                                  preexec_fn=preexec, env=_base_environment("/"))
    except PermissionError as error:
        raise IsolationError(f"a worker could not start Python ({error}): it lives where other users may not go; "
                             f"use bubblewrap, or a Python installed for every user") from None
    except (OSError, subprocess.SubprocessError) as error:
        raise IsolationError(f"a worker could not start ({error})") from None
    finally:
        if isolation.kind == "unprivileged user" and uid is not None:
            kill_every_process_of(uid)
    if finished.returncode != 0:
        last = (finished.stderr.strip().splitlines() or ["(no message)"])[-1][:200]
        raise IsolationError(f"a worker could not run Python with NumPy ({last})")
    return [line for line in finished.stdout.splitlines() if line in paths]


def _python_folders() -> list[str]:
    """The folders Python, its standard library and its installed packages live in (resolved): what a sandbox
    shows read-only. Not sys.path, which holds the current folder (the grader's checkout)."""
    import site
    import sysconfig

    paths = sysconfig.get_paths()
    candidates = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable)),
                  *(paths.get(key, "") for key in ("stdlib", "platstdlib", "purelib", "platlib")),
                  *site.getsitepackages()}
    folders = sorted({os.path.realpath(path) for path in candidates if path and os.path.isdir(path)})
    system = [folder for folder in SYSTEM_FOLDERS if os.path.exists(folder)]
    kept = [folder for folder in folders
            if not any(folder == other or folder.startswith(other + os.sep) for other in system)]
    outermost = [folder for folder in kept if not any(folder.startswith(other + os.sep) for other in kept)]
    return system + outermost


def _worker_memory() -> int:
    """WORKER_MEMORY, or 60% of this machine's (or container's) memory if that is less: a worker that
    runs out fails its own test, instead of the whole container being killed with no results."""
    limits = []
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 1 << 50:
            limits.append(int(text))
    try:
        limits.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError):
        pass
    return min([WORKER_MEMORY] + [int(0.6 * limit) for limit in limits])


def worker_uid(slot: int) -> int:
    """The uid of the workers of the `slot`-th student graded at once: the slot-th free uid from
    FIRST_WORKER_UID on (no account has it)."""
    uid, free = FIRST_WORKER_UID, -1
    while True:
        try:
            pwd.getpwuid(uid)
        except KeyError:
            free += 1
            if free == slot:
                return uid
        uid += 1


# ----------------------------------------------------------------------
# starting and stopping a student's worker


@dataclass
class Worker:
    """A running worker of one student: the sandbox's process, the control socket, its uid."""

    process: subprocess.Popen
    control: socket.socket
    isolation: Isolation
    uid: int | None
    library_root: Path  # where the exercise libraries are, as the grader sees it
    library_root_inside: str  # the same folder as the worker sees it

    def library(self, exercise_folder: str) -> str:
        return f"{self.library_root_inside}/{exercise_folder}"


def start(isolation: Isolation, slot: int, library_root: Path, home: Path, output) -> Worker:
    """Start a student's worker (see worker.py) with libraries in `library_root` (read-only for it) and
    `home` as its only writable folder; its printed output goes to the file object `output`."""
    grader_end, worker_end = socket.socketpair()
    uid = worker_uid(slot) if isolation.kind != "none" and os.geteuid() == 0 else None  # (inside bubblewrap: cosmetic)
    inside = SANDBOX_ROOT + "/lib" if isolation.kind == "bubblewrap" else str(library_root)
    home_inside = SANDBOX_ROOT + "/home" if isolation.kind == "bubblewrap" else str(home)
    script = [isolation.python, "-I", f"{inside}/worker.py", str(worker_end.fileno())]
    if isolation.kind == "bubblewrap":
        command = _bubblewrap_command(isolation.readable_folders, library_root, home, script, uid)
        preexec = _limits(isolation.memory, uid=None)  # bubblewrap sets the ids inside; outside it stays ours
    else:
        command, preexec = script, _limits(isolation.memory, uid=uid)
    process = subprocess.Popen(command, cwd=str(home) if isolation.kind != "bubblewrap" else "/",
                               env=_base_environment(home_inside), stdin=subprocess.DEVNULL, stdout=output,
                               stderr=subprocess.STDOUT, pass_fds=(worker_end.fileno(),), preexec_fn=preexec)
    worker_end.close()
    return Worker(process, grader_end, isolation, uid, Path(library_root), inside)


def _bubblewrap_command(readable: list[str], library_root, home, script: list[str], uid: int | None = None) -> list:
    command = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    if uid is not None:
        command += ["--uid", str(uid), "--gid", str(uid)]
    # An empty /tmp first, then Python's folders on top: a virtual environment in /tmp stays visible.
    command += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    for folder in readable:
        command += ["--ro-bind", folder, folder]
    if library_root is not None:
        command += ["--ro-bind", str(library_root), SANDBOX_ROOT + "/lib", "--bind", str(home), SANDBOX_ROOT + "/home",
                    "--chdir", SANDBOX_ROOT + "/home"]
    return command + ["--", *script]


def _base_environment(home: str) -> dict:
    keep = ("PATH", "LANG", "LC_ALL")
    environment = {key: os.environ[key] for key in keep if key in os.environ}
    environment.update(HOME=home, TMPDIR=home, MPLBACKEND="Agg", PYTHONDONTWRITEBYTECODE="1", PYTHONHASHSEED="0",
                       OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONIOENCODING="utf-8")
    return environment


def _become(uid: int):
    def switch():
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    return switch


def _limits(memory: int, uid: int | None):
    """What runs in the child before the worker starts: a session of its own, limits, the worker's user."""
    def apply():
        os.setsid()
        for limit, value in ((resource.RLIMIT_AS, memory), (resource.RLIMIT_FSIZE, WORKER_FILE_SIZE),
                             (resource.RLIMIT_CORE, 0), (resource.RLIMIT_CPU, 3600)):
            try:
                resource.setrlimit(limit, (value, value))
            except (ValueError, OSError):
                pass
        if uid is not None:
            resource.setrlimit(resource.RLIMIT_NPROC, (WORKER_PROCESSES, WORKER_PROCESSES))
            _become(uid)()
    return apply


def stop(worker: Worker) -> None:
    """End the worker and every process it started, whatever they did (forks, daemons, new sessions)."""
    try:
        worker.control.close()
    except OSError:
        pass
    _kill_group(worker.process.pid)
    try:
        worker.process.kill()
    except ProcessLookupError:
        pass
    worker.process.wait()
    if worker.uid is not None:
        kill_every_process_of(worker.uid)
    if worker.isolation.kind == "none":
        kill_descendants()


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def processes_of(uid: int) -> list[int]:
    """The process IDs whose real uid is `uid` (from /proc)."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat(follow_symlinks=False).st_uid == uid:
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def kill_every_process_of(uid: int, patience: float = 10.0) -> None:
    """SIGKILL every process of `uid`, again until none is left: a process that forks as it dies is
    caught in the next round. (kill(-1) from a process of that uid reaches exactly its processes.)"""
    deadline = time.monotonic() + patience
    while processes_of(uid) and time.monotonic() < deadline:
        killer = os.fork()
        if killer == 0:  # the child becomes that user and signals everything that user owns
            try:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
                os.kill(-1, signal.SIGKILL)
            finally:
                os._exit(0)
        os.waitpid(killer, 0)
        time.sleep(0.02)


_PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> None:
    """Make orphaned descendants (a daemon's double fork) children of this process, so that
    `kill_descendants` finds them (Linux; elsewhere nothing happens)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def kill_descendants(patience: float = 10.0) -> None:
    """SIGKILL every descendant of this process (with `become_subreaper`, orphans included)."""
    deadline = time.monotonic() + patience
    while time.monotonic() < deadline:
        found = _descendants(os.getpid())
        if not found:
            return
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        reap_exited()
        time.sleep(0.02)


def _descendants(root: int) -> list[int]:
    parent_of = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                fields = Path(f"/proc/{entry.name}/stat").read_text().rsplit(")", 1)[1].split()
                parent_of[int(entry.name)] = int(fields[1])
            except (OSError, IndexError, ValueError):
                pass
    found, frontier = [], [root]
    while frontier:
        current = frontier.pop()
        children = [pid for pid, parent in parent_of.items() if parent == current]
        found += children
        frontier += children
    return found
