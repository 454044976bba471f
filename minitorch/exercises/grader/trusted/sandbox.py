"""Where a student's code runs while a class is graded: the isolation, chosen once per run (chapter 11).

- **bubblewrap** (``bwrap``): the worker runs in namespaces of its own, with no network, and sees only Python,
  NumPy and the libraries they load, read-only, its own library and a scratch folder; when the sandbox's first
  process ends the kernel ends every process in it.
- **chroot** (root where bubblewrap cannot make namespaces, as in Gradescope's Docker container): coreutils'
  ``chroot`` starts the worker in a root of its own that holds the same (`worker_root`) and nothing else: no
  checkout, no other user's file, no /proc, /run or shared folder; it is removed when the worker stops. The
  worker shares the machine's network: the run's first line says so.
- **none**, only when asked for by name: the worker runs as the grader's own user.

As root, each student graded at once gets users of their own (`fresh_uid`: uids drawn at random, unused by any
account or process), with no groups and no capabilities; every process of them is killed when the student's
check ends (`kill_users`). Limits: per process everywhere (``prlimit``: address space, file size, CPU time, no
core dumps, processes of the student's user), and where systemd runs one budget for all of a student's
processes (``systemd-run --scope``: memory, tasks, one CPU core).
"""

from __future__ import annotations

import grp
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from minitorch.exercises.grader.trusted import worker_root
from minitorch.exercises.registry import ExerciseError

KINDS = ("bubblewrap", "chroot", "none")
SANDBOX_ROOT = "/grading"  # inside the sandbox: SANDBOX_ROOT/lib (its library, read-only), SANDBOX_ROOT/home
WORKER_MEMORY = 2 << 30  # bytes of address space per process (per student with systemd), at most 60% of the machine
WORKER_PROCESSES = 32  # processes and threads of a student's user (an honest worker needs four)
WORKER_FILE_SIZE = 64 << 20  # bytes of the largest file a worker may write
WORKER_CPU_SECONDS = 3600  # per process
UID_BLOCK = 64  # users per student graded at once: its workers take them in turn
SCRATCH_SIZE = 256 << 20  # bytes of bubblewrap's scratch home and of its /tmp, each a tmpfs
CHECK_PROCESS_MEMORY = 1 << 30  # bytes of address space of a check process: no request can take the machine
SYSTEM_FOLDERS = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc/ld.so.cache", "/etc/alternatives")
RUN_MARKER_VARIABLE = "MINITORCH_GRADING_RUN"  # names this run's workers (a test sets it to find its own)
RUN_MARKER = os.environ.get(RUN_MARKER_VARIABLE) or f"run{os.getpid()}x{secrets.token_hex(3)}"


class IsolationError(ExerciseError):
    """The isolation asked for cannot be had here; the message says why and what to do."""


@dataclass
class Isolation:
    """How every worker of a run is started; `kind` is one of KINDS. (Sent to each check process as JSON.)"""

    kind: str
    python: str = sys.executable
    tree: str = ""  # as root: what a worker sees of the machine (`worker_root`)
    readable_folders: list[str] = field(default_factory=list)  # bubblewrap not as root: what it shows, read-only
    memory: int = WORKER_MEMORY
    processes: int = WORKER_PROCESSES
    scratch_size: int = SCRATCH_SIZE
    sized_tmpfs: bool = False  # bubblewrap: its --size option sizes the home and /tmp
    systemd: bool = False  # each worker in a systemd scope with the student's budget
    passed_over: str = ""  # why bubblewrap could not be had
    run_marker: str = RUN_MARKER

    def fresh_uid(self) -> int | None:
        """The first of a student's UID_BLOCK users (None where the grader is not root, or in `none`)."""
        return fresh_uid() if self.tree else None

    def describe(self) -> str:
        """One line for the top of the run: the isolation, what it does not guard, the limits."""
        own = "as a user of its own, " if self.tree else ""
        if self.kind == "bubblewrap":
            text = (f"bubblewrap: each student's code runs {own}in a sandbox that sees only Python, NumPy, its "
                    f"library and its own scratch folder, with no network; every process it starts ends with it")
        elif self.kind == "chroot":
            text = (f"chroot{f' ({self.passed_over})' * bool(self.passed_over)}. NOT "
                    f"GUARDED: the network; students' code can reach the internet and, graded at the same time, "
                    f"each other's localhost ports and abstract sockets. Each student's code runs {own}in a root "
                    f"of its own that holds only Python, NumPy, its library and its scratch folder, removed when "
                    f"its check ends; every process of that user ends with it")
        else:
            text = ("NONE: the students' code runs as the grader's user (you), unsandboxed: a hostile copy can read "
                    "and write your files and reach the network (install bubblewrap to sandbox it)")
        return f"{text}. {self.describe_limits()}"

    def describe_limits(self) -> str:
        """One line: the limits in force for each student."""
        scratch = f"a tmpfs of {_size(self.scratch_size)}, /tmp too" if self.sized_tmpfs else "on the grader's disk"
        disk = f"files up to {_size(WORKER_FILE_SIZE)} each, " + (f"scratch folder {scratch}" if self.kind ==
                                                                   "bubblewrap" else "on the grader's disk")
        if self.systemd:
            return (f"Limits per student (a systemd scope): {_size(self.memory)} of memory, {self.processes} "
                    f"processes and threads and one CPU core for all of its processes together; {disk}")
        processes = f"{self.processes} processes and threads for its user" if self.tree else "no process limit"
        return f"Limits per PROCESS (no systemd): {_size(self.memory)} of address space each, {processes}; {disk}"


def _size(count: int) -> str:
    return f"{count / 2**30:.1f} GiB" if count >= 2**30 else f"{count / 2**20:.0f} MiB"


def choose(requested: str = "auto", guarded: dict[str, str] | None = None, students_at_once: int = 1) -> Isolation:
    """The isolation to use: `requested` (one of KINDS), or for "auto" bubblewrap, else chroot (as root); `none`
    only by name. Each is tried with a real worker, which also looks for each path of `guarded` ({what: path}):
    a sandbox that shows it one is refused. Each student's memory is the machine's share for one of
    `students_at_once` students."""
    if requested not in ("auto", *KINDS):
        raise IsolationError(f"--isolation must be auto, {', '.join(KINDS)}; got {requested!r}")
    guarded, problems = dict(guarded or {}), []
    for kind in ("bubblewrap", "chroot") if requested == "auto" else (requested,):
        try:
            isolation = _isolation(kind, students_at_once, "; ".join(problems))
            seen = _what_it_sees(isolation, list(guarded.values()))
        except IsolationError as error:
            problems.append(f"{kind}: {error}")
            continue
        exposed = [f"{what} ({path})" for what, path in guarded.items() if path in seen]
        if exposed and kind != "none":
            raise IsolationError(f"{kind} let a student's worker see {', '.join(exposed)}: it does not isolate here")
        return isolation
    raise IsolationError(f"no isolation is possible here ({'; '.join(problems)}). Install bubblewrap (apt-get "
                         f"install bubblewrap) or run as root; --isolation none runs the students' code as you")


def _isolation(kind: str, students_at_once: int, passed_over: str) -> Isolation:
    root = os.geteuid() == 0
    if kind == "bubblewrap" and shutil.which("bwrap") is None:
        raise IsolationError("the bwrap command is not installed")
    if kind == "chroot" and not root:
        raise IsolationError("only root can give a worker a root and a user of its own")
    try:
        tree = worker_root.tree(sys.executable) if root and kind != "none" else ""
        sized = kind == "bubblewrap" and "--size" in subprocess.run(["bwrap", "--help"], capture_output=True,
                                                                   text=True, timeout=60).stdout  # (0.7 and later)
    except (OSError, ValueError, subprocess.SubprocessError) as error:
        raise IsolationError(f"what a worker needs could not be gathered ({str(error)[:300]})") from None
    return Isolation(kind, tree=tree, readable_folders=_python_folders() if kind == "bubblewrap" and not tree else [],
                     memory=_worker_memory(students_at_once), sized_tmpfs=sized, passed_over=passed_over,
                     systemd=root and kind != "none" and os.path.isdir("/run/systemd/system"))


_WHAT_IT_SEES = "import os, sys, numpy; print(*[path for path in sys.argv[1:] if os.path.lexists(path)], sep='\\n')"


def _what_it_sees(isolation: Isolation, paths: list[str]) -> list[str]:
    """Which of `paths` exist for a worker of this isolation, after importing NumPy, with a library and home where
    the students' will be (in the temporary folder); IsolationError if no worker runs."""
    uid, folder = isolation.fresh_uid(), Path(tempfile.mkdtemp(prefix="minitorch-probe-"))
    os.chmod(folder, 0o711)
    root = None
    try:
        command, root = _command(isolation, [isolation.python, "-I", "-c", _WHAT_IT_SEES, *paths], uid, folder,
                                 folder)
        finished = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd="/",
                                  env=_environment("/", isolation.run_marker))
    except (OSError, subprocess.SubprocessError) as error:
        raise IsolationError(f"a worker could not start ({error})") from None
    finally:
        _clean_up(uid, root)
        shutil.rmtree(folder, ignore_errors=True)
    if finished.returncode != 0:
        last = (finished.stderr.strip().splitlines() or ["(no message)"])[-1][:200]
        raise IsolationError(f"a worker could not start, or run Python with NumPy ({last})")
    return [line for line in finished.stdout.splitlines() if line in paths]


def _python_folders() -> list[str]:
    """The system's folders and Python's (its prefixes, standard library and packages, resolved): what bubblewrap
    shows a worker when the grader is not root. Not sys.path, which holds the current folder (the checkout)."""
    import site
    import sysconfig

    candidates = {sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable)),
                  *sysconfig.get_paths().values(), *site.getsitepackages()}
    system = [folder for folder in SYSTEM_FOLDERS if os.path.exists(folder)]
    folders = sorted({os.path.realpath(path) for path in candidates if os.path.isdir(path)} - set(system))
    return system + [folder for folder in folders if not any(folder.startswith(other + os.sep)
                                                             for other in system + folders)]


def _worker_memory(students_at_once: int = 1) -> int:
    """WORKER_MEMORY, or one student's share of 60% of this machine's (or container's) memory if that is less."""
    limits = [os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")]
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        text = Path(path).read_text().strip() if os.path.exists(path) else ""
        limits += [int(text)] if text.isdigit() else []
    return min([WORKER_MEMORY] + [int(0.6 * limit) // max(1, students_at_once) for limit in limits])


# ----------------------------------------------------------------------
# starting and stopping a student's worker


def _command(isolation: Isolation, script: list[str], uid: int | None, library_root: Path | None = None,
             home: Path | None = None) -> tuple[list[str], Path | None]:
    """The command that runs `script` in this isolation as `uid`, with `library_root` as its library and `home`
    its scratch folder (if given); and the worker's own root, if one was made (chroot)."""
    limits = ["systemd-run", "--scope", "--quiet", "--collect", "-p", f"MemoryMax={isolation.memory}", "-p",
              f"TasksMax={isolation.processes}", "-p", "CPUQuota=100%", "--"] if isolation.systemd else []
    limits += ["prlimit", f"--as={isolation.memory}", f"--fsize={WORKER_FILE_SIZE}", f"--cpu={WORKER_CPU_SECONDS}",
               "--core=0", *[f"--nproc={isolation.processes}"] * (uid is not None), "--"]
    if isolation.kind == "chroot":
        root = worker_root.own_root(isolation.tree, uid, library_root, home.parent if home else None)
        return [*limits, "chroot", f"--userspec={uid}:{uid}", f"--groups={uid}", str(root), *script], root
    if isolation.kind == "none":
        return [*limits, *script], None
    if uid is not None:  # bubblewrap started as the student's user: the process limit counts its processes
        limits += ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]
    sized = ["--size", str(isolation.scratch_size)] if isolation.sized_tmpfs else []
    command = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    shown = [(folder, folder) for folder in isolation.readable_folders]
    if isolation.tree:  # (what the tree holds in /tmp, a virtual environment say, goes on top of the empty /tmp)
        command += ["--ro-bind", isolation.tree, "/"]
        shown += [(f"{isolation.tree}/tmp/{name}", f"/tmp/{name}") for name in os.listdir(isolation.tree + "/tmp")]
    command += ["--proc", "/proc", "--dev", "/dev", *sized, "--tmpfs", "/tmp"]
    for source, target in shown:
        command += ["--ro-bind", source, target]
    if library_root is not None:
        command += ["--ro-bind", str(library_root), SANDBOX_ROOT + "/lib", "--chdir", SANDBOX_ROOT + "/home"]
        command += [*sized, "--tmpfs", SANDBOX_ROOT + "/home"] if sized else ["--bind", str(home), SANDBOX_ROOT
                                                                              + "/home"]
    return [*limits, *command, "--", *script], None


def _environment(home: str, run_marker: str, worker: str = "") -> dict:
    environment = {key: os.environ[key] for key in ("PATH", "LANG", "LC_ALL") if key in os.environ}
    environment.update(HOME=home, TMPDIR=home, MPLBACKEND="Agg", PYTHONDONTWRITEBYTECODE="1", PYTHONHASHSEED="0",
                       OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONIOENCODING="utf-8")
    environment[RUN_MARKER_VARIABLE], environment[RUN_MARKER_VARIABLE + "_WORKER"] = run_marker, worker
    return environment


@dataclass
class Worker:
    """A running worker of one student: the sandbox's process, its control socket, its user, its root."""

    process: subprocess.Popen
    control: socket.socket
    uid: int | None
    library_root_inside: str  # the student's library, as the worker sees it
    root: Path | None = None  # its own root (chroot), removed when it stops
    marker: str = ""  # in its environment: how `none` finds its processes
    idle_processes: int | None = None  # how many processes the worker has between exercises (counted once)

    def library(self, exercise_folder: str) -> str:
        return f"{self.library_root_inside}/{exercise_folder}"

    def outlived_by_processes(self) -> bool:
        """Whether, between two exercises, processes an exercise started still hold part of the student's
        budget: the next exercise would start with less than the whole."""
        now = len(processes_of(self.uid)) if self.uid is not None else 0
        self.idle_processes = now if self.idle_processes is None else self.idle_processes
        return now > self.idle_processes


def start(isolation: Isolation, library_root: Path, home: Path, output, uid: int | None = None) -> Worker:
    """Start a student's worker (see worker.py) as `uid` with its library `library_root` (read-only for it) and a
    scratch home (`home`, or one of its own); its printed output goes to the file object `output`."""
    grader_end, worker_end = socket.socketpair()
    sandboxed = isolation.kind != "none"
    inside, home_inside = (SANDBOX_ROOT + "/lib", SANDBOX_ROOT + "/home") if sandboxed else (library_root, home)
    if uid is not None and isolation.kind == "bubblewrap" and not isolation.sized_tmpfs:
        os.chown(home, uid, uid)  # (its home on the grader's disk)
    marker, script = secrets.token_hex(8), [isolation.python, "-I", f"{inside}/worker.py", str(worker_end.fileno())]
    command, root = _command(isolation, script, uid, library_root, home)
    try:
        process = subprocess.Popen(command, cwd="/" if sandboxed else home, start_new_session=True,
                                   env=_environment(str(home_inside), isolation.run_marker, marker),
                                   stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                                   pass_fds=(worker_end.fileno(),))
    except BaseException:
        _clean_up(uid, root)
        raise
    finally:
        worker_end.close()
    return Worker(process, grader_end, uid, str(inside), root, marker)


def stop(worker: Worker) -> None:
    """End the worker and every process it started, whatever they did (forks, daemons, new sessions)."""
    worker.control.close()
    for pid in [-worker.process.pid, *processes_of_run(worker.marker, RUN_MARKER_VARIABLE + "_WORKER")]:
        try:  # (its process group, and its processes found by their marker: what `none` has; the rest has a user)
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    worker.process.wait()
    _clean_up(worker.uid, worker.root)


def _clean_up(uid: int | None, root: Path | None) -> None:
    if uid is not None:
        kill_users(uid)
    if root is not None:
        shutil.rmtree(root, ignore_errors=True)


# ----------------------------------------------------------------------
# a student's users, and the processes of a run


def fresh_uid() -> int:
    """The first of UID_BLOCK uids that no account, group or process (a zombie included) uses, drawn at random
    among those this machine (or container) maps. A student's k-th worker runs as the k-th of them (in turn):
    the zombies an earlier worker left count against its user's process limit until they are reaped."""
    ranges = [(max(first, 100_000), min(first + count, 1 << 31) - UID_BLOCK) for first, _, count in
              (map(int, line.split()) for line in Path("/proc/self/uid_map").read_text().splitlines())]
    ranges = [(low, high) for low, high in ranges if high - low > 10_000] or [(20_000, 60_000)]
    in_use = {_owner(pid, zombies=True) for pid in _pids()} | {account.pw_uid for account in pwd.getpwall()} | \
        {group.gr_gid for group in grp.getgrall()}
    while True:
        low, high = ranges[secrets.randbelow(len(ranges))]
        if in_use.isdisjoint(range(first := low + secrets.randbelow(high - low), first + UID_BLOCK)):
            return first


def kill_users(first: int, count: int = 1, patience: float = 10.0) -> None:
    """SIGKILL every process of the `count` uids from `first` on: for each uid, a child that becomes that user sends
    kill(-1), which the kernel delivers to all of its processes at once (a fork cannot slip through); again until
    none is left."""
    deadline = time.monotonic() + patience
    while (found := processes_of(first, count)) and time.monotonic() < deadline:
        for uid in {_owner(pid) for pid in found} - {None}:
            if (killer := os.fork()) == 0:
                try:
                    os.setgroups([])
                    os.setgid(uid)
                    os.setuid(uid)
                    os.kill(-1, signal.SIGKILL)
                finally:
                    os._exit(0)
            os.waitpid(killer, 0)
        time.sleep(0.02)


def _pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _owner(pid: int, zombies: bool = False) -> int | None:
    """The uid of a live process (of a zombie too if `zombies`: it has ended, and waits for its parent)."""
    try:
        if zombies or Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
            return os.stat(f"/proc/{pid}").st_uid
    except (OSError, IndexError):
        pass
    return None


def processes_of(uid: int, count: int = 1) -> list[int]:
    """The live processes of `uid` (and of the `count` - 1 uids after it)."""
    return [pid for pid in _pids() if uid <= (_owner(pid) or -1) < uid + count]


def processes_of_run(marker: str, variable: str = RUN_MARKER_VARIABLE) -> list[int]:
    """The live processes, this one aside, whose environment sets `variable` to `marker` (by default: a run's
    workers): what a check for survivors of a run counts."""
    needle, found = f"{variable}={marker}".encode(), []
    for pid in _pids():
        try:
            if needle in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0") and pid != os.getpid():
                found += [pid] if _owner(pid) is not None else []
        except OSError:
            pass
    return found


def check_process_limits() -> list[str]:
    """The command prefix that runs a check process (the grader's own, answering one student) under its memory
    limit, CHECK_PROCESS_MEMORY of address space: a request that slipped past every check fails, alone. (A soft
    limit: the workers it starts set their own, which a hard one could forbid; no student code runs in it.)"""
    return ["prlimit", f"--as={CHECK_PROCESS_MEMORY}:unlimited", "--"] if shutil.which("prlimit") else []


class MachineWatch:
    """Whether the machine, not the grader, ended a process (made before it starts, asked after it ended)."""

    def __init__(self):
        self.oom_kills = _machine_oom_kills()

    def ran_out(self, status: int | None) -> str:
        """'' if a process that ended with `status` (a Popen return code) was not ended by a signal; "memory" if the
        kernel's OOM killer (counted in /proc/vmstat) killed a process meanwhile; else the signal's name."""
        if status is None or status >= 0:
            return ""
        known = {number.value: number.name for number in signal.Signals}
        return "memory" if _machine_oom_kills() > self.oom_kills else known.get(-status, f"signal {-status}")


def _machine_oom_kills() -> int:
    found = re.search(r"^oom_kill (\d+)", Path("/proc/vmstat").read_text() if os.path.exists("/proc/vmstat") else "",
                      re.M)
    return int(found.group(1)) if found else 0
