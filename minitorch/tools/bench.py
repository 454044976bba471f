"""Speed: ``python -m minitorch.tools.bench`` (chapter 00).

Times the training step a reader waits for (forward, backward, Adam on a
fresh batch of 128 sequences) of the paper's three model shapes, side by side:

- **minitorch**: the book's engine on the fast path (`minitorch.fast.speed_up`), as
  ``python -m minitorch reproduce`` trains;
- **minitorch readable**: the same model on the readable path, the code the chapters show and
  the default of `minitorch.paper.train`;
- **numpy floor**: `minitorch.fast.hand_fused.NumpyStep`, the same step written by hand in
  NumPy with no autograd, the fastest we could make it;
- **pytorch**: the same model in PyTorch eager mode, only if ``torch`` is
  already installed (it is never a requirement).

Each (implementation, model) pair runs in a fresh process with the same
number of BLAS threads, so no run inherits another's memory or warm caches,
and the process's peak memory belongs to that pair alone. A run is a warm-up
then several blocks of steps; the number reported is the fastest block's
median, the one least disturbed by other work on the machine. Wall-clock
numbers depend on the machine and its load; the tests never assert them.

A student edition has no floor: `minitorch.fast.hand_fused` repeats answers to exercises 2.4, 2.5 and
3.1-3.3, so the edition leaves it out, and `bench` says so and stops.

``--reproduce`` also times ``python -m minitorch reproduce`` end to end and
compares it with the author's scripts, estimated from their per-step times.

Measured on a 2-core AMD EPYC virtual machine (Python 3.11.7, NumPy 2.4.6, PyTorch not installed) shared
with other work, each number the best of two runs of ``python -m minitorch bench --relu``:

=============  ============  ===========  ==============  ===============  ===============
model          minitorch ms  readable ms  NumPy floor ms  minitorch/floor  readable/floor
=============  ============  ===========  ==============  ===============  ===============
softmax 1x1    0.62          1.66         0.47            1.32             3.53
softmax 2x2    2.06          6.81         1.86            1.11             3.66
softmax 4x4    7.95          27.02        7.69            1.03             3.51
relu 1x1       0.52          1.57         0.37            1.41             4.24
relu 2x2       1.80          6.82         1.53            1.18             4.46
relu 4x4       6.76          26.95        6.46            1.05             4.17
=============  ============  ===========  ==============  ===============  ===============

Peak memory per process: 76-97 MiB for each of the three. The code before the fast path moved into
`minitorch.fast` (commit ba89ca4) needed 1.20 / 1.33 / 1.65x the floor (softmax 4x4 / 2x2 / 1x1) and
1.43 / 1.56 / 1.95x (ReLU), measured the same way in the same session. What is left on the fast path is
the engine's bookkeeping (about ten graph nodes per step, recorded, sorted and visited backwards) and
Adam, one parameter at a time; the readable path takes 2.7-4.0x the fast path's time: its products run
on head views that are not contiguous, every step is its own graph node, and the engine's softmax
reduces the 16 keys with NumPy's slow short-axis reductions. Above all, it runs without
`minitorch.fast.memory`: glibc returns the arrays a step's graph freed to the system, and the next step
waits while the kernel maps and zeroes them again (320 / 1,504 / 5,920 page faults per 1x1 / 2x2 / 4x4
step). In one process each (CPU time, best of 40 blocks, float32, on this machine at load 7-8) the
readable step took 2.18 / 8.53 / 30.6 ms as it runs, 1.29 / 4.68 / 15.9 ms with freed memory kept: 40-48%
of its time is those faults (the fast path and the floor keep freed memory and fault none). Time in the
kernel depends on what else the machine is doing, which is likely why the readable path's ratio to the
floor moves more from run to run than the fast path's.

The whole reproduction, ``python -m minitorch reproduce --jobs 2``, took 318 s for 56,888 steps, against
379 s for the code of commit ba89ca4, run back to back; every model array, history, result and figure of
the two runs is byte for byte the same (and the same as ``figures/``). The author's PyTorch scripts load
their data one sample at a time and take about 12 / 13 / 22 ms per 1x1 / 2x2 / 4x4 step on a 2-core
machine like this one (measured once, `AUTHORS_MS_PER_STEP`); for the same steps that is about 17.5
minutes, so the reproduction here is about 3.3x faster end to end. On this shared machine the end-to-end
time moves by about 15% from run to run. An earlier session with PyTorch 2.13.0 (CPU) installed measured
its eager step at 1.07 / 4.47 / 14.86 ms (softmax 1x1 / 2x2 / 4x4), with a peak of over 300 MiB per
process: at these sizes the cost is dispatch, not arithmetic.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from minitorch.checks import number_argument
from minitorch.outputs import (OutputPathError, OwnFile, check_output_file, json_written_by,
                               write_atomically)
from minitorch.paper.reproduce import THREAD_VARIABLES  # the variables reproduce sets, set here per process
from minitorch.tools.options import CommandParser, refuse_options

CONFIGURATIONS = {"1x1": (1, 1), "2x2": (2, 2), "4x4": (4, 4)}  # name -> (layers, heads)
IMPLEMENTATIONS = ("minitorch", "minitorch readable", "numpy floor", "pytorch")
NORMALISERS = ("softmax", "relu")  # the paper's two: the NumPy floor is written by hand for these only
DTYPES = ("float32", "float64")
# bounded, so that a typo (--steps 1000000000) cannot run for days: 10,000 steps of 4x4 take about 2 minutes;
# threads as --jobs is: beyond the machine's cores they time their contention, not speed, and a PyTorch child
# given 100,000 threads dies of a segmentation fault
MAXIMA = {"steps": 10_000, "blocks": 100, "threads": 64}
BATCH_SIZE, LR = 128, 1e-4
# The author's PyTorch scripts, ms per step, measured once on a 2-core machine (not rerun by the tests):
# their per-sample data loading dominates, so these hardly depend on the machine's BLAS.
AUTHORS_MS_PER_STEP = {"1x1": 12.0, "2x2": 13.0, "4x4": 22.0}


# ----------------------------------------------------------------------
# one training step, three ways


def _batches(residual: bool, dtype, count: int = 16) -> list:
    """A fixed pool of (x, y) batches, drawn once so that data generation is not timed."""
    from minitorch.paper.task import make_batch

    rng = np.random.default_rng(0)
    return [tuple(a.astype(dtype) for a in make_batch(BATCH_SIZE, rng, residual)[:2]) for _ in range(count)]


def minitorch_step(layers: int, heads: int, normaliser: str, dtype, fast: bool = True):
    """`step(x, y)` of minitorch, as `minitorch.paper.train` takes it: on the fast path, as
    ``python -m minitorch reproduce`` trains, or (`fast` False) on the readable path."""
    from minitorch.fast import speed_up
    from minitorch.paper.models import build_model
    from minitorch.optim import Adam
    from minitorch.paper.train import BETAS, mse_loss

    model = build_model(16, heads, layers, normaliser, layers > 1, dtype=dtype)
    if fast:
        model = speed_up(model)
    optimizer = Adam(model.parameters(), lr=LR, betas=BETAS)

    def step(x, y):
        loss = mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    return step


def numpy_floor_step(layers: int, heads: int, normaliser: str, dtype):
    """`step(x, y)` of the hand-written NumPy floor, from the same initial weights."""
    from minitorch.fast.memory import keep_freed_memory
    from minitorch.paper.models import build_model
    from minitorch.fast.hand_fused import NumpyStep
    from minitorch.paper.train import BETAS

    keep_freed_memory()
    model = build_model(16, heads, layers, normaliser, layers > 1, dtype=dtype)
    return NumpyStep(model.state_dict(), model.config, lr=LR, betas=BETAS).step


def pytorch_step(layers: int, heads: int, normaliser: str, dtype):
    """`step(x, y)` of the same model in PyTorch eager mode, vectorised over the batch."""
    import torch

    from minitorch.fast.hand_fused import torch_normaliser
    from minitorch.paper.models import build_model
    from minitorch.paper.train import BETAS

    model = build_model(16, heads, layers, normaliser, layers > 1, dtype=dtype)
    weights = {name: torch.tensor(array, requires_grad=True) for name, array in model.state_dict().items()}
    optimizer = torch.optim.Adam(weights.values(), lr=LR, betas=BETAS)
    n, length = 16, 16
    normalise = torch_normaliser(normaliser, length, dtype)  # (B, H, L, L) -> weights

    def forward(x):
        batch = x.shape[0]
        for layer in range(layers):
            w = {p: weights[f"layers.{layer}.W_{p}.weight"] for p in "QKVO"}
            split = [(x @ w[p].T).view(batch, length, heads, n).transpose(1, 2) for p in "QKV"]  # (B, H, L, n)
            scores = split[0] @ split[1].transpose(-1, -2)
            joined = (normalise(scores) @ split[2]).transpose(1, 2).reshape(batch, length, heads * n)
            update = joined @ w["O"].T
            x = x + update if layers > 1 else update
        return x

    def step(x, y):
        x, y = torch.from_numpy(x), torch.from_numpy(y)
        loss = ((forward(x) - y) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    return step


def readable_step(layers: int, heads: int, normaliser: str, dtype):
    """`step(x, y)` of minitorch on the readable path: the model the chapters show, not sped up."""
    return minitorch_step(layers, heads, normaliser, dtype, fast=False)


STEP_BUILDERS = {"minitorch": minitorch_step, "minitorch readable": readable_step, "numpy floor": numpy_floor_step,
                 "pytorch": pytorch_step}


def time_steps(step, batches, steps: int, blocks: int) -> float:
    """Seconds per step: the fastest block's median, after a warm-up."""
    for x, y in batches[:10]:
        step(x, y)
    block_medians = []
    for _ in range(blocks):
        times = []
        for index in range(steps):
            x, y = batches[index % len(batches)]
            start = time.perf_counter()
            step(x, y)
            times.append(time.perf_counter() - start)
        block_medians.append(float(np.median(times)))
    return min(block_medians)


def _measure_here(implementation: str, config: str, normaliser: str, dtype_name: str, steps: int,
                  blocks: int, threads: int) -> dict:
    """Run in the child process: build, time, report ms per step and peak memory."""
    layers, heads = CONFIGURATIONS[config]
    dtype = np.dtype(dtype_name).type
    if implementation == "pytorch":
        import torch

        torch.set_num_threads(threads)
    step = STEP_BUILDERS[implementation](layers, heads, normaliser, dtype)
    seconds = time_steps(step, _batches(layers > 1, dtype), steps, blocks)
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # Linux reports KiB
    return dict(ms_per_step=1e3 * seconds, peak_rss_mib=peak_kib / 1024)


def _measurement_arguments(text: str) -> list:
    """The arguments of `_measure_here` from the JSON list `measure` passes to its child process (``--child``), or
    ValueError naming the first wrong one: a wrong name would fail deep in the child, as a traceback."""
    values = json.loads(text)
    if not isinstance(values, list) or len(values) != 7:
        raise ValueError("not a list of 7 values")
    names = {"implementation": STEP_BUILDERS, "model": CONFIGURATIONS, "normaliser": NORMALISERS, "dtype": DTYPES}
    for (what, known), value in zip(names.items(), values):
        if not isinstance(value, str) or value not in known:
            raise ValueError(f"the {what} {value!r} is not one of {', '.join(known)}")
    for (what, maximum), value in zip(MAXIMA.items(), values[4:]):
        if type(value) is not int or not 1 <= value <= maximum:
            raise ValueError(f"{what} must be a whole number from 1 to {maximum}, got {value!r}")
    return values


class MeasurementFailed(RuntimeError):
    """A measurement's process ended with an error; the message says which one and how it ended."""


def _how_it_ended(returncode: int, stderr: str) -> str:
    """What a failed child process said (on the same line if it said one line), or, if it said nothing, the signal
    or exit status that ended it."""
    said = stderr.strip()
    if said:
        return said if "\n" not in said else "\n" + said[-2000:]
    if returncode < 0:
        return f"its process was killed by {signal.Signals(-returncode).name} and printed nothing"
    return f"its process exited with status {returncode} and printed nothing"


def measure(implementation: str, config: str, normaliser: str = "softmax", dtype: str = "float32",
            steps: int = 40, blocks: int = 5, threads: int = 1) -> dict:
    """Time one implementation on one model in a fresh process (see the module docstring)."""
    environment = dict(os.environ, **{name: str(threads) for name in THREAD_VARIABLES})
    environment["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                                 environment.get("PYTHONPATH", "")])
    arguments = json.dumps([implementation, config, normaliser, dtype, steps, blocks, threads])
    child = subprocess.run([sys.executable, "-m", "minitorch.tools.bench", "--child", arguments],
                           capture_output=True, text=True, env=environment)
    if child.returncode != 0:
        raise MeasurementFailed(f"bench: {implementation} {normaliser} {config} ({dtype}, {threads} thread(s)) failed: "
                                f"{_how_it_ended(child.returncode, child.stderr)}")
    return json.loads(child.stdout.strip().splitlines()[-1])


def pytorch_version() -> str | None:
    """The installed torch version, or None (looked up without importing torch)."""
    from importlib import metadata

    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None


# ----------------------------------------------------------------------
# the table


def run_steps(normalisers=("softmax",), dtype: str = "float32", steps: int = 40, blocks: int = 5,
              threads: int = 1, rounds: int = 3, print_=print) -> list[dict]:
    """Measure every implementation on every model; print a markdown table; return the rows."""
    implementations = [name for name in IMPLEMENTATIONS if name != "pytorch" or pytorch_version()]
    print_(machine_description(threads))
    print_(f"{dtype}, batch {BATCH_SIZE}, {threads} BLAS thread(s); ms per training step (forward, backward, "
           f"Adam) = fastest of {blocks} blocks' medians over {steps} steps, best of {rounds} interleaved rounds; "
           f"peak RSS of a process running only that model\n")
    header = ("| model | " + " | ".join(f"{name} ms" for name in implementations)
              + " | minitorch / floor | readable / floor |")
    if "pytorch" in implementations:
        header += " minitorch / pytorch |"
    header += " peak RSS MiB (" + ", ".join(implementations) + ") |"
    print_(header)
    print_("|" + "---|" * (header.count("|") - 1))
    pairs = [(normaliser, config) for normaliser in normalisers for config in CONFIGURATIONS]
    best = _best_of_rounds(pairs, implementations, rounds, dtype=dtype, steps=steps, blocks=blocks, threads=threads)
    rows = []
    for normaliser, config in pairs:
        row = dict(model=f"{normaliser} {config}", dtype=dtype, threads=threads)
        for implementation in implementations:
            row[implementation] = best[normaliser, config, implementation]
        ms = {name: row[name]["ms_per_step"] for name in implementations}
        row["minitorch/floor"] = ms["minitorch"] / ms["numpy floor"]
        row["readable/floor"] = ms["minitorch readable"] / ms["numpy floor"]
        line = f"| {row['model']} | " + " | ".join(f"{ms[name]:.2f}" for name in implementations)
        line += f" | {row['minitorch/floor']:.2f} | {row['readable/floor']:.2f} |"
        if "pytorch" in ms:
            row["minitorch/pytorch"] = ms["minitorch"] / ms["pytorch"]
            line += f" {row['minitorch/pytorch']:.2f} |"
        line += " " + ", ".join(f"{row[name]['peak_rss_mib']:.0f}" for name in implementations) + " |"
        print_(line)
        rows.append(row)
    return rows


def _best_of_rounds(pairs, implementations, rounds: int, **options) -> dict:
    """{(normaliser, config, implementation): the fastest of `rounds` measurements}.

    The rounds are interleaved, so a burst of outside load hits every implementation alike.
    """
    best: dict = {}
    for _ in range(rounds):
        for normaliser, config in pairs:
            for implementation in implementations:
                result = measure(implementation, config, normaliser, **options)
                key = (normaliser, config, implementation)
                if key not in best or result["ms_per_step"] < best[key]["ms_per_step"]:
                    best[key] = result
    return best


def machine_description(threads: int) -> str:
    """One line: CPU, cores, Python, NumPy and (if installed) PyTorch versions."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    torch = pytorch_version()
    return (f"machine: {cpu}, {os.cpu_count()} cores; Python {platform.python_version()}, NumPy {np.__version__}"
            + (f", PyTorch {torch}" if torch else ", PyTorch not installed"))


# ----------------------------------------------------------------------
# the whole reproduction


def authors_estimate_seconds(steps: dict) -> float:
    """The author's scripts' time for these steps, e.g. {"softmax_4x4": 27567}, one model after another."""
    return sum(AUTHORS_MS_PER_STEP[name.split("_")[-1]] * count for name, count in steps.items()) / 1e3


def time_reproduce(jobs: int = 2, print_=print) -> dict:
    """Run ``python -m minitorch reproduce`` into a scratch folder; compare with the author's scripts.

    The author's time is estimated for the same numbers of steps our run took, at their
    per-step times (`AUTHORS_MS_PER_STEP`), one model after another as their scripts run.
    """
    with tempfile.TemporaryDirectory() as scratch:
        start = time.perf_counter()
        run = subprocess.run([sys.executable, "-m", "minitorch", "reproduce", "--out", scratch, "--jobs", str(jobs),
                              "--no-progress"], stdout=subprocess.DEVNULL)
        if run.returncode != 0:  # reproduce said why on stderr, which we leave to the terminal
            raise MeasurementFailed(f"bench --reproduce: python -m minitorch reproduce ended with status "
                                    f"{run.returncode}, so there is no time to report (its own message is above)")
        wall = time.perf_counter() - start
        models = json.loads((Path(scratch) / "results.json").read_text(encoding="utf-8"))["models"]
    steps = {name: model["steps"] for name, model in models.items()}
    authors = authors_estimate_seconds(steps)
    result = dict(wall_seconds=wall, steps=steps, authors_estimate_seconds=authors, speedup=authors / wall, jobs=jobs)
    print_(f"\n`python -m minitorch reproduce --jobs {jobs}`: {wall / 60:.1f} min for "
           f"{sum(steps.values()):,} steps ({', '.join(f'{k} {v:,}' for k, v in steps.items())}); the author's "
           f"scripts at {AUTHORS_MS_PER_STEP} ms/step: {authors / 60:.1f} min; speed-up {authors / wall:.1f}x")
    return result


WRITER = "python -m minitorch bench"
OWN_JSON = OwnFile(f'a file of measurements that bench --json wrote (JSON with "written_by": "{WRITER}")',
                   lambda path: json_written_by(path, WRITER))


def main(argv=None) -> int:
    parser = CommandParser(prog="python -m minitorch.tools.bench", description=(__doc__ or "").split("\n")[0])
    count = dict(integer=True, minimum=1)
    parser.add_argument("--steps", type=number_argument("--steps", **count, maximum=MAXIMA["steps"]), default=40,
                        help="steps per timed block (default 40, at most 10,000)")
    parser.add_argument("--blocks", type=number_argument("--blocks", **count, maximum=MAXIMA["blocks"]), default=5,
                        help="timed blocks; the fastest counts (default 5, at most 100)")
    parser.add_argument("--rounds", type=number_argument("--rounds", **count, maximum=20), default=3,
                        help="times each measurement is repeated, interleaved with the others; the best counts "
                             "(default 3, at most 20)")
    parser.add_argument("--threads", type=number_argument("--threads", **count, maximum=MAXIMA["threads"]),
                        default=1,
                        help="BLAS/PyTorch threads per process (default 1, as each reproduce worker runs; at most 64)")
    parser.add_argument("--dtype", choices=DTYPES, default="float32")
    parser.add_argument("--relu", action="store_true", help="also time the ReLU-attention models")
    parser.add_argument("--reproduce", action="store_true", help="also time `python -m minitorch reproduce`")
    parser.add_argument("--jobs", type=number_argument("--jobs", **count, maximum=64), default=2,
                        help="--jobs for the timed reproduce (only with --reproduce; default 2)")
    parser.add_argument("--json", default=None, help="also write the measurements to this file")
    parser.add_argument("--force", action="store_true",
                        help="replace --json even if it is not a file of measurements this command wrote")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:  # one measurement, in a fresh process started by `measure`
        try:
            measurement = _measurement_arguments(args.child)
        except ValueError as error:
            parser.error(f"--child (used by bench itself) takes the JSON list `measure` writes: {error}")
        print(json.dumps(_measure_here(*measurement)))
        return 0
    if not args.reproduce:  # argparse would take them and ignore them without a word
        refuse_options(parser, ["--jobs"], "only to the timed reproduce; add --reproduce, or leave --jobs out")
    if args.json is None:
        refuse_options(parser, ["--force"], "only to the file --json names; add --json, or leave --force out")
    try:  # before minutes of measuring
        json_path = None if args.json is None else check_output_file(args.json, "--json", own=OWN_JSON,
                                                                      force=args.force)
    except OutputPathError as error:
        parser.error(str(error))
    if importlib.util.find_spec("minitorch.fast.hand_fused") is None:
        print("bench: this copy has no minitorch/fast/hand_fused.py, the hand-fused NumPy floor it compares with: "
              "it repeats answers to exercises, so a student edition leaves it out", file=sys.stderr)
        return 2
    normalisers = NORMALISERS if args.relu else ("softmax",)
    try:
        steps = run_steps(normalisers, args.dtype, args.steps, args.blocks, args.threads, args.rounds)
    except MeasurementFailed as error:  # one line naming the measurement, not a traceback through the loops
        print(error, file=sys.stderr)
        return 1
    results = dict(written_by=WRITER, steps=steps)  # the mark that lets a later --json replace this file
    if args.reproduce:
        try:
            results["reproduce"] = time_reproduce(args.jobs)
        except MeasurementFailed as error:
            print(error, file=sys.stderr)
            return 1
    if json_path:
        try:  # again: a file saved there while bench measured is someone's too (reproduce and book check again)
            check_output_file(args.json, "--json", own=OWN_JSON, force=args.force)
        except OutputPathError as error:
            print(f"bench: {error}; the measurements follow here instead:\n{json.dumps(results, indent=2)}",
                  file=sys.stderr)
            return 1
        write_atomically(json_path, json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    from minitorch.tools.exit_policy import run_command

    sys.exit(run_command(main, name="python -m minitorch.tools.bench", exits=True))
