"""The data-only channel between the grader and a student's worker (chapter 11, "How grading works").

When a class is graded, the checks that decide pass or fail run in the grader's own process; the
student's code runs in a separate, sandboxed worker process. The two talk over a socket in messages
that can hold only data: None, booleans, numbers, strings, lists, tuples, dicts with string keys,
and NumPy arrays of plain numeric dtypes. Nothing that crosses can run code when it is read (no
pickle), and everything is checked against limits on size, depth, dtype and shape as it is read, since
what a worker sends is untrusted input.

A frame is a 4-byte big-endian length and that many bytes: a JSON header, then the raw bytes of the
arrays it names. In the header an array is ``{"__array__": i, "dtype": "<f8", "shape": [2, 3]}``, i being
its place among the buffers that follow; a tuple is ``{"__tuple__": [...]}``.

This module uses only the standard library and NumPy: the worker loads it by path before it imports
any minitorch.
"""

from __future__ import annotations

import json
import math
import socket
import struct
import time

import numpy as np

MAX_FRAME_BYTES = 64 << 20  # one message; the largest array a check needs is a few MB
MAX_ARRAY_ELEMENTS = 1 << 22  # per array
MAX_DIMENSIONS = 8
MAX_DEPTH = 16  # nesting of lists, tuples and dicts
MAX_ITEMS = 100_000  # entries of one list, tuple or dict, and arrays per message
MAX_STRING = 100_000  # characters
MAX_INTEGER_DIGITS = 60  # a Python int beyond this is refused (no check needs one)
ALLOWED_DTYPES = ("?", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8")  # kinds and sizes


class ChannelError(ValueError):
    """A message that breaks the format or the limits; the message says which."""


class ChannelClosed(EOFError):
    """The other end closed the socket (a worker that exited or died)."""


# ----------------------------------------------------------------------
# values <-> (header, buffers)


def encode(value) -> bytes:
    """`value` as the bytes of one frame (length prefix included); ChannelError if it is not plain data."""
    buffers: list[bytes] = []
    header = json.dumps(_to_header(value, buffers, 0), allow_nan=True, separators=(",", ":")).encode("utf-8")
    body = struct.pack(">I", len(header)) + header + b"".join(buffers)
    if len(body) > MAX_FRAME_BYTES:
        raise ChannelError(f"a message of {len(body):,} bytes is larger than the channel's limit "
                           f"({MAX_FRAME_BYTES:,} bytes)")
    return struct.pack(">I", len(body)) + body


def _to_header(value, buffers: list, depth: int):
    if depth > MAX_DEPTH:
        raise ChannelError(f"values nested deeper than {MAX_DEPTH} levels cannot be sent")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.ndarray):
        array = value if value.flags.c_contiguous else value.copy(order="C")  # (ascontiguousarray makes 0-d 1-d)
        dtype = array.dtype.newbyteorder("<") if array.dtype.byteorder == ">" else array.dtype
        if _dtype_code(dtype) not in ALLOWED_DTYPES:
            raise ChannelError(f"arrays of dtype {array.dtype} cannot be sent (only bool, int, uint and float)")
        buffers.append(array.astype(dtype, copy=False).tobytes())
        return {"__array__": len(buffers) - 1, "dtype": _dtype_code(dtype), "shape": list(array.shape)}
    if isinstance(value, tuple):
        return {"__tuple__": [_to_header(item, buffers, depth + 1) for item in value]}
    if isinstance(value, list):
        return [_to_header(item, buffers, depth + 1) for item in value]
    if isinstance(value, dict):
        if not all(isinstance(key, str) and not key.startswith("__") for key in value):
            raise ChannelError("only dicts with string keys (not starting with '__') can be sent")
        return {key: _to_header(item, buffers, depth + 1) for key, item in value.items()}
    raise ChannelError(f"a {type(value).__name__} cannot be sent: only None, bool, numbers, strings, lists, "
                       f"tuples, dicts and NumPy arrays")


def _dtype_code(dtype: np.dtype) -> str:
    return "?" if dtype.kind == "b" else f"{dtype.kind}{dtype.itemsize}"


def decode(body: bytes):
    """The value in the body of one frame (after its length prefix), checked against every limit."""
    if len(body) < 4:
        raise ChannelError("a message shorter than its header length")
    (header_length,) = struct.unpack(">I", body[:4])
    if header_length > len(body) - 4:
        raise ChannelError("a message whose header runs past its end")
    try:
        header = json.loads(body[4:4 + header_length].decode("utf-8"), parse_int=_bounded_int,
                            parse_constant=float)
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise ChannelError(f"a message whose header is not valid JSON ({error})") from None
    reader = _Buffers(memoryview(body)[4 + header_length:])
    value = _from_header(header, reader, 0)
    if reader.offset != len(reader.data):
        raise ChannelError("a message with bytes left over after its arrays")
    return value


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INTEGER_DIGITS:
        raise ChannelError(f"an integer of {len(text)} digits")
    return int(text)


class _Buffers:
    def __init__(self, data: memoryview):
        self.data, self.offset, self.count = data, 0, 0

    def take(self, size: int) -> memoryview:
        if self.offset + size > len(self.data):
            raise ChannelError("a message whose arrays run past its end")
        chunk = self.data[self.offset:self.offset + size]
        self.offset += size
        return chunk


def _from_header(value, buffers: _Buffers, depth: int):
    if depth > MAX_DEPTH:
        raise ChannelError(f"values nested deeper than {MAX_DEPTH} levels")
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value
    if isinstance(value, str):
        if len(value) > MAX_STRING:
            raise ChannelError(f"a string of {len(value):,} characters (the limit is {MAX_STRING:,})")
        return value
    if isinstance(value, list):
        _check_items(len(value))
        return [_from_header(item, buffers, depth + 1) for item in value]
    if not isinstance(value, dict):
        raise ChannelError(f"an unexpected {type(value).__name__} in a message")
    if "__array__" in value:
        return _array(value, buffers)
    if "__tuple__" in value:
        if set(value) != {"__tuple__"} or not isinstance(value["__tuple__"], list):
            raise ChannelError("a malformed tuple")
        _check_items(len(value["__tuple__"]))
        return tuple(_from_header(item, buffers, depth + 1) for item in value["__tuple__"])
    _check_items(len(value))
    if any(key.startswith("__") for key in value):
        raise ChannelError("a dict key starting with '__'")
    return {key: _from_header(item, buffers, depth + 1) for key, item in value.items()}


def _check_items(count: int) -> None:
    if count > MAX_ITEMS:
        raise ChannelError(f"a list or dict of {count:,} items (the limit is {MAX_ITEMS:,})")


def _array(description: dict, buffers: _Buffers) -> np.ndarray:
    if set(description) != {"__array__", "dtype", "shape"}:
        raise ChannelError("a malformed array description")
    dtype, shape = description["dtype"], description["shape"]
    if dtype not in ALLOWED_DTYPES:
        raise ChannelError(f"an array of dtype {dtype!r} (allowed: {', '.join(ALLOWED_DTYPES)})")
    if not isinstance(shape, list) or len(shape) > MAX_DIMENSIONS or \
            not all(isinstance(size, int) and not isinstance(size, bool) and 0 <= size for size in shape):
        raise ChannelError(f"an array shape {shape!r} (at most {MAX_DIMENSIONS} non-negative sizes)")
    elements = math.prod(shape)
    if elements > MAX_ARRAY_ELEMENTS:
        raise ChannelError(f"an array of {elements:,} elements (the limit is {MAX_ARRAY_ELEMENTS:,})")
    buffers.count += 1
    if description["__array__"] != buffers.count - 1:
        raise ChannelError("arrays out of order in a message")
    numpy_dtype = np.dtype(bool) if dtype == "?" else np.dtype(f"<{dtype}")
    chunk = buffers.take(elements * numpy_dtype.itemsize)
    return np.frombuffer(chunk, dtype=numpy_dtype).reshape(shape).copy()  # a copy: writable, own memory


# ----------------------------------------------------------------------
# frames over a socket


def send(connection: socket.socket, value) -> None:
    connection.sendall(encode(value))


def send_with_deadline(connection: socket.socket, value, deadline: float) -> None:
    """`send`, or TimeoutError if the other end has not taken it all by `deadline` (time.monotonic())."""
    frame = encode(value)
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError("no time left to send")
    connection.settimeout(remaining)
    try:
        connection.sendall(frame)
    except socket.timeout:
        raise TimeoutError("the other end took no more input before the deadline") from None


def receive(connection: socket.socket, deadline: float | None = None):
    """The next value from `connection`; ChannelClosed at its end, ChannelError for a bad frame, TimeoutError
    if it has not all arrived by `deadline` (time.monotonic()), however slowly it trickles in."""
    (length,) = struct.unpack(">I", _read_exactly(connection, 4, deadline))
    if length > MAX_FRAME_BYTES:
        raise ChannelError(f"a message announced as {length:,} bytes (the limit is {MAX_FRAME_BYTES:,})")
    return decode(_read_exactly(connection, length, deadline))


def _read_exactly(connection: socket.socket, size: int, deadline: float | None) -> bytes:
    chunks, left = [], size
    while left:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("no complete answer before the deadline")
            connection.settimeout(remaining)
        try:
            chunk = connection.recv(min(left, 1 << 20))
        except socket.timeout:
            raise TimeoutError("no complete answer before the deadline") from None
        if not chunk:
            raise ChannelClosed("the other end closed the channel")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def as_data(value):
    """`value` as it would arrive over the channel (a student's own run checks the same way)."""
    return decode(encode(value)[4:])


# ----------------------------------------------------------------------
# errors as data


def error_message(exception: BaseException) -> dict:
    """What a worker sends when the student's code raised: the names of the exception's classes (most
    specific first) and its message, cut to MAX_STRING characters."""
    names = [cls.__name__ for cls in type(exception).__mro__ if cls not in (object,)]
    try:
        text = str(exception)
    except Exception:  # a __str__ that raises is the student's problem, not the channel's
        text = "(the exception's message could not be turned into text)"
    return {"error": {"types": names[:20], "message": text[:MAX_STRING]}}


# Exception classes a message may name, re-raised as themselves; any other is a StudentError. No class
# is looked up by a name that came over the channel: only these.
REBUILT = {cls.__name__: cls for cls in (
    ArithmeticError, AssertionError, AttributeError, BufferError, EOFError, FloatingPointError, ImportError,
    IndexError, KeyError, LookupError, MemoryError, ModuleNotFoundError, NameError, NotImplementedError,
    OverflowError, PermissionError, RecursionError, RuntimeError, TypeError, UnboundLocalError, ValueError,
    ZeroDivisionError, OSError)}
# What a BaseException that is not an Exception means when a student's code raises it.
NOT_AN_ERROR = {
    "KeyboardInterrupt": "KeyboardInterrupt, raised by the code itself (nobody pressed Ctrl-C)",
    "SystemExit": "SystemExit (sys.exit() or exit() was called)",
    "Exit": "pytest's Exit (pytest.exit() was called)",
    "Skipped": "pytest's Skipped (pytest.skip() was called)",
    "Failed": "pytest's Failed (pytest.fail() was called)",
    "GeneratorExit": "GeneratorExit",
}


class StudentError(RuntimeError):
    """The student's code raised an exception of a class the channel does not rebuild (its name leads the
    message), or one that is not an error at all (KeyboardInterrupt, SystemExit, pytest.exit)."""


def rebuild_error(error: dict) -> Exception:
    """The exception to raise for an error message: the first of its classes that REBUILT knows, with its
    message; else a StudentError naming the class. Never a BaseException that is not an Exception."""
    if not isinstance(error, dict):
        return StudentError(f"a malformed error message: {error!r}"[:500])
    names = [str(name) for name in error.get("types", [])][:20] if isinstance(error.get("types"), list) else []
    message = str(error.get("message", ""))
    if names and names[0] in NOT_AN_ERROR or (names and "Exception" not in names):
        what = NOT_AN_ERROR.get(names[0], names[0])
        return StudentError(f"the code raised {what} instead of returning" + (f": {message}" if message else ""))
    for name in names:
        if name in REBUILT:
            rebuilt = REBUILT[name](message)
            if name != names[0]:
                rebuilt.add_note(f"(raised as {names[0]}, a subclass of {name})")
            return rebuilt
    return StudentError(f"{names[0] if names else 'an exception'}: {message}")
