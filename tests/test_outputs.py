"""Specification of minitorch.outputs: output paths refused before any work, and replacement that is whole."""

from __future__ import annotations

import os

import pytest

from minitorch.outputs import (ROOT, OutputPathError, building_aside, check_output_file, check_output_folder,
                               write_atomically)


@pytest.mark.parametrize("path, reason", [
    ("", "is empty"),
    ("/", "filesystem root"),
    (str(ROOT / "minitorch" / "out"), "the project's own minitorch/"),
    (str(ROOT / "chapters"), "the project's own chapters/"),
    (str(ROOT), "holds the project's own"),
    (str(ROOT.parent), "holds"),
])
def test_an_output_folder_that_cannot_be_right_is_refused_naming_the_option(path, reason):
    with pytest.raises(OutputPathError, match=reason) as raised:
        check_output_folder(path, option="--out")
    assert str(raised.value).startswith("--out"), f"the message should name the option: {raised.value}"


def test_an_output_folder_that_is_a_file_or_below_a_file_is_refused(tmp_path):
    (tmp_path / "taken").write_text("a file")
    with pytest.raises(OutputPathError, match="is a file, not a folder"):
        check_output_folder(tmp_path / "taken")
    with pytest.raises(OutputPathError, match="is a file, so nothing can be created below it"):
        check_output_folder(tmp_path / "taken" / "below")


def test_an_output_folder_inside_or_around_an_input_is_refused(tmp_path):
    submissions = tmp_path / "submissions"
    submissions.mkdir()
    with pytest.raises(OutputPathError, match="lies inside the input"):
        check_output_folder(submissions / "grades", inputs=[submissions])
    with pytest.raises(OutputPathError, match="holds the input"):
        check_output_folder(tmp_path, inputs=[submissions / "notebooks"])
    assert check_output_folder(tmp_path / "grades", inputs=[submissions]) == (tmp_path / "grades").resolve()


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write in any folder, so a read-only folder cannot be made")
def test_an_output_folder_in_a_read_only_folder_is_refused(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(OutputPathError, match="cannot write"):
            check_output_folder(locked / "out")
    finally:
        locked.chmod(0o700)


def test_a_missing_output_folder_in_a_missing_parent_is_accepted(tmp_path):
    assert check_output_folder(tmp_path / "a" / "b") == (tmp_path / "a" / "b").resolve()


def test_an_output_file_that_is_a_folder_is_refused(tmp_path):
    with pytest.raises(OutputPathError, match="--json .*is a folder"):
        check_output_file(tmp_path, option="--json")


def test_write_atomically_replaces_the_file_and_leaves_nothing_beside_it(tmp_path):
    target = tmp_path / "results.json"
    target.write_text("old")
    write_atomically(target, "new")
    assert target.read_text() == "new"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["results.json"], "a temporary file was left behind"


def test_building_aside_replaces_the_folder_whole_or_not_at_all(tmp_path):
    target = tmp_path / "book"
    target.mkdir()
    (target / "old.html").write_text("old")
    with pytest.raises(RuntimeError):
        with building_aside(target) as staging:
            (staging / "new.html").write_text("new")
            raise RuntimeError("the build failed")
    assert sorted(path.name for path in target.iterdir()) == ["old.html"], "a failed build changed the old folder"
    with building_aside(target) as staging:
        (staging / "new.html").write_text("new")
    assert sorted(path.name for path in target.iterdir()) == ["new.html"], "the old folder's files were kept"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["book"], "a staging folder was left behind"
