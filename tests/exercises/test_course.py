"""What the student edition hands out (chapter 00): self-check answers stay, graded answers go nowhere.

- The answers to predict-then-check questions are tagged "self-check" and stay in the student edition;
  only cells tagged "solution" (answers to graded exercises) are removed.
- The instructor's own files (`registry.INSTRUCTOR_ONLY`: the hand-fused copies of answers, the hidden tests, and
  the tests that run every function of an edition beside the reference answers) stay out of every edition, and a
  student who solves every exercise sees only passing tests.
- A solved exercise is picked up by a running chapter without a restart.

The search of every edition (library, tests, chapters) for functions computing the answers it hands out is
instructor-only: tests/exercises/test_answer_leaks.py.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import tokenize
from pathlib import Path

import pytest

import minitorch
from minitorch.exercises import edition
from minitorch.exercises.edition import make_student_edition, stubbed_source
from minitorch.exercises.registry import EXERCISES, SELF_CHECK_TAG, SOLUTION_TAG

ROOT = Path(minitorch.__file__).resolve().parent.parent  # the project under test (--minitorch-root)
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))


def _tags(cell: dict) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def test_the_edition_keeps_self_check_answers_and_drops_graded_answers():
    notebook = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["**Exercise 1.5 (predict, then check)**"]},
        {"cell_type": "code", "metadata": {"tags": [SELF_CHECK_TAG]}, "source": ["print(33)"], "outputs": [],
         "execution_count": 4},
        {"cell_type": "code", "metadata": {"tags": [SOLUTION_TAG]}, "source": ["graded answer"], "outputs": [],
         "execution_count": None},
    ]}
    stripped, removed = edition.strip_solutions(notebook)
    assert removed == 1
    assert [cell["source"] for cell in stripped["cells"]] == [["**Exercise 1.5 (predict, then check)**"],
                                                              ["print(33)"]], "the self-check answer must stay"
    assert stripped["cells"][1]["execution_count"] is None, "outputs are cleared all the same"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda path: path.stem)
def test_each_predict_then_check_answer_is_a_self_check_cell(chapter):
    cells = json.loads(chapter.read_text(encoding="utf-8"))["cells"]
    wrong = []
    for index, cell in enumerate(cells):
        question = re.search(r"\*\*Exercise (\d+\.\d+) \(predict, then check\)", "".join(cell["source"]))
        if cell["cell_type"] != "markdown" or not question:
            continue
        answer = next((later for later in cells[index + 1:] if later["cell_type"] == "code"), None)
        if answer is None or SELF_CHECK_TAG not in _tags(answer) or SOLUTION_TAG in _tags(answer):
            wrong.append(f"exercise {question[1]} (cell {index})")
    assert not wrong, (f"{chapter.name}: the code cell after each predict-then-check question is its answer and "
                       f"must be tagged {SELF_CHECK_TAG!r} (kept for students), not {SOLUTION_TAG!r} (removed with "
                       f"graded answers): {wrong}")


def test_an_edition_trains_with_the_students_own_functions_and_bench_says_it_has_no_floor(tmp_path):
    make_student_edition(tmp_path / "edition", [EXERCISES["3.2"]], ROOT)
    assert not (tmp_path / "edition" / "minitorch" / "fast" / "hand_fused.py").exists(), (
        "the hand-fused copies of the answers stay with the instructor")
    check = ("from minitorch.fast import attention as fast_attention\n"
             "print(fast_attention.fast_normaliser('softmax') is None)\n")
    environment = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    completed = subprocess.run([sys.executable, "-c", check], cwd=tmp_path / "edition", capture_output=True,
                               text=True, timeout=120, env=environment)
    assert completed.returncode == 0 and completed.stdout.strip() == "True", completed.stdout + completed.stderr
    bench = subprocess.run([sys.executable, "-m", "minitorch", "bench"], cwd=tmp_path / "edition",
                           capture_output=True, text=True, timeout=120, env=environment)
    assert bench.returncode == 2 and "no minitorch/fast/hand_fused.py" in bench.stderr, bench.stdout + bench.stderr


# ----------------------------------------------------------------------
# a solved exercise is picked up without restarting the kernel


@pytest.mark.slow
def test_a_chapter_kernel_picks_up_a_solved_exercise_without_a_restart(tmp_path):
    """With the set-up cell's autoreload, solving 1.1 (in tensor.py, beside the Tensor class), 2.5 and 3.2 makes
    the next cell run the student's code, and what other modules registered (softmax1) stays registered."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    shutil.copytree(ROOT / "minitorch", tmp_path / "minitorch", ignore=shutil.ignore_patterns("__pycache__"))
    chosen = [EXERCISES[exercise_id] for exercise_id in ("1.1", "2.5", "3.2")]
    solved = {tmp_path / exercise.module: (tmp_path / exercise.module).read_text(encoding="utf-8")
              for exercise in chosen}
    for exercise in chosen:
        path = tmp_path / exercise.module
        path.write_text(stubbed_source(path.read_text(encoding="utf-8"), [exercise], exercise.module),
                        encoding="utf-8")
    (tmp_path / "solve.py").write_text(
        "import os, time\n" + "".join(
            f"open({str(path)!r}, 'w', encoding='utf-8').write({text!r})\n"
            f"os.utime({str(path)!r}, (time.time() + 5, time.time() + 5))\n" for path, text in solved.items()),
        encoding="utf-8")
    setup = json.loads((ROOT / "chapters" / CHAPTERS[1].name).read_text(encoding="utf-8"))["cells"][1]
    assert "%autoreload 2" in "".join(setup["source"]), "the set-up cell should turn autoreload on"
    train_one_step = ("x, y, _ = task.make_batch(4, np.random.default_rng(0))\n"
                      "model = models.SingleLayerModel(normaliser='softmax1', seed=0)\n"
                      "optimizer = minitorch.optim.Adam(model.parameters(), lr=1e-3)\n"
                      "loss = ((model(x) - minitorch.tensor(y)) ** 2).mean()\nloss.backward()\noptimizer.step()\n"
                      "print('trained', loss.item())")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in (
        "".join(setup["source"]) + "\nfrom minitorch.paper import models, task", train_one_step,
        f"exec(open({str(tmp_path / 'solve.py')!r}).read())", train_one_step)])
    nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    before, after = notebook.cells[1].outputs, notebook.cells[3].outputs
    assert before and before[0].get("ename") == "NotImplementedError", f"the stub should stop the cell: {before}"
    assert after and "trained" in after[0].get("text", ""), (
        f"after solving the exercises the same kernel should run the student's code, got: {after}")
