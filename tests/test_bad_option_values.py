"""One rule for the values typed on every command line (minitorch.tools.options): an empty value (or only spaces)
is never "not given" or the current folder, an option given twice is refused, an empty item of a list is refused;
each in one line naming the option, before any work."""

from __future__ import annotations

import pytest

from bad_input_helpers import ROOT


def _refused(main, arguments, capsys) -> str:
    """The one-line error of `main(arguments)`, which must refuse them (status 2) before any work."""
    with pytest.raises(SystemExit) as exit_info:
        main(arguments)
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert exit_info.value.code == 2, f"{arguments} must be refused, got status {exit_info.value.code}: {error}"
    return error


def _minitorch(arguments):
    from minitorch.__main__ import main

    return main(arguments)


def _exercises(arguments):
    from minitorch.exercises.__main__ import main

    return main(arguments)


EMPTY = [
    (_minitorch, ["book", "--chapters", ""], "--chapters is empty"),  # built the default chapters/
    (_minitorch, ["book", "--only", " "], "--only is empty"),
    (_minitorch, ["book", "--out", ""], "--out is empty"),
    (_minitorch, ["reproduce", "--only", ""], "--only is empty"),
    (_minitorch, ["reproduce", "--out", ""], "--out is empty"),  # (was passed on, and refused later)
    (_minitorch, ["reproduce", "--out", "  "], "--out is empty"),
    (_minitorch, ["bench", "--json", ""], "--json is empty"),
    (_exercises, ["student-edition", "{tmp}/e", "--only", ""], "--only is empty"),  # handed out all 18
    (_exercises, ["student-edition", "{tmp}/e", "--chapter", ""], "--chapter is empty"),  # handed out all 18
    (_exercises, ["student-edition", "{tmp}/e", "--release", ""], "--release is empty"),
    (_exercises, ["student-edition", ""], "dest is empty"),
    (_exercises, ["carry-over", "", "{tmp}/e"], "old is empty"),  # copied every reference answer from the cwd
    (_exercises, ["carry-over", "{tmp}/e", " "], "new is empty"),
    (_exercises, ["grade", "", "--out", "{tmp}/g", "--only", "1.1"], "submissions is empty"),  # read as the cwd
    (_exercises, ["grade", "{tmp}", "--out", "{tmp}/g", "--student", ""], "--student is empty"),  # graded nobody
    (_exercises, ["grade", "{tmp}", "--out", "{tmp}/g", "--edition", ""], "--edition is empty"),  # was ignored
    (_exercises, ["gradescope-bundle", "{tmp}/z.zip", "--only", ""], "--only is empty"),  # read as every exercise
    (_exercises, ["canvas-csv", "{tmp}", "--roster", "", "--assignment", "A", "--to", "{tmp}/c.csv"],
     "--roster is empty"),
]


@pytest.mark.parametrize("main,arguments,message", EMPTY,
                         ids=[" ".join(arguments[:1] + [arguments[-1] or "''"]) + f"-{index}"
                              for index, (_, arguments, _) in enumerate(EMPTY)])
def test_an_empty_value_is_refused_in_every_command(tmp_path, capsys, monkeypatch, main, arguments, message):
    monkeypatch.chdir(ROOT)  # carry-over '' and grade '' from the instructor's checkout: the worst place
    arguments = [argument.replace("{tmp}", str(tmp_path)) for argument in arguments]
    error = _refused(main, arguments, capsys)
    assert message in error, error
    assert not any(tmp_path.iterdir()), "a refused command must write nothing"


REPEATED = [
    (_minitorch, ["reproduce", "--only", "1x1", "--only", "2x2"], "--only given twice ('1x1', then '2x2')"),
    (_minitorch, ["reproduce", "--seed", "1", "--seed", "2"], "--seed given twice (1, then 2)"),
    (_minitorch, ["book", "--out", "{tmp}/a", "--out", "{tmp}/b"], "--out given twice"),
    (_minitorch, ["book", "--quick", "--quick"], "--quick given twice"),
    (_minitorch, ["bench", "--steps", "1", "--steps", "2"], "--steps given twice"),
    (_exercises, ["student-edition", "{tmp}/e", "--only", "1.1", "--only", "1.2"], "--only given twice"),  # kept 1.2
    (_exercises, ["grade", "{tmp}", "--out", "{tmp}/g", "--student", "ann", "--student", "bob"],
     "--student given twice"),  # accumulated, where every other option kept its last value
    (_exercises, ["gradescope-bundle", "{tmp}/z.zip", "--chapter", "1", "--chapter", "2"], "--chapter given twice"),
]


@pytest.mark.parametrize("main,arguments,message", REPEATED,
                         ids=[f"{arguments[0]}-{index}" for index, (_, arguments, _) in enumerate(REPEATED)])
def test_an_option_given_twice_is_refused_in_every_command(tmp_path, capsys, main, arguments, message):
    arguments = [argument.replace("{tmp}", str(tmp_path)) for argument in arguments]
    error = _refused(main, arguments, capsys)
    assert message in error and "give it once" in error, error
    if "--only" in arguments or "--student" in arguments:
        assert "comma-separated list" in error, f"a list option must say how to give several values: {error}"
    assert not any(tmp_path.iterdir()), "a refused command must write nothing"


def test_the_instructors_chapter_gives_several_students_as_the_command_takes_them():
    """Chapter 11 said `--student ann` could be repeated, which grade refuses as it refuses every option given
    twice: the book must show the one form the command takes, a comma-separated list."""
    import json
    import re

    from minitorch.exercises.__main__ import _parser

    cells = json.loads((ROOT / "chapters" / "11_for_instructors.ipynb").read_text(encoding="utf-8"))["cells"]
    text = "".join("".join(cell["source"]) for cell in cells if cell["cell_type"] == "markdown")
    shown = re.findall(r"`(--student [^`]+)`", text)
    assert shown and "repeat it" not in text, "chapter 11 should show --student with several names as one list"
    for snippet in shown:
        args = _parser().parse_args(["grade", "subs", "--out", "grades", *snippet.split()])
        assert args.student == [snippet.split()[1]], f"grade reads the book's `{snippet}` otherwise: {args.student}"


@pytest.mark.parametrize("main,arguments", [
    (_minitorch, ["reproduce", "--only", "1x1,"]),
    (_minitorch, ["book", "--only", "01,,02"]),
    (_exercises, ["student-edition", "{tmp}/e", "--only", "1.1,,1.2"]),
    (_exercises, ["grade", "{tmp}", "--out", "{tmp}/g", "--student", "ann,"]),
], ids=["reproduce", "book", "student-edition", "grade"])
def test_an_empty_item_of_a_list_is_refused_in_every_command(tmp_path, capsys, main, arguments):
    arguments = [argument.replace("{tmp}", str(tmp_path)) for argument in arguments]
    error = _refused(main, arguments, capsys)
    assert "has an empty item" in error and ("--only" in error or "--student" in error), error


IGNORED = [
    (["bench", "--jobs", "3"], "--jobs applies only to the timed reproduce; add --reproduce"),
    (["bench", "--jobs", "2"], "--jobs applies only to the timed reproduce"),  # its default, typed: still ignored
    (["bench", "--force"], "--force applies only to the file --json names; add --json"),
    (["reproduce", "--beyond", "--only", "1x1"], "--only applies to the paper's six models, not to --beyond"),
    (["reproduce", "--beyond", "--seed", "0"], "--seed applies to the paper's six models, not to --beyond"),
    (["reproduce", "--beyond", "--only", "1x1", "--seed", "2"], "--only and --seed apply to the paper's six models"),
    (["reproduce", "--seeds", "--seed", "0"], "--seeds runs its own seeds"),
]


@pytest.mark.parametrize("arguments,message", IGNORED, ids=[" ".join(arguments) for arguments, _ in IGNORED])
def test_an_option_that_would_do_nothing_is_refused_naming_where_it_applies(capsys, monkeypatch, arguments, message):
    """argparse takes an option that qualifies another one (bench's --jobs qualifies --reproduce) even alone, and
    the command ignored it without a word; each is refused in one line, before any work."""
    from minitorch.paper import beyond
    from minitorch.tools import bench

    for module, work in [(bench, "run_steps"), (beyond, "run_beyond"), (beyond, "run_seeds")]:
        monkeypatch.setattr(module, work, lambda *args, **kwargs: pytest.fail(f"{arguments} went to work"))
    error = _refused(_minitorch, arguments, capsys)
    assert message in error, f"{' '.join(arguments)} should be refused with '{message}', got: {error}"


def test_spaces_around_the_items_of_a_list_are_dropped():
    from minitorch.tools.options import comma_list

    assert comma_list("--only")(" 1.1 , 1.2 ") == "1.1,1.2"


def test_carry_over_refuses_an_empty_folder_name_as_a_library_call(tmp_path):
    from minitorch.exercises.edition import carry_over
    from minitorch.exercises.registry import ExerciseError

    with pytest.raises(ExerciseError, match="carry-over: OLD is empty"):
        carry_over("", tmp_path)


@pytest.mark.parametrize("main,arguments,commands", [
    (_minitorch, ["--version"], "reproduce, book, bench"),
    (_minitorch, ["-x", "--quick"], "reproduce, book, bench"),
    (_exercises, ["--version"], "list, student-edition"),
], ids=["minitorch-version", "minitorch-two-options", "exercises-version"])
def test_an_unknown_option_before_any_command_is_named_not_only_the_missing_command(capsys, main, arguments, commands):
    """`python -m minitorch --version` said "the following arguments are required: command", never --version."""
    error = _refused(main, arguments, capsys)
    unknown = " ".join(arguments)
    assert error.startswith(f"python -m minitorch{'.exercises' if main is _exercises else ''}: error: unrecognized "
                            f"arguments: {unknown}; give a command first, one of {commands}"), error
