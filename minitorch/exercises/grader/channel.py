"""The data-only channel between the grader and a student's worker (chapter 11, "How grading works").

A frame is its length (4 bytes), its JSON header's length (4 bytes), the header, then the bytes of each array it
names, in order: an array is ``{"__array__": [dtype, shape]}``, a tuple ``{"__tuple__": [...]}``. Nothing read can
run code (no pickle), and every limit is checked before what it bounds is read. Only the standard library and NumPy.
"""

from __future__ import annotations

import json
import math
import socket
import struct
import time

import numpy as np

MAX_FRAME_BYTES = 64 << 20  # one message; the largest array a check needs is a few MB
MAX_HEADER_BYTES = 1 << 20  # its JSON: parsing it costs at most a few tens of MB
MAX_ARRAY_ELEMENTS = 1 << 22  # per array
MAX_DIMENSIONS = 8
MAX_DEPTH = 16  # nesting of lists, tuples and dicts
MAX_ITEMS = 100_000  # entries of one list, tuple or dict
MAX_STRING = 100_000  # characters
MAX_INTEGER_DIGITS = 60
ALLOWED_DTYPES = ("|b1", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8", "<f2", "<f4", "<f8")


class ChannelError(ValueError):
    """A message that breaks the format or the limits; the message says which."""


class ChannelClosed(EOFError):
    """The other end closed the socket (a worker that exited or died)."""


def encode(value) -> bytes:
    """`value` as one frame; ChannelError if it is not plain data or too large (counted before any array is copied)."""
    arrays = []
    header = json.dumps(_header_of(value, arrays, 0), separators=(",", ":")).encode()
    size = 4 + len(header) + sum(array.size * array.dtype.itemsize for array in arrays)
    if len(header) > MAX_HEADER_BYTES or size > MAX_FRAME_BYTES:
        raise ChannelError(f"a message of {size:,} bytes is larger than the channel's limits ({MAX_FRAME_BYTES:,} "
                           f"bytes, a header of {MAX_HEADER_BYTES:,})")
    buffers = [np.asarray(array, array.dtype.newbyteorder("<"), order="C").tobytes() for array in arrays]
    return b"".join([struct.pack(">II", size, len(header)), header, *buffers])


def _header_of(value, arrays: list, depth: int):
    if depth > MAX_DEPTH:
        raise ChannelError(f"values nested deeper than {MAX_DEPTH} levels cannot be sent")
    if isinstance(value, (np.bool_, np.integer, np.floating)):
        return value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.ndarray):
        dtype = value.dtype.newbyteorder("<")
        if dtype.str not in ALLOWED_DTYPES or value.size > MAX_ARRAY_ELEMENTS:
            raise ChannelError(f"an array of dtype {value.dtype} and {value.size:,} elements cannot be sent (only "
                               f"bool, int, uint and float, at most {MAX_ARRAY_ELEMENTS:,} elements)")
        arrays.append(value)
        return {"__array__": [dtype.str, list(value.shape)]}
    if isinstance(value, (list, tuple)):
        items = [_header_of(item, arrays, depth + 1) for item in value]
        return {"__tuple__": items} if isinstance(value, tuple) else items
    if isinstance(value, dict) and all(isinstance(key, str) and not key.startswith("__") for key in value):
        return {key: _header_of(item, arrays, depth + 1) for key, item in value.items()}
    raise ChannelError(f"a {type(value).__name__} cannot be sent: only None, bool, numbers, strings, lists, "
                       f"tuples, NumPy arrays and dicts with string keys (not starting with '__')")


def decode(body: bytes):
    """The value in the body of one frame (after its length), checked against every limit as it is read."""
    (header_length,) = struct.unpack(">I", body[:4]) if len(body) >= 4 else (-1,)
    if not 0 <= header_length <= min(MAX_HEADER_BYTES, len(body) - 4):
        raise ChannelError(f"a message whose header length ({header_length:,}) is past its end or the limit")
    try:
        header = json.loads(body[4:4 + header_length].decode(), parse_int=_bounded_int, parse_constant=float)
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise ChannelError(f"a message whose header is not valid JSON ({str(error)[:200]})") from None
    buffers = _Buffers(memoryview(body), 4 + header_length)
    value = _value_of(header, buffers, 0)
    if buffers.offset != len(body):
        raise ChannelError("a message with bytes left over after its arrays")
    return value


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INTEGER_DIGITS:
        raise ChannelError(f"an integer of {len(text)} digits")
    return int(text)


def _value_of(value, buffers: "_Buffers", depth: int):
    if depth > MAX_DEPTH:
        raise ChannelError(f"values nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, str) and len(value) > MAX_STRING:
        raise ChannelError(f"a string of {len(value):,} characters (the limit is {MAX_STRING:,})")
    if not isinstance(value, (list, dict)):
        return value
    if len(value) > MAX_ITEMS:
        raise ChannelError(f"a list or dict of {len(value):,} items (the limit is {MAX_ITEMS:,})")
    if isinstance(value, list):
        return [_value_of(item, buffers, depth + 1) for item in value]
    if set(value) == {"__array__"}:
        return buffers.array(value["__array__"])
    if set(value) == {"__tuple__"} and isinstance(value["__tuple__"], list):
        return tuple(_value_of(value["__tuple__"], buffers, depth))
    if any(key.startswith("__") for key in value):
        raise ChannelError("a malformed array or tuple, or a dict key starting with '__'")
    return {key: _value_of(item, buffers, depth + 1) for key, item in value.items()}


class _Buffers:
    """The arrays' bytes after the header, taken in order, each array's dtype and shape checked first."""

    def __init__(self, data: memoryview, offset: int):
        self.data, self.offset = data, offset

    def array(self, described) -> np.ndarray:
        dtype, shape = described if isinstance(described, list) and len(described) == 2 else (None, None)
        if dtype not in ALLOWED_DTYPES or not isinstance(shape, list) or len(shape) > MAX_DIMENSIONS or not all(
                isinstance(size, int) and size >= 0 for size in shape):
            raise ChannelError(f"an array described as {str(described)[:100]} (allowed: dtypes "
                               f"{', '.join(ALLOWED_DTYPES)}, at most {MAX_DIMENSIONS} axes of sizes >= 0)")
        elements = math.prod(shape)
        if elements > MAX_ARRAY_ELEMENTS:
            raise ChannelError(f"an array of {elements:,} elements (the limit is {MAX_ARRAY_ELEMENTS:,})")
        start, self.offset = self.offset, self.offset + elements * np.dtype(dtype).itemsize
        if self.offset > len(self.data):
            raise ChannelError("a message whose arrays run past its end")
        return np.frombuffer(self.data, dtype, elements, start).reshape(shape).copy()  # writable, its own memory


def send(connection: socket.socket, value, deadline: float | None = None) -> None:
    """Send `value`; TimeoutError if the other end has not taken it all by `deadline` (time.monotonic())."""
    frame = encode(value)
    connection.settimeout(None if deadline is None else _time_left(deadline))
    connection.sendall(frame)


def receive(connection: socket.socket, deadline: float | None = None):
    """The next value; ChannelClosed at the end, ChannelError for a bad frame, TimeoutError if it has not all
    arrived by `deadline`, however slowly it trickles in."""
    (length,) = struct.unpack(">I", _read_exactly(connection, 4, deadline))
    if length > MAX_FRAME_BYTES:
        raise ChannelError(f"a message announced as {length:,} bytes (the limit is {MAX_FRAME_BYTES:,})")
    return decode(_read_exactly(connection, length, deadline))


def _read_exactly(connection: socket.socket, size: int, deadline: float | None) -> bytes:
    chunks = []
    while size:
        connection.settimeout(None if deadline is None else _time_left(deadline))
        chunks.append(connection.recv(min(size, 1 << 20)))
        if not chunks[-1]:
            raise ChannelClosed("the other end closed the channel")
        size -= len(chunks[-1])
    return b"".join(chunks)


def _time_left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("no time left before the deadline")
    return left


def as_data(value):
    """`value` as it would arrive over the channel (a student's own run checks the same way)."""
    return decode(encode(value)[4:])


# ----------------------------------------------------------------------
# errors as data: only the classes of REBUILT come back as themselves (no class is looked up by a name that came
# over the channel), and what is not an error (KeyboardInterrupt, SystemExit, pytest.exit) never does

REBUILT = {cls.__name__: cls for cls in (
    ArithmeticError, AssertionError, AttributeError, BufferError, EOFError, FloatingPointError, ImportError,
    IndexError, KeyError, LookupError, MemoryError, ModuleNotFoundError, NameError, NotImplementedError,
    OverflowError, PermissionError, RecursionError, RuntimeError, TypeError, UnboundLocalError, ValueError,
    ZeroDivisionError, OSError)}
NOT_AN_ERROR = {"KeyboardInterrupt": "KeyboardInterrupt, raised by the code itself (nobody pressed Ctrl-C)",
                "SystemExit": "SystemExit (sys.exit() or exit() was called)",
                "Exit": "pytest's Exit (pytest.exit() was called)", "Skipped": "pytest's Skipped (pytest.skip() "
                "was called)", "Failed": "pytest's Failed (pytest.fail() was called)", "GeneratorExit": "GeneratorExit"}


class StudentError(RuntimeError):
    """The student's code raised a class the channel does not rebuild (named first), or what is not an error."""


def error_message(exception: BaseException) -> dict:
    """What a worker sends when the student's code raised: its classes' names, most specific first, and its text."""
    try:
        text = str(exception)
    except Exception:  # a __str__ that raises is the student's problem, not the channel's
        text = "(the exception's message could not be turned into text)"
    names = [cls.__name__ for cls in type(exception).__mro__ if cls is not object]
    return {"error": {"types": names[:20], "message": text[:MAX_STRING]}}


def rebuild_error(error: dict) -> Exception:
    """The exception to raise for an error message: the first of its classes REBUILT knows, else a StudentError."""
    names = error.get("types") if isinstance(error, dict) else None
    if not isinstance(names, list):
        return StudentError(f"a malformed error message: {error!r}"[:500])
    names, message = [str(name) for name in names[:20]], str(error.get("message", ""))
    if names and (names[0] in NOT_AN_ERROR or "Exception" not in names):
        what = NOT_AN_ERROR.get(names[0], names[0])
        return StudentError(f"the code raised {what} instead of returning" + (f": {message}" if message else ""))
    known = [name for name in names if name in REBUILT]
    if not known:
        return StudentError(f"{names[0] if names else 'an exception'}: {message}")
    rebuilt = REBUILT[known[0]](message)
    if known[0] != names[0]:
        rebuilt.add_note(f"(raised as {names[0]}, a subclass of {known[0]})")
    return rebuilt
