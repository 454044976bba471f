"""Grading on Gradescope: an autograder bundle built from the book (chapter 11).

Gradescope grades code with an *autograder*: a zip the instructor uploads once. The platform unpacks
it into ``/autograder/source`` and runs ``setup.sh`` there, as root, to build the image every
submission is graded in. For each submission it puts the student's files in
``/autograder/submission``, runs ``/autograder/run_autograder`` (a copy of the zip's) and shows the
student ``/autograder/results/results.json``.

    python -m minitorch.exercises gradescope-bundle autograder.zip --only 3.1,3.2 --timeout 60

`build_bundle` writes that zip: ``setup.sh`` (Python, then numpy and pytest pinned to the versions the
bundle was built with, listed in ``grading-requirements.txt``, and bubblewrap if the image allows it;
it says loudly which isolation the image got), ``run_autograder``, the grader's own ``minitorch/`` and
``tests/``, and ``bundle.json``,
which fixes the exercises, the exercise seed, the timeout per test and the deadline of the whole run
when the bundle is built (students never see it), and the graded tests. ``run_autograder`` first makes
the grader's source, the submission and the results folder readable by root only, then calls `run`
(``python3 -m minitorch.exercises.grader.trusted.gradescope run``), which finds the student's copy in the submission
(a folder, or a zip of one), grades it with `minitorch.exercises.grader.trusted.grading.grade_submission` (the
student's code in a sandboxed worker, bubblewrap or a root of its own; the checks in a process of
the grader's), and writes ``results.json`` atomically. If the deadline comes, the tests not run fail as
timed out and results.json is written all the same; if anything fails on the way, results.json says
so, with score 0, rather than leave the student an empty page.

What students see: results.json has ``output_format: "md"``; its output is a Markdown summary of the
public tests. Public tests are "visible"; hidden tests (`hidden_tests`: the graded tests no student
edition holds) are "after_due_date" (or "hidden", if the bundle says so), and so are their points in the
summary. Lateness (`late_penalty`), from ``submission_metadata.json``: a submission made after the due
date (the student's own, if Gradescope gave them an extension) loses LATE_PENALTY percent of its score
per started day late, down to 0; the test scores stay as they are and a negative "late penalty" test
says what was taken off.

``AUTOGRADER_ROOT`` (default ``/autograder``) moves the whole layout, so that the bundle can be run
and tested on any machine: ``$AUTOGRADER_ROOT/{source,submission,results}``.
"""

from __future__ import annotations

import argparse
import datetime
import fnmatch
import json
import math
import os
import platform
import re
import secrets
import sys
import tempfile
import time
import traceback
import zipfile
from pathlib import Path

from minitorch.exercises.edition import git_commit
from minitorch.exercises.registry import (MANIFEST, NOT_COPIED, ROOT, Exercise, ExerciseError,
                                          secret_output_refused)
from minitorch.exercises.grader.trusted.submissions import Entry, find_project, unpack
from minitorch.tools.commands import ensure_open_files
from minitorch.outputs import OutputPathError, OwnFile, check_output_file, write_atomically

BUNDLE_PATHS = ("minitorch", "tests", "requirements.txt", "README.md", "LICENSE")  # the grader's, from the book
SETTINGS_NAME = "bundle.json"  # in the bundle: seed, exercises, timeout, deadline; fixed when it is built
PINNED_NAME = "grading-requirements.txt"  # in the bundle: what setup.sh installs, pinned to the builder's versions
GRADING_PACKAGES = ("numpy", "pytest")  # all that grading imports (the chapters' plots and notebooks are not run)
HIDDEN_VISIBILITIES = ("after_due_date", "hidden")  # Gradescope's settings for a test students do not see at once
HIDDEN_TEST_FOLDER = "hidden"  # a graded test under a folder of this name (tests/hidden/...) is hidden
SECONDS_PER_DAY = 86_400.0
DEFAULT_ROOT = "/autograder"
PUBLIC_SEED = 0  # the seed the students' own test runs use
PLATFORM_LIMIT = 600.0  # seconds: Gradescope stops an autograder after 10 minutes unless the course raises it
DEFAULT_DEADLINE = 540.0  # seconds: the bundle stops grading here and writes what it has, before the platform
START_UP = 30.0  # seconds to start, find and unpack the copy, before the first test
RESULTS_MARGIN = 20.0  # seconds kept after the check process to write results.json

SETUP_SH = """\
#!/bin/sh
# Gradescope runs this once, as root, in /autograder/source, to build the image that grades every
# submission: Python 3, then numpy and pytest at the versions the bundle was built with
# (grading-requirements.txt), then bubblewrap if the image allows it. Nothing else.
set -eu
cd "$(dirname "$0")"
apt-get update
if ! command -v python3 >/dev/null 2>&1 || ! python3 -m pip --version >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 python3-pip
fi
if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
    echo "setup.sh: the book needs Python 3.10 or newer; this image has $(python3 --version 2>&1)." \\
         "Choose a base image whose Python takes the pinned versions" \\
         "(the first line of grading-requirements.txt names the builder's), e.g. Ubuntu 24.04." >&2
    exit 1
fi
# The image exists only to grade, so pip may install beside the system's Python (Ubuntu 24.04 asks first).
if ! PIP_BREAK_SYSTEM_PACKAGES=1 PIP_ROOT_USER_ACTION=ignore \\
    python3 -m pip install --no-cache-dir -r grading-requirements.txt; then
    echo "setup.sh: pip could not install the pinned versions of grading-requirements.txt on" \\
         "$(python3 --version 2>&1); the bundle was built with $(head -n 1 grading-requirements.txt | cut -c3-)." \\
         "Choose a base image with that Python (or newer), or build the bundle where Python matches the image." >&2
    exit 1
fi
# bubblewrap sandboxes the student's code if the platform's container allows it; without it the grader runs
# the student's code as a user of its own in a root of its own (chroot). Either way this says which, loudly.
if ! command -v bwrap >/dev/null 2>&1; then
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends bubblewrap; then
        echo "setup.sh: apt-get could not install bubblewrap (see above)" >&2
    fi
fi
# (as the grader starts it: as a user of the student's own, here nobody's uid)
if command -v bwrap >/dev/null 2>&1 && setpriv --reuid=65534 --regid=65534 --clear-groups \\
    bwrap --unshare-all --die-with-parent --ro-bind / / true 2>/dev/null; then
    echo "==== setup.sh: ISOLATION: bubblewrap works here: each student's code runs in a sandbox ===="
else
    echo "==== setup.sh: ISOLATION WARNING: bubblewrap is missing or cannot make a sandbox in this container;" \\
         "each student's code will run as a user of its own in a root of its own instead (chroot; weaker:" \\
         "it shares the container's network) ===="
fi
python3 -c 'import numpy, pytest; print("setup.sh: numpy", numpy.__version__, "and pytest", pytest.__version__)'
"""

RUN_AUTOGRADER = """\
#!/bin/sh
# Gradescope runs this for every submission (copied to /autograder/run_autograder). It grades
# $AUTOGRADER_ROOT/submission (default /autograder/submission) with the grader in
# $AUTOGRADER_ROOT/source and writes $AUTOGRADER_ROOT/results/results.json, using the python3 first on PATH.
AUTOGRADER_ROOT="$(cd "${AUTOGRADER_ROOT:-/autograder}" && pwd)" || exit 1  # absolute: we cd below
export AUTOGRADER_ROOT
results="$AUTOGRADER_ROOT/results"
scratch="$AUTOGRADER_ROOT/tmp"  # every temporary file stays inside the layout
mkdir -p "$results" "$scratch"
rm -f "$results/results.json"
# The student's code runs sandboxed, as another user: whatever the sandbox, root keeps the grader's answers and
# seed, the submission's own files and the results to itself.
chmod 700 "$AUTOGRADER_ROOT/source" "$AUTOGRADER_ROOT/submission" 2>/dev/null
chmod 711 "$scratch"  # a worker may pass through to its own scratch folder inside, and list nothing
chmod 755 "$results"
cd "$AUTOGRADER_ROOT/source" || exit 1
TMPDIR="$scratch" PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$AUTOGRADER_ROOT/source${PYTHONPATH:+:$PYTHONPATH}" \\
    python3 -m minitorch.exercises.grader.trusted.gradescope run
status=$?
rm -rf "$scratch"
if [ ! -s "$results/results.json" ]; then  # python3 itself failed: the student still gets a page that says so
    printf '{"score": 0, "output": "The autograder failed before it could grade (python3 exited with status %s). \
Nothing was graded; please tell your instructor.", "tests": []}\\n' \\
        "$status" > "$results/results.json"
fi
exit 0
"""


class SubmissionError(ValueError):
    """The submission holds no gradable copy of the book; the message tells the student what to submit."""


# ----------------------------------------------------------------------
# building the bundle


def worst_case(exercise_count: int, timeout: float) -> float:
    """Seconds a copy whose every exercise hangs could take: each exercise's first DOWNS_PER_EXERCISE tests
    time out (the rest then fail at once), after START_UP."""
    from minitorch.exercises.grader.trusted.worker_client import DOWNS_PER_EXERCISE

    return START_UP + exercise_count * DOWNS_PER_EXERCISE * timeout


def build_bundle(out_zip, exercises: list[Exercise], *, seed: int | None = None, timeout: float,
                 deadline: float = DEFAULT_DEADLINE, over_deadline: bool = False, root: Path = ROOT,
                 hidden_visibility: str = "after_due_date", late_penalty: float = 10.0, force: bool = False) -> dict:
    """Write the autograder zip for `exercises` to `out_zip` (atomically, its folders created) and return its
    settings.

    `seed` None draws a fresh secret one of 128 bits: the graded tests' inputs are then ones no student has
    seen, and no search can find it. `hidden_visibility` is when students see the hidden tests (the public
    ones they see at once); `late_penalty` the percent of the score taken off per started day late. `timeout`
    (seconds) limits each test; `deadline` the whole run, below the platform's own limit: a bundle whose worst
    case exceeds it is refused unless `over_deadline` (the tests the deadline cuts off then fail as timed out).
    `root` must be the full book, not a student edition."""
    from minitorch.exercises.grader.trusted.grading import collect_tests

    root = Path(root).resolve()
    try:
        out = check_output_file(out_zip, "the bundle", inputs=[root / name for name in BUNDLE_PATHS], own=OWN_BUNDLE,
                                force=force)  # a zip of the user's own is replaced only with --force
    except OutputPathError as error:
        raise ExerciseError(str(error)) from None
    if out.suffix != ".zip":
        raise ExerciseError(f"the bundle is a zip file; name it something.zip, not {out.name}")
    if out.is_relative_to(root):  # as student-edition refuses: one `git add .` would hand it to the students
        raise ExerciseError(f"the bundle {out} would lie inside the project {root}: it holds the seed, the hidden "
                            f"tests and every answer; write it outside, e.g. {root.parent / out.name}")
    if (root / MANIFEST).exists():
        raise ExerciseError(f"{root} is a student edition ({MANIFEST} exists); build the bundle from the "
                            f"full book, whose library holds the reference solutions")
    secret_output_refused(out, "the bundle")
    if not exercises:
        raise ExerciseError("no exercises chosen; the bundle would grade nothing")
    for name, value in (("--timeout", timeout), ("--deadline", deadline)):
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise ExerciseError(f"{name} must be a finite number of seconds > 0, got {value}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise ExerciseError(f"--exercise-seed must be a non-negative whole number, got {seed}")
    if hidden_visibility not in HIDDEN_VISIBILITIES:
        raise ExerciseError(f"--hidden-tests must be one of {', '.join(HIDDEN_VISIBILITIES)}, got {hidden_visibility}")
    if not (isinstance(late_penalty, (int, float)) and 0 <= late_penalty <= 100):
        raise ExerciseError(f"--late-penalty must be a percent from 0 to 100, got {late_penalty}")
    worst = worst_case(len(exercises), timeout)
    if worst > deadline and not over_deadline:
        raise ExerciseError(f"a copy whose {len(exercises)} exercises all hang would take about {worst:g} s with "
                            f"--timeout {timeout:g}, beyond the deadline of {deadline:g} s: lower --timeout, grade "
                            f"fewer exercises, raise --deadline (and the platform's own timeout), or pass "
                            f"--over-deadline to accept that such a copy's last tests fail as timed out")
    if deadline > PLATFORM_LIMIT - 30 and not over_deadline:
        raise ExerciseError(f"--deadline {deadline:g} s leaves Gradescope's default limit of {PLATFORM_LIMIT:g} s no "
                            f"time to spare: raise the assignment's timeout on Gradescope first, then pass "
                            f"--over-deadline")
    ids = [exercise.id for exercise in exercises]
    collected = collect_tests(root, ids)  # the graded tests: fixed with the bundle, not collected per student
    settings = {
        "exercise_ids": ids,
        "points": sum(exercise.points for exercise in exercises),
        "exercise_seed": 2**128 + secrets.randbits(128) if seed is None else seed,  # 128 secret bits, never 0
        "timeout": timeout,
        "deadline": deadline,
        "worst_case": worst,
        "collected": collected,
        "hidden_tests": hidden_tests(collected),
        "hidden_points": hidden_points(exercises, collected),
        "hidden_visibility": hidden_visibility,
        "late_penalty": float(late_penalty),
        "packages": pinned_packages(),
        "made_from": git_commit(root),
        "made_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    descriptor, name = tempfile.mkstemp(prefix=f".{out.name[:40]}.", suffix=".partial", dir=out.parent)
    os.close(descriptor)  # a name of its own (no file of yours is taken), that fits beside any legal name
    partial = Path(name)
    try:
        with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
            _add_text(bundle, "setup.sh", SETUP_SH, executable=True)
            _add_text(bundle, PINNED_NAME, f"# Python {platform.python_version()}\n" + "".join(
                f"{name}=={version}\n" for name, version in settings["packages"].items()))
            _add_text(bundle, "run_autograder", RUN_AUTOGRADER, executable=True)
            _add_text(bundle, SETTINGS_NAME, json.dumps(settings, indent=1) + "\n")
            for path in _bundled_files(root):
                bundle.write(path, path.relative_to(root).as_posix())
        os.replace(partial, out)
    finally:
        partial.unlink(missing_ok=True)
    return settings


def _is_bundle(path: Path) -> bool:
    """Whether `path` is a zip that build_bundle wrote: it holds the bundle's settings, SETTINGS_NAME."""
    try:
        with zipfile.ZipFile(path) as archive:
            return SETTINGS_NAME in archive.namelist()
    except (zipfile.BadZipFile, OSError):  # a text file named .zip, an empty file: not ours, so never replaced
        return False


OWN_BUNDLE = OwnFile(f"a Gradescope bundle that gradescope-bundle wrote (a zip holding {SETTINGS_NAME})", _is_bundle)


def pinned_packages() -> dict[str, str]:
    """{package: version} of what grading needs, as installed here (the bundle's builder): numpy, pytest, and
    the packages pytest itself requires, so that the image grades with what was tested."""
    from importlib import metadata

    from packaging.requirements import Requirement

    names, pinned = list(GRADING_PACKAGES), {}
    while names:
        name = names.pop(0)
        if name.lower() in pinned:
            continue
        try:
            pinned[name.lower()] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue  # a backport this Python does not need (exceptiongroup, tomli)
        if name == "pytest":
            for text in metadata.requires("pytest") or []:
                requirement = Requirement(text)
                if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                    names.append(requirement.name)
    return pinned


def hidden_tests(collected: dict[str, str]) -> list[str]:
    """The node IDs, among `collected`, of the graded tests that no student edition holds: those in a folder
    named HIDDEN_TEST_FOLDER, or in a file the edition leaves out (`registry.INSTRUCTOR_ONLY`)."""
    from minitorch.exercises import registry

    left_out = set(registry.INSTRUCTOR_ONLY)
    hidden = []
    for nodeid in collected:
        path = nodeid.split("::", 1)[0]
        if HIDDEN_TEST_FOLDER in Path(path).parts[:-1] or path in left_out:
            hidden.append(nodeid)
    return hidden


def hidden_points(exercises: list[Exercise], collected: dict[str, str]) -> float:
    """The points the hidden tests among `collected` carry (`registry.points_per_test`, as results.json scores)."""
    from minitorch.exercises import registry

    return round(sum(registry.part_points(exercise, any(owner == exercise.id and registry.is_hidden_test(nodeid)
                                                         for nodeid, owner in collected.items()))[1]
                     for exercise in exercises), 6)


def _bundled_files(root: Path) -> list[Path]:
    files = []
    for name in BUNDLE_PATHS:
        path = root / name
        candidates = sorted(path.rglob("*")) if path.is_dir() else [path] if path.is_file() else []
        files += [file for file in candidates if file.is_file() and not _ignored(file.relative_to(root))]
    return files


def _ignored(relative: Path) -> bool:
    return any(fnmatch.fnmatch(part, pattern) for part in relative.parts for pattern in NOT_COPIED)


def _add_text(bundle: zipfile.ZipFile, name: str, text: str, executable: bool = False) -> None:
    info = zipfile.ZipInfo(name, date_time=time.localtime()[:6])
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = (0o100755 if executable else 0o100644) << 16  # unzip keeps the mode: sh can run it
    bundle.writestr(info, text)


# ----------------------------------------------------------------------
# running in the autograder


def run(autograder_root: Path, source: Path = ROOT) -> dict:
    """Grade ``autograder_root/submission`` with the grader in `source`; write ``autograder_root/results/results.json``.

    Always writes a results.json: a submission without the book in it, or a crash of the grader itself,
    gives score 0 and says what happened."""
    started = time.monotonic()
    results_path = Path(autograder_root) / "results" / "results.json"
    settings: dict = {}
    try:
        settings = read_settings(source)
        with tempfile.TemporaryDirectory(prefix="minitorch-grading-") as scratch:
            os.chmod(scratch, 0o711)
            results = _grade(Path(autograder_root) / "submission", Path(scratch), settings, source, started)
    except SubmissionError as error:
        results = failed_results(f"Your submission could not be graded: {error}")
    except Exception as error:  # the grader's fault, not the student's: say so, and keep the traceback for the log
        traceback.print_exc()
        results = failed_results(f"The autograder failed: {type(error).__name__}: {error}. Nothing was graded; "
                                 f"please tell your instructor.")
    try:
        results = apply_lateness(results, read_metadata(Path(autograder_root)), settings.get("late_penalty", 0.0))
    except Exception:  # metadata of another shape: graded as on time, and the log says why
        traceback.print_exc()
    results["execution_time"] = round(time.monotonic() - started)
    write_results(results_path, results)
    print(results.get("output", ""))
    return results


def read_settings(source: Path) -> dict:
    """bundle.json of the bundle in `source`, checked."""
    path = Path(source) / SETTINGS_NAME
    settings = json.loads(path.read_text(encoding="utf-8"))
    missing = {"exercise_ids", "exercise_seed", "timeout", "deadline", "collected"} - set(settings)
    if missing:
        raise ValueError(f"{path} lacks {', '.join(sorted(missing))}; rebuild the bundle")
    return settings


def _grade(submission: Path, scratch: Path, settings: dict, source: Path, started: float) -> dict:
    from minitorch.exercises.grader.trusted import isolation as sandbox
    from minitorch.exercises.grader.trusted.grading import CHECK_PROCESS_MARGIN, Run, grade_submission

    try:  # first: a submission without the book is the student's to fix, whatever the isolation
        entry = Entry("submission", find_submission(submission, scratch / "unzipped"))
    except ExerciseError as error:
        raise SubmissionError(str(error)) from None
    guarded = {"the grader's source": str(Path(source) / "minitorch"), "the submission": str(submission)}
    ensure_open_files("grading")
    isolation = sandbox.choose("auto", guarded)
    print(f"Isolation: {isolation.describe()}")  # the log: instructors see it, students do not
    left = settings["deadline"] - (time.monotonic() - started) - RESULTS_MARGIN - CHECK_PROCESS_MARGIN
    run = Run(settings["exercise_ids"], settings["exercise_seed"], settings["timeout"], max(left, 1.0), isolation,
              Path(source), settings.get("made_from") or "", dict(settings["collected"]))
    results = grade_submission(entry, scratch / "graded", run, slot=0, scratch_root=scratch,
                               log_file=scratch / "check-log.txt")
    for name in ("feedback.md", "check-log.txt"):  # the log: instructors see it, students do not (stdout_visibility)
        path = scratch / ("graded" if name == "feedback.md" else "") / name
        if path.is_file():
            print(path.read_text(encoding="utf-8"))
    return for_students(results, settings["exercise_seed"], set(settings.get("hidden_tests", ())),
                        settings.get("hidden_visibility", "after_due_date"))


def for_students(results: dict, seed: int, hidden: set[str] = frozenset(),
                 hidden_visibility: str = "after_due_date") -> dict:
    """`results` as students may see them, in Markdown. Each test keeps its score and the one-line reason it
    failed, plus how to see the whole failure on the public inputs; public tests are visible, the `hidden`
    ones (node IDs) get `hidden_visibility`; the output sums up the public tests only. The full output (it
    may quote the hidden-seed inputs) goes to the log, which only instructors see; the seed is dropped, and
    hidden wherever a text names it ("seed 4711", "--exercise-seed=4711")."""
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
        is_hidden = test.get("extra_data", {}).get("nodeid") in hidden
        test["visibility"] = hidden_visibility if is_hidden else "visible"
        if test.get("status") == "failed":
            print(f"--- {test.get('name')}\n{test.get('output', '')}")  # the log
            test["output"] = _reason(test)
    return {**shown, "output": summary_markdown(shown), "output_format": "md", "visibility": "visible",
            "stdout_visibility": "hidden"}


def summary_markdown(shown: dict) -> str:
    """What a student reads first: the points of the public tests per exercise, and how many hidden tests
    (with their points) wait for the due date. Written from the tests' visibility, so it reveals no more."""
    tests = shown.get("tests", [])
    if not tests:
        return shown.get("output", "")
    lines = [f"{shown.get('output', '')}", "", "| exercise | public tests passed | points | hidden tests |",
             "| --- | --- | ---: | --- |"]
    for number in dict.fromkeys(test.get("number", "") for test in tests):
        own = [test for test in tests if test.get("number", "") == number]
        public = [test for test in own if test["visibility"] == "visible"]
        hidden = [test for test in own if test["visibility"] != "visible"]
        earned = round(sum(test["score"] for test in public), 6)
        worth = round(sum(test["max_score"] for test in public), 6)
        waiting = f"{len(hidden)} ({round(sum(t['max_score'] for t in hidden), 6):g} points), after the due date" \
            if hidden else "none"
        lines.append(f"| {number} | {sum(t['status'] == 'passed' for t in public)} of {len(public)} | "
                     f"{earned:g} / {worth:g} | {waiting} |")
    if any(test["visibility"] != "visible" for test in tests):
        lines += ["", "The hidden tests check the same exercises on other cases; their results and points are shown "
                      "after the due date."]
    return "\n".join(lines)


def _reason(test: dict) -> str:
    """A failed test's one-line reason (as Markdown: in a code block), and how the student sees the whole
    failure in their own copy."""
    message = test.get("extra_data", {}).get("message") or test.get("output", "").split("\n\n")[0]
    lines = message.strip().splitlines() or ["failed"]
    reason = "```\n" + lines[0][:300].replace("`", "'") + "\n```"
    exercise_id = str(test.get("number", ""))
    if "python -m pytest -m" in lines[0] or not re.fullmatch(r"\d+\.\d+", exercise_id):
        return reason  # a stub's message already says how to check
    return (f"{reason}\nTo see the whole failure (on the public inputs), run in your copy: "
            f"`python -m pytest -m ex{exercise_id.replace('.', '_')}`")


def read_metadata(autograder_root: Path) -> dict:
    """submission_metadata.json (Gradescope writes it beside the submission), or {} if there is none."""
    path = Path(autograder_root) / "submission_metadata.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def days_late(metadata: dict) -> int:
    """Started days between the due date and the submission (0 if on time or no due date). The due date is
    the latest of the assignment's and of the students' own (an extension gives a student theirs)."""
    created = metadata.get("created_at")
    dues = [metadata.get("assignment", {}).get("due_date")]
    dues += [user.get("assignment", {}).get("due_date") for user in metadata.get("users", []) or []
             if isinstance(user, dict)]
    dues = [datetime.datetime.fromisoformat(due) for due in dues if due]
    if not created or not dues:
        return 0
    late = (datetime.datetime.fromisoformat(created) - max(dues)).total_seconds()
    return 0 if late <= 0 else math.ceil(late / SECONDS_PER_DAY)


def apply_lateness(results: dict, metadata: dict, percent_per_day: float) -> dict:
    """`results` with the late penalty: `percent_per_day` of the score per started day late, down to 0. The
    penalty is a test of its own (negative score, always visible), so the student sees why."""
    days = days_late(metadata)
    score = float(results.get("score", 0) or 0)
    if days == 0 or percent_per_day <= 0 or score <= 0:
        return results
    share = min(1.0, days * percent_per_day / 100)
    penalty = round(score * share, 6)
    note = {"name": "late penalty", "score": -penalty, "max_score": 0, "status": "failed", "visibility": "visible",
            "output": f"Submitted {days} day(s) after the due date: {share:.0%} of the score ({penalty:g} points) is "
                      f"taken off ({percent_per_day:g}% per started day)."}
    return {**results, "score": round(score - penalty, 6), "tests": [*results.get("tests", []), note]}


def failed_results(message: str) -> dict:
    """A results.json for a submission that could not be graded: score 0, and why."""
    return {"score": 0, "output": message, "output_format": "md", "visibility": "visible",
            "stdout_visibility": "hidden", "tests": []}


def write_results(path: Path, results: dict) -> None:
    """Write results.json atomically: Gradescope never reads half a file."""
    write_atomically(path, json.dumps(results, indent=1, ensure_ascii=False) + "\n")


# ----------------------------------------------------------------------
# finding the student's copy


def find_submission(folder: Path, unzip_to: Path) -> Path:
    """The student's copy of the book in `folder`: the folder itself, the one folder inside it that holds
    minitorch/, or the same inside the one .zip it holds (unpacked into `unzip_to`)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise SubmissionError(f"the submission folder {folder} does not exist")
    try:
        return find_project(folder, "it")
    except ExerciseError as error:
        zips = sorted(path for path in folder.iterdir() if path.suffix.lower() == ".zip" and path.is_file())
        if len(zips) != 1 or "holds no minitorch" not in str(error):
            raise SubmissionError(str(error)) from None
    try:
        unpack(zips[0], unzip_to)
        return find_project(unzip_to, zips[0].name)
    except ExerciseError as error:
        raise SubmissionError(str(error)) from None


# ----------------------------------------------------------------------
# command line: python -m minitorch.exercises.grader.trusted.gradescope run (what run_autograder calls)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minitorch.exercises.grader.trusted.gradescope",
                                     description="Inside a Gradescope autograder: grade the submission.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("run", help="grade $AUTOGRADER_ROOT/submission (default /autograder) into "
                                    "$AUTOGRADER_ROOT/results/results.json")
    parser.parse_args(argv)
    run(Path(os.environ.get("AUTOGRADER_ROOT") or DEFAULT_ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
