"""Hidden tests of the paper's exercises, 3.1 to 9.1 (chapters 03 to 09): a student edition never holds this file
(`registry.HIDDEN_TESTS`); the class grader and the Gradescope bundle run it, with the grader's seed.

Each test draws its inputs from the seed, at sizes the public tests do not use (mask lengths, sequence lengths,
widths, batch shapes), and compares the student's answer with a reference written here, from the chapter's
formulas: the references are the answers, so they stay with the instructor. Nothing here is taken from the
library under test (an instructor may run this file by hand on a student's copy), which is reached only through
the ``student`` fixture. A failure says what is wrong without quoting the seeded inputs.
"""

from __future__ import annotations

import numpy as np
import pytest

from loop_rule import loops_in  # (tests/loop_rule.py)

PUBLIC_LENGTHS = {1, 2, 3, 4, 5, 6, 16, 17, 21, 24}  # the mask and sequence lengths the public tests use


def rng_for(seed: int, exercise: str) -> np.random.Generator:
    """A generator of its own for each exercise, from the grader's seed."""
    return np.random.default_rng([seed, *map(int, exercise.split("."))])


def hidden_lengths(rng: np.random.Generator, count: int, low: int = 5, high: int = 48) -> list[int]:
    """`count` distinct lengths in [low, high] that no public test uses."""
    choices = [length for length in range(low, high + 1) if length not in PUBLIC_LENGTHS]
    return [int(length) for length in rng.choice(choices, size=count, replace=False)]


def future_of(length: int) -> np.ndarray:
    """The causal mask: True where key k lies after query i."""
    return np.arange(length)[None, :] > np.arange(length)[:, None]


def causal_weights(rng: np.random.Generator, batch: int, heads: int, length: int, zero_rows: int = 0) -> np.ndarray:
    """Random attention weights (B, H, L, L), zero on future keys; rows summing to any positive number, and
    `zero_rows` rows (not row 0) all zero, as a ReLU head's may be."""
    weights = rng.uniform(0.0, 1.0, size=(batch, heads, length, length)) * ~future_of(length)
    weights *= rng.uniform(0.2, 3.0, size=(batch, heads, length, 1))
    for _ in range(zero_rows):
        weights[rng.integers(batch), rng.integers(heads), rng.integers(1, length)] = 0.0
    return weights


def report(found, expected, what: str, rtol: float = 1e-7, atol: float = 1e-10) -> None:
    """Fail, saying how far `found` is from `expected`, without quoting either."""
    __tracebackhide__ = True
    if np.shape(found) != np.shape(expected):
        pytest.fail(f"{what}: the answer has shape {np.shape(found)}, it should have {np.shape(expected)}",
                    pytrace=False)
    found = np.asarray(found, dtype=float)
    wrong = ~np.isclose(found, expected, rtol=rtol, atol=atol)
    if wrong.any():
        pytest.fail(f"{what}: {int(wrong.sum())} of {wrong.size} entries differ from the definition (largest "
                    f"difference {np.nanmax(np.abs(found - expected)):.3g})", pytrace=False)


# ----------------------------------------------------------------------
# 3.1 the causal mask


@pytest.mark.exercise("3.1")
def test_causal_mask_at_lengths_no_public_test_uses(exercise_seed, student):
    for length in hidden_lengths(rng_for(exercise_seed, "3.1"), 4, high=64):
        answer = student.causal_mask(length)
        assert answer["type"] == "ndarray" and answer["dtype"] == "bool", (
            f"causal_mask should return a boolean NumPy array, got {answer['type']} of dtype {answer['dtype']}")
        report(answer["mask"], future_of(length), "causal_mask at a length the public tests do not use")


# ----------------------------------------------------------------------
# 3.2 and 3.3 the two normalisers


def softmax_reference(scores: np.ndarray, future: np.ndarray) -> np.ndarray:
    masked = np.where(future, -np.inf, scores)
    exponentials = np.exp(masked - masked.max(axis=-1, keepdims=True))
    return exponentials / exponentials.sum(axis=-1, keepdims=True)


def relu_reference(scores: np.ndarray, future: np.ndarray) -> np.ndarray:
    length = scores.shape[-1]
    return np.where(future, 0.0, np.maximum(scores, 0.0)) / np.maximum(np.arange(length), 1)[:, None]


def attention_shapes(rng: np.random.Generator) -> list[tuple[int, ...]]:
    """Score shapes (..., L, L) with batch and head axes, and without, at lengths no public test uses."""
    first, second, third = hidden_lengths(rng, 3, high=30)
    return [(int(rng.integers(1, 4)), int(rng.integers(1, 4)), first, first), (second, second),
            (int(rng.integers(2, 5)), third, third)]


@pytest.mark.exercise("3.2")
def test_softmax_attention_on_seeded_scores(exercise_seed, student):
    rng = rng_for(exercise_seed, "3.2")
    for shape in attention_shapes(rng):
        scores = rng.normal(0.0, rng.uniform(0.5, 6.0), size=shape)
        scores[..., future_of(shape[-1])] = rng.normal(0.0, 50.0, size=scores[..., future_of(shape[-1])].shape)
        weights = student.softmax_attention(scores, future_of(shape[-1]))["weights"]
        report(weights, softmax_reference(scores, future_of(shape[-1])),
               f"softmax attention on seeded scores of {len(shape)} axes")


@pytest.mark.exercise("3.2")
def test_softmax_attention_with_scores_large_enough_to_overflow_exp(exercise_seed, student):
    rng = rng_for(exercise_seed + 1, "3.2")
    length = hidden_lengths(rng, 1, high=30)[0]
    scores = rng.normal(0.0, 1.0, size=(2, length, length)) + rng.choice([-800.0, 800.0], size=(2, length, 1))
    weights = student.softmax_attention(scores, future_of(length))["weights"]
    report(weights, softmax_reference(scores, future_of(length)),
           "softmax attention on scores near ±800 (exp overflows unless the row's max is subtracted first)")


@pytest.mark.exercise("3.3")
def test_relu_attention_on_seeded_scores(exercise_seed, student):
    rng = rng_for(exercise_seed, "3.3")
    for shape in attention_shapes(rng):
        scores = rng.normal(0.0, rng.uniform(0.5, 4.0), size=shape)
        weights = student.relu_attention(scores, future_of(shape[-1]))["weights"]
        report(weights, relu_reference(scores, future_of(shape[-1])),
               f"ReLU attention on seeded scores of {len(shape)} axes")


# ----------------------------------------------------------------------
# 3.4, 3.5 and 9.1 the sink measures


def bos_mass_reference(weights: np.ndarray, triggers: np.ndarray) -> np.ndarray:
    length = weights.shape[-1]
    return np.stack([weights[b, :, [i for i in range(1, length) if i != j], 0].T
                     for b, j in enumerate(triggers)])  # (B, H, L-2)


def alpha_reference(weights: np.ndarray) -> np.ndarray:
    sums = weights.sum(axis=-1, keepdims=True)
    normalised = np.divide(weights, sums, out=np.zeros_like(weights), where=sums > 0)
    length = weights.shape[-1]
    seen_by = np.array([length - k for k in range(length)], dtype=float)  # queries k..L-1 see key k
    return normalised.sum(axis=2).mean(axis=0) / seen_by  # (H, L)


@pytest.mark.exercise("3.4")
def test_bos_mass_on_seeded_weights_and_triggers(exercise_seed, student):
    rng = rng_for(exercise_seed, "3.4")
    for length in hidden_lengths(rng, 3, high=30):
        batch, heads = int(rng.integers(2, 7)), int(rng.integers(1, 5))
        weights = causal_weights(rng, batch, heads, length, zero_rows=2)
        triggers = rng.integers(1, length, size=batch)
        report(student.bos_mass_at_non_trigger_rows(weights, triggers), bos_mass_reference(weights, triggers),
               "the BOS mass at non-trigger rows on seeded weights")


@pytest.mark.exercise("3.5")
def test_gu_sink_scores_on_seeded_weights(exercise_seed, student):
    rng = rng_for(exercise_seed, "3.5")
    for length in hidden_lengths(rng, 3, high=30):
        weights = causal_weights(rng, int(rng.integers(2, 7)), int(rng.integers(1, 5)), length, zero_rows=3)
        report(student.gu_sink_scores(weights), alpha_reference(weights), "Gu et al.'s alpha_k on seeded weights")


@pytest.mark.exercise("9.1")
def test_sink_share_on_seeded_layers(exercise_seed, student):
    rng = rng_for(exercise_seed, "9.1")
    for length in hidden_lengths(rng, 3, high=30):
        layers, key = [], int(rng.integers(0, 3))
        for _ in range(int(rng.integers(1, 4))):
            weights = causal_weights(rng, 3, int(rng.integers(2, 6)), length)
            weights /= weights.sum(axis=-1, keepdims=True)
            sinking = rng.random(weights.shape[1]) < 0.5  # these heads pour most of every row on the key
            weights[:, sinking] *= 0.3
            weights[:, sinking, key:, key] += 0.7
            layers.append(weights)
        threshold = float(rng.uniform(0.05, 0.6))
        expected = np.mean(np.concatenate([alpha_reference(weights)[:, key] for weights in layers]) > threshold)
        share = student.sink_share(layers, key=key, threshold=threshold)
        assert np.isclose(share, expected), (
            f"Sink_(k+1)^eps on seeded layers is {share}, the definition gives {expected}: the share, over every head "
            f"of every layer, of alpha_k > eps (strictly)")


# ----------------------------------------------------------------------
# 4.1 the task's targets


def seeded_inputs(rng: np.random.Generator, batch: int, length: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Sequences in the task's layout (BOS e_0, a trigger flag at j, content, bias channel), written here."""
    x = np.zeros((batch, length, width))
    x[:, 0, 0] = 1.0
    x[:, 1:, 2:width - 1] = rng.uniform(-1.0, 1.0, size=(batch, length - 1, width - 3))
    x[:, 1:, width - 1] = 1.0
    triggers = rng.integers(1, length, size=batch)
    x[np.arange(batch), triggers, 1] = 1.0
    x[np.arange(batch), triggers, width - 1] = 0.0
    return x, triggers


def targets_reference(x: np.ndarray, triggers: np.ndarray, residual: bool) -> np.ndarray:
    y = x.copy() if residual else np.zeros_like(x)
    for b, j in enumerate(triggers):
        y[b, j] += x[b, 1:j + 1].mean(axis=0)  # x_1 .. x_j: BOS left out, the trigger in
    return y


@pytest.mark.exercise("4.1")
@pytest.mark.parametrize("residual", [False, True], ids=["single_layer", "residual"])
def test_targets_on_seeded_sequences_of_other_lengths_and_widths(residual, exercise_seed, student):
    loops = loops_in(student.function_source("4.1"))
    assert not loops, f"make_targets loops in Python, or calls what could: {', '.join(loops)}"
    rng = rng_for(exercise_seed + int(residual), "4.1")
    for length in hidden_lengths(rng, 3, low=3, high=30):
        x, triggers = seeded_inputs(rng, int(rng.integers(1, 40)), length, int(rng.integers(4, 24)))
        # the same triggers with tokens of any numbers, whose flags no longer say where the trigger is: the targets
        # follow `triggers` (an answer that reads the trigger from the flags, as chapter 03's hand-built ReLU
        # head does, is right only on the task's layout)
        for tokens, layout in ((x, "the task's layout"), (rng.normal(size=x.shape), "tokens of any numbers")):
            answer = student.make_targets(tokens, triggers, residual=residual)
            report(answer["targets"], targets_reference(tokens, triggers, residual),
                   f"{'residual' if residual else 'single-layer'} targets on seeded sequences ({layout})")
            assert np.array_equal(answer["x_after"], tokens) and np.array_equal(answer["triggers_after"], triggers), (
                "make_targets changed its inputs in place")


# ----------------------------------------------------------------------
# 5.1 and 6.1 the constructions, at other widths and directions


def random_unit(rng: np.random.Generator, width: int) -> np.ndarray:
    u = rng.normal(size=width)
    return u / np.linalg.norm(u)


def head(construction: dict) -> tuple[np.ndarray, ...]:
    """W_Q, W_K, W_V, W_O of the single head the student's construction returned."""
    weights = construction["weights"]
    return tuple(np.asarray(weights[f"layers.0.W_{name}.weight"]) for name in "QKVO")


def check_head(construction: dict, width: int, u: np.ndarray, scores, value_map, what: str) -> None:
    """On seeded sequences of the task's layout, the head's queries W_Q x and keys W_K x point along `u`, its
    scores s_ik = q_i . k_k at every row i >= 1 and visible key k <= i are `scores(triggers, length)` there, and
    its value map W_O W_V is `value_map`. Any matrices with these properties pass."""
    __tracebackhide__ = True
    W_Q, W_K, W_V, W_O = head(construction)
    x, triggers = seeded_inputs(np.random.default_rng(width), 6, 9, width)  # (6, 9, width), (6,)
    for name, matrix in (("queries W_Q x", W_Q), ("keys W_K x", W_K)):
        vectors = x @ matrix.T  # (6, 9, width)
        report(vectors - (vectors @ u)[..., None] * u, np.zeros_like(vectors),
               f"{what}: the {name} must point along the unit vector u it is given")
    found = (x @ W_Q.T) @ (x @ W_K.T).transpose(0, 2, 1)  # (6, 9, 9): s_ik
    visible = (np.arange(9)[:, None] >= 1) & ~future_of(9)  # rows i >= 1, keys k <= i
    report(found[:, visible], scores(triggers, 9)[:, visible], f"{what}: the scores s_ik at rows i >= 1")
    report(W_O @ W_V, value_map, f"{what}: the value map W_O W_V")


def trigger_rows(triggers: np.ndarray, length: int) -> np.ndarray:
    """(B, length, 1) boolean: True at row j of each sequence."""
    return (np.arange(length)[None, :] == triggers[:, None])[..., None]


@pytest.mark.exercise("5.1")
def test_softmax_construction_at_seeded_widths_directions_and_scales(exercise_seed, student):
    rng = rng_for(exercise_seed, "5.1")
    for width in rng.choice([w for w in range(5, 30) if w != 16], size=3, replace=False):
        width, scale, u = int(width), float(rng.uniform(0.0, 25.0)), random_unit(rng, int(width))
        without_bos = np.eye(width)
        without_bos[0, 0] = 0.0
        on_bos = np.arange(9) == 0  # (9,): key 0

        def scores(triggers, length, scale=scale, on_bos=on_bos):  # +c on BOS, -c at the trigger row, 0 elsewhere
            return np.where(trigger_rows(triggers, length), -scale, scale) * on_bos

        check_head(student.softmax_construction(scale, width, u), width, u, scores, without_bos,
                   "the softmax construction at a seeded width, direction and scale")


@pytest.mark.exercise("6.1")
def test_relu_construction_at_seeded_widths_and_directions(exercise_seed, student):
    rng = rng_for(exercise_seed, "6.1")
    for width in rng.choice([w for w in range(5, 30) if w != 16], size=3, replace=False):
        width, u = int(width), random_unit(rng, int(width))

        def scores(triggers, length):  # 1 on every key k >= 1 of the trigger row, 0 elsewhere
            return (trigger_rows(triggers, length) & (np.arange(length) >= 1)).astype(float)

        check_head(student.relu_construction(width, u), width, u, scores, np.eye(width),
                   "the ReLU construction at a seeded width and direction")
