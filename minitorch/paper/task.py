"""The trigger-conditional averaging task (chapter 04).

A sequence holds L tokens ``x_0, ..., x_{L-1}`` in R^n (0-based positions):

- coordinate 0: BOS flag, 1 only at position 0;
- coordinate 1: trigger flag, 1 only at the trigger position j;
- coordinates 2..n-2: content, i.i.d. Uniform(-1, 1) at every non-BOS token;
- coordinate n-1: bias channel, 1 at content tokens, 0 at BOS and trigger.

Targets: a single-layer model must output ``y_i = 0`` for ``i ≠ j`` and, at
the trigger, ``y_j = (1/j) Σ_{k=1..j} x_k`` (the mean of the non-BOS tokens
up to and including the trigger). A residual model must output ``x_i`` plus
that: ``y_i = x_i`` for ``i ≠ j`` and ``y_j = x_j + (1/j) Σ_{k=1..j} x_k``.

In training j is uniform on {2, ..., L-1}; the test set fixes j = 7
(1-based position 8).
"""

from __future__ import annotations

import numpy as np

from minitorch import checks

SEQUENCE_LENGTH = 16  # L
WIDTH = 16  # n
BOS, TRIGGER = 0, 1  # coordinates of the two flags; the bias channel is n - 1
TEST_TRIGGER = 7  # 0-based trigger position of the test set
TEST_SEED = 12345  # the test set's own seed, apart from every training seed
TEST_SIZE = 1000


def make_inputs(batch: int, rng: np.random.Generator, length: int = SEQUENCE_LENGTH,
                width: int = WIDTH, trigger=None) -> tuple[np.ndarray, np.ndarray]:
    """Draw `batch` sequences. Returns ``(x, trigger_positions)``.

    x: (B, L, n). `trigger` = None draws each j uniformly from {2, ..., L-1};
    an int fixes j for every sequence.
    """
    batch, length, width = _drawing_arguments("make_inputs", batch, length, width, trigger, rng)
    triggers = rng.integers(2, length, size=batch) if trigger is None else np.full(batch, trigger)  # (B,)
    x = np.zeros((batch, length, width))
    x[:, 1:, 2:width - 1] = rng.uniform(-1.0, 1.0, size=(batch, length - 1, width - 3))
    x[:, 1:, width - 1] = 1.0  # bias channel at every non-BOS token ...
    x[:, 0, BOS] = 1.0
    rows = np.arange(batch)
    x[rows, triggers, TRIGGER] = 1.0
    x[rows, triggers, width - 1] = 0.0  # ... except the trigger
    return x, triggers


def _drawing_arguments(owner: str, batch, length, width, trigger, rng) -> tuple[int, int, int]:
    """make_inputs's arguments checked in the name of `owner`, the function the user called (make_batch and
    make_test_set pass theirs on): (batch, length, width). `trigger` is None or a position in 1..length-1; `rng` a
    NumPy Generator."""
    batch = checks.integer(owner, "batch", batch)
    length, width = checks.integer(owner, "length", length), checks.integer(owner, "width", width)
    if length < 3 or width < 4:
        raise ValueError(f"{owner}: need length >= 3 and width >= 4, got length={length}, width={width}")
    checks.memory(owner, "the inputs (B, L, n)", (batch, length, width))
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"{owner}: rng must be a NumPy Generator, e.g. np.random.default_rng(0), got "
                        f"{type(rng).__name__}")
    if trigger is not None:
        if isinstance(trigger, (bool, np.bool_)) or not isinstance(trigger, (int, np.integer)):
            raise ValueError(f"{owner}: trigger must be a whole number (an int) in 1..{length - 1}, got "
                             f"{trigger!r} ({type(trigger).__name__})")
        if not 1 <= trigger < length:
            raise ValueError(f"{owner}: trigger must lie in 1..{length - 1}, got {trigger}")
    return batch, length, width


def marked_triggers(owner: str, x, triggers) -> np.ndarray:
    """`triggers`, checked to be the positions x marks as each sequence's trigger (coordinate TRIGGER is 1 there):
    the triggers of another batch would measure other rows without a word. x (B, L, n), triggers (B,) in 1..L-1
    (`checks.positions`), one per sequence."""
    x = np.asarray(x)
    if x.ndim != 3 or x.shape[-1] <= TRIGGER:
        raise ValueError(f"{owner}: x must have shape (B, L, n), got {x.shape}")
    triggers = checks.positions(owner, "triggers", triggers, x.shape[1])
    if len(triggers) != len(x):
        raise ValueError(f"{owner}: triggers holds {len(triggers)} position(s) for x's {len(x)} sequences; pass x's "
                         f"own triggers, one per sequence (make_batch and make_test_set return them with x)")
    unmarked = np.flatnonzero(x[np.arange(len(triggers)), triggers, TRIGGER] != 1.0)
    if unmarked.size:
        b = int(unmarked[0])
        raise ValueError(f"{owner}: triggers[{b}] is {triggers[b]}, but x's sequence {b} marks its trigger at "
                         f"{np.flatnonzero(x[b, :, TRIGGER] == 1.0).tolist()}; pass x's own triggers (make_batch "
                         f"and make_test_set return them with x)")
    return triggers


def _targets_inputs(x, triggers, residual=False):
    """make_targets's inputs, checked: (x, triggers, residual)."""
    x, triggers = np.asarray(x), np.asarray(triggers)
    if x.ndim != 3:
        raise ValueError(f"make_targets: x must have shape (B, L, n), got {x.shape}")
    checks.real_numbers("make_targets", "x", x)  # bools, strings, nan and inf are no inputs
    if np.issubdtype(x.dtype, np.integer):
        x = x.astype(float)  # 0/1 inputs given as ints are the same numbers; y[...] += means needs floats
    if triggers.shape != x.shape[:1] or not np.issubdtype(triggers.dtype, np.integer):
        raise ValueError(f"make_targets: triggers must be integers of shape (B,) = ({x.shape[0]},), "
                         f"got {triggers.dtype} of shape {triggers.shape}")
    if not ((1 <= triggers) & (triggers < x.shape[1])).all():
        raise ValueError(f"make_targets: every trigger position must lie in 1..{x.shape[1] - 1}, got {triggers}")
    residual = checks.flag("make_targets", "residual", residual)  # the string 'False' would be true
    return x, triggers, residual


@checks.inputs_checked_by(_targets_inputs)
def make_targets(x: np.ndarray, triggers: np.ndarray, residual: bool = False) -> np.ndarray:
    """Exercise 4.1: the targets y (B, L, n) for inputs x (B, L, n) with triggers j (B,), checked before
    they arrive, with no Python loop over the sequences (work on whole arrays)."""
    batch, length, _ = x.shape
    positions = np.arange(length)
    # up_to_trigger[b, k] = 1 for 1 <= k <= j_b: the tokens the trigger averages
    up_to_trigger = (positions >= 1) & (positions <= triggers[:, None])  # (B, L)
    means = (up_to_trigger[:, :, None] * x).sum(axis=1) / triggers[:, None]  # (B, n)
    y = x.copy() if residual else np.zeros_like(x)
    y[np.arange(batch), triggers] += means
    return y


def make_batch(batch: int, rng: np.random.Generator, residual: bool = False, trigger=None,
               length: int = SEQUENCE_LENGTH, width: int = WIDTH):
    """Inputs, targets and trigger positions: ``(x, y, triggers)``."""
    # checked here, in the name the user called, not in the names of the functions they are passed on to
    _drawing_arguments("make_batch", batch, length, width, trigger, rng)
    residual = checks.flag("make_batch", "residual", residual)
    x, triggers = make_inputs(batch, rng, length, width, trigger)
    return x, make_targets(x, triggers, residual), triggers


def make_test_set(residual: bool = False, size: int = TEST_SIZE, seed: int = TEST_SEED,
                  length: int = SEQUENCE_LENGTH, width: int = WIDTH):
    """The fixed-trigger test set: `size` sequences with j = 7, from its own seed."""
    size = checks.integer("make_test_set", "size", size)
    seed = checks.integer("make_test_set", "seed", seed, minimum=0)
    length = checks.integer("make_test_set", "length", length)
    if length <= TEST_TRIGGER:
        raise ValueError(f"make_test_set: length must be >= {TEST_TRIGGER + 1}, since the test set puts its trigger "
                         f"at position {TEST_TRIGGER} (0-based), got {length}")
    rng = np.random.default_rng(seed)
    _drawing_arguments("make_test_set", size, length, width, TEST_TRIGGER, rng)
    residual = checks.flag("make_test_set", "residual", residual)
    return make_batch(size, rng, residual, TEST_TRIGGER, length, width)
