"""What a graded test asks of a student's code: functions from data to data (chapter 11, "How grading works").

A graded test calls ``student.softmax(scores)``; the probe of that name builds what it needs (tensors, graphs,
models), calls the library and returns data. It runs in the test's process in a student's own run, and in the
student's sandboxed worker when a class is graded. Probes hold no answers: they only call the exercises' functions.
"""

from __future__ import annotations

import copy
import functools
import importlib
import inspect
import textwrap

import numpy as np

import minitorch
from minitorch import Tensor, no_grad
from minitorch.exercises.registry import EXERCISES
from minitorch.nn import Parameter
from minitorch.optim import Adam
from minitorch.paper import attention, task, theory


def _function(exercise_id: str):
    exercise = EXERCISES[exercise_id]
    return getattr(importlib.import_module(exercise.python_module), exercise.function)


def _data(value):
    """A tensor's array, and so inside lists and tuples; anything else as it is (the test says what came back)."""
    if isinstance(value, Tensor):
        return np.asarray(value.data)
    if type(value) in (list, tuple):
        return type(value)(_data(item) for item in value)
    return value


def call(exercise_id: str, *args, **kwargs):
    """The exercise's function called on data: an argument its signature annotates as a Tensor becomes one, every
    other is a copy (arrays in lists too), and tensors in the answer come back as arrays."""
    function = _function(exercise_id)
    signature = inspect.signature(function)
    bound = signature.bind(*args, **kwargs)
    for name, value in bound.arguments.items():
        if signature.parameters[name].annotation in (Tensor, "Tensor"):
            bound.arguments[name] = Tensor(np.array(value))
        else:
            bound.arguments[name] = copy.deepcopy(value)
    return _data(function(*bound.args, **bound.kwargs))


def __getattr__(name: str):
    """An exercise's function that needs no probe of its own is its own probe, `call` on its ID: a test writes
    ``student.gu_sink_scores(weights)`` for ``call("3.5", weights)``."""
    exercise_id = next((exercise.id for exercise in EXERCISES.values() if exercise.function == name), None)
    if exercise_id is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return functools.partial(call, exercise_id)


def function_source(exercise_id: str) -> str:
    """The exercise's function's source (when a class is graded, the grader answers with what the worker read)."""
    return textwrap.dedent(inspect.getsource(inspect.unwrap(_function(exercise_id))))


# ----------------------------------------------------------------------
# expressions on tensors, by name: the gradient checks build them in the worker (backward) and in the test
# (finite differences)

def _softmax(scores: Tensor, axis: int = -1, offsets=None) -> Tensor:
    """softmax(scores + offsets): a test masks an entry by giving it the offset -inf."""
    return minitorch.softmax(scores if offsets is None else scores + np.asarray(offsets, float), axis)


EXPRESSIONS = {
    "add": minitorch.add, "sub": minitorch.sub, "mul": minitorch.mul, "div": minitorch.div, "exp": minitorch.exp,
    "log": minitorch.log, "matmul": minitorch.matmul, "sum": minitorch.sum, "softmax": _softmax,
    "softmax_attention": lambda scores, future: attention.softmax_attention(scores, np.asarray(future, bool)),
    "relu_attention": lambda scores, future: attention.relu_attention(scores, np.asarray(future, bool)),
}


def build(expression: str, inputs, requires_grad: bool = True, **options) -> tuple[list[Tensor], Tensor]:
    """(leaves, output) of the named expression on `inputs` (arrays; each a leaf)."""
    if expression not in EXPRESSIONS:
        raise KeyError(f"no expression named {expression!r}; known: {', '.join(EXPRESSIONS)}")
    leaves = [Tensor(np.array(value), requires_grad=requires_grad) for value in inputs]
    return leaves, EXPRESSIONS[expression](*leaves, **options)


def forward(expression: str, inputs, **options) -> np.ndarray:
    with no_grad():
        return _data(build(expression, inputs, requires_grad=False, **options)[1])


def gradients(expression: str, inputs, upstream, **options) -> dict:
    """The whole backward pass from the output with ∂ℓ/∂output = `upstream`: {"value", "gradients": ∂ℓ/∂ each
    input (None where none arrived)}."""
    leaves, output = build(expression, inputs, **options)
    output.backward(np.asarray(upstream))
    return {"value": _data(output), "gradients": [None if leaf.grad is None else np.asarray(leaf.grad)
                                                  for leaf in leaves]}


def local_gradients(expression: str, inputs, upstream, **options) -> tuple:
    """The output's own backward rule alone, applied to a read-only `upstream` as Tensor.backward hands it."""
    _, output = build(expression, inputs, **options)
    upstream = np.array(upstream)
    upstream.flags.writeable = False
    return tuple(np.asarray(gradient) for gradient in output.backward_fn(upstream))


def offset_softmax_gradients(scores, offsets, upstream, axis: int = -1) -> dict:
    """∂ℓ/∂(scores + offsets) and ∂ℓ/∂scores for ℓ = Σ upstream ⊙ softmax(scores + offsets), offsets -inf or 0."""
    leaf = Tensor(np.array(scores), requires_grad=True)
    masked = (leaf + np.asarray(offsets, float)).retain_grad()
    (minitorch.softmax(masked, axis) * Tensor(np.asarray(upstream))).sum().backward()
    return {"masked": np.asarray(masked.grad), "scores": np.asarray(leaf.grad)}


# ----------------------------------------------------------------------
# the exercises' own probes: each returns the arrays the library made, and the test measures their dtypes,
# shapes and values on the grader's side (a probe reports no property of its own)

def topological_order(nodes: list[dict], root: int) -> list[int]:
    """The positions in `nodes` of topological_order(root), -1 for a tensor that is no node. A node is {"op":
    "leaf", "requires_grad": bool}, {"op": "add" | "mul", "inputs": [i, j]}, {"op": "exp" | "sum", "inputs": [i]}
    or {"op": "frozen", "inputs": [i]} (x * 3 inside no_grad: a constant, recorded nowhere)."""
    built: list[Tensor] = []
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
    position = {id(tensor): index for index, tensor in enumerate(built)}
    return [position.get(id(tensor), -1) for tensor in minitorch.topological_order(built[root])]


def unbroadcast(grad, shape, op: str = "test") -> dict:
    """{"result": unbroadcast(grad, shape, op), "grad_after": the incoming array after the call}."""
    grad = np.array(grad)
    return {"result": np.asarray(minitorch.unbroadcast(grad, tuple(shape), op)), "grad_after": grad}


def softmax(scores, axis: int = -1) -> np.ndarray:
    return _data(minitorch.softmax(Tensor(np.array(scores)), axis=axis))


def softmax_and_gradient(scores, upstream, axis: int = -1) -> dict:
    """{"weights": softmax(scores), "gradient": ∂ℓ/∂scores for ℓ = Σ upstream ⊙ weights}."""
    leaf = Tensor(np.array(scores), requires_grad=True)
    weights = minitorch.softmax(leaf, axis=axis)
    weights.backward(np.array(upstream))
    return {"weights": _data(weights), "gradient": None if leaf.grad is None else np.asarray(leaf.grad)}


def adam_trajectories(initial_values, gradient_sequences, **settings) -> list[list[np.ndarray]]:
    """Adam driven by prescribed gradients (None: none at that step): each parameter's value after every step."""
    parameters = [Parameter(np.array(values)) for values in initial_values]
    optimizer, trajectories = Adam(parameters, **settings), [[] for _ in parameters]
    for step_gradients in zip(*gradient_sequences):
        for parameter, gradient in zip(parameters, step_gradients):
            parameter.grad = None if gradient is None else np.array(gradient)
        optimizer.step()
        for trajectory, parameter in zip(trajectories, parameters):
            trajectory.append(np.array(parameter.data))
    return trajectories


def causal_mask(length: int) -> dict:
    """{"type", "shape", "dtype", "mask"} of causal_mask(length)'s answer (the last three for an array, the mask
    only of booleans or numbers), so that the test can say which part is wrong."""
    mask = attention.causal_mask(length)
    if not isinstance(mask, np.ndarray):
        return {"type": type(mask).__name__, "shape": None, "dtype": None, "mask": None}
    return {"type": "ndarray", "shape": tuple(int(size) for size in mask.shape), "dtype": str(mask.dtype),
            "mask": mask if mask.dtype.kind in "biuf" else None}


def softmax_attention(scores, future) -> dict:
    """{"weights", "requires_grad": does the result stay in the graph of the scores?}"""
    weights = attention.softmax_attention(Tensor(np.array(scores), requires_grad=True), np.asarray(future, bool))
    return {"weights": _data(weights), "requires_grad": bool(getattr(weights, "requires_grad", False))}


def relu_attention(scores, future) -> dict:
    weights = attention.relu_attention(Tensor(np.array(scores), requires_grad=True), np.asarray(future, bool))
    return {"weights": _data(weights), "requires_grad": bool(getattr(weights, "requires_grad", False))}


def make_targets(x, triggers, residual: bool = False) -> dict:
    """{"targets", "x_after", "triggers_after"}: the inputs after the call, to see that it left them untouched."""
    x, triggers = np.array(x), np.array(triggers)
    return {"targets": np.asarray(task.make_targets(x, triggers, residual=residual)), "x_after": x,
            "triggers_after": triggers}


def relu_construction(width: int = task.WIDTH, direction=None) -> dict:
    return _model_as_data(theory.relu_construction(width, direction))


def softmax_construction(scale: float, width: int = task.WIDTH, direction=None) -> dict:
    return _model_as_data(theory.softmax_construction(scale, width, direction))


def _model_as_data(model) -> dict:
    """{"class": its class's name, "config", "weights": its state dict}; the test rebuilds it."""
    return {"class": type(model).__name__, "config": dict(getattr(model, "config", {})),
            "weights": {name: np.array(value) for name, value in model.state_dict().items()}}
