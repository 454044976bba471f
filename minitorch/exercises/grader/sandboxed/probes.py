"""What a graded test asks of a student's code: small functions from data to data (chapter 11, "How
grading works").

A graded test never calls the library directly. It asks the ``student`` fixture, e.g.
``student.softmax(scores, axis=-1)``, and gets back plain data: arrays, numbers, lists. The fixture
runs the probe of that name:

- in your own ``pytest -m ex2_4``, here, in the test's process, on your copy of the library;
- when an instructor grades, in a sandboxed worker that holds your code for the exercise being graded
  and the grader's code for everything else; only data travels back, and the test's checks run in the
  grader's process.

So each probe builds what it needs from data (tensors, graphs, models), calls the library, and turns
the answer back into data. Probes hold no answers: they only call the functions the exercises fill in.
"""

from __future__ import annotations

import importlib

import numpy as np

import minitorch
from minitorch import Tensor, no_grad
from minitorch.nn import Parameter
from minitorch.optim import Adam
from minitorch.exercises.registry import EXERCISES
from minitorch.exercises.grader.sandboxed.student_function import source_of
from minitorch.paper import attention, metrics, task, theory


# ----------------------------------------------------------------------
# expressions on tensors, by name: the gradient checks build them in the worker (backward) and in the
# test (finite differences)

def _softmax(scores: Tensor, axis: int = -1, offsets=None) -> Tensor:
    """softmax(scores + offsets): a test masks an entry by giving it the offset -inf."""
    return minitorch.softmax(scores if offsets is None else scores + np.asarray(offsets, float), axis)


EXPRESSIONS = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "exp": lambda x: minitorch.exp(x),
    "log": lambda x: minitorch.log(x),
    "matmul": lambda a, b: minitorch.matmul(a, b),
    "sum": lambda x, axis=None, keepdims=False: minitorch.sum(x, axis=axis, keepdims=keepdims),
    "softmax": _softmax,
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
    """The value of the named expression (no gradient recorded)."""
    with no_grad():
        return _data(build(expression, inputs, requires_grad=False, **options)[1])


def gradients(expression: str, inputs, upstream, **options) -> dict:
    """Run the whole backward pass from the expression's output with ∂ℓ/∂output = `upstream`:
    {"value": the output, "gradients": ∂ℓ/∂ each input (None where no gradient arrived)}."""
    leaves, output = build(expression, inputs, **options)
    output.backward(np.asarray(upstream))
    return {"value": _data(output), "gradients": [None if leaf.grad is None else np.asarray(leaf.grad)
                                                  for leaf in leaves]}


def local_gradients(expression: str, inputs, upstream, **options) -> tuple:
    """The output's own backward rule applied to `upstream` (no other rule runs): one array per input,
    as the rule returns them (before the engine folds broadcast axes)."""
    _, output = build(expression, inputs, **options)
    upstream = np.array(upstream)
    upstream.flags.writeable = False  # as Tensor.backward hands it to a rule
    return tuple(np.asarray(gradient) for gradient in output.backward_fn(upstream))


def offset_softmax_gradients(scores, offsets, upstream, axis: int = -1) -> dict:
    """∂ℓ/∂(scores + offsets) and ∂ℓ/∂scores for ℓ = Σ upstream ⊙ softmax(scores + offsets), offsets -inf or 0."""
    leaf = Tensor(np.array(scores), requires_grad=True)
    masked = (leaf + np.asarray(offsets, float)).retain_grad()
    (minitorch.softmax(masked, axis) * Tensor(np.asarray(upstream))).sum().backward()
    return {"masked": np.asarray(masked.grad), "scores": np.asarray(leaf.grad)}


def _data(value):
    """A tensor's array; anything else as it is (the test then says what came back)."""
    return np.asarray(value.data) if isinstance(value, Tensor) else value


# ----------------------------------------------------------------------
# chapter 01-02: the engine
# Each probe returns the arrays the library made (a student's copy may change what runs here): the test measures
# their dtypes, shapes and values on the grader's side, and a probe reports no property as text of its own.

def topological_order(nodes: list[dict], root: int) -> list[int]:
    """Build a graph from `nodes` and return the positions (in `nodes`) of topological_order(root).

    Each node is {"op": "leaf", "requires_grad": bool}, or {"op": "add" | "mul", "inputs": [i, j]},
    or {"op": "exp" | "sum", "inputs": [i]}, or {"op": "frozen", "inputs": [i]} (x * 3 computed inside
    no_grad: a constant, recorded nowhere). A tensor in the answer that is no node of the graph is -1."""
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
    result = minitorch.unbroadcast(grad, tuple(shape), op)
    return {"result": np.asarray(result), "grad_after": grad}


def softmax(scores, axis: int = -1) -> np.ndarray:
    return _data(minitorch.softmax(Tensor(np.array(scores)), axis=axis))


def softmax_and_gradient(scores, upstream, axis: int = -1) -> dict:
    """{"weights": softmax(scores), "gradient": ∂ℓ/∂scores for ℓ = Σ upstream ⊙ weights}, the arrays as the
    library made them: their dtypes, values and shapes are measured by the test, on the grader's side."""
    leaf = Tensor(np.array(scores), requires_grad=True)
    weights = minitorch.softmax(leaf, axis=axis)
    weights.backward(np.array(upstream))
    return {"weights": _data(weights), "gradient": None if leaf.grad is None else np.asarray(leaf.grad)}


def adam_trajectories(initial_values, gradient_sequences, **settings) -> list[list[np.ndarray]]:
    """Drive Adam with prescribed gradients (None: no gradient at that step): each parameter's value
    after every step."""
    parameters = [Parameter(np.array(values)) for values in initial_values]
    optimizer = Adam(parameters, **settings)
    trajectories = [[] for _ in parameters]
    for step_gradients in zip(*gradient_sequences):
        for parameter, gradient in zip(parameters, step_gradients):
            parameter.grad = None if gradient is None else np.array(gradient)
        optimizer.step()
        for trajectory, parameter in zip(trajectories, parameters):
            trajectory.append(np.array(parameter.data))
    return trajectories


# ----------------------------------------------------------------------
# chapters 03-09: the paper's code

def causal_mask(length: int) -> dict:
    """{"type": the class of causal_mask(length)'s answer, "shape", "dtype", "mask"}; shape, dtype and the mask
    itself only for a NumPy array (the mask only if it holds booleans or numbers), so the test can say which
    part is wrong."""
    mask = attention.causal_mask(length)
    if not isinstance(mask, np.ndarray):
        return {"type": type(mask).__name__, "shape": None, "dtype": None, "mask": None}
    return {"type": "ndarray", "shape": tuple(int(size) for size in mask.shape), "dtype": str(mask.dtype),
            "mask": mask if mask.dtype.kind in "biuf" else None}


def softmax_attention(scores, future) -> dict:
    """{"weights": ..., "requires_grad": does the result stay in the graph of the scores?}"""
    weights = attention.softmax_attention(Tensor(np.array(scores), requires_grad=True), np.asarray(future, bool))
    return {"weights": _data(weights), "requires_grad": bool(getattr(weights, "requires_grad", False))}


def relu_attention(scores, future) -> dict:
    weights = attention.relu_attention(Tensor(np.array(scores), requires_grad=True), np.asarray(future, bool))
    return {"weights": _data(weights), "requires_grad": bool(getattr(weights, "requires_grad", False))}


def bos_mass_at_non_trigger_rows(weights, triggers):
    return metrics.bos_mass_at_non_trigger_rows(np.array(weights), np.array(triggers))


def gu_sink_scores(weights):
    return metrics.gu_sink_scores(np.array(weights))


def sink_share(per_layer_weights, **options):
    return metrics.sink_share([np.array(weights) for weights in per_layer_weights], **options)


def make_targets(x, triggers, residual: bool = False) -> dict:
    """{"targets": y, "x_after": x, "triggers_after": triggers}: the inputs after the call, to see that
    make_targets left them untouched."""
    x, triggers = np.array(x), np.array(triggers)
    targets = np.asarray(task.make_targets(x, triggers, residual=residual))
    return {"targets": targets, "x_after": x, "triggers_after": triggers}


def function_source(exercise_id: str) -> str:
    """The source of the exercise's function: what the grader's checks on how an answer is written (its syntax
    tree, read in the grader's process) look at. (When a class is graded the grader answers this itself, with
    what the worker read from the file before any of the student's code ran.)"""
    exercise = EXERCISES[exercise_id]
    return source_of(getattr(importlib.import_module(exercise.python_module), exercise.function))


def relu_construction(width: int = task.WIDTH, direction=None) -> dict:
    return _model_as_data(theory.relu_construction(width, direction))


def softmax_construction(scale: float, width: int = task.WIDTH, direction=None) -> dict:
    return _model_as_data(theory.softmax_construction(scale, width, direction))


def _model_as_data(model) -> dict:
    """{"class": its class's name, "config": ..., "weights": its state dict}; the test rebuilds it."""
    return {"class": type(model).__name__, "config": dict(getattr(model, "config", {})),
            "weights": {name: np.array(value) for name, value in model.state_dict().items()}}
