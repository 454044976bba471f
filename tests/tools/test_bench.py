"""Specification of minitorch.tools.bench: it measures, in fresh processes, and never asserts a time."""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path

import pytest

from minitorch.tools import bench

# A student edition leaves the floor out (it repeats answers to exercises 2.4, 2.5 and 3.1-3.3), and bench, which
# trains on the task's targets (exercise 4.1) and more, stops there before it measures.
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("minitorch.fast.hand_fused") is None,
    reason="a student edition has no NumPy floor to compare with (it holds answers to exercises)")


@pytest.mark.parametrize("implementation", ["minitorch", "minitorch readable", "numpy floor"])
def test_measure_runs_one_implementation_in_a_fresh_process(implementation):
    result = bench.measure(implementation, "1x1", steps=2, blocks=1)
    assert result["ms_per_step"] > 0, f"{implementation}: a training step cannot take {result['ms_per_step']} ms"
    assert result["peak_rss_mib"] > 1, f"{implementation}: peak memory {result['peak_rss_mib']} MiB is not plausible"


def test_the_table_compares_every_available_implementation(monkeypatch):
    monkeypatch.setattr(bench, "CONFIGURATIONS", {"1x1": (1, 1)})
    lines = []
    rows = bench.run_steps(steps=2, blocks=1, rounds=1, print_=lines.append)  # one fresh process per implementation
    assert len(rows) == 1 and rows[0]["model"] == "softmax 1x1", f"expected one row for softmax 1x1, got {rows}"
    assert rows[0]["minitorch/floor"] > 0, "the minitorch / floor ratio is missing"
    assert rows[0]["readable/floor"] > 0, "the readable path's ratio to the floor is missing"
    assert any(line.startswith("| softmax 1x1 |") for line in lines), "the markdown table has no row for the model"
    assert ("minitorch / pytorch" in "\n".join(lines)) == (bench.pytorch_version() is not None), \
        "PyTorch must be compared exactly when it is installed"


def test_a_failing_child_process_raises_with_its_error():
    with pytest.raises(RuntimeError, match="no_such_implementation"):
        bench.measure("no_such_implementation", "1x1", steps=1, blocks=1)


@pytest.mark.parametrize("measurement,culprit", [
    ([1, 2, 3, 4, 5, 6, 7], "the implementation 1 is not one of minitorch, "),
    (["minitorch", "3x3", "softmax", "float32", 1, 1, 1], "the model '3x3' is not one of 1x1, 2x2, 4x4"),
    (["minitorch", "1x1", "gated", "float32", 1, 1, 1], "the normaliser 'gated' is not one of softmax, relu"),
    (["minitorch", "1x1", "softmax", "float32", 1, 1, 100], "threads must be a whole number from 1 to 64, got 100"),
    (["minitorch", "1x1", "softmax", "float32", 1.5, 1, 1], "steps must be a whole number from 1 to 10000, got 1.5"),
], ids=["numbers", "unknown-model", "normaliser-without-a-floor", "too-many-threads", "fractional-steps"])
def test_the_hidden_child_option_names_a_bad_measurement_in_one_line(capsys, measurement, culprit):
    """--child is bench's own, but typed by hand a bad value was a KeyError traceback from deep in the child."""
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--child", json.dumps(measurement)])
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert exit_info.value.code == 2 and culprit in error, f"{measurement} should be refused naming {culprit!r}: " \
                                                           f"{error}"


def test_a_child_process_killed_without_a_word_is_named_with_its_signal_and_stops_bench_in_one_line(monkeypatch,
                                                                                                     capsys):
    import subprocess

    killed = subprocess.CompletedProcess([], returncode=-11, stdout="", stderr="")  # as a segmentation fault ends it
    monkeypatch.setattr(bench.subprocess, "run", lambda *args, **kwargs: killed)
    with pytest.raises(bench.MeasurementFailed) as error:
        bench.measure("pytorch", "1x1", steps=1, blocks=1, threads=3)
    assert "pytorch softmax 1x1 (float32, 3 thread(s)) failed: its process was killed by SIGSEGV" in str(error.value), (
        f"a failed measurement should say which one failed and how its process ended, got: {error.value}")
    assert bench.main(["--steps", "1", "--blocks", "1", "--rounds", "1"]) == 1
    printed = capsys.readouterr().err
    assert "killed by SIGSEGV" in printed and "Traceback" not in printed, f"bench should end in one line:\n{printed}"


def test_a_child_process_that_says_one_line_is_quoted_on_the_failed_line(monkeypatch):
    """'failed: ' ended its line and the reason came on the next, so the reason looked empty."""
    import subprocess

    said = "python -m minitorch.tools.bench: error: File too large"
    failed = subprocess.CompletedProcess([], returncode=1, stdout="", stderr=said + "\n")
    monkeypatch.setattr(bench.subprocess, "run", lambda *args, **kwargs: failed)
    with pytest.raises(bench.MeasurementFailed) as error:
        bench.measure("pytorch", "1x1", steps=1, blocks=1)
    assert str(error.value).endswith(f"failed: {said}"), f"the child's one line should follow 'failed:': {error.value}"


def test_the_authors_estimate_adds_their_per_step_times_over_the_models():
    steps = {"softmax_1x1": 1000, "relu_4x4": 2000}
    expected = (1000 * bench.AUTHORS_MS_PER_STEP["1x1"] + 2000 * bench.AUTHORS_MS_PER_STEP["4x4"]) / 1e3
    assert bench.authors_estimate_seconds(steps) == pytest.approx(expected)


def test_time_reproduce_reads_the_steps_the_run_wrote(monkeypatch):
    def fake_run(command, **kwargs):  # stands in for the 7-minute reproduction
        out = Path(command[command.index("--out") + 1])
        (out / "results.json").write_text(json.dumps({"models": {"softmax_1x1": {"steps": 776}}}))
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setattr(bench.subprocess, "run", fake_run)
    result = bench.time_reproduce(print_=lambda line: None)
    assert result["steps"] == {"softmax_1x1": 776}, f"time_reproduce read the wrong steps: {result['steps']}"
    assert result["authors_estimate_seconds"] == pytest.approx(776 * bench.AUTHORS_MS_PER_STEP["1x1"] / 1e3)


def test_a_failed_reproduce_under_bench_is_one_line_naming_its_status(monkeypatch, capsys):
    monkeypatch.setattr(bench, "run_steps", lambda *args: {})  # the step timings are not what this test is about
    monkeypatch.setattr(bench.subprocess, "run", lambda command, **kwargs: subprocess.CompletedProcess(command, 2))
    assert bench.main(["--reproduce"]) == 1
    printed = capsys.readouterr().err
    assert "reproduce ended with status 2" in printed and "Traceback" not in printed, printed
