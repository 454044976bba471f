"""The student edition: a copy of the project with the chosen exercises' functions stubbed, and carrying a student's
functions over from last week's copy (chapter 00)."""

from __future__ import annotations

import ast
import copy
import datetime
import json
import os
import shutil
import stat
import string
import subprocess
import textwrap
from pathlib import Path

from minitorch.exercises.registry import (EXERCISES, INSTRUCTOR_ONLY, LINE_LENGTH, MANIFEST, NOT_COPIED, PROJECT_PATHS,
                                          ROOT, SOLUTION_TAG, STUB_ERROR, Exercise, ExerciseError, body_after_docstring,
                                          function_node, load_exercises, read_manifest_data, replace_bodies, sort_key)
from minitorch.outputs import (OutputPathError, PathError, building_aside, check_input_file, check_output_folder,
                               check_readable, remove_abandoned_builds, write_atomically)

TEMPLATES = Path(__file__).with_name("templates")  # the READMEs of an edition, the Gradescope bundle's scripts
# Names every module has without defining them: an exercise's function may use them.
MODULE_DUNDERS = ("__name__", "__file__", "__doc__", "__spec__", "__loader__", "__package__", "__builtins__",
                  "__cached__", "__annotations__")


def module_names(text: str) -> list[str]:
    """The names a module binds at its top level, and those every module has: what an exercise's function may use
    besides its own (the grader refuses a helper outside the function)."""
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
        commit, status = (subprocess.run(["git", *arguments], cwd=root, capture_output=True, text=True, timeout=30)
                          for arguments in (["rev-parse", "HEAD"], ["status", "--porcelain", "--untracked-files=no"]))
    except (OSError, subprocess.SubprocessError):
        return None
    return commit.stdout.strip() + ("+changes" if status.stdout.strip() else "") if commit.returncode == 0 else None


# ----------------------------------------------------------------------
# the stub: the function's body replaced by its NotImplementedError, lines no longer than the book's


def stubbed_source(text: str, exercises, where: str = "") -> str:
    """One module's source with the functions of `exercises` stubbed (def line, decorators and docstring stay)."""
    bodies = {}
    for exercise in exercises:
        message = json.dumps(exercise.stub_message(), ensure_ascii=False)
        if len(f"    raise NotImplementedError({message})") > LINE_LENGTH:  # pieces that join back to the message
            pieces = textwrap.wrap(exercise.stub_message(), LINE_LENGTH - 16, drop_whitespace=False,
                                   break_long_words=False, break_on_hyphens=False)
            message = "\n" + "\n".join(f"    {json.dumps(piece, ensure_ascii=False)}" for piece in pieces)
        bodies[exercise.function] = f"raise NotImplementedError({message})\n"
    return replace_bodies(text, bodies, where)


def is_stub(node: ast.FunctionDef, exercise: Exercise) -> bool:
    """Whether the function's only code is the edition's ``raise NotImplementedError(<its stub message>)``."""
    body = body_after_docstring(node)
    raised = body[0].exc if len(body) == 1 and isinstance(body[0], ast.Raise) else None
    if not (isinstance(raised, ast.Call) and isinstance(raised.func, ast.Name) and raised.func.id ==
            "NotImplementedError" and len(raised.args) == 1 and not raised.keywords
            and isinstance(raised.args[0], ast.Constant) and isinstance(raised.args[0].value, str)):
        return False
    found = STUB_ERROR.search(raised.args[0].value)
    return bool(found) and found["id"] == exercise.id


# ----------------------------------------------------------------------
# making an edition


def _ids(exercises) -> list[str]:
    return [getattr(exercise, "id", exercise) for exercise in exercises]


def prerequisites_refused(handed_out, released=(), before=(), table=None) -> None:
    """ExerciseError, with the options that fix it, if an exercise handed out builds on one the edition neither hands
    out nor releases, nor did an earlier edition hand out (`before`): that stub would block its tests and chapter. An
    exercise builds on the earlier exercises its row `needs`, and on theirs in turn (5.1 on 3.2, so on 2.4)."""
    table, present, missing = EXERCISES if table is None else table, {*_ids(handed_out), *_ids(released), *before}, {}
    for exercise_id in _ids(handed_out):
        needed, waiting = set(), [exercise_id]
        while waiting:
            new = {need for need in table[waiting.pop()].needs if sort_key(need) < sort_key(exercise_id)} - needed
            needed |= new
            waiting += new
        if needed - present:
            missing[exercise_id] = sorted(needed - present, key=sort_key)
    if missing:
        lacking = sorted({need for ids in missing.values() for need in ids}, key=sort_key)
        which = "; ".join(f"{exercise_id} builds on {', '.join(ids)}" for exercise_id, ids in missing.items())
        raise ExerciseError(f"this edition hands out exercises whose prerequisites it neither hands out nor releases "
                            f"({which}): their stubs would block those exercises' tests and chapters. Add --release "
                            f"{','.join(lacking)} (their answers, in the edition), or hand them out too: --only "
                            f"{','.join(sorted({*_ids(handed_out), *lacking}, key=sort_key))}, or, if an earlier "
                            f"edition handed them out and your students bring their own answers (carry-over), say so "
                            f"with --handed-out-before {','.join(lacking)}")


def make_student_edition(dest, selected: list[Exercise], root: Path = ROOT, released=(), table=None,
                         before=()) -> dict:
    """Copy the project at `root` to `dest` handing out the `selected` exercises. Every exercise's function is a stub
    but those `released` (their answers; all of them: a solutions edition); `before` names those an earlier edition
    handed out, which students bring by carry-over. The instructor's files and the solution cells are left out, the
    outputs cleared, the manifest and the README written. Built aside and moved into place whole: `dest`, new or an
    empty folder outside `root`, never holds half an edition. Returns what was done."""
    try:
        dest = check_output_folder(dest, option="the edition's folder")
    except OutputPathError as error:
        raise ExerciseError(f"{error} (nothing was written)") from None
    root, released = Path(root).resolve(), sorted(set(_ids(released)), key=sort_key)
    if dest.exists() and any(dest.iterdir()):
        raise ExerciseError(f"{dest} already exists and is not an empty folder; choose a new folder (nothing was "
                            f"written)")
    if dest.is_relative_to(root):  # inside, pytest and the copy would find each other's files
        raise ExerciseError(f"{dest} lies inside the project {root}; choose a folder outside it, e.g. "
                            f"{root.parent / 'student-edition'}")
    copy = next((folder for folder in dest.parents if (folder / "minitorch" / "__init__.py").is_file()), None)
    if copy is not None:  # (an edition): every copy made of it, and grade, would find a second edition inside
        raise ExerciseError(f"{dest} lies inside {copy}, a copy of the project (an edition?); choose a folder outside "
                            f"it (nothing was written)")
    handed_out, before_ids = set(_ids(selected)), set(_ids(before))
    for named, in_both, fix in (  # (what the options say checked first, then what root holds)
            (handed_out & set(released), "handed out and released", "hand out an exercise, or release its answer"),
            (handed_out & before_ids, "handed out and handed out before",  # a stub, and bring your own answer
             "hand an exercise out in this edition, or name it in --handed-out-before"),
            (set(released) & before_ids, "released and handed out before",  # the answer, and bring your own
             "release an exercise's answer, or name it in --handed-out-before")):
        if named:
            raise ExerciseError(f"exercise(s) {', '.join(sorted(named, key=sort_key))} are both {in_both}; {fix}, "
                                f"not both")
    stubs = _stubs_among(root, released, table)
    if stubs:  # (an edition made from an edition: its stubs would be handed out as the released answers)
        raise ExerciseError(f"{root} holds no answer to exercise(s) {', '.join(stubs)}: their functions are stubs (a "
                            f"student edition?), so they cannot be released; make the edition from the full book")
    try:
        with building_aside(dest) as building:
            summary = _build(building, selected, root, released, sorted(before_ids, key=sort_key), table)
    except OutputPathError as error:  # (dest a mount point, which the built edition cannot be moved onto)
        raise ExerciseError(f"{error} (nothing was written)") from None
    os.chmod(dest, 0o755)  # a class (or its TAs) must be able to read it, whatever the umask
    return summary


def _stubs_among(root: Path, released: list[str], table=None) -> list[str]:
    """The IDs of `released` whose function in the copy at `root` is the edition's stub, not an answer."""
    stubs = []
    for exercise in (e for e in load_exercises(root, table) if e.id in released):
        try:
            node = function_node(ast.parse((root / exercise.module).read_text(encoding="utf-8")), exercise.function)
        except (OSError, SyntaxError, ValueError):
            continue  # (the build reads the module again, and names what is wrong with it)
        stubs += [exercise.id] if node is not None and is_stub(node, exercise) else []
    return stubs


def copy_folder(source: Path, dest: Path, also_ignored: tuple[str, ...] = ()) -> None:
    """Copy the folder `source` to `dest` without caches, names matching `also_ignored`, or what is neither a file nor
    a folder (a socket a kernel left behind, a broken link)."""
    patterns = shutil.ignore_patterns(*NOT_COPIED, *also_ignored)
    shutil.copytree(source, dest, ignore=lambda folder, names: set(patterns(folder, names)) | {
        name for name in names if not os.path.isfile(os.path.join(folder, name))
        and not os.path.isdir(os.path.join(folder, name))})


def _build(dest: Path, selected: list[Exercise], root: Path, released: list[str], before: list[str], table) -> dict:
    for name in PROJECT_PATHS:
        if (root / name).is_dir():
            copy_folder(root / name, dest / name)
        elif (root / name).is_file():
            shutil.copy2(root / name, dest / name)
    for name in INSTRUCTOR_ONLY:  # the instructor's files (hidden tests among them) stay with the instructor
        shutil.rmtree(dest / name) if (dest / name).is_dir() else (dest / name).unlink(missing_ok=True)
    every = load_exercises(root, table)
    stubbed, names, removed = [e for e in every if e.id not in released], {}, 0
    for module in sorted({exercise.module for exercise in stubbed}):
        text = stubbed_source((root / module).read_text(encoding="utf-8"), [e for e in stubbed if e.module == module],
                              module)
        (dest / module).write_text(text, encoding="utf-8")
        names[module] = module_names(text)
    for path in sorted((dest / "chapters").glob("*.ipynb")):
        try:
            notebook = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as error:
            raise ExerciseError(f"{path.relative_to(dest)} is not a valid notebook ({error}); nothing was written") \
                from None
        stripped, count = strip_solutions(notebook)
        removed += count
        if stripped != notebook:
            path.write_text(json.dumps(stripped, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    handed_out = [exercise.id for exercise in selected]
    manifest = {"handed_out": handed_out, "released": released, "handed_out_before": before,
                "made_from": git_commit(root), "module_names": names,
                "made_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    (dest / MANIFEST).parent.mkdir(parents=True, exist_ok=True)
    (dest / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    (dest / "README.md").write_text(student_readme(selected, [e for e in every if e.id in released], dest / "chapters",
                                                   [e for e in every if e.id in before], len(every)), encoding="utf-8")
    return {"handed_out": handed_out, "stubbed": [e.id for e in stubbed], "released": released,
            "solution_cells_removed": removed}


def strip_solutions(notebook: dict) -> tuple[dict, int]:
    """The notebook without its cells tagged "solution" (answers to graded exercises; "self-check" cells stay) and
    with every output cleared; and how many cells went."""
    kept = [copy.deepcopy(cell) for cell in notebook.get("cells", [])
            if SOLUTION_TAG not in cell.get("metadata", {}).get("tags", [])]
    for cell in kept:
        if cell.get("cell_type") == "code":
            cell["outputs"], cell["execution_count"] = [], None
    return {**notebook, "cells": kept}, len(notebook.get("cells", [])) - len(kept)


def _chapter_list(chapters: Path, guide_note: bool) -> str:
    """A link to each chapter NN_title.ipynb, by its first line ("Chapter 03 — Attention, two ways"), the
    instructors' guide apart."""
    links, guides = [], []
    for path in sorted(chapters.glob("[0-9][0-9]_*.ipynb")):
        try:
            title = "".join(json.loads(path.read_text(encoding="utf-8"))["cells"][0]["source"]).strip().splitlines()[0]
        except (OSError, ValueError, KeyError, IndexError, TypeError):
            title = ""
        title = title.lstrip("# ").strip() or path.stem
        if path.name.endswith("for_instructors.ipynb"):
            guides.append(title)
        else:
            links.append(f"- [{title}](chapters/{path.name})")
    note = f"\n\n({guides[0]} is your instructor's guide: the course does not need it.)" if guides else ""
    return "\n".join(links) + (note if guide_note else "")


def student_readme(handed_out: list[Exercise], released: list[Exercise], chapters: Path, before=(),
                   exercise_count: int | None = None) -> str:
    """The README of an edition (templates/): where to start, how to check an exercise, bring last week's work and hand
    in, with the exercises handed out; a solutions edition (every answer released) gets one of its own."""
    if not handed_out and len(released) == exercise_count:
        return string.Template((TEMPLATES / "solutions_README.md").read_text(encoding="utf-8")).substitute(
            chapters=_chapter_list(chapters, guide_note=False))
    exercises = "This edition hands out no exercise: nothing in it is graded.\n\n"
    if handed_out:
        exercises = ("The exercises handed out in this edition, which your instructor grades. Each is one function:\n"
                     "its `def` line and docstring are there, and its body raises `NotImplementedError` until you\n"
                     "write it.\n\n| exercise | what | the function you write | points | check it with |\n"
                     "|---|---|---|---|---|\n" + "".join(
                         f"| {e.id} | {e.title} | `{e.function}` in `{e.module}` | {e.points} | "
                         f"`python -m pytest -m {e.marker}` |\n" for e in handed_out) + "\n")
    if released:
        exercises += (f"The answers to exercise(s) {', '.join(_ids(released))} are included (your instructor released "
                      f"them).\n")
    if before:
        exercises += (f"Your own answers to exercise(s) {', '.join(_ids(before))} come from an earlier edition: bring "
                      f"them\nwith carry-over (below). Until then the tests and chapter cells that need them are "
                      f"blocked.\n")
    return string.Template((TEMPLATES / "student_README.md").read_text(encoding="utf-8")).substitute(
        exercises=exercises, chapters=_chapter_list(chapters, guide_note=True),
        first=handed_out[0].marker if handed_out else "ex1_1")


# ----------------------------------------------------------------------
# carry-over: a student's functions from last week's copy into this week's edition


def carry_over(old: Path, new: Path) -> tuple[list[str], dict[str, str]]:
    """Copy into the edition at `new` each exercise function the student wrote in their copy `old` (an earlier week's
    edition), where `new` still has its stub. A function is taken alone, as the grader takes it: an error elsewhere in
    its file does not stop it. Both copies (their edition.json too) are checked before anything is written, and the
    changed files of `new` are written aside, then moved into place together: an error or a stop leaves `new` as it
    was, or, once the moves are done, complete. Returns (IDs carried over, {ID: why not})."""
    from minitorch.exercises.grader.sandboxed import student_function as found

    for folder, what in ((old, "OLD"), (new, "NEW")):
        if not str(folder).strip():  # '' is never the current folder (an instructor's checkout holds every answer)
            raise ExerciseError(f"carry-over: {what} is empty; name the folder of your copy")
        check_readable(Path(folder), folder, f"carry-over: {what}", ExerciseError)
        if not (Path(folder) / "minitorch" / "__init__.py").is_file():
            raise ExerciseError(f"carry-over: {what} {folder} is not a copy of the book (no minitorch/ in it); name "
                                f"the folder of your copy (unzip a .zip first)")
        try:
            manifest = read_manifest_data(Path(folder))
        except ExerciseError as error:
            raise ExerciseError(f"carry-over: {what}'s {error}; nothing was carried over") from None
        if manifest is None and what == "OLD":  # the full book: its functions are the reference answers
            raise ExerciseError(f"carry-over: OLD {folder} has no {MANIFEST}, so it is no student edition (the "
                                f"book's own checkout holds every answer); name your copy of an earlier edition")
    remove_abandoned_builds(Path(os.path.realpath(new)).parent)  # a killed run's: this one may write nothing
    carried, not_carried = [], {}
    changed: dict[str, str] = {}  # module -> its new text, written only once every function is read
    for exercise in load_exercises(new):
        target = Path(new) / exercise.module
        text = changed.get(exercise.module) or _module_text(target, exercise, "NEW")
        stub = function_node(ast.parse(text), exercise.function)
        if stub is None or not is_stub(stub, exercise):
            continue
        try:
            _refuse_links(Path(old), exercise.module)
            theirs = _module_text(Path(old) / exercise.module, exercise, "OLD")
            written = found.find(theirs, exercise)
            outside = found.helpers_outside(written, module_names(text))
            if outside:  # in NEW it would be a NameError; the grader flags it the same way
                raise found.StudentFunctionError(found.HELPER_OUTSIDE, found.helper_message(exercise, outside))
        except found.StudentFunctionError as error:
            not_carried[exercise.id] = str(error)
            continue
        if is_stub(written, exercise):
            continue
        lines = found.python_lines(text)  # from its def line: the edition's decorators stay
        lines[stub.lineno - 1:stub.end_lineno] = [found.function_text(theirs, written).rstrip("\n") + "\n"]
        changed[exercise.module] = "".join(lines)
        carried.append(exercise.id)
    if changed:
        _replace_modules(Path(new), changed)
    return carried, not_carried


def _replace_modules(new: Path, changed: dict[str, str]) -> None:
    """Replace the modules `changed` ({path in `new`: text}) of the edition `new` all together: each is written in a
    folder beside `new`, then all are moved into place with stops held (`building_aside`). An error, or a stop
    before the moves, leaves `new` as it was; a stop after them is dropped, since the work is done."""
    try:
        with building_aside(new, replacing=list(changed)) as staging:
            for module, text in changed.items():
                write_atomically(staging / module, text, mode=stat.S_IMODE((new / module).stat().st_mode))
    except KeyboardInterrupt:
        if not all(_holds(new / module, text) for module, text in changed.items()):
            raise  # stopped before the moves: NEW is as it was
    except (OSError, OutputPathError) as error:
        why = error.strerror if isinstance(error, OSError) and error.strerror else error
        raise ExerciseError(f"carry-over: could not write {', '.join(changed)} in {new} ({why}); NEW is as it was: "
                            f"nothing was carried over") from None


def _holds(path: Path, text: str) -> bool:
    try:
        return path.read_text(encoding="utf-8") == text
    except (OSError, ValueError):
        return False


def _refuse_links(old: Path, module: str) -> None:
    """A StudentFunctionError if OLD's `module`, or a folder on the way to it, is a symbolic link: it could name the
    instructor's reference file, whose answers would be carried into NEW (grade refuses such a copy the same way)."""
    from minitorch.exercises.grader.sandboxed import student_function as found

    parts = Path(module).parts
    linked = next((Path(*parts[:end]) for end in range(1, len(parts) + 1) if (old / Path(*parts[:end])).is_symlink()),
                  None)
    if linked is not None:
        raise found.StudentFunctionError(found.DOES_NOT_COMPILE, f"cannot be read: OLD's {linked.as_posix()} is a "
                                                                 f"symbolic link; carry-over reads only regular files: "
                                                                 f"put the file itself in your copy")


def _module_text(path: Path, exercise: Exercise, what: str) -> str:
    """The text of a copy's module: unreadable, an ExerciseError for NEW (the edition), a StudentFunctionError for OLD
    (the student's copy: that exercise is not carried over)."""
    from minitorch.exercises.grader.sandboxed import student_function as found

    try:
        text = found.read_module(check_input_file(path, what), exercise)
        if what == "NEW":
            ast.parse(text)
        return text
    except (OSError, PathError, SyntaxError, ValueError, found.StudentFunctionError) as error:
        why = f"{error}" if isinstance(error, (PathError, found.StudentFunctionError)) else f"{path}: {error}"
        if what == "NEW":
            raise ExerciseError(f"carry-over: NEW's {why}; make the edition again") from None
        raise found.StudentFunctionError(found.DOES_NOT_COMPILE, f"cannot be read: {why}") from None
