"""The stand-ins: while exercise X is graded, every other exercise's function asks the grader (chapter 11).

In a worker's library each exercise's body is ``return ask_grader(ID, <its arguments>)``; the grader answers with
its own library, and only for the exercises X needs. A Tensor argument travels as its array and its place in the
graph of the arguments; a Tensor answer comes back as an array, in a graph node whose backward asks the grader.
"""

from __future__ import annotations

import numpy as np

CONNECTION = None  # in a worker's child: its socket to the grader (worker.py sets it)
MAX_GRAPH_NODES = 10_000  # a graph sent to the grader may have at most this many nodes


def stand_in_body(exercise, parameters: list[str]) -> str:
    """The body of the exercise's function in a worker's library."""
    arguments = "".join(f", {name}" for name in parameters)
    return (f"from minitorch.exercises.grader.sandboxed.stand_in import ask_grader\n"
            f"return ask_grader({exercise.id!r}{arguments})\n")


def ask_grader(exercise_id: str, *args):
    """The grader's answer for another exercise's function, called with `args`."""
    from minitorch.tensor import Tensor

    if CONNECTION is None:
        raise RuntimeError(f"exercise {exercise_id}'s stand-in runs only inside a grading worker")
    nodes, tensors = _graph_nodes(args), []
    place = {id(node): index for index, node in enumerate(nodes)}

    def as_data(value):  # a Tensor as {"tensor_node": its place, "data": its array}
        if isinstance(value, Tensor):
            tensors.append(value)
            return {"tensor_node": place[id(value)], "data": value.data}
        if not isinstance(value, (list, tuple)):
            return value
        items = [as_data(item) for item in value]
        return tuple(items) if isinstance(value, tuple) else items

    request = {"service": exercise_id, "args": as_data(list(args)),
               "graph": {"parents": [[place[id(parent)] for parent in node.parents] for node in nodes],
                         "requires_grad": [bool(node.requires_grad) for node in nodes]}}
    reply = _ask(request)
    if "nodes" in reply:  # an answer made of the arguments' graph nodes (a topological order)
        return [nodes[int(position)] for position in reply["nodes"]]
    if "tensor" not in reply:
        return reply["value"]

    def backward(grad):  # ∂ℓ/∂ each Tensor argument, from the grader
        return tuple(_ask({**request, "upstream": np.asarray(grad)})["gradients"])

    return Tensor.from_op(np.asarray(reply["tensor"]), tuple(tensors), backward, f"exercise {exercise_id}")


def _ask(request: dict) -> dict:
    from minitorch.exercises.grader import channel

    channel.send(CONNECTION, request)
    reply = channel.receive(CONNECTION)
    if not isinstance(reply, dict):
        raise RuntimeError("the grader's answer is not a message")
    if "error" in reply:
        raise channel.rebuild_error(reply["error"])
    return reply


def _graph_nodes(args) -> list:
    """Every tensor the arguments depend on: their own first, then their parents, breadth first."""
    from minitorch.tensor import Tensor

    nodes, seen = [], set()

    def add(value):
        if isinstance(value, Tensor) and id(value) not in seen:
            seen.add(id(value))
            nodes.append(value)
        elif isinstance(value, (list, tuple)):
            for item in value:
                add(item)

    add(args)
    for node in nodes:  # (the list grows while it is read)
        add(node.parents)
        if len(nodes) > MAX_GRAPH_NODES:
            raise ValueError(f"a graph of more than {MAX_GRAPH_NODES:,} tensors cannot be sent to the grader")
    return nodes
