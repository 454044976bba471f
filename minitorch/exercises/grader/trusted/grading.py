"""Grading one returned copy (chapter 11, "How grading works").

1. The copy is found (`submissions`); the files that define the graded exercises' functions are copied,
   unread, beside the run's stand-in library (`libraries`). Only each exercise's function is ever taken from
   them, in the worker: code outside the functions never runs.
2. The grader's own tests run in a child process of the grader's (the *check process*), on the grader's
   library and with the hidden seed. It runs no student code: each graded test reaches the student's
   code through the ``student`` fixture, which asks the student's sandboxed worker (`sandbox`, `worker`)
   over a data-only channel (`channel`), and every pass or fail is decided there, in the check process.
3. Whatever happens, every process of the student's worker is ended, the scratch folder deleted, and
   results.json (the Gradescope autograder's format) and feedback.md written atomically.

Nothing a worker does can change what the check process decides, except by returning the right values
for the hidden inputs: it can neither see the seed nor the reference answers, nor reach the files of
the grader, the other students or the output (under bubblewrap or in a root of its own; see `sandbox`).
"""

from __future__ import annotations

import datetime
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from minitorch.exercises.grader.trusted import isolation as sandbox
from minitorch.exercises.edition import git_commit
from minitorch.exercises.grader.trusted import reasons
from minitorch.exercises.grader.trusted.worker_library import (StudentFiles, copy_student_files, give_library,
                                                               prepare_base)
from minitorch.exercises.registry import (EXERCISES, HIDDEN_TESTS, ROOT, ExerciseError, is_hidden_test, paid_tests,
                                          points_per_test, sort_key)
from minitorch.exercises.grader.trusted.submissions import Entry, open_copy
from minitorch.exercises.grader.trusted.student_text import plain, shown
from minitorch.outputs import write_atomically

OUTPUT_CAP = 10_000  # characters of a test's output kept in results.json
LOG_KEPT = 16 << 20  # bytes of a check process's output kept in the check log (the first and the last half)
CHECK_PROCESS_MARGIN = 30.0  # seconds the check process may take beyond the student's budget (start-up, checks)
TIMED_OUT, CRASHED, REFUSED = "timed out", "crashed", "refused"
STUDENT_FUNCTION_KINDS = ("function not found", "does not compile", "too large", "helper outside the function")


@dataclass
class Run:
    """What every student of one run shares."""

    exercise_ids: list[str]
    seed: int
    timeout: float  # seconds per test
    budget: float  # seconds per student
    isolation: sandbox.Isolation
    grader_root: Path = ROOT
    version: str = ""
    known_tests: dict[str, str] = field(default_factory=dict)  # node ID -> exercise ID (else collected if needed)
    base: Path | None = None  # the stand-in library every student's libraries start from (made once, on first use)
    stopped: threading.Event = field(default_factory=threading.Event)  # set by stop_grading (Ctrl-C)

    def __post_init__(self):
        self.grader_root = Path(self.grader_root).resolve()
        self.version = self.version or grader_version(self.grader_root)
        self._lock = threading.Lock()
        self._reasons: dict[str, str] = {}

    def collected(self) -> dict[str, str]:
        """{node ID: exercise ID} of the graded tests, for a copy whose check process never ran or did not say:
        collected once, when first needed."""
        with self._lock:
            if not self.known_tests:
                self.known_tests = collect_tests(self.grader_root, self.exercise_ids)
            return self.known_tests

    def reasons(self, nodeids) -> dict[str, str]:
        """{node ID: the test's own reason, what a student reads when it fails} (`reasons.test_reasons`), read
        once per run from the grader's test files."""
        with self._lock:
            missing = [nodeid for nodeid in nodeids if nodeid not in self._reasons]
            if missing:
                self._reasons.update(reasons.test_reasons(self.grader_root, missing))
            return {nodeid: self._reasons[nodeid] for nodeid in nodeids}

    def base_library(self, scratch: Path) -> Path:
        """The stand-in library, compiled, in `scratch` (made once per run; it holds no answer)."""
        with self._lock:
            if self.base is None:
                self.base = prepare_base(self.grader_root, Path(scratch) / "base")
            return self.base


def grader_version(grader_root: Path = ROOT) -> str:
    return git_commit(grader_root) or "unknown (not a git checkout)"


# ----------------------------------------------------------------------
# the graded tests


def graded_test_files(project: Path, exercise_ids=None) -> list[str]:
    """The test files that grade `exercise_ids` (all of them by default), as the table declares them, and every test
    file of tests/hidden/, that `project` holds (relative paths; a student edition has no tests/hidden/)."""
    ids = EXERCISES if exercise_ids is None else exercise_ids
    files = {name for exercise_id in ids for name in EXERCISES[exercise_id].tests}
    hidden = Path(project) / HIDDEN_TESTS  # the instructor's hidden tests are found by their folder
    files |= {path.relative_to(project).as_posix() for path in hidden.rglob("test_*.py")} if hidden.is_dir() else set()
    return sorted(name for name in files if (Path(project) / name).is_file())


def marker_expression(exercise_ids) -> str:
    return "not slow and (" + " or ".join("ex" + i.replace(".", "_") for i in sorted(exercise_ids, key=sort_key)) + ")"


def collect_tests(grader_root: Path, exercise_ids) -> dict[str, str]:
    """{node ID: exercise ID} of the graded tests of `exercise_ids`, collected (not run) from the grader's tests."""
    with tempfile.TemporaryDirectory(prefix="minitorch-collect-") as scratch:
        record = Path(scratch) / "record.jsonl"
        finished = _run_pytest(grader_root, exercise_ids, ["--collect-only"], {"MINITORCH_GRADING_RECORD": str(record)},
                               Path(scratch) / "log.txt", patience=600)
        collected = read_record(record)[1]
        if not collected:
            log = (Path(scratch) / "log.txt").read_text(encoding="utf-8", errors="replace")[-3000:]
            raise ExerciseError(f"collecting the grader's own tests for {', '.join(exercise_ids)} found none "
                                f"(pytest exited with {finished}):\n{log}")
    return collected


def _run_pytest(grader_root: Path, exercise_ids, extra: list[str], environment: dict, log: Path, patience: float,
                on_start=None) -> int | str:
    """Run the grader's graded tests (a check process; what it prints goes to `log`, what it finds to the record
    named in `environment`). Returns its exit status, or "killed" if it ran longer than `patience` seconds."""
    command = [*sandbox.check_process_limits(), sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               "--color=no", "-o", "console_output_style=classic", f"--rootdir={grader_root}",
               f"--minitorch-root={grader_root}", "-m", marker_expression(exercise_ids), *extra,
               *graded_test_files(grader_root, exercise_ids)]
    keep = ("PATH", "LANG", "LC_ALL", "VIRTUAL_ENV", "CONDA_PREFIX", "SYSTEMROOT")
    env = {key: os.environ[key] for key in keep if key in os.environ}
    # no third-party pytest plugin: the check process loads the grader's conftest only, and writes nothing in
    # the grader's checkout (pytest-benchmark, say, would make a .benchmarks folder there)
    env.update(PYTHONDONTWRITEBYTECODE="1", MPLBACKEND="Agg", HOME=str(log.parent), TMPDIR=str(log.parent),
               PYTHONIOENCODING="utf-8", PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", **environment)  # (one core for a student's requests)
    with open(log, "wb") as output:
        process = subprocess.Popen(command, cwd=grader_root, env=env, stdin=subprocess.DEVNULL, stdout=output,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        if on_start is not None:
            on_start(process)
        try:
            return process.wait(timeout=patience)
        except subprocess.TimeoutExpired:
            return "killed"
        finally:
            if process.poll() is None:
                os.killpg(process.pid, 9)
                process.wait()


# ----------------------------------------------------------------------
# one student


def grade_submission(entry: Entry, out_dir: Path, run: Run, slot: int = 0, scratch_root: Path | None = None,
                     log_file: Path | None = None, answers_file: Path | None = None) -> dict:
    """Grade one entry of SUBMISSIONS; write out_dir/results.json and out_dir/feedback.md (atomically: what the
    student may read), the check process's whole output to `log_file` and the fingerprints of the student's
    answers (`similarity`) to `answers_file` (the instructor's); return the results. `slot` (0 .. jobs-1) names
    the scratch folder when several students run at once."""
    started = time.monotonic()
    folder = Path(tempfile.mkdtemp(prefix=f"student-{slot}-", dir=scratch_root))
    report, problem, results, collected, log, answers = StudentFiles(), "", {}, {}, "", {}
    try:
        os.chmod(folder, 0o711)  # a worker may pass through to its own folders, but list nothing
        private, libraries, home = folder / "private", folder / "lib", folder / "home"
        private.mkdir(mode=0o700)
        try:
            project = open_copy(entry, private)
            give_library(run.base_library(folder.parent), libraries)
            report = copy_student_files(project, [EXERCISES[i] for i in run.exercise_ids], libraries)
        except ExerciseError as error:  # the student reads this too: name their entry, not our scratch paths
            problem = "could not be graded: " + str(error).replace(str(folder) + os.sep, "")
        for attempt in (1, 2):  # a check process the machine ended (not the student) is run once more
            if problem or run.stopped.is_set():
                break
            results, collected, log, ended_by = _check(run, report, private, libraries, home)
            answers = read_answers(private / "record.jsonl")
            if ended_by and attempt == 2:
                problem = (f"not graded: the machine ran out of memory while grading (twice); grade again"
                           if ended_by == "memory" else f"not graded: the check process was ended by {ended_by}, "
                           f"which the grader did not send (twice); grade again")
            if not ended_by:
                break
    finally:
        _remove(folder)
    if run.stopped.is_set():  # the check process was stopped half-way: what it reached is not this student's grade
        raise GradingStopped(f"{entry.student}: grading was stopped (Ctrl-C) before it ended; nothing was written")
    graded = results_json(entry.student, run, results, report, time.monotonic() - started, problem,
                          collected or run.collected(), entry=entry)
    from minitorch.exercises.grader.trusted.gradebook import feedback_markdown

    if log_file is not None:  # the whole check output, failures in full: for the instructor only
        write_atomically(log_file, plain(log) if log else "(no test ran)\n", mode=0o600)  # it quotes the seed
    if answers_file is not None:
        write_atomically(answers_file, json.dumps(answers, indent=1) + "\n", mode=0o600)
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    write_atomically(Path(out_dir) / "feedback.md", feedback_markdown(graded))
    write_atomically(Path(out_dir) / "results.json", json.dumps(graded, indent=1) + "\n")
    return graded


def read_answers(record: Path) -> dict[str, dict]:
    """{exercise ID: {"fingerprint", "nodes"} or {"stub": True}} from the check process's record (the sources its
    worker sent: `similarity.answer_event`)."""
    answers = {}
    try:
        lines = record.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return answers
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and isinstance(event.get("answer"), str) and event["answer"] in EXERCISES:
            answers.setdefault(event.pop("answer"), event)
    return answers


def read_log(path: Path) -> str:
    """The check process's output, undecodable bytes replaced; its first and last LOG_KEPT // 2 bytes if longer."""
    try:
        with open(path, "rb") as log:
            size = os.fstat(log.fileno()).st_size
            if size <= LOG_KEPT:
                return log.read().decode("utf-8", "replace")
            head = log.read(LOG_KEPT // 2)
            log.seek(size - LOG_KEPT // 2)
            tail = log.read()
    except OSError:
        return ""
    return (head.decode("utf-8", "replace") + f"\n[... {size - LOG_KEPT:,} bytes of the log left out ...]\n" +
            tail.decode("utf-8", "replace"))


def decided(report: StudentFiles) -> dict[str, list[str]]:
    """{exercise ID: [kind, message]} for the exercises whose tests need not run: the copy has no regular file
    of at most MAX_MODULE_BYTES where the function belongs. The check process reports their tests so."""
    return {exercise_id: [message.split(":")[0], message] for exercise_id, message in report.missing.items()}


def _check(run: Run, report: StudentFiles, private: Path, libraries: Path, home: Path):
    """Run the check process with the student's worker: ({node ID: result}, {node ID: exercise ID}, its log, and
    what the machine ran out of if it, not the grader, ended the check process: "memory", a signal's name, or "")."""
    uid = run.isolation.fresh_uid()  # the student's own users (as root): every process of them ends with the check
    home.mkdir(mode=0o700, exist_ok=True)
    plan = {"isolation": run.isolation.__dict__, "uid": uid, "library_root": str(libraries), "home": str(home),
            "exercises": {exercise_id: f"student/{module}" for exercise_id, module in report.copied.items()},
            "decided": decided(report),
            "timeout": run.timeout, "budget": run.budget}
    (private / "plan.json").write_text(json.dumps(plan), encoding="utf-8")
    log, record = private / "log.txt", private / "record.jsonl"
    record.unlink(missing_ok=True)
    watch = sandbox.MachineWatch()
    environment = {"MINITORCH_GRADING_PLAN": str(private / "plan.json"), "MINITORCH_EXERCISE_SEED": str(run.seed),
                   "MINITORCH_GRADING_RECORD": str(record), "MINITORCH_TEST_TIMEOUT": f"{run.timeout * 3 + 60:g}"}
    finished = _run_pytest(run.grader_root, run.exercise_ids, [], environment, log,
                           patience=run.budget + CHECK_PROCESS_MARGIN,
                           on_start=lambda process: _remember(process, run))
    try:
        if uid is not None:
            sandbox.kill_users(uid, sandbox.UID_BLOCK)
    finally:
        _forget()
    results, collected = read_record(record)
    text = read_log(log)
    if not results or finished not in (0, 1):
        why = "was stopped after the student's budget" if finished == "killed" else f"ended with status {finished}"
        text = f"the check process {why}\n" + text
    ended_by = watch.ran_out(finished) if isinstance(finished, int) and not run.stopped.is_set() else ""
    return results, collected, text, ended_by


def read_record(record: Path) -> tuple[dict, dict]:
    """({node ID: result}, {node ID: exercise ID}) from the check process's record, up to any broken last line."""
    results, collected = {}, {}
    try:
        lines = record.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return results, collected
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            break
        if "collected" in event:
            collected = dict(event["collected"])
        elif "test" in event:
            results[event.pop("test")] = event
    return results, collected


_running: set[subprocess.Popen] = set()  # check processes, stopped on Ctrl-C
_running_lock = threading.Lock()


def _remember(process: subprocess.Popen, run: Run) -> None:
    with _running_lock:
        _running.add(process)
    if run.stopped.is_set():  # started just as Ctrl-C came: stop_grading may have missed it
        os.killpg(process.pid, 9)


def _forget() -> None:
    with _running_lock:
        for process in [process for process in _running if process.poll() is not None]:
            _running.discard(process)


class GradingStopped(Exception):
    """Ctrl-C stopped a student's grading: nothing of it is written, so the next run grades them again."""


def stop_grading(run: Run) -> None:
    """Stop every check process now (Ctrl-C); each takes its student's worker down with it, and no student whose
    grading had not ended gets a results.json."""
    run.stopped.set()
    with _running_lock:
        for process in _running:
            try:
                os.killpg(process.pid, 9)
            except ProcessLookupError:
                pass


def _remove(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)


# ----------------------------------------------------------------------
# the results


def add_points(values) -> float:
    """A sum of decimals of at most 6 places, exactly (fsum, then rounded once)."""
    return round(math.fsum(values), 6)


def _kind(result: dict | None, exercise_id: str, decided_before: dict, problem: str) -> tuple[str, str]:
    """(kind, message) of one test: passed, failed, not attempted, blocked, timed out, crashed, does not
    compile, function not found, too large, helper outside the function, refused, not graded."""
    if problem:
        return "not graded", problem
    if result is None and exercise_id in decided_before:
        return tuple(decided_before[exercise_id])
    if result is None:
        return "failed", "did not run (the check process ended before it)"
    status = result.get("status") or "failed"
    known = ("passed", "failed", "not attempted", "blocked", TIMED_OUT, CRASHED, *STUDENT_FUNCTION_KINDS, REFUSED)
    return status if status in known else "failed", str(result.get("message") or "")


def results_json(student: str, run: Run, results: dict, report: StudentFiles, elapsed: float, problem: str = "",
                 collected: dict[str, str] | None = None, entry: Entry | None = None) -> dict:
    """The Gradescope autograder's results.json: score, tests (name, score, max_score, status, output), and in
    extra_data what the gradebook needs. It names no seed, and no failed test quotes what the student's code raised
    or printed, or the values a check compared (they may hold the hidden inputs): each gives its kind and the test's
    own reason (`reasons.for_student`). Students may see this file.
    A passed test declared requires_values=True (shape, dtype, an input left unchanged) scores its share only
    when every value test of its exercise passed (`registry.paid_tests`, the rule of the student's scoreboard
    too); otherwise it is listed as passed with score 0 and a message saying why. The hidden tests (tests/hidden/)
    share the exercise's `hidden_share` of its points, the public tests the rest (`registry.points_per_test`), and the
    requires_values rule holds within each part."""
    tests, exercises, decided_before = [], {}, decided(report)
    for exercise_id in sorted(run.exercise_ids, key=sort_key):
        title, points = EXERCISES[exercise_id].title, EXERCISES[exercise_id].points
        nodeids = [nodeid for nodeid, owner in (collected or run.collected()).items() if owner == exercise_id]
        hidden = [is_hidden_test(nodeid) for nodeid in nodeids]
        shares = points_per_test(EXERCISES[exercise_id], hidden, hidden_tests_expected=False)
        kinds, messages = [], []
        refused = any((results.get(n) or {}).get("status") == REFUSED for n in nodeids)
        test_reasons = run.reasons(nodeids)
        for nodeid in nodeids:
            kind, message = _kind(results.get(nodeid), exercise_id, decided_before, problem)
            if refused and kind == "passed":  # asked for what it does not need: the exercise earns nothing
                kind = REFUSED
            kinds.append(kind)
            messages.append(reasons.for_student(kind, message, exercise_id, test_reasons[nodeid]))
        whats = [message.removesuffix(f" (the test: {test_reasons[nodeid]})")
                 for nodeid, message in zip(nodeids, messages)]
        gated = [bool((results.get(nodeid) or {}).get("requires_values")) for nodeid in nodeids]
        paid = paid_tests([kind == "passed" for kind in kinds], gated, hidden)
        for nodeid, share, kind, message, what, is_paid in zip(nodeids, shares, kinds, messages, whats, paid):
            if kind == "passed" and not is_paid:
                message = what = (f"passed, but a test of shape, dtype or inputs left unchanged earns nothing until "
                                  f"every value test of exercise {exercise_id} passes")
            output = message[:OUTPUT_CAP]  # the reason only: a traceback of the check process quotes its code
            tests.append({"name": f"{exercise_id} {title}: {nodeid.split('::', 1)[-1]}", "number": exercise_id,
                          "score": share if is_paid else 0.0, "max_score": share,
                          "status": "passed" if kind == "passed" else "failed", "output": output,
                          "extra_data": {"kind": kind, "nodeid": nodeid, "message": message[:500], "what": what[:500],
                                         "reason": test_reasons[nodeid]}})
        earned = add_points(test["score"] for test in tests if test["number"] == exercise_id)
        exercises[exercise_id] = {"title": title, "points": points, "earned": earned, "tests": len(nodeids),
                                  "hidden_tests": sum(hidden),
                                  "hidden_points": add_points(share for share, flag in zip(shares, hidden) if flag),
                                  "kinds": {kind: kinds.count(kind) for kind in sorted(set(kinds))}}
    return {
        "score": add_points(test["score"] for test in tests),
        "execution_time": round(elapsed, 1),
        "output": plain(problem) or f"{len(tests)} tests of exercises {', '.join(exercises)}",
        "tests": tests,
        "extra_data": {"student": student, "entry": shown(entry.path.name) if entry is not None else student,
                       "max_score": sum(row["points"] for row in exercises.values()),
                       "exercises": exercises, "flags": ([plain(problem)] if problem else flags_of(tests, report))
                       + ([entry.note] if entry is not None and entry.note else []),
                       "grader_version": run.version,
                       "graded_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                       "isolation": run.isolation.kind, "graded": not problem, "complete": True,
                       "handed_out": None if report.handed_out is None else
                       [exercise_id for exercise_id in report.handed_out if exercise_id in EXERCISES]},
    }


def flags_of(tests: list[dict], report: StudentFiles) -> list[str]:
    kinds = {test["extra_data"]["kind"] for test in tests}
    flags = [kind for kind in (TIMED_OUT, CRASHED) if kind in kinds]
    refused = sorted({test["number"] for test in tests if test["extra_data"]["kind"] == REFUSED}, key=sort_key)
    if refused:
        flags.append(f"{REFUSED}: exercise(s) {' '.join(refused)} asked the grader for exercises they do not need")
    for kind in STUDENT_FUNCTION_KINDS:
        exercises = sorted({test["number"] for test in tests if test["extra_data"]["kind"] == kind}, key=sort_key)
        if exercises:
            flags.append(f"{kind}: {' '.join(exercises)}")
    if report.handed_out is None:
        flags.append("not a student edition (no minitorch/exercises/edition.json): a copy of the full book holds "
                     "every answer")
    return flags


def is_complete(out_dir: Path, exercise_ids=None, seed: int | None = None) -> bool:
    """True if out_dir/results.json is a finished grade of these exercises: running the class again keeps it.
    (The seed lives in the run's run.json, not in a student's file.)"""
    try:
        extra = json.loads((Path(out_dir) / "results.json").read_text(encoding="utf-8"))["extra_data"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    same_exercises = exercise_ids is None or sorted(extra.get("exercises", {})) == sorted(exercise_ids)
    return bool(extra.get("complete")) and not extra.get("retry") and same_exercises
