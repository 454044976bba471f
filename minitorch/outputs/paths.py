"""Checking a path before any work (chapter 00): every command takes the paths it reads and writes through here,
so that minutes of work are never lost to a path that could not have been read or written.

An output path (`check_output_folder`, `check_output_file`) that is empty, the filesystem root, a file where a
folder is wanted (or a folder where a file is), not writable, inside (or around) the command's own input, or
inside the project's sources fails at once, in one line that names the option; so does an output folder that holds
the user's world (the home or the current folder, a folder above them, a folder of the system), even with --force.
The rule for every path a command reads or writes (`checked_path`, used by those checks and by `check_input_file`):
a name longer than the file system allows (255 bytes) or a symbolic-link loop is reported before any work, in one
line, as is a path below a file ('afile/m.npz': afile is a file, not a missing folder); a file that is read must be
a regular file (a FIFO would block the reader forever, a device never ends).

How a checked output is then written (aside, and moved into place whole) is `minitorch.outputs.atomic_writes`.
This module uses only the standard library.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[2]  # the project this library belongs to
PROJECT_SOURCES = ("minitorch", "tests", "chapters", ".git")  # no command writes into these
NAME_MAX, PATH_MAX = 255, 4095  # bytes in one name and in a whole path, on Linux's file systems


class PathError(ValueError):
    """A path that cannot be read or written as asked; the message names the option and the reason."""


class OutputPathError(PathError):
    """An output path that cannot be written as asked; the message names the option and the reason."""


class UnwritableFileError(PathError, OSError):
    """A file `write_atomically` cannot write (found after the work, where an OSError is expected: a command's
    wrapper prints it as one line)."""


def given_path(path, option: str, error=PathError, file: bool = False) -> Path:
    """`path` as a Path, or TypeError naming `option` if it is no path (a number, None, bytes), or `error` if it
    is empty (or only spaces: Path('') is '.'), holds a NUL character, which no file name can (Python's own
    'embedded null byte' names neither), or starts with '~name' of no user here. With `file`, the path must name a
    file: 'out/' or 'out/.' names a folder, though Path('out/') drops the slash."""
    if not isinstance(path, (str, os.PathLike)) or isinstance(os.fspath(path), bytes):
        raise TypeError(f"{option}: expected a path (a str or a pathlib.Path), got {type(path).__name__} {path!r}")
    if not os.fspath(path).strip():  # Path('') is '.', the current folder
        raise error(f"{option} is empty; name the {'file' if file else 'place'}")
    if "\x00" in os.fspath(path):
        raise error(f"{option} {os.fspath(path)!r}: holds a NUL character (\\x00), which no file name can; "
                    f"name the file without it")
    if file and _names_a_folder(os.fspath(path)):
        ending = os.path.basename(path) or os.sep
        raise error(f"{option} {os.fspath(path)!r}: names a folder (it ends with {ending!r}), not a file; add the "
                    f"file's name (pathlib would drop the end and take the file {os.path.normpath(path)!r} instead)")
    try:
        Path(path).expanduser()  # (callers expand '~' later; pathlib's error for '~name' names no path)
    except RuntimeError:
        raise error(f"{option} {os.fspath(path)!r}: {os.fspath(path).split(os.sep)[0]} names no home folder on this "
                    f"machine (no such user); give the path in full") from None
    return Path(path)


def _names_a_folder(text: str) -> bool:
    """Whether the path `text` ends as only a folder's path can: with a separator, '.' or '..' (the root, '/',
    is left to the checks that name it)."""
    separators = tuple(separator for separator in (os.sep, os.altsep) if separator)
    is_root = os.path.dirname(text) == text
    return not is_root and (text.endswith(separators) or os.path.basename(text) in (".", ".."))


def checked_path(path, option: str, follow_links: bool = True, error=PathError, file: bool = False) -> Path:
    """`path` made absolute (its symbolic links resolved, unless `follow_links` is False, when only the folders
    above it are), or `error` naming `option`: an empty path, a deleted working folder, a name longer than
    255 bytes, a path longer than 4095 bytes, a symbolic-link loop, with `file` a folder's path such as 'out/'
    (TypeError: no path at all)."""
    if path is None or not str(path).strip():
        raise error(f"{option} is empty; name the place")
    shown = str(given_path(path, option, error, file=file))
    try:
        absolute = os.path.abspath(Path(shown).expanduser())
    except FileNotFoundError:
        raise error(f"{option} {shown}: the working folder no longer exists (deleted?); cd to a folder that "
                    f"does, or give an absolute path") from None
    for name in Path(absolute).parts:
        if len(os.fsencode(name)) > NAME_MAX:
            raise error(f"{option} {shown[:60]}...: a name of {len(os.fsencode(name))} bytes is too long (at most "
                        f"{NAME_MAX}); choose a shorter name")
    if len(os.fsencode(absolute)) > PATH_MAX:
        raise error(f"{option} {shown[:60]}...: the path is {len(os.fsencode(absolute))} bytes long (at most "
                    f"{PATH_MAX}); choose a shorter one")
    parent, name = os.path.split(absolute)
    resolved = os.path.realpath(absolute) if follow_links else os.path.join(os.path.realpath(parent), name)
    try:
        os.stat(resolved, follow_symlinks=follow_links)
    except OSError as problem:
        if problem.errno == errno.ELOOP:
            raise error(f"{option} {shown}: a symbolic link in it points back to itself (a loop); remove the "
                        f"link or name another path") from None
        if problem.errno == errno.ENAMETOOLONG:
            raise error(f"{option} {shown[:60]}...: the path is too long once its links are resolved") from None
        if problem.errno == errno.ENOTDIR:
            raise error(f"{option} {shown}: {_file_above(resolved)} is a file, so nothing can be created below "
                        f"it; name a path in a folder") from None
    return Path(resolved)


def _file_above(path) -> str:
    """The first of the folders above `path` (from the root down) that exists and is no folder: a file."""
    for above in reversed(Path(path).parents):
        if above.exists() and not above.is_dir():
            return str(above)
    return str(Path(path).parent)


def check_input_file(path, option: str, error=PathError) -> Path:
    """`path` as an absolute path to a regular file to read, or `error` (FileNotFoundError if it does not
    exist): a FIFO, a socket or a device is refused before it is opened, since reading one may block forever
    or never end; so is a pipe that bash's <(command) passes as /dev/fd/63, named as such."""
    target = checked_path(path, option, error=error, file=True)
    check_readable(target, path, option, error)
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        target, mode = _reached_through_the_system(path)
    if stat.S_ISDIR(mode):
        raise error(f"{option} {path}: is a folder; name a file")
    if stat.S_ISFIFO(mode) and not os.path.exists(os.path.realpath(path)):
        raise error(f"{option} {path}: is a pipe (what <(command) passes), not a regular file; save the text in a "
                    f"file and name that")
    if not stat.S_ISREG(mode):
        kind = "a named pipe (FIFO)" if stat.S_ISFIFO(mode) else "a device or socket"
        raise error(f"{option} {path}: is {kind}, not a regular file; reading it could wait forever")
    return target


def _reached_through_the_system(path) -> tuple[Path, int]:
    """(`path` made absolute, the mode of what it leads to) for a link of the system's that leads to something with
    no name, which resolving the link cannot reach: /dev/fd/63, as bash's <(command) passes, leads to 'pipe:[N]', and
    /proc/PID/fd/N of a deleted file to 'NAME (deleted)'. FileNotFoundError if nothing is there."""
    absolute = os.path.abspath(path)
    try:
        return Path(absolute), os.stat(absolute).st_mode
    except FileNotFoundError:
        raise FileNotFoundError(errno.ENOENT, "no such file", str(path)) from None


def check_readable(target, shown, option: str, error=PathError) -> None:
    """`error` if `target` exists but this user may not read it (a folder: list it and open what it holds), or a
    folder above it does not let this user in; one that does not exist is left to the caller. Otherwise the
    system's PermissionError would come as a traceback, or name a file inside that does not exist."""
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        return
    except PermissionError:
        raise error(f"{option} {shown}: cannot be read: a folder above it does not let you in (permission denied); "
                    f"ask for access, or name a path you may read") from None
    wanted = os.R_OK | os.X_OK if stat.S_ISDIR(mode) else os.R_OK
    if not os.access(target, wanted):
        raise error(f"{option} {shown}: cannot be read (permission denied: mode {stat.S_IMODE(mode):o}); ask for "
                    f"access, or name a path you may read")


def check_output_folder(path, option: str = "--out", inputs=()) -> Path:
    """`path` as an absolute folder path that the command may create or replace, or OutputPathError.

    `inputs` are the paths the command reads (a folder of submissions, of chapters): the output may be
    neither inside one of them nor hold one of them. Nor may it be a folder of the user's world
    (`_the_users_world`), whatever the command's --force."""
    target = _checked_path(path, option)
    if target.exists() and not target.is_dir():
        raise OutputPathError(f"{option} {path}: is a file, not a folder; name a folder (it is created if needed)")
    _check_apart_from(target, path, option, inputs)
    world = _the_users_world(target) if target.exists() else None  # (a folder still to be made holds nothing)
    if world:
        raise OutputPathError(f"{option} {path}: {target} is {world}, which holds far more than this command's "
                              f"output; choose a folder of its own (a new one is created)")
    _check_writable(target, path, option)
    return target


def _the_users_world(target: Path) -> str | None:
    """What the folder `target` is, if it holds the user's world rather than one command's output: the home folder,
    the current folder, a folder above either, or a folder of the system (the root's own folders and theirs, such
    as /usr/share; /tmp itself, though not the folders in it). No command writes into one that exists, not even
    with --force, which would replace a book's folder whole: `book --force --out ~` deleted every file of the home
    folder."""
    places = {"the home folder": os.path.expanduser("~")}
    try:
        places["the current folder"] = os.getcwd()
    except FileNotFoundError:  # (a deleted working folder is above nothing)
        pass
    places = {what: Path(os.path.realpath(place)) for what, place in places.items() if os.path.isabs(place)}
    depth, temporary = len(target.parts) - 1, Path(os.path.realpath(tempfile.gettempdir()))
    named = [what for what, place in places.items() if target == place]
    named += ["a folder of the system"] * (depth <= 1 or (depth == 2 and target.parent != temporary)
                                           or target == temporary)
    named += [f"a folder above {what} ({place})" for what, place in places.items() if target in place.parents]
    return named[0] if named else None


@dataclass(frozen=True)
class OwnFile:
    """How a command knows a file is its own earlier output, which it may replace without --force: `recognises`
    reads the mark only its writer puts in the file (a key of its JSON, a member of its zip, its exact header);
    `what` names that output in the error."""

    what: str
    recognises: Callable[[Path], bool]


def check_output_file(path, option: str, inputs=(), own: OwnFile | None = None, force: bool | None = False) -> Path:
    """`path` as an absolute file path that the command may create or replace, or OutputPathError.

    A command's output file follows the rule of its output folders: an existing file is replaced only if it is
    the command's own earlier output (`own` recognises it), or with `force` (the error says so; None: the command
    has no --force, and the error says to delete or rename the file); a user's file named by mistake
    (``--json thesis.txt``) is never replaced unasked. Without `own`, any regular file is."""
    target = _checked_path(path, option, file=True)
    refuse_a_folder_where_a_file_goes(target, path, option)
    _check_replaceable_file(path, target, option, OutputPathError)
    if own is not None:
        refuse_a_file_not_its_own(target, path, option, own, force)
    _check_apart_from(target, path, option, inputs)
    _check_writable(target, path, option)
    return target


def refuse_a_folder_where_a_file_goes(target: Path, shown, option: str, name: str = "",
                                      fix: str = "name a file") -> None:
    """OutputPathError if `target`, where a command writes a file (`name`, if given, within the folder `shown`), is a
    folder: not even --force replaces one, since it may hold anything (a user's drafts) and all of it would go."""
    if target.is_dir():
        raise OutputPathError(f"{option} {shown}: {name + ' ' if name else ''}is a folder; {fix}")


def refuse_a_file_not_its_own(target: Path, shown, option: str, own: OwnFile, force: bool | None = False) -> None:
    """OutputPathError if `target` is a file that `own` does not recognise as the command's earlier output, unless
    `force` (see `check_output_file`)."""
    if target.is_file() and not force and not _recognised(own, target):
        fix = "delete or rename it first if it may go" if force is None else "add --force to replace it"
        raise OutputPathError(f"{option} {shown}: holds a file that is not {own.what}, and it would be replaced; "
                              f"{fix}, or name another file")


def _recognised(own: OwnFile, target: Path) -> bool:
    """Whether `own` recognises the file at `target`; a file that cannot be read as its output is not one."""
    try:
        return bool(own.recognises(target))
    except (OSError, ValueError, UnicodeError):
        return False


def json_record(path, limit: int | None = None):
    """The JSON document in the file `path`, or None if it holds none a command of ours wrote: a special file (a
    FIFO would block the read forever), missing or unreadable, over `limit` bytes, not UTF-8, not JSON, or nested
    too deep for json's reader, which raises RecursionError ('[' * 100000; no record of ours nests so deep).
    Every reader of our own records (a run's results.json, a book's .minitorch-book, bench's --json) reads
    through here, so that each takes such a file as one that is not its own, in one line, never a traceback."""
    if _special_file(path):
        return None
    try:
        if limit is not None and Path(path).stat().st_size > limit:
            return None
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # (a UnicodeDecodeError is a ValueError)
        return None


def json_written_by(path: Path, writer: str, limit: int = 2**20) -> bool:
    """Whether `path` is a JSON object (of at most `limit` bytes) whose "written_by" is `writer`: the mark a
    command's JSON output carries (``{"written_by": "python -m minitorch bench", ...}``)."""
    document = json_record(path, limit)
    return isinstance(document, dict) and document.get("written_by") == writer


def _checked_path(path, option: str, file: bool = False) -> Path:
    # links resolved: '--out link' is where it points
    target = checked_path(path, option, error=OutputPathError, file=file)
    try:
        os.lstat(target)
    except PermissionError:  # (Path.exists() would raise it as a traceback)
        raise OutputPathError(f"{option} {path}: a folder above it does not let you in (permission denied); choose a "
                              f"place you may write to") from None
    except OSError:
        pass
    if target == Path(target.anchor):
        raise OutputPathError(f"{option} {path}: is the filesystem root; name a folder of its own")
    _check_no_folder_made_through_a_link(path, target, option, OutputPathError)
    return target


def _check_no_folder_made_through_a_link(shown, target: Path, option: str, error) -> None:
    """A symbolic link that points nowhere (``m.npz -> nowhere/m.npz``) is written through only if the folder
    it points into exists, as open() would: the missing folder of a link's target is never created,
    while a plain path's missing folders are."""
    if target.parent.is_dir():
        return
    absolute = Path(os.path.abspath(Path(shown).expanduser()))
    for path in [absolute, *absolute.parents]:
        if path.is_symlink() and not path.exists():
            raise error(f"{option} {shown}: the symbolic link {path} points to {os.readlink(path)}, which does not "
                        f"exist, and its folder is not created through a link; create it first, or remove the link")


def _check_replaceable_file(shown, target: Path, option: str, error) -> None:
    """An existing file at `target` (reached from `shown`) must be a regular file that its owner left writable.

    `shown` is looked at as open() would: /proc/self/fd/1 is the pipe it names, though its resolved name,
    'pipe:[N]', is no file. A read-only file (chmod 444) is refused, for root too, as cp, a shell's
    '>' and an editor refuse it: its owner asked that it not be overwritten, and replacing it by a rename
    would drop that protection silently."""
    kind = _special_file(os.path.abspath(Path(shown).expanduser())) or _special_file(target)
    if kind:
        raise error(f"{option} {shown}: is {kind}, not a regular file; name a file")
    if not target.is_file():
        return
    mode = stat.S_IMODE(target.stat().st_mode)
    if os.statvfs(target).f_flag & os.ST_RDONLY:  # no chmod helps here (os.access says only 'no', for both)
        raise error(f"{option} {shown}: lies on a read-only file system, so it cannot be replaced; name a file "
                    f"elsewhere")
    if not mode & 0o222 or not os.access(target, os.W_OK):
        mine = target.stat().st_uid == os.geteuid()  # only its owner (or root) may chmod it
        fix = "make it writable first (chmod u+w)" if mine else "it is another user's: ask them to make it writable"
        raise error(f"{option} {shown}: the file is read-only (mode {mode:o}), so it is not replaced; {fix}, or name "
                    f"another file")


def _special_file(path) -> str | None:
    """What `path` is if it exists and is not a regular file, following its links."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode):
        return None
    return "a folder" if stat.S_ISDIR(mode) else "a named pipe (FIFO)" if stat.S_ISFIFO(mode) else "a device or socket"


def _check_apart_from(target: Path, shown, option: str, inputs) -> None:
    """The output must not be, hold or sit inside an input or the project's sources."""
    guarded = [(checked_path(path, "an input", error=OutputPathError), f"the input {path}") for path in inputs]
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
    while not os.path.lexists(existing):  # (lexists: a folder that does not let us in is no traceback)
        existing = existing.parent
    if not existing.is_dir():
        raise OutputPathError(f"{option} {shown}: {existing} is a file, so nothing can be created below it")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise OutputPathError(f"{option} {shown}: cannot write in {existing} (permission denied or a read-only "
                              f"file system)")
    try:  # the system may still refuse (sysfs and /proc refuse root too): try, rather than find out later
        os.rmdir(tempfile.mkdtemp(dir=existing, prefix=".minitorch-can-write-"))
    except OSError as problem:
        raise OutputPathError(f"{option} {shown}: cannot write in {existing} ({problem.strerror or problem}); "
                              f"choose another place") from None
    if target.is_dir() and not os.access(target, os.W_OK | os.X_OK):
        raise OutputPathError(f"{option} {shown}: cannot write in this folder (permission denied or read-only)")

