"""Attention maps: one (L, L) map as a heat map, the paper's Fig. 3 (mean and spread over the test set), and a grid
of every head of every layer (Figs. 4-8)."""

from __future__ import annotations

import numpy as np

from minitorch import checks
from minitorch.paper.plotting.canvas import matplotlib, plt

COLOUR_MAP = "viridis"
ABOVE_ONE = "tab:red"  # the colour of a weight above the scale's 1 (ReLU's or sigmoid's may be): never passed for 1
_COLOURS = matplotlib.colormaps[COLOUR_MAP].with_extremes(over=ABOVE_ONE)


def attention_heatmap(ax, weights: np.ndarray, title: str = "", colour_bar: bool = True):
    """Draw one (L, L) attention map on `ax` on the fixed scale 0..1, weights above 1 in `ABOVE_ONE`; returns the
    image."""
    if not isinstance(ax, matplotlib.axes.Axes):
        raise TypeError(f"attention_heatmap: ax must be a matplotlib Axes to draw on, e.g. fig, ax = plt.subplots(); "
                        f"got {type(ax).__name__}")
    weights = checks.real_numbers("attention_heatmap", "weights", weights, finite=False)  # nan: a blank cell
    colour_bar = checks.flag("attention_heatmap", "colour_bar", colour_bar)  # 'no' would draw one
    if weights.ndim != 2 or weights.shape[0] != weights.shape[1] or weights.size == 0:
        raise ValueError(f"attention_heatmap: expected an (L, L) map with L >= 1, got shape {weights.shape}")
    if np.isinf(weights).any():  # no weight is infinite: it would be drawn as the largest
        raise ValueError("attention_heatmap: weights hold inf (did the run diverge?); a weight is a finite number, "
                         "or nan for a blank cell")
    length = weights.shape[0]
    image = ax.imshow(weights, vmin=0.0, vmax=1.0, cmap=_COLOURS)
    ticks = np.arange(0, length, 2 if length > 10 else 1)
    ax.set_xticks(ticks, [str(t + 1) for t in ticks], fontsize=7)
    ax.set_yticks(ticks, [str(t + 1) for t in ticks], fontsize=7)
    ax.set_xlabel("key position k (1-based)", fontsize=8)
    ax.set_ylabel("query position i (1-based)", fontsize=8)
    ax.set_title(title, fontsize=9)
    if colour_bar:
        scale_bar(ax.figure, image, [weights], ax=ax, fraction=0.046, pad=0.04)
    return image


def scale_bar(figure, image, maps, **placement):
    """The colour bar of maps drawn by `attention_heatmap`, with a tip in `ABOVE_ONE` if any of `maps` holds a weight
    above 1. `placement`: as matplotlib's ``figure.colorbar``."""
    above = any((np.asarray(weights, dtype=float) > 1).any() for weights in maps)
    return figure.colorbar(image, extend="max" if above else "neither", **placement)


def check_finite_maps(owner: str, maps: dict, drawn: str) -> None:
    """A ValueError naming the first of `maps` ({name: weights}) that holds nan or inf (a run that diverged): `drawn`
    (the figure) would show those cells blank, or as the largest weight, without a word."""
    for name, weights in maps.items():
        if not np.isfinite(np.asarray(weights, dtype=float)).all():
            raise ValueError(f"{owner}: {name} holds nan or inf attention weights (did the run diverge?); {drawn} "
                             f"draws only finite weights")


def single_layer_figure(softmax_weights: np.ndarray, relu_weights: np.ndarray) -> plt.Figure:
    """The paper's Fig. 3: mean and std of the attention over the test set.

    Each argument: (B, L, L) or (B, 1, L, L), one single-head model's
    attention on the same B test sequences.
    """
    for name, weights in zip(("softmax_weights", "relu_weights"), (softmax_weights, relu_weights)):
        shape = checks.real_numbers("single_layer_figure", name, weights, finite=False).shape
        if len(shape) not in (2, 3, 4) or shape[-1] != shape[-2] or (len(shape) == 4 and shape[1] != 1) or 0 in shape:
            raise ValueError(f"single_layer_figure: {name} must be one head's attention on B sequences, (B, L, L) "
                             f"or (B, 1, L, L), got shape {shape}")
    check_finite_maps("single_layer_figure", {"softmax_weights": softmax_weights, "relu_weights": relu_weights},
                      "the figure")
    fig, axes = plt.subplots(1, 4, figsize=(16, 4.2), constrained_layout=True)
    panels = [("softmax", softmax_weights), ("ReLU", relu_weights)]
    for column, (name, weights) in enumerate(panels):
        weights = np.asarray(weights, dtype=float).reshape(-1, *np.shape(weights)[-2:])  # (B, L, L)
        attention_heatmap(axes[2 * column], weights.mean(axis=0),
                          f"({'ac'[column]}) {name}: mean over {len(weights)} sequences")
        attention_heatmap(axes[2 * column + 1], weights.std(axis=0), f"({'bd'[column]}) {name}: standard deviation")
    fig.suptitle("1 layer x 1 head, trigger at position 8", fontsize=11)
    return fig


def head_grid_figure(per_layer_weights, title: str) -> plt.Figure:
    """One heat map per (layer, head) for one sequence: Figs. 4-8.

    per_layer_weights: list over layers of (H, L, L) arrays.
    """
    is_list = isinstance(per_layer_weights, (list, tuple))
    shapes = [checks.real_numbers("head_grid_figure", f"per_layer_weights[{layer}]", weights, finite=False).shape
              for layer, weights in enumerate(per_layer_weights)] if is_list else []
    if not shapes or len(set(shapes)) != 1 or len(shapes[0]) != 3 or 0 in shapes[0]:
        got = f"shapes {shapes}" if is_list else type(per_layer_weights).__name__
        raise ValueError(f"head_grid_figure: per_layer_weights must be a non-empty list of (H, L, L) arrays of one "
                         f"shape, one per layer, got {got}")
    check_finite_maps("head_grid_figure", {f"per_layer_weights[{layer}]": weights
                                           for layer, weights in enumerate(per_layer_weights)}, "the figure")
    layers, heads = len(per_layer_weights), np.shape(per_layer_weights[0])[0]
    fig, axes = plt.subplots(layers, heads, figsize=(3.3 * heads, 3.0 * layers), squeeze=False,
                             constrained_layout=True)
    for layer, weights in enumerate(per_layer_weights):
        for head in range(heads):
            image = attention_heatmap(axes[layer, head], weights[head], f"layer {layer + 1}, head {head + 1}",
                                      colour_bar=False)
    scale_bar(fig, image, per_layer_weights, ax=axes, fraction=0.02, pad=0.02)
    fig.suptitle(title, fontsize=11)
    return fig


