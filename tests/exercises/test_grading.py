"""Specification of the class grader (minitorch/exercises/grading.py, gradebook.py, grade_command.py).

Fast tests check the results (exact points, no seed, kinds and flags, the exercises that count) and the
conftest's per-test timeout, manifest and --scoreboard-json options on the tiny project of
test_exercises.py. The slow test grades a class of this book's student edition: honest mistakes and
hostile copies that try to forge their grade, read the grader's answers, touch other students' files
or the grader's, leave processes behind, or stop the run; it checks every score, that the grader's
checkout, the submissions and the other students' results are byte-identical, and that no process of
the run survives it.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import minitorch
from minitorch.exercises import edition as edition_module
from minitorch.exercises import gradebook, grading, sandbox
from minitorch.exercises.gradebook import grades_csv
from minitorch.exercises.grafting import GraftReport
from minitorch.exercises.registry import EXERCISES, load_exercises

from test_exercises import _clean_environment, run_pytest, tiny_project

ROOT = Path(minitorch.__file__).resolve().parent.parent


def a_run(exercise_ids=("1.1", "2.2"), tests_per_exercise=3) -> grading.Run:
    """A run's settings with a made-up list of graded tests (nothing is collected or started)."""
    collected = {f"tests/test_x.py::test_{exercise_id}_{n}": exercise_id for exercise_id in exercise_ids
                 for n in range(tests_per_exercise)}
    return grading.Run(list(exercise_ids), 4711, 5.0, 60.0, sandbox.Isolation("none"), ROOT, "v", known_tests=collected)


def passed(run: grading.Run, *ids: str) -> dict:
    return {nodeid: {"status": "passed"} for nodeid, owner in run.collected().items() if owner in ids}


@pytest.mark.parametrize("points, count", [(3, 60), (2, 3), (1, 7), (3, 11), (2, 22), (1, 1)])
def test_points_split_over_tests_add_up_to_the_exercises_points_exactly(points, count):
    shares = grading.split_points(points, count)
    assert len(shares) == count and all(round(share, 6) == share for share in shares)
    assert grading.add_points(shares) == points, f"{count} shares of {points} points add up to {sum(shares)!r}"


def test_a_solved_copys_total_and_maximum_equal_the_sums_of_its_tests_exactly():
    run = a_run(("2.1", "2.2", "2.3"), tests_per_exercise=11)
    graded = grading.results_json("ann", run, passed(run, "2.1", "2.2", "2.3"), GraftReport(handed_out=[]), 1.0)
    tests = graded["tests"]
    assert graded["score"] == grading.add_points(test["score"] for test in tests) == 9
    assert graded["extra_data"]["max_score"] == grading.add_points(test["max_score"] for test in tests) == 9
    rows = list(csv.DictReader(io.StringIO(grades_csv([graded], run.exercise_ids))))
    assert rows[0]["total"] == "9" and [rows[0][i] for i in run.exercise_ids] == ["3", "3", "3"]


def test_nothing_a_student_sees_names_the_seed():
    run = a_run()
    graded = grading.results_json("ann", run, passed(run, "1.1"), GraftReport(handed_out=[]), 1.0)
    for text in (json.dumps(graded), gradebook.feedback_markdown(graded)):
        assert "4711" not in text and "seed" not in text.lower().replace("seen", ""), (
            "results.json and feedback.md go to students: the seed must not appear")


def test_what_the_grafting_found_is_each_tests_kind_and_a_flag():
    run = a_run(("1.1", "1.3", "2.2", "2.4"))
    report = GraftReport(grafted=["1.1", "1.3"], stubs=["1.3"], not_compiling={"2.2": "does not compile: x"},
                         not_found={"2.4": "region not found: y"}, notes={"1.1": "its END EXERCISE 1.1 marker is "
                                                                                  "missing; taken to end at 3"},
                         handed_out=["1.1"])
    graded = grading.results_json("ann", run, passed(run, "1.1"), report, 1.0)
    kinds = {row: graded["extra_data"]["exercises"][row]["kinds"] for row in run.exercise_ids}
    assert kinds == {"1.1": {"passed": 3}, "1.3": {"not attempted": 3}, "2.2": {"does not compile": 3},
                     "2.4": {"region not found": 3}}
    flags = "; ".join(graded["extra_data"]["flags"])
    assert "does not compile: 2.2" in flags and "region not found: 2.4" in flags and "read leniently: 1.1" in flags
    assert "END EXERCISE 1.1 marker is missing" in gradebook.feedback_markdown(graded)


def test_a_copy_that_could_not_be_graded_says_why_everywhere_and_stays_out_of_the_class_statistics():
    run = a_run(("1.1",), tests_per_exercise=1)
    problem = "could not be graded: the entry is a named pipe, not a folder or a .zip of the copy (it was not opened)"
    lee = grading.results_json("lee", run, {}, GraftReport(), 0.0, problem)
    ann = grading.results_json("ann", run, passed(run, "1.1"), GraftReport(handed_out=["1.1"]), 0.0)
    assert lee["extra_data"]["flags"] == [problem] and ann["extra_data"]["flags"] == []
    assert problem in grades_csv([lee], ["1.1"]), "the gradebook must say why a copy scored 0 without running"
    statistics = gradebook.exercise_statistics([ann, lee], ["1.1"])["1.1"]
    assert statistics["full_marks"] == 1.0 and sum(statistics["failures"].values()) == 0, statistics
    summary = gradebook.summary_markdown([ann, lee], ["1.1"], {"graded_at": "now", "exercise_seed": 0, "timeout": 1,
                                                               "grader_version": "v"})
    assert "1 copy could not be graded (lee" in summary and problem in summary, summary
    feedback = gradebook.feedback_markdown(lee)
    assert feedback.count(problem) == 1 and "What failed" not in feedback and "| exercise |" not in feedback


def test_a_copy_without_the_editions_manifest_is_flagged():
    graded = grading.results_json("max", a_run(), {}, GraftReport(handed_out=None), 0.0)
    assert any("not a student edition" in flag for flag in graded["extra_data"]["flags"]), graded["extra_data"]


def test_the_exercises_that_count_come_from_the_instructor_never_from_a_students_copy(tmp_path):
    from minitorch.exercises.grade_command import chosen_exercises

    class Options:
        only, chapter, edition = "", "", ""

    options = Options()
    everything, source = chosen_exercises(options, ROOT)
    assert everything == list(EXERCISES) and source.startswith("every exercise")
    options.chapter = "3"
    assert chosen_exercises(options, ROOT)[0] == ["3.1", "3.2", "3.3", "3.4", "3.5"]
    edition = tmp_path / "edition" / "minitorch" / "exercises"
    edition.mkdir(parents=True)
    (edition / "edition.json").write_text(json.dumps({"handed_out": ["3.1", "3.2"]}))
    options.chapter, options.edition = "", str(tmp_path / "edition")
    assert chosen_exercises(options, ROOT)[0] == ["3.1", "3.2"]


# ----------------------------------------------------------------------
# the conftest: per-test timeout, the manifest, --scoreboard-json's folder

HANGING_TEST = """
import pytest

@pytest.mark.exercise("1.2")
@pytest.mark.parametrize("n", [1, 2, 3])
def test_hangs(n):
    while True:
        pass
"""


def test_a_hung_test_fails_as_timed_out_and_the_scoreboard_still_prints(tmp_path):
    project = tiny_project(tmp_path / "tiny", solved=True)
    (project / "tests" / "test_hang.py").write_text(HANGING_TEST)
    completed = run_pytest(project, "--test-timeout=1", "-m", "ex1_2", "tests/test_hang.py", "-k", "1")
    assert "timed out after 1 s" in completed.stdout, completed.stdout[-2000:]
    assert "exercise scoreboard" in completed.stdout and completed.returncode == 1


def test_every_kind_of_failure_counts_in_the_scoreboards_failed_column():
    """Class grading's extra kinds (timed out, crashed, ...) are failures: the printed row must add up."""
    import conftest

    class Terminal:  # the two calls of pytest's terminal reporter that the scoreboard makes
        def __init__(self):
            self.lines: list[str] = []

        def section(self, title, sep):
            self.lines.append(title)

        def write_line(self, line):
            self.lines.append(line)

    board = object.__new__(conftest.Scoreboard)
    board.seed, board.counted = 0, None
    kinds = ["passed", "failed", "timed out", "crashed", "does not compile", "region not found"]
    board.exercise_of = {f"test_{n}": "1.2" for n in range(len(kinds))}
    board.results = {f"test_{n}": {"status": kind, "blocked_by": None} for n, kind in enumerate(kinds)}
    terminal = Terminal()
    board.write_scoreboard(terminal)
    text = "\n".join(terminal.lines)
    row = next(line for line in terminal.lines if line.startswith("1.2 "))
    counts = row.split("/")[0].split()[-5:-1]  # passed, failed, not attempted, blocked
    assert counts == ["1", "5", "0", "0"], f"a test that timed out or crashed must count as failed:\n{text}"
    assert ("(the failed column includes 1 timed out, 1 crashed, 1 does not compile, 1 region not found)"
            in terminal.lines), f"the scoreboard must name the kinds in its failed column:\n{text}"


def test_the_scoreboard_of_an_untouched_edition_counts_only_what_it_handed_out(tmp_path):
    project = tiny_project(tmp_path / "tiny")  # exercise 1.1 a stub, 1.2's tests present
    (project / "minitorch" / "exercises" / "edition.json").write_text(json.dumps({"handed_out": ["1.1"]}))
    completed = run_pytest(project, "--exercise-seed=5", f"--scoreboard-json={tmp_path / 'board.json'}")
    board = json.loads((tmp_path / "board.json").read_text())
    assert list(board["exercises"]) == ["1.1"], "only the exercise handed out is graded"
    assert board["total"] == {"points": EXERCISES["1.1"][1], "earned": 0.0}
    assert re.search(rf"^total .* 0\.00 / {EXERCISES['1.1'][1]}$", completed.stdout, re.MULTILINE), completed.stdout


def test_the_scoreboard_json_folder_is_checked_before_any_test_runs(tmp_path):
    project = tiny_project(tmp_path / "tiny", solved=True)
    completed = run_pytest(project, f"--scoreboard-json={tmp_path / 'missing' / 'board.json'}")
    assert completed.returncode == 4, completed.stdout
    assert f"the folder {tmp_path / 'missing'} does not exist" in completed.stderr + completed.stdout
    assert "passed" not in completed.stdout


def tiny_grader(folder: Path) -> Path:
    """A grader's project: minitorch/ops.py with regions 1.1 and 1.2, and the real registry."""
    (folder / "minitorch" / "exercises").mkdir(parents=True)
    (folder / "tests").mkdir()
    (folder / "minitorch" / "__init__.py").write_text("")
    (folder / "minitorch" / "ops.py").write_text(
        "def double(x):\n    # BEGIN EXERCISE 1.1\n    return 2 * x\n    # END EXERCISE 1.1\n\n\n"
        "def triple(x):\n    # BEGIN EXERCISE 1.2\n    return 3 * x\n    # END EXERCISE 1.2\n")
    shutil.copy(ROOT / "minitorch" / "exercises" / "registry.py", folder / "minitorch" / "exercises" / "registry.py")
    (folder / "tests" / "test_ops.py").write_text("def test_nothing():\n    pass\n")
    return folder


def test_the_edition_writes_its_manifest_and_is_built_aside(tmp_path, monkeypatch):
    grader = tiny_grader(tmp_path / "grader")
    import minitorch.exercises.registry as registry
    exercises = registry.load_exercises(grader, {"1.1": ("doubling", 1), "1.2": ("tripling", 2)})
    edition_module.make_student_edition(tmp_path / "edition", exercises[:1], grader)
    manifest = json.loads((tmp_path / "edition" / "minitorch" / "exercises" / "edition.json").read_text())
    assert manifest["handed_out"] == ["1.1"] and "made_at" in manifest and "made_from" in manifest

    def disk_full(*arguments):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(edition_module, "stub_source", disk_full)
    with pytest.raises(OSError, match="No space left"):
        edition_module.make_student_edition(tmp_path / "broken", exercises[:1], grader)
    assert not (tmp_path / "broken").exists(), "a failed build must not leave a copy with the solutions"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["edition", "grader"], "nothing left aside"


def test_an_edition_leaves_out_sockets(tmp_path):
    import socket
    project = tiny_project(tmp_path / "tiny", solved=True)
    left_behind = socket.socket(socket.AF_UNIX)  # as a Jupyter kernel on IPC transport leaves in the cwd
    left_behind.bind(str(project / "tests" / "kernel-ipc-1"))
    try:
        edition_module.copy_folder(project / "tests", tmp_path / "copied")
    finally:
        left_behind.close()
    names = {path.name for path in (tmp_path / "copied").rglob("*")}
    assert "test_tiny.py" in names and "kernel-ipc-1" not in names, names


# ----------------------------------------------------------------------
# a class, from this book's student edition: honest mistakes, then hostile copies

GRADED = ["1.3", "2.3", "3.1", "3.2", "3.5", "4.1"]
POINTS = {exercise_id: EXERCISES[exercise_id][1] for exercise_id in GRADED}
EXERCISE_FILES = {exercise.id: exercise.path.relative_to(ROOT).as_posix()
                  for exercise in load_exercises(ROOT)}
SEED = 80_531  # distinctive: it must appear in no file a student sees


def region_body(text: str, exercise_id: str) -> str:
    return re.search(rf"# BEGIN EXERCISE {re.escape(exercise_id)}\n(.*?\n)[ \t]*# END EXERCISE", text, re.S)[1]


def set_region(copy: Path, exercise_id: str, body: str) -> None:
    """Write `body` (unindented lines) into the copy's region."""
    path = copy / EXERCISE_FILES[exercise_id]
    text = path.read_text()
    old = region_body(text, exercise_id)
    indent = re.match(r"[ \t]*", old)[0]
    path.write_text(text.replace(old, "".join(indent + line + "\n" for line in body.splitlines()), 1))


def solve(copy: Path, *ids: str) -> Path:
    for exercise_id in ids or GRADED:
        path = copy / EXERCISE_FILES[exercise_id]
        reference = region_body((ROOT / EXERCISE_FILES[exercise_id]).read_text(), exercise_id)
        path.write_text(path.read_text().replace(region_body(path.read_text(), exercise_id), reference, 1))
    return copy


HANG = "while True:\n    pass"
LESS = "less than full marks"  # a wrong answer may still pass a few of its exercise's tests
HOSTILE = {  # region 3.1's body in each hostile copy; {out}, {class_}, {root} are filled in with real paths
    "forger": """\
import glob, json, os, numpy.testing
numpy.testing.assert_allclose = numpy.testing.assert_array_equal = lambda *a, **k: None
for pattern in ("/**/results.json", "/**/board.json", "/**/grades.csv", "{out}/**/*.json"):
    for path in glob.glob(pattern, recursive=True)[:50]:
        try:
            open(path, "w").write(json.dumps({{"score": 99, "tests": []}}))
        except OSError:
            pass
print("PASSED " * 1000)
return None""",
    "reader": """\
import glob, os
found = []
for pattern in ("{root}/minitorch/softmax.py", "/**/minitorch/softmax.py", "/proc/*/environ", "/proc/*/cmdline"):
    for path in glob.glob(pattern, recursive=True)[:400]:
        try:
            text = open(path, "rb").read().decode("utf-8", "replace")
        except OSError:
            continue
        if "MINITORCH_EXERCISE_SEED" in text or "weights * (grad -" in text or "exponentials.sum" in text:
            found.append(path + ": " + text[:3000])
raise ValueError("leaked: " + " || ".join(found))""",
    "vandal": """\
import os, shutil
for victim in ("{out}/solved", "{out}/grades.csv", "{class_}/solved", "{root}/tests/test_softmax.py"):
    try:
        shutil.rmtree(victim) if os.path.isdir(victim) else open(victim, "w").write("vandalised")
    except OSError:
        pass
return None""",
    "daemon": """\
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.environ["MINITORCH_TEST_DAEMON"] = "1"
        for _ in range(600):
            for victim in ("{out}/solved/results.json", "{out}/daemon/results.json"):
                try:
                    open(victim, "w").write('{{"score": 99}}')
                except OSError:
                    pass
            time.sleep(0.5)
    os._exit(0)
return np.triu(np.ones((length, length), dtype=bool), k=1)""",
    "signaller": """\
import os, signal
for pid in [os.getppid(), 1] + [int(p) for p in os.listdir("/proc") if p.isdigit()]:
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            if pid != os.getpid():
                os.kill(pid, sig)
        except OSError:
            pass
return np.triu(np.ones((length, length), dtype=bool), k=1)""",
    "hog": "block = bytearray(64 << 30)\nreturn None",
}


def build_honest_class(edition: Path, folder: Path) -> dict[str, dict[str, float]]:
    """The honest copies; returns each student's expected points per exercise."""
    def copy(name):
        return Path(shutil.copytree(edition, folder / name))

    full, expected = dict(POINTS), {}
    solve(copy("solved"))
    expected["solved"] = full
    copy("untouched")
    expected["untouched"] = dict.fromkeys(GRADED, 0)
    set_region(solve(copy("hang")), "4.1", HANG)
    expected["hang"] = {**full, "4.1": 0}
    set_region(solve(copy("exits")), "3.1", "import os\nos._exit(0)")
    expected["exits"] = {**full, "3.1": 0}
    set_region(solve(copy("syntax")), "3.2", "return softmax(scores.masked_fill(future, -np.inf), axis=-1")
    expected["syntax"] = {**full, "3.2": 0}
    set_region(solve(copy("wrong_softmax")), "2.3", "weights = np.ones_like(scores.data) / scores.shape[axis]\n\n"
                                                     "def backward(grad):\n    return (grad,)")
    expected["wrong_softmax"] = {**full, "2.3": LESS}  # 3.2 calls the grader's softmax: it keeps its points
    stub = solve(copy("stub_softmax"), "1.3", "3.1", "3.2", "3.5", "4.1")
    expected["stub_softmax"] = {**full, "2.3": 0}
    set_region(solve(copy("slow_softmax")), "2.3", "import time\ntime.sleep(60)\n" +
               textwrap.dedent(region_body((ROOT / EXERCISE_FILES["2.3"]).read_text(), "2.3")))
    expected["slow_softmax"] = {**full, "2.3": 0}
    no_end = solve(copy("no_end"))
    attention = no_end / EXERCISE_FILES["3.1"]
    attention.write_text(attention.read_text().replace("    # END EXERCISE 3.1\n", "", 1))
    expected["no_end"] = full
    old = solve(copy("old_edition"))
    metrics = old / EXERCISE_FILES["3.5"]
    metrics.write_text(metrics.read_text().replace("EXERCISE 3.5", "EXERCISE 8.1"))
    expected["old_edition"] = full
    claims = solve(copy("claims_less"), "3.1")
    (claims / "minitorch" / "exercises" / "edition.json").write_text(json.dumps({"handed_out": ["3.1"]}))
    expected["claims_less"] = {**dict.fromkeys(GRADED, 0), "3.1": POINTS["3.1"]}
    zipped = solve(copy("zipped"))
    shutil.make_archive(str(folder / "zipped"), "zip", zipped.parent, zipped.name)
    shutil.rmtree(zipped)
    expected["zipped"] = full
    del stub
    return expected


def build_hostile_class(edition: Path, folder: Path, out: Path, class_: Path) -> dict[str, dict[str, float]]:
    expected = {}
    for name, body in HOSTILE.items():
        copy = Path(shutil.copytree(edition, folder / name))
        solve(copy, *[i for i in GRADED if i != "3.1"])
        set_region(copy, "3.1", body.format(out=out, class_=class_, root=ROOT))
        # the signaller's 3.1 is right, but it brings down its own sandbox: its own tests crash
        expected[name] = {**POINTS, "3.1": {"daemon": POINTS["3.1"], "signaller": LESS}.get(name, 0)}
    return expected


def digest_tree(root: Path) -> dict[str, str]:
    return {path.relative_to(root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(root.rglob("*")) if path.is_file() and "__pycache__" not in path.parts
            and ".git" not in path.parts and ".pytest_cache" not in path.parts}


def workers_alive() -> list[str]:
    """Processes of a student's worker of this test session's runs still running (every grader this session
    starts inherits its run marker; a grading beside it on the machine has another and does not count)."""
    alive = []
    for pid in sandbox.processes_of_run(sandbox.RUN_MARKER):
        try:
            alive.append(f"{pid}: {Path(f'/proc/{pid}/cmdline').read_bytes()[:120]!r}")
        except OSError:
            pass
    return alive


os.environ.setdefault(sandbox.RUN_MARKER_VARIABLE, sandbox.RUN_MARKER)  # the graders this module starts carry it


def grade(submissions: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "minitorch.exercises", "grade", str(submissions), "--out", str(out), "--jobs",
               "2", "--timeout", "4", "--exercise-seed", str(SEED), "--only", ",".join(GRADED), *extra]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=1800,
                          env=_clean_environment())


def check_row(row: dict, student: str, expected: dict, flags: str = "") -> None:
    got = {exercise_id: float(row[exercise_id]) for exercise_id in GRADED}
    exact = {i: points for i, points in expected.items() if points != LESS}
    assert {i: got[i] for i in exact} == pytest.approx(exact), (
        f"{student}: points per exercise {got}, expected {expected}")
    assert all(got[i] < POINTS[i] for i in expected if expected[i] == LESS), f"{student}: {got} should lose points"
    assert float(row["total"]) == pytest.approx(sum(got.values())), f"{student}: total {row['total']} is not the sum"
    assert row["max_total"] == str(sum(POINTS.values())), f"{student}: max_total {row['max_total']} is not the course's"
    assert flags in row["flags"], f"{student}: flags {row['flags']!r} should mention {flags!r}"


@pytest.mark.slow
def test_a_class_earns_exactly_its_own_code_and_hostile_copies_touch_nothing_else(tmp_path):
    """Honest mistakes cost only their own exercise; hostile copies cannot forge a grade, read the grader's
    answers or seed, change another student's results, the submissions or the grader's checkout, stop the run,
    or leave a process behind."""
    before = digest_tree(ROOT)
    subprocess.run([sys.executable, "-m", "minitorch.exercises", "student-edition", str(tmp_path / "edition")],
                   cwd=ROOT, check=True, capture_output=True, env=_clean_environment())
    class_, out = tmp_path / "class", tmp_path / "out"
    expected = build_honest_class(tmp_path / "edition", class_)
    honest = grade(class_, out)
    assert honest.returncode == 0, honest.stdout + honest.stderr
    assert honest.stdout.startswith("Isolation: "), "the run's first line names the isolation in force"
    rows = {row["student"]: row for row in csv.DictReader((out / "grades.csv").open())}
    flags = {"hang": "timed out", "exits": "crashed", "syntax": "does not compile: 3.2", "slow_softmax": "timed out",
             "no_end": "read leniently: 3.1", "old_edition": "read leniently: 3.5"}
    for student, points in expected.items():
        check_row(rows[student], student, points, flags.get(student, ""))
    results_before = {student: (out / student / "results.json").read_bytes() for student in expected}

    expected_hostile = build_hostile_class(tmp_path / "edition", class_, out, class_)
    submissions_before = digest_tree(class_)
    hostile = grade(class_, out)
    assert hostile.returncode == 0, hostile.stdout + hostile.stderr
    assert "Interrupted" not in hostile.stdout and len(re.findall(r"^\[\d+/\d+\] ", hostile.stdout, re.M)) == len(
        HOSTILE), "the run must go on to the end whatever a copy does, naming each student"
    assert digest_tree(ROOT) == before, "grading changed a file of the grader's checkout"
    assert digest_tree(class_) == submissions_before, "a copy changed the submissions"
    assert {s: (out / s / "results.json").read_bytes() for s in expected} == results_before, (
        "a copy changed another student's results")
    time.sleep(1)
    assert workers_alive() == [], "a process a student started outlived the run"

    rows = {row["student"]: row for row in csv.DictReader((out / "grades.csv").open())}
    for student, points in expected_hostile.items():
        check_row(rows[student], student, points, "crashed" if student == "signaller" else "")
    assert "crashed" in rows["hog"]["flags"] or "failed" in (out / "hog" / "feedback.md").read_text()
    for student in [*expected, *expected_hostile]:
        for name in ("results.json", "feedback.md"):
            text = (out / student / name).read_text()
            assert str(SEED) not in text, f"{student}/{name} names the hidden seed"
            assert "exponentials.sum" not in text and "weights * (grad -" not in text, (
                f"{student}/{name} quotes the grader's reference answer")
    run = json.loads((out / "run.json").read_text())
    assert run["exercise_seed"] == SEED, "the seed stays with the instructor, in run.json"

    again = grade(class_, out)
    assert f"Grading 0 of {len(rows)} students" in again.stdout, again.stdout


@pytest.mark.slow
def test_ctrl_c_keeps_the_students_graded_and_writes_nothing_for_the_one_being_graded(tmp_path):
    """Ctrl-C while a student is being graded: those finished keep their grades, the one stopped half-way gets no
    results.json (a partial score kept by the next run would cost them points), and the same command again grades
    them in full."""
    subprocess.run([sys.executable, "-m", "minitorch.exercises", "student-edition", str(tmp_path / "edition")],
                   cwd=ROOT, check=True, capture_output=True, env=_clean_environment())
    class_, out = tmp_path / "class", tmp_path / "out"
    solve(shutil.copytree(tmp_path / "edition", class_ / "a_first"))
    slow = solve(shutil.copytree(tmp_path / "edition", class_ / "b_slow"))
    reference = textwrap.dedent(region_body((ROOT / EXERCISE_FILES["3.1"]).read_text(), "3.1"))
    set_region(slow, "3.1", "import time\ntime.sleep(1.5)\n" + reference)  # right, but 8 tests take 12 s or more
    command = [sys.executable, "-m", "minitorch.exercises", "grade", str(class_), "--out", str(out), "--jobs", "1",
               "--timeout", "20", "--exercise-seed", str(SEED), "--only", ",".join(GRADED)]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env=_clean_environment(), start_new_session=True)
    printed = []
    for line in process.stdout:
        printed.append(line)
        if line.startswith("[1/2] a_first"):
            time.sleep(2)  # b_slow's check process is running
            os.killpg(process.pid, signal.SIGINT)  # as Ctrl-C in a terminal: the whole foreground group
            break
    rest, _ = process.communicate(timeout=300)
    output = "".join(printed) + rest
    assert process.returncode == 130 and "Interrupted: the 1 students graded in this run are kept" in output, output
    assert (out / "a_first" / "results.json").exists(), "the student graded before Ctrl-C keeps their grade"
    assert not (out / "b_slow" / "results.json").exists(), (
        f"the student stopped half-way must get no results.json, or the next run keeps a partial score:\n{output}")
    time.sleep(1)
    assert workers_alive() == [], "a process of the stopped student outlived the run"

    again = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900, env=_clean_environment())
    assert again.returncode == 0 and "Grading 1 of 2 students" in again.stdout, again.stdout + again.stderr
    rows = {row["student"]: row for row in csv.DictReader((out / "grades.csv").open())}
    for student in ("a_first", "b_slow"):
        check_row(rows[student], student, dict(POINTS))


def test_the_edition_tells_graders_the_grade_command_and_the_root_option_with_equals(tmp_path, capsys):
    from minitorch.exercises import __main__ as exercises_cli
    assert exercises_cli.main(["student-edition", str(tmp_path / "edition"), "--only", "3.1,3.2"]) == 0
    printed = capsys.readouterr().out
    assert "python -m minitorch.exercises grade SUBMISSIONS --out" in printed
    assert f"--edition {(tmp_path / 'edition').resolve()} --exercise-seed SEED" in printed, (
        "the printed grade command grades what this edition handed out, on a seed of the instructor's")
    assert "--minitorch-root=PATH" in printed and "--minitorch-root PATH" not in printed
    manifest = json.loads((tmp_path / "edition" / "minitorch" / "exercises" / "edition.json").read_text())
    assert manifest["handed_out"] == ["3.1", "3.2"]
