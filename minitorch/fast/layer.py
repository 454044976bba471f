"""The attention layer of `minitorch.paper.models`, computed in fewer and larger steps.

`FusedAttentionLayer` holds the same parameters as the `AttentionLayer` it takes over and computes
the same function; only the order of the work differs:

- stacked projections: ``[W_Q; W_K; W_V]`` is one (3Hn, n) matrix, viewed as 3H blocks of n x n,
  so one batched product gives every query, key and value of every head, each block's result
  contiguous, the heads as the leading axis;
- fused attention: scores, normaliser and weighted sum are one graph node
  (`minitorch.fast.attention.attend_stacked`);
- ``W_O`` is applied head by head, ``ŷ_i = Σ_h W_O^h o^h_i``, as one batched product and a sum,
  so the heads' outputs are never copied into one (B, L, Hn) array.
"""

from __future__ import annotations

from minitorch import ops
from minitorch.fast.attention import attend_stacked
from minitorch.paper.models import AttentionLayer
from minitorch.tensor import Tensor


class FusedAttentionLayer(AttentionLayer):
    """`AttentionLayer` with stacked projections and fused attention; the same parameters and numbers."""

    @classmethod
    def taking_over(cls, layer: AttentionLayer) -> "FusedAttentionLayer":
        """A fused layer holding `layer`'s own parameters (the same objects: training one trains both)."""
        fused = cls.__new__(cls)
        vars(fused).update(vars(layer))
        return fused

    def project(self, rows: Tensor, weight: Tensor) -> Tensor:
        """Apply every n x n block of `weight` at once: (N, n) -> (k, N, n) for a (k*n, n) weight.

        Row block h of W_Q (H*n by n) is head h's matrix, so viewing a weight
        as (k, n, n) makes the k projections one batched product with the
        blocks as the leading axis: each block's (N, n) result is contiguous.
        """
        blocks = weight.shape[0] // self.width
        per_block = weight.reshape(blocks, self.width, self.width)  # (k*n, n) -> (k, n, n)
        return rows @ per_block.transpose(-2, -1)  # (N, n) @ (k, n, n) -> (k, N, n)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """x: (B, L, n). Returns (output (B, L, n), weights (B, H, L, L))."""
        batch, length, n = x.shape
        rows = x.reshape(batch * length, n)  # (B, L, n) -> (N, n), N = B*L
        stacked = ops.concatenate([self.W_Q.weight, self.W_K.weight, self.W_V.weight])  # [W_Q; W_K; W_V]: (3Hn, n)
        projected = self.project(rows, stacked)  # (3H, N, n)
        projected = projected.reshape(3, self.heads, batch, length, n)  # -> (3, H, B, L, n): q, k, v of each head
        heads_out, weights = attend_stacked(projected, self.normaliser,
                                            **self.normaliser_arguments())  # (H, B, L, n), (H, B, L, L)
        if self.output_gate:  # o^h_i ← o^h_i ⊙ σ(W_G^h x_i)
            heads_out = heads_out * self.gate(x)
        # W_O^h = columns h*n..(h+1)*n of W_O; (W_O^h)ᵀ for every head at once is W_O viewed as (H, n, n)
        per_head_out = self.W_O.weight.reshape(n, self.heads, n).permute(1, 2, 0)  # (n, H*n) -> (H, n, n)
        update = (heads_out.reshape(self.heads, batch * length, n) @ per_head_out).sum(axis=0)  # (H, N, n) -> (N, n)
        return update.reshape(batch, length, n), weights.permute(1, 0, 2, 3)  # weights -> (B, H, L, L)

    def gate(self, x: Tensor) -> Tensor:
        """σ(W_G^h x_i) of every head, with W_G's blocks as one batched product: (B, L, n) -> (H, B, L, n)."""
        batch, length, n = x.shape
        gate = ops.sigmoid(self.project(x.reshape(batch * length, n), self.W_G.weight))  # (H, N, n)
        return gate.reshape(self.heads, batch, length, n)
