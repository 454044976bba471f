"""What the student edition hands out (chapter 00): self-check answers stay, graded answers go nowhere.

- The answers to predict-then-check questions are tagged "self-check" and stay in the student edition;
  only cells tagged "solution" (answers to graded exercises) are removed.
- No exercise's answer appears outside its region in an edition that hands it out: the library's fast
  copies of exercises ("speed copies") are replaced too, and the NumPy floor of the benchmark, which
  spells out answers, is withheld.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import minitorch
from minitorch.exercises import edition, load_exercises, make_student_edition
from minitorch.exercises.registry import SELF_CHECK_TAG, SOLUTION_TAG

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
