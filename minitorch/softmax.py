"""The softmax and its backward, fused into one operation (chapter 02).

Forward, along an axis: ``a_k = exp(s_k - m) / Σ_k' exp(s_k' - m)`` with
``m = max_k s_k``. Subtracting ``m`` changes nothing mathematically (the
softmax is shift invariant) but keeps every exponent ≤ 0, so nothing
overflows. An entry equal to ``-inf`` (a masked key) gets ``exp(-inf) = 0``:
exactly zero weight.

Backward: the Jacobian is ``∂a_k/∂s_l = a_k (δ_kl - a_l)``, so for an
incoming gradient ``g = ∂ℓ/∂a``

    ∂ℓ/∂s_l = Σ_k g_k a_k (δ_kl - a_l) = a_l (g_l - Σ_k g_k a_k).

A masked entry has ``a_l = 0`` and therefore exactly zero gradient. Writing
the backward in this fused form costs two elementwise products and one sum,
instead of building exp, sum and division nodes separately.
"""

from __future__ import annotations

import numpy as np

from minitorch import checks
from minitorch.tensor import Tensor, as_tensor


def softmax(scores, axis: int = -1) -> Tensor:
    """Numerically stable softmax of `scores` along `axis`.

    Entries equal to ``-inf`` are masked: they get weight exactly 0 and
    gradient exactly 0. A slice whose every entry is ``-inf`` has no softmax
    and raises ValueError.
    """
    scores = as_tensor(scores)
    if scores.ndim == 0:
        raise ValueError("softmax: needs at least one axis, got a 0-dimensional tensor")
    if type(axis) is not int or not -scores.ndim <= axis < scores.ndim:  # (the usual case: one comparison)
        axis = checks.axis("softmax", axis, scores.ndim)
    if scores._data.size == 0:  # e.g. a length-0 axis: nothing to normalise, an empty result (as PyTorch)
        return Tensor.from_op(np.zeros_like(scores._data), (scores,), lambda grad: (np.zeros_like(grad),), "softmax")
    return stable_softmax(scores, axis)


def stable_softmax_inputs(scores, axis) -> tuple:
    """`stable_softmax`'s inputs: a Tensor with at least one element and one of its axes."""
    if not isinstance(scores, Tensor):
        raise TypeError(f"stable_softmax: scores must be a Tensor, got {type(scores).__name__} (minitorch.softmax "
                        f"takes arrays too)")
    if not scores._data.size or not scores._data.ndim:
        raise ValueError(f"stable_softmax: scores must have at least one axis and one element, got shape "
                         f"{scores.shape} (minitorch.softmax takes these too)")
    if type(axis) is not int or not -scores._data.ndim <= axis < scores._data.ndim:
        axis = checks.axis("stable_softmax", axis, scores._data.ndim)
    return scores, axis


@checks.inputs_checked_by(stable_softmax_inputs)
def stable_softmax(scores: Tensor, axis: int) -> Tensor:
    """Exercise 2.4: the softmax of `scores` (a Tensor with at least one element) along `axis`, forward
    and fused backward, as one graph node: ``Tensor.from_op(weights, (scores,), backward, "softmax")``.
    A slice whose every entry is -inf, or a score of +inf or NaN, raises the ValueError of
    `_explain_non_finite`. Write any helper inside this function."""
    shift = scores.data.max(axis=axis, keepdims=True)  # m, one per slice
    if not np.isfinite(shift).all():
        _explain_non_finite(shift)
    exponentials = np.exp(scores.data - shift)  # every exponent <= 0: no overflow
    weights = exponentials / exponentials.sum(axis=axis, keepdims=True)

    def backward(grad):
        # ∂ℓ/∂s = a ⊙ (g - Σ_k g_k a_k)
        return (weights * (grad - (grad * weights).sum(axis=axis, keepdims=True)),)

    return Tensor.from_op(weights, (scores,), backward, "softmax")


def _explain_non_finite(shift: np.ndarray) -> None:
    """Raise the right error for a slice whose maximum is not a finite number."""
    if np.isneginf(shift).any():
        raise ValueError(
            "softmax: a slice along the softmax axis has every entry masked (-inf); "
            "at least one entry per slice must be finite"
        )
    raise ValueError("softmax: the scores contain +inf or NaN; only -inf (a masked entry) is allowed")


Tensor.softmax = softmax  # x.softmax(axis) as a method too
