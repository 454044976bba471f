"""The grader's answers to the stand-ins, from its own library (chapter 11, "How grading works").

The check process answers a stand-in's request from its data alone, for an exercise the pool has already checked
that the graded one needs; a request is costed from the shapes it declares and refused before anything is
allocated if it costs more than a check needs, and its time counts against the student's own test time.
"""

from __future__ import annotations

import importlib
import inspect
import math

import numpy as np

from minitorch.exercises.grader.channel import MAX_ARRAY_ELEMENTS
from minitorch.exercises.grader.sandboxed.stand_in import MAX_GRAPH_NODES
from minitorch.exercises.registry import EXERCISES
from minitorch.tensor import Tensor

MAX_INTEGER = 2048  # an integer argument (a length, a width): its square is the channel's largest array
MAX_WORK = 1 << 28  # multiply-adds one request may cost: under a second of the grader's one core
SLOW_DTYPE_COST = 16  # NumPy's float16 and integer products run without BLAS, this many times slower


def reference_function(exercise_id: str):
    exercise = EXERCISES[exercise_id]
    return getattr(importlib.import_module(exercise.python_module), exercise.function)


def check_cost(request: dict) -> None:
    """ValueError, naming the sizes, for a request that would cost more than a check needs. Its arrays, shapes
    (tuples of integers) and integers n (as the shape (n,)), aligned from the right as NumPy broadcasts them, give
    the largest result it can make: at most MAX_ARRAY_ELEMENTS elements, and those elements times the largest of
    the last two sizes (a matrix product's inner size) at most MAX_WORK multiply-adds (a 16th for float16, ints)."""
    shapes, slow = [], False
    stack = [request.get("args"), request.get("upstream")]
    while stack:
        value = stack.pop()
        if isinstance(value, int) and not isinstance(value, bool):
            if abs(value) > MAX_INTEGER:
                raise ValueError(f"the grader computes other exercises' functions for sizes up to {MAX_INTEGER}, "
                                 f"got {value}")
            shapes.append((abs(value),))
        elif isinstance(value, np.ndarray):
            shapes.append(value.shape)
            slow |= value.dtype.kind != "f" or value.dtype.itemsize < 4
        elif isinstance(value, (tuple, list)):
            if value and all(isinstance(item, int) and not isinstance(item, bool) for item in value):
                shapes.append(tuple(abs(item) for item in value))
            stack += value
        elif isinstance(value, dict):  # (a tensor's place in the graph is not a size)
            stack += [item for key, item in value.items() if key != "tensor_node"]
    sizes = [max((shape[-1 - axis] for shape in shapes if len(shape) > axis), default=1)
             for axis in range(max(map(len, shapes), default=0))]  # sizes[0]: the last axis
    elements = math.prod(sizes)
    inner = max(sizes[:2]) if any(len(shape) >= 2 for shape in shapes) else 1
    work = elements * inner * (SLOW_DTYPE_COST if slow else 1)
    if elements > MAX_ARRAY_ELEMENTS or work > MAX_WORK:
        raise ValueError(f"the grader computes other exercises' functions for at most {MAX_ARRAY_ELEMENTS:,} "
                         f"elements and {MAX_WORK:,} multiply-adds; arrays of shapes "
                         f"{', '.join(map(str, sorted(set(shapes), key=len)[-4:]))} broadcast to "
                         f"{elements:,} elements and cost {work:,}")


def answer(exercise_id: str, request: dict) -> dict:
    """The reply to one stand-in's request: {"value"}, {"tensor"}, {"nodes"}, or {"gradients"} for a backward."""
    check_cost(request)
    function, args = reference_function(exercise_id), request.get("args")
    if not isinstance(args, list) or len(args) > len(inspect.signature(function).parameters):
        raise TypeError(f"{function.__name__}: the stand-in sent arguments that do not fit")
    if "upstream" in request:  # a backward pass: each Tensor argument a leaf of its own
        leaves = []

        def leaf(node: int, array: np.ndarray) -> Tensor:
            leaves.append(Tensor(array, requires_grad=True))
            return leaves[-1]

        function(*_with_tensors(args, leaf)).backward(np.asarray(request["upstream"]))
        return {"gradients": [np.zeros_like(leaf.data) if leaf.grad is None else np.asarray(leaf.grad)
                              for leaf in leaves]}
    data = {}
    _with_tensors(args, lambda node, array: data.setdefault(node, array))
    nodes = rebuild(request.get("graph") or {}, data)
    result = function(*_with_tensors(args, lambda node, array: nodes[node]))
    if isinstance(result, Tensor):
        return {"tensor": np.asarray(result.data)}
    if isinstance(result, list) and result and all(isinstance(item, Tensor) for item in result):
        place = {id(node): index for index, node in enumerate(nodes)}
        return {"nodes": [place.get(id(item), -1) for item in result]}
    return {"value": result}


def _with_tensors(value, tensor_for):
    """The arguments with each {"tensor_node": i, "data": array} replaced by `tensor_for(i, array)`."""
    if isinstance(value, dict) and set(value) == {"tensor_node", "data"}:
        return tensor_for(int(value["tensor_node"]), np.asarray(value["data"]))
    if isinstance(value, (list, tuple)):
        items = [_with_tensors(item, tensor_for) for item in value]
        return tuple(items) if isinstance(value, tuple) else items
    return value


def rebuild(graph: dict, data: dict[int, np.ndarray]) -> list[Tensor]:
    """Graph nodes with the parents and requires_grad flags sent, each built after its parents (node i holds
    data[i], or a 0-d zero); ValueError for a graph that is malformed, too large or cyclic."""
    parents, requires_grad = graph.get("parents", []), graph.get("requires_grad", [])
    count = len(parents) if isinstance(parents, list) and isinstance(requires_grad, list) else -1
    if not 0 <= count <= MAX_GRAPH_NODES or len(requires_grad) != count:
        raise ValueError("the graph sent is malformed or larger than the limit")
    if not all(isinstance(inputs, list) and all(isinstance(p, int) and 0 <= p < count for p in inputs)
               for inputs in parents) or not all(isinstance(node, int) and 0 <= node < count for node in data):
        raise ValueError("the graph sent names a parent or an argument that is not one of its nodes")
    built, waiting, children = [None] * count, [len(set(inputs)) for inputs in parents], [[] for _ in parents]
    for node, inputs in enumerate(parents):
        for parent in set(inputs):
            children[parent].append(node)
    ready = [node for node in range(count) if not waiting[node]]
    while ready:  # a node is built once every parent is
        node = ready.pop()
        value, inputs = data.get(node, np.zeros(())), parents[node]
        if inputs:  # an operation's output (its rule never runs here)
            built[node] = Tensor.from_op(value, tuple(built[p] for p in inputs),
                                         lambda grad, n=len(inputs): (np.zeros(()),) * n, "node")
        else:
            built[node] = Tensor(value, requires_grad=bool(requires_grad[node]))
        for child in children[node]:
            waiting[child] -= 1
            if not waiting[child]:
                ready.append(child)
    if any(node is None for node in built):
        raise ValueError("the graph sent has a cycle: a tensor cannot depend on itself")
    return built
