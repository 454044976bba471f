"""Where a student's code runs while a class is graded: the isolation, chosen once per run (chapter 11).

- bubblewrap: namespaces of its own, no network; Python, NumPy and what they load, read-only, its library and a
  scratch folder; every process in it ends with it.
- chroot (as root where bubblewrap cannot run, as in Gradescope's container): a root of its own that holds the same
  and nothing else, removed when the worker stops; it shares the machine's network, as the run's first line says.
- none, only when asked for by name: the grader's own user.
As root each student gets fresh users, and every process of them is killed when its check ends. Limits: per
process (prlimit), and one budget per student where systemd runs (systemd-run --scope).
"""

from __future__ import annotations

import atexit
import contextlib
import grp
import json
import os
import pwd
import resource
import re
import secrets
import shutil
import signal
import site
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from minitorch.exercises.grader.trusted.worker_library import WORKER_SCRIPT, link_or_copy
from minitorch.exercises.registry import ExerciseError
from minitorch.outputs import scratch_folder
from minitorch.tools.exit_policy import ensure_address_space, ensure_file_size

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
# This Python by a path a worker can follow: run as ../venv/bin/python, sys.executable is repo/../venv/bin/python,
# which needs repo/, a folder no worker sees. Its folder resolved, its name kept (a venv's python is a link whose
# target lies outside the venv, so resolving the file itself would lose the venv's packages).
PYTHON = os.path.join(os.path.realpath(os.path.dirname(sys.executable)), os.path.basename(sys.executable))
RUN_MARKER_VARIABLE = "MINITORCH_GRADING_RUN"  # names this run's workers (a test sets it to find its own)
RUN_MARKER = os.environ.get(RUN_MARKER_VARIABLE) or f"run{os.getpid()}x{secrets.token_hex(3)}"


class IsolationError(ExerciseError):
    """The isolation asked for cannot be had here; the message says why and what to do."""


@dataclass
class Isolation:
    """How every worker of a run is started; `kind` is one of KINDS. (Sent to each check process as JSON.)"""

    kind: str
    python: str = PYTHON
    tree: str = ""  # as root: what a worker sees of the machine (`python_tree`)
    readable_folders: list[str] = field(default_factory=list)  # bubblewrap not as root: what it shows, read-only
    memory: int = WORKER_MEMORY
    processes: int = WORKER_PROCESSES
    scratch_size: int = SCRATCH_SIZE
    sized_tmpfs: bool = False  # bubblewrap's --size option sizes the home and /tmp
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
            text = (f"chroot{f' ({self.passed_over})' if self.passed_over else ''}. NOT GUARDED: the network; "
                    f"students' code can reach the internet and, graded at the same time, each other's localhost "
                    f"ports and abstract sockets. Each student's code runs {own}in a root of its own that holds only "
                    f"Python, NumPy, its library and its scratch folder, removed when its check ends; every process "
                    f"of that user ends with it")
        else:
            text = ("NONE: the students' code runs as the grader's user (you), unsandboxed: a hostile copy can read "
                    "and write your files and reach the network (install bubblewrap to sandbox it)")
        return f"{text}. {self.describe_limits()}"

    def describe_limits(self) -> str:
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
    """`requested`, or for "auto" bubblewrap, else chroot; each tried with a real worker, and refused if it shows
    the worker a path of `guarded` ({what: path}). Memory: the machine's share of one of `students_at_once`."""
    if requested not in ("auto", *KINDS):
        raise IsolationError(f"--isolation must be auto, {', '.join(KINDS)}; got {requested!r}")
    ensure_file_size("grading", WORKER_FILE_SIZE)  # else prlimit cannot set the workers' limits, in any isolation
    ensure_address_space("grading", max(worker_memory(students_at_once), CHECK_PROCESS_MEMORY))
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
        tree = python_tree(PYTHON) if root and kind != "none" else ""
        sized = kind == "bubblewrap" and "--size" in subprocess.run(["bwrap", "--help"], capture_output=True,
                                                                   text=True, timeout=60).stdout  # (0.7 and later)
    except (OSError, ValueError, subprocess.SubprocessError) as error:
        raise IsolationError(f"what a worker needs could not be gathered ({str(error)[:300]})") from None
    return Isolation(kind, tree=tree, readable_folders=_python_folders() if kind == "bubblewrap" and not tree else [],
                     memory=worker_memory(students_at_once), sized_tmpfs=sized, passed_over=passed_over,
                     systemd=root and kind != "none" and os.path.isdir("/run/systemd/system"))


def _what_it_sees(isolation: Isolation, paths: list[str]) -> list[str]:
    """Which of `paths` a worker of this isolation sees, with a library and home where the students' will be;
    IsolationError if no worker runs Python with NumPy."""
    uid = isolation.fresh_uid()
    script, root = "import os, sys, numpy; print(*[p for p in sys.argv[1:] if os.path.lexists(p)], sep='\\n')", None
    with scratch_folder("minitorch-probe-", mode=0o711) as folder:
        try:
            command, root = _command(isolation, [isolation.python, "-I", "-c", script, *paths], uid, folder, folder)
            finished = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd="/",
                                      env=_environment("/", isolation.run_marker))
        except (OSError, subprocess.SubprocessError) as error:
            raise IsolationError(f"a worker could not start ({error})") from None
        finally:
            _clean_up(uid, root)
    if finished.returncode != 0:
        last = (finished.stderr.strip().splitlines() or ["(no message)"])[-1][:200]
        raise IsolationError(f"a worker could not start, or run Python with NumPy ({last})")
    return [line for line in finished.stdout.splitlines() if line in paths]


def _python_folders() -> list[str]:
    """The system's folders and Python's own (prefixes, standard library, packages; not sys.path, which holds the
    current folder): what bubblewrap shows a worker when the grader is not root."""
    candidates = {sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable)),
                  *sysconfig.get_paths().values(), *site.getsitepackages()}
    system = [folder for folder in SYSTEM_FOLDERS if os.path.exists(folder)]
    folders = sorted({os.path.realpath(path) for path in candidates if os.path.isdir(path)} - set(system))
    return system + [folder for folder in folders if not any(folder.startswith(other + os.sep)
                                                             for other in system + folders)]


def worker_memory(students_at_once: int) -> int:
    """The address space of a worker: WORKER_MEMORY, or less, the machine's share of one of `students_at_once`."""
    return min([WORKER_MEMORY] + [int(0.6 * limit) // max(1, students_at_once) for limit in _memory_limits()])


def _memory_limits() -> list[int]:
    """This machine's memory, and its container's (cgroup v2 or v1) if it has a limit."""
    limits = [os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")]
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        text = Path(path).read_text().strip() if os.path.exists(path) else ""
        limits += [int(text)] if text.isdigit() else []
    return limits


# ----------------------------------------------------------------------
# a student's worker


def _command(isolation: Isolation, script: list[str], uid: int | None, library_root: Path | None = None,
             home: Path | None = None) -> tuple[list[str], Path | None]:
    """The command that runs `script` in this isolation as `uid`, with `library_root` as its library and `home`
    its scratch folder; and the worker's own root, if one was made (chroot)."""
    limits = ["systemd-run", "--scope", "--quiet", "--collect", "-p", f"MemoryMax={isolation.memory}", "-p",
              f"TasksMax={isolation.processes}", "-p", "CPUQuota=100%", "--"] if isolation.systemd else []
    limits += ["prlimit", f"--as={isolation.memory}", f"--fsize={WORKER_FILE_SIZE}", f"--cpu={WORKER_CPU_SECONDS}",
               "--core=0", *([f"--nproc={isolation.processes}"] if uid is not None else []), "--"]
    if isolation.kind == "chroot":
        root = own_root(isolation.tree, uid, library_root, home.parent if home else None)
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
        command += [*sized, "--tmpfs", SANDBOX_ROOT + "/home"] if sized else ["--bind", str(home),
                                                                              SANDBOX_ROOT + "/home"]
    return [*limits, *command, "--", *script], None


def process_environment(home: str, **more: str) -> dict:
    """The environment of a process the grader starts (a worker, a check process): PATH and the locale, `home` as its
    HOME and TMPDIR, no bytecode written, UTF-8 output, one thread per numerical library (one core per student)."""
    environment = {key: os.environ[key] for key in ("PATH", "LANG", "LC_ALL") if key in os.environ}
    environment.update(HOME=home, TMPDIR=home, MPLBACKEND="Agg", PYTHONDONTWRITEBYTECODE="1", OMP_NUM_THREADS="1",
                       OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONIOENCODING="utf-8", **more)
    return environment


def _environment(home: str, run_marker: str, worker: str = "") -> dict:
    return process_environment(home, PYTHONHASHSEED="0", **{RUN_MARKER_VARIABLE: run_marker,
                                                            RUN_MARKER_VARIABLE + "_WORKER": worker})


@dataclass
class Worker:
    """A running worker of one student: the sandbox's process, its control socket, its user, its root."""

    process: subprocess.Popen
    control: socket.socket
    uid: int | None
    library: str  # the student's library, as the worker sees it
    root: Path | None = None  # its own root (chroot), removed when it stops
    marker: str = ""  # in its environment: how `none` finds its processes
    idle_processes: int | None = None  # its user's processes between exercises (counted once)

    def outlived_by_processes(self) -> bool:
        """Whether processes an earlier exercise started still hold part of the student's process budget."""
        now = len(processes_of(self.uid)) if self.uid is not None else 0
        self.idle_processes = now if self.idle_processes is None else self.idle_processes
        return now > self.idle_processes


def start(isolation: Isolation, library_root: Path, home: Path, output, uid: int | None = None) -> Worker:
    """Start a student's worker as `uid`, its library `library_root` (read-only for it), its scratch folder `home`
    (or a tmpfs of its own); what it prints goes to the file object `output`."""
    grader_end, worker_end = socket.socketpair()
    sandboxed = isolation.kind != "none"
    inside, home_inside = (SANDBOX_ROOT + "/lib", SANDBOX_ROOT + "/home") if sandboxed else (library_root, home)
    if uid is not None and isolation.kind == "bubblewrap" and not isolation.sized_tmpfs:
        os.chown(home, uid, uid)  # (its home on the grader's disk)
    marker = secrets.token_hex(8)
    script = [isolation.python, "-I", f"{inside}/{WORKER_SCRIPT}", str(worker_end.fileno())]
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
    """The first of UID_BLOCK uids that no account, group or process (a zombie too) uses, drawn at random among
    those this machine maps. A student's k-th worker runs as the k-th of them, in turn."""
    ranges = [(max(first, 100_000), min(first + count, 1 << 31) - UID_BLOCK) for first, _, count in
              (map(int, line.split()) for line in Path("/proc/self/uid_map").read_text().splitlines())]
    ranges = [(low, high) for low, high in ranges if high - low > 10_000] or [(20_000, 60_000)]
    in_use = {_owner(pid, zombies=True) for pid in _pids()} | {account.pw_uid for account in pwd.getpwall()} | \
        {group.gr_gid for group in grp.getgrall()}
    while True:
        low, high = ranges[secrets.randbelow(len(ranges))]
        first = low + secrets.randbelow(high - low)
        if in_use.isdisjoint(range(first, first + UID_BLOCK)):
            return first


def kill_users(first: int, count: int = 1, patience: float = 10.0) -> None:
    """SIGKILL every process of the `count` uids from `first`: a child that becomes each user sends kill(-1), which
    the kernel delivers to all of its processes at once (no fork slips through); again until none is left."""
    deadline = time.monotonic() + patience
    while (found := processes_of(first, count)) and time.monotonic() < deadline:
        for uid in {_owner(pid) for pid in found} - {None}:
            killer = os.fork()
            if killer == 0:
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
    """The live processes but this one whose environment sets `variable` to `marker` (by default: a run's workers)."""
    needle, found = f"{variable}={marker}".encode(), []
    for pid in _pids():
        try:
            if needle in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0") and pid != os.getpid():
                found += [pid] if _owner(pid) is not None else []
        except OSError:
            pass
    return found


def check_process_limits() -> list[str]:
    """The command prefix that runs a check process under CHECK_PROCESS_MEMORY of address space (or the hard limit it
    inherits, if lower): a request that slipped past every check fails alone. A soft limit, the hard one kept (only
    root may raise it): the workers it starts set their own."""
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    soft = CHECK_PROCESS_MEMORY if hard == resource.RLIM_INFINITY else min(CHECK_PROCESS_MEMORY, hard)
    return ["prlimit", f"--as={soft}:", "--"] if shutil.which("prlimit") else []


class MachineWatch:
    """Whether the machine, not the grader, ended a process (made before it starts, asked after it ended)."""

    def __init__(self):
        self.oom_kills = _machine_oom_kills()

    def ran_out(self, status: int | None) -> str:
        """'' for a process (its Popen return code) not ended by a signal; "memory" if the kernel's OOM killer killed
        a process meanwhile; else the signal's name."""
        if status is None or status >= 0:
            return ""
        known = {number.value: number.name for number in signal.Signals}
        return "memory" if _machine_oom_kills() > self.oom_kills else known.get(-status, f"signal {-status}")


def _machine_oom_kills() -> int:
    found = re.search(r"^oom_kill (\d+)", Path("/proc/vmstat").read_text() if os.path.exists("/proc/vmstat") else "",
                      re.M)
    return int(found.group(1)) if found else 0


# ----------------------------------------------------------------------
# what a worker sees of the machine as root: a tree that holds what Python needs to run it, at the same paths,
# as hard links to the machine's files where no one but their owner may change them (else copies), in folders of
# root's; bubblewrap binds it read-only as /, and chroot gives each worker a copy of its own by hard links

TREE_LIBRARY, TREE_HOME = "grading/lib", "grading/home"  # inside a root: the worker's library, its scratch home
NOT_NEEDED = shutil.ignore_patterns("site-packages", "dist-packages", "test", "tests", "idlelib", "tkinter",
                                    "turtledemo", "ensurepip")  # (a student's function uses none of these)
WHAT_PYTHON_NEEDS = """
import json, os, sys, sysconfig, numpy
try:
    import pytest  # (a student's own run has it: a function that calls pytest.exit is told what it did)
except ImportError:
    pass
paths = sysconfig.get_paths()
found = [paths["stdlib"], paths["platstdlib"], sysconfig.get_config_var("DESTSHARED") or "", sys.executable,
         os.path.join(sys.prefix, "pyvenv.cfg"), "/etc/ld.so.cache"]
for module in list(sys.modules.values()):  # the installed packages these imports loaded, and their libraries
    folder, packages, inside = (getattr(module, "__file__", None) or "").partition("-packages" + os.sep)
    found += [folder + packages + inside.split(os.sep)[0] + suffix for suffix in ("", ".libs")] if packages else []
print(json.dumps([path for path in dict.fromkeys(found) if path and os.path.exists(path)]))
"""
_trees: dict[str, str] = {}


def python_tree(python: str) -> str:
    """The run's tree for `python`: made once per process, removed when it exits (or by the next run, if this one
    is killed)."""
    if python not in _trees:
        kept = contextlib.ExitStack()
        folder = kept.enter_context(scratch_folder("minitorch-worker-tree-"))
        atexit.register(kept.close)
        needed = json.loads(subprocess.run([python, "-I", "-c", WHAT_PYTHON_NEEDS], capture_output=True,
                                           text=True, timeout=300, check=True).stdout)
        objects = [os.path.realpath(python)]
        for top in needed:
            for inside, subfolders, files in os.walk(top):
                subfolders[:] = sorted(set(subfolders) - NOT_NEEDED(inside, subfolders))
                objects += [os.path.join(inside, name) for name in files if ".so" in name]
        loaded = subprocess.run(["ldd", *objects], capture_output=True, text=True, timeout=300).stdout
        for path in [*needed, *sorted({os.path.normpath(path) for path in re.findall(r"(/\S+) \(0x", loaded)})]:
            _place(path, folder)
        for empty in ("proc", "dev", "tmp", TREE_LIBRARY, TREE_HOME):
            (folder / empty).mkdir(parents=True, exist_ok=True)
        for inside, _, _ in os.walk(folder):  # every folder root's, passable, read-only to everyone else
            os.chmod(inside, 0o755)
        _trees[python] = str(folder)
    return _trees[python]


def _place(path: str, tree: Path) -> None:
    """Put the file or folder `path` into `tree` at the same path, with every symbolic link on the way to it."""
    current, parts = Path("/"), Path(path).parts[1:]
    for index, part in enumerate(parts):
        current = current / part
        if current.is_symlink():  # the link, then on from where it points
            link = tree / current.relative_to("/")
            if not link.is_symlink():
                link.parent.mkdir(parents=True, exist_ok=True)
                os.symlink(os.readlink(current), link)
            return _place(os.path.normpath(current.parent / os.readlink(current) / Path(*parts[index + 1:])), tree)
    target = tree / current.relative_to("/")
    if current.is_dir():
        shutil.copytree(current, target, symlinks=True, ignore=NOT_NEEDED, copy_function=link_or_copy,
                        dirs_exist_ok=True)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        link_or_copy(current, target)


def own_root(tree: str, uid: int, library_root: Path | None, near: Path | None) -> Path:
    """A worker's own root (chroot) in a new folder of `near`: the tree and its library by hard links, and a
    scratch home and /tmp that only its user `uid` may enter."""
    root = Path(tempfile.mkdtemp(prefix="root-", dir=near))
    subprocess.run(["cp", "-a", "--link", f"{tree}/.", str(root)], check=True, capture_output=True)
    if library_root is not None:
        subprocess.run(["cp", "-a", "--link", f"{library_root}/.", str(root / TREE_LIBRARY)], check=True,
                       capture_output=True)
    for folder in (root / "tmp", root / TREE_HOME):
        os.chown(folder, uid, uid)
        os.chmod(folder, 0o700)
    os.chmod(root, 0o755)
    return root
