"""The sink-forming scrubber of chapter 07: the numbers it embeds, its refusals, and (slow, where Chromium is
installed) a slider that really moves the maps in a browser with no kernel and no network."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess

import numpy as np
import pytest

from minitorch.paper.scrubber import bos_mass_at_non_trigger_rows, scrubber_data, sink_scrubber_html

L = 16


def _snapshots(bos_masses, every=20):
    """Snapshots (step, (1, 1, L, L)) whose non-trigger rows put the given mass on BOS, the rest on key 1."""
    snapshots = []
    for number, mass in enumerate(bos_masses):
        weights = np.zeros((1, 1, L, L))
        weights[0, 0, :, 0] = mass
        weights[0, 0, 1:, 1] = 1 - mass
        weights[0, 0, 0, 0] = 1.0
        snapshots.append((number * every, weights))
    return snapshots


def test_the_data_hold_each_runs_steps_maps_and_bos_mass():
    data = scrubber_data({"softmax": _snapshots([0.1, 0.5, 0.9]), "ReLU": _snapshots([0.0, 0.0])})
    softmax, relu = data["runs"]
    assert softmax["steps"] == [0, 20, 40] and relu["steps"] == [0, 20], "every snapshot's step, in order"
    assert softmax["bos"] == [0.1, 0.5, 0.9], "the BOS mass at the non-trigger rows of each snapshot"
    assert len(softmax["maps"][0]) == L * L and softmax["maps"][2][L] == 0.9, "row 1's BOS weight, row-major"


def test_bos_mass_leaves_out_row_0_and_the_trigger_row():
    weights = np.zeros((L, L))
    weights[:, 0] = 1.0
    weights[7, 0] = 0.0  # the trigger row puts nothing on BOS: it must not count
    weights[0, 0] = 0.0  # nor may row 0 (which, in softmax, always has a_00 = 1)
    assert bos_mass_at_non_trigger_rows(weights, trigger=7) == 1.0


@pytest.mark.parametrize("runs, message", [({}, "no runs"), ({"softmax": []}, "no snapshots"),
                                           ({"softmax": _snapshots([0.1, 0.2])[::-1]}, "not in training order")])
def test_bad_runs_are_refused_with_a_reason(runs, message):
    with pytest.raises(ValueError, match=message):
        sink_scrubber_html(runs)


def test_the_html_carries_its_data_and_a_script_and_fetches_nothing():
    page = sink_scrubber_html({"softmax": _snapshots([0.1, 0.9]), "ReLU": _snapshots([0.0])})
    embedded = re.search(r'<script type="application/json" class="scrubber-data">(.*?)</script>', page, re.S)
    assert embedded and json.loads(embedded.group(1))["runs"][1]["name"] == "ReLU", "the numbers are in the page"
    assert 'type="range"' in page and page.count("<canvas") == 3, "a slider, two maps and the BOS-mass chart"
    assert "fetch(" not in page and "http" not in page, "it must work offline, from file://"


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("chromium") is None, reason="Chromium is not installed")
def test_the_slider_moves_the_maps_in_headless_chromium(tmp_path):
    page = sink_scrubber_html({"softmax": _snapshots([0.1, 0.5, 0.9]), "ReLU": _snapshots([0.0, 0.0])})
    moved = ("<script>var s = document.querySelector('.scrubber-step'); s.value = 2;"
             "s.dispatchEvent(new Event('input'));</script>")
    path = tmp_path / "scrubber.html"
    path.write_text(f"<!DOCTYPE html><html><body>{page}{moved}</body></html>", encoding="utf-8")
    dom = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", path.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    captions = re.findall(r"<figcaption[^>]*>([^<]*)</figcaption>", dom)
    assert re.search(r">step 40<", dom), f"the label should follow the slider to step 40: {dom[:300]}"
    assert captions == ["softmax, step 40: BOS mass 0.900", "ReLU, step 20 (stopped): BOS mass 0.000"], captions


@pytest.mark.parametrize("weights,trigger,error,culprit", [  # not nan and 'Mean of empty slice'
    (np.ones((1, 1)), 7, ValueError, r"bos_mass_at_non_trigger_rows: needs a map with a row besides BOS and the "
                                     r"trigger.*got L = 1 and trigger 7"),
    (np.ones((2, 2)), 1, ValueError, r"L >= 3 and trigger < L, got L = 2 and trigger 1"),
    (np.ones((4, 4)), 7, ValueError, r"got L = 4 and trigger 7"),  # a map that cannot hold the trigger
    (np.ones((4, 4)), 0, ValueError, r"trigger must be an integer >= 1, got 0"),
    (np.ones((4, 4)), 1.0, TypeError, r"trigger must be an integer >= 1, got 1.0"),
    (np.ones((4, 3)), 1, ValueError, r"weights must be one attention map \(L, L\), got shape \(4, 3\)"),
    (np.ones((1, 4, 4)), 1, ValueError, r"weights must be one attention map \(L, L\), got shape \(1, 4, 4\)"),
], ids=["length-1", "length-2-trigger-1", "trigger-beyond-the-map", "trigger-at-bos", "trigger-a-float",
        "not-square", "three-axes"])
def test_bos_mass_refuses_a_map_without_a_non_trigger_row(weights, trigger, error, culprit):
    with pytest.raises(error, match=culprit):
        bos_mass_at_non_trigger_rows(weights, trigger)


def test_bos_mass_of_the_shortest_map_with_a_non_trigger_row():
    weights = np.array([[1.0, 0.0, 0.0], [0.25, 0.75, 0.0], [0.5, 0.25, 0.25]])  # L = 3
    assert bos_mass_at_non_trigger_rows(weights, trigger=1) == 0.5, "L = 3, trigger 1: row 2 alone counts"
    assert bos_mass_at_non_trigger_rows(weights, trigger=2) == 0.25, "L = 3, trigger 2: row 1 alone counts"


def test_the_scrubber_refuses_maps_without_a_non_trigger_row_before_any_html():
    with pytest.raises(ValueError, match=r"sink_scrubber_html: needs a map .*got L = 4 and trigger 7"):
        sink_scrubber_html({"short": [(0, np.ones((1, 1, 4, 4)))]})


def _data_block(page: str) -> str:
    """The text of the page's JSON script element, as the browser cuts it: up to the first '</script'."""
    start = page.index('<script type="application/json" class="scrubber-data">') + len(
        '<script type="application/json" class="scrubber-data">')
    return page[start:page.index("</script", start)]


@pytest.mark.parametrize("name", ['my "best" run', "a</script><script>alert(1)</script>", "<b>bold</b> & 'co'",
                                  "a<!--b", 'x" onfocus="alert(1)'],
                         ids=["a-double-quote", "a-closing-script-tag", "markup-and-ampersand", "a-comment-opener",
                              "an-attribute-injection"])
def test_a_run_name_is_text_in_the_attribute_and_the_data(name):  # a name must not break the page's HTML
    page = sink_scrubber_html({name: _snapshots([0.1, 0.9]), "ReLU": _snapshots([0.0])})
    labels = re.findall(r'aria-label="([^"]*)"', page)
    assert f"mean attention map of {html.escape(name)}" in labels, \
        f"the name must be escaped inside aria-label=\"...\", got labels {labels}"
    data = json.loads(_data_block(page))
    assert [run["name"] for run in data["runs"]] == [name, "ReLU"], \
        "the data block must hold the run names whole: a '</script>' in a name ended it early"
    assert page.count("</script>") == 2, "only the data's and the script's own closing tags"


@pytest.mark.parametrize("step, error", [("x", TypeError), (2.7, TypeError), (None, TypeError), (True, TypeError),
                                         (-20, ValueError)],
                         ids=["a-word", "a-fraction", "none", "true", "negative"])
def test_a_step_that_is_not_a_training_step_is_named(step, error):  # not int()'s "invalid literal" error
    snapshots = _snapshots([0.1, 0.5])
    snapshots[1] = (step, snapshots[1][1])
    with pytest.raises(error, match=r"sink_scrubber_html: the step of run 'a' must be an integer >= 0, got"):
        sink_scrubber_html({"a": snapshots})


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf], ids=["nan", "inf", "minus-inf"])
@pytest.mark.parametrize("at", [0, 2], ids=["first-snapshot", "last-snapshot"])
def test_a_map_that_is_not_finite_is_refused_naming_the_run_and_step(bad, at):  # not NaN in the JSON and no map
    snapshots = _snapshots([0.1, 0.5, 0.9])
    snapshots[at][1][0, 0, 3, 1] = bad
    with pytest.raises(ValueError, match=rf"sink_scrubber_html: the attention map of run 'diverged' at step "
                                         rf"{20 * at} holds nan or inf"):
        sink_scrubber_html({"softmax": _snapshots([0.2]), "diverged": snapshots})


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("chromium") is None, reason="Chromium is not installed")
def test_a_run_named_with_a_quote_and_a_script_tag_still_draws_in_headless_chromium(tmp_path):
    name = 'my "best" run</script><b>'
    page = sink_scrubber_html({name: _snapshots([0.1, 0.5, 0.9])})
    path = tmp_path / "scrubber.html"
    path.write_text(f"<!DOCTYPE html><html><body>{page}</body></html>", encoding="utf-8")
    dom = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", path.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    captions = [html.unescape(caption) for caption in re.findall(r"<figcaption[^>]*>([^<]*)</figcaption>", dom)]
    assert captions == [f"{name}, step 0: BOS mass 0.100"], \
        f"the page must parse its data and draw the run, its name as text; captions: {captions}"


@pytest.mark.parametrize("weights", [np.zeros((L, L)), np.zeros((1, L, L)), np.zeros((1, 1, 1, L, L)),
                                     np.zeros((1, 1, L, L - 1)), np.float64(0.5)],
                         ids=["one-map", "no-layer-axis", "an-extra-axis", "not-square", "a-number"])
def test_a_snapshot_that_is_no_layers_by_heads_of_maps_is_named_with_the_shape_given(weights):
    # the message reports the shape given, not the shape () left after indexing an (L, L) map with [0, 0]
    with pytest.raises(ValueError, match=rf"sink_scrubber_html: the weights of run 'a' at step 0 must be a "
                                         rf"snapshot's maps \(layers, H, L, L\).*got shape "
                                         rf"{re.escape(str(np.shape(weights)))}"):
        sink_scrubber_html({"a": [(0, weights)]})


def test_a_run_whose_maps_change_length_is_refused_not_drawn_at_the_first_length():
    """Snapshots going from L = 8 to L = 16 are refused: drawn, the 16 x 16 map would be a wrong 8 x 8 picture."""
    from minitorch.paper.scrubber import sink_scrubber_html

    short, long = np.full((1, 1, 8, 8), 1 / 8), np.full((1, 1, 16, 16), 1 / 16)
    with pytest.raises(ValueError, match=r"the maps of run 'grows' have different lengths L \(\[8, 16\]\)"):
        sink_scrubber_html({"grows": [(0, short), (10, long)]})



def test_runs_given_as_a_list_are_named_and_a_numpy_trigger_is_a_plain_number():
    """A list of (name, snapshots) pairs is named, not "'list' object has no attribute 'items'"; a trigger
    np.int64(2) is taken as the number 2, so json.dumps can write it."""
    from minitorch.paper.scrubber import sink_scrubber_html

    snapshots = [(0, np.tril(np.full((1, 1, 8, 8), 1 / 8)))]  # a causal map
    with pytest.raises(TypeError, match=r"sink_scrubber_html: runs must be a non-empty dict \{name:"):
        sink_scrubber_html([("a", snapshots)])
    assert "sink-scrubber" in sink_scrubber_html({"a": snapshots}, trigger=np.int64(2))


@pytest.mark.parametrize("snapshots", [[np.full((8, 8), 1 / 8)], np.full((2, 1, 1, 8, 8), 1 / 8), [(0,)]],
                         ids=["a-list-of-maps", "an-array", "a-pair-cut-short"])
def test_a_run_that_is_no_list_of_step_and_maps_pairs_is_named(snapshots):
    """The error names the run and the form, not Python's "too many values to unpack (expected 2)"."""
    from minitorch.paper.scrubber import sink_scrubber_html

    with pytest.raises(TypeError, match=r"sink_scrubber_html: run 'a' must be a list of \(step, weights\) pairs"):
        sink_scrubber_html({"a": snapshots}, trigger=3)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("chromium") is None, reason="Chromium is not installed")
def test_a_page_that_renames_ids_keeps_the_scrubber_and_its_printed_strip(tmp_path):
    """The book's print.html prefixes every id with its chapter's number: the script, which looked its scrubber up
    by id, found nothing there and the slider printed as empty boxes. On paper, a strip of snapshots stands for it."""
    from minitorch.paper.scrubber import STRIP_SNAPSHOTS

    page = sink_scrubber_html({"softmax": _snapshots([0.1, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.97]),
                               "ReLU": _snapshots([0.0, 0.0, 0.01])})
    assert " id=" not in page, "the scrubber must not depend on an id, which a page may rename"
    path = tmp_path / "scrubber.html"
    path.write_text(f"<!DOCTYPE html><html><body>{page}</body></html>", encoding="utf-8")
    dom = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", path.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    strip = re.search(r'<div class="scrubber-paper scrubber-strip".*?data-steps="([^"]*)"', dom, re.S)
    assert strip, "the printed strip was not drawn"
    assert strip.group(1) == "0 20 60 80 120 140", f"{STRIP_SNAPSHOTS} steps, first to last: {strip.group(1)}"
    labels = re.findall(r"<div>(step \d+: BOS [0-9.]+)</div>", dom)
    assert len(labels) == 2 * STRIP_SNAPSHOTS and labels[0] == "step 0: BOS 0.10" and \
        labels[STRIP_SNAPSHOTS - 1] == "step 140: BOS 0.97", labels
    assert re.search(r'<span class="scrubber-screen">Drag the slider', page) and "@media print" in page, \
        "'Drag the slider' is for the screen only; the print rules hide it"


def test_the_scrubber_refuses_a_map_with_weight_on_future_keys():
    """Rows 0..7 of a reversed identity read only future keys; its BOS mass came from row 8 alone, without a word."""
    reversed_identity = np.eye(9)[::-1]
    with pytest.raises(ValueError, match=r"must be 0 on every future key \(k > i\).*row 0, key 8"):
        bos_mass_at_non_trigger_rows(reversed_identity, trigger=7)
    with pytest.raises(ValueError, match=r"must be 0 on every future key"):
        sink_scrubber_html({"a": [(0, reversed_identity[None, None])]}, trigger=7)
