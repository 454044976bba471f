"""Specification of the limits per student (grader/trusted/sandbox.py, cgroups.py): one budget covers all of
a student's processes together, a student who spends it loses only their own test, students graded at the same
time cannot reach each other, and the grader only ever kills its own run's workers.

Each hog is a region body for exercise 3.1, run in a real worker (`test_student_code.pool_for`) in every isolation
mode this machine has; modes it has not are skipped with the reason.
"""

from __future__ import annotations

import dataclasses
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

from minitorch.exercises.grader.trusted import cgroups
from minitorch.exercises.grader.trusted import sandbox
NO_CGROUP = cgroups.describe_failure()
needs_cgroups = pytest.mark.skipif(bool(NO_CGROUP), reason=f"no cgroup per student here: {NO_CGROUP}")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="only root can switch to another user")


def modes(*wanted: str, why_not: dict[str, str] | None = None):
    """pytest params for the isolation modes `wanted` (skipped where unavailable, or for `why_not`'s reason)."""
    params = []
    for mode in wanted:
        isolation = ISOLATIONS.get(mode, f"{mode} is not tried here")
        reason = isolation if isinstance(isolation, str) else (why_not or {}).get(mode, "")
        params.append(pytest.param(isolation, id=mode, marks=pytest.mark.skipif(bool(reason), reason=reason)))
    return params


ALL_MODES = ("bubblewrap", "unprivileged user in namespaces", "unprivileged user without namespaces", "none")
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


def test_the_first_line_names_the_limits_in_force():
    isolation = sandbox.choose("none")
    line = isolation.describe_limits()
    assert "\n" not in line and line in isolation.describe(), "the limits are one line, part of the run's first line"
    if isolation.cgroups:
        assert "per PROCESS only" in line and isolation.cgroups in line, f"the fallback names itself and why: {line}"
    else:
        assert line.startswith("Limits per student (a cgroup each): 2.0 GiB of memory and 128 processes"), line


@needs_cgroups
@pytest.mark.parametrize("isolation", modes(*ALL_MODES))
def test_fifty_children_of_100_mb_share_one_memory_budget_and_cost_only_their_student(tmp_path, pools, isolation):
    """The issue's hog: one worker forks 50 children of 100 MB. With a budget of 1 GiB for the student, the kernel
    kills the hog's own processes, never the grader's or an honest student graded beside it."""
    isolation = dataclasses.replace(isolation, memory=1 << 30)
    (tmp_path / "hog").mkdir()
    (tmp_path / "honest").mkdir()
    pools.append(hog := pool_for(tmp_path / "hog", MEMORY_HOG, timeout=120, isolation=isolation, slot=0))
    pools.append(honest := pool_for(tmp_path / "honest", CORRECT, isolation=isolation, slot=1))
    try:
        call(hog)
    except ValueError as error:  # the hog's own answer: how many children hold their 100 MB at the end
        holding = int(str(error).split()[0])
        assert holding <= 10, f"{holding} of the hog's children hold 100 MB each in a budget of 1 GiB"
    except sandbox_down() as down:  # or the OOM killer took the hog's exercise child too: its own test crashed
        assert "used up their budget of memory (1.0 GiB" in str(down), down
    used = sandbox.budget_used_up(hog.worker)
    assert used.startswith("memory (1.0 GiB; the kernel killed"), f"the hog's group should say so: {used!r}"
    events = hog.worker.group.events()
    assert events["memory_peak"] <= 1 << 30, f"the hog's processes together used {events['memory_peak']:,} bytes"
    np.testing.assert_array_equal(call(honest)["mask"], np.triu(np.ones((4, 4), dtype=bool), k=1))
    assert sandbox.budget_used_up(honest.worker) == "", "the honest student's budget is untouched"


def sandbox_down():
    from minitorch.exercises.grader.trusted.student_code import WorkerDown
    return WorkerDown


@needs_cgroups
@pytest.mark.parametrize("isolation", modes(*ALL_MODES))
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
    assert sandbox.budget_used_up(pool.worker).startswith("processes (128 processes and threads;"), (
        sandbox.budget_used_up(pool.worker))
    pool.close()
    assert pool.worker is None and sandbox.processes_of_run(isolation.run_marker) == [], "the bomb outlived its worker"


@needs_cgroups
@pytest.mark.parametrize("isolation", modes("bubblewrap", "unprivileged user in namespaces"))
def test_processes_one_exercise_left_behind_cost_the_next_exercise_nothing(tmp_path, pools, isolation):
    """A fork bomb in 3.1 fills the student's process budget, and its processes outlive 3.1's child: 3.2, next,
    gets a fresh worker with the whole budget (it 'crashed: could not start' before)."""
    bomb = """import os, time
for _ in range(8):
    if os.fork() == 0:  # each child takes every process slot that frees up, for a minute
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


@pytest.mark.parametrize("isolation", modes(*ALL_MODES, why_not={
    "none": "without a sandbox the worker writes on the grader's disk (files up to 64 MiB each)",
    "unprivileged user without namespaces": "without namespaces the worker writes on the grader's disk (files up to "
                                            "64 MiB each) and in the machine's /tmp"}))
def test_the_scratch_home_and_tmp_are_each_a_sized_tmpfs(tmp_path, pools, isolation):
    if isolation.kind == "bubblewrap" and not isolation.sized_tmpfs:
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
    assert not any(tmp_path.rglob("fill-*")), "the worker's files went onto the grader's disk"


COLLUDER_SENDS = """import builtins, os, socket
open("/tmp/drop", "w").write("answer")
open("/dev/shm/drop", "w").write("answer")
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
processes = [entry for entry in os.listdir("/proc") if entry.isdigit()]
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


@pytest.mark.parametrize("isolation", modes(*ALL_MODES, why_not={
    "none": "without a sandbox, students graded at once share /tmp, /dev/shm, sockets and the network",
    "unprivileged user without namespaces": "without namespaces they share what the first line names (tested "
                                            "below)"}))
def test_two_students_graded_at_once_cannot_pass_answers(tmp_path, pools, isolation):
    (tmp_path / "sends").mkdir()
    (tmp_path / "looks").mkdir()
    pools.append(sender := pool_for(tmp_path / "sends", COLLUDER_SENDS, isolation=isolation, slot=0))
    pools.append(looker := pool_for(tmp_path / "looks", COLLUDER_LOOKS, isolation=isolation, slot=1))
    call(sender)  # its child keeps running, holding its sockets
    with pytest.raises(ValueError) as seen:
        call(looker)
    assert str(seen.value) == "[]", f"one student reached what another left: {seen.value}"


WHAT_THE_FIRST_LINE_NAMES = {"/tmp": "/tmp", "/dev/shm": "/dev/shm", "abstract socket": "abstract unix sockets",
                             "localhost port": "localhost ports", "the network": "the network",
                             "the grader's command line (the seed's option is there)": "command line"}


@pytest.mark.parametrize("isolation", modes("unprivileged user without namespaces"))
def test_without_namespaces_students_graded_at_once_share_only_what_the_first_line_names(tmp_path, pools, isolation):
    """Where unshare cannot be had, two students graded at once can pass answers through the machine's shared
    places: the run's first line must name every one a colluder reached, and each student still runs as a uid of
    their own, whose processes all end with its worker."""
    drop = f"minitorch-test-drop-{os.getpid()}-{time.monotonic_ns()}"  # (the machine's own /tmp: a name of its own)
    (tmp_path / "sends").mkdir()
    (tmp_path / "looks").mkdir()
    try:
        pools.append(sender := pool_for(tmp_path / "sends", COLLUDER_SENDS.replace("/drop", "/" + drop),
                                        isolation=isolation, slot=0))
        pools.append(looker := pool_for(tmp_path / "looks", COLLUDER_LOOKS.replace("/drop", "/" + drop),
                                        isolation=isolation, slot=1))
        call(sender)
        with pytest.raises(ValueError) as seen:
            call(looker)
    finally:
        for folder in ("/tmp", "/dev/shm"):
            Path(folder, drop).unlink(missing_ok=True)
    reached = [what.replace("/" + drop, "") for what in eval(str(seen.value)) if not what.endswith(" in /proc")]
    assert reached, "without namespaces the colluder should have reached /tmp at least: is this mode really in force?"
    first_line = isolation.describe()
    unnamed = [what for what in reached if WHAT_THE_FIRST_LINE_NAMES.get(what, what) not in first_line]
    assert not unnamed, f"a colluder reached {unnamed}, which the run's first line does not name: {first_line}"
    uid = sender.worker.uid
    assert uid != looker.worker.uid, "two students graded at once share a uid"
    pools.remove(sender)
    sender.close()  # its child, still holding its sockets, ends with it
    assert sandbox.processes_of(uid) == [], f"a process of the sender's uid {uid} outlived its worker"


@needs_cgroups
def test_the_machine_watch_tells_an_oom_kill_and_a_signal_the_grader_did_not_send(tmp_path):
    group = cgroups.StudentGroup("watch-test", cgroups.Budget(memory=64 << 20, processes=16))
    try:
        watch = sandbox.MachineWatch()
        hog = subprocess.run([sys.executable, "-c", "block = b'x' * (512 << 20)"], preexec_fn=group.join)
        assert hog.returncode == -signal.SIGKILL, f"the hog should have been OOM-killed: {hog.returncode}"
        assert group.events()["oom_kills"] >= 1, group.events()
        assert watch.ran_out(hog.returncode) == "memory"
    finally:
        group.kill()
        group.remove()
    watch = sandbox.MachineWatch()
    stopped = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    stopped.send_signal(signal.SIGTERM)
    assert watch.ran_out(stopped.wait()) in ("SIGTERM", "memory")  # (memory: another test's OOM, meanwhile)
    assert watch.ran_out(0) == "" and watch.ran_out(1) == ""


@needs_root
def test_worker_uids_are_allocated_once_per_run_and_slot_and_never_one_in_use():
    first, other = sandbox.worker_uid(0, "test-run-a"), sandbox.worker_uid(0, "test-run-b")
    assert first != other, "two runs beside each other got the same worker uid"
    assert sandbox.worker_uid(0, "test-run-a") == first, "a run's slot keeps its uid"
    busy = max(first, other) + 1
    while sandbox._is_an_account(busy):
        busy += 1
    squatter = subprocess.Popen(["sleep", "60"],
                                preexec_fn=lambda: (os.setgid(busy), os.setuid(busy)))
    try:
        taken = sandbox.worker_uid(0, "test-run-c")
        assert taken != busy, f"uid {busy} runs a process, yet it was allocated"
        assert not sandbox.kill_every_process_of(busy, "test-run-c"), "a uid this run did not allocate was killed"
        assert not sandbox.kill_every_process_of(first, "test-run-c"), "another run's uid was killed"
        time.sleep(0.2)
        assert squatter.poll() is None, "the process of a uid the run never allocated was killed"
    finally:
        squatter.kill()
        squatter.wait()


def test_a_world_readable_guarded_folder_stops_an_unprivileged_run(monkeypatch, tmp_path):
    """Without namespaces to cover it, a checkout other users may read would show the grader's answers: refused."""
    monkeypatch.setattr(sandbox, "_try_to_read", lambda isolation, paths: paths)
    monkeypatch.setattr(sandbox.os, "geteuid", lambda: 0)
    with pytest.raises(sandbox.IsolationError, match=r"could read the checkout \(/srv/course\): make them "
                                                     r"unreadable to other users"):
        sandbox.choose("unprivileged user", {"the checkout": "/srv/course"})


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


@pytest.mark.parametrize("isolation", modes("unprivileged user in namespaces"))
def test_in_namespaces_a_world_readable_checkout_is_covered_up_not_read(isolation):
    from minitorch.exercises.registry import ROOT

    answers = ROOT / "minitorch" / "softmax.py"
    if not all(path.stat().st_mode & 0o005 for path in (answers, answers.parent, ROOT)):
        pytest.skip("this checkout is not readable by other users: nothing to cover up")
    chosen = sandbox.choose("unprivileged user", {"the answers": str(answers), "the tests": str(ROOT / "tests")})
    assert chosen.in_namespaces() and chosen.exposed == [], f"a worker could read {chosen.exposed}"


@needs_root
def test_a_cgroup_version_2_tree_gives_a_group_both_controllers_or_is_refused_leaving_nothing(monkeypatch):
    """Version 2 mounted beside version 1 (a hybrid machine) has no controllers to give: refused, and no folder (or
    ordinary file pretending to be a control file) is left anywhere."""
    mounts = cgroups._mounts()
    if "v2" not in mounts:
        pytest.skip("no cgroup version 2 tree is mounted here")
    top = mounts["v2"][0]
    before = sorted(str(path) for path in top.parent.rglob("minitorch-grading"))
    monkeypatch.setattr(cgroups, "_mounts", lambda: {"v2": mounts["v2"]})
    try:
        group = cgroups.StudentGroup("v2-test", cgroups.Budget(memory=64 << 20, processes=8))
    except cgroups.CgroupError as error:
        assert "memory and pids controllers" in str(error)
    else:
        assert {"memory", "pids"} <= set((group.folders["v2"] / "cgroup.controllers").read_text().split())
        group.remove()
    assert sorted(str(path) for path in top.parent.rglob("minitorch-grading")) == before, "a folder was left behind"


def test_where_no_cgroup_can_be_made_each_process_gets_the_memory_limit_and_the_first_line_says_so(tmp_path, pools):
    isolation = dataclasses.replace(sandbox.choose("none"), cgroups="the grader is not running as root",
                                    memory=512 << 20)
    assert isolation.describe_limits().startswith(
        "Limits per PROCESS only (no cgroup: the grader is not running as root): 512 MiB of address space each")
    pools.append(pool := pool_for(tmp_path, "block = b'x' * (1 << 30)\nreturn None", isolation=isolation))
    with pytest.raises(MemoryError):
        call(pool)
    assert pool.worker.group is None, "no cgroup is made where the run said there is none"


@needs_cgroups
def test_an_empty_group_whose_maker_ended_is_swept_when_the_next_is_made():
    """A check process killed mid-way (Ctrl-C, its budget) never removes its student's group."""
    first = cgroups.StudentGroup("sweep-test", cgroups.Budget(memory=64 << 20, processes=8))
    orphans = [folder.with_name("killed-check-process-4194305-0") for folder in first.folders.values()]
    first.remove()
    for orphan in orphans:  # (4194305 is above the largest process ID Linux hands out)
        orphan.mkdir()
    second = cgroups.StudentGroup("sweep-test", cgroups.Budget(memory=64 << 20, processes=8))
    second.remove()
    assert [orphan for orphan in orphans if orphan.exists()] == [], "the orphaned groups are still there"
