"""The grader's trust boundary is a folder you can see (chapter 11, "How grading works").

minitorch/exercises/grader/ holds the trusted side (trusted/: the instructor's processes, where grades are
decided), the sandboxed side (sandboxed/: where a student's code runs) and the protocol between them
(channel.py). A worker's library holds the sandboxed side, the protocol and the table only; so nothing there may
import the trusted side, and the library a worker gets has no file of it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import minitorch
from minitorch.exercises.grader.trusted.worker_library import prepare_base

ROOT = Path(minitorch.__file__).resolve().parent.parent
GRADER = ROOT / "minitorch" / "exercises" / "grader"
SANDBOXED = sorted((GRADER / "sandboxed").glob("*.py")) + [GRADER / "channel.py",
                                                             ROOT / "minitorch" / "exercises" / "registry.py"]


def imports_of(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


@pytest.mark.parametrize("path", SANDBOXED, ids=lambda path: path.relative_to(ROOT).as_posix())
def test_the_sandboxed_side_and_the_protocol_import_nothing_of_the_trusted_side(path):
    crossing = sorted(name for name in imports_of(path) if name.startswith(("minitorch.exercises.grader.trusted",
                                                                             "minitorch.exercises.edition",
                                                                             "minitorch.exercises.__main__")))
    assert not crossing, (f"{path.relative_to(ROOT)} runs where a student's code runs but imports {crossing}, "
                          f"of the grader's trusted side")


def test_a_workers_library_holds_no_file_of_the_trusted_side_and_no_instructor_file(tmp_path):
    base = prepare_base(ROOT, tmp_path / "base")
    held = {path.relative_to(base).as_posix() for path in base.rglob("*.py")}
    assert not [name for name in held if "/grader/trusted/" in name or name.endswith(("edition.py", "__main__.py"))
                and "exercises" in name], sorted(held)
    assert "minitorch/fast/hand_fused.py" not in held and not any(name.startswith("minitorch/tools/") for name in held)
    assert {"minitorch/exercises/grader/sandboxed/worker.py", "minitorch/exercises/grader/channel.py",
            "minitorch/exercises/grader/sandboxed/stand_in.py", "minitorch/exercises/registry.py"} <= held
