"""Grading one returned copy, from unpacking to results.json (chapter 11, "How grading works").

The grader's own tests run in a *check process* with the hidden seed, reach the student's code only through the
student's sandboxed worker, and decide every pass or fail themselves.
"""

from __future__ import annotations

import datetime
import errno
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

from minitorch.exercises.edition import git_commit
from minitorch.exercises.grader.trusted import isolation as sandbox
from minitorch.exercises.grader.trusted.gradebook import feedback_markdown
from minitorch.exercises.grader.trusted.worker_library import (StudentFiles, copy_student_files, give_library,
                                                               prepare_base)
from minitorch.exercises.grader.trusted.student_text import ABOUT_THE_FILE, plain, reason_of, shown, what_happened
from minitorch.exercises.grader.trusted.submissions import Entry, open_copy
from minitorch.exercises.registry import (EXERCISES, HIDDEN_TESTS, ROOT, ExerciseError, is_hidden_test, paid_tests,
                                          points_per_test, sort_key)
from minitorch.outputs import write_atomically

LOG_KEPT = 16 << 20  # bytes of a check process's output kept in the check log (its end)
CHECK_PROCESS_MARGIN = 30.0  # seconds the check process may take beyond the student's budget (start-up, checks)
KINDS = ("passed", "failed", "not attempted", "blocked", "timed out", "crashed", "refused", *ABOUT_THE_FILE)


@dataclass
class Run:
    """What every student of one run shares; `stop` ends every check process at once (Ctrl-C)."""

    exercise_ids: list[str]
    seed: int
    timeout: float  # seconds per test
    budget: float  # seconds per student
    isolation: sandbox.Isolation
    grader_root: Path = ROOT
    version: str = ""
    known_tests: dict[str, str] = field(default_factory=dict)  # node ID -> exercise ID (collected when first needed)
    stopped: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self):
        self.grader_root = Path(self.grader_root).resolve()
        self.version = self.version or grader_version(self.grader_root)
        self.base: Path | None = None  # the stand-in library every student's starts from
        self.running: set[subprocess.Popen] = set()
        self._lock = threading.Lock()

    def collected(self) -> dict[str, str]:
        with self._lock:
            self.known_tests = self.known_tests or collect_tests(self.grader_root, self.exercise_ids)
            return self.known_tests

    def base_library(self, scratch: Path) -> Path:
        with self._lock:
            self.base = self.base or prepare_base(self.grader_root, Path(scratch) / "base")
            return self.base

    def started(self, process: subprocess.Popen) -> None:
        with self._lock:
            self.running.add(process)
        if self.stopped.is_set():  # started just as Ctrl-C came
            self.stop()

    def ended(self, process: subprocess.Popen) -> None:
        with self._lock:
            self.running.discard(process)

    def stop(self) -> None:
        """Stop every check process now; each takes its student's worker down with it."""
        self.stopped.set()
        with self._lock:
            for process in self.running:
                try:
                    os.killpg(process.pid, 9)
                except ProcessLookupError:
                    pass


def grader_version(grader_root: Path = ROOT) -> str:
    return git_commit(grader_root) or "unknown (not a git checkout)"


class GradingStopped(Exception):
    """Ctrl-C stopped a student's grading: nothing of it is written, so the next run grades them again."""


class CheckProcessFailed(Exception):
    """The check process ended by itself before any test ran (a plugin missing where the grader runs, a test file
    that does not import): the grader's fault, never the student's, whose code runs in a worker a test starts. No
    grade is written; the command says the grader failed."""


def graded_test_files(project: Path, exercise_ids=None) -> list[str]:
    """The test files of `exercise_ids` (all by default) that `project` holds, with every file of tests/hidden/."""
    files = {name for exercise_id in exercise_ids or EXERCISES for name in EXERCISES[exercise_id].tests}
    files |= {path.relative_to(project).as_posix() for path in (Path(project) / HIDDEN_TESTS).rglob("test_*.py")}
    return sorted(name for name in files if (Path(project) / name).is_file())


def collect_tests(grader_root: Path, exercise_ids) -> dict[str, str]:
    """{node ID: exercise ID} of the graded tests of `exercise_ids`, collected (not run) from the grader's tests."""
    with tempfile.TemporaryDirectory(prefix="minitorch-collect-") as scratch:
        record, log = Path(scratch) / "record.jsonl", Path(scratch) / "log.txt"
        status = _run_pytest(grader_root, exercise_ids, ["--collect-only"], {"MINITORCH_GRADING_RECORD": str(record)},
                             log, patience=600)
        collected = read_record(record)[1]
        if not collected:
            raise ExerciseError(f"collecting the grader's own tests for {', '.join(exercise_ids)} found none (pytest "
                                f"exited with {status}):\n{read_log(log)[-3000:]}")
    return collected


def _run_pytest(grader_root: Path, exercise_ids, extra: list[str], environment: dict, log: Path, patience: float,
                run: Run | None = None) -> int | str:
    """Run the grader's graded tests in a check process, its output to `log`; its exit status, or "killed" if it
    ran longer than `patience` seconds. No third-party plugin loads, and nothing is written in the checkout."""
    markers = " or ".join("ex" + i.replace(".", "_") for i in sorted(exercise_ids, key=sort_key))
    command = [*sandbox.check_process_limits(), sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               "--color=no", "-o", "console_output_style=classic", f"--rootdir={grader_root}",
               f"--minitorch-root={grader_root}", "-m", f"not slow and ({markers})", *extra,
               *graded_test_files(grader_root, exercise_ids)]
    env = sandbox.process_environment(str(log.parent), PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", **environment,
                                      MINITORCH_GRADER_PID=str(os.getpid()), **{  # (it ends with this process)
        key: os.environ[key] for key in ("VIRTUAL_ENV", "CONDA_PREFIX") if key in os.environ})
    with open(log, "wb") as output:
        process = subprocess.Popen(command, cwd=grader_root, env=env, stdin=subprocess.DEVNULL, stdout=output,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        if run is not None:
            run.started(process)
        try:
            return process.wait(timeout=patience)
        except subprocess.TimeoutExpired:
            return "killed"
        finally:
            if process.poll() is None:
                os.killpg(process.pid, 9)
                process.wait()
            if run is not None:
                run.ended(process)


def grade_submission(entry: Entry, out_dir: Path, run: Run, slot: int = 0, scratch_root: Path | None = None,
                     log_file: Path | None = None, answers_file: Path | None = None) -> dict:
    """Grade one entry: out_dir/results.json and feedback.md (the student's), the check log to `log_file` and the
    answers' fingerprints to `answers_file` (the instructor's). A check process the machine ended (not the student)
    runs once more. `slot` names the scratch folder when several students run at once. FileNotFoundError if the
    entry is gone once its files were to be read (moved away meanwhile): a 0 would be kept by every later run."""
    started, problem = time.monotonic(), ""
    results, collected, log, answers, report = {}, {}, "", {}, StudentFiles()
    folder = Path(tempfile.mkdtemp(prefix=f"student-{slot}-", dir=scratch_root))
    try:
        os.chmod(folder, 0o711)  # a worker may pass through to its own folders, but list nothing
        (folder / "private").mkdir(mode=0o700)
        try:
            project = open_copy(entry, folder / "private")
            give_library(run.base_library(folder.parent), folder / "lib")
            report = copy_student_files(project, [EXERCISES[i] for i in run.exercise_ids], folder / "lib")
        except ExerciseError as error:  # the student reads this too: their entry's names, not our scratch paths
            problem = "could not be graded: " + str(error).replace(str(folder) + os.sep, "")
        if not os.path.lexists(entry.path):  # the disk's doing, not the student's: no grade, so the next run retries
            raise FileNotFoundError(errno.ENOENT, "the entry was moved or deleted while it was graded", str(entry.path))
        for attempt in (1, 2):
            if problem or run.stopped.is_set():
                break
            results, collected, log, ended_by = _check(run, report, folder)
            answers = read_record(folder / "private" / "record.jsonl")[2]
            if not ended_by:
                break
            if attempt == 2:
                problem = ("not graded: the machine ran out of memory while grading (twice); grade again" if
                           ended_by == "memory" else f"not graded: the check process was ended by {ended_by}, which "
                                                     f"the grader did not send (twice); grade again")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if run.stopped.is_set():  # what a check process stopped half-way reached is not this student's grade
        raise GradingStopped(f"{entry.student}: grading was stopped before it ended; nothing was written")
    graded = results_json(entry.student, run, results, report, time.monotonic() - started, problem, collected, entry)
    if log_file is not None:  # the whole check output: it quotes the seed and the hidden inputs
        write_atomically(log_file, plain(log) or "(no test ran)\n", mode=0o600)
    if answers_file is not None:
        write_atomically(answers_file, json.dumps(answers, indent=1) + "\n", mode=0o600)
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    write_atomically(Path(out_dir) / "feedback.md", feedback_markdown(graded))
    write_atomically(Path(out_dir) / "results.json", json.dumps(graded, indent=1) + "\n")
    return graded


def _check(run: Run, report: StudentFiles, folder: Path) -> tuple[dict, dict, str, str]:
    """Run the check process with the student's worker: (results, collected, its log, and what ended it if the
    machine, not the grader, did: "memory", a signal's name, or "")."""
    uid = run.isolation.fresh_uid()  # the student's own users (as root): every process of them ends with the check
    private, home = folder / "private", folder / "home"
    home.mkdir(mode=0o700, exist_ok=True)
    plan = {"isolation": run.isolation.__dict__, "uid": uid, "library_root": str(folder / "lib"), "home": str(home),
            "exercises": {exercise_id: f"student/{module}" for exercise_id, module in report.copied.items()},
            "decided": decided(report), "timeout": run.timeout, "budget": run.budget}
    (private / "plan.json").write_text(json.dumps(plan), encoding="utf-8")
    (private / "record.jsonl").unlink(missing_ok=True)
    watch = sandbox.MachineWatch()
    status = _run_pytest(run.grader_root, run.exercise_ids, [], {
        "MINITORCH_GRADING_PLAN": str(private / "plan.json"), "MINITORCH_EXERCISE_SEED": str(run.seed),
        "MINITORCH_GRADING_RECORD": str(private / "record.jsonl"),
        "MINITORCH_TEST_TIMEOUT": f"{run.timeout * 3 + 60:g}"},
        private / "log.txt", patience=run.budget + CHECK_PROCESS_MARGIN, run=run)
    if uid is not None:
        sandbox.kill_users(uid, sandbox.UID_BLOCK)
    results, collected, _ = read_record(private / "record.jsonl")
    log = read_log(private / "log.txt")
    if not results and isinstance(status, int) and status >= 0 and not run.stopped.is_set():
        last = ([line for line in log.splitlines() if line.strip()] or ["(it printed nothing)"])[-1]
        raise CheckProcessFailed(f"the check process ended with status {status} before any test ran: "
                                 f"{last.replace(str(run.seed), '(the seed)')[:300]}")
    if not results or status not in (0, 1):
        log = ("the check process was stopped after the student's budget\n" if status == "killed" else
               f"the check process ended with status {status}\n") + log
    ended_by = watch.ran_out(status) if isinstance(status, int) and not run.stopped.is_set() else ""
    return results, collected, log, ended_by


def decided(report: StudentFiles) -> dict[str, list[str]]:
    """{exercise ID: [kind, message]} of the exercises the copy's files decide (no such file, or too large)."""
    return {exercise_id: [message.split(":")[0], message] for exercise_id, message in report.missing.items()}


def read_record(record: Path) -> tuple[dict, dict, dict]:
    """({node ID: result}, {node ID: exercise ID}, {exercise ID: its answer's fingerprint}) from the check
    process's record, up to a broken last line."""
    results, collected, answers = {}, {}, {}
    try:
        lines = record.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    for line in lines:
        try:
            event = dict(json.loads(line))
        except (ValueError, TypeError):
            break
        if "collected" in event:
            collected = dict(event["collected"])
        elif "test" in event:
            results[event.pop("test")] = event
        elif event.get("answer") in EXERCISES:
            answers.setdefault(event.pop("answer"), event)
    return results, collected, answers


def read_log(path: Path) -> str:
    """The check process's output (its last LOG_KEPT bytes), undecodable bytes replaced."""
    try:
        with open(path, "rb") as log:
            size = log.seek(0, os.SEEK_END)
            log.seek(max(size - LOG_KEPT, 0))
            kept = log.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return f"[the first {size - LOG_KEPT:,} bytes of the log left out]\n" + kept if size > LOG_KEPT else kept


def add_points(values) -> float:
    """A sum of decimals of at most 6 places, exactly (fsum, then rounded once)."""
    return round(math.fsum(values), 6)


def results_json(student: str, run: Run, results: dict, report: StudentFiles, elapsed: float, problem: str = "",
                 collected: dict[str, str] | None = None, entry: Entry | None = None) -> dict:
    """The Gradescope autograder's results.json, with what the gradebook needs in extra_data. No seed, and a failed
    test gives its kind and its own reason, never what the code raised or printed. Hidden tests share the exercise's
    `hidden_share`; a passed requires_values test pays only when its part's value tests all passed."""
    tests, exercises, collected = [], {}, collected or run.collected()
    for exercise_id in sorted(run.exercise_ids, key=sort_key):
        exercise, nodeids = EXERCISES[exercise_id], [n for n, owner in collected.items() if owner == exercise_id]
        hidden = [is_hidden_test(nodeid) for nodeid in nodeids]
        outcomes = [_outcome(results.get(nodeid), exercise_id, report, problem) for nodeid in nodeids]
        if any(kind == "refused" for kind, _ in outcomes):  # it asked for what it does not need: it earns nothing
            outcomes = [("refused" if kind == "passed" else kind, message) for kind, message in outcomes]
        gated = [bool((results.get(nodeid) or {}).get("requires_values")) for nodeid in nodeids]
        paid = paid_tests([kind == "passed" for kind, _ in outcomes], gated, hidden)
        shares = points_per_test(exercise, hidden, hidden_tests_expected=False)
        for nodeid, share, (kind, message), is_paid in zip(nodeids, shares, outcomes, paid):
            what, reason = what_happened(kind, message, exercise_id), reason_of(run.grader_root, nodeid)
            if kind == "passed" and not is_paid:
                what = (f"passed, but a test of shape, dtype or inputs left unchanged earns nothing until every value "
                        f"test of exercise {exercise_id} passes")
            said = what if kind in ("passed", "not attempted", "not graded", *ABOUT_THE_FILE) else \
                f"{what} (the test: {reason})"
            tests.append({"name": f"{exercise_id} {exercise.title}: {nodeid.split('::', 1)[-1]}", "number": exercise_id,
                          "score": share if is_paid else 0.0, "max_score": share,
                          "status": "passed" if kind == "passed" else "failed", "output": said,
                          "extra_data": {"kind": kind, "nodeid": nodeid, "message": said, "what": what,
                                         "reason": reason}})
        kinds = [kind for kind, _ in outcomes]
        exercises[exercise_id] = {
            "title": exercise.title, "points": exercise.points, "tests": len(nodeids), "hidden_tests": sum(hidden),
            "earned": add_points(test["score"] for test in tests if test["number"] == exercise_id),
            "hidden_points": add_points(share for share, is_hidden in zip(shares, hidden) if is_hidden),
            "kinds": {kind: kinds.count(kind) for kind in sorted(set(kinds))}}
    graded = {"score": add_points(test["score"] for test in tests), "execution_time": round(elapsed, 1),
            "output": plain(problem) or f"{len(tests)} tests of exercises {', '.join(exercises)}", "tests": tests,
            "extra_data": {
                "student": student, "entry": shown(entry.path.name) if entry is not None else student,
                "max_score": sum(row["points"] for row in exercises.values()), "exercises": exercises,
                "flags": [plain(problem)] if problem else flags_of(tests, report),
                "grader_version": run.version, "isolation": run.isolation.kind,
                "graded_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "graded": not problem, "complete": True,
                "handed_out": None if report.handed_out is None else [i for i in report.handed_out if i in EXERCISES]}}
    if entry is not None and entry.note:  # the student is graded under another name than their entry's
        graded["extra_data"]["flags"].append(entry.note)
    return graded


def _outcome(result: dict | None, exercise_id: str, report: StudentFiles, problem: str) -> tuple[str, str]:
    """(kind, the grader's message) of one test: one of KINDS, or "not graded"."""
    if problem:
        return "not graded", problem
    if result is None:
        return tuple(decided(report).get(exercise_id, ["failed", "did not run (the check process ended before it)"]))
    kind = result.get("status") if result.get("status") in KINDS else "failed"
    return kind, str(result.get("message") or "")


def flags_of(tests: list[dict], report: StudentFiles) -> list[str]:
    """What the instructor should look at: timeouts, crashes, refusals, the copy's files, a copy not an edition."""
    def exercises(kind: str) -> str:
        return " ".join(sorted({test["number"] for test in tests if test["extra_data"]["kind"] == kind}, key=sort_key))

    flags = [kind for kind in ("timed out", "crashed") if exercises(kind)]
    if exercises("refused"):
        flags.append(f"refused: exercise(s) {exercises('refused')} asked the grader for exercises they do not need")
    flags += [f"{kind}: {exercises(kind)}" for kind in ABOUT_THE_FILE if exercises(kind)]
    if report.handed_out is None:
        flags.append("not a student edition (no minitorch/exercises/edition.json): a copy of the full book holds "
                     "every answer")
    return flags
