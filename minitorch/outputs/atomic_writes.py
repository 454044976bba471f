"""Replacing a file or a folder whole (chapter 00): what replaces it is written aside and moved into place only
when it is complete, so that an error, Ctrl-C or a full disk leaves the old one as it was.

`write_atomically` replaces one file; `building_aside` builds a whole folder beside its target and moves it into
place only when the block completes (`replace_folder`), or, in a folder shared with other output, replaces only
the files a run planned (`replace_files`, with `minitorch.outputs.recorded_runs.files_to_replace`).
A build killed where it could not clean up (SIGKILL) leaves its folder beside the target, and perhaps the folder
the old output was moved into; the next build in the same folder deletes them, whatever their target (a lock,
released when a process dies, tells a staging folder from a build at work; an old folder only while it holds no
file: it may hold the only copy of the old output). `scratch_folder` does the same for a command's scratch
folders in the system's temporary folder.
Temporary names beside a target (`temporary_prefix`) fit beside a legal 255-byte name.
`write_atomically` leaves room for its temporary suffix, writes text as UTF-8, and writes through a symbolic link
to the file it names, keeping the link.

This module uses only the standard library.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import signal
import stat
import tempfile

try:
    import fcntl  # POSIX: the lock that tells an abandoned build's folder from one being built
except ImportError:
    fcntl = None
from pathlib import Path

from minitorch.outputs.paths import (NAME_MAX, OutputPathError, UnwritableFileError,
                                     _check_no_folder_made_through_a_link, _check_replaceable_file, checked_path)
from minitorch.outputs.recorded_runs import RecordedRun, _in_the_way, not_recorded
from minitorch.outputs.signals import signals_held

TEMPORARY_NAME_BYTES = 120  # of a name kept in a temporary name beside it: room for the prefix and suffix
RANDOM_NAME_BYTES = 8  # the random part tempfile.mkstemp and mkdtemp put between a prefix and a suffix
RANDOM_NAME = f"[a-z0-9_]{{{RANDOM_NAME_BYTES}}}"  # that part, as a regular expression
STAGING_KIND = "partial-minitorch"  # a tag no folder of the user's is likely to carry: only such folders are deleted
STAGING_FOLDER = re.compile(rf"\..+\.{STAGING_KIND}-{RANDOM_NAME}", re.DOTALL)  # building_aside's, any target
OLD_KIND = "old-minitorch"  # the folder the old output is moved into while the new one takes its place
OLD_FOLDER = re.compile(rf"\..+\.{OLD_KIND}-{RANDOM_NAME}", re.DOTALL)


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
    made = _top_missing_folder(path.parent)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=temporary_prefix(path, "writing"), suffix=".tmp")
    except OSError as problem:  # its own message would name the temporary file, which the caller never gave
        _remove_folders_made(path.parent, made)
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
        _remove_folders_made(path.parent, made)
        if isinstance(problem, OSError) and not isinstance(problem, UnwritableFileError):
            raise _write_failed(problem, option, shown) from None
        raise


def _write_failed(problem: OSError, option: str, shown) -> UnwritableFileError:
    """The failure of a write (a full disk, a file-size limit: ulimit -f) naming the caller's path, not the
    temporary file's or none. It keeps the errno, so that a command's wrapper adds what to do."""
    failure = UnwritableFileError(f"{option} {shown}: writing it failed ({problem.strerror or problem}); the old "
                                  f"file, if any, is left as it was")
    failure.errno = problem.errno
    return failure


@contextlib.contextmanager
def building_aside(target, replacing=None, earlier: RecordedRun | None = None):
    """Yield a new, empty folder beside `target` to build into; when the block completes, the built folder
    replaces `target` whole (`replace_folder`), or, given `replacing` (paths relative to `target`), only
    those files in it (`replace_files`), every other file staying. If the block raises or is interrupted,
    the folder being built is deleted and `target` is left exactly as it was. A `target` that was new (or an empty
    folder) when the block began is never replaced by what another run put there meanwhile: the move refuses
    (`replace_folder`'s `onto_nothing`); nor is one holding the `earlier` run recorded there, once something
    that run did not write has appeared in it (`replace_folder`'s `earlier`)."""
    target = Path(os.path.realpath(target))
    _refuse_a_mount_point(target)
    new = _new_or_empty(target)
    prefix = temporary_prefix(target, STAGING_KIND)
    made = _top_missing_folder(target.parent)
    with signals_held() as came:  # a stop while the folder is made is delivered once the block below deletes it
        try:  # (its own error would name the staging folder, which the user never gave)
            target.parent.mkdir(parents=True, exist_ok=True)
            remove_abandoned_builds(target.parent)  # (a killed build of another target's too)
            staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=prefix))
        except OSError as problem:
            _remove_folders_made(target.parent, made)
            raise OutputPathError(f"{target}: cannot create a folder beside it, in {target.parent} "
                                  f"({problem.strerror or problem}); choose another place") from None
        os.chmod(staging, 0o777 & ~_umask())  # as mkdir would make it: the folder replacing target is not owner-only
    try:
        for signum in came:
            signal.raise_signal(signum)
        with _held_while_building(staging):
            made_as = os.stat(staging)
            try:
                yield staging
            except OSError as problem:  # an error of a file in the staging folder, which the user never gave
                _check_still_there(staging, made_as, target)
                _name_under_target(problem, staging, target)
                raise
            _check_still_there(staging, made_as, target)
            if replacing is None:
                replace_folder(staging, target, onto_nothing=new, earlier=earlier)
            else:
                replace_files(staging, target, replacing)
    finally:
        with signals_held():  # a stop now (a second one, or one after the work) must not leave the folder behind
            shutil.rmtree(staging, ignore_errors=True)
            _remove_folders_made(target.parent, made)  # (they hold target, unless the build ended with nothing)


def _check_still_there(staging: Path, made_as: os.stat_result, target: Path) -> None:
    """UnwritableFileError if the folder `staging` (built beside `target`) was deleted while the run worked (its
    parent, or itself, removed by hand): the files written into it before are gone, and a later write may even
    have made the folder again, holding only part of the output, which must never replace `target` as if
    complete. (Not an OutputPathError: commands take that for a refusal before any work, with their usage.)"""
    try:
        now = os.stat(staging)
        same = (now.st_dev, now.st_ino) == (made_as.st_dev, made_as.st_ino)
    except OSError:
        same = False
    if not same:
        raise UnwritableFileError(f"{target}: the folder this output was being built in, beside it ({staging.name} "
                                  f"in {target.parent}), was deleted while the command worked, with the files "
                                  f"written so far; nothing was written to {target}: run the command again") from None


def _name_under_target(problem: OSError, staging: Path, target: Path) -> None:
    """Make the error `problem` name a file of the staging folder by where it would go, under `target` (the
    path the user gave), in its file names and in a message of our own (`write_atomically`'s)."""
    def under_target(name):
        return name.replace(str(staging), str(target))

    for attribute in ("filename", "filename2"):  # (set only where there is one: str() shows a None it was set to)
        if isinstance(getattr(problem, attribute), str):
            setattr(problem, attribute, under_target(getattr(problem, attribute)))
    if problem.strerror is None and len(problem.args) == 1 and isinstance(problem.args[0], str):
        problem.args = (under_target(problem.args[0]),)


def _top_missing_folder(folder: Path) -> Path | None:
    """The topmost of `folder` and the folders above it that does not exist yet (what mkdir(parents=True) would
    create), or None."""
    missing = [path for path in [folder, *folder.parents] if not os.path.lexists(path)]
    return missing[-1] if missing else None


def _remove_folders_made(folder: Path, top: Path | None) -> None:
    """Remove `folder` and the folders above it up to `top`, those a write made for its output, while they are
    empty: a write that ends with nothing (refused, failed or stopped) leaves no empty folder behind."""
    if top is not None:
        _remove_empty_folders(folder, top.parent)


def _refuse_a_mount_point(target: Path) -> None:
    """OutputPathError, before any work, if `target` is a mount point (a file system of its own, or a bind mount):
    the folder built beside it, on its parent's file system, can neither be renamed onto it ('Device or resource
    busy') nor have its files renamed into it ('Invalid cross-device link'), which the system would say only when
    the work is done."""
    try:
        mounted = target.is_dir() and (os.path.ismount(target)
                                       or os.stat(target).st_dev != os.stat(target.parent).st_dev)
    except OSError:  # not there, or not ours to look at: the checks of the folder itself speak
        return
    if mounted:
        raise OutputPathError(f"{target}: is a mount point (a file system of its own), and the output is built beside "
                              f"it and then moved into its place, which the system refuses for a mount point; use a "
                              f"folder inside it, or elsewhere")


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


@contextlib.contextmanager
def scratch_folder(prefix: str, parent=None, mode: int = 0o700):
    """Yield a new folder `prefix`* in `parent` (default: the system's temporary folder, /tmp), of `mode`, deleted
    when the block ends. A process killed where it could not clean up (SIGKILL) leaves its folder, so the folders
    `prefix`* that no process holds any more are deleted first (`_remove_abandoned_folders`)."""
    parent = Path(tempfile.gettempdir() if parent is None else parent)
    _remove_abandoned_folders(parent, re.compile(re.escape(prefix) + RANDOM_NAME))
    folder = Path(tempfile.mkdtemp(dir=parent, prefix=prefix))
    try:
        os.chmod(folder, mode)  # (mkdtemp's is 0o700)
        with _held_while_building(folder):
            yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def remove_abandoned_builds(folder) -> None:
    """Delete what builds killed by a SIGKILL left in `folder`, beside their targets: their staging folders, and
    their folders of old output that hold no file. One that holds files is kept: a kill between a build's two renames
    leaves there the only copy of the old output. (An old folder carries no lock: one that another build made an
    instant before is empty, and may be deleted; that build then fails with an error, and its target stays.)"""
    with contextlib.suppress(OSError):  # (a folder this user may not list: the build's own errors speak)
        _remove_abandoned_folders(Path(folder), STAGING_FOLDER)
        _remove_abandoned_folders(Path(folder), OLD_FOLDER, only_without_files=True)


def _remove_abandoned_folders(parent: Path, names: re.Pattern, only_without_files: bool = False) -> None:
    """Delete the folders in `parent` whose whole name `names` matches that a killed build left (a SIGKILL cannot
    be caught, so the build could not delete its own): those whose lock no process holds. A build still at work
    holds its lock and keeps its folder. (One made by another build in the instant before it took its lock may be
    taken for abandoned: that build then fails on its deleted folder with an error, it loses nothing.)
    `only_without_files`: only a folder holding nothing but empty folders is deleted."""
    if fcntl is None:
        return
    for entry in os.scandir(parent):
        if not names.fullmatch(entry.name) or not _own_folder(entry):
            continue
        try:
            descriptor = os.open(entry.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:  # gone meanwhile, or not ours to read
            continue
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if only_without_files:
                _remove_empty_tree(entry.path)
            else:
                shutil.rmtree(entry.path, ignore_errors=True)
        except OSError:  # locked: a build is writing it
            pass
        finally:
            os.close(descriptor)


def _remove_empty_tree(folder: str) -> None:
    """Remove `folder` and the folders in it, deepest first, as far as they are empty: rmdir refuses a folder that
    holds a file, so no file is ever deleted."""
    for inside, _, _ in os.walk(folder, topdown=False):
        with contextlib.suppress(OSError):
            os.rmdir(inside)


def _own_folder(entry: os.DirEntry) -> bool:
    """Whether `entry` is a folder (not a link to one) of this process's user: another user's, in a shared
    /tmp, is not ours to delete."""
    try:
        return entry.is_dir(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_uid == os.getuid()
    except OSError:  # gone meanwhile
        return False


def _new_or_empty(target: Path) -> bool:
    """Whether `target` does not exist, or is an empty folder: nothing of anyone's is there to replace."""
    try:
        return stat.S_ISDIR(os.lstat(target).st_mode) and not any(os.scandir(target))
    except FileNotFoundError:
        return True
    except OSError:  # unreadable: something is there
        return False


def replace_folder(built, target, onto_nothing: bool = False, earlier: RecordedRun | None = None) -> None:
    """Move the folder `built` to `target`, replacing whatever folder was there, with every stop held off for
    the two renames (`signals_held`; one that comes then is dropped: the work is done): `target` ends as the
    old folder or the new one, never a mixture of both, nor missing. `onto_nothing`: `target` was new or an
    empty folder when the run began, so what is there now (another run's output, written at the same time) is
    not replaced: a single rename, which the system refuses onto a folder that is not empty or onto a file,
    and an OSError saying so, `built` left where it was. `earlier`: the run recorded in `target`, checked before
    the work began to hold nothing else; what appeared there since that it did not write is not replaced either
    (OutputPathError naming it)."""
    built, target = Path(built), Path(target)
    added = not_recorded(target, earlier) if earlier is not None and target.is_dir() else []
    if added:
        raise OutputPathError(f"{target}: {added[0]} appeared there while the run worked, and the earlier output "
                              f"that the run replaces whole did not write it; nothing was replaced")
    if onto_nothing:
        with signals_held():  # (a stop that came is dropped: the work is done, or refused)
            try:
                os.rename(built, target)  # onto nothing, or an empty folder (as a mkdir would leave it)
            except OSError as problem:
                if problem.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR):
                    raise
                raise UnwritableFileError(f"{target}: another run wrote it meanwhile (it was new or empty when this "
                                          f"run began), and it is left as that run wrote it; nothing of this run was "
                                          f"kept") from None
        return
    old = None
    with signals_held():  # (a stop that came is dropped: the work is done)
        if target.exists():
            old = Path(tempfile.mkdtemp(dir=target.parent, prefix=temporary_prefix(target, OLD_KIND)))
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
        return replace_folder(built, target, onto_nothing=True)
    new = [path.relative_to(built).as_posix() for path in sorted(built.rglob("*")) if not path.is_dir()]
    appeared = sorted(_in_the_way(target, new) - set(replacing))  # since files_to_replace looked
    if appeared:
        raise OutputPathError(f"{target}: {', '.join(appeared[:3])} appeared there while the run worked; "
                              f"nothing was replaced")
    taken_out, put_in = [], []  # (from, to) of each move so far, to undo on an error
    with signals_held():  # (a stop that came is dropped: the work is done)
        old = Path(tempfile.mkdtemp(dir=target.parent, prefix=temporary_prefix(target, OLD_KIND)))
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

