"""Short-axis reductions: ``x.max(axis)`` and ``x.sum(axis)`` for the attention's 16 keys, faster.

The engine's softmax (chapter 02) takes ``x.max(axis)`` and ``x.sum(axis)``. These two helpers are
faster on the attention's short rows: the same maxima, and the same sums up to the order of the
additions. The fast path's softmax (`minitorch.fast.attention`) and the benchmark's NumPy floor
(`minitorch.fast.hand_fused`) use them. Nothing here builds a graph.
"""

from __future__ import annotations

import numpy as np

from minitorch import checks


# NumPy reduces a short axis (the attention's L = 16 keys) one row at a time,
# paying a fixed cost per row, so for scores of shape (4, 128, 16, 16) a
# reduction over the last axis costs several times an elementwise operation on
# the same array. The two helpers below work along whole slices instead, so the
# softmax does not dominate a training step (python -m minitorch bench measures it).
SHORT_AXIS = 32


def max_along(x: np.ndarray, axis: int) -> np.ndarray:
    """``x.max(axis, keepdims=True)``; for a short axis, the running elementwise
    maximum of its slices (one vectorised call per slice). `x` may be any array-like, as NumPy's own max takes."""
    x = np.asarray(x)  # (free for an array)
    axis = checks.axis("max_along", axis, x.ndim)
    if x.ndim and x.shape[axis] == 0:
        raise ValueError(f"max_along: axis {axis} of shape {x.shape} is empty; a maximum of nothing is undefined")
    if x.ndim == 0 or x.shape[axis] > SHORT_AXIS:
        return x.max(axis=axis, keepdims=True)
    slices = np.moveaxis(x, axis, 0)  # (k, ...): slice j is x[..., j, ...]
    result = np.array(slices[0])  # a copy; a 0-d array (not a NumPy scalar) when x is 1-D
    for column in slices[1:]:
        np.maximum(result, column, out=result)
    return np.expand_dims(result, axis)


def sum_along(x: np.ndarray, axis: int) -> np.ndarray:
    """``x.sum(axis, keepdims=True)``; along the last axis, a product with a
    column of ones, which BLAS does faster for short rows (the same
    terms, ±inf and NaN included; only the order of the additions may differ). `x` may be any array-like; one
    not of floats is summed by NumPy, which counts booleans (a product ORs them) and widens small integers (a
    product would wrap around in int8)."""
    x = np.asarray(x)  # (free for an array)
    axis = checks.axis("sum_along", axis, x.ndim)  # (axis % ndim took any axis for the last one)
    if x.ndim == 0 or axis != x.ndim - 1 or x.dtype.kind != "f":
        return x.sum(axis=axis, keepdims=True)
    return x @ np.ones((x.shape[-1], 1), dtype=x.dtype)  # (..., k) @ (k, 1) -> (..., 1)
