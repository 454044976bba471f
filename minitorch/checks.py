"""Checking arguments: a bad value fails at once, with an error naming the argument.

Shared by the engine (optimizers) and the paper's code (models, training). Each
check returns the value as a plain Python number, so that a NumPy integer
(``np.int64(16)``) works wherever an ``int`` does and stays JSON-friendly.
"""

from __future__ import annotations

import functools
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


def finite_number(owner: str, name: str, value) -> float:
    """`value` as a finite float of either sign, or an error naming `name`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{owner}: {name} must be a finite number, got {value!r} ({type(value).__name__})")
    if not math.isfinite(value):
        raise ValueError(f"{owner}: {name} must be a finite number, got {value}")
    return float(value)


# ----------------------------------------------------------------------
# values typed by a person: command-line options and environment variables


def parse_number(text: str, name: str, *, integer: bool = False, minimum: float | None = None,
                 maximum: float | None = None, above: float | None = None) -> int | float:
    """`text` (an option's or an environment variable's value) as a finite number, or a ValueError that names
    `name` and the range allowed: ``--timeout must be a number of seconds > 0, got 'nan'``.

    `minimum` and `maximum` are inclusive bounds, `above` an exclusive lower bound; `integer` asks for a
    whole number (written without a decimal point)."""
    kind = "a whole number" if integer else "a finite number"
    bounds = [f">= {minimum:g}" if minimum is not None else "", f"> {above:g}" if above is not None else "",
              f"<= {maximum:g}" if maximum is not None else ""]
    wanted = f"{name} must be {kind}" + "".join(f" {bound}" for bound in bounds if bound)
    try:
        value = int(str(text).strip(), 10) if integer else float(str(text).strip())
    except ValueError:
        raise ValueError(f"{wanted}, got {text!r}") from None
    if not math.isfinite(value) or (minimum is not None and value < minimum) or \
            (above is not None and value <= above) or (maximum is not None and value > maximum):
        raise ValueError(f"{wanted}, got {text!r}")
    return value


_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off", "")


def parse_flag(text: str | None, name: str) -> bool:
    """An on/off value such as MINITORCH_QUICK: 1/true/yes/on or 0/false/no/off (any case; unset or empty is
    off), else a ValueError naming `name`: "abc" must not silently mean "off"."""
    word = (text or "").strip().lower()
    if word in _TRUE or word in _FALSE:
        return word in _TRUE
    raise ValueError(f"{name} must be one of 1, 0, true, false, yes, no, on, off; got {text!r}")


def number_argument(name: str, **limits):
    """An argparse ``type=`` that parses with `parse_number` (argparse then prints our message, not its own
    'invalid float value'): ``argument --seed: must be a whole number >= 0, got '-1'``."""
    import argparse

    def parse(text: str):
        try:
            return parse_number(text, name, **limits)
        except ValueError as error:  # argparse names the option itself
            raise argparse.ArgumentTypeError(str(error).removeprefix(f"{name} ")) from None

    parse.__name__ = name
    return parse


def inputs_checked_by(check):
    """Decorator: the function receives its inputs as ``check(*args, **kwargs)`` returns them (a tuple, in
    the function's order), checked and converted. An exercise's function keeps the library's checks of its
    inputs outside its body this way, so that its body is what the exercise asks for."""
    def decorate(function):
        @functools.wraps(function)
        def checked(*args, **kwargs):
            return function(*check(*args, **kwargs))
        return checked
    return decorate
