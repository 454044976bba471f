"""Returned copies: finding them in a folder of submissions and unpacking them safely (chapter 00).

A submission is a returned copy of the project: a folder, or a .zip of one. The class grader and the
Gradescope bundle both go through here:

- `entries` lists every entry of SUBMISSIONS, each with the reason it cannot be graded, if any (not a
  folder or a .zip, a symbolic link, a name used twice), without opening anything that is not a regular
  file or a folder (a named pipe would block a reader forever);
- `unpack` checks a .zip before it unpacks anything: at most MAX_UNPACKED_BYTES and MAX_ZIP_MEMBERS, every
  member inside its folder, no symbolic link, no special file;
- `find_project` finds the copy's top folder (the one holding minitorch/) at the top or one level down,
  and refuses a copy that is, or holds, a symbolic link (it could point at the grader's own files).
"""

from __future__ import annotations

import os
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path

from minitorch.exercises.registry import MAX_UNPACKED_BYTES, ExerciseError

MAX_ZIP_MEMBERS = 100_000  # a .zip that would unpack to more files is refused (the project has a few hundred)


@dataclass(frozen=True)
class Entry:
    """One entry of SUBMISSIONS: the student's ID (its name without .zip), its path, and why it cannot be
    graded ("" if it can)."""

    student: str
    path: Path
    problem: str = ""


def entries(folder: Path) -> dict[str, Entry]:
    """Student ID -> Entry, for every entry of `folder` but hidden ones (a name starting with '.')."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ExerciseError(f"{folder} is not a folder of submissions")
    found: dict[str, Entry] = {}
    for path in sorted(folder.iterdir()):
        if path.name.startswith("."):
            continue
        student = path.name[:-4] if path.name.lower().endswith(".zip") else path.name
        entry = Entry(student, path, _problem(path))
        if student in found:  # bob/ and bob.zip: neither is graded, so that nothing is chosen silently
            found[student] = Entry(student, found[student].path, f"{student} has both a folder and a .zip in "
                                                                 f"{folder.name}/; keep one")
            continue
        found[student] = entry
    if not found:
        raise ExerciseError(f"{folder} holds no submissions (one folder or .zip per student)")
    return found


def _problem(path: Path) -> str:
    """Why the entry cannot be graded, from lstat alone (nothing is opened): '' if it can."""
    mode = path.lstat().st_mode
    if stat.S_ISLNK(mode):
        return "the entry is a symbolic link; submit the copy itself (a link could point at the grader's files)"
    if stat.S_ISDIR(mode):
        return ""
    if stat.S_ISREG(mode):
        return "" if path.name.lower().endswith(".zip") else "the entry is a file, not a folder or a .zip of the copy"
    kind = {stat.S_IFIFO: "a named pipe", stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a device",
            stat.S_IFBLK: "a device"}.get(stat.S_IFMT(mode), "a special file")
    return f"the entry is {kind}, not a folder or a .zip of the copy (it was not opened)"


def unpack(archive: Path, dest: Path) -> None:
    """Unpack the .zip `archive` into `dest`, after checking every member; ExerciseError naming the problem."""
    try:
        with zipfile.ZipFile(archive) as opened:
            members = opened.infolist()
            size = sum(member.file_size for member in members)
            if len(members) > MAX_ZIP_MEMBERS or size > MAX_UNPACKED_BYTES:
                raise ExerciseError(f"{archive.name} would unpack to {len(members):,} files and {size / 2**20:,.0f} "
                                    f"MiB; a copy of the project is a few MiB (at most {MAX_ZIP_MEMBERS:,} files and "
                                    f"{MAX_UNPACKED_BYTES >> 20:,} MiB are unpacked): leave out data and caches")
            for member in members:
                _check_member(archive, member, Path(dest))
            opened.extractall(dest)
    except zipfile.BadZipFile as error:
        raise ExerciseError(f"{archive.name} is not a readable .zip ({error})") from None
    except (OSError, ValueError, NotImplementedError, EOFError) as error:  # a corrupt member, an odd compression
        raise ExerciseError(f"{archive.name} could not be unpacked ({type(error).__name__}: {error})") from None


def _check_member(archive: Path, member: zipfile.ZipInfo, dest: Path) -> None:
    kind = stat.S_IFMT(member.external_attr >> 16)
    if kind == stat.S_IFLNK:
        raise ExerciseError(f"{archive.name} holds a symbolic link ({member.filename}); the grader reads only "
                            f"regular files: zip the files themselves")
    if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
        raise ExerciseError(f"{archive.name} holds a special file ({member.filename}); zip regular files only")
    target = (dest / member.filename).resolve()
    if not target.is_relative_to(dest.resolve()):
        raise ExerciseError(f"{archive.name}: member {member.filename!r} would unpack outside its folder")


def find_project(folder: Path, shown_as: str = "") -> Path:
    """The copy's top folder in `folder` (itself, or the one folder inside it that holds minitorch/)."""
    folder = Path(folder)
    if (folder / "minitorch").is_dir() or (folder / "minitorch").is_symlink():
        _refuse_links(folder, folder)
        return folder
    inside = [path for path in sorted(folder.iterdir()) if not path.name.startswith((".", "__"))
              and path.is_dir() and (path / "minitorch").exists()]
    if len(inside) > 1:
        raise ExerciseError(f"{shown_as or folder.name} holds {len(inside)} copies of the project "
                            f"({', '.join(path.name for path in inside)}); submit one")
    if not inside:
        listing = ", ".join(sorted(path.name + "/" * path.is_dir() for path in folder.iterdir())[:10]) or "nothing"
        raise ExerciseError(f"{shown_as or folder.name} holds no minitorch/ folder, neither at its top nor one level "
                            f"down (found: {listing}); submit the folder of your copy (the one with minitorch/ and "
                            f"tests/), or a .zip of it")
    _refuse_links(inside[0], folder)
    return inside[0]


def _refuse_links(project: Path, top: Path) -> None:
    """Stop if the copy, the folders down to it, or anything in its minitorch/ or tests/ is a symbolic link."""
    links = [path for path in dict.fromkeys((top, project)) if path.is_symlink()]
    for name in ("minitorch", "tests"):
        links += [path for path in (project / name, *_walk(project / name)) if path.is_symlink()]
    if links:
        shown = ", ".join(os.path.relpath(path, top) for path in links[:3]) + (", ..." if len(links) > 3 else "")
        raise ExerciseError(f"the copy holds {len(links)} symbolic link(s) ({shown}); the grader reads only regular "
                            f"files: submit the files themselves")


def _walk(folder: Path):
    """Every path under `folder`, without following links (rglob would)."""
    if folder.is_symlink() or not folder.is_dir():
        return
    for root, folders, files in os.walk(folder, followlinks=False):
        for name in folders + files:
            yield Path(root) / name


def open_copy(entry: Entry, scratch: Path) -> Path:
    """The top folder of the copy in `entry` (a folder, or its .zip unpacked into scratch/unpacked)."""
    if entry.problem:
        raise ExerciseError(entry.problem)
    if entry.path.is_dir():
        return find_project(entry.path, entry.path.name)
    unpack(entry.path, scratch / "unpacked")
    return find_project(scratch / "unpacked", entry.path.name)
