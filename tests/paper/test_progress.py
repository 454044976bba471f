"""Specification of minitorch.paper.progress: the dependency-free progress bar."""

from __future__ import annotations

import io

import pytest

from minitorch.paper.progress import ProgressBar


class Terminal(io.StringIO):
    """A stream that says it is a terminal, as sys.stderr does in a shell."""

    def isatty(self) -> bool:
        return True


def test_terminal_bar_redraws_one_line_and_ends_it():
    stream = Terminal()
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


def test_a_log_file_gets_one_line_per_draw_and_no_carriage_return():
    stream = io.StringIO()  # not a terminal: a log file, a pipe
    bar = ProgressBar(10, "train", stream=stream, min_interval=0.0)
    bar.update(5, loss=0.25)
    bar.close(10, loss=0.125)
    lines = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue() and "\x1b" not in stream.getvalue(), \
        "a log must not hold the carriage returns and erase codes that redraw a terminal's line"
    assert len(lines) == 2 and "5/10" in lines[0] and "10/10" in lines[1], lines


def test_redraws_are_rate_limited():
    stream = Terminal()
    bar = ProgressBar(1000, stream=stream, min_interval=3600.0)
    for step in range(1000):
        bar.update(step)
    assert stream.getvalue().count("\r") == 1, "within min_interval only the first update draws"


def test_a_run_that_stops_early_says_so_instead_of_showing_an_empty_bar():
    stream = io.StringIO()
    bar = ProgressBar(50_000, "softmax 1x1", stream=stream, min_interval=0.0)
    bar.close(776, max_error=0.0048)
    last = stream.getvalue().splitlines()[-1]
    assert "776 steps (stopped early; at most 50000)" in last and "[---" not in last, last


@pytest.mark.parametrize("stream", [5, "log.txt", None.__class__])
def test_a_stream_without_write_is_refused_when_the_bar_is_made(stream):
    with pytest.raises(TypeError, match=r"ProgressBar: stream must be a text stream with a write method"):
        ProgressBar(10, "x", stream=stream, min_interval=0.0)  # not an AttributeError at the first draw


@pytest.mark.parametrize("mode", ["w", "r"], ids=["closed", "opened-for-reading"])
def test_a_stream_that_cannot_be_written_is_refused_when_the_bar_is_made(tmp_path, mode):
    """A closed file was accepted, and the first draw failed mid-training in Python's words ("I/O operation on
    closed file"), though the docstring says every argument is checked when the bar is made."""
    (tmp_path / "c7.log").write_text("")
    with open(tmp_path / "c7.log", mode) as stream:
        if mode == "w":
            stream.close()
        with pytest.raises(ValueError, match=r"ProgressBar: stream must be open for writing .*, which is "
                                             + ("closed" if mode == "w" else "not writable")):
            ProgressBar(10, "x", stream=stream, min_interval=0.0)


@pytest.mark.parametrize("total, error", [(float("nan"), ValueError), (float("inf"), ValueError), ("10", TypeError)])
def test_a_total_that_is_no_finite_number_is_refused_when_the_bar_is_made(total, error):
    with pytest.raises(error, match=r"ProgressBar: total must be a finite number"):  # not int(nan) at a draw
        ProgressBar(total, "x", stream=io.StringIO(), min_interval=0.0)


def test_a_step_that_is_no_finite_number_is_named_when_the_bar_draws_it():
    bar = ProgressBar(10, "x", stream=io.StringIO(), lines=True, min_interval=0.0)
    with pytest.raises(ValueError, match=r"ProgressBar: step must be a finite number, got inf"):
        bar.update(float("inf"))


def test_a_negative_step_or_total_is_refused_naming_it_and_nothing_is_drawn():
    stream = io.StringIO()
    bar = ProgressBar(10, stream=stream, min_interval=0)
    with pytest.raises(ValueError, match=r"^ProgressBar: step must be the number of steps done, >= 0, got -1$"):
        bar.update(-1)  # it drew '-1/10 ... -346620 step/s'
    assert stream.getvalue() == "", f"a refused step draws nothing, got {stream.getvalue()!r}"
    bar.update(0)
    assert " 0/10 " in stream.getvalue(), "step 0 (nothing done yet) is still drawn"
    with pytest.raises(ValueError, match=r"^ProgressBar: total must be a number of steps >= 0, got -5$"):
        ProgressBar(-5, stream=io.StringIO())


@pytest.mark.parametrize("argument, value, error, culprit", [
    ("width", "24", TypeError, r"width must be an integer >= 1, got '24' \(str\)"),  # not '/' of str and int
    ("width", 0, ValueError, r"width must be an integer >= 1, got 0"),
    ("width", 2.5, TypeError, r"width must be an integer >= 1, got 2.5"),
    ("min_interval", "1", TypeError, r"min_interval must be a finite number >= 0, got '1'"),
    ("lines", "no", TypeError, r"lines must be True or False, got 'no'"),  # a true string: lines, silently
    ("enabled", "no", TypeError, r"enabled must be True or False, got 'no'"),
])
def test_every_argument_of_the_bar_is_checked_when_it_is_made_as_total_and_stream_are(argument, value, error,
                                                                                       culprit):
    """ProgressBar(10, width='24') was accepted, then the first draw, mid-training, failed with "unsupported
    operand type(s) for /: 'str' and 'int'"."""
    with pytest.raises(error, match=rf"ProgressBar: {culprit}"):
        ProgressBar(10, "x", stream=io.StringIO(), **{"min_interval": 0.0, argument: value})


@pytest.mark.parametrize("label", [None, 5])
def test_a_label_that_is_not_text_is_refused_when_the_bar_is_made(label):
    """ProgressBar(10, label=None) drew 'None [####...': the label is text, checked with the other arguments."""
    with pytest.raises(TypeError, match=r"^ProgressBar: label must be a str"):
        ProgressBar(10, label=label, stream=io.StringIO())


def test_a_stream_closed_after_the_bar_was_made_is_named_at_the_next_draw():
    """A bar that outlived its `with open(...)` block failed with Python's "I/O operation on closed file", naming
    neither the bar nor its stream."""
    stream = io.StringIO()
    bar = ProgressBar(10, "x", stream=stream, min_interval=0.0)
    stream.close()
    with pytest.raises(ValueError, match=r"^ProgressBar: its stream .* was closed after the bar was made"):
        bar.update(3)


@pytest.mark.parametrize("binary", ["buffer", "file"])
def test_a_binary_stream_is_refused_when_the_bar_is_made(tmp_path, binary):
    """ProgressBar(stream=io.BytesIO()) was accepted, then the first draw failed mid-training with "a bytes-like
    object is required, not 'str'"."""
    with (io.BytesIO() if binary == "buffer" else open(tmp_path / "log", "wb")) as stream:
        with pytest.raises(TypeError, match=r"^ProgressBar: stream must be a text stream .*which takes bytes"):
            ProgressBar(10, "x", stream=stream, min_interval=0.0)


@pytest.mark.parametrize("total, step", [(10, 30), (0, 5)])
def test_a_step_past_the_total_fills_the_bar_and_no_more(total, step):
    """update(30) of a bar of 10 steps drew 72 '#' in a bar 24 wide; a bar of 0 steps drew 120, at close too."""
    stream = io.StringIO()
    bar = ProgressBar(total, "x", stream=stream, lines=True, min_interval=0.0)
    bar.update(step)
    bar.close(step)
    for line in stream.getvalue().splitlines():
        assert f"[{'#' * 24}] {step}/{total} " in line, f"the bar must be full and 24 wide, got {line!r}"


def test_a_fractional_total_is_refused_and_a_whole_float_one_is_shown_as_an_integer():
    """ProgressBar(10.5) reported a run that did its 10 steps as 'stopped early; at most 10.5'."""
    with pytest.raises(ValueError, match=r"^ProgressBar: total must be a whole number of steps, got 10.5$"):
        ProgressBar(10.5, "x", stream=io.StringIO())
    stream = io.StringIO()
    ProgressBar(10.0, "x", stream=stream, lines=True, min_interval=0.0).close(10)
    assert " 10/10 " in stream.getvalue(), f"a total of 10.0 steps is 10 steps, got {stream.getvalue()!r}"
