"""Specification of minitorch.exercises and of the grading in tests/conftest.py (chapter 00).

Fast tests: the registry on small synthetic files, the stub, the stripping of solution cells, the
command line, the book's own registry, and the grading (not attempted, blocked, scoreboard, root,
seed) run on a tiny project. One slow test is the self-check of the whole scheme: it builds the
student edition into a temporary folder and runs the fast suite there, then puts this copy's answers back
into that edition's functions and runs again every test that stopped at a stub.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import minitorch
from minitorch.exercises import __main__ as exercises_cli
from minitorch.exercises import registry as exercises
from minitorch.exercises.edition import is_stub, make_student_edition, strip_solutions, stubbed_source
from minitorch.exercises.registry import (EXERCISES, LINE_LENGTH, Exercise, ExerciseError, body_after_docstring,
                                          function_node, load_exercises, replace_bodies, stub_error)

ROOT = Path(minitorch.__file__).resolve().parent.parent  # the project under test (--minitorch-root)
TESTS = Path(__file__).resolve().parent.parent  # the tests that grade it

SOURCE = '''\
import functools


def checked(function):
    @functools.wraps(function)
    def run(x):
        return function(abs(x))
    return run


def double(x):
    """Twice x."""
    result = 2 * x
    return result


@checked
def triple(x):
    """Three times x."""
    return x * 3


def untouched(x):
    return x + 1
'''
TABLE = {"1.2": Exercise("1.2", "doubling", 2, "minitorch/ops.py", "double"),
         "2.10": Exercise("2.10", "tripling", 1, "minitorch/ops.py", "triple", ("1.2",))}


def make_project(tmp_path: Path, files: dict[str, str]) -> Path:
    """A minimal project: minitorch/__init__.py plus `files` (path -> text)."""
    root = tmp_path / "project"
    (root / "minitorch").mkdir(parents=True)
    (root / "minitorch" / "__init__.py").write_text("")
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


# ----------------------------------------------------------------------
# the table


def test_the_table_is_checked_against_the_source_and_sorted_by_id_as_numbers(tmp_path):
    root = make_project(tmp_path, {"minitorch/ops.py": SOURCE})
    table = {**TABLE, "2.9": Exercise("2.9", "adding", 1, "minitorch/ops.py", "untouched")}
    assert [exercise.id for exercise in load_exercises(root, table)] == ["1.2", "2.9", "2.10"]


@pytest.mark.parametrize("entry,message", [
    (Exercise("1.3", "gone", 1, "minitorch/ops.py", "quadruple"), "defines no function quadruple at its top level"),
    (Exercise("1.3", "gone", 1, "minitorch/nowhere.py", "double"), "cannot read"),
    (Exercise("1.3", "free", 0, "minitorch/ops.py", "double"), "positive whole number of points"),
    (Exercise("1.3", "lonely", 1, "minitorch/ops.py", "double", ("7.7",)), "needs 7.7, which is not another"),
    (Exercise("1.3", "itself", 1, "minitorch/ops.py", "double", ("1.3",)), "needs 1.3, which is not another"),
    (Exercise("0.3", "chapterless", 1, "minitorch/ops.py", "double"), "is not of the form X.Y"),
    (Exercise("1.3", "more than all", 1, "minitorch/ops.py", "double", hidden_share=1.5), "hidden_share .* 0 to 1"),
    (Exercise("1.3", "no share", 1, "minitorch/ops.py", "double", hidden_share=float("nan")), "hidden_share"),
], ids=["no-function", "no-module", "no-points", "unknown-need", "needs-itself", "bad-id", "share-above-1",
        "share-nan"])
def test_a_malformed_table_entry_is_refused_naming_what_is_wrong(tmp_path, entry, message):
    root = make_project(tmp_path, {"minitorch/ops.py": SOURCE})
    with pytest.raises(ExerciseError, match=message):
        load_exercises(root, {**TABLE, entry.id: entry})


# ----------------------------------------------------------------------
# the stub


def test_the_stub_replaces_the_body_keeps_def_decorator_and_docstring_and_raises_naming_the_function(tmp_path):
    stubbed = stubbed_source(SOURCE, TABLE.values(), "minitorch/ops.py")
    assert "result = 2 * x" not in stubbed and "return x * 3" not in stubbed, "the answers must be gone"
    assert '    """Twice x."""' in stubbed and "@checked\ndef triple(x):" in stubbed, "def, decorator, docstring stay"
    namespace: dict = {}
    exec(compile(stubbed, "ops.py", "exec"), namespace)
    with pytest.raises(NotImplementedError) as error:
        namespace["double"](3)
    assert str(error.value) == ("Exercise 1.2 (chapter 01): doubling. Write the body of double in minitorch/ops.py; "
                                "check with: python -m pytest -m ex1_2")
    with pytest.raises(NotImplementedError, match=r"^Exercise 2\.10 \(chapter 02\): tripling\."):
        namespace["triple"](1)
    assert namespace["untouched"](1) == 2, "code outside the functions must be untouched"


def test_a_long_stub_is_split_over_lines_that_fit_and_raises_the_same_message(tmp_path):
    long_title = ("a title long enough that its stub cannot fit on one line of code " * 3).strip()
    table = {**TABLE, "2.10": Exercise("2.10", long_title, 1, "minitorch/ops.py", "triple")}
    stubbed = stubbed_source(SOURCE, table.values(), "minitorch/ops.py")
    too_long = [line for line in stubbed.splitlines() if len(line) > LINE_LENGTH]
    assert not too_long, f"stub lines longer than {LINE_LENGTH} characters:\n" + "\n".join(too_long)
    namespace: dict = {}
    exec(compile(stubbed, "ops.py", "exec"), namespace)
    with pytest.raises(NotImplementedError) as error:
        namespace["triple"](1)
    assert str(error.value) == table["2.10"].stub_message(), "the split message must join back to the whole message"
    tree = ast.parse(stubbed)
    for exercise in table.values():
        node = function_node(tree, exercise.function)
        assert is_stub(node, exercise), f"the grader must see the stub of {exercise.id} as untouched"
        assert not is_stub(node, EXERCISES["3.1"]), "a stub is the stub of its own exercise only"


def test_making_an_edition_of_an_edition_changes_nothing():
    once = stubbed_source(SOURCE, TABLE.values(), "minitorch/ops.py")
    assert stubbed_source(once, TABLE.values(), "minitorch/ops.py") == once


def test_stub_error_finds_the_exercise_in_the_error_its_cause_or_a_quoted_coloured_traceback():
    message = exercises.stub_message("1.1", "ordering", "topological_order", "minitorch/tensor.py")
    assert stub_error(NotImplementedError(message)) == ("1.1", message)
    try:
        try:
            raise NotImplementedError(message)
        except NotImplementedError as cause:
            raise RuntimeError("a chapter cell failed") from cause
    except RuntimeError as error:
        assert stub_error(error)[0] == "1.1"
    other = exercises.stub_message("3.1", "mask", "causal_mask", "minitorch/paper/attention.py")
    quoted = AssertionError(f"cell 4 raised:\n{other}\n...\n\x1b[0;31mNotImplementedError\x1b[0m: {message}")
    assert stub_error(quoted)[0] == "1.1", "in a quoted traceback the error raised is the last one"
    assert stub_error(NotImplementedError("subclasses must implement step")) is None


# ----------------------------------------------------------------------
# the student edition


def test_strip_solutions_drops_solution_cells_and_clears_outputs():
    notebook = {"nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": {"name": "python3"}}, "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["**Exercise 1.5 (predict, then check)**"]},
        {"cell_type": "code", "metadata": {"tags": ["solution"]}, "source": ["print(33)"], "outputs": [],
         "execution_count": None},
        {"cell_type": "code", "metadata": {"tags": ["other"]}, "source": ["x = 1"],
         "outputs": [{"output_type": "stream", "name": "stdout", "text": ["1"]}], "execution_count": 3},
    ]}
    stripped, removed = strip_solutions(notebook)
    assert removed == 1
    assert [cell["source"] for cell in stripped["cells"]] == [["**Exercise 1.5 (predict, then check)**"], ["x = 1"]]
    assert stripped["cells"][1]["outputs"] == [] and stripped["cells"][1]["execution_count"] is None
    assert stripped["metadata"] == notebook["metadata"]


def synthetic_book(tmp_path: Path) -> Path:
    notebook = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["question"]},
        {"cell_type": "code", "metadata": {"tags": ["solution"]}, "source": ["answer"], "outputs": [],
         "execution_count": None}]}
    run = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "metadata": {}, "source": ["1 + 1"], "execution_count": 1,
         "outputs": [{"output_type": "execute_result", "data": {"text/plain": ["2"]}, "metadata": {},
                      "execution_count": 1}]}]}
    root = make_project(tmp_path, {
        "minitorch/ops.py": SOURCE, "README.md": "# book\n", "LICENSE": "MIT\n", ".ci/run": "pytest\n",
        "tests/test_ops.py": "def test_nothing():\n    pass\n", "chapters/01_a.ipynb": json.dumps(notebook),
        "chapters/02_ran.ipynb": json.dumps(run),
        "figures/fig.png": "png", "figures/models/m.npz": "weights", ".git/config": "[core]\n",
        "runs/model.npz": "weights", "notes.txt": "private\n",
        "minitorch/__pycache__/ops.cpython-311.pyc": "bytecode",
    })
    return root


def test_the_edition_copies_the_project_only_with_the_chosen_functions_stubbed(tmp_path):
    root = synthetic_book(tmp_path)
    chosen = [TABLE["2.10"]]
    summary = make_student_edition(tmp_path / "edition", chosen, root, released=[TABLE["1.2"]], table=TABLE)
    copied = {path.relative_to(tmp_path / "edition").as_posix() for path in (tmp_path / "edition").rglob("*")
              if path.is_file()}
    assert copied == {"README.md", "LICENSE", ".ci/run", "minitorch/__init__.py", "minitorch/ops.py",
                      "tests/test_ops.py", "chapters/01_a.ipynb", "chapters/02_ran.ipynb", "figures/fig.png",
                      "figures/models/m.npz", "minitorch/exercises/edition.json"}, copied
    manifest = json.loads((tmp_path / "edition" / "minitorch" / "exercises" / "edition.json").read_text())
    assert manifest["handed_out"] == ["2.10"], "the edition records the exercises it handed out"
    names = set(manifest["module_names"]["minitorch/ops.py"])
    assert {"checked", "double", "functools", "untouched", "__name__"} <= names, (
        "the edition records the names each handed-out function's module defines (helpers outside are refused)")
    ops = (tmp_path / "edition" / "minitorch" / "ops.py").read_text()
    assert "result = 2 * x" in ops, "exercise 1.2 was released: its answer must stay"
    assert "return x * 3" not in ops and "Exercise 2.10 (chapter 02)" in ops
    notebook = json.loads((tmp_path / "edition" / "chapters" / "01_a.ipynb").read_text())
    assert [cell["source"] for cell in notebook["cells"]] == [["question"]]
    ran = json.loads((tmp_path / "edition" / "chapters" / "02_ran.ipynb").read_text())["cells"][0]
    assert (ran["outputs"], ran["execution_count"]) == ([], None), "outputs must be cleared in every chapter"
    assert summary == {"handed_out": ["2.10"], "stubbed": ["2.10"], "released": ["1.2"], "solution_cells_removed": 1}
    held_back = make_student_edition(tmp_path / "held-back", chosen, root, table=TABLE)
    assert held_back["stubbed"] == ["1.2", "2.10"], "an exercise neither handed out nor released is a stub too"
    assert "result = 2 * x" not in (tmp_path / "held-back" / "minitorch" / "ops.py").read_text()


def test_the_edition_refuses_a_folder_that_is_not_empty_or_lies_inside_the_project(tmp_path):
    root = synthetic_book(tmp_path)
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "homework.py").write_text("mine")
    with pytest.raises(ExerciseError, match="already exists and is not an empty folder"):
        make_student_edition(occupied, [], root, table=TABLE)
    assert (occupied / "homework.py").read_text() == "mine" and len(list(occupied.iterdir())) == 1
    for inside in (root / "student-edition", root / "tests" / "edition"):
        with pytest.raises(ExerciseError, match="lies inside the project .*; choose a folder outside it"):
            make_student_edition(inside, [], root, table=TABLE)
    (tmp_path / "empty").mkdir()
    make_student_edition(tmp_path / "empty", [], root, released=TABLE.values(), table=TABLE)
    assert (tmp_path / "empty" / "minitorch" / "ops.py").read_text() == SOURCE, "an empty folder is fine"


def test_an_edition_inside_another_copy_of_the_project_is_refused(tmp_path):
    """student-edition ../x/ed/sub, x/ed an edition: sub/ became a second edition inside it, carried by every copy
    made of x/ed, and grade graded the nested one."""
    root = make_project(tmp_path, {"minitorch/ops.py": SOURCE})
    make_student_edition(tmp_path / "ed", [], root, table=TABLE)
    with pytest.raises(ExerciseError, match=r"lies inside .*ed, a copy of the project \(an edition\?\); choose a "
                                            r"folder outside it") as refused:
        make_student_edition(tmp_path / "ed" / "sub" / "deeper", [], root, table=TABLE)
    assert not (tmp_path / "ed" / "sub").exists(), f"nothing is written inside the edition: {refused.value}"


def test_select_takes_the_union_of_ids_and_chapters_and_names_the_valid_choices(tmp_path):
    root = make_project(tmp_path, {"minitorch/ops.py": SOURCE})
    found = load_exercises(root, {**TABLE, "3.1": Exercise("3.1", "masking", 1, "minitorch/ops.py", "untouched")})
    assert [e.id for e in exercises.select(found)] == ["1.2", "2.10", "3.1"], "no choice means every exercise"
    assert [e.id for e in exercises.select(found, only=["3.1"], chapters=[1])] == ["1.2", "3.1"]
    with pytest.raises(ExerciseError, match=r"unknown exercise ID\(s\) 9\.9; the exercises are 1\.2, 2\.10, 3\.1"):
        exercises.select(found, only=["9.9"])
    with pytest.raises(ExerciseError, match=r"chapter\(s\) 5 have no exercises; chapters with exercises: 1, 2, 3"):
        exercises.select(found, chapters=[5])


@pytest.mark.parametrize("arguments,message", [
    (["--only", "9.9"], "unknown exercise ID(s) 9.9; the exercises are 1.1, 1.2"),
    (["--chapter", "0"], "chapter(s) 0 have no exercises; chapters with exercises: 1, 2"),
    (["--chapter", "three"], "--chapter takes chapter numbers such as 3 or 1,2, got 'three'"),
], ids=["unknown-id", "chapter-without-exercises", "chapter-not-a-number"])
def test_the_command_line_refuses_bad_choices_naming_the_valid_ones(tmp_path, capsys, arguments, message):
    with pytest.raises(SystemExit) as exit_info:
        exercises_cli.main(["student-edition", str(tmp_path / "edition"), *arguments])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "edition").exists(), "nothing may be written after a bad choice"


def test_the_command_line_refuses_a_destination_that_is_not_empty(tmp_path, capsys):
    (tmp_path / "old.txt").write_text("keep me")
    with pytest.raises(SystemExit) as exit_info:
        exercises_cli.main(["student-edition", str(tmp_path)])
    assert exit_info.value.code == 2 and "already exists and is not an empty folder" in capsys.readouterr().err
    assert [path.name for path in tmp_path.iterdir()] == ["old.txt"]


# ----------------------------------------------------------------------
# the book's own exercises


def marked_exercise_ids() -> dict[str, int]:
    """Exercise IDs written as @pytest.mark.exercise("X.Y") in the tests, with how often."""
    counts: dict[str, int] = {}
    for path in TESTS.rglob("test_*.py"):
        for exercise_id in re.findall(r"\bexercise\(\s*[\"'](\d+\.\d+)[\"']\s*\)", path.read_text(encoding="utf-8")):
            counts[exercise_id] = counts.get(exercise_id, 0) + 1
    return counts


def test_the_book_has_at_least_15_valid_exercises_in_chapters_1_to_9():
    found = load_exercises(ROOT)  # raises ExerciseError naming any problem
    assert len(found) >= 15, f"the book should assign at least 15 exercises, found {len(found)}"
    assert {e.chapter for e in found} <= set(range(1, 10))
    for exercise in found:
        assert stub_error(NotImplementedError(exercise.stub_message()))[0] == exercise.id, (
            f"conftest.py would not recognise the stub of exercise {exercise.id}")


@pytest.mark.slow  # collects the whole suite in a subprocess
def test_the_table_names_the_files_of_each_exercises_graded_tests(tmp_path):
    """Every test marked with an exercise, wherever it lives under tests/ (the course's own tests aside), is in a
    file the table's `tests` lists for that exercise, and every file listed holds some; the hidden tests are found by
    their folder (the table may list them or not)."""
    record = tmp_path / "record.jsonl"
    subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "tests",
                    "--ignore=tests/exercises"], cwd=ROOT, capture_output=True, text=True, timeout=600,
                   env=_clean_environment(MINITORCH_GRADING_RECORD=str(record)))
    collected = next(json.loads(line)["collected"] for line in record.read_text().splitlines() if "collected" in line)
    found: dict[str, set[str]] = {}
    hidden = exercises.HIDDEN_TESTS + "/"
    for nodeid, exercise_id in collected.items():
        found.setdefault(exercise_id, set()).add(nodeid.split("::")[0])
    listed = {exercise_id: {name for name in exercise.tests if (ROOT / name).is_file() and not name.startswith(hidden)}
              for exercise_id, exercise in EXERCISES.items()}
    wrong = {exercise_id: sorted(files) for exercise_id, files in found.items()
             if {name for name in files if not name.startswith(hidden)} != listed[exercise_id]}
    assert found and not wrong, (f"these exercises' graded tests live in other files than the table's `tests` says; "
                                 f"update minitorch/exercises/registry.py: {wrong}")


def test_every_exercise_has_tests_and_every_marked_exercise_exists():
    marked, known = marked_exercise_ids(), set(exercises.EXERCISES)
    untested = sorted(known - set(marked), key=exercises.sort_key)
    assert not untested, f"exercise(s) {untested} have no test marked @pytest.mark.exercise(...): nothing grades them"
    unknown = sorted(set(marked) - known, key=exercises.sort_key)
    assert not unknown, (
        f"tests are marked with exercise(s) {unknown}, which minitorch/exercises/registry.py does not list")


def test_every_exercise_of_the_engine_has_hidden_tests():
    """Chapters 01-02: each exercise names a file of tests/hidden/ in the table, which holds tests of it (the table
    test above checks the files against what is collected)."""
    without = [exercise.id for exercise in load_exercises(ROOT) if exercise.chapter <= 2 and not
               exercise.hidden_test_files]
    assert not without, f"exercise(s) {without} have no hidden tests (tests/hidden/, named in the table's `tests`)"


def test_each_chapter_names_its_graded_exercises_and_the_function_each_asks_for():
    missing = []
    for exercise in load_exercises(ROOT):
        chapters = sorted((ROOT / "chapters").glob(f"{exercise.chapter:02d}_*.ipynb"))
        text = chapters[0].read_text(encoding="utf-8") if chapters else ""
        if chapters and (f"Exercise {exercise.id} (graded)" not in text or f"`{exercise.function}`" not in text):
            missing.append(f"{exercise.id} ({exercise.function}) in {chapters[0].name}")
    assert not missing, (f"each chapter should state its graded exercises as 'Exercise X.Y (graded)' and name the "
                         f"function each asks for, in backticks: {missing}")


def _draws_with_a_fixed_seed(function: ast.FunctionDef) -> list[str]:
    return [ast.unparse(call) for call in ast.walk(function)
            if isinstance(call, ast.Call) and ast.unparse(call.func).endswith("default_rng")
            and call.args and isinstance(call.args[0], ast.Constant)]


def test_graded_tests_draw_their_random_inputs_from_the_exercise_seed():
    offenders = []
    for path in sorted(TESTS.rglob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and any("exercise(" in ast.unparse(d) for d in node.decorator_list):
                offenders += [f"{path.name}::{node.name}: {call}" for call in _draws_with_a_fixed_seed(node)]
    assert not offenders, ("graded tests should draw random inputs from np.random.default_rng(exercise_seed), so "
                           "that --exercise-seed changes them; these use a fixed seed:\n" + "\n".join(offenders))


def test_list_prints_every_exercise_with_chapter_place_points_and_public_and_hidden_test_counts():
    completed = subprocess.run([sys.executable, "-m", "minitorch.exercises", "list"], cwd=ROOT,
                               capture_output=True, text=True, timeout=120, env=_clean_environment())
    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    for exercise in load_exercises(ROOT):
        row = next((line for line in lines if line.startswith(exercise.id + " ")), None)
        assert row is not None, f"exercise {exercise.id} is missing from the list:\n{completed.stdout}"
        assert f"{exercise.module}: {exercise.function}" in row and f" {exercise.chapter:02d} " in row, row
        assert exercise.title in row, row
        points, hidden_points, public_tests, hidden_tests = row.split()[-4:]
        assert points == str(exercise.points) and int(public_tests) >= 1, f"points or test count wrong in: {row}"
        assert float(hidden_points) == exercises.part_points(exercise)[1], f"hidden points wrong in: {row}"
        if hidden_tests != "-":  # '-': a student edition, which holds no hidden tests
            assert (int(hidden_tests) >= 1) == bool(exercise.hidden_test_files), f"hidden test count wrong in: {row}"
    assert "the public tests carry" in completed.stdout and "the hidden tests" in completed.stdout


# ----------------------------------------------------------------------
# grading, on a tiny project with a copy of this conftest.py


def _clean_environment(**overrides) -> dict:
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("MINITORCH_ROOT", "MINITORCH_EXERCISE_SEED", "PYTEST_ADDOPTS")}
    environment.update(PYTHONDONTWRITEBYTECODE="1", MPLBACKEND="Agg", **overrides)
    return environment


TINY_TESTS = '''\
import pytest
import minitorch

QUOTED = {quoted!r}


@pytest.mark.exercise("1.2")
def test_double_doubles():
    assert minitorch.double(2) == 4


@pytest.mark.exercise("1.1")
def test_needs_double():
    assert minitorch.double(1) == 2


@pytest.mark.exercise("1.1")
def test_triple_triples():
    assert minitorch.triple(1) == 3


@pytest.mark.exercise("1.1")
def test_triple_is_four():
    assert minitorch.triple(1) == 4, "a wrong answer"


def test_ungraded_needs_double():
    minitorch.double(1)


def test_a_notebook_quoting_the_stub():
    pytest.fail("cell 3 raised:\\n\\x1b[0;31mNotImplementedError\\x1b[0m: " + QUOTED)


def test_seed(exercise_seed):
    assert exercise_seed == 5
'''


def tiny_project(folder: Path, solved: bool = False) -> Path:
    """Exercise 1.2 (double) as a stub, or solved; triple is always there."""
    message = exercises.stub_message("1.2", exercises.EXERCISES["1.2"].title, "double", "minitorch/__init__.py")
    body = "return 2 * x" if solved else f"raise NotImplementedError({json.dumps(message)})"
    (folder / "minitorch").mkdir(parents=True)
    (folder / "tests").mkdir()
    (folder / "minitorch" / "__init__.py").write_text(
        f"def double(x):\n    {body}\n\n\n"
        f"def triple(x):\n    return 3 * x\n")
    (folder / "minitorch" / "exercises").mkdir()
    shutil.copy(ROOT / "minitorch" / "exercises" / "registry.py", folder / "minitorch" / "exercises" / "registry.py")
    for name in ("conftest.py", "course_plugin.py"):
        shutil.copy(TESTS / name, folder / "tests" / name)
    (folder / "tests" / "test_tiny.py").write_text(TINY_TESTS.format(quoted=message))
    return folder


def run_pytest(cwd: Path, *arguments: str, **environment) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs", *arguments], cwd=cwd,
                          capture_output=True, text=True, timeout=300, env=_clean_environment(**environment))


def test_stub_failures_are_not_attempted_or_blocked_and_the_scoreboard_adds_up(tmp_path):
    project = tiny_project(tmp_path / "tiny")
    completed = run_pytest(project, "--exercise-seed=5", f"--scoreboard-json={tmp_path / 'board.json'}")
    report = json.loads((tmp_path / "board.json").read_text())
    status = {nodeid.split("::")[-1]: test["status"] for nodeid, test in report["tests"].items()}
    assert status == {"test_double_doubles": "not attempted", "test_needs_double": "blocked",
                      "test_triple_triples": "passed", "test_triple_is_four": "failed",
                      "test_ungraded_needs_double": "blocked", "test_a_notebook_quoting_the_stub": "blocked",
                      "test_seed": "passed"}, completed.stdout
    first, second = report["exercises"]["1.2"], report["exercises"]["1.1"]
    assert (first["not attempted"], first["earned"]) == (1, 0.0)
    public, _ = exercises.part_points(exercises.EXERCISES["1.1"])  # no hidden tests here: the public share
    assert (second["passed"], second["failed"], second["blocked"], second["tests"]) == (1, 1, 1, 3)
    assert second["earned"] == pytest.approx(public / 3), "the public tests' points x passed / tests"
    assert report["exercise_seed"] == 5 and report["minitorch_root"] == str(project.resolve())
    output = completed.stdout
    assert "blocked: needs exercise 1.2 (chapter 01) first" in output
    assert "not attempted: Exercise 1.2 (chapter 01)" in output
    assert output.index("exercise scoreboard (seed 5)") > output.index("short test summary info"), (
        "the scoreboard should come at the end of the output")
    total_points = exercises.EXERCISES["1.2"].points + exercises.EXERCISES["1.1"].points
    worth = exercises.part_points(exercises.EXERCISES["1.2"])[0] + public
    assert re.search(rf"^total\s+1\s+1\s+1\s+1\s+{public / 3:.2f} / {worth:g} of {total_points}$", output,
                     re.MULTILINE), (
        "the total row should read passed 1, failed 1, not attempted 1, blocked 1:\n"
        + output[output.index("exercise scoreboard"):])


def test_markers_select_one_exercise_or_one_chapter_with_strict_markers(tmp_path):
    project = tiny_project(tmp_path / "tiny")
    for expression, expected in (("ex1_1", 3), ("ch01", 4)):
        completed = run_pytest(project, "--strict-markers", "-m", expression, "--collect-only", "-q")
        selected = [line for line in completed.stdout.splitlines() if "::" in line]
        assert completed.returncode in (0, 5) and len(selected) == expected, (expression, completed.stdout,
                                                                              completed.stderr)


def test_a_copy_is_graded_by_pointing_the_tests_at_it(tmp_path):
    project = tiny_project(tmp_path / "tiny")
    student = tiny_project(tmp_path / "student", solved=True)
    for how in ({"arguments": [f"--minitorch-root={student}"]}, {"MINITORCH_ROOT": str(student)}):
        arguments = how.pop("arguments", [])
        completed = run_pytest(project, *arguments, "-m", "ex1_2", f"--scoreboard-json={tmp_path / 'b.json'}", **how)
        assert completed.returncode == 0, completed.stdout
        assert f"minitorch under test: {student.resolve() / 'minitorch'}" in completed.stdout
        assert json.loads((tmp_path / "b.json").read_text())["exercises"]["1.2"]["passed"] == 1


def test_grading_stops_with_a_clear_error_when_the_wrong_minitorch_is_imported(tmp_path):
    project = tiny_project(tmp_path / "tiny")
    student = tiny_project(tmp_path / "student", solved=True)
    already_imported = (f"import sys; sys.path.insert(0, {str(project)!r}); import minitorch, pytest; "
                        f"sys.exit(pytest.main(['-p', 'no:cacheprovider', '--minitorch-root={student}', 'tests']))")
    completed = subprocess.run([sys.executable, "-c", already_imported], cwd=project, capture_output=True, text=True,
                               timeout=120, env=_clean_environment())
    output = completed.stdout + completed.stderr
    assert completed.returncode == 4, output
    assert f"the minitorch under test is {student.resolve() / 'minitorch'}" in output
    assert f"the one imported is {project.resolve() / 'minitorch'}" in output

    completed = run_pytest(project, f"--minitorch-root={tmp_path / 'nowhere'}")
    assert completed.returncode == 4 and "holds no minitorch/__init__.py" in completed.stdout + completed.stderr

    # Without '=', pytest first reads the path as a folder of tests and loads the conftest.py there.
    completed = run_pytest(project, "--minitorch-root", str(student))
    assert completed.returncode == 4 and "with '='" in completed.stdout + completed.stderr, completed.stdout


# ----------------------------------------------------------------------
# the self-check: the student edition of this book, run


def build_edition(folder: Path, *options: str) -> None:
    completed = subprocess.run([sys.executable, "-m", "minitorch.exercises", "student-edition", str(folder), *options],
                               cwd=ROOT, capture_output=True, text=True, timeout=120, env=_clean_environment())
    assert completed.returncode == 0, f"student-edition {' '.join(options)} failed:\n{completed.stderr}"


def reference_body(exercise, root: Path = ROOT) -> str:
    """The body of the exercise's function in `root` (after its docstring), at indentation 0."""
    text = (root / exercise.module).read_text(encoding="utf-8")
    body = body_after_docstring(function_node(ast.parse(text), exercise.function))
    return textwrap.dedent("".join(text.splitlines(keepends=True)[body[0].lineno - 1:body[-1].end_lineno]))


def put_back_answers(edition: Path, root: Path = ROOT) -> None:
    """Put the body of every exercise's function in `root` (the reference answers, in the full book) into the
    same function of `edition`."""
    by_module: dict[str, dict] = {}
    for exercise in load_exercises(root):
        by_module.setdefault(exercise.module, {})[exercise.function] = reference_body(exercise, root)
    for module, bodies in by_module.items():
        path = edition / module
        path.write_text(replace_bodies(path.read_text(encoding="utf-8"), bodies, module), encoding="utf-8")


def start_fast_tests(folder: Path, seed: int, *tests: str, board_name: str = "") -> tuple[subprocess.Popen, Path]:
    """Run the edition's own tests in the background: `tests` (node IDs), or all of them, -m "not slow". They
    write a JSON scoreboard."""
    board = folder.parent / f"{board_name or folder.name}.json"
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-m", "not slow", "-p", "no:cacheprovider",
         f"--scoreboard-json={board}", *tests], cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, env=_clean_environment(MINITORCH_EXERCISE_SEED=str(seed)))
    return process, board


def outcomes_of(process: subprocess.Popen, board: Path) -> dict[str, dict]:
    output, _ = process.communicate(timeout=900)
    assert board.exists(), f"the edition's test run wrote no scoreboard:\n{output[-3000:]}"
    return json.loads(board.read_text())["tests"]


def gist(message: str) -> str:
    """A failure message short enough to list: its opening and, where it is long (a traceback), its end."""
    return message if len(message) <= 700 else f"{message[:160]} [...] {message[-500:]}"


def listing(problems: list[str]) -> str:
    return "\n".join(problems[:25]) + (f"\n... and {len(problems) - 25} more" if len(problems) > 25 else "")


@pytest.mark.slow
@pytest.mark.timeout(3600)  # three runs of an edition's fast tests, each given 900 s: beyond a test's usual 600 s
def test_the_student_edition_fails_the_exercises_it_hands_out_and_nothing_else(tmp_path, exercise_seed):
    """Every exercise handed out (the full edition), every test runs. A test that ran past every stub runs the same
    code in any edition, so in an edition handing out fewer (the partial one) and in the full one solved only the
    tests that stopped at a stub, or skipped, run again, the two side by side."""
    full, partial = tmp_path / "full", tmp_path / "partial"
    build_edition(full)
    handed_out = {"3.2"} | {exercise.id for exercise in load_exercises(ROOT) if exercise.chapter == 4}
    build_edition(partial, "--only", "3.2", "--chapter", "4", "--release",  # every other answer released
                  ",".join(sorted(set(EXERCISES) - handed_out, key=exercises.sort_key)))
    started = time.perf_counter()
    full_outcomes = outcomes_of(*start_fast_tests(full, exercise_seed))
    print(f"the full edition's fast tests ran in {time.perf_counter() - started:.0f} s")

    graded_wrongly = [f"{nodeid}: {test['status']}: {gist(test['message'])}" for nodeid, test in full_outcomes.items()
                      if test["exercise"] and test["status"] not in ("not attempted", "blocked")]
    assert not graded_wrongly, (
        "with every exercise a stub, every graded test must fail with its own stub (not attempted) or wait for "
        "another exercise (blocked). These do not; a test that passes here grades nothing of its exercise, and "
        "one that fails otherwise is broken:\n" + listing(graded_wrongly))
    reached = {test["exercise"] for test in full_outcomes.values() if test["status"] == "not attempted"}
    unreached = sorted(set(exercises.EXERCISES) - reached, key=exercises.sort_key)
    assert not unreached, (f"no test of exercise(s) {unreached} reaches its own stub: all of them wait for other "
                           f"exercises; add a test that calls the exercise's code directly")
    broken = [f"{nodeid}: {test['status']}: {gist(test['message'])}" for nodeid, test in full_outcomes.items()
              if not test["exercise"] and test["status"] not in ("passed", "blocked", "skipped")]
    assert not broken, ("tests that grade no exercise must pass in the student edition, or wait for a named "
                        "exercise (blocked); these fail (if they fail in the reference too, fix them there):\n"
                        + listing(broken))

    stopped = [nodeid for nodeid, test in full_outcomes.items() if test["status"] in ("not attempted", "blocked")]
    again = stopped + [nodeid for nodeid, test in full_outcomes.items() if test["status"] == "skipped"]
    put_back_answers(full)  # a student who solves every exercise sees only passing tests
    started = time.perf_counter()
    runs = [start_fast_tests(partial, exercise_seed, *again), start_fast_tests(full, exercise_seed, *stopped,
                                                                               board_name="solved")]
    partial_outcomes, solved_outcomes = (outcomes_of(*run) for run in runs)
    print(f"the {len(again)} tests that stopped at a stub or skipped ran again in the partial edition, and "
          f"{len(stopped)} in the full one solved, in {time.perf_counter() - started:.0f} s")

    wrong = []
    for nodeid, test in partial_outcomes.items():
        expected = ("not attempted", "blocked") if test["exercise"] in handed_out else ("passed", "blocked", "skipped")
        if test["status"] not in expected or (test["status"] == "blocked" and test["blocked_by"] not in handed_out):
            wrong.append(f"{nodeid} (exercise {test['exercise']}): {test['status']}: {gist(test['message'])}")
    assert not wrong, (f"in an edition handing out only {sorted(handed_out)}, every other test must pass, and "
                       f"the tests of those exercises must fail with their stubs:\n" + listing(wrong))
    total = json.loads((tmp_path / "partial.json").read_text())["total"]
    own_points = sum(exercises.EXERCISES[exercise_id].points for exercise_id in handed_out)
    own_public = sum(exercises.part_points(exercises.EXERCISES[exercise_id])[0] for exercise_id in handed_out)
    assert total == {"points": own_points, "max": pytest.approx(own_public), "earned": 0.0}, (
        f"the untouched partial edition should score 0 out of its own {own_public} public points, not {total}")

    failing = [f"{nodeid}: {test['status']}: {gist(test['message'])}" for nodeid, test in solved_outcomes.items()
               if test["status"] not in ("passed", "skipped")]
    missing = sorted(set(stopped) - set(solved_outcomes))
    assert not failing and not missing, (
        "in the full student edition with every exercise solved (this copy's answers put back into its functions), "
        "every test that stopped at a stub must pass; a test that needs the reference answers or an instructor "
        "test belongs out of the edition (INSTRUCTOR_ONLY) or skips there, saying why. These fail:\n"
        + listing(failing) + (f"\nand these did not run: {listing(missing)}" if missing else ""))
    total = json.loads((tmp_path / "solved.json").read_text())["total"]
    points = sum(exercise.points for exercise in exercises.EXERCISES.values())
    public = sum(exercises.part_points(exercise)[0] for exercise in exercises.EXERCISES.values())
    assert total == {"points": points, "max": pytest.approx(public), "earned": pytest.approx(public)}, (
        f"with every exercise solved the scoreboard (no hidden tests in an edition) should read {public} / {public} "
        f"of {points}, not {total}")


# ----------------------------------------------------------------------
# what each exercise needs


NEEDS_RECORDER = '''
import importlib, inspect, json, sys
import pytest
from minitorch.exercises.registry import EXERCISES

codes = {inspect.unwrap(getattr(importlib.import_module(e.python_module), e.function)).__code__: e.id
         for e in EXERCISES.values()}
reached = {}


class Recorder:
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        mark = item.get_closest_marker("exercise")
        seen = reached.setdefault(str(mark.args[0]), set()) if mark else set()

        def profile(frame, event, arg):
            if event == "call" and frame.f_code in codes:
                seen.add(codes[frame.f_code])
        sys.setprofile(profile)
        yield
        sys.setprofile(None)


status = pytest.main(["-q", "-p", "no:cacheprovider", "-m", "not slow", *sys.argv[1:]], plugins=[Recorder()])
print("REACHED " + json.dumps({key: sorted(value - {key}) for key, value in reached.items()}))
'''


@pytest.mark.slow
def test_each_exercise_needs_what_its_graded_tests_reach_of_the_other_exercises(tmp_path):
    """While X is graded, the grader answers a stand-in only for the exercises the table says X needs: run every
    graded test on the reference library, recording which exercise functions each exercise's tests reach."""
    from minitorch.exercises.grader.trusted.grading import graded_test_files

    (tmp_path / "record.py").write_text(NEEDS_RECORDER)
    completed = subprocess.run([sys.executable, str(tmp_path / "record.py"), *graded_test_files(ROOT)], cwd=ROOT,
                               capture_output=True, text=True, timeout=900,
                               env=_clean_environment(PYTHONPATH=str(ROOT)))
    line = next((line for line in completed.stdout.splitlines() if line.startswith("REACHED ")), None)
    assert line, completed.stdout[-3000:] + completed.stderr[-2000:]
    missing = {exercise_id: sorted(set(reached) - set(EXERCISES[exercise_id].needs))
               for exercise_id, reached in json.loads(line.removeprefix("REACHED ")).items()}
    missing = {exercise_id: found for exercise_id, found in missing.items() if found}
    assert not missing, (f"the graded tests of these exercises reach other exercises' functions that the table does "
                         f"not list in `needs`; an honest copy would be refused: {missing}")
