"""While one exercise is graded, every other exercise is the grader's (chapter 00, "How grading works").

A worker grading exercise X holds the student's code in X's region only. Every other region holds a
*stand-in*: a few lines that send that region's inputs to the grader, which computes the region's
result with its own reference library and sends it back (`SERVICES`). So a test of 3.2 (softmax
attention) runs the student's attention on the grader's softmax, and a bug, a stub or a hang in the
student's 2.3 can never cost 3.2 its points. The grader never answers for X itself.

`STAND_INS` holds each region's stand-in, written with the names its region sees (the function's
arguments and locals); `SERVICES` holds what the grader computes for it. A stand-in reveals nothing:
it only forwards data. Both run on data alone: arrays, numbers, lists (`minitorch.exercises.channel`).
"""

from __future__ import annotations

import numpy as np

import minitorch
from minitorch import Tensor
from minitorch.exercises import probes
from minitorch.optim import Adam
from minitorch.nn import Parameter
from minitorch.paper import attention, metrics, task, theory

_ASK = "from minitorch.exercises.channel import ask_grader\n"

STAND_INS = {
    "1.1": _ASK + "return ask_grader('1.1', grad, a.data, b.data)",
    "1.2": _ASK + """\
nodes, index = [root], {id(root): 0}
for node in nodes:  # every tensor the root depends on; the grader puts them in order
    for parent in node.parents:
        if id(parent) not in index:
            index[id(parent)] = len(nodes)
            nodes.append(parent)
order = ask_grader('1.2', [[index[id(parent)] for parent in node.parents] for node in nodes],
                   [bool(node.requires_grad) for node in nodes])
return [nodes[position] for position in order]""",
    "1.3": _ASK + "return ask_grader('1.3', grad, a.data)",
    "1.4": _ASK + "return ask_grader('1.4', grad, a.data)",
    "2.1": _ASK + "grad = ask_grader('2.1', grad, tuple(shape), op)",
    "2.2": _ASK + "return ask_grader('2.2', grad, a.data, b.data)",
    "2.3": _ASK + """\
weights = ask_grader('2.3', 'forward', scores.data, axis)

def backward(grad):
    return (ask_grader('2.3', 'backward', scores.data, axis, grad),)""",
    "2.4": _ASK + "return ask_grader('2.4', grad, a.data, axes, keepdims)",
    "2.5": _ASK + """\
new_data, new_m, new_v = ask_grader('2.5', parameter.data, parameter.grad, m, v, t, self.lr, beta1, beta2,
                                    self.eps, self.weight_decay)
m[...], v[...] = new_m, new_v
parameter.data[...] = new_data""",
    "3.1": _ASK + "return ask_grader('3.1', length)",
    "3.2": _ASK + """\
return Tensor.from_op(ask_grader('3.2', 'forward', scores.data, future), (scores,),
                      lambda grad: (ask_grader('3.2', 'backward', scores.data, future, grad),), 'softmax_attention')""",
    "3.3": _ASK + """\
return Tensor.from_op(ask_grader('3.3', 'forward', scores.data, future), (scores,),
                      lambda grad: (ask_grader('3.3', 'backward', scores.data, future, grad),), 'relu_attention')""",
    "3.4": _ASK + "return ask_grader('3.4', np.asarray(weights), np.asarray(triggers))",
    "3.5": _ASK + "return ask_grader('3.5', np.asarray(weights))",
    "4.1": _ASK + "return ask_grader('4.1', x, triggers, residual)",
    "5.1": _ASK + "model.load_state_dict(ask_grader('5.1', scale, width, u))\nreturn model",
    "6.1": _ASK + "model.load_state_dict(ask_grader('6.1', width, u))\nreturn model",
    "9.1": _ASK + "return ask_grader('9.1', [np.asarray(weights) for weights in per_layer_weights], key, threshold)",
}


# ----------------------------------------------------------------------
# what the grader computes for each stand-in, with its reference library


def _topological_order(parents: list[list[int]], requires_grad: list[bool]) -> list[int]:
    """The reference order of a graph given as each node's parents (node 0 is the root)."""
    built: dict[int, Tensor] = {}
    stack, opened = [(0, False)], set()
    while stack:  # build parents before children
        node, parents_built = stack.pop()
        if node in built:
            continue
        if not parents_built:
            if node in opened:
                raise ValueError("the graph sent has a cycle: a tensor cannot depend on itself")
            opened.add(node)
            stack.append((node, True))
            stack += [(parent, False) for parent in parents[node] if parent not in built]
            continue
        inputs = tuple(built[parent] for parent in parents[node])
        if inputs:
            built[node] = Tensor.from_op(np.zeros(()), inputs, lambda grad, count=len(inputs): (grad,) * count, "node")
        else:
            built[node] = Tensor(np.zeros(()), requires_grad=bool(requires_grad[node]))
    position = {id(tensor): node for node, tensor in built.items()}
    return [position[id(tensor)] for tensor in minitorch.topological_order(built[0])]


def _softmax(part: str, scores, axis, grad=None):
    if part == "forward":
        return probes.softmax(scores, axis)
    return probes.local_gradients("softmax", [scores], grad, axis=axis)[0]


def _attention(expression: str):
    def service(part: str, scores, future, grad=None):
        if part == "forward":
            return probes.forward(expression, [scores], future=future)
        return probes.gradients(expression, [scores], grad, future=future)["gradients"][0]
    return service


def _adam_update(data, grad, m, v, t, lr, beta1, beta2, eps, weight_decay):
    """One Adam update of one parameter whose moments are m, v after t - 1 updates."""
    parameter = Parameter(np.array(data))
    optimizer = Adam([parameter], lr=lr, betas=(beta1, beta2), eps=eps, weight_decay=weight_decay)
    optimizer.first_moments[0][...], optimizer.second_moments[0][...] = m, v
    optimizer.step_counts[0] = int(t) - 1
    parameter.grad = np.array(grad)
    optimizer.step()
    return parameter.data, optimizer.first_moments[0], optimizer.second_moments[0]


SERVICES = {
    "1.1": lambda grad, a, b: probes.local_gradients("mul", [a, b], grad),
    "1.2": _topological_order,
    "1.3": lambda grad, a: probes.local_gradients("exp", [a], grad),
    "1.4": lambda grad, a: probes.local_gradients("log", [a], grad),
    "2.1": lambda grad, shape, op: np.asarray(minitorch.unbroadcast(np.array(grad), tuple(shape), op)),
    "2.2": lambda grad, a, b: probes.local_gradients("matmul", [a, b], grad),
    "2.3": _softmax,
    "2.4": lambda grad, a, axes, keepdims: probes.local_gradients("sum", [a], grad, axis=tuple(axes),
                                                                  keepdims=keepdims),
    "2.5": _adam_update,
    "3.1": lambda length: attention.causal_mask(int(length)),
    "3.2": _attention("softmax_attention"),
    "3.3": _attention("relu_attention"),
    "3.4": lambda weights, triggers: metrics.bos_mass_at_non_trigger_rows(weights, triggers),
    "3.5": lambda weights: metrics.gu_sink_scores(weights),
    "4.1": lambda x, triggers, residual: task.make_targets(x, triggers, residual=residual),
    "5.1": lambda scale, width, u: theory.softmax_construction(scale, width, u).state_dict(),
    "6.1": lambda width, u: theory.relu_construction(width, u).state_dict(),
    "9.1": lambda per_layer_weights, key, threshold: metrics.sink_share(per_layer_weights, key=key,
                                                                         threshold=threshold),
}
