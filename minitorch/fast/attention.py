"""Fused attention: ``O = normaliser(Q Kᵀ) V`` as one graph node with a hand-written backward.

`attend_stacked` computes what `minitorch.paper.attention.attend` computes (chapter 03), as one
operation instead of three nodes (scores, normaliser, weighted sum) and their copies;
`tests/fast/test_fast_attention.py` keeps the two equal in values and gradients. `fast_normaliser`
finds the book's softmax and ReLU normalisers as hand-fused array code (`minitorch.fast.hand_fused`), so
no small graph is built for them where that file is.
"""

from __future__ import annotations

import numpy as np

from minitorch.paper import attention
from minitorch.paper.attention import causal_mask, get_normaliser
from minitorch.tensor import Tensor, is_grad_enabled


def attend_stacked(projected: Tensor, normaliser: str = "softmax", **parameters: Tensor) -> tuple[Tensor, Tensor]:
    """`minitorch.paper.attention.attend` as one fused operation, for queries, keys and values stacked
    on a first axis of size 3: the same numbers, faster.

    projected: (3, ..., L, d), as one matrix product with ``[W_Q; W_K; W_V]`` produces them
    (`minitorch.fast.layer`). Returns ``(output, weights)`` with output ``o_i = Σ_k a_ik v_k`` of
    shape (..., L, d) and weights (..., L, L) (a record for plots and metrics, not part of the
    graph). Keyword `parameters` go to the normaliser, e.g. ``sink_logit=S``.

    Forward: ``S = Q Kᵀ``, ``A = normaliser(S)``, ``O = A V``. Backward, for ``G = ∂ℓ/∂O``::

        ∂ℓ/∂V = Aᵀ G      ∂ℓ/∂A = G Vᵀ      ∂ℓ/∂S from the normaliser's own backward
        ∂ℓ/∂Q = (∂ℓ/∂S) K                  ∂ℓ/∂K = (∂ℓ/∂S)ᵀ Q

    written into one (3, ..., L, d) array. The book's softmax and ReLU normalisers run as array
    code with their backward beside them (`fast_normaliser`); any other normaliser stays an
    ordinary minitorch function, run on a leaf holding S, its backward one call to ``backward`` on
    that small graph (so a normaliser with learned parameters gets their gradients too).
    """
    if not isinstance(projected, Tensor):
        raise TypeError(f"attend_stacked: projected must be a Tensor of shape (3, ..., L, d), got "
                        f"{type(projected).__name__}; wrap an array with minitorch.tensor(...)")
    if projected.ndim < 3 or projected.shape[0] != 3:
        raise ValueError(f"attend_stacked: expected queries, keys and values stacked as (3, ..., L, d), "
                         f"got shape {projected.shape}")
    attention.check_normaliser_parameters(normaliser, parameters, owner="attend_stacked")
    if projected.shape[-2] == 0:  # no positions: the readable path's empty results (a maximum over none is refused)
        return attention.attend(projected[0], projected[1], projected[2], normaliser, **parameters)
    queries, keys, values = projected._data
    scores = queries @ np.swapaxes(keys, -1, -2)  # (..., L, d) @ (..., d, L) -> (..., L, L)
    if normaliser != "softmax":  # (the softmax refuses such scores itself, as the readable path's does)
        attention.check_scores(scores, normaliser)
    needs_grad = is_grad_enabled() and projected.requires_grad
    array_normaliser = None if parameters else fast_normaliser(normaliser)
    if array_normaliser is not None:
        weights, normaliser_backward = array_normaliser(scores, causal_mask(scores.shape[-1]))
        weights = Tensor.from_op(weights, (), None, "weights")
    else:
        weights, normaliser_backward = _through_a_small_graph(scores, normaliser, parameters, needs_grad)
    attention.check_finite_inputs(normaliser, scores, values, queries, keys)  # as the readable path checks them
    output = weights._data @ values  # (..., L, L) @ (..., L, d) -> (..., L, d)

    def backward(grad):
        stacked = np.empty_like(projected._data)  # (3, ..., L, d): ∂ℓ/∂Q, ∂ℓ/∂K, ∂ℓ/∂V
        np.matmul(np.swapaxes(weights._data, -1, -2), grad, out=stacked[2])  # Aᵀ G
        grad_scores = normaliser_backward(grad @ np.swapaxes(values, -1, -2))  # G Vᵀ in, ∂ℓ/∂S out
        if grad_scores is None:  # nothing upstream of the scores learns
            stacked[:2] = 0.0
        else:
            np.matmul(grad_scores, keys, out=stacked[0])  # (∂ℓ/∂S) K
            np.matmul(np.swapaxes(grad_scores, -1, -2), queries, out=stacked[1])  # (∂ℓ/∂S)ᵀ Q
        return stacked, None

    # the weights are a parent only so that a normaliser's parameters make the output need a
    # gradient; their gradient is delivered inside normaliser_backward, so we return None for them
    return Tensor.from_op(output, (projected, weights), backward, "attend"), weights.detach()


def _through_a_small_graph(scores: np.ndarray, normaliser: str, parameters: dict, needs_grad: bool):
    """Any registered normaliser, run as minitorch operations on a leaf holding the scores:
    (weights Tensor, backward function ∂ℓ/∂A -> ∂ℓ/∂S, None when the scores need no gradient)."""
    leaf = Tensor.from_op(scores, (), None, "scores")
    leaf.requires_grad = needs_grad  # a leaf of the normaliser's own graph (no copy of the scores)
    weights = get_normaliser(normaliser)(leaf, causal_mask(scores.shape[-1]), **parameters)  # (..., L, L)
    attention.check_normaliser_result(normaliser, weights, scores.shape)

    def backward(grad_weights):
        if not weights.requires_grad:  # nothing upstream of the weights learns
            return None
        weights.backward(grad_weights)  # ∂ℓ/∂S into leaf.grad, and the normaliser's parameters' gradients
        grad_scores, leaf.grad = leaf.grad, None
        return grad_scores  # None when only the normaliser's own parameters needed a gradient

    return weights, backward


def fast_normaliser(name: str):
    """The normaliser registered as `name` as hand-fused array code, or None where there is none.

    Returns ``normalise(S, future) -> (A, backward)``, with ``backward(∂ℓ/∂A) = ∂ℓ/∂S``: the book's
    "softmax" and "relu" normalisers from `minitorch.fast.hand_fused`, the instructor's copy. A student
    edition and a grading worker have no such file: there, and for any normaliser registered under those
    names by someone else, None, and the exercise functions run through a small graph."""
    try:
        from minitorch.fast import hand_fused
    except ImportError:  # a student edition: the answers' array copies stay with the instructor
        return None
    book = {"softmax": attention.softmax_attention, "relu": attention.relu_attention}
    if name in book and attention.NORMALISERS.get(name) is book[name]:
        return hand_fused.NORMALISERS[name]
    return None
