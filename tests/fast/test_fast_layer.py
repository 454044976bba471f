"""Specification of minitorch.fast.layer's two products: each is its readable composition, to the last bit,
and its gradient matches finite differences; the fused layer checks its input as the readable one does."""

from __future__ import annotations

import re

import numpy as np
import pytest

import minitorch
from minitorch.fast.layer import apply_output_blocks, project_blocks
from minitorch.gradcheck import gradcheck


def test_project_blocks_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    rows, W_Q, W_K = rng.normal(size=(5, 3)), rng.normal(size=(6, 3)), rng.normal(size=(3, 3))
    gradcheck(project_blocks, [rows, W_Q, W_K])


def test_apply_output_blocks_gradient_matches_finite_differences():
    rng = np.random.default_rng(1)
    heads_out, W_O = rng.normal(size=(2, 2, 4, 3)), rng.normal(size=(3, 6))  # (H, B, L, n), (n, H n)
    gradcheck(apply_output_blocks, [heads_out, W_O])


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_both_products_give_the_engines_composition_bit_for_bit(dtype):
    """The fast path's promise to `reproduce`: the same numbers as reshape, permute, matmul and sum."""
    rng = np.random.default_rng(2)
    heads, batch, length, n = 3, 2, 5, 4
    leaves = [minitorch.tensor(rng.normal(size=shape), requires_grad=True, dtype=dtype)
              for shape in [(batch * length, n), (heads * n, n), (heads * n, n), (n, heads * n)]]
    rows, W_Q, W_K, W_O = leaves
    grads = {}
    for path in ("fused", "composed"):
        if path == "fused":
            projected = project_blocks(rows, W_Q, W_K)
        else:
            stacked = minitorch.concatenate([W_Q, W_K])
            projected = rows @ stacked.reshape(2 * heads, n, n).transpose(-2, -1)
        heads_out = projected.reshape(2, heads, batch, length, n)[0] * projected.reshape(2, heads, batch, length, n)[1]
        if path == "fused":
            update = apply_output_blocks(heads_out, W_O)
        else:
            per_head = W_O.reshape(n, heads, n).permute(1, 2, 0)
            update = (heads_out.reshape(heads, batch * length, n) @ per_head).sum(axis=0).reshape(batch, length, n)
        update.backward(np.cos(np.arange(update.size, dtype=dtype)).reshape(update.shape))
        grads[path] = (update.data.copy(), [leaf.grad for leaf in leaves])
        for leaf in leaves:
            leaf.zero_grad()
    np.testing.assert_array_equal(grads["fused"][0], grads["composed"][0], err_msg="the products' values differ")
    for name, fused, composed in zip(["rows", "W_Q", "W_K", "W_O"], grads["fused"][1], grads["composed"][1]):
        np.testing.assert_array_equal(fused, composed, err_msg=f"the gradient of {name} differs from the composition's")


@pytest.mark.parametrize("call, culprit", [  # named, not left to NumPy's reshape and concatenate errors
    (lambda t: project_blocks(t(np.ones((2, 8))), t(np.ones((8, 4))), t(np.ones((7, 4)))),
     r"project_blocks: rows must be \(N, n\) and every weight \(m\*n, n\) .*\[\(8, 4\), \(7, 4\)\]"),
    (lambda t: project_blocks(t(np.ones((2, 8))), t(np.ones((8, 8))), t(np.ones((8, 7)))),
     r"project_blocks: .*\[\(8, 8\), \(8, 7\)\]"),
    (lambda t: apply_output_blocks(t(np.ones((2, 3, 4, 8))), t(np.ones((5, 8)))),
     r"apply_output_blocks: heads_out must be \(H, B, L, n\) and W_O \(n, H\*n\), got \(2, 3, 4, 8\) and \(5, 8\)"),
    (lambda t: project_blocks(t(np.ones((2, 3)))), r"project_blocks: give at least one weight"),
], ids=["project-weights-of-two-widths", "project-weights-not-of-n-columns", "output-weight-of-another-shape",
        "project-no-weights"])
def test_the_block_products_name_weights_of_the_wrong_shape(call, culprit):
    with pytest.raises(ValueError, match=culprit):
        call(minitorch.tensor)


@pytest.mark.parametrize("fused", [False, True], ids=["readable", "fused"])
@pytest.mark.parametrize("shape", [(3, 8), (2, 3, 7), (1, 2, 3, 8)], ids=["no-batch-axis", "width-7", "four-axes"])
def test_an_attention_layer_names_an_input_that_is_not_batch_positions_width(fused, shape):
    from minitorch import fast
    from minitorch.paper.models import build_model

    model = build_model(8, 1, 1, "softmax", False)
    layer = (fast.speed_up(model) if fused else model).layers[0]
    with pytest.raises(ValueError, match=rf"{type(layer).__name__}: x must have shape \(B, L, 8\) .*got "
                                         rf"{re.escape(str(shape))}"):
        layer(minitorch.tensor(np.ones(shape)))  # not 'not enough values to unpack (expected 3, got 2)'


@pytest.mark.parametrize("layer", [minitorch.nn.Linear(2, 2), None])
def test_a_fused_layer_takes_over_only_an_attention_layer(layer):
    """taking_over copies a layer's attributes: another module's were taken without a word, and the first call
    failed with "'FusedAttentionLayer' object has no attribute 'W_Q'"."""
    from minitorch.fast.layer import FusedAttentionLayer

    with pytest.raises(TypeError, match="taking_over: layer must be an AttentionLayer"):
        FusedAttentionLayer.taking_over(layer)
