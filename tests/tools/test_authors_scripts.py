"""Specification of minitorch.tools.authors_scripts: running the author's released scripts, where they are at hand."""

from __future__ import annotations

import pytest

from bad_input_helpers import ROOT
from minitorch.tools import authors_scripts

# what the author's scripts print on stderr when not on a terminal: one redraw of the tqdm bar per line
BARS = ("Training (softmax):   0%|          | 0/50000 [00:00<?, ?step/s]\n"
        "Training (softmax):   2%|▏         | 894/50000 [00:01<01:10, 698.1step/s, l_infty=0.0061, loss=0.0000]\n"
        "Training (softmax):   2%|▏         | 960/50000 [00:01<01:10, 700.2step/s, l_infty=0.0049, loss=0.0000]\n"
        "Collecting attention stats (softmax)...\n"
        "Training (relu):   1%|▏         | 693/50000 [00:01<01:09, 712.0step/s, l_infty=0.0048, loss=0.0000]\n"
        "Training (relu): 100%|██████████| 50000/50000 [01:10<00:00, 712.0step/s, l_infty=0.0100, loss=0.0000]\n")


def test_steps_are_the_last_count_of_each_bar_plus_the_step_that_met_the_stop():
    bars = BARS.replace("Training (relu): 100%|██████████| 50000/50000 [01:10<00:00, 712.0step/s, l_infty=0.0100, "
                        "loss=0.0000]\n", "")
    assert authors_scripts.steps_from_progress(bars) == {"softmax": 961, "relu": 694}, \
        "the bar counts finished steps; the loop breaks inside the step that met the stop"


def test_a_run_that_used_its_whole_budget_took_exactly_the_budget():
    assert authors_scripts.steps_from_progress(BARS)["relu"] == 50_000, \
        "a bar at its total means every step ran and none met the stop: no step to add"


def test_the_last_line_of_each_bar_is_kept_as_printed():
    lines = authors_scripts.last_progress_lines(BARS)
    assert lines["softmax"].startswith("Training (softmax):") and "960/50000" in lines["softmax"]


def _a_checkout(folder):
    """A stand-in for a clone of the author's code: its three scripts' files, empty."""
    (folder / "figure_code").mkdir(parents=True)
    for _, arguments in authors_scripts.SCRIPTS:
        (folder / arguments[0]).write_text("")
    return folder


def test_without_pytorch_the_command_skips_and_says_why(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(authors_scripts, "missing_requirements", lambda: ["torch"])
    assert authors_scripts.main([str(_a_checkout(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert out.startswith("skipped:") and "torch" in out, "the skip must name what is missing"


@pytest.mark.parametrize("installed", [True, False], ids=["with-pytorch", "without-pytorch"])
@pytest.mark.parametrize("kind, reason", [("missing", "no such folder"), ("a-file", "is a file, not a folder"),
                                          ("empty", "is not a checkout of the author's code"),
                                          ("this-project", "is not a checkout of the author's code")])
def test_a_checkout_that_is_none_is_refused_by_name_before_the_packages_are_looked_for(
        monkeypatch, capsys, tmp_path, installed, kind, reason):
    """Without PyTorch, a checkout that does not exist, is a file, is empty or is this project was met with only
    "skipped: ... need torch" and status 0: the user learned what was wrong after installing PyTorch."""
    monkeypatch.setattr(authors_scripts, "missing_requirements", lambda: [] if installed else ["torch"])
    (tmp_path / "thesis.txt").write_text("a file")
    checkout = {"missing": tmp_path / "nowhere", "a-file": tmp_path / "thesis.txt", "empty": tmp_path,
                "this-project": ROOT}[kind]
    with pytest.raises(SystemExit) as stop:
        authors_scripts.main([str(checkout)])
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert stop.value.code == 2 and f"{checkout}" in error and reason in error and "git clone" in error, error


def test_a_folder_without_the_authors_scripts_is_refused_by_name(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(authors_scripts, "missing_requirements", lambda: [])
    with pytest.raises(SystemExit) as stop:
        authors_scripts.main([str(tmp_path)])
    assert stop.value.code == 2 and "fig_single_layer.py" in capsys.readouterr().err


def test_only_names_shapes_it_knows(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(authors_scripts, "missing_requirements", lambda: [])
    with pytest.raises(SystemExit) as stop:
        authors_scripts.main([str(tmp_path), "--only", "3x3"])
    assert stop.value.code == 2 and "--only" in capsys.readouterr().err
