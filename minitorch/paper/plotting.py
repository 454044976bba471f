"""Figures: Theorem 1 against trained models (chapter 05), attention heat maps, head grids, the sink forming
(chapters 07-09), beyond the paper (chapter 10).

Conventions follow the paper's figures: keys on the x axis, queries on the
y axis, positions labelled 1-based (BOS is position 1, the test trigger is
position 8), colour scale fixed to [0, 1] (ReLU weights above 1 saturate).
Every function returns a matplotlib Figure; `save` writes it to disk.
"""

from __future__ import annotations

import io
import math
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

try:
    import matplotlib
except ValueError as error:  # matplotlib reads MPLBACKEND at import: a name it does not know fails every command
    if not os.environ.get("MPLBACKEND") or "backend" not in str(error):
        raise
    print(f"minitorch: MPLBACKEND={os.environ.pop('MPLBACKEND')!r} is not a matplotlib backend; drawing with "
          f"'Agg' instead (the figures are files)", file=sys.stderr)
    for name in [name for name in sys.modules if name == "matplotlib" or name.startswith("matplotlib.")]:
        del sys.modules[name]  # what the failed import left half made
    import matplotlib

    matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 - after the backend is checked

from minitorch import checks  # noqa: E402
from minitorch.outputs import checked_path, given_path, temporary_prefix, write_atomically  # noqa: E402
from minitorch.paper.theory.bounds import TRAINING_TRIGGERS, theorem1_bos_lower_bound, trigger_separation

COLOUR_MAP = "viridis"


def plot_error_vs_bos_mass(family: dict, trained=None, triggers=TRAINING_TRIGGERS, path=None, axes=None):
    """Worst-case error against smallest BOS mass, with Theorem 1's forbidden region.

    family: the dict of `softmax_family`. trained: optional list of dicts with
    keys ``label``, ``worst_case_error``, ``bos_mass_min`` and optionally
    ``covered`` (True for single-layer single-head softmax models, the ones
    Theorem 1 speaks about; others are drawn hollow) and ``exact`` (True when
    ``worst_case_error`` is the true worst-case error δ, as for a construction
    whose δ is proved; by default it is a measured δ̂ ≤ δ, and an arrow from the
    marker to the right says that the true point lies at or right of it) and
    ``worst_case_error_upper`` (a proved upper bound on δ: a bar from δ̂ to it
    takes the arrow's place, the true point lies on it). Left panel: BOS mass on a
    linear axis; right panel: ``1 - BOS mass`` on a log axis, where the bound
    is the straight line ``2 δ / ε_0``. Returns the figure; saves it if `path`.
    """
    _check_family(family)
    if axes is None:
        figure, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    else:
        figure = axes[0].figure
    errors = np.asarray(family["worst_case_error"])
    bos = np.asarray(family["bos_mass_min"])
    trained = trained or []
    trained_errors = [point["worst_case_error"] for point in trained if point["worst_case_error"] > 0]
    all_errors = np.concatenate([errors[errors > 0], trained_errors])
    low = min(1e-12, all_errors.min() / 3) if all_errors.size else 1e-12
    grid = np.logspace(np.log10(low), 0.5, 400)
    bound = theorem1_bos_lower_bound(grid, triggers)
    epsilon0 = trigger_separation(triggers)
    left, right = axes
    left.fill_between(grid, 0, bound, color="tab:red", alpha=0.15, label="forbidden by Theorem 1")
    left.plot(grid, bound, color="tab:red", lw=1.5, label=r"bound $1 - 2\delta/\varepsilon_0$")
    right.fill_between(grid, np.minimum(2 * grid / epsilon0, 1.0), 1.0, color="tab:red", alpha=0.15,
                       label="forbidden by Theorem 1")
    right.plot(grid, np.minimum(2 * grid / epsilon0, 1.0), color="tab:red", lw=1.5,
               label=r"bound $2\delta/\varepsilon_0$")
    right.plot(grid, np.minimum(grid, 1.0), color="0.5", ls=":", lw=1, label=r"construction: $1-\min a_{i0}=\delta$")
    for ax, y in ((left, bos), (right, 1.0 - bos)):
        ax.plot(errors, y, "o-", color="tab:blue", ms=4, label="softmax construction (scale c)")
    for scale, error, mass in zip(family["scale"], errors, bos):
        if float(scale).is_integer() and int(scale) in (2, 5, 10, 20):
            label = dict(textcoords="offset points", fontsize=8)
            left.annotate(f"c={int(scale)}", (error, mass), xytext=(4, -12), **label)
            right.annotate(f"c={int(scale)}", (error, 1 - mass), xytext=(6, -10), **label)
    markers = iter(["*", "D", "s", "^", "v", "P", "X", "h"])
    for point in trained:
        marker = next(markers, "o")
        face = None if point.get("covered", True) else "none"
        for ax, y in ((left, point["bos_mass_min"]), (right, max(1.0 - point["bos_mass_min"], 1e-17))):
            ax.plot(point["worst_case_error"], y, marker, ms=10, color="tab:green", mfc=face, label=point["label"])
            upper = point.get("worst_case_error_upper", np.inf)
            if np.isfinite(upper):  # δ̂ <= δ <= upper: the true point lies on this bar
                ax.plot([point["worst_case_error"], upper], [y, y], "-|", color="tab:green", lw=1.5, ms=8)
            elif not point.get("exact", False) and point["worst_case_error"] > 0:  # δ̂ <= δ: the true δ is to the right
                ax.annotate("", xy=(point["worst_case_error"] * 6, y), xytext=(point["worst_case_error"], y),
                            arrowprops=dict(arrowstyle="->", color="tab:green", lw=1, alpha=0.7))
    if any(not point.get("exact", False) and not np.isfinite(point.get("worst_case_error_upper", np.inf))
           for point in trained):
        left.plot([], [], color="tab:green", marker=r"$\rightarrow$", ls="none", ms=10,
                  label=r"measured $\hat\delta \leq \delta$: the true point is at or right of the marker")
    if any(np.isfinite(point.get("worst_case_error_upper", np.inf)) for point in trained):
        left.plot([], [], "-|", color="tab:green", ms=8, label=r"$\hat\delta \leq \delta \leq$ a proved upper bound")
    left.set(xscale="log", ylim=(-0.02, 1.02),
             xlabel=r"worst-case error $\hat\delta$ (max $|\hat y - y|$, all $j \in J$)",
             ylabel=r"smallest BOS mass $\min a_{i0}$ (non-trigger rows)")
    right.set(xscale="log", yscale="log", ylim=(max(low, 1e-17), 2.0), xlabel=left.get_xlabel(),
              ylabel=r"$1 - \min a_{i0}$ (mass off BOS)")
    left.legend(fontsize=7, loc="center left")
    right.legend(fontsize=7, loc="lower right")
    figure.suptitle(rf"Theorem 1: small error forces a sink ($J = \{{{min(triggers)},\dots,{max(triggers)}\}}$, "
                    rf"$\varepsilon_0 = {epsilon0:.3f}$)", fontsize=10)
    figure.tight_layout()
    if path is not None:
        figure.savefig(path, dpi=130)
    return figure


FAMILY_KEYS = ("scale", "worst_case_error", "bos_mass_min")  # what plot_error_vs_bos_mass reads of a family


def _check_family(family) -> None:
    """A ValueError unless `family` holds the columns of `softmax_family` that the plot reads, one length each."""
    missing = [key for key in FAMILY_KEYS if key not in family] if isinstance(family, dict) else FAMILY_KEYS
    if missing:
        raise ValueError(f"plot_error_vs_bos_mass: family must be the dict of theory.softmax_family(scales), with "
                         f"keys {', '.join(FAMILY_KEYS)}; got {family!r:.60} without {', '.join(missing)}")
    lengths = {key: np.size(family[key]) for key in FAMILY_KEYS}
    if len(set(lengths.values())) != 1:
        raise ValueError(f"plot_error_vs_bos_mass: the family's columns must have one length (one entry per scale "
                         f"c), got {lengths}")


def attention_heatmap(ax, weights: np.ndarray, title: str = "", colour_bar: bool = True):
    """Draw one (L, L) attention map on `ax`; returns the image."""
    if not isinstance(ax, matplotlib.axes.Axes):
        raise TypeError(f"attention_heatmap: ax must be a matplotlib Axes to draw on, e.g. fig, ax = plt.subplots(); "
                        f"got {type(ax).__name__}")
    weights = checks.real_numbers("attention_heatmap", "weights", weights, finite=False)  # nan: a blank cell
    if weights.ndim != 2 or weights.shape[0] != weights.shape[1]:
        raise ValueError(f"attention_heatmap: expected an (L, L) map, got shape {weights.shape}")
    length = weights.shape[0]
    image = ax.imshow(weights, vmin=0.0, vmax=1.0, cmap=COLOUR_MAP)
    ticks = np.arange(0, length, 2 if length > 10 else 1)
    ax.set_xticks(ticks, [str(t + 1) for t in ticks], fontsize=7)
    ax.set_yticks(ticks, [str(t + 1) for t in ticks], fontsize=7)
    ax.set_xlabel("key position k (1-based)", fontsize=8)
    ax.set_ylabel("query position i (1-based)", fontsize=8)
    ax.set_title(title, fontsize=9)
    if colour_bar:
        ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    return image


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
    layers, heads = len(per_layer_weights), np.shape(per_layer_weights[0])[0]
    fig, axes = plt.subplots(layers, heads, figsize=(3.3 * heads, 3.0 * layers), squeeze=False,
                             constrained_layout=True)
    for layer, weights in enumerate(per_layer_weights):
        for head in range(heads):
            image = attention_heatmap(axes[layer, head], weights[head], f"layer {layer + 1}, head {head + 1}",
                                      colour_bar=False)
    fig.colorbar(image, ax=axes, fraction=0.02, pad=0.02)
    fig.suptitle(title, fontsize=11)
    return fig


def sink_forming_figure(history: dict, snapshots: list, title: str, compare: dict | None = None,
                        snapshot_count: int = 5) -> plt.Figure:
    """BOS mass against training step, with attention snapshots beneath.

    history: `TrainingResult.history`; snapshots: `TrainingResult.snapshots`
    (their first layer and head is shown). `compare`: another history (e.g.
    the ReLU model's) drawn dashed for contrast.
    """
    checks.record("sink_forming_figure", "history", history, HISTORY_KEYS, "TrainingResult.history")
    if compare is not None:
        checks.record("sink_forming_figure", "compare", compare, ("step", "bos_mass_mean"), "another history")
    _check_snapshots("sink_forming_figure", snapshots)
    picks = _spread(len(snapshots), snapshot_count)
    fig = plt.figure(figsize=(3.2 * max(len(picks), 3), 7.2), constrained_layout=True)
    grid = fig.add_gridspec(2, max(len(picks), 1), height_ratios=[1.1, 1])
    curve = fig.add_subplot(grid[0, :])
    curve.plot(history["step"], history["bos_mass_mean"], label="BOS mass at non-trigger rows (mean)")
    curve.plot(history["step"], history["bos_mass_min"], label="BOS mass at non-trigger rows (min)")
    curve.plot(history["step"], history["trigger_content"], label="trigger row: mean weight on keys 2..8")
    if compare is not None:
        curve.plot(compare["step"], compare["bos_mass_mean"], "--", color="grey", label="ReLU model: BOS mass (mean)")
    for index in picks:
        curve.axvline(snapshots[index][0], color="black", alpha=0.15)
    curve.set_xlabel("training step")
    curve.set_ylabel("attention weight")
    curve.set_ylim(-0.03, 1.03)
    curve.legend(fontsize=8, loc="center right")
    curve.set_title(title)
    for column, index in enumerate(picks):
        step, weights = snapshots[index]
        attention_heatmap(fig.add_subplot(grid[1, column]), weights[0, 0], f"step {step}", colour_bar=False)
    return fig


HISTORY_KEYS = ("step", "bos_mass_mean", "bos_mass_min", "trigger_content")  # what sink_forming_figure draws


def head_bos_mass_figure(histories: dict, sink_bos_mass: float = 0.9) -> plt.Figure:
    """Each head's mean BOS mass at the non-trigger rows against the training step, one panel per model.

    histories: {model name: `TrainingResult.history`}, each with ``head_bos_mass`` (per record, a list over layers
    of lists over heads). A line is red if its head ends at or above `sink_bos_mass` (it sinks, in the book's
    sense), blue if not; a dotted line marks the threshold, and each panel's title says the last step at which any
    head crossed it: from there on the split into sinking and non-sinking heads no longer changed.
    """
    checks.record("head_bos_mass_figure", "histories", histories, (), "a dict {model name: history}")
    for name, history in histories.items():
        checks.record("head_bos_mass_figure", f"histories[{name!r}]", history, ("step", "head_bos_mass"),
                      "TrainingResult.history")
    fig, axes = plt.subplots(1, len(histories), figsize=(6.2 * len(histories), 4.2), constrained_layout=True,
                             squeeze=False)
    for ax, (name, history) in zip(axes[0], histories.items()):
        steps = np.asarray(history["step"])
        per_head = np.asarray(history["head_bos_mass"], dtype=float)  # (records, layers, H)
        records, layers, heads = per_head.shape
        lines = per_head.reshape(records, layers * heads)  # (records, heads of all layers)
        for index in range(layers * heads):
            sinks = lines[-1, index] >= sink_bos_mass
            ax.plot(steps, lines[:, index], color="tab:red" if sinks else "tab:blue", alpha=0.75, linewidth=1.1)
        ax.axhline(sink_bos_mass, color="black", linestyle=":", linewidth=1)
        ax.plot([], [], color="tab:red", label=f"heads that end at or above {sink_bos_mass:g}")
        ax.plot([], [], color="tab:blue", label="heads that do not")
        settled = head_split_settled(history, sink_bos_mass)
        if settled:
            ax.axvline(settled, color="grey", alpha=0.5)
        ax.set_title(f"{name}: split settled at step {settled:,} of {int(steps[-1]):,}", fontsize=10)
        ax.set_xlabel("training step")
        ax.set_ylabel("mean BOS mass at non-trigger rows (probe set)")
        ax.set_ylim(-0.03, 1.03)
        ax.legend(fontsize=8, loc="center right")
    return fig


def head_split_settled(history: dict, sink_bos_mass: float = 0.9) -> int:
    """The first recorded step from which no head's verdict (mean BOS mass at least `sink_bos_mass`, or not)
    changes again to the end of training: 0 if none ever changes."""
    checks.record("head_split_settled", "history", history, ("step", "head_bos_mass"), "TrainingResult.history")
    per_head = np.asarray(history["head_bos_mass"], dtype=float)  # (records, layers, H)
    sinks = (per_head >= sink_bos_mass).reshape(len(per_head), -1)  # (records, heads)
    changed = np.nonzero((sinks[1:] != sinks[:-1]).any(axis=1))[0]  # record r -> r + 1 changed a verdict
    return int(history["step"][changed[-1] + 1]) if changed.size else int(history["step"][0])


def _check_snapshots(owner: str, snapshots, name: str = "snapshots") -> None:
    """A TypeError unless `snapshots` is a list of (step, weights (layers, H, L, L)) pairs, as `train` keeps."""
    for index, snapshot in enumerate(checks.snapshots(owner, name, snapshots)):
        if np.ndim(snapshot[1]) != 4:
            raise TypeError(f"{owner}: {name}[{index}] must be a pair (step, weights (layers, H, L, L)), got "
                            f"{snapshot!r:.60}")


def _spread(count: int, wanted: int) -> list[int]:
    """Up to `wanted` indices spread evenly over range(count), first and last included."""
    if count == 0:
        return []
    return sorted(set(np.linspace(0, count - 1, min(wanted, count)).round().astype(int).tolist()))


def attention_animation(snapshot_sets: dict, path, fps: int = 8) -> Path:
    """An animated GIF of attention maps through training (Pillow writer).

    snapshot_sets: {panel title: snapshots}; each panel shows its model's
    first layer and head. A model that stopped training earlier than the
    others keeps showing its last snapshot.
    """
    from matplotlib.animation import FuncAnimation, PillowWriter

    if not isinstance(snapshot_sets, dict) or not snapshot_sets:
        raise ValueError(f"attention_animation: snapshot_sets must be a non-empty dict {{panel title: snapshots}}, "
                         f"got {snapshot_sets!r:.60}")
    for title, snapshots in snapshot_sets.items():
        _check_snapshots("attention_animation", snapshots, f"snapshot_sets[{title!r}]")
    fps = checks.positive_number("attention_animation", "fps", fps)  # 0 frames a second: no frame ever ends
    if not 0.01 <= fps <= 100:  # a GIF's frame lasts a whole number of hundredths of a second, at most 65535
        raise ValueError(f"attention_animation: fps must lie in 0.01..100 (a GIF's frame lasts 10 ms to 655 s), "
                         f"got {fps:g}")
    path = checked_path(path, "attention_animation: path", file=True)
    if path.suffix.lower() != ".gif":  # the writer makes a GIF, whatever the name says
        raise ValueError(f"attention_animation: path {str(path)!r} must end in .gif: the animation is a GIF")
    titles = list(snapshot_sets)
    frames = max(len(s) for s in snapshot_sets.values())
    if min(len(s) for s in snapshot_sets.values()) == 0:
        raise ValueError("attention_animation: no snapshots to animate")
    fig, axes = plt.subplots(1, len(titles), figsize=(4.2 * len(titles), 4.2), squeeze=False,
                             constrained_layout=True)
    images = [attention_heatmap(ax, snapshot_sets[t][0][1][0, 0], t, colour_bar=False)
              for ax, t in zip(axes[0], titles)]
    fig.colorbar(images[-1], ax=axes[0].tolist(), fraction=0.03, pad=0.02)

    def draw(frame):
        for ax, image, title in zip(axes[0], images, titles):
            snapshots = snapshot_sets[title]
            step, weights = snapshots[min(frame, len(snapshots) - 1)]
            image.set_data(weights[0, 0])
            ax.set_title(f"{title}, step {step}" + (" (stopped)" if frame >= len(snapshots) - 1 else ""), fontsize=9)
        return images

    animation = FuncAnimation(fig, draw, frames=frames, blit=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=temporary_prefix(path, "writing"), suffix=".gif")
    os.close(handle)
    try:  # written aside, then moved into place: an earlier animation stays whole if this stops half-way
        try:
            animation.save(temporary, writer=PillowWriter(fps=fps))
        except Exception as error:
            if isinstance(error.__context__, KeyboardInterrupt):  # the writer failed closing a file Ctrl-C cut short
                raise KeyboardInterrupt from None
            if isinstance(error, ValueError) and str(error) == "quantization error":  # Pillow's words when the
                raise MemoryError("attention_animation: Pillow ran out of memory reducing a frame to a GIF's 256 "
                                  "colours ('quantization error')") from error  # C quantizer's allocation fails
            raise
        write_atomically(path, Path(temporary).read_bytes(), option="attention_animation: path")  # (its mode)
    finally:
        Path(temporary).unlink(missing_ok=True)
        plt.close(fig)
    return path


# ----------------------------------------------------------------------
# beyond the paper (chapter 10); each takes the lists `minitorch.paper.beyond` returns


def _by_normaliser(zoo: list[dict]) -> dict:
    grouped: dict = {}
    for run in zoo:
        grouped.setdefault(run["normaliser"], []).append(run)
    return grouped


def zoo_mass_figure(zoo: list[dict]) -> plt.Figure:
    """Where the mass of a non-trigger row goes, per normaliser: BOS, content keys, nowhere.

    Bars are means over seeds; dots are the seeds. "Nowhere" is 1 - Σ_k a_ik;
    it is negative when rows sum to more than 1.
    """
    checks.records("zoo_mass_figure", "zoo", zoo, ("normaliser", "bos", "content", "nowhere"),
                   "one run of beyond.train_zoo_normaliser")
    grouped = _by_normaliser(zoo)
    names = list(grouped)
    fig, ax = plt.subplots(figsize=(1.25 * len(names) + 2.5, 4.2), constrained_layout=True)
    parts = [("bos", "BOS (a sink)", "tab:red"), ("content", "content keys", "tab:blue"),
             ("nowhere", "nowhere (1 - row sum)", "tab:grey")]
    width = 0.26
    for offset, (key, label, colour) in zip((-width, 0.0, width), parts):
        means = [np.mean([run[key] for run in grouped[name]]) for name in names]
        ax.bar(np.arange(len(names)) + offset, means, width, label=label, color=colour, alpha=0.8)
        for index, name in enumerate(names):
            values = [run[key] for run in grouped[name]]
            ax.plot(np.full(len(values), index + offset), values, "k.", markersize=3)
    ax.axhline(0.0, color="black", linewidth=0.6)
    ax.set_xticks(np.arange(len(names)), names)
    ax.set_ylabel("mean attention mass at non-trigger rows")
    ax.set_title("Where the attention goes when the right output is 0 (1 layer x 1 head, test set)")
    ax.legend(fontsize=8)
    return fig


def zoo_maps_figure(zoo: list[dict]) -> plt.Figure:
    """The mean attention map of each normaliser's first seed (test set, trigger at 8)."""
    checks.records("zoo_maps_figure", "zoo", zoo, ("normaliser", "mean_map"), "one run of beyond.train_zoo_normaliser")
    first = {name: runs[0] for name, runs in _by_normaliser(zoo).items()}
    fig, axes = plt.subplots(1, len(first), figsize=(2.9 * len(first), 3.2), squeeze=False, constrained_layout=True)
    for ax, (name, run) in zip(axes[0], first.items()):
        image = attention_heatmap(ax, np.array(run["mean_map"]), name, colour_bar=False)
        ax.set_xlabel("key", fontsize=8)
        ax.set_ylabel("query", fontsize=8)
    fig.colorbar(image, ax=axes[0].tolist(), fraction=0.02, pad=0.01)
    return fig


def log_law_figure(law: list[dict]) -> plt.Figure:
    """The BOS score gap and its bound: row by row (left) and across sequence lengths (right)."""
    checks.records("log_law_figure", "law", law, ("length", "content_keys", "gap", "bound", "delta"),
                   "one length's run (train_at_length)")
    fig, (rows, lengths) = plt.subplots(1, 2, figsize=(12, 4.4), constrained_layout=True)
    for index, run in enumerate(law):
        n = np.array(run["content_keys"])
        colour = f"C{index}"
        rows.plot(np.log(n), run["gap"], "o-", color=colour, markersize=3, label=f"L = {run['length']}: gap")
        rows.plot(np.log(n), run["bound"], ":", color=colour, label="bound at the row's own δ")
    rows.set_xlabel("log n  (n = i, the content keys row i sees)")
    rows.set_ylabel("s_i0 - mean_k s_ik  (mean over test sequences)")
    rows.set_title("Row by row: each model holds its gap and lets δ grow with n")
    rows.legend(fontsize=7, ncol=2, loc="center", bbox_to_anchor=(0.5, 0.66))
    last_n = np.array([run["content_keys"][-1] for run in law])  # n = L - 1 at the last row
    lengths.plot(np.log(last_n), [run["gap"][-1] for run in law], "o-", color="black", label="gap at the last row")
    lengths.plot(np.log(last_n), [run["bound"][-1] for run in law], "s:", color="tab:red",
                 label="bound log n + log((1-δ)/δ) at that row's δ")
    for run, n in zip(law, last_n):
        lengths.annotate(f"L = {run['length']}\nδ = {run['delta'][-1]:.1e}", (np.log(n), run["gap"][-1]),
                         textcoords="offset points", xytext=(8, -4), fontsize=7)
    lengths.set_xlabel("log n at the last row  (n = L - 1)")
    lengths.set_ylabel("s_i0 - mean_k s_ik")
    lengths.set_title("Across L: the trained lead grows with log n")
    lengths.legend(fontsize=8, loc="upper left")
    fig.suptitle("The log T law: BOS mass 1 - δ against n keys needs a score lead of log n + log((1-δ)/δ)")
    return fig


def seeds_figure(seed_runs: list[dict]) -> plt.Figure:
    """Share of sinking heads per layer over seeds (left) and steps to the stop (right)."""
    checks.records("seeds_figure", "seed_runs", seed_runs, ("seed", "steps", "sinking_share_per_layer"),
                   "one seed's result (beyond.train_seed_of_4x4)")
    shares = np.array([run["sinking_share_per_layer"] for run in seed_runs])  # (seeds, layers)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8), constrained_layout=True)
    layers = np.arange(1, shares.shape[1] + 1)
    left.bar(layers, shares.mean(axis=0), color="tab:red", alpha=0.6, label="mean over seeds")
    jitter = np.linspace(-0.2, 0.2, len(seed_runs))
    for offset, row in zip(jitter, shares):
        left.plot(layers + offset, row, "k.", markersize=5)
    left.set_xticks(layers, [f"layer {layer}" for layer in layers])
    left.set_ylim(0, 1.05)
    left.set_ylabel("share of the 4 heads that sink")
    left.set_title(f"softmax 4x4 over {len(seed_runs)} seeds: which layers sink")
    left.legend(fontsize=8)
    steps = [run["steps"] for run in seed_runs]
    right.bar([str(run["seed"]) for run in seed_runs], steps, color="tab:blue", alpha=0.7)
    right.set_xlabel("seed")
    right.set_ylabel("steps to the early stop")
    right.set_title("steps to the stop, by seed")
    return fig


def price_of_a_sink_figure(zoo: list[dict]) -> plt.Figure:
    """Along training, error against BOS mass, one path per normaliser (its first seed).

    Left: the largest error anywhere on the probe set (the trigger row included:
    the error Theorem 1 is about). Right: the largest error at non-trigger rows,
    where the right output is 0 (small at step 0 too: an untrained head outputs
    almost nothing). A circle marks where each run stopped.
    """
    checks.records("price_of_a_sink_figure", "zoo", zoo, ("normaliser", "trajectory"),
                   "one normaliser's run (train_zoo_normaliser)")
    for index, run in enumerate(zoo):
        checks.record("price_of_a_sink_figure", f"zoo[{index}]['trajectory']", run["trajectory"],
                      ("bos_mass_mean", "max_error", "non_trigger_max_error"), "the run's trajectory")
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6), constrained_layout=True, sharex=True)
    for index, (name, runs) in enumerate(_by_normaliser(zoo).items()):
        path = runs[0]["trajectory"]
        for ax, key in zip(axes, ("max_error", "non_trigger_max_error")):
            ax.plot(path["bos_mass_mean"], path[key], "-", color=f"C{index}", alpha=0.8, label=name)
            ax.plot(path["bos_mass_mean"][-1], path[key][-1], "o", color=f"C{index}")
    for ax, what in zip(axes, ("max |error|, every row (probe set)", "max |error|, non-trigger rows (probe set)")):
        ax.set_yscale("log")
        ax.set_xlabel("mean BOS mass at non-trigger rows")
        ax.set_ylabel(what)
    axes[0].legend(fontsize=8)
    fig.suptitle("The price of a sink: along training, softmax-like heads lower their error only as BOS mass "
                 "grows; sink-free ones need not")
    return fig


def save(fig: plt.Figure, path, dpi: int = 110) -> Path:
    """Write `fig` to `path` (parent folders created) and close it; returns `path`, the file written.

    `path` must end in an image format's extension (.png, .pdf, .svg, ...): without one matplotlib would add
    .png and write another file than the one returned."""
    if not isinstance(fig, matplotlib.figure.Figure):
        raise TypeError(f"save: fig must be a matplotlib Figure (as the figure functions return), got "
                        f"{type(fig).__name__}")
    path = _image_path(fig, path)
    dpi = checks.positive_number("save", "dpi", dpi)
    width, height = fig.get_size_inches() * dpi
    if min(width, height) < 1:  # matplotlib would fail writing an empty image
        smallest = fig.get_size_inches().min()
        raise ValueError(f"save: dpi={dpi:g} makes a figure of {smallest:g} inches less than 1 pixel across; use a "
                         f"dpi of at least {math.ceil(1 / smallest)}")
    checks.memory("save", f"the image at dpi={dpi:g}", (math.ceil(height), math.ceil(width), 4), itemsize=1)
    image = io.BytesIO()
    fig.savefig(image, format=path.suffix.lower().lstrip("."), dpi=dpi)
    write_atomically(path, image.getvalue(), option="save: path")  # (an old figure stays whole if this stops)
    plt.close(fig)
    return path


def _image_path(fig: plt.Figure, path) -> Path:
    """`path` as a Path to an image file save can write, or an error naming it: an extension matplotlib knows,
    not an existing folder, and no parent that is a file or a device (mkdir's "File exists" said nothing)."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"save: path must be a file path such as 'figure.png', got {path!r:.80} "
                        f"({type(path).__name__})")
    path = given_path(path, "save: path", file=True)  # 'keep.png/' names a folder, though Path drops the slash
    formats = fig.canvas.get_supported_filetypes()  # {'png': 'Portable Network Graphics', ...}
    if path.is_dir():
        raise IsADirectoryError(f"save: path {str(path)!r} is a folder; give the image file's name, such as "
                                f"{str(path / 'figure.png')!r}")
    if path.suffix.lower().lstrip(".") not in formats:
        raise ValueError(f"save: path {str(path)!r} must end in an image format's extension ({', '.join(formats)}); "
                         f"without one matplotlib would write {str(path)!r} + '.png', not the path returned")
    parent = next(folder for folder in path.absolute().parents if folder.exists())  # the root exists
    if not parent.is_dir():
        raise NotADirectoryError(f"save: path {str(path)!r} lies inside {str(parent)!r}, which is not a folder")
    return path
