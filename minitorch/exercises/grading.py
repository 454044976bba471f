"""Grading returned copies: each one isolated, time-limited, graded by the grader's own tests (chapter 00).

A submission is a returned copy of the project (a folder or a .zip of one). It is graded in three steps:

1. `graft_submission`: a pristine copy of the grader's project (library and tests) into a scratch
   folder, into which only the student's exercise regions are grafted. Code outside the regions never
   runs; a region that does not compile is replaced by ``raise SyntaxError(<the compiler's message>)``
   so that only its own exercise fails. Edits outside the regions are reported, never scored.
2. `run_tests`: the graded tests run in a child pytest process (resource limits, scratch working
   folder, HOME and TMPDIR inside it). The grader's conftest appends one line per test started and
   finished to a log (MINITORCH_GRADE_LOG); a child that dies or stops making progress is killed, the
   test it was running fails with the reason, and a new child goes on with the tests left.
3. `grade_submission`: points per exercise (points x passed / tests), written as results.json
   (the Gradescope autograder's format) and feedback.md.

This guards against mistakes (an infinite loop, os._exit, a deleted file, a huge print, a syntax
error, an edited helper) and refuses a copy that holds symbolic links or a .zip that would unpack to
more than 200 MiB, but it does not guard against a hostile student: the student's code runs as the grader's
user. For that, run the grader inside a container. Nothing of the student's is imported here.
"""

from __future__ import annotations

import datetime
import difflib
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from minitorch.exercises.edition import (MANIFEST, copy_folder, fingerprint, git_commit, outside_regions, project_files,
                                         read_manifest)
from minitorch.exercises.registry import (EXERCISES, MAX_UNPACKED_BYTES, ROOT, STUB_ERROR, ExerciseError,
                                          load_exercises, scan_file, sort_key)

GRADER_PATHS = ("README.md", "requirements.txt", "LICENSE", "minitorch", "tests")  # what a graded copy holds
MEMORY_LIMIT = 4 << 30  # bytes of address space per child
FILE_LIMIT = 256 << 20  # bytes of the largest file a child may write
OUTPUT_CAP = 10_000  # characters of a test's output kept in the feedback
MAX_ZIP_MEMBERS = 100_000  # a .zip that would unpack to more files (or to MAX_UNPACKED_BYTES) is refused
TIMEOUTS_PER_EXERCISE = 2  # after this many timeouts or crashes, an exercise's other tests fail unrun
NO_PROGRESS_MARGIN = 60.0  # seconds beyond --timeout for starting Python, importing and collecting
HUNG_TEST_MARGIN = 10.0  # seconds beyond --timeout for a running test whose alarm could not stop it (a hang in C)

# How a test ended, beyond pytest's own outcomes; a flag in the gradebook for each.
TIMED_OUT, CRASHED, DOES_NOT_COMPILE, NOT_FOUND = "timed out", "crashed", "does not compile", "region not found"


@dataclass
class GraftReport:
    """What grafting found: regions grafted, regions that do not compile or are missing (ID -> message),
    files edited outside the regions (relative path -> short diff stat), the manifest's IDs."""

    grafted: list[str] = field(default_factory=list)
    stubs: list[str] = field(default_factory=list)  # grafted regions that are still the edition's stub
    not_compiling: dict[str, str] = field(default_factory=dict)
    not_found: dict[str, str] = field(default_factory=dict)
    edited_outside: dict[str, str] = field(default_factory=dict)
    handed_out: list[str] | None = None


# ----------------------------------------------------------------------
# unpacking a submission


def project_in(submission: Path, scratch: Path) -> Path:
    """The top folder of the project in `submission` (a folder, or a .zip unpacked into `scratch`)."""
    submission = Path(submission)
    if submission.is_file() and submission.suffix == ".zip":
        folder = scratch / "unpacked"
        _unzip(submission, folder)
    elif submission.is_dir():
        folder = submission
    else:
        raise ExerciseError(f"{submission} is neither a folder nor a .zip of a copy of the project")
    for candidate in (folder, *sorted(p for p in folder.iterdir() if p.is_dir())):
        if (candidate / "minitorch").is_dir():
            _refuse_links(candidate, top=folder)
            return candidate
    raise ExerciseError(f"{submission} holds no minitorch/ folder (looked at its top and one level down)")


def _refuse_links(project: Path, top: Path) -> None:
    """Stop if the copy (the folders from the submission `top` down to the project), or its minitorch/
    or tests/, is or holds a symbolic link: the grader reads only the files the student wrote, never
    one that a link points to elsewhere on the grader's machine."""
    links = [path for path in dict.fromkeys((top, project)) if path.is_symlink()]
    links += [path for folder in ("minitorch", "tests") for path in (project / folder, *(project / folder).rglob("*"))
              if path.is_symlink()]
    if links:
        def named(path: Path) -> str:  # not where it points: that may be the grader's own files
            return str(path.relative_to(project) if path != project and path.is_relative_to(project) else path.name)

        shown = ", ".join(named(path) for path in links[:3]) + (", ..." if len(links) > 3 else "")
        raise ExerciseError(f"the copy holds {len(links)} symbolic link(s) ({shown}); the grader reads only "
                            f"regular files: submit the files themselves")


def _unzip(archive: Path, folder: Path) -> None:
    try:
        with zipfile.ZipFile(archive) as opened:
            members = opened.infolist()
            unpacked = sum(member.file_size for member in members)
            if len(members) > MAX_ZIP_MEMBERS or unpacked > MAX_UNPACKED_BYTES:
                raise ExerciseError(f"{archive} would unpack to {len(members):,} files and "
                                    f"{unpacked / 2**20:,.0f} MiB; a copy of the project is a few MiB (the grader "
                                    f"unpacks at most {MAX_ZIP_MEMBERS:,} files and {MAX_UNPACKED_BYTES >> 20:,} MiB)")
            for member in members:
                target = (folder / member.filename).resolve()
                if not target.is_relative_to(folder.resolve()):
                    raise ExerciseError(f"{archive}: member {member.filename!r} would unpack outside its folder")
            opened.extractall(folder)
    except zipfile.BadZipFile as error:
        raise ExerciseError(f"{archive} is not a valid .zip: {error}") from None


# ----------------------------------------------------------------------
# grafting


def graft_submission(submission: Path, grader_root: Path, dest: Path, exercise_ids) -> GraftReport:
    """Copy the grader's project to `dest` and graft in the student's regions of `exercise_ids`.

    Regions of other exercises keep the grader's reference solution (tests that depend on them are
    not blocked). `dest` must not exist. `submission` is a folder or a .zip."""
    grader_root, dest = Path(grader_root).resolve(), Path(dest)
    with tempfile.TemporaryDirectory(prefix="minitorch-unpack-") as scratch:
        student = project_in(Path(submission), Path(scratch))
        _copy_project(grader_root, dest)
        report = GraftReport()
        exercises = {e.id: e for e in load_exercises(grader_root)}
        unknown = [i for i in exercise_ids if i not in exercises]
        if unknown:
            raise ExerciseError(f"unknown exercise ID(s) {', '.join(unknown)}; the grader's are {', '.join(exercises)}")
        by_file: dict[Path, list] = {}
        for exercise_id in sorted(exercise_ids, key=sort_key):
            by_file.setdefault(exercises[exercise_id].path, []).append(exercises[exercise_id])
        for path, in_file in by_file.items():
            relative = path.relative_to(grader_root)
            text = _graft_file(path.read_text(encoding="utf-8"), student / relative, in_file, report)
            (dest / relative).write_text(text, encoding="utf-8")
        report.edited_outside = edits_outside_regions(student, grader_root)
        try:
            report.handed_out = read_manifest(student)
        except ExerciseError:
            report.handed_out = None
    return report


def _copy_project(grader_root: Path, dest: Path) -> None:
    dest.mkdir(parents=True)
    for name in GRADER_PATHS:
        source = grader_root / name
        if source.is_dir():
            copy_folder(source, dest / name, also_ignored=("edition.json",))
        elif source.is_file():
            shutil.copy2(source, dest / name)


def _graft_file(text: str, student_file: Path, exercises: list, report: GraftReport) -> str:
    """The grader's `text` with each exercise's body replaced by the student's (or by an error)."""
    lines = text.splitlines(keepends=True)
    bodies = _student_bodies(student_file, exercises, report)
    for exercise in sorted(exercises, key=lambda e: e.begin_line, reverse=True):  # bottom up: numbers stay valid
        body, student_begin = bodies.get(exercise.id, (None, 0))
        if body is not None:
            alone = lines[:exercise.begin_line] + body + lines[exercise.end_line - 1:]
            try:
                compile("".join(alone), str(student_file), "exec")
                report.grafted.append(exercise.id)
                if _is_stub(body, exercise.id):
                    report.stubs.append(exercise.id)
            except SyntaxError as error:
                # line numbers of `alone` are the grader's; the student's file has its own above the region
                in_body = min(max((error.lineno or 0) - exercise.begin_line, 1), len(body) + 1)
                message = (f"does not compile: {error.msg} (line {student_begin + in_body} of "
                           f"{student_file.name})")
                report.not_compiling[exercise.id] = message
                body = [f"{exercise.indent}raise SyntaxError({json.dumps(message)})\n"]
        else:
            body = [f"{exercise.indent}raise RuntimeError({json.dumps(report.not_found[exercise.id])})\n"]
        lines[exercise.begin_line:exercise.end_line - 1] = body
    return "".join(lines)


def _is_stub(body: list[str], exercise_id: str) -> bool:
    """True if the region's only code is the edition's `raise NotImplementedError(<stub message>)`."""
    code = [line for line in body if line.strip() and not line.strip().startswith("#")]
    found = STUB_ERROR.search("".join(code))
    return len(code) == 1 and code[0].strip().startswith("raise NotImplementedError(") and bool(found) \
        and found[1] == exercise_id


def _student_bodies(student_file: Path, exercises: list, report: GraftReport) -> dict[str, tuple[list[str], int]]:
    """Exercise ID -> (the lines of the student's region, re-indented to the grader's; the line number
    of its BEGIN marker in the student's file); the missing ones go to report.not_found with the reason."""
    found = {}
    if student_file.is_file():
        try:
            lines = student_file.read_text(encoding="utf-8").splitlines(keepends=True)
            found = {region.id: region for region in scan_file(student_file)}
        except (ExerciseError, UnicodeDecodeError) as error:
            reason = str(error)
        else:
            reason = f"no BEGIN/END EXERCISE markers for it in {student_file.name}"
    else:
        reason = f"the file {student_file.name} is missing from the copy"
    bodies = {}
    for exercise in exercises:
        region = found.get(exercise.id)
        if region is None:
            report.not_found[exercise.id] = f"{NOT_FOUND}: exercise {exercise.id} was not graded: {reason}"
            continue
        body = lines[region.begin_line:region.end_line - 1]
        bodies[exercise.id] = ([exercise.indent + line[len(region.indent):] if line.startswith(region.indent)
                                else line for line in body], region.begin_line)
    return bodies


def edits_outside_regions(student: Path, grader_root: Path) -> dict[str, str]:
    """Relative path -> '+A -D lines', 'added', 'deleted' or 'changed' for each file of minitorch/ and
    tests/ that the student changed outside the exercise regions.

    What the student received is known from the fingerprints in their edition's manifest (so that the
    grader's own changes since, or the edition's, are not taken for the student's); without them, the
    grader's files stand in. The line counts compare with the grader's file."""
    theirs = set(project_files(student))
    received = _manifest_files(student)
    if received is None:
        received = {name: fingerprint(grader_root / name) for name in project_files(grader_root)}
    edits = {name: "added" for name in sorted(theirs - set(received))}
    edits.update({name: "deleted" for name in sorted(set(received) - theirs)})
    for name in sorted(theirs & set(received)):
        if fingerprint(student / name) != received[name]:
            edits[name] = _diff_stat(grader_root / name, student / name)
    return edits


def _manifest_files(student: Path) -> dict[str, str] | None:
    try:
        files = json.loads((student / MANIFEST).read_text(encoding="utf-8"))["files"]
        return dict(files) if isinstance(files, dict) else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _diff_stat(ours: Path, theirs: Path) -> str:
    if theirs.suffix != ".py" or not ours.is_file():
        return "changed"
    before = outside_regions(ours.read_text(encoding="utf-8", errors="replace"))
    after = outside_regions(theirs.read_text(encoding="utf-8", errors="replace"))
    diff = list(difflib.unified_diff(before, after, lineterm="", n=0))
    added = sum(1 for line in diff if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in diff if line.startswith("-") and not line.startswith("---"))
    return f"+{added} -{removed} lines"


# ----------------------------------------------------------------------
# running the tests in child processes


def graded_test_files(project: Path) -> list[str]:
    """The test files that grade exercises (relative paths), as `count_tests` finds them."""
    tests = Path(project) / "tests"
    return [path.relative_to(project).as_posix() for path in sorted(tests.rglob("test_*.py"))
            if "exercises" not in path.relative_to(tests).parts[:-1]
            and "mark.exercise(" in path.read_text(encoding="utf-8")]


def marker_expression(exercise_ids) -> str:
    return "not slow and (" + " or ".join("ex" + i.replace(".", "_") for i in sorted(exercise_ids, key=sort_key)) + ")"


def _limits(cpu_seconds: int):
    def apply():
        import resource
        os.setsid()  # its own process group: the watchdog kills it with everything it started
        for limit, value in ((resource.RLIMIT_AS, MEMORY_LIMIT), (resource.RLIMIT_CPU, cpu_seconds),
                             (resource.RLIMIT_FSIZE, FILE_LIMIT), (resource.RLIMIT_CORE, 0)):
            try:
                resource.setrlimit(limit, (value, value))
            except (ValueError, OSError):
                pass
    return apply


_children: set[subprocess.Popen] = set()  # running children, killed on Ctrl-C
_children_lock = threading.Lock()
_stopping = threading.Event()


class GradingStopped(Exception):
    """Grading was interrupted (Ctrl-C): the student being graded is not written."""


def stop_grading() -> None:
    """Kill every child the grader started (their whole process groups); graders still running stop
    without writing anything."""
    _stopping.set()
    with _children_lock:
        for child in list(_children):
            _kill(child)


def _kill(child: subprocess.Popen) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _environment(work: Path, log: Path, downs_per_exercise: int) -> dict:
    keep = ("PATH", "LANG", "LC_ALL", "SYSTEMROOT", "VIRTUAL_ENV", "CONDA_PREFIX")
    environment = {key: os.environ[key] for key in keep if key in os.environ}
    home = work / "home"
    home.mkdir(exist_ok=True)
    environment.update(HOME=str(home), TMPDIR=str(home), MPLBACKEND="Agg", PYTHONDONTWRITEBYTECODE="1",
                       PYTHONHASHSEED="0", MINITORCH_GRADE_LOG=str(log), OMP_NUM_THREADS="1",
                       OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONIOENCODING="utf-8",
                       MINITORCH_TIMEOUTS_PER_EXERCISE=str(downs_per_exercise))
    return environment


def _read_log(log: Path) -> list[dict]:
    if not log.exists():
        return []
    events = []
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            break  # the last line of a child that died while writing it
    return events


def run_tests(project: Path, exercise_ids, *, seed: int, timeout: float, work: Path,
              collect_only: bool = False, expected: dict | None = None,
              only: list[str] | None = None, downs_per_exercise: int = TIMEOUTS_PER_EXERCISE) -> tuple[dict, dict]:
    """Run the graded tests of `exercise_ids` on `project` in child processes.

    Returns ({node ID: exercise ID} collected, {node ID: result}), a result being the conftest's
    {"status", "message", "output", ...}, or for a test that a child took down
    {"status": "timed out" | "crashed", "message": ...}. Children that die are replaced. If one dies
    or hangs before running any test (at import or collection), every test left fails with the
    reason (the `expected` tests, {node ID: exercise ID}, if none was collected). With `only` (node
    IDs), just those tests run. After `downs_per_exercise` tests of an exercise timed out or crashed,
    its other tests fail unrun."""
    collected: dict[str, str] = dict(expected or {})
    results: dict[str, dict] = {}
    arguments = list(only) if only else [*graded_test_files(project), "-m", marker_expression(exercise_ids)]
    for attempt in itertools.count(1):
        log = work / f"log-{attempt}.jsonl"
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                   f"--rootdir={project}", f"--minitorch-root={project}", f"--exercise-seed={seed}",
                   f"--test-timeout={timeout:g}", "--color=no", "-o", "console_output_style=classic",
                   *(["--collect-only"] if collect_only else []), *arguments]
        events, returncode, reason = _watch(command, project, work, log, timeout, attempt, downs_per_exercise)
        for event in events:
            if "collected" in event:
                collected.update({k: v for k, v in event["collected"].items() if v is not None})
            elif "finish" in event and event.get("status"):
                results[event["finish"]] = {k: v for k, v in event.items() if k != "finish"}
        running = [event["start"] for event in events if "start" in event and event["start"] not in results]
        if running:
            results[running[-1]] = {"status": reason[0] if reason else CRASHED, "exercise": collected.get(running[-1]),
                                    "message": reason[1] if reason else _crash_message(returncode)}
            _give_up_on_exercise(collected.get(running[-1]), collected, results, downs_per_exercise)
        left = [nodeid for nodeid in collected if nodeid not in results]
        if collect_only or not left:
            return collected, results
        if not running:  # it stopped before the next test could start
            kind, message = reason or _early_end(returncode, work)
            results.update({nodeid: {"status": kind, "exercise": collected[nodeid], "message": message}
                            for nodeid in left})
            return collected, results
        arguments = left


def _give_up_on_exercise(exercise_id: str | None, collected: dict, results: dict, downs_per_exercise: int) -> None:
    """Once `downs_per_exercise` tests of an exercise took their child down, fail its other tests
    with the same reason without running them (each would cost a new child, or a full timeout)."""
    down = [n for n, r in results.items() if collected.get(n) == exercise_id and r["status"] in (CRASHED, TIMED_OUT)]
    if exercise_id is None or len(down) < downs_per_exercise:
        return
    last = results[down[-1]]
    for nodeid, owner in collected.items():
        if owner == exercise_id and nodeid not in results:
            results[nodeid] = {"status": last["status"], "exercise": exercise_id,
                               "message": f"{last['status']}: not run, {len(down)} tests of exercise {exercise_id} "
                                          f"already took the test process down ({last['message']})"}


def _watch(command, project: Path, work: Path, log: Path, timeout: float, attempt: int, downs_per_exercise: int):
    """Run one child; kill it when it makes no progress for timeout + margin seconds.
    Returns (events logged, return code, (kind, message) if the watchdog killed it)."""
    cpu_seconds = int(max(600, 20 * timeout))
    output = work / f"output-{attempt}.txt"
    with open(output, "wb") as sink:
        child = subprocess.Popen(command, cwd=project, env=_environment(work, log, downs_per_exercise),
                                 stdin=subprocess.DEVNULL,
                                 stdout=sink, stderr=subprocess.STDOUT, preexec_fn=_limits(cpu_seconds))
    with _children_lock:
        _children.add(child)
        if _stopping.is_set():
            _kill(child)
    seen, last_progress, reason = 0, time.monotonic(), None
    try:
        while child.poll() is None:
            time.sleep(0.1)
            events = _read_log(log)
            if len(events) != seen:
                seen, last_progress = len(events), time.monotonic()
            test_running = bool(events) and "start" in events[-1]
            allowed = timeout + (HUNG_TEST_MARGIN if test_running else NO_PROGRESS_MARGIN)
            if time.monotonic() - last_progress > allowed:
                _kill(child)
                child.wait()
                reason = (TIMED_OUT, f"timed out after {timeout:g} s (the test process made no progress for "
                                     f"{allowed:g} s and was stopped)")
    finally:
        with _children_lock:
            _children.discard(child)
        if child.poll() is None:
            _kill(child)
            child.wait()
    if _stopping.is_set():
        raise GradingStopped()
    return _read_log(log), child.returncode, reason


def _crash_message(returncode: int) -> str:
    if returncode is not None and returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        hint = {"SIGSEGV": " (a segmentation fault)", "SIGKILL": " (killed, perhaps out of memory)",
                "SIGXCPU": " (the CPU time limit)", "SIGXFSZ": " (a file grew past the size limit)"}.get(name, "")
        return f"crashed: the test process died by {name}{hint} during this test"
    return (f"crashed: the test process exited with status {returncode} during this test "
            f"(os._exit or exit at the C level); the remaining tests ran in a new process")


def _early_end(returncode: int, work: Path) -> tuple[str, str]:
    """(kind, message) for a child that ended without running the tests left."""
    tail = child_output(work, 1500).strip()
    if returncode in (0, 1):  # pytest ended normally, yet these never ran
        return "failed", f"did not run (pytest ended with status {returncode}): {tail}"
    return CRASHED, f"{_crash_message(returncode).split(' during')[0]} before running this test: {tail}"


def child_output(work: Path, limit: int = 2000) -> str:
    """The end of what the children printed (for a child that died before any test)."""
    texts = [path.read_bytes()[-limit:].decode("utf-8", "replace") for path in sorted(work.glob("output-*.txt"))]
    return texts[-1] if texts else ""


# ----------------------------------------------------------------------
# grading one submission


def grader_version(grader_root: Path = ROOT) -> str:
    return git_commit(grader_root) or "unknown (not a git checkout)"


def _test_name(nodeid: str) -> str:
    return nodeid.split("::", 1)[-1]


def _kind(result: dict, exercise_id: str, report: GraftReport) -> str:
    """passed, failed, not attempted, blocked, timed out, crashed, does not compile, region not found."""
    status, message = result.get("status") or "failed", result.get("message") or ""
    if status == "passed":
        return "passed"
    if exercise_id in report.not_compiling:
        return DOES_NOT_COMPILE
    if exercise_id in report.not_found:
        return NOT_FOUND
    if status == "failed" and message.startswith("TimeoutError: timed out"):
        return TIMED_OUT
    return status if status in (TIMED_OUT, CRASHED, "not attempted", "blocked") else "failed"


def results_json(student: str, collected: dict, results: dict, report: GraftReport, *, exercise_ids, seed: int,
                 version: str, elapsed: float, problem: str = "") -> dict:
    """The Gradescope autograder's results.json: score, tests (name, score, max_score, status, output);
    `version` names the grader's commit."""
    per_exercise = {i: [n for n, e in collected.items() if e == i] for i in sorted(exercise_ids, key=sort_key)}
    tests, exercises = [], {}
    for exercise_id, nodeids in per_exercise.items():
        title, points = EXERCISES[exercise_id]
        share = points / len(nodeids) if nodeids else 0.0
        kinds = []
        for nodeid in nodeids:
            result = results.get(nodeid) or {"status": "failed", "message": problem or "did not run"}
            kind = _kind(result, exercise_id, report)
            kinds.append(kind)
            message = (report.not_compiling.get(exercise_id) or report.not_found.get(exercise_id)
                       if kind in (DOES_NOT_COMPILE, NOT_FOUND) else result.get("message") or "")
            if kind == "passed" and result.get("note"):
                message = result["note"]
            output = (message + ("\n\n" + result["output"] if result.get("output") else ""))[:OUTPUT_CAP]
            tests.append({"name": f"{exercise_id} {title}: {_test_name(nodeid)}", "number": exercise_id,
                          "score": round(share if kind == "passed" else 0.0, 6), "max_score": round(share, 6),
                          "status": "passed" if kind == "passed" else "failed", "output": output,
                          "extra_data": {"kind": kind, "nodeid": nodeid, "message": message[:500]}})
        earned = share * kinds.count("passed")
        exercises[exercise_id] = {"title": title, "points": points, "earned": round(earned, 6), "tests": len(nodeids),
                                  "kinds": {kind: kinds.count(kind) for kind in sorted(set(kinds))}}
    flags = [problem] if problem else flags_of(tests, report)
    return {
        "score": round(sum(e["earned"] for e in exercises.values()), 6),
        "execution_time": round(elapsed, 1),
        "output": problem or f"{len(tests)} tests of exercises {', '.join(exercises)}",
        "tests": tests,
        "extra_data": {"student": student, "max_score": sum(e["points"] for e in exercises.values()),
                       "exercises": exercises, "flags": flags, "exercise_seed": seed,
                       "grader_version": version,
                       "graded_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                       "edited_outside_regions": report.edited_outside, "handed_out": report.handed_out,
                       "graded": not problem, "complete": True},
    }


def flags_of(tests: list[dict], report: GraftReport) -> list[str]:
    kinds = {test["extra_data"]["kind"] for test in tests}
    flags = [kind for kind in (TIMED_OUT, CRASHED) if kind in kinds]
    if report.not_compiling:
        flags.append(f"{DOES_NOT_COMPILE}: {' '.join(report.not_compiling)}")
    if report.not_found:
        flags.append(f"{NOT_FOUND}: {' '.join(report.not_found)}")
    if report.edited_outside:
        flags.append(f"edited outside the regions: {' '.join(report.edited_outside)}")
    if report.handed_out is None:
        flags.append(f"not a student edition (no {MANIFEST.as_posix()}): a copy of the full book holds every answer")
    return flags


def grade_submission(submission: Path, out_dir: Path, *, exercise_ids, seed: int, timeout: float,
                     grader_root: Path = ROOT, version: str | None = None) -> dict:
    """Grade one student's copy (folder or .zip) in child processes; write out_dir/results.json and
    out_dir/feedback.md (atomically) and return the results. `version` names the grader's commit
    (default: the git commit of `grader_root`, e.g. when it is not a checkout but a bundle)."""
    from minitorch.exercises.gradebook import feedback_markdown, write_atomically

    submission, out_dir = Path(submission), Path(out_dir)
    student = submission.name[:-4] if submission.name.endswith(".zip") else submission.name
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"minitorch-grade-{student}-") as scratch:
        scratch = Path(scratch)
        project, work = scratch / "project", scratch / "work"
        work.mkdir()
        problem = ""
        try:
            copy = project_in(submission, scratch)  # unpacked once, for every graft below
            report = graft_submission(copy, grader_root, project, exercise_ids)
        except ExerciseError as error:  # named by the submission's own name: the student reads it too
            reason = str(error).replace(str(submission), submission.name).replace(str(scratch) + os.sep, "")
            report, problem = GraftReport(), f"could not be graded: {reason}"
            collected, results = expected_tests(grader_root, exercise_ids, seed, timeout), {}
        else:
            expected = expected_tests(grader_root, exercise_ids, seed, timeout)
            collected, results = run_tests(project, exercise_ids, seed=seed, timeout=timeout, work=work,
                                           expected=expected)
            for exercise_id, nodeids in to_regrade_alone(collected, results, report).items():
                regrade_alone(copy, grader_root, scratch / f"alone-{exercise_id}", exercise_id, nodeids, results,
                              seed=seed, timeout=timeout)
    graded = results_json(student, collected, results, report, exercise_ids=exercise_ids, seed=seed,
                          version=version or grader_version(grader_root), elapsed=time.monotonic() - started,
                          problem=problem)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_atomically(out_dir / "feedback.md", feedback_markdown(graded))
    write_atomically(out_dir / "results.json", json.dumps(graded, indent=1) + "\n")
    return graded


def to_regrade_alone(collected: dict, results: dict, report: GraftReport) -> dict[str, list[str]]:
    """{exercise ID: its tests to run again with only its own region grafted}: an exercise is graded on
    its own code, so a bug in another exercise it calls must not cost its points.

    Exercises call only exercises before them in the book, so only the tests of an exercise with an
    earlier one not fully passed are run again: failures with every earlier exercise passing are its
    own. Neither are tests that hung or crashed unless an earlier exercise's did too (the earliest
    hang is its own code; running it again would cost more timeouts); an exercise still a stub, or
    whose own stub raised (not attempted); nor tests that passed."""
    if len(report.grafted) < 2:
        return {}  # the other regions are already the grader's
    kind = {nodeid: _kind(results.get(nodeid) or {}, collected[nodeid], report) for nodeid in collected}
    not_passed = {collected[n] for n, k in kind.items() if k != "passed"}
    took_down = {collected[n] for n, k in kind.items() if k in (TIMED_OUT, CRASHED)}
    again: dict[str, list[str]] = {}
    for exercise_id in report.grafted:
        tests = [n for n in collected if collected[n] == exercise_id]
        if exercise_id in report.stubs or any(kind[n] == "not attempted" for n in tests):
            continue
        earlier = {other for other in not_passed if sort_key(other) < sort_key(exercise_id)}
        earlier_down = {other for other in took_down if sort_key(other) < sort_key(exercise_id)}
        failing = [n for n in tests if kind[n] != "passed" and earlier
                   and (kind[n] not in (TIMED_OUT, CRASHED) or earlier_down)]
        if failing:
            again[exercise_id] = failing
    return again


def regrade_alone(copy: Path, grader_root: Path, folder: Path, exercise_id: str, nodeids: list[str],
                  results: dict, *, seed: int, timeout: float) -> None:
    """Run `nodeids` again on a copy with only `exercise_id` grafted (the grader's solutions for the
    rest); a test that passes now counts as passed, with a note of how it failed with all the
    student's code; one that fails again keeps this run's reason, which is about this exercise alone."""
    (folder / "work").mkdir(parents=True)
    graft_submission(copy, grader_root, folder / "project", [exercise_id])
    _, alone = run_tests(folder / "project", [exercise_id], seed=seed, timeout=timeout, work=folder / "work",
                         expected=dict.fromkeys(nodeids, exercise_id), only=nodeids, downs_per_exercise=1)
    for nodeid in nodeids:
        before, after = results.get(nodeid) or {}, alone.get(nodeid)
        if after is None:
            continue
        if after.get("status") == "passed":
            after = {**after, "note": f"passed when run with the grader's solutions of the other exercises; with "
                                      f"all of your code: {before.get('message') or before.get('status', 'failed')}"}
        results[nodeid] = after


_expected: dict[tuple, dict] = {}
_expected_lock = threading.Lock()


def expected_tests(grader_root: Path, exercise_ids, seed: int, timeout: float) -> dict[str, str]:
    """{node ID: exercise ID} of the graded tests, collected once from a pristine copy of the grader's
    project (so a test that a student's copy never reached still counts in the total)."""
    key = (str(Path(grader_root).resolve()), tuple(sorted(exercise_ids, key=sort_key)), seed)
    with _expected_lock:
        if key not in _expected:
            with tempfile.TemporaryDirectory(prefix="minitorch-grade-collect-") as scratch:
                project, work = Path(scratch) / "project", Path(scratch) / "work"
                work.mkdir()
                _copy_project(Path(grader_root).resolve(), project)
                collected, _ = run_tests(project, exercise_ids, seed=seed, timeout=timeout, work=work,
                                         collect_only=True)
                if not collected:
                    raise ExerciseError(f"collecting the grader's own tests found none for {', '.join(exercise_ids)}:"
                                        f"\n{child_output(work)}")
                _expected[key] = collected
        return _expected[key]


def is_complete(out_dir: Path, exercise_ids=None, seed: int | None = None) -> bool:
    """True if out_dir/results.json is a finished grade (of these exercises, with this seed, if given):
    running the class again keeps it."""
    try:
        extra = json.loads((Path(out_dir) / "results.json").read_text(encoding="utf-8"))["extra_data"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    same_exercises = exercise_ids is None or sorted(extra.get("exercises", {})) == sorted(exercise_ids)
    same_seed = seed is None or extra.get("exercise_seed") == seed
    return bool(extra.get("complete")) and same_exercises and same_seed
