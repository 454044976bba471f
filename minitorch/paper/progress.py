"""A dependency-free progress bar for the terminal and for Jupyter (chapter 07).

In a terminal it redraws one line with a carriage return; in a Jupyter
notebook it updates one display area in place, as plain text. Anywhere else
(a log file, a pipe) it writes a new line at each draw, so that the log reads
line by line. Each shows the step count, the elapsed time, the rate and
whatever metrics the caller passes.
"""

from __future__ import annotations

import io
import sys
import time

from minitorch import checks


def _is_terminal(stream) -> bool:
    """True if ``stream`` is a terminal, where a carriage return redraws the line."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def _writable(stream) -> bool:
    """False if `stream` says it cannot be written (a file opened for reading); True if it has no say."""
    writable = getattr(stream, "writable", None)
    return not callable(writable) or bool(writable())


def _closed(stream) -> bool:
    """True if `stream` says it is closed."""
    return getattr(stream, "closed", False) is True


def _binary(stream) -> bool:
    """True if `stream` takes bytes, not text: a binary file (open(path, 'wb')) or buffer (io.BytesIO)."""
    if isinstance(stream, io.TextIOBase):
        return False
    return isinstance(stream, (io.RawIOBase, io.BufferedIOBase)) or "b" in str(getattr(stream, "mode", ""))


def _in_notebook() -> bool:
    """True inside a Jupyter kernel (where IPython's display can update in place)."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    shell = ipython.get_ipython() if hasattr(ipython, "get_ipython") else None
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


class ProgressBar:
    """``bar = ProgressBar(total, "label"); bar.update(step, loss=...); bar.close(step)``.

    Redraws at most every `min_interval` seconds, so it costs nothing
    measurable inside a training loop. `enabled=False` makes it silent.
    `lines=True` prints a new line at each draw instead of redrawing one
    (for several processes sharing a terminal); it draws every 10 s by default.
    A stream that is not a terminal (a file, a pipe) always gets lines: a log
    holds no carriage returns. Every argument is checked when the bar is made (a width '24' would fail at the
    first draw, mid-training; so would a closed stream).
    """

    def __init__(self, total: int, label: str = "", enabled: bool = True, min_interval: float | None = None,
                 stream=None, width: int = 24, lines: bool = False):
        if checks.finite_number("ProgressBar", "total", total) < 0:  # nan has no place on a bar, nor -1
            raise ValueError(f"ProgressBar: total must be a number of steps >= 0, got {total}")
        if total != int(total):  # 10 steps of 10.5 would read 'stopped early'
            raise ValueError(f"ProgressBar: total must be a whole number of steps, got {total}")
        enabled, lines = checks.flag("ProgressBar", "enabled", enabled), checks.flag("ProgressBar", "lines", lines)
        if not isinstance(label, str):  # drawn in front of the bar: None would show as 'None [####...'
            raise TypeError(f"ProgressBar: label must be a str, e.g. 'softmax 1x1', got {label!r:.60}")
        self.total, self.label, self.enabled, self.lines = int(total), label, enabled, lines
        self.width = checks.integer("ProgressBar", "width", width)
        self.stream = sys.stderr if stream is None else stream
        if not callable(getattr(self.stream, "write", None)):
            raise TypeError(f"ProgressBar: stream must be a text stream with a write method (sys.stderr, an open "
                            f"file), got {stream!r:.80} ({type(stream).__name__})")
        if _binary(self.stream):  # the first draw's str would fail in Python's words, mid-training
            raise TypeError(f"ProgressBar: stream must be a text stream (sys.stderr, open(path, 'w')), got "
                            f"{stream!r:.80} ({type(stream).__name__}), which takes bytes")
        if _closed(self.stream) or not _writable(self.stream):  # failed at the first draw
            raise ValueError(f"ProgressBar: stream must be open for writing (sys.stderr, open(path, 'w')), got "
                             f"{stream!r:.80}, which is {'closed' if self.stream.closed else 'not writable'}")
        in_notebook = enabled and not lines and _in_notebook()
        if not lines and not in_notebook and not _is_terminal(self.stream):
            self.lines = lines = True
        self.min_interval = ((10.0 if lines else 0.2) if min_interval is None
                             else checks.positive_number("ProgressBar", "min_interval", min_interval, allow_zero=True))
        self.start = time.perf_counter()
        self.last_draw = -float("inf")
        self.handle = None
        if in_notebook:
            from IPython.display import display
            self.handle = display(self._plain(0, {}), raw=True, display_id=True)

    def _plain(self, step: int, metrics: dict) -> dict:
        """The bar as a display's plain text (shown as it is, not as a quoted Python string)."""
        return {"text/plain": self._text(step, metrics)}

    def _text(self, step: int, metrics: dict, final: bool = False) -> str:
        if checks.finite_number("ProgressBar", "step", step) < 0:  # checked only when drawn: update costs nothing
            raise ValueError(f"ProgressBar: step must be the number of steps done, >= 0, got {step}")
        elapsed = time.perf_counter() - self.start
        rate = step / elapsed if elapsed > 0 else 0.0
        shown = " ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in metrics.items())
        if final and step < self.total:  # stopped before the budget: an empty bar would read as a failure
            return (f"{self.label} done: {step} steps (stopped early; at most {self.total}) {elapsed:.1f}s "
                    f"{rate:.0f} step/s {shown}").strip()
        filled = min(int(self.width * step / max(self.total, 1)), self.width)  # past the total: a full bar
        bar = "#" * filled + "-" * (self.width - filled)
        return f"{self.label} [{bar}] {step}/{self.total} {elapsed:.1f}s {rate:.0f} step/s {shown}".strip()

    def update(self, step: int, force: bool = False, final: bool = False, **metrics) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if not force and now - self.last_draw < self.min_interval:
            return
        self.last_draw = now
        text = self._text(step, metrics, final)
        if self.handle is None and _closed(self.stream):  # checked when made, but a `with open(...)` may end first
            raise ValueError(f"ProgressBar: its stream {self.stream!r:.80} was closed after the bar was made; close "
                             f"the bar (bar.close(step)) before its stream")
        if self.handle is not None:
            self.handle.update({"text/plain": text}, raw=True)
        elif self.lines:
            self.stream.write(text + "\n")
            self.stream.flush()
        else:
            self.stream.write("\r" + text + "\033[K")  # \033[K clears the rest of the line
            self.stream.flush()

    def close(self, step: int, **metrics) -> None:
        """Draw the final state and end the line."""
        self.update(step, force=True, final=True, **metrics)
        if self.enabled and self.handle is None and not self.lines:
            self.stream.write("\n")
            self.stream.flush()
