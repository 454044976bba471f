"""Hidden tests of exercise 2.4, the stable softmax, forward and fused backward (chapter 02): a student edition never
holds this file (`registry.HIDDEN_TESTS`); the class grader and the Gradescope bundle run it, with the grader's seed,
and it carries the exercise's hidden share of its points.

Shapes, axes, scale of the scores and masks the public tests (tests/test_softmax.py) do not use, compared with the
softmax and its backward written here in NumPy. This file imports nothing of the library, so an instructor can run
it on a student's copy by hand and the formulas it compares with stay the instructor's.
"""

from __future__ import annotations

import numpy as np
import pytest

RTOL, ATOL = 1e-10, 1e-14


def reference_softmax(scores: np.ndarray, axis: int) -> np.ndarray:
    exponentials = np.exp(scores - scores.max(axis=axis, keepdims=True))  # -inf scores give exactly 0
    return exponentials / exponentials.sum(axis=axis, keepdims=True)


def reference_backward(weights: np.ndarray, upstream: np.ndarray, axis: int) -> np.ndarray:
    """∂ℓ/∂s_l = a_l (g_l - Σ_k g_k a_k), one sum per slice along `axis`."""
    return weights * (upstream - (upstream * weights).sum(axis=axis, keepdims=True))


def scores_and_upstream(exercise_seed: int, shape: tuple, scale: float, masked: bool = False, axis: int = -1):
    """Scores of `scale` around an offset of ±(750 to 900) per slice (so e^score overflows to inf, or underflows to
    0, without the shift), and an upstream gradient; with `masked`, about a third of the scores -inf, never a whole
    slice along `axis`."""
    rng = np.random.default_rng([exercise_seed, *shape, int(scale)])
    slices = np.sum(np.zeros(shape), axis=axis, keepdims=True).shape
    offsets = rng.choice([-1.0, 1.0], size=slices) * rng.uniform(750, 900, size=slices)
    scores = rng.normal(size=shape) * scale + offsets
    if masked:
        hidden = rng.random(shape) < 0.35
        kept = np.expand_dims(rng.integers(0, shape[axis], size=np.sum(hidden, axis=axis).shape), axis)
        np.put_along_axis(hidden, kept, False, axis=axis)  # one entry per slice stays
        scores = np.where(hidden, -np.inf, scores)
    return scores, rng.normal(size=shape)


CASES = [((7,), 0, 1.0), ((3, 7), -1, 10.0), ((4, 3, 5), 1, 4.0), ((2, 3, 2, 4), 2, 30.0), ((5, 2), 0, 0.01)]


@pytest.mark.exercise("2.4")
@pytest.mark.parametrize("shape,axis,scale", CASES, ids=str)
def test_softmax_weights_and_gradient(shape, axis, scale, exercise_seed, student):
    scores, upstream = scores_and_upstream(exercise_seed, shape, scale, axis=axis)
    found = student.softmax_and_gradient(scores, upstream, axis=axis)
    weights = reference_softmax(scores, axis)
    assert np.shape(found["weights"]) == shape, f"the weights of {shape} scores have shape {np.shape(found['weights'])}"
    np.testing.assert_allclose(found["weights"], weights, rtol=RTOL, atol=ATOL,
                               err_msg=f"the weights of {shape} scores along axis {axis} are wrong")
    assert found["gradient"] is not None and np.shape(found["gradient"]) == shape, (
        f"the gradient of {shape} scores should have their shape")
    np.testing.assert_allclose(found["gradient"], reference_backward(weights, upstream, axis), rtol=RTOL, atol=ATOL,
                               err_msg=f"the gradient of {shape} scores along axis {axis} is wrong")


@pytest.mark.exercise("2.4")
@pytest.mark.parametrize("shape,axis", [((6, 6), -1), ((3, 4, 5), 1), ((5, 3), 0)], ids=str)
def test_softmax_of_masked_scores_and_its_gradient(shape, axis, exercise_seed, student):
    scores, upstream = scores_and_upstream(exercise_seed, shape, 3.0, masked=True, axis=axis)
    found = student.softmax_and_gradient(scores, upstream, axis=axis)
    weights = reference_softmax(scores, axis)
    masked = np.isneginf(scores)
    np.testing.assert_allclose(found["weights"], weights, rtol=RTOL, atol=ATOL,
                               err_msg=f"the weights of masked {shape} scores along axis {axis} are wrong")
    assert np.all(found["weights"][masked] == 0.0), "a masked score must get weight exactly 0"
    gradient = found["gradient"]
    assert gradient is not None and np.all(np.isfinite(gradient)), "the gradient must be finite beside -inf scores"
    assert np.all(gradient[masked] == 0.0), "a masked score must get gradient exactly 0"
    np.testing.assert_allclose(gradient, reference_backward(weights, upstream, axis), rtol=RTOL, atol=ATOL,
                               err_msg=f"the gradient of masked {shape} scores along axis {axis} is wrong")


@pytest.mark.exercise("2.4")
def test_softmax_backward_alone(exercise_seed, student):
    scores, upstream = scores_and_upstream(exercise_seed, (2, 6, 3), 2.0, axis=1)
    (gradient,) = student.local_gradients("softmax", [scores], upstream, axis=1)
    expected = reference_backward(reference_softmax(scores, 1), upstream, 1)
    np.testing.assert_allclose(gradient, expected, rtol=RTOL, atol=ATOL,
                               err_msg="the softmax's own backward on (2, 6, 3) scores along axis 1 is wrong")


@pytest.mark.exercise("2.4")
def test_softmax_in_float32_matches_the_float64_values(exercise_seed, student):
    scores, upstream = scores_and_upstream(exercise_seed, (4, 9), 5.0)
    found = student.softmax_and_gradient(scores.astype(np.float32), upstream.astype(np.float32))
    weights, gradient = np.asarray(found["weights"]), np.asarray(found["gradient"])
    assert (str(weights.dtype), str(gradient.dtype)) == ("float32", "float32"), (
        f"float32 scores gave weights of {weights.dtype} and a gradient of {gradient.dtype}")  # measured here
    single = scores.astype(np.float32).astype(np.float64)
    expected = reference_softmax(single, -1)
    np.testing.assert_allclose(weights, expected, rtol=1e-5, atol=1e-7, err_msg="float32 weights are wrong")
    np.testing.assert_allclose(gradient, reference_backward(expected, upstream.astype(np.float32), -1), rtol=1e-4,
                               atol=1e-6, err_msg="the float32 gradient is wrong")


@pytest.mark.exercise("2.4", requires_values=True)  # the library's checks pass it whatever the function returns
def test_a_fully_masked_slice_or_a_nan_score_raises(exercise_seed, student):
    scores, _ = scores_and_upstream(exercise_seed, (3, 4, 2), 1.0)
    scores[1, :, 0] = -np.inf  # one slice along axis 1 holds no finite score
    with pytest.raises(ValueError, match="masked"):
        student.softmax(scores, axis=1)
    scores[1, :, 0] = 0.0
    scores[2, 3, 1] = np.nan
    with pytest.raises(ValueError, match=r"\+inf or NaN"):
        student.softmax(scores, axis=1)
