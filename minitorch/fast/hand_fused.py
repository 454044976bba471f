"""Hand-fused array code: the instructor's one copy of answers, for speed (chapter 00).

The book's softmax and ReLU normalisers (exercises 2.4 and 3.1-3.3) and Adam (2.5), written again as array
code with their backward beside them, in place and with the short-axis reductions of `minitorch.fast.arrays`.
Two things use them: the fast path's fused attention (`minitorch.fast.attention`, which `reproduce` trains
with), and the benchmark's floor, `NumpyStep`, one training step written by hand in NumPy, no autograd.

They repeat answers, so a student edition leaves this file out (`registry.INSTRUCTOR_ONLY`), and so does the
library a grading worker runs: there the fast path calls the exercise functions themselves (the student's, or
the grader's through the stand-ins), and `bench` says why it has no floor to compare with.

`python -m minitorch bench` times minitorch against `NumpyStep`. Every gradient
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

from minitorch import checks
from minitorch.fast.arrays import max_along, sum_along  # pure NumPy: the fastest max and sum over 16 keys
from minitorch.optim import checked_betas


def softmax_normaliser(scores: np.ndarray, future: np.ndarray):
    """`minitorch.paper.attention.softmax_attention` as array code: ``(A, backward)`` with
    ``backward(∂ℓ/∂A) = ∂ℓ/∂S``, in place in the caller's gradient array."""
    hide_future = np.where(future, -np.inf, 0.0).astype(scores.dtype)  # (L, L): -inf on future keys, else 0
    weights = scores + hide_future  # (..., L, L): future keys get -inf, hence weight 0 (faster than np.where)
    shift = max_along(weights, -1)  # (..., L, 1)
    if not np.isfinite(shift).all():  # refused in minitorch.softmax's words
        if np.isneginf(shift).any():
            raise ValueError("softmax: a slice along the softmax axis has every entry masked (-inf); at least one "
                             "entry per slice must be finite")
        raise ValueError("softmax: the scores contain +inf or NaN; only -inf (a masked entry) is allowed")
    weights -= shift
    np.exp(weights, out=weights)
    weights /= sum_along(weights, -1)

    def backward(grad):  # a ⊙ (g - Σ_k g_k a_k), in place in g (the caller's own array)
        grad -= sum_along(grad * weights, -1)
        grad *= weights
        return grad
    return weights, backward


def relu_normaliser(scores: np.ndarray, future: np.ndarray):
    """`minitorch.paper.attention.relu_attention` as array code: ``(A, backward)``, as `softmax_normaliser`."""
    length = scores.shape[-1]
    visible = np.logical_not(future).astype(scores.dtype)  # (L, L): 1 on keys k <= i
    reciprocal = np.maximum(np.arange(length), 1).reshape(length, 1).astype(scores.dtype) ** -1.0  # 1/max(i, 1)
    weights = np.maximum(scores, 0)
    weights *= visible
    weights *= reciprocal

    def backward(grad):  # in place in g (the caller's own array)
        grad *= reciprocal
        grad *= visible
        grad *= scores > 0
        return grad
    return weights, backward


NORMALISERS = {"softmax": softmax_normaliser, "relu": relu_normaliser}


def torch_normaliser(normaliser: str, length: int, dtype):
    """The same normaliser in PyTorch, for the benchmark's comparison: scores (B, H, L, L) -> weights."""
    import torch

    future = torch.ones(length, length, dtype=torch.bool).triu(1)
    divisor = torch.arange(length).clamp(min=1).view(length, 1).to(getattr(torch, np.dtype(dtype).name))

    def normalise(scores):
        if normaliser == "softmax":
            return torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
        return torch.relu(scores.masked_fill(future, 0.0)) / divisor
    return normalise


class NumpyStep:
    """A model's weights, their Adam moments, and `step(x, y)`.

    ``weights`` is the model's `state_dict()` (``layers.l.W_Q.weight`` ...),
    copied, so both implementations can start from the same numbers.
    """

    def __init__(self, state: dict, config: dict, lr: float = 1e-4, betas=(0.9, 0.95), eps: float = 1e-8):
        checks.open_state("NumpyStep", state)  # not a closed NpzFile
        missing = sorted({"width", "heads", "layers", "residual", "normaliser"} - set(config))
        if missing:
            raise ValueError(f"NumpyStep: the config lacks {', '.join(missing)} (pass the model's own: model.config)")
        lr = checks.positive_number("NumpyStep", "lr (the learning rate)", lr)  # as the optimizers check it
        self.width, self.heads, layers = (checks.integer("NumpyStep", f"config['{key}']", config[key])
                                          for key in ("width", "heads", "layers"))  # as the models check them
        self.residual = checks.flag("NumpyStep", "config['residual']", config["residual"])  # as build_model does
        self.normaliser = config["normaliser"]
        if self.normaliser not in ("softmax", "relu"):
            raise ValueError(f"NumpyStep: only 'softmax' and 'relu' are written by hand, got {self.normaliser!r}")
        betas, eps = checked_betas("NumpyStep", betas), checks.positive_number("NumpyStep", "eps", eps, allow_zero=True)
        self.lr, self.betas, self.eps, self.t = lr, betas, eps, 0  # (β = 1 would divide by 1 - β^t = 0, as in Adam)
        n, h = self.width, self.heads
        self.qkv, self.out, used = [], [], []  # per layer: (3, H, n, n) and (n, H*n); the state's keys read
        for layer in range(layers):
            prefix = f"layers.{layer}."
            for name, shape in [(f"W_{p}", (h * n, n)) for p in "QKV"] + [("W_O", (n, h * n))]:
                used.append(prefix + name + ".weight")
                weight = np.asarray(state.get(prefix + name + ".weight"))
                if weight.shape != shape:  # (a missing key has shape ())
                    raise ValueError(f"NumpyStep: {prefix}{name}.weight must have shape {shape} for the config's "
                                     f"width {n} and {h} heads, got {weight.shape}")
                if weight.dtype.kind != "f":  # Adam's moments take the weights' dtype: an int one fails at a step
                    raise TypeError(f"NumpyStep: the state's weights must be float arrays, got {weight.dtype} for "
                                    f"{prefix}{name}.weight")
            stacked = np.stack([state[prefix + f"W_{p}.weight"] for p in "QKV"])  # (3, H*n, n)
            self.qkv.append(np.ascontiguousarray(stacked.reshape(3, h, n, n)))  # row block h is head h
            self.out.append(np.array(state[prefix + "W_O.weight"]))
        checks.state_keys("NumpyStep", state, used, f" (config['layers'] is {layers}: a weight left over would not be "
                                                    f"trained; pass the model's own config, model.config)")
        self.params = self.qkv + self.out
        self.moments = [(np.zeros_like(p), np.zeros_like(p)) for p in self.params]

    # -- one layer ------------------------------------------------------------------------

    def _layer_forward(self, x: np.ndarray, qkv: np.ndarray, out: np.ndarray):
        batch, length, n = x.shape
        rows = x.reshape(1, batch * length, n)
        projected = rows @ qkv.reshape(3 * self.heads, n, n).transpose(0, 2, 1)  # (3H, B*L, n)
        projected = projected.reshape(3, self.heads, batch, length, n)
        queries, keys, values = projected  # each (H, B, L, n)
        scores = queries @ keys.transpose(0, 1, 3, 2)  # (H, B, L, L)
        future = np.triu(np.ones((length, length), dtype=bool), k=1)  # (L, L): True on keys k > i
        weights, normaliser_backward = NORMALISERS[self.normaliser](scores, future)
        heads_out = weights @ values  # (H, B, L, n)
        joined = heads_out.transpose(1, 2, 0, 3).reshape(batch * length, self.heads * n)  # (B*L, H*n)
        update = (joined @ out.T).reshape(batch, length, n)
        return update, (rows, projected, weights, joined, normaliser_backward)

    def _layer_backward(self, grad_update, cache, qkv, out, need_grad_x: bool = True):
        rows, projected, weights, joined, normaliser_backward = cache
        queries, keys, values = projected
        heads, batch, length, n = queries.shape
        grad_rows = grad_update.reshape(batch * length, n)
        grad_out = grad_rows.T @ joined  # (n, H*n)
        grad_heads = (grad_rows @ out).reshape(batch, length, heads, n).transpose(2, 0, 1, 3)  # (H, B, L, n)
        grad_projected = np.empty_like(projected)  # (3, H, B, L, n)
        np.matmul(weights.transpose(0, 1, 3, 2), grad_heads, out=grad_projected[2])  # dV = Aᵀ dO
        grad_scores = normaliser_backward(grad_heads @ values.transpose(0, 1, 3, 2))  # dA = dO Vᵀ in, dS out
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
        if np.ndim(x) != 3 or np.shape(x)[-1] != self.width:
            raise ValueError(f"NumpyStep: x must have shape (B, L, {self.width}), got {np.shape(x)}")
        caches = []
        for qkv, out in zip(self.qkv, self.out):
            update, cache = self._layer_forward(x, qkv, out)
            caches.append(cache)
            x = x + update if self.residual else update
        return x, caches

    def step(self, x: np.ndarray, y: np.ndarray) -> float:
        """Forward, backward and Adam on one batch; returns the loss."""
        if np.shape(y) != np.shape(x):
            raise ValueError(f"NumpyStep.step: y must have x's shape {np.shape(x)}, got {np.shape(y)}")
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

    def state_dict(self) -> dict:
        """The weights under the names `minitorch.paper.models` uses."""
        n, h = self.width, self.heads
        state = {}
        for layer, (qkv, out) in enumerate(zip(self.qkv, self.out)):
            for index, name in enumerate("QKV"):
                state[f"layers.{layer}.W_{name}.weight"] = qkv[index].reshape(h * n, n).copy()
            state[f"layers.{layer}.W_O.weight"] = out.copy()
        return state
