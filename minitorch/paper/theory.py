"""The theory of chapters 05 and 06: constructions, bounds and their numerical checks.

Notation (chapters 03-05). Tokens ``x_k`` in R^n, 0-based positions, BOS at
k = 0, trigger at j. Coordinates: 0 BOS flag (e_0), 1 trigger flag (e_t),
2..n-2 content (d = n - 3 of them), n-1 bias channel (e_b). A single head has
weights ``a_ik``, value map ``W = W_O W_V`` and output ``ŷ_i = Σ_k a_ik W x_k``.
Worst-case error: ``δ = sup max_i ||ŷ_i - y_i||_∞`` over every input whose
contents lie in [-1, 1]^d and whose trigger lies in the set J.

What is here:

- Constructions, loaded into the library's own models so that they run
  through the real forward pass: `relu_construction` (Theorem 3, exact),
  `softmax_construction` (the softmax family, scale c),
  `fixed_trigger_counterexample` (why Theorem 1 needs two trigger positions),
  `two_layer_construction` (Theorem 2: one layer sinks, the other does not),
  `trigger_row_sink_construction` (Theorem 2: no head sinks at a non-trigger row).
- Bounds: `trigger_separation` (ε_0 of Theorem 1), `theorem1_bos_lower_bound`
  and its inverse `theorem1_error_lower_bound`, `theorem2_bos_lower_bound`
  (with `value_norm`), `construction_worst_case` (the family's exact numbers),
  `affine_fit_of_reciprocal` (chapter 10's error floor for sigmoid attention).
- Measuring: `run`, `row_errors`, `all_equal_inputs`, `stress_inputs` (random,
  corner, near-corner and all-equal inputs at every trigger position),
  `worst_case` (a model's largest error and smallest BOS mass on them),
  `softmax_family`.
- The proof steps as functions a chapter or test can check on random inputs.
  Theorem 1: `attention_average`, `non_bos_average`, `in_token_hull`,
  `non_trigger_row_sides`, `trigger_row_decomposition`, `trigger_row_slack`,
  `determinant_lemma_sides`, `random_token_hull_points`. Theorem 2:
  `residual_streams`, `theorem2_stream_sides`, `value_words`, `separating_corner`,
  `theorem2_witness`.
- `plot_error_vs_bos_mass`: the figure of chapter 05 (the reproduce job passes
  trained models as ``trained=[dict(label=..., worst_case_error=..., bos_mass_min=...,
  covered=...)]``, measured with `worst_case`).

Every function that draws random numbers takes a seed.
"""

from __future__ import annotations

import numpy as np

from minitorch.paper.metrics import bos_mass_at_non_trigger_rows
from minitorch.paper.models import AttentionModel, ResidualModel, SingleLayerModel
from minitorch.paper.task import BOS, SEQUENCE_LENGTH, TEST_TRIGGER, TRIGGER, WIDTH, make_targets, make_test_set
from minitorch.tensor import Tensor, no_grad

TRAINING_TRIGGERS = tuple(range(2, SEQUENCE_LENGTH))  # J = {2, ..., L-1}


# ----------------------------------------------------------------------------
# Coordinates and loading weights into a model
# ----------------------------------------------------------------------------

def _check_width(width: int) -> None:
    if not isinstance(width, (int, np.integer)) or width < 4:
        raise ValueError(f"width must be an integer >= 4 (BOS, trigger, >= 1 content, bias), got {width!r}")


def _check_finite(name: str, value: float) -> float:
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value}")
    return value


def unit_vectors(width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(e_0, e_t, e_b, content)``: the BOS flag, trigger flag and bias unit vectors,
    and a boolean mask (n,) of the d = n - 3 content coordinates."""
    _check_width(width)
    identity = np.eye(width)
    content = np.zeros(width, dtype=bool)
    content[2:width - 1] = True
    return identity[BOS], identity[TRIGGER], identity[width - 1], content


def load_head(model: AttentionModel, layer: int, head: int, W_Q, W_K, W_V, W_O) -> AttentionModel:
    """Write one head's four n x n matrices into `model` (in place; returns it).

    The matrices act on column vectors, as in the chapter: ``q = W_Q x``.
    `nn.Linear` stores exactly that matrix (it computes ``x @ weight.T``), so
    head h owns rows h*n:(h+1)*n of W_Q, W_K, W_V and columns h*n:(h+1)*n of W_O.
    """
    attention = model.layers[layer]
    width = attention.width
    block = slice(head * width, (head + 1) * width)
    for name, matrix in dict(W_Q=W_Q, W_K=W_K, W_V=W_V, W_O=W_O).items():
        matrix = np.asarray(matrix, dtype=float)
        if matrix.shape != (width, width):
            raise ValueError(f"load_head: {name} must have shape ({width}, {width}), got {matrix.shape}")
    attention.W_Q.weight.data[block, :] = W_Q
    attention.W_K.weight.data[block, :] = W_K
    attention.W_V.weight.data[block, :] = W_V
    attention.W_O.weight.data[:, block] = W_O
    return model


def value_map(model: AttentionModel, layer: int = 0, head: int = 0) -> np.ndarray:
    """The head's value map ``W = W_O W_V`` restricted to that head: (n, n)."""
    attention = model.layers[layer]
    block = slice(head * attention.width, (head + 1) * attention.width)
    return attention.W_O.weight.data[:, block] @ attention.W_V.weight.data[block, :]


# ----------------------------------------------------------------------------
# Constructions
# ----------------------------------------------------------------------------

def relu_construction(width: int = WIDTH) -> SingleLayerModel:
    """Theorem 3: ReLU weights that solve the task exactly, with no sink.

    ``W_Q = u e_t^T``, ``W_K = u (e_b + e_t)^T``, ``W_V = W_O = I`` with u = e_0.
    Then ``s_ik = [i = j] [k >= 1]``: after ReLU and the divisor j, the trigger
    row puts 1/j on each of keys 1..j (the exact mean); every other row is 0.
    """
    model = SingleLayerModel(width, heads=1, normaliser="relu")
    # BEGIN EXERCISE 6.1
    e_0, e_t, e_b, _ = unit_vectors(width)
    u = e_0  # any unit vector works: scores only need q_i . k_k = (e_t . x_i)((e_b + e_t) . x_k)
    W_Q = np.outer(u, e_t)  # q_i = [x_i is the trigger] u
    W_K = np.outer(u, e_b + e_t)  # k_k = [x_k is not BOS] u
    identity = np.eye(width)
    return load_head(model, 0, 0, W_Q, W_K, identity, identity)
    # END EXERCISE 6.1


def softmax_construction(scale: float, width: int = WIDTH) -> SingleLayerModel:
    """The softmax family of chapter 05: a sink whose strength is the scale c.

    ``W_Q = c u (e_b - e_t)^T``, ``W_K = u e_0^T``, ``W_V = I - e_0 e_0^T``,
    ``W_O = I`` with u = e_0. Only the BOS key gets a non-zero score: +c from a
    content query, -c from the trigger. So a non-trigger row i puts
    ``e^c / (e^c + i)`` on BOS, the trigger row ``e^-c / (e^-c + j)``; BOS's
    value is 0 and every other token's value is the token itself.
    """
    scale = _check_finite("softmax_construction: scale", scale)
    model = SingleLayerModel(width, heads=1, normaliser="softmax")
    # BEGIN EXERCISE 5.1
    e_0, e_t, e_b, _ = unit_vectors(width)
    u = e_0
    W_Q = scale * np.outer(u, e_b - e_t)  # q_i = +c u at content tokens, -c u at the trigger
    W_K = np.outer(u, e_0)  # k_k = u at BOS, 0 elsewhere
    W_V = np.eye(width) - np.outer(e_0, e_0)  # BOS's value is 0; other tokens keep their value
    return load_head(model, 0, 0, W_Q, W_K, W_V, np.eye(width))
    # END EXERCISE 5.1


def construction_worst_case(scale: float, length: int = SEQUENCE_LENGTH) -> tuple[float, float]:
    """Exact ``(worst-case error, min BOS mass)`` of `softmax_construction` (scale c >= 0).

    Row L-1 (a non-trigger row whenever j < L-1) sees L-1 non-BOS tokens; with
    every content at +1 its output is ``(L-1)/(e^c + L-1)`` in each content
    coordinate, the largest error anywhere; its BOS mass ``e^c/(e^c + L-1)`` is
    the smallest. So ``1 - min BOS mass = worst-case error`` along the family.
    """
    scale = _check_finite("construction_worst_case: scale", scale)
    if scale < 0:
        raise ValueError(f"construction_worst_case: the formula needs scale >= 0, got {scale}")
    visible = length - 1
    error = visible / (np.exp(scale) + visible)
    return float(error), float(1.0 - error)


def fixed_trigger_counterexample(trigger: int = TEST_TRIGGER, sharpness: float = 1e4, separation: float = 60.0,
                                 width: int = WIDTH) -> SingleLayerModel:
    """A softmax head with tiny worst-case error when the trigger is always at `trigger`,
    but BOS mass only 1/(i+1) at row i < j on inputs whose contents all sit at the corner 1.

    Content tokens have value ``W x_k = c_k - 1`` (1 = all-ones corner): zero at the
    corner. Non-trigger rows score BOS ``G d`` and content key k ``G Σ_m c_k[m]``
    (G = sharpness): keys far from the corner get weight ``e^{-G ||c_k - 1||_1}``,
    keys at the corner tie with BOS. The trigger's value is tuned to this one j,
    so the model fails when the trigger moves: Theorem 1 needs two positions.
    """
    sharpness = _check_finite("fixed_trigger_counterexample: sharpness", sharpness)
    separation = _check_finite("fixed_trigger_counterexample: separation", separation)
    e_0, e_t, e_b, content = unit_vectors(width)
    if not 1 <= trigger < SEQUENCE_LENGTH:
        raise ValueError(f"fixed_trigger_counterexample: trigger must lie in 1..{SEQUENCE_LENGTH - 1}, got {trigger}")
    corner = content.astype(float)  # c* = (1, ..., 1) on the content coordinates
    d = int(content.sum())
    identity = np.eye(width)
    u_score, u_avoid, u_trigger = identity[0], identity[1], identity[2]  # three directions of query/key space
    W_Q = np.outer(u_score + u_avoid, e_b) + np.outer(u_trigger, e_t)
    W_K = (sharpness * np.outer(u_score, corner)  # content key: G c* . c_k
           + np.outer(sharpness * d * u_score - separation * u_trigger, e_0)  # BOS: G d, or -M for the trigger query
           - separation * np.outer(u_avoid, e_t))  # the trigger key: -M for content queries
    W = np.diag(corner)  # content -> content
    W -= np.outer(corner, e_b)  # bias channel: subtract the corner
    W += np.outer((trigger - 1) * corner + (trigger - 1) * e_b + e_t, e_t)  # trigger: repair the mean at this j
    model = SingleLayerModel(width, heads=1, normaliser="softmax")
    return load_head(model, 0, 0, W_Q, W_K, W, identity)


def _running_average_head(width: int, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """(W_Q, W_K) of a head that spreads its weight evenly over the non-BOS keys
    (BOS score -c at every non-BOS query): BOS mass ``e^-c / (e^-c + i)``, no sink."""
    e_0, e_t, e_b, _ = unit_vectors(width)
    return np.outer(e_0, e_b + e_t), -scale * np.outer(e_0, e_0)


def two_layer_construction(scale: float = 20.0, width: int = WIDTH, heads: int = 2) -> ResidualModel:
    """Theorem 2, "not every head must sink": a residual model, 2 layers, in which
    only layer 0's head 0 sinks.

    Layer 0, head 0 is `softmax_construction`'s head (sinks, writes the mean).
    Every other head spreads its weight over the non-BOS keys (BOS mass about
    ``e^-c / i``): with ``heads=1`` layer 1's head has ``W_O = 0``; with ``heads=2``
    layer 0's head 1 has ``W_O = 0`` and layer 1's two heads share their
    attention and have opposite value maps ``±(I - e_0 e_0^T)``, so they cancel.
    """
    scale = _check_finite("two_layer_construction: scale", scale)
    if heads not in (1, 2):
        raise ValueError(f"two_layer_construction: heads must be 1 or 2, got {heads}")
    model = ResidualModel(width, heads=heads, layers=2, normaliser="softmax")
    e_0, e_t, e_b, _ = unit_vectors(width)
    identity, zero = np.eye(width), np.zeros((width, width))
    without_bos = identity - np.outer(e_0, e_0)
    load_head(model, 0, 0, scale * np.outer(e_0, e_b - e_t), np.outer(e_0, e_0), without_bos, identity)
    W_Q, W_K = _running_average_head(width, scale)
    if heads == 1:
        return load_head(model, 1, 0, W_Q, W_K, without_bos, zero)
    load_head(model, 0, 1, W_Q, W_K, without_bos, zero)
    load_head(model, 1, 0, W_Q, W_K, without_bos, identity)
    return load_head(model, 1, 1, W_Q, W_K, without_bos, -identity)


def trigger_row_sink_construction(scale: float = 30.0, width: int = WIDTH, layers: int = 2) -> ResidualModel:
    """Theorem 2, "the sink may sit at the trigger row": a residual model with 2 heads
    per layer in which NO head puts more than ``e^-c / (e^-c + i)`` on BOS at any
    non-trigger row i, yet the error is about ``L e^-c``.

    Layer 0: heads A and B spread their weight over the non-BOS keys at every
    non-trigger row (identical attention there) with opposite value maps
    ``±(I - e_0 e_0^T)``: they cancel. At the trigger row A still averages, and
    so writes the mean, while B's query flips sign and B sinks onto BOS, whose
    value is 0. Later layers hold a cancelling pair of running-average heads.
    """
    scale = _check_finite("trigger_row_sink_construction: scale", scale)
    if layers < 1:
        raise ValueError(f"trigger_row_sink_construction: layers must be >= 1, got {layers}")
    model = ResidualModel(width, heads=2, layers=layers, normaliser="softmax")
    e_0, e_t, e_b, _ = unit_vectors(width)
    identity = np.eye(width)
    without_bos = identity - np.outer(e_0, e_0)
    W_Q, W_K = _running_average_head(width, scale)
    load_head(model, 0, 0, W_Q, W_K, without_bos, identity)  # A: averages at every row
    load_head(model, 0, 1, np.outer(e_0, e_b - e_t), W_K, without_bos, -identity)  # B: BOS score +c at the trigger
    for layer in range(1, layers):
        load_head(model, layer, 0, W_Q, W_K, without_bos, identity)
        load_head(model, layer, 1, W_Q, W_K, without_bos, -identity)
    return model


# ----------------------------------------------------------------------------
# The bounds
# ----------------------------------------------------------------------------

def _trigger_set(triggers) -> tuple[int, ...]:
    triggers = tuple(int(j) for j in triggers)
    if len(set(triggers)) < 2 or min(triggers) < 1:
        raise ValueError(f"Theorem 1 needs at least two distinct trigger positions >= 1, got {triggers}")
    return triggers


def trigger_separation(triggers=TRAINING_TRIGGERS) -> float:
    """ε_0 of Theorem 1: the root of ``2 ε (1 + ε) = Δ``, ``Δ = 1/min J - 1/max J``.

    For J = {2, ..., 15}: Δ = 13/30 and ε_0 ≈ 0.1831.
    """
    triggers = _trigger_set(triggers)
    gap = 1.0 / min(triggers) - 1.0 / max(triggers)  # Δ
    return (np.sqrt(1.0 + 2.0 * gap) - 1.0) / 2.0


def theorem1_bos_lower_bound(error, triggers=TRAINING_TRIGGERS):
    """Theorem 1: a single softmax head with worst-case error δ puts at least
    ``1 - 2 δ / ε_0(J)`` on BOS at every non-trigger row (0 once δ >= ε_0 / 2)."""
    error = np.asarray(error, dtype=float)
    if np.any(error < 0) or not np.all(np.isfinite(error)):
        raise ValueError("theorem1_bos_lower_bound: errors must be finite and >= 0")
    bound = np.clip(1.0 - 2.0 * error / trigger_separation(triggers), 0.0, 1.0)
    return float(bound) if bound.ndim == 0 else bound


def theorem1_error_lower_bound(bos_mass, triggers=TRAINING_TRIGGERS):
    """Theorem 1 read backwards: a single softmax head whose smallest BOS mass at a
    non-trigger row is b has worst-case error at least ``ε_0 (1 - b) / 2``."""
    bos_mass = np.asarray(bos_mass, dtype=float)
    if np.any((bos_mass < 0) | (bos_mass > 1)):
        raise ValueError("theorem1_error_lower_bound: a BOS mass lies in [0, 1]")
    bound = trigger_separation(triggers) * (1.0 - bos_mass) / 2.0
    return float(bound) if bound.ndim == 0 else bound


def affine_fit_of_reciprocal(triggers=TRAINING_TRIGGERS) -> tuple[float, float, float]:
    """The best affine fit of ``1/j`` over ``j`` in J, in the max norm (Chebyshev fit).

    Returns ``(error, slope, intercept)``: ``error = min over (s, t) of max_{j in J}
    |1/j - (t + s j)|`` and a line attaining it. Chapter 10's floor for sigmoid
    attention: the trigger row's trigger-flag output on all-equal inputs is affine
    in j, the target there is 1/j, so every sigmoid head errs by at least ``error``.
    For J = {2, ..., 15}: error = 1/10, line 7/15 - j/30.

    Method: on a finite set the best affine fit is decided by three points
    (Chebyshev's alternation theorem for the two functions 1, j). For
    ``j_1 < j_2 < j_3`` the weights ``λ = (j_3 - j_2, -(j_3 - j_1), j_2 - j_1)``
    annihilate every affine function, so ``|Σ λ_r / j_r| / Σ |λ_r|`` is a lower
    bound for that triple; the largest over all triples is the error.
    """
    points = np.array(sorted(set(_trigger_set(triggers))), dtype=float)
    if len(points) < 3:
        raise ValueError(f"affine_fit_of_reciprocal: need at least 3 trigger positions, got {len(points)}; "
                         "a line fits 1 or 2 points exactly")
    best, best_triple = -1.0, None
    for first in range(len(points)):
        for second in range(first + 1, len(points)):
            for third in range(second + 1, len(points)):
                j1, j2, j3 = points[[first, second, third]]
                weights = np.array([j3 - j2, -(j3 - j1), j2 - j1])  # Σ λ_r (t + s j_r) = 0 for every t, s
                value = abs(weights @ (1.0 / np.array([j1, j2, j3]))) / np.abs(weights).sum()
                if value > best:
                    best, best_triple = value, (j1, j2, j3)
    # The line that errs by exactly ±best, alternating, at the deciding triple: 1/j_r - (t + s j_r) = σ_r best.
    j1, j2, j3 = best_triple
    signs = np.sign(np.array([j3 - j2, -(j3 - j1), j2 - j1]) @ (1.0 / np.array(best_triple))) * np.array([1.0, -1.0, 1.0])
    system = np.array([[1.0, j, sign] for j, sign in zip(best_triple, signs)])  # unknowns t, s, e: t + s j + σ e = 1/j
    intercept, slope, _ = np.linalg.solve(system, 1.0 / np.array(best_triple))
    return float(best), float(slope), float(intercept)


def value_norm(model: AttentionModel) -> float:
    """R of Theorem 2: the largest ``||W||_∞`` (largest absolute row sum) of any head's value map."""
    return max(float(np.abs(value_map(model, layer, head)).sum(axis=1).max())
               for layer in range(len(model.layers)) for head in range(model.layers[layer].heads))


def theorem2_bos_lower_bound(error: float, layers: int, heads: int, value_norm: float,
                             width: int = WIDTH) -> float:
    """Theorem 2: some head of some layer puts at least
    ``γ = (1/2 - 2 δ) / (m (m + 3) H R (1 + H R)^(m-1))`` on BOS at some row
    i in {1, ..., j} of some all-equal corner input (m layers, H heads, value
    maps with ``||W||_∞ <= R``). Needs ``(1 + H)^m <= n - 2``; 0 once δ >= 1/4.
    """
    _check_width(width)
    if layers < 1 or heads < 1 or (1 + heads) ** layers > width - 2:
        raise ValueError(f"theorem2_bos_lower_bound: needs (1 + heads)^layers <= n - 2 = {width - 2}, "
                         f"got layers={layers}, heads={heads}")
    if error < 0 or value_norm <= 0:
        raise ValueError(f"theorem2_bos_lower_bound: need error >= 0 and value_norm > 0, got {error}, {value_norm}")
    growth = heads * value_norm
    return max(0.0, (0.5 - 2.0 * error) / (layers * (layers + 3) * growth * (1.0 + growth) ** (layers - 1)))


# ----------------------------------------------------------------------------
# Inputs and measurements
# ----------------------------------------------------------------------------

def all_equal_inputs(contents, trigger: int, length: int = SEQUENCE_LENGTH) -> np.ndarray:
    """Inputs whose non-BOS tokens all carry the same content z: (B, L, n).

    contents: (B, d), one z per sequence, entries in [-1, 1]. These inputs have
    probability 0 but lie in the support, which is all a worst-case error sees.
    """
    contents = np.atleast_2d(np.asarray(contents, dtype=float))
    batch, d = contents.shape
    width = d + 3
    if not 1 <= trigger < length:
        raise ValueError(f"all_equal_inputs: trigger must lie in 1..{length - 1}, got {trigger}")
    if np.any(np.abs(contents) > 1):
        raise ValueError("all_equal_inputs: contents must lie in [-1, 1]")
    x = np.zeros((batch, length, width))
    x[:, 1:, 2:width - 1] = contents[:, None, :]
    x[:, 1:, width - 1] = 1.0
    x[:, 0, BOS] = 1.0
    x[:, trigger, TRIGGER], x[:, trigger, width - 1] = 1.0, 0.0
    return x


def stress_inputs(size_per_trigger: int = 64, seed: int = 0, triggers=TRAINING_TRIGGERS,
                  length: int = SEQUENCE_LENGTH, width: int = WIDTH) -> tuple[np.ndarray, np.ndarray]:
    """Inputs on which to look for a model's worst case: ``(x (B, L, n), triggers (B,))``.

    For every trigger position j: `size_per_trigger` sequences with uniform
    contents, as many with contents at random corners of [-1, 1]^d, as many
    with contents near a random corner (at every distance from 1e-6 to 1), and
    all-equal inputs at random corners plus at the two corners ±(1, ..., 1).
    A finite set only bounds the worst case from below: ``δ̂ <= δ``.
    """
    _check_width(width)
    if size_per_trigger < 1:
        raise ValueError(f"stress_inputs: size_per_trigger must be >= 1, got {size_per_trigger}")
    rng = np.random.default_rng(seed)
    d = width - 3
    blocks, positions = [], []
    for trigger in triggers:
        uniform = rng.uniform(-1.0, 1.0, size=(size_per_trigger, length - 1, d))
        corners = rng.choice([-1.0, 1.0], size=(size_per_trigger, length - 1, d))
        # near a corner s: contents s (1 - t U), U uniform in [0, 1], t log-uniform in [1e-6, 1]
        signs = rng.choice([-1.0, 1.0], size=(size_per_trigger, 1, d))
        distance = 10.0 ** rng.uniform(-6.0, 0.0, size=(size_per_trigger, 1, 1))
        near = signs * (1.0 - distance * rng.uniform(0.0, 1.0, size=(size_per_trigger, length - 1, d)))
        for contents in (uniform, corners, near):
            x = all_equal_inputs(np.zeros((size_per_trigger, d)), trigger, length)
            x[:, 1:, 2:width - 1] = contents
            blocks.append(x)
        equal = np.concatenate([np.ones((1, d)), -np.ones((1, d)),
                                rng.choice([-1.0, 1.0], size=(max(1, size_per_trigger // 4), d))])
        blocks.append(all_equal_inputs(equal, trigger, length))
        positions.append(np.full(sum(block.shape[0] for block in blocks[-4:]), trigger))
    return np.concatenate(blocks), np.concatenate(positions)


def predict_with_attention(model: AttentionModel, x: np.ndarray) -> tuple[np.ndarray, list]:
    """The model's prediction (B, L, n) and per-layer attention weights [(B, H, L, L)]."""
    with no_grad():
        prediction, attention = model(x, return_attention=True)
    return prediction.data, attention


def row_errors(model: AttentionModel, x: np.ndarray, triggers: np.ndarray) -> np.ndarray:
    """``||ŷ_i - y_i||_∞`` for every sequence and row: (B, L)."""
    prediction, _ = predict_with_attention(model, x)
    return np.abs(prediction - make_targets(x, triggers, residual=model.residual)).max(axis=-1)


def worst_case(model: AttentionModel, triggers=TRAINING_TRIGGERS, size_per_trigger: int = 64,
               seed: int = 0, inputs=None) -> dict:
    """A model's largest error and smallest BOS mass on `stress_inputs` (or on `inputs`).

    Returns ``worst_case_error`` (δ̂, a lower bound on the true δ),
    ``bos_mass_min`` / ``bos_mass_mean`` (over every head, layer, sequence and
    non-trigger row) and ``head_bos_mass_min`` (layers, H), the smallest BOS
    mass of each head.
    """
    x, positions = stress_inputs(size_per_trigger, seed, triggers, width=model.config["width"]) \
        if inputs is None else inputs
    prediction, attention = predict_with_attention(model, x)
    error = np.abs(prediction - make_targets(x, positions, residual=model.residual))
    bos = np.stack([bos_mass_at_non_trigger_rows(weights, positions) for weights in attention])  # (layers, B, H, L-2)
    return dict(worst_case_error=float(error.max()), bos_mass_min=float(bos.min()),
                bos_mass_mean=float(bos.mean()), head_bos_mass_min=bos.min(axis=(1, 3)))


def softmax_family(scales, size_per_trigger: int = 32, seed: int = 0, test_size: int = 500,
                   triggers=TRAINING_TRIGGERS) -> dict:
    """Measure `softmax_construction` at every scale c. Returns arrays (one entry per c):

    - ``worst_case_error``, ``bos_mass_min``, ``bos_mass_mean``: on `stress_inputs`
      (every trigger in J, corners included);
    - ``test_max_error``, ``test_bos_mass_min``: on `test_size` test sequences
      (j = 7, seed 12345), the setting of our earlier 500-sequence check (chapter 05);
    - ``exact_worst_case_error``: the formula of `construction_worst_case`.
    """
    scales = np.asarray(scales, dtype=float)
    stress = stress_inputs(size_per_trigger, seed, triggers)
    test_x, _, test_triggers = make_test_set(size=test_size)
    columns = {name: [] for name in ("worst_case_error", "bos_mass_min", "bos_mass_mean",
                                     "test_max_error", "test_bos_mass_min", "exact_worst_case_error")}
    for scale in scales:
        model = softmax_construction(scale)
        measured = worst_case(model, inputs=stress)
        on_test = worst_case(model, inputs=(test_x, test_triggers))
        for name in ("worst_case_error", "bos_mass_min", "bos_mass_mean"):
            columns[name].append(measured[name])
        columns["test_max_error"].append(on_test["worst_case_error"])
        columns["test_bos_mass_min"].append(on_test["bos_mass_min"])
        columns["exact_worst_case_error"].append(construction_worst_case(scale)[0] if scale >= 0 else np.nan)
    return dict(scale=scales, **{name: np.array(values) for name, values in columns.items()})


# ----------------------------------------------------------------------------
# Theorem 1, step by step
# ----------------------------------------------------------------------------

def attention_average(weights: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Step 1: ``x̄_i = Σ_k a_ik x_k``, so that a single head outputs ``ŷ_i = W x̄_i``.

    weights: (B, L, L) of one head; x: (B, L, n). Returns (B, L, n).
    """
    weights = np.asarray(weights)
    if weights.ndim != 3 or weights.shape[:2] != x.shape[:2] or weights.shape[2] != x.shape[1]:
        raise ValueError(f"attention_average: weights {weights.shape} must be (B, L, L) for x {x.shape}")
    return weights @ x  # (B, L, L) @ (B, L, n) -> (B, L, n)


def non_bos_average(averaged: np.ndarray, bos_mass: np.ndarray) -> np.ndarray:
    """Step 1: ``ũ_i = (x̄_i - a_i0 e_0) / (1 - a_i0)``, the average of the non-BOS
    tokens under the row's own weights renormalised (rows with a_i0 = 1 give nan)."""
    removed = averaged.copy()
    removed[..., BOS] -= bos_mass  # x̄_i[0] = a_i0: only BOS has a BOS flag
    with np.errstate(invalid="ignore", divide="ignore"):
        return removed / (1.0 - bos_mass)[..., None]


def in_token_hull(u: np.ndarray, tolerance: float = 1e-9) -> np.ndarray:
    """Is u in T = conv{c + e_b, c + e_t : c in [-1, 1]^d}? (..., n) -> bool (...).

    T = {θ e_b + (1 - θ) e_t + z : θ in [0, 1], z content in [-1, 1]^d}: BOS flag 0,
    bias and trigger flags non-negative and summing to 1, contents in [-1, 1].
    """
    width = u.shape[-1]
    flags = u[..., [TRIGGER, width - 1]]
    return ((np.abs(u[..., BOS]) <= tolerance) & np.all(flags >= -tolerance, axis=-1)
            & (np.abs(flags.sum(axis=-1) - 1.0) <= tolerance)
            & np.all(np.abs(u[..., 2:width - 1]) <= 1.0 + tolerance, axis=-1))


def non_trigger_row_sides(model: SingleLayerModel, x: np.ndarray, triggers: np.ndarray):
    """Step 2 (non-trigger rows): ``(1 - a_i0) ||W ũ_i||_∞ <= ||ŷ_i||_∞ + a_i0 ||W e_0||_∞``.

    Holds for every single-head model and input (it is the triangle inequality
    applied to ``ŷ_i = a_i0 W e_0 + (1 - a_i0) W ũ_i``). Returns the two sides
    at every non-trigger row, each (B, L-2).
    """
    W = value_map(model)
    prediction, attention = predict_with_attention(model, x)
    weights = attention[0][:, 0]  # (B, L, L): one head
    bos_mass = weights[..., 0]  # (B, L)
    off_bos = attention_average(weights, x)  # x̄_i, (B, L, n) ...
    off_bos[..., BOS] -= bos_mass  # ... minus a_i0 e_0 = (1 - a_i0) ũ_i (no division: a_i0 may be 1)
    left = np.abs(off_bos @ W.T).max(axis=-1)
    right = np.abs(prediction).max(axis=-1) + bos_mass * np.abs(W[:, BOS]).max()
    keep = (np.arange(x.shape[1]) >= 1) & (np.arange(x.shape[1]) != np.asarray(triggers)[:, None])
    batch = x.shape[0]
    return left[keep].reshape(batch, -1), right[keep].reshape(batch, -1)


def trigger_row_decomposition(model: SingleLayerModel, u: np.ndarray, trigger: int):
    """Step 3: on the all-equal input with content z (the content of u in T),
    ``ŷ_j = a_j0 W e_0 + (a + b) W u + s W (e_b - e_t)`` with a = the weight on the
    j-1 content keys, b = a_jj and ``s = a - θ (a + b)``.

    u: (B, n) points of T. Returns (ŷ_j as computed by the model, the right-hand side), each (B, n).
    """
    width = u.shape[-1]
    if not np.all(in_token_hull(u)):
        raise ValueError("trigger_row_decomposition: every u must lie in T (see in_token_hull)")
    W = value_map(model)
    e_0, e_t, e_b, _ = unit_vectors(width)
    x = all_equal_inputs(u[:, 2:width - 1], trigger)
    prediction, attention = predict_with_attention(model, x)
    row = attention[0][:, 0, trigger, :trigger + 1]  # (B, j+1)
    bos, content, self_weight = row[:, 0], row[:, 1:trigger].sum(axis=1), row[:, trigger]
    theta = u[:, width - 1]
    s = content - theta * (content + self_weight)
    right = (bos[:, None] * W[:, BOS] + (content + self_weight)[:, None] * (u @ W.T)
             + s[:, None] * (W @ (e_b - e_t)))
    return prediction[:, trigger], right


def trigger_row_slack(model: SingleLayerModel, u: np.ndarray, triggers=(2, SEQUENCE_LENGTH - 1)) -> np.ndarray:
    """Step 4: ``ε'(u) = max_j E_j(z_u) + max(||W e_0||_∞, ||W u||_∞)`` for u in T (B, n),
    where E_j(z) is the trigger-row error on the all-equal input with content z
    and trigger j, for the two positions j in `triggers`. Lemma: ``ε'(u) >= ε_0``.
    """
    j_low, j_high = _trigger_set(triggers)[:2]
    width = u.shape[-1]
    W = value_map(model)
    errors = []
    for trigger in (j_low, j_high):
        x = all_equal_inputs(u[:, 2:width - 1], trigger)
        errors.append(row_errors(model, x, np.full(len(u), trigger))[:, trigger])
    return np.maximum(*errors) + np.maximum(np.abs(W[:, BOS]).max(), np.abs(u @ W.T).max(axis=-1))


def determinant_lemma_sides(P1, P2, G, s1, s2):
    """Step 4's lemma in the plane: if ``||P_k - s_k G||_∞ <= ε`` (k = 1, 2) then
    ``|det(P1, P2)| <= (||P1||_1 + ||P2||_1) ε + 2 ε^2``. Arrays (..., 2) and (...).
    Returns (|det(P1, P2)|, the right-hand side with ε the larger of the two errors)."""
    P1, P2, G = (np.asarray(v, dtype=float) for v in (P1, P2, G))
    s1, s2 = np.asarray(s1, dtype=float)[..., None], np.asarray(s2, dtype=float)[..., None]
    epsilon = np.maximum(np.abs(P1 - s1 * G).max(axis=-1), np.abs(P2 - s2 * G).max(axis=-1))
    determinant = np.abs(P1[..., 0] * P2[..., 1] - P1[..., 1] * P2[..., 0])
    norms = np.abs(P1).sum(axis=-1) + np.abs(P2).sum(axis=-1)
    return determinant, norms * epsilon + 2.0 * epsilon**2


def random_token_hull_points(size: int, seed: int = 0, width: int = WIDTH, corners: bool = False) -> np.ndarray:
    """`size` random points of T (size, n): θ uniform in [0, 1], contents uniform
    in [-1, 1]^d (or at random corners if `corners`)."""
    rng = np.random.default_rng(seed)
    e_0, e_t, e_b, content = unit_vectors(width)
    theta = rng.uniform(0.0, 1.0, size=(size, 1))
    u = theta * e_b + (1.0 - theta) * e_t
    shape = (size, int(content.sum()))
    u[:, content] = rng.choice([-1.0, 1.0], size=shape) if corners else rng.uniform(-1.0, 1.0, size=shape)
    return u


# ----------------------------------------------------------------------------
# Theorem 2, step by step
# ----------------------------------------------------------------------------

def value_words(model: AttentionModel) -> np.ndarray:
    """The vectors ``W^{l_r,h_r} ... W^{l_1,h_1} (e_t - e_b)`` for l_1 < ... < l_r
    (the empty word included): (N, n) with N = (1 + H)^m. Their span S contains
    every trigger-minus-content stream difference a sink-free model can make."""
    width = model.config["width"]
    _, e_t, e_b, _ = unit_vectors(width)
    words = [e_t - e_b]
    for layer, attention in enumerate(model.layers):
        words += [value_map(model, layer, head) @ word for word in words for head in range(attention.heads)]
    return np.array(words)


def separating_corner(words: np.ndarray, tolerance: float = 1e-10) -> tuple[np.ndarray, np.ndarray]:
    """Theorem 2's geometric lemma: for a subspace S (spanned by `words`, (N, n)) that
    contains e_t - e_b and has dimension <= n - 2, return ``(z, λ)``: a corner z in
    {-1, 1}^d and a functional λ (n,) with λ_0 = 0, ``||λ||_1 = 1``, λ ⊥ S and
    ``λ · (z + e_t) >= 1/2``. Hence ``||z + e_t - s||_∞ >= 1/2`` for every s in S.
    """
    width = words.shape[1]
    projected = words[:, 1:]  # drop the BOS coordinate
    _, singular, right = np.linalg.svd(projected)
    rank = int((singular > tolerance * max(1.0, singular.max(initial=0.0))).sum())
    if rank >= width - 1:
        raise ValueError(f"separating_corner: S has dimension {rank} once BOS is dropped; need <= n - 2 = {width - 2}")
    functional = np.concatenate([[0.0], right[-1]])  # orthogonal to S (on coordinates 1..n-1)
    functional /= np.abs(functional).sum()
    sign_t = 1.0 if functional[TRIGGER] >= 0 else -1.0
    z = np.where(functional[2:width - 1] >= 0, 1.0, -1.0) * sign_t
    return z, functional * sign_t


def residual_streams(model: ResidualModel, x: np.ndarray) -> tuple[list, list]:
    """The residual stream after each layer, ``[s^0 = x, s^1, ..., s^m]`` (each (B, L, n)),
    and each layer's attention weights (B, H, L, L)."""
    if not model.residual:
        raise ValueError("residual_streams: the model must be a ResidualModel")
    streams, attention = [np.asarray(x, dtype=float)], []
    with no_grad():
        for layer in model.layers:
            update, weights = layer(Tensor(streams[-1]))
            streams.append(streams[-1] + update.data)
            attention.append(weights.data)
    return streams, attention


def theorem2_stream_sides(model: ResidualModel, content, trigger: int) -> dict:
    """The inequalities of Theorem 2's proof on the all-equal input X_j(z).

    With γ the largest BOS mass of any head at rows 1..j, ``G = H R``:
    - ``spread = max_{1<=i<j} ||s^m_i - σ^m||_∞ <= 2 γ m G (1+G)^(m-1)``, where
      ``σ^m = Π_l (I + Σ_h W^{l,h}) (z + e_b)`` is the stream of a BOS-free model;
    - ``rest = ||D^m - P (e_t - e_b)||_∞ <= γ m (m+1) G (1+G)^(m-1)``, where
      ``D^m = s^m_j - σ^m`` and ``P = Π_l (I + Σ_h a^{l,h}_jj W^{l,h})`` (so
      ``P (e_t - e_b)`` lies in the span S of `value_words`).
    Returns the four numbers and γ.
    """
    width = model.config["width"]
    _, e_t, e_b, _ = unit_vectors(width)
    z = np.asarray(content, dtype=float)
    streams, attention = residual_streams(model, all_equal_inputs(z[None], trigger))
    layers, heads = len(model.layers), model.config["heads"]
    gamma = max(float(weights[0, :, 1:trigger + 1, 0].max()) for weights in attention)
    growth = heads * value_norm(model)
    sigma = np.concatenate([[0.0, 0.0], z, [1.0]])  # σ^0 = z + e_b, a content token
    word = e_t - e_b  # becomes P (e_t - e_b)
    for layer, weights in enumerate(attention):
        maps = [value_map(model, layer, head) for head in range(heads)]
        sigma = sigma + sum(W @ sigma for W in maps)
        word = word + sum(weights[0, head, trigger, trigger] * (W @ word) for head, W in enumerate(maps))
    final = streams[-1][0]
    scale = growth * (1.0 + growth) ** (layers - 1)
    return dict(bos_mass_max=gamma,
                spread=float(np.abs(final[1:trigger] - sigma).max()), spread_bound=2 * gamma * layers * scale,
                rest=float(np.abs(final[trigger] - sigma - word).max()),
                rest_bound=gamma * layers * (layers + 1) * scale)


def theorem2_witness(model: ResidualModel, trigger: int = TEST_TRIGGER) -> dict:
    """Theorem 2 on one input: the corner z of `separating_corner` for the model's
    span S, and the largest BOS mass any head puts on rows 1..j of X_j(z) (with
    where it happens). Theorem 2 says it is at least `theorem2_bos_lower_bound`."""
    z, _ = separating_corner(value_words(model))
    _, attention = predict_with_attention(model, all_equal_inputs(z[None], trigger))
    best = dict(bos_mass=-1.0)
    for layer, weights in enumerate(attention):
        masses = weights[0, :, 1:trigger + 1, 0]  # (H, j): rows 1..j
        head, row = np.unravel_index(np.argmax(masses), masses.shape)
        if masses[head, row] > best["bos_mass"]:
            best = dict(bos_mass=float(masses[head, row]), layer=layer, head=int(head), row=int(row) + 1)
    return dict(corner=z, **best)


# ----------------------------------------------------------------------------
# The figure of chapter 05
# ----------------------------------------------------------------------------

def plot_error_vs_bos_mass(family: dict, trained=None, triggers=TRAINING_TRIGGERS, path=None, axes=None):
    """Worst-case error against smallest BOS mass, with Theorem 1's forbidden region.

    family: the dict of `softmax_family`. trained: optional list of dicts with
    keys ``label``, ``worst_case_error``, ``bos_mass_min`` and optionally
    ``covered`` (True for single-layer single-head softmax models, the ones
    Theorem 1 speaks about; others are drawn hollow). Left panel: BOS mass on a
    linear axis; right panel: ``1 - BOS mass`` on a log axis, where the bound
    is the straight line ``2 δ / ε_0``. Returns the figure; saves it if `path`.
    """
    import matplotlib.pyplot as plt
    if axes is None:
        figure, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    else:
        figure = axes[0].figure
    errors = np.asarray(family["worst_case_error"])
    bos = np.asarray(family["bos_mass_min"])
    trained = trained or []
    all_errors = np.concatenate([errors[errors > 0], [p["worst_case_error"] for p in trained if p["worst_case_error"] > 0]])
    low = min(1e-12, all_errors.min() / 3) if all_errors.size else 1e-12
    grid = np.logspace(np.log10(low), 0.5, 400)
    bound = theorem1_bos_lower_bound(grid, triggers)
    epsilon0 = trigger_separation(triggers)
    left, right = axes
    left.fill_between(grid, 0, bound, color="tab:red", alpha=0.15, label="forbidden by Theorem 1")
    left.plot(grid, bound, color="tab:red", lw=1.5, label=r"bound $1 - 2\delta/\varepsilon_0$")
    right.fill_between(grid, np.minimum(2 * grid / epsilon0, 1.0), 1.0, color="tab:red", alpha=0.15,
                       label="forbidden by Theorem 1")
    right.plot(grid, np.minimum(2 * grid / epsilon0, 1.0), color="tab:red", lw=1.5,
               label=r"bound $2\delta/\varepsilon_0$")
    right.plot(grid, np.minimum(grid, 1.0), color="0.5", ls=":", lw=1, label=r"construction: $1-\min a_{i0}=\delta$")
    for ax, y in ((left, bos), (right, 1.0 - bos)):
        ax.plot(errors, y, "o-", color="tab:blue", ms=4, label="softmax construction (scale c)")
    for scale, error, mass in zip(family["scale"], errors, bos):
        if float(scale).is_integer() and int(scale) in (2, 5, 10, 20):
            left.annotate(f"c={int(scale)}", (error, mass), textcoords="offset points", xytext=(4, -12), fontsize=8)
            right.annotate(f"c={int(scale)}", (error, 1 - mass), textcoords="offset points", xytext=(6, -10), fontsize=8)
    markers = iter(["*", "D", "s", "^", "v", "P", "X", "h"])
    for point in trained:
        marker = next(markers, "o")
        face = None if point.get("covered", True) else "none"
        for ax, y in ((left, point["bos_mass_min"]), (right, max(1.0 - point["bos_mass_min"], 1e-17))):
            ax.plot(point["worst_case_error"], y, marker, ms=10, color="tab:green", mfc=face, label=point["label"])
    left.set(xscale="log", ylim=(-0.02, 1.02), xlabel=r"worst-case error $\hat\delta$ (max $|\hat y - y|$, all $j \in J$)",
             ylabel=r"smallest BOS mass $\min a_{i0}$ (non-trigger rows)")
    right.set(xscale="log", yscale="log", ylim=(max(low, 1e-17), 2.0), xlabel=left.get_xlabel(),
              ylabel=r"$1 - \min a_{i0}$ (mass off BOS)")
    left.legend(fontsize=7, loc="center left")
    right.legend(fontsize=7, loc="lower right")
    figure.suptitle(rf"Theorem 1: small error forces a sink ($J = \{{{min(triggers)},\dots,{max(triggers)}\}}$, "
                    rf"$\varepsilon_0 = {epsilon0:.3f}$)", fontsize=10)
    figure.tight_layout()
    if path is not None:
        figure.savefig(path, dpi=130)
    return figure
