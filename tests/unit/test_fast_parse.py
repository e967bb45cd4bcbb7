"""The fast path parses a command line only when argparse would, and exactly as argparse would.

Both parsers read the same command tables (corral.cli.commands); these tests hold the
fast path to argparse's answer for hand-picked lines and for generated ones.
"""

from __future__ import annotations

import contextlib
import io

import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from corral.cli import argtree, fast_parse
from corral.cli.commands import all_commands, command_words, find_command

ALL_COMMANDS = all_commands()


def by_argparse(argv: list[str]) -> dict[str, object] | None:
    """argparse's namespace for `argv` as a dict, or None when it refuses the line."""
    try:
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            return vars(argtree.parse(argv, command_words(argv)))
    except SystemExit:
        return None


def by_fast_path(argv: list[str]) -> dict[str, object] | None:
    """The fast path's namespace for `argv` as a dict, or None when it hands the line on."""
    command = find_command(command_words(argv))
    args = None if command is None else fast_parse.parse(argv, command)
    return None if args is None else vars(args)


PLAIN = [
    ["worker", "heartbeat", "w-1"],
    ["worker", "heartbeat", "w-1", "--json"],
    ["--json", "worker", "heartbeat", "w-1"],
    ["--db", "x.db", "worker", "--json", "heartbeat", "w-1", "--db=y.db"],
    ["ready", "--json"],
    ["ready", "--limit", "1", "--kind", "a", "--kind=b", "--queue", "q", "--json"],
    ["claim", "t-1", "w-1"],
    ["claim", "--lease", "5m", "t-1", "w-1", "--json"],
    ["claim", "t-1", "--lease=", "w-1"],
    ["claim:next", "w-1", "--kind", "code"],
    ["done", "t-1", "--result", "{}", "--token", "3"],
    ["fail", "t-1", "--error", "boom"],
    ["worker", "register", "--name", "n", "--label", "a=b", "--max-concurrent", "2"],
    ["logs", "r-1", "--stderr", "--follow"],
    ["run", "show", "r-1"],
    ["init"],
    ["reconcile", "--json"],
    ["show", ""],
]

HANDED_ON = [
    ["worker", "heartbeat", "w-1", "--js"],  # an abbreviation argparse accepts
    ["claim", "t-1", "w-1", "--lease", "-5"],  # a value that looks like an option
    ["claim", "t-1"],  # a missing positional: argparse's error
    ["worker", "heartbeat", "w-1", "w-2"],  # an extra positional
    ["worker", "heartbeat", "--", "w-1"],
    ["worker", "heartbeat", "-h"],
    ["fail", "t-1"],  # a required option missing
    ["add", "title", "--depends-on", "t-1", "t-2"],  # nargs: argparse only
    ["worker", "status", "w-1"],  # an optional positional: argparse only
    ["worker", "start", "--name", "n", "--exec", "true"],  # a customized parser
    ["worker"],
    ["frobnicate"],
    [],
]


@pytest.mark.parametrize("argv", PLAIN, ids=" ".join)
def test_plain_lines_parse_as_argparse_parses_them(argv):
    """A plain line gives the fast path the very namespace argparse gives."""
    expected = by_argparse(argv)
    assert expected is not None
    assert expected == by_fast_path(argv)


@pytest.mark.parametrize("argv", HANDED_ON, ids=" ".join)
def test_other_lines_are_left_to_argparse(argv):
    """Help, abbreviations, odd values, missing or extra arguments go to argparse."""
    assert None is by_fast_path(argv)


VALUES = ["x", "", "5m", "-1", "-x", "--", "-h", "--json", "--db", "--db=z", "--js"]


def option_units(command) -> list[list[str]]:
    """Each option of `command` (and --db, --json) as it might be written."""
    units: list[list[str]] = [["--json"], ["--db", "d.db"], ["--db=e.db"]]
    for arg in command.args:
        if arg.positional:
            continue
        flag = arg.flags[0]
        flat = arg.options.get("action") == "store_true"
        units += [[flag]] if flat else [[flag, "v"], [f"{flag}=w"], [flag, "v2"]]
    return units


@st.composite
def lines(draw) -> list[str]:
    """A command's words, then its positionals in order among its options, maybe one odd token."""
    command = draw(st.sampled_from(ALL_COMMANDS))
    units = option_units(command)
    chosen = draw(st.lists(st.sampled_from(units), max_size=4))
    positionals = [[f"p{i}"] for i, a in enumerate(command.args) if a.positional]
    body = draw(st.permutations(chosen + positionals))
    order = iter(positionals)
    body = [next(order) if u in positionals else u for u in body]  # keep positionals in order
    line = [*command.words, *(t for unit in body for t in unit)]
    if draw(st.booleans()):
        odd = draw(st.sampled_from([*VALUES, *command.words, *(t for u in units for t in u)]))
        line.insert(draw(st.integers(0, len(line))), odd)
    head = draw(st.lists(st.sampled_from(["--json", "--db", "d.db", "--db=e.db"]), max_size=2))
    return [*head, *line]


@hypothesis_settings(max_examples=600, derandomize=True, deadline=None)
@given(lines())
def test_the_fast_path_never_disagrees_with_argparse(argv):
    """For any line, the fast path either hands it on or gives argparse's namespace."""
    fast = by_fast_path(argv)
    if fast is not None:
        assert by_argparse(argv) == fast
