"""Shared pytest set-up: markers for exercises, chapters and slow tests.

Markers (registered here, since the repository keeps no pytest.ini):
- ``@pytest.mark.exercise("2.3")``: the test grades exercise 2.3; it also gets
  the markers ``ex2_3`` and ``ch02`` so that ``pytest -m ex2_3`` or
  ``pytest -m ch02`` selects it.
- ``@pytest.mark.slow``: takes more than a few seconds; skip with ``-m "not slow"``.
"""

from __future__ import annotations

import os

import pytest


def pytest_configure(config):
    config.addinivalue_line("markers", "exercise(id): the test grades exercise `id`, e.g. '2.3'")
    config.addinivalue_line("markers", "slow: takes more than a few seconds (deselect with -m 'not slow')")


def pytest_collection_modifyitems(config, items):
    for item in items:
        for mark in item.iter_markers("exercise"):
            exercise_id = str(mark.args[0])
            chapter = int(exercise_id.split(".")[0])
            item.add_marker(getattr(pytest.mark, "ex" + exercise_id.replace(".", "_")))
            item.add_marker(getattr(pytest.mark, f"ch{chapter:02d}"))


@pytest.fixture
def exercise_seed() -> int:
    """The seed of randomised graded tests (MINITORCH_EXERCISE_SEED, default 0)."""
    return int(os.environ.get("MINITORCH_EXERCISE_SEED", "0"))
