"""Where the commands write: an output path is checked before any work, and what replaces a file or a folder
is written aside and moved into place whole (chapter 00).

Every command that writes (``reproduce``, ``book``, ``bench --json``, ``student-edition``, ``grade``,
``gradescope-bundle``) takes its output path through `check_output_folder` or `check_output_file` before
it starts: a path that is empty, the filesystem root, a file where a folder is wanted, not writable, inside
(or around) the command's own input, or inside the project's sources fails at once, in one line that names
the option. Minutes of work are never lost to a path that could not have been written.

Writing: `write_atomically` replaces one file; `building_aside` builds a whole folder beside its target
and moves it into place only when the block completes (an error or Ctrl-C leaves the target as it was).

A folder shared with other output (``figures/`` holds ``reproduce``'s files and ``figures/beyond/``) is
not replaced whole: a run records the files it wrote there (`RecordedRun`), and the next run into the
folder replaces exactly those, all of them, with its own (`files_to_replace`, then `building_aside` with
`replacing`). An earlier run of a different command line is replaced only with ``--force``, so a folder
never ends as a mixture of two runs, and files no run recorded are never deleted unasked. Nothing is deleted
through a folder that is a symbolic link (it would reach outside the folder), not even with ``--force``.
A build killed where it could not clean up (SIGKILL) leaves its folder beside the target; the next build
into the same target deletes it (a lock, released when a process dies, tells it from a build at work).
Temporary names beside a target (`temporary_prefix`) fit beside a legal 255-byte name.
The path rule, for every path a command reads or writes (`checked_path`, used by the checks above and by
`check_input_file`): a name longer than the file system allows (255 bytes) or a symbolic-link loop is reported
before any work, in one line, as is a path below a file ('afile/m.npz': afile is a file, not a missing folder);
a file that is read must be a regular file (a FIFO would block the reader forever, a device never ends);
`write_atomically` leaves room for its temporary suffix, writes text as UTF-8,
and writes through a symbolic link to the file it names, keeping the link.

This module uses only the standard library.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import shutil
import signal
import tempfile
import threading

try:
    import fcntl  # POSIX: the lock that tells an abandoned build's folder from one being built
except ImportError:
    fcntl = None
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parent.parent  # the project this library belongs to
PROJECT_SOURCES = ("minitorch", "tests", "chapters", ".git")  # no command writes into these
NAME_MAX, PATH_MAX = 255, 4095  # bytes in one name and in a whole path, on Linux's file systems
TEMPORARY_NAME_BYTES = 120  # of a name kept in a temporary name beside it: room for the prefix and suffix


class PathError(ValueError):
    """A path that cannot be read or written as asked; the message names the option and the reason."""


class OutputPathError(PathError):
    """An output path that cannot be written as asked; the message names the option and the reason."""


class UnwritableFileError(PathError, OSError):
    """A file `write_atomically` cannot write (found after the work, where an OSError is expected: a command's
    wrapper prints it as one line)."""


def given_path(path, option: str, error=PathError, file: bool = False) -> Path:
    """`path` as a Path, or TypeError naming `option` if it is no path (a number, None, bytes), or `error` if it
    holds a NUL character, which no file name can (Python's own 'embedded null byte' names neither). With
    `file`, the path must name a file: 'out/' or 'out/.' names a folder, though Path('out/') drops the slash."""
    if not isinstance(path, (str, os.PathLike)) or isinstance(os.fspath(path), bytes):
        raise TypeError(f"{option}: expected a path (a str or a pathlib.Path), got {type(path).__name__} {path!r}")
    if "\x00" in os.fspath(path):
        raise error(f"{option} {os.fspath(path)!r}: holds a NUL character (\\x00), which no file name can; "
                    f"name the file without it")
    if file and _names_a_folder(os.fspath(path)):
        ending = os.path.basename(path) or os.sep
        raise error(f"{option} {os.fspath(path)!r}: names a folder (it ends with {ending!r}), not a file; add the "
                    f"file's name (pathlib would drop the end and take the file {os.path.normpath(path)!r} instead)")
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
    or never end."""
    target = checked_path(path, option, error=error, file=True)
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        raise FileNotFoundError(errno.ENOENT, "no such file", str(path)) from None
    if stat.S_ISDIR(mode):
        raise error(f"{option} {path}: is a folder; name a file")
    if not stat.S_ISREG(mode):
        kind = "a named pipe (FIFO)" if stat.S_ISFIFO(mode) else "a device or socket"
        raise error(f"{option} {path}: is {kind}, not a regular file; reading it could wait forever")
    return target


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
    target = _checked_path(path, option, file=True)
    if target.is_dir():
        raise OutputPathError(f"{option} {path}: is a folder; name a file")
    _check_replaceable_file(path, target, option, OutputPathError)
    _check_apart_from(target, path, option, inputs)
    _check_writable(target, path, option)
    return target


def _checked_path(path, option: str, file: bool = False) -> Path:
    # links resolved: '--out link' is where it points
    target = checked_path(path, option, error=OutputPathError, file=file)
    if target == Path(target.anchor):
        raise OutputPathError(f"{option} {path}: is the filesystem root; name a folder of its own")
    _check_no_folder_made_through_a_link(path, target, option, OutputPathError)
    return target


def _check_no_folder_made_through_a_link(shown, target: Path, option: str, error) -> None:
    """A symbolic link that points nowhere (``m.npz -> nowhere/m.npz``) is written through only if the folder
    it points into exists, as open() would: the missing folder of a link's target is never created (S5-05),
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
    'pipe:[N]', is no file (S5-06). A read-only file (chmod 444) is refused, for root too, as cp, a shell's
    '>' and an editor refuse it: its owner asked that it not be overwritten, and replacing it by a rename
    would drop that protection silently (S5-04)."""
    kind = _special_file(os.path.abspath(Path(shown).expanduser())) or _special_file(target)
    if kind:
        raise error(f"{option} {shown}: is {kind}, not a regular file; name a file")
    if target.is_file() and (not stat.S_IMODE(target.stat().st_mode) & 0o222 or not os.access(target, os.W_OK)):
        raise error(f"{option} {shown}: the file is read-only (mode {stat.S_IMODE(target.stat().st_mode):o}), so it "
                    f"is not replaced; make it writable first (chmod u+w), or name another file")


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
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise OutputPathError(f"{option} {shown}: {existing} is a file, so nothing can be created below it")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise OutputPathError(f"{option} {shown}: cannot write in {existing} (permission denied or a read-only "
                              f"file system)")
    if target.is_dir() and not os.access(target, os.W_OK | os.X_OK):
        raise OutputPathError(f"{option} {shown}: cannot write in this folder (permission denied or read-only)")


RANDOM_NAME_BYTES = 8  # the random part tempfile.mkstemp and mkdtemp put between a prefix and a suffix


def temporary_prefix(target, kind: str, suffix: str = "") -> str:
    """The prefix of a temporary name beside `target`: ``.<start of target's name>.<kind>-``, for
    ``tempfile.mkstemp``/``mkdtemp(dir=<target's folder>, prefix=..., suffix=suffix)``. The name part is cut
    (at a whole character) so that the temporary name fits in 255 bytes even beside a legal 255-byte name;
    mkstemp's random part keeps it unique, and the start of the name and `kind` (``partial``, ``old``,
    ``building``) tell a user whose it is."""
    room = NAME_MAX - len(os.fsencode(f"..{kind}-{suffix}")) - RANDOM_NAME_BYTES
    kept = os.fsencode(Path(target).name)[:min(room, TEMPORARY_NAME_BYTES)].decode(errors="ignore")
    return f".{kept}.{kind}-"


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


def write_atomically(path, data: str | bytes, mode: int | None = None, option: str = "writing") -> None:
    """Write `data` (text as UTF-8) beside `path`, then rename it over `path`: a reader sees the old file or
    the new one, never half of one. `mode` defaults to what open() would give: the replaced file's mode, or for
    a new file 0o666 less the umask. A symbolic link is kept: the file it names is replaced (as writing into the
    link would). A read-only file is refused, as is a link pointing into a folder that does not exist. Errors
    name `option` (the caller, e.g. ``save_model: path``) and `path` as given, never the temporary name."""
    if not isinstance(data, (str, bytes, bytearray, memoryview)):
        raise TypeError(f"{option} {path}: the data to write must be text or bytes, got {type(data).__name__}")
    shown, path = path, checked_path(path, option, error=UnwritableFileError, file=True)
    _check_replaceable_file(shown, path, option, UnwritableFileError)
    _check_no_folder_made_through_a_link(shown, path, option, UnwritableFileError)
    if mode is None:
        mode = stat.S_IMODE(path.stat().st_mode) if path.is_file() else 0o666 & ~_umask()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=temporary_prefix(path, "writing"), suffix=".tmp")
    except OSError as problem:  # its own message would name the temporary file, which the caller never gave
        raise UnwritableFileError(f"{option} {shown}: cannot create a file in {path.parent} ({problem.strerror}); "
                                  f"choose a folder you can write in") from None
    try:
        # mkstemp makes files only their owner can read
        os.chmod(temporary, mode)
        with os.fdopen(handle, "wb") as file:
            # a file name that is not UTF-8 (read with surrogate escapes) is written as \udcff, not refused
            file.write(data.encode("utf-8", errors="backslashreplace") if isinstance(data, str) else data)
        os.replace(temporary, path)
    except BaseException as problem:
        Path(temporary).unlink(missing_ok=True)
        if isinstance(problem, OSError) and not isinstance(problem, UnwritableFileError):
            raise _write_failed(problem, option, shown) from None
        raise


def _write_failed(problem: OSError, option: str, shown) -> UnwritableFileError:
    """The failure of a write (a full disk, a file-size limit: ulimit -f) naming the caller's path, not the
    temporary file's or none (C6-02). It keeps the errno, so that a command's wrapper adds what to do."""
    failure = UnwritableFileError(f"{option} {shown}: writing it failed ({problem.strerror or problem}); the old "
                                  f"file, if any, is left as it was")
    failure.errno = problem.errno
    return failure


@dataclass(frozen=True)
class RecordedRun:
    """What an earlier run left in its output folder: its command line (runs with the same one write the same
    files) and the files it wrote there, relative to the folder."""

    command: str
    files: tuple[str, ...]

    @staticmethod
    def checked(command, files) -> "RecordedRun | None":
        """The record, or None if it is not one: a command line and paths that stay inside the folder."""
        def inside(name) -> bool:
            path = PurePosixPath(name) if isinstance(name, str) else None
            return bool(path and path.parts) and not path.is_absolute() and ".." not in path.parts
        if not isinstance(command, str) or not isinstance(files, (list, tuple)) or not all(map(inside, files)):
            return None
        return RecordedRun(command, tuple(files))


def read_recorded_run(record_file) -> RecordedRun | None:
    """The run recorded in the JSON file `record_file` (``{"command": ..., "files": [...]}``, as
    `recorded_run_text` writes it), or None if there is none or it records no run. With `files_to_replace`,
    the check a command that writes into a folder it does not own whole makes before any work (``grade --out``
    writes grades.csv and summary.md beside a user's own files)."""
    import json

    if _special_file(record_file):  # a FIFO would block the read forever (C6-04); it is then a file in the way
        return None
    try:
        document = json.loads(Path(record_file).read_text(encoding="utf-8"))
    except (OSError, ValueError):  # none, or not JSON
        return None
    if not isinstance(document, dict):
        return None
    return RecordedRun.checked(document.get("command"), document.get("files"))


def recorded_run_text(command: str, files) -> str:
    """The JSON text `read_recorded_run` reads back: the command line and the files (not folders) it wrote."""
    import json

    return json.dumps({"command": command, "files": sorted(files)}, indent=2) + "\n"


def files_to_replace(target, planned, earlier: RecordedRun | None, command: str, force: bool = False,
                     option: str = "--out") -> list[str]:
    """Before any work: the paths, relative to the folder `target`, that a run of `command` writing the files
    `planned` there will replace. They are every file of the `earlier` run recorded there (replaced whole, so
    that none of them stays beside the new ones) and, with `force`, whatever else stands where a planned file
    goes. Every other file of `target` stays.

    Without `force`, OutputPathError (naming --force) refuses an earlier run of another command line, and
    anything in the way of a planned file that no earlier run recorded (a file named ``models`` where a
    folder of models goes)."""
    target = Path(target)
    # a record lists files: a folder named there (a hand-edited or damaged record) is never deleted on its word
    replacing = {name for name in earlier.files if not (target / name).is_dir()} if earlier else set()
    if earlier and earlier.command != command and not force:
        raise OutputPathError(f"{option} {target}: holds an earlier, different run ({earlier.command}); this run "
                              f"({command}) would replace all {len(earlier.files)} of its files. Add --force to "
                              f"replace it, or choose another folder")
    in_the_way = sorted(_in_the_way(target, planned) - replacing)
    _refuse_files_through_links(target, replacing | set(in_the_way), option)
    if in_the_way and not force:
        shown = ", ".join(in_the_way[:3]) + (f" and {len(in_the_way) - 3} more" if len(in_the_way) > 3 else "")
        raise OutputPathError(f"{option} {target}: holds {shown} where this run writes its own files, and no "
                              f"earlier run recorded them; add --force to replace them, or choose another folder")
    return sorted(replacing | set(in_the_way))


def _refuse_files_through_links(target: Path, names, option: str) -> None:
    """OutputPathError if one of the files `names` (relative to `target`) that a run would replace lies below a
    folder of `target` that is a symbolic link: replacing it would delete a file outside `target` (a record names
    what a run wrote, not where a link points now). Not even --force deletes through a link."""
    for name in sorted(names):
        parts = PurePosixPath(name).parts
        folders = [Path(*parts[:depth]) for depth in range(1, len(parts))]
        link = next((folder for folder in folders if (target / folder).is_symlink()), None)
        if link is not None:
            raise OutputPathError(f"{option} {target}: this run would replace {name}, which lies behind the symbolic "
                                  f"link {link} (to {os.path.realpath(target / link)}), outside the folder; a run "
                                  f"deletes nothing through a link: remove the link, or choose another folder")


def _in_the_way(target: Path, names) -> set[str]:
    """The entries of `target` that writing the files `names` would replace: a file or folder of the same
    name, or a non-folder where one of their folders goes."""
    found = set()
    for name in names:
        parts = PurePosixPath(name).parts
        for depth in range(1, len(parts) + 1):
            path = target.joinpath(*parts[:depth])
            is_folder_of_the_file = depth < len(parts)
            if os.path.lexists(path) and not (is_folder_of_the_file and path.is_dir()):
                found.add("/".join(parts[:depth]))
                break
    return found


@contextlib.contextmanager
def building_aside(target, replacing=None):
    """Yield a new, empty folder beside `target` to build into; when the block completes, the built folder
    replaces `target` whole (`replace_folder`), or, given `replacing` (paths relative to `target`), only
    those files in it (`replace_files`), every other file staying. If the block raises or is interrupted,
    the folder being built is deleted and `target` is left exactly as it was."""
    target = Path(os.path.realpath(target))
    target.parent.mkdir(parents=True, exist_ok=True)
    prefix = temporary_prefix(target, "partial")
    _remove_abandoned_folders(target.parent, prefix)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=prefix))
    os.chmod(staging, 0o777 & ~_umask())  # as mkdir would make it: the folder replacing target is not owner-only
    try:
        with _held_while_building(staging):
            yield staging
            if replacing is None:
                replace_folder(staging, target)
            else:
                replace_files(staging, target, replacing)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


@contextlib.contextmanager
def _held_while_building(folder: Path):
    """An exclusive lock (flock) on `folder` while the block runs. The system releases it when the process
    ends, however it ends (a SIGKILL too), so a folder whose lock is free has no builder left
    (`_remove_abandoned_folders`). The descriptor is not inherited by the programs a build starts."""
    if fcntl is None:  # not POSIX: no lock, and abandoned folders are left
        yield
        return
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)


def _remove_abandoned_folders(parent: Path, prefix: str) -> None:
    """Delete the folders `prefix`* in `parent` that a killed build left (C5-14: a SIGKILL cannot be caught, so
    the build could not delete its own): those whose lock no process holds. A build still at work holds its
    lock and keeps its folder. (One made by another build in the instant before it took its lock may be taken
    for abandoned: that build then fails on its deleted folder with an error, it loses nothing.)"""
    if fcntl is None:
        return
    for entry in os.scandir(parent):
        if not entry.name.startswith(prefix) or not entry.is_dir(follow_symlinks=False):
            continue
        try:
            descriptor = os.open(entry.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:  # gone meanwhile, or not ours to read
            continue
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            shutil.rmtree(entry.path, ignore_errors=True)
        except OSError:  # locked: a build is writing it
            pass
        finally:
            os.close(descriptor)


def replace_folder(built, target) -> None:
    """Move the folder `built` to `target`, replacing whatever folder was there, with every stop held off for
    the two renames (`signals_held`; one that comes then is dropped: the work is done): `target` ends as the
    old folder or the new one, never a mixture of both, nor missing."""
    built, target = Path(built), Path(target)
    old = None
    with signals_held():  # (a stop that came is dropped: the work is done)
        if target.exists():
            old = Path(tempfile.mkdtemp(dir=target.parent, prefix=temporary_prefix(target, "old")))
            os.replace(target, old / target.name)
        try:
            os.replace(built, target)
        except BaseException:
            if old is not None:
                os.replace(old / target.name, target)  # put the old folder back
            raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def replace_files(built, target, replacing) -> None:
    """Move every file under the folder `built` into `target`, at the same relative path, and take the files
    `replacing` out of `target`, with every stop held off (`signals_held`; one that comes then is dropped: the
    work is done): `target` ends with the old files or the new ones, never a mixture (an error midway moves
    everything back). Folders the old files leave empty are removed."""
    built, target = Path(built), Path(target)
    if not target.exists():
        return replace_folder(built, target)
    new = [path.relative_to(built).as_posix() for path in sorted(built.rglob("*")) if not path.is_dir()]
    appeared = sorted(_in_the_way(target, new) - set(replacing))  # since files_to_replace looked
    if appeared:
        raise OutputPathError(f"{target}: {', '.join(appeared[:3])} appeared there while the run worked; "
                              f"nothing was replaced")
    old = Path(tempfile.mkdtemp(dir=target.parent, prefix=temporary_prefix(target, "old")))
    taken_out, put_in = [], []  # (from, to) of each move so far, to undo on an error
    with signals_held():  # (a stop that came is dropped: the work is done)
        try:
            for name in replacing:
                if os.path.lexists(target / name):
                    _move(target / name, old / name, taken_out)
                    _remove_empty_folders((target / name).parent, target)
            for name in new:
                _move(built / name, target / name, put_in)
        except BaseException:
            for source, destination in reversed(put_in):
                os.replace(destination, source)
            for name in new:  # the folders made for them, before an old file of the same name comes back
                _remove_empty_folders((target / name).parent, target)
            for source, destination in reversed(taken_out):
                _move(destination, source, [])
            shutil.rmtree(old, ignore_errors=True)  # (kept, with the old files, if moving them back failed)
            raise
    shutil.rmtree(old, ignore_errors=True)


def _move(source: Path, destination: Path, moved: list) -> None:
    destination.parent.mkdir(parents=True, exist_ok=True)
    os.replace(source, destination)
    moved.append((source, destination))


def _remove_empty_folders(folder: Path, stop: Path) -> None:
    """Remove `folder` and its parents up to (not including) `stop` while they are empty."""
    while folder != stop and stop in folder.parents and folder.is_dir() and not folder.is_symlink() \
            and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent


@contextlib.contextmanager
def signals_held():
    """Hold every signal this process handles in Python while the block runs: Ctrl-C, and the stops that the
    commands turn into Ctrl-C (SIGTERM, SIGHUP, ...: `minitorch.tools.commands`). None can raise inside it.
    Yields the list of those that came, in order: the caller delivers them (``signal.raise_signal``) or, when
    the block finished the work they would stop, drops them. Only the main thread sets (and runs) handlers;
    elsewhere the block runs as it is."""
    came: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield came
        return
    held = {signum: handler for signum in signal.valid_signals() if callable(handler := signal.getsignal(signum))}
    for signum in held:
        signal.signal(signum, lambda signum, frame: came.append(signum))
    try:
        yield came
    finally:
        for signum, handler in held.items():
            signal.signal(signum, handler)
