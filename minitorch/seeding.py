"""One seeded random generator for everything minitorch draws (chapter 00).

Same seed, same numbers: layers draw their initial weights from the
generator returned by `default_generator()` unless they are given their own.
`manual_seed(s)` resets it, like ``torch.manual_seed``.
"""

from __future__ import annotations

import numpy as np

_generator = np.random.default_rng(0)


def manual_seed(seed: int) -> np.random.Generator:
    """Reset minitorch's default generator to `seed` and return it. The generator is reset in place, as
    ``torch.manual_seed`` resets ``torch.default_generator``: one held from `default_generator()` (a layer's `rng`)
    draws the seed's numbers too."""
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"manual_seed: the seed must be a non-negative integer, got {seed!r}")
    _generator.bit_generator.state = np.random.default_rng(int(seed)).bit_generator.state
    return _generator


def default_generator() -> np.random.Generator:
    """The generator used when no `rng` is passed."""
    return _generator
