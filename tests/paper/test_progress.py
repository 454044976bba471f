"""Specification of minitorch.paper.progress: the dependency-free progress bar."""

from __future__ import annotations

import io

from minitorch.paper.progress import ProgressBar


def test_terminal_bar_redraws_one_line_and_ends_it():
    stream = io.StringIO()
    bar = ProgressBar(10, "train", stream=stream, min_interval=0.0)
    bar.update(5, loss=0.25)
    bar.close(10, loss=0.125)
    text = stream.getvalue()
    assert text.count("\r") == 2 and text.endswith("\n"), "each draw starts with a carriage return; close ends the line"
    assert "5/10" in text and "10/10" in text and "loss=0.125" in text


def test_disabled_bar_writes_nothing():
    stream = io.StringIO()
    bar = ProgressBar(10, stream=stream, enabled=False)
    bar.update(3)
    bar.close(10)
    assert stream.getvalue() == ""


def test_redraws_are_rate_limited():
    stream = io.StringIO()
    bar = ProgressBar(1000, stream=stream, min_interval=3600.0)
    for step in range(1000):
        bar.update(step)
    assert stream.getvalue().count("\r") == 1, "within min_interval only the first update draws"
