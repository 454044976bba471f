"""Specification of minitorch.paper.attention: the causal mask and the two normalisers (chapter 03).

Notation: scores s_ik = q_i · k_k, weights a_ik, 0-based query i and key k.
A key is *visible* to query i if k <= i and *future* if k > i.
The graded tests (3.1-3.3) reach the code under test only through the ``student`` fixture
(minitorch/exercises/grader/sandboxed/probes.py), which returns the weights as arrays.
"""

from __future__ import annotations

import numpy as np
import pytest

import minitorch
from minitorch.exercises.grader.trusted.student_code import check_gradients
from minitorch.paper import attention
from minitorch.paper.attention import attend, causal_mask, relu_attention, softmax_attention
from minitorch.gradcheck import gradcheck

# the causal mask as literal data, so that exercises 3.2 and 3.3 can be graded before 3.1 is done
from causal_literals import future_keys, visible_keys  # noqa: E402  (tests/causal_literals.py)


def random_scores(rng: np.random.Generator, batch: int = 3, heads: int = 2, length: int = 6) -> np.ndarray:
    """Scores (B, H, L, L) of both signs, large enough that ReLU cuts some of them."""
    return rng.normal(0.0, 2.0, size=(batch, heads, length, length))


# ----------------------------------------------------------------------
# Exercise 3.1: the causal mask


@pytest.mark.exercise("3.1", requires_values=True)  # zeros of shape (L, L) pass it: it pays with the values
@pytest.mark.parametrize("length", [1, 2, 5, 16])
def test_causal_mask_is_a_boolean_L_by_L_array(length, student):
    mask = student.causal_mask(length)
    assert mask["type"] == "ndarray", f"causal_mask({length}) should return a NumPy array, got {mask['type']}"
    assert mask["shape"] == (length, length), (
        f"causal_mask({length}) should have shape ({length}, {length}), got {mask['shape']}")
    assert mask["dtype"] == "bool", (
        f"causal_mask({length}) should be boolean (True = future key), got dtype {mask['dtype']}")


# The masks of the first lengths, written out (True: key k lies in the future of query i, row i, column k).
SMALL_MASKS = {
    1: [[False]],
    2: [[False, True],
        [False, False]],
    3: [[False, True, True],
        [False, False, True],
        [False, False, False]],
    4: [[False, True, True, True],
        [False, False, True, True],
        [False, False, False, True],
        [False, False, False, False]],
}


@pytest.mark.exercise("3.1")
def test_causal_masks_of_lengths_1_to_4_are_the_ones_written_out(student):
    for length, expected in SMALL_MASKS.items():
        mask = student.causal_mask(length)
        assert mask["shape"] == (length, length) and mask["dtype"] == "bool", (
            f"causal_mask({length}) should be a boolean ({length}, {length}) array, got shape {mask['shape']}, "
            f"dtype {mask['dtype']}")
        np.testing.assert_array_equal(mask["mask"], expected, err_msg=(
            f"causal_mask({length}) is wrong: True exactly where key k lies in the future of query i (k > i); "
            f"the diagonal k = i is visible"))


@pytest.mark.exercise("3.1")
@pytest.mark.parametrize("length", [5, 16])
def test_causal_mask_is_true_exactly_at_future_keys(length, student):
    mask = student.causal_mask(length)["mask"]
    assert np.shape(mask) == (length, length), f"causal_mask({length}) should be an ({length}, {length}) array"
    for i in range(length):
        for k in range(length):
            assert mask[i, k] == (k > i), (
                f"causal_mask({length})[{i}, {k}] is {mask[i, k]}: it must be True exactly when key k "
                f"lies in the future of query i (k > i); the diagonal k = i is visible"
            )


# ----------------------------------------------------------------------
# Exercise 3.2: softmax attention


@pytest.mark.exercise("3.2", requires_values=True)  # uniform weights pass it
def test_softmax_attention_rows_sum_to_one(exercise_seed, student):
    scores = random_scores(np.random.default_rng(exercise_seed))
    weights = student.softmax_attention(scores, future_keys(scores.shape[-1]))["weights"]
    assert np.shape(weights) == scores.shape, (
        f"weights should have the scores' shape {scores.shape}, got {np.shape(weights)}")
    row_sums = weights.sum(axis=-1)
    assert np.allclose(row_sums, 1.0), (
        f"every softmax row must lie on the probability simplex (sum to 1); row sums range over "
        f"[{row_sums.min():.6f}, {row_sums.max():.6f}]"
    )
    assert (weights >= 0).all(), "softmax weights can never be negative"


@pytest.mark.exercise("3.2", requires_values=True)  # zeros pass it
def test_softmax_attention_puts_exactly_zero_on_future_keys(exercise_seed, student):
    scores = random_scores(np.random.default_rng(exercise_seed))
    future = future_keys(scores.shape[-1])
    weights = student.softmax_attention(scores, future)["weights"]
    leaked = np.abs(weights[..., future]).max()
    assert leaked == 0.0, (
        f"a future key (k > i) received weight {leaked:.3g}; it must get exactly 0 "
        f"(mask it with -inf before the softmax, so that exp(-inf) = 0)"
    )


@pytest.mark.exercise("3.2")
def test_softmax_attention_matches_an_explicit_loop(exercise_seed, student):
    scores = random_scores(np.random.default_rng(exercise_seed))
    length = scores.shape[-1]
    expected = np.zeros_like(scores)
    for b, h, i in np.ndindex(*scores.shape[:-1]):
        visible = scores[b, h, i, : i + 1]  # keys 0..i
        expected[b, h, i, : i + 1] = np.exp(visible) / np.exp(visible).sum()
    weights = student.softmax_attention(scores, future_keys(length))["weights"]
    assert np.allclose(weights, expected), (
        f"softmax attention differs from exp(s_ik) / sum_(k'<=i) exp(s_ik') by up to "
        f"{np.abs(weights - expected).max():.3g}"
    )


@pytest.mark.exercise("3.2", requires_values=True)  # zeros pass it
def test_softmax_attention_ignores_the_scores_of_future_keys(exercise_seed, student):
    rng = np.random.default_rng(exercise_seed)
    scores = random_scores(rng)
    future = future_keys(scores.shape[-1])
    changed = scores.copy()
    changed[..., future] = rng.normal(0.0, 50.0, size=changed[..., future].shape)
    before = student.softmax_attention(scores, future)["weights"]
    after = student.softmax_attention(changed, future)["weights"]
    assert np.allclose(before, after), (
        "changing the scores of future keys changed the weights: the mask leaks the future")


@pytest.mark.exercise("3.2", requires_values=True)  # the scores returned pass it
def test_softmax_attention_gradient_matches_finite_differences(exercise_seed, student):
    scores = random_scores(np.random.default_rng(exercise_seed), batch=2, heads=1, length=4)
    check_gradients(student, "softmax_attention", [scores], exercise_seed, future=future_keys(4))


# ----------------------------------------------------------------------
# Exercise 3.3: ReLU attention


def relu_attention_by_loop(scores: np.ndarray) -> np.ndarray:
    """a_ik = max(s_ik, 0) / max(i, 1) for k <= i, else 0: one entry at a time."""
    expected = np.zeros_like(scores)
    for b, h, i, k in np.ndindex(*scores.shape):
        if k <= i:
            expected[b, h, i, k] = max(scores[b, h, i, k], 0.0) / max(i, 1)
    return expected


@pytest.mark.exercise("3.3")
def test_relu_attention_matches_an_explicit_loop(exercise_seed, student):
    scores = random_scores(np.random.default_rng(exercise_seed))
    weights = student.relu_attention(scores, future_keys(scores.shape[-1]))["weights"]
    assert np.shape(weights) == scores.shape, (
        f"weights should have the scores' shape {scores.shape}, got {np.shape(weights)}")
    expected = relu_attention_by_loop(scores)
    worst = np.unravel_index(np.abs(weights - expected).argmax(), scores.shape)
    assert np.allclose(weights, expected), (
        f"ReLU attention must be max(s_ik, 0) / max(i, 1) on visible keys and 0 on future keys; at "
        f"(b, h, i, k) = {tuple(int(v) for v in worst)} got {weights[worst]:.6g}, expected {expected[worst]:.6g}"
    )


@pytest.mark.exercise("3.3", requires_values=True)  # zeros pass it
def test_relu_attention_puts_exactly_zero_on_future_keys_even_with_positive_scores(student):
    scores = np.full((1, 1, 5, 5), 3.0)  # every score positive, the future ones too
    weights = student.relu_attention(scores, future_keys(5))["weights"][0, 0]
    assert (weights[future_keys(5)] == 0).all(), (
        f"future keys got weight; the weights on future keys are\n{np.where(future_keys(5), weights, 0.0)}"
    )


@pytest.mark.exercise("3.3")
def test_relu_attention_divides_by_the_fixed_row_divisor_not_the_row_sum(student):
    scores = np.full((1, 1, 5, 5), 3.0)
    weights = student.relu_attention(scores, future_keys(5))["weights"][0, 0]
    assert np.shape(weights) == (5, 5), f"weights should have the scores' shape (5, 5), got {np.shape(weights)}"
    expected_row_sums = [3.0 * (i + 1) / max(i, 1) for i in range(5)]  # i+1 visible keys, each 3 / max(i, 1)
    assert np.allclose(weights.sum(axis=-1), expected_row_sums), (
        f"with every score 3, row i should sum to 3 (i+1) / max(i, 1) = {expected_row_sums}, got "
        f"{weights.sum(axis=-1).tolist()}: divide by max(i, 1), not by the row's sum"
    )


@pytest.mark.exercise("3.3", requires_values=True)  # zeros pass it
def test_relu_attention_row_is_all_zero_when_every_visible_score_is_negative(exercise_seed, student):
    scores = -np.abs(np.random.default_rng(exercise_seed).normal(size=(1, 1, 4, 4)))
    weights = student.relu_attention(scores, future_keys(4))["weights"]
    assert (weights == 0).all(), (
        f"negative scores must give weight 0 (ReLU attention may attend to nothing), got\n{weights[0, 0]}")


@pytest.mark.exercise("3.3", requires_values=True)  # the scores returned pass it
def test_relu_attention_gradient_matches_finite_differences(exercise_seed, student):
    scores = random_scores(np.random.default_rng(exercise_seed), batch=2, heads=1, length=4)
    scores[np.abs(scores) < 1e-3] = 0.5  # keep away from the kink of max(s, 0)
    check_gradients(student, "relu_attention", [scores], exercise_seed, future=future_keys(4))


# ----------------------------------------------------------------------
# attend and the normaliser registry


@pytest.mark.parametrize("normaliser", ["softmax", "relu"])
def test_attend_returns_the_weighted_sum_of_values_and_the_weights(normaliser):
    rng = np.random.default_rng(1)
    batch, heads, length, d, d_values = 2, 3, 5, 4, 6
    queries = rng.normal(size=(batch, heads, length, d))
    keys = rng.normal(size=(batch, heads, length, d))
    values = rng.normal(size=(batch, heads, length, d_values))
    output, weights = attend(minitorch.tensor(queries), minitorch.tensor(keys), minitorch.tensor(values), normaliser)
    assert output.shape == (batch, heads, length, d_values), f"output should be (B, H, L, d_values), got {output.shape}"
    assert weights.shape == (batch, heads, length, length), f"weights should be (B, H, L, L), got {weights.shape}"
    scores = queries @ keys.swapaxes(-1, -2)  # s_ik = q_i · k_k
    expected_weights = attention.NORMALISERS[normaliser](minitorch.tensor(scores), causal_mask(length)).data
    assert np.allclose(weights.data, expected_weights), (
        "attend's weights are not the normaliser applied to s_ik = q_i · k_k")
    assert np.allclose(output.data, expected_weights @ values), "attend's output is not o_i = sum_k a_ik v_k"


@pytest.mark.parametrize("normaliser", ["softmax", "relu"])
def test_attend_gradient_matches_finite_differences(normaliser):
    rng = np.random.default_rng(2)
    queries, keys, values = (rng.normal(size=(2, 2, 5, 3)) for _ in range(3))
    gradcheck(lambda q, k, v: attend(q, k, v, normaliser)[0], [queries, keys, values])


def test_attend_without_gradients_builds_no_graph():
    queries = minitorch.tensor(np.ones((1, 4, 2)), requires_grad=True)
    with minitorch.no_grad():
        output, weights = attend(queries, queries, queries)
    assert not output.requires_grad and not weights.requires_grad, "inside no_grad(), attend must record nothing"


def test_attend_rejects_queries_and_keys_of_different_shapes():
    queries = minitorch.tensor(np.zeros((2, 5, 4)))
    keys = minitorch.tensor(np.zeros((2, 5, 3)))
    values = minitorch.tensor(np.zeros((2, 5, 4)))
    with pytest.raises(ValueError, match="queries"):
        attend(queries, keys, values)


def test_attend_rejects_values_of_a_different_length():
    queries = keys = minitorch.tensor(np.zeros((2, 5, 4)))
    values = minitorch.tensor(np.zeros((2, 6, 4)))
    with pytest.raises(ValueError, match="values"):
        attend(queries, keys, values)


def test_the_registry_holds_softmax_and_relu():
    assert attention.NORMALISERS.get("softmax") is softmax_attention, (
        "'softmax' should be registered as softmax_attention")
    assert attention.NORMALISERS.get("relu") is relu_attention, "'relu' should be registered as relu_attention"


def test_an_unknown_normaliser_raises_value_error_listing_the_known_ones():
    queries = minitorch.tensor(np.zeros((1, 3, 2)))
    with pytest.raises(ValueError) as error:
        attend(queries, queries, queries, normaliser="cosine")
    message = str(error.value)
    assert "cosine" in message and "softmax" in message and "relu" in message, (
        f"the error should name the unknown normaliser and list the known ones, got: {message}"
    )


def test_a_registered_normaliser_is_usable_by_a_model_by_name(monkeypatch):
    from minitorch.paper.models import SingleLayerModel
    from minitorch.paper.task import make_inputs

    # a private copy of the registry, so that the new entry disappears after this test
    monkeypatch.setattr(attention, "NORMALISERS", dict(attention.NORMALISERS))

    @attention.register_normaliser("running_average")
    def running_average(scores, future):
        """a_ik = 1/(i+1) on visible keys, whatever the scores."""
        length = scores.shape[-1]
        ones = (scores * 0.0 + 1.0).masked_fill(future, 0.0)
        return ones / np.arange(1, length + 1).reshape(length, 1)

    assert attention.get_normaliser("running_average") is running_average
    model = SingleLayerModel(width=6, heads=2, normaliser="running_average")
    x, _ = make_inputs(3, np.random.default_rng(0), length=5, width=6)
    _, (weights,) = model(x, return_attention=True)
    expected = visible_keys(5) / np.arange(1, 6)[:, None]
    assert np.allclose(weights, expected), "a model built with normaliser='running_average' did not use it"


def test_a_taken_normaliser_name_cannot_be_silently_replaced():
    with pytest.raises(ValueError, match="taken"):
        @attention.register_normaliser("softmax")
        def not_the_softmax(scores, future):
            return scores
    assert attention.NORMALISERS["softmax"] is attention.softmax_attention



def _tensor(*shape):
    return minitorch.tensor(np.zeros(shape))


@pytest.mark.parametrize("arguments,error,culprit", [  # M5-10: NumPy's matmul message named neither attend nor why
    (lambda: (np.zeros((4, 2)),) * 3, TypeError, r"attend: queries must be a Tensor .*got ndarray; wrap"),
    (lambda: (_tensor(4, 2), _tensor(4, 2), np.zeros((4, 2))), TypeError, r"attend: values must be a Tensor"),
    (lambda: ([[0.0, 0.0]] * 4, _tensor(4, 2), _tensor(4, 2)), TypeError, r"attend: queries must be a Tensor.*list"),
    (lambda: (_tensor(4),) * 3, ValueError, r"attend: queries must have shape \(\.\.\., L, d\) .*got \(4,\)"),
], ids=["three-arrays", "values-an-array", "queries-a-list", "1-d-tensors"])
def test_attend_names_an_argument_that_is_not_a_tensor_of_shape_l_by_d(arguments, error, culprit):
    with pytest.raises(error, match=culprit):
        attend(*arguments())
