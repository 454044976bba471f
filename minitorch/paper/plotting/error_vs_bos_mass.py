"""Theorem 1 against trained models (chapter 05): worst-case error against the smallest BOS mass, with the region
the theorem forbids."""

from __future__ import annotations

import matplotlib.axes
import numpy as np

from minitorch import checks
from minitorch.paper.plotting.canvas import plt, save
from minitorch.paper.theory.bounds import TRAINING_TRIGGERS, theorem1_bos_lower_bound, trigger_separation


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
    is the straight line ``2 δ / ε_0`` (a BOS mass of 1 or more, which has no place there, is drawn on the
    bottom edge). A covered point's BOS mass is at most 1 (a softmax row's weights sum to 1); an uncovered one's
    may exceed it (ReLU's ``max(s, 0) / max(i, 1)`` has no upper bound). Returns the figure; saves it with
    `save` if `path` (parent folders created, the file replaced whole), leaving it open.
    """
    _check_family(family)
    trained = check_trained(trained)
    _check_axes(axes)
    own_figure = axes is None
    if own_figure:
        figure, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    else:
        figure = axes[0].figure
    errors = np.asarray(family["worst_case_error"])
    bos = np.asarray(family["bos_mass_min"])
    trained_errors = [point["worst_case_error"] for point in trained if point["worst_case_error"] > 0]
    all_errors = np.concatenate([errors[errors > 0], trained_errors])
    low = min(1e-12, all_errors.min() / 3) if all_errors.size else 1e-12
    grid = np.logspace(np.log10(low), 0.5, 400)
    bound = theorem1_bos_lower_bound(grid, triggers)
    epsilon0 = trigger_separation(triggers)
    bottom = max(low, 1e-17)  # the right panel's lowest 1 - BOS mass: a mass of 1 or more is drawn on this edge
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
        for ax, y in ((left, point["bos_mass_min"]), (right, max(1.0 - point["bos_mass_min"], bottom))):
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
    right.set(xscale="log", yscale="log", ylim=(bottom, 2.0), xlabel=left.get_xlabel(),
              ylabel=r"$1 - \min a_{i0}$ (mass off BOS)")
    left.legend(fontsize=7, loc="center left")
    right.legend(fontsize=7, loc="lower right")
    figure.suptitle(rf"Theorem 1: small error forces a sink ($J = \{{{min(triggers)},\dots,{max(triggers)}\}}$, "
                    rf"$\varepsilon_0 = {epsilon0:.3f}$)", fontsize=10)
    figure.tight_layout()
    if path is not None:
        try:
            save(figure, path, dpi=130, close=False)
        except BaseException:  # a path save refuses: no figure of ours is left open behind the error
            if own_figure:
                plt.close(figure)
            raise
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
    for key in FAMILY_KEYS:
        checks.real_numbers("plot_error_vs_bos_mass", f"family[{key!r}]", family[key], finite=False)  # nan: a gap


def _check_axes(axes) -> None:
    """A TypeError unless `axes` is None (the plot makes its own figure) or a pair of matplotlib Axes (left, right)."""
    pair = isinstance(axes, (list, tuple, np.ndarray)) and len(axes) == 2
    if axes is not None and not (pair and all(isinstance(ax, matplotlib.axes.Axes) for ax in axes)):
        raise TypeError(f"plot_error_vs_bos_mass: axes must be a pair of matplotlib Axes (the two panels), e.g. "
                        f"fig, axes = plt.subplots(1, 2), or None; got {axes!r:.80} ({type(axes).__name__})")


TRAINED_KEYS = ("label", "worst_case_error", "bos_mass_min")  # what plot_error_vs_bos_mass reads of a trained point


def check_trained(trained, owner: str = "plot_error_vs_bos_mass", names: list[str] | None = None) -> list:
    """`trained` (None for no points) as a list of points, each with the keys and numbers the plot reads, or an
    error naming the entry and the key: an error δ̂ >= 0, a BOS mass >= 0 (at most 1 if `covered`: a softmax
    row's weights sum to 1; an uncovered ReLU head's may exceed 1), a bound on δ >= δ̂ if given.
    A caller that read the points from a file gives `owner` and `names` (one per point) to name them as the file
    does (`reproduce.redraw_error_vs_bos_mass`: the results.json and the model), not as this function's argument."""
    if trained is None:
        return []
    trained = checks.records(owner, "trained", trained, TRAINED_KEYS, "one trained model's point", allow_empty=True)
    for index, point in enumerate(trained):
        name = f"trained[{index}]" if names is None else names[index]
        error = checks.positive_number(owner, f"{name}['worst_case_error']", point["worst_case_error"], allow_zero=True)
        mass = checks.positive_number(owner, f"{name}['bos_mass_min']", point["bos_mass_min"], allow_zero=True)
        covered = checks.flag(owner, f"{name}['covered']", point.get("covered", True))
        if covered and mass > 1:
            raise ValueError(f"{owner}: {name}['bos_mass_min'] must be at most 1 for a point Theorem 1 covers (a "
                             f"softmax row's weights sum to 1), got {mass!r}; a head whose BOS mass may exceed 1 "
                             f"(ReLU) is a point with covered=False")
        if point.get("worst_case_error_upper", np.inf) != np.inf:  # inf, or no key: no bound proved
            upper = checks.positive_number(owner, f"{name}['worst_case_error_upper']", point["worst_case_error_upper"],
                                           allow_zero=True)
            if upper < error:  # δ̂ <= δ <= upper: the bar would point left, from δ̂ to a bound it breaks
                raise ValueError(f"{owner}: {name}['worst_case_error_upper'] {upper!r} is below its worst_case_error "
                                 f"{error!r}; a proved upper bound on the error is at least the error measured")
    return trained
