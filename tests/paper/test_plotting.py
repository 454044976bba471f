"""Specification of minitorch.paper.plotting: the figures' content and conventions."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from PIL import Image  # noqa: E402  (Pillow comes with matplotlib)

from minitorch.outputs import PathError  # noqa: E402
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


@pytest.mark.parametrize("stop_at_frame", [0, 2], ids=["before the first frame", "half-way"])
def test_an_animation_stopped_by_ctrl_c_leaves_the_earlier_one_whole(tmp_path, monkeypatch, stop_at_frame):
    """Ctrl-C half-way must not leave a GIF of 1-2 frames in place of a good one, nor, before the first frame,
    turn into matplotlib's IndexError: the old file stays, and the interruption is the KeyboardInterrupt."""
    from matplotlib.animation import PillowWriter

    run = [(step, np.full((1, 1, 4, 4), step / 10)) for step in range(0, 10, 2)]
    path = plotting.attention_animation({"a": run}, tmp_path / "movie.gif", fps=5)
    before = path.read_bytes()
    grab, grabbed = PillowWriter.grab_frame, []

    def interrupted(writer, **options):
        if len(grabbed) == stop_at_frame:
            raise KeyboardInterrupt
        grabbed.append(1)
        grab(writer, **options)

    monkeypatch.setattr(PillowWriter, "grab_frame", interrupted)
    with pytest.raises(KeyboardInterrupt):
        plotting.attention_animation({"a": run}, path, fps=5)
    assert path.read_bytes() == before, "the earlier animation was replaced by part of one"
    assert [entry.name for entry in tmp_path.iterdir()] == ["movie.gif"], "a temporary file was left"


def test_sink_forming_figure_draws_the_curves_and_snapshots(tmp_path):
    history = dict(step=[0, 10, 20], bos_mass_mean=[0.1, 0.5, 0.99], bos_mass_min=[0.0, 0.3, 0.98],
                   trigger_content=[0.12, 0.14, 0.14])
    snapshots = [(s, np.zeros((1, 1, 16, 16))) for s in (0, 10, 20)]
    fig = plotting.sink_forming_figure(history, snapshots, "title", compare=history)
    assert len(fig.axes) == 1 + 3, "one curve panel and one heat map per snapshot"
    plotting.save(fig, tmp_path / "sink.png")


def _one_animation_frame():
    return [(0, np.eye(4)[None, None])]  # (step, weights (layers, H, L, L))


@pytest.mark.parametrize("call,error,culprit", [  # named by the function, not by Python's or matplotlib's messages
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
    (lambda folder: plotting.attention_animation({"a": [np.ones((4, 4)) / 4]}, folder / "a.gif"), TypeError,
     r"attention_animation: snapshot_sets\['a'\] must be a list of \(step, weights\) pairs"),
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
    (lambda folder: plotting.log_law_figure([{"length": 8}]), ValueError,  # not Python's KeyError 'content_keys'
     r"log_law_figure: law\[0\] must be one length's run .*without content_keys, gap, bound, delta"),
    (lambda folder: plotting.price_of_a_sink_figure([{}]), ValueError,  # not Python's KeyError 'normaliser'
     r"price_of_a_sink_figure: zoo\[0\] must be one normaliser's run .*without normaliser, trajectory"),
    (lambda folder: plotting.price_of_a_sink_figure([{"normaliser": "relu", "trajectory": {}}]), ValueError,
     r"price_of_a_sink_figure: zoo\[0\]\['trajectory'\] must be the run's trajectory, .*without bos_mass_mean"),
    (lambda folder: plotting.single_layer_figure(np.ones((2, 4, 4)), "relu"), TypeError,  # not NumPy's words
     r"single_layer_figure: relu_weights must be numbers, got 'relu'"),
    (lambda folder: plotting.single_layer_figure(np.ones((2, 4, 4)), np.ones(4)), ValueError,
     r"single_layer_figure: relu_weights must be one head's attention on B sequences, .*got shape \(4,\)"),
    (lambda folder: plotting.head_grid_figure([np.array([[["a"]]])], "t"), TypeError,
     r"head_grid_figure: per_layer_weights\[0\] must be numbers"),
], ids=["save-none", "save-an-array", "grid-of-no-layer", "grid-of-a-2-d-map", "grid-of-ragged-layers",
        "grid-of-an-array", "animation-of-no-panel", "animation-of-maps-not-pairs", "animation-fps-0",
        "animation-fps-negative", "animation-fps-a-string", "family-empty", "family-without-bos-mass", "family-ragged",
        "log-law-without-keys", "price-without-keys", "price-trajectory-without-keys", "fig3-of-a-string",
        "fig3-of-a-vector", "grid-of-strings"])
def test_the_figure_functions_name_a_bad_argument_before_drawing_or_writing(call, error, culprit, tmp_path):
    figures_before = plotting.plt.get_fignums()
    with pytest.raises(error, match=culprit):
        call(tmp_path)
    assert list(tmp_path.iterdir()) == [], "a refused figure must write nothing"
    assert plotting.plt.get_fignums() == figures_before, "a refused figure must leave no figure open"


_FAMILY = dict(scale=np.array([1.0, 2.0]), worst_case_error=np.array([0.5, 0.3]), bos_mass_min=np.array([0.2, 0.4]))
_LAW_RUN = {"length": 8, "content_keys": [1, 2], "gap": [1.0, 2.0], "bound": [1.0, 2.0], "delta": [0.1, 0.1]}
_TRAJECTORY = {"bos_mass_mean": [0.1, 0.2], "max_error": [1.0, 0.5], "non_trigger_max_error": [1.0, 0.5]}


@pytest.mark.parametrize("call, error, culprit", [  # not matplotlib's shapes, a KeyError or "'float' object ..."
    (lambda: plotting.log_law_figure([{**_LAW_RUN, "gap": [1.0]}]), ValueError,
     r"log_law_figure: law\[0\]\['gap'\] has 1 value\(s\), where law\[0\]\['content_keys'\] has 2; the fields "
     r"content_keys, gap, bound, delta must have one length"),
    (lambda: plotting.log_law_figure([_LAW_RUN, {**_LAW_RUN, "delta": 0.1}]), TypeError,
     r"log_law_figure: law\[1\]\['delta'\] must be a non-empty list of numbers, got 0.1 \(float\)"),
    (lambda: plotting.log_law_figure([{**_LAW_RUN, "content_keys": [0, 2]}]), ValueError,
     r"log_law_figure: law\[0\]\['content_keys'\] must be a list of integers >= 1, got 0 in \[0, 2\]"),
    (lambda: plotting.log_law_figure([{**_LAW_RUN, "bound": ["a", "b"]}]), TypeError,
     r"log_law_figure: law\[0\]\['bound'\] must be numbers, got \['a', 'b'\]"),
    (lambda: plotting.price_of_a_sink_figure([{"normaliser": "relu",
                                                "trajectory": {**_TRAJECTORY, "max_error": [1.0]}}]), ValueError,
     r"price_of_a_sink_figure: zoo\[0\]\['trajectory'\]\['max_error'\] has 1 value\(s\), where "
     r"zoo\[0\]\['trajectory'\]\['bos_mass_mean'\] has 2"),
    (lambda: plotting.price_of_a_sink_figure([{"normaliser": "relu",
                                                "trajectory": {**_TRAJECTORY, "bos_mass_mean": 0.1}}]),
     TypeError, r"zoo\[0\]\['trajectory'\]\['bos_mass_mean'\] must be a non-empty list of numbers, got 0.1"),
    (lambda: plotting.seeds_figure([{"seed": 0, "steps": 5, "sinking_share_per_layer": 0.5}]), TypeError,
     r"seeds_figure: seed_runs\[0\]\['sinking_share_per_layer'\] must be a non-empty list of numbers, got 0.5"),
    (lambda: plotting.seeds_figure([{"seed": 0, "steps": 5, "sinking_share_per_layer": [1.0, 0.5]},
                                    {"seed": 1, "steps": 5, "sinking_share_per_layer": [1.0]}]), ValueError,
     r"seeds_figure: every seed's sinking_share_per_layer must hold one share per layer .*got lengths \[2, 1\]"),
    (lambda: plotting.seeds_figure([{"seed": 0, "steps": "5", "sinking_share_per_layer": [1.0]}]), TypeError,
     r"seeds_figure: seed_runs\[0\]\['steps'\] must be a finite number, got '5'"),
    (lambda: plotting.zoo_mass_figure([{"normaliser": "relu", "bos": [0.1, 0.2], "content": 0.2, "nowhere": 0.1}]),
     TypeError, r"zoo_mass_figure: zoo\[0\]\['bos'\] must be a finite number, got \[0.1, 0.2\]"),
    (lambda: plotting.plot_error_vs_bos_mass(_FAMILY, trained=[{"bos_mass_min": 2.0}]), ValueError,
     r"plot_error_vs_bos_mass: trained\[0\] must be one trained model's point, .*got \{'bos_mass_min': 2.0\} "
     r"without label, worst_case_error"),
    (lambda: plotting.plot_error_vs_bos_mass(_FAMILY, trained=[{"label": "a", "worst_case_error": -0.1,
                                                                "bos_mass_min": 0.5}]), ValueError,
     r"trained\[0\]\['worst_case_error'\] must be a finite number >= 0, got -0.1"),
    (lambda: plotting.plot_error_vs_bos_mass(_FAMILY, trained=[{"label": "a", "worst_case_error": 0.1,
                                                                "bos_mass_min": "0.5"}]), TypeError,
     r"trained\[0\]\['bos_mass_min'\] must be a finite number >= 0, got '0.5'"),
    (lambda: plotting.plot_error_vs_bos_mass(_FAMILY, trained={"label": "a"}), TypeError,
     r"plot_error_vs_bos_mass: trained must be a list of dicts.*\(dict\)"),
    (lambda: plotting.plot_error_vs_bos_mass(_FAMILY, trained=[{"label": "a", "worst_case_error": 0.1,
                                                                "bos_mass_min": 1.5}]), ValueError,
     r"trained\[0\]\['bos_mass_min'\] must be at most 1 for a point Theorem 1 covers .*got 1.5"),
    (lambda: plotting.plot_error_vs_bos_mass(_FAMILY, trained=[{"label": "a", "worst_case_error": 0.1,
                                                                "bos_mass_min": 0.5, "covered": "no"}]), TypeError,
     r"trained\[0\]\['covered'\] must be True or False, got 'no'"),
    (lambda: plotting.plot_error_vs_bos_mass({**_FAMILY, "worst_case_error": ["0.5", "0.3"]}), TypeError,
     r"plot_error_vs_bos_mass: family\['worst_case_error'\] must be numbers, got \['0.5', '0.3'\]"),
], ids=["log-law-gap-shorter", "log-law-delta-a-number", "log-law-zero-keys", "log-law-bound-of-strings",
        "price-trajectory-ragged", "price-trajectory-of-numbers", "seeds-share-a-number", "seeds-of-unequal-depth",
        "seeds-steps-a-string", "zoo-mass-a-list", "trained-without-error", "trained-negative-error",
        "trained-mass-a-string", "trained-a-dict", "trained-covered-mass-above-one", "trained-covered-a-string",
        "family-errors-of-strings"])
def test_the_figure_functions_name_a_field_that_is_not_what_they_draw(call, error, culprit):
    figures_before = plotting.plt.get_fignums()
    with pytest.raises(error, match=culprit):
        call()
    assert plotting.plt.get_fignums() == figures_before, "a refused figure must leave no figure open"


def test_error_vs_bos_mass_draws_an_uncovered_bos_mass_above_one_on_the_log_panels_edge():
    """A ReLU head's BOS mass may exceed 1 (a covered, softmax point's may not); 1 - mass <= 0 has no place on
    the log axis, so the marker sits on its bottom edge instead of vanishing below it."""
    fig = plotting.plot_error_vs_bos_mass(_FAMILY, trained=[{"label": "relu", "worst_case_error": 0.1,
                                                             "bos_mass_min": 1.5, "covered": False}])
    right = fig.axes[1]
    (marker,) = [line for line in right.get_lines() if line.get_label() == "relu"]
    assert marker.get_ydata()[0] == right.get_ylim()[0], \
        f"a BOS mass above 1 must be drawn on the right panel's bottom edge {right.get_ylim()[0]}, " \
        f"got {marker.get_ydata()[0]}"
    plotting.plt.close(fig)


@pytest.mark.parametrize("make_axes", [lambda: plotting.plt.subplots()[1], lambda: plotting.plt.subplots(1, 3)[1]],
                         ids=["one-axes", "three-axes"])
def test_error_vs_bos_mass_names_axes_that_are_not_a_pair(make_axes):
    axes = make_axes()  # unchecked, one Axes gave Python's "'Axes' object is not subscriptable"
    with pytest.raises(TypeError, match=r"plot_error_vs_bos_mass: axes must be a pair of matplotlib Axes"):
        plotting.plot_error_vs_bos_mass(_FAMILY, axes=axes)
    plotting.plt.close(np.ravel(axes)[0].figure)


def test_a_figure_saved_by_its_path_argument_goes_through_save(tmp_path):
    """path= creates the parent folders and refuses what `save` refuses, like `plotting.save`, and the figure
    comes back open."""
    path = tmp_path / "new folder" / "ü.png"
    figure = plotting.plot_error_vs_bos_mass(_FAMILY, path=path)
    assert figure.number in plotting.plt.get_fignums(), "the figure returned after path= must still be open"
    plotting.plt.close(figure)
    with Image.open(path) as image:
        assert image.format == "PNG", f"{path} should hold a PNG image"
    assert [entry.name for entry in path.parent.iterdir()] == ["ü.png"], "only the image, no temporary file left"
    figures_before = plotting.plt.get_fignums()
    with pytest.raises(ValueError, match=r"save: path .*figure' must end in an image format's extension"):
        plotting.plot_error_vs_bos_mass(_FAMILY, path=tmp_path / "figure")
    assert plotting.plt.get_fignums() == figures_before, "a refused path must leave no figure open"


def _open_figure():
    return plotting.plt.figure(figsize=(1, 1))


@pytest.mark.parametrize("name, error, culprit", [  # unchecked, matplotlib wrote name + '.png' and save returned name
    ("figure", ValueError, r"save: path '.*figure' must end in an image format's extension \(.*png.*\); without "
                           r"one matplotlib would write"),
    ("figure.", ValueError, r"save: path '.*figure\.' must end in an image format's extension"),
    ("figure.txt", ValueError, r"save: path '.*figure\.txt' must end in an image format's extension"),
    ("existing-folder", IsADirectoryError, r"save: path '.*existing-folder' is a folder; give the image file's name"),
    ("folder.png", IsADirectoryError, r"save: path '.*folder\.png' is a folder"),
    ("keep.png/", PathError, r"save: path '.*keep\.png/': names a folder \(it ends with '/'\), not a file"),
], ids=["no-extension", "a-bare-dot", "not-an-image", "an-existing-folder", "a-folder-named-like-an-image",
        "a-name-ending-in-a-slash"])
def test_save_refuses_a_path_matplotlib_would_not_write_as_given(name, error, culprit, tmp_path):
    (tmp_path / "existing-folder").mkdir()
    (tmp_path / "folder.png").mkdir()
    (tmp_path / "keep.png").write_bytes(b"an earlier figure")
    before = sorted(tmp_path.rglob("*"))
    fig = _open_figure()
    with pytest.raises(error, match=culprit):
        plotting.save(fig, f"{tmp_path}/{name}")
    plotting.plt.close(fig)
    assert sorted(tmp_path.rglob("*")) == before, "a refused save must write nothing"
    assert (tmp_path / "keep.png").read_bytes() == b"an earlier figure", "a refused save replaced a file"


@pytest.mark.parametrize("backend", ["pdf", "svg"])
def test_save_writes_every_format_whatever_backend_mplbackend_names(backend, tmp_path):
    """Under MPLBACKEND=pdf, reproduce trained both models, then save refused fig3_single_layer.png as if '.png' were
    no image format: it asked the figure's canvas, which knows only its backend's formats."""
    import os
    import subprocess
    import sys

    from bad_input_helpers import ROOT

    code = ("import sys\nfrom minitorch.paper import plotting\n"
            "for name in sys.argv[1:]:\n    plotting.save(plotting.plt.figure(figsize=(1, 1)), name)\n")
    names = [str(tmp_path / name) for name in ("figure.png", "figure.svg", "figure.pdf")]
    run = subprocess.run([sys.executable, "-c", code, *names], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "MPLBACKEND": backend, "PYTHONPATH": str(ROOT)})
    assert run.returncode == 0, f"MPLBACKEND={backend}: save refused a format matplotlib writes:\n{run.stderr}"
    with Image.open(tmp_path / "figure.png") as image:
        assert image.format == "PNG", f"MPLBACKEND={backend}: figure.png holds no PNG image"


@pytest.mark.parametrize("name", ["figure.png", "figure.PNG", "figure.svg", "figure.pdf", "a/b/figure.jpg"])
def test_save_returns_the_file_it_wrote(name, tmp_path):
    written = plotting.save(_open_figure(), tmp_path / name)
    assert written == tmp_path / name and written.is_file(), f"save must write {name}, the path it returns"
    assert sorted(path.name for path in tmp_path.rglob("*") if path.is_file()) == [written.name], "one file only"


def test_save_returns_the_file_it_wrote_for_a_path_in_the_home_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))  # '~' is this folder
    written = plotting.save(_open_figure(), "~/figure.png")
    assert written == tmp_path / "figure.png" and written.is_file(), \
        f"save('~/figure.png') must return the file it wrote in the home folder, got {written}"


@pytest.mark.parametrize("close", ["no", 0, None, "False"])
def test_save_names_a_close_flag_that_is_not_true_or_false(close, tmp_path):
    fig = _open_figure()  # unchecked, 'no' counted as true and the figure was closed
    with pytest.raises(TypeError, match=r"save: close must be True or False, got"):
        plotting.save(fig, tmp_path / "figure.png", close=close)
    assert fig.number in plotting.plt.get_fignums(), "a refused save must leave the figure open"
    plotting.plt.close(fig)
    assert list(tmp_path.iterdir()) == [], "a refused save must write nothing"


@pytest.mark.parametrize("make_parent", [  # not mkdir's FileExistsError: [Errno 17] File exists: '/dev/full'
    lambda folder: folder / "a-file",
    lambda folder: folder / "a-file" / "below",
], ids=["a-file", "a-folder-below-a-file"])
def test_save_names_a_parent_that_is_not_a_folder(make_parent, tmp_path):
    (tmp_path / "a-file").write_text("not a folder")
    fig = _open_figure()
    with pytest.raises(NotADirectoryError, match=r"save: path '.*figure\.png' lies inside '.*a-file', which is not "
                                                 r"a folder"):
        plotting.save(fig, make_parent(tmp_path) / "figure.png")
    plotting.plt.close(fig)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a-file"], "a refused save must create nothing"


def test_save_names_a_parent_that_is_a_device():
    fig = _open_figure()
    with pytest.raises(NotADirectoryError, match=r"lies inside '/dev/null', which is not a folder"):
        plotting.save(fig, "/dev/null/figure.png")
    plotting.plt.close(fig)


@pytest.mark.parametrize("dpi, error", [  # not matplotlib's "can't multiply sequence by non-int"
    ("high", TypeError), (None, TypeError), (True, TypeError), (0, ValueError), (-110, ValueError),
    (float("nan"), ValueError), (float("inf"), ValueError)])
def test_save_names_a_dpi_that_is_not_a_positive_number(dpi, error, tmp_path):
    fig = _open_figure()
    with pytest.raises(error, match=r"save: dpi must be a finite number > 0, got"):
        plotting.save(fig, tmp_path / "figure.png", dpi=dpi)
    plotting.plt.close(fig)
    assert list(tmp_path.iterdir()) == [], "a refused save must write nothing"


def test_save_refuses_a_dpi_whose_image_would_not_fit_in_memory_before_drawing(tmp_path):
    fig = _open_figure()  # unchecked, dpi=10**6 reaches Agg, which dies of std::bad_alloc
    with pytest.raises(MemoryError, match=r"save: the image at dpi=1e\+06 of shape .* would need .* GiB"):
        plotting.save(fig, tmp_path / "figure.png", dpi=10**6)
    plotting.plt.close(fig)
    assert list(tmp_path.iterdir()) == [], "a refused save must write nothing"


def test_an_animation_that_runs_out_of_memory_in_pillow_says_so(tmp_path, monkeypatch):
    from matplotlib.animation import PillowWriter

    def out_of_memory(*args, **kwargs):  # what Pillow's quantizer raises when its allocation fails
        raise ValueError("quantization error")

    monkeypatch.setattr(PillowWriter, "finish", out_of_memory)
    with pytest.raises(MemoryError, match=r"attention_animation: Pillow ran out of memory"):
        plotting.attention_animation({"a": _one_animation_frame()}, tmp_path / "a.gif")
    assert list(tmp_path.iterdir()) == [], "nothing may be written"


_HISTORY = {"step": [0, 10], "bos_mass_mean": [0.1, 0.5], "bos_mass_min": [0.0, 0.4], "trigger_content": [0.1, 0.2]}


@pytest.mark.parametrize("call, error, culprit", [  # not Python's KeyError: 'step' or 'sinking_share...'
    (lambda: plotting.sink_forming_figure({}, [], "t"), ValueError,
     r"sink_forming_figure: history must be TrainingResult.history, a dict with keys step, .*; got \{\} without "
     r"step, bos_mass_mean, bos_mass_min, trigger_content"),
    (lambda: plotting.sink_forming_figure({"step": [0]}, [], "t"), ValueError,
     r"history .* without bos_mass_mean, bos_mass_min, trigger_content"),
    (lambda: plotting.sink_forming_figure([0, 1], [], "t"), TypeError, r"history must be .*got \[0, 1\] \(list\)"),
    (lambda: plotting.sink_forming_figure(_HISTORY, [], "t", compare={"step": [0]}), ValueError,
     r"sink_forming_figure: compare must be another history, .* without bos_mass_mean"),
    (lambda: plotting.sink_forming_figure(_HISTORY, [(0, np.zeros((4, 4)))], "t"), TypeError,
     r"sink_forming_figure: snapshots\[0\] must be a pair \(step, weights \(layers, H, L, L\)\)"),
    (lambda: plotting.sink_forming_figure(_HISTORY, np.zeros((2, 4)), "t"), TypeError,
     r"sink_forming_figure: snapshots must be a list of \(step, weights\) pairs"),
    (lambda: plotting.sink_forming_figure({**_HISTORY, "bos_mass_mean": [0.1]}, [], "t"), ValueError,
     r"sink_forming_figure: history\['bos_mass_mean'\] has 1 value\(s\), where history\['step'\] has 2"),
    (lambda: plotting.sink_forming_figure({**_HISTORY, "trigger_content": ["a", "b"]}, [], "t"), TypeError,
     r"sink_forming_figure: history\['trigger_content'\] must be numbers, got \['a', 'b'\]"),
    (lambda: plotting.sink_forming_figure(_HISTORY, [], "t", compare={"step": 5, "bos_mass_mean": 0.5}), TypeError,
     r"sink_forming_figure: compare\['step'\] must be a non-empty list of numbers, got 5 \(int\)"),
    (lambda: plotting.seeds_figure([{"x": 1}]), ValueError,
     r"seeds_figure: seed_runs\[0\] must be one seed's result .*; got \{'x': 1\} without seed, steps, "
     r"sinking_share_per_layer"),
    (lambda: plotting.seeds_figure([{"seed": 0, "steps": 5, "sinking_share_per_layer": [0.5]}, {"seed": 1}]),
     ValueError, r"seed_runs\[1\] .* without steps, sinking_share_per_layer"),
    (lambda: plotting.seeds_figure([]), ValueError, r"seeds_figure: seed_runs must be a non-empty list of dicts"),
    (lambda: plotting.seeds_figure({"seed": 0}), TypeError, r"seed_runs must be a non-empty list .*\(dict\)"),
], ids=["history-empty", "history-without-masses", "history-a-list", "compare-without-mass", "snapshot-a-2-d-map",
        "snapshots-an-array", "history-of-unequal-lengths", "history-of-strings", "compare-of-numbers",
        "seed-run-without-keys", "second-seed-run-without-keys", "no-seed-run",
        "seed-runs-a-dict"])
def test_the_training_figures_name_a_record_without_what_they_draw(call, error, culprit):
    figures_before = plotting.plt.get_fignums()
    with pytest.raises(error, match=culprit):
        call()
    assert plotting.plt.get_fignums() == figures_before, "a refused figure must leave no figure open"


@pytest.mark.parametrize("ax", [None, "ax", np.zeros((2, 2)), "figure"],
                         ids=["none", "a-string", "an-array", "a-figure"])
def test_attention_heatmap_names_an_ax_that_is_no_axes(ax):  # not Python's "'NoneType' has no attribute 'imshow'"
    figures_before = plotting.plt.get_fignums()
    ax = plotting.plt.figure() if isinstance(ax, str) and ax == "figure" else ax
    try:
        with pytest.raises(TypeError, match=r"attention_heatmap: ax must be a matplotlib Axes to draw on, e.g\. "
                                            r"fig, ax = plt\.subplots\(\); got (NoneType|str|ndarray|Figure)$"):
            plotting.attention_heatmap(ax, np.eye(4))
    finally:
        if isinstance(ax, plotting.plt.Figure):
            plotting.plt.close(ax)
    assert plotting.plt.get_fignums() == figures_before


@pytest.mark.parametrize("zoo, error, culprit", [  # not a KeyError: 'normaliser' that does not name zoo
    ([{}], ValueError, r"zoo\[0\] must be one run of beyond\.train_zoo_normaliser, a dict with keys normaliser, "
                       r"mean_map; got \{\} without normaliser, mean_map"),
    ([{"normaliser": "softmax"}], ValueError, r"zoo\[0\] .*without mean_map"),
    ([{"normaliser": "softmax", "mean_map": np.eye(4).tolist()}, {"mean_map": []}], ValueError,
     r"zoo\[1\] .*without normaliser"),
    ([], ValueError, r"zoo must be a non-empty list of dicts"),
    ({"normaliser": "softmax", "mean_map": []}, TypeError, r"zoo must be a non-empty list of dicts.*\(dict\)"),
    (["softmax"], TypeError, r"zoo\[0\] must be one run .*\(str\)"),
], ids=["an-empty-run", "no-map", "a-second-run-without-its-name", "no-run", "one-run-not-in-a-list", "a-name"])
def test_zoo_maps_figure_names_a_run_without_the_keys_it_reads(zoo, error, culprit):
    figures_before = plotting.plt.get_fignums()
    with pytest.raises(error, match=rf"zoo_maps_figure: {culprit}"):
        plotting.zoo_maps_figure(zoo)
    assert plotting.plt.get_fignums() == figures_before, "a refused figure must leave no figure open"


@pytest.mark.parametrize("zoo", [[{}], [{"normaliser": "softmax", "bos": 0.9, "content": 0.1}]],
                         ids=["empty", "no-nowhere"])
def test_zoo_mass_figure_names_a_run_without_the_keys_it_reads(zoo):
    """Like zoo_maps_figure: a run without a key it reads is named, not left to Python's KeyError."""
    figures_before = plotting.plt.get_fignums()
    with pytest.raises(ValueError, match=r"zoo_mass_figure: zoo\[0\] must be one run of beyond\."):
        plotting.zoo_mass_figure(zoo)
    assert plotting.plt.get_fignums() == figures_before, "a refused figure must leave no figure open"



@pytest.mark.parametrize("name, fps, culprit", [
    ("anim.mp4", 5, r"must end in \.gif"),  # else GIF data under the .mp4 name, mode 0600, no word
    ("anim.gif", 1e-9, r"fps must lie in 0\.01\.\.100"),  # not Pillow's OverflowError
])
def test_an_animation_names_a_path_or_a_rate_a_gif_cannot_have(tmp_path, name, fps, culprit):
    with pytest.raises(ValueError, match=rf"attention_animation: .*{culprit}"):
        plotting.attention_animation({"a": _one_animation_frame()}, tmp_path / name, fps=fps)
    assert list(tmp_path.iterdir()) == [], "nothing may be written"


def test_an_animation_is_readable_as_any_new_file_is(tmp_path):
    import os
    import stat

    path = plotting.attention_animation({"a": _one_animation_frame()}, tmp_path / "a.gif")
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask, "the GIF kept its temporary file's mode 0600"


def _history_of_two_heads(verdicts):
    """A history whose two heads have the mean BOS masses `verdicts`, one pair per record, every 100 steps."""
    return {"step": [100 * record for record in range(len(verdicts))],
            "head_bos_mass": [[[first, second]] for first, second in verdicts]}  # (records, 1 layer, 2 heads)


def test_head_split_settles_at_the_last_record_where_a_head_crossed_the_threshold():
    history = _history_of_two_heads([(0.1, 0.1), (0.95, 0.2), (0.8, 0.3), (0.97, 0.5), (0.99, 0.6)])
    assert plotting.head_split_settled(history) == 300, \
        "head 1 crosses 0.9 last between steps 200 and 300: the split is settled from step 300 on"
    assert plotting.head_split_settled(_history_of_two_heads([(0.1, 0.2), (0.5, 0.6)])) == 0, \
        "no head ever crosses the threshold: the split is settled from the first record"


def test_a_history_whose_steps_are_not_in_training_order_is_refused():
    """Two histories joined (steps 0, 100, 0, 100) settled 'at step 100' where the head sank at the 4th record."""
    joined = _history_of_two_heads([(0.1, 0.1), (0.95, 0.2), (0.1, 0.1), (0.95, 0.2)])
    joined["step"] = [0, 100, 0, 100]
    with pytest.raises(ValueError, match=r"^head_split_settled: the steps of history are not in training order"):
        plotting.head_split_settled(joined)


def test_head_bos_mass_figure_draws_one_line_per_head_coloured_by_its_final_verdict():
    history = _history_of_two_heads([(0.1, 0.1), (0.95, 0.2), (0.99, 0.3)])
    figure = plotting.head_bos_mass_figure({"two heads": history, "again": history})
    assert len(figure.axes) == 2, "one panel per model"
    lines = [line for line in figure.axes[0].lines if len(line.get_xdata()) == 3]  # the heads' curves
    assert [matplotlib.colors.to_hex(line.get_color()) for line in lines] == ["#d62728", "#1f77b4"], \
        "the head that ends above 0.9 is red (tab:red), the other blue (tab:blue)"
    assert "200" in figure.axes[0].get_title(), "the title names the step the split settled at"
    plotting.plt.close(figure)


@pytest.mark.parametrize("call, culprit", [
    (lambda: plotting.head_bos_mass_figure({}), r"head_bos_mass_figure: histories is empty"),  # gridspec's words
    (lambda: plotting.head_split_settled({"step": [0, 50], "head_bos_mass": []}),  # NumPy's reshape words
     r"head_split_settled: history must hold at least one record.*got 2 step\(s\) and head_bos_mass of shape \(0,\)"),
    (lambda: plotting.head_split_settled({"step": [0], "head_bos_mass": [[[0.1]], [[0.2]]]}),
     r"head_split_settled: history must hold .*got 1 step\(s\) and head_bos_mass of shape \(2, 1, 1\)"),
    (lambda: plotting.head_bos_mass_figure({"m": {"step": [0, 50], "head_bos_mass": [[[0.1]], [[0.2, 0.3]]]}}),
     r"head_bos_mass_figure: histories\['m'\] must hold .*head_bos_mass not an array of numbers"),
], ids=["no-histories", "no-records", "more-records-than-steps", "ragged-heads"])
def test_the_head_figures_name_a_history_without_records_or_with_steps_and_records_that_differ(call, culprit):
    with pytest.raises(ValueError, match=culprit):
        call()


def test_error_vs_bos_mass_draws_a_bar_from_the_measured_error_to_a_proved_upper_bound():
    family = dict(scale=np.array([1.0, 2.0]), worst_case_error=np.array([0.5, 0.3]), bos_mass_min=np.array([0.2, 0.4]))
    point = dict(label="relu", worst_case_error=0.05, worst_case_error_upper=0.07, bos_mass_min=0.0, covered=False)
    figure = plotting.plot_error_vs_bos_mass(family, [point])
    bars = [line for line in figure.axes[0].lines if list(line.get_xdata()) == [0.05, 0.07]]
    assert bars, "a point with a proved upper bound gets a bar from δ̂ to the bound"
    arrows = [text for text in figure.axes[0].texts if getattr(text, "arrow_patch", None) is not None]
    assert not arrows, "no arrow: the true point lies on the bar"
    plotting.plt.close(figure)


def test_an_animation_of_a_diverged_run_names_the_snapshot_that_is_not_finite(tmp_path):
    weights = np.zeros((1, 1, 4, 4))
    weights[..., 1, 0] = np.nan
    with pytest.raises(ValueError, match=r"snapshot_sets\['a'\]\[1\] \(step 5\) holds nan or inf") as refusal:
        plotting.attention_animation({"a": [(0, np.zeros((1, 1, 4, 4))), (5, weights)]}, tmp_path / "nan.gif")
    assert not (tmp_path / "nan.gif").exists(), f"a map of nan must be refused, not drawn blank: {refusal.value}"


_SNAPSHOTS = [(step, np.zeros((1, 1, 4, 4))) for step in (0, 10)]


@pytest.mark.parametrize("call, culprit", [
    (lambda: plotting.sink_forming_figure({key: value * 2 for key, value in _HISTORY.items()}, _SNAPSHOTS, "t"),
     r"sink_forming_figure: the steps of history are not in training order .*got \[0, 10, 0, 10\]"),
    (lambda: plotting.sink_forming_figure({**_HISTORY, "step": [10, 0]}, _SNAPSHOTS, "t"),
     r"sink_forming_figure: the steps of history are not in training order"),
    (lambda: plotting.sink_forming_figure(_HISTORY, _SNAPSHOTS, "t", compare={**_HISTORY, "step": [10, 0]}),
     r"sink_forming_figure: the steps of compare are not in training order"),
    (lambda: plotting.sink_forming_figure(_HISTORY, _SNAPSHOTS * 2, "t"),
     r"sink_forming_figure: the steps of snapshots are not in training order .*got \[0, 10, 0, 10\]"),
    (lambda: plotting.attention_animation({"a": _SNAPSHOTS[::-1]}, "unwritten.gif"),
     r"attention_animation: the steps of snapshot_sets\['a'\] are not in training order"),
], ids=["histories-joined", "history-reversed", "compare-reversed", "snapshots-joined", "animation-reversed"])
def test_the_training_figures_refuse_steps_out_of_training_order_as_the_head_figures_do(call, culprit):
    """Two histories joined (training further restarts at step 0) drew one curve running back to step 0."""
    figures_before = plotting.plt.get_fignums()
    with pytest.raises(ValueError, match=culprit):
        call()
    assert plotting.plt.get_fignums() == figures_before, "a refused figure must leave no figure open"


@pytest.mark.parametrize("count, error", [(-2, ValueError), (2.5, TypeError)])
def test_sink_forming_figure_names_a_snapshot_count_that_is_no_count(count, error):
    with pytest.raises(error, match=rf"^sink_forming_figure: snapshot_count must be an integer >= 0, got {count}"):
        plotting.sink_forming_figure(_HISTORY, _SNAPSHOTS, "t", snapshot_count=count)  # not np.linspace's words
    figure = plotting.sink_forming_figure(_HISTORY, _SNAPSHOTS, "t", snapshot_count=0)
    assert len(figure.axes) == 1, "snapshot_count=0 draws the curves and no snapshot"
    plotting.plt.close(figure)


def test_heatmap_draws_weights_above_one_beyond_the_scale_not_as_one():
    """A ReLU weight of 5 was drawn in the colour of 1, under a colour bar ending at 1, without a word."""
    fig, ax = plotting.plt.subplots()
    image = plotting.attention_heatmap(ax, np.full((3, 3), 5.0))
    assert image.get_clim() == (0.0, 1.0), "the scale stays 0..1, so that maps compare by eye"
    assert image.cmap(image.norm(5.0)) != image.cmap(image.norm(1.0)), "a weight of 5 must not look like 1"
    assert image.colorbar.extend == "max", "the colour bar ends in a tip of the colour of weights above 1"
    plotting.plt.close(fig)
    fig, ax = plotting.plt.subplots()
    assert plotting.attention_heatmap(ax, np.eye(3)).colorbar.extend == "neither", \
        "a map of weights in 0..1 gets a plain colour bar"
    plotting.plt.close(fig)


@pytest.mark.parametrize("call, culprit", [
    (lambda: plotting.attention_heatmap(plotting.plt.subplots()[1], np.zeros((0, 0))),
     r"attention_heatmap: expected an \(L, L\) map with L >= 1, got shape \(0, 0\)"),
    (lambda: plotting.attention_heatmap(plotting.plt.subplots()[1], np.full((2, 2), np.inf)),
     r"attention_heatmap: weights hold inf \(did the run diverge\?\)"),
    (lambda: plotting.head_grid_figure([np.full((1, 4, 4), np.inf)], "t"),
     r"head_grid_figure: per_layer_weights\[0\] holds nan or inf attention weights \(did the run diverge\?\)"),
    (lambda: plotting.head_grid_figure([np.eye(4)[None], np.full((1, 4, 4), np.nan)], "t"),
     r"head_grid_figure: per_layer_weights\[1\] holds nan or inf"),
    (lambda: plotting.single_layer_figure(np.ones((2, 4, 4)) / 4, np.full((2, 4, 4), np.nan)),
     r"single_layer_figure: relu_weights holds nan or inf"),
], ids=["empty-map", "heatmap-of-inf", "grid-of-inf", "grid-of-nan", "fig3-of-nan"])
def test_the_map_figures_refuse_a_map_they_cannot_draw_as_the_animation_does(call, culprit):
    """A map of inf was drawn in the colour of 1 in every cell, and an empty one as an empty axes with matplotlib's
    warnings, without a word of ours."""
    with pytest.raises(ValueError, match=culprit):
        call()
    plotting.plt.close("all")


def test_attention_heatmap_takes_colour_bar_as_true_or_false_only():
    """colour_bar='no' drew a colour bar: any non-empty string is true."""
    fig, ax = plotting.plt.subplots()
    with pytest.raises(TypeError, match=r"^attention_heatmap: colour_bar must be True or False, got 'no' \(str\)"):
        plotting.attention_heatmap(ax, np.eye(3), colour_bar="no")
    assert len(fig.axes) == 1, "a refused call drew a colour bar"
    plotting.plt.close(fig)


def test_error_vs_bos_mass_refuses_an_upper_bound_below_the_measured_error():
    point = dict(label="a", worst_case_error=0.1, bos_mass_min=0.5, worst_case_error_upper=0.05)
    with pytest.raises(ValueError, match=r"^plot_error_vs_bos_mass: trained\[0\]\['worst_case_error_upper'\] 0.05 "
                                         r"is below its worst_case_error 0.1"):
        plotting.plot_error_vs_bos_mass(_FAMILY, [point])  # it drew a bar pointing left


def test_head_split_settled_refuses_a_bos_mass_that_is_no_number():
    """A diverged run's nan counted as 'not sinking', so the split 'changed' at its step."""
    history = {"step": [0, 5], "head_bos_mass": [[[0.95]], [[np.nan]]]}
    with pytest.raises(ValueError, match=r"^head_split_settled: history\['head_bos_mass'\] at step 5 holds nan"):
        plotting.head_split_settled(history)


def test_an_animation_writes_nothing_beside_its_path_and_removes_what_a_killed_one_left(tmp_path, monkeypatch):
    """A SIGTERM left an empty hidden .movie.gif.writing-*.gif beside the GIF, which no later run removed: the GIF
    is written in a scratch folder, and one that no process holds any more is deleted by the next animation."""
    from matplotlib.animation import PillowWriter

    scratch_parent = tmp_path / "tmp"
    (scratch_parent / "minitorch-animation-abcd1234").mkdir(parents=True)  # as a killed animation leaves it
    monkeypatch.setattr("tempfile.tempdir", str(scratch_parent))
    out, seen = tmp_path / "out", []
    out.mkdir()
    grab = PillowWriter.grab_frame

    def looking(writer, **options):
        seen.append(sorted(entry.name for entry in out.iterdir()))
        grab(writer, **options)

    monkeypatch.setattr(PillowWriter, "grab_frame", looking)
    plotting.attention_animation({"a": _SNAPSHOTS}, out / "movie.gif")
    assert seen and all(names == [] for names in seen), f"files beside the GIF while it was written: {seen}"
    assert list(scratch_parent.iterdir()) == [], "the scratch folder a killed animation left must be deleted"
