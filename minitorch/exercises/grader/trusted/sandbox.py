"""Where a student's code runs while a class is graded: the isolation, chosen once per run (chapter 11).

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
and every folder the run must keep from students; a guarded folder a worker could read stops the run
(unprivileged user), and the first line of the run names the isolation and the limits in force.

Limits are per student, not per process, wherever the kernel lets the grader make a control group
(`cgroups`, as root): memory, processes and threads, and CPU for all of one student's processes together;
the scratch home and the sandbox's /tmp are each a tmpfs of SCRATCH_SIZE (bubblewrap, or the namespaces
of the unprivileged user mode), whose pages count against the student's memory too. Where no group can
be made, each process gets RLIMIT_AS, and the student's uid RLIMIT_NPROC.

As root without bubblewrap, the worker also gets PID, network, IPC and mount namespaces of its own
(`unshare`, from util-linux) where the kernel allows them: private /tmp, /var/tmp and /dev/shm, no
network, not even a localhost shared with other students, and only its own processes in /proc.

Every worker carries the run's marker (RUN_MARKER_VARIABLE in its environment, and in its cgroup's
name), so that a check for surviving processes can count one run's processes only.
"""

from __future__ import annotations

import ctypes
import os
import fcntl
import json
import pwd
import resource
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from minitorch.exercises.grader.trusted import cgroups
from minitorch.exercises.registry import ExerciseError
from minitorch.exercises.grader.sandboxed.worker import reap_exited

KINDS = ("bubblewrap", "unprivileged user", "none")
FIRST_WORKER_UID = 62_000  # worker uids from here up (graders before the uid registry killed 61000+ machine-wide)
SANDBOX_ROOT = "/grading"  # inside bubblewrap: SANDBOX_ROOT/lib (read-only) and SANDBOX_ROOT/home
WORKER_MEMORY = 2 << 30  # bytes per student (cgroup), and of address space per process, unless the machine has less
WORKER_PROCESSES = 128  # processes and threads per student (cgroup), or processes per worker uid (RLIMIT_NPROC)
WORKER_FILE_SIZE = 64 << 20  # bytes of the largest file a worker may write
SCRATCH_SIZE = 256 << 20  # bytes of the scratch home, and of the sandbox's /tmp, each (a tmpfs)
SYSTEM_FOLDERS = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc/ld.so.cache", "/etc/alternatives")
RUN_MARKER_VARIABLE = "MINITORCH_GRADING_RUN"  # names this run's workers (a test sets it to find its own)
RUN_MARKER = os.environ.get(RUN_MARKER_VARIABLE) or f"run{os.getpid()}x{secrets.token_hex(3)}"
SHARED_WITHOUT_NAMESPACES = ("/tmp, /var/tmp and /dev/shm, abstract unix sockets and localhost ports, the network, "
                             "and every process's command line")


class IsolationError(ExerciseError):
    """The isolation asked for cannot be had here; the message says why and what to do."""


@dataclass
class Isolation:
    """How every worker of a run is started; `kind` is one of KINDS. (Sent to each check process as JSON.)"""

    kind: str
    python: str = sys.executable
    readable_folders: list[str] = field(default_factory=list)  # what bubblewrap shows the worker, read-only
    memory: int = WORKER_MEMORY  # bytes: the student's budget (cgroup), and each process's address space
    exposed: list[str] = field(default_factory=list)  # guarded paths a worker could read (the check's finding)
    processes: int = WORKER_PROCESSES
    scratch_size: int = SCRATCH_SIZE
    cgroups: str = ""  # "" if every student gets a cgroup, else why not (then the limits are per process)
    namespaces: str = "no"  # unprivileged user: "" if unshare gives each worker its namespaces, else why not
    sized_tmpfs: bool = False  # bubblewrap: its --size option sizes the home and /tmp
    hidden: list[str] = field(default_factory=list)  # guarded folders covered up inside the worker's namespace
    run_marker: str = RUN_MARKER

    def in_namespaces(self) -> bool:
        """Whether each worker gets PID, network, IPC and mount namespaces from unshare (unprivileged user)."""
        return self.kind == "unprivileged user" and not self.namespaces

    def describe(self) -> str:
        """One line for the top of the run: the isolation, what students can still share, the limits."""
        if self.kind == "bubblewrap":
            text = ("bubblewrap: each student's code runs in a sandbox that sees only Python and its own "
                    "scratch folder, with no network; every process it starts ends with it")
        elif self.in_namespaces():
            text = ("an unprivileged user per student (no bubblewrap), in namespaces of its own (unshare): their "
                    "code sees only its own processes, a private /tmp, /var/tmp and /dev/shm, no network; it can "
                    "write only its scratch folder and read what every user may read; every process of it ends "
                    "with it")
        elif self.kind == "unprivileged user":
            text = (f"an unprivileged user per student (no bubblewrap, and no namespaces: {self.namespaces}): their "
                    f"code can write only its scratch folder and read what every user may read; every process of "
                    f"that user is killed at the end. Students graded at the same time can still share "
                    f"{SHARED_WITHOUT_NAMESPACES}")
        else:
            text = ("NONE: the students' code runs as you and a hostile copy could read and write your files "
                    "(install bubblewrap to sandbox it)")
        if self.exposed:
            text += (f". WARNING: a worker could read {', '.join(self.exposed)}: hide them from other users "
                     f"(chmod o-rwx) or install bubblewrap")
        return f"{text}. {self.describe_limits()}"

    def describe_limits(self) -> str:
        """One line: the limits in force for each student."""
        memory, scratch = _size(self.memory), _size(self.scratch_size)
        if self.kind == "bubblewrap" and self.sized_tmpfs or self.in_namespaces():
            disk = f"scratch home and /tmp {scratch} each (tmpfs" + (", counted in the memory)" if not self.cgroups
                                                                      else ")")
        elif self.kind == "bubblewrap":
            disk = (f"/tmp in memory, unsized (this bubblewrap has no --size), scratch home on disk, files up to "
                    f"{_size(WORKER_FILE_SIZE)}")
        else:
            disk = f"scratch home on the grader's disk, files up to {_size(WORKER_FILE_SIZE)} each (no size for it)"
        if not self.cgroups:
            cpu = ", one CPU core" if cgroups.limits_cpu() else ""
            return (f"Limits per student (a cgroup each): {memory} of memory and {self.processes} processes and "
                    f"threads for all of its processes together{cpu}; {disk}")
        nproc = {"unprivileged user": f"{self.processes} processes for its uid", "none": "no process limit",
                 "bubblewrap": "no process limit (RLIMIT_NPROC does not reach into bubblewrap started as root)"}
        return (f"Limits per PROCESS only (no cgroup: {self.cgroups}): {memory} of address space each, "
                f"{nproc[self.kind]}; {disk}")


def _size(count: int) -> str:
    return f"{count / 2**30:.1f} GiB" if count >= 2**30 else f"{count / 2**20:.0f} MiB"


# ----------------------------------------------------------------------
# choosing


def choose(requested: str = "auto", guarded: dict[str, str] | None = None, students_at_once: int = 1) -> Isolation:
    """The isolation to use: `requested` (one of KINDS) or the strongest that works here ("auto"). Each kind is
    tried with a real worker process, which also tries to read each path of `guarded` ({what: path}); the
    isolation's `exposed` names what it could read. As an unprivileged user, a readable guarded path stops the run.
    Each student's memory is the machine's share for one of `students_at_once` students."""
    if requested not in ("auto", *KINDS):
        raise IsolationError(f"--isolation must be auto, {', '.join(KINDS)}; got {requested!r}")
    guarded, problems = dict(guarded or {}), {}
    limits = {"memory": _worker_memory(students_at_once), "cgroups": cgroups.describe_failure()}
    for kind in KINDS if requested == "auto" else (requested,):
        if kind == "none" and requested == "auto" and os.geteuid() == 0:
            break  # as root, the students' code would run as root: only on request
        found = _first_that_runs(kind, guarded, limits, problems)
        if found is None:
            continue
        isolation, readable = found
        isolation.exposed = [what for what, path in guarded.items() if path in readable]
        if isolation.exposed and kind == "unprivileged user":
            raise IsolationError(f"a student's worker could read {', '.join(isolation.exposed)} "
                                 f"({', '.join(guarded[what] for what in isolation.exposed)}): make them unreadable "
                                 f"to other users (chmod -R o-rwx), or install bubblewrap")
        return isolation
    found = "; ".join(f"{kind}: {problem}" for kind, problem in problems.items())
    if requested != "auto":
        raise IsolationError(f"{requested} cannot be used here: {found}")
    raise IsolationError(f"no isolation is possible ({found}). As root, the students' code would run as root: "
                         f"install bubblewrap (e.g. apt-get install bubblewrap), or pass --isolation none to accept "
                         f"that")


def _first_that_runs(kind: str, guarded: dict[str, str], limits: dict, problems: dict):
    """(isolation, the guarded paths its worker could read) for the first variant of `kind` whose worker runs
    here (the unprivileged user: in namespaces of its own first, then without); None if none does (`problems`
    says why)."""
    for in_namespaces in ((True, False) if kind == "unprivileged user" else (False,)):
        isolation = Isolation(kind, readable_folders=_python_folders() if kind == "bubblewrap" or in_namespaces else [],
                              namespaces="" if in_namespaces else "no", hidden=sorted(guarded.values()) if
                              in_namespaces else [], sized_tmpfs=kind == "bubblewrap" and _bubblewrap_sizes_tmpfs(),
                              **limits)
        try:
            readable = _try_to_read(isolation, list(guarded.values()))
        except IsolationError as error:
            problems[kind + (" in namespaces" if in_namespaces else "")] = str(error)
            continue
        if kind == "unprivileged user" and not in_namespaces:  # what unshare said is the first line's reason
            isolation.namespaces = problems.pop(kind + " in namespaces", "unshare failed")
        return isolation, readable
    return None


def _bubblewrap_sizes_tmpfs() -> bool:
    """Whether the installed bubblewrap has --size (0.7 and later): a tmpfs of a given size."""
    try:
        shown = subprocess.run(["bwrap", "--help"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return "--size" in shown.stdout + shown.stderr


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
    if isolation.in_namespaces() and shutil.which("unshare") is None:
        raise IsolationError("the unshare command (util-linux) is not installed")
    uid = worker_uid(0, isolation.run_marker) if os.geteuid() == 0 and isolation.kind != "none" else None
    script = [isolation.python, "-I", "-c", _TRY_TO_READ, *paths]
    command, preexec = _command(isolation, script, uid, None, None), _limits(isolation, uid, None)
    try:
        finished = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd="/",
                                  preexec_fn=preexec, env=_base_environment("/", isolation.run_marker))
    except PermissionError as error:
        raise IsolationError(f"a worker could not start Python ({error}): it lives where other users may not go; "
                             f"use bubblewrap, or a Python installed for every user") from None
    except (OSError, subprocess.SubprocessError) as error:
        raise IsolationError(f"a worker could not start ({error})") from None
    finally:
        if isolation.kind == "unprivileged user" and uid is not None:
            kill_every_process_of(uid, isolation.run_marker)
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


def _worker_memory(students_at_once: int = 1) -> int:
    """WORKER_MEMORY, or the share of one of `students_at_once` students in 60% of this machine's (or
    container's) memory if that is less: a student who runs out fails their own test, instead of the
    kernel killing another student's processes or the whole container."""
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
    return min([WORKER_MEMORY] + [int(0.6 * limit) // max(1, students_at_once) for limit in limits])


# ----------------------------------------------------------------------
# worker uids (unprivileged user): allocated under a lock, never one in use


UID_REGISTRY = Path("/run/minitorch-grading-uids.json")  # {uid: [run marker, slot, pid, its start time]}, root's


def worker_uid(slot: int, run_marker: str = "") -> int:
    """The uid of the workers of the `slot`-th student graded at once by the run `run_marker` (this process's
    run by default): the same uid for the whole run, taken under a lock from FIRST_WORKER_UID up, skipping any
    uid an account, a process or another live run uses."""
    run_marker = run_marker or RUN_MARKER
    with _registry() as taken:
        for uid, (marker, its_slot, _, _) in taken.items():
            if marker == run_marker and its_slot == slot:
                return int(uid)
        in_use = {str(uid) for uid in _uids_of_processes()} | set(taken)
        uid = FIRST_WORKER_UID
        while str(uid) in in_use or _is_an_account(uid):
            uid += 1
        taken[str(uid)] = [run_marker, slot, os.getpid(), _start_time(os.getpid())]
        return uid


def uid_is_ours(uid: int, run_marker: str = "") -> bool:
    """Whether `uid` was allocated by the run `run_marker` (this process's run by default)."""
    with _registry() as taken:
        return taken.get(str(uid), [None])[0] == (run_marker or RUN_MARKER)


class _registry:
    """The uid registry, locked (fcntl) while in use: entries of runs whose process has ended are dropped."""

    def __enter__(self) -> dict:
        UID_REGISTRY.parent.mkdir(parents=True, exist_ok=True)
        self.lock = open(str(UID_REGISTRY) + ".lock", "a")
        fcntl.flock(self.lock, fcntl.LOCK_EX)
        try:
            taken = json.loads(UID_REGISTRY.read_text())
        except (OSError, ValueError):
            taken = {}
        self.taken = {uid: entry for uid, entry in taken.items()
                      if isinstance(entry, list) and len(entry) == 4 and _start_time(entry[2]) == entry[3]}
        self.before = json.dumps(self.taken, sort_keys=True)
        return self.taken

    def __exit__(self, *exception) -> None:
        try:
            if json.dumps(self.taken, sort_keys=True) != self.before:
                aside = UID_REGISTRY.with_suffix(".new")
                aside.write_text(json.dumps(self.taken))
                os.replace(aside, UID_REGISTRY)
        finally:
            self.lock.close()  # (closing releases the lock)


def _start_time(pid: int) -> str:
    """When process `pid` started (ticks since boot), or '' if it is gone: a pid reused later differs here."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def _is_an_account(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
        return True
    except KeyError:
        return False


def _uids_of_processes() -> set[int]:
    found = set()
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                found.add(entry.stat(follow_symlinks=False).st_uid)
            except OSError:
                pass
    return found


# ----------------------------------------------------------------------
# starting and stopping a student's worker


@dataclass
class Worker:
    """A running worker of one student: the sandbox's process, the control socket, its uid, its cgroup."""

    process: subprocess.Popen
    control: socket.socket
    isolation: Isolation
    uid: int | None
    library_root: Path  # where the exercise libraries are, as the grader sees it
    library_root_inside: str  # the same folder as the worker sees it
    group: cgroups.StudentGroup | None = None  # all of the worker's processes, with the student's budget
    events: dict = field(default_factory=dict)  # what the kernel did to the group (kept when it is removed)
    idle_processes: int | None = None  # how many processes the worker has between exercises (counted once)

    def library(self, exercise_folder: str) -> str:
        return f"{self.library_root_inside}/{exercise_folder}"

    def processes(self) -> int:
        """How many processes the student's worker has now: in its cgroup, else of its uid (None if neither)."""
        if self.group is not None:
            return len(self.group.processes())
        return len(processes_of(self.uid)) if self.uid is not None and self.isolation.kind != "none" else None

    def outlived_by_processes(self) -> bool:
        """Whether, between two exercises, processes an exercise started (a fork that its child's end did not
        end) still hold part of the student's budget: the next exercise would start with less than the whole."""
        now = self.processes()
        if self.idle_processes is None:
            self.idle_processes = now
        return now is not None and now > self.idle_processes


def start(isolation: Isolation, slot: int, library_root: Path, home: Path, output) -> Worker:
    """Start a student's worker (see worker.py) with libraries in `library_root` (read-only for it) and
    `home` as its only writable folder; its printed output goes to the file object `output`."""
    uid = worker_uid(slot, isolation.run_marker) if isolation.kind != "none" and os.geteuid() == 0 else None
    group = None
    if not isolation.cgroups:
        try:
            group = cgroups.StudentGroup(f"{isolation.run_marker}-slot{slot}",
                                         cgroups.Budget(isolation.memory, isolation.processes))
        except cgroups.CgroupError as error:  # (made for every worker before: this is a surprise, not a plan)
            print(f"Note: no cgroup for this worker ({error}); its limits are per process", file=output, flush=True)
    grader_end, worker_end = socket.socketpair()
    inside = SANDBOX_ROOT + "/lib" if isolation.kind == "bubblewrap" else str(library_root)
    home_inside = SANDBOX_ROOT + "/home" if isolation.kind == "bubblewrap" else str(home)
    script = [isolation.python, "-I", f"{inside}/worker.py", str(worker_end.fileno())]
    sandboxed = isolation.kind == "bubblewrap" or isolation.in_namespaces()  # (they start in "/", then go home)
    try:
        process = subprocess.Popen(_command(isolation, script, uid, library_root, home),
                                   cwd="/" if sandboxed else str(home),
                                   env=_base_environment(home_inside, isolation.run_marker), stdin=subprocess.DEVNULL,
                                   stdout=output, stderr=subprocess.STDOUT, pass_fds=(worker_end.fileno(),),
                                   preexec_fn=_limits(isolation, uid, group))
    except BaseException:
        if group is not None:
            group.remove()
        raise
    finally:
        worker_end.close()
    return Worker(process, grader_end, isolation, uid, Path(library_root), inside, group)


def _command(isolation: Isolation, script: list[str], uid: int | None, library_root, home) -> list[str]:
    """The command that starts `script` in this isolation (with libraries and home, if given)."""
    if isolation.kind == "bubblewrap":
        return _bubblewrap_command(isolation, library_root, home, script, uid)
    if isolation.in_namespaces() and uid is not None:
        shown = [str(library_root)] if library_root is not None else []
        shown += [folder for folder in isolation.readable_folders if folder not in SYSTEM_FOLDERS]
        return ["unshare", "--mount", "--pid", "--fork", "--net", "--ipc", "--uts", "--kill-child", "--mount-proc",
                "--", isolation.python, "-I", "-c", _NAMESPACE_SETUP, str(uid), str(isolation.scratch_size),
                str(home or ""), *shown, "--", *isolation.hidden, "--", *script]
    return script


def _bubblewrap_command(isolation: Isolation, library_root, home, script: list[str], uid: int | None = None) -> list:
    command = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    if uid is not None:
        command += ["--uid", str(uid), "--gid", str(uid)]
    sized = ["--size", str(isolation.scratch_size)] if isolation.sized_tmpfs else []
    # An empty /tmp first, then Python's folders on top: a virtual environment in /tmp stays visible.
    command += ["--proc", "/proc", "--dev", "/dev", *sized, "--tmpfs", "/tmp"]
    for folder in isolation.readable_folders:
        command += ["--ro-bind", folder, folder]
    if library_root is not None:
        command += ["--ro-bind", str(library_root), SANDBOX_ROOT + "/lib"]
        command += [*sized, "--tmpfs", SANDBOX_ROOT + "/home"] if sized else \
            ["--bind", str(home), SANDBOX_ROOT + "/home"]
        command += ["--chdir", SANDBOX_ROOT + "/home"]
    return command + ["--", *script]


# Run by `unshare` as root, first process in the worker's new namespaces: covers what the worker must not see
# (the guarded folders; /tmp, /var/tmp and /dev/shm with private ones; a folder other users may not pass through,
# such as /root), shows again, read-only, what it must see (its libraries, Python's folders), gives it a home of
# its own (a sized tmpfs), then becomes the worker's user and starts it.
#   python -I -c _NAMESPACE_SETUP UID SIZE HOME SHOWN... -- HIDDEN... -- WORKER COMMAND...
_NAMESPACE_SETUP = r"""
import ctypes, os, stat, sys
libc = ctypes.CDLL(None, use_errno=True)
RDONLY, NOSUID, NODEV, REMOUNT, BIND, REC, PRIVATE = 1, 2, 4, 32, 4096, 16384, 1 << 18

def mount(source, target, kind, flags, data=""):
    if libc.mount(source.encode(), target.encode(), kind and kind.encode(), flags, data.encode()) != 0:
        raise OSError(ctypes.get_errno(), f"mount on {target}: {os.strerror(ctypes.get_errno())}")

def below(path, folder):
    return path == folder or path.startswith(folder.rstrip("/") + "/")

uid, size, home, *rest = sys.argv[1:]
first = rest.index("--")
second = first + 1 + rest[first + 1:].index("--")
uid, shown, hidden, script = int(uid), rest[:first], rest[first + 1:second], rest[second + 1:]
mount("none", "/", None, REC | PRIVATE)
kept = {path: os.open(path, os.O_PATH | os.O_DIRECTORY) for path in shown if os.path.isdir(path)}
needed = [*kept, *([home] if home else [])]
covered = []
for path in hidden:  # (a file: the folder it is in)
    folder = path if os.path.isdir(path) else os.path.dirname(path)
    if os.path.isdir(folder) and not any(below(own, folder) for own in needed):
        mount("none", folder, "tmpfs", RDONLY | NOSUID | NODEV, "size=4k,mode=000")
for folder in ("/tmp", "/var/tmp", "/dev/shm"):
    if os.path.isdir(folder):
        mount("none", folder, "tmpfs", NOSUID | NODEV, f"size={size},mode=1777")
        covered.append(folder)
for path in needed:  # a folder on the way that other users may not pass through: an empty one instead
    parts = path.strip("/").split("/")
    for depth in range(1, len(parts)):
        folder = "/" + "/".join(parts[:depth])
        if any(below(folder, done) for done in covered):
            break
        if not os.stat(folder).st_mode & stat.S_IXOTH:
            mount("none", folder, "tmpfs", NOSUID | NODEV, "size=4k,mode=755")
            covered.append(folder)
            break
for path, descriptor in kept.items():
    os.makedirs(path, exist_ok=True)
    mount(f"/proc/self/fd/{descriptor}", path, None, BIND | REC)
    mount("none", path, None, REMOUNT | BIND | RDONLY | NOSUID | NODEV)
    os.close(descriptor)
if home:
    os.makedirs(home, exist_ok=True)
    mount("none", home, "tmpfs", NOSUID | NODEV, f"size={size},mode=700,uid={uid},gid={uid}")
    os.chdir(home)
os.setgroups([])
os.setgid(uid)
os.setuid(uid)
os.execv(script[0], script)
"""


def _base_environment(home: str, run_marker: str = "") -> dict:
    keep = ("PATH", "LANG", "LC_ALL")
    environment = {key: os.environ[key] for key in keep if key in os.environ}
    environment.update(HOME=home, TMPDIR=home, MPLBACKEND="Agg", PYTHONDONTWRITEBYTECODE="1", PYTHONHASHSEED="0",
                       OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONIOENCODING="utf-8")
    environment[RUN_MARKER_VARIABLE] = run_marker or RUN_MARKER
    return environment


def _become(uid: int):
    def switch():
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    return switch


def _limits(isolation: Isolation, uid: int | None, group: cgroups.StudentGroup | None):
    """What runs in the child before the worker starts: its cgroup, a session of its own, limits per process,
    the worker's user (unless bubblewrap or the namespace setup switches to it)."""
    def apply():
        if group is not None:
            group.join()
        os.setsid()
        for limit, value in ((resource.RLIMIT_AS, isolation.memory), (resource.RLIMIT_FSIZE, WORKER_FILE_SIZE),
                             (resource.RLIMIT_CORE, 0), (resource.RLIMIT_CPU, 3600)):
            try:
                resource.setrlimit(limit, (value, value))
            except (ValueError, OSError):
                pass
        if uid is not None and isolation.kind == "unprivileged user":
            if group is None:  # (a cgroup counts processes and threads, and says when its student ran out)
                resource.setrlimit(resource.RLIMIT_NPROC, (isolation.processes, isolation.processes))
            if not isolation.in_namespaces():  # (else the namespace setup switches, after its mounts)
                _become(uid)()
    return apply


def stop(worker: Worker) -> None:
    """End the worker and every process it started, whatever they did (forks, daemons, new sessions); remove
    its cgroup, keeping what the kernel did to it in `worker.events`."""
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
    if worker.group is not None:
        worker.group.kill()
        worker.events = worker.group.events()
        worker.group.remove()
    if worker.uid is not None and worker.isolation.kind == "unprivileged user":
        kill_every_process_of(worker.uid, worker.isolation.run_marker)
    if worker.isolation.kind == "none":
        kill_descendants()


def budget_used_up(worker: Worker) -> str:
    """What of the student's own budget the kernel enforced on this worker's processes so far: '' if nothing, else
    e.g. "memory (2.0 GiB; the kernel killed 3 of its processes)" or "processes (128 processes and threads)". A
    test that crashed meanwhile crashed on the student's own use, not for another student's."""
    events = worker.group.events() if worker.group is not None else worker.events
    used = []
    if events.get("oom_kills"):
        used.append(f"memory ({_size(worker.isolation.memory)}; the kernel killed {events['oom_kills']} of its "
                    f"processes)")
    if events.get("processes_full"):
        used.append(f"processes ({worker.isolation.processes} processes and threads; {events['processes_full']} "
                    f"refused)")
    return " and ".join(used)


class MachineWatch:
    """Whether the machine, not the grader, ended a process: made before the process starts, asked after it
    ended. The kernel counts every OOM kill in /proc/vmstat."""

    def __init__(self):
        self.oom_kills = _machine_oom_kills()

    def ran_out(self, status: int | None) -> str:
        """'' if a process that ended with `status` (a Popen return code) was not ended by a signal; "memory" if the
        kernel's OOM killer killed a process meanwhile (anywhere on the machine, or in the container); else the
        signal's name ("SIGKILL"). Ask only for a process the grader did not signal itself (not stopped, not
        timed out): then retry once, and if it happens again, mark the student "not graded: the machine ran out
        of memory while grading" (or "... ended the check process with SIGKILL"), never give them a score."""
        if status is None or status >= 0:
            return ""
        if _machine_oom_kills() > self.oom_kills:
            return "memory"
        try:
            return signal.Signals(-status).name
        except ValueError:
            return f"signal {-status}"


def _machine_oom_kills() -> int:
    try:
        for line in Path("/proc/vmstat").read_text().splitlines():
            if line.startswith("oom_kill "):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def processes_of(uid: int) -> list[int]:
    """The live process IDs whose real uid is `uid` (from /proc; a zombie has ended, and only waits for its parent
    to collect its status: no signal reaches it)."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat(follow_symlinks=False).st_uid == uid and not _is_a_zombie(entry.path):
                    found.append(int(entry.name))
            except (OSError, IndexError):
                pass
    return found


def _is_a_zombie(process_folder: str) -> bool:
    return Path(process_folder, "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"


def kill_every_process_of(uid: int, run_marker: str = "", patience: float = 10.0) -> bool:
    """SIGKILL every process of `uid`, again until none is left: a process that forks as it dies is
    caught in the next round. (kill(-1) from a process of that uid reaches exactly its processes.) Only a uid
    the run `run_marker` (this process's run by default) allocated: False, and nothing killed, for another."""
    if not uid_is_ours(uid, run_marker):
        return False
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
    return True


def processes_of_run(run_marker: str) -> list[int]:
    """The live processes that carry the run's marker: in their environment, or in a cgroup of that run (a
    process cannot leave its cgroup). What a check for survivors of one run counts."""
    found = []
    needle = f"{RUN_MARKER_VARIABLE}={run_marker}".encode()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or entry.name == str(os.getpid()):
            continue
        try:
            marked = needle in Path(entry.path, "environ").read_bytes().split(b"\0") or \
                run_marker in Path(entry.path, "cgroup").read_text()
            live = not _is_a_zombie(entry.path)
        except (OSError, IndexError):
            continue
        if marked and live:
            found.append(int(entry.name))
    return found


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
