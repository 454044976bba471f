"""Specification of minitorch.softmax: a_k = exp(s_k - m) / Σ_k' exp(s_k' - m), fused with its backward.

Chapter 02; the tests marked 2.4 grade the exercise (stable_softmax: forward and backward in one function).
Masked entries are -inf scores: they must get weight exactly 0 and gradient exactly 0.

The tests check properties every softmax has (slices sum to one, the log-weights differ as the scores do, a
constant added to a slice changes nothing, gradients agree with finite differences) and small cases worked out by
hand; they never compute a softmax to compare with. The hidden tests (tests/hidden/) grade other shapes and scores.
"""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from minitorch import Tensor
from gradient_checks import check_gradients, check_local_gradients  # (tests/gradient_checks.py)

SHAPES_AND_AXES = [((5,), 0), ((3, 4), -1), ((3, 4), 0), ((2, 3, 4), 1), ((2, 3, 4), -1), ((2, 3, 4), 0)]


def some_masked(rng, size: int) -> np.ndarray:
    """A random (size, size) mask (True: the score is -inf) that leaves every row and every column an unmasked
    entry (the diagonal), and row 0 only one."""
    mask = rng.random((size, size)) < 0.5
    np.fill_diagonal(mask, False)
    mask[0, 1:] = True
    return mask


def check_gradient(student, scores: np.ndarray, seed: int, what: str, alone: bool = False, **options) -> None:
    """Check the student's softmax gradient at `scores` (in a backward pass, or with `alone` its backward alone);
    on failure, a few lines that point at the likely mistake."""
    __tracebackhide__ = True
    try:
        (check_local_gradients if alone else check_gradients)(student, "softmax", [scores], seed, **options)
    except minitorch.GradcheckError as error:
        failure = error
    else:
        return
    hint = ""
    try:
        right_on_a_vector = check_gradients(student, "softmax", [scores.reshape(-1)[:4]], seed, axis=0)
    except minitorch.GradcheckError:
        right_on_a_vector = False
    if right_on_a_vector and scores.ndim > 1:
        hint = ("\nThe gradient is right for a single vector of scores and wrong here, so the likely mistake is a sum "
                "in the backward taken over the whole array (or along another axis) where each slice along `axis` "
                "needs its own.")
    pytest.fail(f"the softmax's backward is wrong for {what}:\n{failure}{hint}", pytrace=False)


@pytest.mark.exercise("2.4", requires_values=True)  # uniform weights pass it
@pytest.mark.parametrize("shape,axis", SHAPES_AND_AXES, ids=str)
def test_softmax_slices_along_the_axis_sum_to_one(shape, axis, exercise_seed, student):
    scores = np.random.default_rng(exercise_seed).standard_normal(shape) * 3
    weights = student.softmax(scores, axis=axis)
    sums = weights.sum(axis=axis)
    if not np.allclose(sums, 1.0, rtol=1e-12, atol=0.0):
        whole = " (they sum to 1 over the whole array: the forward's sum ignores `axis`)" if np.isclose(
            weights.sum(), 1.0) and weights.ndim > 1 else ""
        pytest.fail(f"softmax weights of shape {shape} must sum to 1 along axis {axis}; they sum to "
                    f"{np.round(sums, 4).tolist()}{whole}", pytrace=False)
    assert np.all(weights > 0), "with finite scores every weight is positive"


@pytest.mark.exercise("2.4")
@pytest.mark.parametrize("shape,axis", SHAPES_AND_AXES, ids=str)
def test_softmax_log_weights_differ_as_the_scores_do(shape, axis, exercise_seed, student):
    """a_k / a_l = e^(s_k - s_l): along `axis`, log a_k - s_k is one number per slice."""
    scores = np.random.default_rng(exercise_seed).standard_normal(shape) * 3
    weights = student.softmax(scores, axis=axis)
    assert np.shape(weights) == shape, f"the weights should have the scores' shape {shape}, got {np.shape(weights)}"
    assert np.all(weights > 0), "with finite scores every weight is positive"
    offsets = np.log(weights) - scores  # the same along `axis` for a softmax
    spread = np.max(np.abs(offsets - np.take(offsets, [0], axis=axis)))
    assert spread < 1e-12, (f"along axis {axis}, log(weight) - score should be the same for every entry of a slice "
                            f"(a weight is proportional to e^score); it varies by {spread:.3g}")


@pytest.mark.exercise("2.4")
@pytest.mark.parametrize("scores,axis,expected", [
    ([0.0, np.log(2.0), np.log(5.0)], -1, [1 / 8, 2 / 8, 5 / 8]),
    ([[0.0, 0.0], [np.log(3.0), 0.0]], 0, [[1 / 4, 1 / 2], [3 / 4, 1 / 2]]),
    ([[1000.0, 1000.0 + np.log(4.0)], [np.log(9.0) - 1000.0, -1000.0]], -1, [[0.2, 0.8], [0.9, 0.1]]),
], ids=["three-scores", "columns", "far-from-zero"])
def test_softmax_of_small_scores_worked_out_by_hand(scores, axis, expected, student):
    weights = student.softmax(np.array(scores), axis=axis)
    np.testing.assert_allclose(weights, expected, rtol=1e-12, atol=1e-15,
                               err_msg=f"softmax of {scores} along axis {axis}")


@pytest.mark.exercise("2.4", requires_values=True)  # zeros pass it
def test_softmax_is_invariant_to_adding_a_constant_to_each_row(exercise_seed, student):
    rng = np.random.default_rng(exercise_seed)
    scores = rng.standard_normal((4, 6))
    shift = rng.uniform(-50, 50, size=(4, 1))  # a different constant for every row
    np.testing.assert_allclose(student.softmax(scores + shift), student.softmax(scores),
                               rtol=1e-10, atol=1e-14, err_msg="softmax(s + c) must equal softmax(s)")


@pytest.mark.exercise("2.4")
def test_softmax_does_not_overflow_for_large_scores(student):
    weights = student.softmax(np.array([[1000.0, 1000.0], [1000.0, 0.0], [-1000.0, -1001.0]]))
    assert np.shape(weights) == (3, 2), f"the weights should have the scores' shape (3, 2), got {np.shape(weights)}"
    assert np.all(np.isfinite(weights)), f"exp(1000) overflowed: subtract the row maximum first. Got {weights}"
    np.testing.assert_allclose(weights, [[0.5, 0.5], [1.0, 0.0], [1 / (1 + np.exp(-1)), 1 / (1 + np.e)]],
                               rtol=1e-12, atol=1e-300)


@pytest.mark.exercise("2.4")
def test_masked_entries_get_exactly_zero_weight(exercise_seed, student):
    rng = np.random.default_rng(exercise_seed)
    scores, mask = rng.standard_normal((5, 5)), some_masked(rng, 5)
    weights = student.forward("softmax", [scores], offsets=np.where(mask, -np.inf, 0.0))
    assert np.shape(weights) == (5, 5), f"the weights should have the scores' shape (5, 5), got {np.shape(weights)}"
    assert np.all(weights[mask] == 0.0), "a key at -inf must get weight exactly 0, not just a small number"
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(weights[0, 0], 1.0, err_msg="row 0 has one unmasked key, which gets all the weight")


@pytest.mark.exercise("2.4")
def test_masked_entries_get_exactly_zero_gradient(exercise_seed, student):
    rng = np.random.default_rng(exercise_seed)
    mask = some_masked(rng, 5)
    gradients = student.offset_softmax_gradients(rng.standard_normal((5, 5)), np.where(mask, -np.inf, 0.0),
                                                 rng.standard_normal((5, 5)))
    masked, scores = gradients["masked"], gradients["scores"]
    assert np.shape(masked) == np.shape(scores) == (5, 5), (
        f"the gradients should have the scores' shape (5, 5), got {np.shape(masked)} and {np.shape(scores)}")
    assert np.all(masked[mask] == 0.0), "the softmax must send exactly 0 gradient to a -inf score"
    assert np.all(np.isfinite(masked)), "the softmax gradient must stay finite with -inf scores (no inf*0 = nan)"
    assert np.all(scores[mask] == 0.0), "a masked score does not affect the loss: its gradient must be 0"


@pytest.mark.exercise("2.4", requires_values=True)  # the library checks it outside the function
def test_a_slice_with_every_entry_masked_raises_value_error(student):
    scores = np.array([[-np.inf, -np.inf], [0.0, 1.0]])  # row 0 is fully masked; no column is
    with pytest.raises(ValueError, match="masked"):
        student.softmax(scores, axis=-1)
    student.softmax(scores, axis=0)  # column-wise, every slice has a finite entry: fine


def test_softmax_of_a_0d_tensor_raises_value_error():
    with pytest.raises(ValueError, match="softmax"):
        minitorch.softmax(Tensor(1.0))


@pytest.mark.exercise("2.4", requires_values=True)  # the scores returned pass it
@pytest.mark.parametrize("shape,axis", SHAPES_AND_AXES, ids=str)
def test_softmax_gradient_matches_finite_differences(shape, axis, exercise_seed, student):
    scores = np.random.default_rng(exercise_seed).standard_normal(shape)
    check_gradient(student, scores, exercise_seed, f"scores of shape {shape} along axis {axis}", axis=axis)


@pytest.mark.exercise("2.4")
@pytest.mark.parametrize("axis", [-1, 0])
def test_softmax_with_masked_entries_gradient_matches_finite_differences(axis, exercise_seed, student):
    rng = np.random.default_rng(exercise_seed)
    scores, mask = rng.standard_normal((4, 4)), some_masked(rng, 4)  # every row and column keeps a finite entry
    check_gradient(student, scores, exercise_seed, f"partly masked (4, 4) scores along axis {axis}", axis=axis,
                   offsets=np.where(mask, -np.inf, 0.0))


@pytest.mark.exercise("2.4")
@pytest.mark.parametrize("shape,axis", [((5,), 0), ((3, 4), 0)], ids=str)
def test_softmax_backward_alone_matches_finite_differences(shape, axis, exercise_seed, student):
    scores = np.random.default_rng(exercise_seed).standard_normal(shape)
    check_gradient(student, scores, exercise_seed, f"scores of shape {shape} along axis {axis}, its backward alone",
                   alone=True, axis=axis)


@pytest.mark.exercise("2.4", requires_values=True)  # a backward returning zeros passes it
def test_softmax_gradient_sums_to_zero_along_the_axis(exercise_seed, student):
    """The weights of a slice always sum to 1, so moving all its scores together changes nothing: the gradient of
    any loss sums to 0 over each slice."""
    rng = np.random.default_rng(exercise_seed)
    found = student.softmax_and_gradient(rng.standard_normal((3, 6)), rng.standard_normal((3, 6)), axis=-1)
    gradient = found["gradient"]
    assert np.shape(gradient) == (3, 6), f"the gradient should have the scores' shape (3, 6), got {np.shape(gradient)}"
    if not np.allclose(gradient.sum(axis=-1), 0.0, rtol=0, atol=1e-12):
        pytest.fail(f"the gradient of each slice along `axis` should sum to 0; the rows of a (3, 6) gradient along "
                    f"axis -1 sum to {np.round(gradient.sum(axis=-1), 6).tolist()}", pytrace=False)


@pytest.mark.exercise("2.4", requires_values=True)
def test_softmax_keeps_float32(student):
    found = student.softmax_and_gradient(np.array([[1.0, 2.0, -np.inf]], dtype=np.float32),
                                         np.array([[2.0, 2.0, 2.0]], dtype=np.float32))
    weights, gradient = np.asarray(found["weights"]), np.asarray(found["gradient"])
    dtypes = {"weights": str(weights.dtype), "gradient": str(gradient.dtype)}  # measured here, from the arrays
    assert dtypes == {"weights": "float32", "gradient": "float32"}, f"float32 scores gave {dtypes}"
    np.testing.assert_allclose(weights.sum(), 1.0, rtol=1e-6, err_msg="the float32 weights should sum to 1")


@pytest.mark.exercise("2.4", requires_values=True)  # checked outside the function
@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_plus_infinity_or_nan_scores_raise_instead_of_returning_nan(bad, student):
    with pytest.raises(ValueError, match=r"\+inf or NaN"):
        student.softmax(np.array([0.0, bad, 1.0]))
