"""The proofs of Theorems 1 and 2, step by step, as functions a test or a chapter can check (chapters 05, 09).

Each step is an inequality or identity that must hold for every model and input; here each returns
its two sides (or the objects the proof builds), so that it can be checked on random models and
inputs, not only on the constructions.

- Theorem 1 (chapter 05's notation: x̄_i, μ̃_i, points μ of T, τ(μ)): `attention_average`, `non_bos_average`
  and `in_token_hull` (step 1), `non_trigger_row_sides` (step 2), `trigger_row_decomposition` (step 3),
  `determinant_lemma_sides` (step 4, Lemma 2), `trigger_row_slack` (step 5, Lemma 3),
  `random_token_hull_points` (points of T to check them on).
- Theorem 2: `value_words` (the span S), `separating_corner` (the geometric lemma),
  `residual_streams` and `theorem2_stream_sides` (the stream inequalities), `theorem2_witness`
  (the input on which some head must sink).
"""

from __future__ import annotations

import numpy as np

from minitorch import checks
from minitorch.paper.models import AttentionModel, ResidualModel, SingleLayerModel, attention_model
from minitorch.paper.task import BOS, SEQUENCE_LENGTH, TEST_TRIGGER, TRIGGER, WIDTH
from minitorch.paper.theory.bounds import trigger_set, value_norm
from minitorch.paper.theory.constructions import unit_vectors, value_map
from minitorch.paper.theory.worst_case import all_equal_inputs, predict_with_attention, row_errors
from minitorch.tensor import Tensor, no_grad


# ----------------------------------------------------------------------------
# Theorem 1, step by step
# ----------------------------------------------------------------------------

def attention_average(weights: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Step 1: ``x̄_i = Σ_k a_ik x_k``, so that a single head outputs ``ŷ_i = W x̄_i``.

    weights: (B, L, L) of one head; x: (B, L, n). Returns (B, L, n).
    """
    checks.real_numbers("attention_average", "weights", weights)
    checks.real_numbers("attention_average", "x", x)
    weights, x = np.asarray(weights), np.asarray(x)  # (as given: a float32 x stays float32)
    if weights.ndim != 3 or x.ndim != 3 or weights.shape[:2] != x.shape[:2] or weights.shape[2] != x.shape[1]:
        raise ValueError(f"attention_average: weights {weights.shape} must be (B, L, L) for x {x.shape}")
    return weights @ x  # (B, L, L) @ (B, L, n) -> (B, L, n)


def non_bos_average(averaged: np.ndarray, bos_mass: np.ndarray) -> np.ndarray:
    """Step 1: ``μ̃_i = (x̄_i - a_i0 e_0) / (1 - a_i0)``, the average of the non-BOS
    tokens under the row's own weights renormalised (rows with a_i0 = 1 have none: nan).

    averaged: x̄, (..., n); bos_mass: a_i0, (...). Returns (..., n)."""
    averaged = checks.real_numbers("non_bos_average", "averaged", averaged)
    bos_mass = checks.real_numbers("non_bos_average", "bos_mass", bos_mass)
    if averaged.ndim == 0 or bos_mass.shape != averaged.shape[:-1]:
        raise ValueError(f"non_bos_average: bos_mass must hold one a_i0 per row of averaged (x̄ of shape (..., n)), "
                         f"shape {averaged.shape[:-1]}; got averaged {averaged.shape} and bos_mass {bos_mass.shape}")
    no_other_mass = bos_mass == 1.0  # rows whose weights all sit on BOS: nothing else to average
    if averaged.shape[:-1] and no_other_mass.all():
        raise ValueError("non_bos_average: every row's bos_mass is 1, so no row has non-BOS tokens to average "
                         "(μ̃_i divides by 1 - a_i0)")
    removed = averaged  # (real_numbers made a float64 copy)
    removed[..., BOS] -= bos_mass  # x̄_i[0] = a_i0: only BOS has a BOS flag
    with np.errstate(invalid="ignore", divide="ignore"):
        mu = removed / (1.0 - bos_mass)[..., None]  # (..., n) / (..., 1) -> (..., n)
    mu[no_other_mass] = np.nan
    return mu


def in_token_hull(mu: np.ndarray, tolerance: float = 1e-9) -> np.ndarray:
    """Step 1: is μ in T = conv{c + e_b, c + e_t : c in [-1, 1]^d}? (..., n) -> bool (...).

    T = {θ e_b + (1 - θ) e_t + z : θ in [0, 1], z content in [-1, 1]^d}: BOS flag 0,
    bias and trigger flags non-negative and summing to 1, contents in [-1, 1].
    """
    tolerance = checks.positive_number("in_token_hull", "tolerance", tolerance, allow_zero=True)
    mu = checks.real_numbers("in_token_hull", "mu", mu, finite=False)
    if mu.ndim == 0 or mu.shape[-1] < 4:
        raise ValueError(f"in_token_hull: mu must be points (..., n) with n >= 4 (BOS, trigger, contents, bias "
                         f"flags), got shape {mu.shape}")
    width = mu.shape[-1]
    flags = mu[..., [TRIGGER, width - 1]]
    return ((np.abs(mu[..., BOS]) <= tolerance) & np.all(flags >= -tolerance, axis=-1)
            & (np.abs(flags.sum(axis=-1) - 1.0) <= tolerance)
            & np.all(np.abs(mu[..., 2:width - 1]) <= 1.0 + tolerance, axis=-1))


def _single_head(owner: str, model) -> SingleLayerModel:
    """`model` if it is Theorem 1's: one head in one layer without a residual connection, or a ValueError naming
    `owner`. Steps 2, 3 and 5 are about that head's output (`value_map` reads head 0 of layer 0 alone): on a
    model with more heads or layers, or whose output adds its input, their two sides differ without a word."""
    attention_model(owner, model)
    if len(model.layers) != 1 or model.layers[0].heads != 1 or model.residual:
        raise ValueError(f"{owner}: the model must have a single head in a single layer, without a residual "
                         f"connection (the proof is about that head's output), got {model.name}"
                         f"{' (residual)' if model.residual else ''}")
    return model


def _points(owner: str, model, mu) -> np.ndarray:
    """`mu` as points (B, n) of the model's width n, a float array (a list of points is one), or an error naming
    `owner`; one point (n,) is refused, as the functions return one row per point."""
    mu = checks.real_numbers(owner, "mu", mu)
    width = model.config["width"]
    if mu.ndim != 2 or mu.shape[1] != width:
        raise ValueError(f"{owner}: mu must be points of shape (B, n) = (B, {width}), the model's width, got shape "
                         f"{mu.shape}{'; write mu[None] for one point' if mu.shape == (width,) else ''}")
    return mu


def non_trigger_row_sides(model: SingleLayerModel, x: np.ndarray, triggers: np.ndarray):
    """Step 2 (non-trigger rows), inequality (1): ``(1 - a_i0) ||W μ̃_i||_∞ <= ||ŷ_i||_∞ + a_i0 ||W e_0||_∞``.

    Holds for every single-head model and input (it is the triangle inequality
    applied to ``ŷ_i = a_i0 W e_0 + (1 - a_i0) W μ̃_i``). Returns the two sides
    at every non-trigger row, each (B, L-2).
    """
    x = np.asarray(x)
    if x.ndim != 3 or np.shape(triggers) != x.shape[:1]:
        raise ValueError(f"non_trigger_row_sides: x must have shape (B, L, n) and triggers shape (B,), one trigger "
                         f"position per sequence, got x of shape {x.shape} and triggers of shape {np.shape(triggers)}")
    checks.positions("non_trigger_row_sides", "triggers", triggers, length=x.shape[1])
    W = value_map(_single_head("non_trigger_row_sides", model))
    prediction, attention = predict_with_attention(model, x)
    weights = attention[0][:, 0]  # (B, L, L): one head
    bos_mass = weights[..., 0]  # (B, L)
    off_bos = attention_average(weights, x)  # x̄_i, (B, L, n) ...
    off_bos[..., BOS] -= bos_mass  # ... minus a_i0 e_0 = (1 - a_i0) μ̃_i (no division: a_i0 may be 1)
    left = np.abs(off_bos @ W.T).max(axis=-1)
    right = np.abs(prediction).max(axis=-1) + bos_mass * np.abs(W[:, BOS]).max()
    keep = (np.arange(x.shape[1]) >= 1) & (np.arange(x.shape[1]) != np.asarray(triggers)[:, None])
    batch = x.shape[0]
    return left[keep].reshape(batch, -1), right[keep].reshape(batch, -1)


def trigger_row_decomposition(model: SingleLayerModel, mu: np.ndarray, trigger: int):
    """Step 3, identity (3): on the all-equal input X_j(z) with content z (the content of μ in T),
    ``ŷ_j = a_0 W e_0 + (a + b) W μ + s g`` with g = W (e_b - e_t), a_0 = a_j0, a = the weight on
    the j-1 content keys, b = a_jj and ``s = a - θ (a + b)``.

    mu: (B, n) points μ of T. Returns (ŷ_j as computed by the model, the right-hand side), each (B, n).
    """
    W = value_map(_single_head("trigger_row_decomposition", model))
    mu = _points("trigger_row_decomposition", model, mu)
    width = mu.shape[-1]
    if not np.all(in_token_hull(mu)):
        raise ValueError("trigger_row_decomposition: every point mu must lie in T (see in_token_hull)")
    e_0, e_t, e_b, _ = unit_vectors(width)
    x = all_equal_inputs(mu[:, 2:width - 1], trigger)
    prediction, attention = predict_with_attention(model, x)
    row = attention[0][:, 0, trigger, :trigger + 1]  # (B, j+1)
    bos, content, self_weight = row[:, 0], row[:, 1:trigger].sum(axis=1), row[:, trigger]
    theta = mu[:, width - 1]
    s = content - theta * (content + self_weight)
    right = (bos[:, None] * W[:, BOS] + (content + self_weight)[:, None] * (mu @ W.T)
             + s[:, None] * (W @ (e_b - e_t)))
    return prediction[:, trigger], right


def trigger_row_slack(model: SingleLayerModel, mu: np.ndarray, triggers=(2, SEQUENCE_LENGTH - 1)) -> np.ndarray:
    """Step 5, Lemma 3: ``τ(μ) = max_j E_j(z) + max(||W e_0||_∞, ||W μ||_∞)`` for points μ of T (B, n)
    with content z, where E_j(z) is the trigger-row error on the all-equal input X_j(z), for the two
    positions j in `triggers`. Lemma 3: ``τ(μ) >= ε_0(j_1, j_2)``. Returns τ(μ), (B,).
    """
    j_low, j_high = trigger_set(triggers, "trigger_row_slack")[:2]
    W = value_map(_single_head("trigger_row_slack", model))
    mu = _points("trigger_row_slack", model, mu)
    width = mu.shape[-1]
    errors = []
    for trigger in (j_low, j_high):
        x = all_equal_inputs(mu[:, 2:width - 1], trigger)
        errors.append(row_errors(model, x, np.full(len(mu), trigger))[:, trigger])
    return np.maximum(*errors) + np.maximum(np.abs(W[:, BOS]).max(), np.abs(mu @ W.T).max(axis=-1))


def determinant_lemma_sides(P1, P2, G, s1, s2):
    """Step 4, Lemma 2 (in the plane): if ``||P_k - s_k G||_∞ <= τ`` (k = 1, 2) then
    ``|det(P1, P2)| <= (||P1||_1 + ||P2||_1) τ + 2 τ^2``. Arrays (..., 2) and (...).
    Returns (|det(P1, P2)|, the right-hand side with τ the larger of the two errors)."""
    P1, P2, G, s1, s2 = (checks.real_numbers("determinant_lemma_sides", name, value)
                         for name, value in dict(P1=P1, P2=P2, G=G, s1=s1, s2=s2).items())
    if not P1.shape[-1:] == P2.shape[-1:] == G.shape[-1:] == (2,):
        raise ValueError(f"determinant_lemma_sides: P1, P2 and G must be points of the plane, shape (..., 2), got "
                         f"{P1.shape}, {P2.shape} and {G.shape}")
    try:
        np.broadcast_shapes(P1.shape[:-1], P2.shape[:-1], G.shape[:-1], s1.shape, s2.shape)
    except ValueError:
        raise ValueError(f"determinant_lemma_sides: the points P1 {P1.shape}, P2 {P2.shape}, G {G.shape} (..., 2) "
                         f"and scales s1 {s1.shape}, s2 {s2.shape} (...) must share their leading axes") from None
    s1, s2 = s1[..., None], s2[..., None]
    tolerance = np.maximum(np.abs(P1 - s1 * G).max(axis=-1), np.abs(P2 - s2 * G).max(axis=-1))
    determinant = np.abs(P1[..., 0] * P2[..., 1] - P1[..., 1] * P2[..., 0])
    norms = np.abs(P1).sum(axis=-1) + np.abs(P2).sum(axis=-1)
    return determinant, norms * tolerance + 2.0 * tolerance**2


def random_token_hull_points(size: int, seed: int = 0, width: int = WIDTH, corners: bool = False) -> np.ndarray:
    """`size` random points μ = θ e_b + (1 - θ) e_t + z of T (size, n): θ uniform in [0, 1], contents z
    uniform in [-1, 1]^d (or at random corners if `corners`)."""
    owner = "random_token_hull_points"
    size = checks.integer(owner, "size", size, minimum=0)
    rng = np.random.default_rng(checks.integer(owner, "seed", seed, minimum=0))
    corners = checks.flag(owner, "corners", corners)  # 'no' is truthy
    e_0, e_t, e_b, content = unit_vectors(width)
    checks.memory(owner, "points", (size, width))
    theta = rng.uniform(0.0, 1.0, size=(size, 1))
    mu = theta * e_b + (1.0 - theta) * e_t
    shape = (size, int(content.sum()))
    mu[:, content] = rng.choice([-1.0, 1.0], size=shape) if corners else rng.uniform(-1.0, 1.0, size=shape)
    return mu



# ----------------------------------------------------------------------------
# Theorem 2, step by step
# ----------------------------------------------------------------------------

def value_words(model: AttentionModel) -> np.ndarray:
    """The vectors ``W^{l_r,h_r} ... W^{l_1,h_1} (e_t - e_b)`` for l_1 < ... < l_r
    (the empty word included): (N, n) with N = (1 + H)^m. On an all-equal input, if no
    head puts weight on BOS at rows 1..j, the trigger row's stream minus a content row's
    lies in their span S (Theorem 2's proof, step B)."""
    width = attention_model("value_words", model).config["width"]
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
    words = checks.real_numbers("separating_corner", "words", words)  # nan would stop the SVD
    if words.ndim != 2:
        raise ValueError(f"separating_corner: words must have shape (N, n), got {words.shape}")
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
    functional *= sign_t
    reach = functional @ np.concatenate([[0.0, 1.0], z, [0.0]])  # λ · (z + e_t): >= 1/2 once λ_t = λ_b
    if reach < 0.5 - 1e-9:  # (no word at all gives S = {0}, and λ may be e_b)
        raise ValueError(f"separating_corner: S must contain e_t - e_b (Theorem 2's premise; value_words puts it "
                         f"first), but the span of these {len(words)} word(s) does not: the corner found gives "
                         f"λ · (z + e_t) = {reach:.3g}, not the promised >= 1/2")
    return z, functional


def residual_streams(model: ResidualModel, x: np.ndarray) -> tuple[list, list]:
    """The residual stream after each layer, ``[s^0 = x, s^1, ..., s^m]`` (each (B, L, n)),
    and each layer's attention weights (B, H, L, L)."""
    if not attention_model("residual_streams", model).residual:
        raise ValueError("residual_streams: the model must be a ResidualModel")
    x = checks.real_numbers("residual_streams", "x", x)
    width = model.config["width"]
    if x.ndim != 3 or x.shape[1] == 0 or x.shape[2] != width:
        raise ValueError(f"residual_streams: x must be a batch of sequences of shape (B, L, {width}) with L >= 1 "
                         f"(add the batch axis to one sequence: x[None]), got shape {x.shape}")
    streams, attention = [x], []
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
    width = attention_model("theorem2_stream_sides", model).config["width"]
    _, e_t, e_b, _ = unit_vectors(width)
    z = checks.real_numbers("theorem2_stream_sides", "content", content)
    if z.shape != (width - 3,):
        raise ValueError(f"theorem2_stream_sides: content must be the d = n - 3 = {width - 3} content coordinates "
                         f"of the all-equal input, got shape {z.shape}")
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
