"""Beyond the paper (chapter 10): each figure takes the lists `minitorch.paper.beyond` returns (results.json)."""

from __future__ import annotations

import numpy as np

from minitorch import checks
from minitorch.paper.plotting.attention_maps import attention_heatmap, scale_bar
from minitorch.paper.plotting.canvas import plt


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
    for index, run in enumerate(zoo):
        for key in ("bos", "content", "nowhere"):  # a mean mass: one number per run
            checks.finite_number("zoo_mass_figure", f"zoo[{index}][{key!r}]", run[key])
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
    scale_bar(fig, image, [run["mean_map"] for run in first.values()], ax=axes[0].tolist(), fraction=0.02, pad=0.01)
    return fig


def log_law_figure(law: list[dict]) -> plt.Figure:
    """The BOS score gap and its bound: row by row (left) and across sequence lengths (right)."""
    checks.records("log_law_figure", "law", law, ("length", "content_keys", "gap", "bound", "delta"),
                   "one length's run (train_at_length)")
    rows_of = [_law_rows(index, run) for index, run in enumerate(law)]
    fig, (rows, lengths) = plt.subplots(1, 2, figsize=(12, 4.4), constrained_layout=True)
    for index, (run, row) in enumerate(zip(law, rows_of)):
        colour = f"C{index}"
        rows.plot(np.log(row["content_keys"]), row["gap"], "o-", color=colour, markersize=3,
                  label=f"L = {run['length']}: gap")
        rows.plot(np.log(row["content_keys"]), row["bound"], ":", color=colour, label="bound at the row's own δ")
    rows.set_xlabel("log n  (n = i, the content keys row i sees)")
    rows.set_ylabel("s_i0 - mean_k s_ik  (mean over test sequences)")
    rows.set_title("Row by row: each model holds its gap and lets δ grow with n")
    rows.legend(fontsize=7, ncol=2, loc="center", bbox_to_anchor=(0.5, 0.66))
    last_n = np.array([row["content_keys"][-1] for row in rows_of])  # n = L - 1 at the last row
    lengths.plot(np.log(last_n), [row["gap"][-1] for row in rows_of], "o-", color="black", label="gap at the last row")
    lengths.plot(np.log(last_n), [row["bound"][-1] for row in rows_of], "s:", color="tab:red",
                 label="bound log n + log((1-δ)/δ) at that row's δ")
    for run, row, n in zip(law, rows_of, last_n):
        lengths.annotate(f"L = {run['length']}\nδ = {row['delta'][-1]:.1e}", (np.log(n), row["gap"][-1]),
                         textcoords="offset points", xytext=(8, -4), fontsize=7)
    lengths.set_xlabel("log n at the last row  (n = L - 1)")
    lengths.set_ylabel("s_i0 - mean_k s_ik")
    lengths.set_title("Across L: the trained lead grows with log n")
    lengths.legend(fontsize=8, loc="upper left")
    fig.suptitle("The log T law: BOS mass 1 - δ against n keys needs a score lead of log n + log((1-δ)/δ)")
    return fig


def _law_rows(index: int, run: dict) -> dict:
    """One length's per-row fields as arrays of one length, or an error naming the field; n (content_keys) counts
    keys, at least 1, since the figure draws against log n."""
    name = f"law[{index}]"
    rows = checks.columns("log_law_figure", name, run, ("content_keys", "gap", "bound", "delta"))
    checks.positions("log_law_figure", f"{name}['content_keys']", run["content_keys"])
    return rows


def seeds_figure(seed_runs: list[dict]) -> plt.Figure:
    """Share of sinking heads per layer over seeds (left) and steps to the stop (right)."""
    checks.records("seeds_figure", "seed_runs", seed_runs, ("seed", "steps", "sinking_share_per_layer"),
                   "one seed's result (beyond.train_seed_of_4x4)")
    shares = [checks.columns("seeds_figure", f"seed_runs[{index}]", run, ("sinking_share_per_layer",))
              ["sinking_share_per_layer"] for index, run in enumerate(seed_runs)]
    if len({len(row) for row in shares}) > 1:
        raise ValueError(f"seeds_figure: every seed's sinking_share_per_layer must hold one share per layer of the "
                         f"same model, got lengths {[len(row) for row in shares]}")
    for index, run in enumerate(seed_runs):
        checks.finite_number("seeds_figure", f"seed_runs[{index}]['steps']", run["steps"])
    shares = np.array(shares)  # (seeds, layers)
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
        name = f"zoo[{index}]['trajectory']"
        checks.record("price_of_a_sink_figure", name, run["trajectory"],
                      ("bos_mass_mean", "max_error", "non_trigger_max_error"), "the run's trajectory")
        checks.columns("price_of_a_sink_figure", name, run["trajectory"],
                       ("bos_mass_mean", "max_error", "non_trigger_max_error"))
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

