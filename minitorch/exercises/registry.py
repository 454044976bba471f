"""The graded exercises: where they are and what a stub says (chapter 00).

An exercise is a region of library code between two marker lines (X = its chapter)::

    # BEGIN EXERCISE X.Y
    ...the reference solution...
    # END EXERCISE X.Y

The region must be a block of statements at one indentation level, so that it can be replaced
wholesale. The student edition (`minitorch.exercises.edition`) replaces it by one line, at the BEGIN
line's indentation::

    raise NotImplementedError("Exercise X.Y (chapter 0X): <title>. Write it in minitorch/<file>.py
                               between the BEGIN/END EXERCISE X.Y markers; check with: ...")

and keeps both markers, so the student knows where to write and the edition can be made again
from a copy. The same ID names the chapter's exercise, the test marker (``pytest -m exX_Y``) and
the stub's error; tests/conftest.py reads the table `EXERCISES` below for titles and points.

This module uses only the standard library: the tests' conftest and the grader load it by path,
without importing the minitorch under test.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the project this file belongs to

# Exercise ID -> (title, points). Every region in minitorch/ needs an entry, and every entry a region.
EXERCISES = {
    "1.1": ("the backward rule of mul", 1),
    "1.2": ("topological_order, the order in which backward visits the graph", 3),
    "1.3": ("the backward rule of exp", 1),
    "1.4": ("the backward rule of log", 1),
    "2.1": ("unbroadcast, the gradient of broadcasting", 3),
    "2.2": ("the backward rule of matmul", 3),
    "2.3": ("the softmax, forward and fused backward", 3),
    "2.4": ("the backward rule of sum", 2),
    "2.5": ("the Adam step", 3),
    "3.1": ("the causal mask", 1),
    "3.2": ("softmax attention", 2),
    "3.3": ("ReLU attention", 2),
    "3.4": ("the BOS mass at non-trigger rows", 2),
    "3.5": ("Gu et al.'s sink score alpha_k", 2),
    "4.1": ("the task's targets", 2),
    "5.1": ("the softmax construction: a sink of strength c", 2),
    "6.1": ("the ReLU construction of Theorem 3", 2),
    "9.1": ("the share of heads that sink, Sink_k^eps", 1),
}

# Exercises renumbered since an edition was handed out (old ID -> current ID): a copy of that edition is
# graded by the exercise it holds. 2026-12-04 (commit db837b9): Adam became 2.5 and Gu et al.'s alpha 3.5,
# to follow the book's order.
RENAMED = {"7.1": "2.5", "8.1": "3.5"}

# What a copy of the project holds (the repository's fixed top level); missing entries are skipped.
PROJECT_PATHS = ("README.md", "requirements.txt", "LICENSE", ".gitignore", ".ci",
                 "chapters", "minitorch", "tests", "figures")
NOT_COPIED = ("__pycache__", "*.pyc", ".ipynb_checkpoints", ".pytest_cache")  # the trained models are copied:
# chapter 09 loads them instead of training for a quarter of an hour
# The instructor's own tests, which a student edition leaves out: they hold regular expressions of every answer
# (ANSWER_SIGNATURES), or graft the full book's answers, which an edition does not have.
INSTRUCTOR_ONLY = ("tests/exercises/test_answer_leaks.py", "tests/exercises/test_grafting.py",
                   "tests/exercises/test_grafted_edition.py")
MAX_UNPACKED_BYTES = 200 << 20  # a returned .zip that would unpack to more is refused (the project is a few MiB)
MANIFEST = Path("minitorch") / "exercises" / "edition.json"  # in a student edition: what it handed out
SOLUTION_TAG = "solution"  # notebook cells with this tag answer a graded exercise; the student edition drops them
LINE_LENGTH = 120  # the book's longest line of code, stubs included (tests/test_line_length.py)
SELF_CHECK_TAG = "self-check"  # the answer to a predict-then-check question: the student edition keeps it

_ID = re.compile(r"[1-9]\.[1-9][0-9]*")
_MARKER_LIKE = re.compile(r"^(?P<indent>[ \t]*)#\s*(?P<kind>BEGIN|END)\s+EXERCISE\b\s*(?P<id>\S*)", re.IGNORECASE)
_MARKER = re.compile(r"^(?P<indent>[ \t]*)# (?P<kind>BEGIN|END) EXERCISE (?P<id>\S+)[ \t]*$")


def marker_in(line: str, strict: bool = False):
    """The exercise marker `line` holds, as a match with groups indent, kind (BEGIN/END) and id; None if it holds
    none. Lenient by default (any spacing or case: how a student's copy may have it); `strict` asks for the exact
    form the library's own files must use."""
    return (_MARKER if strict else _MARKER_LIKE).match(line.rstrip("\r\n"))


class ExerciseError(ValueError):
    """A marker, a region or the metadata table is malformed; the message says where."""


@dataclass(frozen=True)
class Exercise:
    """One graded region: its ID, metadata, and where it lives (1-based marker lines)."""

    id: str
    title: str
    points: int
    path: Path
    begin_line: int
    end_line: int
    indent: str

    @property
    def chapter(self) -> int:
        return int(self.id.split(".")[0])

    @property
    def marker(self) -> str:
        """The pytest marker selecting its tests: 2.3 -> ex2_3."""
        return "ex" + self.id.replace(".", "_")

    def location(self, root: Path = ROOT) -> str:
        """'minitorch/softmax.py:36', the BEGIN line."""
        return f"{_relative(self.path, root)}:{self.begin_line}"

    def stub_message(self, root: Path = ROOT) -> str:
        return stub_message(self.id, self.title, _relative(self.path, root))


def read_manifest_data(root: Path) -> dict | None:
    """The manifest of the edition at `root` ({"handed_out": [IDs], "made_from", "made_at", "files"}), checked;
    None without one (the full book); ExerciseError naming the file if it is not a valid manifest."""
    path = Path(root) / MANIFEST
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        manifest["handed_out"] = [str(exercise_id) for exercise_id in manifest["handed_out"]]
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as error:
        raise ExerciseError(f"{path} is not a valid edition manifest ({error})") from None
    return manifest


def sort_key(exercise_id: str) -> tuple[int, ...]:
    """'2.10' after '2.9': compare IDs as numbers."""
    return tuple(int(part) for part in exercise_id.split("."))


def stub_message(exercise_id: str, title: str, relative_path: str) -> str:
    """The error a stub raises. tests/conftest.py recognises it by this exact wording."""
    return (f"Exercise {exercise_id} (chapter {int(exercise_id.split('.')[0]):02d}): {title}. "
            f"Write it in {relative_path} between the BEGIN/END EXERCISE {exercise_id} markers; "
            f"check with: python -m pytest -m ex{exercise_id.replace('.', '_')}")


# The stub's error as it appears in any text (a traceback, a notebook's CellExecutionError):
STUB_ERROR = re.compile(r"Exercise (\d+\.\d+) \(chapter \d+\): [^\n]*? between the BEGIN/END EXERCISE \1 markers"
                        r"(?:; check with: python -m pytest -m ex\d+_\d+)?")


_ANSI_COLOUR = re.compile(r"\x1b\[[0-9;]*m")  # notebook tracebacks come coloured


def stub_error(exception: BaseException | None) -> tuple[str, str] | None:
    """(exercise ID, message) of the exercise stub that raised `exception`, also when the stub's
    error is quoted in the text of another error (a notebook's CellExecutionError, a pytest.fail)
    or is its cause; None if no stub is involved."""
    seen = set()
    while exception is not None and id(exception) not in seen:
        seen.add(id(exception))
        found = list(STUB_ERROR.finditer(_ANSI_COLOUR.sub("", str(exception))))
        if found:
            return found[-1][1], found[-1][0]  # in a quoted traceback the error raised comes last
        exception = exception.__cause__ or exception.__context__
    return None


def _relative(path: Path, root: Path) -> str:
    try:
        return Path(path).resolve().relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        return Path(path).as_posix()


# ----------------------------------------------------------------------
# finding and checking the regions


@dataclass(frozen=True)
class _Region:
    id: str
    path: Path
    begin_line: int
    end_line: int
    indent: str


def _indentation(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def scan_file(path: Path) -> list[_Region]:
    """The exercise regions of one source file, checked for well-formed, paired markers."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    regions, open_region = [], None  # open_region: (id, BEGIN line number, indent)
    for number, line in enumerate(lines, start=1):
        if not marker_in(line):
            continue
        where = f"{path}:{number}"
        marker = marker_in(line, strict=True)
        if not marker:
            raise ExerciseError(f"{where}: malformed exercise marker {line.strip()!r}; "
                                f"write exactly '# BEGIN EXERCISE X.Y' or '# END EXERCISE X.Y'")
        kind, exercise_id, indent = marker["kind"], marker["id"], marker["indent"]
        if not _ID.fullmatch(exercise_id):
            raise ExerciseError(f"{where}: exercise ID {exercise_id!r} is not of the form X.Y "
                                f"with X a chapter in 1..9 (e.g. 3.2)")
        if kind == "BEGIN":
            if open_region:
                raise ExerciseError(f"{where}: BEGIN EXERCISE {exercise_id} inside exercise {open_region[0]} "
                                    f"(opened at line {open_region[1]}); regions cannot nest")
            open_region = (exercise_id, number, indent)
            continue
        if not open_region:
            raise ExerciseError(f"{where}: END EXERCISE {exercise_id} without a BEGIN EXERCISE {exercise_id} before it")
        opened_id, begin, begin_indent = open_region
        if exercise_id != opened_id:
            raise ExerciseError(f"{where}: END EXERCISE {exercise_id} closes BEGIN EXERCISE {opened_id} "
                                f"(line {begin}); the IDs must match")
        if indent != begin_indent:
            raise ExerciseError(f"{where}: END EXERCISE {exercise_id} is not indented like its BEGIN (line {begin})")
        _check_block(path, lines, exercise_id, begin, number, begin_indent)
        regions.append(_Region(exercise_id, Path(path), begin, number, begin_indent))
        open_region = None
    if open_region:
        raise ExerciseError(f"{path}:{open_region[1]}: BEGIN EXERCISE {open_region[0]} has no END EXERCISE "
                            f"{open_region[0]}")
    return regions


def _check_block(path, lines, exercise_id, begin, end, indent) -> None:
    """A region must be statements at the BEGIN line's indentation (deeper only inside them)."""
    body = [(number, line) for number, line in enumerate(lines[begin:end - 1], start=begin + 1) if line.strip()]
    code = [(number, line) for number, line in body if not line.lstrip().startswith("#")]
    if not code:
        raise ExerciseError(f"{path}:{begin}: exercise {exercise_id} has no code between its markers")
    for number, line in body:
        if not _indentation(line).startswith(indent):
            raise ExerciseError(f"{path}:{number}: line of exercise {exercise_id} is indented less than its "
                                f"BEGIN line; a region must be one block at one indentation level")
    if _indentation(code[0][1]) != indent:
        raise ExerciseError(f"{path}:{code[0][0]}: exercise {exercise_id} starts deeper than its BEGIN line; "
                            f"the first statement must be at the BEGIN line's indentation")


def find_regions(root: Path = ROOT) -> list[_Region]:
    """Every region in root/minitorch/**/*.py (the course's own code, minitorch/exercises/, holds none),
    with unique IDs."""
    package = Path(root) / "minitorch"
    if not (package / "__init__.py").is_file():
        raise ExerciseError(f"{root} is not a minitorch project: {package / '__init__.py'} does not exist")
    regions, first_seen = [], {}
    for path in sorted(package.rglob("*.py")):
        if path.relative_to(package).parts[0] == "exercises":
            continue
        for region in scan_file(path):
            if region.id in first_seen:
                other = first_seen[region.id]
                raise ExerciseError(f"exercise {region.id} is marked twice: {other.path}:{other.begin_line} "
                                    f"and {region.path}:{region.begin_line}; IDs must be unique")
            first_seen[region.id] = region
            regions.append(region)
    return regions


def load_exercises(root: Path = ROOT, metadata: dict | None = None) -> list[Exercise]:
    """The regions joined with their metadata, in ID order; ExerciseError if they disagree."""
    metadata = EXERCISES if metadata is None else metadata
    regions = {region.id: region for region in find_regions(root)}
    for exercise_id, (title, points) in metadata.items():
        if not _ID.fullmatch(exercise_id):
            raise ExerciseError(f"EXERCISES in minitorch/exercises/registry.py: ID {exercise_id!r} is not of the "
                                f"form X.Y with X a chapter in 1..9")
        if not isinstance(title, str) or not title.strip() or "\n" in title:
            raise ExerciseError(f"EXERCISES: exercise {exercise_id} needs a one-line title, got {title!r}")
        if not isinstance(points, int) or points <= 0:
            raise ExerciseError(f"EXERCISES: exercise {exercise_id} needs a positive whole number of points, "
                                f"got {points!r}")
    unlisted = sorted(set(regions) - set(metadata), key=sort_key)
    if unlisted:
        where = ", ".join(f"{regions[i].id} ({regions[i].path.name}:{regions[i].begin_line})" for i in unlisted)
        raise ExerciseError(f"exercise region(s) {where} have no entry in EXERCISES in "
                            f"minitorch/exercises/registry.py; add a (title, points) for each")
    without_region = sorted(set(metadata) - set(regions), key=sort_key)
    if without_region:
        raise ExerciseError(f"EXERCISES in minitorch/exercises/registry.py lists {', '.join(without_region)}, but no "
                            f"'# BEGIN EXERCISE' region in {Path(root) / 'minitorch'} has that ID")
    exercises = [Exercise(region.id, *metadata[region.id], region.path, region.begin_line, region.end_line,
                          region.indent) for region in regions.values()]
    for exercise in exercises:
        _check_stub_compiles(exercise, root)
    return sorted(exercises, key=lambda exercise: sort_key(exercise.id))


def _check_stub_compiles(exercise: Exercise, root: Path) -> None:
    text = exercise.path.read_text(encoding="utf-8")
    try:
        compile(stub_source(text, [exercise], root), str(exercise.path), "exec")
    except SyntaxError as error:
        raise ExerciseError(f"{exercise.location(root)}: replacing exercise {exercise.id} by its stub breaks the "
                            f"file ({error.msg}, line {error.lineno}); a region must be a whole block of "
                            f"statements") from None



def stub_source(text: str, exercises: list[Exercise], root: Path = ROOT) -> str:
    """`text` (one file's source) with the regions of `exercises` replaced by their stubs: one
    ``raise NotImplementedError("...")``, its message split over lines of at most LINE_LENGTH characters."""
    def stub(exercise: Exercise) -> str:
        return raise_statement("NotImplementedError", exercise.stub_message(root), exercise.indent)
    return replace_regions(text, exercises, stub)


def raise_statement(exception: str, message: str, indent: str) -> str:
    """The code ``raise exception("message")``, to be written at `indent`: one line, or the message split over
    several so that no line is longer than LINE_LENGTH. (Returned without the indent.)"""
    one_line = f"raise {exception}({json.dumps(message, ensure_ascii=False)})"
    if len(indent + one_line) <= LINE_LENGTH:
        return one_line
    width = LINE_LENGTH - len(indent) - len("    )")  # what one line of the message may take
    literals = [json.dumps(piece, ensure_ascii=False) for piece in _split_words(message, width)]
    return f"raise {exception}(\n" + "\n".join(f"    {literal}" for literal in literals) + ")"


def _split_words(message: str, width: int) -> list[str]:
    """`message` in pieces that join back to it, each (as a JSON string literal) at most `width` long where a
    word allows: every piece but the last ends with its space."""
    pieces = [""]
    for word in message.split(" "):
        candidate = f"{pieces[-1]} {word}" if pieces[-1] else word
        if pieces[-1] and len(json.dumps(candidate + " ", ensure_ascii=False)) > width:
            pieces[-1] += " "
            pieces.append(word)
        else:
            pieces[-1] = candidate
    return pieces


def replace_regions(text: str, exercises: list[Exercise], body_of) -> str:
    """`text` (one file's source) with the body of each region of `exercises` replaced by ``body_of(exercise)``
    (code written at indentation 0; it is indented to the region's); the markers stay."""
    lines = text.splitlines(keepends=True)
    for exercise in sorted(exercises, key=lambda e: e.begin_line, reverse=True):  # bottom up: numbers stay valid
        body = [exercise.indent + line if line.strip() else "\n" for line in body_of(exercise).splitlines()]
        lines[exercise.begin_line:exercise.end_line - 1] = [line.rstrip("\n") + "\n" for line in body]
    return "".join(lines)


def select(exercises: list[Exercise], only=(), chapters=()) -> list[Exercise]:
    """The exercises named in `only` plus those of `chapters`; all of them if both are empty."""
    known = {exercise.id for exercise in exercises}
    unknown = [exercise_id for exercise_id in only if exercise_id not in known]
    if unknown:
        raise ExerciseError(f"unknown exercise ID(s) {', '.join(unknown)}; the exercises are "
                            f"{', '.join(sorted(known, key=sort_key))}")
    with_exercises = sorted({exercise.chapter for exercise in exercises})
    empty = [chapter for chapter in chapters if chapter not in with_exercises]
    if empty:
        raise ExerciseError(f"chapter(s) {', '.join(map(str, empty))} have no exercises; chapters with exercises: "
                            f"{', '.join(map(str, with_exercises))}")
    if not only and not chapters:
        return list(exercises)
    return [exercise for exercise in exercises if exercise.id in only or exercise.chapter in chapters]
