"""Specification of minitorch.paper.attention: the causal mask and the two normalisers (chapter 03).

Notation: scores s_ik = q_i · k_k, weights a_ik, 0-based query i and key k.
A key is *visible* to query i if k <= i and *future* if k > i.
The graded tests (3.1-3.3) reach the code under test only through the ``student`` fixture
(minitorch/exercises/grader/sandboxed/probes.py), which returns the weights as arrays. They check properties and
small cases worked out by hand, never an answer computed here; the instructor's hidden tests compare with the
definitions on seeded inputs of other sizes.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import minitorch
from gradient_checks import check_gradients  # (tests/gradient_checks.py)
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
@pytest.mark.parametrize("length", [1, 3, 21])
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


@pytest.mark.exercise("3.1", requires_values=True)  # a table of these four masks passes it: it pays with the others
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
@pytest.mark.parametrize("length", [17, 24])  # longer than any mask these tests write out
def test_causal_mask_hides_from_each_query_exactly_the_keys_after_it(length, student):
    answer = student.causal_mask(length)
    assert answer["shape"] == (length, length) and answer["dtype"] == "bool", (
        f"causal_mask({length}) should be a boolean ({length}, {length}) array, got shape {answer['shape']}, "
        f"dtype {answer['dtype']}")
    mask = np.asarray(answer["mask"])
    seen_by_itself = ~np.diagonal(mask)
    assert seen_by_itself.all(), (
        f"causal_mask({length})[i, i] is True at i = {int(np.argmin(seen_by_itself))}: a query sees its own key "
        f"(the diagonal k = i is visible, False)")
    both = np.argwhere(mask & mask.T)
    assert len(both) == 0, (
        f"causal_mask({length}) is True at both (i, k) = {tuple(map(int, both[0]))} and (k, i): of two positions, "
        f"only the later one lies in the other's future")
    neither = np.argwhere(~mask & ~mask.T & ~np.eye(length, dtype=bool))
    assert len(neither) == 0, (
        f"causal_mask({length}) is False at both (i, k) = {tuple(map(int, neither[0]))} and (k, i): of two "
        f"different positions, the later one lies in the other's future")
    after = mask.sum(axis=1)  # how many keys each query may not see
    wrong = np.flatnonzero(after != length - 1 - np.arange(length))
    assert len(wrong) == 0, (
        f"row i = {int(wrong[0])} of causal_mask({length}) has {int(after[wrong[0]])} True entries; query i has "
        f"{length - 1 - int(wrong[0])} keys after it (k = i+1 .. L-1), and only those are True")


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


# Scores of three tokens and the weights they give, worked out by hand: row 1 sees s = (0, log 3), weights
# (1, 3) / 4; row 2 sees (log 2, 0, log 5), weights (2, 1, 5) / 8; the large future scores must not count.
SMALL_SCORES = [[0.7, 9.0, -4.0],
                [0.0, np.log(3.0), 5.0],
                [np.log(2.0), 0.0, np.log(5.0)]]
SMALL_SOFTMAX_WEIGHTS = [[1.0, 0.0, 0.0],
                         [0.25, 0.75, 0.0],
                         [0.25, 0.125, 0.625]]


@pytest.mark.exercise("3.2")
def test_softmax_attention_of_three_tokens_worked_out_by_hand(student):
    for scores, expected in ((np.array([[SMALL_SCORES]]), [[SMALL_SOFTMAX_WEIGHTS]]),
                             (np.array(SMALL_SCORES), SMALL_SOFTMAX_WEIGHTS)):  # (1, 1, 3, 3) and (3, 3)
        weights = student.softmax_attention(scores, future_keys(3))["weights"]
        assert np.shape(weights) == scores.shape, (
            f"weights should have the scores' shape {scores.shape}, got {np.shape(weights)}")
        np.testing.assert_allclose(np.reshape(weights, (3, 3)), SMALL_SOFTMAX_WEIGHTS, atol=1e-12, err_msg=(
            "softmax attention of the scores written out above: a_ik = exp(s_ik) / sum over the visible keys "
            "k' <= i of exp(s_ik'); a future key's score (9.0, 5.0 here) must not count"))


@pytest.mark.exercise("3.2")
def test_softmax_attention_shares_each_row_among_its_visible_keys_as_exp_of_their_scores(exercise_seed, student):
    scores = random_scores(np.random.default_rng(exercise_seed))
    visible = visible_keys(scores.shape[-1])
    weights = student.softmax_attention(scores, future_keys(scores.shape[-1]))["weights"]
    assert np.shape(weights) == scores.shape, (
        f"weights should have the scores' shape {scores.shape}, got {np.shape(weights)}")
    assert (weights[..., visible] > 0).all(), "every visible key gets a positive softmax weight"
    shared = np.where(visible, weights, 0.0).sum(axis=-1)
    assert np.allclose(shared, 1.0), (
        f"the visible keys k <= i of each row must share all of its weight (1); they hold between {shared.min():.4f} "
        f"and {shared.max():.4f}: the future keys must not take part in the softmax")
    # a_ik / a_ik' = exp(s_ik - s_ik') for visible k, k': log a_ik - s_ik is the same for every visible key of row i
    offset = np.log(np.where(visible, weights, 1.0)) - scores
    spread = np.where(visible, offset - offset[..., :1], 0.0)  # key 0 is visible to every query
    assert np.abs(spread).max() < 1e-8, (
        f"within a row, softmax weights must compare as exp(s_ik): a_ik / a_ik' = exp(s_ik - s_ik'); "
        f"log a_ik - s_ik varies across the visible keys of a row by up to {np.abs(spread).max():.3g}")


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


# Scores of four tokens and the weights they give, worked out by hand: max(s_ik, 0) on the visible keys, divided
# by max(i, 1) = 1, 1, 2, 3; a negative score and every future score give 0.
SMALL_RELU_SCORES = [[2.0, 9.0, -4.0, 1.0],
                     [-1.0, 3.0, 5.0, 7.0],
                     [4.0, -2.0, 6.0, 8.0],
                     [1.5, 0.0, -3.0, 4.5]]
SMALL_RELU_WEIGHTS = [[2.0, 0.0, 0.0, 0.0],
                      [0.0, 3.0, 0.0, 0.0],
                      [2.0, 0.0, 3.0, 0.0],
                      [0.5, 0.0, 0.0, 1.5]]


@pytest.mark.exercise("3.3")
def test_relu_attention_of_four_tokens_worked_out_by_hand(student):
    for scores in (np.array([[SMALL_RELU_SCORES]]), np.array(SMALL_RELU_SCORES)):  # (1, 1, 4, 4) and (4, 4)
        weights = student.relu_attention(scores, future_keys(4))["weights"]
        assert np.shape(weights) == scores.shape, (
            f"weights should have the scores' shape {scores.shape}, got {np.shape(weights)}")
        np.testing.assert_allclose(np.reshape(weights, (4, 4)), SMALL_RELU_WEIGHTS, atol=1e-12, err_msg=(
            "ReLU attention of the scores written out above: max(s_ik, 0) / max(i, 1) on the visible keys k <= i, "
            "0 on the future keys"))


@pytest.mark.exercise("3.3")
def test_relu_attention_weighs_the_visible_keys_of_a_row_in_proportion_to_their_positive_scores(exercise_seed,
                                                                                                  student):
    scores = random_scores(np.random.default_rng(exercise_seed))
    weights = student.relu_attention(scores, future_keys(scores.shape[-1]))["weights"]
    assert np.shape(weights) == scores.shape, (
        f"weights should have the scores' shape {scores.shape}, got {np.shape(weights)}")
    counted = (scores > 0) & visible_keys(scores.shape[-1])  # visible keys with a positive score
    assert (weights[counted] > 0).all() and (weights[~counted] == 0).all(), (
        "a weight must be positive exactly where the key is visible (k <= i) and its score positive, else 0")
    per_score = weights / np.where(counted, scores, 1.0)  # a_ik / s_ik: one factor per row, where it counts
    spread = np.where(counted, per_score, -np.inf).max(axis=-1) - np.where(counted, per_score, np.inf).min(axis=-1)
    spread = np.where(counted.any(axis=-1), spread, 0.0)
    assert spread.max() < 1e-9, (
        "within a row, each weight must be its score times the same factor (one fixed divisor per row); "
        f"a_ik / s_ik varies within a row by up to {spread.max():.3g}")


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
    expected_row_sums = [3.0, 6.0, 4.5, 4.0, 3.75]  # row i: i+1 visible keys of score 3, divided by 1, 1, 2, 3, 4
    assert np.allclose(weights.sum(axis=-1), expected_row_sums), (
        f"with every score 3, the rows should sum to {expected_row_sums}, got {weights.sum(axis=-1).tolist()}: "
        f"divide row i by max(i, 1), not by the row's sum"
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


@pytest.mark.parametrize("normaliser, parameters, named", [
    ("softmax", {"sink_logit": minitorch.tensor(0.0)}, "sink_logit=Tensor(0.)"),
    ("relu", {"scale": 2.0}, "scale=2.0"),
])
def test_attend_refuses_a_parameter_the_normaliser_does_not_take(normaliser, parameters, named):
    queries = minitorch.tensor(np.ones((3, 2)))
    with pytest.raises(TypeError) as error:
        attend(queries, queries, queries, normaliser, **parameters)
    message = str(error.value)
    assert named in message and repr(normaliser) in message and "takes no parameters" in message, (
        f"attend should name the argument, its value and the normaliser that takes none, got: {message}")



@pytest.mark.parametrize("normaliser", [softmax_attention, relu_attention], ids=["softmax", "relu"])
@pytest.mark.parametrize("mask_length", [3, 5])
def test_a_mask_that_does_not_fit_the_scores_is_named(normaliser, mask_length):
    """A mask of another length gave NumPy's broadcasting error about an inner `where`."""
    with pytest.raises(ValueError, match=rf"the mask `future` has shape \({mask_length}, {mask_length}\) and the "
                                         rf"scores \(2, 4, 4\); the mask must be \(4, 4\)"):
        normaliser(minitorch.tensor(np.ones((2, 4, 4))), causal_mask(mask_length))

@pytest.mark.parametrize("normaliser,owner", [("softmax_attention", "softmax_attention"),
                                              ("relu_attention", "relu_attention"),
                                              ("sigmoid_attention", "sigmoid_attention"),
                                              ("softpick_attention", "softpick_attention"),
                                              ("softmax1_attention", "softmax_with_sink")])
def test_a_mask_that_is_not_boolean_is_named_by_the_normaliser_given_it(normaliser, owner):
    """An int mask gave "where: the condition must be a boolean mask", a call inside the normaliser."""
    from minitorch.paper import sink_free

    function = getattr(attention, normaliser, None) or getattr(sink_free, normaliser)
    with pytest.raises(TypeError, match=rf"^{owner}: the mask `future` must be boolean \(True on the future keys\), "
                                        r"as causal_mask\(L\) makes it, got dtype int64"):
        function(minitorch.tensor(np.ones((1, 1, 3, 3))), causal_mask(3).astype(int))


def test_attend_names_a_parameter_the_normaliser_needs():
    import minitorch.paper.sink_free  # noqa: F401 - registers 'sink_logit'

    queries = minitorch.tensor(np.ones((3, 2)))
    with pytest.raises(TypeError) as error:
        attend(queries, queries, queries, "sink_logit")
    message = str(error.value)
    assert "'sink_logit'" in message and "sink_logit is missing" in message, (
        f"attend should name the normaliser and the parameter it needs, got: {message}")


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


@pytest.mark.parametrize("normalise, error, culprit", [  # not NumPy's matmul words or "no attribute 'detach'"
    (lambda scores, future: scores[..., :1], ValueError,
     r"attend: the normaliser 'broken' must return weights of its scores' shape \(1, 1, 3, 3\) .*got \(1, 1, 3, 1\)"),
    (lambda scores, future: np.ones(scores.shape), TypeError,
     r"attend: the normaliser 'broken' must return the weights as a Tensor .*got ndarray"),
    (lambda scores, future: minitorch.softmax(scores), ValueError,  # the mask ignored: row 0 reads keys 1 and 2
     r"attend: the normaliser 'broken' put weight 0.333 on a future key \(row 0, key 1\); a causal normaliser"),
    (lambda scores, future: minitorch.where(future, 0.0, scores * 0.0 - 1.0), ValueError,  # the metrics refused later
     r"attend: the normaliser 'broken' gave the weight -1 \(row 0, key 0\); attention weights are >= 0"),
    (lambda scores, future: (scores * np.nan).masked_fill(future, 0.0), ValueError,  # NaN on every visible key
     r"attend: the normaliser 'broken' gave the weight nan \(row 0, key 0\); attention weights are finite numbers"),
], ids=["wrong-shape", "an-ndarray", "weight-on-future-keys", "negative-weights", "nan-weights"])
@pytest.mark.parametrize("path", ["readable", "fast"])
def test_attend_names_a_registered_normaliser_whose_weights_are_no_causal_weights_of_the_scores_shape(
        normalise, error, culprit, path, monkeypatch):
    from minitorch import fast
    from minitorch.paper.models import build_model

    monkeypatch.setattr(attention, "NORMALISERS", dict(attention.NORMALISERS))  # the entry goes with the test
    monkeypatch.setattr(attention, "NORMALISER_OPTIONS", dict(attention.NORMALISER_OPTIONS))
    attention.register_normaliser("broken")(normalise)
    model = build_model(16, 1, 1, "broken", False)
    with pytest.raises(error, match=culprit):
        (fast.speed_up(model) if path == "fast" else model)(np.zeros((1, 3, 16)))


class _CallableSoftmax:
    def __call__(self, scores, future):
        return attention.softmax_attention(scores, future)


@pytest.mark.parametrize("make, same_as", [(lambda: functools.partial(attention.relu_attention), "relu"),
                                           (_CallableSoftmax, "softmax")], ids=["a-partial", "a-callable-object"])
def test_any_function_registers_as_a_normaliser_and_registers_again_under_its_name(make, same_as, monkeypatch):
    """A partial or a callable object has no __qualname__: registering one failed in Python's AttributeError."""
    monkeypatch.setattr(attention, "NORMALISERS", dict(attention.NORMALISERS))  # the entry goes with the test
    monkeypatch.setattr(attention, "NORMALISER_OPTIONS", dict(attention.NORMALISER_OPTIONS))
    attention.register_normaliser("wrapped")(make())
    attention.register_normaliser("wrapped")(make())  # the cell run again
    queries = minitorch.tensor(np.arange(12.0).reshape(1, 3, 4) / 10)
    weights, expected = (attend(queries, queries, queries, name)[1].data for name in ("wrapped", same_as))
    np.testing.assert_array_equal(weights, expected, err_msg=f"the registered normaliser is not {same_as}'s")
    with pytest.raises(ValueError, match="register_normaliser: the name 'softmax' is taken"):
        attention.register_normaliser("softmax")(make())
    with pytest.raises(TypeError, match=r"register_normaliser: a normaliser must be a function .*got 3 \(int\)"):
        attention.register_normaliser("three")(3)


@pytest.mark.parametrize("function, parameters, culprit", [
    (lambda scores: scores, None, r"'takes_one' must take \(scores, future\), got a function of \(scores\)"),
    (lambda scores, future: scores, {"alpha": lambda heads: np.zeros(heads)},
     r"'takes_one' must take \(scores, future\) and its parameters \['alpha'\] by name, got a function of"),
], ids=["one-argument", "no-parameter"])
def test_register_normaliser_names_a_normaliser_that_cannot_take_what_attend_gives_it(function, parameters, culprit,
                                                                                         monkeypatch):
    """attend calls it as (scores, future, **parameters): Python's words on the first forward named neither."""
    monkeypatch.setattr(attention, "NORMALISERS", dict(attention.NORMALISERS))  # the entry goes with the test
    monkeypatch.setattr(attention, "NORMALISER_OPTIONS", dict(attention.NORMALISER_OPTIONS))
    with pytest.raises(TypeError, match="^register_normaliser: the normaliser " + culprit):
        attention.register_normaliser("takes_one", parameters=parameters)(function)
    assert "takes_one" not in attention.NORMALISERS, "a refused normaliser was registered"


def test_a_normaliser_parameter_whose_initial_value_is_no_number_is_named_with_its_normaliser(monkeypatch):
    from minitorch.paper.models import build_model

    monkeypatch.setattr(attention, "NORMALISERS", dict(attention.NORMALISERS))  # the entry goes with the test
    monkeypatch.setattr(attention, "NORMALISER_OPTIONS", dict(attention.NORMALISER_OPTIONS))
    attention.register_normaliser("worded", parameters={"scale": lambda heads: "zero"})(
        lambda scores, future, scale: attention.softmax_attention(scores, future))
    with pytest.raises(TypeError, match=r"^AttentionLayer: the initial value of parameter 'scale' of normaliser "
                                        r"'worded' must be an array of numbers, got 'zero' \(str\)"):
        build_model(16, 1, 1, "worded", False)


def test_a_taken_normaliser_name_cannot_be_silently_replaced():
    with pytest.raises(ValueError, match="taken"):
        @attention.register_normaliser("softmax")
        def not_the_softmax(scores, future):
            return scores
    assert attention.NORMALISERS["softmax"] is attention.softmax_attention



def _tensor(*shape):
    return minitorch.tensor(np.zeros(shape))


@pytest.mark.parametrize("arguments,error,culprit", [  # named with attend and why, not NumPy's bare matmul message
    (lambda: (np.zeros((4, 2)),) * 3, TypeError, r"attend: queries must be a Tensor .*got ndarray; wrap"),
    (lambda: (_tensor(4, 2), _tensor(4, 2), np.zeros((4, 2))), TypeError, r"attend: values must be a Tensor"),
    (lambda: ([[0.0, 0.0]] * 4, _tensor(4, 2), _tensor(4, 2)), TypeError, r"attend: queries must be a Tensor.*list"),
    (lambda: (_tensor(4),) * 3, ValueError, r"attend: queries must have shape \(\.\.\., L, d\) .*got \(4,\)"),
], ids=["three-arrays", "values-an-array", "queries-a-list", "1-d-tensors"])
def test_attend_names_an_argument_that_is_not_a_tensor_of_shape_l_by_d(arguments, error, culprit):
    with pytest.raises(error, match=culprit):
        attend(*arguments())


@pytest.mark.parametrize("normaliser", ["softmax", "relu"])
def test_a_normaliser_takes_an_array_of_scores_as_a_tensor_and_names_scores_that_are_neither(normaliser):
    """softmax_attention(np.zeros((4, 4)), mask) raised AttributeError (an ndarray has no masked_fill) where
    relu_attention took the array: both take an array of scores as the Tensor it makes, and refuse other things
    naming the scores."""
    function, scores = attention.NORMALISERS[normaliser], np.random.default_rng(3).normal(size=(4, 4))
    from_array = function(scores, causal_mask(4))
    assert isinstance(from_array, minitorch.Tensor), (
        f"{normaliser} attention of an array of scores should give a Tensor, got {type(from_array).__name__}")
    np.testing.assert_array_equal(from_array.data, function(minitorch.tensor(scores), causal_mask(4)).data,
                                  err_msg=f"{normaliser} attention should weigh an array as the same Tensor")
    with pytest.raises(TypeError, match=rf"{normaliser}_attention: scores must be a Tensor .*got str"):
        function("scores", causal_mask(4))
