"""Bounds: Theorems 1 and 2 as formulas, and chapter 10's floor for sigmoid attention (chapters 05, 09, 10).

- `trigger_separation`: ε_0 of Theorem 1, from the set J of trigger positions;
- `theorem1_bos_lower_bound` (worst-case error δ -> least BOS mass) and its inverse
  `theorem1_error_lower_bound`;
- `theorem2_bos_lower_bound`, with `value_norm` (R, the largest ``||W||_∞`` of any head's value map);
- `affine_fit_of_reciprocal`: the best affine fit of 1/j over J, the error floor of one layer of sigmoid
  attention;
- `trigger_row_bounds`: Lemma 5 (chapter 05), how close a single softmax head's trigger row must be to
  1/j on each key and 0 on BOS, on the all-equal inputs;
- `gap_bound`: chapter 10's log T law, the least lead of the BOS score over the mean content score that puts
  mass 1 - ρ on BOS against n keys.

`minitorch.paper.theory.proof_steps` checks the steps that prove them; `worst_case` measures the
quantities they bound.
"""

from __future__ import annotations

import numpy as np

from minitorch import checks
from minitorch.paper.models import AttentionModel, attention_model
from minitorch.paper.task import SEQUENCE_LENGTH, WIDTH
from minitorch.paper.theory.constructions import MIN_WIDTH, value_map

TRAINING_TRIGGERS = tuple(range(2, SEQUENCE_LENGTH))  # J = {2, ..., L-1}


def trigger_set(triggers, owner: str = "trigger_set") -> tuple[int, ...]:
    """The trigger positions J as a tuple of ints (checked by `checks.positions`: integers >= 1, so that 2.7 or
    True is refused, not read as 2 or 1), or an error naming `owner`; Theorem 1 needs at least two distinct ones."""
    triggers = tuple(int(j) for j in checks.positions(owner, "triggers", triggers))
    if len(set(triggers)) < 2:
        raise ValueError(f"{owner}: Theorem 1 needs at least two distinct trigger positions, got {triggers}")
    return triggers


def trigger_separation(triggers=TRAINING_TRIGGERS) -> float:
    """ε_0 of Theorem 1: the root of ``2 ε (1 + ε) = Δ``, ``Δ = 1/min J - 1/max J``.

    For J = {2, ..., 15}: Δ = 13/30 and ε_0 ≈ 0.1831.
    """
    return _separation(trigger_set(triggers, "trigger_separation"))


def _separation(triggers: tuple[int, ...]) -> float:
    gap = 1.0 / min(triggers) - 1.0 / max(triggers)  # Δ
    return (np.sqrt(1.0 + 2.0 * gap) - 1.0) / 2.0


def theorem1_bos_lower_bound(error, triggers=TRAINING_TRIGGERS):
    """Theorem 1: a single softmax head with worst-case error δ puts at least
    ``1 - 2 δ / ε_0(J)`` on BOS at every non-trigger row (0 once δ >= ε_0 / 2)."""
    owner = "theorem1_bos_lower_bound"
    error = checks.real_numbers(owner, "error", error)  # True is no error of 1
    if np.any(error < 0):
        raise ValueError(f"{owner}: error must be >= 0 (a worst-case error δ), got {error.min()}")
    bound = np.clip(1.0 - 2.0 * error / _separation(trigger_set(triggers, owner)), 0.0, 1.0)
    return float(bound) if bound.ndim == 0 else bound


def theorem1_error_lower_bound(bos_mass, triggers=TRAINING_TRIGGERS):
    """Theorem 1 read backwards: a single softmax head whose smallest BOS mass at a
    non-trigger row is b has worst-case error at least ``ε_0 (1 - b) / 2``."""
    owner = "theorem1_error_lower_bound"
    bos_mass = checks.real_numbers(owner, "bos_mass", bos_mass)  # nan would give a nan bound
    if np.any((bos_mass < 0) | (bos_mass > 1)):
        raise ValueError(f"{owner}: bos_mass must lie in [0, 1] (a BOS mass), got {bos_mass.min()}..{bos_mass.max()}")
    bound = _separation(trigger_set(triggers, owner)) * (1.0 - bos_mass) / 2.0
    return float(bound) if bound.ndim == 0 else bound


def affine_fit_of_reciprocal(triggers=TRAINING_TRIGGERS) -> tuple[float, float, float]:
    """The best affine fit of ``1/j`` over ``j`` in J, in the max norm (Chebyshev fit).

    Returns ``(error, slope, intercept)``: ``error = min over (s, t) of max_{j in J}
    |1/j - (t + s j)|`` and a line attaining it. Chapter 10's floor for sigmoid
    attention: the trigger row's trigger-flag output on all-equal inputs is affine
    in j, the target there is 1/j, so one layer of sigmoid heads (any number of
    them) errs by at least ``error``.
    For J = {2, ..., 15}: error = 1/10, line 7/15 - j/30.

    Method: on a finite set the best affine fit is decided by three points
    (Chebyshev's alternation theorem for the two functions 1, j). For
    ``j_1 < j_2 < j_3`` the weights ``λ = (j_3 - j_2, -(j_3 - j_1), j_2 - j_1)``
    annihilate every affine function, so ``|Σ λ_r / j_r| / Σ |λ_r|`` is a lower
    bound for that triple; the largest over all triples is the error.
    """
    points = np.array(sorted(set(trigger_set(triggers, "affine_fit_of_reciprocal"))), dtype=float)
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
    weighted_sum = np.array([j3 - j2, -(j3 - j1), j2 - j1]) @ (1.0 / np.array(best_triple))
    signs = np.sign(weighted_sum) * np.array([1.0, -1.0, 1.0])
    system = np.array([[1.0, j, sign] for j, sign in zip(best_triple, signs)])  # unknowns t, s, e: t + s j + σ e = 1/j
    intercept, slope, _ = np.linalg.solve(system, 1.0 / np.array(best_triple))
    return float(best), float(slope), float(intercept)


def value_norm(model: AttentionModel) -> float:
    """R of Theorem 2: the largest ``||W||_∞`` (largest absolute row sum) of any head's value map."""
    attention_model("value_norm", model)
    return max(float(np.abs(value_map(model, layer, head)).sum(axis=1).max())
               for layer in range(len(model.layers)) for head in range(model.layers[layer].heads))


def theorem2_bos_lower_bound(error: float, layers: int, heads: int, value_norm: float,
                             width: int = WIDTH) -> float:
    """Theorem 2: some head of some layer puts at least
    ``γ = (1/2 - 2 δ) / (m (m + 3) H R (1 + H R)^(m-1))`` on BOS at some row
    i in {1, ..., j} of some all-equal corner input (m layers, H heads, value
    maps with ``||W||_∞ <= R``). Needs ``(1 + H)^m <= n - 2``; 0 once δ >= 1/4.
    """
    owner = "theorem2_bos_lower_bound"
    width = checks.integer(owner, "width", width, minimum=MIN_WIDTH)
    layers, heads = checks.integer(owner, "layers", layers), checks.integer(owner, "heads", heads)
    error = checks.positive_number(owner, "error", error, allow_zero=True)
    value_norm = checks.positive_number(owner, "value_norm", value_norm)
    if (1 + heads) ** layers > width - 2:
        raise ValueError(f"theorem2_bos_lower_bound: needs (1 + heads)^layers <= n - 2 = {width - 2}, "
                         f"got layers={layers}, heads={heads}")
    growth = heads * value_norm
    bound = (0.5 - 2.0 * error) / (layers * (layers + 3) * growth * (1.0 + growth) ** (layers - 1))
    if bound > 1:  # a BOS mass is at most 1: no model with value maps this small has a worst-case error this small
        raise ValueError(f"{owner}: the bound γ = {bound:.3g} exceeds 1, so no model with {layers} layer(s) of "
                         f"{heads} head(s) and value_norm R = {value_norm:g} has worst-case error {error:g}; "
                         "R is too small for the premises (R is the model's `value_norm`)")
    return max(0.0, bound)


def trigger_row_bounds(error, triggers=TRAINING_TRIGGERS) -> dict:
    """Lemma 5 (chapter 05): the trigger row of a single softmax head with worst-case error δ over X_J.

    On every all-equal input X_j(z) (j in J, z in [-1, 1]^d) the trigger row puts a_j0 on BOS, the same
    weight 1/D_j on each of the j - 1 content keys and a_jj on the trigger; the lemma bounds how far they are
    from 0, 1/j and 1/j. Its constants, in the order the proof derives them (j_1 = min J, j_2 = max J,
    m = j_2 - 1, F = `affine_fit_of_reciprocal`):

    - ``kappa = (m + 1) δ / (F - δ)``: bounds |S - 1|, S = (a_j0 + a_jj) D_j (BOS and trigger, in units of a
      content key's weight);
    - ``alpha`` and ``beta``: bound the slope and the intercept of ``D_j (ŷ_j - y_j)`` in j;
    - ``nu = beta + (1 + kappa)(δ + alpha)``: bounds the rest of ``r_t g - r_0 (z + e_b) = e_t - e_b``;
    - ``bos_ratio = 4 nu (1 + Gamma)``, ``Gamma = (1 + kappa + nu) / (1 - nu)``: bounds r_0 = a_j0 D_j;

    and per position j (arrays over the sorted J, key ``triggers``): ``bos`` = bos_ratio / (j - 1) bounds a_j0,
    ``content_key`` = kappa / (j (j - 1)) bounds |1/D_j - 1/j|, ``trigger_key`` = kappa / j + bos_ratio / (j - 1)
    bounds |a_jj - 1/j|. Where the proof's premises fail (δ >= F or nu >= 1) every bound is inf. Needs at
    least three trigger positions (two are fitted exactly by a line).
    """
    owner = "trigger_row_bounds"
    error = checks.positive_number(owner, "error", error, allow_zero=True)
    positions = np.array(sorted(set(trigger_set(triggers, owner))), dtype=float)
    fit = affine_fit_of_reciprocal(tuple(int(j) for j in positions))[0]  # needs |J| >= 3
    low, high = positions[0], positions[-1]
    reach = high - 1.0  # m: D_j = S + j - 1 <= S + m
    infinite = dict(kappa=np.inf, alpha=np.inf, beta=np.inf, nu=np.inf, bos_ratio=np.inf, triggers=positions,
                    bos=np.full(len(positions), np.inf), content_key=np.full(len(positions), np.inf),
                    trigger_key=np.full(len(positions), np.inf))
    if error >= fit:
        return infinite
    kappa = (reach + 1.0) * error / (fit - error)
    longest = 1.0 + reach + kappa  # D_j <= S + m <= 1 + kappa + m
    alpha = (2.0 * longest * error + kappa * (1.0 / low - 1.0 / high)) / (high - low)
    beta = longest * error + low * alpha + kappa / low
    nu = beta + (1.0 + kappa) * (error + alpha)
    if nu >= 1.0:
        return dict(infinite, kappa=kappa, alpha=alpha, beta=beta, nu=nu)
    ratio_bound = (1.0 + kappa + nu) / (1.0 - nu)  # Γ: bounds |g_m / g_t| and |g_b / g_t|
    bos_ratio = 4.0 * nu * (1.0 + ratio_bound)
    return dict(kappa=kappa, alpha=alpha, beta=beta, nu=nu, bos_ratio=bos_ratio, triggers=positions,
                bos=bos_ratio / (positions - 1.0), content_key=kappa / (positions * (positions - 1.0)),
                trigger_key=kappa / positions + bos_ratio / (positions - 1.0))


def gap_bound(content_keys, leak, bos_mass=None):
    """The least BOS-minus-mean-content score gap that puts mass 1 - ρ on BOS against n keys (ρ = `leak`).

    ``a_0 = 1 / (1 + Σ_k e^{s_k - s_0}) ≥ 1 - ρ`` and, by Jensen,
    ``Σ_k e^{s_k - s_0} ≥ n e^{mean_k s_k - s_0}``, so
    ``s_0 - mean_k s_k ≥ log n + log((1 - ρ)/ρ)``. Pass `bos_mass` = 1 - ρ when
    it is known more accurately than by subtracting ρ from 1 (ρ near 1).
    """
    content_keys, leak = _whole_numbers("content_keys", content_keys), _shares("leak", leak)
    bos_mass = np.maximum(1.0 - leak, 0.0) if bos_mass is None else _shares("bos_mass", bos_mass)
    try:
        shape = np.broadcast_shapes(content_keys.shape, leak.shape, bos_mass.shape)
    except ValueError:
        raise ValueError(f"gap_bound: content_keys {content_keys.shape}, leak {leak.shape} and bos_mass "
                         f"{bos_mass.shape} must broadcast together") from None
    apart = np.abs(bos_mass + leak - 1.0) > ROUNDING  # (shape)
    if apart.any():
        first = lambda values: np.broadcast_to(values, shape)[apart][0]  # noqa: E731 - the first pair apart
        raise ValueError(f"gap_bound: bos_mass must be 1 - leak (the row's two parts), got bos_mass "
                         f"{first(bos_mass)} and leak {first(leak)}")
    with np.errstate(divide="ignore"):  # a_0 = 0 gives the (true) bound -inf
        return np.log(content_keys) + np.log(bos_mass) - np.log(leak)


ROUNDING = 1e-9  # how far a share, or the two parts of a row, may stray from [0, 1] and 1 by rounding


def _whole_numbers(name: str, values) -> np.ndarray:
    """gap_bound's numbers of content keys as an integer array, each n >= 1, or an error naming `name`."""
    array = np.asarray(values)
    if not np.issubdtype(array.dtype, np.integer):
        raise TypeError(f"gap_bound: {name} must be whole numbers n >= 1 (the keys besides BOS), got {values!r} "
                        f"({array.dtype})")
    if (array < 1).any():
        raise ValueError(f"gap_bound: {name} must be whole numbers n >= 1 (the keys besides BOS), got {values!r}")
    return array


def _shares(name: str, values) -> np.ndarray:
    """gap_bound's leak or BOS mass as a float array, each a share of a row's mass in [0, 1], or an error."""
    array = np.asarray(values)
    if not checks.is_real(array.dtype):
        raise TypeError(f"gap_bound: {name} must be a share of a row's mass in [0, 1], got {values!r} "
                        f"({array.dtype})")
    array = array.astype(float)
    outside = ~((array >= 0) & (array <= 1 + ROUNDING))  # nan too; a sum of softmax weights may round above 1
    if outside.any():
        raise ValueError(f"gap_bound: {name} must be a share of a row's mass in [0, 1], got "
                         f"{array[outside].ravel()[:3].tolist() if array.ndim else values!r}")
    return array
