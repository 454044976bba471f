"""Specification of minitorch.paper.sink_free: five normalisers that need no sink (beyond the paper).

Notation: scores s_ik, weights a_ik, 0-based query i and key k, BOS key 0; a key is visible
to query i if k <= i and future if k > i; L is the number of keys. Every normaliser must match
its formula written as a loop over rows (gated: softmax attention's weights, exercise 3.2's, which no test writes
out), give future keys exactly 0 weight and 0 gradient,
pass a float64 gradcheck, and stay finite for scores of ±1000.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import minitorch
from minitorch.paper import attention, sink_free
from minitorch.paper.attention import attend, normaliser_options, softmax_attention
from minitorch.gradcheck import gradcheck
from minitorch.paper.models import SingleLayerModel

import causal_literals  # noqa: E402  (tests/causal_literals.py)

SINK_FREE = ["softmax1", "sink_logit", "sigmoid", "softpick", "gated"]
BATCH, HEADS, LENGTH = 2, 3, 5


def future_keys(length: int = LENGTH) -> np.ndarray:
    return causal_literals.future_keys(length)


def random_scores(seed: int = 0, scale: float = 2.0) -> np.ndarray:
    """Scores (B, H, L, L) of both signs, none within 1e-3 of softpick's and ReLU's kink at 0."""
    scores = np.random.default_rng(seed).normal(0.0, scale, size=(BATCH, HEADS, LENGTH, LENGTH))
    scores[np.abs(scores) < 1e-3] = 0.5
    return scores


def random_sink_logits(seed: int = 1) -> np.ndarray:
    """One S per head, shape (H, 1, 1): broadcasts against the (B, H, L, 1) sink column."""
    return np.random.default_rng(seed).normal(0.0, 1.0, size=(HEADS, 1, 1))


def normalise(name: str, scores, sink_logit=None) -> minitorch.Tensor:
    """The registered normaliser `name` applied to `scores` (array or Tensor); S only for "sink_logit"."""
    scores = scores if isinstance(scores, minitorch.Tensor) else minitorch.tensor(scores)
    parameters = {}
    if name == "sink_logit":
        parameters["sink_logit"] = random_sink_logits() if sink_logit is None else sink_logit
    return attention.get_normaliser(name)(scores, future_keys(scores.shape[-1]), **parameters)


# ----------------------------------------------------------------------
# each formula, one row at a time


def row_by_formula(name: str, visible: np.ndarray, length: int, sink_logit: float) -> np.ndarray:
    """The weights of one row from its visible scores s_i0 .. s_ii, straight from the formula."""
    exponentials = np.exp(visible)
    if name == "softmax1":
        return exponentials / (1.0 + exponentials.sum())
    if name == "sink_logit":
        return exponentials / (np.exp(sink_logit) + exponentials.sum())
    if name == "sigmoid":
        return 1.0 / (1.0 + np.exp(-(visible - np.log(length))))
    if name == "softpick":
        return np.maximum(exponentials - 1.0, 0.0) / (np.abs(exponentials - 1.0).sum() + sink_free.SOFTPICK_EPS)
    raise KeyError(name)


def by_loop(name: str, scores: np.ndarray, sink_logits: np.ndarray) -> np.ndarray:
    expected = np.zeros_like(scores)
    for b, h, i in np.ndindex(*scores.shape[:-1]):
        expected[b, h, i, : i + 1] = row_by_formula(name, scores[b, h, i, : i + 1], scores.shape[-1],
                                                    sink_logits[h, 0, 0])
    return expected


@pytest.mark.parametrize("name", [name for name in SINK_FREE if name != "gated"])  # gated's weights: softmax's,
def test_normaliser_matches_its_formula_written_as_a_loop_over_rows(name):  # test_gated_attention_weights_are_...
    scores, sink_logits = random_scores(), random_sink_logits()
    weights = normalise(name, scores, sink_logits).data
    expected = by_loop(name, scores, sink_logits)
    assert weights.shape == scores.shape, (
        f"{name}: weights should have the scores' shape {scores.shape}, got {weights.shape}"
    )
    worst = np.unravel_index(np.abs(weights - expected).argmax(), scores.shape)
    assert np.allclose(weights, expected, rtol=1e-12, atol=1e-15), (
        f"{name}: at (b, h, i, k) = {tuple(int(v) for v in worst)} got {weights[worst]:.10g}, "
        f"the formula gives {expected[worst]:.10g} (see the formulas in minitorch/paper/sink_free.py)"
    )


@pytest.mark.parametrize("name", SINK_FREE)
def test_future_keys_get_exactly_zero_weight_and_exactly_zero_gradient(name):
    scores = random_scores()
    scores[..., future_keys()] = 50.0  # large future scores: a leak would show
    leaf = minitorch.tensor(scores, requires_grad=True)
    weights = normalise(name, leaf)
    weights.backward(np.random.default_rng(2).normal(size=scores.shape))
    leaked_weight = np.abs(weights.data[..., future_keys()]).max()
    leaked_gradient = np.abs(leaf.grad[..., future_keys()]).max()
    assert leaked_weight == 0.0, f"{name}: a future key (k > i) got weight {leaked_weight:.3g}; it must get exactly 0"
    assert leaked_gradient == 0.0, (
        f"{name}: a future key's score got gradient {leaked_gradient:.3g}; it must get exactly 0, since it cannot "
        f"change any weight"
    )


@pytest.mark.parametrize("name", SINK_FREE)
def test_gradient_with_respect_to_the_scores_matches_finite_differences_in_float64(name):
    sink_logits = random_sink_logits()

    def normaliser_of_scores(scores):
        return normalise(name, scores, sink_logits)

    normaliser_of_scores.__name__ = f"{name} attention"
    assert gradcheck(normaliser_of_scores, [random_scores(seed=3)])


def test_sink_logit_gradient_with_respect_to_the_scores_and_S_matches_finite_differences():
    def sink_logit_attention(scores, sink_logit):
        return sink_free.sink_logit_attention(scores, future_keys(), sink_logit)

    assert gradcheck(sink_logit_attention, [random_scores(seed=4), random_sink_logits(seed=5)])


def test_attend_hands_the_sink_logit_to_the_normaliser_and_its_gradient_back():
    rng = np.random.default_rng(6)
    queries, keys, values = (rng.normal(size=(HEADS, 2, LENGTH, 4)) for _ in range(3))  # (H, B, L, d), as in a layer
    sink_logit = rng.normal(size=(HEADS, 1, 1, 1))

    def attend_with_a_sink(q, k, v, S):
        return attend(q, k, v, "sink_logit", sink_logit=S)[0]

    assert gradcheck(attend_with_a_sink, [queries, keys, values, sink_logit])


# ----------------------------------------------------------------------
# stability


def huge_scores(seed: int = 7) -> np.ndarray:
    """Scores of ±1000, random signs: e^1000 overflows and e^-1000 underflows in float64."""
    return np.random.default_rng(seed).choice([-1000.0, 1000.0], size=(BATCH, HEADS, LENGTH, LENGTH))


HUGE_CASES = [(name, 0.0) for name in SINK_FREE] + [("sink_logit", -1000.0), ("sink_logit", 1000.0)]


@pytest.mark.parametrize("name, sink_logit", HUGE_CASES, ids=[f"{n}-S={s:g}" for n, s in HUGE_CASES])
def test_huge_scores_give_finite_weights_and_finite_gradients(name, sink_logit):
    scores = minitorch.tensor(huge_scores(), requires_grad=True)
    S = minitorch.tensor(np.full((HEADS, 1, 1), sink_logit), requires_grad=True)
    with np.errstate(over="raise", invalid="raise", divide="raise"):  # any overflow or 0/0 raises
        weights = normalise(name, scores, S)
        weights.backward(np.random.default_rng(8).normal(size=scores.shape))
    assert np.isfinite(weights.data).all() and (weights.data >= 0).all() and (weights.data <= 1).all(), (
        f"{name}: scores of ±1000 gave weights outside [0, 1] or not finite: "
        f"the stable form must keep every exponent <= 0"
    )
    assert np.isfinite(scores.grad).all(), f"{name}: scores of ±1000 gave a gradient that is not finite"
    if name == "sink_logit":
        assert np.isfinite(S.grad).all(), f"sink_logit: S = {sink_logit} gave a gradient of S that is not finite"


# ----------------------------------------------------------------------
# what each one is for


def test_softmax1_rows_sum_to_less_than_one_and_the_rest_is_one_over_one_plus_the_sum_of_exponentials():
    scores = random_scores()
    row_sums = normalise("softmax1", scores).data.sum(axis=-1)  # (B, H, L)
    visible = np.where(future_keys(), -np.inf, scores)
    nowhere = 1.0 / (1.0 + np.exp(visible).sum(axis=-1))  # the zero-logit slot's weight
    assert (row_sums < 1.0).all(), f"softmax1 rows must sum to less than 1, the largest sums to {row_sums.max():.6f}"
    np.testing.assert_allclose(1.0 - row_sums, nowhere, rtol=1e-10, err_msg=(
        "softmax1: the mass missing from a row should be 1 / (1 + sum_k' e^(s_ik')), the weight of the extra slot"
    ))


def test_sink_logit_at_S_0_is_softmax1_and_at_S_minus_1000_is_softmax():
    scores = random_scores()
    at_zero = normalise("sink_logit", scores, np.zeros((HEADS, 1, 1))).data
    far_below = normalise("sink_logit", scores, np.full((HEADS, 1, 1), -1000.0)).data
    np.testing.assert_allclose(at_zero, normalise("softmax1", scores).data, rtol=1e-14,
                               err_msg="sink_logit with S = 0 should be softmax1: e^0 = 1")
    np.testing.assert_allclose(far_below, softmax_attention(minitorch.tensor(scores), future_keys()).data, rtol=1e-14,
                               err_msg="sink_logit with S = -1000 should be softmax: the sink gets e^-1000 = 0")


def test_sigmoid_rows_are_not_normalised_and_a_zero_score_gets_one_over_L_plus_one():
    weights = normalise("sigmoid", random_scores()).data
    row_sums = weights.sum(axis=-1)
    assert np.ptp(row_sums) > 0.5, f"sigmoid rows are not normalised, yet their sums span only {np.ptp(row_sums):.3g}"
    at_zero = normalise("sigmoid", np.zeros((1, 1, LENGTH, LENGTH))).data[0, 0]
    np.testing.assert_allclose(at_zero[~future_keys()], 1.0 / (LENGTH + 1), rtol=1e-14, err_msg=(
        f"with b = -log L, a score of 0 gives σ(-log L) = 1/(L+1) = 1/{LENGTH + 1} "
        f"(L = {LENGTH} keys, whatever the row)"
    ))


def test_softpick_gives_exactly_zero_weight_to_every_negative_score():
    scores = random_scores()
    weights = normalise("softpick", scores).data
    negative = (scores < 0) & ~future_keys()
    assert (weights[negative] == 0.0).all(), (
        f"softpick: a negative score got weight {np.abs(weights[negative]).max():.3g}; "
        f"relu(e^s - 1) is exactly 0 for s < 0"
    )
    assert (weights.sum(axis=-1) <= 1.0).all(), "softpick: a row sums to more than 1, but sum relu(d) <= sum |d|"


@pytest.mark.parametrize("value", [-3.0, -1000.0, 0.0])
def test_softpick_row_of_non_positive_scores_is_all_zero_not_nan(value):
    scores = np.full((1, 1, LENGTH, LENGTH), value)
    with np.errstate(invalid="raise", divide="raise"):  # 0/0 would raise here
        weights = normalise("softpick", scores).data
    assert (weights == 0.0).all(), (
        f"softpick: with every score {value} each row must be all zero (the ε in the denominator prevents 0/0), "
        f"got\n{weights[0, 0]}"
    )


def test_gated_attention_weights_are_softmax_weights():
    scores = random_scores()
    np.testing.assert_array_equal(normalise("gated", scores).data,
                                  softmax_attention(minitorch.tensor(scores), future_keys()).data,
                                  err_msg="'gated' changes the head outputs, not the weights: they must be softmax's")


# ----------------------------------------------------------------------
# the registry


def test_each_sink_free_normaliser_is_registered_with_what_a_layer_must_build():
    for name in SINK_FREE:
        options = normaliser_options(name)
        expected = ["sink_logit"] if name == "sink_logit" else []
        assert list(options.parameters) == expected, (
            f"{name} should declare parameters {expected}, got {list(options.parameters)}"
        )
        assert options.output_gate == (name == "gated"), f"{name}: output_gate should be {name == 'gated'}"
    initial = normaliser_options("sink_logit").parameters["sink_logit"](4)
    assert initial.shape == (4, 1, 1, 1) and (initial == 0).all(), (
        f"the sink logit should start at S = 0 with one per head, shape (H, 1, 1, 1); got shape {initial.shape}"
    )


def test_a_plain_normaliser_declares_nothing():
    for name in ("softmax", "relu"):
        options = normaliser_options(name)
        assert options.parameters == {} and not options.output_gate, f"{name} should declare no parameters and no gate"


def test_a_normaliser_parameter_may_not_replace_a_layer_attribute(monkeypatch):
    monkeypatch.setattr(attention, "NORMALISERS", dict(attention.NORMALISERS))
    monkeypatch.setattr(attention, "NORMALISER_OPTIONS", dict(attention.NORMALISER_OPTIONS))

    @attention.register_normaliser("clobbers_W_Q", parameters={"W_Q": lambda heads: np.zeros((heads, 1, 1, 1))})
    def clobbers_W_Q(scores, future, W_Q):
        return softmax_attention(scores, future)

    with pytest.raises(ValueError, match="W_Q"):
        SingleLayerModel(width=4, normaliser="clobbers_W_Q")


@pytest.mark.parametrize("heads,error,culprit", [  # not an empty (0, 1, 1, 1) S for 0 heads, NumPy's error for -1
    (0, ValueError, r"zero_sink_logit_per_head: heads must be an integer >= 1, got 0"),
    (-1, ValueError, r"zero_sink_logit_per_head: heads must be an integer >= 1, got -1"),
    (2.0, TypeError, r"zero_sink_logit_per_head: heads must be an integer >= 1, got 2.0"),
    (True, TypeError, r"zero_sink_logit_per_head: heads must be an integer >= 1, got True"),
], ids=["no-head", "minus-one-head", "a-float", "true"])
def test_the_sink_logits_need_a_whole_number_of_heads(heads, error, culprit):
    with pytest.raises(error, match=culprit):
        sink_free.zero_sink_logit_per_head(heads)


@pytest.mark.parametrize("scores_shape, sink_shape", [  # not NumPy's where/concatenate error, which names no S
    ((1, 1, 4, 4), (2,)), ((1, 1, 4, 4), (3, 1, 1, 1)), ((2, 3, 4, 4), (3, 1, 1, 1)), ((1, 1, 4, 4), (1, 1, 1, 1, 1)),
    ((3, 2, 4, 4), (3, 2, 1, 1, 1)), ((1, 1, 4, 4), (4, 4))],
    ids=["two-numbers", "three-heads-for-one", "heads-on-the-batch-axis", "an-extra-axis", "five-axes", "a-map"])
@pytest.mark.parametrize("owner, name, call", [
    ("softmax_with_sink", "sink_score", sink_free.softmax_with_sink),
    ("sink_logit_attention", "sink_logit", sink_free.sink_logit_attention)], ids=["with-sink", "sink-logit"])
def test_a_sink_score_that_would_widen_the_sink_column_is_named(scores_shape, sink_shape, owner, name, call):
    scores = minitorch.tensor(random_scores()[:1, :1, :4, :4] * np.ones(scores_shape))
    with pytest.raises(ValueError, match=rf"{owner}: {name} of shape {re.escape(str(sink_shape))} does not broadcast "
                                         rf"to the sink column {re.escape(str(scores_shape[:-1] + (1,)))}"):
        call(scores, future_keys(4), np.zeros(sink_shape))


@pytest.mark.parametrize("sink_shape", [(), (1,), (1, 1), (3, 1, 1), (2, 1, 1, 1), (1, 3, 4, 1)])
def test_a_sink_score_that_fits_the_sink_column_is_taken(sink_shape):
    scores = minitorch.tensor(np.ones((2, 3, 4, 4)))  # read as (H, B, L, L) or (B, H, L, L)
    weights = sink_free.softmax_with_sink(scores, future_keys(4), np.zeros(sink_shape))
    assert weights.shape == (2, 3, 4, 4), "the weights keep the shape of the scores"


@pytest.mark.parametrize("owner, name, call", [
    ("softmax_with_sink", "sink_score", sink_free.softmax_with_sink),
    ("sink_logit_attention", "sink_logit", sink_free.sink_logit_attention)], ids=["with-sink", "sink-logit"])
@pytest.mark.parametrize("sink", ["a", "0", True, np.array(["a"]), None, [1, "a"]],
                         ids=["a-letter", "a-digit-string", "true", "an-array-of-strings", "none", "a-mixed-list"])
def test_a_sink_score_that_is_no_number_is_named(owner, name, call, sink):  # names the function and the argument
    scores = minitorch.tensor(np.ones((1, 1, 4, 4)))
    with pytest.raises(TypeError, match=rf"{owner}: {name} must be a number \(or a Tensor or array of numbers\), "
                                        rf"got {re.escape(repr(sink)[:60])}"):
        call(scores, future_keys(4), sink)


@pytest.mark.parametrize("owner, name, call", [
    ("softmax_with_sink", "sink_score", sink_free.softmax_with_sink),
    ("sink_logit_attention", "sink_logit", sink_free.sink_logit_attention)], ids=["with-sink", "sink-logit"])
@pytest.mark.parametrize("sink", [np.inf, np.nan, np.array([[[[np.nan]]]]), minitorch.tensor([np.inf])],
                         ids=["inf", "nan", "an-array-holding-nan", "a-tensor-holding-inf"])
def test_a_sink_score_of_inf_or_nan_is_named_not_blamed_on_the_scores(owner, name, call, sink):
    scores = minitorch.tensor(np.zeros((1, 1, 4, 4)))  # finite: the softmax's "the scores contain +inf" is wrong
    with pytest.raises(ValueError, match=rf"{owner}: {name} must be a finite number \(or -inf, no sink\), got"):
        call(scores, future_keys(4), sink)


def test_a_sink_score_of_minus_inf_takes_nothing_so_the_weights_are_the_softmax():
    scores = random_scores()
    weights = sink_free.softmax_with_sink(minitorch.tensor(scores), future_keys(), -np.inf).data
    np.testing.assert_allclose(weights, softmax_attention(minitorch.tensor(scores), future_keys()).data, rtol=1e-14,
                               err_msg="a sink scored -inf gets e^-inf = 0: the weights are the plain softmax's")


@pytest.mark.parametrize("sink", [0, -2.5, np.int64(1), np.zeros((1, 1, 1, 1), dtype=np.float32)],
                         ids=["int", "float", "numpy-int", "float32-array"])
def test_a_sink_score_of_any_real_number_type_is_taken(sink):
    weights = sink_free.softmax_with_sink(minitorch.tensor(np.ones((1, 1, 4, 4))), future_keys(4), sink)
    assert weights.shape == (1, 1, 4, 4) and np.isfinite(weights.data).all()


@pytest.mark.parametrize("name", sorted(attention.NORMALISERS))
@pytest.mark.parametrize("kind", ["array", "list"])
def test_every_normaliser_takes_scores_as_an_array_or_a_list_as_softmax_attention_does(name, kind):
    """softpick_attention(np.zeros((3, 3)), causal_mask(3)) failed with "'numpy.ndarray' object has no attribute
    'masked_fill'", where softmax, ReLU, sigmoid and softmax1 take an array of scores as a constant Tensor."""
    scores = random_scores()
    given = scores if kind == "array" else scores.tolist()
    parameters = {"sink_logit": random_sink_logits()} if name == "sink_logit" else {}
    weights = attention.get_normaliser(name)(given, future_keys(LENGTH), **parameters)
    assert isinstance(weights, minitorch.Tensor), f"{name} of an {kind} must give a Tensor of weights, as softmax does"
    np.testing.assert_allclose(weights.data, normalise(name, scores).data, rtol=0, atol=0,
                               err_msg=f"{name} of an {kind} of scores must equal {name} of them as a Tensor")
