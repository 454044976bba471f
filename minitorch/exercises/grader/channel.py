"""The data-only channel between the grader and a student's worker (chapter 11, "How grading works").

The checks run in the grader's process; the student's code runs in a sandboxed worker. They talk over a socket
in messages that hold only data: None, booleans, numbers, strings, lists, tuples, dicts with string keys and
NumPy arrays of plain numeric dtypes. Nothing that crosses can run code when it is read (no pickle).

A frame is a 4-byte big-endian length and that many bytes: a 4-byte header length, a JSON header, then the
arrays it names in NumPy's ``.npy`` format, in order. In the header an array is ``{"__array__": i}`` and a tuple
``{"__tuple__": [...]}``. What a worker sends is untrusted, so every limit is checked before what it bounds is
parsed: the frame's length before it is read, the header's length before the JSON, each array's ``.npy`` header
(dtype, shape, elements) before its data; the sender counts every array's bytes before it copies one.

Only the standard library and NumPy: the worker loads this file by path before it imports any minitorch.
"""

from __future__ import annotations

import io
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
MAX_ITEMS = 100_000  # entries of one list, tuple or dict, and arrays per message
MAX_STRING = 100_000  # characters
MAX_INTEGER_DIGITS = 60  # a Python int beyond this is refused (no check needs one)
ALLOWED_DTYPES = ("|b1", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8", "<f2", "<f4", "<f8")
NPY_OVERHEAD = 128  # bytes of an array's .npy header (version 1.0 pads it to a multiple of 64)


class ChannelError(ValueError):
    """A message that breaks the format or the limits; the message says which."""


class ChannelClosed(EOFError):
    """The other end closed the socket (a worker that exited or died)."""


def encode(value) -> bytes:
    """`value` as the bytes of one frame (length prefix included); ChannelError if it is not plain data or too
    large (counted before any array is copied)."""
    arrays: list[np.ndarray] = []
    header = json.dumps(_to_header(value, arrays, 0), separators=(",", ":")).encode("utf-8")
    if len(header) > MAX_HEADER_BYTES:
        raise ChannelError(f"a message whose header has {len(header):,} bytes (the limit is {MAX_HEADER_BYTES:,})")
    frame = io.BytesIO()
    frame.write(struct.pack(">II", 0, len(header)) + header)
    for array in arrays:
        np.lib.format.write_array(frame, array, version=(1, 0), allow_pickle=False)
    frame.getbuffer()[:4] = struct.pack(">I", frame.tell() - 4)
    return frame.getvalue()


def _to_header(value, arrays: list, depth: int, size: list | None = None):
    size = size if size is not None else [0]  # bytes of the arrays so far
    if depth > MAX_DEPTH:
        raise ChannelError(f"values nested deeper than {MAX_DEPTH} levels cannot be sent")
    if value is None or isinstance(value, (bool, str, np.bool_)):
        return bool(value) if isinstance(value, np.bool_) else value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if isinstance(value, np.ndarray):
        dtype = value.dtype.newbyteorder("<") if value.dtype.byteorder == ">" else value.dtype
        if dtype.str not in ALLOWED_DTYPES:
            raise ChannelError(f"arrays of dtype {value.dtype} cannot be sent (only bool, int, uint and float)")
        size[0] += value.size * dtype.itemsize + NPY_OVERHEAD
        if value.size > MAX_ARRAY_ELEMENTS or size[0] > MAX_FRAME_BYTES:
            raise ChannelError(f"an array of {value.size:,} elements makes a message larger than the channel's "
                               f"limits ({MAX_ARRAY_ELEMENTS:,} elements, {MAX_FRAME_BYTES:,} bytes)")
        arrays.append(np.asarray(value, dtype=dtype, order="C"))  # (a copy only if it is not so already)
        return {"__array__": len(arrays) - 1}
    if isinstance(value, (list, tuple)):
        items = [_to_header(item, arrays, depth + 1, size) for item in value]
        return {"__tuple__": items} if isinstance(value, tuple) else items
    if isinstance(value, dict):
        if not all(isinstance(key, str) and not key.startswith("__") for key in value):
            raise ChannelError("only dicts with string keys (not starting with '__') can be sent")
        return {key: _to_header(item, arrays, depth + 1, size) for key, item in value.items()}
    raise ChannelError(f"a {type(value).__name__} cannot be sent: only None, bool, numbers, strings, lists, "
                       f"tuples, dicts and NumPy arrays")


def decode(body: bytes):
    """The value in the body of one frame (after its length prefix), checked against every limit."""
    (header_length,) = struct.unpack(">I", body[:4]) if len(body) >= 4 else (-1,)
    if not 0 <= header_length <= min(MAX_HEADER_BYTES, len(body) - 4):
        raise ChannelError(f"a message whose header length ({header_length:,}) is past its end or the limit "
                           f"({MAX_HEADER_BYTES:,} bytes)")
    try:
        header = json.loads(body[4:4 + header_length].decode("utf-8"), parse_int=_bounded_int,
                            parse_constant=float)
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise ChannelError(f"a message whose header is not valid JSON ({str(error)[:200]})") from None
    arrays = _Arrays(memoryview(body), 4 + header_length)
    value = _from_header(header, arrays, 0)
    if arrays.offset != len(body):
        raise ChannelError("a message with bytes left over after its arrays")
    return value


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INTEGER_DIGITS:
        raise ChannelError(f"an integer of {len(text)} digits")
    return int(text)


def _from_header(value, arrays: "_Arrays", depth: int):
    if depth > MAX_DEPTH:
        raise ChannelError(f"values nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, str) and len(value) > MAX_STRING:
        raise ChannelError(f"a string of {len(value):,} characters (the limit is {MAX_STRING:,})")
    if not isinstance(value, (list, dict)):
        return value  # (json.loads gives only None, bool, int, float, str, list and dict)
    if len(value) > MAX_ITEMS:
        raise ChannelError(f"a list or dict of {len(value):,} items (the limit is {MAX_ITEMS:,})")
    if isinstance(value, list):
        return [_from_header(item, arrays, depth + 1) for item in value]
    if "__array__" in value:
        if set(value) != {"__array__"} or value["__array__"] != arrays.count:
            raise ChannelError("a malformed array reference, or arrays out of order")
        return arrays.next()
    if "__tuple__" in value:
        if set(value) != {"__tuple__"} or not isinstance(value["__tuple__"], list):
            raise ChannelError("a malformed tuple")
        return tuple(_from_header(value["__tuple__"], arrays, depth))
    if any(key.startswith("__") for key in value):
        raise ChannelError("a dict key starting with '__'")
    return {key: _from_header(item, arrays, depth + 1) for key, item in value.items()}


class _Arrays:
    """The .npy arrays after the header, read one at a time, each header checked before its data is touched."""

    def __init__(self, data: memoryview, offset: int):
        self.data, self.offset, self.count = data, offset, 0

    def next(self) -> np.ndarray:
        if self.count >= MAX_ITEMS:
            raise ChannelError(f"more than {MAX_ITEMS:,} arrays in a message")
        start = io.BytesIO(self.data[self.offset:self.offset + 1024])  # (a .npy header we write has 128 bytes)
        try:
            if np.lib.format.read_magic(start) != (1, 0):
                raise ValueError("not a .npy array of version 1.0")
            shape, fortran_order, dtype = np.lib.format.read_array_header_1_0(start, max_header_size=1000)
        except ValueError as error:
            raise ChannelError(f"a malformed array ({str(error)[:200]})") from None
        if dtype.str not in ALLOWED_DTYPES or fortran_order or len(shape) > MAX_DIMENSIONS or min(shape, default=0) < 0:
            raise ChannelError(f"an array of dtype {dtype.str!r} and shape {shape} (allowed: "
                               f"{', '.join(ALLOWED_DTYPES)} in C order, at most {MAX_DIMENSIONS} axes)")
        elements = math.prod(shape)
        if elements > MAX_ARRAY_ELEMENTS:
            raise ChannelError(f"an array of {elements:,} elements (the limit is {MAX_ARRAY_ELEMENTS:,})")
        begin = self.offset + start.tell()
        self.offset = begin + elements * dtype.itemsize
        if self.offset > len(self.data):
            raise ChannelError("a message whose arrays run past its end")
        self.count += 1
        return np.frombuffer(self.data, dtype, elements, begin).reshape(shape).copy()  # writable, its own memory


def send(connection: socket.socket, value) -> None:
    connection.sendall(encode(value))


def send_with_deadline(connection: socket.socket, value, deadline: float) -> None:
    """`send`, or TimeoutError if the other end has not taken it all by `deadline` (time.monotonic())."""
    frame = encode(value)
    connection.settimeout(_time_left(deadline))
    connection.sendall(frame)  # (a socket's timeout is a TimeoutError)


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
            connection.settimeout(_time_left(deadline))
        chunks.append(connection.recv(min(left, 1 << 20)))
        if not chunks[-1]:
            raise ChannelClosed("the other end closed the channel")
        left -= len(chunks[-1])
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
# errors as data


def error_message(exception: BaseException) -> dict:
    """What a worker sends when the student's code raised: the names of the exception's classes (most
    specific first) and its message, cut to MAX_STRING characters."""
    names = [cls.__name__ for cls in type(exception).__mro__ if cls is not object]
    try:
        text = str(exception)
    except Exception:  # a __str__ that raises is the student's problem, not the channel's
        text = "(the exception's message could not be turned into text)"
    return {"error": {"types": names[:20], "message": text[:MAX_STRING]}}


# Exception classes a message may name, re-raised as themselves; any other is a StudentError. No class is
# looked up by a name that came over the channel: only these.
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
    if names and (names[0] in NOT_AN_ERROR or "Exception" not in names):
        what = NOT_AN_ERROR.get(names[0], names[0])
        return StudentError(f"the code raised {what} instead of returning" + (f": {message}" if message else ""))
    for name in names:
        if name in REBUILT:
            rebuilt = REBUILT[name](message)
            if name != names[0]:
                rebuilt.add_note(f"(raised as {names[0]}, a subclass of {name})")
            return rebuilt
    return StudentError(f"{names[0] if names else 'an exception'}: {message}")
