"""The stand-ins: while exercise X is graded, every other exercise's function asks the grader (chapter 11).

A worker grading X runs the student's function X and, for every other exercise, a stand-in generated from the
table (`stand_in_body`): the function's body becomes ``return ask_grader(ID, <its arguments>)``, one shape for
all. The grader computes the answer with its own library (`grader.trusted.services`) and sends it back,
so a bug, a stub or a hang in the student's 2.4 can never cost 3.2 its points. The grader answers only for the
exercises that X needs, as the table says; any other request is refused and the copy flagged.

What crosses is data (`minitorch.exercises.grader.channel`). A Tensor argument travels as its array and its place in
the graph of the arguments (parents and requires_grad of each node, no other data); a Tensor answer comes back
as an array and becomes a graph node whose backward asks the grader for the vector-Jacobian product; an answer
made of the arguments' graph nodes (a topological order) comes back as their places.
"""

from __future__ import annotations

import numpy as np

CONNECTION = None  # in a worker's child: its socket to the grader (worker.py sets it)
MAX_GRAPH_NODES = 10_000  # a graph sent to the grader may have at most this many nodes


def stand_in_body(exercise, parameters: list[str]) -> str:
    """The body of exercise `exercise`'s function in a worker's library: it asks the grader."""
    arguments = "".join(f", {name}" for name in parameters)
    return (f"from minitorch.exercises.grader.sandboxed.stand_in import ask_grader\n"
            f"return ask_grader({exercise.id!r}{arguments})\n")


def ask_grader(exercise_id: str, *args):
    """The grader's answer for another exercise's function, called with `args`."""
    from minitorch.exercises.grader import channel

    if CONNECTION is None:
        raise RuntimeError(f"exercise {exercise_id}'s stand-in runs only inside a grading worker")
    nodes = _graph_nodes(args)
    request = {"service": exercise_id, "args": encode_arguments(args, nodes), "graph": graph_of(nodes)}
    reply = _ask(channel, request)
    if "nodes" in reply:
        return [nodes[int(position)] for position in reply["nodes"]]
    if "tensor" in reply:
        return _tensor_answer(channel, request, reply["tensor"], nodes, exercise_id)
    return reply["value"]


def _ask(channel, request: dict) -> dict:
    channel.send(CONNECTION, request)
    reply = channel.receive(CONNECTION)
    if not isinstance(reply, dict):
        raise RuntimeError("the grader's answer is not a message")
    if "error" in reply:
        raise channel.rebuild_error(reply["error"])
    return reply


def _tensor_answer(channel, request: dict, data, nodes: list, exercise_id: str):
    """A graph node holding the grader's answer; its backward asks the grader for ∂ℓ/∂ each Tensor argument."""
    from minitorch.tensor import Tensor

    inputs = request_tensors(request, nodes)

    def backward(grad):
        reply = _ask(channel, {**request, "upstream": np.asarray(grad)})
        return tuple(reply["gradients"])

    return Tensor.from_op(np.asarray(data), tuple(inputs), backward, f"exercise {exercise_id}")


def request_tensors(request: dict, nodes: list) -> list:
    """The Tensor arguments of a request, in order (the inputs of the answer's graph node)."""
    found = []

    def visit(value):
        if isinstance(value, dict) and "tensor_node" in value:
            found.append(nodes[value["tensor_node"]])
        elif isinstance(value, (list, tuple)):
            for item in value:
                visit(item)
    visit(request["args"])
    return found


def _graph_nodes(args) -> list:
    """Every tensor the arguments depend on, the arguments' own tensors first."""
    from minitorch.tensor import Tensor

    nodes, seen = [], set()

    def add(tensor):
        if id(tensor) not in seen:
            seen.add(id(tensor))
            nodes.append(tensor)

    def visit(value):
        if isinstance(value, Tensor):
            add(value)
        elif isinstance(value, (list, tuple)):
            for item in value:
                visit(item)
    visit(args)
    for node in nodes:  # grows while it is read: breadth first over the parents
        for parent in node.parents:
            add(parent)
        if len(nodes) > MAX_GRAPH_NODES:
            raise ValueError(f"a graph of more than {MAX_GRAPH_NODES:,} tensors cannot be sent to the grader")
    return nodes


def encode_arguments(args, nodes: list):
    """The arguments as data: a Tensor as {"tensor_node": its place, "data": its array}."""
    from minitorch.tensor import Tensor

    place = {id(node): index for index, node in enumerate(nodes)}

    def encode(value):
        if isinstance(value, Tensor):
            return {"tensor_node": place.get(id(value), -1), "data": value.data}
        if isinstance(value, tuple):
            return tuple(encode(item) for item in value)
        if isinstance(value, list):
            return [encode(item) for item in value]
        return value
    return encode(list(args))


def graph_of(nodes: list) -> dict:
    place = {id(node): index for index, node in enumerate(nodes)}
    return {"parents": [[place[id(parent)] for parent in node.parents] for node in nodes],
            "requires_grad": [bool(node.requires_grad) for node in nodes]}
