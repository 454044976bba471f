"""Specification of minitorch.paper.task: the trigger-conditional averaging task (chapter 04).

Sequences x_0..x_{L-1} in R^n, 0-based positions, BOS at 0, one trigger at j.
Coordinates: 0 BOS flag, 1 trigger flag, 2..n-2 content, n-1 bias channel.
The graded tests (4.1) reach make_targets only through the ``student`` fixture
(minitorch/exercises/grader/sandboxed/probes.py), which also returns x and the triggers as they were after the call.
"""

from __future__ import annotations

import numpy as np
import pytest

from minitorch.paper.task import make_batch, make_inputs, make_targets, make_test_set
from loop_rule import loops_in  # (tests/loop_rule.py)

L, N = 16, 16
BOS_FLAG, TRIGGER_FLAG, BIAS = 0, 1, N - 1
CONTENT = slice(2, N - 1)  # coordinates 2..n-2


@pytest.fixture(scope="module")
def training_batch():
    """A large batch with training triggers: (x, triggers)."""
    return make_inputs(4000, np.random.default_rng(0))


# ----------------------------------------------------------------------
# the inputs


def test_inputs_have_shape_B_L_n_and_one_trigger_position_per_sequence(training_batch):
    x, triggers = training_batch
    assert x.shape == (4000, L, N), f"x should be (B, L, n) = (4000, {L}, {N}), got {x.shape}"
    assert triggers.shape == (4000,), f"trigger positions should be (B,) = (4000,), got {triggers.shape}"
    assert np.issubdtype(triggers.dtype, np.integer), f"trigger positions must be integers, got dtype {triggers.dtype}"


def test_bos_token_is_exactly_the_bos_flag(training_batch):
    x, _ = training_batch
    expected = np.zeros(N)
    expected[BOS_FLAG] = 1.0
    assert (x[:, 0] == expected).all(), "x_0 (BOS) must be e_0: BOS flag 1, no trigger flag, no content, bias channel 0"


def test_bos_flag_is_set_only_at_position_0(training_batch):
    x, _ = training_batch
    assert (x[:, 1:, BOS_FLAG] == 0).all(), "coordinate 0 (BOS flag) must be 0 at every position i >= 1"


def test_exactly_one_trigger_per_sequence_at_the_returned_position(training_batch):
    x, triggers = training_batch
    flags = x[:, :, TRIGGER_FLAG]  # (B, L)
    assert set(np.unique(flags)) <= {0.0, 1.0}, "the trigger flag (coordinate 1) must be 0 or 1"
    assert (flags.sum(axis=1) == 1).all(), "every sequence must hold exactly one trigger"
    assert (flags.argmax(axis=1) == triggers).all(), "the trigger flag must sit at the returned trigger position j"


def test_bias_channel_is_one_at_content_tokens_and_zero_at_bos_and_trigger(training_batch):
    x, triggers = training_batch
    expected = np.ones((len(x), L))
    expected[:, 0] = 0.0
    expected[np.arange(len(x)), triggers] = 0.0
    assert (x[:, :, BIAS] == expected).all(), (
        "coordinate n-1 (bias channel) must be 1 at ordinary content tokens and 0 at BOS and at the trigger"
    )


def test_content_is_uniform_on_minus_one_to_one_at_every_non_bos_token(training_batch):
    x, triggers = training_batch
    content = x[:, 1:, CONTENT]  # every non-BOS token, the trigger included
    assert content.min() >= -1.0 and content.max() < 1.0, (
        f"content must lie in [-1, 1), got range [{content.min():.3f}, {content.max():.3f}]"
    )
    # Uniform(-1, 1): mean 0, variance 1/3, a flat histogram. With ~780,000 draws
    # these bounds are many standard errors wide, yet miss any other distribution.
    assert abs(content.mean()) < 0.01, f"content mean should be ~0, got {content.mean():.4f}"
    assert abs(content.var() - 1 / 3) < 0.01, (
        f"content variance should be ~1/3 (Uniform(-1, 1)), got {content.var():.4f}")
    histogram, _ = np.histogram(content, bins=10, range=(-1, 1))
    assert (np.abs(histogram / content.size - 0.1) < 0.005).all(), f"content histogram is not flat: {histogram}"
    trigger_content = x[np.arange(len(x)), triggers][:, CONTENT]
    assert (trigger_content != 0).all() and abs(trigger_content.var() - 1 / 3) < 0.02, (
        "the trigger token carries content too (Uniform(-1, 1)), like every non-BOS token"
    )


def test_training_triggers_cover_2_to_L_minus_1_uniformly_and_nothing_else(training_batch):
    _, triggers = training_batch
    positions, counts = np.unique(triggers, return_counts=True)
    assert positions.tolist() == list(range(2, L)), (
        f"training triggers must take every value in {{2, ..., {L - 1}}} and no other; got {positions.tolist()}"
    )
    expected = len(triggers) / (L - 2)
    assert (np.abs(counts - expected) < 5 * np.sqrt(expected)).all(), f"trigger counts are far from uniform: {counts}"


@pytest.mark.parametrize("trigger", [1, 7, L - 1])
def test_a_fixed_trigger_puts_every_trigger_there(trigger):
    x, triggers = make_inputs(50, np.random.default_rng(1), trigger=trigger)
    assert (triggers == trigger).all(), (
        f"make_inputs(trigger={trigger}) returned trigger positions {np.unique(triggers)}")
    assert (x[:, trigger, TRIGGER_FLAG] == 1).all() and (x[:, :, TRIGGER_FLAG].sum(axis=1) == 1).all()


def test_other_lengths_and_widths_follow_the_same_layout():
    x, triggers = make_inputs(200, np.random.default_rng(2), length=5, width=6)
    assert x.shape == (200, 5, 6)
    assert set(np.unique(triggers)) == {2, 3, 4}, "with L = 5 the training triggers are 2..4"
    assert (x[:, 0] == np.eye(6)[0]).all(), "BOS is e_0"
    assert (x[np.arange(200), triggers, 1] == 1).all() and (x[np.arange(200), triggers, 5] == 0).all()


def test_the_same_seed_gives_the_same_batch_and_another_seed_does_not():
    first = make_batch(8, np.random.default_rng(3))
    again = make_batch(8, np.random.default_rng(3))
    other = make_batch(8, np.random.default_rng(4))
    for name, a, b in zip(["x", "y", "triggers"], first, again):
        assert np.array_equal(a, b), f"same seed, different {name}: every draw must come from the rng passed in"
    assert not np.array_equal(first[0], other[0]), "different seeds gave the same x"


@pytest.mark.parametrize("arguments, named", [
    (dict(batch=4, length=2), "length"),
    (dict(batch=4, width=3), "width"),
    (dict(batch=4, trigger=0), "trigger"),
    (dict(batch=4, trigger=L), "trigger"),
    (dict(batch=4, trigger=2.5), "trigger"),
    (dict(batch=0), "batch"),
    (dict(batch=-3), "batch"),
])
def test_bad_arguments_raise_value_error_naming_the_argument(arguments, named):
    with pytest.raises(ValueError, match=named):
        make_inputs(rng=np.random.default_rng(0), **arguments)


# ----------------------------------------------------------------------
# Exercise 4.1: the targets, computed on the whole batch at once
#
# Chapter 04 prints the targets as a loop over the sequences; the exercise is the version without one. So
# every graded test first checks, from the syntax tree of the student's make_targets (read in the grader's own
# process, whatever the code does when it runs), that it has no Python loop and calls nothing that could hide one,
# then checks its property. The tests check properties and small cases worked out by hand; the instructor's hidden
# tests compare with the definition on seeded sequences of other lengths and widths.


def targets_of(student, x, triggers, residual=False) -> dict:
    """The student's make_targets(x, triggers, residual) as the probe returns it, once its source is known to
    have no Python loop."""
    __tracebackhide__ = True
    loops = loops_in(student.function_source("4.1"))
    if loops:
        pytest.fail(f"make_targets loops in Python, or calls what could: {', '.join(loops)}. Exercise 4.1 asks for "
                    f"NumPy operations on the whole batch, with no Python loop (chapter 04 prints that loop; the "
                    f"exercise is the version without it): NumPy functions, array methods, ufunc methods such as "
                    f"np.add.reduce, arithmetic and indexing", pytrace=False)
    return student.make_targets(x, triggers, residual=residual)


@pytest.mark.exercise("4.1")
@pytest.mark.parametrize("residual", [False, True], ids=["single_layer", "residual"])
@pytest.mark.parametrize("length, width", [(L, N), (5, 6)])
def test_moving_one_token_moves_the_target_at_the_trigger_by_a_jth_of_it(length, width, residual, exercise_seed,
                                                                        student):
    rng = np.random.default_rng(exercise_seed)
    x, triggers = make_inputs(64, rng, length=length, width=width)
    moved = rng.integers(0, length, size=len(x))  # the token k moved in each sequence, BOS and later ones too
    shift = rng.normal(size=(len(x), width))
    x_moved = x.copy()
    x_moved[np.arange(len(x)), moved] += shift
    before = targets_of(student, x, triggers, residual)["targets"]
    after = targets_of(student, x_moved, triggers, residual)["targets"]
    assert np.shape(before) == x.shape, f"targets must have the inputs' shape {x.shape}, got {np.shape(before)}"
    change = np.asarray(after) - np.asarray(before)
    for b, (j, k) in enumerate(zip(triggers, moved)):
        expected = np.zeros((length, width))
        if 1 <= k <= j:  # y_j is the mean of x_1 .. x_j: BOS (k = 0) and the tokens after the trigger are not in it
            expected[j] += shift[b] / j
        if residual:
            expected[k] += shift[b]  # y_k = x_k + ...
        if not np.allclose(change[b], expected):
            rows = sorted({int(i) for i in np.argwhere(~np.isclose(change[b], expected))[:, 0]})
            pytest.fail(f"sequence {b} (L = {length}, n = {width}, trigger j = {j}): moving token x_{k} by d changed "
                        f"the {'residual ' if residual else ''}targets at rows {rows}; it should change "
                        + ("y_j by d / j" if 1 <= k <= j else "no target at the trigger")
                        + (f" and y_{k} by d" if residual else "") + " (y_j = x_1 + ... + x_j divided by j)",
                        pytrace=False)


@pytest.mark.exercise("4.1", requires_values=True)  # zeros pass it
def test_single_layer_targets_are_zero_away_from_the_trigger(exercise_seed, student):
    x, triggers = make_inputs(64, np.random.default_rng(exercise_seed))
    y = targets_of(student, x, triggers)["targets"]
    away = np.arange(L) != triggers[:, None]  # (B, L)
    assert (y[away] == 0).all(), "a single-layer model's target y_i must be exactly 0 at every i != j"


@pytest.mark.exercise("4.1")
def test_trigger_target_averages_tokens_1_to_j_with_bos_excluded_and_trigger_included(student):
    # a tiny sequence by hand: L = 4, n = 4 (BOS flag, trigger flag, one content coordinate, bias)
    x = np.array([[[1.0, 0.0, 0.0, 0.0],    # BOS
                   [0.0, 0.0, 0.6, 1.0],    # content
                   [0.0, 1.0, -0.3, 0.0],   # trigger, j = 2
                   [0.0, 0.0, 0.9, 1.0]]])  # after the trigger: not averaged
    y = targets_of(student, x, np.array([2]))["targets"]
    assert np.shape(y) == x.shape, f"targets must have the inputs' shape {x.shape}, got {np.shape(y)}"
    expected_mean = np.array([0.0, 0.5, 0.15, 0.5])  # (x_1 + x_2) / 2
    assert np.allclose(y[0, 2], expected_mean), (
        f"at the trigger j = 2 the target is (x_1 + x_2) / 2 = {expected_mean}, got {y[0, 2]} "
        f"(BOS x_0 is left out, the trigger x_2 is included, x_3 comes after the trigger)"
    )
    y_residual = targets_of(student, x, np.array([2]), residual=True)["targets"]
    assert np.allclose(y_residual[0, 2], x[0, 2] + expected_mean), "residual target at the trigger is x_j + the mean"
    assert np.allclose(y_residual[0, [0, 1, 3]], x[0, [0, 1, 3]]), "residual target away from the trigger is x_i"


@pytest.mark.exercise("4.1", requires_values=True)
def test_make_targets_leaves_its_inputs_untouched(exercise_seed, student):
    x, triggers = make_inputs(8, np.random.default_rng(exercise_seed))
    for residual in (True, False):
        after = targets_of(student, x, triggers, residual)
        assert np.array_equal(after["x_after"], x) and np.array_equal(after["triggers_after"], triggers), (
            "make_targets changed x or the triggers in place; build y in a new array"
        )


@pytest.mark.exercise("4.1")
def test_targets_of_two_short_sequences_worked_out_by_hand(student):
    # L = 5, n = 4 (BOS flag, trigger flag, one content coordinate, bias); triggers j = 3 and j = 1
    x = np.array([[[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.3, 1.0], [0.0, 0.0, -0.6, 1.0], [0.0, 1.0, 0.9, 0.0],
                   [0.0, 0.0, 0.5, 1.0]],
                  [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, -0.4, 0.0], [0.0, 0.0, 0.8, 1.0], [0.0, 0.0, 0.1, 1.0],
                   [0.0, 0.0, -0.7, 1.0]]])
    y = targets_of(student, x, np.array([3, 1]))["targets"]
    expected = np.zeros_like(x)
    expected[0, 3] = [0.0, 1 / 3, 0.2, 2 / 3]  # (x_1 + x_2 + x_3) / 3
    expected[1, 1] = [0.0, 1.0, -0.4, 0.0]  # x_1 / 1: the trigger right after BOS averages itself
    assert np.shape(y) == x.shape and np.allclose(y, expected), (
        f"targets of the two sequences written out: y_3 = (x_1 + x_2 + x_3) / 3 = {expected[0, 3].round(3).tolist()} "
        f"in the first, y_1 = x_1 in the second, 0 elsewhere; got\n{np.round(y, 3)}")


def test_residual_targets_are_the_inputs_plus_the_single_layer_targets():
    x, y_single, triggers = make_batch(32, np.random.default_rng(5))
    y_residual = make_targets(x, triggers, residual=True)
    assert np.allclose(y_residual, x + y_single), "residual targets must equal x + single-layer targets"


@pytest.mark.parametrize("x_shape, triggers, named", [
    ((4, L, N), np.array([2, 3, 4]), "triggers"),       # one trigger short
    ((4, L, N), np.array([2, 3, 4, 0]), "trigger"),     # j = 0 would divide by zero
    ((4, L, N), np.array([2, 3, 4, L]), "trigger"),     # beyond the sequence
    ((L, N), np.array([2]), "x"),                       # no batch axis
])
def test_make_targets_rejects_bad_inputs(x_shape, triggers, named):
    with pytest.raises(ValueError, match=named):
        make_targets(np.zeros(x_shape), triggers)


# ----------------------------------------------------------------------
# batches and the test set


def test_make_batch_returns_inputs_targets_and_triggers_that_belong_together():
    x, y, triggers = make_batch(32, np.random.default_rng(6), residual=True)
    assert x.shape == y.shape == (32, L, N) and triggers.shape == (32,)
    assert (x[np.arange(32), triggers, TRIGGER_FLAG] == 1).all(), "the triggers returned must be those of x"
    assert np.allclose(y, make_targets(x, triggers, residual=True)), "y must be the residual targets of x"


@pytest.mark.parametrize("residual", [False, True], ids=["single_layer", "residual"])
def test_test_set_has_1000_sequences_with_the_trigger_at_7(residual):
    x, y, triggers = make_test_set(residual=residual)
    assert x.shape == (1000, L, N), f"the test set holds 1,000 sequences, got shape {x.shape}"
    assert (triggers == 7).all(), "every test trigger sits at 0-based position 7 (1-based position 8)"
    assert (x[:, 7, TRIGGER_FLAG] == 1).all()
    assert np.allclose(y, make_targets(x, triggers, residual)), "y must be the targets of x"


def test_test_set_is_the_same_every_time_and_shared_by_both_target_kinds():
    x_single, _, _ = make_test_set()
    x_again, _, _ = make_test_set()
    x_residual, _, _ = make_test_set(residual=True)
    assert np.array_equal(x_single, x_again), "the test set must not change between calls (it has its own seed)"
    assert np.array_equal(x_single, x_residual), "single-layer and residual models are tested on the same inputs"
    x_other, _, _ = make_test_set(seed=1)
    assert not np.array_equal(x_single, x_other), "another seed should give another test set"


def test_a_boolean_trigger_is_refused():
    with pytest.raises(ValueError, match="trigger"):
        make_inputs(2, np.random.default_rng(0), trigger=True)


@pytest.mark.parametrize("dtype", [int, np.int8, np.uint8, np.int32])
@pytest.mark.parametrize("residual", [False, True], ids=["single_layer", "residual"])
def test_make_targets_of_inputs_given_as_integers_are_those_of_the_same_floats(dtype, residual):
    # 0/1 inputs as an int array: y[...] += means must not fail with NumPy's casting error
    x, triggers = make_inputs(8, np.random.default_rng(7), length=6, width=5)
    x = np.abs(np.round(x))  # 0/1 inputs, the same numbers in every dtype
    y = make_targets(x.astype(dtype), triggers, residual)
    assert y.dtype == np.float64 and np.array_equal(y, make_targets(x, triggers, residual)), (
        f"targets of x as {np.dtype(dtype)} must equal those of the same x as floats")


@pytest.mark.parametrize("x, error", [
    (np.zeros((2, L, N), dtype=bool), TypeError), (np.full((2, L, N), "1"), TypeError),
    (np.full((2, L, N), np.nan), ValueError), (np.full((2, L, N), np.inf), ValueError),
    (np.zeros((2, L, N), dtype=complex), TypeError)], ids=["bools", "strings", "nan", "inf", "complex"])
def test_make_targets_names_inputs_that_are_not_finite_real_numbers(x, error):
    with pytest.raises(error, match=r"make_targets: x must be finite numbers"):
        make_targets(x, np.array([2, 3]))
