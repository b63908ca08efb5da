"""argparse, made to fail the project's way: one line, one prefix, and a guess at what was meant.

argparse prints ``prog: error: message`` and exits; here every usage error is a ``UsageError``
whose text main() prints once behind its own prefix. A mistyped subcommand, flag or choice gets
the closest known one (difflib), because "invalid choice" or "unrecognized arguments" alone sends
people to ``--help`` to find a typo.

A few argparse internals are used (``_check_value``, ``_SubParsersAction``, the option table):
they are the only hooks argparse has for these messages, and they are stable since Python 3.2.
"""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Iterable, Sequence
from typing import Any, NoReturn

from advisor.errors import UsageError


def _closest(word: str, candidates: Iterable[str]) -> str | None:
    found = difflib.get_close_matches(word, sorted(set(candidates)), n=1, cutoff=0.6)
    return found[0] if found else None


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _flags(parser: argparse.ArgumentParser) -> list[str]:
    return [opt for opt in parser._option_string_actions if opt.startswith("--")]


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors raise ``UsageError`` with a did-you-mean hint."""

    #: the words of the current parse, to find a mistyped flag before the subcommand
    _words: Sequence[str] = ()

    def error(self, message: str) -> NoReturn:
        # prog is "tf-thread-advisor" or "tf-thread-advisor probe": main() prints the first part
        # as the one prefix, so the message only points at the right --help
        raise UsageError(f"{message} (see {self.prog} --help)")

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        choices = action.choices
        if choices is None or value in choices:
            return
        names = [str(choice) for choice in choices]
        guess = _closest(str(value), names)
        hint = f"; did you mean {guess!r}?" if guess else ""
        listed = ", ".join(repr(name) for name in names)
        if isinstance(action, argparse._SubParsersAction):
            unknown = self._unknown_flag_before(value)
            if unknown is not None:
                # "tf-thread-advisor --bugdet 30": argparse took 30 for the subcommand
                raise argparse.ArgumentError(None, self._unrecognized([unknown], [self]))
            raise argparse.ArgumentError(
                None, f"unknown command {value!r}{hint} (commands: {listed})"
            )
        raise argparse.ArgumentError(
            action, f"invalid choice: {value!r}{hint} (choose from {listed})"
        )

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self._words = list(args) if args is not None else []
        return super().parse_known_args(args, namespace)

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            # flags of the chosen subcommand and the global ones are what the user could mean
            chosen = _subcommands(self).get(str(getattr(parsed, "command", "")))
            parsers: list[argparse.ArgumentParser] = [self] if chosen is None else [chosen, self]
            prog = self.prog if chosen is None else chosen.prog
            raise UsageError(f"{self._unrecognized(extras, parsers)} (see {prog} --help)")
        return parsed

    def _unknown_flag_before(self, value: str) -> str | None:
        """The first word before ``value`` that looks like a flag this parser does not know."""
        words = list(self._words)
        for word in words[: words.index(value)] if value in words else []:
            name = word.split("=", 1)[0]
            # argparse accepts unambiguous prefixes of a flag too (--log-f for --log-format)
            if name.startswith("-") and not any(flag.startswith(name) for flag in _flags(self)):
                return word
        return None

    def _unrecognized(self, extras: list[str], parsers: list[argparse.ArgumentParser]) -> str:
        names = [word.split("=", 1)[0] for word in extras if word.startswith("--")]
        hints = [hint for name in names if (hint := _flag_hint(name, parsers, len(names) > 1))]
        return "; ".join([f"unrecognized arguments: {' '.join(extras)}", *hints])


def _flag_hint(name: str, parsers: list[argparse.ArgumentParser], say_which: bool) -> str | None:
    """The closest flag here, or of a subcommand when the flag came before the subcommand."""
    owners: dict[str, list[str]] = {flag: [] for parser in parsers for flag in _flags(parser)}
    for parser in parsers:
        for command, sub in _subcommands(parser).items():
            for flag in _flags(sub):
                if flag not in owners or owners[flag]:
                    owners.setdefault(flag, []).append(command)
    guess = _closest(name, owners)
    if guess is None:
        return None
    where = f"an option of {', '.join(owners[guess])}: it goes after the command"
    if guess == name:
        return f"{name} is {where}"
    hint = f"did you mean {guess}" + (f" for {name}" if say_which else "") + "?"
    return f"{hint} ({where})" if owners[guess] else hint
