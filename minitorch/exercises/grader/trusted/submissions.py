"""Returned copies: finding them in a folder of submissions and unpacking them safely (chapter 11).

A submission is a returned copy of the project: a folder, or a .zip of one. The class grader and the
Gradescope bundle both go through here:

- `entries` lists every entry of SUBMISSIONS, each with the reason it cannot be graded, if any (not a
  folder or a .zip, a symbolic link, a name used twice), without opening anything that is not a regular
  file or a folder (a named pipe would block a reader forever);
- `unpack` checks a .zip before it unpacks anything: at most MAX_UNPACKED_BYTES and MAX_ZIP_MEMBERS, every
  member inside its folder, no symbolic link, no special file;
- `find_project` finds the copy's top folder (the one holding minitorch/) at the top or one level down,
  and refuses a copy that is, or holds, a symbolic link (it could point at the grader's own files).

Names come from students, so none is shown as it is: `shown` escapes every control character (a name
with a newline cannot add a line to the console or summary.md), `capped` shortens a long list of names
to a count and the first few, and a student whose name is one of the run's own files (RUN_FILES), is
not printable, or starts like a spreadsheet formula (FORMULA_STARTS), is graded under a safe name that says
so. A copy whose folders nest deeper than MAX_DEPTH is refused with its reason (walking it further would
exhaust Python's recursion).
"""

from __future__ import annotations

import os
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path

from minitorch.exercises.registry import MAX_UNPACKED_BYTES, ExerciseError

MAX_ZIP_MEMBERS = 100_000  # a .zip that would unpack to more files is refused (the project has a few hundred)
MAX_DEPTH = 64  # folders inside one another in a copy (the project nests 4): deeper ones are refused
RUN_FILES = ("grades.csv", "summary.md", "run.json", "class.png")  # the run's own files beside the students' folders
FORMULA_STARTS = ("=", "+", "-", "@")  # a cell starting so is a formula to a spreadsheet (grades.csv's students)
NAMES_SHOWN = 20  # names of a long list shown in a flag line; the rest are counted


@dataclass(frozen=True)
class Entry:
    """One entry of SUBMISSIONS: the student's ID (its name without .zip, or a safe name: see `note`), its path,
    and why it cannot be graded ("" if it can)."""

    student: str
    path: Path
    problem: str = ""
    note: str = ""  # why the student is graded under another name than the entry's ("" if not)


def entries(folder: Path) -> dict[str, Entry]:
    """Student ID -> Entry, for every entry of `folder` but hidden ones (a name starting with '.')."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ExerciseError(f"{folder} is not a folder of submissions")
    paths = [path for path in sorted(folder.iterdir()) if not path.name.startswith(".")]
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


def _student_of(path: Path) -> str:
    return path.name[:-4] if path.name.lower().endswith(".zip") else path.name


def _safe_student(name: str, taken: set[str]) -> tuple[str, str]:
    """(the ID to grade `name` under, why it differs from `name` or ''): the name itself if it is printable and
    not one of the run's own files; else the escaped name with "-submission" (and a number) added, unused."""
    formula = name.startswith(FORMULA_STARTS)
    if shown(name) == name and name.lower() not in RUN_FILES and not formula:
        return name, ""
    why = ("is one of the run's own files" if name.lower() in RUN_FILES else
           f"starts with {name[0]!r}: a spreadsheet opening grades.csv would run it as a formula" if formula else
           "holds characters that are not printable")
    base, number = ("student " if formula else "") + shown(name) + "-submission", 1
    safe = base
    while safe in taken or safe.lower() in RUN_FILES:
        number += 1
        safe = f"{base}-{number}"
    return safe, f"graded as {safe}: the entry's name '{shown(name)}' {why}"


def shown(name: str) -> str:
    """`name` as it may be shown: every character that is not printable (a newline, a terminal's escape, a
    Unicode line or paragraph separator, a zero-width mark) written as its escape, e.g. a\\nb for a newline."""
    return "".join(character if character.isprintable() else _escape(character) for character in str(name))


def _escape(character: str) -> str:
    named = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
    if character in named:
        return named[character]
    code = ord(character)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def capped(names, first: int = NAMES_SHOWN, what: str = "files") -> str:
    """Names for a flag line, each `shown`: all of them separated by spaces if there are at most `first`, else
    e.g. "99,000 files (first 20: a.py b.py ...)", so that a line stays a line."""
    names = [shown(name) for name in names]
    if len(names) <= first:
        return " ".join(names)
    return f"{len(names):,} {what} (first {first}: {' '.join(names[:first])} ...)"


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
                raise ExerciseError(f"{shown(archive.name)} would unpack to {len(members):,} files and "
                                    f"{size / 2**20:,.0f} MiB; a copy of the project is a few MiB (at most "
                                    f"{MAX_ZIP_MEMBERS:,} files and "
                                    f"{MAX_UNPACKED_BYTES >> 20:,} MiB are unpacked): leave out data and caches")
            for member in members:
                _check_member(archive, member, Path(dest))
            _refuse_a_name_twice(archive, members)
            opened.extractall(dest)
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
    """Two members of one name would unpack one over the other: which copy is graded is not for the grader to
    guess."""
    seen = set()
    for member in members:
        name = member.filename.rstrip("/")
        if name in seen:
            raise ExerciseError(f"{shown(archive.name)} holds {shown(name)} twice; which one is the copy to grade "
                                f"is not clear: zip one copy of each file")
        seen.add(name)


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


def _walk(folder: Path, shown_as: str = ""):
    """Every path under `folder`, without following links (rglob would), with a stack instead of recursion;
    ExerciseError if folders nest deeper than MAX_DEPTH (os.walk and rglob would raise RecursionError)."""
    if folder.is_symlink() or not folder.is_dir():
        return
    waiting = [(folder, 1)]
    while waiting:
        current, depth = waiting.pop()
        try:
            children = sorted(os.scandir(current), key=lambda child: child.name)
        except OSError:
            continue
        for child in children:
            yield Path(child.path)
            if child.is_dir(follow_symlinks=False):
                if depth >= MAX_DEPTH:
                    inside = shown(os.path.relpath(child.path, folder))
                    raise ExerciseError(f"{shown_as or shown(folder.name)} holds folders nested more than {MAX_DEPTH} "
                                        f"deep ({inside[:120]}...); the project nests a few: submit your copy of the "
                                        f"project only")
                waiting.append((Path(child.path), depth + 1))


def check_depth(folder: Path, shown_as: str = "") -> None:
    """ExerciseError if folders in `folder` nest deeper than MAX_DEPTH (every path is looked at, none opened)."""
    for _ in _walk(Path(folder), shown_as):
        pass


def open_copy(entry: Entry, scratch: Path) -> Path:
    """The top folder of the copy in `entry` (a folder, or its .zip unpacked into scratch/unpacked)."""
    if entry.problem:
        raise ExerciseError(entry.problem)
    if entry.path.is_dir():
        check_depth(entry.path, shown(entry.path.name))
        return find_project(entry.path, shown(entry.path.name))
    unpack(entry.path, scratch / "unpacked")
    if not (scratch / "unpacked").is_dir():  # a valid zip with no member
        raise ExerciseError(f"{shown(entry.path.name)} is an empty .zip: it holds no copy of the project")
    return find_project(scratch / "unpacked", shown(entry.path.name))
