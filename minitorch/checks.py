"""Checking arguments: a bad value fails at once, with an error naming the argument.

Shared by the engine (optimizers) and the paper's code (models, training). Each
check returns the value as a plain Python number, so that a NumPy integer
(``np.int64(16)``) works wherever an ``int`` does and stays JSON-friendly.
"""

from __future__ import annotations

import decimal
import functools
import inspect
import math
import numbers
import reprlib

import numpy as np


def integer(owner: str, name: str, value, minimum: int = 1, maximum: int | None = None) -> int:
    """`value` as an int, or a TypeError/ValueError saying ``owner: name must be ...``."""
    if type(value) is int and value >= minimum and (maximum is None or value <= maximum):
        return value  # the usual case, at once: an optimiser step checks its step count for every parameter
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{owner}: {name} must be an integer >= {minimum}, got {value!r} "
                        f"({type(value).__name__})")
    if value < minimum:
        raise ValueError(f"{owner}: {name} must be an integer >= {minimum}, got {value}")
    if maximum is not None and value > maximum:  # (a number of 5,000 digits is too long for str())
        shown = value if value.bit_length() < 70 else f"an integer of about {int(value.bit_length() * 0.30103)} digits"
        raise ValueError(f"{owner}: {name} must be an integer from {minimum} to {maximum}, got {shown}")
    return int(value)


def seeds(owner: str, values) -> list:
    """`values` as a list of distinct whole numbers >= 0, at least one, or an error naming `owner`: a seed given twice
    would count as two runs, and no seed is no run."""
    values = [integer(owner, "seed", seed, minimum=0) for seed in values]
    if not values or len(set(values)) != len(values):
        raise ValueError(f"{owner}: seeds must be distinct whole numbers >= 0, at least one, got {values}")
    return values


def flag(owner: str, name: str, value) -> bool:
    """`value` as a bool, or a TypeError: only True or False (NumPy's too), since bool('False') is True."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{owner}: {name} must be True or False, got {value!r} ({type(value).__name__})")
    return bool(value)


def is_exponent(value) -> bool:
    """Whether `value` is a constant exponent as ``x ** p`` and ``x **= p`` take it: a real number, not a bool."""
    return not isinstance(value, (bool, np.bool_)) and isinstance(value, (numbers.Real, np.floating, np.integer))


def log_function(owner: str, name: str, value):
    """`value` if it can be called with one line of text, as `print` can, or a TypeError naming `owner` and
    `name`: None, or a function of no argument (``lambda: None``, to silence it), would fail at the first line, in
    Python's words, perhaps after the work. A callable whose signature Python cannot read is taken on trust."""
    try:
        inspect.signature(value).bind("a line")
    except TypeError:
        raise TypeError(f"{owner}: {name} must be a function of one line (print, by default; lambda line: None "
                        f"for silence), got {value!r:.60}") from None
    except ValueError:  # no signature to read (some built-in functions)
        pass
    return value


def axis(owner: str, value, ndim: int, name: str = "axis", new: bool = False) -> int:
    """`value` as an axis index in 0..ndim-1 (negatives count from the end), or an error naming `owner`.
    With `new`, an axis to insert (as stack's): one of ndim + 1 places."""
    places = ndim + 1 if new else max(ndim, 1)  # a 0-d tensor accepts axis 0, as in PyTorch
    if type(value) is int and -places <= value < places:
        return value % places  # the usual case, at once
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{owner}: {name} must be an integer, got {value!r} ({type(value).__name__})")
    if not -places <= value < places:
        raise ValueError(f"{owner}: {name} {value} is out of range for {places} {'places' if new else 'axes'} "
                         f"(a tensor with {ndim} dimensions); use -{places}..{places - 1}")
    return int(value) % places


def sizes(owner: str, name: str, values, allow_unknown: bool = False) -> tuple[int, ...]:
    """`values` (a tuple or list of integers) as a shape, or an error naming `owner`; with `allow_unknown`
    one size may be -1 (reshape's "whatever is left")."""
    if not isinstance(values, (tuple, list)):
        raise TypeError(f"{owner}: {name} must be a tuple of integers, got {values!r} ({type(values).__name__})")
    for value in values:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
            raise TypeError(f"{owner}: {name} must hold integers, got {value!r} ({type(value).__name__}) in "
                            f"{tuple(values)!r}")
        if value < 0 and not (allow_unknown and value == -1):
            raise ValueError(f"{owner}: {name} must hold sizes >= 0{' (or one -1)' if allow_unknown else ''}, "
                             f"got {tuple(values)!r}")
    return tuple(int(value) for value in values)


MEMORY_LIMIT_BYTES = 4 * 2**30  # an array larger than this is refused before NumPy tries to allocate it


def memory(owner: str, what: str, shape, itemsize: int = 8, limit: int = MEMORY_LIMIT_BYTES) -> None:
    """Refuse, with a MemoryError that names `owner` and `what`, an array of `shape` larger than `limit` bytes:
    a clear message at once, not NumPy's after the machine starts swapping."""
    needed = itemsize * math.prod(shape)
    if needed > limit:
        raise MemoryError(f"{owner}: {what} of shape {tuple(int(size) for size in shape)} would need "
                          f"{needed / 2**30:,.1f} GiB (the limit is {limit / 2**30:g} GiB); use smaller sizes")


def result_too_large(owner: str, inputs: str) -> MemoryError:
    """The MemoryError NumPy raised for the result of `owner` on `inputs` (shapes), in words that name them."""
    return MemoryError(f"{owner}: the result for {inputs} does not fit in this machine's memory; use smaller sizes")


def open_state(owner: str, state) -> None:
    """ValueError if `state` (weights by name) is an NpzFile whose file was closed (np.load's with block was left):
    its arrays can no longer be read, and NumPy would say "'NoneType' object has no attribute 'open'"."""
    if isinstance(state, np.lib.npyio.NpzFile) and state.zip is None:
        raise ValueError(f"{owner}: the .npz file is closed: pass dict(np.load(path)), or load inside the "
                         f"`with np.load(path) as state:` block")


def state_keys(owner: str, state, expected, hint: str = "") -> None:
    """ValueError naming the keys `expected` of `state` (weights by name) that it lacks, and those it holds beyond
    them: a weight left over would silently go unused (a deeper model's layer, a misspelt name)."""
    missing = sorted(set(expected) - set(state), key=str)
    unexpected = sorted(set(state) - set(expected), key=str)  # (key=str: a key 0 beside 'a' is named, not a crash)
    if missing or unexpected:
        raise ValueError(f"{owner}: missing keys {_few(missing)}, unexpected keys {_few(unexpected)}{hint}")


def _few(names: list, shown: int = 5) -> str:
    """A list of names for a message, the first few of a long one: a model of 200,000 layers has 800,000."""
    return str(names) if len(names) <= shown else f"{names[:shown]} and {len(names) - shown:,} more"


def positive_number(owner: str, name: str, value, allow_zero: bool = False) -> float:
    """`value` as a finite float > 0 (>= 0 with `allow_zero`), or an error naming `name`. A Decimal counts."""
    if type(value) is float and (0.0 < value < math.inf or (allow_zero and value == 0.0)):
        return value  # the usual case, at once: an optimiser step checks its settings for every parameter
    bound = ">= 0" if allow_zero else "> 0"
    value = float(value) if isinstance(value, decimal.Decimal) else value
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{owner}: {name} must be a finite number {bound}, got {value!r} ({type(value).__name__})")
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"{owner}: {name} must be a finite number {bound}, got {value}")
    return float(value)


def finite_number(owner: str, name: str, value) -> float:
    """`value` as a finite float of either sign, or an error naming `name`. A Decimal counts."""
    value = float(value) if isinstance(value, decimal.Decimal) else value
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
        digits = str(text).strip().lstrip("+-")
        if integer and digits.isascii() and digits.isdigit():  # Python's int() stops at a few thousand digits
            raise ValueError(f"{wanted}, got a number of {len(digits):,} digits, too many digits to read "
                             f"({reprlib.repr(text)})") from None
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
    inputs outside its body this way, so that its body is what the exercise asks for. A call that does not fit
    the signature (an argument missing, one too many, a misspelt keyword) is named as the function's own: Python
    would name the check, a function the caller never called."""
    def decorate(function):
        @functools.wraps(function)
        def checked(*args, **kwargs):
            try:
                inputs = check(*args, **kwargs)
            except TypeError as error:
                if error.__traceback__.tb_next is not None:  # raised inside the check: its own words
                    raise
                raise TypeError(str(error).replace(f"{check.__name__}()", f"{function.__name__}()")) from None
            return function(*inputs)
        return checked
    return decorate


# ----------------------------------------------------------------------
# arrays of numbers and sets of positions (the paper's theory and metrics)


def is_real(dtype) -> bool:
    """Whether arrays of `dtype` hold real numbers: integers or floats (NumPy's bool is neither; strings, objects,
    complex numbers, dates and time spans are not real numbers)."""
    return np.dtype(dtype).kind in "iuf"  # (np.issubdtype(timedelta64, np.integer) is True)


def real_numbers(owner: str, name: str, values, finite: bool = True) -> np.ndarray:
    """`values` (a number or an array of numbers) as a float array (a copy), or an error naming `name`: a bool
    or a string is no number (np.asarray(True, float) would be 1.0), and with `finite` nan and inf are refused."""
    return check_real_numbers(owner, name, values, finite).astype(float)


def check_real_numbers(owner: str, name: str, values, finite: bool = True) -> np.ndarray:
    """`values` as an array, not copied (of numbers, in their own dtype), checked as `real_numbers` checks them."""
    try:
        array = np.asarray(values)
    except ValueError:  # a ragged list: [[1.0], [2.0, 3.0]]
        raise ValueError(f"{owner}: {name} must be numbers in a rectangular shape (lists of equal lengths), got "
                         f"{values!r:.80}") from None
    if not is_real(array.dtype):
        raise TypeError(f"{owner}: {name} must be {'finite ' if finite else ''}numbers, got {values!r:.80} "
                        f"(dtype {array.dtype})")
    if finite and not np.isfinite(array).all():
        raise ValueError(f"{owner}: {name} must be finite numbers, got {values!r:.80}")
    return array


def positions(owner: str, name: str, values, length: int | None = None) -> np.ndarray:
    """`values` (a list, tuple, range, set or 1-d array of integers) as an int array of positions 1..length-1
    (>= 1 when the sequence length is not known), or an error naming `owner` and `name`. Refused: a single number
    or a string (whose characters would be taken one by one), bools (True is no position 1), floats such as 2.7
    (int() would make it 2 silently) and a position outside the range: e.g. 0, which is BOS."""
    expected = f"a list of integers in 1..{length - 1}" if length is not None else "a list of integers >= 1"
    if isinstance(values, (range, set, frozenset)):
        values = list(values)  # a set's order is its own; only which positions it holds matters
    if not isinstance(values, (list, tuple, np.ndarray)) or np.ndim(values) != 1:
        raise TypeError(f"{owner}: {name} must be {expected}, got {values!r:.80} ({type(values).__name__})")
    if not (isinstance(values, np.ndarray) and np.issubdtype(values.dtype, np.integer)):
        for value in (values.tolist() if isinstance(values, np.ndarray) else values):  # [3, True] is int64 too
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
                raise TypeError(f"{owner}: {name} must be {expected}, got {value!r} ({type(value).__name__}) "
                                f"in {values!r:.80}")
    array = np.asarray(values, dtype=np.int64)
    too_large = array >= length if length is not None else np.zeros(array.shape, dtype=bool)
    outside = array[(array < 1) | too_large]
    if outside.size:
        where = f" (L = {length})" if length is not None else ""
        raise ValueError(f"{owner}: {name} must be {expected}{where}, got {outside[0]} in {values!r:.80}")
    return array


# ----------------------------------------------------------------------
# the records the figures and tables read (results.json's dicts and lists of dicts)


def record(owner: str, name: str, value, keys, what: str) -> dict:
    """`value` as a dict holding every one of `keys`, or an error naming `owner`, `name` and the keys missing:
    ``seeds_figure: seed_runs[0] must be one seed's result, a dict with keys ...; got {'x': 1} without seed``.
    With `keys` a dict of key -> type (bool, int, float or str), each field must also be of its type:
    ``seeds_table: runs[0]['converged'] must be True or False, got 'no' (str)``."""
    missing = [key for key in keys if key not in value] if isinstance(value, dict) else list(keys)
    if not isinstance(value, dict):
        raise TypeError(f"{owner}: {name} must be {what}, a dict with keys {', '.join(keys)}; got {value!r:.80} "
                        f"({type(value).__name__})")
    if missing:
        raise ValueError(f"{owner}: {name} must be {what}, a dict with keys {', '.join(keys)}; got {value!r:.80} "
                         f"without {', '.join(missing)}")
    for key, kind in keys.items() if isinstance(keys, dict) else ():
        if not _of_kind(value[key], kind):
            raise TypeError(f"{owner}: {name}[{key!r}] must be {FIELD_KINDS[kind][1]}, got {value[key]!r:.60} "
                            f"({type(value[key]).__name__})")
    return value


# record()'s field types: what a value of each must be, and its name in an error
FIELD_KINDS = {bool: (bool, "True or False"), int: (numbers.Integral, "an integer"), float: (numbers.Real, "a number"),
               str: (str, "a string")}


def _of_kind(value, kind) -> bool:
    """Whether `value` is of `kind` (a key of FIELD_KINDS): a bool is no integer or number here."""
    if isinstance(value, (bool, np.bool_)):
        return kind is bool
    return isinstance(value, FIELD_KINDS[kind][0])


def records(owner: str, name: str, values, keys, what: str, allow_empty: bool = False) -> list:
    """`values` as a list (or tuple) of dicts each holding every one of `keys`, or an error naming `owner`,
    `name`, the first bad entry and what it lacks; empty only with `allow_empty`."""
    if not isinstance(values, (list, tuple)) or (not values and not allow_empty):
        raise (ValueError if isinstance(values, (list, tuple)) else TypeError)(
            f"{owner}: {name} must be a {'' if allow_empty else 'non-empty '}list of dicts, {what} each, with keys "
            f"{', '.join(keys)}; got {values!r:.80} ({type(values).__name__})")
    for index, value in enumerate(values):
        record(owner, f"{name}[{index}]", value, keys, what)
    return list(values)


def columns(owner: str, name: str, record: dict, keys) -> dict:
    """The fields `keys` of `record` (a dict) as 1-d float arrays of one length (columns of one table), or an
    error naming `owner` and the field: ``log_law_figure: law[0]['gap'] has 1 value(s), where law[0]['content_keys']
    has 2; the fields content_keys, gap, ... must have one length``."""
    arrays = {}
    for key in keys:
        field, value = f"{name}[{key!r}]", record[key]
        try:
            one_axis = not isinstance(value, (str, bytes, dict)) and np.ndim(value) == 1 and np.size(value) > 0
        except ValueError:  # rows of unequal lengths: no array at all
            one_axis = False
        if not one_axis:
            raise TypeError(f"{owner}: {field} must be a non-empty list of numbers, got {value!r:.80} "
                            f"({type(value).__name__})")
        arrays[key] = real_numbers(owner, field, value, finite=False)  # a plot leaves a gap at nan or inf
    first, *others = keys
    for key in others:
        if len(arrays[key]) != len(arrays[first]):
            raise ValueError(f"{owner}: {name}[{key!r}] has {len(arrays[key])} value(s), where {name}[{first!r}] has "
                             f"{len(arrays[first])}; the fields {', '.join(keys)} must have one length")
    return arrays


def snapshots(owner: str, name: str, values) -> list:
    """`values` as a list of (step, weights) pairs, as ``train(..., snapshot_every=...)`` keeps them
    (TrainingResult.snapshots), or a TypeError naming `owner` and `name`."""
    if not isinstance(values, (list, tuple)) or not all(
            isinstance(pair, (list, tuple)) and len(pair) == 2 for pair in values):
        raise TypeError(f"{owner}: {name} must be a list of (step, weights) pairs (TrainingResult.snapshots), got "
                        f"{values!r:.60} ({type(values).__name__})")
    return list(values)


# ----------------------------------------------------------------------
# the inputs of the engine's backward rules (exercises 1.2-1.4, 2.2, 2.3), checked outside their bodies
# (`inputs_checked_by`) so that a student edition keeps the checks. They run in every backward pass, so the usual
# case costs type tests and a few shape comparisons.


def _arrays(owner: str, **arrays) -> None:
    """TypeError unless every one of `arrays` is an ndarray (or a NumPy number, as e^a of a 0-d array is)."""
    for name, value in arrays.items():
        if not isinstance(value, (np.ndarray, np.generic)):
            *others, last = arrays
            names = f"{', '.join(others)} and {last}" if others else last  # 'grad, a and b'
            from minitorch.tensor import Tensor  # (here, not above: minitorch.tensor imports this module)

            hint = " (a tensor's values are t.data)" if isinstance(value, Tensor) else ""
            raise TypeError(f"{owner}: {names} must be ndarrays, got {type(value).__name__} for {name}{hint}")


def _broadcast_shape(owner: str, a: np.ndarray, b: np.ndarray) -> tuple:
    """The shape of a * b, or a ValueError naming `owner`, a and b."""
    try:
        return np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise ValueError(f"{owner}: a {a.shape} and b {b.shape} cannot be broadcast together, so they are not the "
                         f"inputs of one operation") from None


def mul_backward_inputs(grad, a, b) -> tuple:
    """`mul_backward`'s inputs: arrays, `grad` of the shape of a * b."""
    if not (type(grad) is np.ndarray and type(a) is np.ndarray and type(b) is np.ndarray):
        _arrays("mul_backward", grad=grad, a=a, b=b)
    shape = grad.shape  # the usual cases: inputs of one shape, or one of them a single number
    if not (shape == a.shape == b.shape or (shape == a.shape and not b.ndim) or (shape == b.shape and not a.ndim)):
        expected = _broadcast_shape("mul_backward", a, b)
        if grad.shape != expected:
            raise ValueError(f"mul_backward: grad has shape {grad.shape}, expected {expected} (the shape of a * b, "
                             f"a {a.shape} and b {b.shape} broadcast)")
    return grad, a, b


def _one_shape(owner: str, grad, name: str, other, what: str) -> tuple:
    """`grad` and `other` (named `name`), arrays of one shape: an elementwise rule's inputs."""
    if not (type(grad) is np.ndarray and type(other) is np.ndarray):
        _arrays(owner, **{"grad": grad, name: other})
    if grad.shape != other.shape:
        raise ValueError(f"{owner}: grad {grad.shape} and {name} {other.shape} must have one shape ({what})")
    return grad, other


def exp_backward_inputs(grad, out) -> tuple:
    """`exp_backward`'s inputs: arrays of one shape."""
    return _one_shape("exp_backward", grad, "out", out, "grad is the gradient of out = e^a, elementwise")


def log_backward_inputs(grad, a) -> tuple:
    """`log_backward`'s inputs: arrays of one shape."""
    return _one_shape("log_backward", grad, "a", a, "grad is the gradient of log a, elementwise")


def _matmul_shape(a: np.ndarray, b: np.ndarray) -> tuple:
    """The shape of a @ b (NumPy's rules: a 1-D operand is a vector), or a ValueError naming a and b."""
    if not a.ndim or not b.ndim:
        raise ValueError(f"matmul_backward: a {a.shape} and b {b.shape} must have at least one axis each")
    inner = b.shape[-2] if b.ndim > 1 else b.shape[0]
    if a.shape[-1] != inner:
        raise ValueError(f"matmul_backward: a {a.shape} and b {b.shape} do not fit: a's last axis ({a.shape[-1]}) "
                         f"must equal b's {'second-to-last' if b.ndim > 1 else 'only'} axis ({inner})")
    batch_a, batch_b = a.shape[:-2], b.shape[:-2]
    try:  # (a stack times one matrix, or stacks of one shape: no broadcast to work out)
        batch = batch_a if batch_a == batch_b or not batch_b else batch_b if not batch_a else \
            np.broadcast_shapes(batch_a, batch_b)
    except ValueError:
        raise ValueError(f"matmul_backward: the batch axes of a {a.shape} and b {b.shape} cannot be broadcast "
                         f"together") from None
    return batch + a.shape[-2:-1] + (b.shape[-1:] if b.ndim > 1 else ())  # (..., n, p) @ (..., p, m) -> (..., n, m)


def matmul_backward_inputs(grad, a, b) -> tuple:
    """`matmul_backward`'s inputs: arrays, `grad` of the shape of a @ b."""
    if not (type(grad) is np.ndarray and type(a) is np.ndarray and type(b) is np.ndarray):
        _arrays("matmul_backward", grad=grad, a=a, b=b)
    a_shape, b_shape = a.shape, b.shape  # the usual case: matrices, or stacks of them of one shape
    if len(a_shape) == len(b_shape) > 1 and a_shape[-1] == b_shape[-2] and a_shape[:-2] == b_shape[:-2] and \
            grad.shape == a_shape[:-1] + b_shape[-1:]:
        return grad, a, b
    expected = _matmul_shape(a, b)
    if grad.shape != expected:
        raise ValueError(f"matmul_backward: grad has shape {grad.shape}, expected {expected} (the shape of a @ b, "
                         f"for a {a.shape} and b {b.shape})")
    return grad, a, b


def _summed_axes(axes, shape: tuple) -> tuple:
    """`axes` (a tuple of axis indices of `shape`, negatives allowed, or one index) as a sorted tuple."""
    axes = axes if isinstance(axes, (tuple, list)) else (axes,)
    normalised = []
    for axis in axes:
        if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
            raise TypeError(f"sum_backward: axes must be a tuple of axis indices, got {axes!r}")
        if not -len(shape) <= axis < max(len(shape), 1):
            raise ValueError(f"sum_backward: axis {axis} is out of range for shape {shape}")
        normalised.append(int(axis) % max(len(shape), 1))
    if len(set(normalised)) != len(normalised):
        raise ValueError(f"sum_backward: axes {tuple(axes)} name the same axis twice")
    return tuple(sorted(normalised)) if shape else ()


def sum_backward_inputs(grad, shape, axes, keepdims) -> tuple:
    """`sum_backward`'s inputs: an array `grad` of the shape of a sum over `axes` of a tensor of `shape`."""
    if type(grad) is not np.ndarray:
        _arrays("sum_backward", grad=grad)
    if type(shape) is not tuple or not all([type(size) is int for size in shape]):
        shape = sizes("sum_backward", "shape", shape)
    if type(axes) is not tuple or not all([type(axis) is int and 0 <= axis < len(shape) for axis in axes]):
        axes = _summed_axes(axes, shape)
    if keepdims is not True and keepdims is not False:
        keepdims = flag("sum_backward", "keepdims", keepdims)
    if keepdims:
        expected = tuple([1 if axis in axes else size for axis, size in enumerate(shape)])
    else:
        expected = tuple([size for axis, size in enumerate(shape) if axis not in axes])
    if grad.shape != expected:
        raise ValueError(f"sum_backward: grad has shape {grad.shape}, expected {expected} (shape {shape} summed over "
                         f"axes {axes}{', kept as size 1' if keepdims else ''})")
    return grad, shape, axes, keepdims
