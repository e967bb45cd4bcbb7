"""The plain command lines, parsed without argparse; anything else goes to argparse.

A bash loop runs `corral worker heartbeat ID` and `corral claim ID WORKER` thousands of
times, and importing argparse and building its parsers is about 3 ms of each. This parser
accepts only forms whose meaning is not in doubt: the command's words, its positionals
exactly, and its options spelled in full (`--lease 5m`, `--lease=5m`, `--json`). Any
other token (`-h`, an abbreviation, `--`, a value starting with `-`, a missing or extra
positional, a command with an argument of another shape) returns None, and argparse
parses the line instead, so help and every usage error come from argparse. When this
parser accepts a line, the namespace is the one argparse would build.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from types import SimpleNamespace
from typing import Any

from corral.cli.commands import GROUPS, Arg, Command

# Options every level accepts (argtree's `common` parent): the store, its namespace, --json.
_COMMON = (Arg("--db"), Arg("--namespace"), Arg("--json", action="store_true"))
_PLAIN_OPTIONS = frozenset({"help", "metavar", "dest", "default", "required", "action"})
_PLAIN_ACTIONS = frozenset({None, "store", "store_true", "append"})


def parse(argv: list[str], command: Command) -> SimpleNamespace | None:
    """The namespace argparse would give for `argv`, or None when argparse must decide."""
    if not _plain(command):
        return None
    values: dict[str, Any] = {"db": None, "namespace": None, "json": False}
    if not _read(argv, command, values):
        return None
    return SimpleNamespace(**values)


def _plain(command: Command) -> bool:
    if command.customize is not None:
        return False
    for arg in command.args:
        if not _PLAIN_OPTIONS.issuperset(arg.options):
            return False
        if arg.options.get("action") not in _PLAIN_ACTIONS:
            return False
        if arg.positional and len(arg.options.keys() - {"help", "metavar"}):
            return False
    return True


def _read(argv: list[str], command: Command, values: dict[str, Any]) -> bool:
    """Fill `values` from `argv`; False as soon as a token is not plain."""
    words = list(command.words)
    group = words[0] if words[0] in GROUPS else None
    leaf = [a for a in command.args if not a.positional]
    positionals = [a for a in command.args if a.positional]
    options = _by_flag(_COMMON)
    tokens = iter(argv)
    for token in tokens:
        if not token.startswith("-"):
            if words:  # the next command word
                if token != words.pop(0):
                    return False
                if not words:  # the leaf: its own options from here on
                    options.update(_by_flag(leaf))
                    _defaults(command, values)
                continue
            if not positionals:
                return False
            values[positionals.pop(0).dest] = token
            continue
        name, eq, inline = token.partition("=")
        arg = options.get(name)
        if arg is None or not _take(arg, values, inline if eq else None, tokens):
            return False
    if words or positionals:
        return False
    if group is not None:
        values["command"], values[f"{group}_command"] = command.words
    else:
        values["command"] = command.words[0]
    values["handler"] = command.handler
    return all(a.dest in values and values[a.dest] is not None for a in _required(command))


def _by_flag(args: Iterable[Arg]) -> dict[str, Arg]:
    return {flag: arg for arg in args for flag in arg.flags}


def _defaults(command: Command, values: dict[str, Any]) -> None:
    for arg in command.args:
        if arg.positional:
            continue
        default = arg.options.get("default")
        if arg.options.get("action") == "store_true":
            default = bool(default)
        values[arg.dest] = default


def _required(command: Command) -> list[Arg]:
    return [a for a in command.args if a.options.get("required")]


def _take(arg: Arg, values: dict[str, Any], inline: str | None, tokens: Iterator[str]) -> bool:
    """Apply one option; False when its value is missing or looks like an option."""
    action = arg.options.get("action")
    if action == "store_true":
        if inline is not None:
            return False
        values[arg.dest] = True
        return True
    value = inline if inline is not None else next(tokens, None)
    if value is None or value.startswith("-"):
        return False
    if action == "append":
        values[arg.dest] = [*(values[arg.dest] or ()), value]
    else:
        values[arg.dest] = value
    return True
