"""Fused attention: ``O = normaliser(Q Kᵀ) V`` as one graph node with a hand-written backward.

`attend` and `attend_stacked` compute what `minitorch.paper.attention.attend` computes (chapter 03),
but as one operation instead of three nodes (scores, normaliser, weighted sum) and their copies;
`tests/fast/test_fast_attention.py` keeps the two equal in values and gradients. `fast_normaliser`
is the softmax normaliser with the short-axis reductions of `minitorch.fast.arrays`.
"""

from __future__ import annotations

import numpy as np

from minitorch.fast.arrays import max_along, sum_along
from minitorch.paper import attention
from minitorch.paper.attention import causal_mask, check_attention_shapes, get_normaliser
from minitorch.tensor import Tensor, is_grad_enabled


def attend(queries: Tensor, keys: Tensor, values: Tensor, normaliser: str = "softmax",
           **parameters: Tensor) -> tuple[Tensor, Tensor]:
    """`minitorch.paper.attention.attend` as one fused operation: the same numbers, faster.

    queries, keys, values: (..., L, d). Returns ``(output, weights)`` with
    output ``o_i = Σ_k a_ik v_k`` of shape (..., L, d) and weights (..., L, L)
    (the weights are a record for plots and metrics, not part of the graph).
    Keyword `parameters` go to the normaliser, e.g. ``sink_logit=S``.

    Forward: ``S = Q Kᵀ``, ``A = normaliser(S)``, ``O = A V``. Backward, for
    ``G = ∂ℓ/∂O``::

        ∂ℓ/∂V = Aᵀ G      ∂ℓ/∂A = G Vᵀ      ∂ℓ/∂S from the normaliser's own backward
        ∂ℓ/∂Q = (∂ℓ/∂S) K                  ∂ℓ/∂K = (∂ℓ/∂S)ᵀ Q

    The normaliser stays an ordinary minitorch function: it runs on a leaf
    holding S, and its backward is one call to ``backward`` on that small graph
    (so a normaliser with learned parameters gets their gradients too). Fusing
    the two products around it saves four graph nodes and their copies per
    layer; `tests/paper/test_fast_attention.py` checks it against `attention.attend`.
    """
    check_attention_shapes(queries, keys, values)
    needs_score_grad = queries.requires_grad or keys.requires_grad
    output, weights, gradients = _attention(queries.data, keys.data, values.data, needs_score_grad,
                                            normaliser, parameters)

    def backward(grad):
        return (*gradients(grad), None)

    # the weights are a parent only so that a normaliser's parameters make the output need a
    # gradient; their gradient is delivered inside `gradients`, so we return None for them
    return Tensor.from_op(output, (queries, keys, values, weights), backward, "attend"), weights.detach()


def attend_stacked(projected: Tensor, normaliser: str = "softmax", **parameters: Tensor) -> tuple[Tensor, Tensor]:
    """`attend` for queries, keys and values stacked on a first axis of size 3.

    projected: (3, ..., L, d), as one matrix product with ``[W_Q; W_K; W_V]``
    produces them (`models.AttentionLayer`). The same as
    ``attend(projected[0], projected[1], projected[2])``, but the backward
    writes the three gradients into one array instead of three slices of zeros.
    """
    if projected.ndim < 3 or projected.shape[0] != 3:
        raise ValueError(f"attend_stacked: expected queries, keys and values stacked as (3, ..., L, d), "
                         f"got shape {projected.shape}")
    q, k, v = projected.data
    output, weights, gradients = _attention(q, k, v, projected.requires_grad, normaliser, parameters)

    def backward(grad):
        stacked = np.empty_like(projected.data)  # (3, ..., L, d)
        for index, part in enumerate(gradients(grad)):
            stacked[index] = 0.0 if part is None else part
        return stacked, None

    return Tensor.from_op(output, (projected, weights), backward, "attend"), weights.detach()


def _attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, needs_score_grad: bool, normaliser: str,
               parameters: dict):
    """The fused forward; returns (output array, weights Tensor, gradients function).

    ``gradients(G)`` returns ``(∂ℓ/∂Q, ∂ℓ/∂K, ∂ℓ/∂V)`` as arrays (None for Q and K
    when nothing upstream of the scores needs a gradient).
    """
    normalise = fast_normaliser(normaliser) or get_normaliser(normaliser)
    length = q.shape[-2]
    scores = Tensor.from_op(q @ np.swapaxes(k, -1, -2), (), None, "scores")  # (..., L, d) @ (..., d, L) -> (..., L, L)
    scores.requires_grad = is_grad_enabled() and needs_score_grad  # a leaf of the normaliser's graph (no copy)
    weights = normalise(scores, causal_mask(length), **parameters)  # (..., L, L), a small graph of its own
    output = weights.data @ v  # (..., L, L) @ (..., L, d) -> (..., L, d)

    def gradients(grad):
        grad_values = np.swapaxes(weights.data, -1, -2) @ grad  # Aᵀ G
        if not weights.requires_grad:  # nothing upstream of the weights learns
            return None, None, grad_values
        weights.backward(grad @ np.swapaxes(v, -1, -2))  # G Vᵀ in; ∂ℓ/∂S out, into scores.grad
        if scores.grad is None:  # only the normaliser's own parameters needed it
            return None, None, grad_values
        grad_scores, scores.grad = scores.grad, None
        return grad_scores @ k, np.swapaxes(grad_scores, -1, -2) @ q, grad_values

    return output, weights, gradients


def fast_normaliser(name: str):
    """A faster copy of the normaliser registered as `name`, or None where there is none.

    Only the book's own softmax normaliser has one: the same numbers with the short-axis
    reductions of `minitorch.fast_arrays` (NumPy reduces 16 keys one row at a time). When
    "softmax" is registered to another function, that function is used as it is. The student
    edition replaces the copy by ``return None`` when it hands out exercise 2.3 or 3.2, so that
    training runs the student's own code.
    """
    if name != "softmax" or attention.NORMALISERS.get(name) is not attention.softmax_attention:
        return None
    # BEGIN SPEED COPY OF EXERCISES 2.3 3.2 (student edition: return None)
    def softmax_attention(scores: Tensor, future: np.ndarray) -> Tensor:
        masked = np.where(future, -np.inf, scores.data)  # (..., L, L): future keys get -inf, hence weight 0
        exponentials = np.exp(masked - max_along(masked, -1))
        weights = exponentials / sum_along(exponentials, -1)

        def backward(grad):
            return (weights * (grad - sum_along(grad * weights, -1)),)
        return Tensor.from_op(weights, (scores,), backward, "softmax_attention")
    return softmax_attention
    # END SPEED COPY OF EXERCISES 2.3 3.2
