"""Exercise 4.1's rule, "no Python loop", as its graded tests decide it (tests/loop_rule.py, chapter 04).

The worker reads the student's function as Python reads it (`student_function.function_text`: lines end at \\n,
\\r\\n and \\r only), and the tests check its syntax tree against an allow-list (`loops_in`): NumPy's functions
but those that call Python per element, methods of arrays and of NumPy's ufuncs (np.add.reduce), a few builtins,
inner functions that never call back into themselves. Honest loop-free forms pass, however they are written; a
loop hidden from the syntax (dynamic code, names built at run time, recursion, a functional helper that calls
Python per element) is reported with its line, and the graded tests of 4.1 then fail. The functions below are no
answers: only how they are written counts.
"""

from __future__ import annotations

import ast
import re

import pytest

from loop_rule import loops_in  # (tests/loop_rule.py)

from minitorch.exercises.grader.sandboxed.student_function import function_text, python_lines

HEAD = "def make_targets(x, triggers, residual=False):\n"

HONEST = {
    "ufunc methods": HEAD + "    total = np.add.reduce(x, axis=1)\n    peak = np.maximum.accumulate(x, axis=1)\n"
                            "    return np.multiply.outer(total, peak[:, 0]) + np.add.reduceat(x, [0, 2], axis=1)\n",
    "a form feed in a comment": HEAD + "    # first the sums\x0c then the rest\n    return np.cumsum(x, axis=1)\n",
    "U+2028 in a comment": HEAD + "    # a line separator\u2028 inside a comment\n    return x.sum(axis=1)\n",
    "U+2028 in a string": HEAD + "    label = 'a\u2028b'\n    return x.copy()\n",
    "CRLF line ends": HEAD.replace("\n", "\r\n") + "    y = np.zeros_like(x)\r\n    return y\r\n",
    "tabs": HEAD + "\tif residual:\n\t\treturn x.copy()\n\treturn np.zeros_like(x)\n",
    "an inner helper": HEAD + "    def mean_over(a, axis):\n        return a.mean(axis=axis)\n"
                              "    return mean_over(x, 1)\n",
    "numpy imported inside": HEAD + "    import numpy as xp\n    from numpy import add\n    import math\n"
                                    "    return xp.cumsum(x) + add.reduce(x) * math.sqrt(2)\n",
    "an alias of a NumPy function": HEAD + "    total = np.add.reduce\n    return total(x, axis=1)\n",
    "checks and messages": HEAD + "    if x.ndim != 3 or len(triggers) != len(x):\n"
                                  "        raise ValueError(f'bad shapes {x.shape}, {triggers.shape}')\n"
                                  "    return np.einsum('bln->bn', x) / max(int(triggers.min()), 1)\n",
    "method chains and indexing": HEAD + "    scale = np.linspace(0.0, 1.0, x.shape[1])[None, :, None]\n"
                                         "    return (x * scale).max(axis=1).reshape(len(x), -1).astype(float)\n",
    "linalg and where": HEAD + "    return np.where(np.linalg.norm(x, axis=-1) > 0, 1.0, 0.0)\n",
    "methods of what NumPy returns": HEAD + "    return np.arange(x.shape[1]).reshape(1, -1).astype(float).sum()\n",
    "a docstring": HEAD + '    """Targets, with no loop; for k in range(j) would be one."""\n    return x * 0\n',
}

HIDDEN = {  # what each hides, and a word the report must hold
    "a for loop": (HEAD + "    for b in range(len(x)):\n        pass\n    return x\n", "for (line 2 of make_targets)"),
    "a while loop": (HEAD + "    while False:\n        pass\n    return x\n", "while"),
    "a comprehension": (HEAD + "    return np.array([row.sum() for row in x])\n", "list comprehension"),
    "exec": (HEAD + "    exec('for b in range(3): pass')\n    return x\n", "exec"),
    "eval": (HEAD + "    return eval('[r.sum() for r in x]')\n", "eval"),
    "compile": (HEAD + "    code = compile('x', 'f', 'eval')\n    return x\n", "compile"),
    "a name built at run time": (HEAD + "    import builtins\n    each = getattr(builtins, 'm' + 'ap')\n"
                                        "    return list(each(np.sum, x))\n", "getattr"),
    "builtins.map": (HEAD + "    import builtins\n    return builtins.map(np.sum, x)\n", "map"),
    "__import__": (HEAD + "    return __import__('functools').reduce(np.add, x)\n", "__import__"),
    "globals()": (HEAD + "    return globals()['np'].sum(x)\n", "globals"),
    "recursion": (HEAD + "    return x if len(x) < 2 else make_targets(x[1:], triggers[1:], residual)\n",
                  "recursive"),
    "recursion in an inner function": (HEAD + "    def go(b):\n        return 0 if b < 0 else go(b - 1)\n"
                                              "    go(len(x))\n    return x\n", "go calls itself"),
    "mutual recursion": (HEAD + "    def a(b):\n        return c(b - 1)\n"
                                "    def c(b):\n        return a(b) if b else 0\n    a(len(x))\n    return x\n",
                         "recursive"),
    "iter(f, None)": (HEAD + "    def step():\n        return None\n    list(iter(step, None))\n    return x\n",
                      "iter"),
    "reduce imported under another name": (HEAD + "    from functools import reduce as fold\n"
                                                  "    return fold(np.add, x)\n", "functools.reduce"),
    "itertools.starmap": (HEAD + "    import itertools\n    return list(itertools.starmap(np.add, zip(x, x)))\n",
                          "itertools.starmap"),
    "an aliased np.vectorize": (HEAD + "    each = np.vectorize\n    return each(float)(x)\n", "np.vectorize"),
    "np.vectorize": (HEAD + "    return np.vectorize(lambda v: v)(x)\n", "np.vectorize"),
    "np.frompyfunc's ufunc": (HEAD + "    f = np.frompyfunc(abs, 1, 1)\n    return f.reduce(x)\n", "np.frompyfunc"),
    "np.apply_along_axis": (HEAD + "    return np.apply_along_axis(np.sum, 1, x)\n", "np.apply_along_axis"),
    "map": (HEAD + "    return np.array(list(map(np.sum, x)))\n", "map"),
    "an inner function passed on": (HEAD + "    def key(v):\n        return v\n    return sorted(x, key=key)\n",
                                    "key used as a value"),
    "a lambda": (HEAD + "    f = lambda v: v\n    return x\n", "lambda"),
    "a class": (HEAD + "    class Adds:\n        def __add__(self, other):\n            return self\n    return x\n",
                "class"),
    "a decorated inner function": (HEAD + "    import functools\n    @functools.lru_cache\n    def f(b):\n"
                                          "        return b\n    return x\n", "decorator"),
    "a function of the library": (HEAD + "    return make_batch(len(x), np.random.default_rng(0))[1]\n",
                                  "make_batch"),
    "a method of an inner function": (HEAD + "    def f(b):\n        return b\n    return f.__call__(x)\n",
                                      "f used as a value"),
    "a method of a module": (HEAD + "    import functools\n    return functools.reduce.__call__(np.add, x)\n",
                             "functools.reduce.__call__"),
    "a method of something else": (HEAD + "    import operator\n    return operator.methodcaller('sum')(x)\n",
                                   "operator"),
}


@pytest.mark.parametrize("form", HONEST, ids=list(HONEST))
def test_an_honest_loop_free_form_passes(form):
    assert loops_in(HONEST[form]) == [], f"{form}: reported {loops_in(HONEST[form])}, but it cannot loop in Python"


@pytest.mark.parametrize("form", HIDDEN, ids=list(HIDDEN))
def test_a_loop_hidden_from_the_syntax_is_reported_with_its_line(form):
    source, word = HIDDEN[form]
    found = loops_in(source)
    assert any(word in line for line in found), f"{form}: expected a report naming {word!r}, got {found}"
    assert all(re.search(r"\(line \d+ of make_targets\)$", line) for line in found), (
        f"{form}: every report names its line, got {found}")


def test_the_decorators_of_the_function_itself_are_no_part_of_its_answer():
    """The grader compiles the function alone, without its decorators (student_function.compile_alone)."""
    assert loops_in("@checks.inputs_checked_by(_targets_inputs)\n" + HONEST["tabs"]) == []


@pytest.mark.parametrize("separator", ["\n", "\r\n", "\r"])
def test_python_lines_end_where_python_ends_a_line_and_nowhere_else(separator):
    text = separator.join(["a = 1  # \x0c form feed", "b = '\u2028'  # \u2028", "c = 3  # \x1c\x1d\x1e\x85", "d = 4"])
    lines = python_lines(text)
    assert len(lines) == 4 and "".join(lines) == text, lines
    assert [node.lineno for node in ast.parse(text).body] == [1, 2, 3, 4]


def test_the_function_text_is_the_whole_function_whatever_its_comments_hold():
    """str.splitlines() cut at the form feed and at U+2028: the grader parsed a truncated function, or another
    one, and an honest answer lost its points."""
    module = ("import numpy as np\n# a header\x0c with a form feed\u2028 and a line separator\n\n\n"
              + HONEST["a form feed in a comment"] + "\n\ndef after():\n    return 1\n")
    tree = ast.parse(module)
    node = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "make_targets")
    text = function_text(module, node)
    assert text == HONEST["a form feed in a comment"], repr(text)
    assert loops_in(text) == []
