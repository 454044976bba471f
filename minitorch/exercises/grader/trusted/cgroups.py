"""One budget per student: a control group around all of a student's worker processes (chapter 11).

A limit set on one process (``setrlimit``) is a limit per process: a student whose code forks 36 children
of 110 MB gets 36 times the memory limit. A *control group* (cgroup) is the kernel's own budget for a set
of processes together: every process the worker starts is in its group, and cannot leave it.

- memory: all of the group's pages together (its files in a tmpfs too); past it, the kernel's OOM killer
  kills a process of *this* group, never another student's or the grader's;
- pids: processes and threads together (a fork bomb stops there);
- cpu: at most one core's worth of time, so one student's busy threads cannot starve the others;
- killing: every process of the group is found from the group itself (frozen first, so that nothing can
  fork while it is being killed), whatever session, uid or parent it has.

Both kinds of cgroup file system are handled: version 2 (one tree, ``cgroup.controllers`` at its top) and
version 1 (one tree per controller, e.g. /sys/fs/cgroup/memory). `StudentGroup` raises CgroupError where
groups cannot be made (not root, a container that hides them); the sandbox then falls back to limits per
process (see `sandbox`).
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

PARENT = "minitorch-grading"  # every student's group is made in this group, below the grader's own (it stays)
CPU_PERIOD = 100_000  # microseconds


class CgroupError(OSError):
    """A student's group cannot be made or used here; the message says why."""


@dataclass(frozen=True)
class Budget:
    """What one student's processes may use together."""

    memory: int  # bytes
    processes: int  # processes and threads
    cpus: float = 1.0  # cores' worth of CPU time


# ----------------------------------------------------------------------
# where the cgroup file systems are


def _mounts() -> dict[str, tuple[Path, str]]:
    """{controller: (mount point, mount root)} for cgroup version 1, and {"v2": (...)} for version 2."""
    found = {}
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        before, _, after = line.partition(" - ")
        fields, tail = before.split(), after.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        kind, options = tail[0], tail[2].split(",")
        if kind == "cgroup2":
            found.setdefault("v2", (Path(fields[4]), fields[3]))
        elif kind == "cgroup":
            for controller in ("memory", "pids", "cpu", "freezer"):
                if controller in options:
                    found.setdefault(controller, (Path(fields[4]), fields[3]))
    return found


def _own_paths() -> dict[str, str]:
    """{controller or "v2": this process's group in it} (from /proc/self/cgroup)."""
    own = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return own
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            own["v2"] = path
        for controller in controllers.split(","):
            own[controller] = path
    return own


def _inside(mount: tuple[Path, str], path: str) -> Path:
    """The folder of group `path` under a mount whose root is mount[1] (a container mounts its own subtree)."""
    point, root = mount
    if root != "/" and path.startswith(root):
        path = path[len(root):]
    return point / path.lstrip("/")


def _write(path: Path, text: str) -> None:
    """Write a control file that the kernel made (never create one: elsewhere than in a cgroup file system,
    that would be an ordinary file that limits nothing)."""
    descriptor = os.open(path, os.O_WRONLY)
    try:
        os.write(descriptor, text.encode())
    finally:
        os.close(descriptor)


def _read_pairs(path: Path) -> dict[str, int]:
    """'key value' lines (memory.events, pids.events, memory.oom_control) as a dict; {} if unreadable."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return {}
    pairs = {}
    for line in lines:
        key, _, value = line.partition(" ")
        if value.strip().lstrip("-").isdigit():
            pairs[key] = int(value)
    return pairs


def _read_number(path: Path) -> int:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


# ----------------------------------------------------------------------
# one student's group


class StudentGroup:
    """The cgroup(s) of one student's worker: made with the budget in force, joined by the worker's first
    process before it runs anything, killed and removed when the worker stops."""

    def __init__(self, name: str, budget: Budget):
        """A group named `name`, then this process's ID and a count (so that a group whose maker has ended can be
        told, and swept when empty: a check process killed mid-way never removes its group)."""
        if os.geteuid() != 0:
            raise CgroupError("the grader is not running as root, so it cannot make a cgroup per student")
        self.name, self.budget = f"{name}-{os.getpid()}-{next(_made)}", budget
        mounts, own = _mounts(), _own_paths()
        self.version = 1 if all(c in mounts for c in ("memory", "pids")) else 2
        self.folders: dict[str, Path] = {}  # controller (or "v2") -> this group's folder
        try:
            if self.version == 1:
                self._make_v1(mounts, own)
            elif "v2" in mounts:
                self._make_v2(mounts["v2"], own.get("v2", "/"))
            else:
                raise CgroupError("no cgroup file system with the memory and pids controllers is mounted")
        except OSError as error:
            self.remove()
            if isinstance(error, CgroupError):
                raise
            raise CgroupError(f"a cgroup could not be made ({error})") from None

    def _make_v1(self, mounts, own) -> None:
        for controller in ("memory", "pids", "cpu", "freezer"):
            if controller not in mounts:
                continue
            folder = _inside(mounts[controller], own.get(controller, "/")) / PARENT / self.name
            folder.mkdir(parents=True, exist_ok=True)
            _sweep(folder.parent)
            self.folders[controller] = folder
        memory, pids = self.folders["memory"], self.folders["pids"]
        _write(memory / "memory.limit_in_bytes", str(self.budget.memory))
        if (memory / "memory.memsw.limit_in_bytes").exists():  # swap counts too, where the kernel tracks it
            try:
                _write(memory / "memory.memsw.limit_in_bytes", str(self.budget.memory))
            except OSError:
                pass
        _write(pids / "pids.max", str(self.budget.processes))
        if "cpu" in self.folders:
            _write(self.folders["cpu"] / "cpu.cfs_period_us", str(CPU_PERIOD))
            _write(self.folders["cpu"] / "cpu.cfs_quota_us", str(int(self.budget.cpus * CPU_PERIOD)))

    def _make_v2(self, mount, own: str) -> None:
        """Version 2 lets a group hand controllers to its children only if it holds no process itself: the
        students' groups go under a group beside the grader's own (its parent has the controllers on)."""
        own_folder = _inside(mount, own)
        for base in dict.fromkeys((own_folder, own_folder.parent if own_folder != mount[0] else own_folder)):
            parent = base / PARENT
            try:
                parent.mkdir(exist_ok=True)
                _write(parent / "cgroup.subtree_control", "+memory +pids +cpu")
            except OSError:
                try:
                    _write(parent / "cgroup.subtree_control", "+memory +pids")
                except OSError:
                    _remove_folder(parent)
                    continue
            folder = parent / self.name
            folder.mkdir(exist_ok=True)
            _sweep(parent)
            self.folders["v2"] = folder
            _write(folder / "memory.max", str(self.budget.memory))
            if (folder / "memory.swap.max").exists():
                _write(folder / "memory.swap.max", "0")
            _write(folder / "pids.max", str(self.budget.processes))
            if (folder / "cpu.max").exists():
                _write(folder / "cpu.max", f"{int(self.budget.cpus * CPU_PERIOD)} {CPU_PERIOD}")
            return
        raise CgroupError("the cgroup version 2 tree does not let the grader give a group the memory and pids "
                          "controllers (a container's own group holds processes)")

    # --- joining, watching, killing -----------------------------------------------------------------

    def join(self) -> None:
        """Put the calling process in the group (the worker's first process, before it runs anything): all it
        starts is then in it too. Safe to call between fork and exec."""
        pid = str(os.getpid())
        for folder in self.folders.values():
            _write(folder / "cgroup.procs", pid)

    def processes(self) -> list[int]:
        """The process IDs in the group now."""
        folder = self.folders.get("pids") or self.folders.get("v2")
        try:
            return [int(line) for line in (folder / "cgroup.procs").read_text().split()]
        except (OSError, ValueError, TypeError):
            return []

    def events(self) -> dict[str, int]:
        """What the kernel did to the group: {"oom_kills": processes the OOM killer killed in it, "memory_full":
        times it reached its memory budget, "processes_full": forks or threads refused at its process budget,
        "memory_peak": its largest memory use, in bytes}."""
        if self.version == 1:
            memory, pids = self.folders.get("memory"), self.folders.get("pids")
            if memory is None or pids is None:
                return {}
            return {"oom_kills": _read_pairs(memory / "memory.oom_control").get("oom_kill", 0),
                    "memory_full": _read_number(memory / "memory.failcnt"),
                    "processes_full": _read_pairs(pids / "pids.events").get("max", 0),
                    "memory_peak": _read_number(memory / "memory.max_usage_in_bytes")}
        folder = self.folders.get("v2")
        if folder is None:
            return {}
        memory = _read_pairs(folder / "memory.events")
        return {"oom_kills": memory.get("oom_kill", 0), "memory_full": memory.get("max", 0),
                "processes_full": _read_pairs(folder / "pids.events").get("max", 0),
                "memory_peak": _read_number(folder / "memory.peak")}

    def kill(self, patience: float = 10.0) -> list[int]:
        """SIGKILL every process in the group, frozen first so that none can fork meanwhile; returns those
        still alive after `patience` seconds (none, unless the kernel is stuck)."""
        deadline = time.monotonic() + patience
        folder = self.folders.get("v2")
        if folder is not None and (folder / "cgroup.kill").exists():
            try:
                _write(folder / "cgroup.kill", "1")
            except OSError:
                pass
        self._freeze(True)
        try:
            while (left := self.processes()) and time.monotonic() < deadline:
                for pid in left:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                self._freeze(False)  # a frozen process dies only once thawed
                time.sleep(0.02)
                self._freeze(True)
        finally:
            self._freeze(False)
        deadline = time.monotonic() + patience
        while (left := self.processes()) and time.monotonic() < deadline:  # killed, not yet gone
            time.sleep(0.02)
        return left

    def _freeze(self, frozen: bool) -> None:
        try:
            if "freezer" in self.folders:
                _write(self.folders["freezer"] / "freezer.state", "FROZEN" if frozen else "THAWED")
            elif "v2" in self.folders and (self.folders["v2"] / "cgroup.freeze").exists():
                _write(self.folders["v2"] / "cgroup.freeze", "1" if frozen else "0")
        except OSError:
            pass

    def remove(self) -> None:
        """Remove the group's folders (after `kill`); a group that still holds a process stays (its name, with the
        run's marker, is in that process's /proc/PID/cgroup: what `sandbox.processes_of_run` finds)."""
        for folder in self.folders.values():
            for attempt in range(50):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)  # a killed process leaves its group a moment after it dies
        # (the shared parent PARENT stays, empty and unlimited: removing it could pull it from under a group
        # another check process is making at that moment)


_made = iter(range(1 << 62))  # numbers this process's groups


def _sweep(parent: Path) -> None:
    """Remove the empty groups in `parent` whose maker has ended."""
    for folder in parent.iterdir():
        maker = folder.name.rsplit("-", 2)[-2] if folder.name.count("-") >= 2 else ""
        if folder.is_dir() and maker.isdigit() and not Path(f"/proc/{maker}").exists():
            _remove_folder(folder)  # (refused while a process is in it)


def _remove_folder(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass


def describe_failure() -> str:
    """'' if a student's group can be made here, else why not (tried once, with a group made and removed)."""
    try:
        group = StudentGroup("probe", Budget(memory=64 << 20, processes=8))
    except CgroupError as error:
        return str(error)
    group.remove()
    return ""


def limits_cpu() -> bool:
    """Whether a student's group also gets at most one core (the cpu controller is there to be used)."""
    mounts = _mounts()
    if "memory" in mounts and "pids" in mounts:
        return "cpu" in mounts
    try:
        return "cpu" in (mounts["v2"][0] / "cgroup.controllers").read_text().split()
    except (KeyError, OSError):
        return False
