"""Specification of minitorch.paper.plotting: the figures' content and conventions."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from PIL import Image  # noqa: E402  (Pillow comes with matplotlib)

from minitorch.paper import plotting  # noqa: E402

import causal_literals  # noqa: E402  (tests/causal_literals.py)


def _causal_average(length=16):
    weights = causal_literals.visible_keys(length).astype(float)
    return weights / weights.sum(axis=1, keepdims=True)


def test_heatmap_uses_a_fixed_zero_to_one_scale_and_one_based_labels():
    fig, ax = plotting.plt.subplots()
    image = plotting.attention_heatmap(ax, _causal_average() * 3)  # values above 1 must saturate, not rescale
    assert image.get_clim() == (0.0, 1.0)
    assert ax.get_xticklabels()[0].get_text() == "1", "positions are labelled 1-based, like the paper"
    plotting.plt.close(fig)


def test_heatmap_rejects_a_non_square_map():
    fig, ax = plotting.plt.subplots()
    with pytest.raises(ValueError, match=r"\(L, L\)"):
        plotting.attention_heatmap(ax, np.zeros((3, 4)))
    plotting.plt.close(fig)


def test_error_vs_bos_mass_draws_theorem_1s_bound_and_every_trained_model():
    from minitorch.paper.theory import trigger_separation

    family = dict(scale=np.array([0.0, 5.0]), worst_case_error=np.array([0.9, 0.1]), bos_mass_min=np.array([0.1, 0.9]))
    trained = [dict(label="softmax_1x1", worst_case_error=0.01, bos_mass_min=0.99, covered=True),
               dict(label="softmax_4x4", worst_case_error=0.003, bos_mass_min=0.02, covered=False)]
    fig = plotting.plot_error_vs_bos_mass(family, trained)
    left, right = fig.axes
    labels = [line.get_label() for line in left.get_lines()]
    assert "softmax_1x1" in labels and "softmax_4x4" in labels, f"every trained model gets a marker: {labels}"
    bound = next(line for line in right.get_lines() if "bound" in line.get_label())
    x, y = bound.get_data()
    small = x < trigger_separation() / 2
    np.testing.assert_allclose(y[small], 2 * x[small] / trigger_separation(), err_msg="the bound is 2 δ / ε_0")
    plotting.plt.close(fig)


def test_single_layer_figure_has_the_four_panels_of_fig_3(tmp_path):
    weights = np.stack([_causal_average()] * 5)  # (B, L, L)
    fig = plotting.single_layer_figure(weights, weights[:, None])
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert len(titles) == 4 and "mean" in titles[0] and "standard deviation" in titles[1]
    assert plotting.save(fig, tmp_path / "fig3.png").stat().st_size > 0


def test_head_grid_has_one_map_per_layer_and_head():
    fig = plotting.head_grid_figure([np.stack([_causal_average()] * 3)] * 2, "test")
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles == [f"layer {l} , head {h}".replace(" ,", ",") for l in (1, 2) for h in (1, 2, 3)]
    plotting.plt.close(fig)


def test_animation_writes_a_gif_with_one_frame_per_snapshot_of_the_longest_run(tmp_path):
    long_run = [(step, np.full((1, 1, 4, 4), step / 10)) for step in range(0, 10, 2)]  # 5 snapshots
    short_run = long_run[:3]
    path = plotting.attention_animation({"a": long_run, "b": short_run}, tmp_path / "movie.gif", fps=5)
    with Image.open(path) as gif:
        assert gif.n_frames == 5


def test_sink_forming_figure_draws_the_curves_and_snapshots(tmp_path):
    history = dict(step=[0, 10, 20], bos_mass_mean=[0.1, 0.5, 0.99], bos_mass_min=[0.0, 0.3, 0.98],
                   trigger_content=[0.12, 0.14, 0.14])
    snapshots = [(s, np.zeros((1, 1, 16, 16))) for s in (0, 10, 20)]
    fig = plotting.sink_forming_figure(history, snapshots, "title", compare=history)
    assert len(fig.axes) == 1 + 3, "one curve panel and one heat map per snapshot"
    plotting.save(fig, tmp_path / "sink.png")


def _one_animation_frame():
    return [(0, np.eye(4)[None, None])]  # (step, weights (layers, H, L, L))


@pytest.mark.parametrize("call,error,culprit", [  # L5-04, L5-07..10: Python's and matplotlib's messages before
    (lambda folder: plotting.save(None, folder / "p.png"), TypeError,
     r"save: fig must be a matplotlib Figure .*got NoneType"),
    (lambda folder: plotting.save(np.zeros((4, 4)), folder / "p.png"), TypeError, r"save: fig .*got ndarray"),
    (lambda folder: plotting.head_grid_figure([], "t"), ValueError,
     r"head_grid_figure: per_layer_weights must be a non-empty list of \(H, L, L\) arrays .*got shapes \[\]"),
    (lambda folder: plotting.head_grid_figure([np.zeros((4, 4))], "t"), ValueError, r"got shapes \[\(4, 4\)\]"),
    (lambda folder: plotting.head_grid_figure([np.zeros((2, 4, 4)), np.zeros((1, 4, 4))], "t"), ValueError,
     r"of one shape, one per layer, got shapes \[\(2, 4, 4\), \(1, 4, 4\)\]"),
    (lambda folder: plotting.head_grid_figure(np.zeros((1, 2, 4, 4)), "t"), ValueError, r"list .*got ndarray"),
    (lambda folder: plotting.attention_animation({}, folder / "a.gif"), ValueError,
     r"attention_animation: snapshot_sets must be a non-empty dict \{panel title: snapshots\}, got \{\}"),
    (lambda folder: plotting.attention_animation({"a": _one_animation_frame()}, folder / "a.gif", fps=0), ValueError,
     r"attention_animation: fps must be a finite number > 0, got 0"),
    (lambda folder: plotting.attention_animation({"a": _one_animation_frame()}, folder / "a.gif", fps=-8),
     ValueError, r"fps must be a finite number > 0, got -8"),
    (lambda folder: plotting.attention_animation({"a": _one_animation_frame()}, folder / "a.gif", fps="8"),
     TypeError, r"fps must be a finite number > 0, got '8'"),
    (lambda folder: plotting.plot_error_vs_bos_mass({}), ValueError,
     r"plot_error_vs_bos_mass: family must be the dict of theory.softmax_family\(scales\).*without scale, "
     r"worst_case_error, bos_mass_min"),
    (lambda folder: plotting.plot_error_vs_bos_mass({"scale": [1.0], "worst_case_error": [0.1]}), ValueError,
     r"without bos_mass_min"),
    (lambda folder: plotting.plot_error_vs_bos_mass({"scale": [1.0, 2.0], "worst_case_error": [0.1],
                                                     "bos_mass_min": [0.5]}), ValueError,
     r"the family's columns must have one length .*'scale': 2"),
], ids=["save-none", "save-an-array", "grid-of-no-layer", "grid-of-a-2-d-map", "grid-of-ragged-layers",
        "grid-of-an-array", "animation-of-no-panel", "animation-fps-0", "animation-fps-negative",
        "animation-fps-a-string", "family-empty", "family-without-bos-mass", "family-ragged"])
def test_the_figure_functions_name_a_bad_argument_before_drawing_or_writing(call, error, culprit, tmp_path):
    figures_before = plotting.plt.get_fignums()
    with pytest.raises(error, match=culprit):
        call(tmp_path)
    assert list(tmp_path.iterdir()) == [], "a refused figure must write nothing"
    assert plotting.plt.get_fignums() == figures_before, "a refused figure must leave no figure open"
