"""The argparse tree, built from the command tables: help, and every usage error.

Only the branch the command line names is built (`corral worker heartbeat` builds the
root, `worker` and `heartbeat`), because building every parser costs milliseconds; an
unknown or missing word lists all its siblings, so help and "invalid choice" name them.
The siblings are listed from the command table (their words and summaries), as parsers
with no arguments, so `corral --help` and `corral worker --help` import no command module.
A usage error prints the usage of the command it concerns and one line, and exits 2.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import NoReturn

from corral import __version__
from corral.cli.commands import COMMAND_TABLE, GROUPS, Command, find_command
from corral.foundation.errors import LINE_CHARS, QUOTED_CHARS
from corral.foundation.printable import one_line

USAGE_EXIT = 2
DB_HELP = "store path or URL (default $CORRAL_DB or .corral/corral.db)"
JSON_HELP = "machine-readable output"
NAMESPACE_HELP = "the namespace to act in (default $CORRAL_NAMESPACE or 'default')"

Path = tuple[str, ...]

# Options whose value is another program's argument, and so often starts with a dash
# (`--agent-arg --full-auto`): argparse would take such a value for an option of ours.
DASHED_VALUES = frozenset({"--agent-arg"})


class _Parser(argparse.ArgumentParser):
    """argparse whose errors show this parser's usage, one line, and exit code 2."""

    def _get_formatter(self) -> argparse.HelpFormatter:
        # argparse would import shutil (and with it bz2, lzma, zlib) just to learn the width.
        return argparse.HelpFormatter(prog=self.prog, width=_columns() - 2)

    def error(self, message: str) -> NoReturn:
        # argparse quotes a bad value whole (`invalid choice: 'aaa...'`), and an
        # unrecognized one raw: escaped and cut as every error line is (cli/main.py).
        sys.stderr.write(self.format_usage())
        shown = one_line(re.sub(_LONG_WORD, _cut, message), LINE_CHARS)
        sys.stderr.write(f"corral: error: {shown} (see `{self.prog} --help`)\n")
        sys.exit(USAGE_EXIT)


# A quoted value, or a word, longer than an error quotes of a value (errors.QUOTED_CHARS).
_LONG_WORD = rf"'[^']{{{QUOTED_CHARS},}}'|\S{{{QUOTED_CHARS + 1},}}"


def _cut(long_word: re.Match[str]) -> str:
    return long_word[0][: QUOTED_CHARS - 3] + "..."


def _columns() -> int:
    try:
        return int(os.environ.get("COLUMNS", "")) or os.get_terminal_size().columns
    except (ValueError, OSError):
        return 80


def parse(argv: list[str], words: list[str]) -> argparse.Namespace:
    """Parse `argv` with the branch `words` names; a usage error exits 2."""
    root, parsers = build(words)
    args, extras = root.parse_known_args(_glued(argv))
    if extras:
        deepest = parsers.get(_path_of(args), root)
        deepest.error(f"unrecognized arguments: {' '.join(extras)}")
    return args


def _glued(argv: list[str]) -> list[str]:
    """`argv` with `--agent-arg --full-auto` as `--agent-arg=--full-auto`, one word that
    argparse reads as the option's value; the words after `--` are left as they are."""
    out: list[str] = []
    words = iter(argv)
    for word in words:
        if word == "--":
            return [*out, word, *words]
        value = next(words, None) if word in DASHED_VALUES else None
        out.append(word if value is None else f"{word}={value}")
    return out


def _path_of(args: argparse.Namespace) -> Path:
    command: str = args.command
    if command in GROUPS:
        return (command, getattr(args, f"{command}_command"))
    return (command,)


def build(words: list[str]) -> tuple[argparse.ArgumentParser, dict[Path, argparse.ArgumentParser]]:
    """The root parser and every parser built under it, by command words."""
    common = _Parser(add_help=False)
    common.add_argument("--db", default=argparse.SUPPRESS, help=DB_HELP)
    common.add_argument("--namespace", default=argparse.SUPPRESS, help=NAMESPACE_HELP)
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help=JSON_HELP)
    root = _Parser(
        prog="corral", description="A headless orchestrator for fleets of long-running workers."
    )
    root.add_argument("--db", help=DB_HELP)
    root.add_argument("--namespace", help=NAMESPACE_HELP)
    root.add_argument("--json", action="store_true", help=JSON_HELP)
    root.add_argument("--version", action="version", version=f"corral {__version__}")
    sub = root.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=_Parser
    )
    tree = _Tree(sub, common)
    named = find_command(words)
    if named is not None:
        tree.add(named)
    else:
        for listed, summary in _listed(words):
            tree.list(listed, summary)
    return root, tree.parsers


def _listed(words: list[str]) -> list[tuple[Path, str]]:
    """The siblings of the unknown or missing word, as the command table has them: every
    first word (a group's summary for a group), or the commands of the group named."""
    if words and words[0] in GROUPS:
        return [(w, s) for w, s in _table() if w[0] == words[0]]
    top = {w[0]: GROUPS.get(w[0], s) for w, s in _table()}
    return [((word,), summary) for word, summary in top.items()]


def _table() -> list[tuple[Path, str]]:
    return [(tuple(words.split()), summary) for words, (_, summary) in COMMAND_TABLE.items()]


class _Tree:
    """Adds commands under the root, creating each group's parser on first use."""

    def __init__(self, sub: argparse._SubParsersAction[_Parser], common: _Parser) -> None:
        self.common = common
        self.subs: dict[Path, argparse._SubParsersAction[_Parser]] = {(): sub}
        self.parsers: dict[Path, argparse.ArgumentParser] = {}

    def add(self, command: Command) -> None:
        """Add `command`'s parser, its arguments and its handler."""
        parser = self.list(command.words, command.help)
        for arg in command.args:
            parser.add_argument(*arg.flags, **arg.options)
        if command.customize is not None:
            command.customize(parser)
        parser.set_defaults(handler=command.handler)

    def list(self, words: Path, summary: str) -> argparse.ArgumentParser:
        """Add the parser of `words` with its help line alone: enough for a listing."""
        *group, name = words
        parser = self._under(tuple(group)).add_parser(name, parents=[self.common], help=summary)
        self.parsers[words] = parser
        return parser

    def _under(self, group: Path) -> argparse._SubParsersAction[_Parser]:
        if group not in self.subs:
            (name,) = group
            parser = self.subs[()].add_parser(name, parents=[self.common], help=GROUPS[name])
            self.parsers[group] = parser
            self.subs[group] = parser.add_subparsers(
                dest=f"{name}_command", required=True, metavar="COMMAND"
            )
        return self.subs[group]
