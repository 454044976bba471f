"""Instructor-only (a student edition leaves this file out: `registry.INSTRUCTOR_ONLY`): an edition gives no answer
away (chapter 00).

For each exercise an edition hands out, every function the edition holds is called with the exercise's inputs
beside the reference, and none may compute it:

- *every function*: each function and method defined in the edition's library (minitorch/), in its tests and their
  helpers (tests/), and in its chapters' code cells, run in order as a student runs them; and the functions a
  module keeps in a dict or a list (the probes' expressions);
- *called with the exercise's inputs*: in every way its signature takes them (each required parameter takes one of
  the inputs, in any order; an optional one keeps its default or takes one more; an annotation must admit the
  input; a method takes an instance of its class; an array may come as a Tensor where the exercise takes Tensors),
  on inputs drawn from a fixed seed, at sizes the public tests do not use (`exercise_inputs`);
- *computes it*: on every input of one family its answer holds the reference's (the checkout's own function;
  a Tensor's data, a tuple's or a dict's arrays, an attention model's heads; a mask or its complement), or for 1.1
  is a valid order of the graph. A family is random inputs; the inputs the exercise's public graded tests pass its
  function (recorded by running them: a function answering exactly those passes them, a lookup table); and for a
  few exercises one that catches an answer one edit away: weights on BOS alone for 3.4 (row sums are then BOS
  masses) and u = e_0 for 5.1 and 6.1 (the direction the chapters print; there a function of no argument counts
  too).

The exceptions it allows, and why:

- the exercise's own function: a stub in the edition, and whatever calls it raises with it;
- the functions named test_*: pytest runs them and they return nothing;
- for 4.1, a function that loops in Python (chapter 04 writes the targets as a loop): every graded test of 4.1
  refuses an answer that loops (tests/loop_rule.py), so pasted it earns nothing;
- for 1.3 and 1.4, a bare product or quotient: their answers are ``(grad * out,)`` and ``(grad / a,)``, which any
  elementwise multiplication computes; only a function returning the rule's 1-tuple counts;
- a function stopped by the time limits (CALL_SECONDS of CPU time for one call, CANDIDATE_SECONDS for all of its
  calls; WAITING_SECONDS waiting without using the CPU): the references answer these small inputs in milliseconds,
  and what runs longer trains models, builds the book or starts processes. The test prints them.

The functions run in a subprocess, in bubblewrap: a process table of their own, no network, every folder
read-only but the edition's temporary copy; each in a forked child with a CPU time limit, a child that hangs or
dies being replaced to check the next function. (Without a working bwrap the test skips, saying so.) Functions
planted in the edition's library, tests and chapters (`PLANTED`) must be caught, so that the search cannot
silently find nothing. Where code computes an answer inside another function (a line, not a function), or in a
docstring, this test cannot see it: the public tests' own rules (check without telling) cover those.

Run as a script (``python test_answer_leaks.py --worker EDITION INPUTS OUT``) this file is that subprocess.
"""

from __future__ import annotations

import ast
import copy
import inspect
import itertools
import json
import linecache
import os
import pickle
import re
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve()
ROOT = HERE.parents[2]  # the checkout whose editions are searched (never a student's copy: instructor-only)
SEED = 4040
CALL_SECONDS = 0.5  # CPU time one call of a function may take
CALL_WALL_SECONDS = 5.0  # ... and time on the clock (a call that waits on a process uses no CPU)
CANDIDATE_SECONDS = 3.0  # CPU time all the calls of one function may take
WAITING_SECONDS = 15.0  # a checking child silent this long while it uses no CPU (it waits on a process or a
STUCK_SECONDS = 300.0  # thread) is stopped, and the function it was on counted stopped; so is one silent this long
STATEMENT_SECONDS = 3.0  # time a chapter's statement may take (training cells are cut short; they define nothing)
MAX_FORMS = 60  # ways of calling one function with one exercise's inputs
MAX_LEAVES = 400  # arrays read from one answer

# Functions planted in the full edition (file, code): each must be found computing its exercise.
PLANTED = {
    "tests/planted_give_away.py": ("import numpy as np\n\n\ndef upper(n):\n"
                                   "    return np.arange(n)[None, :] > np.arange(n)[:, None]\n", "3.1"),
    "minitorch/paper/planted_give_away.py": ("def bos_rows(weights, triggers):\n"
                                             "    from minitorch.paper.metrics import non_trigger_rows\n"
                                             "    rows = non_trigger_rows(triggers, weights.shape[-1])\n"
                                             "    kept = weights[..., 0].transpose(0, 2, 1)[rows]\n"
                                             "    return kept.reshape(len(triggers), -1, weights.shape[1])"
                                             ".transpose(0, 2, 1)\n", "3.4"),
    "chapters/03_attention_two_ways.ipynb": ("def alpha(w):\n    import numpy as np\n    s = w.sum(-1, keepdims=True)\n"
                                             "    a = np.where(s > 0, w / np.where(s > 0, s, 1), 0)\n"
                                             "    return a.sum(2).mean(0) / (w.shape[-1] - np.arange(w.shape[-1]))\n",
                                             "3.5"),
}


# ----------------------------------------------------------------------
# the exercises' inputs, drawn from SEED at sizes the public tests do not use


def _causal_weights(rng, batch: int, heads: int, length: int, zero_rows: int = 0) -> np.ndarray:
    """Attention weights (B, H, L, L): rows on the simplex, zero on future keys, `zero_rows` rows all zero."""
    weights = rng.uniform(0.0, 1.0, size=(batch, heads, length, length))
    weights *= np.arange(length)[None, :] <= np.arange(length)[:, None]
    weights /= weights.sum(axis=-1, keepdims=True)
    for _ in range(zero_rows):
        weights[rng.integers(batch), rng.integers(heads), rng.integers(1, length)] = 0.0
    return weights


def _unit(rng, width: int) -> np.ndarray:
    u = rng.normal(size=width)
    return u / np.linalg.norm(u)


def _graph(rng, size: int) -> list[dict]:
    """A random graph as data (probes.topological_order's nodes); its last node, the root, requires grad."""
    nodes = [{"op": "leaf", "requires_grad": bool(rng.random() < 0.75)} for _ in range(3)]
    while len(nodes) < size:
        op = str(rng.choice(["add", "mul", "exp", "sum", "frozen", "leaf"], p=[0.3, 0.3, 0.12, 0.1, 0.08, 0.1]))
        if op == "leaf":
            nodes.append({"op": "leaf", "requires_grad": bool(rng.random() < 0.75)})
        elif op in ("add", "mul"):
            nodes.append({"op": op, "inputs": [int(i) for i in rng.choice(len(nodes), 2)]})
        else:
            nodes.append({"op": op, "inputs": [int(rng.integers(len(nodes)))]})
    nodes.append({"op": "add", "inputs": [len(nodes) - 1, int(rng.integers(len(nodes) - 1))]})
    nodes.append({"op": "leaf", "requires_grad": True})
    nodes.append({"op": "mul", "inputs": [len(nodes) - 2, len(nodes) - 1]})
    return nodes


def exercise_inputs(seed: int = SEED) -> dict:
    """{exercise ID: {"names": its parameters, "tensors": those it takes as Tensors, "graphs": those that are graphs
    (data, built in the edition), "families": {name: [argument tuples]}, "constant_ok": families where a function
    of no argument is tried}}."""
    from minitorch.paper import attention, task

    rng = np.random.default_rng(seed)
    normal = rng.normal
    table = {
        "1.1": dict(names=("root",), graphs=("root",), families={"random graphs": [
            (_graph(rng, size),) for size in (9, 13, 17)]}),
        "1.2": dict(names=("grad", "a", "b"), families={"random": [
            (normal(size=(3, 4)), normal(size=(3, 4)), normal(size=(3, 4))),
            (normal(size=(2, 3, 5)), normal(size=(3, 5)), normal(size=(2, 3, 5))),
            (normal(size=(4,)), normal(size=(4,)), normal(size=(4,)))]}),
        "1.3": dict(names=("grad", "out"), families={"random": [
            (normal(size=shape), np.exp(normal(size=shape))) for shape in ((3, 4), (5,), (2, 2, 3))]}),
        "1.4": dict(names=("grad", "a"), families={"random": [
            (normal(size=shape), rng.uniform(0.5, 2.0, size=shape)) for shape in ((3, 4), (5,), (2, 2, 3))]}),
        "2.1": dict(names=("grad", "shape"), families={"random": [
            (normal(size=big), small) for big, small in (((2, 3, 4), (3, 1)), ((5, 4), (4,)), ((3, 1, 6), (1, 1, 6)),
                                                         ((2, 5), (1, 5)), ((4, 3), (1,)))]}),
        "2.2": dict(names=("grad", "a", "b"), families={
            "matrices": [(normal(size=out), normal(size=a), normal(size=b)) for out, a, b in (
                ((3, 5), (3, 4), (4, 5)), ((2, 6), (2, 3), (3, 6)))],
            "vectors and batches": [(normal(size=out), normal(size=a), normal(size=b)) for out, a, b in (
                ((2, 3, 2), (2, 3, 4), (4, 2)), ((3,), (4,), (4, 3)), ((2,), (2, 3), (3,)))]}),
        "2.3": dict(names=("grad", "shape", "axes", "keepdims"), families={"random": [
            (normal(size=tuple(1 if axis in axes else size for axis, size in enumerate(shape)) if keep else
                    tuple(size for axis, size in enumerate(shape) if axis not in axes)), shape, axes, keep)
            for shape, axes, keep in (((3, 4, 5), (1,), False), ((3, 4, 5), (0, 2), True),
                                      ((3, 4, 5), (0, 1, 2), False), ((2, 6), (1,), True))]}),
        "2.4": dict(names=("scores", "axis"), tensors=("scores",), families={
            "the last axis": [(normal(0, 3, size=(3, 5)), -1), (normal(0, 3, size=(2, 2, 6)), -1)],
            "any axis": [(normal(0, 3, size=(2, 4, 3)), 1), (normal(0, 3, size=(6,)), 0),
                         (normal(0, 3, size=(2, 3, 4)), 0)]}),
        "3.1": dict(names=("length",), families={"random": [(19,), (26,), (33,)]}),
    }
    adam = []
    for shape, step, decay in (((3,), 1, 0.0), ((2, 4), 4, 0.05), ((5,), 7, 0.0)):
        betas = (float(rng.uniform(0.5, 0.95)), float(rng.uniform(0.9, 0.9999)))
        adam.append((normal(size=shape), normal(size=shape), 0.1 * normal(size=shape), rng.uniform(0.01, 0.2, shape),
                     step, float(rng.uniform(1e-3, 0.1)), betas, float(rng.uniform(1e-8, 1e-3)), decay))
    table["2.5"] = dict(names=("theta", "grad", "m", "v", "t", "lr", "betas", "eps", "weight_decay"),
                        families={"random": adam})
    for exercise_id, spread in (("3.2", 3.0), ("3.3", 2.0)):
        table[exercise_id] = dict(names=("scores", "future"), tensors=("scores",), families={
            "(B, H, L, L)": [(normal(0, spread, size=shape), attention.causal_mask(shape[-1]))
                             for shape in ((2, 3, 17, 17), (1, 2, 12, 12))],
            "(L, L)": [(normal(0, spread, size=(length, length)), attention.causal_mask(length))
                       for length in (9, 20)]})
    bos_only = []
    for shape in ((3, 2, 9, 9), (2, 3, 13, 13)):
        weights = np.zeros(shape)
        weights[..., 0] = rng.uniform(0.0, 1.0, size=shape[:-1])
        bos_only.append((weights, rng.integers(1, shape[-1], size=shape[0])))
    table["3.4"] = dict(names=("weights", "triggers"), families={
        "random": [(_causal_weights(rng, *shape), rng.integers(1, shape[-1], size=shape[0]))
                   for shape in ((3, 2, 9), (2, 3, 13), (4, 1, 20))],
        "weight on BOS alone": bos_only})
    table["3.5"] = dict(names=("weights",), families={"random": [
        (_causal_weights(rng, *shape, zero_rows=2),) for shape in ((3, 2, 9), (2, 4, 14), (5, 1, 21))]})
    targets = {"single layer": [], "residual": []}
    for batch, length, width, residual in ((6, 7, 5, False), (5, 11, 9, True), (4, 13, 12, False), (3, 9, 6, True)):
        x, triggers = task.make_inputs(batch, rng, length=length, width=width)
        targets["residual" if residual else "single layer"].append((x, triggers, residual))
    table["4.1"] = dict(names=("x", "triggers", "residual"), families=targets)
    e_0 = np.eye(16)[0]
    table["5.1"] = dict(names=("scale", "u", "width"), families={
        "any unit vector u": [(2.5, _unit(rng, 8), 8), (6.0, _unit(rng, 12), 12), (0.7, _unit(rng, 16), 16)],
        "u = e_0, the chapters'": [(1.5, e_0, 16), (4.0, e_0, 16)]})
    table["6.1"] = dict(names=("u", "width"), constant_ok=("u = e_0, the chapters'",), families={
        "any unit vector u": [(_unit(rng, 7), 7), (_unit(rng, 10), 10), (_unit(rng, 16), 16)],
        "u = e_0, the chapters'": [(e_0, 16)]})
    shares = []
    for layers, length, key, threshold in ((2, 10, 0, 0.3), (3, 12, 1, 0.2), (1, 18, 0, 0.45)):
        per_layer = []
        for _ in range(layers):
            weights = _causal_weights(rng, 3, 4, length)
            sinking = rng.random(4) < 0.5
            weights[:, sinking] *= 0.2
            weights[:, sinking, :, key] += 0.8 * (np.arange(length) >= key)
            per_layer.append(weights)
        shares.append((per_layer, key, threshold))
    table["9.1"] = dict(names=("per_layer_weights", "key", "threshold"), families={"random": shares})
    return table


PUBLIC = "the public tests' inputs"  # a family of each exercise: what its public graded tests pass its function
MAX_PUBLIC_CASES = 40

# A pytest plugin, run with the project's public graded tests: it records the arguments each exercise's function
# receives from its own graded tests (a function answering exactly those passes them: a lookup table).
RECORDER = """
import importlib, inspect, os, pickle, sys, threading

import numpy as np

records, codes, current = {}, {}, [None]


def data(value, depth=0):
    if type(value).__name__ in ("Tensor", "Parameter"):
        return np.array(value.data)
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, (list, tuple)) and depth < 2:
        return type(value)(data(member, depth + 1) for member in value)
    if value is None or isinstance(value, (bool, int, float, str, np.generic)):
        return value
    raise TypeError(type(value).__name__)


def trace(frame, event, argument):
    exercise_id = codes.get(frame.f_code)
    if exercise_id is not None and exercise_id == current[0]:
        names = frame.f_code.co_varnames[:frame.f_code.co_argcount]
        try:
            records.setdefault(exercise_id, []).append(tuple(data(frame.f_locals[name]) for name in names))
        except (TypeError, KeyError):
            pass


def pytest_sessionstart(session):
    from minitorch.exercises.registry import EXERCISES

    for exercise in EXERCISES.values():
        function = getattr(importlib.import_module(exercise.python_module), exercise.function)
        codes[inspect.unwrap(function).__code__] = exercise.id
    sys.settrace(trace)
    threading.settrace(trace)


def pytest_runtest_setup(item):
    mark = item.get_closest_marker("exercise")
    current[0] = str(mark.args[0]) if mark else None
    sys.settrace(trace)


def pytest_sessionfinish(session):
    sys.settrace(None)
    with open(os.environ["GIVEAWAY_RECORD"], "wb") as out:
        pickle.dump(records, out)
"""


def public_inputs(root: Path, work: Path, exercise_ids) -> dict:
    """{exercise ID: [argument tuples]}: what the public graded tests of `exercise_ids` (the table's files, at
    `root`) pass the exercise's own function, distinct, at most MAX_PUBLIC_CASES each (1.1's graphs are no data)."""
    from minitorch.exercises.registry import EXERCISES, HIDDEN_TESTS

    work.mkdir(parents=True, exist_ok=True)
    (work / "giveaway_recorder.py").write_text(RECORDER, encoding="utf-8")
    record = work / "public_inputs.pickle"
    files = sorted({name for exercise_id in exercise_ids for name in EXERCISES[exercise_id].tests
                    if not name.startswith(HIDDEN_TESTS) and (root / name).is_file()})
    markers = " or ".join(EXERCISES[exercise_id].marker for exercise_id in exercise_ids)
    environment = {key: value for key, value in os.environ.items()
                   if not key.startswith("MINITORCH_") and key not in ("PYTEST_ADDOPTS", "PYTHONPATH")}
    finished = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
                               "giveaway_recorder", "-m", f"({markers}) and not slow", *files], cwd=root,
                              capture_output=True, text=True, timeout=1800,
                              env={**environment, "PYTHONPATH": str(work), "GIVEAWAY_RECORD": str(record)})
    if not record.exists():
        pytest.fail(f"recording the public tests' inputs failed:\n{finished.stdout[-2000:]}{finished.stderr[-2000:]}")
    recorded, found = pickle.loads(record.read_bytes()), {}
    for exercise_id, cases in recorded.items():
        distinct = {pickle.dumps(case): case for case in cases}
        chosen = list(distinct.values())
        found[exercise_id] = chosen[::max(1, -(-len(chosen) // MAX_PUBLIC_CASES))]
    return found


def from_signature(function) -> dict:
    """The inputs of an exercise the table above lacks (one just added to the registry): its parameters' names from
    its signature, those annotated Tensor taken as Tensors, and only the public tests' inputs as a family."""
    parameters = inspect.signature(function).parameters.values()
    return dict(names=tuple(parameter.name for parameter in parameters),
                tensors=tuple(parameter.name for parameter in parameters if "Tensor" in str(parameter.annotation)),
                families={})


STRUCTURE_REQUIRED = {"1.3", "1.4"}  # a bare product (quotient) is not their answer; the rule's 1-tuple is


def references(exercise_ids, public: dict, seed: int = SEED) -> dict:
    """The inputs of `exercise_ids` (seeded, and the `public` tests' ones) with the reference's answer to each, as
    the worker reads them."""
    import importlib

    from minitorch import Tensor
    from minitorch.exercises.registry import EXERCISES

    table, found = exercise_inputs(seed), {}
    for exercise_id in exercise_ids:
        exercise = EXERCISES[exercise_id]
        function = getattr(importlib.import_module(exercise.python_module), exercise.function)
        spec = table.get(exercise_id) or from_signature(function)
        families = {}
        recorded = [case[:len(spec["names"])] for case in public.get(exercise_id, ())] if not spec.get("graphs") \
            else []  # (1.1's graphs are objects, not data)
        for family, cases in {**spec["families"], **({PUBLIC: recorded} if recorded else {})}.items():
            families[family] = []
            for arguments in cases:
                values = copy.deepcopy(list(arguments))
                if spec.get("graphs"):
                    built = build_graph(values[0])
                    position = {id(tensor): index for index, tensor in enumerate(built)}
                    order = [position[id(tensor)] for tensor in function(built[-1])]
                    reference = {"kind": "order", "positions": sorted(order),
                                 "parents": [[] if node["op"] == "frozen" else node.get("inputs", [])
                                             for node in values[0]]}
                else:
                    for name in spec.get("tensors", ()):
                        index = spec["names"].index(name)
                        values[index] = Tensor(np.array(values[index]))
                    try:
                        answer = function(*values)
                    except Exception:  # a public test's bad input, on purpose: no answer to compare
                        continue
                    reference = {"kind": "leaves", "leaves": leaves(answer),
                                 "structure": exercise_id in STRUCTURE_REQUIRED}
                families[family].append({"arguments": arguments, "reference": reference})
            if not families[family]:
                del families[family]
        found[exercise_id] = {**{key: value for key, value in spec.items() if key != "families"},
                              "families": families}
    return found


# ----------------------------------------------------------------------
# reading and comparing answers (both sides)


def build_graph(nodes: list[dict]) -> list:
    """The tensors of a graph given as data, built by the minitorch imported (the checkout's, or the edition's)."""
    import minitorch
    from minitorch import Tensor, no_grad

    built = []
    for node in nodes:
        op, inputs = node["op"], [built[i] for i in node.get("inputs", [])]
        if op == "leaf":
            built.append(Tensor(np.ones(2), requires_grad=bool(node["requires_grad"])))
        elif op == "frozen":
            with no_grad():
                built.append(inputs[0] * 3.0)
        else:
            built.append({"add": minitorch.add, "mul": minitorch.mul, "exp": minitorch.exp,
                          "sum": minitorch.sum}[op](*inputs))
    return built


def leaves(value, depth: int = 0, found=None) -> list[np.ndarray]:
    """The arrays an answer holds: itself (an array, a number), a Tensor's data, what a tuple, a list or a dict
    holds, and each head's W_Q, W_K, W_V, W_O of an attention model."""
    found = [] if found is None else found
    if len(found) >= MAX_LEAVES or depth > 4:
        return found
    if isinstance(value, (bool, int, float, np.generic, np.ndarray)):
        found.append(np.asarray(value))
    elif type(value).__name__ in ("Tensor", "Parameter") and isinstance(getattr(value, "data", None), np.ndarray):
        found.append(np.asarray(value.data))
    elif isinstance(value, dict):
        for member in list(value.values())[:MAX_LEAVES]:
            leaves(member, depth + 1, found)
    elif isinstance(value, (list, tuple)):
        for member in list(value)[:MAX_LEAVES]:
            leaves(member, depth + 1, found)
    elif isinstance(getattr(value, "layers", None), list):
        for layer in value.layers:
            try:
                W_Q, W_K, W_V, W_O = (np.asarray(getattr(layer, name).weight.data) for name in ("W_Q", "W_K", "W_V",
                                                                                                 "W_O"))
                width = W_Q.shape[1]
                for head in range(W_Q.shape[0] // width):
                    block = slice(head * width, (head + 1) * width)
                    found.extend([W_Q[block], W_K[block], W_V[block], W_O[:, block]])
            except (AttributeError, IndexError, TypeError, ValueError, ZeroDivisionError):
                pass
    return found


def _close(found, expected: np.ndarray) -> bool:
    found = np.asarray(found)
    if found.shape != expected.shape or found.dtype.kind not in "biuf":
        return False
    found = found.astype(float)
    if expected.dtype == bool:  # a mask, or its complement
        expected = expected.astype(float)
        return bool(np.array_equal(found, expected) or np.array_equal(1.0 - found, expected))
    return bool(np.allclose(found, expected, rtol=1e-6, atol=1e-9))


def holds_the_answer(answer, reference: dict, built=None) -> bool:
    if reference["kind"] == "order":
        return _valid_order(answer, reference, built)
    expected = reference["leaves"]
    if reference["structure"]:
        return isinstance(answer, (tuple, list)) and len(answer) == len(expected) and all(
            len(leaves(member)) == 1 and _close(leaves(member)[0], want) for member, want in zip(answer, expected))
    found = leaves(answer)
    return all(any(_close(leaf, want) for leaf in found) for want in expected)


def _valid_order(answer, reference: dict, built: list) -> bool:
    """The answer lists exactly the reference's tensors, each after those of its parents among them."""
    if not isinstance(answer, (list, tuple)):
        return False
    position = {id(tensor): index for index, tensor in enumerate(built)}
    order = [position.get(id(tensor), -1) for tensor in answer]
    if sorted(order) != reference["positions"]:
        return False
    placed, wanted = set(), set(reference["positions"])
    for index in order:
        if any(parent in wanted and parent not in placed for parent in reference["parents"][index]):
            return False
        placed.add(index)
    return True


# ----------------------------------------------------------------------
# the worker: runs in the edition, in bubblewrap


class _Stopped(BaseException):
    """A call ran past its time limit (a BaseException: `except Exception` in the edition's code cannot keep it)."""


class _Refused(Exception):
    """What a checked function may not do to the worker (end it, signal it, fork it)."""


def _stop(signum, frame):
    raise _Stopped()


def _limited(function, *args, cpu: float = CALL_SECONDS, wall: float = CALL_WALL_SECONDS, **kwargs):
    """function(*args, **kwargs) stopped after `cpu` seconds of CPU time or `wall` seconds on the clock."""
    signal.signal(signal.SIGPROF, _stop)
    signal.signal(signal.SIGALRM, _stop)
    signal.setitimer(signal.ITIMER_PROF, cpu)
    signal.setitimer(signal.ITIMER_REAL, wall)
    try:
        return function(*args, **kwargs)
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)


def _guard_process() -> None:
    """A checked function may not end, signal or fork the process checking it (it may signal its own children)."""
    kill, killpg, me, group = os.kill, os.killpg, os.getpid(), os.getpgrp()

    def refuse(*args, **kwargs):
        raise _Refused("not while the give-away test checks this function")

    def guarded_kill(pid, number):
        if pid in (0, -1, 1, me, -me, -group):
            refuse()
        return kill(pid, number)

    def guarded_killpg(pgid, number):
        if pgid in (0, 1, group):
            refuse()
        return killpg(pgid, number)

    os.kill, os.killpg = guarded_kill, guarded_killpg
    for name in ("_exit", "abort", "fork", "forkpty", "setsid", "setpgid"):
        setattr(os, name, refuse)
    signal.pthread_kill = refuse


def _inside(function, edition: Path) -> bool:
    return getattr(getattr(function, "__code__", None), "co_filename", "").startswith(str(edition) + os.sep)


def _callables(name: str, value):
    """(label, function, the class it is a method of or None) for each function `value` is or holds."""
    if type(value).__name__ == "FixtureFunctionDefinition":  # a pytest fixture: the function behind it
        yield name, value._get_wrapped_function(), None
    elif inspect.isfunction(value):
        yield name, value, None
    elif inspect.isclass(value):
        for attribute, member in list(vars(value).items()):
            if isinstance(member, staticmethod):
                yield f"{name}.{attribute}", member.__func__, None
            elif isinstance(member, classmethod):
                yield f"{name}.{attribute}", getattr(value, attribute), None
            elif inspect.isfunction(member):
                yield f"{name}.{attribute}", member, value
    elif isinstance(value, dict) and len(value) < 200:
        for key, member in list(value.items()):
            if inspect.isfunction(member):
                yield f"{name}[{key!r}]", member, None
    elif isinstance(value, (list, tuple)) and len(value) < 200:
        for index, member in enumerate(value):
            if inspect.isfunction(member):
                yield f"{name}[{index}]", member, None


def _functions_of(namespace: dict, edition: Path, found: dict) -> None:
    for name, value in list(namespace.items()):
        for label, function, owner in _callables(name, value):
            if id(function) in found or not _inside(function, edition) or label.split(".")[-1].startswith("test"):
                continue
            defined = inspect.unwrap(function).__code__.co_filename.split("#")[0]  # (not a checking decorator's)
            where = Path(defined).relative_to(edition).as_posix() if defined.startswith(str(edition)) else defined
            found[id(function)] = (f"{where}:{label}", function, owner)


def _modules(edition: Path, log) -> list:
    """The edition's library modules and its test files, imported."""
    import importlib
    import importlib.util

    modules = []
    for path in sorted((edition / "minitorch").rglob("*.py")):
        parts = path.relative_to(edition).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        try:
            modules.append(_limited(importlib.import_module, name, cpu=60.0, wall=120.0))
        except BaseException as error:
            log({"not imported": name, "error": f"{type(error).__name__}: {error}"[:300]})
    tests = edition / "tests"
    for folder in sorted({path.parent for path in tests.rglob("*.py")}, reverse=True):
        sys.path.insert(1, str(folder))  # as pytest's rootdir mode puts them (tests/ for causal_literals, ...)
    for path in sorted(tests.rglob("*.py")):
        name = "_edition_" + re.sub(r"\W", "_", path.relative_to(edition).as_posix()[:-3])
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            _limited(spec.loader.exec_module, module, cpu=60.0, wall=120.0)
            modules.append(module)
        except BaseException as error:  # (tests/fast/test_hand_fused.py refuses a student edition, on purpose)
            log({"not imported": path.relative_to(edition).as_posix(),
                 "error": f"{type(error).__name__}: {error}"[:300]})
    return modules


def _chapters(edition: Path, log) -> list[dict]:
    """Each chapter's namespace, its code cells run in order, statement by statement (each under a time limit; one
    that fails or runs too long is passed over), in the chapters' folder."""
    namespaces = []
    for path in sorted((edition / "chapters").glob("[0-9][0-9]_*.ipynb")):
        namespace = {"__name__": "__main__"}
        for index, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
            if cell["cell_type"] != "code":
                continue
            source = "\n".join("" if line.lstrip().startswith(("%", "!")) else line
                               for line in "".join(cell["source"]).splitlines())
            filename = f"{path}#cell{index}"  # so that inspect finds a cell's functions' source
            linecache.cache[filename] = (len(source), None, [line + "\n" for line in source.splitlines()], filename)
            try:
                statements = ast.parse(source, filename).body
            except SyntaxError as error:
                log({"not run": filename, "error": str(error)})
                continue
            for statement in statements:
                os.chdir(path.parent)
                try:
                    code = compile(ast.Module(body=[statement], type_ignores=[]), filename, "exec")
                    _limited(exec, code, namespace, cpu=STATEMENT_SECONDS, wall=4 * STATEMENT_SECONDS)
                except BaseException:  # a stub, a missing display(), a cut-short training run
                    pass
        namespaces.append(namespace)
    os.chdir(edition)
    return namespaces


def candidates(edition: Path, log) -> list:
    """(label, function, owner) of every function the edition holds, in label order."""
    found: dict = {}
    for module in _modules(edition, log):
        _functions_of(vars(module), edition, found)
    for namespace in _chapters(edition, log):
        _functions_of(namespace, edition, found)
    return sorted(found.values(), key=lambda item: item[0])


_KINDS = {"ndarray": {"ndarray", "np", "numpy", "ArrayLike", "array"}, "Tensor": {"Tensor"}, "bool": {"bool"},
          "int": {"int", "float", "Integral", "Real", "Number", "SupportsIndex"}, "float": {"float", "Real", "Number"},
          "tuple": {"tuple", "Sequence", "Iterable", "Collection"}, "list": {"list", "Sequence", "Iterable",
                                                                             "Collection"}}


def _kind(value) -> str:
    if isinstance(value, np.ndarray):
        return "ndarray"
    if type(value).__name__ in ("Tensor", "Parameter"):
        return "Tensor"
    for name, kinds in (("bool", bool), ("int", (int, np.integer)), ("float", (float, np.floating)),
                        ("tuple", tuple), ("list", list)):
        if isinstance(value, kinds):
            return name
    return "other"


def _admits(parameter: inspect.Parameter, kind: str) -> bool:
    """The parameter's annotation, if it has one, admits a value of `kind`."""
    annotation = parameter.annotation
    if annotation is inspect.Parameter.empty:
        return True
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", str(annotation))
    words = set(re.findall(r"[A-Za-z_]\w*", text))
    return not words or bool(words & {"Any", "object"}) or bool(words & _KINDS.get(kind, set()))


def call_forms(signature: inspect.Signature, names: tuple, kinds: list, constant_ok: bool) -> list[dict]:
    """Each way of filling the function's parameters with the exercise's inputs: {parameter: input index}. Each
    required parameter takes a distinct input, in any order; an optional one keeps its default, or takes a
    remaining input (of its name, the next in turn, or any one); annotations must admit the inputs."""
    plain = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    named = [parameter for parameter in signature.parameters.values() if parameter.kind in plain]
    required = [parameter for parameter in named if parameter.default is parameter.empty]
    optional = [parameter for parameter in named if parameter.default is not parameter.empty]
    if len(required) > len(names):
        return []
    orders = itertools.permutations(range(len(names)), len(required)) if len(required) <= 3 else \
        [tuple(range(len(required)))]
    forms = []
    for order in orders:
        assigned = {parameter.name: index for parameter, index in zip(required, order)}
        left = [index for index in range(len(names)) if index not in order]
        forms.append(assigned)
        forms.append({**assigned, **{parameter.name: names.index(parameter.name) for parameter in optional
                                     if parameter.name in names and names.index(parameter.name) in left}})
        forms.append({**assigned, **{parameter.name: index for parameter, index in zip(optional, left)}})
        forms.extend({**assigned, parameter.name: index} for parameter in optional[:4] for index in left)
    unique = []
    for form in forms:
        if (form or constant_ok) and form not in unique and all(
                _admits(signature.parameters[name], kinds[index]) for name, index in form.items()):
            unique.append(form)
    return unique[:MAX_FORMS]


def _copied(value):
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, (list, tuple)):
        return type(value)(_copied(member) for member in value)
    if isinstance(value, dict):
        return {key: _copied(member) for key, member in value.items()}
    return value


class _Checker:
    """Checks functions against the references, in a forked child of the worker."""

    def __init__(self, exercises: dict, log):
        self.exercises, self.log = exercises, log

    def check(self, label: str, function, owner) -> None:
        started = time.process_time()
        flags, unchecked = [], []
        try:
            signature = inspect.signature(function)
        except (TypeError, ValueError):
            signature = None
        for exercise_id, exercise in self.exercises.items():
            if signature is None:
                break
            if time.process_time() - started > CANDIDATE_SECONDS:
                unchecked.append(exercise_id)
                continue
            try:
                flags.extend(self._exercise(function, signature, owner, exercise_id, exercise, started))
            except _Stopped:
                unchecked.append(exercise_id)
        self.log({"done": label, "flags": flags, "stopped": unchecked})

    def _exercise(self, function, signature, owner, exercise_id: str, exercise: dict, started: float) -> list:
        flags = []
        tensors = exercise.get("tensors", ())
        for family, cases in exercise["families"].items():
            for as_tensors in itertools.product((False, True), repeat=len(tensors)):
                kinds = [_kind(value) for value in cases[0]["arguments"]]
                for name, as_tensor in zip(tensors, as_tensors):
                    kinds[exercise["names"].index(name)] = "Tensor" if as_tensor else "ndarray"
                for form in call_forms(signature, exercise["names"], kinds,
                                       family in exercise.get("constant_ok", ())):
                    if time.process_time() - started > CANDIDATE_SECONDS:
                        raise _Stopped()
                    if all(self._answers(function, signature, owner, form, exercise, case, as_tensors)
                           for case in cases):
                        flags.append({"exercise": exercise_id, "family": family, "form": form,
                                      "tensors": list(as_tensors), "loops": _loops(function)})
                        return flags
        return flags

    def _answers(self, function, signature, owner, form, exercise, case, as_tensors) -> bool:
        from minitorch import Tensor

        values, built = _copied(list(case["arguments"])), None
        for index, name in enumerate(exercise["names"]):
            if name in exercise.get("graphs", ()):
                built = build_graph(values[index])
                values[index] = built[-1]
        for name, as_tensor in zip(exercise.get("tensors", ()), as_tensors):
            if as_tensor:
                index = exercise["names"].index(name)
                values[index] = Tensor(np.array(values[index]))
        args, kwargs = [], {}
        for parameter in signature.parameters.values():
            if parameter.name in form:
                value = values[form[parameter.name]]
                if parameter.kind is inspect.Parameter.POSITIONAL_ONLY:
                    args.append(value)
                else:
                    kwargs[parameter.name] = value
        if owner is not None:  # a method takes an instance of its class first
            first = next(iter(signature.parameters), None)
            if not isinstance(kwargs.get(first, args[0] if args else None), owner):
                return False
        try:
            answer = _limited(function, *args, **kwargs)
        except _Stopped:
            raise
        except BaseException:
            return False
        try:
            return bool(_limited(holds_the_answer, answer, case["reference"], built))
        except BaseException:
            return False


def _loops(function) -> list[str]:
    """What the loop rule of exercise 4.1 finds in the function (the edition's own check)."""
    try:
        from loop_rule import loops_in

        return loops_in(inspect.getsource(function))
    except Exception as error:
        return [f"(its source could not be read: {type(error).__name__})"]


LOG_DESCRIPTOR, PROGRESS_DESCRIPTOR = 1001, 1002  # far above the small numbers a checked function may close


def _cpu_seconds(pid: int) -> float:
    """The CPU time process `pid` has used (its user and system time, from /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def _end_left_over_processes(keep: set[int], kill) -> None:
    """SIGKILL every process of the sandbox but `keep` and its init (pid 1): what a checked function started and
    left running (a training run, a book build) would use the CPU the checks after it are timed by."""
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) not in keep | {1}:
            try:
                kill(int(entry), signal.SIGKILL)
            except OSError:
                pass


def worker(edition: Path, inputs: Path, out: Path) -> int:
    """Check every function of `edition` against the references in `inputs`, writing one JSON line per function
    to `out`. Runs them in forked children; one that hangs or dies is replaced, the next function checked."""
    import resource

    def log(event: dict) -> None:
        line = (json.dumps(event) + "\n").encode()
        try:
            os.write(LOG_DESCRIPTOR, line)
        except OSError:  # a checked function closed it: open the file again
            os.dup2(os.open(out, os.O_WRONLY | os.O_APPEND | os.O_CREAT), LOG_DESCRIPTOR)
            os.write(LOG_DESCRIPTOR, line)

    os.dup2(os.open(out, os.O_WRONLY | os.O_APPEND | os.O_CREAT), LOG_DESCRIPTOR)
    sys.path.insert(0, str(edition))
    os.chdir(edition)
    sys.argv = [sys.argv[0]]  # a checked command's main() must not read the worker's arguments
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
    exercises = pickle.loads(inputs.read_bytes())
    fork, kill, exit_now = os.fork, os.kill, os._exit
    in_sandbox = Path("/proc/1/cmdline").read_bytes().split(b"\0")[0].endswith(b"bwrap")  # its own process table
    found = candidates(edition, log)
    if in_sandbox:
        _end_left_over_processes({os.getpid()}, kill)
    log({"candidates": len(found)})
    position = 0
    while position < len(found):
        reader, writer = os.pipe()
        child = fork()
        if child == 0:
            os.close(reader)
            os.dup2(writer, PROGRESS_DESCRIPTOR)
            os.close(writer)
            _guard_process()
            checker = _Checker(exercises, log)
            for index in range(position, len(found)):
                try:
                    os.write(PROGRESS_DESCRIPTOR, f"{index}\n".encode())
                except OSError:  # closed by the function checked before: let the worker start a new child
                    exit_now(0)
                label, function, owner = found[index]
                try:
                    checker.check(label, function, owner)
                except BaseException as error:
                    log({"done": label, "flags": [], "stopped": ["all"], "error": repr(error)[:300]})
                if in_sandbox:
                    _end_left_over_processes({os.getppid(), os.getpid()}, kill)
                os.chdir(edition)
            try:
                os.write(PROGRESS_DESCRIPTOR, b"all\n")
            finally:
                exit_now(0)
        os.close(writer)
        current, ended, finished = position, False, False
        heard, cpu_then = time.monotonic(), _cpu_seconds(child)
        with os.fdopen(reader, "rb", buffering=0) as progress:
            while True:
                ready, _, _ = select.select([progress], [], [], 1.0)
                if not ready:
                    silent, busy = time.monotonic() - heard, _cpu_seconds(child) - cpu_then
                    if (silent > WAITING_SECONDS and busy < 1.0) or silent > STUCK_SECONDS:
                        kill(child, signal.SIGKILL)
                        log({"done": found[current][0], "flags": [], "stopped": ["all"],
                             "error": f"no word for {silent:.0f} s, {busy:.1f} s of CPU time meanwhile"})
                        break
                    continue
                heard, cpu_then = time.monotonic(), _cpu_seconds(child)
                chunk = progress.read(4096)
                if not chunk:
                    ended = True
                    break
                numbers = [int(word) for word in chunk.split() if word.isdigit()]
                current = numbers[-1] if numbers else current
                finished = finished or b"all" in chunk.split()
        os.waitpid(child, 0)
        if in_sandbox:
            _end_left_over_processes({os.getpid()}, kill)
        if finished:
            break
        if ended:  # it ended on `current`: the function it checked ended it, or closed what it reports on
            log({"done": found[current][0], "flags": [], "stopped": ["all"], "error": "ended the checking process"})
        position = current + 1
    used = os.times()  # the worker's and its children's (every checking child is waited for)
    log({"end": True, "cpu": used.user + used.system + used.children_user + used.children_system})
    return 0


if __name__ == "__main__" and sys.argv[1:2] == ["--worker"]:  # (before the tests, which import the checkout's)
    sys.exit(worker(Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4])))


# ----------------------------------------------------------------------
# the tests


def _bubblewrap_problem() -> str:
    if shutil.which("bwrap") is None:
        return "the bwrap command is not installed"
    tried = subprocess.run(["bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc",
                            "--dev", "/dev", "true"], capture_output=True, text=True, timeout=60)
    return "" if tried.returncode == 0 else f"bwrap does not run here: {tried.stderr.strip()[:200]}"


def _plant(edition: Path) -> None:
    """Write PLANTED into the edition: a module of tests, a library module, a chapter cell."""
    for relative, (code, _) in PLANTED.items():
        path = edition / relative
        if path.suffix == ".ipynb":
            notebook = json.loads(path.read_text(encoding="utf-8"))
            notebook["cells"].append({"cell_type": "code", "execution_count": None, "id": "planted", "metadata": {},
                                      "outputs": [], "source": code.splitlines(keepends=True)})
            path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        else:
            path.write_text(code, encoding="utf-8")


class Search:
    """An edition of the project at `root` handing out `handed_out` and releasing `released`, made in `tmp`, and the
    worker started on it; `result()` waits for it: {"flags": {exercise: [(label, family, loops)]}, "stopped":
    [labels], "count", "not imported"}."""

    def __init__(self, tmp: Path, handed_out: list[str], released: list[str], public: dict, plant: bool = False,
                 root: Path = ROOT):
        from minitorch.exercises.edition import make_student_edition
        from minitorch.exercises.registry import EXERCISES

        edition, work = tmp / "edition", tmp / "work"
        make_student_edition(edition, [EXERCISES[i] for i in handed_out], root, [EXERCISES[i] for i in released])
        if plant:
            _plant(edition)
        (work / "home").mkdir(parents=True)
        inputs, self.out, self.printed = work / "inputs.pickle", work / "found.jsonl", work / "printed.txt"
        inputs.write_bytes(pickle.dumps(references(handed_out, public)))
        python = sorted({sys.prefix, sys.base_prefix, sys.exec_prefix})  # (a virtual environment in /tmp stays)
        command = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--ro-bind", "/", "/",
                   "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
                   *(part for folder in [*python, str(ROOT)] for part in ("--ro-bind", folder, folder)),
                   "--bind", str(tmp), str(tmp), "--chdir", str(edition),
                   sys.executable, "-I", str(HERE), "--worker", str(edition), str(inputs), str(self.out)]
        environment = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(work / "home"),
                       "MPLBACKEND": "Agg", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
                       "MKL_NUM_THREADS": "1", "LANG": "C.UTF-8"}
        with open(self.printed, "wb") as output:
            self.process = subprocess.Popen(command, stdout=output, stderr=output, stdin=subprocess.DEVNULL,
                                            env=environment)
        self.found = None

    def result(self) -> dict:
        if self.found is None:
            try:
                self.process.wait(timeout=1800)
            except subprocess.TimeoutExpired:
                self.process.kill()
                pytest.fail("the search of the edition's functions did not end in 30 minutes")
            events = [json.loads(line) for line in self.out.read_text().splitlines()] if self.out.exists() else []
            if self.process.returncode != 0 or not any("end" in event for event in events):
                tail = self.printed.read_text(errors="replace")[-3000:]
                pytest.fail(f"the search of the edition's functions failed (exit {self.process.returncode}):\n{tail}")
            flags: dict = {}
            for event in events:
                for flag in event.get("flags", []):
                    flags.setdefault(flag["exercise"], []).append((event["done"], flag["family"], flag["loops"]))
            self.found = {"flags": flags, "cpu": next(event["cpu"] for event in events if "end" in event),
                          "stopped": sorted({event["done"] for event in events if event.get("stopped")}),
                          "count": next(event["candidates"] for event in events if "candidates" in event),
                          "not imported": [event for event in events if "not imported" in event]}
        return self.found

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def allowed(exercise_id: str, label: str, loops: list[str]) -> bool:
    """The exceptions of the module's docstring that apply to a function found computing an exercise."""
    return exercise_id == "4.1" and bool(loops)


def _exercise_ids() -> list[str]:
    from minitorch.exercises.registry import EXERCISES, sort_key

    return sorted(EXERCISES, key=sort_key)


WEEK = {"handed_out": ["3.1", "3.2"], "released": ["1.1", "1.2", "1.3", "1.4", "2.1", "2.2", "2.3", "2.4", "2.5"]}


def _searched_exercises(items) -> dict[str, list[str]]:
    """{"full": exercises, "week": exercises}: what the selected tests (`items`) ask of each edition, so that
    ``pytest -k 2.6`` searches for 2.6 alone. A selected test of a whole edition (the planted give-aways, the
    modules read) asks for every exercise; an edition no selected test reads is not searched."""
    asked = {"full": set(), "week": set()}
    for item in items:
        for which, fixture in (("full", "full_edition"), ("week", "weeks_edition")):
            if fixture in getattr(item, "fixturenames", ()):
                parameters = getattr(item, "callspec", None)
                asked[which] |= ({parameters.params["exercise_id"]} if parameters else
                                 set(_exercise_ids() if which == "full" else WEEK["handed_out"]))
    return {which: sorted(ids, key=_exercise_ids().index) for which, ids in asked.items()}


@pytest.fixture(scope="module")
def searches(tmp_path_factory, request):
    """The editions the selected tests read, searched at once (two workers side by side)."""
    problem = _bubblewrap_problem()
    if problem:
        pytest.skip(f"the functions of an edition are run only inside bubblewrap, and {problem}")
    import resource

    asked = _searched_exercises(request.session.items)
    began, before = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
    public = public_inputs(ROOT, tmp_path_factory.mktemp("recording"), sorted({*asked["full"], *asked["week"]}))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    recording = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    started = {}
    if asked["full"]:
        started["full"] = Search(tmp_path_factory.mktemp("full"), asked["full"], [], public, plant=True)
    if asked["week"]:
        started["week"] = Search(tmp_path_factory.mktemp("week"), asked["week"], WEEK["released"], public)
    yield started
    for one in started.values():
        one.stop()
    searching = [one.found["cpu"] for one in started.values() if one.found is not None]
    print(f"\nthe public tests recorded ({recording:.0f} s of CPU time) and both editions searched "
          f"({' + '.join(f'{cpu:.0f}' for cpu in searching)} s of CPU time) in {time.monotonic() - began:.0f} s")


def _searched(searches, which: str, what: str) -> dict:
    found = searches[which].result()
    print(f"\n{what} holds {found['count']} functions; stopped by the time limits: "
          f"{', '.join(found['stopped']) or 'none'}")
    return found


@pytest.fixture(scope="module")
def full_edition(searches):
    return _searched(searches, "full", "the full edition")


@pytest.fixture(scope="module")
def weeks_edition(searches):
    return _searched(searches, "week", "the week's edition")


def _assert_none_computes(found: dict, exercise_id: str, what: str) -> None:
    planted = {f"{relative}:{code.split('def ')[1].split('(')[0]}" for relative, (code, _) in PLANTED.items()}
    computing = sorted({label for label, _, loops in found["flags"].get(exercise_id, [])
                        if label not in planted and not allowed(exercise_id, label, loops)})
    assert not computing, (
        f"{what} holds functions that compute exercise {exercise_id}'s answer, which a student could call or paste "
        f"(remove them, make them call the exercise's function, or check without computing it):\n"
        + "\n".join(f"  {label} ({family})" for label, family, _ in found["flags"][exercise_id]
                    if label in computing))


@pytest.mark.slow
@pytest.mark.parametrize("exercise_id", _exercise_ids())
def test_no_function_of_the_full_edition_computes_an_exercise(exercise_id, full_edition):
    _assert_none_computes(full_edition, exercise_id, "the full edition")


@pytest.mark.slow
@pytest.mark.parametrize("exercise_id", WEEK["handed_out"])
def test_no_function_of_a_weeks_edition_computes_what_it_hands_out(exercise_id, weeks_edition):
    """The week of chapter 03's first exercises: 3.1 and 3.2 handed out, chapters 01-02's answers released."""
    _assert_none_computes(weeks_edition, exercise_id, "the week's edition")


@pytest.mark.slow
def test_the_search_finds_the_give_aways_planted_in_the_library_the_tests_and_a_chapter(full_edition):
    for relative, (code, exercise_id) in PLANTED.items():
        label = f"{relative}:{code.split('def ')[1].split('(')[0]}"
        found = [flagged for flagged, _, _ in full_edition["flags"].get(exercise_id, [])]
        assert label in found, f"the search missed {label}, planted to compute exercise {exercise_id}: it found {found}"


@pytest.mark.slow
def test_the_search_reads_every_library_module_and_test_file_of_the_edition(full_edition):
    """Only two test files refuse a student edition: the hand-fused floor's (it has no floor to test) and the
    toy-exercise test (an edition builds no editions); every other file was read, so its functions were checked."""
    refused = sorted(event["not imported"] for event in full_edition["not imported"])
    assert refused == ["tests/exercises/test_new_exercise.py", "tests/fast/test_hand_fused.py"], (
        full_edition["not imported"])


# ----------------------------------------------------------------------
# 4.1's exception: a loop, pasted, earns nothing; an honest loop-free answer everything, however it is written

MAKE_TARGETS = {  # name -> (body, points it must earn)
    "the chapter's loop": ("y = x.copy() if residual else np.zeros_like(x)\nfor b in range(len(x)):\n"
                           "    j = triggers[b]\n    y[b, j] += x[b, 1:j + 1].mean(axis=0)\nreturn y\n", 0.0),
    "a loop inside exec": ("y = x.copy() if residual else np.zeros_like(x)\n"
                           "exec('for b in range(len(x)):\\n'\n"
                           "     '    y[b, triggers[b]] += x[b, 1:triggers[b] + 1].mean(axis=0)')\nreturn y\n", 0.0),
    "a loop by recursion": ("def add_mean(y, b):\n    if b == len(x):\n        return y\n"
                            "    y[b, triggers[b]] += x[b, 1:triggers[b] + 1].mean(axis=0)\n"
                            "    return add_mean(y, b + 1)\n"
                            "return add_mean(x.copy() if residual else np.zeros_like(x), 0)\n", 0.0),
    "whole arrays, with np.add.reduce, a form feed, U+2028 and CRLF": (
        "# the tokens 1..j FORM-FEED of each sequence LINE-SEPARATOR, BOS left out\n"
        "positions = np.arange(x.shape[1])\nup_to = (positions >= 1) & (positions <= triggers[:, None])\n"
        "means = np.add.reduce(up_to[:, :, None] * x, axis=1) / triggers[:, None]\n"
        "y = x.copy() if residual else np.zeros_like(x)\ny[np.arange(len(x)), triggers] += means\nreturn y\n", 2.0),
}


@pytest.mark.slow
def test_a_make_targets_that_loops_earns_nothing_and_one_on_whole_arrays_everything(tmp_path):
    """Every graded test of 4.1, public and hidden, checks the loop rule first; so the loop the chapter prints is
    no answer (the exception above), nor is a loop hidden from the syntax, while an honest answer keeps its points
    whatever characters its comments and line ends hold."""
    from minitorch.exercises.registry import EXERCISES, replace_bodies

    copy_ = tmp_path / "copy"
    for name in ("minitorch", "tests"):
        shutil.copytree(ROOT / name, copy_ / name, ignore=shutil.ignore_patterns("__pycache__"))
    exercise = EXERCISES["4.1"]
    path, original = copy_ / exercise.module, (copy_ / exercise.module).read_text(encoding="utf-8")
    earned = {}
    for name, (body, points) in MAKE_TARGETS.items():
        text = replace_bodies(original, {exercise.function: body}, exercise.module)
        text = text.replace("FORM-FEED", "\x0c").replace("LINE-SEPARATOR", "\u2028")
        path.write_bytes((text.replace("\n", "\r\n") if points else text).encode("utf-8"))
        board = tmp_path / "board.json"
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", exercise.marker, "-p", "no:cacheprovider",
                        f"--scoreboard-json={board}", *exercise.tests, "tests/hidden"], cwd=copy_, capture_output=True,
                       timeout=900, env={key: value for key, value in os.environ.items()
                                         if key not in ("MINITORCH_ROOT", "PYTEST_ADDOPTS")})
        row = json.loads(board.read_text())["exercises"][exercise.id]
        earned[name] = (row["earned"], row["passed"], row["tests"])
    wrong = {name: found for name, found in earned.items() if found[0] != MAKE_TARGETS[name][1]}
    assert not wrong, f"4.1's points (earned, passed, tests) are not what the loop rule should give: {wrong}"


# ----------------------------------------------------------------------
# a graded test's failure fits on a screen


@pytest.mark.slow
def test_a_softmax_backward_summing_without_its_axis_fails_briefly_naming_the_likely_mistake(tmp_path):
    copy_ = tmp_path / "copy"
    for name in ("minitorch", "tests"):
        shutil.copytree(ROOT / name, copy_ / name, ignore=shutil.ignore_patterns("__pycache__"))
    softmax = copy_ / "minitorch" / "softmax.py"
    right = "(grad * weights).sum(axis=axis, keepdims=True)"
    assert right in softmax.read_text(encoding="utf-8"), "the reference softmax changed; update this test"
    softmax.write_text(softmax.read_text(encoding="utf-8").replace(right, "(grad * weights).sum()"), encoding="utf-8")
    completed = subprocess.run([sys.executable, "-m", "pytest", "-m", "ex2_4", "-p", "no:cacheprovider", "--color=no",
                                "tests/test_softmax.py"], cwd=copy_, capture_output=True, text=True, timeout=300,
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

