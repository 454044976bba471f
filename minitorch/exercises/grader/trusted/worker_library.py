"""What a student's worker is given: the stand-in library and the student's files (chapter 11).

The stand-in library (`prepare_base`, once per run) is the grader's library with every exercise's body a stand-in
that asks the grader, without the instructor's files and the book's tooling: it holds no answer. The student's
files are copied as bytes, unread (`copy_student_files`): reading and compiling them happen in the worker.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import py_compile
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

from minitorch.exercises.grader.sandboxed.stand_in import stand_in_body
from minitorch.exercises.registry import (INSTRUCTOR_ONLY, MAX_MODULE_BYTES, ExerciseError, function_node,
                                          load_exercises, read_manifest_data, replace_bodies)

# The course's own files a worker's library holds: the sandboxed side, the protocol and the table.
WORKER_COURSE_FILES = ("minitorch/exercises/__init__.py", "minitorch/exercises/registry.py",
                       "minitorch/exercises/grader/__init__.py", "minitorch/exercises/grader/channel.py",
                       "minitorch/exercises/grader/sandboxed/")
BASE, STUDENT = "base", "student"  # the two folders of a student's library
WORKER_SCRIPT = f"{BASE}/minitorch/exercises/grader/sandboxed/worker.py"


@dataclass
class StudentFiles:
    """What was found of the exercises' files in a copy."""

    copied: dict[str, str] = field(default_factory=dict)  # exercise ID -> its file, relative to the STUDENT folder
    missing: dict[str, str] = field(default_factory=dict)  # exercise ID -> why it cannot be graded
    handed_out: list[str] | None = None  # what the copy's own manifest says it was handed (never scored)


def stand_in_sources(grader_root: Path) -> dict[str, str]:
    """Relative path -> source, for every module of the grader's library a worker needs."""
    by_module: dict[str, list] = {}
    for exercise in load_exercises(grader_root):
        by_module.setdefault(exercise.module, []).append(exercise)
    sources = {}
    for path in sorted((Path(grader_root) / "minitorch").rglob("*.py")):
        relative = path.relative_to(grader_root).as_posix()
        if relative.startswith("minitorch/tools/") or relative in INSTRUCTOR_ONLY or (
                relative.startswith("minitorch/exercises/") and not relative.startswith(WORKER_COURSE_FILES)):
            continue
        text = path.read_text(encoding="utf-8")
        if relative in by_module:
            tree = ast.parse(text, relative)
            text = replace_bodies(text, {exercise.function: stand_in_body(exercise, _parameters(tree, exercise))
                                         for exercise in by_module[relative]}, relative)
        sources[relative] = text
    return sources


def _parameters(tree: ast.Module, exercise) -> list[str]:
    arguments = function_node(tree, exercise.function).args
    if arguments.vararg or arguments.kwarg or arguments.kwonlyargs:
        raise ExerciseError(f"{exercise.module}: {exercise.function} must take plain positional parameters")
    return [argument.arg for argument in arguments.posonlyargs + arguments.args]


def prepare_base(grader_root: Path, folder: Path) -> Path:
    """Write the stand-in library to `folder`/minitorch, compiled, readable by every user."""
    folder = Path(folder)
    for relative, text in stand_in_sources(grader_root).items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        py_compile.compile(str(path), cfile=importlib.util.cache_from_source(str(path)), doraise=True,
                           invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
    for path in [folder, *folder.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    return folder


def give_library(base: Path, dest: Path) -> None:
    """dest/BASE: the run's stand-in library, by hard links where the file system allows."""
    shutil.copytree(base, Path(dest) / BASE, copy_function=link_or_copy, dirs_exist_ok=True)


def link_or_copy(source, target) -> None:
    """A hard link to `source` where the file system allows and no one but its owner may change it, else a copy
    (never set-user-ID); nothing if `target` exists."""
    mode = os.lstat(source).st_mode
    if os.path.lexists(target):
        return
    if not mode & 0o6022:
        try:
            return os.link(source, target)
        except OSError:  # another file system
            pass
    shutil.copyfile(source, target)
    os.chmod(target, mode & 0o755)


def copy_student_files(project: Path, exercises, dest: Path) -> StudentFiles:
    """Copy, unread, each regular file of at most MAX_MODULE_BYTES of the copy that defines one of `exercises`'
    functions into dest/STUDENT/, and say why the others cannot be graded. ExerciseError for a copy of an old
    edition, or with a manifest that is not one."""
    found = StudentFiles()
    for exercise in exercises:
        source = Path(project) / exercise.module
        try:
            status = source.lstat()
        except OSError:
            found.missing[exercise.id] = (f"function not found: the copy has no {exercise.module}, which defines "
                                          f"{exercise.function} (exercise {exercise.id})")
            continue
        if not stat.S_ISREG(status.st_mode):
            found.missing[exercise.id] = f"function not found: {exercise.module} is not a regular file"
        elif status.st_size > MAX_MODULE_BYTES:
            found.missing[exercise.id] = (f"too large: {exercise.module} has {status.st_size:,} bytes; a file "
                                          f"holding an exercise may have at most {MAX_MODULE_BYTES:,}")
        else:
            target = Path(dest) / STUDENT / exercise.module
            target.parent.mkdir(parents=True, exist_ok=True)
            if not target.exists():
                with open(source, "rb") as given:
                    target.write_bytes(given.read(MAX_MODULE_BYTES + 1))
            found.copied[exercise.id] = exercise.module
    manifest = read_manifest_data(project)  # an old edition's is refused, naming what it is
    found.handed_out = None if manifest is None else manifest["handed_out"]
    return found
