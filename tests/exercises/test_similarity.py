"""Specification of grader/trusted/similarity.py: answers the same up to names, formatting and comments are found,
independent ones are not, and the book's own functions are recognised (chapter 11, similarity.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import minitorch
from minitorch.exercises.grader.trusted import similarity
from minitorch.exercises.edition import stubbed_source
from minitorch.exercises.registry import EXERCISES, function_node

ROOT = Path(minitorch.__file__).resolve().parent.parent

# Three ways to write one made-up function (a running product), and one other function of the same signature.
ORIGINAL = '''\
def running_product(values, start):
    """The running product of `values`, from `start`."""
    result = []
    total = start  # where the product starts
    for value in values:
        total = total * value
        result.append(total)
    return np.asarray(result, dtype=np.float64)
'''
DISGUISED = '''\
def running_product(xs: list, s0: float) -> "np.ndarray":
    # renamed, re-commented, re-formatted: the same answer
    out=[]; acc = s0
    for x in xs :
        acc = (acc * x)
        out.append( acc )
    "a string as a comment"
    return np.asarray(out,
                      dtype=np.float64)
'''
INDEPENDENT_LOOP = '''\
def running_product(values, start):
    products = np.empty(len(values))
    for index in range(len(values)):
        start = start * values[index]
        products[index] = start
    return products
'''
INDEPENDENT_VECTORISED = '''\
def running_product(values, start):
    return start * np.cumprod(np.asarray(values, dtype=np.float64))
'''


def test_two_answers_that_differ_only_in_names_comments_and_formatting_share_a_fingerprint():
    original, disguised = similarity.fingerprint(ORIGINAL), similarity.fingerprint(DISGUISED)
    assert original is not None and original == disguised, (original, disguised)


@pytest.mark.parametrize("other", [INDEPENDENT_LOOP, INDEPENDENT_VECTORISED], ids=["loop", "vectorised"])
def test_independent_answers_do_not(other):
    assert similarity.fingerprint(other)["fingerprint"] != similarity.fingerprint(ORIGINAL)["fingerprint"]


def test_what_names_a_library_function_or_an_argument_is_kept():
    """np.cumsum is not np.cumprod, axis= is not keepdims=: only the names the function binds are renamed."""
    base = "def f(x):\n    return np.cumsum(x, axis=0)\n"
    assert similarity.fingerprint(base) != similarity.fingerprint(base.replace("cumsum", "cumprod"))
    assert similarity.fingerprint(base) != similarity.fingerprint(base.replace("axis", "dim"))
    assert similarity.fingerprint(base) == similarity.fingerprint(base.replace("(x", "(scores"))


@pytest.mark.parametrize("source", [
    "def f(x):\n    return " + "(" * 3000 + "x" + ")" * 3000 + "\n",
    "def f(x):\n    return " + "x + " * 50_000 + "x\n",
    "def f(x):\n" + "    x = x + 1\n" * 5000,
    "not python (",
    None,
], ids=["nested-parentheses", "a-long-sum", "too-many-lines", "not-python", "no-source"])
def test_a_source_beyond_the_limits_gets_no_fingerprint_and_no_error(source):
    assert similarity.fingerprint(source) is None
    assert similarity.answer_event("3.1", source) == {"answer": "3.1", "fingerprint": None}


def test_the_editions_stub_is_no_answer():
    exercise = EXERCISES["3.1"]
    module = stubbed_source((ROOT / exercise.module).read_text(encoding="utf-8"), [exercise])
    node = function_node(ast.parse(module), exercise.function)
    start = (node.decorator_list[0] if node.decorator_list else node).lineno - 1
    stub = "".join(module.splitlines(keepends=True)[start:node.end_lineno])
    assert similarity.answer_event("3.1", stub) == {"answer": "3.1", "stub": True}


def test_the_books_reference_answer_is_known_under_any_names():
    """A copy pasted from the full book is named as such, however its names were changed."""
    exercise = EXERCISES["3.5"]
    node = function_node(ast.parse((ROOT / exercise.module).read_text(encoding="utf-8")), exercise.function)
    renamed = {argument.arg: f"my_{argument.arg}" for argument in node.args.args}
    for found in ast.walk(node):
        if isinstance(found, ast.arg):
            found.arg = renamed[found.arg]
        elif isinstance(found, ast.Name) and found.id in renamed:
            found.id = renamed[found.id]
    copy = similarity.fingerprint("# pasted\n" + ast.unparse(node))
    known = similarity.known_sources(ROOT)
    assert known.get(copy["fingerprint"]) == f"{exercise.module}: {exercise.function} (the reference answer)"


def test_the_table_pairs_shared_answers_names_the_books_own_and_counts_short_groups():
    own = similarity.fingerprint(ORIGINAL)
    copied = {**own}
    short = {"fingerprint": "s" * 20, "nodes": 9}
    answers = {"ann": {"3.5": own, "3.1": short}, "bob": {"3.5": copied, "3.1": short},
               "cat": {"3.5": similarity.fingerprint(INDEPENDENT_LOOP), "3.1": short},
               "<b>dan</b>": {"3.5": similarity.fingerprint(INDEPENDENT_VECTORISED)}}
    known = {similarity.fingerprint(INDEPENDENT_VECTORISED)["fingerprint"]: "tests/test_x.py: helper"}
    rows = similarity.shared_answers(answers, ["3.1", "3.5"], known)
    assert [(row["exercise"], row["students"]) for row in rows] == [
        ("3.1", ["ann", "bob", "cat"]), ("3.5", ["ann", "bob"]), ("3.5", ["<b>dan</b>"])]
    table = similarity.similarity_markdown(answers, ["3.1", "3.5"], known)
    assert "| 3.1 the causal mask | 3 students (a short answer) |  | 9 |" in table, table
    assert f"| ann, bob |  | {own['nodes']} |" in table and "cat" not in table.split("| --- |")[-1], table
    assert "&lt;b&gt;dan&lt;/b&gt; | tests/test\\_x.py: helper" in table, "names are text, not markup"


def test_students_whose_answers_are_gone_are_named_as_not_compared_never_as_sharing_nothing():
    """similarity.md of a gradebook whose private/ was moved away said '0 students compared' and 'No two students
    share an answer', as if the class shared nothing."""
    table = similarity.similarity_markdown({}, ["3.5"], {}, missing=["ann", "bob"])
    assert "2 graded student(s) not compared" in table and "ann, bob" in table, f"name who was not compared: {table}"
    assert "No two students share" not in table, f"0 students compared cannot say no two share: {table}"


def test_a_class_without_shared_answers_says_so():
    answers = {"ann": {"3.5": similarity.fingerprint(ORIGINAL)},
               "bob": {"3.5": similarity.fingerprint(INDEPENDENT_LOOP)}}
    assert "No two students share an answer" in similarity.similarity_markdown(answers, ["3.5"], {})
