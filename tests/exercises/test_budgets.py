"""Specification of the limits per student (grader/trusted/isolation.py) and of the trusted side's own budget
(grader/trusted/reference_answers.py, the check process): a student who spends their budget loses only their own
test, students graded at the same time cannot reach each other, what the grader computes for a student is bounded
before anything is allocated, and no request can take the check process past its memory limit.

Each hog is a region body for exercise 3.1 (or a stand-in request of 3.3), run in a real worker
(`test_student_code.pool_for`) in every isolation mode this machine has; modes it has not are skipped with the
reason.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from test_student_code import ISOLATIONS, call, pool_for, pools  # noqa: F401 (pools: a fixture)

from minitorch.exercises.grader.trusted import isolation as sandbox

SANDBOXED = ("bubblewrap", "chroot")


def modes(*wanted: str, why_not: dict[str, str] | None = None):
    """pytest params for the isolation modes `wanted` (skipped where unavailable, or for `why_not`'s reason)."""
    params = []
    for mode in wanted:
        isolation = ISOLATIONS.get(mode, f"{mode} is not tried here")
        reason = isolation if isinstance(isolation, str) else (why_not or {}).get(mode, "")
        params.append(pytest.param(isolation, id=mode, marks=pytest.mark.skipif(bool(reason), reason=reason)))
    return params


def as_root(*wanted: str):
    """`modes`, where a student has a user of its own (as root): the process limit counts its processes."""
    return modes(*wanted, why_not={mode: "only as root does a student get a user of its own" for mode in wanted
                                   if os.geteuid() != 0})


CORRECT = "return np.triu(np.ones((length, length), dtype=bool), k=1)"
MEMORY_HOG = """import os, time
children = []
for _ in range(50):
    pid = os.fork()
    if pid == 0:
        try:
            block = b"x" * (100 << 20)
        except MemoryError:
            os._exit(1)
        time.sleep(60)
        os._exit(0)
    children.append(pid)
time.sleep(5)
holding = 0
for pid in children:
    try:
        status = open(f"/proc/{pid}/status").read()
        holding += "VmRSS:" in status and int(status.split("VmRSS:")[1].split()[0]) >= 100 << 10
    except (OSError, IndexError, ValueError):
        pass
raise ValueError(f"{holding} children hold their 100 MB")"""


@pytest.mark.parametrize("isolation", modes(*sandbox.KINDS))
def test_the_first_line_names_the_isolation_what_it_does_not_guard_and_the_limits(isolation):
    line = isolation.describe()
    assert "\n" not in line and line.endswith(isolation.describe_limits()), "one line, the limits at its end"
    first = {"bubblewrap": "bubblewrap: ", "chroot": "chroot", "none": "NONE: the students' code runs as the "
             "grader's user"}[isolation.kind]
    assert line.startswith(first), line
    if isolation.kind == "chroot":
        assert 0 < line.find("NOT GUARDED: the network") < line.find("Each student's code runs"), (
            f"the fallback says first what it does not guard: {line}")
    if isolation.systemd:
        assert isolation.describe_limits().startswith("Limits per student (a systemd scope): "), line
    else:
        processes = "32 processes and threads for its user" if isolation.tree else "no process limit"
        assert isolation.describe_limits().startswith(f"Limits per PROCESS (no systemd): 2.0 GiB of address space "
                                                      f"each, {processes}"), line


@pytest.mark.parametrize("isolation", modes(*SANDBOXED))
def test_fifty_children_of_100_mb_share_one_memory_budget_where_systemd_runs(tmp_path, pools, isolation):
    """The hog forks 50 children of 100 MB: with a budget of 1 GiB for the student (a systemd scope), the kernel
    stops the hog's own processes. Without systemd the limit is per process (the first line says so)."""
    if not isolation.systemd:
        pytest.skip("no systemd here: memory is limited per process, not per student (the first line says so)")
    isolation = dataclasses.replace(isolation, memory=1 << 30)
    pools.append(hog := pool_for(tmp_path, MEMORY_HOG, timeout=120, isolation=isolation))
    try:
        call(hog)
    except ValueError as error:  # the hog's own answer: how many children hold their 100 MB at the end
        assert int(str(error).split()[0]) <= 10, f"{error} in a budget of 1 GiB"
    except worker_down() as down:  # or the OOM killer took the hog's exercise child too: its own test crashed
        assert "killed" in str(down), down


def test_where_systemd_runs_each_worker_is_started_in_a_scope_with_its_students_budget(tmp_path):
    """(This machine may have no systemd: the command is checked, not run.)"""
    isolation = sandbox.Isolation("none", systemd=True, memory=1 << 30, processes=16)
    command, _ = sandbox._command(isolation, ["python", "worker.py"], uid=None)
    scope = command[:command.index("--") + 1]
    assert scope[:2] == ["systemd-run", "--scope"] and {"MemoryMax=1073741824", "TasksMax=16", "CPUQuota=100%"} <= \
        set(scope), f"the scope does not carry the student's budget: {scope}"
    assert command[-2:] == ["python", "worker.py"] and "prlimit" in command, command


def worker_down():
    from minitorch.exercises.grader.trusted.worker_client import WorkerDown
    return WorkerDown


@pytest.mark.parametrize("isolation", as_root(*SANDBOXED))
def test_a_thread_and_fork_bomb_stops_at_the_students_process_budget(tmp_path, pools, isolation):
    body = """import os, threading, time
started = 0
for _ in range(3000):
    try:
        threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
        started += 1
    except RuntimeError:
        break
forked = 0
for _ in range(3000):
    try:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        forked += 1
    except OSError:
        break
raise ValueError(f"{started} threads {forked} processes")"""
    pools.append(pool := pool_for(tmp_path, body, timeout=60, isolation=isolation))
    with pytest.raises(ValueError) as seen:
        call(pool)
    threads, processes = int(str(seen.value).split()[0]), int(str(seen.value).split()[2])
    assert threads + processes < isolation.processes, f"{seen.value}: the budget is {isolation.processes} in all"
    pool.close()
    assert pool.worker is None and sandbox.processes_of_run(isolation.run_marker) == [], "the bomb outlived its worker"
    assert sandbox.processes_of(pool.uids, sandbox.UID_BLOCK) == [], "a process of the student's users outlived it"


@pytest.mark.parametrize("isolation", as_root(*SANDBOXED))
def test_processes_one_exercise_left_behind_cost_the_next_exercise_nothing(tmp_path, pools, isolation):
    """A fork bomb in 3.1 fills the student's process budget, and its processes outlive 3.1's child: 3.2, next,
    gets a fresh worker with the whole budget (it 'crashed: could not start' before)."""
    bomb = """import os, time
for _ in range(8):
    if os.fork() == 0:  # each child takes every process slot that frees up, for a minute
        time.sleep(0.5)  # (once its siblings are born)
        for _ in range(3000):
            try:
                if os.fork() == 0:
                    time.sleep(60)
                    os._exit(0)
            except OSError:
                time.sleep(0.01)
        os._exit(0)
time.sleep(1)
return np.triu(np.ones((length, length), dtype=bool), k=1)"""
    pools.append(pool := pool_for(tmp_path, bomb, timeout=60, isolation=isolation))
    pool.plan["exercises"]["3.2"] = pool.plan["exercises"]["3.1"]  # (the same file: 3.2 there is this book's)
    np.testing.assert_array_equal(call(pool)["mask"], np.triu(np.ones((4, 4), dtype=bool), k=1))
    scores, future = np.zeros((1, 1, 3, 3)), np.triu(np.ones((3, 3), dtype=bool), k=1)
    answer = pool.call("3.2", time.monotonic(), "softmax_attention", scores, future)
    np.testing.assert_allclose(answer["weights"][0, 0, 2], [1 / 3] * 3)


@pytest.mark.parametrize("isolation", modes(*sandbox.KINDS, why_not={
    "chroot": "in a root of its own the scratch folder and /tmp are on the grader's disk (files up to 64 MiB "
              "each), as the first line says",
    "none": "without a sandbox the worker writes on the grader's disk (files up to 64 MiB each)"}))
def test_the_scratch_home_and_tmp_are_each_a_sized_tmpfs(tmp_path, pools, isolation):
    if not isolation.sized_tmpfs:
        pytest.skip("this bubblewrap has no --size option")
    isolation = dataclasses.replace(isolation, scratch_size=32 << 20)
    body = """import os
written = {}
for folder in (os.environ["HOME"], "/tmp"):
    written[folder] = 0
    for part in range(20):
        try:
            with open(f"{folder}/fill-{part}", "wb") as file:
                for _ in range(10):
                    file.write(b"x" * (1 << 20))
                    written[folder] += 1
        except OSError:
            break
raise ValueError(repr(written))"""
    pools.append(pool := pool_for(tmp_path, body, timeout=60, isolation=isolation))
    with pytest.raises(ValueError) as seen:
        call(pool)
    written = eval(str(seen.value))  # {folder: MiB written}
    assert all(mib <= 32 for mib in written.values()), f"MiB written past a 32 MiB tmpfs: {written}"
    assert not any(Path(pool.plan["home"]).parent.rglob("fill-*")), "the worker's files went onto the grader's disk"


COLLUDER_SENDS = """import builtins, os, socket
for folder in ("/tmp", "/dev/shm"):
    try:
        open(f"{folder}/drop", "w").write("answer")
    except OSError:
        pass
kept = []
for family, address in ((socket.AF_UNIX, "\\0minitorch-colluder"), (socket.AF_INET, ("127.0.0.1", 47123))):
    try:
        server = socket.socket(family)
        server.bind(address)
        server.listen()
        kept.append(server)
    except OSError:
        pass
builtins.kept = kept
return np.zeros((length, length), dtype=bool)"""
COLLUDER_LOOKS = """import os, socket
seen = [path for path in ("/tmp/drop", "/dev/shm/drop") if os.path.exists(path)]
for family, address, name in ((socket.AF_UNIX, "\\0minitorch-colluder", "abstract socket"),
                              (socket.AF_INET, ("127.0.0.1", 47123), "localhost port"),
                              (socket.AF_INET, ("1.1.1.1", 53), "the network")):
    try:
        client = socket.socket(family)
        client.settimeout(3)
        client.connect(address)
        seen.append(name)
    except OSError:
        pass
processes = [entry for entry in os.listdir("/proc") if entry.isdigit()] if os.path.isdir("/proc") else []
if len(processes) > 10:
    seen.append(f"{len(processes)} processes in /proc")
for entry in processes:
    try:
        command = open(f"/proc/{entry}/cmdline", "rb").read()
        if b"\\0-m\\0pytest" in command or b"--exercise-seed" in command:
            seen.append("the grader's command line (the seed's option is there)")
    except OSError:
        pass
raise ValueError(repr(seen))"""


def colluders(tmp_path: Path, pools: list, isolation) -> list[str]:
    """What a student graded beside another that left files, sockets and a port open could reach of them."""
    (tmp_path / "sends").mkdir()
    (tmp_path / "looks").mkdir()
    pools.append(sender := pool_for(tmp_path / "sends", COLLUDER_SENDS, isolation=isolation))
    pools.append(looker := pool_for(tmp_path / "looks", COLLUDER_LOOKS, isolation=isolation))
    call(sender)  # its child keeps running, holding its sockets
    with pytest.raises(ValueError) as seen:
        call(looker)
    assert sender.uids is None or abs(sender.uids - looker.uids) >= sandbox.UID_BLOCK, "two students share users"
    return eval(str(seen.value))


@pytest.mark.parametrize("isolation", modes(*sandbox.KINDS, why_not={
    "chroot": "in a root of its own students graded at once share the network (tested below)",
    "none": "without a sandbox, students graded at once share /tmp, /dev/shm, sockets and the network"}))
def test_two_students_graded_at_once_cannot_pass_answers(tmp_path, pools, isolation):
    reached = colluders(tmp_path, pools, isolation)
    assert reached == [], f"one student reached what another left: {reached}"


WHAT_THE_FIRST_LINE_NAMES = {"abstract socket": "abstract sockets", "localhost port": "localhost ports",
                             "the network": "the network"}


@pytest.mark.parametrize("isolation", modes("chroot"))
def test_in_a_root_of_their_own_students_graded_at_once_share_only_what_the_first_line_names(tmp_path, pools,
                                                                                              isolation):
    """Without namespaces two students graded at once can meet on the network (localhost, abstract sockets): the
    run's first line must name every way a colluder reached the other; files and processes stay their own."""
    reached = colluders(tmp_path, pools, isolation)
    assert reached, "in a chroot the colluder should reach the other's localhost port: is this mode in force?"
    unnamed = [what for what in reached if WHAT_THE_FIRST_LINE_NAMES.get(what, what) not in isolation.describe()]
    assert unnamed == [], f"a colluder reached {unnamed}, which the run's first line does not name"


def test_the_machine_watch_tells_an_oom_kill_from_a_signal_the_grader_did_not_send(monkeypatch):
    watch = sandbox.MachineWatch()
    stopped = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    stopped.send_signal(signal.SIGTERM)
    status = stopped.wait()
    assert watch.ran_out(status) in ("SIGTERM", "memory")  # (memory: an OOM kill elsewhere, meanwhile)
    monkeypatch.setattr(sandbox, "_machine_oom_kills", lambda: watch.oom_kills + 1)  # as if the kernel killed one
    assert watch.ran_out(-signal.SIGKILL) == "memory"
    assert watch.ran_out(0) == "" and watch.ran_out(1) == ""


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can start a process as another user")
def test_a_students_users_are_none_a_process_or_an_account_uses(monkeypatch):
    """Drawn at random, a block of users is taken only if no process (a zombie included) and no account has any
    of its uids: here the first draw holds a running process's uid, the second an account's, the third is free."""
    low = max(100_000, int(Path("/proc/self/uid_map").read_text().split()[0]))
    busy, account, free = low + 5_000_000, low + 6_000_000, low + 7_000_000
    squatter = subprocess.Popen(["sleep", "60"], preexec_fn=lambda: (os.setgid(busy), os.setuid(busy)))
    try:
        draws = iter([busy - 10 - low, account - 20 - low, free - low])
        monkeypatch.setattr(sandbox.secrets, "randbelow", lambda n: next(draws) if n > 1 else 0)
        accounts = sandbox.pwd.getpwall() + [sandbox.pwd.struct_passwd(("someone", "x", account, account, "", "/",
                                                                        "/bin/sh"))]
        monkeypatch.setattr(sandbox.pwd, "getpwall", lambda: accounts)
        assert sandbox.fresh_uid() == free, "a block with a running process's or an account's uid was taken"
    finally:
        squatter.kill()
        squatter.wait()


def test_a_sandbox_that_shows_a_worker_a_guarded_path_is_refused(monkeypatch):
    monkeypatch.setattr(sandbox, "_what_it_sees", lambda isolation, paths: paths)
    monkeypatch.setattr(sandbox, "_isolation", lambda kind, *arguments: sandbox.Isolation(kind))
    with pytest.raises(sandbox.IsolationError, match=r"chroot let a student's worker see the checkout \(/srv/co"):
        sandbox.choose("chroot", {"the checkout": "/srv/course"})


def test_a_check_process_the_machine_ends_twice_leaves_the_student_not_graded_never_scored(tmp_path, monkeypatch):
    from minitorch.exercises.grader.trusted import grading
    from minitorch.exercises.registry import ROOT
    from minitorch.exercises.grader.trusted.submissions import Entry

    copy = tmp_path / "ann"
    shutil.copytree(ROOT / "minitorch", copy / "minitorch", ignore=shutil.ignore_patterns("__pycache__"))
    started = []

    def killed_by_the_machine(*args, **kwargs):  # as if the kernel's OOM killer took the check process
        started.append(kwargs.get("patience"))
        return -signal.SIGKILL

    monkeypatch.setattr(grading, "_run_pytest", killed_by_the_machine)
    run = grading.Run(["3.1"], seed=1, timeout=5, budget=60, isolation=sandbox.choose("none"),
                      known_tests={"tests/test_attention.py::test_mask": "3.1"})
    graded = grading.grade_submission(Entry("ann", copy), tmp_path / "out", run, scratch_root=tmp_path)
    assert len(started) == 2, "a check process the machine ended is run once more, and only once"
    assert graded["score"] == 0 and graded["extra_data"]["graded"] is False
    assert graded["output"] in ("not graded: the machine ran out of memory while grading (twice); grade again",
                                "not graded: the check process was ended by SIGKILL, which the grader did not send "
                                "(twice); grade again"), graded["output"]
    assert {test["extra_data"]["kind"] for test in graded["tests"]} == {"not graded"}


def test_each_process_gets_the_memory_limit_and_the_first_line_says_so(tmp_path, pools):
    isolation = dataclasses.replace(sandbox.choose("none"), memory=512 << 20)
    assert isolation.describe_limits().startswith("Limits per PROCESS (no systemd): 512 MiB of address space each")
    pools.append(pool := pool_for(tmp_path, "block = b'x' * (1 << 30)\nreturn None", isolation=isolation))
    with pytest.raises(MemoryError):
        call(pool)


# ----------------------------------------------------------------------
# the trusted side's budget: what the grader computes for a student


def test_a_request_is_refused_from_its_declared_shapes_before_the_grader_computes_anything(monkeypatch):
    """The issue's requests: a matmul backward whose operands broadcast to (500, 500, 600, 1, 1) (2.4 MB sent, 10 GB
    for the grader) and a float16 product of 1200^3 (35 s of the grader's CPU). Neither reaches the function."""
    from minitorch.exercises.grader.trusted import reference_answers as services

    monkeypatch.setattr(services, "reference_function", lambda exercise_id: pytest.fail("the grader computed it"))
    broadcast = [np.ones((500, 1, 1, 1, 1)), np.ones((500, 1, 1, 1, 1)), np.ones((1, 500, 600, 1, 1))]
    with pytest.raises(ValueError, match="broadcast to 150,000,000 elements"):
        services.answer("2.2", {"args": broadcast})
    half = np.ones((1200, 1200), dtype=np.float16)
    with pytest.raises(ValueError, match="cost 27,648,000,000"):
        services.answer("2.2", {"args": [half, half, half]})
    small = np.ones((1200, 1200))
    with pytest.raises(ValueError, match="multiply-adds"):  # the upstream gradient of a backward request counts too
        services.answer("2.2", {"args": [{"tensor_node": 0, "data": small}] * 2, "upstream": small})
    services.check_cost({"args": [np.ones((4, 4, 64, 64)), -1], "upstream": np.ones((4, 4, 64, 64))})  # a check's


CHECK_PROCESS = """
import json, resource, sys, time
from pathlib import Path
import numpy as np
from minitorch.exercises.grader.trusted import isolation as sandbox
from minitorch.exercises.grader.trusted.worker_library import copy_student_files, give_library, prepare_base
from minitorch.exercises.grader.trusted.worker_client import WorkerPool
from minitorch.exercises.registry import EXERCISES, ROOT, replace_bodies

folder, bodies, outcomes = Path(sys.argv[1]), json.loads(sys.argv[2]), {}
base, exercise = prepare_base(ROOT, folder / "base"), EXERCISES["3.3"]
for case, body in bodies.items():
    copy = folder / case
    (copy / "minitorch/paper").mkdir(parents=True)
    source = replace_bodies((ROOT / exercise.module).read_text(), {exercise.function: body}, exercise.module)
    (copy / exercise.module).write_text(source)
    give_library(base, copy / "lib")
    copy_student_files(copy, [exercise], copy / "lib")
    (copy / "home").mkdir()
    pool = WorkerPool({"isolation": sandbox.Isolation("none").__dict__, "uid": None, "library_root": str(copy / "lib"),
                       "home": str(copy / "home"), "exercises": {"3.3": "student/" + exercise.module}, "timeout": 300,
                       "budget": 600})
    try:
        pool.call("3.3", time.monotonic(), "relu_attention", np.zeros((1, 1, 3, 3)), np.eye(3, dtype=bool))
        outcomes[case] = "answered"
    except Exception as error:
        outcomes[case] = f"{type(error).__name__}: {error}"
    finally:
        pool.close()
print(json.dumps({"outcomes": outcomes, "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss << 10}))
"""
HOSTILE_REQUESTS = {
    "broadcast": "from minitorch.ops import matmul_backward\nmatmul_backward(np.ones((500, 1, 1, 1, 1)), "
                 "np.ones((500, 1, 1, 1, 1)), np.ones((1, 500, 600, 1, 1)))\nreturn None",
    "large_result": "from minitorch.ops import sum_backward\nsum_backward(np.ones(()), (500, 500, 600), (0, 1, 2), "
                    "False)\nreturn None",
    "float16": "from minitorch.ops import matmul_backward\nx = np.ones((1200, 1200), dtype=np.float16)\n"
               "matmul_backward(x, x, x)\nreturn None",
    "nested_lists": "from minitorch.exercises.grader.sandboxed import stand_in\nimport struct\n"
                    "header = b'[' + b'[],' * 14_000_000 + b'[]]'\nbody = struct.pack('>I', len(header)) + header\n"
                    "stand_in.CONNECTION.sendall(struct.pack('>I', len(body)) + body)\nreturn None",
}


def test_a_check_process_under_its_memory_limit_refuses_the_hostile_requests_and_stays_small(tmp_path):
    """A check process, started as the grader starts one (under sandbox.check_process_limits), meets the issue's
    three requests through a real worker, and a sum backward whose result has the broadcast's 150,000,000 elements:
    each is refused, and the process's peak memory stays a small fraction of its limit (the broadcast took 4.6 GB
    before, the 43 MB frame of nested lists 1.1 GB). The broadcast's grad does not have the shape of a @ b, which
    matmul_backward's input check refuses first; the sum's grad fits, and the budget refuses its result."""
    from minitorch.exercises.registry import ROOT

    finished = subprocess.run([*sandbox.check_process_limits(), sys.executable, "-c", CHECK_PROCESS, str(tmp_path),
                               json.dumps(HOSTILE_REQUESTS)], capture_output=True, text=True, timeout=900, cwd=ROOT,
                              env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    assert finished.returncode == 0, finished.stderr[-3000:]
    seen = json.loads(finished.stdout.splitlines()[-1])
    outcomes = seen["outcomes"]
    assert outcomes["broadcast"].startswith("ValueError") and "grad has shape" in outcomes["broadcast"], outcomes
    assert outcomes["large_result"].startswith("ValueError") and "150,000,000 elements" in outcomes["large_result"], (
        outcomes)
    assert outcomes["float16"].startswith("ValueError") and "multiply-adds" in outcomes["float16"], outcomes
    assert outcomes["nested_lists"].startswith("Crashed") and "header length" in outcomes["nested_lists"], outcomes
    assert seen["peak_rss"] < 512 << 20 < sandbox.CHECK_PROCESS_MEMORY, (
        f"the check process peaked at {seen['peak_rss'] >> 20} MiB")


def test_the_graders_work_for_a_student_counts_against_the_students_budget(tmp_path, pools):
    """A body that keeps the grader busy with requests it may make (each within the cost a check needs) gets the
    grader's time only until the student's budget runs out: the grader serves within the student's deadline."""
    body = ("from minitorch.ops import matmul_backward\nx = np.ones((300, 300))\nwhile True:\n"
            "    matmul_backward(x, x, x)")
    pools.append(pool := pool_for(tmp_path, body, timeout=60, budget=3.0, exercise=EXERCISES_3_3()))
    from minitorch.exercises.grader.trusted.worker_client import TimedOut
    with pytest.raises(TimedOut, match="time budget of 3 s ran out"):
        pool.call("3.3", time.monotonic(), "relu_attention", np.zeros((1, 1, 3, 3)), np.eye(3, dtype=bool))


def EXERCISES_3_3():
    from minitorch.exercises.registry import EXERCISES
    return EXERCISES["3.3"]
