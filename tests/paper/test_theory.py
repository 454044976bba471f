"""Tests for minitorch/paper/theory/: the constructions, the bounds, every proof step and the worst-case measures.

Each proof step of chapter 05 is an inequality or identity that must hold for
*every* model and input; we check it on random models and random inputs, and
on the constructions, so that a wrong step cannot hide behind a good model.

The graded tests (5.1, 6.1) ask for the student's constructions along a random unit vector u and get them
through the ``student`` fixture as data (class, config, weights); they check that every query and key points
along u (any matrices that do, and give the right attention, pass), load the weights into a model built here,
and evaluate it with
helpers that no exercise fills in. They check what the model's attention and outputs must be (exact at the
trigger row, zero elsewhere; the closed forms of the softmax family), never against the task's targets, which are
exercise 4.1's answer; the instructor's hidden tests check the matrices at other widths and directions.
"""

from __future__ import annotations

import numpy as np
import pytest

from minitorch.nn import Linear
from minitorch.paper import theory
from minitorch.paper.metrics import bos_mass_at_non_trigger_rows
from minitorch.paper.models import ResidualModel, SingleLayerModel, build_model
from minitorch.paper.task import SEQUENCE_LENGTH, WIDTH, make_batch, make_inputs, make_targets

L, n = SEQUENCE_LENGTH, WIDTH


def random_model(seed: int, std: float, heads: int = 1, layers: int = 1, residual: bool = False,
                 bos_penalty: float = 0.0):
    """A model with N(0, std^2) weights; `bos_penalty` lowers every non-BOS query's score on BOS."""
    model = (ResidualModel(n, heads, layers, "softmax", seed=seed) if residual
             else SingleLayerModel(n, heads, "softmax", seed=seed))
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        for linear in (layer.W_Q, layer.W_K, layer.W_V, layer.W_O):
            linear.weight.data[...] = rng.normal(0.0, std, size=linear.weight.shape)
        for head in range(heads):
            block = slice(head * n, (head + 1) * n)
            layer.W_Q.weight.data[block][0] += bos_penalty * (np.eye(n)[n - 1] + np.eye(n)[1])
            layer.W_K.weight.data[block][0] -= bos_penalty * np.eye(n)[0]
    return model


def some_models():
    """Random models at several weight scales and the softmax family: the inequalities hold for all."""
    models = {f"random std={std} seed={seed}": random_model(seed, std) for seed in range(2) for std in (0.02, 0.3, 1.0)}
    models.update({f"softmax construction c={c}": theory.softmax_construction(c) for c in (0.0, 2.0, 5.0, 10.0)})
    return models


# --- The graded constructions (5.1, 6.1), as the student fixture returns them --------------------

def random_direction(seed: int) -> np.ndarray:
    """A unit vector u of R^n drawn from `seed`: the graded constructions point their queries and keys along
    the unit vector they are given (exercises 5.1 and 6.1), not along the e_0 the chapters print."""
    u = np.random.default_rng([seed, 51]).normal(size=n)
    return u / np.linalg.norm(u)


def rebuilt(construction: dict, model, what: str, direction: np.ndarray, scores):
    """`model` (built here) holding the weights of the student's construction `what`, a SingleLayerModel with
    `model`'s normaliser, which the student fixture returns as data: {"class", "config", "weights"}; once its
    queries and keys are known to point along `direction` u on random inputs (each a multiple of u) and its
    scores s_ik at every row i >= 1 and visible key k <= i to be the ones the exercise asks for,
    `scores(triggers)` (B, L, L) there."""
    __tracebackhide__ = True
    normaliser = model.config["normaliser"]
    if construction["class"] != "SingleLayerModel" or construction["config"].get("normaliser") != normaliser:
        pytest.fail(f"{what} must return a SingleLayerModel with the '{normaliser}' normaliser, got a "
                    f"{construction['class']} with config {construction['config']}", pytrace=False)
    model.load_state_dict(construction["weights"])
    x, triggers = make_inputs(64, np.random.default_rng(7))
    layer = model.layers[0]
    for name, matrix in (("queries q_i = W_Q x_i", layer.W_Q.weight.data),
                         ("keys k_k = W_K x_k", layer.W_K.weight.data)):
        found = x @ matrix.T  # (B, L, n)
        off_u = found - (found @ direction)[..., None] * direction  # the part of each vector not along u
        if not np.allclose(off_u, 0.0, atol=1e-9):
            pytest.fail(f"{what}: the {name} must all point along the unit vector it is given (the argument "
                        f"`direction`, u): some have a part of size up to {np.abs(off_u).max():.3g} "
                        f"orthogonal to u. The exercise asks for any unit vector u, not only e_0.", pytrace=False)
    found = (x @ layer.W_Q.weight.data.T) @ (x @ layer.W_K.weight.data.T).transpose(0, 2, 1)  # (B, L, L): s_ik
    visible = (np.arange(L)[:, None] >= 1) & (np.arange(L)[None, :] <= np.arange(L)[:, None])  # i >= 1, k <= i
    wrong = ~np.isclose(found, scores(triggers), atol=1e-9) & visible
    if wrong.any():
        shift = " (shifting a whole row gives the same softmax weights, but not the scores asked for)"
        pytest.fail(f"{what}: {int(wrong.sum())} of {int(visible.sum()) * len(x)} scores s_ik = q_i . k_k at rows "
                    f"i >= 1 differ from the ones the exercise asks for" + (shift if normaliser == "softmax" else ""),
                    pytrace=False)
    return model


def at_trigger_rows(triggers: np.ndarray) -> np.ndarray:
    """(B, L, 1) boolean: True at row j of each sequence."""
    return (np.arange(L)[None, :] == triggers[:, None])[..., None]


def relu_rebuilt(student, model, direction: np.ndarray):
    """The student's ReLU construction for `direction` u, in `model`: scores 1 on keys 1..j of row j, else 0."""
    __tracebackhide__ = True
    return rebuilt(student.relu_construction(n, direction), model, "relu_construction", direction,
                   lambda triggers: (at_trigger_rows(triggers) & (np.arange(L) >= 1)).astype(float))


def softmax_rebuilt(student, scale: float, direction: np.ndarray):
    """The student's softmax construction of scale c for `direction` u: scores +c on BOS at a non-trigger row,
    -c on BOS at the trigger row, 0 on every other key."""
    __tracebackhide__ = True
    return rebuilt(student.softmax_construction(scale, n, direction), SingleLayerModel(n, 1, "softmax"),
                   f"softmax_construction({scale})", direction,
                   lambda triggers: np.where(at_trigger_rows(triggers), -scale, scale) * (np.arange(L) == 0))


def non_trigger_rows_of(triggers: np.ndarray) -> np.ndarray:
    """(B, L) boolean: the rows i >= 1 other than the trigger j, where every target is 0."""
    rows = np.arange(L)
    return (rows >= 1) & (rows != triggers[:, None])


def bos_mass_min_at_non_trigger_rows(attention: np.ndarray, triggers: np.ndarray) -> float:
    """The smallest a_i0 over every head and non-trigger row of one layer's weights (B, H, L, L)."""
    return float(np.where(non_trigger_rows_of(triggers)[:, None, :], attention[..., 0], np.inf).min())  # (B, H, L)


def assert_averages_tokens_1_to_j_at_the_trigger_and_nothing_elsewhere(prediction, weights, x, triggers, what):
    """The ReLU construction's head (weights (B, L, L), output `prediction` (B, L, n)) is exact: every non-trigger
    row attends to nothing and outputs exactly 0; row j puts exactly 1/j on each of keys 1..j, 0 on BOS and on the
    keys after it, and outputs sum_k a_jk x_k (W_O W_V = I), which is then the mean of x_1..x_j."""
    __tracebackhide__ = True
    non_trigger = np.arange(L)[None, :] != triggers[:, None]  # row 0 too: its target is 0
    assert np.all(weights[non_trigger] == 0.0), f"{what}: every non-trigger row must be exactly 0 (no weight anywhere)"
    assert np.all(prediction[non_trigger] == 0.0), f"{what}: the output at every non-trigger row must be exactly 0"
    sequences = np.arange(len(x))
    for j in np.unique(triggers):
        rows = weights[triggers == j, j]  # (sequences with this trigger, L): row j of each
        assert np.all(rows[:, 0] == 0.0) and np.all(rows[:, j + 1:] == 0.0), (
            f"{what}: the trigger row j = {j} must put no weight on BOS nor on the keys after it")
        assert np.allclose(rows[:, 1:j + 1], 1.0 / j, atol=1e-15, rtol=0), (
            f"{what}: the trigger row j = {j} must put exactly 1/j on each of keys 1..j")
    read = np.einsum("bk,bkn->bn", weights[sequences, triggers], x)  # sum_k a_jk x_k at each trigger row
    assert np.allclose(prediction[sequences, triggers], read, atol=1e-12, rtol=0), (
        f"{what}: the output at the trigger row must be sum_k a_jk x_k (the value map W_O W_V is the identity)")


@pytest.mark.exercise("6.1")
def test_relu_construction_is_exact_on_10000_random_sequences(exercise_seed, student):
    model = relu_rebuilt(student, SingleLayerModel(n, 1, "relu"), random_direction(exercise_seed))
    x, triggers = make_inputs(10_000, np.random.default_rng(exercise_seed))
    assert set(triggers.tolist()) == set(range(2, L)), "the sample should contain every trigger position 2..L-1"
    prediction, attention = theory.predict_with_attention(model, x)
    assert_averages_tokens_1_to_j_at_the_trigger_and_nothing_elsewhere(
        prediction, attention[0][:, 0], x, triggers, "the ReLU construction (Theorem 3: exact)")


@pytest.mark.exercise("6.1")
def test_relu_construction_also_solves_the_residual_task(exercise_seed, student):
    residual = relu_rebuilt(student, ResidualModel(n, 1, 1, "relu"), random_direction(exercise_seed + 1))
    x, triggers = make_inputs(2000, np.random.default_rng(exercise_seed + 1))
    prediction, attention = theory.predict_with_attention(residual, x)
    assert_averages_tokens_1_to_j_at_the_trigger_and_nothing_elsewhere(
        prediction - x, attention[0][:, 0], x, triggers, "the ReLU construction with a residual connection (x + the "
        "head's output)")


# --- The softmax family ------------------------------------------------------------------------

@pytest.mark.exercise("5.1")
def test_softmax_construction_attention_matches_its_closed_form(exercise_seed, student):
    for scale in (0.0, 2.0, 7.5):
        model = softmax_rebuilt(student, scale, random_direction(exercise_seed))
        x, triggers = make_inputs(200, np.random.default_rng(exercise_seed))
        prediction, attention = theory.predict_with_attention(model, x)
        bos = attention[0][:, 0, :, 0]  # (B, L)
        rows = np.arange(L)[None, :].repeat(len(x), axis=0)
        is_trigger = rows == triggers[:, None]
        expected = np.where(is_trigger, np.exp(-scale) / (np.exp(-scale) + rows),
                            np.exp(scale) / (np.exp(scale) + np.maximum(rows, 1)))
        expected[:, 0] = 1.0
        assert np.allclose(bos, expected, atol=1e-12), \
            f"scale {scale}: BOS mass should be e^c/(e^c+i) at content rows and e^-c/(e^-c+j) at the trigger"
        weights = attention[0][:, 0]
        values = np.where(np.arange(L)[None, :, None] == 0, 0.0, x)  # BOS's value is 0, others are themselves
        assert np.allclose(prediction, weights @ values, atol=1e-12), \
            f"scale {scale}: the output should be Σ_k a_ik x_k over non-BOS keys (W = I - e_0 e_0^T)"


@pytest.mark.exercise("5.1")
def test_softmax_family_error_falls_monotonically_while_bos_mass_rises_to_one(exercise_seed, student):
    scales = np.array([0.0, 1.0, 2.0, 3.0, 5.0, 7.0, 10.0, 15.0, 20.0, 30.0])
    x, triggers = theory.stress_inputs(8, seed=exercise_seed)  # every trigger in 2..15, corners included
    errors, bos = [], []
    for scale in scales:  # what theory.softmax_family measures, on the student's constructions
        model = softmax_rebuilt(student, scale, random_direction(exercise_seed + 1))
        prediction, attention = theory.predict_with_attention(model, x)
        # the worst case lies at a non-trigger row, whose target is 0 (the closed form above pins row j)
        errors.append(np.abs(prediction[non_trigger_rows_of(triggers)]).max())
        bos.append(bos_mass_min_at_non_trigger_rows(attention[0], triggers))
    errors, bos = np.array(errors), np.array(bos)
    assert np.all(np.diff(errors) < 0), f"worst-case error should fall strictly as c grows: {errors}"
    assert np.all(np.diff(bos) > 0), f"the smallest BOS mass should rise strictly as c grows: {bos}"
    assert bos[-1] > 1 - 1e-11 and errors[-1] < 1e-11, "at c = 30 the sink should be complete and the error ~0"
    assert np.allclose(errors, (L - 1) / (np.exp(scales) + L - 1), rtol=1e-9), \
        "the measured worst case (all contents +1 is in the stress set) should equal (L-1)/(e^c + L-1)"
    assert np.allclose(1 - bos, errors, rtol=1e-9, atol=1e-15), "along the family, 1 - min BOS mass = worst-case error"


def test_softmax_family_reproduces_our_earlier_500_sequence_check_with_training_triggers():
    family = theory.softmax_family([2.0, 5.0, 10.0, 20.0], size_per_trigger=2)
    error, bos = family["random_max_error"], family["random_bos_mass_min"]
    # Our earlier check of this construction (chapter 05, section 4): 500 sequences with triggers drawn from
    # {2, ..., 15}; errors 0.65, 0.086, 6.4e-4, 2.9e-8; min BOS 0.33, 0.908, 0.9993, 1.0. The largest error is
    # the bias coordinate of row 14 when j = 15, 14 / (e^c + 14); the smallest BOS mass is row 15's, e^c / (e^c + 15).
    scales = family["scale"]
    assert np.allclose(error, 14 / (np.exp(scales) + 14), rtol=1e-9), f"max errors {error}"
    assert np.allclose(bos, np.exp(scales) / (np.exp(scales) + 15), rtol=1e-9), f"min BOS masses {bos}"
    assert [float(f"{value:.2g}") for value in error] == [0.65, 0.086, 6.4e-4, 2.9e-8], f"max errors {error}"
    assert [round(value, digits) for value, digits in zip(bos, (2, 3, 4, 4))] == [0.33, 0.908, 0.9993, 1.0], bos
    # With the trigger fixed at j = 7 (the test set), row 14 also sees the trigger, whose bias is 0: the largest
    # error is row 15's bias coordinate, 14 / (e^c + 15): 0.625 at c = 2.
    assert np.allclose(family["test_max_error"], 14 / (np.exp(scales) + 15), rtol=1e-9), family["test_max_error"]


# --- The bounds ---------------------------------------------------------------------------------

def test_trigger_separation_solves_its_quadratic():
    epsilon0 = theory.trigger_separation()
    gap = 1 / 2 - 1 / 15
    assert abs(2 * epsilon0 * (1 + epsilon0) - gap) < 1e-14 and abs(epsilon0 - 0.18313) < 1e-5
    assert theory.trigger_separation((7, 8)) < epsilon0, "closer trigger positions give a weaker bound"
    with pytest.raises(ValueError, match="two distinct trigger positions"):
        theory.trigger_separation((7,))


def test_theorem1_bound_and_its_inverse_agree():
    errors = np.array([0.0, 1e-6, 1e-3, 0.05])
    bound = theory.theorem1_bos_lower_bound(errors)
    assert bound[0] == 1.0 and np.all(np.diff(bound) < 0), "the bound is 1 at zero error and falls with the error"
    assert np.allclose(theory.theorem1_error_lower_bound(bound), errors), "the inverse should undo the bound"
    assert theory.theorem1_bos_lower_bound(1.0) == 0.0, "the bound is vacuous (0) once δ >= ε_0 / 2"
    with pytest.raises(ValueError):
        theory.theorem1_bos_lower_bound(-1.0)


def _minimax_error_by_slope_search(points) -> float:
    """An independent computation of the best affine fit of 1/j: for a slope s the best intercept
    centres the residuals, leaving (max - min)/2; that is convex in s, so a ternary search finds it."""
    points = np.asarray(points, dtype=float)
    spread = lambda slope: np.ptp(1 / points - slope * points) / 2  # noqa: E731
    low, high = -1.0, 1.0
    for _ in range(200):
        a, b = low + (high - low) / 3, high - (high - low) / 3
        low, high = (low, b) if spread(a) <= spread(b) else (a, high)
    return spread((low + high) / 2)


def test_affine_fit_of_reciprocal_is_one_tenth_for_the_training_triggers():
    error, slope, intercept = theory.affine_fit_of_reciprocal()
    assert abs(error - 0.1) < 1e-12, f"best affine fit of 1/j over j = 2..15 should err by exactly 1/10, got {error}"
    assert abs(slope + 1 / 30) < 1e-12 and abs(intercept - 7 / 15) < 1e-12, \
        f"the best line should be 7/15 - j/30, got {intercept} + {slope} j"


@pytest.mark.parametrize("triggers", [tuple(range(2, 16)), (2, 3, 4), (2, 7, 15), tuple(range(3, 12)), (2, 5, 6, 15)])
def test_affine_fit_of_reciprocal_matches_a_slope_search_and_equioscillates(triggers):
    error, slope, intercept = theory.affine_fit_of_reciprocal(triggers)
    searched = _minimax_error_by_slope_search(triggers)
    assert abs(error - searched) < 1e-9, f"J = {triggers}: triple formula gives {error}, slope search {searched}"
    j = np.array(triggers, dtype=float)
    residual = 1 / j - (intercept + slope * j)  # (|J|,)
    assert np.abs(residual).max() <= error + 1e-12, "the returned line should stay within the error everywhere"
    # Chebyshev's alternation: three points, left to right, where the residual is +E, -E, +E (or the reverse).
    at_plus = j[np.isclose(residual, error, atol=1e-12)]
    at_minus = j[np.isclose(residual, -error, atol=1e-12)]
    alternates = any(a < b < c for a in at_plus for b in at_minus for c in at_plus) or \
        any(a < b < c for a in at_minus for b in at_plus for c in at_minus)
    assert alternates, f"J = {triggers}: the residual {residual} should reach ±{error} alternately at three points"


def test_affine_fit_of_reciprocal_needs_three_points():
    with pytest.raises(ValueError, match="at least 3 trigger positions"):
        theory.affine_fit_of_reciprocal((2, 15))


# --- Lemma 5: the trigger row of a single softmax head ----------------------------------------

def _lemma5_contents(count: int = 40, seed: int = 0) -> np.ndarray:
    """Contents z for X_j(z): uniform, random corners, the two all-ones corners and 0: (B, d)."""
    draw, d = np.random.default_rng(seed), WIDTH - 3
    return np.concatenate([draw.uniform(-1, 1, (count, d)), draw.choice([-1.0, 1.0], (count, d)),
                           np.ones((1, d)), -np.ones((1, d)), np.zeros((1, d))])


def _lemma5_holds(model, error: float) -> list[str]:
    """Every way in which `model`'s trigger row breaks Lemma 5's bounds at worst-case error `error` (empty: none)."""
    bounds, contents, broken = theory.trigger_row_bounds(error), _lemma5_contents(), []
    for index, j in enumerate(range(2, SEQUENCE_LENGTH)):
        row = theory.trigger_row_weights(model, contents, j)
        for name, measured, bound in (("a_j0", row["bos"], bounds["bos"][index]),
                                      ("|content key - 1/j|", np.abs(row["content_key"] - 1 / j),
                                       bounds["content_key"][index]),
                                      ("|a_jj - 1/j|", np.abs(row["trigger_key"] - 1 / j),
                                       bounds["trigger_key"][index]),
                                      ("|S - 1|", np.abs(row["sum_ratio"] - 1), bounds["kappa"])):
            if measured.max() > bound:
                broken.append(f"j = {j}: {name} = {measured.max():.3g} > the bound {bound:.3g}")
    return broken


def test_lemma5_bounds_are_linear_in_the_error_and_vacuous_past_the_affine_fit():
    small, smaller = theory.trigger_row_bounds(1e-6), theory.trigger_row_bounds(1e-7)
    for name in ("kappa", "nu", "bos_ratio"):
        assert 9.9 < small[name] / smaller[name] < 10.1, f"Lemma 5's {name} should be linear in δ for small δ"
    assert np.all(small["bos"] < 1e-2) and np.all(small["content_key"] < 1e-3), \
        "at δ = 1e-6 the lemma should pin the trigger row close to 1/j per key and 0 on BOS"
    assert np.all(np.isinf(theory.trigger_row_bounds(0.1)["bos"])), "at δ >= F = 1/10 the first step says nothing"
    assert np.isinf(theory.trigger_row_bounds(0.01)["bos_ratio"]), "at δ = 1e-2 the proof's ν exceeds 1: no bound"
    assert theory.trigger_row_bounds(0.0)["bos"].max() == 0.0, "an exact softmax head has exactly 1/j per key"
    with pytest.raises(ValueError, match="at least 3 trigger positions"):
        theory.trigger_row_bounds(1e-6, triggers=(2, 15))


@pytest.mark.parametrize("scale", [5.0, 8.0, 10.0, 15.0, 20.0])
def test_lemma5_holds_on_the_softmax_family_at_its_exact_error(scale):
    error, _ = theory.construction_worst_case(scale)  # δ(c), exact (chapter 05, section 4)
    broken = _lemma5_holds(theory.softmax_construction(scale), error)
    assert not broken, f"softmax construction, c = {scale}: " + "; ".join(broken)


def test_lemma5_holds_on_perturbed_heads_at_their_measured_error():
    # The bound at the measured δ̂ <= δ asks for more than the lemma does: passing it is a stricter check.
    draw = np.random.default_rng(3)
    for scale, noise in ((12.0, 1e-5), (16.0, 1e-6), (20.0, 1e-7)):
        head = theory.softmax_construction(scale)
        for linear in (head.layers[0].W_Q, head.layers[0].W_K, head.layers[0].W_V, head.layers[0].W_O):
            linear.weight.data += draw.normal(0.0, noise, size=linear.weight.shape)
        error = theory.worst_case(head, size_per_trigger=8)["worst_case_error"]
        broken = _lemma5_holds(head, error)
        assert not broken, f"perturbed construction c = {scale}, noise {noise} (δ̂ = {error:.2e}): " + "; ".join(broken)


def test_trigger_row_weights_reads_the_models_own_attention():
    head = theory.softmax_construction(3.0)  # BOS score -3 at the trigger row, every other key 0
    row = theory.trigger_row_weights(head, np.zeros((1, WIDTH - 3)), 4)
    expected_bos = np.exp(-3.0) / (np.exp(-3.0) + 4)
    assert row["bos"][0] == pytest.approx(expected_bos) and row["content_spread"][0] == 0.0
    assert row["content_key"][0] == pytest.approx(1 / (np.exp(-3.0) + 4)) == row["trigger_key"][0]
    assert row["sum_ratio"][0] == pytest.approx(np.exp(-3.0) + 1.0), "S = r_0 + r_t = e^-3 + 1"
    with pytest.raises(ValueError, match="one layer with one head"):
        theory.trigger_row_weights(build_model(WIDTH, 2, 1, "softmax", residual=False), np.zeros((1, WIDTH - 3)), 4)


# --- Theorem 1, step by step, for every model --------------------------------------------------

def test_step1_output_is_value_map_applied_to_attention_average():
    x, _, _ = make_batch(64, np.random.default_rng(3))
    for name, model in some_models().items():
        prediction, attention = theory.predict_with_attention(model, x)
        averaged = theory.attention_average(attention[0][:, 0], x)  # x̄_i
        assert np.allclose(prediction, averaged @ theory.value_map(model).T, atol=1e-10), \
            f"{name}: a single head must output ŷ_i = W x̄_i with W = W_O W_V"
        assert np.allclose(prediction[:, 0], theory.value_map(model)[:, 0], atol=1e-12), \
            f"{name}: row 0 sees only BOS, so ŷ_0 = W e_0"
        bos = attention[0][:, 0, :, 0]
        mu = theory.non_bos_average(averaged, bos)[:, 1:]
        # μ̃ divides by 1 - a_i0: rows with almost all mass on BOS amplify rounding (1e-16 / (1 - a_i0))
        assert np.all(theory.in_token_hull(mu[bos[:, 1:] < 1 - 1e-6], tolerance=1e-7)), \
            f"{name}: the renormalised non-BOS average μ̃_i must lie in T"


@pytest.mark.parametrize("averaged, bos_mass, culprit", [  # unchecked, nan and inf came back without a word
    (np.ones((1, 4, 13)), np.ones((1, 4)), r"non_bos_average: every row's bos_mass is 1, so no row has non-BOS"),
    (np.ones((1, 4, 13)), np.full(4, 0.5), r"non_bos_average: bos_mass must hold one a_i0 per row of averaged "
                                           r".*got averaged \(1, 4, 13\) and bos_mass \(4,\)"),
], ids=["all-mass-on-bos", "bos-mass-without-the-batch-axis"])
def test_step1_non_bos_average_names_inputs_it_cannot_average(averaged, bos_mass, culprit):
    with pytest.raises(ValueError, match=culprit):
        theory.non_bos_average(averaged, bos_mass)


def test_step1_non_bos_average_gives_nan_only_at_rows_without_non_bos_mass():
    mu = theory.non_bos_average(np.ones((1, 2, 13)), np.array([[1.0, 0.5]]))
    assert np.isnan(mu[0, 0]).all(), "a row with a_i0 = 1 has no non-BOS tokens: μ̃_i must be nan (not inf)"
    assert np.isfinite(mu[0, 1]).all(), "a row with a_i0 < 1 must give a finite μ̃_i"


def test_step2_non_trigger_row_inequality_holds_for_random_models():
    x, triggers = theory.stress_inputs(4, seed=4)
    for name, model in some_models().items():
        left, right = theory.non_trigger_row_sides(model, x, triggers)
        assert np.all(left <= right + 1e-12), \
            f"{name}: (1 - a_i0)||W μ̃_i|| <= ||ŷ_i|| + a_i0||W e_0|| fails by {np.max(left - right):.3e}"


def test_step3_trigger_row_decomposition_is_an_identity():
    mu = theory.random_token_hull_points(300, seed=5)
    for name, model in some_models().items():
        for trigger in (2, 7, L - 1):
            computed, decomposed = theory.trigger_row_decomposition(model, mu, trigger)
            assert np.allclose(computed, decomposed, atol=1e-10), \
                f"{name}, j={trigger}: ŷ_j != a_0 W e_0 + (a+b) W μ + s W(e_b - e_t)"


def test_step4_lemma2_determinant_holds_on_random_planes():
    rng = np.random.default_rng(6)
    P1, P2, G = (rng.normal(size=(20_000, 2)) for _ in range(3))
    s1, s2 = rng.normal(size=20_000), rng.normal(size=20_000)
    # also near-collinear cases, where the lemma is tight-ish
    P2[:5000] = 0.9 * P1[:5000] + 1e-3 * rng.normal(size=(5000, 2))
    s1[:5000] = rng.normal(size=5000)
    determinant, bound = theory.determinant_lemma_sides(P1, P2, G, s1, s2)
    assert np.all(determinant <= bound + 1e-12), f"|det(P1,P2)| exceeded its bound by {np.max(determinant - bound):.3e}"


def test_step5_lemma3_trigger_row_slack_is_at_least_epsilon0():
    epsilon0 = theory.trigger_separation()
    e_0, e_t, e_b, _ = theory.unit_vectors(n)
    points = np.concatenate([theory.random_token_hull_points(300, seed=7),
                             theory.random_token_hull_points(300, seed=8, corners=True),
                             [(e_b + e_t) / 2, e_b, e_t]])  # (e_b + e_t)/2 minimises ||μ||_∞ on T
    for name, model in some_models().items():
        slack = theory.trigger_row_slack(model, points)
        assert np.all(slack >= epsilon0), f"{name}: τ(μ) = {slack.min():.4f} < ε_0 = {epsilon0:.4f}"


def test_theorem1_holds_row_by_row_along_the_softmax_family():
    x, triggers = theory.stress_inputs(4, seed=9)
    for scale in (0.0, 2.0, 4.0, 6.0, 8.0, 12.0, 20.0):
        measured = theory.worst_case(theory.softmax_construction(scale), inputs=(x, triggers))
        bound = theory.theorem1_bos_lower_bound(measured["worst_case_error"])
        assert measured["bos_mass_min"] >= bound, \
            f"c={scale}: min BOS mass {measured['bos_mass_min']:.6f} is below Theorem 1's bound {bound:.6f}"


@pytest.mark.parametrize("argument", [dict(sharpness=-1e4), dict(sharpness=0.0), dict(separation=-60.0)])
def test_fixed_trigger_counterexample_takes_a_sharpness_and_a_separation_above_0(argument):
    """With G < 0 the far keys get the weight: the model returned had a worst-case error of 7, no counterexample."""
    name, value = next(iter(argument.items()))
    with pytest.raises(ValueError, match=rf"fixed_trigger_counterexample: {name} must be a finite number > 0, got "
                                         rf"{value}"):
        theory.fixed_trigger_counterexample(**argument)


def test_fixed_trigger_counterexample_shows_why_theorem1_needs_two_trigger_positions():
    model = theory.fixed_trigger_counterexample(trigger=7)
    fixed = theory.worst_case(model, triggers=(7,), size_per_trigger=64)
    assert fixed["worst_case_error"] < 1e-4, \
        f"with j fixed at 7 the error should be tiny, got {fixed['worst_case_error']:.2e}"
    assert fixed["bos_mass_min"] < 0.1, "on all-equal corner inputs some non-trigger row should put < 0.1 on BOS"
    moving = theory.worst_case(model, size_per_trigger=8)
    assert moving["bos_mass_min"] >= theory.theorem1_bos_lower_bound(moving["worst_case_error"]), \
        "once the trigger may move, Theorem 1 applies and its bound must hold"
    assert moving["worst_case_error"] > 0.5, "a trigger value tuned to j = 7 should fail at other positions"


@pytest.mark.slow
def test_theorem1_bound_holds_for_a_trained_1x1_softmax_model():
    from minitorch.paper.train import train
    result = train(build_model(n, 1, 1, "softmax", False), lr=1e-3, max_steps=1500, progress=False)
    assert result.converged, f"the 1x1 softmax model should reach max error < 5e-3 (stopped after {result.steps} steps)"
    measured = theory.worst_case(result.model)
    bound = theory.theorem1_bos_lower_bound(measured["worst_case_error"])
    assert measured["bos_mass_min"] >= bound, \
        (f"trained model: min BOS {measured['bos_mass_min']:.5f} < bound {bound:.5f} "
         f"at δ̂ = {measured['worst_case_error']:.2e}")
    assert bound > 0.5, \
        f"the bound should be informative for a trained model (δ̂ = {measured['worst_case_error']:.2e})"


# --- Theorem 2 --------------------------------------------------------------------------------------

def test_two_layer_construction_sinks_in_one_layer_only():
    for heads in (1, 2):
        model = theory.two_layer_construction(scale=20.0, heads=heads)
        measured = theory.worst_case(model, size_per_trigger=8)
        assert measured["worst_case_error"] < 1e-6, f"heads={heads}: error {measured['worst_case_error']:.2e}"
        per_head = measured["head_bos_mass_min"]  # (layers, H)
        x, triggers = theory.stress_inputs(8, seed=10)
        _, attention = theory.predict_with_attention(model, x)
        largest = np.array([[bos_mass_at_non_trigger_rows(w, triggers)[:, h].max() for h in range(heads)]
                            for w in attention])
        assert per_head[0, 0] > 1 - 1e-6, "layer 0, head 0 should sink (BOS mass ~1 at every non-trigger row)"
        others = np.ones_like(largest, dtype=bool)
        others[0, 0] = False
        assert np.all(largest[others] < 1e-6), f"heads={heads}: every other head should put ~0 on BOS, got {largest}"


def test_trigger_row_sink_construction_has_no_sink_at_any_non_trigger_row():
    for layers in (1, 2):
        model = theory.trigger_row_sink_construction(scale=30.0, layers=layers)
        x, triggers = theory.stress_inputs(8, seed=11)
        prediction, attention = theory.predict_with_attention(model, x)
        error = np.abs(prediction - make_targets(x, triggers, residual=True)).max()
        assert error < 1e-10, f"layers={layers}: error {error:.2e}"
        largest = max(bos_mass_at_non_trigger_rows(w, triggers).max() for w in attention)
        assert largest < 1e-12, f"layers={layers}: some head puts {largest:.2e} on BOS at a non-trigger row"
        at_trigger = attention[0][np.arange(len(x)), 1, triggers, 0]
        assert np.all(at_trigger > 1 - 1e-10), "layer 0's head 1 should sink at the trigger row instead"


def test_separating_corner_lemma_on_random_subspaces():
    rng = np.random.default_rng(12)
    _, e_t, e_b, _ = theory.unit_vectors(n)
    for dimension in (1, 3, 8, n - 2):
        for _ in range(20):
            words = np.concatenate([[e_t - e_b], rng.normal(size=(dimension - 1, n))])
            z, functional = theory.separating_corner(words)
            target = np.concatenate([[0.0, 1.0], z, [0.0]])  # z + e_t
            assert abs(np.abs(functional).sum() - 1) < 1e-12 and np.abs(words @ functional).max() < 1e-9
            assert functional @ target >= 0.5 - 1e-12, f"λ·(z + e_t) = {functional @ target} < 1/2"
            members = rng.normal(size=(200, dimension)) @ words  # random points s of S
            distance = np.abs(target - members).max(axis=1)
            assert np.all(distance >= 0.5 - 1e-12), "z + e_t should be at ∞-distance >= 1/2 from S"
    with pytest.raises(ValueError, match="dimension"):
        theory.separating_corner(rng.normal(size=(n - 1, n)))


@pytest.mark.parametrize("words", [np.zeros((0, n)), np.eye(n)[2:4]], ids=["no-word", "two-content-directions"])
def test_separating_corner_refuses_words_whose_span_lacks_e_t_minus_e_b(words):
    """No word gave λ = e_b and λ · (z + e_t) = 0, though the docstring promises at least 1/2, without a word."""
    with pytest.raises(ValueError, match=r"separating_corner: S must contain e_t - e_b \(Theorem 2's premise.*"
                                         r"the corner found gives λ · \(z \+ e_t\) = 0, not the promised >= 1/2"):
        theory.separating_corner(words)


@pytest.mark.parametrize("x, shape", [([[0.0] * WIDTH] * 3, r"\(3, 16\)"), (np.zeros((1, 3, 15)), r"\(1, 3, 15\)"),
                                      (np.zeros((1, 0, 16)), r"\(1, 0, 16\)")],
                         ids=["one-sequence-without-the-batch-axis", "narrower-tokens", "no-token"])
def test_residual_streams_names_an_input_that_is_not_a_batch_of_sequences(x, shape):
    model = build_model(WIDTH, 1, 2, "softmax", residual=True)  # unchecked: "not enough values to unpack"
    with pytest.raises(ValueError, match=r"residual_streams: x must be a batch of sequences of shape \(B, L, 16\) "
                                         r"with L >= 1 .*got shape " + shape):
        theory.residual_streams(model, x)


def test_theorem2_stream_inequalities_hold_for_random_models():
    rng = np.random.default_rng(13)
    # small weights and a growing penalty on BOS scores: the largest BOS mass γ ranges from ~0.5 to ~1e-12
    for seed, penalty in enumerate((0.0, 2.0, 3.0, 4.0, 6.0, 8.0)):
        for layers, heads in ((1, 2), (2, 1), (2, 2)):
            model = random_model(seed, std=0.1, heads=heads, layers=layers, residual=True, bos_penalty=penalty)
            corner = rng.choice([-1.0, 1.0], size=n - 3)
            sides = theory.theorem2_stream_sides(model, corner, trigger=int(rng.integers(2, L)))
            assert sides["spread"] <= sides["spread_bound"] + 1e-9, f"seed {seed}: {sides}"
            assert sides["rest"] <= sides["rest_bound"] + 1e-9, f"seed {seed}: {sides}"


def test_theorem2_bound_holds_on_the_constructions():
    for model in (theory.two_layer_construction(), theory.trigger_row_sink_construction(),
                  theory.trigger_row_sink_construction(layers=1)):
        error = theory.worst_case(model, size_per_trigger=4)["worst_case_error"]
        layers, heads = len(model.layers), model.config["heads"]
        bound = theory.theorem2_bos_lower_bound(error, layers, heads, theory.value_norm(model))
        witness = theory.theorem2_witness(model)
        assert 0 < bound <= witness["bos_mass"], f"{model.name}: largest BOS mass {witness} below γ = {bound}"
    with pytest.raises(ValueError, match="heads"):
        theory.theorem2_bos_lower_bound(0.0, layers=4, heads=4, value_norm=1.0)


# --- Bad input ------------------------------------------------------------------------------------

def test_bad_arguments_get_clear_errors():
    with pytest.raises(ValueError, match="width"):
        theory.relu_construction(width=3)
    with pytest.raises(ValueError, match="finite"):
        theory.softmax_construction(float("nan"))
    with pytest.raises(ValueError, match="trigger"):
        theory.all_equal_inputs(np.zeros((1, n - 3)), trigger=L)
    with pytest.raises(ValueError, match="T"):
        theory.trigger_row_decomposition(theory.softmax_construction(1.0), np.zeros((1, n)), 7)
    with pytest.raises(ValueError, match="shape"):
        theory.load_head(theory.softmax_construction(1.0), 0, 0, np.eye(3), np.eye(n), np.eye(n), np.eye(n))


# --- Bad input: each function names itself, the argument and its value, before any work -----------------------

def _tiny_model(heads: int = 1, layers: int = 1):
    return build_model(n, heads, layers, "softmax", layers > 1)


@pytest.mark.parametrize("call, owner", [
    (lambda triggers: theory.trigger_separation(triggers), "trigger_separation"),
    (lambda triggers: theory.theorem1_bos_lower_bound(0.1, triggers=triggers), "theorem1_bos_lower_bound"),
    (lambda triggers: theory.theorem1_error_lower_bound(0.5, triggers=triggers), "theorem1_error_lower_bound"),
    (lambda triggers: theory.affine_fit_of_reciprocal(triggers), "affine_fit_of_reciprocal"),
    (lambda triggers: theory.stress_inputs(1, triggers=triggers), "stress_inputs"),
    (lambda triggers: theory.worst_case(_tiny_model(), triggers=triggers, size_per_trigger=1), "worst_case"),
])
@pytest.mark.parametrize("triggers, error, culprit", [
    ([2, 2.7], TypeError, r"got 2.7 \(float\)"),  # not cast to 2, which would show (2, 2)
    ([2, 15.9], TypeError, r"got 15.9 \(float\)"),  # not eps_0 of {2, 15}, silently
    ("23", TypeError, r"got '23' \(str\)"),  # not eps_0 of {2, 3}, silently
    ("2,15", TypeError, r"got '2,15' \(str\)"),  # not int()'s "invalid literal"
    (5, TypeError, r"got 5 \(int\)"),  # not "'int' object is not iterable"
    ([3, True], TypeError, r"got True \(bool\)"),  # not eps_0 of {1, 3}, silently
    ([2, float("nan")], TypeError, r"got nan \(float\)"),  # not "cannot convert float NaN to integer"
    ([0, 3], ValueError, r"got 0 in \[0, 3\]"),  # position 0 is BOS
])
def test_theory_refuses_trigger_sets_that_are_not_integers_at_least_1(call, owner, triggers, error, culprit):
    with pytest.raises(error, match=rf"{owner}: triggers must be a list of integers (>= 1|in 1..15).*{culprit}"):
        call(triggers)


@pytest.mark.parametrize("call, owner", [
    (lambda: theory.stress_inputs(1, triggers=[]), "stress_inputs"),
    (lambda: theory.worst_case(_tiny_model(), triggers=[]), "worst_case"),  # not NumPy's "need at least one array"
])
def test_worst_case_refuses_an_empty_trigger_set(call, owner):
    with pytest.raises(ValueError, match=rf"{owner}: triggers must hold at least one trigger position"):
        call()


@pytest.mark.parametrize("arguments, culprit", [
    (lambda: (Linear(16, 16),), r"worst_case: model must be an attention model .*got Linear"),
    (lambda: (_tiny_model(), (7,), 1, 0, theory.stress_inputs(1)[0]),  # x alone: the model blamed a (16, 16) row
     r"worst_case: inputs must be a pair \(x, triggers\).*got ndarray of shape \(\d+, 16, 16\)"),
    (lambda: (_tiny_model(), (7,), 1, 0, theory.stress_inputs(1)[:1]),
     r"worst_case: inputs must be a pair \(x, triggers\).*got tuple of length 1"),
], ids=["a-layer-not-a-model", "x-without-triggers", "a-tuple-of-one"])
def test_worst_case_names_a_model_that_is_none_and_inputs_that_are_not_a_pair(arguments, culprit):
    with pytest.raises(TypeError, match=culprit):
        theory.worst_case(*arguments())


@pytest.mark.parametrize("call, error, culprit", [
    (lambda: theory.theorem1_bos_lower_bound(True), TypeError,  # not read as delta = 1
     r"theorem1_bos_lower_bound: error must be finite numbers, got True \(dtype bool\)"),
    (lambda: theory.theorem1_bos_lower_bound("0.1"), TypeError, r"theorem1_bos_lower_bound: error must be"),
    (lambda: theory.theorem1_error_lower_bound(float("nan")), ValueError,  # nan would give nan, not an error
     r"theorem1_error_lower_bound: bos_mass must be finite numbers, got nan"),
    (lambda: theory.theorem1_error_lower_bound([0.5, float("nan")]), ValueError,
     r"theorem1_error_lower_bound: bos_mass must be finite numbers, got \[0.5, nan\]"),
    (lambda: theory.theorem1_error_lower_bound(np.array([True])), TypeError, r"bos_mass must be finite numbers"),
    (lambda: theory.determinant_lemma_sides("a", "b", "c", 1, 2), TypeError,  # not NumPy's "could not convert"
     r"determinant_lemma_sides: P1 must be finite numbers, got 'a'"),
    (lambda: theory.determinant_lemma_sides([1, 0], [0, 1], [1, 1], 1, np.inf), ValueError,
     r"determinant_lemma_sides: s2 must be finite numbers, got inf"),
])
def test_theory_refuses_numbers_that_are_bools_strings_or_not_finite(call, error, culprit):
    with pytest.raises(error, match=culprit):
        call()


@pytest.mark.parametrize("call, owner", [
    (lambda model: theory.value_norm(model), "value_norm"),  # not "'Linear' object has no attribute 'layers'"
    (lambda model: theory.value_words(model), "value_words"),  # not "... no attribute 'config'"
    (lambda model: theory.theorem2_stream_sides(model, np.zeros(n - 3), 3), "theorem2_stream_sides"),
])
@pytest.mark.parametrize("model", ["linear", None])
def test_theory_refuses_a_model_that_is_not_an_attention_model(call, owner, model):
    from minitorch import nn

    model = nn.Linear(2, 2) if model == "linear" else model
    with pytest.raises(TypeError, match=rf"{owner}: model must be an attention model .*got {type(model).__name__}"):
        call(model)


@pytest.mark.parametrize("call, error, culprit", [
    (lambda: theory.random_token_hull_points(2, corners="no"), TypeError,  # 'no' is a true string
     r"random_token_hull_points: corners must be True or False, got 'no'"),
    (lambda: theory.random_token_hull_points(10**10), MemoryError,  # before NumPy's "Unable to allocate"
     r"random_token_hull_points: points of shape \(10000000000, 16\) would need"),
    (lambda: theory.in_token_hull(theory.random_token_hull_points(3), tolerance=-1), ValueError,
     r"in_token_hull: tolerance must be a finite number >= 0, got -1"),
    (lambda: theory.in_token_hull(theory.random_token_hull_points(3), tolerance=float("nan")), ValueError,
     r"in_token_hull: tolerance must be a finite number >= 0, got nan"),
    (lambda: theory.construction_worst_case(10.0, length=0), ValueError,  # would give an error < 0, a mass > 1
     r"construction_worst_case: length must be an integer >= 3, got 0"),
    (lambda: theory.construction_worst_case(1.0, length=-5), ValueError,  # would give a negative BOS mass
     r"construction_worst_case: length must be an integer >= 3, got -5"),
    (lambda: theory.construction_worst_case(1.0, length=2.5), TypeError,  # not a length of 2.5
     r"construction_worst_case: length must be an integer >= 3, got 2.5"),
    (lambda: theory.value_map(_tiny_model(), head=3), ValueError,  # not a matrix of zeros
     r"value_map: head 3 is not a head of layer 0 \(it has 1: 0..0\)"),
    (lambda: theory.value_map(_tiny_model(), head=-1), ValueError,  # not zeros either
     r"value_map: head must be an integer >= 0, got -1"),
    (lambda: theory.value_map(_tiny_model(), layer=5), ValueError,  # not a bare IndexError
     r"value_map: layer 5 is not a layer of this model"),
    (lambda: theory.load_head(_tiny_model(), 0, 1, *[np.eye(n)] * 4), ValueError,  # not NumPy's broadcast error
     r"load_head: head 1 is not a head of layer 0"),
    (lambda: theory.stress_inputs(2, seed=-1), ValueError,  # not NumPy's "expected non-negative integer"
     r"stress_inputs: seed must be an integer >= 0, got -1"),
    (lambda: theory.worst_case(_tiny_model(), seed=-1), ValueError, r"worst_case: seed must be an integer >= 0"),
    (lambda: theory.theorem2_stream_sides(theory.two_layer_construction(), np.ones(5), 3), ValueError,
     r"theorem2_stream_sides: content must be the d = n - 3 = 13 content coordinates .*got shape \(5,\)"),
    (lambda: theory.determinant_lemma_sides(np.eye(2), np.eye(3), np.eye(2), 1.0, 1.0), ValueError,
     r"determinant_lemma_sides: P1, P2 and G must be points of the plane, shape \(..., 2\)"),
    (lambda: theory.determinant_lemma_sides(np.eye(2), np.ones((3, 2)), np.eye(2), 1.0, 1.0), ValueError,
     r"determinant_lemma_sides: the points .* must share their leading axes"),
    (lambda: theory.in_token_hull(5.0), ValueError, r"in_token_hull: mu must be points \(..., n\) with n >= 4"),
    (lambda: theory.in_token_hull("mu"), TypeError, r"in_token_hull: mu must be numbers"),
    (lambda: theory.softmax_construction(5.0, width=10**6), MemoryError,  # before NumPy's "Unable to allocate"
     r"softmax_construction: the head's four \(n, n\) matrices of shape \(4, 1000000, 1000000\) would need"),
    (lambda: theory.relu_construction(width=10**6), MemoryError, r"relu_construction: the head's four"),
    # the exercises' weights (5.1, 6.1): a u of another length or norm would build a head of another width or a
    # sink of another strength (|u|^2 c, not c) without a word
    (lambda: theory.constructions.softmax_construction_weights(5.0, np.ones(n), n), ValueError,
     r"softmax_construction_weights: u must be a unit vector \(norm 1\), got norm 4"),
    (lambda: theory.constructions.relu_construction_weights(np.ones(3) / np.sqrt(3), n), ValueError,
     r"relu_construction_weights: u must be a unit vector of shape \(16,\) \(the width n\), got shape \(3,\)"),
    (lambda: theory.constructions.softmax_construction_weights(float("inf"), np.eye(n)[0], n), ValueError,
     r"softmax_construction_weights: scale must be a finite number, got inf"),
    (lambda: theory.constructions.relu_construction_weights("u", n), TypeError,
     r"relu_construction_weights: u must be finite numbers, got 'u'"),
    (lambda: theory.relu_construction(direction=np.full(n, 0.5)), ValueError,
     r"relu_construction: direction must be a unit vector \(norm 1\), got norm 2"),
])
def test_theory_names_a_bad_argument_before_any_work(call, error, culprit):
    with pytest.raises(error, match=culprit) as raised:
        call()
    assert len(str(raised.value)) < 400, "one line"


@pytest.mark.parametrize("error, layers, heads, value_norm", [
    (0.1, 1, 1, 1e-300),  # would give 7.5e+298 as a lower bound on a BOS mass
    (0.0, 1, 1, 0.1),
    (0.0, 2, 2, 0.01),
])
def test_theorem2_bound_refuses_premises_that_would_bound_a_mass_above_1(error, layers, heads, value_norm):
    with pytest.raises(ValueError, match=r"theorem2_bos_lower_bound: the bound γ = .* exceeds 1"):
        theory.theorem2_bos_lower_bound(error, layers, heads, value_norm)
    assert 0 <= theory.theorem2_bos_lower_bound(error, layers, heads, 1.0) <= 1, "a bound of at most 1 is kept"


@pytest.mark.parametrize("matrices, culprit", [
    (["a", np.eye(n), np.eye(n), np.eye(n)], r"W_Q must be finite numbers, got 'a'"),  # not NumPy's float('a')
    ([np.eye(n), np.eye(n) > 0, np.eye(n), np.eye(n)], r"W_K must be finite numbers, got [\s\S]*dtype bool"),
    ([np.eye(n), np.eye(n), np.full((n, n), np.nan), np.eye(n)], r"W_V must be finite numbers"),
    ([np.eye(n)] * 3 + [[["x"] * n] * n], r"W_O must be finite numbers"),
])
def test_load_head_refuses_matrices_that_are_not_finite_numbers_and_leaves_the_model_as_it_was(matrices, culprit):
    _refused_and_unchanged(_tiny_model(), matrices, (TypeError, ValueError), culprit)


def test_load_head_refuses_values_beyond_a_float32_models_range_and_leaves_it_as_it_was():
    """1e40 written into a float32 model became inf, with only NumPy's "overflow encountered in cast"."""
    from minitorch.paper.models import build_model

    model = build_model(n, 1, 1, "softmax", False, dtype=np.float32)
    _refused_and_unchanged(model, [np.eye(n)] * 3 + [np.eye(n) * 1e40], OverflowError,
                           r"W_O: a value of size 1e\+40 does not fit in float32")


def _refused_and_unchanged(model, matrices, error, culprit):
    before = {name: values.copy() for name, values in model.state_dict().items()}
    with pytest.raises(error, match=rf"load_head: {culprit}"):
        theory.load_head(model, 0, 0, *matrices)
    assert all(np.array_equal(model.state_dict()[name], values) for name, values in before.items()), (
        "load_head changed the model before refusing a matrix")


def _batch(size: int = 3):
    x, _, triggers = make_batch(size, np.random.default_rng(0))
    return x, triggers


@pytest.mark.parametrize("make_x, error, culprit", [
    (lambda x: x.tolist(), None, None),  # a nested list is taken as an array
    (lambda x: x[0], ValueError, r"weights \(3, 16, 16\) must be \(B, L, L\) for x \(16, 16\)"),
    (lambda x: "abc", TypeError, r"x must be finite numbers, got 'abc'"),
    (lambda x: np.where(x == 1, np.nan, x), ValueError, r"x must be finite numbers"),
])
def test_attention_average_takes_x_as_numbers_of_shape_B_L_n(make_x, error, culprit):
    x, _ = _batch()
    weights = np.full((3, L, L), 1 / L)
    if error is None:  # a nested list of numbers is as good as the array
        np.testing.assert_array_equal(theory.attention_average(weights, make_x(x)), weights @ x)
        return
    with pytest.raises(error, match=rf"attention_average: {culprit}"):
        theory.attention_average(weights, make_x(x))


@pytest.mark.parametrize("make_triggers, error, culprit", [
    (lambda triggers: triggers[:1], ValueError, r"triggers shape \(B,\).*triggers of shape \(1,\)"),
    (lambda triggers: np.append(triggers, 2), ValueError, r"triggers of shape \(4,\)"),
    (lambda triggers: triggers[:, None], ValueError, r"triggers of shape \(3, 1\)"),
    (lambda triggers: np.array([0, 2, 3]), ValueError, r"triggers must be a list of integers in 1..15 .*got 0"),
    (lambda triggers: [2.5, 3, 4], TypeError, r"triggers must be a list of integers .*got 2.5"),
])
def test_non_trigger_row_sides_takes_one_trigger_position_per_sequence(make_triggers, error, culprit):
    x, triggers = _batch()
    with pytest.raises(error, match=rf"non_trigger_row_sides: .*{culprit}"):
        theory.non_trigger_row_sides(theory.relu_construction(), x, make_triggers(triggers))


@pytest.mark.parametrize("scales, error, culprit", [
    (10.0, TypeError, r"scales must be a list of numbers .*got 10.0; write softmax_family\(\[c\]\)"),
    (np.float64(3.0), TypeError, r"scales must be a list of numbers"),
    ([[1.0, 2.0]], TypeError, r"scales must be a list of numbers .*got \[\[1.0, 2.0\]\]"),
    (["a"], TypeError, r"scales must be finite numbers, got \['a'\]"),
    ([1.0, float("nan")], ValueError, r"scales must be finite numbers"),
])
def test_softmax_family_takes_a_list_of_scales(scales, error, culprit):
    with pytest.raises(error, match=rf"softmax_family: {culprit}"):
        theory.softmax_family(scales, size_per_trigger=1, test_size=1)


def _words_with(value, where):
    words = np.zeros((3, n))
    words[0] = theory.unit_vectors(n)[1] - theory.unit_vectors(n)[2]  # e_t - e_b
    words[where] = value
    return words


@pytest.mark.parametrize("words, error, culprit", [  # not NumPy's 'SVD did not converge'
    (np.full((3, n), np.nan), ValueError, r"words must be finite numbers"),
    (_words_with(np.nan, (1, 4)), ValueError, r"words must be finite numbers"),
    (_words_with(np.inf, (2, 0)), ValueError, r"words must be finite numbers"),
    (_words_with(-np.inf, (0, 1)), ValueError, r"words must be finite numbers"),
    (np.full((3, n), "a"), TypeError, r"words must be finite numbers, got [\s\S]*dtype <U1"),
    (np.zeros(n), ValueError, rf"words must have shape \(N, n\), got \({n},\)"),
], ids=["all-nan", "one-nan", "an-inf", "a-minus-inf-on-bos", "strings", "one-word-without-its-axis"])
def test_separating_corner_names_words_that_are_not_finite_numbers(words, error, culprit):
    with pytest.raises(error, match=rf"separating_corner: {culprit}"):
        theory.separating_corner(words)



@pytest.mark.parametrize("heads, layers", [(2, 1), (1, 2)])
def test_non_trigger_row_sides_refuses_a_model_that_is_not_one_head(heads, layers):
    """The sides are those of one head: taking head 0 of a 2-head model would let the inequality fail without a word."""
    model = build_model(16, heads, layers, "softmax", layers > 1, seed=0)
    x, triggers = make_inputs(2, np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"non_trigger_row_sides: the model must have a single head in a single"):
        theory.non_trigger_row_sides(model, x, triggers)


def test_in_token_hull_takes_a_list_of_points_as_an_array():  # not "'list' object has no attribute 'shape'"
    points = theory.random_token_hull_points(5, seed=3)
    assert theory.in_token_hull(points.tolist()).tolist() == theory.in_token_hull(points).tolist() == [True] * 5


# --- an upper bound on a single ReLU head's worst-case error -----------------------------------

def _trained_relu_head():
    from pathlib import Path
    from minitorch.paper.models import load_model
    return load_model(Path(__file__).resolve().parents[2] / "figures" / "models" / "relu_1x1.npz")


def test_relu_upper_bound_is_zero_for_the_exact_construction():
    bound = theory.relu_error_upper_bound(theory.relu_construction())
    assert bound["worst_case_error_upper"] == 0.0, f"Theorem 3's head is exact, got {bound}"


def test_relu_upper_bound_lies_above_every_measured_error_of_trained_and_perturbed_heads():
    draw = np.random.default_rng(4)
    for noise in (0.0, 1e-3, 3e-3):
        head = _trained_relu_head()
        for linear in (head.layers[0].W_Q, head.layers[0].W_K, head.layers[0].W_V, head.layers[0].W_O):
            linear.weight.data += draw.normal(0.0, noise, size=linear.weight.shape).astype(linear.weight.data.dtype)
        bound = theory.relu_error_upper_bound(head)
        assert bound["non_trigger_score_max"] <= 0 < bound["trigger_score_min"], \
            f"noise {noise}: the certificates should hold for the trained head and near it, got {bound}"
        measured = theory.worst_case(head, size_per_trigger=16)
        assert measured["worst_case_error"] <= bound["worst_case_error_upper"] + 1e-6, \
            f"noise {noise}: measured error {measured['worst_case_error']} above the upper bound {bound}"
        assert measured["bos_mass_min"] == 0.0 == measured["bos_mass_mean"], "certified: no weight on BOS there"
    assert theory.relu_error_upper_bound(_trained_relu_head())["worst_case_error_upper"] < \
        theory.trigger_separation() / 2, "the trained ReLU head's δ is provably below ε_0/2 (chapter 06)"


def test_relu_upper_bound_is_inf_when_a_certificate_fails_and_refuses_other_models():
    head = theory.relu_construction()
    head.layers[0].W_Q.weight.data += 0.01  # content queries now score some keys positively
    assert theory.relu_error_upper_bound(head)["worst_case_error_upper"] == float("inf")
    with pytest.raises(ValueError, match="one-layer, one-head ReLU"):
        theory.relu_error_upper_bound(theory.softmax_construction(5.0))
