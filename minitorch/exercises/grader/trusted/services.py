"""The grader's answers to the stand-ins (chapter 11, "How grading works").

While exercise X is graded, the student's worker asks, through a stand-in (`grader.sandboxed.stand_in`),
for the result of another exercise's function. `answer` computes it here, in the grader's check process, with
the grader's own library, from the data of the request alone; the pool (`student_code.WorkerPool`) has
already checked that X needs that exercise. Tensors arrive as arrays with the shape of their graph, and are
rebuilt as graph nodes that hold no computation of the student's.

The grader's work for a student is bounded too: every request is costed from the shapes it declares and refused
before anything is allocated if it would cost more than a check needs (`check_cost`), and the time it takes
counts against the student's own test time and budget (the pool serves it before the test's deadline).
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


MAX_INTEGER = 2048  # an integer argument (a length, a width): its square is the channel's largest array
MAX_WORK = 1 << 28  # multiply-adds one request may cost: under a second of the grader's one core
SLOW_DTYPE_COST = 16  # NumPy's float16 and integer products run without BLAS, this many times slower


def check_cost(request: dict) -> None:
    """Refuse, before anything is allocated, a request that would cost the grader more than a check needs,
    judged from the shapes it declares: every array (tensor data, the upstream gradient), every tuple of integers
    (a shape) and every integer n (a length, as the shape (n,)). Aligned from the right as NumPy broadcasts them,
    the largest size at each axis makes the largest result any function of them can broadcast to: at most
    channel.MAX_ARRAY_ELEMENTS elements. Those elements times the largest of the last two axes (the inner size
    of a matrix product) is what one request may cost: at most MAX_WORK, or a sixteenth of it for float16 and
    integer arrays. ValueError, naming the sizes, if not."""
    shapes, slow = [], [False]

    def visit(value) -> None:
        if isinstance(value, bool) or value is None:
            return
        if isinstance(value, int):
            if abs(value) > MAX_INTEGER:
                raise ValueError(f"the grader computes other exercises' functions for sizes up to {MAX_INTEGER}, "
                                 f"got {value}")
            shapes.append((abs(value),))
        elif isinstance(value, np.ndarray):
            shapes.append(value.shape)
            slow[0] |= value.dtype.kind != "f" or value.dtype.itemsize < 4
        elif isinstance(value, (tuple, list)):
            if value and all(isinstance(item, int) and not isinstance(item, bool) for item in value):
                shapes.append(tuple(abs(item) for item in value))
            for item in value:
                visit(item)
        elif isinstance(value, dict):  # (a tensor's place in the graph is not a size)
            for key, item in value.items():
                visit(item if key != "tensor_node" else None)

    visit([request.get("args"), request.get("upstream")])
    sizes = [max((shape[-1 - axis] for shape in shapes if len(shape) > axis), default=1)
             for axis in range(max(map(len, shapes), default=0))]  # sizes[0]: the last axis
    elements = math.prod(sizes)
    work = elements * max(sizes[:2] if any(len(shape) >= 2 for shape in shapes) else [1]) * \
        (SLOW_DTYPE_COST if slow[0] else 1)
    if elements > MAX_ARRAY_ELEMENTS or work > MAX_WORK:
        raise ValueError(f"the grader computes other exercises' functions for at most {MAX_ARRAY_ELEMENTS:,} "
                         f"elements and {MAX_WORK:,} multiply-adds; arrays of shapes "
                         f"{', '.join(map(str, sorted(set(shapes), key=len)[-4:]))} broadcast to "
                         f"{elements:,} elements and cost {work:,}")


def answer(exercise_id: str, request: dict) -> dict:
    """The reply to one stand-in's request: {"value"}, {"tensor"}, {"nodes"} or, for a backward pass,
    {"gradients"}."""
    check_cost(request)
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
