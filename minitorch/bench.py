"""Speed benchmarks: ``python -m minitorch bench`` (chapter 00).

Times what a reader waits for: a training step of each of the paper's
models (forward, backward, Adam), and a few engine operations. Wall-clock
numbers depend on the machine and its load; the tests never assert them.
"""

from __future__ import annotations

import time

import numpy as np

from minitorch.allocator import keep_freed_memory
from minitorch.models import build_model
from minitorch.optim import Adam
from minitorch.softmax import softmax
from minitorch.task import make_batch
from minitorch.tensor import Tensor
from minitorch.train import mse_loss

# Steps the paper's models take to the early stop (PAPER.md, upper ends of the ranges).
TYPICAL_STEPS = {"1x1": 900, "2x2": 15_000, "4x4": 18_000}


def _best_time(function, repeats: int) -> float:
    """The fastest of `repeats` runs, in seconds: the least disturbed by other load."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def training_step_time(layers: int, heads: int, normaliser: str, steps: int, dtype=np.float64) -> float:
    """Median seconds per training step (batch 128) of one model."""
    residual = layers > 1
    model = build_model(16, heads, layers, normaliser, residual, dtype=dtype)
    optimizer = Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.95))
    rng = np.random.default_rng(0)
    times = []
    for _ in range(steps):
        x, y, _ = make_batch(128, rng, residual)
        start = time.perf_counter()
        loss = mse_loss(model(x.astype(dtype)), y.astype(dtype))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def run_benchmarks(steps: int = 50, print_=print) -> dict:
    """Print and return the benchmark table."""
    keep_freed_memory()  # as train() does, so these are the speeds training sees
    rng = np.random.default_rng(0)
    results = {}
    print_(f"numpy {np.__version__}; each number is a median (training) or a best-of-20 (engine) in milliseconds\n")
    print_("| model | dtype | ms / training step | estimated time to the paper's typical stop |")
    print_("|---|---|---:|---:|")
    for name, (layers, heads) in {"1x1": (1, 1), "2x2": (2, 2), "4x4": (4, 4)}.items():
        for normaliser in ("softmax", "relu"):
            for dtype in (np.float64, np.float32):
                seconds = training_step_time(layers, heads, normaliser, steps, dtype)
                results[f"{normaliser}_{name}_{np.dtype(dtype).name}"] = seconds
                print_(f"| {normaliser} {name} | {np.dtype(dtype).name} | {1e3 * seconds:.2f} "
                       f"| {seconds * TYPICAL_STEPS[name]:.0f} s for {TYPICAL_STEPS[name]:,} steps |")

    scores = Tensor(rng.standard_normal((128, 4, 16, 16)), requires_grad=True)
    a = Tensor(rng.standard_normal((128, 4, 16, 16)), requires_grad=True)
    engine = {
        "softmax forward+backward (128, 4, 16, 16)": lambda: softmax(scores).sum().backward(),
        "batched matmul forward+backward (128, 4, 16, 16)": lambda: (a @ scores).sum().backward(),
        "backward through a chain of 10,000 additions": _chain,
    }
    print_("\n| engine operation | ms |")
    print_("|---|---:|")
    for name, function in engine.items():
        seconds = _best_time(function, 20 if "chain" not in name else 3)
        results[name] = seconds
        print_(f"| {name} | {1e3 * seconds:.2f} |")
    return results


def _chain() -> None:
    x = Tensor(1.0, requires_grad=True)
    y = x
    for _ in range(10_000):
        y = y + 1.0
    y.backward()
