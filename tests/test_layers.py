"""The library's layers: the engine imports nothing from the paper, the fast path or the tooling; the paper
nothing from the fast path or the tooling; the fast path nothing from the tooling; and no module imports
another that imports it back (checked in fresh interpreters). The fast path is opt-in: only the tooling
(the commands that switch it on) imports it."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "minitorch"
LAYER_OF_FOLDER = {"": 0, "paper": 1, "fast": 2, "exercises": 3, "tools": 3}
LAYER_NAMES = ("the engine", "the paper", "the fast path", "the tooling")


def layer_of(module: str) -> int:
    parts = module.split(".")
    return LAYER_OF_FOLDER.get(parts[1], 0) if len(parts) > 1 and parts[1] in LAYER_OF_FOLDER else 0


def module_name(path: Path) -> str:
    relative = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
    return ".".join(parts)


def imported_modules(path: Path) -> set[str]:
    """Every minitorch module `path` imports, at module level or inside functions."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("minitorch"):
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("minitorch"))
    return found


SOURCES = sorted(path for path in PACKAGE.rglob("*.py") if path.name != "__main__.py" or path.parent != PACKAGE)


@pytest.mark.parametrize("path", SOURCES, ids=lambda path: str(path.relative_to(PACKAGE)))
def test_a_module_imports_only_from_its_own_layer_and_the_ones_before_it(path):
    own = layer_of(module_name(path))
    later = sorted(name for name in imported_modules(path) if layer_of(name) > own)
    assert not later, (f"{path.relative_to(PACKAGE.parent)} belongs to {LAYER_NAMES[own]} but imports {later} from a "
                       f"later layer; move the code or turn the dependency around")


def test_at_most_twelve_modules_sit_directly_in_the_package():
    top = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert len(top) <= 12, f"minitorch/ holds {len(top)} modules directly ({top}); put the rest in a subpackage"


@pytest.mark.parametrize("module", sorted({module_name(path) for path in SOURCES if path.name != "__main__.py"}))
def test_every_module_imports_on_its_own_in_a_fresh_interpreter(module):
    """An import cycle held together by import order breaks when a module is imported first."""
    completed = subprocess.run([sys.executable, "-c", f"import {module}"], cwd=PACKAGE.parent, capture_output=True,
                               text=True, timeout=120)
    assert completed.returncode == 0, f"import {module} on its own fails:\n{completed.stderr[-2000:]}"
