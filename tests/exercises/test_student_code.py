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


def isolations() -> dict[str, sandbox.Isolation | str]:
    """{mode: its Isolation, or why it cannot be had here}: bubblewrap, the unprivileged user in namespaces of its
    own (as root, with unshare), and none."""
    found = {}
    for kind in ("bubblewrap", "unprivileged user"):
        try:
            isolation = sandbox.choose(kind)
            found[kind if not isolation.in_namespaces() else "unprivileged user in namespaces"] = isolation
        except sandbox.IsolationError as error:
            found[kind] = str(error)
    found["none"] = sandbox.choose("none")
    return found


ISOLATION, NO_BUBBLEWRAP = strongest_isolation()
ISOLATIONS = isolations()
MODES = [pytest.param(isolation, id=mode, marks=pytest.mark.skipif(isinstance(isolation, str), reason=str(isolation)))
         for mode, isolation in ISOLATIONS.items()]
CAUSAL_MASK = next(exercise for exercise in load_exercises(ROOT) if exercise.id == "3.1")


def pool_for(tmp_path: Path, body: str, timeout: float = 5.0, budget: float = 120.0,
             isolation: sandbox.Isolation | None = None, slot: int = 0) -> WorkerPool:
    """A worker pool for a copy whose region 3.1 holds `body` (unindented), in `isolation` (the strongest by
    default) as the `slot`-th student graded at once."""
    isolation = isolation or ISOLATION
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
    plan = {"isolation": isolation.__dict__, "slot": slot, "library_root": str(tmp_path / "lib"),
            "home": str(tmp_path / "home"), "exercises": {"3.1": "3.1"}, "timeout": timeout, "budget": budget}
    if isolation.kind == "unprivileged user":  # (what grading.py does: the libraries readable by that uid only)
        uid = sandbox.worker_uid(slot, isolation.run_marker)
        for path in [tmp_path, tmp_path / "lib", *(tmp_path / "lib").rglob("*")]:
            os.chown(path, 0, uid)
            os.chmod(path, 0o750 if path.is_dir() else 0o640)
        os.chown(tmp_path / "home", uid, uid)
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


@pytest.mark.parametrize("isolation", MODES)
def test_a_correct_region_answers_with_data(tmp_path, pools, isolation):
    pools.append(pool := pool_for(tmp_path, "return np.triu(np.ones((length, length), dtype=bool), k=1)",
                                  isolation=isolation))
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


@pytest.mark.parametrize("isolation", MODES)
def test_no_process_the_student_starts_outlives_the_worker(tmp_path, pools, isolation):
    """A daemon (double fork, new session, SIGHUP ignored) keeps running; when the worker stops, no process of
    this run is left (counted by the run's marker, so another grading on the machine does not count)."""
    body = ("import os, signal, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
            "        signal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
            "        while True:\n            time.sleep(1)\n    os._exit(0)\ntime.sleep(1)\nreturn None")
    pool = pool_for(tmp_path, body, isolation=isolation)
    call(pool)
    running = sandbox.processes_of_run(isolation.run_marker)
    assert len(running) >= 3, f"the worker, its exercise child and the daemon should be running: {running}"
    pool.close()
    time.sleep(0.5)
    left = [pid for pid in sandbox.processes_of_run(isolation.run_marker) if _alive(pid)]
    assert left == [], f"processes of the student's worker survived it: {left}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return not Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except (ProcessLookupError, FileNotFoundError):
        return False
