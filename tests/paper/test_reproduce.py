"""Specification of minitorch.paper.reproduce: the main job, end to end (issue: the paper's experiments)."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import minitorch
from minitorch.paper.models import load_model
from minitorch.paper.reproduce import (ARCHITECTURES, PAPER_NORMALISERS as NORMALISERS, recorded_run, reproduce,
                                       redraw_error_vs_bos_mass, results_markdown, run_files)
from minitorch.paper.task import make_test_set
from minitorch.tensor import no_grad

ROOT = Path(minitorch.__file__).resolve().parent.parent  # the project under test (--minitorch-root)


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("reproduce")
    results = reproduce(out, quick=True, progress=False, log=lambda message: None)
    return out, results


@pytest.mark.slow
def test_quick_run_writes_every_figure_and_table(quick_run):
    out, _ = quick_run
    expected = ["fig3_single_layer.png", "sink_forming.png", "sink_forming.gif", "error_vs_bos_mass.png",
                "heads_bos_mass.png", "results.md", "results.json"]
    expected += [f"heads_{n}_{a}.png" for n in NORMALISERS for a in ARCHITECTURES if a != "1x1"]
    missing = [name for name in expected if not (out / name).is_file() or (out / name).stat().st_size == 0]
    assert not missing, f"reproduce --quick did not write {missing}"
    written = sorted(path.relative_to(out).as_posix() for path in out.rglob("*") if path.is_file())
    assert written == run_files(list(ARCHITECTURES)), "run_files must name exactly what a run writes"
    assert recorded_run(out).files == tuple(written) and recorded_run(out).command == "reproduce --quick", \
        "results.json must record the run's command line and every file it wrote"


@pytest.mark.slow
def test_results_json_has_every_model_with_its_measures(quick_run):
    out, results = quick_run
    on_disk = json.loads((out / "results.json").read_text())
    assert set(on_disk["models"]) == {f"{n}_{a}" for n in NORMALISERS for a in ARCHITECTURES}
    for key, model in on_disk["models"].items():
        for field in ("steps", "converged", "test_max_error", "bos_mass_mean", "bos_mass_min",
                      "heads_sinking", "heads_total", "gu_sink_share", "wall_time_seconds", "heads"):
            assert field in model, f"results.json: {key} lacks '{field}'"
        layers, heads = model["config"]["layers"], model["config"]["heads"]
        assert model["heads_total"] == len(model["heads"]) == layers * heads


@pytest.mark.slow
def test_quick_run_already_shows_the_1x1_outcomes(quick_run):
    """The 1x1 budget under --quick is enough to reach the early stop."""
    models = quick_run[1]["models"]
    assert models["softmax_1x1"]["converged"] and models["relu_1x1"]["converged"]
    assert models["softmax_1x1"]["bos_mass_min"] >= 0.99, "softmax 1x1 must sink"
    assert models["relu_1x1"]["row_mass_max"] == 0.0, "ReLU 1x1 non-trigger rows must be exactly 0"


@pytest.mark.slow
def test_saved_models_load_back_to_identical_outputs(quick_run):
    out, _ = quick_run
    model = load_model(out / "models" / "softmax_2x2.npz")
    x, _, _ = make_test_set(residual=True, size=8)
    with no_grad():
        first = model(x).data
    reloaded = load_model(out / "models" / "softmax_2x2.npz")
    with no_grad():
        np.testing.assert_array_equal(first, reloaded(x).data)


def test_unknown_architecture_is_rejected(tmp_path):
    with pytest.raises(ValueError, match="3x3"):
        reproduce(tmp_path, quick=True, only=["3x3"], progress=False)


def test_results_markdown_has_a_row_per_model_and_a_table_per_multi_head_model():
    head = dict(layer=0, head=0, bos_mass_mean=0.95, bos_mass_min=0.9, row_mass_max=1.0, trigger_bos=0.0,
                gu_alpha_bos=0.9, gu_sinks=True)
    model = dict(steps=10, converged=True, test_max_error=1e-3, bos_mass_mean=0.95, bos_mass_min=0.9,
                 row_mass_max=1.0, heads_sinking=1, heads_total=1, gu_sink_share=1.0, wall_time_seconds=1.0,
                 heads=[head], worst_case=dict(worst_case_error=0.01, bos_mass_min=0.999, bos_mass_mean=0.9995))
    two_heads = dict(model, heads_total=2, heads=[head, dict(head, head=1)])
    text = results_markdown(dict(quick=False, seed=0, total_wall_time_seconds=2.0,
                                 models={"softmax_1x1": model, "softmax_2x2": two_heads}))
    assert "| softmax_1x1 | 10 |" in text and "| softmax_2x2 | 10 |" in text
    assert "## softmax_2x2: per head" in text and "## softmax_1x1: per head" not in text
    assert "the bound holds" in text, "the softmax 1x1 model's Theorem 1 check belongs in the results"


@pytest.mark.slow
def test_trained_softmax_1x1_respects_theorem_1(quick_run):
    from minitorch.paper import theory

    worst = quick_run[1]["models"]["softmax_1x1"]["worst_case"]
    required = theory.theorem1_bos_lower_bound(worst["worst_case_error"])
    assert worst["bos_mass_min"] >= required, (
        f"Theorem 1 violated by the trained model: error {worst['worst_case_error']:.3g} needs BOS mass "
        f">= {required:.4f}, measured {worst['bos_mass_min']:.4f}")
    assert (quick_run[0] / "error_vs_bos_mass.png").is_file()


def test_a_worker_killed_by_the_system_is_one_clear_error_not_a_broken_pool():
    """A worker killed alone (as the out-of-memory killer does) is one clear error, not a pool's traceback."""
    import os

    from minitorch.paper.reproduce import run_in_processes

    with pytest.raises(ChildProcessError, match="a worker process ended before its run finished"):
        run_in_processes([os.abort, os.abort], [(), ()], jobs=2)


def test_write_record_takes_its_folder_as_a_str_as_every_path_argument_does(tmp_path):
    from minitorch.paper.reproduce import write_record

    write_record(str(tmp_path / "run"), {"loss": 1.5})
    written = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))
    assert written["loss"] == 1.5, f"results.json does not hold what write_record was given: {written}"


def test_write_record_stores_numpy_numbers_as_json_numbers_and_names_what_it_cannot(tmp_path):
    from minitorch.paper.reproduce import write_record

    write_record(tmp_path, {"loss": np.float32(1.5), "steps": np.int64(7), "curve": np.arange(3)})  # not json's
    written = json.loads((tmp_path / "results.json").read_text())  # "float32 is not JSON serializable"
    assert (written["loss"], written["steps"], written["curve"]) == (1.5, 7, [0, 1, 2]), written
    with pytest.raises(TypeError, match=r"write_record: results.json can hold numbers, .* not .*\(object\)"):
        write_record(tmp_path, {"model": object()})
    assert json.loads((tmp_path / "results.json").read_text()) == written, "a refused record replaced the old one"


def test_a_stop_signal_while_a_worker_starts_leaves_no_worker_reading_an_empty_pipe():
    """CI, stop 38: SIGHUP came between a spawned worker's start and its parent writing the worker's task to
    its pipe; the stop handler raised there, and the worker printed 'EOFError: Ran out of input' under the
    command's clear message. The signal is sent here right inside that window."""
    script = textwrap.dedent("""
        import os, signal, sys, time
        import multiprocessing.util as util
        from minitorch.paper.reproduce import run_in_processes

        class Stopped(Exception):
            pass

        def stop(signum, frame):
            raise Stopped

        signal.signal(signal.SIGUSR1, stop)
        real_spawn = util.spawnv_passfds

        def spawn_then_signal(path, args, passfds):
            pid = real_spawn(path, args, passfds)
            if "spawn_main" in str(args):  # a worker, not the resource tracker
                os.kill(os.getpid(), signal.SIGUSR1)  # before the parent writes the worker's task
            return pid

        util.spawnv_passfds = spawn_then_signal
        try:
            run_in_processes([time.sleep, time.sleep], [(30,), (30,)], jobs=2)
        except Stopped:
            print("stopped")
        time.sleep(2)  # a worker left reading an empty pipe prints its traceback by now
    """)
    finished = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    output = finished.stdout + finished.stderr
    assert finished.returncode == 0 and "stopped" in finished.stdout, f"the signal did not stop the run:\n{output}"
    assert "Traceback" not in output, f"a worker started as the signal came printed a traceback:\n{output}"


def test_a_stop_sent_to_the_whole_group_as_the_workers_start_is_reported_as_the_stop():
    """CI, stop 46: Ctrl-\\ (SIGQUIT to the whole process group) came while the command was still starting its
    second worker. The command held the stop until every worker had its task, but the signal had already ended
    the first worker: it reported a broken pool (status 1, and a traceback of the pool's own thread) instead of
    the stop. The signal is sent here right inside that window."""
    script = textwrap.dedent("""
        import os, signal, sys, time
        import multiprocessing.util as util
        from minitorch.paper.reproduce import run_in_processes
        from minitorch.tools.exit_policy import run_command

        real_spawn = util.spawnv_passfds

        def spawn_then_signal(path, args, passfds):
            pid = real_spawn(path, args, passfds)
            if "spawn_main" in str(args) and not hasattr(util, "signalled"):  # the first worker, not the tracker
                util.signalled = True
                time.sleep(1)  # the worker is importing: a stop that reached it now ended it
                os.killpg(0, signal.SIGQUIT)  # Ctrl-\\ in a terminal
            return pid

        util.spawnv_passfds = spawn_then_signal
        sys.exit(run_command(lambda argv: run_in_processes([time.sleep] * 4, [(60,)] * 4, jobs=2), [], exits=True))
    """)
    finished = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120,
                              start_new_session=True)  # its own group, which the signal is sent to
    output = finished.stdout + finished.stderr
    assert finished.returncode == 128 + signal.SIGQUIT, (
        f"exit {finished.returncode}, expected {128 + signal.SIGQUIT} (stopped by SIGQUIT):\n{output}")
    assert output.strip() == "python -m minitorch: stopped by SIGQUIT", f"not the stop's one line:\n{output}"


@pytest.mark.parametrize("results", [{}, {"quick": False, "seed": 0, "total_wall_time_seconds": 1.0, "models": []},
                                     [1, 2]], ids=["empty", "models-a-list", "a-list"])
def test_results_markdown_names_results_that_are_not_a_runs(results):
    """results_markdown({}) raised a bare KeyError: 'quick', which named neither the argument nor what it should be."""
    with pytest.raises(ValueError, match=r"results_markdown: results is not the results.json a reproduce run writes"):
        results_markdown(results)


def test_redraw_error_vs_bos_mass_adds_the_relu_heads_upper_bound_from_its_saved_weights(tmp_path):
    (tmp_path / "models").mkdir()
    shutil.copy(ROOT / "figures" / "results.json", tmp_path / "results.json")
    shutil.copy(ROOT / "figures" / "models" / "relu_1x1.npz", tmp_path / "models" / "relu_1x1.npz")
    drawn = redraw_error_vs_bos_mass(tmp_path)
    assert drawn == tmp_path / "error_vs_bos_mass.png" and drawn.stat().st_size > 0


@pytest.mark.parametrize("text", ["{garbage", "[1, 2]", '{"models": {"relu_1x1": {}}}', "[" * 10**5 + "]" * 10**5],
                         ids=["not-json", "a-list", "no-worst-case", "nested-too-deep-for-json"])
def test_redraw_error_vs_bos_mass_names_a_results_file_it_cannot_read(tmp_path, text):
    (tmp_path / "results.json").write_text(text, encoding="utf-8")
    with pytest.raises(ValueError) as error:
        redraw_error_vs_bos_mass(tmp_path)
    message = str(error.value)
    assert str(tmp_path / "results.json") in message and "not the results.json a reproduce run writes" in message, (
        f"the error should name the file that is not a run's results, got: {message}")


def test_redraw_error_vs_bos_mass_names_the_file_and_the_model_whose_worst_case_is_nan(tmp_path):
    results = json.loads((ROOT / "figures" / "results.json").read_text(encoding="utf-8"))
    results["models"]["softmax_1x1"]["worst_case"]["worst_case_error"] = float("nan")
    (tmp_path / "results.json").write_text(json.dumps(results), encoding="utf-8")
    with pytest.raises(ValueError) as error:
        redraw_error_vs_bos_mass(tmp_path)
    message = str(error.value)
    assert str(tmp_path / "results.json") in message and "models['softmax_1x1']['worst_case']" in message, (
        f"the error should name the results.json and the model whose worst case is not a number, got: {message}")
