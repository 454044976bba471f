"""Every command stops the same way (minitorch.tools.exit_policy.run_command): SIGTERM, SIGHUP and every other
signal whose default action ends the process (SIGQUIT, SIGUSR1, SIGALRM, ...) take Ctrl-C's path (workers stopped,
nothing half-written left, exit 128 + the signal), an OSError is one line naming the path and what to do, and a
closed pipe is quiet."""

from __future__ import annotations

import errno
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bad_input_helpers import ROOT

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGTERM, SIGHUP and process groups are POSIX")


def _command(*arguments, **options) -> subprocess.CompletedProcess:
    options = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, **options}
    return subprocess.run([sys.executable, "-m", *arguments], cwd=ROOT, text=True, timeout=300, **options)


# ----------------------------------------------------------------------
# cause 1: signals other than Ctrl-C


def _build_aside_then_get(signum, target: Path):
    """A command's main that builds `target` aside (as reproduce and book do) and gets `signum` midway."""
    from minitorch.outputs import building_aside

    def main(argv):
        with building_aside(target) as staging:
            (staging / "half.txt").write_text("half of a result", encoding="utf-8")
            os.kill(os.getpid(), signum)
            time.sleep(30)  # the signal arrives long before
        return 0

    return main


def _bench_then_get(signum, target: Path):
    """bench's main, interrupted while it measures (BN-D printed a KeyboardInterrupt traceback)."""
    from minitorch.tools import bench

    def measuring(*args, **kwargs):
        os.kill(os.getpid(), signum)
        time.sleep(30)

    def main(argv):
        original, bench.run_steps = bench.run_steps, measuring
        try:
            return bench.main(["--json", str(target / "bench.json")])
        finally:
            bench.run_steps = original

    return main


NO_FLOOR = pytest.mark.skipif(importlib.util.find_spec("minitorch.fast.hand_fused") is None,
                              reason="a student edition has no benchmark floor: bench stops before it measures")


STOPS = {"TERM": signal.SIGTERM, "HUP": signal.SIGHUP, "INT": signal.SIGINT, "QUIT": signal.SIGQUIT,
         "USR1": signal.SIGUSR1, "USR2": signal.SIGUSR2, "ALRM": signal.SIGALRM, "XCPU": signal.SIGXCPU,
         "RTMIN+2": signal.SIGRTMIN + 2}


@pytest.mark.parametrize("signum", list(STOPS.values()), ids=list(STOPS))
@pytest.mark.parametrize("make_main", [_build_aside_then_get, pytest.param(_bench_then_get, marks=NO_FLOOR)],
                         ids=["building-aside", "bench"])
def test_a_stop_signal_takes_the_ctrl_c_path_and_leaves_nothing_half_written(tmp_path, capsys, make_main, signum):
    from minitorch.tools.exit_policy import run_command, signal_name

    target = tmp_path / "out"
    target.mkdir()
    (target / "earlier.txt").write_text("the earlier result", encoding="utf-8")
    status = run_command(make_main(signum, target), [], name="python -m minitorch")
    assert status == 128 + signum, f"a command stopped by signal {signum} must exit {128 + signum}, got {status}"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out"], "a folder being built was left beside"
    assert sorted(path.name for path in target.iterdir()) == ["earlier.txt"], "the earlier output was changed"
    error = capsys.readouterr().err
    named = signal_name(signum)
    assert "Traceback" not in error and f"stopped by {named}\n" in error, f"one line naming {named}: {error!r}"
    assert signal.getsignal(signal.SIGTERM) is not None, "the wrapper must put the previous handlers back"


def _reproduce_stopped_in_training(tmp_path, monkeypatch):
    from minitorch.paper import reproduce as reproduce_module

    def stopped(*args):
        raise KeyboardInterrupt  # as Ctrl-C (or any stop signal) comes while the models train

    monkeypatch.setattr(reproduce_module, "_reproduce_into", stopped)
    with pytest.raises(KeyboardInterrupt):
        reproduce_module.reproduce(quick=True, only=["1x1"], progress=False, log=lambda line: None)  # into runs/...


def _write_failed_in_new_folders(tmp_path, monkeypatch):
    from minitorch.outputs import UnwritableFileError, write_atomically

    def disk_full(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", disk_full)
    with pytest.raises(UnwritableFileError, match="No space left on device"):
        write_atomically(tmp_path / "new" / "deeper" / "notes.txt", "text")


@pytest.mark.parametrize("ended", [_reproduce_stopped_in_training, _write_failed_in_new_folders],
                         ids=["reproduce-stopped", "write-failed"])
def test_an_output_that_ends_with_nothing_leaves_no_folder_it_made_for_itself(tmp_path, monkeypatch, ended):
    """reproduce stopped before writing anything said "nothing was written", yet left the empty runs/ it had made
    for its default --out; a failed write left the folders it made for its file."""
    monkeypatch.chdir(tmp_path)
    ended(tmp_path, monkeypatch)
    left = sorted(path.relative_to(tmp_path).as_posix() for path in tmp_path.rglob("*"))
    assert left == [], f"an output that ended with nothing left {left} behind"


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
        except (OSError, IndexError, ValueError):
            continue
    return found


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the workers through /proc")
@pytest.mark.parametrize("signum,whole_group", [(signal.SIGTERM, False), (signal.SIGHUP, False),
                                                (signal.SIGUSR1, False), (signal.SIGQUIT, True)],
                         ids=["TERM", "HUP", "USR1", "QUIT-to-the-group"])
def test_reproduce_with_two_workers_stopped_by_a_signal_leaves_no_worker_and_no_partial_folder(tmp_path, signum,
                                                                                               whole_group):
    """The signal reaches the main process only; unless it stops them, its workers train on and .X.partial-*
    stays. Ctrl-\\ (SIGQUIT to the whole group) must not kill multiprocessing's resource tracker, which would
    print tracebacks after the clear message."""
    out = tmp_path / "X"
    process = subprocess.Popen([sys.executable, "-m", "minitorch", "reproduce", "--quick", "--jobs", "2",
                                "--no-progress", "--out", str(out)], cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=whole_group)
    deadline = time.monotonic() + 120
    workers: list[int] = []
    while len(workers) < 2 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.5)
        workers = [pid for pid in _children(process.pid)
                   if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()]
    assert len(workers) >= 2, "the two workers did not start"
    if whole_group:
        os.killpg(process.pid, signum)
    else:
        os.kill(process.pid, signum)
    output, _ = process.communicate(timeout=60)
    assert process.returncode == 128 + signum, f"exit {process.returncode}, expected {128 + signum}:\n{output}"
    time.sleep(1)
    alive = [pid for pid in workers if Path(f"/proc/{pid}").exists()
             and "Z" not in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]]
    assert not alive, f"workers {alive} outlived the stopped run"
    assert list(tmp_path.iterdir()) == [], f"the stopped run left {[p.name for p in tmp_path.iterdir()]}"
    assert "nothing was written" in output and "Traceback" not in output and "Warning" not in output, output


# ----------------------------------------------------------------------
# cause 2: OS errors are one line, naming the path and what to do


@pytest.mark.parametrize("raised,named", [
    (OSError(errno.ENOSPC, "No space left on device", "/full/run/results.json"),
     r"/full/run/results.json: No space left on device; the disk is full"),
    (OSError(errno.ENAMETOOLONG, "File name too long", "a" * 300), r"a name is too long .*choose a shorter one"),
    (OSError(errno.ELOOP, "Too many levels of symbolic links", "loop"), r"loop: .*points back to itself"),
    (OSError(errno.EROFS, "Read-only file system", "/ro/run"), r"/ro/run: Read-only file system; .*another place"),
    (FileNotFoundError(errno.ENOENT, "No such file or directory", "gone"), r"gone: .*working folder, deleted"),
    (FileNotFoundError(errno.ENOENT, "No usable temporary directory found in ['/tmp']"),
     r"found in \['/tmp'\]; none of these folders takes a new file \(missing, read-only or full\?\): set TMPDIR"),
    (shutil.Error([("book/a.html", "/full/a.html", "[Errno 28] No space left on device")]),
     r"copying book/a.html to /full/a.html: \[Errno 28\] No space left on device"),
    (shutil.Error([("m/es.js", "/full/.bk/es.js", "[Errno 28] No space left on device: 'm/es.js' -> '/full/.bk/es.js'")]
                  * 170),  # the book's copy of MathJax: the paths once, and what to do, as for any full disk
     r"error: copying m/es.js to /full/.bk/es.js: \[Errno 28\] No space left on device; the disk is full: free some "
     r"space, or write somewhere else \(and 169 more\)$"),
], ids=["disk-full", "name-too-long", "symlink-loop", "read-only", "deleted", "no-temporary-folder",
        "copytree-disk-full", "copytree-disk-full-many-files"])
def test_an_os_error_is_one_line_naming_the_path_and_what_to_do(capsys, raised, named):
    from minitorch.tools.exit_policy import run_command

    def main(argv):
        raise raised

    assert run_command(main, [], name="python -m minitorch") == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "Traceback" not in error, f"not one line: {error}"
    assert error.startswith("python -m minitorch: error: ") and re.search(named, error), error


def test_no_usable_temporary_folder_under_a_file_size_limit_of_0_names_the_limit_not_a_deleted_folder():
    """Under `ulimit -f 0`, bench said 'No usable temporary directory ... (was it, or the working folder,
    deleted?)': tempfile raises ENOENT whatever stopped it writing in each folder it tried."""
    import resource

    code = ("import sys, tempfile\nfrom minitorch.tools.exit_policy import run_command\n"
            "sys.exit(run_command(lambda argv: tempfile.mkstemp(), [], name='python -m minitorch'))\n")
    completed = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                               preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0)))
    assert completed.returncode == 1 and "Traceback" not in completed.stderr, completed.stderr
    assert re.search(r"No usable temporary directory found in .*; no file can be written under the limit on a "
                     r"file's size, 0 bytes \(ulimit -f 0\): raise the limit", completed.stderr), completed.stderr


@pytest.mark.parametrize("raised,named", [
    (MemoryError(), r"out of memory\. Give the process more memory"),
    (MemoryError("save: the image of shape (9, 9, 4) would need 9 GiB"), r"out of memory: save: the image .*9 GiB\."),
], ids=["numpy's-bare-error", "ours-naming-the-array"])
def test_running_out_of_memory_is_one_line_saying_what_to_do(capsys, raised, named):
    from minitorch.tools.exit_policy import run_command

    def main(argv):  # as after minutes of training under `ulimit -v`: not a raw MemoryError traceback
        raise raised

    assert run_command(main, [], name="python -m minitorch") == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "Traceback" not in error, f"not one line: {error}"
    assert re.search(named, error) and "ulimit -v" in error, error


@pytest.mark.parametrize("arguments", [
    ("minitorch", "reproduce", "--quick", "--only", "1x1", "--out", "r" * 300),
    ("minitorch", "book", "--only", "01", "--out", "b" * 300),
    ("minitorch", "bench", "--json", "j" * 300 + ".json"),
    ("minitorch.exercises", "grade", "{subs}", "--out", "g" * 300),
], ids=["reproduce-out", "book-out", "bench-json", "grade-out"])
def test_a_name_too_long_is_refused_in_one_line_before_any_work(tmp_path, arguments):
    (tmp_path / "subs" / "alice").mkdir(parents=True)
    result = _command(*[argument.format(subs=tmp_path / "subs") for argument in arguments])
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert re.search(r"a name of 30[05] bytes is too long \(at most 255\)", result.stderr), result.stderr


def test_a_closed_pipe_is_quiet_and_a_full_disk_is_one_line():
    listing = subprocess.run(f"{sys.executable} -m minitorch.exercises list | head -1", shell=True, cwd=ROOT,
                             capture_output=True, text=True, timeout=120)
    assert "Traceback" not in listing.stderr and "BrokenPipe" not in listing.stderr, listing.stderr
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    with open("/dev/full", "w") as full:
        result = _command("minitorch.exercises", "list", stdout=full, stderr=subprocess.PIPE)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert "standard output could not be written (No space left on device)" in result.stderr, result.stderr


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
def test_a_report_to_a_full_standard_output_names_it_and_the_work_is_still_done(tmp_path):
    """student-edition > /dev/full wrote a complete edition and said 'the disk is full: free some space' (so did
    canvas-csv and gradescope-bundle, their files written, and grade stopped before any student): the disk was not
    full, standard output was; now the work is done and the error names standard output."""
    with open("/dev/full", "w") as full:
        result = _command("minitorch.exercises", "student-edition", str(tmp_path / "edition"), "--only", "1.1,1.2",
                          stdout=full, stderr=subprocess.PIPE)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert "standard output could not be written" in result.stderr and "the disk is full" not in result.stderr, (
        f"the error should name standard output, not a full disk: {result.stderr}")
    assert "its work went on and is done" in result.stderr, result.stderr
    assert (tmp_path / "edition" / "minitorch" / "exercises" / "edition.json").is_file(), "the edition was written"


def test_a_name_the_terminals_encoding_lacks_is_printed_escaped_not_a_traceback(tmp_path):
    """LC_ALL=C PYTHONIOENCODING=ascii: grade's progress line for a student named José ended the run with a
    UnicodeEncodeError traceback and no grades.csv; a character the output cannot take is printed as its escape."""
    result = _command("minitorch.exercises", "student-edition", str(tmp_path / "wöche-中"), "--only", "1.1,1.2",
                      env={**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONIOENCODING": "ascii"})
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert "w\\xf6che-\\u4e2d" in result.stdout, f"the folder's name should be printed escaped: {result.stdout}"
    assert (tmp_path / "wöche-中" / "README.md").is_file()


# ----------------------------------------------------------------------
# a SIGKILL, which no handler sees: the workers a command started end with it, and a later run into the same
# place deletes the folder it was building; a Ctrl-C while a command starts, and a closed stdout, are one line


def _descendants(pid: int) -> list[int]:
    found, frontier = [], [pid]
    while frontier:
        frontier = [child for parent in frontier for child in _children(parent)]
        found += frontier
    return found


def _still_running(pids) -> list[int]:
    """Those of `pids` alive and not zombies, after waiting up to a minute for them to end."""
    deadline, alive = time.monotonic() + 60, list(pids)
    while alive and time.monotonic() < deadline:
        time.sleep(0.2)
        alive = [pid for pid in alive if Path(f"/proc/{pid}").exists()
                 and "Z" not in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]]
    return alive


def _kill_when(process: subprocess.Popen, ready, what: str) -> list[int]:
    """SIGKILL `process` once ready(its descendants) holds; returns the descendants it had."""
    deadline, descendants = time.monotonic() + 120, []
    while time.monotonic() < deadline and process.poll() is None and not ready(descendants):
        time.sleep(0.2)
        descendants = _descendants(process.pid)
    assert ready(descendants), f"{what} did not start"
    process.kill()
    process.wait(timeout=60)
    return descendants


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _is_check(pid: int) -> bool:
    """Whether `pid` is a grading check process with its worker started (not the tests' collection)."""
    return "-m pytest" in _cmdline(pid) and "--collect-only" not in _cmdline(pid) and any(
        "worker.py" in _cmdline(child) for child in _descendants(pid))


@pytest.mark.skipif(not Path("/proc").is_dir() or (ROOT / "minitorch" / "exercises" / "edition.json").exists(),
                    reason="finds the check process through /proc; grades with the book's reference answers")
def test_grades_check_process_ends_when_grade_is_killed(tmp_path):
    """SIGKILL to grade (the OOM killer, kill -9) left its check process (its own session, under PID 1) and the
    student's sandbox running on until the student's budget."""
    from minitorch.exercises.registry import replace_bodies

    edition = tmp_path / "edition"
    made = _command("minitorch.exercises", "student-edition", str(edition), "--only", "3.1")
    assert made.returncode == 0, made.stderr
    copy = shutil.copytree(edition, tmp_path / "subs" / "ann")
    attention = copy / "minitorch" / "paper" / "attention.py"
    attention.write_text(replace_bodies(attention.read_text(), {"causal_mask": "while True:\n    pass\n"},
                                        "minitorch/paper/attention.py"))
    process = subprocess.Popen([sys.executable, "-m", "minitorch.exercises", "grade", str(tmp_path / "subs"), "--out",
                                str(tmp_path / "grades"), "--only", "3.1", "--timeout", "300", "--budget", "900"],
                               cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    checks: list[int] = []

    def check_started(found: list[int]) -> bool:
        checks[:] = [pid for pid in found if _is_check(pid)]
        return bool(checks)

    try:
        _kill_when(process, check_started, "the check process")
    finally:
        process.kill()
    left = _still_running(checks)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, "the check process outlived the killed grade run"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the workers through /proc")
def test_reproduces_workers_and_resource_tracker_end_when_the_command_is_killed(tmp_path):
    """The workers and multiprocessing's resource tracker lived on under PID 1 for minutes after a SIGKILL."""
    from minitorch.outputs import building_aside

    target = tmp_path / "run"
    code = ("import sys, time\nfrom minitorch.outputs import building_aside\n"
            "from minitorch.paper.reproduce import run_in_processes\n"
            "with building_aside(sys.argv[1]):\n    run_in_processes([time.sleep] * 2, [(300,), (300,)], jobs=2)\n")
    process = subprocess.Popen([sys.executable, "-c", code, str(target)], cwd=ROOT)
    descendants = _kill_when(process, lambda found: len(found) >= 3, "the two workers and the tracker")
    assert not _still_running(descendants), "a worker or the resource tracker outlived the killed command"
    assert [path.name[:5] for path in tmp_path.iterdir()] == [".run."], "the killed run leaves its folder aside"
    with building_aside(target) as staging:  # the next run into the same place
        (staging / "result.txt").write_text("done")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["run"], "the dead run's folder must be deleted"


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the workers through /proc")
def test_the_books_workers_and_kernels_end_when_the_command_is_killed(tmp_path):
    """book --jobs 2 killed by SIGKILL left its two forked workers (and their kernels) running."""
    import nbformat

    chapters = tmp_path / "chapters"
    chapters.mkdir()
    for name in ("01_one.ipynb", "02_two.ipynb"):
        notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Chapter"),
                                                   nbformat.v4.new_code_cell("import time\ntime.sleep(300)")])
        nbformat.write(notebook, chapters / name)
    code = ("import sys\nfrom minitorch.tools.book.chapters import find_chapters\n"
            "from minitorch.tools.book.execute import execute_all\n"
            "for run in execute_all(find_chapters(sys.argv[1]), True, 2, True, report=print):\n    pass\n")
    process = subprocess.Popen([sys.executable, "-c", code, str(chapters)], cwd=ROOT, stdout=subprocess.DEVNULL)

    def kernels_running(found):
        return sum(b"ipykernel" in Path(f"/proc/{pid}/cmdline").read_bytes() for pid in found
                   if Path(f"/proc/{pid}").exists()) >= 2

    descendants = _kill_when(process, kernels_running, "the two kernels")
    assert not _still_running(descendants), "a worker or a kernel outlived the killed command"


def _wait_until_numpy_loads(process: subprocess.Popen) -> None:
    """Until the command starts loading the library's NumPy (at most a minute), or ends."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        if b"numpy" in Path(f"/proc/{process.pid}/maps").read_bytes():
            return
        time.sleep(0.002)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGQUIT], ids=["INT", "TERM", "QUIT"])
def test_a_stop_while_a_command_starts_is_one_line(signum):
    """Ctrl-C, SIGTERM or SIGQUIT (Ctrl-\\) while a command loads the library ends it with one line and status
    128 + the signal, not a traceback (a stop inside NumPy's own import included) nor a death by the signal."""
    process = subprocess.Popen([sys.executable, "-m", "minitorch.exercises", "list"], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_until_numpy_loads(process)
    process.send_signal(signum)
    _, error = process.communicate(timeout=120)
    name = signal.Signals(signum).name
    assert process.returncode == 128 + signum and "Traceback" not in error, (
        f"stopped by {name} while starting, the command must exit {128 + signum} with one line, "
        f"got {process.returncode}: {error!r}")
    assert error.strip().splitlines()[-1].startswith(f"python -m minitorch.exercises: stopped by {name}"), error


SECOND_STOP_WHILE_PRINTING = """
import os, signal, sys
from minitorch.tools.exit_policy import run_command

class StoppedAgainWhileWriting:
    '''Standard error whose first write brings another stop: as `timeout` forwarding the terminal's Ctrl-C.'''

    def __init__(self, stream):
        self.stream, self.stops = stream, 0

    def write(self, text):
        if self.stops == 0:
            self.stops += 1
            os.kill(os.getpid(), {signum})
        return self.stream.write(text)

    def flush(self):
        self.stream.flush()

def main(argv):
    try:
        os.kill(os.getpid(), {signum})
    finally:
        os.kill(os.getpid(), {signum})  # and one while the first unwinds

sys.stderr = StoppedAgainWhileWriting(sys.stderr)
sys.exit(run_command(main, [], name="python -m minitorch.exercises", exits=True))
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["INT", "TERM"])
def test_a_stop_delivered_twice_gives_one_line_and_its_status(signum):
    """A Ctrl-C reaches both the command and `timeout`, which forwards it: the second, while the first was being
    handled, gave two chained tracebacks and a death by the signal, not one line and 130."""
    completed = subprocess.run([sys.executable, "-c", SECOND_STOP_WHILE_PRINTING.format(signum=int(signum))],
                               cwd=ROOT, capture_output=True, text=True, timeout=120)
    name = signal.Signals(signum).name
    assert completed.returncode == 128 + signum, f"status {completed.returncode}, stderr {completed.stderr!r}"
    assert completed.stderr == f"python -m minitorch.exercises: stopped by {name}\n", completed.stderr


@pytest.mark.skipif((ROOT / "minitorch" / "exercises" / "edition.json").exists(),
                    reason="grade refuses to run in a student edition (it holds no hidden tests)")
@pytest.mark.parametrize("moment", [0.0, 0.3, 0.6, 0.9], ids=["at-numpy", "0.3s-later", "0.6s-later", "0.9s-later"])
def test_two_ctrl_c_close_together_while_grade_starts_give_one_line_and_130(tmp_path, moment):
    """grade's start (loading, hashing the submissions, probing the sandbox) stopped by two SIGINTs a few
    milliseconds apart, as a terminal and `timeout` send them: one line and status 130, at any moment."""
    for name in ("ann", "bob"):
        (tmp_path / "subs" / name / "minitorch").mkdir(parents=True)
        (tmp_path / "subs" / name / "minitorch" / "ops.py").write_text("x = 1\n" * 2000)
    process = subprocess.Popen([sys.executable, "-m", "minitorch.exercises", "grade", str(tmp_path / "subs"),
                                "--out", str(tmp_path / "out"), "--only", "1.2"], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_until_numpy_loads(process)
    time.sleep(moment)
    for gap in (0.0, 0.005):
        time.sleep(gap)
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
    output, error = process.communicate(timeout=120)
    assert process.returncode == 130 and "Traceback" not in error, (
        f"stopped twice {moment} s after loading NumPy, grade must exit 130 with one line; got "
        f"{process.returncode}: {error!r}")
    stopped = error.strip().splitlines()[-1:] == ["python -m minitorch.exercises: stopped by SIGINT"] or (
        error.strip().startswith("python -m minitorch.exercises: stopped by SIGINT while starting"))
    assert stopped or "Interrupted:" in output, f"one line saying what stopped it: {error!r}\n{output}"


def test_a_command_started_with_stdout_closed_says_its_output_was_lost():
    """list >&- printed nothing and exited 0 (list > /dev/full said the disk was full)."""
    completed = _command("minitorch.exercises", "list", stdout=None, stdin=subprocess.DEVNULL,
                         preexec_fn=lambda: os.close(1))
    assert completed.returncode == 1, completed.stderr
    assert "standard output is closed" in completed.stderr and "Traceback" not in completed.stderr, completed.stderr


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
@pytest.mark.parametrize("arguments", [("minitorch.exercises", "--help"), ("minitorch.exercises", "grade", "--help"),
                                       ("minitorch", "--help")], ids=["course", "grade", "minitorch"])
@pytest.mark.parametrize("stdout", ["full", "closed"])
def test_help_that_cannot_be_printed_is_an_error(arguments, stdout):
    """--help > /dev/full and --help >&- exited 0 with no word: argparse ends main with SystemExit once it has
    printed, which skipped the check of standard output every other command's output gets."""
    with open("/dev/full", "w") as full:
        completed = _command(*arguments, stdin=subprocess.DEVNULL, **(
            {"stdout": full} if stdout == "full" else {"stdout": None, "preexec_fn": lambda: os.close(1)}))
    said = "could not be written" if stdout == "full" else "standard output is closed"
    assert completed.returncode == 1 and said in completed.stderr, (
        f"{' '.join(arguments)} with stdout {stdout} lost the help text; it should exit 1 saying '{said}', got "
        f"{completed.returncode}: {completed.stderr!r}")
    assert completed.stderr.count("\n") == 1 and "Traceback" not in completed.stderr, completed.stderr


# a command started with stdin or stderr closed runs as with /dev/null there

WITH_A_STREAM_CLOSED = """
import os, subprocess, sys
from minitorch.paper.progress import ProgressBar
from minitorch.tools.exit_policy import run_command

def main(argv):
    ProgressBar(10, "run", enabled=False)  # reproduce's, with stderr closed: refused sys.stderr None, exit 1
    with open(argv[0], "w") as data:
        data.write("data\\n")
        data.flush()
        subprocess.run([sys.executable, "-c", "import sys; print('a warning', file=sys.stderr)"], check=True)
        print("a message", file=sys.stderr)
        print(f"opened as {data.fileno()}")
    return 0

sys.exit(run_command(main, sys.argv[1:], name="python -m minitorch", exits=True))
"""


@pytest.mark.parametrize("closed", [0, 2, (0, 2)], ids=["stdin", "stderr", "stdin-and-stderr"])
def test_a_command_started_with_stdin_or_stderr_closed_runs_as_with_dev_null(tmp_path, closed):
    """reproduce 2>&- exited 1 with no word (its progress bar refused a missing sys.stderr), and a file a command
    opens while a standard descriptor is closed takes its number: what a worker writes to stderr lands in it."""
    data = tmp_path / "data.txt"
    closing = (closed,) if isinstance(closed, int) else closed
    completed = subprocess.run([sys.executable, "-c", WITH_A_STREAM_CLOSED, str(data)], cwd=ROOT,
                               stdout=subprocess.PIPE, text=True, timeout=120,
                               preexec_fn=lambda: [os.close(descriptor) for descriptor in closing])
    assert completed.returncode == 0, f"started with {closing} closed, the command exited {completed.returncode}"
    assert data.read_text() == "data\n", f"what was written to stderr landed in the data file: {data.read_text()!r}"
    assert completed.stdout.startswith("opened as ") and int(completed.stdout.split()[-1]) > 2, (
        f"a file the command opened took a standard descriptor's number: {completed.stdout!r}")


# a stop that comes once the command's work is done and reported

AFTER_THE_LAST_LINE = """
import os, signal, sys
from minitorch.tools.exit_policy import run_command

class StoppedAfterMain:
    '''Standard output whose flush, once main has returned, brings a stop: as a Ctrl-C just after the last line.'''

    def __init__(self, stream):
        self.stream, self.main_returned = stream, False

    def write(self, text):
        return self.stream.write(text)

    def flush(self):
        self.stream.flush()
        if self.main_returned:
            os.kill(os.getpid(), {signum})

def main(argv):
    print("the work is done")
    stream.main_returned = True
    return 0

sys.stdout = stream = StoppedAfterMain(sys.stdout)
status = run_command(main, [], name="python -m minitorch", exits=True)
os.kill(os.getpid(), {signum})  # and another, as the process exits
sys.exit(status)
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=["INT", "TERM", "HUP"])
def test_a_stop_after_the_command_finished_leaves_its_status_and_adds_no_line(signum):
    """A Ctrl-C just after canvas-csv or student-edition printed that its output was written killed the process by
    the signal (status -2, no line), or would have said "stopped" (or "while starting; nothing was done") of work
    that was done. Once main has returned, a command's process ignores stops and exits with main's status."""
    completed = subprocess.run([sys.executable, "-c", AFTER_THE_LAST_LINE.format(signum=int(signum))], cwd=ROOT,
                               capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0 and completed.stderr == "" and completed.stdout == "the work is done\n", (
        f"a stop after the work was done should change nothing: status {completed.returncode}, "
        f"stderr {completed.stderr!r}, stdout {completed.stdout!r}")


def test_a_command_called_in_a_test_process_puts_back_the_handlers_it_found(capsys):
    """Only a command's own process ignores stops once main has returned: a test calling run_command keeps its
    Ctrl-C (pytest's handler), and every other handler it had."""
    from minitorch.tools.exit_policy import STOPPING_SIGNALS, run_command

    found = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, *STOPPING_SIGNALS)}
    assert run_command(lambda argv: 0, [], name="python -m minitorch") == 0
    assert {signum: signal.getsignal(signum) for signum in found} == found, (
        "run_command in a test's process should put back the handlers it found, pytest's Ctrl-C among them")


def test_an_interrupted_pytest_run_keeps_the_last_complete_scoreboard_and_says_so(tmp_path):
    """Ctrl-C during `pytest --scoreboard-json=sb.json` replaced the complete scoreboard of the last run by the
    interrupted run's partial one (total 0 of 0, no exercise), and nothing in it said it was partial."""
    board = tmp_path / "sb.json"
    (tmp_path / "ctrl_c.py").write_text("def pytest_runtest_call(item):\n    raise KeyboardInterrupt\n")

    def pytest_run(*extra, **environment):
        return _command("pytest", "-p", "no:cacheprovider", f"--scoreboard-json={board}", *extra,
                        "tests/test_line_length.py", env={**os.environ, **environment})  # (runs in an edition too)

    assert pytest_run().returncode == 0, "a complete run writes its scoreboard"
    complete = board.read_text()
    stopped = pytest_run("-p", "ctrl_c", PYTHONPATH=str(tmp_path))
    assert stopped.returncode == 2 and "KeyboardInterrupt" in stopped.stdout, stopped.stdout + stopped.stderr
    assert board.read_text() == complete, "an interrupted run must not replace the last complete scoreboard"
    assert f"{board} was not written" in stopped.stdout, (
        f"the student should read that the scoreboard was not written: {stopped.stdout[-2000:]}")

