"""Causal attention with a choice of normaliser (chapter 03).

For queries ``q_i`` and keys ``k_k`` the scores are ``s_ik = q_i · k_k``. A
*normaliser* turns the score matrix into attention weights ``a_ik``, with
``a_ik = 0`` for future keys ``k > i`` (the causal mask):

- ``"softmax"``: ``a_ik = exp(s_ik) / Σ_{k' ≤ i} exp(s_ik')``. Every row lies
  on the probability simplex: it sums to 1.
- ``"relu"``: ``a_ik = max(s_ik, 0) / max(i, 1)`` (0-based query ``i``). The
  divisor is fixed, the number of visible non-BOS tokens; a row may sum to
  anything, including 0.

A normaliser is one function ``(scores, causal_mask) -> weights`` registered
with `register_normaliser`; models pick it by name. A normaliser may also
declare numbers it learns (its *parameters*, passed to it by keyword) and ask
for an output gate on each head; `minitorch.sink_free` registers five that
do without a sink.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from minitorch import ops
from minitorch.softmax import softmax
from minitorch.tensor import Tensor, is_grad_enabled

NORMALISERS: dict = {}  # name -> the function (scores, future, **parameters) -> weights


@dataclass(frozen=True)
class NormaliserOptions:
    """What a model must build for a normaliser, beyond W_Q, W_K, W_V, W_O.

    parameters: parameter name -> function ``heads -> initial array``; the
        layer holds one `Parameter` per name and passes it to the normaliser
        by keyword.
    output_gate: if True, the layer multiplies each head's output by a
        sigmoid gate ``σ(W_G^h x_i)`` before W_O.
    """

    parameters: dict = field(default_factory=dict)
    output_gate: bool = False


NORMALISER_OPTIONS: dict = {}  # name -> NormaliserOptions, beside NORMALISERS


def register_normaliser(name: str, parameters: dict | None = None, output_gate: bool = False):
    """Decorator: make a normaliser available to models under `name`.

    ``register_normaliser("sink_logit", parameters={"sink_logit": lambda heads: np.zeros((heads, 1, 1, 1))})``
    declares a learned number per head, named ``sink_logit``, starting at 0.
    """
    def register(function):
        taken = NORMALISERS.get(name)
        redefined = taken is not None and (taken.__module__, taken.__qualname__) == (function.__module__, function.__qualname__)
        if taken is not None and not redefined:  # re-running the cell that defines it is fine
            raise ValueError(f"register_normaliser: the name {name!r} is taken by {taken.__qualname__}; "
                             f"known: {sorted(NORMALISERS)}")
        NORMALISERS[name] = function
        NORMALISER_OPTIONS[name] = NormaliserOptions(dict(parameters or {}), output_gate)
        return function
    return register


def get_normaliser(name: str):
    """The normaliser registered under `name` (ValueError listing the known ones)."""
    if name not in NORMALISERS:
        raise ValueError(f"unknown attention normaliser {name!r}; known: {sorted(NORMALISERS)}")
    return NORMALISERS[name]


def normaliser_options(name: str) -> NormaliserOptions:
    """The parameters and gate the normaliser `name` declared (none, for a plain one)."""
    get_normaliser(name)  # an unknown name is an error here too
    return NORMALISER_OPTIONS.get(name, NormaliserOptions())


def causal_mask(length: int) -> np.ndarray:
    """Boolean (L, L) mask, True where key k lies in the future of query i (k > i)."""
    # BEGIN EXERCISE 3.1
    return np.triu(np.ones((length, length), dtype=bool), k=1)
    # END EXERCISE 3.1


@register_normaliser("softmax")
def softmax_attention(scores: Tensor, future: np.ndarray) -> Tensor:
    """Softmax over the visible keys: future keys get score -inf, hence weight 0."""
    # BEGIN EXERCISE 3.2
    return softmax(scores.masked_fill(future, -np.inf), axis=-1)
    # END EXERCISE 3.2


@register_normaliser("relu")
def relu_attention(scores: Tensor, future: np.ndarray) -> Tensor:
    """``max(s_ik, 0) / max(i, 1)`` on visible keys, 0 on future keys."""
    # BEGIN EXERCISE 3.3
    length = scores.shape[-1]
    row_divisor = np.maximum(np.arange(length), 1).reshape(length, 1)  # (L, 1): max(i, 1)
    return ops.relu(scores.masked_fill(future, 0.0)) / row_divisor
    # END EXERCISE 3.3


def attend(queries: Tensor, keys: Tensor, values: Tensor, normaliser: str = "softmax",
           **parameters: Tensor) -> tuple[Tensor, Tensor]:
    """Causal attention for any leading batch/head axes, as one fused operation.

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
    layer; `tests/test_attention.py` checks it against the unfused composition.
    """
    if not (queries.shape == keys.shape and keys.shape[:-1] == values.shape[:-1]):
        raise ValueError(
            f"attend: queries {queries.shape}, keys {keys.shape} and values {values.shape} "
            f"must agree on every axis but the values' last"
        )
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
    normalise = get_normaliser(normaliser)
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


# The sink-free normalisers register themselves when their module is imported; importing it here, once
# everything above exists, makes every normaliser known wherever attention is imported.
from minitorch import sink_free  # noqa: E402, F401
