"""Matplotlib, with a backend it knows, and `save`, which writes a figure to an image file.

Every module of `minitorch.paper.plotting` takes `plt` from here, so that the backend is checked once, before
pyplot is first imported.
"""

from __future__ import annotations

import io
import math
import os
import sys
from pathlib import Path

try:
    import matplotlib
except ValueError as error:  # matplotlib reads MPLBACKEND at import: a name it does not know fails every command
    if not os.environ.get("MPLBACKEND") or "backend" not in str(error):
        raise
    print(f"minitorch: MPLBACKEND={os.environ.pop('MPLBACKEND')!r} is not a matplotlib backend; drawing with "
          f"'Agg' instead (the figures are files)", file=sys.stderr)
    for name in [name for name in sys.modules if name == "matplotlib" or name.startswith("matplotlib.")]:
        del sys.modules[name]  # what the failed import left half made
    import matplotlib

    matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 - after the backend is checked

from minitorch import checks  # noqa: E402
from minitorch.outputs import given_path, write_atomically  # noqa: E402


def save(fig: plt.Figure, path, dpi: int = 110, close: bool = True) -> Path:
    """Write `fig` to `path` (parent folders created) and close it (unless not `close`: a figure function that
    saves on request returns its figure open); returns `path`, the file written.

    `path` must end in an image format's extension (.png, .pdf, .svg, ...): without one matplotlib would add
    .png and write another file than the one returned."""
    if not isinstance(fig, matplotlib.figure.Figure):
        raise TypeError(f"save: fig must be a matplotlib Figure (as the figure functions return), got "
                        f"{type(fig).__name__}")
    path = _image_path(fig, path)
    dpi = checks.positive_number("save", "dpi", dpi)
    close = checks.flag("save", "close", close)
    width, height = fig.get_size_inches() * dpi
    if min(width, height) < 1:  # matplotlib would fail writing an empty image
        smallest = fig.get_size_inches().min()
        raise ValueError(f"save: dpi={dpi:g} makes a figure of {smallest:g} inches less than 1 pixel across; use a "
                         f"dpi of at least {math.ceil(1 / smallest)}")
    checks.memory("save", f"the image at dpi={dpi:g}", (math.ceil(height), math.ceil(width), 4), itemsize=1)
    image = io.BytesIO()
    fig.savefig(image, format=path.suffix.lower().lstrip("."), dpi=dpi)
    write_atomically(path, image.getvalue(), option="save: path")  # (an old figure stays whole if this stops)
    if close:
        plt.close(fig)
    return path


def _image_path(fig: plt.Figure, path) -> Path:
    """`path` as a Path to an image file save can write, or an error naming it: an extension matplotlib knows,
    not an existing folder, and no parent that is a file or a device (mkdir's "File exists" said nothing)."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"save: path must be a file path such as 'figure.png', got {path!r:.80} "
                        f"({type(path).__name__})")
    path = given_path(path, "save: path", file=True)  # 'keep.png/' names a folder, though Path drops the slash
    path = path.expanduser()  # '~/figure.png' is written in the home folder: return the path written
    # {'png': 'Portable Network Graphics', ...}: every format savefig writes, whatever the backend (the figure's
    # own canvas knows only its backend's: under MPLBACKEND=pdf, pdf alone)
    formats = matplotlib.backend_bases.FigureCanvasBase.get_supported_filetypes()
    if path.is_dir():
        raise IsADirectoryError(f"save: path {str(path)!r} is a folder; give the image file's name, such as "
                                f"{str(path / 'figure.png')!r}")
    if path.suffix.lower().lstrip(".") not in formats:
        raise ValueError(f"save: path {str(path)!r} must end in an image format's extension ({', '.join(formats)}); "
                         f"without one matplotlib would write {str(path)!r} + '.png', not the path returned")
    parent = next(folder for folder in path.absolute().parents if folder.exists())  # the root exists
    if not parent.is_dir():
        raise NotADirectoryError(f"save: path {str(path)!r} lies inside {str(parent)!r}, which is not a folder")
    return path
