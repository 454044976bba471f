"""Specification of minitorch.outputs: output paths refused before any work, and replacement that is whole."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from minitorch.outputs import (ROOT, OutputPathError, RecordedRun, building_aside, check_output_file,
                               check_output_folder, files_to_replace, not_recorded, replace_files, replace_folder,
                               write_atomically, written_files)


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


@pytest.mark.parametrize("place, what", [
    ("home", "is the home folder"), ("above-home", "is a folder above the home folder"),
    ("current", "is the current folder"), ("above-current", "is a folder above the current folder"),
    ("/tmp", "is a folder of the system"), ("/usr", "is a folder of the system"),
    ("/usr/share", "is a folder of the system"), ("/var/tmp", "is a folder of the system")])
def test_an_output_folder_that_holds_the_users_world_is_refused_naming_it_and_never_advising_force(
        tmp_path, monkeypatch, place, what):
    """`book --force --out ~` deleted the whole home folder, and the refusal without --force advised just that (for
    /tmp and /usr/share too): such a folder is refused for every command, with or without --force."""
    home, current = tmp_path / "home", tmp_path / "work" / "here"
    home.mkdir()
    current.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))  # a stand-in home: the real one is never named
    monkeypatch.chdir(current)
    path = {"home": "~", "above-home": str(tmp_path), "current": ".", "above-current": ".."}.get(place, place)
    with pytest.raises(OutputPathError) as raised:
        check_output_folder(path, option="--out")
    message = str(raised.value)
    shown = Path(os.path.realpath(os.path.expanduser(path)))
    if shown in ROOT.resolve().parents:  # (a checkout inside it, as a student edition in /tmp is, is named first)
        assert message.startswith(f"--out {path}: holds the project's own"), message
    else:
        assert message.startswith(f"--out {path}: {shown} {what}") and "choose a folder of its own" in message, message
    assert "--force" not in message, f"the refusal must not advise --force, which would delete it all: {message}"


@pytest.mark.parametrize("inside", ["home", "current", "tmp", "two-below-the-root"])
def test_a_new_folder_inside_the_home_the_current_or_the_temporary_folder_is_accepted(tmp_path, monkeypatch, inside):
    """A folder still to be made holds nothing of the user's, wherever it is (/data/book, /mnt/usb/book too)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    path = {"home": "~/book", "current": "book", "tmp": "/tmp/a-book-of-its-own",
            "two-below-the-root": "/srv/a-book-of-its-own"}[inside]
    assert check_output_folder(path) == Path(os.path.realpath(os.path.expanduser(path))), \
        f"{path} is a folder of its own, and must be accepted"


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


@pytest.mark.parametrize("at_start", ["absent", "empty"])
@pytest.mark.parametrize("meanwhile", ["a folder with a file", "a file"])
def test_building_aside_into_a_new_folder_keeps_what_another_run_put_there_meanwhile(tmp_path, at_start, meanwhile):
    """Two student-edition runs at once into one new folder both said they wrote it; the folder held the last."""
    target = tmp_path / "edition"
    if at_start == "empty":
        target.mkdir()
    with pytest.raises(OSError, match="another run wrote it meanwhile.*nothing of this run was kept") as refused:
        with building_aside(target) as staging:
            (staging / "ours.txt").write_text("this run's")
            if meanwhile == "a file":  # (the other run's whole output, moved in while this one built)
                if at_start == "empty":
                    target.rmdir()
                target.write_text("the other run's")
            else:
                target.mkdir(exist_ok=True)
                (target / "theirs.txt").write_text("the other run's")
    assert str(target) in str(refused.value) and "\n" not in str(refused.value), refused.value
    kept = target.read_text() if target.is_file() else _contents(target)
    assert kept in ("the other run's", {"theirs.txt": "the other run's"}), f"the other run's output was lost: {kept}"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["edition"], "the refused build was left beside it"


def test_building_aside_into_a_new_folder_moves_in_over_an_empty_folder_made_meanwhile(tmp_path):
    """An empty folder holds nothing of anyone's: the build goes in."""
    target = tmp_path / "edition"
    with building_aside(target) as staging:
        (staging / "ours.txt").write_text("this run's")
        target.mkdir()
    assert _contents(target) == {"ours.txt": "this run's"}, "the build did not replace an empty folder"


def _folder_with(tmp_path, name: str, files: dict):
    folder = tmp_path / name
    for relative, text in files.items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text)
    return folder


def _contents(folder) -> dict:
    return {path.relative_to(folder).as_posix(): path.read_text() for path in folder.rglob("*") if path.is_file()}


def test_replace_files_swaps_exactly_the_listed_files_and_keeps_the_others(tmp_path):
    target = _folder_with(tmp_path, "figures", {"a.png": "old", "models/m.npz": "old", "beyond/z.png": "other"})
    built = _folder_with(tmp_path, "built", {"b.png": "new", "models/n.npz": "new"})
    replace_files(built, target, ["a.png", "models/m.npz"])
    assert _contents(target) == {"b.png": "new", "models/n.npz": "new", "beyond/z.png": "other"}
    assert sorted(path.name for path in tmp_path.iterdir()) == ["built", "figures"], "nothing left beside"


def test_replace_files_moves_everything_back_when_a_move_fails_midway(tmp_path, monkeypatch):
    before = {"a.png": "old", "models": "a file where the new run puts a folder", "keep.txt": "mine"}
    target = _folder_with(tmp_path, "figures", before)
    built = _folder_with(tmp_path, "built", {"a.png": "new", "models/n.npz": "new", "z.png": "new"})
    replace, calls = os.replace, []

    def failing_replace(source, destination):
        calls.append(source)
        if len(calls) == 4:  # after both old files went out and one new file came in
            raise OSError("disk full")
        replace(source, destination)

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="disk full"):
        replace_files(built, target, ["a.png", "models"])
    monkeypatch.undo()
    assert _contents(target) == before, "a failed replacement must leave the old files exactly as they were"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["built", "figures"], "nothing left beside"


@pytest.mark.parametrize("files, in_the_way", [
    (["models/m.npz"], "models"), (["results.json"], "results.json")])
def test_files_to_replace_refuses_what_no_run_recorded_unless_forced(tmp_path, files, in_the_way):
    target = _folder_with(tmp_path, "out", {"models": "a file", "results.json": "notes", "other.txt": "mine"})
    with pytest.raises(OutputPathError, match=f"--out .*holds {in_the_way} where this run writes.*--force"):
        files_to_replace(target, files, None, "reproduce")
    assert files_to_replace(target, files, None, "reproduce", force=True) == [in_the_way]


@pytest.mark.parametrize("force", [False, True])
def test_files_to_replace_refuses_a_folder_where_a_file_goes_even_with_force(tmp_path, force):
    """`reproduce --force` deleted the user's folder results.md/, drafts and all, to write its results.md."""
    target = _folder_with(tmp_path, "out", {"results.md/draft.txt": "chapter draft"})
    with pytest.raises(OutputPathError) as raised:
        files_to_replace(target, ["results.md", "models/m.npz"], None, "reproduce", force=force)
    message = str(raised.value)
    assert message.startswith(f"--out {target}: results.md is a folder") and "add --force" not in message, message


def test_files_to_replace_replaces_a_rerun_whole_and_a_different_run_only_with_force(tmp_path):
    target = _folder_with(tmp_path, "out", {"old.png": "old", "results.json": "{}"})
    earlier = RecordedRun("reproduce --quick", ("old.png", "results.json"))
    assert files_to_replace(target, ["results.json", "old.png"], earlier, "reproduce --quick") == \
        ["old.png", "results.json"], "a rerun replaces every file of the earlier run"
    with pytest.raises(OutputPathError, match=r"record of an earlier run of this command lists old.png, which this "
                                              r"command does not write .*--force"):
        files_to_replace(target, ["results.json", "new.png"], earlier, "reproduce --quick")
    assert files_to_replace(target, ["results.json", "new.png"], earlier, "reproduce --quick", force=True) == \
        ["old.png", "results.json"], "with --force, a rerun replaces every file of the earlier run's record"
    with pytest.raises(OutputPathError, match=r"holds an earlier, different run \(reproduce --quick\).*--force"):
        files_to_replace(target, ["results.json"], earlier, "reproduce --only 1x1")
    assert files_to_replace(target, ["results.json"], earlier, "reproduce --only 1x1", force=True) == \
        ["old.png", "results.json"]


@pytest.mark.parametrize("added, named", [
    ({}, []), ({"notes.txt": "mine"}, ["notes.txt"]), ({"mydir/essay.txt": "mine"}, ["mydir/"]),
    ({"_static/mine.css": "mine"}, ["_static/mine.css"]), ({"mydir/a": "", "notes.txt": ""}, ["mydir/", "notes.txt"])],
    ids=["nothing", "a-file", "a-folder", "a-file-in-its-folder", "both"])
def test_what_a_recorded_run_did_not_write_is_named_file_by_file_and_a_folder_once(tmp_path, added, named):
    """A command that replaces its folder whole (book) refuses what this names; the run wrote only its list."""
    earlier = RecordedRun("book", ("index.html", "_static/book.css", ".record"))
    target = _folder_with(tmp_path, "book", {name: "" for name in earlier.files} | added)
    assert not_recorded(target, earlier) == named
    assert written_files(target) == sorted([*earlier.files, *added]), "every file, none of the folders"


def test_a_file_put_into_a_recorded_run_while_its_replacement_is_built_is_not_replaced(tmp_path):
    """The check before the work cannot see a file the user adds during it; the folder replaced whole would take it."""
    target = _folder_with(tmp_path, "book", {"index.html": "old", ".record": ""})
    earlier = RecordedRun("book", ("index.html", ".record"))
    with pytest.raises(OutputPathError, match="notes.txt appeared there while the run worked.*nothing was replaced"):
        with building_aside(target, earlier=earlier) as staging:
            (staging / "index.html").write_text("new")
            (target / "notes.txt").write_text("mine")
    assert _contents(target) == {"index.html": "old", ".record": "", "notes.txt": "mine"}
    assert sorted(path.name for path in tmp_path.iterdir()) == ["book"], "nothing left beside"
    with building_aside(target, earlier=RecordedRun("book", ("index.html", ".record", "notes.txt"))) as staging:
        (staging / "index.html").write_text("new")
    assert _contents(target) == {"index.html": "new"}, "what the earlier run wrote is replaced whole"


@pytest.mark.parametrize("command, files", [
    ("reproduce", ["../outside.png"]), ("reproduce", ["/etc/passwd"]), ("reproduce", "results.json"),
    (None, ["results.json"]), ("reproduce", [""]), ("reproduce", [3])])
def test_a_record_that_names_files_outside_its_folder_is_no_record(command, files):
    assert RecordedRun.checked(command, files) is None


def test_write_atomically_refuses_data_that_is_not_text_or_bytes_and_keeps_the_old_file(tmp_path):
    path = tmp_path / "kept.txt"  # not Python's "a bytes-like object is required, not 'int'"
    path.write_text("old")
    with pytest.raises(TypeError, match=r"the data to write must be text or bytes, got int"):
        write_atomically(path, 12345)
    assert path.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["kept.txt"]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=["INT", "TERM", "HUP"])
def test_a_stop_between_the_two_renames_of_replace_folder_neither_cuts_them_nor_loses_the_folder(tmp_path, monkeypatch,
                                                                                               signum):
    """The renames were held off for Ctrl-C only, but the commands turn SIGTERM, SIGHUP, ... into Ctrl-C too: one
    right after the old folder was moved aside raised there, and `target` was left missing (its files in .old-*)."""
    target = _folder_with(tmp_path, "figures", {"a.png": "old"})
    built = _folder_with(tmp_path, "built", {"a.png": "new"})

    def stop(number, frame):
        raise KeyboardInterrupt  # as the commands' handler does

    replace = os.replace

    def replace_then_stop(source, destination):
        replace(source, destination)
        os.kill(os.getpid(), signum)  # the stop comes right after the old folder went aside

    previous = signal.signal(signum, stop)
    try:
        monkeypatch.setattr(os, "replace", replace_then_stop)
        replace_folder(built, target)  # a stop raising in here would fail the test
        monkeypatch.undo()
        assert signal.getsignal(signum) is stop, "the handler held during the renames must be put back"
    finally:
        signal.signal(signum, previous)
    assert _contents(target) == {"a.png": "new"}, "the renames, once begun, must end with the new folder in place"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["figures"], "nothing left beside"


@pytest.mark.parametrize("signum, name", [
    (signal.SIGUSR1, "SIGUSR1"), (signal.SIGTERM, "SIGTERM"),
    (999, "signal 999"), (-9, "signal -9"), (0, "signal 0"),  # no such signals: not a made-up 'SIGRTMIN+965'
] + ([(signal.SIGRTMIN + 3, "SIGRTMIN+3")] if hasattr(signal, "SIGRTMIN") else []),
    ids=lambda value: str(value))
def test_signal_name_names_a_signal_and_makes_up_no_name_for_a_number_that_is_none(signum, name):
    from minitorch.outputs.signals import signal_name

    assert signal_name(signum) == name, f"signal_name({signum}) should be {name!r}, got {signal_name(signum)!r}"
