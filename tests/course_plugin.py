"""The course's pytest plugin (chapter 00): which minitorch is tested, the exercises' markers, the seed of the graded
tests, the ``student`` fixture and the scoreboard. tests/conftest.py loads it.

Markers (`MARKERS`, declared here as data: the developers' guide fixes the top level, so there is no pytest.ini):
- ``@pytest.mark.exercise("2.4")``: the test grades exercise 2.4, and gets the markers ``ex2_4`` and ``ch02``
  (``pytest -m ex2_4``); every exercise's and chapter's marker is declared, so ``--strict-markers`` works.
  ``requires_values=True``: a trivial answer passes the test (it checks a shape, a dtype, an input left unchanged);
  it pays only when every value test of its exercise passed (`registry.paid_tests`, as class grading counts).
- ``@pytest.mark.slow``: takes more than a few seconds; skip with ``-m "not slow"``.

Options:
- ``--minitorch-root=PATH`` (MINITORCH_ROOT): test the minitorch in PATH, e.g. a student's copy; it goes first on
  sys.path, and the run stops if the minitorch imported is another. Write it with '=': pytest reads a folder after a
  space as a folder of tests and loads the conftest.py there (the run then stops, saying so).
- ``--exercise-seed N`` (MINITORCH_EXERCISE_SEED, default 0): the seed of the graded tests' random inputs (fixture
  ``exercise_seed``); an instructor grades on a seed the students never saw.
- ``--scoreboard-json PATH``: also write every test's outcome and the scoreboard as JSON (see its --help).
- ``--timeout S`` (pytest-timeout's; PYTEST_TIMEOUT, else MINITORCH_TEST_TIMEOUT, else 600): a test whose body runs
  longer fails as timed out and the run goes on; 0 (or -p no:timeout) turns it off.

The ``student`` fixture: a graded test reaches the student's code only through it, ``student.softmax(scores)`` (a
probe of minitorch/exercises/grader/sandboxed/probes.py: data in, data out). In a student's own run the probe runs
here. When a class is graded (MINITORCH_GRADING_PLAN names a plan) it runs in the student's sandboxed worker, and
this process, where the checks decide, never runs the student's code; the tests then run grouped by exercise, and
each outcome is appended as it happens to the file MINITORCH_GRADING_RECORD names (JSON lines, the collected first).

Outcomes: a test that fails with an exercise stub's NotImplementedError is *not attempted* (its own exercise's stub)
or *blocked* (another's: reported as skipped, "blocked: needs exercise X.Y (chapter NN) first"). The scoreboard at
the end counts, per exercise in ID order, passed, failed (every kind of failure), not attempted and blocked, and the
points the paid tests earn (`registry.points_per_test`); a student edition's manifest says which exercises count.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
import signal
import sys
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parent.parent  # the project these tests belong to


def _load_by_path(name: str, path: Path):
    """A module of this repository (standard library only), loaded from its file without importing the minitorch
    under test: the titles, points and rules come from the grader's copy."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


registry = _load_by_path("_minitorch_exercise_registry", REPOSITORY / "minitorch" / "exercises" / "registry.py")
CHAPTERS = sorted({exercise.chapter for exercise in registry.EXERCISES.values()})
MARKERS = {
    "exercise(id, requires_values=False)": "the test grades exercise `id`, e.g. '2.4'; requires_values=True: it pays "
                                           "only when the exercise's value tests pass",
    "slow": "takes more than a few seconds (deselect with -m 'not slow')",
    "timeout(seconds)": "pytest-timeout's limit of the test's body (none with -p no:timeout, which declares no marker)",
    **{exercise.marker: f"tests of exercise {exercise.id}, {exercise.title}"
       for exercise in sorted(registry.EXERCISES.values(), key=lambda exercise: registry.sort_key(exercise.id))},
    **{f"ch{chapter:02d}": f"tests of the exercises of chapter {chapter:02d}" for chapter in range(1, 10)},
}
DEFAULT_TIMEOUT = 600.0  # seconds a test's body may run
SEED = pytest.StashKey[int]()  # the exercise seed of this run
COLUMNS = ("passed", "failed", "not attempted", "blocked")  # the scoreboard's; skipped is a line under it
FAILURE_KINDS = ("timed out", "crashed", "does not compile", "function not found", "too large",
                 "helper outside the function", "refused")  # class grading's kinds of failure: the failed column
STATUSES = (*COLUMNS, "skipped", *FAILURE_KINDS)
SCOREBOARD_WRITER = "python -m pytest --scoreboard-json"  # the mark of the scoreboard's JSON
FINISHED = (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED)  # a whole run's
OUTPUT_CAP = 10_000  # characters of a test's captured output kept in the grading record
_ANSI_COLOUR = re.compile(r"\x1b\[[0-9;]*m")


def pytest_addhooks(pluginmanager):
    """pytest-timeout, also where third-party plugins are not loaded on their own (the grader's check processes),
    under the name its entry point uses, so that pytest never loads it twice."""
    try:
        import pytest_timeout
    except ImportError as error:
        raise pytest.UsageError(f"{error}: pip install -r requirements.txt") from None
    if not pluginmanager.is_registered(pytest_timeout) and not pluginmanager.has_plugin("timeout"):
        pluginmanager.register(pytest_timeout, "timeout")


def pytest_addoption(parser):
    group = parser.getgroup("minitorch", "minitorch exercises and grading")
    group.addoption("--minitorch-root", default=os.environ.get("MINITORCH_ROOT") or None,
                    help="folder holding the minitorch to test, e.g. a student's copy (default: $MINITORCH_ROOT, else "
                         "the repository of these tests)")
    group.addoption("--exercise-seed", default=None,
                    help="seed of the graded tests' random inputs (default: $MINITORCH_EXERCISE_SEED, else 0)")
    group.addoption("--scoreboard-json", default=None,
                    help="also write the per-test outcomes and the scoreboard to this JSON file once the run finishes "
                         "(Ctrl-C leaves it as it was); it replaces only an earlier scoreboard")


@pytest.hookimpl(tryfirst=True)  # before pytest-timeout reads its settings
def pytest_configure(config):
    for name, description in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {description}")
    config.option.timeout = _setting(config, "--timeout", ("PYTEST_TIMEOUT", "MINITORCH_TEST_TIMEOUT"),
                                     DEFAULT_TIMEOUT, float, "a finite number of seconds, 0 or more (0 = no limit)")
    seed = config.stash[SEED] = _setting(config, "--exercise-seed", ("MINITORCH_EXERCISE_SEED",), 0, int,
                                         "a whole number, 0 or more")
    _check_scoreboard_json(config.getoption("--scoreboard-json"))
    _check_exercise_markers(config.getoption("markexpr") or "")
    root = Path(config.getoption("--minitorch-root") or REPOSITORY).expanduser().resolve()
    _use_minitorch_from(root)
    if os.environ.get("MINITORCH_GRADER_PID", "").isdigit():  # a check process ends with the grade run that started
        try:  # it: SIGKILLed, that run can stop no one (the check process is in a session of its own)
            from minitorch.outputs import end_with_parent
            end_with_parent(int(os.environ["MINITORCH_GRADER_PID"]), signal.SIGKILL)
        except ImportError:  # (a grader's library without it: a test's tiny book)
            pass
    scoreboard = Scoreboard(config, root, seed)
    config.pluginmanager.register(scoreboard)
    config.pluginmanager.register(StudentCode(scoreboard))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_makereport(item, call):
    """A test stopped by an exercise's stub gets a short report at once (the scoreboard then words it: not attempted,
    or blocked): pytest's own report renders the whole traceback, about 70 ms a test, and a student edition stops
    hundreds of tests at their stubs."""
    stub = None if call.excinfo is None else registry.stub_error(call.excinfo.value)
    if stub is None:
        return None
    sections = [(f"Captured {key} {when}", text) for when, key, text in getattr(item, "_report_sections", [])]
    return pytest.TestReport(item.nodeid, item.location, {name: 1 for name in item.keywords}, "failed", stub[1],
                             call.when, sections, call.duration, call.start, call.stop,
                             user_properties=item.user_properties)

def _setting(config, option: str, variables: tuple[str, ...], default, parse, kind: str):
    """The value of `option`, else of the first environment variable set, else `default`, parsed by `parse`; a usage
    error naming where it came from when it is not `kind` (NaN and infinity are never "no limit")."""
    value, source = config.getoption(option, None), option  # (None: -p no:timeout, no such option)
    for variable in variables:
        if value is None and os.environ.get(variable):
            value, source = os.environ[variable], variable
    try:
        value = default if value is None else parse(value)
        if not math.isfinite(value) or value < 0:
            raise ValueError(value)
    except (TypeError, ValueError):
        raise pytest.UsageError(f"{source} must be {kind}, got {value!r}") from None
    return value


def _check_scoreboard_json(path) -> None:
    """The scoreboard's file follows every command's rule for output files (its folder must exist; no --force)."""
    if path is None:
        return
    if not Path(path).expanduser().resolve().parent.is_dir():
        raise pytest.UsageError(f"--scoreboard-json={path}: the folder {Path(path).expanduser().resolve().parent} "
                                f"does not exist; create it first (no test was run)")
    checker = REPOSITORY / "minitorch" / "outputs" / "paths.py"  # standard library only
    if checker.is_file():
        outputs = _load_by_path("_minitorch_outputs", checker)
        own = outputs.OwnFile("an earlier scoreboard (JSON that --scoreboard-json wrote)",
                              lambda file: outputs.json_written_by(file, SCOREBOARD_WRITER))
        try:
            outputs.check_output_file(path, "--scoreboard-json", own=own, force=None)
        except outputs.OutputPathError as error:
            raise pytest.UsageError(f"{error} (no test was run)") from None


def _check_exercise_markers(expression: str) -> None:
    """`-m ex9_9` or `-m ch08` names no exercise, and `-m ch1`, `-m ex1.2` or `-m EX1_2` no marker (they are ch01 and
    ex1_2; markers are case-sensitive): say so, with the valid ones, instead of deselecting everything."""
    for chapter, number in re.findall(r"(?i)\bex(\d+)_(\d+)\b", expression):
        if f"{chapter}.{number}" not in registry.EXERCISES:
            known = ", ".join(sorted(registry.EXERCISES, key=registry.sort_key))
            raise pytest.UsageError(f"-m {expression!r}: there is no exercise {chapter}.{number}; the exercises are "
                                    f"{known} (python -m minitorch.exercises list)")
    for chapter in re.findall(r"(?i)\bch(\d+)\b", expression):
        if int(chapter) not in CHAPTERS:
            raise pytest.UsageError(f"-m {expression!r}: chapter {chapter} has no graded exercises; the chapters "
                                    f"with exercises are {', '.join(f'{c:02d}' for c in CHAPTERS)}")
    for name in sorted(set(re.findall(r"(?i)\b(?:ex|ch)\d[\w:+\-.\[\]\\/]*", expression)) - set(MARKERS)):  # -m's names
        numbers = [int(number) for number in re.findall(r"\d+", name)]
        meant = f"ch{numbers[0]:02d}" if name[:2].lower() == "ch" else "ex" + "_".join(map(str, numbers))
        raise pytest.UsageError(f"-m {expression!r}: no test is marked {name}; " + (
            f"write {meant}" if meant in MARKERS else "exercise 3.2's tests are marked ex3_2, chapter 3's ch03"))


def _use_minitorch_from(root: Path) -> None:
    """Put `root` first on sys.path, import minitorch, and stop if it came from anywhere else."""
    if not (root / "minitorch" / "__init__.py").is_file():
        pytest.exit(f"--minitorch-root / MINITORCH_ROOT: {root} holds no minitorch/__init__.py; point it at the top "
                    f"folder of a copy of the project", returncode=pytest.ExitCode.USAGE_ERROR)
    sys.path.insert(0, str(root))
    os.environ["MINITORCH_ROOT"] = str(root)  # test_chapters.py and subprocesses read it
    try:
        import minitorch
    except Exception as error:  # a student's syntax error, say: one clear message instead of many
        pytest.exit(f"could not import minitorch from {root}: {type(error).__name__}: {error}",
                    returncode=pytest.ExitCode.USAGE_ERROR)
    imported = Path(minitorch.__file__).resolve()
    if not imported.is_relative_to(root):
        pytest.exit(f"the minitorch under test is {root / 'minitorch'}, but the one imported is {imported.parent} (it "
                    f"was imported before the tests could choose); run python -m pytest from a folder without another "
                    f"minitorch, or uninstall that one", returncode=pytest.ExitCode.USAGE_ERROR)


@pytest.fixture(scope="session")
def exercise_seed(pytestconfig) -> int:
    """The seed of the graded tests' random inputs (--exercise-seed, else MINITORCH_EXERCISE_SEED, else 0)."""
    return pytestconfig.stash[SEED]


def _exercise_of(item) -> str | None:
    return str(mark.args[0]) if (mark := item.get_closest_marker("exercise")) is not None else None


def _chapter_of(exercise_id: str) -> str:
    return f"{int(exercise_id.split('.')[0]):02d}"


class StudentCode:
    """The ``student`` fixture; when a class is graded, the tests grouped by exercise, each outcome recorded as it
    happens (a check process stopped at the student's budget still leaves those it reached), the worker stopped."""

    def __init__(self, scoreboard: Scoreboard):
        self.scoreboard, self.calls = scoreboard, None  # calls: made on first use, Direct() or the plan's WorkerPool
        plan, record = os.environ.get("MINITORCH_GRADING_PLAN"), os.environ.get("MINITORCH_GRADING_RECORD")
        if plan and not os.path.isfile(plan):  # (left set in a shell, each graded test failed reading it)
            raise pytest.UsageError(f"MINITORCH_GRADING_PLAN={plan}: no such file; the grader sets it for its check "
                                    f"processes only: unset MINITORCH_GRADING_PLAN")
        self.grading, self.record = bool(plan), Path(record) if record else None

    def _write(self, **event) -> None:
        if self.record is not None:
            with open(self.record, "a", encoding="utf-8") as record:
                record.write(json.dumps(event) + "\n")

    def pytest_collection_finish(self, session):
        self._write(collected={item.nodeid: _exercise_of(item) for item in session.items if _exercise_of(item)})

    def pytest_runtest_logfinish(self, nodeid, location):
        self._write(test=nodeid, **self.scoreboard.result_of(nodeid))

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        if self.grading:  # one worker child per exercise: its tests together, in the book's order
            items.sort(key=lambda item: registry.sort_key(_exercise_of(item) or "99.99"))

    def pytest_runtest_setup(self, item):
        """An exercise the grading plan decided before any test (no file for its function, one too large) fails its
        tests here, with that reason, and no worker starts for it."""
        if self.grading and _exercise_of(item) is not None:
            from minitorch.exercises.grader.trusted.worker_client import decided_outcome

            outcome = decided_outcome(_exercise_of(item))
            if outcome is not None:
                raise outcome

    @pytest.fixture
    def student(self, request):
        """The student's code for this test's exercise, reached through probes: ``student.softmax(scores)``."""
        from minitorch.exercises.grader.trusted.worker_client import ThroughWorker, from_environment, grading_problem

        exercise_id = _exercise_of(request.node)
        if exercise_id is None:
            pytest.fail("the student fixture serves graded tests only: mark the test @pytest.mark.exercise('X.Y')",
                        pytrace=False)
        if self.calls is None:
            self.calls = from_environment()
        if self.grading:
            return ThroughWorker(self.calls, exercise_id)
        problem = grading_problem(exercise_id, self.scoreboard.root)  # what the grader would refuse fails here too
        if problem:
            pytest.fail(problem, pytrace=False)
        return self.calls

    def pytest_sessionfinish(self, session):
        if self.grading and self.calls is not None:
            self.calls.close()


class Scoreboard:
    """Classifies outcomes (passed, failed, not attempted, blocked, skipped) and writes the scoreboard."""

    def __init__(self, config, root: Path, seed: int):
        self.config, self.root, self.seed, self.json_path = config, root, seed, config.getoption("--scoreboard-json")
        self.exercise_of: dict[str, str] = {}  # test id -> the exercise it grades, if that one counts
        self.results: dict[str, dict] = {}  # test id -> {"status", "blocked_by", "message", "output", ...}
        try:  # a student edition's manifest: the exercises it handed out count; None (the full book): every one
            manifest = registry.read_manifest_data(root)
        except registry.ExerciseError as error:
            raise pytest.UsageError(f"{error}; it should read {{\"handed_out\": [\"3.1\", ...], ...}}") from None
        self.counted = None if manifest is None else set(manifest["handed_out"])

    def pytest_collection_finish(self, session):
        """Stop if a conftest.py from outside these tests was loaded (a student's copy's): it could change grades."""
        foreign = sorted({str(Path(plugin.__file__).resolve()) for plugin in session.config.pluginmanager.get_plugins()
                          if getattr(plugin, "__name__", "").split(".")[-1] == "conftest"
                          and not Path(plugin.__file__).resolve().is_relative_to(Path(__file__).resolve().parent)})
        if foreign:
            pytest.exit(f"pytest loaded {', '.join(foreign)} besides {Path(__file__).resolve()}, probably because it "
                        f"read the folder after --minitorch-root as a folder of tests. Write "
                        f"--minitorch-root={self.root} (with '='), or MINITORCH_ROOT={self.root} python -m pytest ...",
                        returncode=pytest.ExitCode.USAGE_ERROR)

    def pytest_report_header(self, config):
        return f"minitorch under test: {self.root / 'minitorch'} (exercise seed {self.seed})"

    @pytest.hookimpl(tryfirst=True)  # before -m deselects anything: it must see exX_Y and chNN
    def pytest_collection_modifyitems(self, config, items):
        for item in items:
            item.add_marker(pytest.mark.timeout(func_only=True))  # as the limit says: the test's body, not fixtures
            exercise_id = _exercise_of(item)
            if exercise_id is None:
                continue
            for name in ("ex" + exercise_id.replace(".", "_"), "ch" + _chapter_of(exercise_id)):
                if name not in MARKERS:  # not in the table: the registry's tests say so
                    config.addinivalue_line("markers", f"{name}: (not in minitorch/exercises/registry.py)")
                item.add_marker(name)
            if self.counted is None or exercise_id in self.counted:  # not handed out: it runs, ungraded
                self.exercise_of[item.nodeid] = exercise_id

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = (yield).get_result()
        if report.when == "call" and report.passed and self._graded_without_the_student(item):
            report.outcome = "failed"
            report.longrepr = ("grader error: this graded test never called the student's code through the student "
                               "fixture, so it cannot earn points (it would have checked the grader's own library)")
        mark = item.get_closest_marker("exercise")
        result = self.results.setdefault(item.nodeid, {"status": None, "blocked_by": None, "message": "", "output": "",
                                                       "requires_values": bool(mark and mark.kwargs.get(
                                                           "requires_values", False))})
        if report.when == "call" or report.failed:
            captured = "".join(text for _, text in report.sections) + (report.longreprtext if report.failed else "")
            result["output"] = (result["output"] + captured)[:OUTPUT_CAP]
        if report.failed and call.excinfo is not None:
            self._classify(item, report, call.excinfo, result)
        elif report.failed:
            result.update(status="failed", message=str(report.longrepr)[-500:])
        elif report.skipped and result["status"] is None:
            result.update(status="skipped", message=str(report.longrepr)[-500:])
        elif report.when == "call" and report.passed and result["status"] is None:
            result["status"] = "passed"

    def _classify(self, item, report, excinfo, result: dict) -> None:
        """A failure: not attempted (its own exercise's stub), blocked (another's), or the kind the grader gives."""
        stub, stub_message = registry.stub_error(excinfo.value) or (None, "")
        if stub is not None and stub == self.exercise_of.get(item.nodeid):
            report.longrepr = f"not attempted: {stub_message}"
            result.update(status="not attempted", message=stub_message)
        elif stub is not None:
            reason = f"blocked: needs exercise {stub} (chapter {_chapter_of(stub)}) first"
            path, line, _ = item.location
            report.outcome, report.longrepr = "skipped", (path, (line or 0) + 1, reason)
            result.update(status="blocked", blocked_by=stub, message=reason)
        else:  # a worker that hung or died (class grading) reports its kind: timed out, crashed
            module = sys.modules.get("minitorch.exercises.grader.trusted.worker_client")  # loaded when grading
            outcome = excinfo.value if module and isinstance(excinfo.value, module.GradingOutcome) else None
            result.update(status=outcome.kind if outcome else "failed",
                          message=str(outcome) if outcome else _first_line(excinfo))

    @staticmethod
    def _graded_without_the_student(item) -> bool:
        """When a class is graded: a graded test that made no call to the student's worker."""
        if not os.environ.get("MINITORCH_GRADING_PLAN") or _exercise_of(item) is None:
            return False
        return getattr(item.funcargs.get("student"), "calls", 0) == 0

    def exercise_table(self) -> dict[str, dict]:
        """Per exercise: its counts, "points" (the exercise's), "max" (what the tests that ran are worth: without the
        hidden tests, the public part of its points), "hidden" (hidden tests run), "paid" and "earned"."""
        table: dict[str, dict] = {}
        outcomes: dict[str, list[tuple[bool, bool, bool]]] = {}  # exercise -> (passed, requires values, hidden)
        for nodeid, exercise_id in self.exercise_of.items():
            status = self.results.get(nodeid, {}).get("status")
            if status is None:
                continue  # deselected or never run
            known = registry.EXERCISES.get(exercise_id)
            row = table.setdefault(exercise_id, {
                "chapter": int(exercise_id.split(".")[0]), "points": known.points if known else 0, "tests": 0,
                "title": known.title if known else "(not in minitorch/exercises/registry.py)", "hidden": 0,
                **{status: 0 for status in STATUSES}})
            hidden = registry.is_hidden_test(nodeid)
            row["tests"], row[status], row["hidden"] = row["tests"] + 1, row[status] + 1, row["hidden"] + hidden
            outcomes.setdefault(exercise_id, []).append((status == "passed", bool(self.results[nodeid].get(
                "requires_values")), hidden))
        for exercise_id, row in table.items():
            passed, gated, hidden = (list(column) for column in zip(*outcomes[exercise_id]))
            known = registry.EXERCISES.get(exercise_id)
            worth = registry.points_per_test(known, hidden) if known else [0.0] * len(hidden)
            paid = registry.paid_tests(passed, gated, hidden)
            row["paid"], row["max"] = sum(paid), round(sum(worth), 6)
            row["earned"] = round(sum(value for value, is_paid in zip(worth, paid) if is_paid), 6)
        return dict(sorted(table.items(), key=lambda item: registry.sort_key(item[0])))

    @pytest.hookimpl(wrapper=True, tryfirst=True)  # outermost: written after pytest's short summary
    def pytest_terminal_summary(self, terminalreporter, exitstatus):
        result = yield
        self.write_scoreboard(terminalreporter)
        if self.json_path and exitstatus not in FINISHED:
            terminalreporter.write_line(f"--scoreboard-json: {self.json_path} was not written: the run did not finish "
                                        f"(the file is left as it was)")
        return result

    def write_scoreboard(self, terminalreporter) -> None:
        """The exercises that count, then the notes: those alone if none ran (`-m ex3_1` of one not handed out)."""
        table, write = self.exercise_table(), terminalreporter.write_line
        totals = {key: round(sum(row[key] for row in table.values()), 6)
                  for key in (*STATUSES, "earned", "points", "max", "hidden")}
        width = max([len(row["title"]) for row in table.values()], default=0) + 2

        def line(name, title, row, earned):
            counts = [row["passed"], row["failed"] + sum(row[kind] for kind in FAILURE_KINDS), row["not attempted"],
                      row["blocked"]] if row else COLUMNS  # every kind of failure is counted as failed
            out_of = "" if not row else f" / {row['max']:g}" + (f" of {row['points']:g}" if row["max"] != row[
                "points"] else "")  # " / 1.5 of 3": only the public part of the points was at stake
            return (f"{name:<9}{title:<{width}}" + "".join(f"{count:>{len(column) + 2}}" for column, count in zip(
                COLUMNS, counts)) + f"{earned:>10}{out_of}")

        if table:
            terminalreporter.section(f"exercise scoreboard (seed {self.seed})", sep="=")
            write(line("exercise", "title", None, "points"))
            for exercise_id, row in table.items():
                write(line(exercise_id, row["title"], row, f"{row['earned']:.2f}"))
            write(line("total", "", totals, f"{totals['earned']:.2f}"))
        for note in self._notes(table, totals):
            write(note)

    def _notes(self, table: dict, totals: dict) -> list[str]:
        """The lines under the scoreboard: what its numbers leave out, and what to do next."""
        notes, share = [], f"{totals['max']:g} of the {totals['points']:g} point{'s' if totals['points'] != 1 else ''}"
        if totals["max"] < totals["points"] and not totals["hidden"]:
            rest = round(totals["points"] - totals["max"], 6)
            notes.append(f"(the tests run here are worth {share}; the instructor's hidden tests, on inputs of their "
                         f"own, grade the other {rest:g} when the class is graded)")
        elif totals["max"] < totals["points"]:
            notes.append(f"(the tests run here are worth {share}: an exercise's public tests and its hidden ones share "
                         f"its points)")
        kinds = [f"{totals[kind]} {kind}" for kind in FAILURE_KINDS if totals[kind]]
        if kinds:
            notes.append(f"(the failed column includes {', '.join(kinds)})")
        if totals["not attempted"]:  # pytest's own last line counts them among its failures
            notes.append(f"(pytest's summary counts the {totals['not attempted']} not-attempted test(s) as failed, and "
                         f"the blocked ones as skipped)")
        unpaid = [exercise_id for exercise_id, row in table.items() if row["paid"] < row["passed"]]
        if unpaid:
            notes.append(f"(exercise(s) {', '.join(unpaid)}: tests of shape, dtype or inputs left unchanged earn "
                         f"nothing until every value test of the exercise passes)")
        if totals["skipped"]:
            notes.append(f"({totals['skipped']} graded test(s) skipped for other reasons; they earn nothing)")
        blockers = sorted({r["blocked_by"] for r in self.results.values() if r["blocked_by"]}, key=registry.sort_key)
        own = [blocker for blocker in blockers if self.counted is None or blocker in self.counted]
        inherited = [blocker for blocker in blockers if blocker not in own]
        if own:
            notes.append(f"blocked tests wait for exercise(s) {', '.join(own)}: finish those first")
        if inherited:  # neither handed out nor released (or released from a copy that still had their stubs)
            handed_out = ", ".join(sorted(self.counted, key=registry.sort_key)) or "none"
            notes.append(f"blocked tests {'also ' * bool(own)}wait for exercise(s) {', '.join(inherited)}, which this "
                         f"edition did not hand out (it hands out {handed_out}): they are stubs here (an edition keeps "
                         f"only the answers the instructor released), and their tests do not count")
        return notes

    def pytest_sessionfinish(self, session, exitstatus):
        if self.json_path and exitstatus in FINISHED:  # (an interrupted run's partial one never replaces a whole one)
            table = self.exercise_table()
            total = {key: round(sum(row[key] for row in table.values()), 6) for key in ("points", "max", "earned")}
            text = json.dumps({"written_by": SCOREBOARD_WRITER, "minitorch_root": str(self.root), "exercise_seed":
                               self.seed, "exercises": table, "total": total, "tests": {
                                   nodeid: self.result_of(nodeid) for nodeid in self.results}}, indent=1) + "\n"
            try:  # moved into place whole
                from minitorch.outputs import write_atomically
            except ImportError:  # (a test's tiny book has no minitorch.outputs)
                def write_atomically(path, text, option):
                    Path(path).write_text(text, encoding="utf-8")
            write_atomically(self.json_path, text, option="--scoreboard-json")

    def result_of(self, nodeid: str) -> dict:
        return {**self.results.get(nodeid, {"status": None}), "exercise": self.exercise_of.get(nodeid)}


def _first_line(excinfo) -> str:
    """Why a test failed, in a line or two: the exception's class and its message's first line (and the next when
    the first only announces it, as NumPy's "Not equal to tolerance" does); never pytest's "assert ..." lines, which
    quote the test's code."""
    lines = [line.strip() for line in _ANSI_COLOUR.sub("", str(excinfo.value)).splitlines()
             if line.strip() and not line.strip().startswith("assert ")]
    if not lines:
        return excinfo.typename
    reason = lines[0]
    if len(lines) > 1 and (reason.endswith(":") or reason.startswith(("Not equal to tolerance", "Arrays are not",
                                                                      "Items are not"))):
        reason += " " + lines[1]
    return f"{excinfo.typename}: {reason}"[:300]
