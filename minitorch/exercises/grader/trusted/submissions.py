"""A class's submissions: a row for every entry, and a returned copy unpacked safely (chapter 11).

An entry is a student's copy of the project, a folder or a .zip. Nothing that is not a regular file or a folder is
opened (a named pipe would block a reader); every walk over a student's files is a loop with a stack, bounded by
MAX_DEPTH, MAX_FILES and MAX_UNPACKED_BYTES, and an entry beyond them, or that cannot be read, says so in its row.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import stat
import unicodedata
import zipfile
from pathlib import Path

from minitorch.exercises.registry import MAX_UNPACKED_BYTES, ExerciseError
from minitorch.exercises.grader.trusted.student_text import FORMULA_STARTS, shown

MAX_FILES = 100_000  # files and folders of a copy (the project has a few hundred)
MAX_DEPTH = 64  # folders inside one another (the project nests 4)
NAME_MAX = 255  # bytes of one file or folder name, on most file systems
MAX_NAME_BYTES = 200  # a student's ID names their folders in the gradebook (at most 255 bytes)
OS_LITTER = ("__MACOSX", ".DS_Store")  # what macOS leaves beside the copies: no student
NOT_HASHED = {"__pycache__", ".pytest_cache", ".ipynb_checkpoints", ".git"}  # what running or git changes
VENV_PARTS = {"pyvenv.cfg", "bin", "lib", "lib64", "include", "share", "etc", "Scripts", "Lib", "Include"}  # (venv)
END_RECORD_SIZE = 22  # bytes of a zip's end-of-central-directory record, without its comment
ONLY_THE_COPY = "submit your copy of the project only, without data or caches"


@dataclasses.dataclass(frozen=True)
class Entry:
    """One entry of SUBMISSIONS: the student's ID, its path, why it cannot be graded, why the ID is not its name."""

    student: str
    path: Path
    problem: str = ""
    note: str = ""


def entries(folder: Path) -> dict[str, Entry]:
    """Student ID -> Entry, for every entry of `folder` (hidden ones too) but the litter macOS leaves."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ExerciseError(f"{folder} is not a folder of submissions")
    paths = [path for path in sorted(folder.iterdir()) if path.name not in OS_LITTER or path.is_symlink()]
    natural, found = {student_of(path.name) for path in paths}, {}
    for path in paths:
        student, note = _safe_student(student_of(path.name), natural | set(found))
        if student in found:  # bob/ and bob.zip: neither is chosen silently
            found[student] = dataclasses.replace(found[student], problem=f"{student} has both a folder and a .zip "
                                                                         f"in {shown(folder.name)}/; keep one")
        else:
            found[student] = Entry(student, path, _problem(path), note)
    if not found:
        raise ExerciseError(f"{folder} holds no submissions (one folder or .zip per student)")
    return _look_alikes_flagged(found)


def _look_alikes_flagged(found: dict[str, Entry]) -> dict[str, Entry]:
    """`found`, with a note on each student whose name has spaces at its ends or reads as another's ('alice ' and
    'alice', 'é' composed and decomposed): grades.csv and Canvas would show two students as one."""
    def key(name: str) -> str:
        return unicodedata.normalize("NFKC", name).strip()

    for student, entry in found.items():
        others = sorted(other for other in found if other != student and key(other) == key(student))
        why = (["has spaces at its ends"] if student != student.strip() else []) + (
            [f"reads as {', '.join(map(ascii, others))}"] if others else [])
        if why:
            note = f"look-alike name: {ascii(student)} {' and '.join(why)}; check whose copy it is"
            found[student] = dataclasses.replace(entry, note="; ".join(filter(None, [entry.note, note])))
    return found


def student_of(name: str) -> str:
    """The student an entry's name (or a roster's) names: the name without .zip."""
    return name[:-4] if name.lower().endswith(".zip") else name


def named(name: str, names) -> str | None:
    """The one of `names` that `name` (typed in adjustments.csv, after --student, in a roster) names: the one spelled
    the same, else the only one that differs in its Unicode form alone (an é typed is one character, NFC; in a name
    macOS gave a file, two, NFD); None if none. The names on disk are never changed."""
    if name in names:
        return name
    alike = [other for other in names if unicodedata.normalize("NFC", other) == unicodedata.normalize("NFC", name)]
    return alike[0] if len(alike) == 1 else None


def _safe_student(name: str, taken: set[str]) -> tuple[str, str]:
    """(the ID to grade `name` under, why it is not `name`, or ""): a name that is empty (an entry named `.zip`:
    its folders would be feedback/ and private/ themselves), not printable, starts like a hidden file or a formula,
    or is too long for a folder's name gets an unused safe name that says so."""
    why = ("is empty: the entry is named only .zip" if not name else
           "holds characters that are not printable" if shown(name) != name else
           f"starts with {name[0]!r}: a spreadsheet opening grades.csv would run it as a formula"
           if name.startswith(FORMULA_STARTS) else
           "starts with a dot: its folders in the gradebook would be hidden" if name.startswith(".") else
           f"is longer than {MAX_NAME_BYTES} bytes" if len(name.encode()) > MAX_NAME_BYTES else "")
    if not why:
        return name, ""
    base = ("student " if not name or name.startswith((".", *FORMULA_STARTS)) else "") + (shown(name) or "unnamed")
    if len(base.encode()) > MAX_NAME_BYTES:  # cut to fit, and told apart by a hash of the whole name
        digest = hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:8]
        base = base.encode()[:MAX_NAME_BYTES - 40].decode("utf-8", "ignore") + "-" + digest
    safe, number = base + "-submission", 1
    while safe in taken:
        number += 1
        safe = f"{base}-submission-{number}"
    return safe, f"graded as {safe}: the entry's name '{shown(name)}' {why}"


def _problem(path: Path) -> str:
    """Why the entry cannot be graded, from lstat alone (nothing is opened): '' if it can."""
    mode = path.lstat().st_mode
    if stat.S_ISLNK(mode):
        return "the entry is a symbolic link; submit the copy itself (a link could point at the grader's files)"
    if stat.S_ISDIR(mode) or (stat.S_ISREG(mode) and path.name.lower().endswith(".zip")):
        return ""
    if stat.S_ISREG(mode):
        return "the entry is a file, not a folder or a .zip of the copy"
    kind = "a named pipe" if stat.S_ISFIFO(mode) else "a socket or a device"
    return f"the entry is {kind}, not a folder or a .zip of the copy (it was not opened)"


def unpack(archive: Path, dest: Path) -> None:
    """Unpack the .zip `archive` into `dest` once every member is checked; ExerciseError naming the problem."""
    try:
        with zipfile.ZipFile(archive) as opened:
            if not _ends_as_a_zip(archive, opened):  # zipfile found the end record of a zip stored inside it
                raise ExerciseError("is not a whole .zip: it does not end with a zip's end record (cut short while "
                                    "uploading or copying?); zip the copy again")
            members, unpacked = opened.infolist(), set()
            size = sum(member.file_size for member in members)
            if len(members) > MAX_FILES or size > MAX_UNPACKED_BYTES:
                raise ExerciseError(f"would unpack to {len(members):,} files and {size / 2**20:,.0f} MiB (at most "
                                    f"{MAX_FILES:,} and {MAX_UNPACKED_BYTES >> 20:,} MiB); {ONLY_THE_COPY}")
            for member in members:
                member.filename = unzip_name(member.filename)  # (opening it reads its own name, orig_filename)
                _check_member(member, Path(dest), unpacked)
            opened.extractall(dest, members)
    except ExerciseError as error:
        raise ExerciseError(f"{shown(archive.name)} {error}") from None
    except zipfile.BadZipFile as error:
        raise ExerciseError(f"{shown(archive.name)} is not a readable .zip ({shown(error)})") from None
    except (OSError, ValueError, NotImplementedError, EOFError, RuntimeError) as error:  # (an odd compression, ...)
        raise ExerciseError(f"{shown(archive.name)} could not be unpacked ({type(error).__name__}: "
                            f"{shown(error)})") from None


def unzip_name(name: str) -> str:
    """A zip member's name as unzip reads it, with '\\' a separator too: older Windows tools (PowerShell 5's
    Compress-Archive) write 'minitorch\\ops.py', which zipfile would unpack as one file of that name."""
    return name.replace("\\", "/")


def _ends_as_a_zip(archive: Path, opened: zipfile.ZipFile) -> bool:
    """Whether the zip's end record, with the comment zipfile read, is the file's last bytes. zipfile looks for it
    in the last 64 KiB: in the first half of a zip holding a model's .npz it finds the .npz's, and reads that."""
    with open(archive, "rb") as file:
        end = file.seek(0, os.SEEK_END) - END_RECORD_SIZE - len(opened.comment)
        file.seek(max(end, 0))
        return end >= 0 and file.read(4) == b"PK\x05\x06"


def _check_member(member: zipfile.ZipInfo, dest: Path, unpacked: set[str]) -> None:
    """ExerciseError if the member nests too deep, is locked, a link or a special file, would unpack outside its
    folder or onto a path unpacked already (``./a``, ``a//b`` and ``a/./b`` name ``a`` and ``a/b``)."""
    name, kind = shown(member.filename), stat.S_IFMT(member.external_attr >> 16)
    path = "/".join(part for part in member.filename.split("/") if part not in ("", ".", ".."))  # as unpacked
    if len(Path(member.filename).parts) > MAX_DEPTH:
        raise ExerciseError(f"holds folders nested {len(Path(member.filename).parts) - 1} deep ({name[:120]}...); "
                            f"at most {MAX_DEPTH} are read: {ONLY_THE_COPY}")
    if member.flag_bits & 0x1:  # (zip's "encrypted" bit)
        raise ExerciseError(f"is password-protected ({name}); zip the copy again without a password")
    if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
        what = "a symbolic link" if kind == stat.S_IFLNK else "a special file"
        raise ExerciseError(f"holds {what} ({name}); the grader reads only regular files: zip the files themselves")
    if not (dest / member.filename).resolve().is_relative_to(dest.resolve()):
        raise ExerciseError(f"holds the member {name!r}, which would unpack outside its folder")
    if path in unpacked:
        raise ExerciseError(f"holds {shown(path)} twice (as {name} and another spelling): zip one copy of each file")
    long = next((part for part in path.split("/") if len(part.encode("utf-8", "surrogateescape")) > NAME_MAX), None)
    if long is not None:  # (unpacking failed with 'OSError: [Errno 36] File name too long' and a scratch path)
        raise ExerciseError(f"holds a file or folder whose name has {len(long.encode('utf-8', 'surrogateescape'))} "
                            f"bytes ({shown(long)[:40]}...), more than the {NAME_MAX} a file system allows: rename it")
    unpacked.add(path)


def find_project(folder: Path, shown_as: str = "") -> Path:
    """The copy's top folder: `folder`, or the one folder in it that holds minitorch/. A copy that is, or holds in
    minitorch/ or tests/, a symbolic link is refused (it could point at the grader's own files)."""
    folder, name = Path(folder), shown_as or shown(Path(folder).name)
    project = folder
    if not ((folder / "minitorch").is_dir() or (folder / "minitorch").is_symlink()):
        inside = [path for path in sorted(folder.iterdir()) if not path.name.startswith((".", "__"))
                  and path.is_dir() and (path / "minitorch").exists()]
        if len(inside) > 1:
            raise ExerciseError(f"{name} holds {len(inside)} copies of the project "
                                f"({', '.join(shown(path.name) for path in inside[:5])}); submit one")
        if not inside:
            found = ", ".join(shown(path.name) + "/" * path.is_dir() for path in sorted(folder.iterdir())[:10])
            raise ExerciseError(f"{name} holds no minitorch/ folder, neither at its top nor one level down (found: "
                                f"{found or 'nothing'}); submit the folder of your copy (the one with minitorch/ and "
                                f"tests/), or a .zip of it")
        project = inside[0]
    inside = [project / "minitorch", project / "tests", *_walk(project / "minitorch", name),
              *_walk(project / "tests", name)]
    links = [path for path in dict.fromkeys([folder, project, *inside]) if path.is_symlink()]
    if links:
        named = ", ".join(sorted(shown(os.path.relpath(path, folder)) for path in links)[:3])
        raise ExerciseError(f"the copy holds {len(links)} symbolic link(s) ({named}); the grader reads only regular "
                            f"files: submit the files themselves")
    return project


def _walk(folder: Path, shown_as: str, skipped=()):
    """Every path under `folder`, links not followed, with a stack instead of recursion, leaving out the folders
    named in `skipped` and, with them, a Python environment's own parts (VENV_PARTS beside a pyvenv.cfg: not the
    folder, which may be the copy itself, made with `python -m venv .`); ExerciseError beyond MAX_DEPTH or MAX_FILES."""
    waiting, count = [(folder, 1)] if folder.is_dir() and not folder.is_symlink() else [], 0
    while waiting:
        current, depth = waiting.pop()
        try:
            children = sorted(os.scandir(current), key=lambda child: child.name)
        except OSError:
            continue
        venv = skipped and os.path.isfile(Path(current, "pyvenv.cfg"))
        for child in children:
            count += 1
            if count > MAX_FILES:
                raise ExerciseError(f"{shown_as} holds more than {MAX_FILES:,} files and folders; {ONLY_THE_COPY}")
            is_folder = child.is_dir(follow_symlinks=False)
            if (is_folder and child.name in skipped) or (venv and child.name in VENV_PARTS):
                continue
            yield Path(child.path)
            if is_folder and depth >= MAX_DEPTH:
                raise ExerciseError(f"{shown_as} holds folders nested more than {MAX_DEPTH} deep "
                                    f"({shown(os.path.relpath(child.path, folder))[:120]}...); {ONLY_THE_COPY}")
            if is_folder:
                waiting.append((Path(child.path), depth + 1))


def content_hash(entry: Entry) -> str:
    """What the entry holds, as "sha256:HEX" (a .zip's bytes, or a folder's names and files without caches, .git
    and the parts of Python environments), to see on resume whether it changed. ExerciseError, naming the reason,
    for an entry beyond the limits or a file that cannot be read."""
    if entry.problem:  # (a named pipe, a link: nothing is opened)
        return "not graded: " + entry.problem
    digest, total, top = hashlib.sha256(), 0, entry.path
    for path in _walk(top, shown(top.name), NOT_HASHED) if top.is_dir() else [top]:
        status, name = path.lstat(), path.relative_to(top.parent).as_posix()
        if stat.S_ISDIR(status.st_mode):
            continue
        digest.update(name.encode("utf-8", "surrogateescape") + b"\0")
        if stat.S_ISLNK(status.st_mode):
            digest.update(b"link:" + os.readlink(path).encode("utf-8", "surrogateescape"))
        elif stat.S_ISREG(status.st_mode):
            total += status.st_size
            if total > MAX_UNPACKED_BYTES:
                raise ExerciseError(f"{shown(top.name)} holds more than {MAX_UNPACKED_BYTES >> 20:,} MiB of files; "
                                    f"{ONLY_THE_COPY}")
            try:
                with open(path, "rb") as file:
                    for block in iter(lambda: file.read(1 << 20), b""):
                        digest.update(block)
            except OSError as error:
                raise ExerciseError(f"{shown(name)} cannot be read ({error.strerror or error})") from None
        digest.update(b"\0")
    return "sha256:" + digest.hexdigest()


def open_copy(entry: Entry, scratch: Path) -> Path:
    """The top folder of the entry's copy (a folder, or its .zip unpacked into scratch/unpacked)."""
    if entry.problem:
        raise ExerciseError(entry.problem)
    if entry.path.is_dir():
        return find_project(entry.path)
    unpack(entry.path, scratch / "unpacked")
    if not (scratch / "unpacked").is_dir():  # a valid zip with no member
        raise ExerciseError(f"{shown(entry.path.name)} is an empty .zip: it holds no copy of the project")
    return find_project(scratch / "unpacked", shown(entry.path.name))
