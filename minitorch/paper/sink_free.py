"""Beyond the paper: normalisers that need no sink.

Softmax must sink because every row of weights sums to 1: a query with
nothing to read must still put its unit of weight somewhere, and the BOS key
0, whose value can be made ~0, is the cheapest place. Each normaliser below
removes that constraint in its own way. Notation as in chapter 03: scores
``s_ik`` for 0-based query ``i`` and key ``k``, weights ``a_ik``, ``a_ik = 0``
on future keys ``k > i``, sums over the visible keys ``k' ≤ i``; L is the
sequence length, the number of keys.

- ``"softmax1"``, softmax plus one: ``a_ik = e^(s_ik) / (1 + Σ_k' e^(s_ik'))``.
  An extra slot with logit 0 and value zero takes the rest of the unit:
  ``1 - Σ_k a_ik = 1 / (1 + Σ_k' e^(s_ik'))`` goes nowhere.
- ``"sink_logit"``, a learned sink logit ``S`` per head:
  ``a_ik = e^(s_ik) / (e^S + Σ_k' e^(s_ik'))``; softmax1 is ``S = 0``. The
  layer learns S (a `Parameter` named ``sink_logit``, shape (H, 1, 1, 1),
  starting at 0).
- ``"sigmoid"``: ``a_ik = σ(s_ik + b)`` with ``b = -log L`` (L the sequence
  length, the number of keys: the same b for every row). At scores near 0
  each weight is ``σ(-log L) = 1/(L+1)``, so no row starts above a sum of 1;
  but no row is normalised: each weight is free in (0, 1).
- ``"softpick"``: ``a_ik = relu(e^(s_ik) - 1) / (Σ_k' |e^(s_ik') - 1| + ε)``
  with ``ε = 1e-6``: a score ≤ 0 gets exactly 0 weight (it still counts in the
  denominator), so a row may be all zero.
- ``"gated"``: softmax attention, and each head's output is multiplied by a
  sigmoid gate, ``o^h_i ← o^h_i ⊙ σ(W_G^h x_i)`` (Qiu et al. 2025, "G1"). The
  gate can close, so a head need not write what it read. The layer holds
  the (H n) × n matrix ``W_G`` and applies the gate (`minitorch.paper.models`).

Each is registered by name, so ``SingleLayerModel(normaliser="softpick")``
works. `minitorch.paper` (its `__init__`) imports this module, so all seven names are known wherever the
paper's code is used.
"""

from __future__ import annotations

import numpy as np

from minitorch import checks, ops
from minitorch.paper.attention import normaliser_inputs, register_normaliser, softmax_attention
from minitorch.tensor import Tensor, as_tensor

SOFTPICK_EPS = 1e-6  # ε in softpick's denominator: an all-zero row gives 0, not 0/0


def softmax_with_sink(scores: Tensor, future: np.ndarray, sink_score) -> Tensor:
    """Softmax over the visible keys plus one extra key, the sink, scored `sink_score` with value zero.

    ``a_ik = e^(s_ik) / (e^S + Σ_k' e^(s_ik'))`` for the sink's score S. The
    sink is an extra column of scores; the softmax's max shift over the
    row and the sink is the stable form, ``m = max(S, max_k' s_ik')``. The
    sink's own weight is then dropped: its value is zero, so that weight
    goes nowhere.
    """
    scores, future = normaliser_inputs("softmax_with_sink", scores, future)
    _check_sink("softmax_with_sink", "sink_score", sink_score, scores)
    column = np.zeros(scores.shape[:-1] + (1,), dtype=scores.dtype)  # (..., L, 1)
    sink_column = as_tensor(sink_score, like=scores) + column  # S broadcast to (..., L, 1); its gradient is summed back
    sink_visible = np.concatenate([future, np.zeros(future.shape[:-1] + (1,), dtype=bool)], axis=-1)  # (L, L + 1)
    with_sink = ops.concatenate([scores, sink_column], axis=-1)  # (..., L, L + 1)
    weights = softmax_attention(with_sink, sink_visible)  # (..., L, L + 1): every row sees the sink
    return weights[..., :-1]  # (..., L, L + 1) -> (..., L, L): drop the sink


def _check_sink(owner: str, name: str, sink, scores: Tensor) -> None:
    """A ValueError naming `name` unless the sink's score broadcasts to the sink column (..., L, 1) of `scores`
    without widening it: one S per row at most, e.g. (H, 1, 1, 1) against scores (H, B, L, L). A TypeError
    unless it is real numbers (a Tensor, a number or an array): a string or a bool is no score. A ValueError for
    +inf or NaN, which the softmax would refuse as the scores' (-inf is a sink that takes nothing)."""
    values = np.asarray(sink.data if isinstance(sink, Tensor) else sink)
    if not checks.is_real(values.dtype):
        raise TypeError(f"{owner}: {name} must be a number (or a Tensor or array of numbers), got {sink!r:.60} "
                        f"({type(sink).__name__})")
    if values.size and (np.isnan(values).any() or values.max() == np.inf):
        raise ValueError(f"{owner}: {name} must be a finite number (or -inf, no sink), got {sink!r:.60}")
    sink_shape = sink.shape if hasattr(sink, "shape") else np.shape(sink)
    column_shape = tuple(scores.shape[:-1]) + (1,)
    try:
        fits = np.broadcast_shapes(sink_shape, column_shape) == column_shape
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"{owner}: {name} of shape {tuple(sink_shape)} does not broadcast to the sink column "
                         f"{column_shape} of scores {tuple(scores.shape)}; use a number or one S per head, "
                         f"shape (H, 1, 1, 1) for scores (H, B, L, L)")


@register_normaliser("softmax1")
def softmax1_attention(scores: Tensor, future: np.ndarray) -> Tensor:
    """``e^(s_ik) / (1 + Σ_k' e^(s_ik'))``: softmax with one more key of score 0 and value zero."""
    return softmax_with_sink(scores, future, 0.0)


def zero_sink_logit_per_head(heads: int) -> np.ndarray:
    """S = 0 for every head, shape (H, 1, 1, 1): at the start the sink is softmax1's."""
    heads = checks.integer("zero_sink_logit_per_head", "heads", heads)  # 0 heads gave an empty S, silently
    return np.zeros((heads, 1, 1, 1))


@register_normaliser("sink_logit", parameters={"sink_logit": zero_sink_logit_per_head})
def sink_logit_attention(scores: Tensor, future: np.ndarray, sink_logit: Tensor) -> Tensor:
    """``e^(s_ik) / (e^S + Σ_k' e^(s_ik'))`` with S = `sink_logit`, learned.

    `sink_logit` broadcasts against (..., L, 1): in a layer, whose scores are
    (H, B, L, L), it is (H, 1, 1, 1), one S per head.
    """
    scores, future = normaliser_inputs("sink_logit_attention", scores, future)
    _check_sink("sink_logit_attention", "sink_logit", sink_logit, scores)
    return softmax_with_sink(scores, future, sink_logit)


@register_normaliser("sigmoid")
def sigmoid_attention(scores: Tensor, future: np.ndarray) -> Tensor:
    """``σ(s_ik - log L)`` on visible keys (L = the number of keys), 0 on future keys."""
    scores, future = normaliser_inputs("sigmoid_attention", scores, future)
    bias = -np.log(scores.shape[-1])  # b = -log L: at s = 0 each weight is σ(-log L) = 1/(L+1)
    return ops.sigmoid(scores + bias).masked_fill(future, 0.0)


@register_normaliser("softpick")
def softpick_attention(scores: Tensor, future: np.ndarray) -> Tensor:
    """``relu(e^(s_ik) - 1) / (Σ_k' |e^(s_ik') - 1| + ε)`` on visible keys, 0 on future keys.

    Stable form: multiply numerator and denominator by ``e^(-m)``, with
    ``m = max(0, max_k' s_ik')``, so that no exponent is positive:
    ``d_ik = e^(s_ik - m) - e^(-m)``, ``a_ik = relu(d_ik) / (Σ_k' |d_ik'| + ε e^(-m))``.
    The ratio does not depend on m (ε is scaled too), so m is a constant
    and needs no gradient. A future key gets score 0, and ``e^0 - 1 = 0``
    adds nothing to either sum: exactly 0 weight and 0 gradient.
    """
    scores, future = normaliser_inputs("softpick_attention", scores, future)
    filled = scores.masked_fill(future, 0.0)  # score 0 is softpick's neutral score
    shift = np.maximum(filled.data.max(axis=-1, keepdims=True), 0.0)  # (..., L, 1): m, an array, not in the graph
    differences = ops.exp(filled - shift) - np.exp(-shift)  # d = e^(-m) (e^s - 1)
    positive = ops.relu(differences)
    magnitude = positive + ops.relu(-differences)  # |d| = relu(d) + relu(-d)
    return positive / (magnitude.sum(axis=-1, keepdims=True) + SOFTPICK_EPS * np.exp(-shift))  # (..., L, L)


@register_normaliser("gated", output_gate=True)
def gated_attention(scores: Tensor, future: np.ndarray) -> Tensor:
    """Softmax attention; the layer then gates each head's output with ``σ(W_G^h x_i)``."""
    return softmax_attention(scores, future)
