"""Specification of minitorch.paper.metrics: measuring sinks (chapters 03, 08 and 09).

Attention weights a: (B, H, L, L) = (sequence, head, query i, key k); trigger
positions j: (B,). BOS mass of row i: a_i0. Non-trigger rows: i >= 1, i != j.
The graded tests (3.4, 3.5, 9.1) reach the code under test only through the ``student`` fixture
(minitorch/exercises/grader/sandboxed/probes.py). They check properties and small cases worked out by hand; the
instructor's hidden tests compare with the definitions on seeded weights of other sizes.
"""

from __future__ import annotations

import numpy as np
import pytest

from minitorch.paper import metrics
from minitorch.paper.metrics import (
    bos_mass_at_non_trigger_rows, head_table, non_trigger_row_mass, non_trigger_rows, trigger_row, zero_row_share,
)

from causal_literals import visible_keys  # noqa: E402  (tests/causal_literals.py)

L = 16  # as in the paper: at L = 8 even a running average has alpha_0 = H_8 / 8 > 0.3


def random_causal_weights(rng, batch=5, heads=3, length=L) -> np.ndarray:
    """Random softmax-like weights (B, H, L, L): rows on the simplex, zero on future keys."""
    weights = rng.uniform(0.0, 1.0, size=(batch, heads, length, length)) * visible_keys(length)
    return weights / weights.sum(axis=-1, keepdims=True)


def perfect_sink(batch=4, heads=1, length=L) -> np.ndarray:
    """Every row puts all its weight on BOS."""
    weights = np.zeros((batch, heads, length, length))
    weights[..., 0] = 1.0
    return weights


def running_average(batch=4, heads=1, length=L) -> np.ndarray:
    """a_ik = 1/(i+1) on the visible keys k <= i: no sink."""
    average = visible_keys(length) / np.arange(1, length + 1)[:, None]
    return np.broadcast_to(average, (batch, heads, length, length)).copy()


def relu_like_weights(rng, batch=4, heads=2, length=L, zero_rows=3) -> np.ndarray:
    """Random weights (B, H, L, L), zero on future keys, whose rows sum to anything (some to 0), as ReLU's may."""
    weights = rng.uniform(0.0, 1.0, size=(batch, heads, length, length)) * visible_keys(length)
    weights *= rng.uniform(0.1, 5.0, size=(batch, heads, length, 1))
    for _ in range(zero_rows):
        weights[rng.integers(batch), rng.integers(heads), rng.integers(1, length)] = 0.0
    return weights


# ----------------------------------------------------------------------
# which rows count


def test_non_trigger_rows_are_rows_1_to_L_minus_1_except_the_trigger():
    triggers = np.array([2, 5, L - 1])
    rows = non_trigger_rows(triggers, L)
    for b, j in enumerate(triggers):
        expected = [i for i in range(L) if i >= 1 and i != j]
        assert np.flatnonzero(rows[b]).tolist() == expected, (
            f"with j = {j} the non-trigger rows are {expected} (row 0 and row j left out), "
            f"got {np.flatnonzero(rows[b]).tolist()}"
        )


# ----------------------------------------------------------------------
# Exercise 3.4: BOS mass at the non-trigger rows


# Two sequences of length 6, two heads; the weight a_i0 of row i on BOS is a tag, i/10 + b/100 + h/1000, so that
# the answer shows which rows were kept, in which order. Triggers j = 2 and j = 5: the rows kept are 1, 3, 4, 5 and
# 1, 2, 3, 4.
TAGGED_TRIGGERS = [2, 5]
TAGGED_BOS_MASS = [[[0.1, 0.3, 0.4, 0.5], [0.101, 0.301, 0.401, 0.501]],
                   [[0.11, 0.21, 0.31, 0.41], [0.111, 0.211, 0.311, 0.411]]]


@pytest.mark.exercise("3.4")
def test_bos_mass_of_two_tagged_sequences_worked_out_by_hand(student):
    weights = np.full((2, 2, 6, 6), 0.05) * visible_keys(6)
    weights[..., 0] = (np.arange(6)[None, None, :] / 10 + np.arange(2)[:, None, None] / 100
                       + np.arange(2)[None, :, None] / 1000)  # the tags
    bos = student.bos_mass_at_non_trigger_rows(weights, np.array(TAGGED_TRIGGERS))
    assert np.shape(bos) == (2, 2, 4), f"BOS mass should be (B, H, L-2) = (2, 2, 4), got {np.shape(bos)}"
    np.testing.assert_allclose(bos, TAGGED_BOS_MASS, atol=1e-12, err_msg=(
        "the BOS weights a_i0 at the rows i = 1..L-1 other than the trigger j, in row order, one list per sequence "
        "and head: with j = 2 the rows 1, 3, 4, 5; with j = 5 the rows 1, 2, 3, 4"))


@pytest.mark.exercise("3.4")
def test_bos_mass_keeps_each_row_but_row_0_and_the_trigger_row_in_order(exercise_seed, student):
    rng = np.random.default_rng(exercise_seed)
    weights = random_causal_weights(rng)
    triggers = rng.integers(2, L, size=len(weights))
    bos = student.bos_mass_at_non_trigger_rows(weights, triggers)
    assert np.shape(bos) == (5, 3, L - 2), f"BOS mass should be (B, H, L-2) = (5, 3, {L - 2}), got {np.shape(bos)}"
    for b, h in np.ndindex(5, 3):
        column = weights[b, h, :, 0]  # a_i0 for every row i (all different: random weights)
        rows = [int(np.argmin(np.abs(column - value))) for value in bos[b, h]]  # the row each value came from
        assert np.allclose(column[rows], bos[b, h]), (
            f"sequence {b}, head {h}: some values are no BOS weight a_i0 of this sequence and head (column 0)")
        assert 0 not in rows and triggers[b] not in rows, (
            f"sequence {b}, head {h}: row 0 and the trigger row j = {triggers[b]} must be left out; the values came "
            f"from rows {rows}")
        assert len(set(rows)) == L - 2 and rows == sorted(rows), (
            f"sequence {b}, head {h}: each other row once, in row order; the values came from rows {rows}")


@pytest.mark.exercise("3.4")
def test_bos_mass_leaves_out_row_0_and_the_trigger_row(student):
    weights = np.zeros((1, 1, L, L))
    weights[0, 0, :, 0] = np.arange(L) / 100  # BOS mass i / 100 at row i ...
    weights[0, 0, 0, 0] = 1.0  # ... but 1 at row 0, whose only key is BOS
    weights[0, 0, 3, 0] = 0.9  # ... and 0.9 at the trigger row j = 3
    bos = student.bos_mass_at_non_trigger_rows(weights, np.array([3]))
    expected = [0.01, 0.02] + [i / 100 for i in range(4, L)]  # rows 1, 2, 4, ..., L-1
    assert np.shape(bos) == (1, 1, L - 2), f"BOS mass should be (B, H, L-2) = (1, 1, {L - 2}), got {np.shape(bos)}"
    assert np.allclose(bos[0, 0], expected), (
        f"expected BOS mass i / 100 at the non-trigger rows i = 1, 2, 4, ..., {L - 1}, got {np.ravel(bos).tolist()}: "
        f"row 0 (always 1 under softmax) and the trigger row j must be left out"
    )


@pytest.mark.exercise("3.4", requires_values=True)  # zeros pass it (it compares the answer with itself)
def test_bos_mass_accepts_single_head_weights_of_shape_B_L_L(exercise_seed, student):
    rng = np.random.default_rng(exercise_seed)
    weights = random_causal_weights(rng, heads=1)
    triggers = rng.integers(2, L, size=len(weights))
    bos = student.bos_mass_at_non_trigger_rows(weights[:, 0], triggers)  # (B, L, L)
    assert np.shape(bos) == (5, 1, L - 2), f"(B, L, L) weights are one head: expected (B, 1, L-2), got {np.shape(bos)}"
    assert np.allclose(bos, student.bos_mass_at_non_trigger_rows(weights, triggers))


def test_non_trigger_row_mass_sums_each_kept_row():
    weights = np.arange(6.0)[:, None] / np.arange(1.0, 7.0)[:, None] * visible_keys(6)  # row i sums to i
    mass = non_trigger_row_mass(np.broadcast_to(weights, (2, 1, 6, 6)), np.array([2, 5]))
    assert np.allclose(mass, [[[1, 3, 4, 5]], [[1, 2, 3, 4]]]), (
        f"row i sums to i: with j = 2 and 5 the kept rows sum to 1, 3, 4, 5 and 1, 2, 3, 4, got {mass.tolist()}")


def test_trigger_row_picks_row_j_of_each_sequence_and_head():
    rng = np.random.default_rng(2)
    weights = random_causal_weights(rng)
    triggers = np.array([2, 3, 5, 7, 7])
    rows = trigger_row(weights, triggers)
    assert rows.shape == (5, 3, L), f"trigger_row should return (B, H, L), got {rows.shape}"
    for b, h in np.ndindex(5, 3):
        assert np.array_equal(rows[b, h], weights[b, h, triggers[b]]), (
            f"sequence {b}, head {h}: not row j = {triggers[b]}"
        )


@pytest.mark.parametrize("weights_shape, triggers_shape",
                         [((2, 1, L, L + 1), (2,)), ((2, L), (2,)), ((2, 1, L, L), (3,))])
def test_metrics_reject_bad_shapes_with_value_error(weights_shape, triggers_shape):
    with pytest.raises(ValueError):
        bos_mass_at_non_trigger_rows(np.zeros(weights_shape), np.full(triggers_shape, 2))


# ----------------------------------------------------------------------
# Exercise 3.5: Gu et al.'s sink score alpha_k


@pytest.mark.exercise("3.5")
def test_gu_alpha_of_a_perfect_sink_is_one_at_bos_and_zero_elsewhere(student):
    alpha = student.gu_sink_scores(perfect_sink())
    assert np.shape(alpha) == (1, L), f"alpha should be (H, L) = (1, {L}), got {np.shape(alpha)}"
    assert np.isclose(alpha[0, 0], 1.0), f"a head pouring everything on BOS has alpha_0 = 1, got {alpha[0, 0]:.4f}"
    assert np.allclose(alpha[0, 1:], 0.0), f"and alpha_k = 0 for k >= 1, got {np.round(alpha[0, 1:], 4).tolist()}"


@pytest.mark.exercise("3.5")
def test_gu_alpha_of_a_running_average_over_four_tokens_worked_out_by_hand(student):
    alpha = student.gu_sink_scores(running_average(length=4))
    assert np.shape(alpha) == (1, 4), f"alpha should be (H, L) = (1, 4), got {np.shape(alpha)}"
    expected = [25 / 48, 13 / 36, 7 / 24, 1 / 4]  # (1 + 1/2 + 1/3 + 1/4) / 4, (1/2 + 1/3 + 1/4) / 3, ...
    assert np.allclose(alpha[0], expected), (
        f"for a_ik = 1/(i+1) over four tokens, alpha = {np.round(expected, 4).tolist()}, got "
        f"{np.round(alpha[0], 4).tolist()}: key k gets the mean of a_ik over the L-k queries i >= k that see it "
        f"(divide by L-k, not by L)")


@pytest.mark.exercise("3.5", requires_values=True)  # zeros pass it
def test_gu_alpha_of_a_running_average_of_the_papers_length_is_no_sink(student):
    alpha = student.gu_sink_scores(running_average())
    assert np.shape(alpha) == (1, L), f"alpha should be (H, L) = (1, {L}), got {np.shape(alpha)}"
    assert alpha[0, 0] < metrics.SINK_THRESHOLD, (
        f"a running average at L = {L} has alpha_0 = {alpha[0, 0]:.3f}; it must not count as a sink (> 0.3)")


@pytest.mark.exercise("3.5", requires_values=True)  # constants pass it
def test_gu_alpha_rescales_each_row_to_sum_one_before_averaging(student):
    scale = np.arange(1, L + 1, dtype=float)[None, None, :, None] * 3.7  # ReLU rows of arbitrary sums
    scaled, plain = student.gu_sink_scores(running_average() * scale), student.gu_sink_scores(running_average())
    assert np.allclose(scaled, plain), (
        "alpha must divide each row by its sum first (â_ik = a_ik / sum_k' a_ik'), so scaling a row changes nothing"
    )


@pytest.mark.exercise("3.5")
def test_gu_alpha_counts_an_all_zero_relu_row_as_zero_not_nan(student):
    weights = perfect_sink(batch=1)
    weights[0, 0, 2:] = 0.0  # rows 2..L-1 attend to nothing, as a ReLU head may
    alpha = student.gu_sink_scores(weights)
    assert np.shape(alpha) == (1, L), f"alpha should be (H, L) = (1, {L}), got {np.shape(alpha)}"
    assert np.isfinite(alpha).all(), "an all-zero row must not produce 0/0 = nan; count it as 0"
    assert np.isclose(alpha[0, 0], 2 / L), (
        f"only rows 0 and 1 put (all) their weight on BOS, so alpha_0 = 2/{L}; got {alpha[0, 0]:.4f}"
    )


@pytest.mark.exercise("3.5")
def test_gu_alpha_gives_each_row_that_attends_a_total_of_one(exercise_seed, student):
    rng = np.random.default_rng(exercise_seed)
    weights = relu_like_weights(rng)
    alpha = student.gu_sink_scores(weights)
    assert np.shape(alpha) == (2, L), f"alpha should be (H, L) = (2, {L}), got {np.shape(alpha)}"
    assert np.isfinite(alpha).all() and (alpha >= 0).all() and (alpha <= 1 + 1e-12).all(), (
        "every alpha_k is a mean of normalised weights: a number in [0, 1]")
    # alpha_k (L - k) is key k's total over the queries that see it, per sequence; summed over the keys it counts
    # each row once (a normalised row sums to 1), and a row that attends to nothing not at all
    rows_attending = (weights.sum(axis=-1) > 0).sum(axis=-1).mean(axis=0)  # (H,): per sequence, averaged
    totals = (alpha * (L - np.arange(L))).sum(axis=-1)
    assert np.allclose(totals, rows_attending), (
        f"sum_k (L-k) alpha_k should be the number of rows that attend to something (a normalised row sums to 1; "
        f"an all-zero row adds 0), {rows_attending.tolist()} per head, got {totals.tolist()}: divide each row by "
        f"its sum, and each key's total by L-k")


@pytest.mark.exercise("3.5", requires_values=True)  # zeros pass it
def test_gu_alpha_is_the_mean_over_sequences_and_keeps_heads_apart(exercise_seed, student):
    rng = np.random.default_rng(exercise_seed)
    first, second = relu_like_weights(rng, batch=3), relu_like_weights(rng, batch=1)
    together = student.gu_sink_scores(np.concatenate([first, second]))
    apart = (3 * student.gu_sink_scores(first) + student.gu_sink_scores(second)) / 4
    assert np.allclose(together, apart), "alpha must be a mean over the sequences: 4 sequences weigh as 3 and 1"
    assert np.allclose(student.gu_sink_scores(first[:, 1:]), student.gu_sink_scores(first)[1:]), (
        "each head's alpha must depend on its own weights alone: dropping head 0 must leave head 1's alpha as it was")


# ----------------------------------------------------------------------
# shares and the head table


def test_zero_row_share_counts_rows_with_no_weight():
    weights = perfect_sink(batch=2)
    weights[0, 0, 2:4] = 0.0  # 2 of 2 * L rows
    assert zero_row_share(weights) == 2 / (2 * L), f"expected 2/{2 * L}, got {zero_row_share(weights)}"


@pytest.mark.exercise("9.1")
def test_sink_share_is_the_share_of_heads_over_all_layers_whose_bos_alpha_exceeds_0_3(student):
    layer_0 = np.concatenate([perfect_sink(), running_average()], axis=1)  # head 0 sinks, head 1 averages
    layer_1 = np.concatenate([perfect_sink(), perfect_sink()], axis=1)  # both heads sink
    share = student.sink_share([layer_0, layer_1])
    assert share == 3 / 4, f"3 of 4 heads sink, got {share}"
    assert student.sink_share([running_average()]) == 0.0
    assert student.sink_share([layer_0], threshold=0.0) == 1.0, "with eps = 0 every head with some BOS weight counts"


@pytest.mark.exercise("9.1")
def test_sink_share_counts_only_alpha_strictly_above_the_threshold(student):
    half_on_bos = np.zeros((4, 1, L, L))
    half_on_bos[:, :, :L // 2, 0] = 1.0  # rows 0..7 all on BOS, rows 8..15 all on key 1: alpha_0 = 8/16 = 1/2 exactly
    half_on_bos[:, :, L // 2:, 1] = 1.0
    assert student.sink_share([half_on_bos], threshold=0.5) == 0.0, (
        "a head with alpha_0 equal to eps does not sink (alpha_0 > eps)")
    assert student.sink_share([half_on_bos], threshold=0.5 - 1e-9) == 1.0


@pytest.mark.exercise("9.1")
def test_sink_share_looks_at_the_requested_key(student):
    on_key_1 = np.zeros((4, 1, L, L))
    on_key_1[:, :, 0, 0] = 1.0  # row 0 can only see BOS
    on_key_1[:, :, 1:, 1] = 1.0  # every other row on key 1
    heads = [np.concatenate([on_key_1, on_key_1, perfect_sink()], axis=1)]  # one layer, 3 heads
    at_key_1, at_bos = student.sink_share(heads, key=1), student.sink_share(heads, key=0)
    assert at_key_1 == 2 / 3, f"two of three heads sink at key 1, got {at_key_1}"
    assert at_bos == 1 / 3, f"one of three heads sinks at key 0 (BOS), got {at_bos}"


def test_head_table_has_one_row_per_layer_and_head_with_the_sink_measures():
    triggers = np.full(4, 5)
    layer_0 = np.concatenate([perfect_sink(), running_average()], axis=1)
    table = head_table([layer_0, perfect_sink()], triggers)
    assert [(row["layer"], row["head"]) for row in table] == [(0, 0), (0, 1), (1, 0)], (
        "one row per (layer, head), in order"
    )
    sink, average = table[0], table[1]
    assert sink["bos_mass_mean"] == 1.0 and sink["bos_mass_min"] == 1.0 and sink["gu_alpha_bos"] == 1.0
    assert sink["gu_sinks"] is True and average["gu_sinks"] is False
    expected_mean = np.mean([1 / (i + 1) for i in range(1, L) if i != 5])
    assert np.isclose(average["bos_mass_mean"], expected_mean), (
        f"running average: mean BOS mass over non-trigger rows should be {expected_mean:.4f}, "
        f"got {average['bos_mass_mean']:.4f}"
    )
    assert np.isclose(average["trigger_bos"], 1 / 6), "running average: the trigger row j = 5 puts 1/6 on BOS"
    assert np.isclose(average["row_mass_max"], 1.0)


# ----------------------------------------------------------------------
# bad input: every metric names itself, the argument and its value, before any work


def _valid_weights(batch=3, length=L) -> np.ndarray:
    return np.full((batch, 1, length, length), 1 / length) * visible_keys(length)  # (B, 1, L, L): causal, >= 0


@pytest.mark.parametrize("function", ["bos_mass_at_non_trigger_rows", "non_trigger_row_mass", "trigger_row"])
@pytest.mark.parametrize("triggers, error, culprit", [
    (np.array([2.5, 3, 4]), TypeError, r"got 2.5 \(float\)"),  # not NumPy's 'cannot reshape array of size 43'
    (np.array([0, 0, 0]), ValueError, r"\(L = 16\), got 0"),  # a trigger on BOS
    (np.array([16, 3, 4]), ValueError, r"\(L = 16\), got 16"),
    (np.array([20, 3, 4]), ValueError, r"got 20"),  # not NumPy's 'index 20 is out of bounds'
    (np.array([2., 3., 4.]), TypeError, r"got 2.0 \(float\)"),  # whole floats are still no positions
    ([3, True, 4], TypeError, r"got True \(bool\)"),  # np.asarray makes it int64: True would be row 1
    (np.array(["2", "3", "4"]), TypeError, r"got '2' \(str\)"),
])
def test_metrics_refuse_trigger_positions_that_are_not_integers_in_1_to_L_minus_1(function, triggers, error,
                                                                                    culprit):
    with pytest.raises(error, match=rf"{function}: triggers must be a list of integers in 1..15.*{culprit}"):
        getattr(metrics, function)(_valid_weights(), triggers)


@pytest.mark.parametrize("function", ["gu_sink_scores", "bos_mass_at_non_trigger_rows", "zero_row_share"])
@pytest.mark.parametrize("weights, error, culprit", [
    (-_valid_weights(), ValueError, r"must be >= 0 .*got a weight of -0.0625"),  # gu would read -w as all-zero rows
    (_valid_weights() - 0.5, ValueError, r"must be >= 0"),
    (np.array([[["a"]]]), TypeError, r"must be real numbers, got dtype <U1"),  # not NumPy's add.reduce dtype error
    (_valid_weights() > 0, TypeError, r"must be real numbers, got dtype bool"),
])
def test_metrics_refuse_attention_weights_that_are_not_real_numbers_at_least_0(function, weights, error, culprit):
    arguments = (weights, np.full(len(weights), 2)) if function == "bos_mass_at_non_trigger_rows" else (weights,)
    with pytest.raises(error, match=rf"{function}: attention weights {culprit}"):
        getattr(metrics, function)(*arguments)


@pytest.mark.parametrize("weights", [[], np.zeros((0, 1, 4, 4)), np.zeros((2, 4))])  # [] would give 1.0
def test_zero_row_share_refuses_weights_without_rows(weights):
    with pytest.raises(ValueError, match=r"zero_row_share: (no attention rows|attention weights must have shape)"):
        zero_row_share(weights)


@pytest.mark.parametrize("layers, key, culprit", [
    ([_valid_weights(), _valid_weights(length=8)], 10, r"key 10 is not a key of layer 1's sequences of length 8"),
    ([_valid_weights(length=8), _valid_weights()], 8, r"key 8 is not a key of layer 0's"),
])
def test_sink_share_checks_its_key_against_every_layer(layers, key, culprit):
    with pytest.raises(ValueError, match=rf"sink_share: {culprit}"):
        metrics.sink_share(layers, key=key)


@pytest.mark.parametrize("triggers, length, error, culprit", [
    (np.array([2]), -1, ValueError, r"length must be an integer >= 2, got -1"),  # not an empty (1, 0) mask
    (np.array([2]), 4.0, TypeError, r"length must be an integer >= 2, got 4.0"),
    (np.array([4]), 4, ValueError, r"triggers must be a list of integers in 1..3 \(L = 4\), got 4"),
    (np.array([True]), 4, TypeError, r"triggers must be .*got True \(bool\)"),
])
def test_non_trigger_rows_checks_its_length_and_triggers(triggers, length, error, culprit):
    with pytest.raises(error, match=rf"non_trigger_rows: {culprit}"):
        non_trigger_rows(triggers, length)


def _with_a_nan_row(value=np.nan):
    weights = _valid_weights()
    weights[0, 0, 2] = value  # one row of one head
    return weights


@pytest.mark.parametrize("function", ["gu_sink_scores", "bos_mass_at_non_trigger_rows", "zero_row_share"])
@pytest.mark.parametrize("weights", [_with_a_nan_row(), _with_a_nan_row(np.inf), np.full((1, 1, 4, 4), np.nan)],
                         ids=["nan row", "inf row", "all nan"])
def test_metrics_refuse_attention_weights_that_are_not_finite(function, weights):
    """A nan row is refused, not taken for an all-zero row (nan > 0 is False) that gives finite scores."""
    arguments = (weights, np.full(len(weights), 2)) if function == "bos_mass_at_non_trigger_rows" else (weights,)
    with pytest.raises(ValueError, match=rf"{function}: attention weights must be finite numbers"):
        getattr(metrics, function)(*arguments)


@pytest.mark.parametrize("threshold", [-1.0, -1e-9, 1.0, 2.5])
def test_sink_share_refuses_a_threshold_outside_0_to_1(threshold):
    """alpha lies in [0, 1], so threshold -1 would call every head a sink (1.0) and 1 or more none."""
    with pytest.raises(ValueError, match=rf"sink_share: threshold must be a number in \[0, 1\).*got {threshold}"):
        metrics.sink_share([_valid_weights()], threshold=threshold)


@pytest.mark.parametrize("triggers, length, what", [  # refused before NumPy allocates a 10 GiB mask
    (np.array([2, 3, 4]), 10**9, r"the positions 0..L-1 of shape \(1000000000,\)"),
    (np.array([2]), 2**40, r"the positions 0..L-1 of shape \(1099511627776,\)"),
    (np.full(10**4, 2), 10**6, r"the mask \(B, L\) of shape \(10000, 1000000\)"),
], ids=["catalogue", "a-terabyte", "many-sequences"])
def test_non_trigger_rows_refuses_a_length_too_large_for_memory_before_allocating(triggers, length, what):
    with pytest.raises(MemoryError, match=rf"non_trigger_rows: {what} would need [\d,.]+ GiB \(the limit is 4 GiB\)"):
        non_trigger_rows(triggers, length)


@pytest.mark.parametrize("measure", [
    lambda weights: metrics.gu_sink_scores(weights),
    lambda weights: metrics.bos_mass_at_non_trigger_rows(weights, np.full(len(weights), 7)),
    lambda weights: metrics.non_trigger_row_mass(weights, np.full(len(weights), 7)),
    lambda weights: metrics.trigger_row(weights, np.full(len(weights), 7)),
    lambda weights: metrics.zero_row_share(weights),
    lambda weights: metrics.sink_share([weights], key=3),
    lambda weights: metrics.head_table([weights], np.full(len(weights), 7)),
], ids=["gu_sink_scores", "bos_mass", "row_mass", "trigger_row", "zero_row_share", "sink_share", "head_table"])
def test_every_measure_refuses_a_map_with_weight_on_future_keys(measure):
    """A transposed map (queries and keys swapped) gave α_k above 1 and a BOS mass of 0, and a map that sinks on a
    key rows 0..2 cannot see counted as a sink there, each without a word: a causal map is 0 above its diagonal."""
    transposed = running_average(batch=3).swapaxes(-1, -2)
    with pytest.raises(ValueError, match=r"attention weights must be 0 on every future key \(k > i\).* row 0, key 1 "
                                         r"\(is the map transposed"):
        result = measure(transposed)
        pytest.fail(f"a transposed attention map was measured as {result!r:.80} instead of refused")
