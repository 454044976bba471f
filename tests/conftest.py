"""The tests' shared set-up. The course's part (which minitorch is tested, the exercises' markers and seed, the
``student`` fixture, the scoreboard, the per-test timeout) is the pytest plugin tests/course_plugin.py."""

from __future__ import annotations

import pytest

import course_plugin


def pytest_addhooks(pluginmanager):
    """Register the plugin once. Not ``pytest_plugins``: pytest refuses that in a conftest.py it meets during
    collection (a student's copy's, read as a folder of tests), and the plugin must live to name that conftest."""
    if not pluginmanager.is_registered(course_plugin):
        pluginmanager.register(course_plugin, "course_plugin")


@pytest.fixture(scope="session")
def quick_book(tmp_path_factory):
    """The HTML book built in quick mode, once per session: (its folder, the chapters that failed). Building it
    runs every chapter of the project under test top to bottom (tests/test_chapters.py reads that, and
    tests/tools/test_html_book.py the pages), so the suite runs each chapter once, not twice."""
    from minitorch.tools.book.build import build_book

    out = tmp_path_factory.mktemp("quick") / "book"
    failures = build_book(out, quick=True, jobs=2, keep_going=True, report=lambda line: None)
    return out, failures
