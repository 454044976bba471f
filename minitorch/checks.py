"""Checking arguments: a bad value fails at once, with an error naming the argument.

Shared by the engine (optimizers) and the paper's code (models, training). Each
check returns the value as a plain Python number, so that a NumPy integer
(``np.int64(16)``) works wherever an ``int`` does and stays JSON-friendly.
"""

from __future__ import annotations

import math
import numbers


def integer(owner: str, name: str, value, minimum: int = 1) -> int:
    """`value` as an int, or a TypeError/ValueError saying ``owner: name must be ...``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{owner}: {name} must be an integer >= {minimum}, got {value!r} "
                        f"({type(value).__name__})")
    if value < minimum:
        raise ValueError(f"{owner}: {name} must be an integer >= {minimum}, got {value}")
    return int(value)


def positive_number(owner: str, name: str, value, allow_zero: bool = False) -> float:
    """`value` as a finite float > 0 (>= 0 with `allow_zero`), or an error naming `name`."""
    bound = ">= 0" if allow_zero else "> 0"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{owner}: {name} must be a finite number {bound}, got {value!r} ({type(value).__name__})")
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"{owner}: {name} must be a finite number {bound}, got {value}")
    return float(value)
