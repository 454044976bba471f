"""Specification of minitorch.paper.beyond: chapter 10's experiments beyond the paper."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from minitorch import nn
from minitorch.paper import beyond
from minitorch.paper.models import build_model
from minitorch.paper.reproduce import ARCHITECTURES
from minitorch.paper.task import make_batch

from causal_literals import visible_keys  # noqa: E402  (tests/causal_literals.py)
from bad_input_helpers import ROOT  # noqa: E402  (tests/bad_input_helpers.py)


def test_the_gap_bound_is_what_mass_one_minus_delta_on_bos_requires():
    # all n content scores equal (Jensen's equality case): the bound is attained exactly
    for n, gap in [(3, 2.0), (15, 5.0), (63, 9.0)]:
        bos_mass = 1.0 / (1.0 + n * np.exp(-gap))
        assert np.isclose(beyond.gap_bound(n, 1.0 - bos_mass), gap), \
            f"n={n}: equal content scores {gap} below BOS give a_0 = {bos_mass}, and the bound must return {gap}"


@pytest.mark.parametrize("length, std", [(8, 0.5), (16, 3.0)])
def test_every_row_of_a_softmax_model_respects_the_gap_bound(length, std):
    model = build_model(16, 1, 1, "softmax", residual=False, seed=1)
    for weight in model.parameters():  # a random head, larger than at initialisation
        weight.data[...] = np.random.default_rng(2).normal(0.0, std, weight.shape)
    x, _, triggers = make_batch(200, np.random.default_rng(3), length=length)
    gaps = beyond.score_gaps(model, x, triggers)
    assert gaps["slack_min"] >= -1e-9, \
        f"a row's score gap fell below log n + log((1-δ)/δ) by {-gaps['slack_min']:.3g}"
    assert gaps["content_keys"] == list(range(2, length)), "rows 2..L-1 should be reported, with n = i content keys"


def test_score_gaps_refuses_a_model_it_cannot_read():
    with pytest.raises(ValueError, match="one-layer, one-head softmax"):
        beyond.score_gaps(build_model(16, 2, 1, "softmax", residual=False),
                          *make_batch(4, np.random.default_rng(0))[::2])


def test_the_mass_split_adds_up_to_one():
    weights = np.random.default_rng(0).uniform(0, 0.3, size=(5, 2, 6, 6)) * visible_keys(6)
    split = beyond.mass_split([weights], np.full(5, 3))
    assert np.isclose(split["bos"] + split["content"] + split["nowhere"], 1.0), \
        f"BOS + content + nowhere = 1, got {split}"


def test_the_zoo_holds_every_registered_normaliser_the_paper_pair_first():
    names = beyond.zoo_normalisers()
    assert names[:2] == ["softmax", "relu"], f"the zoo should start with the paper's two normalisers, got {names}"
    for name in ("softmax1", "sink_logit", "sigmoid", "softpick", "gated"):
        assert name in names, f"the sink-free normaliser {name!r} is missing from the zoo"


def test_a_tiny_run_writes_every_figure_and_both_result_files(tmp_path, monkeypatch):
    # one training step per model (the 4x4 model's --quick budget is minutes of training): this test is about
    # the files a run writes, not about what training reaches
    monkeypatch.setitem(ARCHITECTURES, "4x4", dataclasses.replace(ARCHITECTURES["4x4"], quick_steps=1))
    budget = beyond.Budget(zoo_seeds=(0,), zoo_max_steps=1, law_lengths=(8,), law_max_steps=1, seeds_4x4=(0,),
                           quick=True)
    results = beyond.run_beyond(tmp_path, budget, log=lambda message: None)
    for name in ("zoo_mass.png", "zoo_maps.png", "log_t_law.png", "seeds_4x4.png", "price_of_a_sink.png",
                 "results.md", "results.json"):
        assert (tmp_path / name).stat().st_size > 0, f"run_beyond did not write {name}"
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(beyond.FILES) == results["files"], \
        "beyond.FILES must name exactly what a run writes, and results.json record them"
    assert len(results["zoo"]) == len(beyond.zoo_normalisers()), "one zoo run per normaliser and seed"
    assert results["seeds_4x4"][0]["steps"] <= 1, "the 4x4 seed should train on the 1-step budget set above"
    assert json.loads((tmp_path / "results.json").read_text())["law"][0]["length"] == 8


@pytest.mark.parametrize("arguments,error,culprit", [  # not nan, a warning, or an impossible 5.77
    ((16, 1.5), ValueError, r"gap_bound: leak must be a share of a row's mass in \[0, 1\], got 1.5"),
    ((16, -0.1), ValueError, r"gap_bound: leak must be a share .*got -0.1"),
    ((16, float("nan")), ValueError, r"gap_bound: leak must be a share .*got nan"),
    ((16, np.array([0.1, 2.0])), ValueError, r"gap_bound: leak must be a share"),
    ((16, "0.1"), TypeError, r"gap_bound: leak must be a share .*got '0.1'"),
    ((-4, 0.1), ValueError, r"gap_bound: content_keys must be whole numbers n >= 1 .*got -4"),
    ((0, 0.1), ValueError, r"gap_bound: content_keys must be whole numbers n >= 1 .*got 0"),
    (("16", 0.1), TypeError, r"gap_bound: content_keys must be whole numbers .*got '16'"),
    ((16.5, 0.1), TypeError, r"gap_bound: content_keys must be whole numbers .*got 16.5"),
    ((True, 0.1), TypeError, r"gap_bound: content_keys must be whole numbers .*got True"),
    ((16, 0.1, 2), ValueError, r"gap_bound: bos_mass must be a share .*got 2"),
    ((16, 0.1, 0.5), ValueError, r"gap_bound: bos_mass must be 1 - leak .*got bos_mass 0.5 and leak 0.1"),
    ((16, [0.1, 0.2], [0.9, 0.5]), ValueError, r"gap_bound: bos_mass must be 1 - leak .*got bos_mass 0.5 and leak 0.2"),
    ((16, True), TypeError, r"gap_bound: leak must be a share .*got True"),
    ((np.arange(2, 5), np.full(2, 0.1)), ValueError, r"gap_bound: content_keys \(3,\), leak \(2,\) and bos_mass "
                                                     r"\(2,\) must broadcast"),
    ((16, np.full(2, 0.1), np.full(3, 0.9)), ValueError, r"leak \(2,\) and bos_mass \(3,\) must broadcast"),
], ids=["leak-1.5", "leak-negative", "leak-nan", "a-leak-2", "leak-a-string", "keys-minus-4", "no-keys",
        "keys-a-string", "keys-16.5", "keys-true", "bos-mass-2", "bos-mass-not-1-minus-leak", "a-row-apart",
        "leak-true", "keys-and-leak-disagree", "leak-and-bos-mass-disagree"])
def test_gap_bound_names_a_count_or_share_that_cannot_be(arguments, error, culprit):
    with pytest.raises(error, match=culprit):
        beyond.gap_bound(*arguments)


def test_gap_bound_keeps_its_limits_at_a_leak_of_0_or_1():
    assert beyond.gap_bound(16, 0.0) == np.inf, "all mass on BOS (ρ = 0) needs an infinite gap"
    assert beyond.gap_bound(16, 1.0) == -np.inf, "no mass on BOS (ρ = 1) needs no gap at all"
    assert beyond.gap_bound(16, 1.0 - 1e-20, bos_mass=1e-20) > -np.inf, "a BOS mass known better than 1 - ρ is used"
    assert beyond.gap_bound(16, 1.0 + 1e-12) == -np.inf, "a leak that rounded just above 1 is a leak of 1"


@pytest.mark.parametrize("layers", [[], (), None, np.zeros((1, 2, 1, 4, 4))],
                         ids=["empty-list", "empty-tuple", "none", "an-array"])
def test_mass_split_names_a_list_of_layers_that_is_empty_or_not_a_list(layers):  # not nan
    with pytest.raises(ValueError, match=r"mass_split: per_layer_weights must be a non-empty list of \(B, H, L, L\)"):
        beyond.mass_split(layers, np.array([2, 2]))


@pytest.mark.parametrize("budget", ["quick", None, {"quick": True}], ids=["the-word-quick", "none", "a-dict"])
def test_run_beyond_names_a_budget_that_is_not_one_before_any_work(budget, tmp_path):  # not an AttributeError
    with pytest.raises(TypeError, match=r"run_beyond: budget must be beyond.FULL, beyond.QUICK or a beyond.Budget"):
        beyond.run_beyond(tmp_path / "out", budget=budget, log=lambda message: None)
    assert not (tmp_path / "out").exists(), "a refused run must not create its folder"


def _results():
    """run_beyond's results as results.json holds them, one run of each list (the committed quick or full run)."""
    return json.loads((ROOT / "figures" / "beyond" / "results.json").read_text())


def _without(results: dict, where: str, key: str) -> dict:
    """`results` with `key` dropped from the first run of list `where` ('' for the results' own keys)."""
    record = results[where][0] if where else results
    del record[key]
    return results


@pytest.mark.parametrize("call, culprit", [  # not a KeyError such as 'normaliser' that names no argument
    (lambda folder: beyond.zoo_table([{}]), r"zoo_table: zoo\[0\] must be one normaliser's run .*; got \{\} without "
                                            r"normaliser, converged, steps"),
    (lambda folder: beyond.zoo_table(_results()["zoo"] + [{"normaliser": "softmax"}]),
     r"zoo_table: zoo\[\d+\] .* without converged"),
    (lambda folder: beyond.zoo_table({"normaliser": "softmax"}), r"zoo_table: zoo must be a list of dicts"),
    (lambda folder: beyond.beyond_markdown({}), r"beyond_markdown: results must be run_beyond's results .*; got \{\} "
                                                r"without quick, wall_time_seconds, zoo, law, seeds_4x4"),
    (lambda folder: beyond.beyond_markdown(_without(_results(), "", "quick")), r"beyond_markdown: .* without quick"),
    (lambda folder: beyond.beyond_markdown(_without(_results(), "law", "slack_min")),
     r"beyond_markdown: results\['law'\]\[0\] must be one length's run .* without slack_min"),
    (lambda folder: beyond.beyond_markdown(_without(_results(), "zoo", "learned")),
     r"beyond_markdown: results\['zoo'\]\[0\] .* without learned"),
    (lambda folder: beyond.write_beyond_figures({}, folder), r"write_beyond_figures: results must be run_beyond's "
                                                             r"results .* without zoo, law, seeds_4x4"),
    (lambda folder: beyond.write_beyond_figures(_without(_results(), "seeds_4x4", "seed"), folder),
     r"write_beyond_figures: results\['seeds_4x4'\]\[0\] must be one seed's run .* without seed"),
    (lambda folder: beyond.write_beyond_figures(_without(_results(), "law", "content_keys"), folder),
     r"write_beyond_figures: results\['law'\]\[0\] .* without content_keys"),
    (lambda folder: beyond.write_beyond_figures(dict(_results(), zoo=[]), folder),
     r"write_beyond_figures: results\['zoo'\] must be a non-empty list"),
    (lambda folder: beyond.zoo_table([dict(_results()["zoo"][0], converged="no")]),  # not sum()'s "int and str"
     r"zoo_table: zoo\[0\]\['converged'\] must be True or False, got 'no' \(str\)"),
    (lambda folder: beyond.seeds_table([dict(_seed_run(), converged="no")]),
     r"seeds_table: runs\[0\]\['converged'\] must be True or False, got 'no' \(str\)"),
    (lambda folder: beyond.seeds_table([_seed_run(), dict(_seed_run(1), steps="300")]),
     r"seeds_table: runs\[1\]\['steps'\] must be an integer, got '300' \(str\)"),
    (lambda folder: beyond.seeds_table([_seed_run(), dict(_seed_run(1), heads_total=4, heads_sinking=3)]),
     r"seeds_table: the runs of softmax_1x1 give heads_total \[1, 4\] and up to 3 heads sinking; one model has one "
     r"number of heads"),  # not a row of 3 heads sinking out of 1
    (lambda folder: beyond.seeds_table([dict(_seed_run(), heads_sinking=2)]),
     r"seeds_table: the runs of softmax_1x1 give heads_total \[1\] and up to 2 heads sinking"),
], ids=["zoo-table-of-an-empty-run", "zoo-table-of-a-run-without-counts", "zoo-table-of-a-dict", "markdown-of-nothing",
        "markdown-without-quick", "markdown-law-without-slack", "markdown-zoo-without-learned", "figures-of-nothing",
        "figures-seed-without-seed", "figures-law-without-keys", "figures-of-no-zoo-run", "zoo-table-converged-no",
        "seeds-table-converged-no",
        "seeds-table-steps-a-string", "seeds-table-runs-of-one-model-with-1-and-4-heads",
        "seeds-table-more-heads-sinking-than-heads"])
def test_run_beyonds_helpers_name_results_without_what_they_read_before_writing(call, culprit, tmp_path):
    with pytest.raises((TypeError, ValueError), match=culprit):  # TypeError for a dict in place of a list
        call(tmp_path)
    assert list(tmp_path.iterdir()) == [], "refused results must write no figure"


def test_run_beyonds_helpers_read_the_committed_results():
    results = _results()
    assert [row["normaliser"] for row in beyond.zoo_table(results["zoo"])] == \
        list(dict.fromkeys(run["normaliser"] for run in results["zoo"])), "one row per normaliser, in order"
    assert beyond.beyond_markdown(results).startswith("# Beyond the paper: results"), "the tables of chapter 10"


@pytest.mark.parametrize("model", [  # not "'Linear' object has no attribute 'config'"
    lambda: nn.Linear(2, 2), lambda: None, lambda: "softmax_1x1"], ids=["a-linear-layer", "none", "a-name"])
def test_score_gaps_names_a_model_that_records_no_architecture(model):
    with pytest.raises(TypeError, match=r"score_gaps: model must be a one-layer, one-head softmax model "
                                        r"\(build_model\(.*\)\), got \w+, which records no architecture"):
        beyond.score_gaps(model(), *make_batch(4, np.random.default_rng(0))[::2])


@pytest.mark.parametrize("model, width, error, culprit", [
    (nn.Linear(2, 2), 16, TypeError, r"learned_extras: model must be an attention model .*got Linear"),
    (build_model(16, 1, 1, "softmax", False), 8, ValueError, r"learned_extras: x must have shape \(B, L, 16\)"),
], ids=["a-linear-layer", "x-of-another-width"])
def test_learned_extras_names_a_model_or_input_it_cannot_read(model, width, error, culprit):
    x, _, triggers = make_batch(2, np.random.default_rng(0), False)
    with pytest.raises(error, match=culprit):
        beyond.learned_extras(model, x[..., :width], triggers)


def _seed_run(seed: int = 0) -> dict:
    """One fake run of the softmax 1x1 model, as beyond.train_seed returns it."""
    return _fake_seed_run("1x1", "softmax", seed, quick=False)


def _fake_seed_run(shape, normaliser, seed, quick):
    """What beyond.train_seed returns, without training: steps grow with the seed."""
    heads = 1 if shape == "1x1" else 4
    return dict(shape=shape, normaliser=normaliser, seed=seed, steps=100 * (seed + 1), converged=seed != 2,
                wall_time_seconds=1.5, test_max_error=1e-3, bos_mass_mean=0.99 if normaliser == "softmax" else 0.0,
                bos_mass_min=0.9 if normaliser == "softmax" else 0.0, heads=heads,
                heads_sinking=heads if normaliser == "softmax" else 0, heads_total=heads, gu_sink_share=0.5,
                head_bos_mass=[0.99] * heads)


def test_run_seeds_writes_the_spread_of_every_model_over_its_seeds(tmp_path, monkeypatch):
    monkeypatch.setattr(beyond, "train_seed", _fake_seed_run)
    results = beyond.run_seeds(tmp_path / "seeds", seeds=(0, 1, 2), log=lambda message: None)
    assert sorted(path.name for path in (tmp_path / "seeds").iterdir()) == sorted(beyond.SEED_FILES) \
        == results["files"], "run_seeds writes results.json and results.md, and records them"
    assert [(run["shape"], run["normaliser"]) for run in results["runs"][::3]] == list(beyond.SEED_MODELS), \
        "runs are listed model by model, in SEED_MODELS' order"
    rows = {row["model"]: row for row in beyond.seeds_table(results["runs"])}
    assert rows["softmax_2x2"]["steps_min"] == 100 and rows["softmax_2x2"]["steps_max"] == 300
    assert rows["relu_1x1"]["stopped"] == 2, "a seed that used its whole budget is not counted as stopped"
    table = (tmp_path / "seeds" / "results.md").read_text()
    assert "| softmax_2x2 | 2 / 3 | 100 / 200 / 300 | 4-4 of 4 |" in table, table


def test_run_seeds_refuses_seeds_it_cannot_run(tmp_path):
    with pytest.raises(ValueError, match="distinct"):
        beyond.run_seeds(tmp_path, seeds=(1, 1))
    with pytest.raises(ValueError, match="seed"):
        beyond.run_seeds(tmp_path, seeds=(-1,))


def test_run_seeds_of_one_shape_says_so_in_its_command_and_title(tmp_path, monkeypatch):
    monkeypatch.setattr(beyond, "train_seed", _fake_seed_run)
    results = beyond.run_seeds(tmp_path, seeds=beyond.SEEDS, shapes=("1x1",), log=lambda message: None)
    assert results["command"] == "reproduce --seeds --only 1x1" and results["shapes"] == ["1x1"]
    assert {run["shape"] for run in results["runs"]} == {"1x1"}
    assert (tmp_path / "results.md").read_text().startswith("# Seeds of the 1x1 models")


def test_the_title_of_quick_seeds_says_the_budgets_are_small_not_that_the_models_did_not_converge(tmp_path,
                                                                                                  monkeypatch):
    """'(quick mode: not converged)' headed a table whose every row said 10 / 10 stopped early."""
    monkeypatch.setattr(beyond, "train_seed", _fake_seed_run)
    beyond.run_seeds(tmp_path, seeds=(0, 1), shapes=("1x1",), quick=True, log=lambda message: None)
    title = (tmp_path / "results.md").read_text().splitlines()[0]
    assert title == "# Seeds of the 1x1 models (quick mode: small step budgets, not the paper's)", title
