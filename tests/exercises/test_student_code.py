"""Specification of the grader's side of a student's worker (minitorch/exercises/student_code.py, sandbox.py,
worker.py): whatever the code in a region does, the grader gets data back, or a clear "timed out" or
"crashed", and no process of the student's outlives the worker.

Each test puts a region body into exercise 3.1 (causal_mask) of a copy of this book, builds that copy's
worker libraries and calls the probe the way a graded test does, with the strongest isolation available.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from minitorch.exercises import sandbox
from minitorch.exercises.channel import StudentError
from minitorch.exercises.grafting import build_libraries
from minitorch.exercises.registry import ROOT, load_exercises
from minitorch.exercises.student_code import Crashed, TimedOut, WorkerPool


def strongest_isolation() -> tuple[sandbox.Isolation, str]:
    """bubblewrap where it runs, else none; and why not bubblewrap (empty if it is in force)."""
    if shutil.which("bwrap") is None:
        return sandbox.choose("none"), "the bwrap command is not installed"
    try:
        return sandbox.choose("bubblewrap"), ""
    except sandbox.IsolationError as error:  # installed but unusable here (a container without user namespaces)
        return sandbox.choose("none"), str(error)


ISOLATION, NO_BUBBLEWRAP = strongest_isolation()
CAUSAL_MASK = next(exercise for exercise in load_exercises(ROOT) if exercise.id == "3.1")


def pool_for(tmp_path: Path, body: str, timeout: float = 5.0, budget: float = 120.0) -> WorkerPool:
    """A worker pool for a copy whose region 3.1 holds `body` (unindented)."""
    copy = tmp_path / "copy"
    shutil.copytree(ROOT / "minitorch", copy / "minitorch", ignore=shutil.ignore_patterns("__pycache__"))
    path = copy / CAUSAL_MASK.path.relative_to(ROOT)
    lines = path.read_text().splitlines(keepends=True)
    lines[CAUSAL_MASK.begin_line:CAUSAL_MASK.end_line - 1] = [CAUSAL_MASK.indent + line + "\n"
                                                              for line in body.splitlines()]
    path.write_text("".join(lines))
    report = build_libraries(ROOT, copy, ["3.1"], tmp_path / "lib")
    assert report.grafted == ["3.1"], report
    (tmp_path / "home").mkdir()
    plan = {"isolation": ISOLATION.__dict__, "slot": 0, "library_root": str(tmp_path / "lib"),
            "home": str(tmp_path / "home"), "exercises": {"3.1": "3.1"}, "timeout": timeout, "budget": budget}
    if ISOLATION.kind == "unprivileged user":
        os.chown(tmp_path / "home", sandbox.worker_uid(0), sandbox.worker_uid(0))
    return WorkerPool(json.loads(json.dumps(plan)))


@pytest.fixture
def pools():
    made = []
    yield made
    for pool in made:
        pool.close()


@pytest.mark.skipif(bool(NO_BUBBLEWRAP), reason=NO_BUBBLEWRAP)
def test_bubblewrap_runs_the_python_of_a_virtual_environment_in_tmp(tmp_path):
    # The README suggests a virtual environment; one in /tmp must not vanish under the sandbox's own empty /tmp.
    venv = tmp_path / "venv"
    made = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
                          capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, f"could not make a virtual environment: {made.stderr}"
    chosen = subprocess.run([str(venv / "bin" / "python"), "-c",
                             "from minitorch.exercises import sandbox; print(sandbox.choose('bubblewrap').kind)"],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert chosen.returncode == 0 and chosen.stdout.strip() == "bubblewrap", (
        f"a grader run from a virtual environment in {tmp_path} cannot use bubblewrap:\n{chosen.stderr[-1500:]}")


def call(pool: WorkerPool, probe: str = "causal_mask", *args):
    return pool.call("3.1", time.monotonic(), probe, *(args or (4,)))


def test_a_correct_region_answers_with_data(tmp_path, pools):
    pools.append(pool := pool_for(tmp_path, "return np.triu(np.ones((length, length), dtype=bool), k=1)"))
    mask = call(pool)["mask"]
    assert isinstance(mask, np.ndarray) and mask.dtype == bool and mask.shape == (4, 4)
    np.testing.assert_array_equal(mask, np.triu(np.ones((4, 4), dtype=bool), k=1))


def test_an_exception_of_the_students_code_arrives_as_itself(tmp_path, pools):
    pools.append(pool := pool_for(tmp_path, "raise ValueError(f'no mask of length {length}')"))
    with pytest.raises(ValueError, match="no mask of length 4"):
        call(pool)


@pytest.mark.parametrize("body, expected", [
    ("raise KeyboardInterrupt", "KeyboardInterrupt, raised by the code itself"),
    ("import sys\nsys.exit(0)", "SystemExit"),
    ("import pytest\npytest.exit('stop grading')", r"pytest\.exit\(\) was called"),
], ids=["KeyboardInterrupt", "sys.exit", "pytest.exit"])
def test_code_that_raises_what_is_not_an_error_fails_its_test_saying_so(tmp_path, pools, body, expected):
    pools.append(pool := pool_for(tmp_path, body))
    with pytest.raises(StudentError, match=expected):
        call(pool)


def test_a_hang_times_out_and_after_two_the_exercise_fails_at_once(tmp_path, pools):
    pools.append(pool := pool_for(tmp_path, "while True:\n    pass", timeout=1.0))
    for _ in range(2):
        started = time.monotonic()
        with pytest.raises(TimedOut, match="timed out after 1 s"):
            call(pool)
        assert time.monotonic() - started < 10, "the grader stops waiting at the test's timeout"
    started = time.monotonic()
    with pytest.raises(TimedOut, match="not run: 2 tests of exercise 3.1 already timed out"):
        call(pool)
    assert time.monotonic() - started < 0.5


def test_an_exit_in_the_middle_of_a_test_is_a_crash_with_its_status(tmp_path, pools):
    pools.append(pool := pool_for(tmp_path, "import os\nos._exit(3)"))
    with pytest.raises(Crashed, match="exit status 3 before the test ended"):
        call(pool)


def test_garbage_written_to_the_channel_is_a_crash_not_data(tmp_path, pools):
    body = ("from minitorch.exercises import channel\nimport struct\n"
            "channel.CONNECTION.sendall(struct.pack('>I', 12) + b'not a frame!')\nreturn None")
    pools.append(pool := pool_for(tmp_path, body))
    with pytest.raises(Crashed, match="not plain data"):
        call(pool)


def test_the_grader_never_answers_for_the_exercise_under_test(tmp_path, pools):
    body = "from minitorch.exercises.channel import ask_grader\nreturn ask_grader('3.1', length)"
    pools.append(pool := pool_for(tmp_path, body))
    with pytest.raises(PermissionError, match="while grading exercise 3.1"):
        call(pool)


def test_the_students_time_budget_fails_what_is_left(tmp_path, pools):
    body = "import time\nif length == 5:\n    time.sleep(2)\nreturn None"
    pools.append(pool := pool_for(tmp_path, body, budget=6.0, timeout=30))
    call(pool, "causal_mask", 4)  # starts the worker
    with pytest.raises(TimedOut, match="budget of 6 s"):
        for _ in range(4):  # 8 s of sleeping: the budget runs out on the way
            call(pool, "causal_mask", 5)


@pytest.mark.skipif(ISOLATION.kind != "bubblewrap", reason="bubblewrap is not available here")
def test_inside_bubblewrap_the_graders_files_do_not_exist(tmp_path, pools):
    body = ("import os\nraise ValueError(repr([p for p in ($paths) if os.path.exists(p)]))"
            .replace("$paths", ", ".join(repr(str(p)) for p in (ROOT / "minitorch", ROOT / "tests", tmp_path))))
    pools.append(pool := pool_for(tmp_path, body))
    with pytest.raises(ValueError) as seen:
        call(pool)
    assert str(seen.value) == "[]", f"the worker saw the grader's checkout or the scratch above it: {seen.value}"


def test_no_process_the_student_starts_outlives_the_worker(tmp_path, pools):
    """A daemon (double fork, new session, SIGHUP ignored) writes its pid where the grader can read it."""
    body = ("import os, signal, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
            "        signal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
            "        open(os.environ['HOME'] + '/daemon.pid', 'w').write(str(os.getpid()))\n"
            "        while True:\n            time.sleep(1)\n    os._exit(0)\ntime.sleep(1)\nreturn None")
    pool = pool_for(tmp_path, body)
    call(pool)
    if ISOLATION.kind == "bubblewrap":  # the pid it wrote is the sandbox's own: watch the sandbox's PID namespace
        assert (tmp_path / "home" / "daemon.pid").exists(), "the daemon should have started"
        namespace = _pid_namespace_below(pool.worker.process.pid)
        assert len(_members_of(namespace)) >= 3, "the worker, its exercise child and the daemon should be running"
        pool.close()
        time.sleep(0.5)
        assert _members_of(namespace) == [], "a process of the sandbox survived it"
    else:
        pid = int((tmp_path / "home" / "daemon.pid").read_text())
        pool.close()
        time.sleep(0.5)
        assert not _alive(pid), f"the daemon {pid} survived the worker"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"


def _pid_namespace_below(outer: int) -> str:
    """The PID namespace of the sandbox that the bubblewrap process `outer` started."""
    own = os.readlink("/proc/self/ns/pid")
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    frontier = [outer]
    while frontier:
        current = frontier.pop()
        for pid, parent in parents.items():
            if parent == current:
                try:
                    namespace = os.readlink(f"/proc/{pid}/ns/pid")
                except OSError:
                    continue
                if namespace != own:
                    return namespace
                frontier.append(pid)
    raise AssertionError("the sandbox's processes were not found")


def _members_of(namespace: str) -> list[int]:
    """The live processes of a PID namespace (a zombie has ended: only its exit status waits to be collected)."""
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.readlink(entry / "ns" / "pid") == namespace and _alive(int(entry.name)):
                    members.append(int(entry.name))
            except (OSError, IndexError):
                pass
    return members
