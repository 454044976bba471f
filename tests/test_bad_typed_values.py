"""Numbers and flags typed by a person (options, environment variables) go through one parser that names the
option and the values allowed."""

from __future__ import annotations

import pytest

from bad_input_helpers import ROOT


@pytest.mark.parametrize("value,quick", [("1", True), ("true", True), ("YES", True), ("on", True), ("0", False),
                                         ("false", False), ("no", False), ("Off", False), ("", False), (None, False)])
def test_minitorch_quick_accepts_the_usual_spellings_of_on_and_off(monkeypatch, value, quick):
    from minitorch.paper import quick_mode

    if value is None:
        monkeypatch.delenv("MINITORCH_QUICK", raising=False)
    else:
        monkeypatch.setenv("MINITORCH_QUICK", value)
    assert quick_mode() is quick, f"MINITORCH_QUICK={value!r} must mean {'quick' if quick else 'not quick'}"


@pytest.mark.parametrize("value", ["abc", "2", "quick", "1.0"])
def test_minitorch_quick_refuses_anything_else_naming_the_variable(monkeypatch, value):
    from minitorch.paper import quick_mode

    monkeypatch.setenv("MINITORCH_QUICK", value)
    with pytest.raises(ValueError, match=f"MINITORCH_QUICK must be one of 1, 0, true, false.*got {value!r}"):
        quick_mode()


def test_every_chapter_reads_minitorch_quick_through_the_one_parser():
    readers = {path.name: path.read_text(encoding="utf-8").count("quick_mode()")
               for path in sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))}
    by_hand = [name for name in readers if 'environ.get(\\"MINITORCH_QUICK' in (ROOT / "chapters" / name).read_text()]
    assert not by_hand and all(readers.values()), f"chapters reading MINITORCH_QUICK by hand: {by_hand}; {readers}"


@pytest.mark.parametrize("arguments,option,wanted", [
    (["reproduce", "--seed", "-1"], "--seed", "a whole number >= 0"),
    (["reproduce", "--seed", "1.5"], "--seed", "a whole number >= 0"),
    (["reproduce", "--seed", "abc"], "--seed", "a whole number >= 0"),
    (["reproduce", "--jobs", "0"], "--jobs", "a whole number >= 1"),
    (["reproduce", "--jobs", "nan"], "--jobs", "a whole number >= 1"),
    (["bench", "--steps", "0"], "--steps", "a whole number >= 1 <= 10000"),
    (["bench", "--threads", "inf"], "--threads", "a whole number >= 1 <= 64"),
    (["bench", "--threads", "100000"], "--threads", "a whole number >= 1 <= 64"),  # a PyTorch child segfaulted
    (["bench", "--rounds", "2.5"], "--rounds", "a whole number >= 1 <= 20"),
    (["bench", "--jobs", "-2"], "--jobs", "a whole number >= 1 <= 64"),
    (["book", "--cell-timeout", "1.5"], "--cell-timeout", "a whole number >= 1 <= 86400"),  # the kernel's timer
    (["book", "--cell-timeout", "0.001"], "--cell-timeout", "a whole number >= 1 <= 86400"),  # counts whole seconds
])
def test_a_number_option_names_itself_and_the_values_allowed(capsys, arguments, option, wanted):
    from minitorch.__main__ import main

    with pytest.raises(SystemExit) as exit_info:
        main(arguments)
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert exit_info.value.code == 2 and f"argument {option}: must be {wanted}, got '{arguments[-1]}'" in error, error
