"""Training a model on the trigger-conditional task (chapters 07 and 08).

`train` runs the paper's recipe: Adam with betas (0.9, 0.95), mean squared
error over batch x positions x coordinates, a fresh batch of 128 sequences
each step, and an early stop as soon as a batch's worst absolute error
``max |ŷ - y|`` falls below 5e-3 (measured on the forward pass of that step,
before its update, as the author's code does).

Every `record_every` steps it measures the model on a fixed probe set (test
sequences, trigger at 1-based position 8) and appends to `history`, the BOS
mass of every head included (``head_bos_mass``, so a chapter can tell which
heads sink when); every `snapshot_every` steps it also keeps the mean
attention maps, so a chapter can show the sink forming. Measuring draws no
random number and changes no weight: training is the same with or without it.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field

import numpy as np

from minitorch import checks
from minitorch.paper import metrics
from minitorch.paper.models import AttentionModel, attention_model, finite_weights
from minitorch.optim import Adam
from minitorch.paper.progress import ProgressBar
from minitorch.paper.task import SEQUENCE_LENGTH, TEST_TRIGGER, make_batch, make_test_set, marked_triggers
from minitorch.tensor import Tensor, as_tensor, no_grad

STOP_ERROR = 5e-3
BETAS = (0.9, 0.95)
BATCH_SIZE = 128


@dataclass
class TrainingResult:
    """What `train` returns. `history` maps a measure's name to its values per record."""

    model: AttentionModel
    steps: int  # optimizer steps taken
    converged: bool  # stopped early (max error < stop_error) rather than at max_steps
    final_max_error: float  # on the batch of the last step
    wall_time: float  # seconds
    history: dict = field(default_factory=dict)
    snapshots: list = field(default_factory=list)  # (step, weights (layers, H, L, L)) pairs


def mse_loss(prediction: Tensor, target) -> Tensor:
    """Mean squared error over every batch element, position and coordinate.

    One fused operation: ``ℓ = (1/N) Σ (ŷ - y)²`` and ``∂ℓ/∂ŷ = 2 (ŷ - y) / N``,
    N the number of elements. The target is data (no gradient) and must have
    the prediction's shape: a silent broadcast would average the wrong errors.
    A target that requires grad is refused, not silently left without its gradient.
    """
    if isinstance(target, Tensor) and target.requires_grad:
        raise TypeError("mse_loss: the target requires grad, but a target is data here and gets no gradient; "
                        "pass target.detach() (or build the loss from minitorch operations to differentiate it)")
    prediction = as_tensor(prediction)
    target = target._data if isinstance(target, Tensor) else target
    checks.check_real_numbers("mse_loss", "target", target)  # 'abc' or True is no target, nan no error to average
    target = np.asarray(target, dtype=prediction.dtype)
    if target.shape != prediction.shape:
        raise ValueError(f"mse_loss: prediction {prediction.shape} and target {target.shape} must have the same shape")
    if not target.size:  # NumPy's mean of nothing is nan, with a warning
        raise ValueError(f"mse_loss: prediction and target of shape {target.shape} hold no elements to average")
    difference = prediction._data - target

    def backward(grad):
        return (grad * (2.0 / difference.size) * difference,)

    return Tensor.from_op(np.mean(difference * difference), (prediction,), backward, "mse_loss")


def probe(model: AttentionModel, x: np.ndarray, y: np.ndarray, triggers: np.ndarray) -> tuple[dict, list]:
    """Measure `model` on a fixed set: errors, BOS mass, trigger row. Returns (measures, weights).

    x and its targets y: (B, L, n); triggers: (B,), as `make_test_set` returns them. Every measure is a
    number but ``head_bos_mass``: the mean BOS mass at the non-trigger rows of each head, a list over layers
    of lists over heads (``head_bos_mass[l][h]`` for head h of layer l, both 0-based). ``trigger_content`` is
    the trigger row's mean weight on keys 1..j, each sequence's over its own j (triggers may differ, as
    `make_batch`'s do)."""
    attention_model("probe", model)
    if np.ndim(x) != 3 or np.shape(y) != np.shape(x) or np.shape(triggers) != np.shape(x)[:1]:
        raise ValueError(f"probe: x and its targets y must have one shape (B, L, n) and triggers (B,), got x "
                         f"{np.shape(x)}, y {np.shape(y)} and triggers {np.shape(triggers)}")
    if not len(x):  # every measure is a mean or a maximum over the sequences: of none, nan or NumPy's error
        raise ValueError(f"probe: x holds no sequences (shape {np.shape(x)}); give at least one")
    y = checks.check_real_numbers("probe", "y", y)  # 'abc' is no target, nan no error to measure
    triggers = marked_triggers("probe", x, triggers)
    with no_grad():
        prediction, attention = model(x, return_attention=True)
    error = np.abs(prediction._data - y)  # (B, L, n)
    first = attention[0]  # (B, H, L, L) of the first layer
    off_trigger = metrics.non_trigger_rows(triggers, error.shape[1])  # (B, L)
    bos = np.stack([metrics.bos_mass_at_non_trigger_rows(w, triggers) for w in attention])  # (layers, B, H, L-2)
    at_trigger = metrics.trigger_row(first, triggers)  # (B, H, L)
    j, keys = np.asarray(triggers)[:, None], np.arange(error.shape[1])  # (B, 1): each sequence's trigger
    content = (at_trigger * ((keys >= 1) & (keys <= j))[:, None]).sum(-1) / j  # (B, H): mean weight on keys 1..j_b
    measures = dict(
        loss=float((error**2).mean()),
        max_error=float(error.max()),
        non_trigger_max_error=float(error[off_trigger].max()),  # where a sink-free head must output 0
        bos_mass_mean=float(bos.mean()),
        bos_mass_min=float(bos.min()),
        head_bos_mass=bos.mean(axis=(1, 3)).tolist(),  # (layers, H): which heads sink, and when
        row_mass_mean=float(np.mean([metrics.non_trigger_row_mass(w, triggers).mean() for w in attention])),
        trigger_bos=float(at_trigger[..., 0].mean()),
        trigger_content=float(content.mean()),  # keys 1..j (1-based 2..j+1), each sequence's own j
    )
    return measures, attention


def train(model: AttentionModel, lr: float, max_steps: int = 50_000, batch_size: int = BATCH_SIZE,
          stop_error: float = STOP_ERROR, seed: int = 0, record_every: int = 50,
          snapshot_every: int | None = None, probe_size: int = 256, progress: bool | str = True,
          label: str | None = None, length: int = SEQUENCE_LENGTH) -> TrainingResult:
    """Train `model` in place with Adam until the early stop or `max_steps`.

    The batches come from ``np.random.default_rng(seed)``; the model's own
    initial weights come from the seed it was built with. `progress`: True
    for a bar redrawn in place, "lines" for a line every 10 s (parallel
    runs), False for silence. `length` is the task's sequence length L, at
    least 8 (the probe set's trigger is at position 7; a model works at any
    L; chapter 10 trains at L = 8 ... 64).
    """
    attention_model("train", model)
    lr = checks.positive_number("train", "lr", lr)
    stop_error = checks.positive_number("train", "stop_error", stop_error)
    max_steps = checks.integer("train", "max_steps", max_steps)
    batch_size = checks.integer("train", "batch_size", batch_size)
    record_every = checks.integer("train", "record_every", record_every)
    probe_size = checks.integer("train", "probe_size", probe_size)
    seed = checks.integer("train", "seed", seed, minimum=0)
    length = checks.integer("train", "length", length)
    if length <= TEST_TRIGGER:  # (the probe set is a test set: make_test_set would refuse it in its own name)
        raise ValueError(f"train: length must be >= {TEST_TRIGGER + 1}, since the probe set puts its trigger at "
                         f"position {TEST_TRIGGER} (0-based), got {length}")
    checks.memory("train", "the probe set of probe_size sequences", (probe_size, length, model.config["width"]))
    if snapshot_every is not None:
        snapshot_every = checks.integer("train", "snapshot_every", snapshot_every)
        if snapshot_every % record_every:  # a snapshot is taken when the probe set is measured
            raise ValueError(f"train: snapshot_every must be a multiple of record_every (a snapshot is taken when "
                             f"the probe set is measured), got {snapshot_every} and {record_every}")
    if progress not in (True, False, "lines") or isinstance(progress, (int, float)) and not isinstance(progress, bool):
        raise ValueError(f"train: progress must be True (a bar), 'lines' (a line every 10 s) or False, got "
                         f"{progress!r:.40}")
    finite_weights("train", model, "before any step")
    residual, width = model.residual, model.config["width"]
    rng = np.random.default_rng(seed)
    dtype = model.parameters()[0].dtype
    probe_x, probe_y, probe_triggers = make_test_set(residual, size=probe_size, seed=seed + 1, length=length,
                                                     width=width)
    probe_x = probe_x.astype(dtype)  # once, not at every record
    optimizer = Adam(model.parameters(), lr=lr, betas=BETAS)
    history: dict = {"step": []}
    snapshots = []

    def record(step: int, last: bool = False) -> None:
        measures, attention = probe(model, probe_x, probe_y, probe_triggers)
        history["step"].append(step)
        for name, value in measures.items():
            history.setdefault(name, []).append(value)
        if snapshot_every and (step % snapshot_every == 0 or last):
            snapshots.append((step, np.stack([w.mean(axis=0) for w in attention])))  # (layers, H, L, L)

    bar = ProgressBar(max_steps, label or model.name, enabled=bool(progress), lines=progress == "lines")
    start = time.perf_counter()
    record(0)
    step, max_error = 0, float("inf")
    while step < max_steps:
        x, y, _ = make_batch(batch_size, rng, residual, length=length, width=width)
        with _explaining_non_finite_numbers("the forward pass failed", step, lr, model, x, y):
            prediction = model(x.astype(dtype))
            loss = mse_loss(prediction, y.astype(dtype))
        if not np.isfinite(loss._data):
            raise _not_finite(f"the loss became {loss.item()}", step, lr, x, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        step += 1
        max_error = float(np.abs(prediction._data - y).max())
        converged = max_error < stop_error
        if step % record_every == 0 or converged or step == max_steps:
            with _explaining_non_finite_numbers("measuring the probe set failed", step - 1, lr, model, x, y):
                record(step, last=converged or step == max_steps)
        bar.update(step, loss=loss.item(), max_error=max_error)
        if converged:
            break
    wall_time = time.perf_counter() - start
    bar.close(step, loss=loss.item(), max_error=max_error)
    return TrainingResult(model, step, max_error < stop_error, max_error, wall_time, history, snapshots)


def _finite(x: np.ndarray, y: np.ndarray) -> bool:
    return bool(np.isfinite(x).all() and np.isfinite(y).all())


@contextlib.contextmanager
def _explaining_non_finite_numbers(what: str, step: int, lr: float, model: AttentionModel, x, y):
    """Turn a ValueError raised on NaN or inf (the softmax refuses such scores) into the error that says
    where they came from: the batch, or weights that training drove to NaN or inf."""
    try:
        yield
    except ValueError as error:
        if _finite(x, y) and all(np.isfinite(parameter._data).all() for parameter in model.parameters()):
            raise  # no number went bad: an error of its own
        raise _not_finite(what, step, lr, x, y) from error


def _not_finite(what: str, step: int, lr: float, x: np.ndarray, y: np.ndarray) -> FloatingPointError:
    """The error for a step that produced NaN or inf, blaming the batch if it holds NaN or inf itself."""
    cause = ("the learning rate may be too high" if _finite(x, y)
             else "the batch itself holds NaN or inf (see make_batch)")
    return FloatingPointError(f"train: {what} at step {step + 1} (lr={lr}); {cause}")
