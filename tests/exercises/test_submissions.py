"""Specification of grader/trusted/submissions.py: every entry of SUBMISSIONS gets a row, nothing that is
not a regular file or a folder is opened, and a .zip is checked before anything is unpacked."""

from __future__ import annotations

import os
import stat
import zipfile
from pathlib import Path

import pytest

from minitorch.exercises.grader.trusted import submissions
from minitorch.exercises.registry import ExerciseError
from minitorch.exercises.grader.trusted.submissions import entries, find_project, open_copy, unpack


def a_copy(folder: Path) -> Path:
    (folder / "minitorch").mkdir(parents=True)
    (folder / "tests").mkdir()
    (folder / "minitorch" / "ops.py").write_text("x = 1\n")
    return folder


def zipped(folder: Path, archive: Path, top: str = "copy") -> Path:
    with zipfile.ZipFile(archive, "w") as opened:
        for path in sorted(folder.rglob("*")):
            opened.write(path, Path(top) / path.relative_to(folder))
    return archive


def test_every_entry_gets_a_row_and_those_that_cannot_be_graded_say_why_without_being_opened(tmp_path):
    subs = tmp_path / "subs"
    a_copy(subs / "ann")
    zipped(a_copy(tmp_path / "bob"), subs / "bob.zip")
    os.mkfifo(subs / "eve.zip")  # opening it would wait forever for a writer
    (subs / "notes.txt").write_text("hello")
    (subs / "lee").symlink_to(subs / "ann", target_is_directory=True)
    a_copy(subs / "kim")
    zipped(subs / "kim", subs / "kim.zip")
    (subs / ".DS_Store").write_text("")
    found = entries(subs)
    assert sorted(found) == ["ann", "bob", "eve", "kim", "lee", "notes.txt"], "one row per entry; hidden ones aside"
    assert found["ann"].problem == "" and found["bob"].problem == ""
    assert "named pipe" in found["eve"].problem and "not opened" in found["eve"].problem
    assert "a file, not a folder or a .zip" in found["notes.txt"].problem
    assert "symbolic link" in found["lee"].problem
    assert "both a folder and a .zip" in found["kim"].problem, "neither of two copies is chosen silently"


@pytest.mark.parametrize("member, reason", [
    ("link", "symbolic link"), ("fifo", "special file"), ("../escape.py", "outside its folder"),
])
def test_a_zip_holding_a_link_a_special_file_or_a_path_outside_is_refused_before_unpacking(tmp_path, member, reason):
    archive = tmp_path / "mallory.zip"
    with zipfile.ZipFile(archive, "w") as opened:
        opened.writestr("copy/minitorch/ops.py", "x = 1\n")
        info = zipfile.ZipInfo(f"copy/minitorch/{member}" if member != "../escape.py" else member)
        info.external_attr = {"link": stat.S_IFLNK | 0o777, "fifo": stat.S_IFIFO | 0o644}.get(member,
                                                                                            stat.S_IFREG | 0o644) << 16
        opened.writestr(info, "/etc/passwd" if member == "link" else "x")
    with pytest.raises(ExerciseError, match=reason):
        unpack(archive, tmp_path / "unpacked")
    assert not (tmp_path / "unpacked").exists(), "nothing may be unpacked from a refused .zip"


def test_a_zip_that_would_unpack_too_large_is_refused_before_unpacking(tmp_path, monkeypatch):
    archive = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as opened:
        opened.writestr("bomb/minitorch/ops.py", "x = 1\n")
        opened.writestr("bomb/zeros.bin", bytes(2 << 20))  # 2 MiB that compress to a few KiB
    monkeypatch.setattr(submissions, "MAX_UNPACKED_BYTES", 1 << 20)
    with pytest.raises(ExerciseError, match=r"would unpack to 2 files and 2 MiB"):
        unpack(archive, tmp_path / "unpacked")
    assert not (tmp_path / "unpacked").exists()


def test_the_copy_is_found_at_the_top_or_one_level_down_and_links_are_refused(tmp_path):
    assert find_project(a_copy(tmp_path / "top")) == tmp_path / "top"
    a_copy(tmp_path / "down" / "my-copy")
    assert find_project(tmp_path / "down") == tmp_path / "down" / "my-copy"
    a_copy(tmp_path / "two" / "a")
    a_copy(tmp_path / "two" / "b")
    with pytest.raises(ExerciseError, match="2 copies"):
        find_project(tmp_path / "two")
    linked = a_copy(tmp_path / "linked")
    (linked / "minitorch" / "ops.py").unlink()
    (linked / "minitorch" / "ops.py").symlink_to(tmp_path / "top" / "minitorch" / "ops.py")
    with pytest.raises(ExerciseError, match=r"symbolic link.*minitorch/ops\.py") as refused:
        find_project(linked)
    assert str(tmp_path / "top") not in str(refused.value), "the reason, which the student reads, names no grader path"


def test_a_zipped_copy_is_unpacked_into_the_scratch_folder_and_found(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    zipped(a_copy(tmp_path / "ann"), subs / "ann.zip", top="ann-copy")
    found = open_copy(entries(subs)["ann"], tmp_path / "scratch")
    assert found == tmp_path / "scratch" / "unpacked" / "ann-copy" and (found / "minitorch" / "ops.py").is_file()
