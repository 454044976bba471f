"""One seeded random generator for everything minitorch draws (chapter 00).

Same seed, same numbers: layers draw their initial weights from the
generator returned by `default_generator()` unless they are given their own.
`manual_seed(s)` resets it, like ``torch.manual_seed``.
"""

from __future__ import annotations

import numpy as np

_generator = np.random.default_rng(0)


def manual_seed(seed: int) -> np.random.Generator:
    """Reset minitorch's default generator to `seed` and return it."""
    global _generator
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"manual_seed: the seed must be a non-negative integer, got {seed!r}")
    _generator = np.random.default_rng(int(seed))
    return _generator


def default_generator() -> np.random.Generator:
    """The generator used when no `rng` is passed."""
    return _generator
