"""Hidden tests of exercises 1.1 (topological_order) and 2.1 (sum_to_shape), chapters 01 and 02: a student edition
never holds this file (`registry.HIDDEN_TESTS`); the class grader and the Gradescope bundle run it, with the grader's
seed, and it carries the exercises' hidden share of their points.

Graphs and shapes the public tests (tests/test_tensor.py) do not use, compared with references written here, in
NumPy and plain Python: this file imports nothing of the library, so an instructor can run it on a student's copy by
hand (``MINITORCH_ROOT=copy python -m pytest tests/hidden``) and the answers it compares with stay the instructor's.
"""

from __future__ import annotations

import numpy as np
import pytest

from test_tensor import parents_of, requires_grad  # (tests/test_tensor.py: the graph's helpers, no answer)

# ----------------------------------------------------------------------
# exercise 1.1: topological_order
#
# A graph goes in as data (probes.topological_order): {"op": "leaf", "requires_grad": bool}, {"op": "add" | "mul",
# "inputs": [i, j]}, {"op": "exp" | "sum", "inputs": [i]}, or {"op": "frozen", "inputs": [i]} (computed under
# no_grad: a constant with no parents). The order comes back as node positions.

BINARY, UNARY = ("add", "mul"), ("exp", "sum", "frozen")


def reference_nodes(nodes: list[dict], root: int) -> set[int]:
    """The nodes a topological order of `root` lists: `root` and every node that leads to it through parents that
    require grad."""
    flags, found, stack = requires_grad(nodes), {root}, [root]
    while stack:
        for parent in parents_of(nodes, stack.pop()):
            if flags[parent] and parent not in found:
                found.add(parent)
                stack.append(parent)
    return found


def random_graph(rng, size: int, leaves: int, constants: int) -> list[dict]:
    """A random graph of every kind of node; later nodes draw their inputs mostly from recent ones, so that paths
    are long, and nodes are reused."""
    nodes = [{"op": "leaf", "requires_grad": True} for _ in range(leaves)]
    nodes += [{"op": "leaf", "requires_grad": False} for _ in range(constants)]
    rng.shuffle(nodes)
    while len(nodes) < size:
        recent = max(0, len(nodes) - 8)
        pick = [int(rng.integers(recent, len(nodes))) if rng.random() < 0.7 else int(rng.integers(0, len(nodes)))
                for _ in range(2)]
        if rng.random() < 0.7:
            nodes.append({"op": BINARY[int(rng.integers(0, 2))], "inputs": pick})
        else:
            nodes.append({"op": UNARY[int(rng.integers(0, 3))], "inputs": pick[:1]})
    return nodes


def check_order(order, nodes: list[dict], root: int) -> None:
    __tracebackhide__ = True
    strangers = [position for position in order if not 0 <= position < len(nodes)]
    assert not strangers, f"{len(strangers)} returned tensor(s) are not nodes of the graph"
    assert len(order) == len(set(order)), f"{len(order) - len(set(order))} node(s) are listed more than once"
    expected = reference_nodes(nodes, root)
    assert set(order) == expected, (f"the order lists {len(set(order) - expected)} node(s) it should not and misses "
                                    f"{len(expected - set(order))} that lead to the root")
    position = {node: index for index, node in enumerate(order)}
    late = [node for node in order for parent in parents_of(nodes, node) if parent in position
            and position[parent] > position[node]]
    assert not late, f"{len(late)} node(s) come before one of their parents"
    assert order[-1] == root, "the root should come last"


@pytest.mark.exercise("1.1")
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the probe's tensors hold ones: long chains of exp overflow
@pytest.mark.parametrize("size,leaves,constants", [(17, 3, 1), (63, 5, 3), (150, 8, 4)], ids=str)
def test_topological_order_of_random_graphs_of_every_kind_of_node(size, leaves, constants, exercise_seed, student):
    rng = np.random.default_rng([exercise_seed, size])
    for _ in range(3):
        nodes = random_graph(rng, size, leaves, constants)
        flags = requires_grad(nodes)
        roots = [len(nodes) - 1] + [node for node in range(len(nodes) // 2, len(nodes) - 1) if flags[node]][-2:]
        for root in roots:  # the last node, and nodes in the middle: what comes after the root is not its past
            if flags[root]:
                check_order(student.topological_order(nodes, root), nodes, root)


@pytest.mark.exercise("1.1")
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_topological_order_of_a_long_chain_of_diamonds(exercise_seed, student):
    """Each step of 3000 computes exp and a product of the last node and joins them: 9,001 nodes, every path long."""
    steps = 3000 + int(np.random.default_rng(exercise_seed).integers(0, 100))
    nodes, last = [{"op": "leaf", "requires_grad": True}], 0
    for _ in range(steps):
        nodes += [{"op": "exp", "inputs": [last]}, {"op": "mul", "inputs": [last, last]}]
        nodes.append({"op": "add", "inputs": [len(nodes) - 2, len(nodes) - 1]})
        last = len(nodes) - 1
    try:
        order = student.topological_order(nodes, last)
    except RecursionError:
        pytest.fail("topological_order hit Python's recursion limit on a long graph")
    check_order(order, nodes, last)


# ----------------------------------------------------------------------
# exercise 2.1: sum_to_shape (through unbroadcast)

BROADCASTS = [  # (gradient shape, the input's shape before broadcasting): none of the public tests'
    ((4, 5), (5,)),
    ((4, 5), (4, 1)),
    ((6,), ()),
    ((4, 3), (1,)),
    ((3, 2, 5), (2, 1)),
    ((2, 1, 3), (1, 1, 1)),
    ((2, 3, 4, 2), (3, 1, 2)),
    ((3, 1, 5, 2), (1, 5, 1)),
    ((2, 3, 2, 2), (2, 1, 2, 1)),
]


def reference_sum_to_shape(grad: np.ndarray, shape: tuple) -> np.ndarray:
    """Sum over the leading axes broadcasting added, then over the axes where `shape` has size 1."""
    folded = grad.sum(axis=tuple(range(grad.ndim - len(shape))))
    ones = tuple(axis for axis, size in enumerate(shape) if size == 1)
    return folded.sum(axis=ones, keepdims=True) if ones else folded


# First among 2.1's tests (the grader runs an exercise's tests in file order, this file before the public ones): an
# answer that measures each element's sum by running broadcasting once per element does not finish within the
# grader's timeout on these, and after two timed-out tests an exercise's other tests fail at once.
LARGE_BROADCASTS = [((3, 600, 800), (600, 800)), ((2, 640, 3, 500), (640, 1, 500))]


@pytest.mark.exercise("2.1")
@pytest.mark.parametrize("grad_shape,shape", LARGE_BROADCASTS, ids=str)
def test_sum_to_shape_folds_a_gradient_of_over_a_million_numbers(grad_shape, shape, exercise_seed, student):
    """sum_to_shape folds a gradient of over a million numbers to over 300,000, which a few sums do at once."""
    check_folding(grad_shape, shape, exercise_seed, student)


@pytest.mark.exercise("2.1")
@pytest.mark.parametrize("grad_shape,shape", BROADCASTS, ids=str)
def test_sum_to_shape_adds_up_the_gradients_of_every_copy(grad_shape, shape, exercise_seed, student):
    check_folding(grad_shape, shape, exercise_seed, student)


def check_folding(grad_shape, shape, exercise_seed, student) -> None:
    """The student's sum_to_shape of a seeded gradient of `grad_shape`, folded to `shape`, against the reference."""
    grad = np.random.default_rng([exercise_seed, len(grad_shape), int(np.prod(grad_shape))]).normal(size=grad_shape)
    result = student.unbroadcast(grad, shape, "test")["result"]
    assert np.shape(result) == shape, f"folding a {grad_shape} gradient to {shape} gave shape {np.shape(result)}"
    np.testing.assert_allclose(result, reference_sum_to_shape(grad, shape), rtol=1e-10, atol=1e-12,
                               err_msg=f"folding a {grad_shape} gradient to {shape} gave other values")


@pytest.mark.exercise("2.1", requires_values=True)  # the gradient returned unchanged passes it
def test_sum_to_shape_leaves_the_incoming_gradient_alone(exercise_seed, student):
    rng = np.random.default_rng(exercise_seed)
    for grad_shape, shape in BROADCASTS[::2]:
        grad = rng.normal(size=grad_shape)
        after = student.unbroadcast(grad, shape, "test")["grad_after"]
        np.testing.assert_array_equal(after, grad, err_msg="sum_to_shape changed the incoming gradient in place")
