"""What the student edition hands out (chapter 00): self-check answers stay, graded answers go nowhere.

- The answers to predict-then-check questions are tagged "self-check" and stay in the student edition;
  only cells tagged "solution" (answers to graded exercises) are removed.
- A graded test that fails says what is wrong in a few lines, pointing at a common mistake where one is known.
- No exercise's answer appears outside its region in an edition that hands it out: the library's fast
  copies of exercises ("speed copies") are replaced too, and the NumPy floor of the benchmark, which
  spells out answers, is withheld.
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
from minitorch.exercises import ExerciseError, edition, load_exercises, make_student_edition, stub_source
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


# ----------------------------------------------------------------------
# no answer outside its region

# What gives each exercise's answer away, however it is spelled (NumPy, minitorch or PyTorch), as regular
# expressions over code with comments and whitespace removed. The first must match the reference answer; the
# others are the same answer as other code spells it (the NumPy floor, PyTorch, the fast attention).
ANSWER_SIGNATURES = {
    "1.1": [r"grad\*b\.data,grad\*a\.data"],
    "1.2": [r"stack\.append\(\(node,True\)\)"],
    "1.3": [r"return\(grad\*out,\)"],
    "1.4": [r"return\(grad/a\.data,\)"],
    "2.1": [r"\.sum\(axis=tuple\(range\(", r"size==1andgrad\.shape\[axis\]!=1"],
    "2.2": [r"a\.data\[None,:\]ifa\.ndim==1", r"np\.swapaxes\(a_mat,-1,-2\)@grad"],
    "2.3": [r"\*\(grad-", r"grad-=sum_along\(grad\*weights", r"-=?max_along\(|\.data-shift\)"],
    "2.4": [r"broadcast_to\(grad,a\.shape\)"],
    "2.5": [r"\(1-beta2\)\*grad\*grad", r"1-beta1\*\*"],
    "3.1": [r"\.triu\(|np\.triu\(|\.tril\(|np\.tril\("],
    "3.2": [r"masked_fill\(future,-np\.inf\)", r"where\(future,-np\.inf", r"float\(\"-inf\"\)", r"visible>0,0\.0,-np\.inf"],
    "3.3": [r"relu\(scores\)\*visible", r"relu\(scores\.masked_fill\(future,0\.0\)\)",
            r"maximum\(scores,0\.0,out=scores\)"],
    "3.4": [r"at_non_trigger_rows\(weights\[\.\.\.,0\]"],
    "3.5": [r"length-np\.arange\(length\)", r"where\(row_sums>0"],
    "4.1": [r"positions<=triggers\[:,None\]", r"y\[np\.arange\(batch\),triggers\]\+="],
    "5.1": [r"np\.outer\(u,e_b-e_t\)"],
    "6.1": [r"np\.outer\(u,e_b\+e_t\)"],
    "9.1": [r"gu_sink_scores\(weights\)\[:,key\]"],
}


def code_only(text: str) -> str:
    """Python source without comments and without any whitespace."""
    tokens = tokenize.generate_tokens(io.StringIO(textwrap.dedent(text)).readline)
    return "".join(token.string for token in tokens if token.type not in (tokenize.COMMENT, tokenize.NL,
                                                                           tokenize.NEWLINE, tokenize.INDENT,
                                                                           tokenize.DEDENT))


def region_source(exercise) -> str:
    lines = exercise.path.read_text(encoding="utf-8").splitlines(keepends=True)
    return "".join(lines[exercise.begin_line:exercise.end_line - 1])


def library_files() -> list[Path]:
    """minitorch/'s modules, without the course's own code (minitorch/exercises/ describes answers, holds none)."""
    package = ROOT / "minitorch"
    return [path for path in sorted(package.rglob("*.py")) if path.relative_to(package).parts[0] != "exercises"]


def test_every_exercise_has_answer_signatures_that_match_its_reference_answer():
    for exercise in load_exercises(ROOT):
        assert exercise.id in ANSWER_SIGNATURES, f"add exercise {exercise.id} to ANSWER_SIGNATURES"
        answer, signature = code_only(region_source(exercise)), ANSWER_SIGNATURES[exercise.id][0]
        assert re.search(signature, answer), (f"the first signature {signature!r} of exercise {exercise.id} no "
                                              f"longer matches its reference answer; update it:\n{answer}")


@pytest.mark.parametrize("exercise", load_exercises(ROOT), ids=lambda exercise: exercise.id)
def test_an_edition_handing_out_an_exercise_holds_its_answer_nowhere(exercise):
    """The edition's text of every module, with only `exercise` handed out, is searched for its answer.
    Handing out more exercises only removes more, so this is the strictest edition for it."""
    leaks = []
    for path in library_files():
        text = path.read_text(encoding="utf-8")
        if path == exercise.path:
            text = stub_source(text, [exercise], ROOT)
        relative = path.relative_to(ROOT).as_posix()
        code = code_only(edition.remove_speed_copies(text, {exercise.id}, relative))
        leaks += [f"{relative}: {signature!r}" for signature in ANSWER_SIGNATURES[exercise.id]
                  if re.search(signature, code)]
    assert not leaks, (f"an edition handing out exercise {exercise.id} still holds its answer outside its region; "
                       f"move that code into the region, or mark it '# BEGIN SPEED COPY OF EXERCISES "
                       f"{exercise.id} ...' so that the edition removes it:\n" + "\n".join(leaks))


# The constructions of 5.1 and 6.1 are matrices the chapters state and build by hand (chapter 03, section 11)
# before the exercises ask for them in the library: their answers are in the text by design.
STATED_IN_THE_TEXT = {"5.1", "6.1"}


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda path: path.stem)
def test_no_chapter_cell_spells_out_a_graded_answer(chapter):
    cells = json.loads(chapter.read_text(encoding="utf-8"))["cells"]
    found = []
    for index, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        python = "\n".join(line for line in "".join(cell["source"]).splitlines() if not line.lstrip().startswith("%"))
        code = code_only(python)
        found += [f"cell {index}: exercise {exercise_id}, {signature!r}" for exercise_id, signatures
                  in ANSWER_SIGNATURES.items() if exercise_id not in STATED_IN_THE_TEXT
                  for signature in signatures if re.search(signature, code)]
    assert not found, (f"{chapter.name}: code cells spell out answers to graded exercises, which every student "
                       f"edition keeps; call the library instead:\n" + "\n".join(found))


def test_a_speed_copy_is_replaced_by_its_statement_or_an_error_and_kept_otherwise():
    source = ("def fast(name):\n    if name:\n        # BEGIN SPEED COPY OF EXERCISES 2.3 3.2 (student edition: return None)\n"
              "        return lambda s: s * (g - 1)\n        # END SPEED COPY OF EXERCISES 2.3 3.2\n    return 0\n\n\n"
              "def floor():\n    # BEGIN SPEED COPY OF EXERCISES 2.5\n    return 'adam'\n    # END SPEED COPY OF EXERCISES 2.5\n")
    assert edition.remove_speed_copies(source, {"4.1"}, "m.py") == source, "nothing handed out is named: no change"
    namespace: dict = {}
    exec(edition.remove_speed_copies(source, {"3.2", "2.5"}, "m.py"), namespace)
    assert namespace["fast"](True) is None
    with pytest.raises(RuntimeError, match=r"m\.py:\d+: .*removed from the student edition .*exercise\(s\) 2\.5"):
        namespace["floor"]()
    for broken in ("    # BEGIN SPEED COPY OF EXERCISES 2.3\n    x = 1\n",
                   "    # BEGIN SPEED COPY OF EXERCISES 2.3\n    x = 1\n    # END SPEED COPY OF EXERCISES 3.2\n",
                   "    # BEGIN SPEED COPY OF EXERCISE 2.3\n"):
        with pytest.raises(ExerciseError, match=r"m\.py:\d+"):
            edition.remove_speed_copies(broken, {"2.3"}, "m.py")


def test_an_edition_handing_out_softmax_attention_trains_with_the_students_own_normaliser(tmp_path):
    make_student_edition(tmp_path / "edition", [e for e in load_exercises(ROOT) if e.id == "3.2"], ROOT)
    check = ("from minitorch.fast import attention as fast_attention\n"
             "print(fast_attention.fast_normaliser('softmax') is None)\n"
             "from minitorch.tools import numpy_step\n"
             "step = numpy_step.NumpyStep.__new__(numpy_step.NumpyStep); step.normaliser = 'softmax'\n"
             "try:\n    step._normalise(__import__('numpy').zeros((1, 1, 3, 3)))\n"
             "except RuntimeError as error:\n    print(error)\n")
    completed = subprocess.run([sys.executable, "-c", check], cwd=tmp_path / "edition", capture_output=True,
                               text=True, timeout=120, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    lines = completed.stdout.splitlines()
    assert completed.returncode == 0 and lines and lines[0] == "True", completed.stdout + completed.stderr
    assert "removed from the student edition" in completed.stdout and "3.2" in completed.stdout, completed.stdout


# ----------------------------------------------------------------------
# a graded test's failure fits on a screen


@pytest.mark.slow
def test_a_softmax_backward_summing_without_its_axis_fails_briefly_naming_the_likely_mistake(tmp_path):
    copy = tmp_path / "copy"
    for name in ("minitorch", "tests"):
        shutil.copytree(ROOT / name, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
    softmax = copy / "minitorch" / "softmax.py"
    right = "(grad * weights).sum(axis=axis, keepdims=True)"
    assert right in softmax.read_text(encoding="utf-8"), "the reference softmax changed; update this test"
    softmax.write_text(softmax.read_text(encoding="utf-8").replace(right, "(grad * weights).sum()"), encoding="utf-8")
    completed = subprocess.run([sys.executable, "-m", "pytest", "-m", "ex2_3", "-p", "no:cacheprovider", "--color=no",
                                "tests/test_softmax.py"], cwd=copy, capture_output=True, text=True, timeout=300,
                               env={key: value for key, value in os.environ.items()
                                    if key not in ("MINITORCH_ROOT", "PYTEST_ADDOPTS")})
    output = completed.stdout
    failures = re.split(r"\n_{3,} test_\S+ _{3,}\n", output.split("= FAILURES =")[-1].split("short test summary")[0])[1:]
    assert failures, f"the wrong backward should fail the gradient tests:\n{output[-2000:]}"
    too_long = [failure for failure in failures if len(failure.strip().splitlines()) > 12]
    assert not too_long, f"a failure should fit on a screen (12 lines at most); this one does not:\n{too_long[0]}"
    assert all("along `axis`" in failure for failure in failures), (
        f"each failure should point at the sum along `axis`:\n{failures[0]}")


# ----------------------------------------------------------------------
# a solved exercise is picked up without restarting the kernel


@pytest.mark.slow
def test_a_chapter_kernel_picks_up_a_solved_exercise_without_a_restart(tmp_path):
    """With the set-up cell's autoreload, solving 1.2 (in tensor.py, beside the Tensor class), 2.5 and 3.2 makes
    the next cell run the student's code, and what other modules registered (softmax1) stays registered."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    shutil.copytree(ROOT / "minitorch", tmp_path / "minitorch", ignore=shutil.ignore_patterns("__pycache__"))
    chosen = [exercise for exercise in load_exercises(tmp_path) if exercise.id in ("1.2", "2.5", "3.2")]
    solved = {exercise.path: exercise.path.read_text(encoding="utf-8") for exercise in chosen}
    for path, text in solved.items():
        path.write_text(stub_source(text, [e for e in chosen if e.path == path], tmp_path), encoding="utf-8")
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
