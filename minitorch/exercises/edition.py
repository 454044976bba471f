"""The student edition: a copy of the project with exercise regions replaced by stubs (chapter 00)."""

from __future__ import annotations

import copy
import datetime
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from minitorch.outputs import OutputPathError, check_output_folder
from minitorch.exercises.registry import (INSTRUCTOR_ONLY, MANIFEST, NOT_COPIED, PROJECT_PATHS, ROOT, SOLUTION_TAG,
                                          Exercise, ExerciseError, marker_in, raise_statement, read_manifest_data,
                                          stub_source)

def read_manifest(root: Path) -> list[str] | None:
    """The exercise IDs the edition at `root` handed out; None without a manifest (the full book)."""
    manifest = read_manifest_data(root)
    return None if manifest is None else manifest["handed_out"]


COMPARED = ("minitorch", "tests")  # the folders whose files the manifest fingerprints


def outside_regions(text: str) -> list[str]:
    """The lines of `text` outside exercise regions (the marker lines kept, trailing spaces dropped)."""
    kept, inside = [], False
    for line in text.splitlines():
        marker = marker_in(line)
        if marker and marker["kind"].upper() == "END":
            inside = False
        if not inside:
            kept.append(line.rstrip())
        if marker and marker["kind"].upper() == "BEGIN":
            inside = True
    return kept


def project_files(root: Path) -> list[str]:
    """The files of minitorch/ and tests/ (relative paths), caches and the manifest left out."""
    return sorted(path.relative_to(root).as_posix() for folder in COMPARED for path in (Path(root) / folder).rglob("*")
                  if path.is_file() and not {"__pycache__", ".pytest_cache"} & set(path.parts)
                  and path.suffix != ".pyc" and path.relative_to(root) != MANIFEST)


def fingerprint(path: Path) -> str:
    """sha256 of a file's content outside the exercise regions (all of it, for a file that is not Python)."""
    data = Path(path).read_bytes()
    if path.suffix == ".py":
        data = "\n".join(outside_regions(data.decode("utf-8", "replace"))).encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def git_commit(root: Path) -> str | None:
    """The commit checked out at `root` (with '+changes' if the work tree differs), or None."""
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=30)
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                                capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    if commit.returncode != 0:
        return None
    return commit.stdout.strip() + ("+changes" if status.stdout.strip() else "")



def strip_solutions(notebook: dict) -> tuple[dict, int]:
    """The notebook without its solution cells (answers to graded exercises) and with every output cleared;
    and how many cells went. Self-check cells (answers to predict-then-check questions) stay."""
    kept = [copy.deepcopy(cell) for cell in notebook.get("cells", [])
            if SOLUTION_TAG not in cell.get("metadata", {}).get("tags", [])]
    for cell in kept:
        if cell.get("cell_type") == "code":
            cell["outputs"], cell["execution_count"] = [], None
    removed = len(notebook.get("cells", [])) - len(kept)
    return {**notebook, "cells": kept}, removed


# A speed copy: a faster (or differently written) copy of exercise answers outside their regions, e.g.
#     # BEGIN SPEED COPY OF EXERCISES 2.3 3.2 (student edition: return None)
#     ...
#     # END SPEED COPY OF EXERCISES 2.3 3.2
# An edition handing out any exercise it names replaces its body by the statement after "student edition:",
# or, without one, by an error saying that the code is gone and why.
_SPEED_COPY = re.compile(r"^(?P<indent>[ \t]*)# (?P<kind>BEGIN|END) SPEED COPY OF EXERCISES "
                         r"(?P<ids>\d+\.\d+(?: \d+\.\d+)*)"
                         r"(?: \(student edition: (?P<replacement>.+)\))?[ \t]*$")


def remove_speed_copies(text: str, handed_out, where: str) -> str:
    """`text` (the source of file `where`) with the body of every speed copy that names a handed-out
    exercise replaced by one line at the BEGIN marker's indentation; the markers stay."""
    handed_out, kept, open_copy = set(handed_out), [], None  # open_copy: (ids, BEGIN line, dropping?)
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        if "SPEED COPY" not in line:
            if open_copy is None or not open_copy[2]:
                kept.append(line)
            continue
        marker = _SPEED_COPY.match(line.rstrip("\r\n"))
        if not marker:
            raise ExerciseError(f"{where}:{number}: malformed speed-copy marker {line.strip()!r}; write '# BEGIN SPEED "
                                f"COPY OF EXERCISES 2.3 3.2' (optionally ' (student edition: <statement>)') and "
                                f"'# END SPEED COPY OF EXERCISES 2.3 3.2'")
        ids = marker["ids"].split()
        if marker["kind"] == "BEGIN":
            if open_copy:
                raise ExerciseError(f"{where}:{number}: speed copy inside the one opened at line {open_copy[1]}")
            open_copy = (ids, number, bool(handed_out & set(ids)))
            kept.append(line)
            if open_copy[2]:
                message = (f"{where}:{number}: this code was removed from the student edition because it holds a "
                           f"copy of the answer to exercise(s) {', '.join(ids)}; it runs in the full repository")
                replacement = marker["replacement"] or raise_statement("RuntimeError", message, marker["indent"])
                kept.extend(f"{marker['indent']}{line}\n" for line in replacement.splitlines())
            continue
        if not open_copy or open_copy[0] != ids:
            raise ExerciseError(f"{where}:{number}: END SPEED COPY OF EXERCISES {' '.join(ids)} does not close a "
                                f"BEGIN with the same exercises")
        open_copy = None
        kept.append(line)
    if open_copy:
        raise ExerciseError(f"{where}:{open_copy[1]}: BEGIN SPEED COPY has no END")
    return "".join(kept)


def remove_speed_copies_in(dest: Path, handed_out) -> None:
    """Apply `remove_speed_copies` to every module of the edition's minitorch/ but the course's own code."""
    for path in sorted((dest / "minitorch").rglob("*.py")):
        if path.relative_to(dest / "minitorch").parts[0] == "exercises":
            continue
        text = path.read_text(encoding="utf-8")
        if "SPEED COPY" in text:
            edited = remove_speed_copies(text, handed_out, path.relative_to(dest).as_posix())
            if edited != text:
                path.write_text(edited, encoding="utf-8")


def make_student_edition(dest, selected: list[Exercise], root: Path = ROOT) -> dict:
    """Copy the project at `root` to `dest`, replacing the `selected` regions by stubs.

    Speed copies of the selected exercises (see `remove_speed_copies`) go too, and so do the instructor's own
    tests (`registry.INSTRUCTOR_ONLY`). Also drops notebook cells
    tagged "solution" (answers to graded exercises; cells tagged "self-check", the answers to
    predict-then-check questions, stay), clears outputs, and writes the manifest
    (minitorch/exercises/edition.json: the IDs handed out). `dest` must lie outside `root` and must not
    exist or be an empty folder. The edition is built in a temporary sibling folder and moved into place
    only when complete: a full disk or Ctrl-C never leaves a copy holding reference solutions.
    Returns what was done: {"stubbed": [...IDs], "solution_cells_removed": n}.
    """
    try:
        dest = check_output_folder(dest, option="the edition's folder")
    except OutputPathError as error:
        raise ExerciseError(f"{error} (nothing was written)") from None
    root = Path(root).resolve()
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise ExerciseError(f"{dest} already exists and is not an empty folder; choose a new folder "
                            f"(nothing was written)")
    if dest.is_relative_to(root):  # inside, pytest and the copy would find each other's files
        raise ExerciseError(f"{dest} lies inside the project {root}; choose a folder outside it, "
                            f"e.g. {root.parent / 'student-edition'}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f".{dest.name}.building-", dir=dest.parent))
    try:
        summary = _build(building, selected, root)
        if dest.exists():
            dest.rmdir()  # empty, checked above
        building.rename(dest)
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return summary


def copy_folder(source: Path, dest: Path, also_ignored: tuple[str, ...] = ()) -> None:
    """Copy the folder `source` to `dest` without caches (NOT_COPIED), names matching `also_ignored`, or
    anything that is neither a file nor a folder (a socket a kernel left behind, a broken link)."""
    patterns = shutil.ignore_patterns(*NOT_COPIED, *also_ignored)

    def ignored(folder: str, names: list[str]) -> set[str]:
        special = {name for name in names if not (os.path.isfile(os.path.join(folder, name))
                                                  or os.path.isdir(os.path.join(folder, name)))}
        return set(patterns(folder, names)) | special

    shutil.copytree(source, dest, ignore=ignored)


def _build(dest: Path, selected: list[Exercise], root: Path) -> dict:
    for name in PROJECT_PATHS:
        source = root / name
        if source.is_dir():
            copy_folder(source, dest / name)
        elif source.is_file():
            shutil.copy2(source, dest / name)
    for name in INSTRUCTOR_ONLY:  # the instructor's tests stay with the instructor
        (dest / name).unlink(missing_ok=True)

    by_file: dict[Path, list[Exercise]] = {}
    for exercise in selected:
        by_file.setdefault(exercise.path.resolve(), []).append(exercise)
    for path, exercises in by_file.items():
        target = dest / path.relative_to(root)
        target.write_text(stub_source(path.read_text(encoding="utf-8"), exercises, root), encoding="utf-8")
    remove_speed_copies_in(dest, {exercise.id for exercise in selected})

    removed = 0
    for path in sorted((dest / "chapters").glob("*.ipynb")):
        notebook = json.loads(path.read_text(encoding="utf-8"))
        stripped, count = strip_solutions(notebook)
        removed += count
        if stripped != notebook:
            path.write_text(json.dumps(stripped, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    manifest = {"handed_out": [exercise.id for exercise in selected], "made_from": git_commit(root),
                "made_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                # what the edition held outside the regions: the grader tells the students' edits from its own
                "files": {name: fingerprint(dest / name) for name in project_files(dest)}}
    (dest / MANIFEST).parent.mkdir(parents=True, exist_ok=True)
    (dest / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return {"stubbed": [exercise.id for exercise in selected], "solution_cells_removed": removed}
