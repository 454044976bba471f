"""Specification of grader/trusted/submissions.py: every entry of SUBMISSIONS gets a row, nothing that is
not a regular file or a folder is opened, and a .zip is checked before anything is unpacked."""

from __future__ import annotations

import contextlib
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
    ("locked", "password-protected"),
])
def test_a_zip_holding_a_link_a_special_file_or_a_path_outside_is_refused_before_unpacking(tmp_path, member, reason):
    archive = tmp_path / "mallory.zip"
    with zipfile.ZipFile(archive, "w") as opened:
        opened.writestr("copy/minitorch/ops.py", "x = 1\n")
        info = zipfile.ZipInfo(f"copy/minitorch/{member}" if member != "../escape.py" else member)
        info.external_attr = {"link": stat.S_IFLNK | 0o777, "fifo": stat.S_IFIFO | 0o644}.get(member,
                                                                                            stat.S_IFREG | 0o644) << 16
        opened.writestr(info, "/etc/passwd" if member == "link" else "x")
    if member == "locked":  # zip's "encrypted" bit on every member (else 'the grader failed: RuntimeError')
        data = bytearray(archive.read_bytes())
        for signature, flag_offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
            start = data.find(signature)
            while start != -1:
                data[start + flag_offset] |= 0x1
                start = data.find(signature, start + 4)
        archive.write_bytes(bytes(data))
    with pytest.raises(ExerciseError, match=reason):
        unpack(archive, tmp_path / "unpacked")
    assert not (tmp_path / "unpacked").exists(), "nothing may be unpacked from a refused .zip"


@pytest.mark.parametrize("first, second", [
    ("copy/minitorch/ops.py", "copy/minitorch/ops.py"), ("copy/minitorch/ops.py", "./copy/minitorch/ops.py"),
    ("copy/minitorch/ops.py", "copy//minitorch/ops.py"), ("copy/minitorch/ops.py", "copy/./minitorch/ops.py"),
    ("copy/minitorch/ops.py/", "copy/minitorch/ops.py"),
], ids=["the-same", "dot-slash", "double-slash", "dot-folder", "a-folder-of-the-same-name"])
def test_a_zip_holding_a_file_twice_however_spelt_is_refused_not_graded_on_one_of_them(tmp_path, first, second):
    """A ./-prefixed duplicate passed the name-twice check, and the last member won."""
    archive = tmp_path / "dup.zip"
    with zipfile.ZipFile(archive, "w") as opened:
        opened.writestr(first, "right = 1\n")
        info = zipfile.ZipInfo(second)
        with pytest.warns(UserWarning, match="Duplicate name") if first == second else contextlib.nullcontext():
            opened.writestr(info, "wrong = 1\n")
    with pytest.raises(ExerciseError, match=r"^dup.zip holds copy/minitorch/ops.py twice"):
        unpack(archive, tmp_path / "unpacked")
    assert not (tmp_path / "unpacked").exists(), "nothing may be unpacked from a refused .zip"


def test_a_file_that_cannot_be_read_is_the_entrys_reason_not_a_crash_of_the_run(tmp_path, monkeypatch):
    copy = a_copy(tmp_path / "ann")

    def refusing(path, *args, **kwargs):
        raise OSError(22, "Invalid argument")

    monkeypatch.setattr(submissions, "open", refusing, raising=False)
    with pytest.raises(ExerciseError, match=r"^ann/minitorch/ops.py cannot be read \(Invalid argument\)$"):
        submissions.content_hash(submissions.Entry("ann", copy))


def test_the_hash_sees_a_changed_file_and_not_caches_git_or_an_environment(tmp_path):
    copy = a_copy(tmp_path / "ann")
    before = submissions.content_hash(submissions.Entry("ann", copy))
    for folder in ("minitorch/__pycache__", ".git/objects", ".venv/lib"):
        (copy / folder).mkdir(parents=True)
        (copy / folder / "x").write_bytes(b"\0" * 100)
    (copy / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    assert submissions.content_hash(submissions.Entry("ann", copy)) == before, "caches, .git and a .venv are no code"
    (copy / "minitorch" / "ops.py").write_text("x = 2\n")
    assert submissions.content_hash(submissions.Entry("ann", copy)) != before


def test_a_copy_that_is_itself_a_python_environment_is_hashed_by_its_own_files(tmp_path):
    """dave made a venv in his project folder (python -m venv .), one folder down in his entry: the hash skipped
    every folder holding pyvenv.cfg, here the whole copy, so his resubmission was never regraded."""
    copy = a_copy(tmp_path / "dave" / "week1")
    (copy / "pyvenv.cfg").write_text("home = /usr/bin\n")
    before = submissions.content_hash(submissions.Entry("dave", tmp_path / "dave"))
    for part in ("bin", "lib/python3.11/site-packages", "include"):
        (copy / part).mkdir(parents=True)
        (copy / part / "x").write_bytes(b"\0" * 100)
    assert submissions.content_hash(submissions.Entry("dave", tmp_path / "dave")) == before, (
        "what the environment installs is no code of the copy")
    (copy / "minitorch" / "ops.py").write_text("x = 2\n")
    assert submissions.content_hash(submissions.Entry("dave", tmp_path / "dave")) != before, (
        "a resubmission is found by its content: a changed ops.py in a copy that is also a venv must be regraded")


@pytest.mark.parametrize("shape", ["files", "bytes", "deep"])
def test_an_entry_beyond_the_limits_gets_a_reason_from_the_hash_without_reading_it_all(tmp_path, monkeypatch, shape):
    """One student's entry never ends the run: a folder of too many files, too many bytes or folders nested
    1,200 deep (os.walk raised RecursionError before anyone was graded) is that entry's reason."""
    copy = a_copy(tmp_path / "subs" / "mallory")
    if shape == "files":
        monkeypatch.setattr(submissions, "MAX_FILES", 50)
        for number in range(60):
            (copy / f"f{number}").write_text("")
        said = "holds more than 50 files and folders"
    elif shape == "bytes":
        monkeypatch.setattr(submissions, "MAX_UNPACKED_BYTES", 1000)
        (copy / "data.bin").write_bytes(bytes(2000))
        said = "holds more than 0 MiB of files"
    else:
        folder = copy / "notes"
        for _ in range(1200):
            folder = folder / "d"
            folder.mkdir(parents=True)
        said = f"holds folders nested more than {submissions.MAX_DEPTH} deep"
    with pytest.raises(ExerciseError, match=said):
        submissions.content_hash(entries(tmp_path / "subs")["mallory"])
    if shape == "deep":
        while folder != copy:  # (pytest's clean-up would run out of recursion)
            folder.rmdir()
            folder = folder.parent


def test_a_zip_cut_short_is_refused_as_such_not_read_as_the_model_file_stored_inside_it(tmp_path):
    """The first half of a zip holding a model's .npz: zipfile found the .npz's end record in the last 64 KiB and read
    its members, and the student was told their copy 'holds no minitorch/ folder (found: __config__.npy, ...)'."""
    import io

    import numpy as np

    model = io.BytesIO()
    np.savez(model, weights=np.zeros(8))
    with zipfile.ZipFile(tmp_path / "whole.zip", "w") as opened:
        opened.writestr("copy/minitorch/__init__.py", "")
        opened.writestr("copy/model.npz", model.getvalue())
        opened.writestr("copy/tests/test_x.py", "x = 1\n" * 200)
    data = (tmp_path / "whole.zip").read_bytes()
    (tmp_path / "cut.zip").write_bytes(data[:data.index(b"PK\x05\x06") + 40])  # up to just after the .npz
    with pytest.raises(ExerciseError, match=r"cut.zip is not a whole .zip: it does not end with a zip's end record"):
        unpack(tmp_path / "cut.zip", tmp_path / "out")
        pytest.fail("a zip cut short must be refused, not unpacked as the .npz inside it")
    for name, prefix, comment in (("commented.zip", b"", b"a comment"), ("sfx.zip", b"#!/bin/sh\nexit 0\n", b"")):
        with zipfile.ZipFile(tmp_path / name, "w") as opened:
            opened.writestr("copy/minitorch/__init__.py", "")
            opened.comment = comment
        (tmp_path / name).write_bytes(prefix + (tmp_path / name).read_bytes())
        unpack(tmp_path / name, tmp_path / name.replace(".zip", ""))  # a whole zip with a comment or a prefix reads
        assert (tmp_path / name.replace(".zip", "") / "copy" / "minitorch" / "__init__.py").is_file(), name


def test_a_zip_member_whose_name_is_too_long_for_a_file_system_is_named_in_one_line(tmp_path):
    """A member notes/nnn...(300 bytes).txt: the unpacking failed with Python's 'OSError: [Errno 36] File name too
    long' and the grader's scratch path; now the name's length is said, before anything is unpacked."""
    archive = zipped(a_copy(tmp_path / "ann"), tmp_path / "ann.zip")
    with zipfile.ZipFile(archive, "a") as opened:
        opened.writestr("copy/notes/" + "n" * 300 + ".txt", "my notes")
    with pytest.raises(ExerciseError, match=r"ann.zip holds a file or folder whose name has 304 bytes .* more than "
                                            r"the 255 a file system allows: rename it") as refused:
        unpack(archive, tmp_path / "out")
    assert "Errno" not in str(refused.value) and not (tmp_path / "out").exists(), refused.value


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


def test_a_zip_with_backslash_separators_is_unpacked_as_unzip_reads_it(tmp_path):
    """A copy zipped by PowerShell 5's Compress-Archive names its files 'minitorch\\ops.py': it was refused as
    holding no minitorch/ folder, naming neither the backslashes nor the file that is there."""
    subs = tmp_path / "subs"
    subs.mkdir()
    with zipfile.ZipFile(subs / "win.zip", "w") as opened:
        for path in sorted(a_copy(tmp_path / "win").rglob("*")):
            opened.write(path, str(path.relative_to(tmp_path / "win")).replace("/", "\\"))
    found = open_copy(entries(subs)["win"], tmp_path / "scratch")
    assert (found / "minitorch" / "ops.py").read_text() == "x = 1\n", (
        f"'\\' separates folders in a zip's names, as unzip reads them: {sorted(os.listdir(found))}")


def test_a_backslash_name_that_leads_outside_is_refused_before_unpacking(tmp_path):
    archive = tmp_path / "mallory.zip"
    with zipfile.ZipFile(archive, "w") as opened:
        opened.writestr("copy\\minitorch\\ops.py", "x = 1\n")
        opened.writestr("..\\..\\escape.py", "x")
    with pytest.raises(ExerciseError, match="outside its folder"):
        unpack(archive, tmp_path / "unpacked")
    assert not (tmp_path / "unpacked").exists(), "nothing may be unpacked from a refused .zip"


def test_a_name_with_a_newline_or_a_terminal_escape_is_shown_escaped_and_graded_under_a_safe_name(tmp_path):
    subs = tmp_path / "subs"
    a_copy(subs / "mallory\n[99 of 99] mallory: 36 of 36")
    a_copy(subs / "eve\x1b[2J\u2028")
    a_copy(subs / "ann")
    found = entries(subs)
    assert sorted(found) == ["ann", "eve\\x1b[2J\\u2028-submission",
                             "mallory\\n[99 of 99] mallory: 36 of 36-submission"]
    for student, entry in found.items():
        assert student.isprintable(), f"the student ID {student!r} would break a line of the console"
        assert entry.note == "" if student == "ann" else entry.note.startswith(f"graded as {student}: the entry's name")
        assert open_copy(entry, tmp_path / student).name == entry.path.name  # the copy itself is graded


def test_entries_named_like_the_runs_own_files_keep_their_names_as_students_live_apart(tmp_path):
    """An entry named adjustments.csv could never be graded (its folder would be the gradebook's file) and made
    every run exit 1: the students' folders are now under OUT/feedback and OUT/private, where no file of the run
    is."""
    subs = tmp_path / "subs"
    for name in ("summary.md", "adjustments.csv", "run.json", "feedback", "private"):
        a_copy(subs / name)
    zipped(a_copy(tmp_path / "grades"), subs / "grades.csv.zip")
    found = entries(subs)
    assert sorted(found) == ["adjustments.csv", "feedback", "grades.csv", "private", "run.json", "summary.md"]
    assert all(entry.note == "" and entry.problem == "" for entry in found.values())


def test_hidden_names_get_a_row_under_a_visible_name_and_the_macos_litter_none(tmp_path):
    subs = tmp_path / "subs"
    a_copy(subs / ".sneaky")
    a_copy(subs / "..dots")
    zipped(a_copy(tmp_path / "z"), subs / ".hidden.zip")
    (subs / ".DS_Store").write_text("")
    (subs / "__MACOSX" / "ann").mkdir(parents=True)
    found = entries(subs)
    assert sorted(found) == ["student ..dots-submission", "student .hidden-submission", "student .sneaky-submission"]
    assert "starts with a dot" in found["student .sneaky-submission"].note
    assert open_copy(found["student .hidden-submission"], tmp_path / "scratch").name == "copy"


def test_an_entry_whose_name_gives_no_student_name_is_graded_under_a_safe_visible_one(tmp_path):
    """An entry named `.zip` became the student "": its results.json and feedback.md were written at the top of
    feedback/ (its check log at the top of private/), and grades.csv had no row for it."""
    subs = tmp_path / "subs"
    a_copy(subs / "unnamed")
    zipped(a_copy(tmp_path / "z"), subs / ".zip")
    zipped(a_copy(tmp_path / "d"), subs / "..zip")
    found = entries(subs)
    assert sorted(found) == ["student .-submission", "student unnamed-submission", "unnamed"], (
        f"every entry needs a student name that is a folder of its own in the gradebook: {sorted(found)}")
    assert "is empty: the entry is named only .zip" in found["student unnamed-submission"].note
    assert open_copy(found["student unnamed-submission"], tmp_path / "scratch").name == "copy"


@pytest.mark.parametrize("names, flagged", [
    (["alice", "alice ", " alice", "bob"], ["alice", "alice ", " alice"]),
    (["\u00e9", "e\u0301", "Alice", "alice"], ["\u00e9", "e\u0301"]),
    (["bob ", "ann"], ["bob "]),
], ids=["spaces-at-the-ends", "one-name-in-two-unicode-forms", "a-space-alone"])
def test_names_that_read_as_another_or_end_in_a_space_are_flagged_as_look_alikes(tmp_path, names, flagged):
    """'alice', 'alice ' and ' alice', or 'é' composed and decomposed, were graded as separate students with no
    word, though grades.csv and the summary show them as one name; a name differing in case stays unflagged (Linux
    tells them apart, and so does a reader)."""
    subs = tmp_path / "subs"
    for name in names:
        a_copy(subs / name)
    found = entries(subs)
    assert sorted(found) == sorted(names), "each is still its own student, under its own name"
    noted = sorted(student for student, entry in found.items() if "look-alike name" in entry.note)
    assert noted == sorted(flagged), f"the look-alikes should be flagged, and only they: {noted}"
    for student in flagged:
        assert ascii(student) in found[student].note, f"the note should tell the forms apart: {found[student].note}"


def test_a_name_is_matched_as_spelled_first_then_in_the_composed_unicode_form_and_never_guessed():
    """A name typed with a composed é named no entry macOS wrote with a decomposed one (and the other way)."""
    composed, decomposed = "jos\u00e9", "jose\u0301"
    assert submissions.named(composed, ["ann", decomposed]) == decomposed, "the forms of one name name one student"
    assert submissions.named(decomposed, ["ann", composed]) == composed, "the forms of one name name one student"
    assert submissions.named(decomposed, [composed, decomposed]) == decomposed, "the name as spelled comes first"
    assert submissions.named("jose", [composed, decomposed, "ann"]) is None, "an e without an accent is another name"
    assert submissions.named("josé ", ["ann"]) is None, "no student of that name: None, not a guess"


def test_a_name_too_long_for_a_folder_with_a_suffix_is_cut_to_fit_and_stays_unique(tmp_path):
    subs = tmp_path / "subs"
    for last in "ab":
        a_copy(subs / ("x" * 250 + last))
    found = entries(subs)
    assert len(found) == 2 and all(len(student.encode()) <= 255 for student in found), sorted(found)
    assert all("longer than" in entry.note for entry in found.values())


@pytest.mark.parametrize("name", ["=1+1", "+SUM(A1)", "-2+3", "@cmd"])
def test_a_name_a_spreadsheet_would_run_as_a_formula_is_graded_under_a_safe_name(tmp_path, name):
    subs = tmp_path / "subs"
    a_copy(subs / name)
    a_copy(subs / "ann")
    found = entries(subs)
    assert sorted(found) == ["ann", f"student {name}-submission"], f"the formula {name!r} would reach grades.csv"
    assert "would run it as a formula" in found[f"student {name}-submission"].note


def test_folders_nested_1200_deep_get_a_reason_not_a_recursion_error(tmp_path):
    copy = a_copy(tmp_path / "subs" / "deep")
    folder = copy / "minitorch"
    for _ in range(1200):  # (os.makedirs would itself run out of recursion)
        folder = folder / "d"
        folder.mkdir()
    entry = entries(tmp_path / "subs")["deep"]
    with pytest.raises(ExerciseError, match=f"holds folders nested more than {submissions.MAX_DEPTH} deep"):
        open_copy(entry, tmp_path / "scratch")
    while folder != copy / "minitorch":  # (pytest's clean-up would run out of recursion too)
        folder.rmdir()
        folder = folder.parent
    archive = tmp_path / "deep.zip"
    with zipfile.ZipFile(archive, "w") as opened:
        opened.writestr("copy/minitorch/ops.py", "x = 1\n")
        opened.writestr("copy/" + "d/" * 1200 + "f.txt", "deep\n")
    with pytest.raises(ExerciseError, match="holds folders nested 1201 deep"):
        unpack(archive, tmp_path / "unpacked")
