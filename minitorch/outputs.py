"""Where the commands write: an output path is checked before any work, and what replaces a file or a folder
is written aside and moved into place whole (chapter 00).

Every command that writes (``reproduce``, ``book``, ``bench --json``, ``student-edition``, ``grade``,
``gradescope-bundle``) takes its output path through `check_output_folder` or `check_output_file` before
it starts: a path that is empty, the filesystem root, a file where a folder is wanted, not writable, inside
(or around) the command's own input, or inside the project's sources fails at once, in one line that names
the option. Minutes of work are never lost to a path that could not have been written.

Writing: `write_atomically` replaces one file; `building_aside` builds a whole folder beside its target
and moves it into place only when the block completes (an error or Ctrl-C leaves the target as it was).
This module uses only the standard library.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the project this library belongs to
PROJECT_SOURCES = ("minitorch", "tests", "chapters", ".git")  # no command writes into these


class OutputPathError(ValueError):
    """An output path that cannot be written as asked; the message names the option and the reason."""


def check_output_folder(path, option: str = "--out", inputs=()) -> Path:
    """`path` as an absolute folder path that the command may create or replace, or OutputPathError.

    `inputs` are the paths the command reads (a folder of submissions, of chapters): the output may be
    neither inside one of them nor hold one of them."""
    target = _checked_path(path, option)
    if target.exists() and not target.is_dir():
        raise OutputPathError(f"{option} {path}: is a file, not a folder; name a folder (it is created if needed)")
    _check_apart_from(target, path, option, inputs)
    _check_writable(target, path, option)
    return target


def check_output_file(path, option: str, inputs=()) -> Path:
    """`path` as an absolute file path that the command may create or replace, or OutputPathError."""
    target = _checked_path(path, option)
    if target.is_dir():
        raise OutputPathError(f"{option} {path}: is a folder; name a file")
    if target.exists() and not target.is_file():
        raise OutputPathError(f"{option} {path}: exists and is not a regular file (a pipe or a device?)")
    _check_apart_from(target, path, option, inputs)
    _check_writable(target, path, option)
    return target


def _checked_path(path, option: str) -> Path:
    if path is None or not str(path).strip():
        raise OutputPathError(f"{option} is empty; name the place to write")
    target = Path(os.path.realpath(Path(str(path)).expanduser()))  # links resolved: '--out link' is where it points
    if target == Path(target.anchor):
        raise OutputPathError(f"{option} {path}: is the filesystem root; name a folder of its own")
    return target


def _check_apart_from(target: Path, shown, option: str, inputs) -> None:
    """The output must not be, hold or sit inside an input or the project's sources."""
    guarded = [(Path(os.path.realpath(Path(str(path)).expanduser())), f"the input {path}") for path in inputs]
    guarded += [(ROOT / name, f"the project's own {name}/") for name in PROJECT_SOURCES]
    for folder, what in guarded:
        if target == folder or folder in target.parents:
            raise OutputPathError(f"{option} {shown}: lies inside {what}; writing there would mix the output "
                                  f"into what it was made from; choose a folder elsewhere")
        if target in folder.parents:
            raise OutputPathError(f"{option} {shown}: holds {what}; replacing it would delete that; choose a "
                                  f"folder elsewhere")
    if target == ROOT or target in ROOT.parents:
        raise OutputPathError(f"{option} {shown}: holds this project ({ROOT}); choose a folder of its own")


def _check_writable(target: Path, shown, option: str) -> None:
    """The nearest folder that exists (the target's parent, or further up) must be one we can write in."""
    existing = target.parent
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise OutputPathError(f"{option} {shown}: {existing} is a file, so nothing can be created below it")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise OutputPathError(f"{option} {shown}: cannot write in {existing} (permission denied or a read-only "
                              f"file system)")
    if target.is_dir() and not os.access(target, os.W_OK | os.X_OK):
        raise OutputPathError(f"{option} {shown}: cannot write in this folder (permission denied or read-only)")


def write_atomically(path, data: str | bytes, mode: int | None = None) -> None:
    """Write `data` beside `path`, then rename it over `path`: a reader sees the old file or the new one,
    never half of one. `mode` defaults to what open() would give (0o666 less the umask)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(temporary, mode)  # mkstemp makes files only their owner can read
        with os.fdopen(handle, "wb") as file:
            file.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def building_aside(target):
    """Yield a new, empty folder beside `target` to build into; when the block completes, the built folder
    replaces `target` whole (`replace_folder`). If the block raises or is interrupted, the folder being
    built is deleted and `target` is left exactly as it was."""
    target = Path(os.path.realpath(target))
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.partial-"))
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    replace_folder(staging, target)


def replace_folder(built, target) -> None:
    """Move the folder `built` to `target`, replacing whatever folder was there, with Ctrl-C held off for the
    two renames: `target` ends as the old folder or the new one, never a mixture of both."""
    built, target = Path(built), Path(target)
    in_main_thread = threading.current_thread() is threading.main_thread()  # only it may set signal handlers
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if in_main_thread else None
    old = None
    try:
        if target.exists():
            old = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.old-"))
            os.replace(target, old / target.name)
        try:
            os.replace(built, target)
        except BaseException:
            if old is not None:
                os.replace(old / target.name, target)  # put the old folder back
            raise
    finally:
        if in_main_thread:
            signal.signal(signal.SIGINT, previous)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
