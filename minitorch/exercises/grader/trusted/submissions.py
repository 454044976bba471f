"""Returned copies: finding them in a folder of submissions and unpacking them safely (chapter 11).

A submission is a returned copy of the project: a folder, or a .zip of one. The class grader and the
Gradescope bundle both go through here:

- `entries` lists every entry of SUBMISSIONS, each with the reason it cannot be graded, if any (not a
  folder or a .zip, a symbolic link, a name used twice), without opening anything that is not a regular
  file or a folder (a named pipe would block a reader forever);
- `content_hash` reads an entry's files, within limits (MAX_DEPTH, MAX_FILES, MAX_UNPACKED_BYTES), to see
  later whether the submission changed; an entry beyond them is one that cannot be graded, with its reason;
- `unpack` checks a .zip before it unpacks anything: at most MAX_UNPACKED_BYTES and MAX_FILES, every
  member inside its folder, no symbolic link, no special file, no file named twice (however it is spelt);
- `find_project` finds the copy's top folder (the one holding minitorch/) at the top or one level down,
  and refuses a copy that is, or holds, a symbolic link (it could point at the grader's own files).

Every walk over a student's files is a loop with a stack, never recursion, and stops at MAX_DEPTH folders
deep and MAX_FILES files. Names come from students, so none is shown as it is (`student_text`); a student
whose name is not printable, starts with a dot (a hidden folder) or like a spreadsheet formula
(`student_text.FORMULA_STARTS`), or is too long to be a folder's name with a suffix, is graded under a safe
name that says so.
"""

from __future__ import annotations

import hashlib
import os
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path

from minitorch.exercises.registry import MAX_UNPACKED_BYTES, ExerciseError
from minitorch.exercises.grader.trusted.student_text import FORMULA_STARTS, capped, shown  # noqa: F401 (capped: for
# the callers that list names)

MAX_FILES = 100_000  # a copy with more files (a .zip's members, a folder's files) is refused (the project has 200)
MAX_DEPTH = 64  # folders inside one another in a copy (the project nests 4): deeper ones are refused
MAX_NAME_BYTES = 200  # a student's ID is a folder's name in the gradebook: at most 255 bytes, with room to spare
OS_LITTER = {"__MACOSX": "folder", ".DS_Store": "file"}  # what macOS leaves beside the copies: no student
NOT_HASHED = {"__pycache__", ".pytest_cache", ".ipynb_checkpoints", ".git"}  # what running or git changes, not code
ENVIRONMENT_MARK = "pyvenv.cfg"  # a folder holding it is a Python environment (a .venv): no code of the copy's


@dataclass(frozen=True)
class Entry:
    """One entry of SUBMISSIONS: the student's ID (its name without .zip, or a safe name: see `note`), its path,
    and why it cannot be graded ("" if it can)."""

    student: str
    path: Path
    problem: str = ""
    note: str = ""  # why the student is graded under another name than the entry's ("" if not)


def entries(folder: Path) -> dict[str, Entry]:
    """Student ID -> Entry, for every entry of `folder` (hidden ones too), but the litter macOS leaves."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ExerciseError(f"{folder} is not a folder of submissions")
    paths = [path for path in sorted(folder.iterdir()) if not _is_litter(path)]
    natural = {_student_of(path) for path in paths}
    found: dict[str, Entry] = {}
    for path in paths:
        student, note = _safe_student(_student_of(path), natural | set(found))
        if student in found:  # bob/ and bob.zip: neither is graded, so that nothing is chosen silently
            found[student] = Entry(student, found[student].path, f"{student} has both a folder and a .zip in "
                                                                 f"{shown(folder.name)}/; keep one")
            continue
        found[student] = Entry(student, path, _problem(path), note)
    if not found:
        raise ExerciseError(f"{folder} holds no submissions (one folder or .zip per student)")
    return found


def _is_litter(path: Path) -> bool:
    kind = OS_LITTER.get(path.name)
    return kind is not None and (path.is_dir() if kind == "folder" else path.is_file()) and not path.is_symlink()


def _student_of(path: Path) -> str:
    return path.name[:-4] if path.name.lower().endswith(".zip") else path.name


def _safe_student(name: str, taken: set[str]) -> tuple[str, str]:
    """(the ID to grade `name` under, why it differs from `name` or ''): the name itself if it is printable, does
    not start with a dot or like a formula and fits a folder's name; else the escaped name with "-submission" (and
    a number) added, unused, and cut to fit."""
    formula, hidden = name.startswith(FORMULA_STARTS), name.startswith(".")
    long = len(name.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES
    if shown(name) == name and not (formula or hidden or long):
        return name, ""
    why = (f"starts with {shown(name[0])!r}: a spreadsheet opening grades.csv would run it as a formula" if formula
           else "starts with a dot: its folders in the gradebook would be hidden" if hidden
           else f"is longer than {MAX_NAME_BYTES} bytes" if shown(name) == name
           else "holds characters that are not printable")
    base = ("student " if formula or hidden else "") + shown(name)
    if len(base.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES:
        base = base.encode("utf-8", "surrogateescape")[:MAX_NAME_BYTES - 40].decode("utf-8", "ignore") + "-" + \
            hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:8]
    base, number = base + "-submission", 1
    safe = base
    while safe in taken:
        number += 1
        safe = f"{base}-{number}"
    return safe, f"graded as {safe}: the entry's name '{shown(name)}' {why}"


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
            if len(members) > MAX_FILES or size > MAX_UNPACKED_BYTES:
                raise ExerciseError(f"{shown(archive.name)} would unpack to {len(members):,} files and "
                                    f"{size / 2**20:,.0f} MiB; a copy of the project is a few MiB (at most "
                                    f"{MAX_FILES:,} files and "
                                    f"{MAX_UNPACKED_BYTES >> 20:,} MiB are unpacked): leave out data and caches")
            for member in members:
                _check_member(archive, member, Path(dest))
            _refuse_a_name_twice(archive, members)
            opened.extractall(dest)
    except ExerciseError:
        raise
    except zipfile.BadZipFile as error:
        raise ExerciseError(f"{shown(archive.name)} is not a readable .zip ({shown(error)})") from None
    except (OSError, ValueError, NotImplementedError, EOFError, RuntimeError) as error:  # corrupt, odd compression
        raise ExerciseError(f"{shown(archive.name)} could not be unpacked ({type(error).__name__}: "
                            f"{shown(error)})") from None


def _check_member(archive: Path, member: zipfile.ZipInfo, dest: Path) -> None:
    if len(Path(member.filename).parts) > MAX_DEPTH:
        raise ExerciseError(f"{shown(archive.name)} holds folders nested {len(Path(member.filename).parts) - 1} deep "
                            f"({shown(member.filename[:120])}...); the project nests a few: at most {MAX_DEPTH} are "
                            f"read. Zip your copy of the project only")
    if member.flag_bits & 0x1:  # (zip's "encrypted" bit)
        raise ExerciseError(f"{shown(archive.name)} is password-protected ({shown(member.filename)}); the grader "
                            f"cannot open it: zip the copy again without a password")
    kind = stat.S_IFMT(member.external_attr >> 16)
    if kind == stat.S_IFLNK:
        raise ExerciseError(f"{shown(archive.name)} holds a symbolic link ({shown(member.filename)}); the grader "
                            f"reads only regular files: zip the files themselves")
    if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
        raise ExerciseError(f"{shown(archive.name)} holds a special file ({shown(member.filename)}); zip regular "
                            f"files only")
    target = (dest / member.filename).resolve()
    if not target.is_relative_to(dest.resolve()):
        raise ExerciseError(f"{shown(archive.name)}: member {shown(member.filename)!r} would unpack outside its folder")


def _refuse_a_name_twice(archive: Path, members: list[zipfile.ZipInfo]) -> None:
    """Two members that unpack to one path would unpack one over the other: which copy is graded is not for the
    grader to guess. The path is the one zipfile writes: ``./a``, ``a//b``, ``a/./b`` and ``a/`` name ``a`` and
    ``a/b``."""
    seen = set()
    for member in members:
        name = unpacked_name(member.filename)
        if name in seen:
            raise ExerciseError(f"{shown(archive.name)} holds {shown(name)} twice (as {shown(member.filename)} "
                                f"and another spelling); which one is the copy to grade is not clear: zip one "
                                f"copy of each file")
        seen.add(name)


def unpacked_name(filename: str) -> str:
    """The relative path zipfile unpacks a member named `filename` to: empty, '.' and '..' parts dropped."""
    return "/".join(part for part in filename.split("/") if part not in ("", ".", ".."))


def find_project(folder: Path, shown_as: str = "") -> Path:
    """The copy's top folder in `folder` (itself, or the one folder inside it that holds minitorch/)."""
    folder = Path(folder)
    if (folder / "minitorch").is_dir() or (folder / "minitorch").is_symlink():
        _refuse_links(folder, folder)
        return folder
    inside = [path for path in sorted(folder.iterdir()) if not path.name.startswith((".", "__"))
              and path.is_dir() and (path / "minitorch").exists()]
    if len(inside) > 1:
        raise ExerciseError(f"{shown_as or shown(folder.name)} holds {len(inside)} copies of the project "
                            f"({capped([path.name for path in inside], what='folders')}); submit one")
    if not inside:
        listing = ", ".join(sorted(shown(path.name) + "/" * path.is_dir() for path in folder.iterdir())[:10]) or \
            "nothing"
        raise ExerciseError(f"{shown_as or shown(folder.name)} holds no minitorch/ folder, neither at its top nor one "
                            f"level "
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
        named = ", ".join(shown(os.path.relpath(path, top)) for path in links[:3]) + (", ..." if len(links) > 3 else "")
        raise ExerciseError(f"the copy holds {len(links)} symbolic link(s) ({named}); the grader reads only regular "
                            f"files: submit the files themselves")


def _walk(folder: Path, shown_as: str = "", skipped=()):
    """Every path under `folder`, without following links (rglob would), with a stack instead of recursion,
    leaving out (unread) the folders named in `skipped` and Python environments; ExerciseError if folders nest
    deeper than MAX_DEPTH (os.walk and rglob would raise RecursionError) or hold more than MAX_FILES entries."""
    if folder.is_symlink() or not folder.is_dir():
        return
    waiting, count = [(folder, 1)], 0
    what = shown_as or shown(folder.name)
    while waiting:
        current, depth = waiting.pop()
        try:
            children = sorted(os.scandir(current), key=lambda child: child.name)
        except OSError:
            continue
        for child in children:
            count += 1
            if count > MAX_FILES:
                raise ExerciseError(f"{what} holds more than {MAX_FILES:,} files and folders; a copy of the project "
                                    f"holds a few hundred: submit your copy of the project only (no data, no "
                                    f"environment)")
            is_folder = child.is_dir(follow_symlinks=False)
            if is_folder and (child.name in skipped or skipped and os.path.isfile(os.path.join(child.path,
                                                                                            ENVIRONMENT_MARK))):
                continue
            yield Path(child.path)
            if is_folder:
                if depth >= MAX_DEPTH:
                    inside = shown(os.path.relpath(child.path, folder))
                    raise ExerciseError(f"{what} holds folders nested more than {MAX_DEPTH} deep ({inside[:120]}...); "
                                        f"the project nests a few: submit your copy of the project only")
                waiting.append((Path(child.path), depth + 1))


def content_hash(entry: Entry) -> str:
    """What the entry holds, as "sha256:HEX": a .zip's bytes, or a folder's files (relative names and contents,
    links as their target; caches, .git and Python environments left out). A changed submission gets another
    hash, so a resume grades it again. ExerciseError, naming the reason, for an entry beyond the limits (more than
    MAX_UNPACKED_BYTES, MAX_FILES files, MAX_DEPTH folders deep) or a file that cannot be read: that entry cannot
    be graded."""
    digest, path = hashlib.sha256(), entry.path
    if entry.problem:  # (a named pipe, a link: nothing is opened)
        return "not graded: " + entry.problem
    if not path.is_dir():
        size = path.lstat().st_size
        if size > MAX_UNPACKED_BYTES:
            raise ExerciseError(f"{shown(path.name)} has {size / 2**20:,.0f} MiB; a copy of the project is a few MiB "
                                f"(at most {MAX_UNPACKED_BYTES >> 20:,} MiB are read): leave out data and caches")
        _hash_file(path, shown(path.name), digest)
        return "sha256:" + digest.hexdigest()
    total = 0
    for found in _walk(path, shown(path.name), skipped=NOT_HASHED):
        relative, status = found.relative_to(path).as_posix(), found.lstat()
        if stat.S_ISDIR(status.st_mode):
            continue
        digest.update(relative.encode("utf-8", "surrogateescape") + b"\0")
        if stat.S_ISLNK(status.st_mode):
            digest.update(b"link:" + os.readlink(found).encode("utf-8", "surrogateescape"))
        elif stat.S_ISREG(status.st_mode):
            total += status.st_size
            if total > MAX_UNPACKED_BYTES:
                raise ExerciseError(f"{shown(path.name)} holds more than {MAX_UNPACKED_BYTES >> 20:,} MiB of files; "
                                    f"a copy of the project is a few MiB: leave out data and caches")
            _hash_file(found, f"{shown(path.name)}/{shown(relative)}", digest)
        digest.update(b"\0")
    return "sha256:" + digest.hexdigest()


def _hash_file(path: Path, shown_as: str, digest) -> None:
    """Add the file's bytes to `digest`; ExerciseError naming the file if it cannot be read."""
    try:
        with open(path, "rb") as file:
            for block in iter(lambda: file.read(1 << 20), b""):
                digest.update(block)
    except OSError as error:
        raise ExerciseError(f"{shown_as} cannot be read ({error.strerror or error})") from None


def open_copy(entry: Entry, scratch: Path) -> Path:
    """The top folder of the copy in `entry` (a folder, or its .zip unpacked into scratch/unpacked)."""
    if entry.problem:
        raise ExerciseError(entry.problem)
    if entry.path.is_dir():
        return find_project(entry.path, shown(entry.path.name))
    unpack(entry.path, scratch / "unpacked")
    if not (scratch / "unpacked").is_dir():  # a valid zip with no member
        raise ExerciseError(f"{shown(entry.path.name)} is an empty .zip: it holds no copy of the project")
    return find_project(scratch / "unpacked", shown(entry.path.name))
