"""Specification of the Gradescope autograder bundle (minitorch/exercises/grader/trusted/gradescope.py, chapter 00).

Fast tests build bundles from a tiny project and exercise their parts: what the zip holds, what it
refuses, the shell scripts, finding the student's copy in a submission, and the results.json written
when grading cannot happen. The slow tests unpack a real bundle into a temporary Gradescope layout
(``autograder/{source,submission,results}``) and run ``run_autograder`` on three submissions.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import stat
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from minitorch.exercises.edition import TEMPLATES
from minitorch.exercises.registry import Exercise, ExerciseError, is_hidden_test, load_exercises, replace_bodies
from minitorch.exercises.grader.trusted import gradescope
from minitorch.exercises.grader.trusted import grading
from minitorch.exercises.grader.trusted import isolation as sandbox
from minitorch.exercises.grader.trusted import submissions
from minitorch.exercises.grader.trusted.gradescope import SubmissionError, build_bundle, find_submission

METADATA = {"1.2": Exercise("1.2", "doubling", 2, "minitorch/ops.py", "double"),
            "1.1": Exercise("1.1", "tripling", 1, "minitorch/ops.py", "triple")}
LIBRARY = "def double(x):\n    return 2 * x\n\n\ndef triple(x):\n    return 3 * x\n"


TINY_TESTS = """\
import pytest


@pytest.mark.exercise("1.2")
def test_double(student):
    pass


@pytest.mark.exercise("1.1")
def test_triple(student):
    pass
"""


def tiny_book(folder: Path) -> Path:
    """A project shaped like the book: a library with two exercises, the real conftest and registry, graded
    tests, requirements, and some clutter."""
    real = Path(__file__).resolve().parents[2]
    files = {"minitorch/__init__.py": "", "minitorch/ops.py": LIBRARY,
             "minitorch/exercises/__init__.py": "", "minitorch/exercises/registry.py":
             (real / "minitorch" / "exercises" / "registry.py").read_text(),
             "tests/conftest.py": (real / "tests" / "conftest.py").read_text(),
             "tests/course_plugin.py": (real / "tests" / "course_plugin.py").read_text(),
             "tests/test_ops.py": TINY_TESTS, "requirements.txt": "numpy\n",
             "README.md": "# tiny\n", "LICENSE": "MIT\n", "chapters/01.ipynb": "{}",
             "minitorch/__pycache__/ops.cpython-311.pyc": "", ".git/config": "[core]\n"}
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def tiny_exercises(root: Path, *ids: str):
    return [exercise for exercise in load_exercises(root, METADATA) if not ids or exercise.id in ids]


def unpack_like_gradescope(bundle: Path, source: Path) -> None:
    """Unzip as the platform's unzip does: members keep the file modes stored in the zip."""
    with zipfile.ZipFile(bundle) as opened:
        for member in opened.infolist():
            path = Path(opened.extract(member, source))
            mode = member.external_attr >> 16
            if mode and not member.is_dir():
                path.chmod(stat.S_IMODE(mode))


# ----------------------------------------------------------------------
# building the bundle


def test_the_bundle_holds_the_scripts_the_settings_and_the_graders_library_and_tests_only(tmp_path):
    root = tiny_book(tmp_path / "book")
    settings = build_bundle(tmp_path / "autograder.zip", tiny_exercises(root, "1.1"), seed=4711, timeout=7.5,
                            root=root)
    with zipfile.ZipFile(tmp_path / "autograder.zip") as bundle:
        names = set(bundle.namelist())
        stored = json.loads(bundle.read("bundle.json"))
        modes = {name: bundle.getinfo(name).external_attr >> 16 for name in ("setup.sh", "run_autograder")}
    assert names == {"setup.sh", "run_autograder", "bundle.json", "grading-requirements.txt",
                     "minitorch/__init__.py", "minitorch/ops.py",
                     "minitorch/exercises/__init__.py", "minitorch/exercises/registry.py", "tests/conftest.py",
                     "tests/course_plugin.py", "tests/test_ops.py", "requirements.txt", "README.md", "LICENSE"}, (
        "the bundle must hold the scripts at its top, the grader's minitorch/ and tests/, requirements, README, "
        "LICENSE, and no chapters, caches or git history")
    assert all(mode & 0o111 for mode in modes.values()), f"setup.sh and run_autograder must be executable: {modes}"
    assert stored == settings
    assert (stored["exercise_ids"], stored["points"], stored["exercise_seed"], stored["timeout"]) == (
        ["1.1"], 1, 4711, 7.5)
    assert stored["collected"] == {"tests/test_ops.py::test_triple": "1.1"}, "the graded tests are fixed in the bundle"
    assert stored["deadline"] == gradescope.DEFAULT_DEADLINE < gradescope.PLATFORM_LIMIT
    assert not list(tmp_path.glob(".*partial")), "the partial zip must be renamed into place, not left beside it"


def test_without_a_seed_each_bundle_draws_a_fresh_one_that_is_never_the_public_seed(tmp_path):
    root = tiny_book(tmp_path / "book")
    seeds = {build_bundle(tmp_path / f"{n}.zip", tiny_exercises(root), timeout=5, root=root)["exercise_seed"]
             for n in range(3)}
    assert len(seeds) == 3 and gradescope.PUBLIC_SEED not in seeds, seeds
    assert min(seeds) >= 2**128, f"a seed of fewer than 128 bits can be searched for: {seeds}"


def test_the_bundles_folders_are_created(tmp_path):
    root = tiny_book(tmp_path / "book")
    out = tmp_path / "outside" / "week-3" / "autograder.zip"
    build_bundle(out, tiny_exercises(root), seed=1, timeout=5, root=root)
    assert zipfile.is_zipfile(out)


def test_the_bundle_is_readable_by_its_owner_only_whatever_the_umask(tmp_path):
    """The zip holds the secret seed and the hidden tests: under the usual umask 022 it was -rw-r--r--, so any user
    of a shared server could read them (grade's run.json is 0600 for the same reason)."""
    root = tiny_book(tmp_path / "book")
    before = os.umask(0o022)
    try:
        build_bundle(tmp_path / "autograder.zip", tiny_exercises(root), seed=1, timeout=5, root=root)
    finally:
        os.umask(before)
    mode = stat.S_IMODE((tmp_path / "autograder.zip").stat().st_mode)
    assert mode == 0o600, f"the bundle must be owner-only (0600), not {mode:o}: it holds the seed and hidden tests"


@pytest.mark.parametrize("deadline", [1.0, 60.0])
def test_a_deadline_too_short_for_any_test_is_refused_even_over_the_deadline(tmp_path, deadline):
    """--over-deadline accepts that a copy which hangs loses its last tests; a --deadline of 1 s left no time for
    even one test of any copy, so every student would have scored 0 with no word at build time."""
    root = tiny_book(tmp_path / "book")
    with pytest.raises(ExerciseError, match=rf"--deadline {deadline:g} s leaves no time to grade.*at least 85"):
        build_bundle(tmp_path / "autograder.zip", tiny_exercises(root), seed=1, timeout=5, deadline=deadline,
                     over_deadline=True, root=root)
    assert not (tmp_path / "autograder.zip").exists(), "a refused bundle must not be written"


@pytest.mark.parametrize("name, change, message", [
    ("autograder.tar", None, "zip file"),
    ("minitorch/autograder.zip", None, "lies inside the input"),
    ("a-folder", None, "is a folder"),
    ("autograder.zip", "edition", "student edition"),
    ("autograder.zip", "no exercises", "no exercises"),
    ("autograder.zip", "timeout", "--timeout"),
    ("autograder.zip", "nan timeout", "--timeout"),
    ("autograder.zip", "seed", "--exercise-seed"),
    ("autograder.zip", "slow", "--over-deadline"),
    ("autograder.zip", "deadline", "Gradescope's default limit"),
])
def test_the_bundle_refuses_bad_requests_and_writes_nothing(tmp_path, name, change, message):
    root = tiny_book(tmp_path / "book")
    (tmp_path / "a-folder").mkdir()
    exercises, timeout, seed, deadline = tiny_exercises(root), 5.0, 1, gradescope.DEFAULT_DEADLINE
    if change == "edition":
        (root / gradescope.MANIFEST).parent.mkdir(parents=True, exist_ok=True)
        (root / gradescope.MANIFEST).write_text('{"handed_out": ["1.2"]}')
    exercises = [] if change == "no exercises" else exercises
    timeout = {"timeout": 0.0, "nan timeout": float("nan"), "slow": 300.0}.get(change, timeout)
    seed = -1 if change == "seed" else seed
    deadline = 590.0 if change == "deadline" else deadline
    before = sorted(tmp_path.rglob("*"))
    with pytest.raises(ExerciseError, match=message):
        build_bundle(root / name if name.startswith("minitorch/") else tmp_path / name, exercises, seed=seed,
                     timeout=timeout, deadline=deadline, root=root)
    assert sorted(tmp_path.rglob("*")) == before


@pytest.mark.parametrize("place", ["autograder.zip", "figures/autograder.zip", "tests/x/autograder.zip"])
def test_the_bundle_is_refused_anywhere_inside_the_project(tmp_path, place):
    """As student-edition refuses the same place: the zip holds the seed, the hidden tests and every answer."""
    root = tiny_book(tmp_path / "book")
    with pytest.raises(ExerciseError, match="would lie inside the project|lies inside the input"):
        build_bundle(root / place, tiny_exercises(root), seed=1, timeout=5, root=root)
    assert not (root / place).exists()


def test_what_gradescope_shows_at_once_holds_no_input_a_hostile_copy_quoted(tmp_path):
    """A copy whose function raised an error quoting its own arguments had the seeded inputs shown in a visible
    test's output at once, the same on every resubmission."""
    root = tiny_book(tmp_path / "book")
    run = grading.Run(["1.2"], 4711, 5.0, 60.0, sandbox.Isolation("none"), root, "v",
                      known_tests={"tests/test_ops.py::test_double": "1.2"})
    results = {"tests/test_ops.py::test_double": {"status": "failed",
                                                  "message": "ValueError: double got [0.6931, 4.2217]"}}
    graded = grading.results_json("submission", run, results, grading.StudentFiles(handed_out=["1.2"]), 1.0)
    shown = gradescope.for_students(graded, seed=4711)
    assert "0.6931" not in json.dumps(shown), json.dumps(shown, indent=1)
    output = shown["tests"][0]["output"]
    assert "raised ValueError (the test: double)" in output and "python -m pytest -m ex1_2" in output, output


def test_the_command_line_writes_a_bundle_for_the_chosen_exercises(tmp_path):
    out = tmp_path / "autograder.zip"
    seed = "73914286"  # (digits no path prints: with 99, pytest's 99th temporary folder, pytest-99, failed the test)
    completed = subprocess.run([sys.executable, "-m", "minitorch.exercises", "gradescope-bundle", str(out),
                                "--only", "1.2", "--chapter", "4", "--exercise-seed", seed, "--timeout", "9"],
                               capture_output=True, text=True, timeout=120)
    if completed.returncode != 0 and "student edition" in completed.stderr:
        pytest.skip("the minitorch under test is a student edition; bundles are built from the full book")
    assert completed.returncode == 0, completed.stderr
    with zipfile.ZipFile(out) as bundle:
        settings = json.loads(bundle.read("bundle.json"))
    assert settings["exercise_ids"] == ["1.2", "4.1"] and settings["exercise_seed"] == int(seed) and \
        settings["timeout"] == 9
    assert seed not in completed.stdout, "the seed is fixed in the bundle, not printed"
    claim = "a fresh secret exercise seed"
    assert claim not in completed.stdout and "the exercise seed you gave" in completed.stdout, (
        f"a bundle built with --exercise-seed must not claim a fresh secret seed:\n{completed.stdout}")
    public = subprocess.run([sys.executable, "-m", "minitorch.exercises", "gradescope-bundle", str(out), "--only",
                             "1.2", "--exercise-seed", "0"], capture_output=True, text=True, timeout=120)
    warning = "WARNING: --exercise-seed 0 is the seed of the students'"
    assert claim not in public.stdout and warning in public.stdout, public.stdout
    worst = gradescope.START_UP + 2 * 2 * 9  # two exercises, each cut off after two timeouts
    assert f"about {worst:g} s" in completed.stdout and "stops grading at 540 s" in completed.stdout, (
        f"the printed worst case should allow each hung exercise two timeouts, and name the deadline:\n"
        f"{completed.stdout}")


@pytest.mark.parametrize("script", ["setup.sh", "run_autograder"])
def test_the_scripts_are_valid_posix_shell(tmp_path, script):
    shell = shutil.which("dash") or shutil.which("sh")
    if shell is None:
        pytest.skip("no POSIX shell to check the scripts with")
    path = tmp_path / script
    path.write_text((TEMPLATES / script).read_text(encoding="utf-8"))
    completed = subprocess.run([shell, "-n", str(path)], capture_output=True, text=True)
    assert completed.returncode == 0, f"{script} does not parse: {completed.stderr}"


def test_setup_updates_apt_first_then_installs_python_the_pinned_grading_packages_and_bubblewrap_only():
    setup = (TEMPLATES / "setup.sh").read_text(encoding="utf-8")
    lines = [line.strip() for line in setup.splitlines() if not line.strip().startswith("#")]
    installs = [line for line in lines if " install " in line and "could not install" not in line]
    assert len(installs) == 3, installs
    assert installs[0].endswith("apt-get install -y --no-install-recommends python3 python3-pip"), installs[0]
    assert installs[1].endswith("pip install --no-cache-dir -r grading-requirements.txt; then"), installs[1]
    assert installs[2].endswith("apt-get install -y --no-install-recommends bubblewrap; then"), installs[2]
    first_apt = next(index for index, line in enumerate(lines) if "apt-get" in line)
    assert lines[first_apt] == "apt-get update", "apt-get update must run before any apt-get install"
    assert "|| true" not in setup, "a failed install must be said, not swallowed"
    assert "ISOLATION: bubblewrap works" in setup and "ISOLATION WARNING" in setup, (
        "setup.sh must say loudly which isolation the image got")


def test_the_bundle_pins_numpy_pytest_and_pytests_own_requirements_to_the_builders_versions(tmp_path):
    import numpy

    root = tiny_book(tmp_path / "book")
    build_bundle(tmp_path / "autograder.zip", tiny_exercises(root), seed=1, timeout=5, root=root)
    with zipfile.ZipFile(tmp_path / "autograder.zip") as bundle:
        lines = bundle.read("grading-requirements.txt").decode().splitlines()
    pinned = dict(line.split("==") for line in lines[1:])
    assert lines[0] == f"# Python {platform.python_version()}", "setup.sh names the builder's Python if pip fails"
    assert pinned["numpy"] == numpy.__version__ and pinned["pytest"] == pytest.__version__, pinned
    assert "pluggy" in pinned and not {"jupyter", "jupyterlab", "matplotlib", "notebook"} & set(pinned), (
        f"only what grading needs, pinned: {pinned}")


# ----------------------------------------------------------------------
# finding the student's copy in the submission


def zip_folder(folder: Path, archive: Path, top: str = "") -> Path:
    with zipfile.ZipFile(archive, "w") as opened:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                opened.write(path, (Path(top) / path.relative_to(folder)).as_posix())
    return archive


def test_the_copy_is_found_at_the_top_in_one_folder_or_in_a_single_zip(tmp_path):
    book = tiny_book(tmp_path / "book")
    assert find_submission(book, tmp_path / "unzip1") == book

    nested = tmp_path / "nested"
    shutil.copytree(book, nested / "student-edition")
    assert find_submission(nested, tmp_path / "unzip2") == nested / "student-edition"

    for top in ("", "my-copy"):
        submission = tmp_path / f"zipped-{top or 'flat'}"
        submission.mkdir()
        zip_folder(book, submission / "hand-in.zip", top)
        unzip_to = tmp_path / f"unzip-{top or 'flat'}"
        found = find_submission(submission, unzip_to)
        assert found == unzip_to / top and (found / "minitorch" / "ops.py").read_text() == LIBRARY


@pytest.mark.parametrize("contents, message", [
    ({"answers.py": "x = 1"}, r"no minitorch/ folder.*\(found: answers\.py\)"),
    ({}, r"found: nothing"),
    ({"a/minitorch/__init__.py": "", "b/minitorch/__init__.py": ""}, "2 copies of the project"),
    ({"hand-in.zip": "not a zip"}, "not a readable .zip"),
])
def test_a_submission_without_exactly_one_copy_gets_a_message_saying_what_to_submit(tmp_path, contents, message):
    submission = tmp_path / "submission"
    submission.mkdir()
    for name, text in contents.items():
        (submission / name).parent.mkdir(parents=True, exist_ok=True)
        (submission / name).write_text(text)
    with pytest.raises(SubmissionError, match=message):
        find_submission(submission, tmp_path / "unzipped")


@pytest.mark.parametrize("top", ["", "my-copy"], ids=["at-the-zips-top", "one-folder-down"])
def test_a_submission_holding_a_copy_and_a_zip_of_another_is_refused_not_graded_on_one(tmp_path, top):
    """bob's files at the top of the submission and alice's copy in a .zip beside them: the top was graded and the
    zip ignored with no word; grade refuses a student's folder beside their .zip, and so does the bundle."""
    book = tiny_book(tmp_path / "book")
    submission = tmp_path / "submission"
    shutil.copytree(book, submission)
    zip_folder(book, submission / "alice.zip", top)
    with pytest.raises(SubmissionError, match=r"holds a copy of the project and also alice.zip, which holds another"):
        found = find_submission(submission, tmp_path / "unzipped")
        pytest.fail(f"one of two copies was graded without a word: {found}")
    (submission / "alice.zip").unlink()
    zip_folder(tmp_path / "book" / "chapters", submission / "figures.zip")  # a zip of something else: no copy
    assert find_submission(submission, tmp_path / "unzipped") == submission


def test_a_zip_that_unpacks_too_large_is_refused_before_unpacking(tmp_path, monkeypatch):
    submission = tmp_path / "submission"
    submission.mkdir()
    zip_folder(tiny_book(tmp_path / "book"), submission / "hand-in.zip")
    monkeypatch.setattr(submissions, "MAX_UNPACKED_BYTES", 10)
    with pytest.raises(SubmissionError, match="would unpack to"):
        find_submission(submission, tmp_path / "unzipped")
    assert not (tmp_path / "unzipped").exists()


def test_students_see_each_tests_reason_but_neither_the_full_output_nor_the_seed(capsys):
    graded = {"score": 4711, "output": "exercise seed 4711: 1 of 2 tests passed", "tests": [
        {"name": "1.2 doubling: test_a", "number": "1.2", "score": 0, "max_score": 2, "status": "failed",
         "output": "AssertionError: wrong double\n\nx = [0.25, 4711.5] (inputs drawn with the exercise seed)",
         "extra_data": {"kind": "failed", "message": "AssertionError: wrong double"}},
        {"name": "1.2 doubling: test_b", "number": "1.2", "score": 2, "max_score": 2, "status": "passed",
         "output": ""}], "extra_data": {"exercise_seed": 4711, "grader_version": "abc"}}
    shown = gradescope.for_students(graded, seed=4711)
    assert (shown["visibility"], shown["stdout_visibility"]) == ("visible", "hidden")
    assert all(test["visibility"] == "visible" for test in shown["tests"])
    assert shown["score"] == 4711, "numbers that are not the seed stay"
    assert shown["output"].splitlines()[0] == "exercise seed (hidden): 1 of 2 tests passed"
    assert shown["output_format"] == "md" and "| 1.2 | 1 of 2 | 2 / 4 | none |" in shown["output"], shown["output"]
    assert shown["extra_data"] == {"grader_version": "abc"}
    failed = shown["tests"][0]["output"]
    assert failed.startswith("```\nAssertionError: wrong double\n```\n") and "python -m pytest -m ex1_2" in failed
    assert "0.25" not in failed, "the inputs drawn with the hidden seed must not be shown"
    assert "x = [0.25, 4711.5]" in capsys.readouterr().out, "the full output goes to the instructors' log"


# ----------------------------------------------------------------------
# results.json when grading cannot happen


def layout(tmp_path: Path, settings: dict | None = None) -> tuple[Path, Path]:
    """An autograder root with a submission (the tiny book) and a source holding bundle.json."""
    root = tmp_path / "autograder"
    tiny_book(root / "submission")
    (root / "source").mkdir(parents=True)
    if settings is not None:
        (root / "source" / "bundle.json").write_text(json.dumps(settings))
    return root, root / "results" / "results.json"


SETTINGS = {"exercise_ids": ["1.2"], "exercise_seed": 5, "timeout": 3, "deadline": 100, "made_from": "abc123",
            "collected": {"tests/test_ops.py::test_double": "1.2"}}


def test_the_copy_found_and_the_bundles_settings_go_to_grade_submission_and_its_results_to_results_json(
        tmp_path, monkeypatch):
    root, results_path = layout(tmp_path, SETTINGS)
    calls = []

    def grade_submission(entry, out_dir, run, slot=0, scratch_root=None, log_file=None):
        calls.append((entry.path, run.exercise_ids, run.seed, run.timeout, run.grader_root, run.version,
                      run.known_tests, 0 < run.budget < 100))
        (Path(out_dir) / "feedback.md").parent.mkdir(parents=True, exist_ok=True)
        (Path(out_dir) / "feedback.md").write_text("full log")
        return {"score": 2, "output": "graded with seed 5", "tests": [
            {"name": "1.2 doubling", "score": 2, "max_score": 2, "status": "passed", "output": ""}]}

    monkeypatch.setattr(grading, "grade_submission", grade_submission)
    from minitorch.exercises.grader.trusted import isolation as sandbox
    monkeypatch.setattr(sandbox, "choose", lambda *arguments: sandbox.Isolation("none"))  # not what is tested here
    results = gradescope.run(root, source=root / "source")
    assert calls == [(root / "submission", ["1.2"], 5, 3, (root / "source").resolve(), "abc123",
                      SETTINGS["collected"], True)], (
        "the bundle's settings, its graded tests, the commit it was made from as the grader's version, and a budget "
        "under the deadline go to grade_submission")
    assert json.loads(results_path.read_text()) == results
    assert results["score"] == 2 and results["tests"][0]["status"] == "passed"
    assert results["output"].startswith("graded with seed (hidden)\n") and results["stdout_visibility"] == "hidden"
    assert isinstance(results["execution_time"], int)


def test_a_crash_of_the_grader_gives_score_0_and_says_the_autograder_failed(tmp_path, monkeypatch, capsys):
    root, results_path = layout(tmp_path, SETTINGS)

    def crash(*arguments):
        raise RuntimeError("disk full")

    monkeypatch.setattr(gradescope, "_grade", crash)
    results = gradescope.run(root, source=root / "source")
    assert json.loads(results_path.read_text()) == results
    assert results["score"] == 0 and results["tests"] == []
    assert results["output"].startswith("The autograder failed: RuntimeError: disk full"), results["output"]
    assert "Traceback" in capsys.readouterr().err, "the traceback goes to the log for the instructor"
    assert sorted(path.name for path in results_path.parent.iterdir()) == ["results.json"]


@pytest.mark.parametrize("failure", ["a grading package missing", "the check process failing"])
def test_a_grader_failure_that_says_what_happened_is_one_line_without_a_traceback(tmp_path, monkeypatch, capsys,
                                                                                 failure):
    """A python3 without pytest-timeout (the bundle run before setup.sh) printed a traceback, and its advice named
    the book's requirements.txt, not the bundle's own grading-requirements.txt that setup.sh installs."""
    root, results_path = layout(tmp_path, SETTINGS)
    find_spec = gradescope.importlib.util.find_spec
    if failure == "a grading package missing":
        monkeypatch.setattr(gradescope.importlib.util, "find_spec",
                            lambda name, *rest: None if name == "pytest_timeout" else find_spec(name, *rest))
        said = "lacks pytest-timeout: run setup.sh (or pip install -r grading-requirements.txt), then run_autograder"
    else:
        said = "the check process ended with status 4 before any test ran"

    def graded(*arguments):
        if failure == "a grading package missing":
            raise AssertionError("nothing is graded without the grading packages")
        raise grading.CheckProcessFailed(said)

    monkeypatch.setattr(gradescope, "_grade", graded)
    results = gradescope.run(root, source=root / "source")
    printed = capsys.readouterr()
    assert results["score"] == 0 and said in results["output"] and "Error:" not in results["output"], (
        results["output"])
    assert "Traceback" not in printed.err + printed.out, f"one line, no traceback:\n{printed.err}"


def test_a_submission_without_the_book_gives_score_0_and_tells_the_student_what_to_submit(tmp_path):
    root, results_path = layout(tmp_path, SETTINGS)
    shutil.rmtree(root / "submission")
    (root / "submission").mkdir()
    (root / "submission" / "notes.txt").write_text("I did it")
    results = gradescope.run(root, source=root / "source")
    assert results["score"] == 0
    assert results["output"].startswith("Your submission could not be graded: it holds no minitorch/ folder, neither "
                                        "at its top nor one level down (found: notes.txt)"), results["output"]
    assert json.loads(results_path.read_text())["output"] == results["output"]


def test_a_bundle_without_its_settings_says_so_instead_of_grading(tmp_path):
    root, results_path = layout(tmp_path, settings=None)
    results = gradescope.run(root, source=root / "source")
    assert results["score"] == 0 and "bundle.json" in results["output"], results["output"]


@pytest.mark.parametrize("edit, named", [
    ({"timeout": "5"}, "bundle.json's timeout is \"5\", not a number"),
    ({"exercise_ids": "1.2"}, "bundle.json's exercise_ids is \"1.2\", not a list"),
    ({"late_penalty": "10"}, "bundle.json's late_penalty is \"10\", not a number"),
    ({"exercise_seed": True}, "bundle.json's exercise_seed is true, not a whole number"),
], ids=["timeout-a-string", "exercise-ids-a-string", "late-penalty-a-string", "seed-a-boolean"])
def test_a_bundle_setting_of_another_kind_is_named_as_a_missing_one_is(tmp_path, edit, named):
    """"timeout": "5", as a hand edit leaves it: students read 'TypeError: can only concatenate str (not "int") to
    str', naming neither bundle.json nor the setting."""
    root, results_path = layout(tmp_path, {**SETTINGS, **edit})
    results = gradescope.run(root, source=root / "source")
    assert results["score"] == 0 and named in results["output"] and "rebuild the bundle" in results["output"], (
        f"the page should name the setting of bundle.json and say to rebuild the bundle: {results['output']}")


def test_a_bundle_json_that_is_no_json_is_named(tmp_path):
    root, results_path = layout(tmp_path, SETTINGS)
    (root / "source" / "bundle.json").write_text('{"timeout": "5".0}')
    results = gradescope.run(root, source=root / "source")
    assert "bundle.json is not valid JSON" in results["output"], f"the page should name bundle.json: {results}"


def test_run_autograder_leaves_a_results_json_even_when_python_dies(tmp_path):
    """A python3 that cannot even start the grader: the shell script writes the page itself."""
    root = tmp_path / "autograder"
    (root / "source").mkdir(parents=True)
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    (fake_bin / "python3").write_text("#!/bin/sh\nexit 3\n")
    (fake_bin / "python3").chmod(0o755)
    script = root / "run_autograder"
    script.write_text((TEMPLATES / "run_autograder").read_text(encoding="utf-8"))
    script.chmod(0o755)
    environment = {**os.environ, "AUTOGRADER_ROOT": "autograder",  # relative, as someone trying it out may write
                   "PATH": f"{fake_bin}{os.pathsep}{os.environ['PATH']}"}
    completed = subprocess.run([str(script)], cwd=tmp_path, env=environment, capture_output=True, text=True,
                               timeout=60)
    assert completed.returncode == 0, completed.stderr
    results = json.loads((root / "results" / "results.json").read_text())
    assert results["score"] == 0 and "python3 exited with status 3" in results["output"], results
    assert sorted(path.name for path in root.iterdir()) == ["results", "run_autograder", "source"], (
        "run_autograder must remove its temporary folder")


def test_run_autograder_says_in_one_line_that_results_is_not_a_folder(tmp_path):
    """results a file: mkdir's 'File exists', a Python traceback and the shell's 'Directory nonexistent', exit 0 and
    no results.json; chmod 755 made the file executable."""
    root = tmp_path / "autograder"
    (root / "source").mkdir(parents=True)
    (root / "results").write_text("not a dir\n")
    script = root / "run_autograder"
    script.write_text((TEMPLATES / "run_autograder").read_text(encoding="utf-8"))
    completed = subprocess.run(["sh", str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                               env={**os.environ, "AUTOGRADER_ROOT": str(root)})
    assert completed.returncode == 1 and completed.stderr.count("\n") == 1, (
        f"run_autograder should stop with one line when results is a file: {completed.returncode} {completed.stderr}")
    assert f"{root / 'results'} is not a folder" in completed.stderr, completed.stderr
    assert (root / "results").read_text() == "not a dir\n" and not (root / "results").stat().st_mode & 0o111, (
        "the file is left as it was")


@pytest.mark.parametrize("root", ["unset", "missing"])
def test_run_autograder_says_in_one_line_that_its_root_does_not_exist_and_how_to_name_another(tmp_path, root):
    """A local trial without AUTOGRADER_ROOT: 'cd: can't cd to /autograder', the shell's words, no hint of
    AUTOGRADER_ROOT."""
    if root == "unset" and os.path.exists("/autograder"):
        pytest.skip("/autograder exists on this machine")
    script = tmp_path / "run_autograder"
    script.write_text((TEMPLATES / "run_autograder").read_text(encoding="utf-8"))
    environment = {key: value for key, value in os.environ.items() if key != "AUTOGRADER_ROOT"}
    if root == "missing":
        environment["AUTOGRADER_ROOT"] = str(tmp_path / "missing")
    named = "/autograder" if root == "unset" else str(tmp_path / "missing")
    completed = subprocess.run(["sh", str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                               env=environment)
    assert completed.returncode == 1 and completed.stderr.count("\n") == 1, (
        f"run_autograder should stop with one line: {completed.returncode} {completed.stderr}")
    assert f"run_autograder: {named} does not exist" in completed.stderr, completed.stderr
    assert "set AUTOGRADER_ROOT to the folder holding source/ and submission/" in completed.stderr, completed.stderr


# ----------------------------------------------------------------------
# end to end: a real bundle in a temporary Gradescope layout, three submissions

GRADER = Path(__file__).resolve().parents[2]  # the book these tests belong to: it builds the bundle
GRADED = {"1.2": 1, "1.3": 1, "4.1": 2}  # small exercises (ID -> points), so that a run takes seconds
HIDDEN_SEED = 918273645  # distinctive: it must never appear in what a student sees
TIMEOUT = 5


def grader_files() -> dict[str, str]:
    """Every file of the grader's book that goes into a bundle, with a hash of its contents."""
    return {path.relative_to(GRADER).as_posix(): digest(path) for path in gradescope._bundled_files(GRADER)}


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    if (GRADER / gradescope.MANIFEST).exists():
        pytest.skip("these tests belong to a student edition; bundles are built from the full book")
    out = tmp_path_factory.mktemp("bundle") / "autograder.zip"
    completed = subprocess.run([sys.executable, "-m", "minitorch.exercises", "gradescope-bundle", str(out),
                                "--only", ",".join(GRADED), "--exercise-seed", str(HIDDEN_SEED),
                                "--timeout", str(TIMEOUT)], cwd=GRADER, capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
    return out


def copy_of_the_book(dest: Path) -> Path:
    """The grader's library and tests, solved: what a student who finished every exercise hands in."""
    for name in ("minitorch", "tests"):
        shutil.copytree(GRADER / name, dest / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dest


def never_returning(copy: Path, exercise_id: str) -> None:
    """Replace the body of one exercise's function in `copy` by an endless loop."""
    exercise = next(e for e in load_exercises(copy) if e.id == exercise_id)
    path = copy / exercise.module
    path.write_text(replace_bodies(path.read_text(encoding="utf-8"), {exercise.function: "while True:\n    pass\n"},
                                   exercise.module), encoding="utf-8")


def everything_under(folder: Path) -> dict[str, str]:
    return {path.relative_to(folder).as_posix(): digest(path) if path.is_file() else "folder"
            for path in folder.rglob("*")}


def run_autograder(bundle: Path, tmp_path: Path, hand_in) -> dict:
    """Unpack `bundle` as Gradescope does, let `hand_in(submission_folder)` fill the submission, run
    run_autograder, check that it wrote only results/results.json, and return that."""
    root = tmp_path / "autograder"
    unpack_like_gradescope(bundle, root / "source")
    shutil.copy2(root / "source" / "run_autograder", root / "run_autograder")
    hand_in(root / "submission")
    outside = tmp_path / "elsewhere"  # a sibling of the layout, to see that nothing lands beside it
    outside.mkdir()
    before = {name: everything_under(root / name) for name in ("source", "submission")}
    before_grader, before_around = grader_files(), sorted(tmp_path.iterdir())
    completed = subprocess.run([str(root / "run_autograder")], cwd=root / "source", capture_output=True, text=True,
                               env={**os.environ, "AUTOGRADER_ROOT": str(root)}, timeout=600)
    assert completed.returncode == 0, completed.stderr
    assert sorted(tmp_path.iterdir()) == before_around and not any(outside.iterdir())
    assert sorted(path.name for path in root.iterdir()) == ["results", "run_autograder", "source", "submission"]
    assert {name: everything_under(root / name) for name in ("source", "submission")} == before, (
        "grading must not change the grader's source or the submission")
    assert sorted(path.name for path in (root / "results").iterdir()) == ["results.json"]
    assert grader_files() == before_grader, "building and running the bundle must not touch the grader's own book"
    results = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    check_gradescope_format(results)
    return results


def check_gradescope_format(results: dict) -> None:
    assert {"score", "execution_time", "output", "tests"} <= set(results), sorted(results)
    assert isinstance(results["execution_time"], (int, float)) and results["execution_time"] >= 0
    assert results.get("stdout_visibility", "hidden") == "hidden", "the log may quote hidden-seed inputs"
    for test in results["tests"]:
        assert {"name", "score", "max_score", "status", "output"} <= set(test), test
        assert test["status"] in ("passed", "failed") and 0 <= test["score"] <= test["max_score"], test
        hidden = "extra_data" in test and is_hidden_test(test["extra_data"]["nodeid"])
        wanted = "after_due_date" if hidden else "visible"
        assert test.get("visibility", results.get("visibility", "visible")) == wanted, test
    assert results.get("output_format") == "md", "the feedback is Markdown"
    assert str(HIDDEN_SEED) not in json.dumps(results), "the hidden seed must not be shown to students"


def entries_of(results: dict, exercise_id: str) -> list[dict]:
    entries = [test for test in results["tests"] if f"{exercise_id} " in test["name"] or
               test.get("tags") and exercise_id in test["tags"]]
    assert entries, f"no entry for exercise {exercise_id} in {[test['name'] for test in results['tests']]}"
    return entries


@pytest.mark.slow
def test_a_solved_copy_handed_in_as_a_zip_earns_every_point(bundle, tmp_path):
    def hand_in(submission):
        copy = copy_of_the_book(tmp_path / "my-copy")
        submission.mkdir()
        zip_folder(copy, submission / "hand-in.zip", top="my-copy")
        shutil.rmtree(copy)

    results = run_autograder(bundle, tmp_path, hand_in)
    assert results["score"] == pytest.approx(sum(GRADED.values())), results["output"]
    assert all(test["status"] == "passed" for test in results["tests"]), results["tests"]
    assert sum(test["max_score"] for test in results["tests"]) == pytest.approx(sum(GRADED.values()))


@pytest.mark.slow
def test_an_untouched_student_edition_earns_nothing_and_is_told_what_to_write(bundle, tmp_path):
    def hand_in(submission):
        completed = subprocess.run([sys.executable, "-m", "minitorch.exercises", "student-edition", str(submission),
                                    "--only", ",".join(GRADED), "--handed-out-before", "1.1"], cwd=GRADER,
                                   capture_output=True, text=True, timeout=120)
        assert completed.returncode == 0, completed.stderr

    results = run_autograder(bundle, tmp_path, hand_in)
    assert results["score"] == 0
    for exercise_id in GRADED:
        for test in entries_of(results, exercise_id):
            assert test["status"] == "failed" and f"Exercise {exercise_id}" in test["output"], test


@pytest.mark.slow
def test_an_exercise_that_never_returns_times_out_and_the_others_still_count(bundle, tmp_path):
    def hand_in(submission):
        never_returning(copy_of_the_book(submission), "1.3")  # (in 4.1 the loop alone fails it, before it runs)

    results = run_autograder(bundle, tmp_path, hand_in)
    assert results["score"] == pytest.approx(GRADED["1.2"] + GRADED["4.1"]), results["output"]
    for test in entries_of(results, "1.3"):
        assert test["status"] == "failed" and test["score"] == 0, test
        assert "time" in test["output"].lower() and f"{TIMEOUT}" in test["output"], test["output"]


HOSTILE_1_3 = """\
import glob, os, time
found = []
for path in glob.glob("{root}/source/*.json") + glob.glob("/autograder/source/*.json"):
    try:
        found.append(open(path).read())
    except OSError:
        pass
for path in ("{root}/source/minitorch/ops.py", "{root}/results/results.json"):
    try:
        open(path, "w").write("vandalised")
    except OSError:
        pass
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for _ in range(100):
            try:
                open("{root}/results/results.json", "w").write('{{"score": 99, "tests": []}}')
            except OSError:
                pass
            time.sleep(0.2)
    os._exit(0)
raise ValueError("found: " + " || ".join(found))"""


@pytest.mark.slow
def test_a_hostile_submission_run_as_root_changes_nothing_and_leaves_nothing_behind(bundle, tmp_path):
    """Run as root (where the platform runs it): the student's code cannot read the seed, write the grader's
    source or the results, or keep a process alive to rewrite results.json after the run."""
    root = tmp_path / "autograder"

    def hand_in(submission):
        copy = copy_of_the_book(submission)
        exercise = next(e for e in load_exercises(copy) if e.id == "1.3")  # 4.1's loops would fail it unrun
        path = copy / exercise.module
        path.write_text(replace_bodies(path.read_text(encoding="utf-8"), {exercise.function: HOSTILE_1_3.format(
            root=root)}, exercise.module), encoding="utf-8")

    results = run_autograder(bundle, tmp_path, hand_in)
    time.sleep(2)  # a daemon would have rewritten results.json by now
    after = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    assert after == results, "results.json changed after the run"
    assert results["score"] == pytest.approx(GRADED["1.2"] + GRADED["4.1"]), results["output"]
    assert str(HIDDEN_SEED) not in json.dumps(results)
    survivors = sandbox.processes_of_run(sandbox.RUN_MARKER)  # this session's runs only (see below)
    assert not survivors, f"processes of the student's worker survived the run: {survivors}"


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


# ----------------------------------------------------------------------
# hidden tests, Markdown, lateness, __MACOSX


def test_tests_under_a_hidden_folder_are_hidden_until_the_due_date_and_the_summary_shows_only_public_ones(
        tmp_path, capsys):
    root = tiny_book(tmp_path / "book")
    (root / "tests" / "hidden").mkdir()
    (root / "tests" / "hidden" / "test_more.py").write_text(TINY_TESTS.replace("def test_", "def test_hidden_"))
    settings = build_bundle(tmp_path / "a.zip", tiny_exercises(root), seed=1, timeout=5, root=root,
                            hidden_visibility="hidden")
    assert sorted(settings["hidden_tests"]) == ["tests/hidden/test_more.py::test_hidden_double",
                                                "tests/hidden/test_more.py::test_hidden_triple"]
    assert settings["hidden_visibility"] == "hidden"

    def test(nodeid, status):
        return {"name": nodeid, "number": "1.2", "score": 1.0 if status == "passed" else 0.0, "max_score": 1.0,
                "status": status, "output": "", "extra_data": {"nodeid": nodeid, "kind": status,
                                                              "message": "AssertionError: hidden case k=7"}}
    graded = {"score": 1.0, "output": "2 tests", "tests": [test("tests/test_ops.py::test_double", "passed"),
                                                           test("tests/hidden/test_more.py::test_hidden_double",
                                                                "failed")]}
    shown = gradescope.for_students(graded, seed=1, hidden=set(settings["hidden_tests"]),
                                    hidden_visibility="after_due_date")
    assert [test["visibility"] for test in shown["tests"]] == ["visible", "after_due_date"]
    assert shown["output_format"] == "md"
    assert "| 1.2 | 1 of 1 | 1 / 1 | 1 (1 points), after the due date |" in shown["output"], shown["output"]
    assert "k=7" not in shown["output"], "the summary, visible at once, must not quote a hidden test"


def test_the_summary_never_promises_the_results_of_hidden_tests_whose_visibility_is_hidden():
    """--hidden-tests hidden: the builder says the hidden tests are never shown, but the summary every student reads
    said '6 (0.5 points), after the due date' and that their results are shown after it."""
    hidden = {"name": "hidden", "number": "1.2", "score": 1.0, "max_score": 1.0, "status": "passed", "output": "",
              "extra_data": {"nodeid": "tests/hidden/test_more.py::test_hidden_double"}}
    public = {**hidden, "name": "public", "extra_data": {"nodeid": "tests/test_ops.py::test_double"}}
    graded = {"score": 2.0, "output": "2 tests", "tests": [public, hidden]}
    shown = gradescope.for_students(graded, seed=1, hidden={hidden["extra_data"]["nodeid"]}, hidden_visibility="hidden")
    assert "after the due date" not in shown["output"], f"hidden tests are never shown: {shown['output']}"
    assert "| 1.2 | 1 of 1 | 1 / 1 | 1 (1 points), never shown |" in shown["output"], shown["output"]
    assert "never shown to students" in shown["output"], shown["output"]


@pytest.mark.parametrize("created, extension, days", [
    ("2026-03-01T22:00:00+00:00", None, 0),
    ("2026-03-02T00:00:01+00:00", None, 1),
    ("2026-03-03T23:00:00+00:00", None, 2),
    ("2026-03-03T23:00:00+00:00", "2026-03-04T23:00:00+00:00", 0),
    ("2026-03-04T22:00:00-05:00", None, 4),
])
def test_days_late_count_started_days_past_the_due_date_or_the_students_extension(created, extension, days):
    user = {"email": "a@u", "id": 1, "name": "A"}
    if extension:
        user["assignment"] = {"due_date": extension}
    metadata = {"created_at": created, "assignment": {"due_date": "2026-03-01T23:59:00+00:00"}, "users": [user]}
    assert gradescope.days_late(metadata) == days


def test_a_late_submission_loses_the_documented_share_and_is_told_why(tmp_path, monkeypatch):
    root, results_path = layout(tmp_path, {**SETTINGS, "late_penalty": 10.0})
    (root / "submission_metadata.json").write_text(json.dumps({
        "created_at": "2026-03-03T10:00:00+00:00", "assignment": {"due_date": "2026-03-01T23:59:00+00:00"},
        "users": []}))
    monkeypatch.setattr(gradescope, "_grade", lambda *arguments: {"score": 8.0, "output": "", "tests": [
        {"name": "1.2", "score": 8.0, "max_score": 8.0, "status": "passed"}]})
    results = gradescope.run(root, source=root / "source")
    assert results["score"] == pytest.approx(8.0 * 0.8), "two started days late at 10% a day"
    penalty = results["tests"][-1]
    assert penalty["score"] == pytest.approx(-1.6) and "2 day(s) after the due date" in penalty["output"]
    assert json.loads(results_path.read_text())["score"] == results["score"]
    many = gradescope.apply_lateness({"score": 5.0, "tests": []}, {
        "created_at": "2026-04-01T00:00:00+00:00", "assignment": {"due_date": "2026-03-01T00:00:00+00:00"}}, 10)
    assert many["score"] == 0.0, "the penalty stops at the whole score"


@pytest.mark.parametrize("percent, days, said",
                         [(0.4, 1, "0.4%"), (12.5, 1, "12.5%"), (0.1, 3, "0.3%"), (10, 2, "20%")])
def test_the_late_penalty_names_the_share_taken_off_as_given_never_rounded(percent, days, said):
    """A share that is not a whole percent was shown rounded: "0% of the score" for 0.4%, "12%" for 12.5%."""
    due = "2026-03-01T00:00:00+00:00"
    created = f"2026-03-{days:02d}T12:00:00+00:00"
    results = gradescope.apply_lateness({"score": 3.0, "tests": []}, {"created_at": created,
                                                                     "assignment": {"due_date": due}}, percent)
    output = results["tests"][-1]["output"]
    assert f": {said} of the score" in output, f"{days} day(s) at {percent}% a day should say {said}: {output}"


@pytest.mark.parametrize("metadata", [{"created_at": "not a date", "assignment": {"due_date": "2026-12-08T10:00:00"}},
                                      ["a list"], "{not json"], ids=["bad-date", "a-list", "not-json"])
def test_metadata_that_cannot_be_read_is_one_line_of_the_log_and_graded_as_on_time(tmp_path, monkeypatch, capsys,
                                                                                   metadata):
    """A created_at that is not a date put a raw traceback (ValueError: Invalid isoformat string) in the log, and
    no sentence saying the late penalty was skipped."""
    root, results_path = layout(tmp_path, {**SETTINGS, "late_penalty": 10.0})
    (root / "submission_metadata.json").write_text(metadata if isinstance(metadata, str) else json.dumps(metadata))
    monkeypatch.setattr(gradescope, "_grade", lambda *arguments: {"score": 8.0, "output": "", "tests": []})
    results = gradescope.run(root, source=root / "source")
    log = capsys.readouterr()
    assert results["score"] == 8.0, "metadata that cannot be read grades the submission as on time"
    assert "Traceback" not in log.err + log.out, f"the log should say it in one line, not a traceback: {log.err}"
    said = [line for line in log.out.splitlines() if "submission_metadata.json could not be read" in line]
    assert len(said) == 1 and "graded as on time" in said[0], (
        f"the log should say, in one line, that the metadata could not be read and no penalty applied: {log.out}")


def test_a_macosx_folder_beside_the_copy_is_ignored(tmp_path):
    submission = tmp_path / "submission"
    book = tiny_book(submission / "my-copy")
    (submission / "__MACOSX" / "my-copy" / "minitorch").mkdir(parents=True)
    assert find_submission(submission, tmp_path / "unzipped") == book


@pytest.mark.skipif((Path(__file__).resolve().parents[2] / "minitorch" / "exercises" / "edition.json").exists(),
                    reason="a student edition's README is the students' own, without the instructors' commands")
def test_the_readmes_commands_write_the_bundle_and_the_grades_outside_the_checkout():
    """The zip holds the seed: a zip left untracked in the checkout is one `git add .` from the students."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## For instructors", 1)[1].split("\n## ", 1)[0]
    commands = section.split("```bash", 1)[1].split("```", 1)[0]
    bundles = re.findall(r"gradescope-bundle (\S+)", commands)
    outputs = re.findall(r"--out (\S+)", commands) + re.findall(r"--to (\S+)", commands)
    assert bundles and len(outputs) >= 3, f"the bundle, two --out and the Canvas CSV's --to: {section}"
    assert all(path.startswith("../") for path in bundles + outputs), (
        f"the README's commands should write outside the checkout: {bundles + outputs}")


# Every grader this module starts inherits this session's run marker: its survivor check counts those graders'
# workers only, so it passes while an instructor grades a class on the same machine.
os.environ.setdefault(sandbox.RUN_MARKER_VARIABLE, sandbox.RUN_MARKER)
