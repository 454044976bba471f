"""The libraries a student's worker runs: one per exercise, holding the student's code for that exercise only
(chapter 00, "How grading works").

For exercise X the library is the grader's own library in which X's region holds the student's code
and every other region holds its stand-in (`minitorch.exercises.services`), which asks the grader for
that exercise's result. Nothing else of the student's runs: code outside the regions is the grader's,
and speed copies of answers are removed, as in the student edition. A library holds no reference
answer, so the worker that runs it may read all of it.

The student's regions are found leniently (`student_regions`): a region whose END marker is missing
ends where the grader's code after that region begins, at the next marker, or at the end of its block,
and says so; a region under the ID an earlier edition gave it (`registry.RENAMED`) is graded as the
exercise it is now. Each finding is a note in the report, which the student's feedback shows.
"""

from __future__ import annotations

import ast
import difflib
import importlib.util
import os
import py_compile
import re
import shutil
import subprocess
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from minitorch.exercises.edition import COMPARED, fingerprint, outside_regions, project_files, remove_speed_copies
from minitorch.exercises.registry import (MANIFEST, RENAMED, STUB_ERROR, Exercise, ExerciseError, load_exercises,
                                          marker_in, read_manifest_data, replace_regions, sort_key)
from minitorch.exercises.services import STAND_INS

WORKER_FILES = ("worker.py", "channel.py")  # beside the libraries: the worker runs them by path
# What of the course's own package a worker needs: probes and the channel (and what the package's
# __init__ imports). The grading modules stay out.
WORKER_COURSE_FILES = ("__init__.py", "channel.py", "probes.py", "registry.py", "edition.py")

# Kinds of finding, one flag each in the gradebook.
DOES_NOT_COMPILE, NOT_FOUND = "does not compile", "region not found"


@dataclass
class GraftReport:
    """What building a student's libraries found."""

    grafted: list[str] = field(default_factory=list)  # exercises whose library was built: their tests run
    stubs: list[str] = field(default_factory=list)  # regions still holding the edition's stub (not run)
    not_compiling: dict[str, str] = field(default_factory=dict)  # ID -> the compiler's message
    not_found: dict[str, str] = field(default_factory=dict)  # ID -> why
    notes: dict[str, str] = field(default_factory=dict)  # ID -> a lenient reading (END missing, renamed ID)
    edited_outside: dict[str, str] = field(default_factory=dict)  # path -> '+A -D lines', 'added', ...
    handed_out: list[str] | None = None  # what the copy's own manifest says it was handed (never scored)


@dataclass
class StudentRegion:
    id: str  # as the copy names it
    lines: list[str]  # the body, as in the copy
    path: str  # relative to the copy
    begin_line: int
    indent: str
    note: str = ""


# ----------------------------------------------------------------------
# finding the student's regions


def student_regions(project: Path, grader_exercises: dict[str, Exercise]) -> dict[str, StudentRegion]:
    """Every region in the copy's minitorch/ (its own package exercises/ aside), by the current exercise ID."""
    found: dict[str, StudentRegion] = {}
    package = Path(project) / "minitorch"
    for path in sorted(package.rglob("*.py")):
        if path.relative_to(package).parts[0] == "exercises" or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for region in scan_leniently(text, path.relative_to(project).as_posix(), grader_exercises):
            current = RENAMED.get(region.id, region.id)
            if current != region.id:
                region.note = _join(region.note, f"graded as exercise {current}: this copy calls it {region.id} "
                                                 f"(an earlier edition's number)")
            kept = found.get(current)
            if kept is None or (region.id == current and kept.id != current):
                found[current] = region
    return found


def scan_leniently(text: str, where: str, grader_exercises: dict[str, Exercise]) -> list[StudentRegion]:
    """The regions of one file of a copy, tolerating a missing END marker: the region then ends before the
    grader's first line after that region, the next marker line, or the first line indented less than its
    BEGIN, whichever comes first, and carries a note saying where."""
    lines = text.splitlines(keepends=True)
    regions, open_region = [], None  # open_region: [id, begin index, indent, body]

    def close(end: int, note: str = "") -> None:
        exercise_id, begin, indent = open_region
        regions.append(StudentRegion(exercise_id, lines[begin + 1:end], where, begin + 1, indent, note))

    for index, line in enumerate(lines):
        marker = marker_in(line)
        if open_region is not None:
            exercise_id, begin, indent = open_region
            if marker and marker["kind"].upper() == "END" and marker["id"] == exercise_id:
                close(index)
                open_region = None
                continue
            if marker or _ends_block(line, indent) or _grader_code_after(grader_exercises.get(
                    RENAMED.get(exercise_id, exercise_id)), line, indent):
                close(index, f"its END EXERCISE {exercise_id} marker is missing in {where}; the region was taken to "
                             f"end at line {index} (put the marker back)")
                open_region = None
        if marker and marker["kind"].upper() == "BEGIN" and open_region is None:
            open_region = [marker["id"], index, marker["indent"]]
    if open_region is not None:
        close(len(lines), f"its END EXERCISE {open_region[0]} marker is missing in {where}; the region was taken to "
                          f"end at the end of the file")
    return regions


def _ends_block(line: str, indent: str) -> bool:
    """A non-blank line indented less than the region's BEGIN: the region's block has ended."""
    stripped = line.lstrip(" \t")
    return bool(stripped.strip()) and len(line) - len(stripped) < len(indent) and not stripped.startswith("#")


def _grader_code_after(exercise: Exercise | None, line: str, indent: str) -> bool:
    """`line` is the grader's first line of code after the region (at the region's indentation)."""
    if exercise is None or not line.strip():
        return False
    after = [text for text in exercise.path.read_text(encoding="utf-8").splitlines()[exercise.end_line:]
             if text.strip() and not text.strip().startswith("#")]
    return bool(after) and after[0].strip() == line.strip() and line.startswith(indent) and \
        not line[len(indent):].startswith((" ", "\t"))


def _join(*notes: str) -> str:
    return "; ".join(note for note in notes if note)


# ----------------------------------------------------------------------
# building the libraries


def stand_in_sources(grader_root: Path, exercises: list[Exercise]) -> dict[str, str]:
    """Relative path -> source, for every module of the grader's library a worker needs, with every region
    holding its stand-in and every speed copy removed."""
    by_file: dict[Path, list[Exercise]] = {}
    for exercise in exercises:
        by_file.setdefault(exercise.path.resolve(), []).append(exercise)
    package, sources = Path(grader_root) / "minitorch", {}
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(grader_root).as_posix()
        inside = path.relative_to(package).parts
        if inside[0] == "tools" or (inside[0] == "exercises" and inside[-1] not in WORKER_COURSE_FILES):
            continue
        text = path.read_text(encoding="utf-8")
        if path.resolve() in by_file:
            text = replace_regions(text, by_file[path.resolve()], lambda exercise: STAND_INS[exercise.id])
        if inside[0] != "exercises":  # the course's own code holds no speed copy (only its documentation)
            text = remove_speed_copies(text, [exercise.id for exercise in exercises], relative)
        sources[relative] = text
    return sources


def prepare_base(grader_root: Path, folder: Path) -> Path:
    """Write the stand-in library (every region a stand-in) to `folder`, compiled, with the worker's scripts
    beside it: what every student's libraries are made of. It holds no answer, and is readable by all."""
    folder = Path(folder)
    sources = stand_in_sources(grader_root, load_exercises(grader_root))
    for relative, text in sources.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
        path.write_text(text, encoding="utf-8")
        # checked against the source's hash, so that a library whose file differs never runs a stale .pyc
        py_compile.compile(str(path), cfile=importlib.util.cache_from_source(str(path)), doraise=True,
                           invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
    for name in WORKER_FILES:
        shutil.copyfile(Path(grader_root) / "minitorch" / "exercises" / name, folder / name)
    for path in [folder, *folder.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    return folder


def build_libraries(grader_root: Path, project: Path, exercise_ids, dest: Path, edition_files=None,
                    base: Path | None = None) -> GraftReport:
    """Write dest/<X>/minitorch/... for each exercise X of `exercise_ids` whose region the copy at `project`
    holds and compiles (and is not the stub), and dest/worker.py, dest/channel.py; report what was found.
    Every file but X's own is a hard link into `base` (`prepare_base`; made in dest if not given)."""
    grader_root, dest = Path(grader_root).resolve(), Path(dest)
    exercises = {exercise.id: exercise for exercise in load_exercises(grader_root)}
    unknown = [exercise_id for exercise_id in exercise_ids if exercise_id not in exercises]
    if unknown:
        raise ExerciseError(f"unknown exercise ID(s) {', '.join(unknown)}; the grader's are {', '.join(exercises)}")
    base = prepare_base(grader_root, dest / ".base") if base is None else Path(base)
    theirs = student_regions(project, exercises)
    report = GraftReport()
    dest.mkdir(parents=True, exist_ok=True)
    for name in WORKER_FILES:
        _link(base / name, dest / name)
    for exercise_id in sorted(exercise_ids, key=sort_key):
        exercise, region = exercises[exercise_id], theirs.get(exercise_id)
        if region is None:
            report.not_found[exercise_id] = _why_not_found(grader_root, exercise)
            continue
        if region.note:
            report.notes[exercise_id] = region.note
        source = _graft(exercise, region, list(exercises.values()), grader_root, report)
        if source is None:
            continue
        if is_stub(region.lines, region.id):
            report.stubs.append(exercise_id)
            continue
        report.grafted.append(exercise_id)
        _write_library(dest / exercise_id, base, exercise.path.relative_to(grader_root).as_posix(), source)
    report.edited_outside = edits_outside_regions(project, grader_root, edition_files)
    try:
        manifest = read_manifest_data(project)
    except ExerciseError:
        manifest = None
    report.handed_out = None if manifest is None else manifest["handed_out"]
    return report


def _why_not_found(grader_root: Path, exercise: Exercise) -> str:
    return (f"{NOT_FOUND}: exercise {exercise.id} was not graded: no '# BEGIN EXERCISE {exercise.id}' region in the "
            f"copy's minitorch/ (it belongs in {exercise.path.relative_to(grader_root).as_posix()})")


def _graft(exercise: Exercise, region: StudentRegion, all_exercises: list[Exercise], grader_root: Path,
           report: GraftReport) -> str | None:
    """The source of the grader's file holding `exercise`, with the student's body in its region and the
    stand-ins in the others; None (and a note in `report`) if the student's body does not compile."""
    body = [line[len(region.indent):] if line.startswith(region.indent) else line.lstrip(" \t")
            for line in region.lines]
    text = exercise.path.read_text(encoding="utf-8")
    in_file = [other for other in all_exercises if other.path.resolve() == exercise.path.resolve()]
    relative = exercise.path.relative_to(grader_root).as_posix()

    def body_of(other: Exercise) -> str:
        return "".join(body) if other.id == exercise.id else STAND_INS[other.id]

    source = remove_speed_copies(replace_regions(text, in_file, body_of), [e.id for e in all_exercises], relative)
    try:
        compile(source, relative, "exec")
    except SyntaxError as error:  # line numbers of `source` are shifted by the stand-ins above the region
        begin = source.splitlines().index(f"{exercise.indent}# BEGIN EXERCISE {exercise.id}") + 1
        in_body = min(max((error.lineno or 0) - begin, 1), len(region.lines) + 1)
        report.not_compiling[exercise.id] = (f"{DOES_NOT_COMPILE}: {error.msg} (line {region.begin_line + in_body} "
                                             f"of {region.path})")
        return None
    return source


def is_stub(body: list[str], exercise_id: str) -> bool:
    """True if the region's only code is the edition's `raise NotImplementedError(<stub message>)`, on one line
    or several."""
    try:
        statements = ast.parse(textwrap.dedent("".join(body))).body
    except SyntaxError:
        return False
    if len(statements) != 1 or not isinstance(statements[0], ast.Raise):
        return False
    raised = statements[0].exc
    if not (isinstance(raised, ast.Call) and isinstance(raised.func, ast.Name)
            and raised.func.id == "NotImplementedError" and len(raised.args) == 1 and not raised.keywords
            and isinstance(raised.args[0], ast.Constant) and isinstance(raised.args[0].value, str)):
        return False
    found = STUB_ERROR.search(raised.args[0].value)
    return bool(found) and found[1] == exercise_id


def _write_library(folder: Path, base: Path, relative: str, source: str) -> None:
    """A library: the base's files linked, but `relative`, which holds `source` (and has no .pyc)."""
    for path in sorted((base / "minitorch").rglob("*")):
        target = folder / path.relative_to(base)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        else:
            _link(path, target)
    own = folder / relative
    own.unlink()
    Path(importlib.util.cache_from_source(str(own))).unlink(missing_ok=True)
    own.write_text(source, encoding="utf-8")


def _link(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:  # another file system: a copy does as well
        shutil.copyfile(source, target)


# ----------------------------------------------------------------------
# edits outside the regions (a flag, never a score)


def edits_outside_regions(project: Path, grader_root: Path, edition_files=None) -> dict[str, str]:
    """Relative path -> '+A -D lines', 'added', 'deleted' or 'changed' for each file of minitorch/ and tests/
    the student changed outside the regions. What the student received comes from the fingerprints in the
    copy's manifest, else from `edition_files` (path -> text of the edition the copy was made from, e.g. read
    from the grader's git history), else it cannot be told and nothing is flagged."""
    project = Path(project)
    theirs = set(project_files(project))
    received = _manifest_fingerprints(project)
    if received is None and edition_files is not None:
        received = {name: _fingerprint_text(name, text) for name, text in edition_files.items()}
    if received is None:
        return {}
    edits = {name: "added" for name in sorted(theirs - set(received))}
    edits.update({name: "deleted" for name in sorted(set(received) - theirs)})
    for name in sorted(theirs & set(received)):
        if fingerprint(project / name) != received[name]:
            edits[name] = _diff_stat(grader_root / name, project / name)
    return edits


def _manifest_fingerprints(project: Path) -> dict[str, str] | None:
    try:
        files = (read_manifest_data(project) or {}).get("files")
    except ExerciseError:
        return None
    return dict(files) if isinstance(files, dict) else None


def _fingerprint_text(name: str, text: str) -> str:
    import hashlib

    data = "\n".join(outside_regions(text)) if name.endswith(".py") else text
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


def _diff_stat(ours: Path, theirs: Path) -> str:
    if theirs.suffix != ".py" or not ours.is_file():
        return "changed"
    before = outside_regions(ours.read_text(encoding="utf-8", errors="replace"))
    after = outside_regions(theirs.read_text(encoding="utf-8", errors="replace"))
    diff = list(difflib.unified_diff(before, after, lineterm="", n=0))
    added = sum(1 for line in diff if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in diff if line.startswith("-") and not line.startswith("---"))
    return f"+{added} -{removed} lines"


def edition_files_at(grader_root: Path, made_from: str | None, handed_out) -> dict[str, str] | None:
    """What an edition made from the grader's commit `made_from` held in minitorch/ and tests/ outside the
    regions (read with git from the grader's checkout, speed copies of `handed_out` removed as the edition
    removes them); None if the checkout has no such commit (a bundle, or another repository)."""
    commit = (made_from or "").split("+")[0]
    if not re.fullmatch(r"[0-9a-f]{7,40}", commit):
        return None
    try:
        listing = subprocess.run(["git", "ls-tree", "-r", "--name-only", commit, "--", *COMPARED], cwd=grader_root,
                                 capture_output=True, text=True, timeout=60)
        if listing.returncode != 0:
            return None
        files = {}
        for name in listing.stdout.splitlines():
            if name == MANIFEST.as_posix() or "__pycache__" in name:
                continue
            shown = subprocess.run(["git", "show", f"{commit}:{name}"], cwd=grader_root, capture_output=True,
                                   timeout=60)
            if shown.returncode == 0:
                text = shown.stdout.decode("utf-8", "replace")
                in_library = name.endswith(".py") and name.startswith("minitorch/") and \
                    not name.startswith("minitorch/exercises/")  # where the edition removes speed copies
                files[name] = remove_speed_copies(text, handed_out or [], name) if in_library else text
    except (OSError, subprocess.SubprocessError, ExerciseError):
        return None
    return files or None


def owner_only(folder: Path) -> None:
    """Make `folder` (and what it holds) readable by its owner only."""
    for path in [folder, *folder.rglob("*")]:
        os.chmod(path, 0o700 if path.is_dir() else 0o600)
