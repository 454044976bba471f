"""Specification of minitorch.softmax: a_k = exp(s_k - m) / Σ_k' exp(s_k' - m), fused with its backward.

Chapter 02; the tests marked 2.4 grade the exercise (stable_softmax: forward and backward in one function).
Masked entries are -inf scores: they must get weight exactly 0 and gradient exactly 0.
"""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from minitorch import Tensor
from minitorch.exercises.grader.trusted.student_code import check_gradients

from causal_literals import future_keys as causal_mask  # noqa: E402  (True above the diagonal: keys k > i)

SHAPES_AND_AXES = [((5,), 0), ((3, 4), -1), ((3, 4), 0), ((2, 3, 4), 1), ((2, 3, 4), -1), ((2, 3, 4), 0)]


def check_gradient(student, scores: np.ndarray, seed: int, what: str, **options) -> None:
    """Check the student's softmax gradient at `scores`; on failure, a few lines that point at the likely mistake."""
    __tracebackhide__ = True
    try:
        check_gradients(student, "softmax", [scores], seed, **options)
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
        hint = ("\nThe gradient is right for a single vector of scores and wrong here, so the likely mistake is the "
                "sum in the backward: Σ_k g_k a_k is one number per slice along `axis`, "
                "(grad * weights).sum(axis=axis, keepdims=True), not one sum over the whole array.")
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
def test_softmax_matches_the_textbook_formula(shape, axis, exercise_seed, student):
    scores = np.random.default_rng(exercise_seed).standard_normal(shape)
    expected = np.exp(scores) / np.exp(scores).sum(axis=axis, keepdims=True)  # safe: |scores| is small
    np.testing.assert_allclose(student.softmax(scores, axis=axis), expected, rtol=1e-12)


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
    scores = np.random.default_rng(exercise_seed).standard_normal((5, 5))
    mask = causal_mask(5)
    weights = student.forward("softmax", [scores], mask=mask)
    assert np.shape(weights) == (5, 5), f"the weights should have the scores' shape (5, 5), got {np.shape(weights)}"
    assert np.all(weights[mask] == 0.0), "a key at -inf must get weight exactly 0, not just a small number"
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(weights[0, 0], 1.0, err_msg="row 0 sees only key 0, which gets all the weight")


@pytest.mark.exercise("2.4")
def test_masked_entries_get_exactly_zero_gradient(exercise_seed, student):
    rng = np.random.default_rng(exercise_seed)
    mask = causal_mask(5)
    gradients = student.masked_softmax_gradients(rng.standard_normal((5, 5)), mask, rng.standard_normal((5, 5)))
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
    scores = np.random.default_rng(exercise_seed).standard_normal((4, 4))
    mask = causal_mask(4)  # every row and every column keeps at least one finite entry
    check_gradient(student, scores, exercise_seed, f"causally masked (4, 4) scores along axis {axis}", axis=axis,
                   mask=mask)


@pytest.mark.exercise("2.4")
def test_softmax_backward_is_the_jacobian_transpose_times_the_upstream_gradient(exercise_seed, student):
    rng = np.random.default_rng(exercise_seed)
    scores, upstream = rng.standard_normal(5), rng.standard_normal(5)
    a = student.softmax(scores)
    jacobian = np.diag(a) - np.outer(a, a)  # ∂a_k/∂s_l = a_k (δ_kl - a_l)
    (grad,) = student.local_gradients("softmax", [scores], upstream)
    assert np.shape(grad) == (5,), f"the gradient should have the scores' shape (5,), got {np.shape(grad)}"
    np.testing.assert_allclose(grad, jacobian.T @ upstream, rtol=1e-10, atol=1e-14,
                               err_msg="∂ℓ/∂s_l should be Σ_k g_k a_k (δ_kl - a_l)")


@pytest.mark.exercise("2.4", requires_values=True)
def test_softmax_keeps_float32(student):
    dtypes = student.softmax_gradient_dtypes(np.array([[1.0, 2.0, -np.inf]], dtype=np.float32))
    assert dtypes == {"weights": "float32", "gradient": "float32"}, f"float32 scores gave {dtypes}"


@pytest.mark.exercise("2.4", requires_values=True)  # checked outside the function
@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_plus_infinity_or_nan_scores_raise_instead_of_returning_nan(bad, student):
    with pytest.raises(ValueError, match=r"\+inf or NaN"):
        student.softmax(np.array([0.0, bad, 1.0]))
