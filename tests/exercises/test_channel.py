"""Specification of minitorch/exercises/grader/channel.py: the data-only format between the grader and a worker.

What a worker sends is untrusted input: only plain data crosses, nothing runs when it is read, and every
limit (size, depth, dtype, shape) is checked as it is read.
"""

from __future__ import annotations

import json
import pickle
import socket
import struct
import threading
import time

import numpy as np
import pytest

from minitorch.exercises.grader import channel
from minitorch.exercises.grader.channel import ChannelError, decode, encode, rebuild_error


def body_of(header, buffers: bytes = b"") -> bytes:
    """The body of a frame written by hand: its JSON header (a value, or bytes as they are), then `buffers`."""
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack(">I", len(text)) + text + buffers


@pytest.mark.parametrize("value", [
    None, True, 3, -2.5, float("inf"), "text", [1, [2, 3]], (1, (2.0, None)), {"a": [1, {"b": (True,)}]},
    np.arange(6.0).reshape(2, 3), np.array(1.5), np.zeros((0, 4), dtype=np.float32), np.array([True, False]),
    np.arange(5, dtype=np.int64), np.asfortranarray(np.arange(6.0).reshape(2, 3)),
], ids=repr)
def test_plain_data_survives_the_round_trip_with_its_types_shapes_and_dtypes(value):
    back = decode(encode(value)[4:])
    if isinstance(value, np.ndarray):
        assert isinstance(back, np.ndarray) and back.dtype == value.dtype and back.shape == value.shape
        np.testing.assert_array_equal(back, value)
        assert back.flags.writeable, "a decoded array is the receiver's own, writable copy"
    else:
        assert back == value and type(back) is type(value)


@pytest.mark.parametrize("value, reason", [
    (object(), "cannot be sent"),
    (np.array([object()]), "dtype object"),
    (np.array([1 + 2j]), "dtype complex128"),
    ({1: 2}, "string keys"),
    ({"__array__": 0}, "string keys"),
    (10**100, "integer of"),
], ids=["object", "object-array", "complex", "int-key", "reserved-key", "huge-int"])
def test_what_is_not_plain_data_is_refused_when_sent(value, reason):
    with pytest.raises(ChannelError, match=reason):
        decode(encode(value)[4:]) if isinstance(value, int) else encode(value)


def test_a_pickle_is_not_read_as_data():
    malicious = pickle.dumps({"a": 1})
    with pytest.raises(ChannelError):
        decode(struct.pack(">I", len(malicious)) + malicious)


@pytest.mark.parametrize("header, buffers, reason", [
    ({"__array__": ["|O", [1]]}, b"\0" * 8, "described as"),
    ({"__array__": ["<c16", [1]]}, b"\0" * 16, "described as"),
    ({"__array__": ["<f8", [1 << 30]]}, b"", "elements"),
    ({"__array__": ["<f8", [1] * 9]}, b"\0" * 8, "at most 8 axes"),
    ({"__array__": ["<f8", [-1]]}, b"", "sizes >= 0"),
    ({"__array__": ["<f8", [4]]}, b"\0" * 8, "run past its end"),
    ({"__array__": ["<f8", [1]]}, b"\0" * 16, "left over"),
    ({"__array__": "<f8"}, b"\0" * 8, "described as"),
    ({"__array__": ["<f8", [1]], "extra": 2}, b"\0" * 8, "malformed"),
    ({"__tuple__": [1], "extra": 2}, b"", "malformed"),
    ({"x": "y" * (channel.MAX_STRING + 1)}, b"", "string of"),
    ({"list": list(range(channel.MAX_ITEMS + 1))}, b"", "items"),
], ids=["object-dtype", "complex-dtype", "too-many-elements", "too-many-axes", "negative-size", "short", "long",
        "no-shape", "array-and-more", "tuple", "string", "list"])
def test_a_hostile_frame_is_refused_with_the_reason(header, buffers, reason):
    with pytest.raises(ChannelError, match=reason):
        decode(body_of(header, buffers))


def test_a_header_larger_than_its_limit_is_refused_before_it_is_parsed(monkeypatch):
    """A worker's 43 MB header of nested lists cost the grader 1.2 GB of memory when it was parsed before its limits
    were checked: its length alone refuses it now. (json.loads, if it ran, would fail the test.)"""
    monkeypatch.setattr(channel.json, "loads", lambda *arguments, **options: pytest.fail("the header was parsed"))
    flood = b"[" + b"[]," * (channel.MAX_HEADER_BYTES // 3) + b"[]]"
    with pytest.raises(ChannelError, match="header length"):
        decode(body_of(flood))


def test_the_sender_refuses_a_message_over_the_limit_before_copying_its_arrays(monkeypatch):
    large = np.zeros(channel.MAX_ARRAY_ELEMENTS // 2)  # 16 MiB each: four of them pass the frame's limit
    monkeypatch.setattr(channel.np, "asarray", lambda *a, **k: pytest.fail("an array was copied"))
    with pytest.raises(ChannelError, match="larger than the channel's limits"):
        encode([large] * 5)
    with pytest.raises(ChannelError, match="elements"):
        encode(np.zeros(channel.MAX_ARRAY_ELEMENTS + 1, dtype=bool))


def test_nesting_deeper_than_the_limit_is_refused():
    deep = [[]]
    for _ in range(channel.MAX_DEPTH + 5):
        deep = [deep]
    with pytest.raises(ChannelError, match="nested deeper"):
        decode(body_of({"x": deep}))


def test_a_frame_announced_larger_than_the_limit_is_refused_before_it_is_read():
    left, right = socket.socketpair()
    left.sendall(struct.pack(">I", channel.MAX_FRAME_BYTES + 1))
    with pytest.raises(ChannelError, match="announced"):
        channel.receive(right)
    left.close()
    right.close()


def test_an_answer_trickling_in_byte_by_byte_still_meets_its_deadline():
    left, right = socket.socketpair()
    frame = encode({"value": list(range(1000))})

    def trickle():
        for byte in frame:
            try:
                left.send(bytes([byte]))
            except OSError:
                return
            time.sleep(0.01)

    threading.Thread(target=trickle, daemon=True).start()
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        channel.receive(right, deadline=time.monotonic() + 0.5)
    assert time.monotonic() - started < 2, "the deadline holds for the whole frame, not for each byte"
    left.close()
    right.close()


def test_an_error_comes_back_as_its_builtin_class_and_never_as_a_base_exception():
    class Custom(ValueError):
        pass

    rebuilt = rebuild_error(channel.error_message(Custom("bad axis"))["error"])
    assert type(rebuilt) is ValueError and str(rebuilt) == "bad axis", "a ValueError subclass arrives as ValueError"
    for raised in (KeyboardInterrupt(), SystemExit(0), GeneratorExit()):
        rebuilt = rebuild_error(channel.error_message(raised)["error"])
        assert isinstance(rebuilt, channel.StudentError) and not isinstance(rebuilt, (KeyboardInterrupt, SystemExit))
        assert type(raised).__name__ in str(rebuilt), f"the message should name what was raised: {rebuilt}"
    forged = rebuild_error({"types": ["KeyboardInterrupt", "Exception"], "message": "stop the class"})
    assert isinstance(forged, channel.StudentError), "a forged class list never raises KeyboardInterrupt here"
    unknown = rebuild_error({"types": ["LinAlgError", "Exception"], "message": "singular"})
    assert isinstance(unknown, channel.StudentError) and "LinAlgError: singular" in str(unknown)
