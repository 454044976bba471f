"""The floor: one training step written by hand in NumPy, no autograd (chapter 00).

Its normalisers and its Adam are answers to exercises (2.3, 2.5, 3.1-3.3), marked as "speed copies":
the student edition replaces them by an error, so the floor runs only in the full repository.

`python -m minitorch.tools.bench` times minitorch against this. Every gradient
below is derived on paper and written out, with no graph, no Tensor objects
and as few temporary arrays as we could manage, so it is as fast as NumPy
lets this step be. If minitorch's step is close to it, the engine's
bookkeeping costs little.

The model is the book's (`minitorch.paper.models`): per layer, queries, keys and
values ``q = W_Q x``, ``k = W_K x``, ``v = W_V x`` for H heads of width n,
weights ``a_ik`` from the normaliser, head outputs ``Σ_k a_ik v_k``
concatenated and mapped back by ``W_O``; residual or not. Loss: mean squared
error. Optimiser: Adam (torch semantics), updated in place.

Layout choices that make it fast (the same ones `minitorch.fast.layer` uses):
the three projections of all heads are one matrix product, the heads are
the leading batch axis, so every small product is a contiguous batched
``matmul``.
"""

from __future__ import annotations

import numpy as np

from minitorch.fast.arrays import max_along, sum_along  # pure NumPy: the fastest max and sum over 16 keys


class NumpyStep:
    """A model's weights, their Adam moments, and `step(x, y)`.

    ``weights`` is the model's `state_dict()` (``layers.l.W_Q.weight`` ...),
    copied, so both implementations can start from the same numbers.
    """

    def __init__(self, state: dict, config: dict, lr: float = 1e-4, betas=(0.9, 0.95), eps: float = 1e-8):
        self.width, self.heads = config["width"], config["heads"]
        self.residual, self.normaliser = config["residual"], config["normaliser"]
        if self.normaliser not in ("softmax", "relu"):
            raise ValueError(f"NumpyStep: only 'softmax' and 'relu' are written by hand, got {self.normaliser!r}")
        self.lr, self.betas, self.eps, self.t = lr, betas, eps, 0
        n, h = self.width, self.heads
        self.qkv, self.out = [], []  # per layer: (3, H, n, n) and (n, H*n)
        for layer in range(config["layers"]):
            prefix = f"layers.{layer}."
            stacked = np.stack([state[prefix + f"W_{p}.weight"] for p in "QKV"])  # (3, H*n, n)
            self.qkv.append(np.ascontiguousarray(stacked.reshape(3, h, n, n)))  # row block h is head h
            self.out.append(np.array(state[prefix + "W_O.weight"]))
        self.params = self.qkv + self.out
        self.moments = [(np.zeros_like(p), np.zeros_like(p)) for p in self.params]

    # -- the normalisers, forward and backward ------------------------------------------

    def _normalise(self, scores: np.ndarray) -> np.ndarray:
        """Scores (H, B, L, L) -> weights, in place. Future keys get weight 0."""
        # BEGIN SPEED COPY OF EXERCISES 2.3 3.1 3.2 3.3
        length = scores.shape[-1]
        visible = np.tril(np.ones((length, length), dtype=scores.dtype))
        if self.normaliser == "softmax":
            scores += np.where(visible > 0, 0.0, -np.inf).astype(scores.dtype)  # future keys: -inf
            scores -= max_along(scores, -1)
            np.exp(scores, out=scores)
            scores /= sum_along(scores, -1)
            return scores
        np.maximum(scores, 0.0, out=scores)  # relu: max(s, 0) / max(i, 1) on visible keys
        scores *= visible / np.maximum(np.arange(length), 1)[:, None].astype(scores.dtype)
        return scores
        # END SPEED COPY OF EXERCISES 2.3 3.1 3.2 3.3

    def _normalise_backward(self, weights: np.ndarray, grad: np.ndarray) -> np.ndarray:
        """dℓ/da -> dℓ/ds, in place in `grad`."""
        # BEGIN SPEED COPY OF EXERCISES 2.3 3.3
        if self.normaliser == "softmax":  # a ⊙ (g - Σ_k g_k a_k)
            grad -= sum_along(grad * weights, -1)
            grad *= weights
            return grad
        length = weights.shape[-1]  # relu: ∂a/∂s = 1/max(i, 1) where a > 0, else 0
        grad *= (weights > 0) / np.maximum(np.arange(length), 1)[:, None].astype(grad.dtype)
        return grad
        # END SPEED COPY OF EXERCISES 2.3 3.3

    # -- one layer ------------------------------------------------------------------------

    def _layer_forward(self, x: np.ndarray, qkv: np.ndarray, out: np.ndarray):
        batch, length, n = x.shape
        rows = x.reshape(1, batch * length, n)
        projected = rows @ qkv.reshape(3 * self.heads, n, n).transpose(0, 2, 1)  # (3H, B*L, n)
        projected = projected.reshape(3, self.heads, batch, length, n)
        queries, keys, values = projected  # each (H, B, L, n)
        weights = self._normalise(queries @ keys.transpose(0, 1, 3, 2))  # (H, B, L, L)
        heads_out = weights @ values  # (H, B, L, n)
        joined = heads_out.transpose(1, 2, 0, 3).reshape(batch * length, self.heads * n)  # (B*L, H*n)
        update = (joined @ out.T).reshape(batch, length, n)
        return update, (rows, projected, weights, joined)

    def _layer_backward(self, grad_update, cache, qkv, out, need_grad_x: bool = True):
        rows, projected, weights, joined = cache
        queries, keys, values = projected
        heads, batch, length, n = queries.shape
        grad_rows = grad_update.reshape(batch * length, n)
        grad_out = grad_rows.T @ joined  # (n, H*n)
        grad_heads = (grad_rows @ out).reshape(batch, length, heads, n).transpose(2, 0, 1, 3)  # (H, B, L, n)
        grad_projected = np.empty_like(projected)  # (3, H, B, L, n)
        np.matmul(weights.transpose(0, 1, 3, 2), grad_heads, out=grad_projected[2])  # dV = Aᵀ dO
        grad_scores = self._normalise_backward(weights, grad_heads @ values.transpose(0, 1, 3, 2))  # dA = dO Vᵀ
        np.matmul(grad_scores, keys, out=grad_projected[0])  # dQ = dS K
        np.matmul(grad_scores.transpose(0, 1, 3, 2), queries, out=grad_projected[1])  # dK = dSᵀ Q
        flat = grad_projected.reshape(3 * heads, batch * length, n)
        grad_qkv = (flat.transpose(0, 2, 1) @ rows).reshape(qkv.shape)  # (3H, n, n)
        if not need_grad_x:  # the first layer's input is data
            return None, grad_qkv, grad_out
        grad_x = (flat @ qkv.reshape(3 * heads, n, n)).sum(axis=0)  # (B*L, n)
        return grad_x.reshape(batch, length, n), grad_qkv, grad_out

    # -- the step -------------------------------------------------------------------------

    def forward(self, x: np.ndarray):
        caches = []
        for qkv, out in zip(self.qkv, self.out):
            update, cache = self._layer_forward(x, qkv, out)
            caches.append(cache)
            x = x + update if self.residual else update
        return x, caches

    def step(self, x: np.ndarray, y: np.ndarray) -> float:
        """Forward, backward and Adam on one batch; returns the loss."""
        prediction, caches = self.forward(x)
        difference = prediction - y
        loss = float(np.mean(difference * difference))
        grad = difference * (2.0 / difference.size)  # d mean((ŷ-y)²) / dŷ
        grads_qkv, grads_out = [], []
        for index in reversed(range(len(caches))):
            grad_x, grad_qkv, grad_out = self._layer_backward(grad, caches[index], self.qkv[index], self.out[index],
                                                              need_grad_x=index > 0)
            grads_qkv.append(grad_qkv)
            grads_out.append(grad_out)
            if index > 0:
                grad = grad + grad_x if self.residual else grad_x
        self._adam(grads_qkv[::-1] + grads_out[::-1])
        return loss

    def _adam(self, grads) -> None:
        # BEGIN SPEED COPY OF EXERCISES 2.5
        beta1, beta2 = self.betas
        self.t += 1
        step_size = self.lr / (1 - beta1 ** self.t)
        root_correction = np.sqrt(1 - beta2 ** self.t)
        for param, (m, v), grad in zip(self.params, self.moments, grads):
            m *= beta1
            m += (1 - beta1) * grad
            v *= beta2
            v += (1 - beta2) * grad * grad
            denominator = np.sqrt(v)
            denominator /= root_correction
            denominator += self.eps
            param -= step_size * m / denominator
        # END SPEED COPY OF EXERCISES 2.5

    def state_dict(self) -> dict:
        """The weights under the names `minitorch.paper.models` uses."""
        n, h = self.width, self.heads
        state = {}
        for layer, (qkv, out) in enumerate(zip(self.qkv, self.out)):
            for index, name in enumerate("QKV"):
                state[f"layers.{layer}.W_{name}.weight"] = qkv[index].reshape(h * n, n).copy()
            state[f"layers.{layer}.W_O.weight"] = out.copy()
        return state
