"""Grading on Gradescope: an autograder bundle built from the book (chapter 11).

Gradescope unpacks the zip an instructor uploads into /autograder/source and runs its setup.sh there, as root, to
build the image; for each submission it puts the student's files in /autograder/submission, runs run_autograder and
shows the student /autograder/results/results.json. `build_bundle` writes the zip: the two scripts (templates/), the
packages grading imports pinned to the builder's versions, the grader's minitorch/ and tests/, and bundle.json, the
settings fixed when it is built (exercises, secret seed, timeout, deadline, graded tests). `run` (what run_autograder
calls) grades the submission with `grading.grade_submission` and always writes results.json: hidden tests get the
visibility the bundle says, a failure its one-line reason and never an input drawn from the seed, a late submission
its penalty. ``AUTOGRADER_ROOT`` (default /autograder) moves the whole layout, so that a bundle runs on any machine.
"""

from __future__ import annotations

import argparse
import datetime
import fnmatch
import importlib.util
import io
import json
import math
import os
import platform
import re
import secrets
import sys
import time
import traceback
import zipfile
from pathlib import Path

from minitorch import checks
from minitorch.exercises.edition import TEMPLATES, git_commit
from minitorch.exercises.grader.trusted.grading import CheckProcessFailed
from minitorch.exercises.grader.trusted.student_text import shown
from minitorch.exercises.grader.trusted.submissions import Entry, find_project, unpack, unzip_name
from minitorch.exercises.registry import (MANIFEST, NOT_COPIED, ROOT, Exercise, ExerciseError, is_hidden_test,
                                          part_points, secret_output_refused)
from minitorch.outputs import OutputPathError, OwnFile, check_output_file, scratch_folder, write_atomically
from minitorch.tools.exit_policy import ensure_open_files

BUNDLE_PATHS = ("minitorch", "tests", "requirements.txt", "README.md", "LICENSE")  # the grader's, from the book
SETTINGS_NAME = "bundle.json"  # in the bundle: what it grades and how, fixed when it is built
PINNED_NAME = "grading-requirements.txt"  # in the bundle: what setup.sh installs, pinned to the builder's versions
GRADING_PACKAGES = ("numpy", "pytest", "pytest-timeout")  # all grading imports (the chapters are not run)
HIDDEN_VISIBILITIES = ("after_due_date", "hidden")  # Gradescope's settings for a test students do not see at once
PUBLIC_SEED = 0  # the seed of the students' own test runs
PLATFORM_LIMIT = 600.0  # seconds: Gradescope stops an autograder after 10 minutes unless the course raises it
DEFAULT_DEADLINE = 540.0  # seconds: the bundle stops grading here and writes what it has, before the platform
START_UP = 30.0  # seconds to start, find and unpack the copy, before the first test
RESULTS_MARGIN = 20.0  # seconds kept after the check process to write results.json
REQUIRED_SETTINGS = {"exercise_ids": (list, "a list"), "exercise_seed": (int, "a whole number"),  # bundle.json's
                     "timeout": ((int, float), "a number"), "deadline": ((int, float), "a number"),
                     "collected": (dict, "an object")}
OPTIONAL_SETTINGS = {"hidden_tests": (list, "a list"), "hidden_visibility": (str, "a string"),
                     "late_penalty": ((int, float), "a number")}


class SubmissionError(ValueError):
    """The submission holds no gradable copy of the book; the message tells the student what to submit."""


class SetupMissing(Exception):
    """The Python running the bundle lacks a package grading imports; the message says what to install."""


def build_bundle(out_zip, exercises: list[Exercise], *, seed: int | None = None, timeout: float,
                 deadline: float = DEFAULT_DEADLINE, over_deadline: bool = False, root: Path = ROOT,
                 hidden_visibility: str = "after_due_date", late_penalty: float = 10.0, force: bool = False) -> dict:
    """Write the autograder zip for `exercises` (atomically, its folders created) and return its settings. `seed`
    None draws a fresh secret one of 128 bits; `timeout` limits each test and `deadline` the whole run, whose worst
    case must fit (else `over_deadline`). `root` is the full book, never a student edition."""
    from minitorch.exercises.grader.trusted.grading import collect_tests

    root = Path(root).resolve()
    try:  # a zip of the user's own is replaced only with `force`
        out = check_output_file(out_zip, "the bundle", [root / name for name in BUNDLE_PATHS], OWN_BUNDLE, force)
    except OutputPathError as error:
        raise ExerciseError(str(error)) from None
    if out.suffix != ".zip":
        raise ExerciseError(f"the bundle is a zip file; name it something.zip, not {out.name}")
    secret_output_refused(out, "the bundle", root)
    if (root / MANIFEST).exists():
        raise ExerciseError(f"{root} is a student edition ({MANIFEST} exists); build the bundle from the full book, "
                            f"whose library holds the reference solutions")
    try:  # (the command line has checked them; a caller of this function may not have)
        for name, value, limits in (("--timeout", timeout, {"above": 0}), ("--deadline", deadline, {"above": 0}),
                                    ("--late-penalty", late_penalty, {"minimum": 0, "maximum": 100})):
            checks.parse_number(str(value), name, **limits)  # (str(True) is no number)
        if seed is not None:
            checks.parse_number(str(seed), "--exercise-seed", integer=True, minimum=0)
    except ValueError as error:
        raise ExerciseError(str(error)) from None
    if hidden_visibility not in HIDDEN_VISIBILITIES or not exercises:
        raise ExerciseError(f"--hidden-tests must be one of {', '.join(HIDDEN_VISIBILITIES)}, got {hidden_visibility}"
                            if exercises else "no exercises chosen; the bundle would grade nothing")
    worst = _worst_case_within(timeout, deadline, len(exercises), over_deadline)
    collected = collect_tests(root, [exercise.id for exercise in exercises])  # fixed with the bundle
    hidden = [nodeid for nodeid in collected if is_hidden_test(nodeid)]
    settings = {
        "exercise_ids": [exercise.id for exercise in exercises], "points": sum(e.points for e in exercises),
        "exercise_seed": 2**128 + secrets.randbits(128) if seed is None else seed,  # 128 secret bits, never 0
        "timeout": timeout, "deadline": deadline, "worst_case": worst, "collected": collected, "hidden_tests": hidden,
        "hidden_points": round(sum(part_points(e, any(collected[nodeid] == e.id for nodeid in hidden))[1]
                                   for e in exercises), 6),
        "hidden_visibility": hidden_visibility, "late_penalty": float(late_penalty), "packages": pinned_packages(),
        "made_from": git_commit(root),
        "made_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    packed = _zipped(settings, root)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(out, packed, mode=0o600)  # the secret seed and the hidden tests: its owner's only
    return settings


def _worst_case_within(timeout: float, deadline: float, exercise_count: int, over_deadline: bool) -> float:
    """The seconds a copy whose exercises all hang takes, checked to fit `deadline` (unless `over_deadline`) and
    Gradescope's own limit; refused if the deadline leaves no time to grade even one test."""
    from minitorch.exercises.grader.trusted.grading import CHECK_PROCESS_MARGIN
    from minitorch.exercises.grader.trusted.worker_client import DOWNS_PER_EXERCISE

    least = START_UP + RESULTS_MARGIN + CHECK_PROCESS_MARGIN + timeout  # start, one test, margins of `_grade`
    if deadline < least:  # (--over-deadline accepts a hanging copy's last tests failing, not every copy's 0)
        raise ExerciseError(f"--deadline {deadline:g} s leaves no time to grade: starting, one test of --timeout "
                            f"{timeout:g} s and writing the results take {least:g} s, so every copy would score 0; "
                            f"raise --deadline to at least {least:g}")
    worst = START_UP + exercise_count * DOWNS_PER_EXERCISE * timeout  # each exercise cut off after its first hangs
    if worst > deadline and not over_deadline:
        raise ExerciseError(f"a copy whose {exercise_count} exercises all hang would take about {worst:g} s with "
                            f"--timeout {timeout:g}, beyond the deadline of {deadline:g} s: lower --timeout, grade "
                            f"fewer exercises, raise --deadline (and the platform's own timeout), or pass "
                            f"--over-deadline to accept that such a copy's last tests fail as timed out")
    if deadline > PLATFORM_LIMIT - 30 and not over_deadline:
        raise ExerciseError(f"--deadline {deadline:g} s leaves Gradescope's default limit of {PLATFORM_LIMIT:g} s no "
                            f"time to spare: raise the assignment's timeout on Gradescope first, then pass "
                            f"--over-deadline")
    return worst


def _zipped(settings: dict, root: Path) -> bytes:
    """The bundle's zip, in memory: the two scripts, the pinned packages, the settings and the book's files."""
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        for name in ("setup.sh", "run_autograder"):
            _add_text(bundle, name, (TEMPLATES / name).read_text(encoding="utf-8"), executable=True)
        _add_text(bundle, PINNED_NAME, f"# Python {platform.python_version()}\n" + "".join(
            f"{name}=={version}\n" for name, version in settings["packages"].items()))
        _add_text(bundle, SETTINGS_NAME, json.dumps(settings, indent=1) + "\n")
        for path in _bundled_files(root):
            bundle.write(path, path.relative_to(root).as_posix())
    return packed.getvalue()


def _is_bundle(path: Path) -> bool:
    """Whether `path` is a zip that build_bundle wrote: it holds the bundle's settings, SETTINGS_NAME."""
    try:
        with zipfile.ZipFile(path) as archive:
            return SETTINGS_NAME in archive.namelist()
    except (zipfile.BadZipFile, OSError):  # a text file named .zip, an empty file: not ours, so never replaced
        return False


OWN_BUNDLE = OwnFile(f"a Gradescope bundle that gradescope-bundle wrote (a zip holding {SETTINGS_NAME})", _is_bundle)


def pinned_packages() -> dict[str, str]:
    """{package: version} of what grading imports and what those require, as installed where the bundle is built:
    the image grades with what was tested."""
    from importlib import metadata

    from packaging.requirements import Requirement

    names, pinned = list(GRADING_PACKAGES), {}
    while names:
        name = names.pop(0).lower()
        if name in pinned:
            continue
        try:
            pinned[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue  # a backport this Python does not need (exceptiongroup, tomli)
        required = [Requirement(text) for text in metadata.requires(name) or []]
        names += [r.name for r in required if r.marker is None or r.marker.evaluate({"extra": ""})]
    return pinned


def _bundled_files(root: Path) -> list[Path]:
    """The files of BUNDLE_PATHS under `root`, caches left out."""
    candidates = [file for name in BUNDLE_PATHS for file in (sorted((root / name).rglob("*")) if (root / name).is_dir()
                                                             else [root / name])]
    return [file for file in candidates if file.is_file() and not any(
        fnmatch.fnmatch(part, pattern) for part in file.relative_to(root).parts for pattern in NOT_COPIED)]


def _add_text(bundle: zipfile.ZipFile, name: str, text: str, executable: bool = False) -> None:
    info = zipfile.ZipInfo(name, date_time=time.localtime()[:6])
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = (0o100755 if executable else 0o100644) << 16  # unzip keeps the mode: sh can run it
    bundle.writestr(info, text)


# ----------------------------------------------------------------------
# running in the autograder


def run(autograder_root: Path, source: Path = ROOT) -> dict:
    """Grade `autograder_root`/submission with the grader in `source` into results/results.json, always: a submission
    without the book, or a crash of the grader itself, gives score 0 and says what happened."""
    started, settings, autograder_root = time.monotonic(), {}, Path(autograder_root)
    try:
        settings = read_settings(Path(source) / SETTINGS_NAME)
        lacking = [name for name in GRADING_PACKAGES if importlib.util.find_spec(name.replace("-", "_")) is None]
        if lacking:  # (the check process would stop with the book's advice, written for a checkout, in a traceback)
            raise SetupMissing(f"python3 ({sys.executable}) lacks {', '.join(lacking)}: run setup.sh (or pip install "
                               f"-r {PINNED_NAME}), then run_autograder again")
        with scratch_folder("minitorch-grading-", mode=0o711) as scratch:
            results = _grade(autograder_root / "submission", scratch, settings, source, started)
    except SubmissionError as error:
        results = failed_results(f"Your submission could not be graded: {error}")
    except Exception as error:  # the grader's fault, not the student's: say so, and keep a bug's traceback for the log
        said = isinstance(error, (SetupMissing, CheckProcessFailed))  # (those say what happened in their line)
        if not said:
            traceback.print_exc()
        results = failed_results(f"The autograder failed: {'' if said else type(error).__name__ + ': '}{error}. "
                                 f"Nothing was graded; please tell your instructor.")
    results = _with_lateness(results, autograder_root / "submission_metadata.json", settings.get("late_penalty", 0.0))
    results["execution_time"] = round(time.monotonic() - started)
    write_atomically(autograder_root / "results" / "results.json", json.dumps(results, indent=1, ensure_ascii=False)
                     + "\n")  # Gradescope never reads half a file
    print(results.get("output", ""))
    return results


def read_settings(path: Path) -> dict:
    """The bundle's settings, or ValueError naming a setting that is missing or of another kind than build_bundle
    writes (a hand edit leaves "timeout": "5"): grading would fail on it with Python's words, naming neither."""
    try:
        settings = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as error:  # (a hand edit that left no JSON)
        raise ValueError(f"{SETTINGS_NAME} is not valid JSON ({error}); rebuild the bundle") from None
    if not isinstance(settings, dict):
        raise ValueError(f"{SETTINGS_NAME} holds {type(settings).__name__}, not the bundle's settings; rebuild the "
                         f"bundle")
    missing = set(REQUIRED_SETTINGS) - set(settings)
    if missing:
        raise ValueError(f"{SETTINGS_NAME} lacks {', '.join(sorted(missing))}; rebuild the bundle")
    for name, (kind, words) in {**REQUIRED_SETTINGS, **OPTIONAL_SETTINGS}.items():
        value = settings.get(name)
        if name in settings and (not isinstance(value, kind) or isinstance(value, bool)):  # (True: an int to Python)
            raise ValueError(f"{SETTINGS_NAME}'s {name} is {json.dumps(value)[:40]}, not {words} (edited by hand?); "
                             f"rebuild the bundle")
    return settings


def _with_lateness(results: dict, metadata: Path, percent_per_day: float) -> dict:
    """`results` less the late penalty that `metadata` (submission_metadata.json, which Gradescope writes beside the
    submission) calls for. Metadata that cannot be read is said in one line of the log, and the submission is graded
    as on time."""
    try:
        late = json.loads(metadata.read_text(encoding="utf-8")) if metadata.is_file() else {}
        return apply_lateness(results, late, percent_per_day)
    except Exception as error:  # another shape (a date that is not ISO 8601, a list, ...), or unreadable
        print(f"Note: {metadata} could not be read ({type(error).__name__}: {error}), so no late penalty was "
              f"applied: graded as on time")
        return results


def _grade(submission: Path, scratch: Path, settings: dict, source: Path, started: float) -> dict:
    from minitorch.exercises.grader.trusted import isolation as sandbox
    from minitorch.exercises.grader.trusted.grading import CHECK_PROCESS_MARGIN, Run, grade_submission

    entry = Entry("submission", find_submission(submission, scratch / "unzipped"))  # first: the student's to fix
    ensure_open_files("grading")
    isolation = sandbox.choose("auto", {"the grader's source": str(Path(source) / "minitorch"),
                                        "the submission": str(submission)})
    print(f"Isolation: {isolation.describe()}")  # the log: instructors see it, students do not
    left = settings["deadline"] - (time.monotonic() - started) - RESULTS_MARGIN - CHECK_PROCESS_MARGIN
    run = Run(settings["exercise_ids"], settings["exercise_seed"], settings["timeout"], max(left, 1.0), isolation,
              Path(source), settings.get("made_from") or "", dict(settings["collected"]))
    results = grade_submission(entry, scratch / "graded", run, slot=0, scratch_root=scratch,
                               log_file=scratch / "check-log.txt")
    for path in (scratch / "graded" / "feedback.md", scratch / "check-log.txt"):  # the log (stdout_visibility)
        if path.is_file():
            print(path.read_text(encoding="utf-8"))
    return for_students(results, settings["exercise_seed"], set(settings.get("hidden_tests", ())),
                        settings.get("hidden_visibility", "after_due_date"))


def for_students(results: dict, seed: int, hidden: set[str] = frozenset(),
                 hidden_visibility: str = "after_due_date") -> dict:
    """`results` as students may see them, in Markdown: each failed test keeps its one-line reason, the `hidden` ones
    (node IDs) get `hidden_visibility`, the summary counts the public tests only. The full output goes to the log,
    which only instructors see; the seed is dropped, and hidden wherever a text names it ("seed 4711")."""
    named = re.compile(rf"(seed\W{{0,3}}){seed}\b", re.IGNORECASE)

    def hide(value):
        if isinstance(value, str):
            return named.sub(r"\1(hidden)", value)
        if isinstance(value, list):
            return [hide(item) for item in value]
        if isinstance(value, dict):
            return {key: hide(item) for key, item in value.items() if key != "exercise_seed"}
        return value

    shown = hide(results)
    for test in shown.get("tests", []):
        test["visibility"] = hidden_visibility if test.get("extra_data", {}).get("nodeid") in hidden else "visible"
        if test.get("status") == "failed":
            print(f"--- {test.get('name')}\n{test.get('output', '')}")  # the log
            test["output"] = _reason(test)
    return {**shown, "output": summary_markdown(shown), "output_format": "md", "visibility": "visible",
            "stdout_visibility": "hidden"}


def summary_markdown(shown: dict) -> str:
    """What a student reads first: per exercise, the public tests passed and their points, and how many hidden tests
    (with their points) wait for the due date, or are never shown (the bundle's --hidden-tests hidden)."""
    tests = shown.get("tests", [])
    hidden_tests = [test for test in tests if test["visibility"] != "visible"]
    later = all(test["visibility"] == "after_due_date" for test in hidden_tests)
    lines = [shown.get("output", ""), "", "| exercise | public tests passed | points | hidden tests |",
             "| --- | --- | ---: | --- |"]
    for number in dict.fromkeys(test.get("number", "") for test in tests):
        public = [t for t in tests if t.get("number", "") == number and t["visibility"] == "visible"]
        hidden = [t for t in hidden_tests if t.get("number", "") == number]
        waiting = (f"{len(hidden)} ({round(sum(t['max_score'] for t in hidden), 6):g} points), "
                   f"{'after the due date' if later else 'never shown'}")
        score, worth = (round(sum(t[key] for t in public), 6) for key in ("score", "max_score"))
        lines.append(f"| {number} | {sum(t['status'] == 'passed' for t in public)} of {len(public)} | "
                     f"{score:g} / {worth:g} | {waiting if hidden else 'none'} |")
    if hidden_tests:
        lines += ["", "The hidden tests check the same exercises on other cases; " + (
            "their results and points are shown after the due date." if later else
            "their results are never shown to students (your instructor sees them).")]
    return "\n".join(lines) if tests else shown.get("output", "")


def _reason(test: dict) -> str:
    """A failed test's one-line reason, in a code block, and how the student sees the whole failure in their copy."""
    message = test.get("extra_data", {}).get("message") or test.get("output", "").split("\n\n")[0]
    first = (message.strip().splitlines() or ["failed"])[0]
    reason, exercise_id = "```\n" + first[:300].replace("`", "'") + "\n```", str(test.get("number", ""))
    if "python -m pytest -m" in first or not re.fullmatch(r"\d+\.\d+", exercise_id):
        return reason  # a stub's message already says how to check
    return (f"{reason}\nTo see the whole failure (on the public inputs), run in your copy: "
            f"`python -m pytest -m ex{exercise_id.replace('.', '_')}`")


def days_late(metadata: dict) -> int:
    """Started days between the due date and the submission (0 if on time): the due date is the latest of the
    assignment's and the student's own (an extension gives a student theirs)."""
    dues = [metadata.get("assignment", {}).get("due_date")]
    dues += [user.get("assignment", {}).get("due_date")
             for user in metadata.get("users") or [] if isinstance(user, dict)]
    dues = [datetime.datetime.fromisoformat(due) for due in dues if due]
    if not metadata.get("created_at") or not dues:
        return 0
    late = (datetime.datetime.fromisoformat(metadata["created_at"]) - max(dues)).total_seconds()
    return 0 if late <= 0 else math.ceil(late / 86_400)


def apply_lateness(results: dict, metadata: dict, percent_per_day: float) -> dict:
    """`results` less `percent_per_day` of the score per started day late, down to 0, as a test of its own (negative
    score, always visible), so that the student sees why."""
    days, score = days_late(metadata), float(results.get("score", 0) or 0)
    if days == 0 or percent_per_day <= 0 or score <= 0:
        return results
    share = min(1.0, days * percent_per_day / 100)
    penalty = round(score * share, 6)
    note = {"name": "late penalty", "score": -penalty, "max_score": 0, "status": "failed", "visibility": "visible",
            "output": f"Submitted {days} day(s) after the due date: {share * 100:g}% of the score ({penalty:g} points) "
                      f"is taken off ({percent_per_day:g}% per started day)."}
    return {**results, "score": round(score - penalty, 6), "tests": [*results.get("tests", []), note]}


def failed_results(message: str) -> dict:
    """A results.json for a submission that could not be graded: score 0, and why."""
    return {"score": 0, "output": message, "output_format": "md", "visibility": "visible",
            "stdout_visibility": "hidden", "tests": []}


def find_submission(folder: Path, unzip_to: Path) -> Path:
    """The student's copy of the book in `folder`: the folder itself, the one folder inside it that holds minitorch/,
    or the same inside the one .zip it holds (unpacked into `unzip_to`)."""
    if not Path(folder).is_dir():
        raise SubmissionError(f"the submission folder {folder} does not exist")
    zips = sorted(path for path in Path(folder).iterdir() if path.suffix.lower() == ".zip" and path.is_file())
    try:
        project = find_project(Path(folder), "it")
    except ExerciseError as error:
        if len(zips) != 1 or "holds no minitorch" not in str(error):
            raise SubmissionError(str(error)) from None
    else:
        another = [path.name for path in zips if _holds_a_copy(path)]
        if another:  # neither is chosen silently, as grade refuses a student's folder beside their .zip
            raise SubmissionError(f"it holds a copy of the project and also {', '.join(map(shown, another))}, which "
                                  f"holds another; submit one of them")
        return project
    try:
        unpack(zips[0], unzip_to)
        return find_project(unzip_to, zips[0].name)
    except ExerciseError as error:
        raise SubmissionError(str(error)) from None


def _holds_a_copy(archive: Path) -> bool:
    """Whether the .zip holds a minitorch/ folder, at its top or one level down (its names read, nothing unpacked)."""
    try:
        with zipfile.ZipFile(archive) as opened:
            return any("minitorch" in unzip_name(name).split("/")[:2] for name in opened.namelist())
    except (zipfile.BadZipFile, OSError, ValueError):
        return False


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minitorch.exercises.grader.trusted.gradescope",
                                     description="Inside a Gradescope autograder: grade $AUTOGRADER_ROOT/submission "
                                                 "(default /autograder) into $AUTOGRADER_ROOT/results/results.json.")
    parser.add_argument("command", choices=["run"])
    parser.parse_args(argv)
    run(Path(os.environ.get("AUTOGRADER_ROOT") or "/autograder"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
