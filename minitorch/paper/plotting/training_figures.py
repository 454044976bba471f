"""The sink forming through training (chapters 07-09): BOS mass against the step with snapshots of the map beneath,
each head's BOS mass, and an animated GIF of the maps."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from minitorch import checks
from minitorch.outputs import checked_path, scratch_folder, write_atomically
from minitorch.paper.plotting.attention_maps import attention_heatmap, check_finite_maps, scale_bar
from minitorch.paper.plotting.canvas import plt


def sink_forming_figure(history: dict, snapshots: list, title: str, compare: dict | None = None,
                        snapshot_count: int = 5) -> plt.Figure:
    """BOS mass against training step, with attention snapshots beneath.

    history: `TrainingResult.history`; snapshots: `TrainingResult.snapshots`
    (their first layer and head is shown). `compare`: another history (e.g.
    the ReLU model's) drawn dashed for contrast.
    """
    checks.record("sink_forming_figure", "history", history, HISTORY_KEYS, "TrainingResult.history")
    checks.columns("sink_forming_figure", "history", history, HISTORY_KEYS)  # one number per record each
    _check_training_order("sink_forming_figure", "history", history["step"])
    if compare is not None:
        checks.record("sink_forming_figure", "compare", compare, ("step", "bos_mass_mean"), "another history")
        checks.columns("sink_forming_figure", "compare", compare, ("step", "bos_mass_mean"))
        _check_training_order("sink_forming_figure", "compare", compare["step"])
    _check_snapshots("sink_forming_figure", snapshots)
    snapshot_count = checks.integer("sink_forming_figure", "snapshot_count", snapshot_count, minimum=0)
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
    if not histories:
        raise ValueError("head_bos_mass_figure: histories is empty; give at least one model's, as {model name: "
                         "TrainingResult.history}")
    for name, history in histories.items():
        _head_history("head_bos_mass_figure", f"histories[{name!r}]", history)
    sink_bos_mass = _threshold("head_bos_mass_figure", sink_bos_mass)
    fig, axes = plt.subplots(1, len(histories), figsize=(6.2 * len(histories), 4.2), constrained_layout=True,
                             squeeze=False)
    for ax, (name, history) in zip(axes[0], histories.items()):
        steps, per_head = _head_history("head_bos_mass_figure", f"histories[{name!r}]", history)
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
    _, per_head = _head_history("head_split_settled", "history", history)  # (records, layers, H)
    sink_bos_mass = _threshold("head_split_settled", sink_bos_mass)
    sinks = (per_head >= sink_bos_mass).reshape(len(per_head), -1)  # (records, heads)
    changed = np.nonzero((sinks[1:] != sinks[:-1]).any(axis=1))[0]  # record r -> r + 1 changed a verdict
    return int(history["step"][changed[-1] + 1]) if changed.size else int(history["step"][0])


def _threshold(owner: str, sink_bos_mass) -> float:
    """`sink_bos_mass`, a BOS mass some head can reach and not every head has: a number in (0, 1]."""
    sink_bos_mass = checks.finite_number(owner, "sink_bos_mass", sink_bos_mass)
    if not 0 < sink_bos_mass <= 1:  # a BOS mass lies in [0, 1]: above 1 no head sinks, at 0 or below every head
        raise ValueError(f"{owner}: sink_bos_mass must be a number in (0, 1] (a BOS mass lies in [0, 1]), got "
                         f"{sink_bos_mass}")
    return sink_bos_mass


def _head_history(owner: str, name: str, history) -> tuple[np.ndarray, np.ndarray]:
    """A `TrainingResult.history`'s steps (records,) and mean BOS mass per head (records, layers, H), or an error
    naming `owner` and `name`: at least one record, and as many steps as records."""
    checks.record(owner, name, history, ("step", "head_bos_mass"), "TrainingResult.history")
    steps = np.asarray(history["step"])
    try:
        per_head = np.asarray(history["head_bos_mass"], dtype=float)  # (records, layers, H)
    except (TypeError, ValueError):  # ragged lists, or what is no number
        per_head = None
    if per_head is None or per_head.ndim != 3 or len(per_head) == 0 or steps.shape != (len(per_head),):
        shown = "not an array of numbers" if per_head is None else f"of shape {per_head.shape}"
        raise ValueError(f"{owner}: {name} must hold at least one record, each a step and its head_bos_mass (a list "
                         f"over layers of lists over heads); got {steps.size} step(s) and head_bos_mass {shown}")
    _check_training_order(owner, name, steps)
    if not np.isfinite(per_head).all():  # nan is no verdict: it would count as 'not sinking', without a word
        record = int(np.nonzero(~np.isfinite(per_head).reshape(len(per_head), -1).all(axis=1))[0][0])
        raise ValueError(f"{owner}: {name}['head_bos_mass'] at step {steps[record]} holds nan or inf (did the run "
                         f"diverge?)")
    return steps, per_head


def _check_training_order(owner: str, name: str, steps) -> None:
    """A ValueError unless the steps of `name` (a history's, or its snapshots') rise from each record to the next:
    two histories joined, or one reversed, would draw a curve running back in time, or settle 'at' a wrong step."""
    if not (np.diff(steps) > 0).all():
        raise ValueError(f"{owner}: the steps of {name} are not in training order (each record after the one "
                         f"before): got {np.asarray(steps).tolist()[:12]}")


def _check_snapshots(owner: str, snapshots, name: str = "snapshots") -> None:
    """A TypeError unless `snapshots` is a list of (step, weights (layers, H, L, L)) pairs, as `train` keeps, or a
    ValueError unless their steps are in training order."""
    for index, snapshot in enumerate(checks.snapshots(owner, name, snapshots)):
        if np.ndim(snapshot[1]) != 4:
            raise TypeError(f"{owner}: {name}[{index}] must be a pair (step, weights (layers, H, L, L)), got "
                            f"{snapshot!r:.60}")
    steps = [step for step, _ in snapshots]
    checks.real_numbers(owner, f"the steps of {name}", steps)
    _check_training_order(owner, name, steps)


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
    from matplotlib.animation import FuncAnimation

    if not isinstance(snapshot_sets, dict) or not snapshot_sets:
        raise ValueError(f"attention_animation: snapshot_sets must be a non-empty dict {{panel title: snapshots}}, "
                         f"got {snapshot_sets!r:.60}")
    for title, snapshots in snapshot_sets.items():
        _check_snapshots("attention_animation", snapshots, f"snapshot_sets[{title!r}]")
        check_finite_maps("attention_animation", {f"snapshot_sets[{title!r}][{index}] (step {step})": weights
                                                  for index, (step, weights) in enumerate(snapshots)}, "the animation")
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
    scale_bar(fig, images[-1], [weights[0, 0] for snapshots in snapshot_sets.values() for _, weights in snapshots],
              ax=axes[0].tolist(), fraction=0.03, pad=0.02)

    def draw(frame):
        for ax, image, title in zip(axes[0], images, titles):
            snapshots = snapshot_sets[title]
            step, weights = snapshots[min(frame, len(snapshots) - 1)]
            image.set_data(weights[0, 0])
            ax.set_title(f"{title}, step {step}" + (" (stopped)" if frame >= len(snapshots) - 1 else ""), fontsize=9)
        return images

    try:
        _write_gif(FuncAnimation(fig, draw, frames=frames, blit=False), path, fps)
    finally:
        plt.close(fig)
    return path


def _write_gif(animation, path: Path, fps: float) -> None:
    """Write `animation` as a GIF into a scratch folder, then move it into `path` whole (`write_atomically`): an
    earlier animation stays whole if this stops half-way, and what a SIGTERM or SIGKILL leaves in the scratch folder
    is deleted by the next animation (`scratch_folder`), not left hidden beside `path`."""
    from matplotlib.animation import PillowWriter

    with scratch_folder("minitorch-animation-") as scratch:
        try:
            animation.save(scratch / "animation.gif", writer=PillowWriter(fps=fps))
        except Exception as error:
            if isinstance(error.__context__, KeyboardInterrupt):  # the writer failed closing a file Ctrl-C cut short
                raise KeyboardInterrupt from None
            if isinstance(error, ValueError) and str(error) == "quantization error":  # Pillow's words when the
                raise MemoryError("attention_animation: Pillow ran out of memory reducing a frame to a GIF's 256 "
                                  "colours ('quantization error')") from error  # C quantizer's allocation fails
            raise
        write_atomically(path, (scratch / "animation.gif").read_bytes(), option="attention_animation: path")
