"""What a student's worker is given: the stand-in library and the student's files (chapter 11, "How grading works").

- The *stand-in library* (`prepare_base`, once per run): the grader's library in which the body of every
  exercise's function is a stand-in that asks the grader (`minitorch.exercises.grader.sandboxed.stand_in`), without the
  instructor's files (`registry.INSTRUCTOR_ONLY`) and the book's tooling. It holds no answer, so a worker may
  read all of it.
- The *student's files* (`copy_student_files`): for each exercise graded, the copy's file that defines its
  function, copied as bytes, unread, if it is a regular file of at most `registry.MAX_MODULE_BYTES`. Reading,
  parsing and compiling it happen in the worker, under its budget.
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

from minitorch.exercises.registry import (INSTRUCTOR_ONLY, MAX_MODULE_BYTES, ExerciseError, function_node,
                                          load_exercises, read_manifest_data, replace_bodies)
from minitorch.exercises.grader.sandboxed.stand_in import stand_in_body

# Beside the library: the worker runs these two by path (as the grader's checkout holds them).
WORKER_FILES = {"worker.py": "minitorch/exercises/grader/sandboxed/worker.py",
                "channel.py": "minitorch/exercises/grader/channel.py"}
# What of the course's own package a worker's library holds: the sandboxed side, the protocol and the table.
# The trusted side (grader/trusted/), the editions and the command line stay out.
WORKER_COURSE_FILES = ("minitorch/exercises/__init__.py", "minitorch/exercises/registry.py",
                       "minitorch/exercises/grader/__init__.py", "minitorch/exercises/grader/channel.py",
                       "minitorch/exercises/grader/sandboxed/")
BASE, STUDENT = "base", "student"  # the two folders of a student's library root


@dataclass
class StudentFiles:
    """What was found of the exercises' files in a copy."""

    copied: dict[str, str] = field(default_factory=dict)  # exercise ID -> its file, relative to the STUDENT folder
    missing: dict[str, str] = field(default_factory=dict)  # exercise ID -> why it cannot be graded
    handed_out: list[str] | None = None  # what the copy's own manifest says it was handed (never scored)


def stand_in_sources(grader_root: Path) -> dict[str, str]:
    """Relative path -> source, for every module of the grader's library a worker needs, every exercise's
    function a stand-in."""
    by_module: dict[str, list] = {}
    for exercise in load_exercises(grader_root):
        by_module.setdefault(exercise.module, []).append(exercise)
    package, sources = Path(grader_root) / "minitorch", {}
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(grader_root).as_posix()
        inside = path.relative_to(package).parts
        if inside[0] == "tools" or relative in INSTRUCTOR_ONLY or \
                (inside[0] == "exercises" and not relative.startswith(WORKER_COURSE_FILES)):
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
    """Write the stand-in library to `folder`/minitorch, compiled, with the worker's scripts beside it."""
    folder = Path(folder)
    for relative, text in stand_in_sources(grader_root).items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
        path.write_text(text, encoding="utf-8")
        py_compile.compile(str(path), cfile=importlib.util.cache_from_source(str(path)), doraise=True,
                           invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
    for name, source in WORKER_FILES.items():
        shutil.copyfile(Path(grader_root) / source, folder / name)
    for path in [folder, *folder.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    return folder


def give_library(base: Path, dest: Path) -> None:
    """dest/worker.py, dest/channel.py and dest/BASE/minitorch/...: hard links into the run's `base`."""
    for path in sorted(Path(base).rglob("*")):
        relative = path.relative_to(base)
        target = dest / (relative if relative.as_posix() in WORKER_FILES else Path(BASE) / relative)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        else:
            _link(path, target)


def copy_student_files(project: Path, exercises, dest: Path) -> StudentFiles:
    """Copy, unread, each file of the copy at `project` that defines one of `exercises`' functions into
    dest/STUDENT/; say which exercises cannot be graded and why. ExerciseError for a copy of an edition made
    before exercises were functions (`registry.OLD_EDITION`) or with a manifest that is not one."""
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
                with open(source, "rb") as given, open(target, "wb") as copied:
                    copied.write(given.read(MAX_MODULE_BYTES + 1))
            found.copied[exercise.id] = exercise.module
    manifest = read_manifest_data(project)  # an old edition's is refused, naming what it is
    found.handed_out = None if manifest is None else manifest["handed_out"]
    return found


def _link(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:  # another file system: a copy does as well
        shutil.copyfile(source, target)
