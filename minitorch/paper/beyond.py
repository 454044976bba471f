"""Beyond the paper (chapter 10): ``python -m minitorch reproduce --beyond``.

Four experiments the paper did not run, each written to ``figures/beyond/``:

1. **The zoo.** Every normaliser (`minitorch.paper.attention.NORMALISERS`: softmax, ReLU and the sink-free family
   of `minitorch.paper.sink_free`) trained on the task as a 1 layer x 1 head model, several seeds. At the
   non-trigger rows, where the right output is 0, where does the attention mass go: to BOS (a sink), to the
   content keys, or *nowhere* (rows that sum to less than 1)?
2. **The log T law.** Softmax 1x1 models trained at L = 8, 16, 32, 64. To put
   mass ``1 - ρ`` on BOS against n content keys (ρ, the row's leak: chapter 10's
   name, apart from the worst-case error δ), the BOS score must beat the content
   scores' mean by at least ``log n + log((1 - ρ)/ρ)`` (chapter 10 derives it from
   Jensen's inequality). We measure that gap row by row.
3. **Seeds.** The 4 layer x 4 head softmax model over 10 seeds: the share of heads that sink, layer by layer, and
   the spread of steps to the stop.
4. **The price of a sink.** Along training, the error left at non-trigger rows against the BOS mass: softmax can
   only reach a small error by sinking, the sink-free normalisers need not.

Apart from these, ``python -m minitorch reproduce --seeds`` (`run_seeds`) trains the 1x1 and 2x2 models, softmax
and ReLU, from ten seeds each: the spread of their steps, sinking heads and BOS mass (chapter 10, section 5).

Every run is seeded; the runs are independent, so `jobs` > 1 trains them
side by side in separate processes without changing a number.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from minitorch import checks, ops
from minitorch.outputs import building_aside, check_output_folder, files_to_replace
from minitorch.paper import metrics, plotting
from minitorch.paper.attention import NORMALISERS, causal_mask, softmax_attention
from minitorch.paper.metrics import SINK_BOS_MASS
from minitorch.paper.models import attention_model, build_model, for_training
from minitorch.paper.reproduce import (ARCHITECTURES, TRAINING_DTYPE, evaluate, recorded_run,
                                       run_in_processes, train_one, write_record)
from minitorch.paper.task import TEST_SEED, TEST_SIZE, TEST_TRIGGER, make_batch, make_test_set, marked_triggers
from minitorch.paper.theory.bounds import gap_bound
from minitorch.paper.train import train
from minitorch.tensor import Tensor, as_tensor, no_grad

ZOO_LR, ZOO_MAX_STEPS = 1e-3, 5_000  # the paper's 1x1 learning rate; a budget every variant can use
LAW_LENGTHS = (8, 16, 32, 64)
LAW_MAX_STEPS = 20_000
FILES = ("log_t_law.png", "price_of_a_sink.png", "results.json", "results.md", "seeds_4x4.png", "zoo_maps.png",
         "zoo_mass.png")  # what a run writes into its folder


@dataclass(frozen=True)
class Budget:
    """How much of each experiment to run: the full one, or a quick check."""

    zoo_seeds: tuple
    zoo_max_steps: int
    law_lengths: tuple
    law_max_steps: int
    seeds_4x4: tuple
    quick: bool

    def __post_init__(self) -> None:
        """Checked when made: each experiment runs at least once (its figure is drawn from its runs, after all the
        training), its steps and seeds are integers, and each length fits the test set (trigger at 7)."""
        for name, minimum in (("zoo_seeds", 0), ("law_lengths", TEST_TRIGGER + 1), ("seeds_4x4", 0)):
            values = getattr(self, name)
            if not isinstance(values, (tuple, list)) or not values:
                error = ValueError if isinstance(values, (tuple, list)) else TypeError
                raise error(f"Budget: {name} must be a non-empty tuple of integers (each experiment runs at least "
                            f"once: its figure is drawn from its runs), got {values!r:.60}")
            for value in values:
                checks.integer("Budget", f"each of {name}", value, minimum=minimum)
            if len(set(values)) < len(values):  # a seed trained twice would count as two; a length fitted twice too
                raise ValueError(f"Budget: {name} must be distinct, got {tuple(values)!r:.60}")
            object.__setattr__(self, name, tuple(values))  # so that a Budget of lists == FULL, and hashes
        checks.integer("Budget", "zoo_max_steps", self.zoo_max_steps)
        checks.integer("Budget", "law_max_steps", self.law_max_steps)
        checks.flag("Budget", "quick", self.quick)


FULL = Budget(zoo_seeds=(0, 1, 2), zoo_max_steps=ZOO_MAX_STEPS, law_lengths=LAW_LENGTHS,
              law_max_steps=LAW_MAX_STEPS, seeds_4x4=tuple(range(10)), quick=False)
QUICK = Budget(zoo_seeds=(0,), zoo_max_steps=150, law_lengths=(8, 16), law_max_steps=150,
               seeds_4x4=(0, 1), quick=True)


def zoo_normalisers() -> list[str]:
    """Every registered normaliser, the paper's two first."""
    return ["softmax", "relu"] + sorted(name for name in NORMALISERS if name not in ("softmax", "relu"))


# ----------------------------------------------------------------------
# where the mass goes


def mass_split(per_layer_weights, triggers) -> dict:
    """Mean attention mass at non-trigger rows, split three ways (each a number).

    ``bos`` = a_i0, ``content`` = Σ_{k≥1} a_ik, ``nowhere`` = 1 - Σ_k a_ik
    (negative when a row sums to more than 1, as sigmoid and ReLU rows may).
    """
    per_layer_weights = metrics.per_layer("mass_split", per_layer_weights)
    for index, weights in enumerate(per_layer_weights):  # (the metrics would name themselves, not mass_split)
        if np.ndim(weights) != 4 or np.shape(triggers) != np.shape(weights)[:1]:
            raise ValueError(f"mass_split: per_layer_weights[{index}] has shape {np.shape(weights)} and triggers "
                             f"{np.shape(triggers)}; they must be (B, H, L, L) and (B,)")
        metrics.measured_rows("mass_split", triggers, np.shape(weights)[-1])  # a mean over no row would be nan
    bos = np.mean([metrics.bos_mass_at_non_trigger_rows(w, triggers).mean() for w in per_layer_weights])
    total = np.mean([metrics.non_trigger_row_mass(w, triggers).mean() for w in per_layer_weights])
    return dict(bos=float(bos), content=float(total - bos), nowhere=float(1.0 - total))


def train_zoo_normaliser(normaliser: str, seed: int, max_steps: int) -> dict:
    """Train one 1x1 model of `normaliser` (on the training path, as `reproduce.train_one`); measure it on the
    test set."""
    model = for_training(build_model(16, 1, 1, normaliser, residual=False, seed=seed, dtype=TRAINING_DTYPE))
    result = train(model, lr=ZOO_LR, max_steps=max_steps, seed=seed, record_every=10, progress=False)
    x, y, triggers = make_test_set()
    with no_grad():
        prediction, attention = model(x, return_attention=True)
    error = np.abs(prediction.data - y)
    off_trigger = metrics.non_trigger_rows(triggers, x.shape[1])
    return dict(normaliser=normaliser, seed=seed, steps=result.steps, converged=result.converged,
                test_mse=float((error ** 2).mean()), test_max_error=float(error.max()),
                non_trigger_max_error=float(error[off_trigger].max()),
                sink_share=metrics.sink_share(attention), **mass_split(attention, triggers),
                trajectory={name: result.history[name] for name in
                            ("step", "bos_mass_mean", "max_error", "non_trigger_max_error", "row_mass_mean")},
                mean_map=attention[0][:, 0].mean(axis=0).tolist(), learned=learned_extras(model, x, triggers))


def _sequences(owner: str, model, x, triggers) -> tuple[np.ndarray, np.ndarray]:
    """x as a float64 array (B, L, n) of the model's width (a list of sequences is one) and triggers (B,), one
    position in 1..L-1 per sequence; or an error naming `owner`, x's shape and the shape wanted."""
    x = checks.real_numbers(owner, "x", x)
    if x.ndim != 3 or x.shape[-1] != model.config["width"] or np.shape(triggers) != x.shape[:1]:
        raise ValueError(f"{owner}: x must have shape (B, L, {model.config['width']}) and triggers (B,), got "
                         f"x {x.shape} and triggers {np.shape(triggers)}")
    return x, marked_triggers(owner, x, triggers)


def learned_extras(model, x: np.ndarray, triggers: np.ndarray) -> dict:
    """What a sink-free normaliser learned besides W_Q..W_O: the sink logit S, how far the gate closes.
    x: (B, L, n), triggers (B,)."""
    attention_model("learned_extras", model)
    x, triggers = _sequences("learned_extras", model, x, triggers)
    layer, extras = model.layers[0], {}
    if hasattr(layer, "sink_logit"):
        extras["sink_logit"] = layer.sink_logit.data.ravel().tolist()  # one S per head
    if getattr(layer, "output_gate", False):
        with no_grad():
            gate = layer.gate(as_tensor(x, like=layer.W_G.weight)).data  # σ(W_G^h x_i): (H, B, L, n)
        gate = gate.mean(axis=(0, 3))  # (B, L): mean over heads and coordinates
        at_trigger = np.zeros(gate.shape, dtype=bool)
        at_trigger[np.arange(len(triggers)), triggers] = True
        extras["gate_non_trigger_rows"] = float(gate[metrics.non_trigger_rows(triggers, x.shape[1])].mean())
        extras["gate_trigger_row"] = float(gate[at_trigger].mean())
    return extras


# ----------------------------------------------------------------------
# the log T law


def score_gaps(model, x: np.ndarray, triggers: np.ndarray) -> dict:
    """Row by row, at non-trigger rows i ≥ 2: the gap s_i0 - mean_{1≤k≤i} s_ik and the leak ρ_i = 1 - a_i0.

    Returns per-row lists (sequences averaged): ``content_keys`` (n = i), ``gap``, ``bound`` and ``delta``
    (the mean leak ρ_i; the key keeps the name results.json has always used), and ``slack_min``, the smallest
    (gap - bound) over every sequence and row (never negative: the bound is a theorem). Every row must be a
    non-trigger row of some sequence: triggers that vary (`task.make_batch`), not the test set's one trigger.
    """
    config = getattr(model, "config", None)  # what build_model's models record of their architecture
    if not isinstance(config, dict) or not {"heads", "layers", "normaliser"} <= config.keys():
        raise TypeError(f"score_gaps: model must be a one-layer, one-head softmax model (build_model(width, 1, 1, "
                        f"'softmax', ...)), got {type(model).__name__}, which records no architecture")
    if config["heads"] != 1 or config["layers"] != 1 or config["normaliser"] != "softmax":
        raise ValueError(f"score_gaps: needs a one-layer, one-head softmax model, got {model.name}")
    layer = attention_model("score_gaps", model).layers[0]
    xs, triggers = _sequences("score_gaps", model, x, triggers)  # float64: ρ may lie below float32's resolution
    keep = metrics.measured_rows("score_gaps", triggers, xs.shape[1], each_row_from=2)[:, 2:]  # (B, L-2)
    queries, keys = xs @ layer.W_Q.weight.data.T, xs @ layer.W_K.weight.data.T  # (B, L, n), one head
    scores = queries @ keys.transpose(0, 2, 1)  # (B, L, L)
    length = xs.shape[1]
    rows, future = np.arange(2, length), causal_mask(length)
    weights = softmax_attention(Tensor(scores), future).data  # (B, L, L), softmax over keys 0..i, in float64
    content_mean = np.nanmean(np.where(future, np.nan, scores)[:, rows, 1:], axis=-1)  # (B, L-2): mean_{1≤k≤i} s_ik
    gap = scores[:, rows, 0] - content_mean  # (B, L-2)
    leak = weights[:, :, 1:].sum(axis=-1)  # ρ_i = 1 - a_i0 = Σ_{k≥1} a_ik, accurate even when tiny
    leak, bos = leak[:, rows], weights[:, rows, 0]  # (B, L-2): row i sees n = i content keys
    bound = gap_bound(rows, leak, bos)
    mean_of = lambda values: [float(values[keep[:, r], r].mean()) for r in range(len(rows))]  # noqa: E731
    return dict(content_keys=rows.tolist(), gap=mean_of(gap), bound=mean_of(bound), delta=mean_of(leak),
                slack_min=float((gap - bound)[keep].min()))


def train_at_length(length: int, seed: int, max_steps: int) -> dict:
    """Train a softmax 1x1 model at sequence length `length`; measure its score gaps."""
    model = for_training(build_model(16, 1, 1, "softmax", residual=False, seed=seed, dtype=TRAINING_DTYPE))
    result = train(model, lr=ZOO_LR, max_steps=max_steps, seed=seed, record_every=50, progress=False,
                   length=length)
    # every trigger position: no row left empty
    x, _, triggers = make_batch(TEST_SIZE, np.random.default_rng(TEST_SEED), length=length)
    return dict(length=length, seed=seed, steps=result.steps, converged=result.converged,
                **score_gaps(model, x, triggers))


# ----------------------------------------------------------------------
# seeds of the 4x4 model


def train_seed_of_4x4(seed: int, quick: bool) -> dict:
    """Train the paper's 4x4 softmax model from `seed`; which heads sink, layer by layer."""
    result = train_one(ARCHITECTURES["4x4"], "softmax", seed, quick, progress=False)
    x, _, triggers = make_test_set(residual=True)
    with no_grad():
        _, attention = result.model(x, return_attention=True)
    table = metrics.head_table(attention, triggers)
    bos = np.array([head["bos_mass_mean"] for head in table]).reshape(4, 4)  # (layer, head)
    return dict(seed=seed, steps=result.steps, converged=result.converged, bos_mass=bos.tolist(),
                sinking_share_per_layer=(bos >= SINK_BOS_MASS).mean(axis=1).tolist(),
                sink_share=metrics.sink_share(attention))


# ----------------------------------------------------------------------
# seeds of the 1x1 and 2x2 models: ``python -m minitorch reproduce --seeds``

SEED_MODELS = (("1x1", "softmax"), ("1x1", "relu"), ("2x2", "softmax"), ("2x2", "relu"))
SEEDS = tuple(range(10))
SEED_FILES = ("results.json", "results.md")  # what run_seeds writes into its folder


def train_seed(shape: str, normaliser: str, seed: int, quick: bool) -> dict:
    """Train one of the paper's models from `seed` with its recipe (`reproduce.train_one`, on the training path);
    measure it on the test set as `reproduce.evaluate` does: steps, wall time, error, BOS mass, heads that sink."""
    if shape not in ARCHITECTURES:
        raise ValueError(f"train_seed: shape must be one of {list(ARCHITECTURES)}, got {shape!r}")
    result = train_one(ARCHITECTURES[shape], normaliser, seed, quick, progress=False)
    evaluation, _, _ = evaluate(result.model)
    return dict(shape=shape, normaliser=normaliser, seed=seed, steps=result.steps, converged=result.converged,
                wall_time_seconds=round(result.wall_time, 2), test_max_error=evaluation["test_max_error"],
                bos_mass_mean=evaluation["bos_mass_mean"], bos_mass_min=evaluation["bos_mass_min"],
                heads_sinking=evaluation["heads_sinking"], heads_total=evaluation["heads_total"],
                gu_sink_share=evaluation["gu_sink_share"],
                head_bos_mass=[head["bos_mass_mean"] for head in evaluation["heads"]])


def run_seeds(out: str | Path = "runs/seeds", seeds=SEEDS, quick: bool = False, jobs: int = 1, log=print,
              force: bool = False, shapes=("1x1", "2x2")) -> dict:
    """Train the models of `shapes` (of 1x1 and 2x2; softmax and ReLU) from every seed of `seeds`; write
    results.json and results.md into `out` (checked first, built aside and moved in whole, as `run_beyond`
    does; the command recorded is `seeds_command`'s)."""
    shapes, seeds = seed_shapes("run_seeds", shapes), checks.seeds("run_seeds", seeds)
    quick, force = checks.flag("run_seeds", "quick", quick), checks.flag("run_seeds", "force", force)
    log = checks.log_function("run_seeds", "log", log)  # called after the work: checked before it
    out, jobs = check_output_folder(out), checks.integer("run_seeds", "jobs", jobs)
    command = seeds_command(seeds, quick, shapes)
    replacing = files_to_replace(out, SEED_FILES, recorded_run(out), command, force)
    started = time.perf_counter()
    tasks = [(shape, normaliser, seed, quick) for shape, normaliser in reversed(SEED_MODELS) for seed in seeds
             if shape in shapes]
    try:
        with building_aside(out, replacing) as staging:
            runs = run_in_processes([train_seed] * len(tasks), tasks, jobs)  # the 2x2 runs first: they take longest
            order = {model: index for index, model in enumerate(SEED_MODELS)}
            runs.sort(key=lambda run: (order[run["shape"], run["normaliser"]], run["seed"]))
            results = dict(command=command, quick=quick, jobs=jobs, shapes=shapes, runs=runs,
                           wall_time_seconds=round(time.perf_counter() - started, 1), numpy=np.__version__)
            (staging / "results.md").write_text(seeds_markdown(results), encoding="utf-8")
            write_record(staging, results, indent=1)
    except KeyboardInterrupt:
        log(f"interrupted: every worker stopped; nothing was written to {out}/ (its previous files are unchanged)")
        raise
    log(f"seeds: wrote results.md and results.json to {out}/ in {results['wall_time_seconds']:.0f} s")
    return results


def seed_shapes(owner: str, shapes) -> list:
    """`shapes` (a list of some of '1x1' and '2x2', not one string) in SEED_MODELS' order, or a ValueError."""
    if not isinstance(shapes, (list, tuple)) or not shapes or any(shape not in ("1x1", "2x2") for shape in shapes):
        raise ValueError(f"{owner}: shapes must be a list of some of '1x1' and '2x2', got {shapes!r}")
    return list(dict.fromkeys(shape for shape, _ in SEED_MODELS if shape in shapes))


def seeds_command(seeds, quick: bool, shapes) -> str:
    """What results.json records as the command of a run_seeds run: the command line (``reproduce --seeds --quick
    --only 1x1``) for its seeds, SEEDS, and otherwise the Python call, which names the seeds. A run of other seeds
    is another run: the same command may replace its own earlier run, another one needs --force (`force`)."""
    seeds = checks.seeds("seeds_command", seeds)  # the command of arguments run_seeds refuses names no run
    quick, shapes = checks.flag("seeds_command", "quick", quick), seed_shapes("seeds_command", shapes)
    line = "reproduce --seeds" + " --quick" * quick + (f" --only {','.join(shapes)}" if len(shapes) < 2 else "")
    return line if sorted(seeds) == list(SEEDS) else (
        f"beyond.run_seeds(seeds={sorted(seeds)}, quick={quick}, shapes={tuple(shapes)})")


def _written_by(command: str) -> str:
    """How results.md names what wrote it: ``python -m minitorch reproduce ...`` for a command line, else the
    Python call recorded (a run the command line does not make: other seeds, another budget)."""
    return f"`python -m minitorch {command}`" if command.startswith("reproduce") else f"`{command}` (in Python)"


def seeds_table(runs: list[dict]) -> list[dict]:
    """One row per model (shape, normaliser): the spread over its seeds of steps, heads sinking and BOS mass. A
    seed given twice for one model is refused, as `Budget` refuses it: it would count as two seeds."""
    checks.records("seeds_table", "runs", runs, dict(shape=str, normaliser=str, seed=int, steps=int, converged=bool,
                   wall_time_seconds=float, bos_mass_mean=float, bos_mass_min=float, heads_sinking=int,
                   heads_total=int), "one seed's run (train_seed)")
    rows = []
    for shape, normaliser in dict.fromkeys((run["shape"], run["normaliser"]) for run in runs):
        mine = [run for run in runs if (run["shape"], run["normaliser"]) == (shape, normaliser)]
        seeds = [run["seed"] for run in mine]
        if len(set(seeds)) < len(seeds):  # two runs' records put together: the medians would weigh it twice
            raise ValueError(f"seeds_table: runs gives {normaliser}_{shape} the seeds {seeds!s:.60}, one of them more "
                             f"than once; a seed given twice would count as two: give each seed's run once")
        totals, sinking = sorted({run["heads_total"] for run in mine}), max(run["heads_sinking"] for run in mine)
        if len(totals) > 1 or sinking > totals[0]:  # records that contradict each other (edited, or of two models)
            raise ValueError(f"seeds_table: the runs of {normaliser}_{shape} give heads_total {totals} and up to "
                             f"{sinking} heads sinking; one model has one number of heads, and no more of them sink")
        values = lambda key: np.array([run[key] for run in mine], dtype=float)  # noqa: E731
        kinds = dict(steps=int, heads_sinking=int, bos_mass_mean=float, bos_mass_min=float)
        spread = {f"{key}_{end}": kind(pick(values(key))) for key, kind in kinds.items() for end, pick in (
                  ("min", np.min), ("max", np.max))}  # steps_min, steps_max, heads_sinking_min, ...
        rows.append(dict(model=f"{normaliser}_{shape}", seeds=len(mine), stopped=sum(run["converged"] for run in mine),
                         steps_median=float(np.median(values("steps"))), heads_total=totals[0], **spread,
                         wall_time_seconds=float(values("wall_time_seconds").sum())))
    return rows


def seeds_markdown(results: dict) -> str:
    """run_seeds' tables: the spread per model, then every run."""
    checks.record("seeds_markdown", "results", results, ("quick", "runs", "wall_time_seconds", "jobs"),
                  "run_seeds' results (results.json)")
    shapes = results.get("shapes", ["1x1", "2x2"])
    lines = [f"# Seeds of the {' and '.join(shapes)} models"
             + (" (quick mode: small step budgets, not the paper's)" if results["quick"] else ""),
             "", f"Written by {_written_by(results.get('command', 'reproduce --seeds'))} in "
             f"{results['wall_time_seconds'] / 60:.1f} min ({results['jobs']} processes; the training path of "
             f"`minitorch.fast`, float32). Each model with the paper's recipe from every seed; measured on the test "
             f"set (1,000 sequences, trigger at 1-based position 8). A head *sinks* if its mean BOS mass at the "
             f"non-trigger rows is at least {SINK_BOS_MASS}.", "",
             "| model | stopped / seeds | steps (min / median / max) | heads sinking (min-max) "
             "| BOS mass, mean (min-max over seeds) | BOS mass, min (min-max over seeds) "
             "| training time, all seeds (s) |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for row in seeds_table(results["runs"]):
        lines.append(f"| {row['model']} | {row['stopped']} / {row['seeds']} | {row['steps_min']:,} / "
                     f"{row['steps_median']:,.0f} / {row['steps_max']:,} | {row['heads_sinking_min']}-"
                     f"{row['heads_sinking_max']} of {row['heads_total']} | {row['bos_mass_mean_min']:.4f}-"
                     f"{row['bos_mass_mean_max']:.4f} | {row['bos_mass_min_min']:.4f}-{row['bos_mass_min_max']:.4f} "
                     f"| {row['wall_time_seconds']:.0f} |")
    lines += ["", "| model | seed | steps | test max error | BOS mass mean / min | heads sinking | wall time (s) |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    for run in results["runs"]:
        lines.append(f"| {run['normaliser']}_{run['shape']} | {run['seed']} | {run['steps']:,}"
                     f"{'' if run['converged'] else ' (budget)'} | {run['test_max_error']:.2e} "
                     f"| {run['bos_mass_mean']:.4f} / {run['bos_mass_min']:.4f} "
                     f"| {run['heads_sinking']}/{run['heads_total']} | {run['wall_time_seconds']:.1f} |")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------
# all of it


def run_beyond(out: str | Path = "figures/beyond", budget: Budget = FULL, jobs: int = 1, log=print,
               force: bool = False) -> dict:
    """Run the four experiments; write figures, results.md and results.json into `out`.

    As `reproduce.reproduce` does, `out` is checked before any work, the run is built beside it and moved
    in only when it completes (an interrupted run leaves the previous results as they were), and an
    earlier run of another command line in `out` is replaced, whole, only with `force` (a budget other than FULL
    and QUICK records itself as the command: another run). Every model trains on the training path, as in
    `reproduce.reproduce`.
    """
    if not isinstance(budget, Budget):
        raise TypeError(f"run_beyond: budget must be beyond.FULL, beyond.QUICK or a beyond.Budget(...), got "
                        f"{budget!r} ({type(budget).__name__})")
    out, jobs = check_output_folder(out), checks.integer("run_beyond", "jobs", jobs)
    log = checks.log_function("run_beyond", "log", log)  # called after the work: checked before it
    command = {FULL: "reproduce --beyond", QUICK: "reproduce --beyond --quick"}.get(  # the command line's budgets
        budget, f"beyond.run_beyond(budget={budget!r})")  # another budget is another run: --force to replace it
    replacing = files_to_replace(out, FILES, recorded_run(out), command, force)
    try:
        with building_aside(out, replacing) as staging:
            results, written = _run_beyond_into(staging, budget, jobs, command)
    except KeyboardInterrupt:
        log(f"interrupted: every worker stopped; nothing was written to {out}/ (its previous files are unchanged)")
        raise
    log(f"beyond: wrote {written} figures, results.md and results.json to {out}/ "
        f"in {results['wall_time_seconds']:.0f} s")
    return results


def _run_beyond_into(out: Path, budget: Budget, jobs: int, command: str) -> tuple[dict, int]:
    """`run_beyond`'s work, written into `out`: (results, number of figures)."""
    started = time.perf_counter()
    tasks = ([(train_seed_of_4x4, (seed, budget.quick)) for seed in budget.seeds_4x4]  # longest first
             + [(train_at_length, (length, 0, budget.law_max_steps)) for length in budget.law_lengths]
             + [(train_zoo_normaliser, (name, seed, budget.zoo_max_steps)) for name in zoo_normalisers()
                for seed in budget.zoo_seeds])
    outputs = run_in_processes([function for function, _ in tasks], [arguments for _, arguments in tasks], jobs)
    results = dict(command=command, quick=budget.quick, seeds_4x4=[], law=[], zoo=[])
    experiment = {train_seed_of_4x4: "seeds_4x4", train_at_length: "law", train_zoo_normaliser: "zoo"}
    for (function, _), output in zip(tasks, outputs):
        results[experiment[function]].append(output)
    results["wall_time_seconds"] = time.perf_counter() - started
    written = write_beyond_figures(results, out)
    (out / "results.md").write_text(beyond_markdown(results), encoding="utf-8")
    write_record(out, results, indent=1)
    return results, len(written)


# What each of run_beyond's helpers reads of its results (results.json): the lists' names and each run's keys
ZOO_TABLE_KEYS = dict(normaliser=str, converged=bool, steps=int, test_mse=float, non_trigger_max_error=float,
                      bos=float, content=float, nowhere=float, sink_share=float)  # each field's type too
MARKDOWN_KEYS = {"zoo": tuple(ZOO_TABLE_KEYS) + ("seed", "learned"),
                 "law": ("length", "steps", "delta", "gap", "bound", "slack_min"),
                 "seeds_4x4": ("seed", "steps", "converged", "sinking_share_per_layer")}
FIGURE_KEYS = {"zoo": ("normaliser", "bos", "content", "nowhere", "mean_map", "trajectory"),
               "law": ("length", "content_keys", "gap", "bound", "delta"),
               "seeds_4x4": ("seed", "steps", "sinking_share_per_layer")}
WHAT_RUNS_ARE = {"zoo": "one normaliser's run (train_zoo_normaliser)", "law": "one length's run (train_at_length)",
                 "seeds_4x4": "one seed's run (train_seed_of_4x4)"}


def _check_results(owner: str, results, run_keys: dict, other_keys: tuple = ()) -> None:
    """An error naming `owner` unless `results` (run_beyond's dict) holds `other_keys` and, under each name of
    `run_keys`, a non-empty list of runs holding that name's keys: checked whole before anything is written."""
    checks.record(owner, "results", results, other_keys + tuple(run_keys), "run_beyond's results (results.json)")
    for name, keys in run_keys.items():
        checks.records(owner, f"results[{name!r}]", results[name], keys, WHAT_RUNS_ARE[name])


def write_beyond_figures(results: dict, out: Path) -> list[Path]:
    """Chapter 10's five figures from the results (redraw them from results.json without retraining)."""
    _check_results("write_beyond_figures", results, FIGURE_KEYS)
    return [
        plotting.save(plotting.zoo_mass_figure(results["zoo"]), out / "zoo_mass.png"),
        plotting.save(plotting.zoo_maps_figure(results["zoo"]), out / "zoo_maps.png"),
        plotting.save(plotting.log_law_figure(results["law"]), out / "log_t_law.png"),
        plotting.save(plotting.seeds_figure(results["seeds_4x4"]), out / "seeds_4x4.png"),
        plotting.save(plotting.price_of_a_sink_figure(results["zoo"]), out / "price_of_a_sink.png"),
    ]


def zoo_table(zoo: list[dict]) -> list[dict]:
    """One row per normaliser: means over seeds."""
    checks.records("zoo_table", "zoo", zoo, ZOO_TABLE_KEYS, WHAT_RUNS_ARE["zoo"], allow_empty=True)
    rows = []
    for name in dict.fromkeys(run["normaliser"] for run in zoo):
        runs = [run for run in zoo if run["normaliser"] == name]
        mean = lambda key: float(np.mean([run[key] for run in runs]))  # noqa: E731
        rows.append(dict(normaliser=name, seeds=len(runs), stopped=sum(run["converged"] for run in runs),
                         steps=mean("steps"), test_mse=mean("test_mse"),
                         non_trigger_max_error=mean("non_trigger_max_error"), bos=mean("bos"),
                         content=mean("content"), nowhere=mean("nowhere"), sink_share=mean("sink_share")))
    return rows


def beyond_markdown(results: dict) -> str:
    """The tables of chapter 10."""
    _check_results("beyond_markdown", results, MARKDOWN_KEYS, ("quick", "wall_time_seconds"))
    lines = ["# Beyond the paper: results", "",
             f"Written by {_written_by(results.get('command', 'reproduce --beyond' + ' --quick' * results['quick']))} "
             f"in {results['wall_time_seconds'] / 60:.1f} min.", "",
             "## The zoo (1 layer x 1 head; means over seeds; masses at non-trigger rows)", "",
             "| normaliser | stopped / seeds | steps | test MSE | max error, non-trigger rows | BOS | content "
             "| nowhere | Sink_1^0.3 |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for row in zoo_table(results["zoo"]):
        lines.append(f"| {row['normaliser']} | {row['stopped']} / {row['seeds']} | {row['steps']:,.0f} "
                     f"| {row['test_mse']:.2e} | {row['non_trigger_max_error']:.2e} | {row['bos']:.3f} "
                     f"| {row['content']:.3f} | {row['nowhere']:.3f} | {row['sink_share']:.2f} |")
    learned = [run for run in results["zoo"] if run["learned"]]
    if learned:
        lines += ["", "What the sink-free heads learned besides W_Q..W_O (test set):", ""]
        for run in learned:
            found = ", ".join(f"{key} = {np.round(value, 3).tolist() if isinstance(value, list) else round(value, 3)}"
                              for key, value in run["learned"].items())
            lines.append(f"- {run['normaliser']}, seed {run['seed']}: {found}")
    lines += ["", "## The log T law (softmax 1x1; last row i = L-1, n = L-1 content keys; seed 0)", "",
              "| L | steps | ρ = 1 - a_i0 | gap s_i0 - mean s_ik | bound log n + log((1-ρ)/ρ) "
              "| least slack, any row |",
              "|---:|---:|---:|---:|---:|---:|"]
    for run in results["law"]:
        lines.append(f"| {run['length']} | {run['steps']:,} | {run['delta'][-1]:.2e} | {run['gap'][-1]:.2f} "
                     f"| {run['bound'][-1]:.2f} | {run['slack_min']:.3f} |")
    lines += ["", "## Seeds (softmax 4 layers x 4 heads): share of heads with mean BOS mass >= "
              f"{SINK_BOS_MASS} at non-trigger rows", "",
              "| seed | steps | layer 1 | layer 2 | layer 3 | layer 4 | all |", "|---:|---:|---:|---:|---:|---:|---:|"]
    for run in results["seeds_4x4"]:
        shares = run["sinking_share_per_layer"]
        lines.append(f"| {run['seed']} | {run['steps']:,}{'' if run['converged'] else ' (budget)'} | "
                     + " | ".join(f"{share:.2f}" for share in shares) + f" | {np.mean(shares):.2f} |")
    shares = np.array([run["sinking_share_per_layer"] for run in results["seeds_4x4"]])
    lines.append("| mean | {:,.0f} | ".format(np.mean([run["steps"] for run in results["seeds_4x4"]]))
                 + " | ".join(f"{share:.2f}" for share in shares.mean(axis=0)) + f" | {shares.mean():.2f} |")
    return "\n".join(lines) + "\n"
