"""Specification of minitorch.ops: every primitive's gradient is checked against finite differences.

Chapters 01 and 02. Each primitive is run through `minitorch.gradcheck` (float64 central
differences) on several shapes, broadcasting edge cases included. Graded here: 1.2 (mul
backward), 1.3 (exp), 1.4 (log), 2.2 (matmul), 2.3 (sum), and 2.1 (sum_to_shape) through every
broadcasting case; each backward rule is also checked *alone*, by calling the op's own
``backward_fn`` on a random upstream gradient, which needs no other exercise.

The graded tests say whether a rule is right without saying what it is: they compare it with finite
differences of the forward pass, never with a formula (the hidden tests, tests/hidden/, which the
instructor keeps, grade the same rules on other inputs). A graded test reaches the code under test only
through the ``student`` fixture (minitorch/exercises/grader/sandboxed/probes.py):
``check_gradients(student, "mul", [a, b], seed)`` runs a whole backward pass, ``check_local_gradients``
the rule alone. The softmax has its own file, tests/test_softmax.py.
"""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from minitorch import Tensor, gradcheck
from gradient_checks import check_gradients, check_local_gradients  # (tests/gradient_checks.py)


def normal(rng, shape) -> np.ndarray:
    return rng.standard_normal(shape)


def away_from_zero(rng, shape) -> np.ndarray:
    """Values with |v| in [0.5, 2): safe denominators, and relu inputs far from its kink."""
    return rng.choice([-1.0, 1.0], size=shape) * rng.uniform(0.5, 2.0, size=shape)


def positive(rng, shape) -> np.ndarray:
    return rng.uniform(0.5, 2.0, size=shape)


def well_separated(rng, shape) -> np.ndarray:
    """Distinct values at least 0.09 apart, so a max has a single winner even after a 1e-6 nudge."""
    size = int(np.prod(shape))
    return (rng.permutation(size) * 0.1 + rng.uniform(0, 0.01, size=size) - 0.1 * size / 2).reshape(shape)


def assert_gradient_matches_finite_differences(function, *inputs, seed: int = 0):
    """Raises GradcheckError (naming argument, element and both values) if they disagree."""
    assert gradcheck(function, list(inputs), seed=seed)


# ----------------------------------------------------------------------
# elementwise binary operations, with broadcasting

SHAPE_PAIRS = [
    ((3, 4), (3, 4)),
    ((2, 3, 4), (2, 3, 4)),
    ((1,), (1,)),
    ((3, 1), (1, 4)),
    ((2, 3, 4), (4,)),
    ((4,), (2, 3, 4)),
    ((2, 1, 4), (3, 1)),
    ((), (3,)),  # 0-d tensor on the left
    ((3,), ()),  # and on the right
    ((), ()),
    ((1,), (2, 3)),
    ((2, 3), (2, 1)),
    ((1, 1), (1,)),
]

BINARY = {
    "add": (lambda a, b: a + b, normal),
    "sub": (lambda a, b: a - b, normal),
    "mul": (lambda a, b: a * b, normal),
    "div": (lambda a, b: a / b, away_from_zero),
}


def binary_cases(graded: bool):
    """Same-shape mul grades 1.2; every broadcast case grades 2.1, since unbroadcast folds its gradients;
    same-shape add, sub and div grade nothing. `graded` picks the cases that grade an exercise, or the others."""
    for name in BINARY:
        for shapes in SHAPE_PAIRS:
            exercise = "2.1" if shapes[0] != shapes[1] else "1.2" if name == "mul" else None
            if (exercise is not None) == graded:
                marks = [pytest.mark.exercise(exercise)] if exercise else []
                yield pytest.param(name, shapes, marks=marks, id=f"{name}-{shapes[0]}-{shapes[1]}")


@pytest.mark.parametrize("name,shapes", list(binary_cases(graded=True)))
def test_binary_op_gradient_matches_finite_differences(name, shapes, exercise_seed, student):
    _, values = BINARY[name]
    rng = np.random.default_rng(exercise_seed)
    check_gradients(student, name, [normal(rng, shapes[0]), values(rng, shapes[1])], exercise_seed)


@pytest.mark.parametrize("name,shapes", list(binary_cases(graded=False)))
def test_binary_op_of_same_shapes_gradient_matches_finite_differences(name, shapes, exercise_seed):
    function, values = BINARY[name]
    rng = np.random.default_rng(exercise_seed)
    assert_gradient_matches_finite_differences(function, normal(rng, shapes[0]), values(rng, shapes[1]),
                                               seed=exercise_seed)


NUMBER_ON_EITHER_SIDE = {
    "number+x": lambda x: 2.5 + x,
    "x+number": lambda x: x + 2.5,
    "number-x": lambda x: 2.5 - x,
    "x-number": lambda x: x - 2.5,
    "number*x": lambda x: 2.5 * x,
    "x*number": lambda x: x * 2.5,
    "number/x": lambda x: 2.5 / x,
    "x/number": lambda x: x / 2.5,
    "array+x": lambda x: np.array([1.0, -2.0, 3.0]) + x,
    "array-x": lambda x: np.array([1.0, -2.0, 3.0]) - x,
    "array*x": lambda x: np.array([1.0, -2.0, 3.0]) * x,
    "array/x": lambda x: np.array([1.0, -2.0, 3.0]) / x,
    "x/array": lambda x: x / np.array([1.0, -2.0, 3.0]),
    "array@x": lambda x: np.arange(6.0).reshape(2, 3) @ x,
    "x@array": lambda x: x @ np.arange(6.0).reshape(3, 2),
    "x**number": lambda x: x**3,
    "-x": lambda x: -x,
}


@pytest.mark.parametrize("name", NUMBER_ON_EITHER_SIDE)
def test_operator_with_a_constant_on_either_side_gradient_matches_finite_differences(name):
    x = away_from_zero(np.random.default_rng(1), (3,))
    assert_gradient_matches_finite_differences(NUMBER_ON_EITHER_SIDE[name], x)


@pytest.mark.exercise("1.2")
@pytest.mark.parametrize("shape", [(3, 4), (7,)], ids=str)
def test_mul_backward_alone_matches_finite_differences(shape, exercise_seed, student):
    rng = np.random.default_rng(exercise_seed)
    check_local_gradients(student, "mul", [normal(rng, shape), normal(rng, shape)], exercise_seed)


# ----------------------------------------------------------------------
# elementwise unary operations

UNARY_SHAPES = [(), (1,), (4,), (3, 1), (2, 3, 4)]


def graded_unary_cases():
    """exp grades 1.3 and log 1.4, each on every shape (named as in probes.EXPRESSIONS)."""
    for name, values, exercise in (("exp", normal, "1.3"), ("log", positive, "1.4")):
        for shape in UNARY_SHAPES:
            yield pytest.param(name, values, shape, marks=[pytest.mark.exercise(exercise)], id=f"{name}-{shape}")


@pytest.mark.parametrize("name,values,shape", list(graded_unary_cases()))
def test_unary_op_gradient_matches_finite_differences(name, values, shape, exercise_seed, student):
    x = values(np.random.default_rng(exercise_seed), shape)
    check_gradients(student, name, [x], exercise_seed)


UNGRADED_UNARY = {"neg": (minitorch.neg, normal), "relu": (minitorch.relu, away_from_zero),
                  "sigmoid": (minitorch.sigmoid, normal), "astype": (lambda x: x.astype(np.float64), normal)}


@pytest.mark.parametrize("shape", UNARY_SHAPES, ids=str)
@pytest.mark.parametrize("name", UNGRADED_UNARY)
def test_unary_op_without_an_exercise_gradient_matches_finite_differences(name, shape, exercise_seed):
    function, values = UNGRADED_UNARY[name]
    x = values(np.random.default_rng(exercise_seed), shape)
    assert_gradient_matches_finite_differences(function, x, seed=exercise_seed)


@pytest.mark.parametrize("shape", UNARY_SHAPES, ids=str)
def test_astype_through_float32_and_back_gradient_matches_finite_differences(shape):
    """x.astype(float32) is differentiable as PyTorch's x.to(float32): the gradient flows back in x's dtype. The
    round trip is linear, so a large step keeps float32's rounding (about 1e-7) out of the finite differences."""
    x = normal(np.random.default_rng(2), shape)
    assert gradcheck(lambda t: t.astype(np.float32).astype(np.float64) * 3.0, [x], step=0.1)


@pytest.mark.exercise("1.3")
def test_exp_backward_alone_matches_finite_differences(exercise_seed, student):
    check_local_gradients(student, "exp", [normal(np.random.default_rng(exercise_seed), (3, 4))], exercise_seed)


@pytest.mark.exercise("1.4")
def test_log_backward_alone_matches_finite_differences(exercise_seed, student):
    check_local_gradients(student, "log", [positive(np.random.default_rng(exercise_seed), (3, 4))], exercise_seed)


@pytest.mark.parametrize("exponent,values", [
    (2, normal), (3, normal), (0, normal), (-1, away_from_zero), (-2.0, away_from_zero),
    (0.5, positive), (-1.5, positive), (1.7, positive),
], ids=lambda v: getattr(v, "__name__", repr(v)))
@pytest.mark.parametrize("shape", [(), (4,), (2, 3)], ids=str)
def test_pow_with_a_constant_exponent_gradient_matches_finite_differences(exponent, values, shape):
    x = values(np.random.default_rng(2), shape)
    assert_gradient_matches_finite_differences(lambda t: t**exponent, x)


def test_relu_derivative_at_zero_is_zero():
    x = Tensor([-1.0, 0.0, 2.0], requires_grad=True)
    x.relu().sum().backward()
    np.testing.assert_array_equal(x.grad, [0.0, 0.0, 1.0])


def test_sigmoid_is_one_over_one_plus_exp_minus_x_and_its_backward_is_sigma_times_one_minus_sigma():
    rng = np.random.default_rng(3)
    x, upstream = Tensor(normal(rng, (3, 4)) * 5.0, requires_grad=True), normal(rng, (3, 4))
    out = minitorch.sigmoid(x)
    expected = 1.0 / (1.0 + np.exp(-x.data))
    np.testing.assert_allclose(out.data, expected, rtol=1e-14, err_msg="sigmoid(x) should be 1 / (1 + e^(-x))")
    (grad,) = out.backward_fn(upstream)
    np.testing.assert_allclose(grad, upstream * expected * (1.0 - expected), rtol=1e-12,
                               err_msg="dσ/dx should be σ(x) (1 - σ(x)) times the upstream gradient")


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
def test_sigmoid_of_huge_inputs_is_exactly_0_or_1_with_finite_gradients(dtype):
    x = Tensor([-1000.0, 0.0, 1000.0], requires_grad=True, dtype=dtype)
    with np.errstate(over="raise", invalid="raise"):  # an overflow in e^(-x) would raise here
        out = minitorch.sigmoid(x)
        out.sum().backward()
    np.testing.assert_array_equal(out.data, np.array([0.0, 0.5, 1.0], dtype=dtype),
                                  err_msg="sigmoid should saturate to exactly 0 and 1, with σ(0) = 0.5")
    assert np.isfinite(x.grad).all() and x.grad[1] == 0.25, (
        f"the gradient σ(1 - σ) should be finite everywhere and 1/4 at 0, got {x.grad}"
    )


# ----------------------------------------------------------------------
# matmul

# Exercise 2.2 is matmul's rule for every shape np.matmul takes: matrices, stacks of them, and vectors. One test
# covers matrices and stacks, one per shape the vectors.
MATRIX_SHAPES = [
    ((3, 4), (4, 2)),
    ((2, 3, 4), (4, 5)),  # a stack of matrices times one weight matrix
    ((3, 4), (2, 4, 5)),  # one matrix times a stack
    ((2, 1, 3, 4), (5, 4, 2)),  # batch axes broadcast: (2, 1) with (5,) -> (2, 5)
    ((1, 3, 4), (2, 4, 5)),
]
VECTOR_SHAPES = [
    ((4,), (4, 2)),  # 1-D on the left: a row vector
    ((3, 4), (4,)),  # 1-D on the right: a column vector
    ((4,), (4,)),  # dot product: a 0-d result
    ((4,), (2, 4, 3)),
    ((2, 3, 4), (4,)),
]


def check_matmul(student, shape_a, shape_b, seed: int) -> None:
    """The forward pass equals np.matmul and the gradients match finite differences, for operands of these shapes."""
    __tracebackhide__ = True
    rng = np.random.default_rng(seed)
    a, b = normal(rng, shape_a), normal(rng, shape_b)
    np.testing.assert_allclose(student.forward("matmul", [a, b]), a @ b, rtol=1e-12,
                               err_msg="the forward pass should equal np.matmul")
    check_gradients(student, "matmul", [a, b], seed)


@pytest.mark.exercise("2.2")
def test_matmul_backward_of_matrices_alone_and_of_stacks_matches_finite_differences(exercise_seed, student):
    rng = np.random.default_rng(exercise_seed)
    check_local_gradients(student, "matmul", [normal(rng, (3, 4)), normal(rng, (4, 2))], exercise_seed)
    for shape_a, shape_b in MATRIX_SHAPES:
        check_matmul(student, shape_a, shape_b, exercise_seed)


@pytest.mark.exercise("2.2")
@pytest.mark.parametrize("shape_a,shape_b", VECTOR_SHAPES, ids=str)
def test_matmul_gradient_with_a_vector_operand_matches_finite_differences(shape_a, shape_b, exercise_seed, student):
    check_matmul(student, shape_a, shape_b, exercise_seed)


# ----------------------------------------------------------------------
# reductions

AXES = [None, 0, 1, -1, (0, 2), (-1, 0), ()]


@pytest.mark.exercise("2.3")
@pytest.mark.parametrize("keepdims", [False, True], ids=["drop-axes", "keepdims"])
@pytest.mark.parametrize("axis", AXES[:-1], ids=repr)
def test_sum_gradient_matches_finite_differences(axis, keepdims, exercise_seed, student):
    x = normal(np.random.default_rng(exercise_seed), (2, 3, 4))
    check_gradients(student, "sum", [x], exercise_seed, axis=axis, keepdims=keepdims)


@pytest.mark.exercise("2.3")
@pytest.mark.parametrize("shape", [(1,), (5,), (1, 1)], ids=str)
def test_sum_of_everything_gradient_matches_finite_differences_on_small_shapes(shape, exercise_seed, student):
    x = normal(np.random.default_rng(exercise_seed), shape)
    check_gradients(student, "sum", [x], exercise_seed)


@pytest.mark.exercise("2.3", requires_values=True)  # the upstream gradient returned unchanged passes it
def test_a_sum_over_no_axis_passes_the_gradient_through_unchanged(exercise_seed, student):
    rng = np.random.default_rng(exercise_seed)
    for keepdims in (False, True):
        check_gradients(student, "sum", [normal(rng, (2, 3, 4))], exercise_seed, axis=(), keepdims=keepdims)
    check_gradients(student, "sum", [normal(rng, ())], exercise_seed)  # a 0-d array: its sum is itself


@pytest.mark.exercise("2.3")
@pytest.mark.parametrize("axis,keepdims", [(1, False), (1, True), ((0, 2), False), (None, False)], ids=str)
def test_sum_backward_alone_matches_finite_differences(axis, keepdims, exercise_seed, student):
    x = normal(np.random.default_rng(exercise_seed), (2, 3, 4))
    check_local_gradients(student, "sum", [x], exercise_seed, axis=axis, keepdims=keepdims)


@pytest.mark.parametrize("reduction", ["mean", "max"])
@pytest.mark.parametrize("keepdims", [False, True], ids=["drop-axes", "keepdims"])
@pytest.mark.parametrize("axis", AXES[:-1], ids=repr)
def test_mean_and_max_gradients_match_finite_differences(reduction, axis, keepdims):
    x = well_separated(np.random.default_rng(3), (2, 3, 4))
    assert_gradient_matches_finite_differences(
        lambda t: getattr(t, reduction)(axis=axis, keepdims=keepdims), x)


def test_max_shares_the_gradient_equally_between_tied_winners():
    x = Tensor([[1.0, 3.0, 3.0], [2.0, 0.0, 1.0]], requires_grad=True)
    x.max(axis=1).sum().backward()
    np.testing.assert_array_equal(x.grad, [[0.0, 0.5, 0.5], [1.0, 0.0, 0.0]])


@pytest.mark.parametrize("reduction", [minitorch.sum, minitorch.mean, minitorch.max])
def test_reductions_give_the_same_values_as_numpy(reduction):
    x = normal(np.random.default_rng(4), (2, 3, 4))
    for axis in AXES[:-1]:
        for keepdims in (False, True):
            expected = getattr(np, reduction.__name__)(x, axis=axis, keepdims=keepdims)
            np.testing.assert_allclose(reduction(Tensor(x), axis, keepdims).data, expected, rtol=1e-12)


@pytest.mark.parametrize("reduction", [minitorch.sum, minitorch.mean, minitorch.max])
def test_reducing_a_0d_tensor_over_axis_0_returns_its_value(reduction):
    x = Tensor(2.5, requires_grad=True)
    out = reduction(x, 0)
    assert out.shape == () and out.item() == 2.5
    out.backward()
    assert x.grad == 1.0


def test_a_reduction_over_an_axis_that_does_not_exist_raises():
    with pytest.raises(ValueError, match="axis 3"):
        Tensor(np.ones((2, 3))).sum(axis=3)


# ----------------------------------------------------------------------
# shape operations

@pytest.mark.parametrize("new_shape", [(3, 2), (6,), (-1, 1), (1, 2, 3), (2, -1)], ids=str)
def test_reshape_gradient_matches_finite_differences(new_shape):
    x = normal(np.random.default_rng(5), (2, 3))
    assert_gradient_matches_finite_differences(lambda t: t.reshape(new_shape), x)


PERMUTATIONS = {
    "permute(2,0,1)": lambda t: t.permute(2, 0, 1),
    "permute(-1,0,1)": lambda t: t.permute((-1, 0, 1)),
    "transpose()": lambda t: t.transpose(),
    "transpose(0,2)": lambda t: t.transpose(0, 2),
    ".T": lambda t: t.T,
    "matrix.T": lambda t: t[0].T,
}


@pytest.mark.parametrize("name", PERMUTATIONS)
def test_permute_and_transpose_gradients_match_finite_differences(name):
    x = normal(np.random.default_rng(6), (2, 3, 4))
    assert_gradient_matches_finite_differences(PERMUTATIONS[name], x)


def test_permutations_give_the_same_values_as_numpy():
    x = normal(np.random.default_rng(6), (2, 3, 4))
    np.testing.assert_array_equal(Tensor(x).permute(2, 0, 1).data, x.transpose(2, 0, 1))
    np.testing.assert_array_equal(Tensor(x).transpose().data, x.swapaxes(-1, -2))
    np.testing.assert_array_equal(Tensor(x).T.data, x.T)


INDICES = {
    "int": 1,
    "negative-int": -1,
    "slice": slice(1, 3),
    "negative-step": slice(None, None, -1),
    "tuple": (0, slice(1, None)),
    "tuple-negative": (slice(None), -2),
    "ellipsis-newaxis": (Ellipsis, None),
    "int-array-repeated": np.array([0, 0, 2, 0]),
    "int-list-repeated": [2, 2],
    "int-array-2d": np.array([[0, 1], [1, 1]]),
    "int-arrays-paired": (np.array([0, 0, 2]), np.array([3, 3, 1])),
    "bool-mask": np.array([[True, False, True, False], [False, False, False, True], [True, True, False, False]]),
    "bool-rows": np.array([True, False, True]),
}


@pytest.mark.parametrize("name", INDICES)
def test_getitem_gradient_matches_finite_differences(name):
    index = INDICES[name]
    x = normal(np.random.default_rng(7), (3, 4))
    np.testing.assert_array_equal(Tensor(x)[index].data, x[index], err_msg="forward should match NumPy indexing")
    assert_gradient_matches_finite_differences(lambda t: t[index], x)


def test_getitem_with_repeated_indices_adds_one_gradient_per_pick():
    x = Tensor([10.0, 20.0, 30.0], requires_grad=True)
    x[np.array([0, 0, 2, 0])].sum().backward()
    np.testing.assert_array_equal(x.grad, [3.0, 0.0, 1.0],
                                  err_msg="an element picked three times must get three gradients, not one")


# ----------------------------------------------------------------------
# selection and joining

@pytest.mark.parametrize("shapes", [
    ((3, 4), (3, 4), (3, 4)),
    ((3, 4), (3, 1), (1, 4)),  # condition, a, b
    ((2, 3, 4), (4,), ()),
    ((3, 1), (1, 4), (3, 4)),  # the condition alone would not reach the output shape
], ids=str)
def test_where_gradient_matches_finite_differences(shapes):
    rng = np.random.default_rng(8)
    condition = rng.random(shapes[0]) < 0.5
    assert_gradient_matches_finite_differences(lambda a, b: minitorch.where(condition, a, b),
                                               normal(rng, shapes[1]), normal(rng, shapes[2]))


def test_where_accepts_a_number_for_either_branch():
    rng = np.random.default_rng(8)
    condition = rng.random((3, 4)) < 0.5
    assert_gradient_matches_finite_differences(lambda a: minitorch.where(condition, a, 0.5), normal(rng, (3, 4)))
    assert_gradient_matches_finite_differences(lambda b: minitorch.where(condition, -1.0, b), normal(rng, (3, 4)))


def test_masked_fill_gradient_matches_finite_differences_and_filled_entries_get_exactly_zero():
    rng = np.random.default_rng(9)
    mask = rng.random((3, 4)) < 0.4
    x = normal(rng, (3, 4))
    assert_gradient_matches_finite_differences(lambda t: t.masked_fill(mask, 7.0) * t, x)
    leaf = Tensor(x, requires_grad=True)
    filled = leaf.masked_fill(mask, 7.0)
    np.testing.assert_array_equal(filled.data[mask], 7.0)
    (filled * 3.0).sum().backward()
    assert np.all(leaf.grad[mask] == 0.0), "a filled entry no longer depends on the input: its gradient must be 0"


def test_masked_fill_gives_a_fill_value_in_the_graph_its_gradient():
    """A tensor fill value stays in the graph: cut from it, its .grad would stay None without a word."""
    rng = np.random.default_rng(11)
    mask = rng.random((3, 4)) < 0.4
    x = normal(rng, (3, 4))
    assert_gradient_matches_finite_differences(lambda t, c: t.masked_fill(mask, c) * t, x, np.array(0.5))
    value = Tensor(np.array(2.0), requires_grad=True)
    Tensor(x).masked_fill(mask, value).sum().backward()
    assert value.grad == mask.sum(), "the fill value's gradient is the upstream gradient summed over the filled entries"


@pytest.mark.parametrize("axis,shapes", [
    (0, [(2, 3), (1, 3), (4, 3)]),
    (1, [(2, 3), (2, 1)]),
    (-1, [(2, 2, 1), (2, 2, 3)]),
], ids=str)
def test_concatenate_gradient_matches_finite_differences(axis, shapes):
    rng = np.random.default_rng(10)
    arrays = [normal(rng, shape) for shape in shapes]
    assert_gradient_matches_finite_differences(lambda *ts: minitorch.concatenate(ts, axis=axis), *arrays)


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -2])
def test_stack_gradient_matches_finite_differences(axis):
    rng = np.random.default_rng(11)
    arrays = [normal(rng, (2, 3)) for _ in range(3)]
    np.testing.assert_array_equal(minitorch.stack([Tensor(a) for a in arrays], axis=axis).data,
                                  np.stack(arrays, axis=axis))
    assert_gradient_matches_finite_differences(lambda *ts: minitorch.stack(ts, axis=axis), *arrays)


# ----------------------------------------------------------------------
# a whole expression, mixing everything

def test_a_composite_expression_gradient_matches_finite_differences(exercise_seed):
    rng = np.random.default_rng(exercise_seed)

    def two_layer_loss(x, w1, w2):
        hidden = (x @ w1.T).relu()  # (5, 3) @ (3, 4) -> (5, 4)
        scores = hidden @ w2  # (5, 4) @ (4, 2) -> (5, 2)
        return (scores.softmax(axis=-1)[:, 0] + 1.0).log().mean() + (w1**2).sum() * 0.01

    assert_gradient_matches_finite_differences(two_layer_loss, normal(rng, (5, 3)), normal(rng, (4, 3)),
                                               normal(rng, (4, 2)), seed=exercise_seed)


# ----------------------------------------------------------------------
# errors a student can act on

OPERATORS = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
             "div": lambda a, b: a / b, "matmul": lambda a, b: a @ b}


@pytest.mark.parametrize("op", OPERATORS)
def test_mismatched_shapes_raise_naming_the_op_and_both_shapes(op):
    a, b = Tensor(np.ones((2, 3))), Tensor(np.ones((4, 5)))
    with pytest.raises(ValueError) as error:
        OPERATORS[op](a, b)
    message = str(error.value)
    assert op in message and "(2, 3)" in message and "(4, 5)" in message, (
        f"the error should name '{op}' and both shapes, got: {message}")


def test_matmul_with_incompatible_batch_axes_raises_naming_both_shapes():
    with pytest.raises(ValueError, match=r"matmul.*\(2, 3, 4\).*\(3, 4, 5\)"):
        Tensor(np.ones((2, 3, 4))) @ Tensor(np.ones((3, 4, 5)))


def test_matmul_of_a_0d_tensor_raises():
    with pytest.raises(ValueError, match="matmul"):
        Tensor(2.0) @ Tensor(np.ones(3))


def test_where_with_mismatched_shapes_raises_naming_every_shape():
    with pytest.raises(ValueError) as error:
        minitorch.where(np.ones((2, 3), dtype=bool), Tensor(np.ones(4)), Tensor(np.ones((2, 3))))
    message = str(error.value)
    assert "where" in message and "(2, 3)" in message and "(4,)" in message, message


def test_where_refuses_a_condition_that_is_not_boolean():
    with pytest.raises(TypeError, match="boolean"):
        minitorch.where(np.ones(3), Tensor(np.ones(3)), 0.0)


@pytest.mark.parametrize("exponent", [Tensor(2.0), np.array([1.0, 2.0])], ids=["tensor", "array"])
def test_pow_with_a_non_constant_exponent_raises_type_error(exponent):
    with pytest.raises(TypeError, match="exponent"):
        minitorch.pow(Tensor([1.0, 2.0], requires_grad=True), exponent)


def test_shape_operation_errors_name_the_shapes():
    x = Tensor(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"reshape.*\(2, 3\).*\(4, 2\)"):
        x.reshape(4, 2)
    with pytest.raises(ValueError, match="permute"):
        x.permute(0, 0)
    with pytest.raises(ValueError, match="stack"):
        minitorch.stack([x, Tensor(np.ones((3, 2)))])
    with pytest.raises(ValueError, match="concatenate"):
        minitorch.concatenate([x, Tensor(np.ones((2, 4)))], axis=0)


def test_indexing_with_a_tensor_is_refused_because_tensors_hold_floats():
    x = Tensor([10.0, 20.0, 30.0])
    with pytest.raises(TypeError, match="not a Tensor"):
        x[Tensor([False, True, True])]


@pytest.mark.parametrize("exponent", ["2", None, True])
def test_pow_refuses_an_exponent_that_is_not_a_number(exponent):
    with pytest.raises(TypeError, match="exponent"):
        Tensor([1.0, 2.0]) ** exponent


def test_permute_refuses_an_axis_out_of_range():
    with pytest.raises(ValueError, match="permute"):
        Tensor(np.zeros((2, 3))).permute(0, 5)
