"""Instructor-only (a student edition leaves this file out: `registry.INSTRUCTOR_ONLY`): no answer to a graded
exercise is given away, by the library of any edition or by the chapters (chapter 00).

- `ANSWER_SIGNATURES` are regular expressions of every reference answer, as its function and other code spell
  it. No edition holds an exercise's answer outside its function (the hand-fused copies stay with the
  instructor), and no chapter cell spells out an answer, except those the chapters print on purpose to teach
  (`PRINTED_IN_THE_CHAPTERS`).
- For those, the exercise grades what is not printed (4.1 without a loop over the sequences; 5.1 and 6.1 for
  any unit vector u, where the chapters print u = e_0): each printed answer (`PRINTED_ANSWERS`), pasted as
  the body of its function, passes none of the exercise's tests.
- No test file an edition ships (everything under tests/ but `INSTRUCTOR_ONLY`, hidden tests among them) holds
  an answer: public tests hold literal expected data or properties, never the formula of an answer.
- A graded test that fails says what is wrong in a few lines (checked on a softmax written like the reference).
"""

from __future__ import annotations

import ast
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

import numpy as np
import pytest

import minitorch
from minitorch.exercises.registry import (INSTRUCTOR_ONLY, body_after_docstring, function_node, load_exercises,
                                          replace_bodies, stubbed_source)

ROOT = Path(minitorch.__file__).resolve().parent.parent  # the project under test (--minitorch-root)
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))


# ----------------------------------------------------------------------
# no answer outside its function

# What gives each exercise's answer away, however it is spelled (NumPy, minitorch or PyTorch), as regular
# expressions over code with comments and whitespace removed. The first must match the reference answer; the
# others are the same answer as other code spells it (the NumPy floor, PyTorch, the fast attention).
ANSWER_SIGNATURES = {
    "1.2": [r"grad\*b,grad\*a"],
    "1.1": [r"stack\.append\(\(node,True\)\)"],
    "1.3": [r"return\(grad\*out,\)"],
    "1.4": [r"return\(grad/a,\)"],
    "2.1": [r"\.sum\(axis=tuple\(range\(", r"size==1andgrad\.shape\[axis\]!=1"],
    "2.2": [r"a\[None,:\]ifa\.ndim==1", r"np\.swapaxes\(a_mat,-1,-2\)@grad"],
    "2.4": [r"\*\(grad-", r"grad-=sum_along\(grad\*weights", r"-=?max_along\(|\.data-shift\)"],
    "2.3": [r"broadcast_to\(grad,shape\)"],
    "2.5": [r"\(1-beta2\)\*grad\*grad", r"1-beta1\*\*"],
    "3.1": [r"\.triu\(|np\.triu\(|\.tril\(|np\.tril\("],
    "3.2": [r"masked_fill\(future,-np\.inf\)", r"where\(future,-np\.inf", r"masked_fill\(future,float\(\"-inf\"\)\)",
            r"visible>0,0\.0,-np\.inf"],
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


def function_body(exercise, root: Path = ROOT) -> str:
    """The body of the exercise's function (after its docstring), as its module spells it."""
    text = (root / exercise.module).read_text(encoding="utf-8")
    body = body_after_docstring(function_node(ast.parse(text), exercise.function))
    return "".join(text.splitlines(keepends=True)[body[0].lineno - 1:body[-1].end_lineno])


def library_files() -> list[Path]:
    """minitorch/'s modules a student edition holds, without the course's own code (minitorch/exercises/
    describes answers, holds none)."""
    package = ROOT / "minitorch"
    return [path for path in sorted(package.rglob("*.py")) if path.relative_to(package).parts[0] != "exercises"
            and path.relative_to(ROOT).as_posix() not in INSTRUCTOR_ONLY]


def test_every_exercise_has_answer_signatures_that_match_its_reference_answer():
    for exercise in load_exercises(ROOT):
        assert exercise.id in ANSWER_SIGNATURES, f"add exercise {exercise.id} to ANSWER_SIGNATURES"
        answer, signature = code_only(function_body(exercise)), ANSWER_SIGNATURES[exercise.id][0]
        assert re.search(signature, answer), (f"the first signature {signature!r} of exercise {exercise.id} no "
                                              f"longer matches its reference answer; update it:\n{answer}")


@pytest.mark.parametrize("exercise", load_exercises(ROOT), ids=lambda exercise: exercise.id)
def test_an_edition_handing_out_an_exercise_holds_its_answer_nowhere(exercise):
    """The edition's text of every module, with only `exercise` handed out, is searched for its answer.
    Handing out more exercises only removes more, so this is the strictest edition for it."""
    leaks = []
    for path in library_files():
        text = path.read_text(encoding="utf-8")
        relative = path.relative_to(ROOT).as_posix()
        if relative == exercise.module:
            text = stubbed_source(text, [exercise], relative)
        code = code_only(text)
        leaks += [f"{relative}: {signature!r}" for signature in ANSWER_SIGNATURES[exercise.id]
                  if re.search(signature, code)]
    assert not leaks, (f"an edition handing out exercise {exercise.id} still holds its answer outside its function "
                       f"{exercise.function}; call that function instead, or move the copy into "
                       f"minitorch/fast/hand_fused.py, which editions leave out:\n" + "\n".join(leaks))


def shipped_test_files() -> list[Path]:
    """The Python files under tests/ that every edition ships: all but the instructor's (`INSTRUCTOR_ONLY`)."""
    def instructor_only(relative: str) -> bool:
        return any(relative == entry or relative.startswith(entry + "/") for entry in INSTRUCTOR_ONLY)
    return [path for path in sorted((ROOT / "tests").rglob("*.py"))
            if "__pycache__" not in path.parts and not instructor_only(path.relative_to(ROOT).as_posix())]


def test_no_test_file_an_edition_ships_holds_an_answer():
    """Public tests hold literal expected data (worked-out numbers, tests/causal_literals.py) or properties, never
    the formula of an answer; comparisons with a reference formula live in tests/hidden/."""
    leaks = [f"{path.relative_to(ROOT).as_posix()}: exercise {exercise_id}, {signature!r}"
             for path in shipped_test_files() for exercise_id, signatures in ANSWER_SIGNATURES.items()
             for signature in signatures if re.search(signature, code_only(path.read_text(encoding="utf-8")))]
    assert shipped_test_files(), "no test file found under tests/"
    assert not leaks, ("test files every edition ships spell out answers: write the expected data as literals "
                       "(or a property), call the library where the data is not the exercise's, or move the "
                       "comparison into tests/hidden/:\n" + "\n".join(leaks))


# The chapters print three answers on purpose, as teaching: chapter 04 writes the targets as a loop over the
# sequences (4.1), chapters 03 to 05 build the two constructions by hand with u = e_0 (5.1, 6.1). The exercises
# ask for what is not printed, so a printed answer is no answer. Every chapter cell that matches a signature of
# these exercises (or PRINTED_FORMS, the loop) must define one of the PRINTED_ANSWERS, each of which is pasted
# as its function's body and must pass none of the exercise's tests.
PRINTED_IN_THE_CHAPTERS = {"4.1", "5.1", "6.1"}
PRINTED_FORMS = {"4.1": [r"forkinrange\(1,j\+1\)"]}  # the loop summing x_1..x_j

# (exercise, chapter, name the cell defines, what the function returns, whether it is the exercise's answer where
# the chapter uses it): the cell's function definitions and the statements that build `name` are pasted as the
# function's body after CHAPTER_NAMES, the names the chapters set up for the constructions (numpy is the
# module's own `np`); a construction's function returns the weights of the model the chapter builds.
PRINTED_ANSWERS = [
    ("4.1", "04_the_trigger_conditional_task", "targets_by_loop", "targets_by_loop(x, triggers, residual)", True),
    ("5.1", "03_attention_two_ways", "hand_built_sink", "hand_built_sink(scale)", True),
    ("6.1", "03_attention_two_ways", "relu_model", "relu_model", True),
    ("5.1", "04_the_trigger_conditional_task", "hand_built_sink", "hand_built_sink(scale)", True),
    ("6.1", "04_the_trigger_conditional_task", "hand_built_relu_head", "hand_built_relu_head()", True),
    ("6.1", "05_why_softmax_must_sink", "relu_head", "relu_head", True),
    ("6.1", "06_relu_needs_no_sink", "sinking", "sinking", False),  # exercise 6.4's head: a ReLU head may sink
]
CONSTRUCTION_NAMES = ("from minitorch.paper import models, theory\nn = width\ne = np.eye(n)\n"
                      "u, v, e_0, e_t, e_b = e[0], e[1], e[0], e[1], e[n - 1]\n")
CHAPTER_NAMES = {"4.1": "", "5.1": CONSTRUCTION_NAMES, "6.1": CONSTRUCTION_NAMES}

# What each exercise computes where the chapters use it (u = e_0, a batch of sequences), printed as JSON by the
# pasted copy: a printed answer must agree with the reference there, so that it fails its tests only for what
# the chapters do not print.
WHERE_PRINTED = {
    "4.1": "x, t = task.make_inputs(8, np.random.default_rng(0))\n"
           "result = [task.make_targets(x, t, residual=r).tolist() for r in (False, True)]",
    "5.1": "result = {k: v.tolist() for k, v in theory.softmax_construction(3.0).state_dict().items()}",
    "6.1": "result = {k: v.tolist() for k, v in theory.relu_construction().state_dict().items()}",
}


def where_printed(exercise_id: str, cwd: Path | None = None):
    """WHERE_PRINTED[exercise_id] computed by the minitorch in `cwd` (in a fresh process), or by this one."""
    script = ("import json, numpy as np\nfrom minitorch.paper import task, theory\n" + WHERE_PRINTED[exercise_id]
              + "\nprint(json.dumps(result))")
    if cwd is None:
        namespace: dict = {}
        exec(script.replace("print(json.dumps(result))", ""), namespace)
        return json.loads(json.dumps(namespace["result"]))
    completed = subprocess.run([sys.executable, "-c", script], cwd=cwd, capture_output=True, text=True, timeout=300,
                               env=_without_minitorch_root())
    assert completed.returncode == 0, f"the pasted answer does not run:\n{completed.stderr[-2000:]}"
    return json.loads(completed.stdout)


def _without_minitorch_root() -> dict:
    return {key: value for key, value in os.environ.items() if key not in ("MINITORCH_ROOT", "PYTEST_ADDOPTS")}


def code_cells(chapter: Path) -> list[tuple[int, str]]:
    """(index, Python source) of each code cell, IPython's % lines left out."""
    cells = json.loads(chapter.read_text(encoding="utf-8"))["cells"]
    return [(index, "\n".join(line for line in "".join(cell["source"]).splitlines()
                              if not line.lstrip().startswith("%")))
            for index, cell in enumerate(cells) if cell["cell_type"] == "code"]


def defines(source: str, name: str) -> bool:
    return any(_builds(node, name) for node in ast.parse(source).body)


def _builds(node: ast.stmt, name: str) -> bool:
    """A top-level statement that defines the function `name`, assigns `name`, or calls a method of it."""
    if isinstance(node, ast.FunctionDef):
        return node.name == name
    targets = node.targets if isinstance(node, ast.Assign) else []
    receiver = node.value.func.value if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) \
        and isinstance(node.value.func, ast.Attribute) else None
    return any(isinstance(target, ast.Name) and target.id == name for target in targets) or \
        (isinstance(receiver, ast.Name) and receiver.id == name)


def printed_body(exercise_id: str, chapter: str, name: str, returned: str) -> str:
    """The function body that answers with the chapter's printed code: its function definitions and the
    statements building `name`, after the names the chapters set up."""
    for _, source in code_cells(ROOT / "chapters" / f"{chapter}.ipynb"):
        if defines(source, name):
            tree = ast.parse(source)
            kept = [ast.get_source_segment(source, node) for node in tree.body
                    if isinstance(node, ast.FunctionDef) or _builds(node, name)]
            if exercise_id in ("5.1", "6.1"):  # the weights of the model the chapter builds
                returned = f"tuple(({returned}).state_dict()[f'layers.0.W_{{p}}.weight'] for p in 'QKVO')"
            return CHAPTER_NAMES[exercise_id] + "\n".join(kept) + f"\nreturn {returned}\n"
    raise AssertionError(f"{chapter} no longer defines {name!r}; update PRINTED_ANSWERS")


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda path: path.stem)
def test_no_chapter_cell_spells_out_a_graded_answer_but_those_printed_on_purpose(chapter):
    listed = {name for _, stem, name, _, _ in PRINTED_ANSWERS if stem == chapter.stem}
    found = []
    for index, source in code_cells(chapter):
        code = code_only(source)
        for exercise_id, signatures in ANSWER_SIGNATURES.items():
            for signature in signatures + PRINTED_FORMS.get(exercise_id, []):
                if not re.search(signature, code):
                    continue
                if exercise_id not in PRINTED_IN_THE_CHAPTERS:
                    found.append(f"cell {index}: exercise {exercise_id}, {signature!r}: call the library instead")
                elif not any(defines(source, name) for name in listed):
                    found.append(f"cell {index}: exercise {exercise_id}, {signature!r}: a printed answer not in "
                                 f"PRINTED_ANSWERS (add it there, so that a test checks it earns nothing)")
    assert not found, (f"{chapter.name}: code cells spell out answers to graded exercises, which every student "
                       f"edition keeps:\n" + "\n".join(found))


@pytest.mark.slow
def test_a_printed_answer_pasted_as_its_function_passes_none_of_its_tests(tmp_path):
    """Each of PRINTED_ANSWERS is pasted, in turn, as its function's body in a copy of the project. It must compute what
    the reference computes where the chapter uses it (WHERE_PRINTED: u = e_0, a batch), so the paste works; and
    the exercise's own tests (`pytest -m exX_Y`) run there must all fail."""
    copy = tmp_path / "copy"
    for name in ("minitorch", "tests"):
        shutil.copytree(ROOT / name, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
    exercises = {exercise.id: exercise for exercise in load_exercises(copy)}
    earned = []
    for exercise_id, chapter, name, returned, is_the_answer in PRINTED_ANSWERS:
        exercise = exercises[exercise_id]
        path = copy / exercise.module
        original = path.read_text(encoding="utf-8")
        body = printed_body(exercise_id, chapter, name, returned)
        path.write_text(replace_bodies(original, {exercise.function: body}, exercise.module), encoding="utf-8")
        try:
            pasted = where_printed(exercise_id, copy)
            if is_the_answer:
                expected = _flat(where_printed(exercise_id))
                assert _flat(pasted).shape == expected.shape and np.allclose(_flat(pasted), expected), (
                    f"{chapter}'s {name}, pasted as exercise {exercise_id}, no longer computes what the reference "
                    f"does where the chapter uses it; update PRINTED_ANSWERS or CHAPTER_NAMES")
            board = tmp_path / "board.json"
            completed = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", exercise.marker, "-p",
                                        "no:cacheprovider", f"--scoreboard-json={board}"], cwd=copy,
                                       capture_output=True, text=True, timeout=600, env=_without_minitorch_root())
        finally:
            path.write_text(original, encoding="utf-8")
        assert board.exists(), f"the tests of {exercise_id} did not run:\n{completed.stdout[-2000:]}"
        row = json.loads(board.read_text())["exercises"][exercise_id]
        if row["passed"] or row["failed"] != row["tests"]:
            earned.append(f"{chapter}'s {name} as exercise {exercise_id}: {row['passed']} of {row['tests']} tests "
                          f"passed, {row['failed']} failed")
    assert not earned, ("a printed answer pasted as its function should fail every test of its exercise (the "
                        "exercise grades what the chapters do not print):\n" + "\n".join(earned))


def _flat(result) -> np.ndarray:
    """Every number of a JSON result (lists, or a dict of lists in key order), as one flat array."""
    if isinstance(result, dict):
        return np.concatenate([_flat(result[key]) for key in sorted(result)])
    return np.asarray(result, dtype=float).ravel()


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
    completed = subprocess.run([sys.executable, "-m", "pytest", "-m", "ex2_4", "-p", "no:cacheprovider", "--color=no",
                                "tests/test_softmax.py"], cwd=copy, capture_output=True, text=True, timeout=300,
                               env={key: value for key, value in os.environ.items()
                                    if key not in ("MINITORCH_ROOT", "PYTEST_ADDOPTS")})
    output = completed.stdout
    failures = re.split(r"\n_{3,} test_\S+ _{3,}\n",
                        output.split("= FAILURES =")[-1].split("short test summary")[0])[1:]
    assert failures, f"the wrong backward should fail the gradient tests:\n{output[-2000:]}"
    too_long = [failure for failure in failures if len(failure.strip().splitlines()) > 12]
    assert not too_long, f"a failure should fit on a screen (12 lines at most); this one does not:\n{too_long[0]}"
    assert all("along `axis`" in failure for failure in failures), (
        f"each failure should point at the sum along `axis`:\n{failures[0]}")
