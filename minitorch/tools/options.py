"""The rule every command shares for the values typed on its command line (``python -m minitorch ...``,
``python -m minitorch.exercises ...``, ``python -m minitorch.tools.bench ...``): `CommandParser`, an argparse
parser that refuses, in one line naming the option, before any work:

- **an empty value** (``--only ''``, ``--chapters ''``, ``carry-over '' NEW``, or only spaces): an empty string is
  never "not given", and never the current folder (``carry-over '' NEW`` run from the instructor's checkout
  would copy every reference answer into an edition). Leave an option out to get its default.
- **an option given twice** (``--only 1.1 --only 1.2``, ``--out a --out b``): argparse would keep the last one
  silently. Several values go in one comma-separated list: ``--only 1.1,1.2``.
- **an empty item of a list** (``--only 1.1,,1.2``, ``--only 1x1,``): `comma_list` options; spaces around an item
  are dropped.

A command also refuses an option that does nothing as the command line stands (`refuse_options`): ``bench --jobs 3``
without ``--reproduce``, ``reproduce --beyond --only 1x1``. argparse would take it and ignore it without a word.
"""

from __future__ import annotations

import argparse
import sys


class CommandParser(argparse.ArgumentParser):
    """argparse with the rule of this module; its subcommands' parsers are CommandParsers too."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name, action in [(None, _Store), ("store", _Store), ("store_true", _StoreTrue), ("append", _Append)]:
            self.register("action", name, action)

    def parse_known_args(self, args=None, namespace=None):
        self.given = {}  # dest -> the value given, to refuse a second one
        self.words = list(sys.argv[1:] if args is None else args)  # for `error`
        return super().parse_known_args(args, namespace)

    def error(self, message: str):
        """argparse's error, except for an option it does not know given before any command (``--version``): it
        said only that a command is required, never naming the option."""
        commands = [action for action in self._actions if isinstance(action, argparse._SubParsersAction)]
        unknown = [word for word in getattr(self, "words", []) if word.startswith("-") and word != "-"
                   and word.split("=")[0] not in self._option_string_actions]
        if commands and unknown and message.startswith("the following arguments are required"):
            _refuse(self, f"unrecognized arguments: {' '.join(unknown)}; give a command first, one of "
                          f"{', '.join(commands[0].choices)} (see {self.prog} --help)")
        super().error(message)


def _given_once(parser: CommandParser, action: argparse.Action, value, option_string: str | None) -> None:
    """Refuse an empty value and a second occurrence of `action` (see the module docstring), in one line."""
    name = option_string or action.metavar or action.dest
    if isinstance(value, str) and not value.strip():
        _refuse(parser, f"{name} is empty; give it a value (without {name}, its default is used)" if option_string
                else f"{name} is empty; name it (an empty value is never the current folder)")
    if action.dest in parser.given:
        several = f" (several values as one comma-separated list, e.g. {name} A,B)" if getattr(
            action.type, "is_comma_list", False) else ""
        _refuse(parser, f"{name} given twice ({parser.given[action.dest]!r}, then {value!r}); give it once{several}")
    parser.given[action.dest] = value


def given(parser: CommandParser, option: str) -> bool:
    """Whether `option` (such as '--jobs') was typed on the command line `parser` just read, not left to its
    default (a default can equal a typed value: ``--jobs 2``)."""
    return parser._option_string_actions[option].dest in parser.given


def refuse_options(parser: CommandParser, options: list[str], reason: str) -> None:
    """Refuse, in one line, those of `options` that were typed: they do nothing as the command line stands, and
    `reason` says where they apply (``refuse_options(parser, ["--jobs"], "only to the timed reproduce; ...")``)."""
    typed = [option for option in options if given(parser, option)]
    if typed:
        _refuse(parser, f"{' and '.join(typed)} appl{'y' if len(typed) > 1 else 'ies'} {reason}")


def _refuse(parser: argparse.ArgumentParser, message: str) -> None:
    parser.exit(2, f"{parser.prog}: error: {message}\n")  # one line: the usage says nothing about this


class _Store(argparse._StoreAction):
    def __call__(self, parser, namespace, values, option_string=None):
        _given_once(parser, self, values, option_string)
        super().__call__(parser, namespace, values, option_string)


class _StoreTrue(argparse._StoreTrueAction):
    def __call__(self, parser, namespace, values, option_string=None):
        _given_once(parser, self, True, option_string)
        super().__call__(parser, namespace, values, option_string)


class _Append(argparse._AppendAction):
    def __call__(self, parser, namespace, values, option_string=None):
        _given_once(parser, self, values, option_string)
        super().__call__(parser, namespace, values, option_string)


def comma_list(option: str):
    """An argparse ``type=`` for a comma-separated list: the text, its items stripped of spaces, or an error if an
    item is empty (``1.1,,1.2``, ``1x1,``). (The empty value itself is refused by `CommandParser`.)"""
    def parse(text: str) -> str:
        items = [item.strip() for item in text.split(",")]
        if text.strip() and not all(items):
            raise argparse.ArgumentTypeError(f"{text!r} has an empty item; separate the items with single commas, "
                                             f"e.g. {option} A,B")
        return ",".join(items)

    parse.__name__, parse.is_comma_list = option, True
    return parse
