"""Shared pytest set-up: which minitorch is tested, exercise markers, seeds, and the scoreboard.

Markers (registered here, since the repository keeps no pytest.ini):
- ``@pytest.mark.exercise("2.4")``: the test grades exercise 2.4; it also gets the markers
  ``ex2_4`` and ``ch02``, so ``pytest -m ex2_4`` or ``pytest -m ch02`` selects it. Every exercise
  and chapter marker is registered (from minitorch/exercises/registry.py), so ``--strict-markers`` works.
  ``@pytest.mark.exercise("3.1", requires_values=True)``: a trivial answer (zeros, a constant, the input
  returned) passes the test, which checks only shape, dtype, an input left unchanged or a property such an
  answer has; it earns its share only when every value test of its exercise (those without it) passed
  (`registry.paid_tests`, the rule class grading applies too).
- ``@pytest.mark.slow``: takes more than a few seconds; skip with ``-m "not slow"``.

Options (each also has an environment variable):
- ``--minitorch-root=PATH`` (MINITORCH_ROOT): test the minitorch in PATH, e.g. a student's copy,
  instead of the one next to these tests. It goes first on sys.path before any test imports
  minitorch, and the run stops if the minitorch imported is not the one in PATH. Chapter tests run
  that copy's chapters. Write it with '=': pytest reads a folder after a space as a folder of tests
  before it knows this option, and loads the conftest.py there (the run then stops, saying so).
- ``--exercise-seed N`` (MINITORCH_EXERCISE_SEED, default 0): the seed of the random inputs of the
  graded tests (fixture ``exercise_seed``); an instructor grades with a seed the students never saw.
- ``--scoreboard-json PATH``: also write every test's outcome and the scoreboard as JSON (its folder
  must exist; the run refuses to start otherwise).
- ``--test-timeout S`` (MINITORCH_TEST_TIMEOUT, default 600): a test running longer than S seconds
  fails with "timed out after S s" and the run goes on (POSIX, main thread; 0 turns it off).

Which exercises count: a student edition holds minitorch/exercises/edition.json, the exercises it
handed out; the scoreboard counts only those (no manifest, the full repository: every exercise).

The ``student`` fixture: a graded test reaches the student's code only through it, as
``student.softmax(scores)`` (a probe of minitorch/exercises/grader/sandboxed/probes.py, data in, data out).
In a student's own run the probe runs in this process. When a class is graded (MINITORCH_GRADING_PLAN names a plan) it
runs in the student's sandboxed worker for the test's exercise, and this process, where the checks
decide pass or fail, never runs the student's code (minitorch/exercises/grader/trusted/worker_client.py); tests then run
grouped by exercise, one worker child per exercise, and each outcome is appended as it happens to the
file MINITORCH_GRADING_RECORD names (one JSON line each, the collected tests first): the grader reads it.

Outcomes. A test that fails with the NotImplementedError of an exercise stub is
- *not attempted* if the stub is its own exercise's (it stays a failure, with a one-line report);
- *blocked* if the stub belongs to another exercise: it is reported as skipped, "blocked: needs
  exercise X.Y (chapter NN) first", and earns nothing.
The end of the output is a per-exercise scoreboard, in ID order, the order a student can do the exercises
in: passed, failed, not attempted,
blocked, points: what the paid tests are worth (`registry.points_per_test`: the public tests share the public part of
an exercise's points, the hidden tests, which a student's own run does not have, the rest), paid being the passed
tests but those declared requires_values whose part's value tests did not all pass; printed when graded tests ran.
A row reads "earned / what its tests are worth of the exercise's points" when hidden tests did not run. "failed"
counts every way a test can fail (timed out, crashed, ... in class grading), and a line under the table names those
kinds; another says that pytest's own summary counts not-attempted tests as failed and blocked ones as skipped.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import sys
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parent.parent  # the project these tests belong to
_ANSI_COLOUR = re.compile(r"\x1b\[[0-9;]*m")
_COLUMNS = ("passed", "failed", "not attempted", "blocked")  # the scoreboard's columns; skipped is a line under it
_FAILURE_KINDS = ("timed out", "crashed", "does not compile", "function not found", "too large",
                  "helper outside the function", "refused")  # shown in the failed column
_STATUSES = (*_COLUMNS, "skipped", *_FAILURE_KINDS)
OUTPUT_CAP = 10_000  # characters of a test's captured output kept in the grading log


def _load_by_path(name: str, path: Path):
    """A module of this repository, loaded from its file without importing the minitorch under test."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# minitorch/exercises/registry.py of this repository: titles and points come from the grader's copy
registry = _load_by_path("_minitorch_exercise_registry", REPOSITORY / "minitorch" / "exercises" / "registry.py")


def pytest_addoption(parser):
    try:
        _add_options(parser.getgroup("minitorch", "minitorch exercises and grading"))
    except ValueError:  # another project's copy of this file added them first; Scoreboard stops the run
        pass


def _add_options(group):
    group.addoption("--minitorch-root", default=os.environ.get("MINITORCH_ROOT") or None,
                    help="folder holding the minitorch to test, e.g. a student's copy "
                         "(default: $MINITORCH_ROOT, else the repository of these tests)")
    group.addoption("--exercise-seed", default=None,
                    help="seed of the graded tests' random inputs (default: $MINITORCH_EXERCISE_SEED, else 0)")
    group.addoption("--scoreboard-json", default=None,
                    help="also write the per-test outcomes and the scoreboard to this JSON file")
    group.addoption("--test-timeout", default=None,
                    help="fail a test that runs longer than this many seconds "
                         "(default: $MINITORCH_TEST_TIMEOUT, else 600; 0 = no limit)")


def _option_or_environment(config, option: str, variable: str, default: str, parse, kind: str):
    """The value of `option`, else of the environment variable `variable`, else `default`, parsed by
    `parse`; a usage error naming the option and variable when it is not `kind`."""
    value, source = config.getoption(option), option
    if value is None:
        value, source = os.environ.get(variable, default), variable
    try:
        value = parse(value)
    except (TypeError, ValueError):
        raise pytest.UsageError(f"{source} must be {kind}, got {value!r}") from None
    if value < 0:
        raise pytest.UsageError(f"{option} / {variable} must be {kind}, got {value}")
    return value


def _test_timeout(config) -> float:
    """Seconds a test may run (0: no limit); NaN and infinity are refused, not taken for 'no limit'."""
    return _option_or_environment(config, "--test-timeout", "MINITORCH_TEST_TIMEOUT", "600", _finite_seconds,
                                  "a finite number of seconds, 0 or more (0 = no limit)")


def _finite_seconds(text) -> float:
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(text)
    return value


def _check_scoreboard_folder(config) -> None:
    path = config.getoption("--scoreboard-json")
    if path is None:
        return
    if not Path(path).expanduser().resolve().parent.is_dir():
        raise pytest.UsageError(f"--scoreboard-json={path}: the folder {Path(path).expanduser().resolve().parent} "
                                f"does not exist; create it first (no test was run)")
    checker = REPOSITORY / "minitorch" / "outputs" / "paths.py"  # standard library only
    if not checker.is_file():
        return
    outputs = _load_by_path("_minitorch_outputs", checker)
    try:
        outputs.check_output_file(path, "--scoreboard-json")
    except outputs.OutputPathError as error:
        raise pytest.UsageError(f"{error} (no test was run)") from None


def _check_exercise_markers(config) -> None:
    """`-m ex9_9` or `-m ch08` names no exercise: say so, with the valid ones, instead of deselecting everything."""
    expression = config.getoption("markexpr") or ""
    chapters = sorted({int(exercise_id.split(".")[0]) for exercise_id in registry.EXERCISES})
    for chapter, number in re.findall(r"\bex(\d+)_(\d+)\b", expression):
        if f"{chapter}.{number}" not in registry.EXERCISES:
            known = ", ".join(sorted(registry.EXERCISES, key=registry.sort_key))
            raise pytest.UsageError(f"-m {expression!r}: there is no exercise {chapter}.{number}; the exercises are "
                                    f"{known} (python -m minitorch.exercises list)")
    for chapter in re.findall(r"\bch(\d+)\b", expression):
        if int(chapter) not in chapters:
            raise pytest.UsageError(f"-m {expression!r}: chapter {chapter} has no graded exercises; the chapters "
                                    f"with exercises are {', '.join(f'{c:02d}' for c in chapters)}")


def handed_out(root: Path) -> set[str] | None:
    """The exercise IDs that the edition at `root` handed out (its minitorch/exercises/edition.json),
    or None for the full repository (no manifest: every exercise counts)."""
    try:
        manifest = registry.read_manifest_data(root)
    except registry.ExerciseError as error:
        raise pytest.UsageError(f"{error}; it should read {{\"handed_out\": [\"3.1\", ...], ...}}") from None
    return None if manifest is None else set(manifest["handed_out"])


def _exercise_seed(config) -> int:
    return _option_or_environment(config, "--exercise-seed", "MINITORCH_EXERCISE_SEED", "0", int,
                                  "a whole number, 0 or more")


def _use_minitorch_from(root: Path) -> None:
    """Put `root` first on sys.path, import minitorch, and stop if it came from anywhere else."""
    if not (root / "minitorch" / "__init__.py").is_file():
        pytest.exit(f"--minitorch-root / MINITORCH_ROOT: {root} holds no minitorch/__init__.py; "
                    f"point it at the top folder of a copy of the project", returncode=pytest.ExitCode.USAGE_ERROR)
    sys.path.insert(0, str(root))
    os.environ["MINITORCH_ROOT"] = str(root)  # test_chapters.py and subprocesses read it
    try:
        import minitorch
    except Exception as error:  # a student's syntax error, say: one clear message instead of many
        pytest.exit(f"could not import minitorch from {root}: {type(error).__name__}: {error}",
                    returncode=pytest.ExitCode.USAGE_ERROR)
    imported = Path(minitorch.__file__).resolve()
    if not imported.is_relative_to(root):
        pytest.exit(f"the minitorch under test is {root / 'minitorch'}, but the one imported is {imported.parent} "
                    f"(it was imported before the tests could choose); run python -m pytest from a folder "
                    f"without another minitorch, or uninstall that one", returncode=pytest.ExitCode.USAGE_ERROR)


def pytest_configure(config):
    config.addinivalue_line("markers", "exercise(id, requires_values=False): the test grades exercise `id`, e.g. "
                                       "'2.4'; requires_values=True: it pays only when the exercise's value tests pass")
    config.addinivalue_line("markers", "slow: takes more than a few seconds (deselect with -m 'not slow')")
    for exercise_id, exercise in sorted(registry.EXERCISES.items(), key=lambda item: registry.sort_key(item[0])):
        config.addinivalue_line("markers", f"ex{exercise_id.replace('.', '_')}: tests of exercise {exercise_id}, "
                                           f"{exercise.title}")
    for chapter in range(1, 10):
        config.addinivalue_line("markers", f"ch{chapter:02d}: tests of the exercises of chapter {chapter:02d}")

    _check_scoreboard_folder(config)
    _check_exercise_markers(config)
    root = Path(config.getoption("--minitorch-root") or REPOSITORY).expanduser().resolve()
    _use_minitorch_from(root)
    scoreboard = Scoreboard(config, root, _exercise_seed(config))
    config.pluginmanager.register(scoreboard)
    config.pluginmanager.register(TestTimeout(_test_timeout(config)))
    config.pluginmanager.register(StudentCode(scoreboard))


@pytest.fixture(scope="session")
def quick_book(tmp_path_factory):
    """The HTML book built in quick mode, once per session: (its folder, the chapters that failed). Building it
    runs every chapter of the project under test top to bottom (tests/test_chapters.py reads that, and
    tests/tools/test_html_book.py the pages), so the suite runs each chapter once, not twice."""
    from minitorch.tools.book.build import build_book

    out = tmp_path_factory.mktemp("quick") / "book"
    failures = build_book(out, quick=True, jobs=2, keep_going=True, report=lambda line: None)
    return out, failures


@pytest.fixture(scope="session")
def exercise_seed(pytestconfig) -> int:
    """The seed of randomised graded tests (--exercise-seed, else MINITORCH_EXERCISE_SEED, else 0)."""
    return _exercise_seed(pytestconfig)


class StudentCode:
    """Provides the ``student`` fixture; when a class is graded, runs the tests grouped by exercise and stops
    the student's worker at the end."""

    def __init__(self, scoreboard: "Scoreboard"):
        self.grading = bool(os.environ.get("MINITORCH_GRADING_PLAN"))
        self.calls = None  # made on first use: Direct(), or the WorkerPool of the grading plan
        self.scoreboard = scoreboard
        # when grading, every outcome is also appended to this file as it happens (one JSON line each), so that
        # a check process stopped at the student's budget still leaves the outcomes it reached
        self.record = Path(os.environ["MINITORCH_GRADING_RECORD"]) if os.environ.get("MINITORCH_GRADING_RECORD") \
            else None

    def _write(self, **event) -> None:
        with open(self.record, "a", encoding="utf-8") as record:
            record.write(json.dumps(event) + "\n")

    def pytest_collection_finish(self, session):
        if self.record is not None:
            self._write(collected={item.nodeid: _exercise_of(item) for item in session.items
                                   if _exercise_of(item) is not None})

    def pytest_runtest_logfinish(self, nodeid, location):
        if self.record is not None:
            self._write(test=nodeid, **self.scoreboard.result_of(nodeid))

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        if self.grading:  # one worker child per exercise: its tests together, in the book's order
            items.sort(key=lambda item: registry.sort_key(_exercise_of(item) or "99.99"))

    def pytest_runtest_setup(self, item):
        """An exercise decided before grading (the copy has no file for its function, or one too large) fails its
        tests here, with that reason, and no worker starts for it."""
        if self.grading and _exercise_of(item) is not None:
            from minitorch.exercises.grader.trusted.worker_client import decided_outcome
            outcome = decided_outcome(_exercise_of(item))
            if outcome is not None:
                raise outcome

    @pytest.fixture
    def student(self, request):
        """The student's code for this test's exercise, reached through probes: ``student.softmax(scores)``."""
        from minitorch.exercises.grader.trusted.worker_client import ThroughWorker, from_environment

        exercise_id = _exercise_of(request.node)
        if exercise_id is None:
            pytest.fail("the student fixture serves graded tests only: mark the test @pytest.mark.exercise('X.Y')",
                        pytrace=False)
        if self.calls is None:
            self.calls = from_environment()
        if not self.grading:  # the grader takes the function alone: what it refuses (a helper outside it, a
            from minitorch.exercises.grader.trusted.worker_client import grading_problem  # lambda) fails here too
            problem = grading_problem(exercise_id, self.scoreboard.root)
            if problem:
                pytest.fail(problem, pytrace=False)
        return ThroughWorker(self.calls, exercise_id) if self.grading else self.calls

    def pytest_sessionfinish(self, session):
        if self.grading and self.calls is not None:
            self.calls.close()


def _chapter_of(exercise_id: str) -> str:
    return f"{int(exercise_id.split('.')[0]):02d}"


def _column_counts(row: dict) -> list[int]:
    """A scoreboard row's counts per column: every kind of failure is counted as failed."""
    return [row["passed"], row["failed"] + sum(row[kind] for kind in _FAILURE_KINDS), row["not attempted"],
            row["blocked"]]


class Scoreboard:
    """Classifies outcomes (passed, failed, not attempted, blocked, skipped) and prints the scoreboard."""

    def __init__(self, config, root: Path, seed: int):
        self.config, self.root, self.seed = config, root, seed
        self.exercise_of: dict[str, str] = {}  # test id -> exercise it grades
        self.results: dict[str, dict] = {}  # test id -> {"status", "blocked_by", "message"}
        self.counted = handed_out(root)  # None: every exercise counts

    def pytest_collection_finish(self, session):
        """Stop if a conftest.py from outside these tests was loaded (a student's copy's): it could change
        the grades."""
        here = Path(__file__).resolve()
        foreign = sorted({str(Path(plugin.__file__).resolve()) for plugin in session.config.pluginmanager.get_plugins()
                          if getattr(plugin, "__name__", "").split(".")[-1] == "conftest"
                          and not Path(plugin.__file__).resolve().is_relative_to(here.parent)})
        if foreign:
            pytest.exit(f"pytest loaded {', '.join(foreign)} besides {here}, probably because it read the folder "
                        f"after --minitorch-root as a folder of tests. Write --minitorch-root={self.root} (with '='), "
                        f"or MINITORCH_ROOT={self.root} python -m pytest ...", returncode=pytest.ExitCode.USAGE_ERROR)

    def pytest_report_header(self, config):
        return f"minitorch under test: {self.root / 'minitorch'} (exercise seed {self.seed})"

    @pytest.hookimpl(tryfirst=True)  # before -m deselects anything: it must see exX_Y and chNN
    def pytest_collection_modifyitems(self, config, items):
        registered = {line.split(":")[0].split("(")[0] for line in config.getini("markers")}
        for item in items:
            mark = item.get_closest_marker("exercise")
            if mark is None:
                continue
            exercise_id = str(mark.args[0])
            for name in ("ex" + exercise_id.replace(".", "_"), "ch" + _chapter_of(exercise_id)):
                # an ID missing from minitorch/exercises/registry.py: the registry test says so
                if name not in registered:
                    config.addinivalue_line("markers", f"{name}: (not in minitorch/exercises/registry.py)")
                    registered.add(name)
                item.add_marker(name)
            if self.counted is None or exercise_id in self.counted:  # not handed out: it runs, ungraded
                self.exercise_of[item.nodeid] = exercise_id

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = (yield).get_result()
        if report.when == "call" and report.passed and _graded_without_the_student(item):
            report.outcome = "failed"
            report.longrepr = ("grader error: this graded test never called the student's code through the student "
                               "fixture, so it cannot earn points (it would have checked the grader's own library)")
        result = self.results.setdefault(item.nodeid, {"status": None, "blocked_by": None, "message": "",
                                                       "output": "", "requires_values": _requires_values(item)})
        if report.when == "call" or report.failed:
            captured = "".join(text for _, text in report.sections) + (report.longreprtext if report.failed else "")
            result["output"] = (result["output"] + captured)[:OUTPUT_CAP]
        if report.failed and call.excinfo is not None:
            stub, stub_message = registry.stub_error(call.excinfo.value) or (None, "")
            if stub is not None and stub == self.exercise_of.get(item.nodeid):
                report.longrepr = f"not attempted: {stub_message}"
                result.update(status="not attempted", message=stub_message)
            elif stub is not None:
                reason = f"blocked: needs exercise {stub} (chapter {_chapter_of(stub)}) first"
                path, line, _ = item.location
                report.outcome, report.longrepr = "skipped", (path, (line or 0) + 1, reason)
                result.update(status="blocked", blocked_by=stub, message=reason)
            else:  # a worker that hung or died (class grading) reports its kind: timed out, crashed
                outcome = _grading_outcome(call.excinfo.value)
                result.update(status=outcome.kind if outcome else "failed",
                              message=str(outcome) if outcome else _first_line(call.excinfo))
        elif report.failed:
            result.update(status="failed", message=str(report.longrepr)[-500:])
        elif report.skipped and result["status"] is None:
            result.update(status="skipped", message=str(report.longrepr)[-500:])
        elif report.when == "call" and report.passed and result["status"] is None:
            result["status"] = "passed"

    def exercise_table(self) -> dict[str, dict]:
        """Per exercise: its counts, "points" (the exercise's), "max" (what the tests that ran are worth: without
        the hidden tests, the public part of its points), "hidden" (hidden tests run), "paid" and "earned"."""
        table: dict[str, dict] = {}
        outcomes: dict[str, list[tuple[bool, bool, bool]]] = {}  # exercise -> (passed, requires values, hidden)
        for nodeid, exercise_id in self.exercise_of.items():
            status = self.results.get(nodeid, {}).get("status")
            if status is None:
                continue  # deselected or never run
            known = registry.EXERCISES.get(exercise_id)
            title, points = (known.title, known.points) if known else ("(not in minitorch/exercises/registry.py)", 0)
            row = table.setdefault(exercise_id, {"chapter": int(exercise_id.split(".")[0]), "title": title,
                                                 "points": points, "tests": 0, "hidden": 0,
                                                 **{s: 0 for s in _STATUSES}})
            row["tests"] += 1
            row[status] += 1
            gated = self.results[nodeid].get("requires_values", False)
            hidden = registry.is_hidden_test(nodeid)
            row["hidden"] += hidden
            outcomes.setdefault(exercise_id, []).append((status == "passed", gated, hidden))
        for exercise_id, row in table.items():
            passed, gated, hidden = (list(column) for column in zip(*outcomes[exercise_id]))
            known = registry.EXERCISES.get(exercise_id)
            worth = registry.points_per_test(known, hidden) if known else [0.0] * len(hidden)
            paid = registry.paid_tests(passed, gated, hidden)
            row["paid"] = sum(paid)
            row["max"] = round(sum(worth), 6)
            row["earned"] = round(sum(value for value, is_paid in zip(worth, paid) if is_paid), 6)
        return dict(sorted(table.items(), key=lambda item: registry.sort_key(item[0])))

    @pytest.hookimpl(wrapper=True, tryfirst=True)  # outermost: write after pytest's short summary
    def pytest_terminal_summary(self, terminalreporter):
        result = yield
        self.write_scoreboard(terminalreporter)
        return result

    def write_scoreboard(self, terminalreporter) -> None:
        table = self.exercise_table()
        if not table:
            return
        write = terminalreporter.write_line
        terminalreporter.section(f"exercise scoreboard (seed {self.seed})", sep="=")
        width = max(len(row["title"]) for row in table.values()) + 2

        def line(name, title, counts, earned, points):
            return (f"{name:<9}{title:<{width}}" + "".join(f"{count:>{len(column) + 2}}" for column, count
                                                          in zip(_COLUMNS, counts)) + f"{earned:>10}{points}")

        def out_of(row) -> str:  # " / 1.5 of 3" when only the public part of an exercise's points was at stake
            return f" / {row['max']:g}" + (f" of {row['points']:g}" if row["max"] != row["points"] else "")

        write(line("exercise", "title", _COLUMNS, "points", ""))
        for exercise_id, row in table.items():
            write(line(exercise_id, row["title"], _column_counts(row), f"{row['earned']:.2f}", out_of(row)))
        totals = {key: sum(row[key] for row in table.values())
                  for key in (*_STATUSES, "earned", "points", "max", "hidden")}
        totals["max"] = round(totals["max"], 6)
        write(line("total", "", _column_counts(totals), f"{totals['earned']:.2f}", out_of(totals)))
        of_points = f"{totals['max']:g} of the {totals['points']:g} point{'s' if totals['points'] != 1 else ''}"
        if totals["max"] < totals["points"] and not totals["hidden"]:
            write(f"(the tests run here are worth {of_points}; the instructor's hidden tests, on inputs of their "
                  f"own, grade the other {round(totals['points'] - totals['max'], 6):g} when the class is graded)")
        elif totals["max"] < totals["points"]:
            write(f"(the tests run here are worth {of_points}: an exercise's public tests and its hidden ones "
                  f"share its points)")
        other_failures = [f"{totals[kind]} {kind}" for kind in _FAILURE_KINDS if totals[kind]]
        if other_failures:
            write(f"(the failed column includes {', '.join(other_failures)})")
        if totals["not attempted"]:  # pytest's own last line counts them among its failures, with the others
            write(f"(pytest's summary counts the {totals['not attempted']} not-attempted test(s) as failed, and the "
                  f"blocked ones as skipped)")
        unpaid = [exercise_id for exercise_id, row in table.items() if row["paid"] < row["passed"]]
        if unpaid:
            write(f"(exercise(s) {', '.join(unpaid)}: tests of shape, dtype or inputs left unchanged earn nothing "
                  f"until every value test of the exercise passes)")
        if totals["skipped"]:
            write(f"({totals['skipped']} graded test(s) skipped for other reasons; they earn nothing)")
        blockers = sorted({r["blocked_by"] for r in self.results.values() if r["blocked_by"]}, key=registry.sort_key)
        own = [blocker for blocker in blockers if self.counted is None or blocker in self.counted]
        inherited = [blocker for blocker in blockers if blocker not in own]
        if own:
            write(f"blocked tests wait for exercise(s) {', '.join(own)}: finish those first")
        if inherited:  # neither handed out nor released (or released from a copy that still had their stubs)
            write(f"blocked tests also wait for exercise(s) {', '.join(inherited)}, which this edition did not hand "
                  f"out: they are stubs here (an edition keeps only the answers the instructor released), and "
                  f"their tests do not count")

    def pytest_sessionfinish(self, session):
        path = self.config.getoption("--scoreboard-json")
        if not path:
            return
        table = self.exercise_table()
        report = {
            "minitorch_root": str(self.root),
            "exercise_seed": self.seed,
            "tests": {nodeid: {**result, "exercise": self.exercise_of.get(nodeid)}
                      for nodeid, result in self.results.items()},
            "exercises": table,
            "total": {"points": sum(row["points"] for row in table.values()),
                      "max": round(sum(row["max"] for row in table.values()), 6),
                      "earned": round(sum(row["earned"] for row in table.values()), 6)},
        }
        Path(path).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")

    def result_of(self, nodeid: str) -> dict:
        return {**self.results.get(nodeid, {"status": None}), "exercise": self.exercise_of.get(nodeid)}


class TestTimeout:
    """Fails a test that runs longer than `seconds` (SIGALRM: POSIX, main thread only), so that a
    `while True: pass` costs one test and the scoreboard still prints."""

    __test__ = False  # not a test class, despite its name

    def __init__(self, seconds: float):
        self.seconds = seconds

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        if not self.seconds or not hasattr(signal, "setitimer"):
            yield
            return

        def give_up(signum, frame):
            raise TimeoutError(f"timed out after {self.seconds:g} s (--test-timeout)")

        previous = signal.signal(signal.SIGALRM, give_up)
        signal.setitimer(signal.ITIMER_REAL, self.seconds)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


def _graded_without_the_student(item) -> bool:
    """When a class is graded: a graded test that made no call to the student's worker."""
    if not os.environ.get("MINITORCH_GRADING_PLAN") or _exercise_of(item) is None:
        return False
    return getattr(item.funcargs.get("student"), "calls", 0) == 0


def _grading_outcome(error: BaseException):
    """The grader's own report of how a test ended (a worker that hung or died, an exercise decided before any
    test ran), with its kind; None for anything else, and never for what a student's code raises."""
    module = sys.modules.get("minitorch.exercises.grader.trusted.worker_client")  # loaded only when a class is graded
    return error if module is not None and isinstance(error, module.GradingOutcome) else None


def _requires_values(item) -> bool:
    """The graded test is declared requires_values=True: it pays only when its exercise's value tests pass."""
    mark = item.get_closest_marker("exercise")
    return bool(mark is not None and mark.kwargs.get("requires_values", False))


def _exercise_of(item) -> str | None:
    mark = item.get_closest_marker("exercise")
    return str(mark.args[0]) if mark is not None else None


def _first_line(excinfo) -> str:
    """The reason a test failed, in a line or two: the exception's class and the first line of its message, and
    the line after when the first only announces it (NumPy's "Not equal to tolerance ...", a line ending ':').
    Never pytest's "assert ..." lines, which quote the test's code."""
    text = _ANSI_COLOUR.sub("", str(excinfo.value))
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("assert ")]
    if not lines:
        return excinfo.typename
    reason = lines[0]
    announces = reason.endswith(":") or reason.startswith(("Not equal to tolerance", "Arrays are not", "Items are not"))
    if announces and len(lines) > 1:
        reason += " " + lines[1]
    return f"{excinfo.typename}: {reason}"[:300]
