"""The student edition: a copy of the project with the chosen exercises' functions stubbed (chapter 00)."""

from __future__ import annotations

import ast
import copy
import datetime
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from minitorch.outputs import OutputPathError, check_output_folder, check_readable, write_atomically
from minitorch.exercises.registry import (EXERCISES, INSTRUCTOR_ONLY, MANIFEST, MAX_FUNCTION_LINES,
                                          MAX_MODULE_BYTES, NOT_COPIED, PROJECT_PATHS, ROOT, SOLUTION_TAG, Exercise,
                                          ExerciseError, function_node, is_stub, load_exercises, sort_key,
                                          stubbed_source)

# Names every module has without defining them: an exercise's function may use them.
MODULE_DUNDERS = ("__name__", "__file__", "__doc__", "__spec__", "__loader__", "__package__", "__builtins__",
                  "__cached__", "__annotations__")


def module_names(text: str) -> list[str]:
    """The names a module's source binds at its top level (imports, functions, classes, assignments), and the
    names every module has: what an exercise's function may use besides its own (student_function)."""
    names = set(MODULE_DUNDERS)
    for node in ast.parse(text).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(name.id for target in targets for name in ast.walk(target) if isinstance(name, ast.Name))
    return sorted(names)


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


def missing_prerequisites(handed_out, released=(), before=(), table=None) -> dict[str, list[str]]:
    """{exercise ID handed out: [the exercises it builds on that the edition neither hands out nor releases, nor
    an earlier edition handed out (`before`)]}, for those with any. An exercise builds on the exercises its table
    entry `needs` that come before it (the order of work), and on theirs in turn: 5.1 on 3.2 and, through it, on
    the softmax (2.4) and the engine. A later exercise in `needs` (sum_to_shape for chapter 01's backward rules)
    is reached only by a wrong answer and is no prerequisite."""
    table = EXERCISES if table is None else table
    present = {getattr(exercise, "id", exercise) for exercise in (*handed_out, *released)} | set(before)
    missing = {}
    for exercise in handed_out:
        exercise_id = getattr(exercise, "id", exercise)
        needed, waiting = set(), [exercise_id]
        while waiting:
            for prerequisite in table[waiting.pop()].needs:
                if prerequisite in table and sort_key(prerequisite) < sort_key(exercise_id) and \
                        prerequisite not in needed:
                    needed.add(prerequisite)
                    waiting.append(prerequisite)
        lacking = sorted(needed - present, key=sort_key)
        if lacking:
            missing[exercise_id] = lacking
    return missing


def prerequisites_refused(handed_out, released=(), before=(), table=None) -> None:
    """ExerciseError, with the options that fix it, if an exercise handed out builds on one the edition neither
    hands out nor releases: its tests would be blocked and its chapter stopped by that stub, with nothing to say
    where the student gets it."""
    missing = missing_prerequisites(handed_out, released, before, table)
    if not missing:
        return
    lacking = sorted({needed for ids in missing.values() for needed in ids}, key=sort_key)
    handed = [getattr(exercise, "id", exercise) for exercise in handed_out]
    which = "; ".join(f"{exercise_id} builds on {', '.join(ids)}" for exercise_id, ids in missing.items())
    raise ExerciseError(f"this edition hands out exercises whose prerequisites it neither hands out nor releases "
                        f"({which}): their stubs would block those exercises' tests and chapters. Add "
                        f"--release {','.join(lacking)} (their answers, in the edition), or hand them out too: "
                        f"--only {','.join(sorted({*handed, *lacking}, key=sort_key))}, or, if an earlier edition "
                        f"handed them out and your students bring their own answers (carry-over), say so with "
                        f"--handed-out-before {','.join(lacking)}")


def make_student_edition(dest, selected: list[Exercise], root: Path = ROOT, released=(), table=None,
                         before=()) -> dict:
    """Copy the project at `root` to `dest`, handing out the `selected` exercises: the body of every exercise's
    function is replaced by its stub, except those of the exercises `released` (their answers, e.g. last week's
    after its deadline; all of them: a solutions edition). No answer leaves unless it is released.

    The instructor's own files (`registry.INSTRUCTOR_ONLY`) are left out. Also drops notebook cells
    tagged "solution" (answers to graded exercises; cells tagged "self-check", the answers to
    predict-then-check questions, stay), clears outputs, and writes the manifest
    (minitorch/exercises/edition.json: the IDs handed out, and the names each exercise's module defines, which
    a student's own run checks the functions against). `dest` must lie outside `root` and must not
    exist or be an empty folder. The edition is built in a temporary sibling folder and moved into place
    only when complete: a full disk or Ctrl-C never leaves a copy holding reference solutions.
    `before` names the exercises an earlier edition handed out, which the students bring themselves (carry-over):
    they stay stubs, and the README says so. Returns what was done: {"handed_out": [...IDs], "stubbed": [...],
    "released": [...], "solution_cells_removed": n}.
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
    building = Path(tempfile.mkdtemp(prefix=f".{dest.name[:40]}.building-", dir=dest.parent))  # (fits any name)
    try:
        summary = _build(building, selected, root, released, table, before)
        if dest.exists():
            dest.rmdir()  # empty, checked above
        building.rename(dest)
        os.chmod(dest, 0o755)  # mkdtemp made it the owner's only: a class (or its TAs) must be able to read it
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


def _build(dest: Path, selected: list[Exercise], root: Path, released, table, before=()) -> dict:
    for name in PROJECT_PATHS:
        source = root / name
        if source.is_dir():
            copy_folder(source, dest / name)
        elif source.is_file():
            shutil.copy2(source, dest / name)
    for name in INSTRUCTOR_ONLY:  # the instructor's files (hidden tests among them) stay with the instructor
        shutil.rmtree(dest / name) if (dest / name).is_dir() else (dest / name).unlink(missing_ok=True)

    released = {getattr(exercise, "id", exercise) for exercise in released}
    overlap = sorted({exercise.id for exercise in selected} & released, key=sort_key)
    if overlap:
        raise ExerciseError(f"exercise(s) {', '.join(overlap)} are both handed out and released; hand out an "
                            f"exercise, or release its answer, not both")
    stubbed = [exercise for exercise in load_exercises(root, table) if exercise.id not in released]
    by_module: dict[str, list[Exercise]] = {}
    for exercise in stubbed:
        by_module.setdefault(exercise.module, []).append(exercise)
    for module, exercises in by_module.items():
        (dest / module).write_text(stubbed_source((root / module).read_text(encoding="utf-8"), exercises, module),
                                   encoding="utf-8")
    names = {module: module_names((dest / module).read_text(encoding="utf-8")) for module in sorted(by_module)}

    removed = 0
    for path in sorted((dest / "chapters").glob("*.ipynb")):
        try:
            notebook = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as error:
            raise ExerciseError(f"{path.relative_to(dest)} is not a valid notebook ({error}); nothing was "
                                f"written") from None
        stripped, count = strip_solutions(notebook)
        removed += count
        if stripped != notebook:
            path.write_text(json.dumps(stripped, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    before = sorted({getattr(exercise, "id", exercise) for exercise in before} - released, key=sort_key)
    manifest = {"handed_out": [exercise.id for exercise in selected], "released": sorted(released, key=sort_key),
                "handed_out_before": before, "made_from": git_commit(root),
                "made_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "module_names": names}
    (dest / MANIFEST).parent.mkdir(parents=True, exist_ok=True)
    (dest / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    every = load_exercises(root, table)
    (dest / "README.md").write_text(student_readme(selected, [e for e in every if e.id in released], dest / "chapters",
                                                   [e for e in every if e.id in before], len(every)),
                                    encoding="utf-8")
    return {"handed_out": [exercise.id for exercise in selected], "stubbed": [exercise.id for exercise in stubbed],
            "released": sorted(released, key=sort_key), "solution_cells_removed": removed}


def chapter_titles(chapters: Path) -> list[tuple[str, str]]:
    """(file name, title) of each chapter NN_title.ipynb in `chapters`, in order; the title is the first line of
    the chapter's first cell ("Chapter 03 — Attention, two ways"), else the file's name."""
    titles = []
    for path in sorted(chapters.glob("[0-9][0-9]_*.ipynb")):
        try:
            cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
            first = "".join(cells[0]["source"]).strip().splitlines()[0] if cells else ""
        except (OSError, ValueError, KeyError, IndexError, TypeError):
            first = ""
        titles.append((path.name, first.lstrip("# ").strip() or path.stem))
    return titles


def student_readme(handed_out: list[Exercise], released: list[Exercise], chapters: Path, before=(),
                   exercise_count: int | None = None) -> str:
    """The README of a student edition, in place of the instructor's: where to start, what works before the
    exercises are written, how to check one, how to bring last week's work, how to hand in. The exercises
    handed out are listed from the table, with their functions and files. A solutions edition (nothing handed
    out, every answer released) gets a README of its own."""
    if not handed_out and exercise_count is not None and len(released) == exercise_count:
        return solutions_readme(chapters)
    if handed_out:
        rows = "\n".join(f"| {exercise.id} | {exercise.title} | `{exercise.function}` in `{exercise.module}` | "
                         f"{exercise.points} | `python -m pytest -m {exercise.marker}` |" for exercise in handed_out)
        this_week = ("The exercises handed out in this edition, which your instructor grades. Each is one function:\n"
                     "its `def` line and docstring are there, and its body raises `NotImplementedError` until you\n"
                     "write it.\n\n| exercise | what | the function you write | points | check it with |\n"
                     f"|---|---|---|---|---|\n{rows}\n\n")
    else:
        this_week = "This edition hands out no exercise: nothing in it is graded.\n\n"
    if released:
        this_week += (f"The answers to exercise(s) {', '.join(exercise.id for exercise in released)} are included "
                      f"(your instructor released them).\n")
    if before:
        this_week += (f"Your own answers to exercise(s) {', '.join(exercise.id for exercise in before)} come from an "
                      f"earlier edition: bring them\nwith carry-over (below). Until then the tests and chapter cells "
                      f"that need them are blocked.\n")
    this_week += ("Every other exercise's function is a stub; a chapter names it before the first cell that needs\n"
                  "it (\"write exercise X.Y first\").\n")
    titles = chapter_titles(chapters)
    guide = [title for name, title in titles if name.endswith("for_instructors.ipynb")]
    chapter_list = "\n".join(f"- [{title}](chapters/{name})" for name, title in titles
                             if not name.endswith("for_instructors.ipynb"))
    if guide:
        chapter_list += f"\n\n({guide[0]} is your instructor's guide: the course does not need it.)"
    first = handed_out[0].marker if handed_out else "ex1_2"
    return f"""# Attention sinks, from scratch: your student edition

This folder is your own copy of the book and of its library, `minitorch`, as your instructor handed it out.
You write some of the library's functions yourself, the graded exercises, and the chapters use them.

## This edition's exercises

{this_week}
## Where to start

With Python 3.10 to 3.13 (a virtual environment is a good idea), from this folder:

```bash
pip install -r requirements.txt     # numpy, matplotlib, jupyter, pytest (and two small packages the book uses)
jupyter lab chapters/               # then read the chapters in order
```

{chapter_list}

Chapter 00 explains the set-up, the notation, the tests, and how exercises are checked.

## What works before you have written the exercises

- Chapter 00 runs top to bottom. Every later chapter runs until its first cell that needs an exercise you
  have not written: that cell stops with the exercise's error, which names the function, its file and the
  command that checks it. Once the exercises of chapters 01 to N are written, chapter N runs top to bottom.
- `python -m pytest -q -m "not slow"` runs; the scoreboard at its end counts each exercise's tests as passed,
  failed, not attempted (its own stub) or blocked (another exercise's stub: write that one first).
- `python -m minitorch.exercises list` lists every exercise, its file, function and points.
- A command that needs an exercise you have not written stops in one line naming it, such as
  `python -m minitorch reproduce` (it trains the paper's models, so it needs the engine's exercises and 4.1's
  `make_targets`).

## Checking an exercise

```bash
python -m pytest -m {first}      # the tests of one exercise (exX_Y for exercise X.Y)
python -m pytest -m ch03       # every exercise of a chapter
```

Write your code in place of the `raise` statement, below the docstring, and leave the `def` line as it is.
Only the function itself is graded, taken alone from its file: write any helper inside the function (your own
`python -m pytest -m exX_Y` says so if a helper is outside). Your instructor grades on other inputs than yours,
so make the function right, not the tests pass.

## Bringing last week's work

When a new edition arrives, unpack it next to your copy of the last one and, from the new folder, run:

```bash
python -m minitorch.exercises carry-over ../LAST_WEEKS_FOLDER .
```

It copies every exercise function you wrote there into this edition, where this edition still has its stub,
and says which. Nothing else changes: an answer your instructor released stays as released, and notes you
made elsewhere (in the chapters, say) stay in the old folder.

## Handing in

Zip this whole folder (from the folder above it: `zip -r YOUR_NAME.zip THIS_FOLDER`) and hand in the zip,
or hand it in as your instructor says. Only the functions of the exercises handed out are graded.
"""


def solutions_readme(chapters: Path) -> str:
    """The README of a solutions edition: the book with every answer in place, nothing to write or hand in."""
    titles = chapter_titles(chapters)
    chapter_list = "\n".join(f"- [{title}](chapters/{name})" for name, title in titles
                             if not name.endswith("for_instructors.ipynb"))
    return f"""# Attention sinks, from scratch: the solutions edition

This folder is a copy of the book and of its library, `minitorch`, with every exercise solved: each exercise's
function holds its answer, as your instructor released it. It hands out no exercise and nothing in it is graded;
read it to see how the book runs when everything is written, or to compare with your own answers.

## Where to start

With Python 3.10 to 3.13 (a virtual environment is a good idea), from this folder:

```bash
pip install -r requirements.txt     # numpy, matplotlib, jupyter, pytest (and two small packages the book uses)
jupyter lab chapters/               # then read the chapters in order
```

{chapter_list}

Every chapter runs top to bottom.

## Checking the answers

```bash
python -m pytest -q -m "not slow"   # the tests, with the scoreboard of every exercise at the end
python -m pytest -m ex3_2           # the tests of one exercise (exX_Y for exercise X.Y)
python -m minitorch.exercises list  # every exercise, its file, function and points
```
"""


def carry_over(old: Path, new: Path) -> tuple[list[str], dict[str, str]]:
    """Copy into the edition at `new` the exercise functions a student wrote in their copy `old` (an earlier
    week's edition): each function `new` still has as a stub, where `old` has one that is not. Returns (the IDs
    carried over, {ID: why not} for each function of `old` that cannot be taken, as the grader would not take
    it). The function is taken alone, as the grader takes it: an error elsewhere in its file does not stop it.
    Each file of `new` is replaced atomically. The student's own code, in their own copies: nothing of the
    grader's is read."""
    from minitorch.exercises.grader.sandboxed import student_function as found

    for copy, what in ((old, "OLD"), (new, "NEW")):
        if not str(copy).strip():  # '' is never the current folder (an instructor's checkout holds every answer)
            raise ExerciseError(f"carry-over: {what} is empty; name the folder of your copy")
        check_readable(Path(copy), copy, f"carry-over: {what}", ExerciseError)
        if not (Path(copy) / "minitorch" / "__init__.py").is_file():
            raise ExerciseError(f"carry-over: {what} {copy} is not a copy of the book (no minitorch/ in it); name "
                                f"the folder of your copy (unzip a .zip first)")
    carried, not_carried = [], {}
    for exercise in load_exercises(new):
        target = Path(new) / exercise.module
        text = _module_text(target, "NEW")
        new_node = function_node(ast.parse(text), exercise.function)
        if new_node is None or not is_stub(new_node, exercise):
            continue
        try:
            theirs = _module_text(Path(old) / exercise.module, "OLD")
            old_node = found.find(theirs, exercise, MAX_FUNCTION_LINES)
        except found.StudentFunctionError as error:
            not_carried[exercise.id] = str(error)
            continue
        if is_stub(old_node, exercise):
            continue
        outside = found.helpers_outside(old_node, module_names(text))
        if outside:  # in NEW it would be a NameError; the grader flags it the same way
            not_carried[exercise.id] = found.helper_message(exercise, outside)
            continue
        start = (old_node.decorator_list[0].lineno if old_node.decorator_list else old_node.lineno) - 1
        function = "".join(theirs.splitlines(keepends=True)[start:old_node.end_lineno])
        lines = text.splitlines(keepends=True)
        first = (new_node.decorator_list[0].lineno if new_node.decorator_list else new_node.lineno) - 1
        lines[first:new_node.end_lineno] = [function if function.endswith("\n") else function + "\n"]
        try:
            write_atomically(target, "".join(lines))
        except OSError as error:
            raise ExerciseError(f"carry-over: could not write {target} ({error.strerror or error}); it is as it was"
                                + (f", and {', '.join(carried)} were carried over before" if carried else "")) from None
        carried.append(exercise.id)
    return carried, not_carried


def _module_text(path: Path, what: str) -> str:
    """The text of a module of a copy (its coding cookie honoured); a file that cannot be read is an ExerciseError
    for NEW (the edition), a StudentFunctionError for OLD (the student's copy: that exercise is not carried)."""
    from minitorch.exercises.grader.sandboxed import student_function as found
    from minitorch.outputs import PathError, check_input_file

    try:
        data = check_input_file(path, what).read_bytes()
        if len(data) > MAX_MODULE_BYTES:
            raise ValueError(f"it is larger than {MAX_MODULE_BYTES:,} bytes")
        text = found.decode(data)
        if what == "NEW":
            ast.parse(text)
        return text
    except (OSError, PathError, ValueError, SyntaxError, LookupError) as error:
        why = str(error) if isinstance(error, PathError) else f"{path}: {error}"
        if what == "NEW":
            raise ExerciseError(f"carry-over: NEW's {why}; make the edition again") from None
        raise found.StudentFunctionError(found.DOES_NOT_COMPILE, f"cannot be read: {why}") from None
