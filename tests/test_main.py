"""Specification of the command line, ``python -m minitorch``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from minitorch.__main__ import main

ROOT = Path(__file__).resolve().parent.parent


def test_module_runs_as_a_command():
    completed = subprocess.run([sys.executable, "-m", "minitorch", "--help"], cwd=ROOT, capture_output=True, text=True)
    assert completed.returncode == 0 and "reproduce" in completed.stdout, completed.stderr


@pytest.mark.parametrize("command", [("minitorch", "reproduce", "--help"), ("minitorch", "book", "--help"),
                                     ("minitorch.tools.bench", "--help"), ("minitorch.exercises", "grade", "--help")],
                         ids=["reproduce", "book", "bench", "grade"])
def test_every_command_runs_with_docstrings_stripped(command):
    """Under python -OO the parsers must not depend on __doc__ for their description: it is None there."""
    completed = subprocess.run([sys.executable, "-OO", "-m", *command], cwd=ROOT, capture_output=True, text=True,
                               timeout=120)
    assert completed.returncode == 0 and "Traceback" not in completed.stderr, completed.stderr
    assert "usage:" in completed.stdout, completed.stdout


@pytest.mark.parametrize("arguments,message", [
    (["reproduce", "--only", "3x3"], "unknown architecture"),
    (["reproduce", "--seed", "-1"], "--seed"),
    (["bench", "--steps", "0"], "--steps"),
    (["reproduce", "--beyond", "--only", "1x1"], "--beyond"),
    (["reproduce", "--seeds", "--beyond"], "--seeds"),
    (["reproduce", "--seeds", "--seed", "3"], "--seeds"),
    (["reproduce", "--seeds", "--only", "4x4"], "--seeds"),
    (["reproduce", "--bogus"], "unrecognized arguments"),
    (["frobnicate"], "invalid choice"),
])
def test_bad_arguments_exit_with_a_message_naming_the_problem(arguments, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(arguments)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.slow
def test_reproduce_only_1x1_quick_from_the_command_line(tmp_path):
    completed = subprocess.run(
        [sys.executable, "-m", "minitorch", "reproduce", "--quick", "--only", "1x1", "--out", str(tmp_path),
         "--no-progress"],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr
    assert (tmp_path / "fig3_single_layer.png").is_file()
    assert "softmax_1x1" in (tmp_path / "results.md").read_text()


def test_quick_runs_never_default_to_the_books_figures(monkeypatch):
    calls = {}
    monkeypatch.setattr("minitorch.paper.reproduce.reproduce", lambda out, **kwargs: calls.setdefault("out", out))
    main(["reproduce", "--quick", "--only", "1x1"])
    assert calls["out"] == "runs/quick_only-1x1", "a quick run must not overwrite figures/ unless --out says so"


def test_beyond_quick_runs_never_default_to_the_books_figures(monkeypatch):
    calls = {}
    monkeypatch.setattr("minitorch.paper.beyond.run_beyond",
                        lambda out, budget, **options: calls.update(out=out, budget=budget))
    main(["reproduce", "--beyond", "--quick"])
    assert calls["out"] == "runs/quick/beyond" and calls["budget"].quick, \
        "reproduce --beyond --quick must write to runs/quick/beyond with the quick budget"


def test_the_full_beyond_run_writes_the_books_figures_only_when_asked_by_name(monkeypatch):
    calls = []
    monkeypatch.setattr("minitorch.paper.beyond.run_beyond", lambda out, budget, **options: calls.append(out))
    main(["reproduce", "--beyond"])
    main(["reproduce", "--beyond", "--out", "figures/beyond"])
    assert calls == ["runs/beyond", "figures/beyond"], \
        "reproduce --beyond writes to runs/beyond (untracked); figures/beyond only with --out figures/beyond"


@pytest.mark.parametrize("arguments,function", [
    (["reproduce", "--quick"], "minitorch.paper.reproduce.reproduce"),
    (["reproduce", "--beyond", "--quick"], "minitorch.paper.beyond.run_beyond"),
])
def test_the_reproduce_command_trains_on_the_fast_path(monkeypatch, arguments, function):
    from minitorch import fast

    from minitorch.paper import models

    calls = {}
    monkeypatch.setattr(models, "_training_path", models.as_built)  # restored after the test
    monkeypatch.setattr(function, lambda *args, **kwargs: calls.update(path=models.training_path()))
    main(arguments)
    assert calls.get("path") is fast.speed_up, (f"python -m minitorch {' '.join(arguments)} must train on the fast "
                                                f"path (minitorch.fast.use_for_training)")


def _stub_of(exercise_id: str):
    from minitorch.exercises.registry import EXERCISES

    return NotImplementedError(EXERCISES[exercise_id].stub_message())


def test_a_command_stopped_by_an_exercise_stub_says_which_exercise_in_one_line(capsys):
    from minitorch.exercises.registry import exercise_needed
    from minitorch.tools.exit_policy import run_command

    def reproduce(argv):
        raise _stub_of("4.1")

    status = run_command(reproduce, ["reproduce", "--quick"], explain=exercise_needed)
    err = capsys.readouterr().err
    assert status == 2, f"a command stopped by a stub should exit with status 2, got {status}"
    assert err.count("\n") == 1 and "Traceback" not in err, f"expected one line, got:\n{err}"
    assert err.startswith("python -m minitorch reproduce needs exercise 4.1 (make_targets in minitorch/paper/task.py) "
                          "first"), err
    assert "python -m pytest -m ex4_1" in err, f"the line should say how to check the exercise: {err}"


def test_a_stub_quoted_inside_another_error_is_recognised_and_other_errors_keep_their_traceback(capsys):
    from minitorch.exercises.registry import exercise_needed
    from minitorch.tools.exit_policy import run_command

    def wrapped(argv):
        try:
            raise _stub_of("3.2")
        except NotImplementedError as error:
            raise RuntimeError("a worker process failed") from error

    assert run_command(wrapped, ["book"], explain=exercise_needed) == 2
    assert "python -m minitorch book needs exercise 3.2 (softmax_attention" in capsys.readouterr().err

    def unrelated(argv):
        raise NotImplementedError("not a stub of the book's exercises")

    with pytest.raises(NotImplementedError, match="not a stub"):
        run_command(unrelated, ["reproduce"], explain=exercise_needed)


def test_reproduce_in_a_fresh_student_edition_stops_in_one_line_naming_exercise_4_1(tmp_path):
    from minitorch.exercises.edition import make_student_edition
    from minitorch.exercises.registry import EXERCISES

    import minitorch

    root = Path(minitorch.__file__).resolve().parent.parent  # the copy under test (--minitorch-root)
    edition = tmp_path / "edition"
    make_student_edition(edition, [EXERCISES["4.1"]], root)
    out = tmp_path / "run"
    completed = subprocess.run([sys.executable, "-m", "minitorch", "reproduce", "--quick", "--only", "1x1", "--out",
                                str(out), "--no-progress", "--jobs", "1"], cwd=edition, capture_output=True, text=True,
                               timeout=600)
    assert completed.returncode == 2, (f"reproduce in an edition without exercise 4.1 should exit with status 2, got "
                                       f"{completed.returncode}:\n{completed.stderr[-2000:]}")
    assert "Traceback" not in completed.stderr, f"a traceback instead of one line:\n{completed.stderr[-2000:]}"
    last = completed.stderr.strip().splitlines()[-1]
    assert last.startswith("python -m minitorch reproduce needs exercise 4.1 (make_targets in "
                           "minitorch/paper/task.py) first"), last
    assert not out.exists(), f"{out} was written although the run stopped"


def test_the_seeds_run_writes_the_books_figures_only_when_asked_by_name(monkeypatch):
    calls = []
    monkeypatch.setattr("minitorch.paper.beyond.run_seeds", lambda out, **options: calls.append((out, options)))
    main(["reproduce", "--seeds"])
    main(["reproduce", "--seeds", "--quick", "--out", "figures/seeds"])
    assert [out for out, _ in calls] == ["runs/seeds", "figures/seeds"] and calls[1][1]["quick"], \
        "reproduce --seeds writes to runs/seeds unless --out names a folder"
