"""argparse, made to fail the project's way: one line, one prefix, and a guess at what was meant.

argparse prints ``prog: error: message`` and exits; here every usage error is a ``UsageError``
whose text main() prints once behind its own prefix. A mistyped subcommand, flag or choice gets
the closest known one (difflib), because "invalid choice" or "unrecognized arguments" alone sends
people to ``--help`` to find a typo.

Only argparse's public API is used, so a Python upgrade cannot break the hints:
- ``Parser`` notes every option as it is added (``Options`` does the same for the subcommands'
  parsers and groups), and the hints read those notes, never argparse's own tables;
- an option with ``choices`` gets a ``type`` that refuses a wrong word with the guess (argparse
  converts a word before it checks the choices);
- a subcommand name is checked before argparse sees it, by ``_command_word``;
- a global option (``add_global_argument``) is defined again on each subcommand under its own
  name, and ``parse_args`` settles which value counts.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import sys
from collections.abc import Iterable, Sequence
from typing import Any, NoReturn, Protocol

from advisor.errors import UsageError

#: the value of a global option given after the subcommand lands here before parse_args settles it
_AFTER_COMMAND = "{}_after_command"


class Arguments(Protocol):
    """What takes options: a parser, an argument group, ``Options``."""

    def add_argument(self, *name_or_flags: str, **kwargs: Any) -> argparse.Action: ...


class Sections(Arguments, Protocol):
    """What takes options and groups of them (a parser, ``Options`` of a subcommand)."""

    def add_argument_group(
        self, title: str | None = None, description: str | None = None
    ) -> Arguments: ...


class _Container(Arguments, Protocol):
    """A parser or an argument group, as ``Options`` calls it."""

    def add_argument_group(
        self, title: str | None = None, description: str | None = None
    ) -> Any: ...

    def add_mutually_exclusive_group(self, *, required: bool = False) -> Any: ...


class _Subparsers(Protocol):
    """What ``add_subparsers`` returns, as ``Commands`` calls it."""

    def add_parser(self, name: str, **kwargs: Any) -> Parser: ...


def _closest(word: str, candidates: Iterable[str]) -> str | None:
    found = difflib.get_close_matches(word, sorted(set(candidates)), n=1, cutoff=0.6)
    return found[0] if found else None


class _Choice:
    """An option's ``type`` that refuses a word outside its choices with the closest one.

    argparse checks ``choices`` only after ``type`` has converted the word, and its own message
    cannot carry a guess; the choices stay on the option for the help and as argparse's check.
    """

    def __init__(self, choices: Iterable[str], default: Any) -> None:
        self.choices = list(choices)
        self.default = default  # argparse converts a string default too; it is never refused

    def __call__(self, value: str) -> str:
        if value in self.choices or value == self.default:
            return value
        guess = _closest(value, self.choices)
        hint = f"; did you mean {guess!r}?" if guess else ""
        listed = ", ".join(repr(name) for name in self.choices)
        raise argparse.ArgumentTypeError(f"invalid choice: {value!r}{hint} (choose from {listed})")


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors raise ``UsageError`` with a did-you-mean hint."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # set before argparse's __init__, which adds -h/--help through add_argument
        self.noted: list[tuple[tuple[str, ...], dict[str, Any]]] = []
        self.commands: dict[str, Parser] = {}
        self.global_options: list[tuple[argparse.Action, tuple[str, ...], dict[str, Any]]] = []
        self.words: list[str] = []  # of the current parse, to find a flag before the subcommand
        super().__init__(*args, **kwargs)

    @property
    def flags(self) -> list[str]:
        """Every ``--flag`` of this parser, in the order they were added."""
        return [name for names, _ in self.noted for name in names if name.startswith("--")]

    def note(self, names: tuple[str, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """Note an option being added; its arguments to pass on (a choice refused with a guess)."""
        choices = kwargs.get("choices")
        if (
            choices is not None
            and "type" not in kwargs
            and all(isinstance(c, str) for c in choices)
        ):
            kwargs = {**kwargs, "type": _Choice(choices, kwargs.get("default"))}
        if any(name.startswith(tuple(self.prefix_chars)) for name in names):
            self.noted.append((names, kwargs))
        return kwargs

    def add_argument(self, *name_or_flags: str, **kwargs: Any) -> argparse.Action:
        return super().add_argument(*name_or_flags, **self.note(name_or_flags, kwargs))

    def add_global_argument(self, *name_or_flags: str, **kwargs: Any) -> argparse.Action:
        """An option given before the subcommand or after it (after wins, as a repeat does)."""
        action = self.add_argument(*name_or_flags, **kwargs)
        self.global_options.append((action, name_or_flags, kwargs))
        return action

    def add_commands(self, **kwargs: Any) -> Commands:
        """argparse's subparsers (required), each command's parser a ``Parser``."""
        return Commands(self, self.add_subparsers(parser_class=Parser, required=True, **kwargs))

    def add_global_options_to_commands(self, title: str) -> None:
        """Each command takes the global options too, in a group of their own at the end of its
        help. They store under their own names: a command's parse must not reset what was
        given before the command (argparse copies a subcommand's values over the top's)."""
        for command in self.commands.values():
            group = Options(command, command.add_argument_group(title))
            for action, names, kwargs in self.global_options:
                again = {**kwargs, "dest": _AFTER_COMMAND.format(action.dest), "default": None}
                if action.nargs != 0 and "choices" not in kwargs and "metavar" not in kwargs:
                    again["metavar"] = action.metavar or action.dest.upper()
                group.add_argument(*names, **again)

    def error(self, message: str) -> NoReturn:
        # prog is "tf-thread-advisor" or "tf-thread-advisor probe": main() prints the first part
        # as the one prefix, so the message only points at the right --help
        raise UsageError(f"{message} (see {self.prog} --help)")

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self.words = list(sys.argv[1:] if args is None else args)
        if self.commands:
            self._check_command()
        return super().parse_known_args(args, namespace)

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            # flags of the chosen subcommand and the global ones are what the user could mean
            chosen = self.commands.get(str(getattr(parsed, "command", "")))
            parsers: list[Parser] = [self] if chosen is None else [chosen, self]
            prog = self.prog if chosen is None else chosen.prog
            raise UsageError(f"{self._unrecognized(extras, parsers)} (see {prog} --help)")
        for action, _, _ in self.global_options:
            after = _AFTER_COMMAND.format(action.dest)
            value = getattr(parsed, after, None)
            if hasattr(parsed, after):
                delattr(parsed, after)
            if value is not None:
                setattr(parsed, action.dest, value)
        return parsed

    def _check_command(self) -> None:
        """Refuse an unknown subcommand with a guess, where argparse would refuse it."""
        word = _command_word(self)
        if word is None or word in self.commands:
            return
        unknown = self._unknown_flag_before(word)
        if unknown is not None:
            # "tf-thread-advisor --bugdet 30": argparse took 30 for the subcommand
            self.error(self._unrecognized([unknown], [self]))
        guess = _closest(word, self.commands)
        hint = f"; did you mean {guess!r}?" if guess else ""
        listed = ", ".join(repr(name) for name in self.commands)
        self.error(f"unknown command {word!r}{hint} (commands: {listed})")

    def _unknown_flag_before(self, value: str) -> str | None:
        """The first word before ``value`` that looks like a flag this parser does not know."""
        words = self.words
        for word in words[: words.index(value)] if value in words else []:
            name = word.split("=", 1)[0]
            # argparse accepts unambiguous prefixes of a flag too (--log-f for --log-format)
            if name.startswith("-") and not any(flag.startswith(name) for flag in self.flags):
                return word
        return None

    def _unrecognized(self, extras: list[str], parsers: list[Parser]) -> str:
        names = [word.split("=", 1)[0] for word in extras if word.startswith("--")]
        hints = [hint for name in names if (hint := _flag_hint(name, parsers, len(names) > 1))]
        return "; ".join([f"unrecognized arguments: {' '.join(extras)}", *hints])


class Options:
    """A subcommand's parser or one of its groups as its module adds options: argparse's own
    calls, each option noted on the subcommand's ``Parser`` for the hints."""

    def __init__(self, parser: Parser, target: _Container) -> None:
        self.parser = parser
        self._target = target  # the parser itself, or an argparse group of it

    def add_argument(self, *name_or_flags: str, **kwargs: Any) -> argparse.Action:
        if self._target is self.parser:  # Parser.add_argument notes it
            return self.parser.add_argument(*name_or_flags, **kwargs)
        return self._target.add_argument(*name_or_flags, **self.parser.note(name_or_flags, kwargs))

    def add_argument_group(
        self, title: str | None = None, description: str | None = None
    ) -> Options:
        return Options(self.parser, self._target.add_argument_group(title, description))

    def add_mutually_exclusive_group(self, *, required: bool = False) -> Options:
        return Options(self.parser, self._target.add_mutually_exclusive_group(required=required))

    def set_defaults(self, **kwargs: Any) -> None:
        self.parser.set_defaults(**kwargs)


class Commands:
    """The subcommands as their modules register them (``add_parser``), each one noted."""

    def __init__(self, parser: Parser, action: _Subparsers) -> None:
        self._parser = parser
        self._action = action

    def add_parser(self, name: str, **kwargs: Any) -> Options:
        command = self._action.add_parser(name, **kwargs)
        self._parser.commands[name] = command
        return Options(command, command)


class _Refused(Exception):
    """The look-ahead parse in ``_command_word`` failed: the real parse reports why."""


class _LookAhead(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _Refused(message)


class _Stop(argparse.Action):
    """--help and --version in the look-ahead: the parse ends there, as the real one exits."""

    def __init__(self, option_strings: Sequence[str], dest: str, **_: Any) -> None:
        super().__init__(option_strings, dest, nargs=0)

    def __call__(self, *_: Any, **__: Any) -> NoReturn:
        raise _Refused("help or version")


def _command_word(parser: Parser) -> str | None:
    """The word argparse will take for the subcommand in ``parser.words``, or None.

    A parser with the same top-level options and one positional in place of the subcommands
    consumes the words as argparse will: it finds the subcommand among option values,
    ``--flag=value`` forms and abbreviations. Its positional refuses nothing, so an option
    given wrong before the subcommand fails here first, as it will in the real parse, which
    then reports it.
    """
    ahead = _LookAhead(
        prog=parser.prog,
        add_help=False,
        allow_abbrev=parser.allow_abbrev,
        prefix_chars=parser.prefix_chars,
    )
    for names, kwargs in parser.noted:
        # --help and --version print and exit in the real parse before it reaches a later word
        stops = kwargs.get("action") in ("help", "version")
        ahead.add_argument(*names, **({"action": _Stop} if stops else kwargs))
    seen: list[str] = []

    def command(word: str) -> str:
        seen.append(word)
        return word

    # PARSER is the subparsers' own nargs: the command's word and every word after it
    ahead.add_argument("command", nargs=argparse.PARSER, type=command)
    # on a failure, seen says whether the subcommand's word came before it
    with contextlib.suppress(_Refused, argparse.ArgumentError):
        ahead.parse_known_args(parser.words)
    return seen[0] if seen else None


def _flag_hint(name: str, parsers: list[Parser], say_which: bool) -> str | None:
    """The closest flag here, or of a subcommand when the flag came before the subcommand."""
    here = {flag for parser in parsers for flag in parser.flags}
    of_commands: dict[str, list[str]] = {}
    for parser in parsers:
        for command, sub in parser.commands.items():
            for flag in sub.flags:
                of_commands.setdefault(flag, []).append(command)
    guess = _closest(name, here | of_commands.keys())
    if guess is None:
        return None
    if guess == name:  # a known flag, given on the wrong side of the command
        if name not in of_commands:
            return f"{name} goes before the command"
        return f"{name} is an option of {', '.join(of_commands[name])}: it goes after the command"
    hint = f"did you mean {guess}" + (f" for {name}" if say_which else "") + "?"
    if guess in here:
        return hint
    return f"{hint} (an option of {', '.join(of_commands[guess])}: it goes after the command)"
