"""The student edition: a copy of the project with exercise regions replaced by stubs (chapter 00)."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

from minitorch.exercises.registry import (NOT_COPIED, PROJECT_PATHS, ROOT, SOLUTION_TAG, Exercise, ExerciseError,
                                          stub_source)



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


def make_student_edition(dest, selected: list[Exercise], root: Path = ROOT) -> dict:
    """Copy the project at `root` to `dest`, replacing the `selected` regions by stubs.

    Also drops notebook cells tagged "solution" (answers to graded exercises; cells tagged "self-check",
    the answers to predict-then-check questions, stay) and clears outputs. `dest` must lie outside `root`
    and must not exist or be an empty folder. Returns what was done: {"stubbed": [...IDs], "solution_cells_removed": n}.
    """
    root, dest = Path(root).resolve(), Path(dest).resolve()
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise ExerciseError(f"{dest} already exists and is not an empty folder; choose a new folder "
                            f"(nothing was written)")
    if dest.is_relative_to(root):  # inside, pytest and the copy would find each other's files
        raise ExerciseError(f"{dest} lies inside the project {root}; choose a folder outside it, "
                            f"e.g. {root.parent / 'student-edition'}")
    dest.mkdir(parents=True, exist_ok=True)
    for name in PROJECT_PATHS:
        source = root / name
        if source.is_dir():
            shutil.copytree(source, dest / name, ignore=shutil.ignore_patterns(*NOT_COPIED))
        elif source.is_file():
            shutil.copy2(source, dest / name)

    by_file: dict[Path, list[Exercise]] = {}
    for exercise in selected:
        by_file.setdefault(exercise.path.resolve(), []).append(exercise)
    for path, exercises in by_file.items():
        target = dest / path.relative_to(root)
        target.write_text(stub_source(path.read_text(encoding="utf-8"), exercises, root), encoding="utf-8")

    removed = 0
    for path in sorted((dest / "chapters").glob("*.ipynb")):
        notebook = json.loads(path.read_text(encoding="utf-8"))
        stripped, count = strip_solutions(notebook)
        removed += count
        if stripped != notebook:
            path.write_text(json.dumps(stripped, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    return {"stubbed": [exercise.id for exercise in selected], "solution_cells_removed": removed}
