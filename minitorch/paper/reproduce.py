"""The paper's experiments, end to end: ``python -m minitorch reproduce`` (chapters 07-09).

Six models: {softmax, ReLU} x {1 layer x 1 head (no residual), 2 layers x
2 heads, 4 layers x 4 heads (residual)}, trained with the paper's
hyperparameters (`train.train`), then measured on the fixed-trigger test set
(1,000 sequences, trigger at 1-based position 8). Writes to the output folder:

- ``fig3_single_layer.png`` (the paper's Fig. 3), ``heads_<normaliser>_<LxH>.png``
  (Figs. 4-8), ``sink_forming.png`` and ``sink_forming.gif`` (new), and
  ``error_vs_bos_mass.png``: every trained model on the axes of Theorem 1
  (chapter 05), beside the softmax family and the proved bound;
  ``heads_bos_mass.png``: every head's BOS mass through training, for the
  softmax models with several heads (chapter 09: when the split into sinking
  and non-sinking heads settles);
- ``results.md`` and ``results.json``: the numbers the paper never printed;
- ``models/<name>.npz`` (weights, loadable with `models.load_model`) and
  ``models/<name>_history.json`` (the training history).

Every run writes into ``runs/<name>/`` unless told otherwise (`default_out`):
``runs/full`` for the full run at the book's seed, ``runs/quick``, ``runs/seed1``...,
all untracked, so that a newcomer's first run leaves the checkout as it was. The
book's own ``figures/`` is rewritten only when asked for by name, ``--out figures``. The output folder is checked before
any work (`minitorch.outputs`). A run is built beside it and its files moved in
only when it completes, so an interrupted or failed run leaves the previous results
as they were. results.json records the run's command line and files (`run_files`):
the next run into the folder replaces all of them, never a part (a run of another
command line only with ``--force``), and leaves every other file of the folder alone
(``figures/beyond/``, say).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import platform
import signal
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from minitorch import checks
from minitorch.outputs import (RecordedRun, building_aside, check_input_file, check_output_folder, files_to_replace,
                               end_with_parent, given_path, ignore_stops, read_recorded_run, signals_held,
                               write_atomically, written_files)
from minitorch.paper import metrics, plotting, theory
from minitorch.paper.metrics import SINK_BOS_MASS
from minitorch.paper.plotting.error_vs_bos_mass import check_trained
from minitorch.paper.models import (AttentionModel, attention_model, build_model, for_training, load_model,
                                    save_model, training_path, use_training_path)
from minitorch.paper.task import make_test_set
from minitorch.tensor import no_grad
from minitorch.paper.train import TrainingResult, train

PAPER_NORMALISERS = ("softmax", "relu")  # the two the paper compares; every known one: attention.NORMALISERS


@dataclass(frozen=True)
class Architecture:
    """One of the paper's three model shapes and its learning rate."""

    layers: int
    heads: int
    residual: bool
    lr: float
    quick_steps: int  # the step budget under --quick
    record_every: int
    snapshot_every: int

    @property
    def name(self) -> str:
        return f"{self.layers}x{self.heads}"


ARCHITECTURES = {
    "1x1": Architecture(1, 1, residual=False, lr=1e-3, quick_steps=1500, record_every=10, snapshot_every=20),
    "2x2": Architecture(2, 2, residual=True, lr=1e-4, quick_steps=300, record_every=100, snapshot_every=1000),
    "4x4": Architecture(4, 4, residual=True, lr=1e-4, quick_steps=150, record_every=100, snapshot_every=1000),
}
MAX_STEPS = 50_000
# Training runs in float32, for faster steps. On all six models it gives the float64 run's sinks and
# step counts (softmax 4x4: 27,567 against 27,715). Gradient checks stay in float64 (tests/), where
# rounding must not hide a wrong rule.
TRAINING_DTYPE = np.float32
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")  # BLAS threads per process


def evaluate(model: AttentionModel) -> tuple[dict, list, np.ndarray]:
    """Error and sink measures on the fixed-trigger test set at the model's width, as `train` makes its data:
    (measures, attention per layer, triggers)."""
    model = attention_model("evaluate", model)
    x, y, triggers = make_test_set(residual=model.residual, width=model.config["width"])
    with no_grad():
        prediction, attention = model(x, return_attention=True)
    heads = metrics.head_table(attention, triggers)
    bos_means = [head["bos_mass_mean"] for head in heads]
    return dict(
        test_max_error=float(np.abs(prediction.data - y).max()),
        test_mse=float(((prediction.data - y) ** 2).mean()),
        bos_mass_mean=float(np.mean(bos_means)),
        bos_mass_min=float(min(head["bos_mass_min"] for head in heads)),
        row_mass_max=float(max(head["row_mass_max"] for head in heads)),
        heads_sinking=int(sum(mean >= SINK_BOS_MASS for mean in bos_means)),
        heads_total=len(heads),
        gu_sink_share=metrics.sink_share(attention),
        heads=heads,
    ), attention, triggers


def train_one(architecture: Architecture, normaliser: str, seed: int, quick: bool, progress) -> TrainingResult:
    """Build one of the paper's models and train it with the paper's recipe, on the training path
    (`models.for_training`: the command line puts it on the fast path, the same computation, faster)."""
    model = for_training(build_model(16, architecture.heads, architecture.layers, normaliser, architecture.residual,
                                 seed=seed, dtype=TRAINING_DTYPE))
    return train(model, lr=architecture.lr, max_steps=architecture.quick_steps if quick else MAX_STEPS,
                 seed=seed, record_every=architecture.record_every,
                 snapshot_every=architecture.snapshot_every, progress=progress,
                 label=f"{normaliser:7s} {architecture.name}")


def run_one(architecture: Architecture, normaliser: str, seed: int = 0, quick: bool = False,
            progress=True) -> tuple:
    """Train and evaluate one model: (result, evaluation, test attention per layer, test triggers)."""
    result = train_one(architecture, normaliser, seed, quick, progress)
    return (result, *evaluate(result.model))


def _train_all(tasks: list, seed: int, quick: bool, progress: bool, jobs: int) -> list[TrainingResult]:
    """Train every (architecture, normaliser) in `tasks`, in `jobs` processes at once."""
    progress = progress if jobs <= 1 else "lines" if progress else False
    arguments = [(ARCHITECTURES[name], normaliser, seed, quick, progress) for name, normaliser in tasks]
    return run_in_processes([train_one] * len(tasks), arguments, jobs)


def run_in_processes(functions: list, arguments: list, jobs: int) -> list:
    """``[f(*a) for f, a in zip(functions, arguments)]``, in `jobs` processes at once.

    The runs are independent and each is seeded, so running them side by
    side changes no number; it only uses the machine's other cores. Each
    process gets one BLAS thread (the matrices are small; more threads would
    fight over the cores).
    """
    jobs = min(jobs, len(functions))  # --jobs 1000 starts no more processes than there are runs
    if jobs <= 1:
        return [function(*args) for function, args in zip(functions, arguments)]
    previous = {name: os.environ.get(name) for name in THREAD_VARIABLES}
    os.environ.update({name: "1" for name in THREAD_VARIABLES})  # read by numpy as each worker starts
    try:
        _start_resource_tracker()
        pool = ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_start_worker, initargs=(os.getpid(),))
        try:
            path = training_path()  # each run goes on the training path of the process that started it
            with signals_held() as came:  # submit starts the workers: a stop between a spawned worker's start
                # and the write of its task to its pipe left it reading an empty pipe (an EOFError traceback);
                # one sent to the whole group ended the workers too, and a broken pool was reported, not the stop
                futures = [pool.submit(_on_training_path, path, function, *args)
                           for function, args in zip(functions, arguments)]
            if came:
                signal.raise_signal(came[0])  # the stop, now that every worker has its task
            results = [future.result() for future in futures]
        except BrokenProcessPool:  # a worker was killed (the kernel's out-of-memory killer, a SIGKILL to it alone)
            _stop_workers(pool)
            raise ChildProcessError(f"a worker process ended before its run finished (killed by the system, perhaps "
                                    f"out of memory, or by a SIGKILL sent to it alone); nothing of this run was "
                                    f"kept: run the command again, with fewer --jobs if memory is short") from None
        except BaseException:  # Ctrl-C, or one run failed: stop the others now instead of waiting for them
            _stop_workers(pool)
            raise
        pool.shutdown()
        return results
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _start_resource_tracker() -> None:
    """Start multiprocessing's resource tracker (a helper process that a spawn pool needs) deaf to signals.

    It ignores Ctrl-C and SIGTERM itself, but SIGQUIT, SIGHUP, SIGUSR1, ... sent to the whole process group
    (Ctrl-\\ in a terminal) killed it, and it printed tracebacks after the command had said clearly that it
    stopped. Started with those signals blocked, it inherits the block; it ends when this process does."""
    from multiprocessing import resource_tracker

    faults = {signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL, signal.SIGABRT, signal.SIGCHLD}
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals() - faults)
    try:
        resource_tracker.ensure_running()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def _start_worker(parent: int) -> None:
    """Run in each worker as it starts: Ctrl-C, or another stop sent to the whole process group (Ctrl-\\),
    reaches the workers too, but only the main process handles it, and it ends them (`ignore_stops`); a SIGKILL
    of the main process, which no handler sees, ends the worker too (`end_with_parent`)."""
    ignore_stops()
    end_with_parent(parent, signal.SIGKILL)


def _on_training_path(path, function, *args):
    """In a worker: ``function(*args)`` with models on the training path `path`."""
    use_training_path(path)
    return function(*args)


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    """Cancel the runs not started and end the running ones at once (with SIGKILL: they ignore the stops)."""
    workers = list((getattr(pool, "_processes", None) or {}).values())  # the executor has no public handle on them
    pool.shutdown(wait=False, cancel_futures=True)
    workers += [child for child in multiprocessing.active_children() if child not in workers]  # one still starting
    for worker in workers:
        worker.kill()
    for worker in workers:
        worker.join(timeout=5)
    for child in multiprocessing.active_children():  # started while these stopped
        child.kill()
        child.join(timeout=5)


def selected(only, owner: str = "reproduce") -> list[str]:
    """The architectures `only` (None: all) in one order, ARCHITECTURES': --only 2x2,1x1 is --only 1x1,2x2, in the
    run's default folder as in the command line it records; or a ValueError naming `owner`."""
    only = list(ARCHITECTURES) if only is None else list(only)
    if not only or len(set(only)) != len(only) or not set(only) <= set(ARCHITECTURES):
        raise ValueError(f"{owner}: only must list distinct architectures from {list(ARCHITECTURES)}, got {only}")
    return [name for name in ARCHITECTURES if name in only]


def default_out(quick: bool = False, only: list[str] | None = None, seed: int = 0) -> Path:
    """Where a run writes unless told: a folder of runs/ (untracked) named after what differs from the book's
    run, ``runs/full`` for the book's run itself, e.g. ``runs/quick``, ``runs/seed1_only-1x1``,
    ``runs/quick_only-1x1`` (so that two kinds of run never share a default folder). The book's figures/ is
    written only by ``--out figures``."""
    only = selected(only, "default_out")
    partial = set(only) != set(ARCHITECTURES)
    parts = ["quick"] * quick + [f"seed{seed}"] * bool(seed) + (["only-" + "-".join(only)] if partial else [])
    return Path("runs", "_".join(parts) or "full")


def run_command(quick: bool, only: list[str], seed: int) -> str:
    """The command line that names a run, e.g. ``reproduce --quick --only 1x1``: runs with the same one write
    the same files, so one may replace the other's without --force. Its arguments are checked as reproduce's are:
    a command line that reproduce would refuse names no run."""
    only = selected(only, "run_command")
    quick, seed = checks.flag("run_command", "quick", quick), checks.integer("run_command", "seed", seed, minimum=0)
    partial = set(only) != set(ARCHITECTURES)
    return " ".join(["reproduce"] + ["--quick"] * quick + (["--only", ",".join(only)] if partial else [])
                    + (["--seed", str(seed)] if seed else []))


def run_files(only: list[str]) -> list[str]:
    """The files a run of the architectures `only` writes, relative to its folder (see the module docstring)."""
    keys = [f"{normaliser}_{name}" for name in only for normaliser in PAPER_NORMALISERS]
    files = ["results.json", "results.md", "error_vs_bos_mass.png"]
    files += [f"models/{key}{ending}" for key in keys for ending in (".npz", "_history.json")]
    files += [f"heads_{key}.png" for key in keys if not key.endswith("1x1")]
    files += ["heads_bos_mass.png"] * (set(only) != {"1x1"})
    if "1x1" in only:
        files += ["fig3_single_layer.png", "sink_forming.png", "sink_forming.gif"]
    return sorted(files)


def recorded_run(out: Path) -> RecordedRun | None:
    """The run recorded by ``out/results.json``: its command line and files; None if there is no such file or
    it records no run (it is then a file in the way, like any other: a folder, a FIFO, not JSON)."""
    return read_recorded_run(Path(out) / "results.json")


def reproduce(out: str | Path | None = None, quick: bool = False, only: list[str] | None = None, seed: int = 0,
              progress: bool = True, jobs: int = 1, log=print, force: bool = False) -> dict:
    """Train the selected models, write figures and results into `out`; return the results.

    `only` (default: every architecture) names the architectures, e.g. ``["1x1"]``.
    `out` defaults to `default_out`: a folder of runs/; the book's figures/ only when asked for by name.
    `jobs` > 1 trains that many models at once, in separate processes.
    `force`: replace an earlier run of another command line in `out` (``--force``); without it, such a
    folder is refused before any work (`minitorch.outputs.files_to_replace`).
    Every model goes through `models.for_training` (``python -m minitorch reproduce`` puts it on the fast path).
    """
    only = selected(only)
    seed, jobs = checks.integer("reproduce", "seed", seed, minimum=0), checks.integer("reproduce", "jobs", jobs)
    quick, progress, force = (checks.flag("reproduce", name, value) for name, value in
                              (("quick", quick), ("progress", progress), ("force", force)))
    log = checks.log_function("reproduce", "log", log)
    out = check_output_folder(default_out(quick, only, seed) if out is None else out)
    command = run_command(quick, only, seed)
    earlier = recorded_run(out)
    replacing = files_to_replace(out, run_files(only), earlier, command, force)
    log(f"writing to {out}/ when the run completes"
        + (f", replacing the {len(earlier.files)} files of the earlier run ({earlier.command})" if earlier else ""))
    try:
        with building_aside(out, replacing) as staging:
            results, figures = _reproduce_into(staging, quick, only, seed, progress, jobs, log)
    except KeyboardInterrupt:
        log(f"interrupted: every worker stopped; nothing was written to {out}/ (its previous files are unchanged)")
        raise
    log(f"wrote {figures} figures, results.md and results.json to {out}/ in {results['total_wall_time_seconds']:.0f} s")
    return results


def _reproduce_into(out: Path, quick: bool, only: list[str], seed: int, progress: bool, jobs: int,
                    log) -> tuple[dict, int]:
    """`reproduce`'s work, written into `out`: (results, number of figures)."""
    (out / "models").mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    tasks = [(name, normaliser) for name in only for normaliser in PAPER_NORMALISERS]
    longest_first = sorted(tasks, key=lambda task: -list(ARCHITECTURES).index(task[0]))  # packs the processes best
    trained = dict(zip(longest_first, _train_all(longest_first, seed, quick, progress, jobs)))
    runs: dict[str, dict] = {}
    for name, normaliser in tasks:
        result = trained[name, normaliser]
        evaluation, attention, _ = evaluate(result.model)
        worst_case = theory.worst_case(result.model)  # on stress inputs, every trigger in 2..L-1
        del worst_case["head_bos_mass_min"]  # an array, not a number for results.json
        if name == "1x1" and normaliser == "relu":  # a single ReLU head: δ is also bounded from above
            worst_case.update(theory.relu_error_upper_bound(result.model))
        key = f"{normaliser}_{name}"
        runs[key] = dict(result=result, evaluation=evaluation, attention=attention, worst_case=worst_case)
        save_model(result.model, out / "models" / f"{key}.npz")
        (out / "models" / f"{key}_history.json").write_text(json.dumps(result.history), encoding="utf-8")
        log(f"{key}: {result.steps} steps ({'stopped early' if result.converged else 'step budget reached'}), "
            f"{result.wall_time:.1f} s, test max error {evaluation['test_max_error']:.2e}, "
            f"heads sinking {evaluation['heads_sinking']}/{evaluation['heads_total']}")
    written = write_figures(runs, out)
    results = _results_document(runs, quick, only, seed, time.perf_counter() - started)
    (out / "results.md").write_text(results_markdown(results), encoding="utf-8")
    write_record(out, results)
    return results, len(written)


def write_record(out: str | Path, results: dict, indent: int = 2) -> None:
    """Write ``results.json`` last into the folder `out`, listing every file of the run (itself included) under
    "files"."""
    out = Path(out)
    results["files"] = sorted(set(written_files(out)) | {"results.json"})
    write_atomically(out / "results.json", json.dumps(results, indent=indent, default=_as_json))


def _as_json(value):
    """A NumPy number or array as the Python number or list json can write; anything else named."""
    if isinstance(value, (np.generic, np.ndarray)) and value.dtype.kind in "biuf":
        return value.tolist()
    raise TypeError(f"write_record: results.json can hold numbers, strings, lists and dicts, not "
                    f"{value!r:.60} ({type(value).__name__})")


def write_figures(runs: dict, out: Path) -> list[Path]:
    """Every figure whose models were trained in this run (the softmax family's models are on the training path
    too)."""
    written = []
    if "softmax_1x1" in runs and "relu_1x1" in runs:
        softmax_run, relu_run = runs["softmax_1x1"], runs["relu_1x1"]
        written.append(plotting.save(plotting.single_layer_figure(
            softmax_run["attention"][0], relu_run["attention"][0]), out / "fig3_single_layer.png"))
        written.append(plotting.save(plotting.sink_forming_figure(
            softmax_run["result"].history, softmax_run["result"].snapshots,
            "The sink forming: softmax, 1 layer x 1 head (probe set, trigger at position 8)",
            compare=relu_run["result"].history), out / "sink_forming.png"))
        written.append(plotting.attention_animation(
            {"softmax": softmax_run["result"].snapshots, "ReLU": relu_run["result"].snapshots},
            out / "sink_forming.gif"))
    for key, run in runs.items():
        if not key.endswith("1x1"):
            first_sequence = [weights[0] for weights in run["attention"]]  # per layer (H, L, L)
            normaliser, shape = key.split("_")
            title = (f"{'softmax' if normaliser == 'softmax' else 'ReLU'}, {shape.replace('x', ' layers x ')} heads: "
                     f"one test sequence")
            written.append(plotting.save(plotting.head_grid_figure(first_sequence, title), out / f"heads_{key}.png"))
    several_heads = {key: run["result"].history for key, run in runs.items()
                     if key.startswith("softmax") and not key.endswith("1x1")}
    if several_heads:
        written.append(plotting.save(plotting.head_bos_mass_figure(several_heads, SINK_BOS_MASS),
                                     out / "heads_bos_mass.png"))
    written.append(draw_error_vs_bos_mass({key: run["worst_case"] for key, run in runs.items()}, out))
    return written


def draw_error_vs_bos_mass(worst_cases: dict, out: Path) -> Path:
    """``error_vs_bos_mass.png`` from each trained model's worst case ({model name: its ``worst_case`` entry of
    results.json}), beside the softmax family; `redraw_error_vs_bos_mass` redraws it from a run's folder."""
    trained = _trained_points(worst_cases)
    family = theory.softmax_family(np.arange(0.0, 31.0))
    return plotting.save(plotting.plot_error_vs_bos_mass(family, trained), Path(out) / "error_vs_bos_mass.png")


def _trained_points(worst_cases: dict) -> list[dict]:
    """The points of plot_error_vs_bos_mass's `trained`, one per model of `worst_cases`."""
    return [dict(label=key, covered=key == "softmax_1x1", **worst) for key, worst in worst_cases.items()]


def redraw_error_vs_bos_mass(folder: str | Path) -> Path:
    """Redraw a run's ``error_vs_bos_mass.png`` from its results.json and saved models, without training: the
    single ReLU head's upper bound on δ (`theory.relu_error_upper_bound`) is computed from its saved weights when
    the run did not record it. `folder` may also be its results.json."""
    results_file = _results_file_of_run("redraw_error_vs_bos_mass", folder)
    folder = results_file.parent
    try:
        models = json.loads(results_file.read_text(encoding="utf-8"))["models"]
        worst_cases = {key: dict(model["worst_case"]) for key, model in models.items()}
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as error:  # not (readable) JSON, or
        # not a run's results: a file nested too deep for json's reader raises RecursionError
        raise ValueError(f"redraw_error_vs_bos_mass: {results_file} is not the results.json a reproduce run writes "
                         f"({type(error).__name__}: {error})") from None
    check_trained(_trained_points(worst_cases), f"redraw_error_vs_bos_mass: {results_file}",  # (a nan, an edit)
                  [f"models[{key!r}]['worst_case']" for key in worst_cases])
    if "relu_1x1" in worst_cases and "worst_case_error_upper" not in worst_cases["relu_1x1"]:
        worst_cases["relu_1x1"].update(theory.relu_error_upper_bound(load_model(folder / "models" / "relu_1x1.npz")))
    return draw_error_vs_bos_mass(worst_cases, folder)


def _results_file_of_run(owner: str, folder) -> Path:
    """The results.json of the run folder `folder` (or `folder` itself, if it is that file), a regular file; else
    FileNotFoundError or ValueError naming `owner` and the folder."""
    path = given_path(folder, f"{owner}: folder")
    results_file = path if path.name == "results.json" and not path.is_dir() else path / "results.json"
    if path.is_file() and path != results_file:
        raise ValueError(f"{owner}: {path} is a file, not a run's folder; give the folder reproduce wrote (its --out)")
    if not os.path.lexists(results_file):  # (a link that loops or leads nowhere is named by check_input_file)
        found = "holds no results.json" if path.is_dir() else "does not exist"
        raise FileNotFoundError(f"{owner}: {path} {found}; give the folder reproduce wrote (its --out)")
    check_input_file(results_file, owner, error=ValueError)  # a FIFO would block the read forever
    return results_file


def _results_document(runs: dict, quick: bool, only: list[str], seed: int, total_time: float) -> dict:
    models = {}
    for key, run in runs.items():
        result: TrainingResult = run["result"]
        models[key] = dict(
            config=result.model.config, steps=result.steps, converged=result.converged,
            final_batch_max_error=result.final_max_error, wall_time_seconds=round(result.wall_time, 2),
            worst_case=run["worst_case"], **run["evaluation"],
        )
    return dict(command=run_command(quick, only, seed), quick=quick, seed=seed,
                total_wall_time_seconds=round(total_time, 1), numpy=np.__version__,
                python=platform.python_version(), models=models)


def results_markdown(results: dict) -> str:
    """The results (the dict a reproduce run writes to results.json) as markdown tables: one summary row per model,
    one table per multi-head model."""
    try:
        return _markdown_tables(results)
    except (KeyError, TypeError, AttributeError) as error:  # a key missing, a value of another type
        raise ValueError(f"results_markdown: results is not the results.json a reproduce run writes "
                         f"({type(error).__name__}: {error})") from None


def _markdown_tables(results: dict) -> str:
    lines = [
        "# Results" + (" (quick mode: small step budgets, not the paper's)" if results["quick"] else ""),
        "",
        f"Seed {results['seed']}; test set: 1,000 sequences, trigger at 1-based position 8. "
        f"A head *sinks* if its mean BOS mass at non-trigger rows is at least {SINK_BOS_MASS}. "
        f"Total wall time {results['total_wall_time_seconds']} s.",
        "",
        "| model | steps | stopped early | test max error | BOS mass, non-trigger rows (mean / min) "
        "| max row mass, non-trigger rows | heads sinking | Gu Sink₁^0.3 | wall time (s) |",
        "|---|---:|:---:|---:|---:|---:|---:|---:|---:|",
    ]
    for key, model in results["models"].items():
        lines.append(
            f"| {key} | {model['steps']} | {'yes' if model['converged'] else 'no'} | {model['test_max_error']:.2e} "
            f"| {model['bos_mass_mean']:.4f} / {model['bos_mass_min']:.4f} | {model['row_mass_max']:.3g} "
            f"| {model['heads_sinking']}/{model['heads_total']} | {model['gu_sink_share']:.2f} "
            f"| {model['wall_time_seconds']:.1f} |"
        )
    if "softmax_1x1" in results["models"]:
        worst = results["models"]["softmax_1x1"]["worst_case"]
        required = float(theory.theorem1_bos_lower_bound(worst["worst_case_error"]))
        lines += ["", "## Theorem 1 on the trained softmax 1x1 model (chapter 05)", "",
                  f"On stress inputs (random, corner and all-equal contents, every trigger position 2..15) its "
                  f"largest error is δ̂ = {worst['worst_case_error']:.3g} and its smallest BOS mass at a "
                  f"non-trigger row is {worst['bos_mass_min']:.4f}; Theorem 1 at δ̂ requires at least "
                  f"{required:.4f}: the bound {'holds' if worst['bos_mass_min'] >= required else 'is VIOLATED'}."]
    for key, model in results["models"].items():
        if model["heads_total"] > 1:
            lines += ["", f"## {key}: per head", "",
                      "| layer | head | BOS mass mean | BOS mass min | trigger row on BOS | Gu α_BOS | sinks |",
                      "|---:|---:|---:|---:|---:|---:|:---:|"]
            for head in model["heads"]:
                lines.append(
                    f"| {head['layer'] + 1} | {head['head'] + 1} | {head['bos_mass_mean']:.3f} "
                    f"| {head['bos_mass_min']:.3f} "
                    f"| {head['trigger_bos']:.3f} | {head['gu_alpha_bos']:.3f} "
                    f"| {'yes' if head['bos_mass_mean'] >= SINK_BOS_MASS else 'no'} |"
                )
    return "\n".join(lines) + "\n"
