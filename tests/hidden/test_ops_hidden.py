"""Hidden tests of the backward rules of exercises 1.2 (mul), 1.3 (exp), 1.4 (log), 2.2 (matmul) and 2.3 (sum),
chapters 01 and 02: a student edition never holds this file (`registry.HIDDEN_TESTS`); the class grader and the
Gradescope bundle run it, with the grader's seed, and it carries the exercises' hidden share of their points.

Each rule is run alone (``student.local_gradients``: the output's own backward on an upstream gradient) and in a
whole backward pass (``student.gradients``), on shapes and values the public tests (tests/test_ops.py) do not use,
and compared with the rule written here in NumPy. This file imports nothing of the library, so an instructor can
run it on a student's copy by hand and the rules it compares with stay the instructor's.
"""

from __future__ import annotations

import numpy as np
import pytest

RTOL, ATOL = 1e-10, 1e-12  # the rules are exact arithmetic: only the order of additions may differ


def draw(exercise_seed: int, *shapes, low=None, high=None) -> list[np.ndarray]:
    """Arrays of `shapes` from a generator seeded by the grader's seed and the shapes; uniform in [low, high) if
    given, else standard normal."""
    rng = np.random.default_rng([exercise_seed, *(size for shape in shapes for size in (len(shape), *shape))])
    return [rng.normal(size=shape) if low is None else rng.uniform(low, high, size=shape) for shape in shapes]


def fold(gradient: np.ndarray, shape: tuple) -> np.ndarray:
    """A gradient at a broadcast shape summed back to `shape`."""
    gradient = gradient.sum(axis=tuple(range(gradient.ndim - len(shape))))
    ones = tuple(axis for axis, size in enumerate(shape) if size == 1 and gradient.shape[axis] != 1)
    return gradient.sum(axis=ones, keepdims=True) if ones else gradient


def assert_gradients(got, expected, what: str) -> None:
    __tracebackhide__ = True
    assert isinstance(got, (list, tuple)) and len(got) == len(expected), (
        f"{what}: expected {len(expected)} gradient(s), one per input, got {type(got).__name__}")
    for position, (found, wanted) in enumerate(zip(got, expected)):
        assert found is not None, f"{what}: input {position} got no gradient"
        assert np.shape(found) == np.shape(wanted), (
            f"{what}: the gradient of input {position} has shape {np.shape(found)}, not {np.shape(wanted)}")
        np.testing.assert_allclose(found, wanted, rtol=RTOL, atol=ATOL,
                                   err_msg=f"{what}: the gradient of input {position} is wrong")


# ----------------------------------------------------------------------
# 1.2 mul

@pytest.mark.exercise("1.2")
@pytest.mark.parametrize("shape", [(5, 2), (2, 3, 3), (1, 6)], ids=str)
def test_mul_backward_alone(shape, exercise_seed, student):
    a, b, upstream = draw(exercise_seed, shape, shape, shape)
    assert_gradients(student.local_gradients("mul", [a, b], upstream), [upstream * b, upstream * a],
                     f"mul's rule on {shape} inputs")


@pytest.mark.exercise("1.2")
@pytest.mark.parametrize("shape_a,shape_b", [((4, 1), (1, 3)), ((), (2, 5)), ((2, 3, 1), (3, 5))], ids=str)
def test_mul_gradients_in_a_whole_backward_pass_with_broadcasting(shape_a, shape_b, exercise_seed, student):
    a, b = draw(exercise_seed, shape_a, shape_b)
    (upstream,) = draw(exercise_seed + 1, np.broadcast_shapes(shape_a, shape_b))
    found = student.gradients("mul", [a, b], upstream)["gradients"]
    assert_gradients(found, [fold(upstream * b, shape_a), fold(upstream * a, shape_b)],
                     f"mul of {shape_a} and {shape_b} inputs")


# ----------------------------------------------------------------------
# 1.3 exp and 1.4 log

@pytest.mark.exercise("1.3")
@pytest.mark.parametrize("shape", [(6,), (2, 2, 5)], ids=str)
def test_exp_backward_alone_over_a_wide_range(shape, exercise_seed, student):
    (x,), (upstream,) = draw(exercise_seed, shape, low=-20.0, high=20.0), draw(exercise_seed + 1, shape)
    assert_gradients(student.local_gradients("exp", [x], upstream), [upstream * np.exp(x)],
                     f"exp's rule on {shape} inputs in [-20, 20)")


@pytest.mark.exercise("1.3")
def test_exp_gradient_in_a_whole_backward_pass(exercise_seed, student):
    (x,), (upstream,) = draw(exercise_seed, (3, 5), low=-3.0, high=3.0), draw(exercise_seed + 1, (3, 5))
    assert_gradients(student.gradients("exp", [x], upstream)["gradients"], [upstream * np.exp(x)],
                     "exp of a (3, 5) input in a backward pass")


@pytest.mark.exercise("1.4")
@pytest.mark.parametrize("shape", [(6,), (2, 2, 5)], ids=str)
def test_log_backward_alone_over_six_orders_of_magnitude(shape, exercise_seed, student):
    (exponent,), (upstream,) = draw(exercise_seed, shape, low=-3.0, high=3.0), draw(exercise_seed + 1, shape)
    x = 10.0**exponent
    assert_gradients(student.local_gradients("log", [x], upstream), [upstream / x],
                     f"log's rule on {shape} inputs from 1e-3 to 1e3")


@pytest.mark.exercise("1.4")
def test_log_gradient_in_a_whole_backward_pass(exercise_seed, student):
    (x,), (upstream,) = draw(exercise_seed, (3, 5), low=0.2, high=4.0), draw(exercise_seed + 1, (3, 5))
    assert_gradients(student.gradients("log", [x], upstream)["gradients"], [upstream / x],
                     "log of a (3, 5) input in a backward pass")


# ----------------------------------------------------------------------
# 2.2 matmul


def matmul_gradients(a: np.ndarray, b: np.ndarray, upstream: np.ndarray) -> list[np.ndarray]:
    """∂ℓ/∂a and ∂ℓ/∂b of out = a @ b for ∂ℓ/∂out = upstream, with NumPy's vector and batch rules."""
    matrix_a = a[None, :] if a.ndim == 1 else a  # (..., m, p)
    matrix_b = b[:, None] if b.ndim == 1 else b  # (..., p, n)
    batch = np.broadcast_shapes(matrix_a.shape[:-2], matrix_b.shape[:-2])
    g = upstream.reshape(batch + (matrix_a.shape[-2], matrix_b.shape[-1]))  # the vectors' axes back, as size 1
    grad_a = np.einsum("...mn,...pn->...mp", g, matrix_b)
    grad_b = np.einsum("...mp,...mn->...pn", matrix_a, g)
    return [fold(grad_a, matrix_a.shape).reshape(a.shape), fold(grad_b, matrix_b.shape).reshape(b.shape)]


MATMUL_SHAPES = [  # none of the public tests'
    ((5, 3), (3, 6)),
    ((3, 2, 4), (4, 5)),
    ((2, 5), (3, 5, 2)),
    ((2, 1, 3, 4), (3, 4, 2)),
    ((4, 1, 2, 3), (1, 5, 3, 2)),
    ((6,), (6,)),
    ((3,), (3, 4)),
    ((2, 5), (5,)),
    ((3,), (2, 3, 2)),
    ((2, 2, 3), (3,)),
]


# First among 2.2's tests (the grader runs an exercise's tests in file order, this file before the public ones): an
# answer that measures each element's gradient by running the forward pass once per element does not finish within
# the grader's timeout on these, and after two timed-out tests an exercise's other tests fail at once.
LARGE_MATMULS = [((320, 512), (512, 384)), ((4, 90, 300), (4, 300, 200))]


@pytest.mark.exercise("2.2")
@pytest.mark.parametrize("shape_a,shape_b", LARGE_MATMULS, ids=str)
def test_matmul_backward_alone_on_large_operands(shape_a, shape_b, exercise_seed, student):
    """matmul's rule on operands of over 150,000 numbers: two matrix products."""
    a, b = draw(exercise_seed, shape_a, shape_b)
    (upstream,) = draw(exercise_seed + 1, np.matmul(a, b).shape)
    assert_gradients(student.local_gradients("matmul", [a, b], upstream), matmul_gradients(a, b, upstream),
                     f"matmul's rule on large {shape_a} and {shape_b} operands")


@pytest.mark.exercise("2.2")
@pytest.mark.parametrize("shape_a,shape_b", MATMUL_SHAPES, ids=str)
def test_matmul_gradients_in_a_whole_backward_pass(shape_a, shape_b, exercise_seed, student):
    a, b = draw(exercise_seed, shape_a, shape_b)
    (upstream,) = draw(exercise_seed + 1, np.matmul(a, b).shape)
    found = student.gradients("matmul", [a, b], upstream)
    np.testing.assert_allclose(found["value"], np.matmul(a, b), rtol=RTOL, atol=ATOL,
                               err_msg=f"the product of {shape_a} and {shape_b} operands is wrong")
    assert_gradients(found["gradients"], matmul_gradients(a, b, upstream), f"matmul of {shape_a} and {shape_b}")


@pytest.mark.exercise("2.2")
def test_matmul_backward_alone_on_matrices(exercise_seed, student):
    a, b = draw(exercise_seed, (4, 7), (7, 3))
    (upstream,) = draw(exercise_seed + 1, (4, 3))
    assert_gradients(student.local_gradients("matmul", [a, b], upstream), matmul_gradients(a, b, upstream),
                     "matmul's rule on (4, 7) and (7, 3) matrices")


# ----------------------------------------------------------------------
# 2.3 sum


def sum_gradient(upstream: np.ndarray, shape: tuple, axis, keepdims: bool) -> np.ndarray:
    """∂ℓ/∂x of out = x.sum(axis, keepdims) for ∂ℓ/∂out = upstream: every element gets its sum's gradient."""
    axes = tuple(range(len(shape))) if axis is None else tuple(np.atleast_1d(axis) % max(len(shape), 1))
    return np.broadcast_to(upstream if keepdims else np.expand_dims(upstream, axes), shape)


SUMS = [((3, 5, 2), 0), ((3, 5, 2), 2), ((3, 5, 2), (-1, -3)), ((3, 5, 2), None), ((4, 1, 3, 2), (1, 3)),
        ((4, 1, 3, 2), -2), ((7,), 0), ((2, 6), (0, 1))]


# First among 2.3's tests, for the reason given above LARGE_MATMULS.
LARGE_SUMS = [((700, 900), 0, False), ((40, 120, 150), (0, 2), True)]


@pytest.mark.exercise("2.3")
@pytest.mark.parametrize("shape,axis,keepdims", LARGE_SUMS, ids=str)
def test_sum_backward_alone_on_a_large_input(shape, axis, keepdims, exercise_seed, student):
    """sum's rule for an input of over 600,000 numbers: one broadcast."""
    (x,) = draw(exercise_seed, shape)
    (upstream,) = draw(exercise_seed + 1, np.sum(x, axis=axis, keepdims=keepdims).shape)
    assert_gradients(student.local_gradients("sum", [x], upstream, axis=axis, keepdims=keepdims),
                     [sum_gradient(upstream, shape, axis, keepdims)], f"sum's rule on a large {shape} input over "
                     f"axis {axis} ({'keepdims' if keepdims else 'axes dropped'})")


@pytest.mark.exercise("2.3")
@pytest.mark.parametrize("keepdims", [False, True], ids=["drop-axes", "keepdims"])
@pytest.mark.parametrize("shape,axis", SUMS, ids=str)
def test_sum_backward_alone(shape, axis, keepdims, exercise_seed, student):
    (x,) = draw(exercise_seed, shape)
    (upstream,) = draw(exercise_seed + 1, np.sum(x, axis=axis, keepdims=keepdims).shape)
    assert_gradients(student.local_gradients("sum", [x], upstream, axis=axis, keepdims=keepdims),
                     [sum_gradient(upstream, shape, axis, keepdims)],
                     f"sum's rule on a {shape} input over axis {axis} ({'keepdims' if keepdims else 'axes dropped'})")


@pytest.mark.exercise("2.3")
@pytest.mark.parametrize("shape,axis", SUMS[::3], ids=str)
def test_sum_gradient_in_a_whole_backward_pass(shape, axis, exercise_seed, student):
    (x,) = draw(exercise_seed, shape)
    (upstream,) = draw(exercise_seed + 1, np.sum(x, axis=axis).shape)
    found = student.gradients("sum", [x], upstream, axis=axis)["gradients"]
    assert_gradients(found, [sum_gradient(upstream, shape, axis, False)], f"sum of a {shape} input over axis {axis}")


@pytest.mark.exercise("2.3", requires_values=True)  # the upstream gradient returned unchanged passes it
def test_a_sum_over_no_axis_hands_the_gradient_on_unchanged(exercise_seed, student):
    (x,), (upstream,) = draw(exercise_seed, (4, 1, 3)), draw(exercise_seed + 1, (4, 1, 3))
    for keepdims in (False, True):
        assert_gradients(student.local_gradients("sum", [x], upstream, axis=(), keepdims=keepdims), [upstream],
                         "sum's rule over no axis")
