"""The grader's answers to the stand-ins (chapter 11, "How grading works").

While exercise X is graded, the student's worker asks, through a stand-in (`grader.sandboxed.stand_in`),
for the result of another exercise's function. `answer` computes it here, in the grader's check process, with
the grader's own library, from the data of the request alone; the pool (`student_code.WorkerPool`) has
already checked that X needs that exercise. Tensors arrive as arrays with the shape of their graph, and are
rebuilt as graph nodes that hold no computation of the student's.
"""

from __future__ import annotations

import importlib
import inspect
import math

import numpy as np

from minitorch.exercises.grader.channel import MAX_ARRAY_ELEMENTS
from minitorch.exercises.registry import EXERCISES
from minitorch.exercises.grader.sandboxed.stand_in import MAX_GRAPH_NODES
from minitorch.tensor import Tensor


def reference_function(exercise_id: str):
    exercise = EXERCISES[exercise_id]
    return getattr(importlib.import_module(exercise.python_module), exercise.function)


MAX_INTEGER = 4096  # an integer argument (a length, a size) beyond this is refused before anything is allocated


def check_size(value) -> None:
    """Refuse, before computing anything, a request whose integers or shapes would make the grader allocate more
    than a check needs: every integer at most MAX_INTEGER, every tuple of integers (a shape) at most
    channel.MAX_ARRAY_ELEMENTS in product. (Arrays arrive within the channel's limits already.)"""
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, int) and abs(value) > MAX_INTEGER:
        raise ValueError(f"the grader computes other exercises' functions for sizes up to {MAX_INTEGER}, got {value}")
    if isinstance(value, (tuple, list)):
        if value and all(isinstance(item, int) and not isinstance(item, bool) for item in value) and \
                math.prod(abs(item) for item in value) > MAX_ARRAY_ELEMENTS:
            raise ValueError(f"the grader computes other exercises' functions for shapes of at most "
                             f"{MAX_ARRAY_ELEMENTS:,} elements, got {tuple(value)}")
        for item in value:
            check_size(item)
    if isinstance(value, dict):
        for item in value.values():
            check_size(item)


def answer(exercise_id: str, request: dict) -> dict:
    """The reply to one stand-in's request: {"value"}, {"tensor"}, {"nodes"} or, for a backward pass,
    {"gradients"}."""
    check_size(request.get("args"))
    function = reference_function(exercise_id)
    graph = request.get("graph") or {"parents": [], "requires_grad": []}
    if "upstream" in request:
        leaves: list[Tensor] = []
        args = _decode(request["args"], lambda node, data: leaves.append(Tensor(np.array(data), requires_grad=True))
                       or leaves[-1])
        _call(function, args).backward(np.asarray(request["upstream"]))
        return {"gradients": [np.zeros_like(leaf.data) if leaf.grad is None else np.asarray(leaf.grad)
                              for leaf in leaves]}
    nodes = rebuild(graph, _argument_data(request["args"]))
    result = _call(function, _decode(request["args"], lambda node, data: nodes[node]))
    if isinstance(result, Tensor):
        return {"tensor": np.asarray(result.data)}
    if isinstance(result, list) and result and all(isinstance(item, Tensor) for item in result):
        place = {id(node): index for index, node in enumerate(nodes)}
        return {"nodes": [place.get(id(item), -1) for item in result]}
    return {"value": result}


def _call(function, args):
    if not isinstance(args, list) or len(args) > len(inspect.signature(function).parameters):
        raise TypeError(f"{function.__name__}: the stand-in sent {len(args)} arguments")
    return function(*args)


def _decode(value, tensor_for):
    """The arguments with each {"tensor_node": i, "data": array} replaced by `tensor_for(i, array)`."""
    if isinstance(value, dict) and set(value) == {"tensor_node", "data"}:
        return tensor_for(int(value["tensor_node"]), value["data"])
    if isinstance(value, tuple):
        return tuple(_decode(item, tensor_for) for item in value)
    if isinstance(value, list):
        return [_decode(item, tensor_for) for item in value]
    return value


def _argument_data(args) -> dict[int, np.ndarray]:
    found = {}
    _decode(args, lambda node, data: found.setdefault(node, np.asarray(data)))
    return found


def rebuild(graph: dict, data: dict[int, np.ndarray]) -> list[Tensor]:
    """Graph nodes with the given parents and requires_grad flags, parents built first (node i holds data[i], or
    a 0-d zero); ValueError for a graph that is malformed, cyclic or too large."""
    parents, requires_grad = graph.get("parents", []), graph.get("requires_grad", [])
    if not isinstance(parents, list) or len(parents) > MAX_GRAPH_NODES or len(requires_grad) != len(parents):
        raise ValueError("the graph sent is malformed or larger than the limit")
    if not all(isinstance(node, int) and 0 <= node < len(parents) for node in data):
        raise ValueError("a tensor argument is not a node of the graph sent")
    built: dict[int, Tensor] = {}
    for start in range(len(parents)):
        stack, opened = [(start, False)], set()
        while stack:
            node, parents_built = stack.pop()
            if node in built:
                continue
            inputs = parents[node]
            if not isinstance(inputs, list) or not all(isinstance(p, int) and 0 <= p < len(parents) for p in inputs):
                raise ValueError("the graph sent names a parent that is not one of its nodes")
            if not parents_built:
                if node in opened:
                    raise ValueError("the graph sent has a cycle: a tensor cannot depend on itself")
                opened.add(node)
                stack.append((node, True))
                stack += [(parent, False) for parent in inputs if parent not in built]
                continue
            value = data.get(node, np.zeros(()))
            if inputs:
                count = len(inputs)
                built[node] = Tensor.from_op(value, tuple(built[p] for p in inputs),
                                             lambda grad, count=count: (np.zeros(()),) * count, "node")
            else:
                built[node] = Tensor(value, requires_grad=bool(requires_grad[node]))
    return [built[node] for node in range(len(parents))]
