"""A student reading in order can run every chapter (chapter 00).

Each chapter states its graded exercises (a markdown cell's bold "Exercise X.Y (graded)") once each, in the order of
their IDs, which is the order a student can do them in, and states no other chapter's.

For each chapter N, a student edition in which the exercises of chapters after N are stubs (and those of
chapters up to N are released, as if solved) must run chapter N top to bottom in quick mode. In the
same run, each function of chapter N's own exercises records which cell reached it, and no cell may reach an
exercise before the chapter has stated it: a student who reads in order has the exercise's statement before a
cell needs it, not at the chapter's end. And the first cell that needs one of the chapter's own exercises says
so where a student stopped by its stub will look, in that cell's comments or in the markdown cell right above
it: "write exercise X.Y first".
"""

from __future__ import annotations

import ast
import json
import os
import re
from pathlib import Path

import pytest

import minitorch
from minitorch.exercises.edition import make_student_edition
from minitorch.exercises.registry import STUB_ERROR, body_after_docstring, function_node, load_exercises

ROOT = Path(minitorch.__file__).resolve().parent.parent  # the project under test (--minitorch-root)
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
PROBE = "__import__('builtins').__dict__.setdefault('_minitorch_regions_reached', [])"
_STATED = re.compile(r"\*\*Exercise (\d+\.\d+) \(graded\)")  # a statement's bold heading
_NAMED = re.compile(r"[Ee]xercises?\s+(\d+\.\d+(?:\s*(?:,|and|or|-|–)\s*\d+\.\d+)*)")
_WRITE_FIRST = re.compile(r"[Ww]rite ((?:exercises? )?\d+\.\d+(?:\s*(?:,|and|or|-|–)\s*\d+\.\d+)*) first")


def exercises_named(text: str) -> set[str]:
    """The exercise IDs a text names: 'exercise 3.5', 'exercises 1.2, 1.3 and 1.4', 'Exercises 2.1-2.5'."""
    named = set()
    for listing in _NAMED.findall(text):
        for first, dash, last in re.findall(r"(\d+\.\d+)(?:\s*([-–])\s*(\d+\.\d+))?", listing):
            named.add(first)
            if dash and first.split(".")[0] == last.split(".")[0]:
                chapter, start, stop = first.split(".")[0], int(first.split(".")[1]), int(last.split(".")[1])
                named.update(f"{chapter}.{number}" for number in range(start, stop + 1))
    return named


def write_first_notes(text: str) -> set[str]:
    """The exercise IDs a text tells the reader to write first: 'write exercise 9.1 first', 'write exercises 3.1
    and 3.2 first'."""
    text = " ".join(text.split())  # a note may wrap: "write\nexercise 3.2 first"
    return {exercise_id for listing in _WRITE_FIRST.findall(text)
            for exercise_id in exercises_named("exercises " + listing.split(" ", 1)[-1]
                                               if listing.startswith("exercise") else "exercises " + listing)}


def noted_before(cells: list[dict], index: int) -> set[str]:
    """What cell `index` (its comments) and the markdown cell right above it tell the reader to write first."""
    notes = write_first_notes("".join(cells[index]["source"]))
    above = next((cell for cell in reversed(cells[:index]) if cell["cell_type"] == "markdown"), None)
    return notes | (write_first_notes("".join(above["source"])) if above else set())


def first_naming_cell(cells: list[dict]) -> dict[str, int]:
    """Exercise ID -> index of the first cell that names it, in its markdown or in a code cell's comments."""
    first: dict[str, int] = {}
    for index, cell in enumerate(cells):
        text = "".join(cell["source"])
        if cell["cell_type"] == "code":
            text = "\n".join(line for line in text.splitlines() if line.lstrip().startswith("#"))
        for exercise_id in exercises_named(text):
            first.setdefault(exercise_id, index)
    return first


def statements(cells: list[dict]) -> list[tuple[int, str]]:
    """(cell index, exercise ID) of every statement of a graded exercise (a markdown cell's bold heading
    "**Exercise X.Y (graded)..."), in the order of the cells."""
    return [(index, exercise_id) for index, cell in enumerate(cells) if cell["cell_type"] == "markdown"
            for exercise_id in _STATED.findall("".join(cell["source"]))]


def unquote_stubs(text: str) -> str:
    """`text` with each stub's error replaced by a paraphrase, so that the scoreboard (tests/conftest.py)
    reports this test as failed rather than as blocked by the exercise whose stub it quotes."""
    return STUB_ERROR.sub(lambda found: f"<the stub of exercise {found[1]} raised>", text)


def test_exercises_named_reads_single_ids_lists_and_ranges():
    assert exercises_named("needs exercise 1.1, `topological_order`") == {"1.1"}
    assert exercises_named("are exercises 1.2, 1.3 and 1.4 at the end") == {"1.2", "1.3", "1.4"}
    assert exercises_named("Exercises 2.1-2.5 are **graded**") == {"2.1", "2.2", "2.4", "2.3", "2.5"}
    assert exercises_named("**Exercise 3.5 (graded): Gu") == {"3.5"}
    assert exercises_named("at 2.5 times the exercise") == set()
    assert write_first_notes("In the student edition, write exercise 9.1 first.") == {"9.1"}
    assert write_first_notes("write exercises 3.1 and 3.2 first") == {"3.1", "3.2"}
    assert write_first_notes("Write 3.4 first, then run") == {"3.4"}
    assert write_first_notes("In the student edition, write\nexercise 3.2 first.") == {"3.2"}
    assert write_first_notes("write it before you run this cell (exercise 5.1)") == set()


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda path: path.stem)
def test_a_chapter_states_its_graded_exercises_once_each_in_the_order_of_their_ids(chapter):
    number = int(chapter.name[:2])
    own = [exercise.id for exercise in load_exercises(ROOT) if exercise.chapter == number]
    stated = [exercise_id for _, exercise_id in statements(json.loads(chapter.read_text(encoding="utf-8"))["cells"])]
    assert stated == own, (f"{chapter.name} should state its graded exercises {own or 'none'} once each, in this "
                           f"order (the order a student can do them in), each under the bold heading 'Exercise "
                           f"X.Y (graded)' in a markdown cell where the chapter first needs it; it states "
                           f"{stated or 'none'}")


def record_reaching(edition: Path, exercises) -> None:
    """Make each function of `exercises` in the edition append its ID to a list in builtins when it runs."""
    for exercise in exercises:
        path = edition / exercise.module
        text = path.read_text(encoding="utf-8")
        body = body_after_docstring(function_node(ast.parse(text), exercise.function))
        lines = text.splitlines(keepends=True)
        lines.insert(body[0].lineno - 1, " " * body[0].col_offset + f"{PROBE}.append({exercise.id!r})\n")
        path.write_text("".join(lines), encoding="utf-8")


def with_probes(notebook):
    """The notebook with a probe cell after every code cell, printing (and clearing) the functions reached;
    and for each probe, the index of the chapter's cell it follows."""
    nbformat = pytest.importorskip("nbformat")
    probed, follows = nbformat.v4.new_notebook(metadata=notebook.metadata), {}
    for index, cell in enumerate(notebook.cells):
        probed.cells.append(cell)
        if cell.cell_type == "code":
            follows[len(probed.cells)] = index
            probed.cells.append(nbformat.v4.new_code_cell(
                f"print('REACHED', sorted(set({PROBE})))\n{PROBE}.clear()"))
    return probed, follows


def reached_by_cell(probed, follows) -> dict[int, set[str]]:
    """Chapter cell index -> the exercises its probe reported. The probe's one print may reach the notebook as
    several stream outputs (the kernel flushes when it likes, more often under load): they are joined first."""
    reached = {}
    for position, index in follows.items():
        printed = "".join(output.get("text", "") for output in probed.cells[position].get("outputs", []))
        found = re.search(r"REACHED (\[.*\])", printed)
        if found:
            reached[index] = set(json.loads(found[1].replace("'", '"')))
    return reached


@pytest.mark.slow
@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda path: path.stem)
def test_a_student_who_has_solved_the_exercises_so_far_can_run_the_chapter(chapter, tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    number = int(chapter.name[:2])
    exercises = load_exercises(ROOT)
    edition = tmp_path / "edition"
    make_student_edition(edition, [exercise for exercise in exercises if exercise.chapter > number], ROOT,
                         released=[exercise for exercise in exercises if exercise.chapter <= number])
    own = [exercise for exercise in exercises if exercise.chapter == number]
    record_reaching(edition, own)

    monkeypatch.setenv("MINITORCH_QUICK", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("MINITORCH_ROOT", str(edition))  # chapter 00 runs the tests of the copy it sits in
    notebook = nbformat.read(edition / "chapters" / chapter.name, as_version=4)
    probed, follows = with_probes(notebook)
    client = nbclient.NotebookClient(probed, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(edition / "chapters")}})
    failure = None
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as error:
        failure = str(error)
    if failure is not None:  # raised outside the except: conftest would call a quoted stub error "blocked"
        later = ", ".join(exercise.id for exercise in exercises if exercise.chapter > number) or "none"
        pytest.fail(f"{chapter.name} fails in a student edition where the exercises of chapters up to {number:02d} "
                    f"are solved and those of later chapters ({later}) are stubs; a student reading in order "
                    f"cannot run it:\n{unquote_stubs(failure)[-3000:]}", pytrace=False)

    named = first_naming_cell(notebook.cells)
    stated = {exercise_id: index for index, exercise_id in reversed(statements(notebook.cells))}  # the first
    early, unnoted, seen = [], [], set()
    for index, reached in sorted(reached_by_cell(probed, follows).items()):
        for exercise_id in sorted(reached):
            if stated.get(exercise_id, len(notebook.cells)) > index:
                where = (f"the chapter states it only in cell {stated[exercise_id]}" if exercise_id in stated
                         else "the chapter never states it ('Exercise X.Y (graded)')")
                if exercise_id in named and exercise_id not in stated:
                    where += f" (cell {named[exercise_id]} names it)"
                early.append(f"cell {index} runs exercise {exercise_id}, but {where}")
            if exercise_id not in seen and exercise_id not in noted_before(notebook.cells, index):
                unnoted.append(f"cell {index} is the first to run exercise {exercise_id}")
            seen.add(exercise_id)
    assert not early, (f"{chapter.name}: cells need an exercise before the chapter states it; state it ('Exercise "
                       f"X.Y (graded)') before the first cell that needs it, or rewrite the cell:\n" + "\n".join(early))
    assert not unnoted, (f"{chapter.name}: in the student edition these cells stop at an exercise's stub; say "
                         f"'write exercise X.Y first' in the cell's comments or in the markdown cell right above it:\n"
                         + "\n".join(unnoted))
