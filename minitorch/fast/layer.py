"""The attention layer of `minitorch.paper.models`, computed in fewer and larger steps.

`FusedAttentionLayer` holds the same parameters as the `AttentionLayer` it takes over and computes
the same function, in five graph nodes instead of about twenty:

- `project_blocks`: ``[W_Q; W_K; W_V]`` is one (3Hn, n) matrix, viewed as 3H blocks of n x n, so
  one batched product gives every query, key and value of every head, each block's result
  contiguous, the heads as the leading axis;
- `minitorch.fast.attention.attend_stacked`: scores, normaliser and weighted sum as one node;
- `apply_output_blocks`: ``ŷ_i = Σ_h W_O^h o^h_i`` as one batched product over the heads and a sum,
  so the heads' outputs are never copied into one (B, L, Hn) array.

Each node's backward is written out beside its forward, in the same NumPy operations the engine's
composition of reshape, permute, matmul and sum would run, so the numbers are those of that
composition to the last bit.
"""

from __future__ import annotations

import numpy as np

from minitorch import ops
from minitorch.fast.attention import attend_stacked
from minitorch.paper.models import AttentionLayer
from minitorch.tensor import Tensor


class FusedAttentionLayer(AttentionLayer):
    """`AttentionLayer` with stacked projections and fused attention; the same parameters and numbers."""

    @classmethod
    def taking_over(cls, layer: AttentionLayer) -> "FusedAttentionLayer":
        """A fused layer holding `layer`'s own parameters (the same objects: training one trains both)."""
        if not isinstance(layer, AttentionLayer):  # (another module's attributes would fail at the first call)
            raise TypeError(f"{cls.__name__}.taking_over: layer must be an AttentionLayer (a model's layers[i]), got "
                            f"{type(layer).__name__}")
        fused = cls.__new__(cls)
        vars(fused).update(vars(layer))
        return fused

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """x: (B, L, n). Returns (output (B, L, n), weights (B, H, L, L))."""
        x = self.checked_input(x)
        batch, length, n = x.shape
        rows = x.reshape(batch * length, n)  # (B, L, n) -> (N, n), N = B*L
        projected = project_blocks(rows, self.W_Q.weight, self.W_K.weight, self.W_V.weight)  # (3H, N, n)
        projected = projected.reshape(3, self.heads, batch, length, n)  # -> (3, H, B, L, n): q, k, v of each head
        heads_out, weights = attend_stacked(projected, self.normaliser,
                                            **self.normaliser_arguments())  # (H, B, L, n), (H, B, L, L)
        if self.output_gate:  # o^h_i ← o^h_i ⊙ σ(W_G^h x_i)
            gate = ops.sigmoid(project_blocks(rows, self.W_G.weight))  # (H, N, n)
            heads_out = heads_out * gate.reshape(self.heads, batch, length, n)
        update = apply_output_blocks(heads_out, self.W_O.weight)  # (H, B, L, n) -> (B, L, n)
        return update, weights.permute(1, 0, 2, 3)  # weights (H, B, L, L) -> (B, H, L, L)

    def gate(self, x: Tensor) -> Tensor:
        """σ(W_G^h x_i) of every head, as the forward pass computes it: (B, L, n) -> (H, B, L, n)."""
        batch, length, n = self.checked_input(x).shape
        gate = ops.sigmoid(project_blocks(x.reshape(batch * length, n), self.W_G.weight))  # (H, N, n)
        return gate.reshape(self.heads, batch, length, n)


def project_blocks(rows: Tensor, *weights: Tensor) -> Tensor:
    """Every n x n block of the stacked `weights` applied to every row: (N, n) -> (k, N, n).

    The weights, each (m*n, n), are stacked into one (k*n, n) matrix W and viewed as k blocks
    W^b of n x n (row block h of W_Q is head h's matrix): ``out[b] = rows @ (W^b)ᵀ``. Backward,
    for G (k, N, n): ``∂ℓ/∂W^b = G[b]ᵀ rows`` and ``∂ℓ/∂rows = Σ_b G[b] W^b``.
    """
    if not weights:  # (NumPy's words would be of concatenating nothing)
        raise ValueError("project_blocks: give at least one weight (m*n, n) to apply to the rows")
    width = rows.shape[-1]
    if rows.ndim != 2 or any(w.ndim != 2 or w.shape[1] != width or w.shape[0] % width for w in weights):
        raise ValueError(f"project_blocks: rows must be (N, n) and every weight (m*n, n) for the same n, got rows "
                         f"{rows.shape} and weights {[w.shape for w in weights]}")
    stacked = np.concatenate([weight._data for weight in weights])  # (k*n, n)
    blocks = stacked.reshape(-1, width, width)  # (k, n, n)
    transposed = blocks.transpose(0, 2, 1)  # (W^b)ᵀ for every b

    def backward(grad):  # grad: (k, N, n)
        grad_rows = (grad @ blocks).sum(axis=0) if rows.requires_grad else None  # Σ_b G[b] W^b: (N, n)
        grad_transposed = np.swapaxes(rows._data, -1, -2) @ grad  # rowsᵀ G[b]: (k, n, n), ∂ℓ/∂(W^b)ᵀ
        grad_stacked = grad_transposed.transpose(0, 2, 1).reshape(stacked.shape)  # (k*n, n)
        return (grad_rows, *_split_rows(grad_stacked, weights))

    return Tensor.from_op(rows._data @ transposed, (rows, *weights), backward, "project_blocks")


def _split_rows(stacked: np.ndarray, weights: tuple) -> list[np.ndarray]:
    """`stacked` cut back into pieces of the weights' shapes (what ``np.split`` does, without its overhead)."""
    pieces, start = [], 0
    for weight in weights:
        pieces.append(stacked[start:start + weight.shape[0]])
        start += weight.shape[0]
    return pieces


def apply_output_blocks(heads_out: Tensor, W_O: Tensor) -> Tensor:
    """``ŷ_i = W_O [o^1_i; ...; o^H_i] = Σ_h W_O^h o^h_i``: (H, B, L, n) -> (B, L, n).

    W_O^h is columns h*n..(h+1)*n of W_O (n by H*n); viewed as (n, H, n) and permuted, W_O gives
    every (W_O^h)ᵀ as one (H, n, n) array. Backward, for G (B, L, n) as rows (N, n):
    ``∂ℓ/∂o^h = G W_O^h`` and ``∂ℓ/∂W_O^h = G[h-th copy]ᵀ o^h``.
    """
    if heads_out.ndim != 4 or W_O.shape != (heads_out.shape[-1], heads_out.shape[0] * heads_out.shape[-1]):
        raise ValueError(f"apply_output_blocks: heads_out must be (H, B, L, n) and W_O (n, H*n), got "
                         f"{heads_out.shape} and {W_O.shape}")
    heads, batch, length, width = heads_out.shape
    rows_out = heads_out._data.reshape(heads, batch * length, width)  # (H, N, n)
    transposed = W_O._data.reshape(width, heads, width).transpose(1, 2, 0)  # (n, H*n) -> (H, n, n): (W_O^h)ᵀ
    update = (rows_out @ transposed).sum(axis=(0,))  # (H, N, n) -> (N, n)

    def backward(grad):  # grad: (B, L, n)
        grad = np.broadcast_to(grad.reshape(1, batch * length, width), rows_out.shape)  # ∂ℓ/∂ of each head's term
        grad_heads = (grad @ np.swapaxes(transposed, -1, -2)).reshape(heads_out.shape)  # (H, N, n) -> (H, B, L, n)
        grad_transposed = np.swapaxes(rows_out, -1, -2) @ grad  # (H, n, n)
        grad_W_O = grad_transposed.transpose(2, 0, 1).reshape(W_O.shape)  # (H, n, n) -> (n, H, n) -> (n, H*n)
        return grad_heads, grad_W_O

    return Tensor.from_op(update.reshape(batch, length, width), (heads_out, W_O), backward, "apply_output_blocks")
