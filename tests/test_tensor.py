"""Specification of minitorch.tensor: Tensor, reverse mode, topological_order, unbroadcast, no_grad.

Chapters 01 and 02. Graded here: exercise 1.1 (topological_order) and 2.1 (sum_to_shape, reached through
unbroadcast), both tested on their own, without going through `Tensor.backward`, and only through the
``student`` fixture (minitorch/exercises/grader/sandboxed/probes.py): graphs go in as descriptions, orders come
back as node positions. The tests check properties an answer must have (every node after its parents, exactly
the nodes that lead to the root; the gradient of broadcasting by finite differences) and a few cases worked out
by hand, never a second answer to compare with; the hidden tests (tests/hidden/) grade other graphs and shapes.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import minitorch
from minitorch import Tensor, no_grad, unbroadcast
from minitorch.gradcheck import compare_with_finite_differences


def leaf(values, dtype=None) -> Tensor:
    return Tensor(np.array(values, dtype=dtype), requires_grad=True, dtype=dtype)


# ----------------------------------------------------------------------
# construction and dtypes


def test_integer_and_boolean_data_become_float64():
    for data in ([1, 2, 3], np.array([True, False])):
        assert Tensor(data).dtype == np.float64, f"Tensor({data!r}) should hold float64 data"


def test_float32_data_stays_float32():
    assert Tensor(np.ones(3, dtype=np.float32)).dtype == np.float32, "float32 data must not be upcast"


def test_a_non_float_dtype_is_refused():
    with pytest.raises(TypeError, match="float32 or float64"):
        Tensor([1, 2], dtype=np.int64)


@pytest.mark.parametrize("make", [
    lambda x: x.sum(),
    lambda x: x.max(),
    lambda x: x[0, 1],
    lambda x: x.mean(axis=(0, 1)),
], ids=["sum", "max", "int-index", "mean"])
def test_every_result_holds_an_ndarray_even_when_it_is_a_single_number(make):
    out = make(Tensor(np.arange(6.0).reshape(2, 3), requires_grad=True))
    assert isinstance(out.data, np.ndarray), (
        f"a one-number result should still hold a 0-d ndarray, got {type(out.data).__name__}")



@pytest.mark.parametrize("shape,requires_grad,shown", [
    ((0, 3), False, "Tensor([], shape=(0, 3))"),
    ((2, 0), False, "Tensor([], shape=(2, 0))"),
    ((0, 3), True, "Tensor([], shape=(0, 3), requires_grad=True)"),
    ((0,), False, "Tensor([])"),
])
def test_the_repr_of_an_empty_tensor_shows_its_shape_as_numpys_does(shape, requires_grad, shown):
    shown_by_repr = repr(Tensor(np.zeros(shape), requires_grad=requires_grad))
    assert shown_by_repr == shown, f"an empty tensor of shape {shape} reads {shown_by_repr}, expected {shown}"

# ----------------------------------------------------------------------
# exercise 1.1: topological_order
#
# A graph is described as data, one node per entry (minitorch.exercises.grader.sandboxed.probes.topological_order):
# {"op": "leaf", "requires_grad": bool}, {"op": "add" | "mul", "inputs": [i, j]}, {"op": "exp" | "sum",
# "inputs": [i]}, or {"op": "frozen", "inputs": [i]} (x * 3 computed under no_grad: a constant recorded
# nowhere, so it has no parents). The student's topological_order(root) comes back as node positions.


def leaf_node(requires_grad: bool = True) -> dict:
    return {"op": "leaf", "requires_grad": requires_grad}


def parents_of(nodes: list[dict], position: int) -> list[int]:
    """The parents a node's tensor records (a frozen node records none)."""
    return [] if nodes[position]["op"] == "frozen" else list(nodes[position].get("inputs", []))


def requires_grad(nodes: list[dict]) -> list[bool]:
    """Whether each node's tensor requires grad: a leaf as told, an operation if one of its parents does."""
    flags: list[bool] = []
    for position, node in enumerate(nodes):
        flags.append(node["requires_grad"] if node["op"] == "leaf" else
                     any(flags[parent] for parent in parents_of(nodes, position)))
    return flags


def diamond() -> list[dict]:
    # x = leaf; left, right = x * 2.0, x.exp(); (left * right).sum()
    return [leaf_node(), leaf_node(False), {"op": "mul", "inputs": [0, 1]}, {"op": "exp", "inputs": [0]},
            {"op": "mul", "inputs": [2, 3]}, {"op": "sum", "inputs": [4]}]


def reused_subexpression() -> list[dict]:
    # h = x * y; (h * h + h - x).sum(), with h - x written as h + (-1 * x)
    return [leaf_node(), leaf_node(), {"op": "mul", "inputs": [0, 1]}, {"op": "mul", "inputs": [2, 2]},
            {"op": "add", "inputs": [3, 2]}, leaf_node(False), {"op": "mul", "inputs": [5, 0]},
            {"op": "add", "inputs": [4, 6]}, {"op": "sum", "inputs": [7]}]


def graph_with_constants_and_a_no_grad_branch() -> list[dict]:
    # (x * Tensor([5, 6]) + frozen).sum(), frozen = x * 3 computed under no_grad
    return [leaf_node(), leaf_node(False), {"op": "frozen", "inputs": [0]}, {"op": "mul", "inputs": [0, 1]},
            {"op": "add", "inputs": [3, 2]}, {"op": "sum", "inputs": [4]}]


def random_graph(seed: int, size: int = 40) -> list[dict]:
    """A random DAG of add/mul nodes over 4 leaves and 2 constants; nodes may be used twice."""
    rng = np.random.default_rng(seed)
    nodes = [leaf_node() for _ in range(4)] + [leaf_node(False) for _ in range(2)]
    for _ in range(size):
        first, second = rng.integers(0, len(nodes), size=2)
        nodes.append({"op": "add" if rng.random() < 0.5 else "mul", "inputs": [int(first), int(second)]})
    root, last = len(nodes) - 1, len(nodes) - 1
    for node in range(last - 5, last):  # root = root + node, for each of the 5 nodes before the last
        nodes.append({"op": "add", "inputs": [root, node]})
        root = len(nodes) - 1
    return nodes + [{"op": "sum", "inputs": [root]}]


GRAPHS = [diamond, reused_subexpression, graph_with_constants_and_a_no_grad_branch]


def graphs_to_check(seed: int) -> list[list[dict]]:
    return [build() for build in GRAPHS] + [random_graph(seed + offset) for offset in range(5)]


def student_order(student, nodes: list[dict], root: int | None = None) -> list[int]:
    """The student's topological_order of the graph's root (its last node), as node positions."""
    __tracebackhide__ = True
    root = len(nodes) - 1 if root is None else root
    order = student.topological_order(nodes, root)
    strangers = [position for position in order if not 0 <= position < len(nodes)]
    if strangers:
        pytest.fail(f"topological_order returned {len(strangers)} tensor(s) that are not nodes of the graph "
                    f"(new tensors, or copies): return the graph's own tensors", pytrace=False)
    return order


@pytest.mark.exercise("1.1")
def test_topological_order_puts_every_node_after_all_of_its_parents(exercise_seed, student):
    for nodes in graphs_to_check(exercise_seed):
        order, flags = student_order(student, nodes), requires_grad(nodes)
        assert len(nodes) - 1 in order, "the root itself belongs to the order (backward starts from it)"
        position = {node: index for index, node in enumerate(order)}
        for node in order:
            for parent in parents_of(nodes, node):
                if flags[parent]:
                    op, parent_op = nodes[node]["op"], nodes[parent]["op"]
                    assert parent in position, f"a parent of a '{op}' node is missing from the order"
                    assert position[parent] < position[node], (
                        f"a '{parent_op}' node comes after its child '{op}': reverse mode would "
                        f"visit the parent before it has received all of its gradient")


@pytest.mark.exercise("1.1", requires_values=True)  # the root alone passes it
def test_topological_order_lists_each_node_exactly_once(exercise_seed, student):
    for nodes in graphs_to_check(exercise_seed):
        order = student_order(student, nodes)
        assert len(order) == len(set(order)), (
            f"{len(order) - len(set(order))} node(s) appear more than once: a node reached by two paths "
            f"must be listed once (keep a set of visited nodes)")


@pytest.mark.exercise("1.1")
def test_topological_order_lists_exactly_the_ancestors_that_require_grad(exercise_seed, student):
    """Exactly the nodes that lead to the root through tensors that require grad: with the root listed, every
    listed node's parents that require grad are listed too, and every listed node but the root is a parent of
    another listed node (following such children from any node ends at the root)."""
    for nodes in graphs_to_check(exercise_seed):
        order, flags = student_order(student, nodes), requires_grad(nodes)
        root = len(nodes) - 1
        assert root in order, "the root itself belongs to the order (it is the first node backward visits)"
        constants = [nodes[node]["op"] for node in order if not flags[node]]
        assert not constants, f"nodes that do not require grad ({constants}) should be left out"
        listed = set(order)
        missing = [nodes[parent]["op"] for node in listed for parent in parents_of(nodes, node)
                   if flags[parent] and parent not in listed]
        assert not missing, (f"{len(missing)} parent(s) that require grad ({sorted(set(missing))}) of listed nodes "
                             f"are missing: backward would never reach them")
        children = {parent for node in listed for parent in parents_of(nodes, node)}
        strays = [nodes[node]["op"] for node in listed if node != root and node not in children]
        assert not strays, (f"{len(strays)} listed node(s) ({sorted(set(strays))}) do not lead to the root: list only "
                            f"what the root depends on")


@pytest.mark.exercise("1.1", requires_values=True)  # the root alone passes it
def test_topological_order_ends_with_the_root(exercise_seed, student):
    for nodes in graphs_to_check(exercise_seed):
        order = student_order(student, nodes)
        assert order and order[-1] == len(nodes) - 1, "the root depends on every other node, so it must come last"


@pytest.mark.exercise("1.1", requires_values=True)  # the root alone passes it
def test_topological_order_of_a_leaf_is_just_that_leaf(student):
    assert student_order(student, [leaf_node()]) == [0]


@pytest.mark.exercise("1.1")
def test_topological_order_handles_a_10000_node_chain_without_recursion(student):
    nodes = [leaf_node(), leaf_node(False)]  # x and the constant 1.0001
    nodes += [{"op": "mul", "inputs": [0 if step == 0 else step + 1, 1]} for step in range(10_000)]  # y = y * 1.0001
    try:
        order = student_order(student, nodes)
    except RecursionError:
        pytest.fail("topological_order hit Python's recursion limit: use an explicit stack, not recursion")
    assert len(order) == 10_001, f"a chain of 10,000 operations on one leaf has 10,001 nodes, got {len(order)}"
    assert order[0] == 0 and order[-1] == len(nodes) - 1


# ----------------------------------------------------------------------
# exercise 2.1: sum_to_shape, reached through unbroadcast


BROADCASTS = [  # (gradient shape, the input's shape before broadcasting)
    ((3, 4), (4,)),
    ((3, 4), (3, 1)),
    ((3, 4), (1, 4)),
    ((3, 4), (1, 1)),
    ((3, 4), ()),
    ((2, 3, 4), (3, 1)),
    ((2, 3, 4), (1, 3, 4)),
    ((2, 3, 4), (2, 1, 4)),
    ((2, 3, 4), (1,)),
    ((5, 1, 3), (1, 3)),
]


@pytest.mark.exercise("2.1")
@pytest.mark.parametrize("grad_shape,shape", BROADCASTS, ids=str)
def test_sum_to_shape_is_the_gradient_of_broadcasting_by_finite_differences(grad_shape, shape, exercise_seed,
                                                                            student):
    """x of `shape`, broadcast to `grad_shape`, gives ℓ(x) = Σ grad ⊙ broadcast(x): folding `grad` back to
    `shape` must give ∂ℓ/∂x, which central differences of ℓ measure element by element."""
    rng = np.random.default_rng(exercise_seed)
    grad, x = rng.standard_normal(grad_shape), rng.standard_normal(shape)
    result = student.unbroadcast(grad, shape, "test")["result"]
    assert np.shape(result) == shape, f"sum_to_shape to {shape} returned shape {np.shape(result)}"

    def loss() -> float:
        return float((grad * np.broadcast_to(x, grad_shape)).sum())

    compare_with_finite_differences(f"sum_to_shape from {grad_shape} to {shape}", [x], [result], loss)


@pytest.mark.exercise("2.1")
@pytest.mark.parametrize("shape,expected", [
    ((3,), [5.0, 7.0, 9.0]),
    ((2, 1), [[6.0], [15.0]]),
    ((1, 3), [[5.0, 7.0, 9.0]]),
    ((), 21.0),
], ids=str)
def test_sum_to_shape_of_a_small_gradient_worked_out_by_hand(shape, expected, student):
    grad = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])  # the gradient of a (2, 3) result
    result = student.unbroadcast(grad, shape, "test")["result"]
    assert np.shape(result) == shape, f"sum_to_shape of a (2, 3) gradient to {shape} returned shape {np.shape(result)}"
    np.testing.assert_allclose(result, expected, rtol=1e-12, err_msg=(
        f"an input of shape {shape} broadcast to (2, 3) is used once per copy: each element's gradient adds up "
        f"the gradients of all its copies"))


@pytest.mark.exercise("2.1", requires_values=True)
@pytest.mark.parametrize("grad_shape,shape", BROADCASTS, ids=str)
def test_sum_to_shape_does_not_modify_the_incoming_gradient(grad_shape, shape, exercise_seed, student):
    grad = np.random.default_rng(exercise_seed).standard_normal(grad_shape)
    after = student.unbroadcast(grad, shape, "test")["grad_after"]
    np.testing.assert_array_equal(after, grad, err_msg="sum_to_shape changed its input array in place")


def test_unbroadcast_returns_a_gradient_that_already_has_the_shape_unchanged():
    grad = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(unbroadcast(grad, (2, 3), "test"), grad)


@pytest.mark.parametrize("grad_shape,shape", [
    ((3, 4), (5,)),
    ((3, 4), (4, 4)),
    ((3,), (1, 3)),  # broadcasting adds axes on the left, it never removes them
    ((2, 3), (3, 2)),
], ids=str)
def test_unbroadcast_of_an_impossible_gradient_raises_naming_the_op(grad_shape, shape):
    """The library refuses a shape no broadcast explains before it asks sum_to_shape (exercise 2.1) to fold it."""
    with pytest.raises(ValueError) as error:
        unbroadcast(np.ones(grad_shape), shape, "my_op")
    message = str(error.value)
    assert "my_op" in message and str(grad_shape) in message and str(shape) in message, (
        f"the error should name the op and both shapes, got: {message}")


@pytest.mark.parametrize("grad_shape,shape", [((3,), (2, 3)), ((3, 4), (4, 4))], ids=str)
def test_sum_to_shape_refuses_a_shape_the_gradient_cannot_be_summed_to(grad_shape, shape):
    """sum_to_shape (exercise 2.1) called on its own refuses, outside the student's body, a target shape whose
    broadcast does not give the gradient's shape, instead of returning an array of the wrong shape."""
    from minitorch.tensor import sum_to_shape
    with pytest.raises(ValueError) as error:
        result = sum_to_shape(np.ones(grad_shape), shape)
        pytest.fail(f"sum_to_shape of a {grad_shape} gradient to {shape} returned shape {np.shape(result)}")
    message = str(error.value)
    assert str(grad_shape) in message and str(shape) in message, (
        f"the error should name both shapes, got: {message}")


# ----------------------------------------------------------------------
# Tensor.backward


def test_backward_fills_the_grad_of_each_leaf():
    x, y = leaf([1.0, 2.0]), leaf([3.0, 5.0])
    (x * y).sum().backward()
    np.testing.assert_array_equal(x.grad, [3.0, 5.0], err_msg="∂Σ(x*y)/∂x should be y")
    np.testing.assert_array_equal(y.grad, [1.0, 2.0], err_msg="∂Σ(x*y)/∂y should be x")


def test_gradients_accumulate_across_backward_calls():
    x = leaf([1.0, 2.0])
    (x * 3.0).sum().backward()
    (x * 4.0).sum().backward()
    np.testing.assert_array_equal(x.grad, [7.0, 7.0],
                                  err_msg="a second backward must ADD to .grad (3 + 4), as in PyTorch")


def test_zero_grad_forgets_the_accumulated_gradient():
    x = leaf([1.0, 2.0])
    (x * 3.0).sum().backward()
    x.zero_grad()
    assert x.grad is None, "zero_grad should reset .grad"
    (x * 4.0).sum().backward()
    np.testing.assert_array_equal(x.grad, [4.0, 4.0], err_msg="after zero_grad only the new gradient remains")


@pytest.mark.parametrize("function,gradient", [
    (lambda x: x * x, lambda x: 2 * x),
    (lambda x: x + x, lambda x: 2 * np.ones_like(x)),
    (lambda x: (x * 3.0) * (x * 3.0) + x * 3.0, lambda x: 18 * x + 3),  # (3x)^2 + 3x
    (lambda x: x * x * x, lambda x: 3 * x**2),
], ids=["x*x", "x+x", "reused-subexpression", "x*x*x"])
def test_a_tensor_used_twice_gets_the_sum_of_the_gradients_of_each_use(function, gradient):
    values = np.array([1.0, -2.0, 0.5])
    x = leaf(values)
    function(x).sum().backward()
    np.testing.assert_allclose(x.grad, gradient(values), rtol=1e-12,
                               err_msg="a node with several uses must add up the gradient from every use")


def test_a_subexpression_used_twice_passes_on_the_summed_gradient():
    x = leaf([1.0, 2.0])
    h = x.exp()
    (h * 2.0 + h * 5.0).sum().backward()
    np.testing.assert_allclose(x.grad, 7 * np.exp([1.0, 2.0]), rtol=1e-12)


def test_backward_through_a_10000_op_chain_does_not_hit_the_recursion_limit():
    x = leaf([1.0])
    y = x
    for step in range(10_000):
        y = y * 1.0001 if step % 2 else y + 0.5  # ∂y/∂x picks up a factor 1.0001 every other step
    try:
        y.sum().backward()
    except RecursionError:
        pytest.fail("backward recursed once per node; traverse the graph iteratively")
    np.testing.assert_allclose(x.grad, [1.0001**5000], rtol=1e-9)


def test_backward_of_a_non_scalar_without_grad_says_how_to_fix_it():
    out = leaf([1.0, 2.0]) * 2.0
    with pytest.raises(RuntimeError) as error:
        out.backward()
    message = str(error.value)
    assert "(2,)" in message and "sum()" in message and "grad=" in message, (
        f"the error should give the shape and suggest reducing (.sum()) or passing grad=, got: {message}")


def test_backward_with_an_explicit_grad_of_the_wrong_shape_raises():
    out = leaf([1.0, 2.0]) * 2.0
    with pytest.raises(ValueError, match=r"\(3,\).*\(2,\)"):
        out.backward(np.ones(3))


def test_backward_with_an_explicit_grad_gives_the_vector_jacobian_product():
    x = leaf([1.0, 2.0])
    (x * 3.0).backward(np.array([10.0, 100.0]))
    np.testing.assert_array_equal(x.grad, [30.0, 300.0])


def test_backward_through_a_graph_built_under_no_grad_explains_why_it_fails():
    x = leaf([1.0, 2.0])
    with no_grad():
        loss = (x * x).sum()
    with pytest.raises(RuntimeError, match="no_grad"):
        loss.backward()


def test_inputs_that_do_not_require_grad_get_no_gradient():
    x, constant = leaf([1.0, 2.0]), Tensor([3.0, 4.0])
    (x * constant).sum().backward()
    assert constant.grad is None, "a tensor with requires_grad=False must not receive a gradient"


def test_backward_catches_a_wrongly_shaped_gradient_and_names_the_op():
    x = leaf(np.ones((2, 3)))
    out = Tensor.from_op(x.data * 2, (x,), lambda grad: (np.ones(4),), "broken_double")
    with pytest.raises(ValueError) as error:
        out.sum().backward()
    message = str(error.value)
    assert "broken_double" in message and "(4,)" in message and "(2, 3)" in message, (
        f"the error should name the op and both shapes, got: {message}")


@pytest.mark.parametrize("backward_fn,inputs", [
    (lambda grad: grad * 2, 1),  # forgot the tuple: ``return (grad * 2,)``
    (lambda grad: (grad,), 2),  # one gradient for two inputs
], ids=["array-instead-of-tuple", "too-few-gradients"])
def test_backward_catches_a_backward_fn_that_does_not_return_one_gradient_per_input(backward_fn, inputs):
    parents = tuple(leaf(np.ones((2, 3))) for _ in range(inputs))
    out = Tensor.from_op(np.ones((2, 3)), parents, backward_fn, "broken_op")
    with pytest.raises(ValueError, match="broken_op.*one per input"):
        out.sum().backward()


def test_intermediate_tensors_keep_no_stale_gradient_between_backward_calls():
    x = leaf([1.0, 2.0])
    h = x * 3.0
    (h * h).sum().backward()
    x.zero_grad()
    (h * 1.0).sum().backward()
    with pytest.warns(UserWarning, match="non-leaf"):  # (reading it warns: see the test below)
        assert h.grad is None, "an intermediate tensor should not store .grad unless retain_grad() was called"
    np.testing.assert_array_equal(x.grad, [3.0, 3.0],
                                  err_msg="the second backward picked up gradient left over from the first")


def test_reading_the_grad_of_a_non_leaf_warns_once_and_names_retain_grad():
    """Its .grad is None after backward; without a word, that None reads as 'no gradient flowed' (PyTorch warns
    too). A leaf's .grad and a retained one's are read without a warning."""
    import warnings

    x = leaf([1.0, 2.0])
    h = x * 3.0
    kept = (x * 2.0).retain_grad()
    (h * kept).sum().backward()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert h.grad is None, "an intermediate tensor should not store .grad unless retain_grad() was called"
        x.grad, kept.grad  # noqa: B018  (read without a warning)
    messages = [str(warning.message) for warning in caught]
    assert len(messages) == 1 and "non-leaf tensor (the result of 'mul')" in messages[0] and (
        ".retain_grad()" in messages[0]), f"expected one warning naming the op and retain_grad(), got {messages}"


def test_retain_grad_keeps_the_gradient_of_an_intermediate():
    x = leaf([1.0, 2.0])
    h = (x * 3.0).retain_grad()
    other = h * h
    other.sum().backward()
    np.testing.assert_array_equal(h.grad, 2 * h.data, err_msg="∂Σh²/∂h = 2h should be stored on h")
    with pytest.warns(UserWarning, match="non-leaf"):
        assert other.grad is None, "intermediates without retain_grad() keep no gradient"


def test_detach_cuts_the_graph():
    x = leaf([1.0, 2.0])
    detached = x.detach()
    assert not detached.requires_grad and detached.is_leaf
    np.testing.assert_array_equal(detached.data, x.data)
    (x * detached).sum().backward()
    np.testing.assert_array_equal(x.grad, [1.0, 2.0],
                                  err_msg="only the undetached factor carries gradient: ∂Σ(x·c)/∂x = c = x")


# ----------------------------------------------------------------------
# no_grad


def test_no_grad_records_no_graph():
    x = leaf([1.0])
    with no_grad():
        y = x * 2.0
    assert not y.requires_grad and y.parents == (), "inside no_grad() results must not record their inputs"
    assert (x * 2.0).requires_grad, "outside no_grad() recording resumes"


def test_no_grad_restores_the_previous_state_even_after_an_exception():
    with pytest.raises(KeyError):
        with no_grad():
            raise KeyError("boom")
    assert minitorch.is_grad_enabled(), "an exception inside no_grad() left gradients switched off"
    with no_grad():
        with pytest.raises(KeyError):
            with no_grad():
                raise KeyError("boom")
        assert not minitorch.is_grad_enabled(), "leaving a nested no_grad() must not switch gradients back on"
    assert minitorch.is_grad_enabled()


def test_no_grad_works_as_a_decorator():
    @no_grad()
    def evaluate(x):
        return x * 2.0

    assert not evaluate(leaf([1.0])).requires_grad
    assert minitorch.is_grad_enabled()


def test_no_grad_in_one_thread_leaves_another_thread_recording():
    x = leaf([1.0])
    recorded_in_the_other_thread = []
    with no_grad():
        other = threading.Thread(target=lambda: recorded_in_the_other_thread.append((x * 2.0).requires_grad))
        other.start()
        other.join()
        assert not (x * 2.0).requires_grad, "this thread is inside no_grad() and must not record"
    assert recorded_in_the_other_thread == [True], "no_grad() in one thread switched recording off in another thread"


def test_one_no_grad_object_can_be_entered_again_and_inside_itself():
    block = no_grad()
    with block:
        pass
    assert minitorch.is_grad_enabled(), "leaving a no_grad() block must switch recording back on"
    with block:
        with block:
            assert not minitorch.is_grad_enabled()
        assert not minitorch.is_grad_enabled(), "leaving the inner block of one no_grad() object left the outer one"
    assert minitorch.is_grad_enabled()


# ----------------------------------------------------------------------
# Python operators and NumPy interplay


ARRAY_ON_THE_LEFT = {
    "+": (lambda array, t: array + t, lambda array, t: np.ones(3)),
    "-": (lambda array, t: array - t, lambda array, t: -np.ones(3)),
    "*": (lambda array, t: array * t, lambda array, t: array),
    "/": (lambda array, t: array / t, lambda array, t: -array / t**2),
    "@": (lambda array, t: array @ t, lambda array, t: array.sum(axis=0)),
}


@pytest.mark.parametrize("operator", ARRAY_ON_THE_LEFT, ids=str)
def test_an_ndarray_on_the_left_of_an_operator_gives_a_tensor_with_a_gradient_path(operator):
    apply, expected_gradient = ARRAY_ON_THE_LEFT[operator]
    array = np.arange(1.0, 7.0).reshape(2, 3) if operator == "@" else np.array([1.0, 2.0, 3.0])
    t = leaf([1.5, -2.0, 4.0])
    out = apply(array, t)
    assert isinstance(out, Tensor), (
        f"ndarray {operator} Tensor returned {type(out).__name__}: NumPy swallowed the Tensor "
        f"(Tensor needs a higher __array_priority__ than ndarray and reflected operators)")
    out.sum().backward()
    np.testing.assert_allclose(t.grad, expected_gradient(array, t.data), rtol=1e-12)


@pytest.mark.parametrize("number", [2.5, np.float64(2.5), np.float32(2.5)], ids=["float", "np.float64", "np.float32"])
def test_a_number_on_either_side_of_an_operator_gives_a_tensor(number):
    t = leaf([1.0, 2.0])
    for out in (number + t, t + number, number - t, t - number, number * t, t * number,
                number / t, t / number, t**number, -t):
        assert isinstance(out, Tensor) and out.requires_grad


def test_a_tensor_exponent_is_refused_with_a_type_error():
    t = leaf([1.0, 2.0])
    for attempt in (lambda: t ** Tensor(2.0), lambda: 2.0 ** t, lambda: np.ones(2) ** t):
        with pytest.raises(TypeError, match="exponent"):
            attempt()


def test_comparisons_give_boolean_masks_and_truth_value_is_refused():
    t = Tensor([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(t > 1.5, [False, True, True])
    np.testing.assert_array_equal(t == Tensor([1.0, 0.0, 3.0]), [True, False, True])
    with pytest.raises(TypeError, match="ambiguous"):
        bool(t)


# ----------------------------------------------------------------------
# float32 end to end


F32_OPERATIONS = {
    "add-number": lambda x, y: x + 2.0,
    "number-sub": lambda x, y: 1.5 - x,
    "mul-number": lambda x, y: 3.0 * x,
    "div-number": lambda x, y: x / 3.0,
    "number-div": lambda x, y: 3.0 / (x * x + 1.0),
    "pow": lambda x, y: x**2,
    "neg": lambda x, y: -x,
    "exp": lambda x, y: x.exp(),
    "log": lambda x, y: (x * x + 1.0).log(),
    "relu": lambda x, y: x.relu(),
    "sigmoid": lambda x, y: x.sigmoid(),
    "matmul": lambda x, y: x @ y.T,
    "matmul-vector": lambda x, y: x @ y[0],
    "float64-array": lambda x, y: x * np.full(4, 2.0),
    "sum": lambda x, y: x.sum(axis=0),
    "mean": lambda x, y: x.mean(axis=-1, keepdims=True),
    "max": lambda x, y: x.max(axis=1),
    "reshape-permute": lambda x, y: x.reshape(4, 3).permute(1, 0),
    "getitem": lambda x, y: x[np.array([0, 0, 2]), 1:],
    "where": lambda x, y: minitorch.where(x.data > 0, x, 0.5),
    "masked_fill": lambda x, y: x.masked_fill(np.arange(12).reshape(3, 4) % 5 == 1, -np.inf).softmax(axis=0),
    "concatenate-stack": lambda x, y: minitorch.stack([minitorch.concatenate([x, y], axis=0)] * 2, axis=1),
    "softmax": lambda x, y: x.softmax(axis=-1),
    "astype-float64-and-back": lambda x, y: x.astype(np.float64).exp().astype(np.float32),
}


@pytest.mark.parametrize("name", F32_OPERATIONS, ids=str)
def test_float32_stays_float32_through_forward_and_backward(name):
    rng = np.random.default_rng(0)
    x = leaf(rng.standard_normal((3, 4)), dtype=np.float32)
    y = leaf(rng.standard_normal((2, 4)), dtype=np.float32)
    out = F32_OPERATIONS[name](x, y)
    assert out.dtype == np.float32, f"{name}: a float32 input gave a {out.dtype} result"
    out.sum().backward()
    for label, tensor in (("x", x), ("y", y)):
        if tensor.grad is not None:
            assert tensor.grad.dtype == np.float32, f"{name}: {label}.grad is {tensor.grad.dtype}, expected float32"


def test_a_float32_graph_end_to_end_matches_float64_to_float32_precision():
    rng = np.random.default_rng(1)
    values = rng.standard_normal((4, 3)), rng.standard_normal((3, 5))
    results = {}
    for dtype in (np.float32, np.float64):
        a, b = leaf(values[0], dtype=dtype), leaf(values[1], dtype=dtype)
        loss = ((a @ b).relu().softmax(axis=-1) * 2.0 - 0.5).max(axis=0).mean()
        loss.backward()
        results[dtype] = {"loss": loss.data, "a.grad": a.grad, "b.grad": b.grad}
    for name, single in results[np.float32].items():
        assert single.dtype == np.float32, f"{name} is {single.dtype} in a float32 graph"
        np.testing.assert_allclose(single, results[np.float64][name], rtol=1e-4, atol=1e-6,
                                   err_msg=f"{name} in float32 differs from float64 by more than rounding")


def test_a_tensor_copies_its_data_so_updates_never_reach_the_callers_array():
    values = np.array([1.0, 2.0])
    t = Tensor(values, requires_grad=True)
    t.data -= 0.5  # what an optimiser step does
    np.testing.assert_array_equal(values, [1.0, 2.0], err_msg="Tensor(values) must copy values, like torch.tensor")


def test_detach_shares_memory_but_not_the_graph():
    t = Tensor([1.0, 2.0], requires_grad=True)
    detached = (t * 2.0).detach()
    assert not detached.requires_grad and detached.is_leaf
    assert np.shares_memory(t.detach().data, t.data), "detach() shares memory with the original"


def test_a_backward_rule_cannot_change_the_upstream_gradient_other_nodes_share():
    """add's rule hands one gradient array to both inputs: a rule writing into it would change the other's."""
    first, second = (minitorch.tensor([1.0, 2.0], requires_grad=True) for _ in range(2))

    def doubling_in_place(grad):
        grad *= 2
        return (grad,)

    total = sum((Tensor.from_op(leaf.data * 2, (leaf,), doubling_in_place, "doubling") for leaf in (first, second)),
                start=minitorch.tensor([0.0, 0.0]))
    with pytest.raises(ValueError, match="read-only"):
        total.backward(np.ones(2))
