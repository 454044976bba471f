"""A folder shared with other output (chapter 00): which files a run replaces there.

``figures/`` holds ``reproduce``'s files and ``figures/beyond/``, and ``grade --out`` writes grades.csv beside a
user's own files: such a folder is not replaced whole. A run records the files it wrote there (`RecordedRun`,
in a JSON file of its own), and the next run into the folder replaces exactly those, all of them, with its own
(`files_to_replace`, then `minitorch.outputs.atomic_writes.building_aside` with ``replacing``). An earlier run of a
different command line is replaced only with ``--force``, as is a file that a record of the same command lists
though the command never writes it (a record edited by hand), so a folder never ends as a mixture of two runs, and
files no run recorded are never deleted unasked. Nothing is written or deleted through a folder that is a symbolic
link (it would reach outside the folder), not even with ``--force``.

This module uses only the standard library.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from minitorch.outputs.paths import (OutputPathError, _check_replaceable_file, json_record,
                                     refuse_a_folder_where_a_file_goes)

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
    document = json_record(record_file)  # None for a FIFO, a file too deep to decode...: a file in the way
    if not isinstance(document, dict):
        return None
    return RecordedRun.checked(document.get("command"), document.get("files"))


def recorded_run_text(command: str, files) -> str:
    """The JSON text `read_recorded_run` reads back: the command line and the files (not folders) it wrote."""
    import json

    return json.dumps({"command": command, "files": sorted(files)}, indent=2) + "\n"


def written_files(folder) -> list[str]:
    """Every file under `folder` (not the folders), relative to it, sorted: what a run that built `folder`
    records as written (`recorded_run_text`, or reproduce's results.json)."""
    folder = Path(folder)
    return sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*") if not path.is_dir())


def some_of(names: list[str], shown: int = 3) -> str:
    """The first `shown` of `names` and how many more, for a message: 'a, b, c and 4 more'."""
    return ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")


def not_recorded(target, earlier: RecordedRun) -> list[str]:
    """The entries of the folder `target` that the `earlier` run recorded there did not write, relative to it and
    sorted: a file it does not list, and a folder holding none of its files (named once, as ``mydir/``). A run
    that replaces `target` whole deletes these; one that replaces only its own files (`files_to_replace`) keeps
    them."""
    recorded = set(earlier.files)
    folders = {parent.as_posix() for name in recorded for parent in PurePosixPath(name).parents} - {"."}
    found = []

    def look(folder: Path, prefix: str) -> None:
        for entry in sorted(os.scandir(folder), key=lambda entry: entry.name):
            name = prefix + entry.name
            if entry.is_dir(follow_symlinks=False) and name in folders:
                look(Path(entry.path), name + "/")
            elif entry.is_dir(follow_symlinks=False):
                found.append(name + "/")
            elif name not in recorded:
                found.append(name)

    look(Path(target), "")
    return found


def files_to_replace(target, planned, earlier: RecordedRun | None, command: str, force: bool = False,
                     option: str = "--out") -> list[str]:
    """Before any work: the paths, relative to the folder `target`, that a run of `command` writing the files
    `planned` there will replace. They are every file of the `earlier` run recorded there (replaced whole, so
    that none of them stays beside the new ones) and, with `force`, whatever else stands where a planned file
    goes. Every other file of `target` stays. (A file the record of an earlier run of `command` lists, though
    `planned` does not, is replaced only with `force`: the record was edited, and the file may be the user's.)

    Without `force`, OutputPathError (naming --force) refuses an earlier run of another command line, and
    anything in the way of a planned file that no earlier run recorded (a file named ``models`` where a
    folder of models goes). A folder where a planned file goes is refused even with `force`."""
    target = Path(target)
    for name in sorted(planned):  # (a folder of the user's named like a planned file: its files would all go)
        refuse_a_folder_where_a_file_goes(target / name, target, option, name, "this run writes a file there; move or "
                                          "rename the folder, or choose another folder (--force replaces no folder)")
    # a record lists files: a folder named there (a hand-edited or damaged record) is never deleted on its word
    replacing = {name for name in earlier.files if not (target / name).is_dir()} if earlier else set()
    if earlier and earlier.command != command and not force:
        raise OutputPathError(f"{option} {target}: holds an earlier, different run ({earlier.command}); this run "
                              f"({command}) would replace all {len(earlier.files)} of its files. Add --force to "
                              f"replace it, or choose another folder")
    in_the_way = sorted(_in_the_way(target, planned) - replacing)
    _refuse_files_through_links(target, set(planned) | replacing | set(in_the_way), replacing, option)
    if earlier and earlier.command == command and not force:
        _refuse_files_the_command_never_writes(target, replacing - set(planned), option)
    if in_the_way and not force:
        raise OutputPathError(f"{option} {target}: holds {some_of(in_the_way)} where this run writes its own files, "
                              f"and no earlier run recorded them; add --force to replace them, or choose another "
                              f"folder")
    _refuse_read_only_files(target, replacing | set(in_the_way), option)
    return sorted(replacing | set(in_the_way))


def _refuse_read_only_files(target: Path, names, option: str) -> None:
    """OutputPathError naming the first file of `names` (relative to `target`) that its owner made read-only (or
    that lies on a read-only file system), before any work: the run would replace it, and every command that
    writes a file (`write_atomically`) refuses a read-only one, as cp and a shell's '>' do."""
    for name in sorted(names):
        if (target / name).is_file() and not (target / name).is_symlink():
            _check_replaceable_file(target / name, target / name, option, OutputPathError)


def _refuse_files_the_command_never_writes(target: Path, names, option: str) -> None:
    """OutputPathError naming the files `names` of `target` that the record of an earlier run of the same command
    lists, though that command never writes them: the record was edited by hand (or a run of another version
    wrote it), and a user's file listed there is never deleted on its word without --force."""
    found = sorted(name for name in names if os.path.lexists(target / name))
    if found:
        raise OutputPathError(f"{option} {target}: the record of an earlier run of this command lists "
                              f"{some_of(found)}, which this command does not write (a record edited by hand?); add "
                              f"--force to replace them, or move them out, or choose another folder")


def _refuse_files_through_links(target: Path, names, replacing, option: str) -> None:
    """OutputPathError if one of the files `names` (relative to `target`) that a run would write or replace (those
    of `replacing`) lies below a folder of `target` that is a symbolic link: writing it would put a file outside
    `target`, and replacing it would delete one there (a record names what a run wrote, not where a link points
    now). The first run is refused as its rerun would be. Not even --force writes through a link."""
    for name in sorted(names):
        parts = PurePosixPath(name).parts
        folders = [Path(*parts[:depth]) for depth in range(1, len(parts))]
        link = next((folder for folder in folders if (target / folder).is_symlink()), None)
        if link is not None:
            raise OutputPathError(f"{option} {target}: this run would {'replace' if name in replacing else 'write'} "
                                  f"{name}, which lies behind the symbolic link {link} (to "
                                  f"{os.path.realpath(target / link)}), outside the folder; a run writes and deletes "
                                  f"nothing through a link: remove the link, or choose another folder")


def _in_the_way(target: Path, names) -> set[str]:
    """The entries of `target` that writing the files `names` would replace: a file of the same name (a folder
    is refused before), or a non-folder where one of their folders goes."""
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

