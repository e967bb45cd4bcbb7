"""The command table (corral.cli.commands): each command's module and summary, kept equal to
what the modules declare, so that help can list commands without importing them."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from corral.cli.commands import COMMAND_MODULES, COMMAND_TABLE, all_commands, command_words

# Run `corral ARGV` in a fresh interpreter and print the corral modules it imported.
IMPORTED = """
import contextlib, io, json, sys
from corral.cli.main import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        main(json.loads(sys.argv[1]))
    except SystemExit:
        pass
sys.stdout.write(json.dumps(sorted(m for m in sys.modules if m.startswith("corral."))))
"""


def imported_by(argv: list[str]) -> list[str]:
    """The corral modules a fresh interpreter has imported after `corral ARGV`."""
    done = subprocess.run(
        [sys.executable, "-c", IMPORTED, json.dumps(argv)],
        capture_output=True,
        text=True,
        check=True,
    )
    modules: list[str] = json.loads(done.stdout)
    return modules


def test_the_table_lists_every_command_as_its_module_declares_it():
    """Each command's words, module and summary, in order, are the ones its module declares."""
    declared = [(" ".join(c.words), COMMAND_MODULES[c.words[0]], c.help) for c in all_commands()]
    expected = [(words, module, summary) for words, (module, summary) in COMMAND_TABLE.items()]
    assert expected == declared


@pytest.mark.parametrize(
    "argv", [["--help"], [], ["frobnicate"], ["worker", "--help"], ["worker", "frobnicate"]]
)
def test_help_and_unknown_words_import_no_command_module(argv):
    """Help and a listing of commands come from the table: no command module, no store."""
    imported = imported_by(argv)
    assert [] == [m for m in imported if m.endswith("_cmds") or m.startswith("corral.store")]


def test_a_command_imports_its_own_module_alone():
    """`corral worker heartbeat --help` imports worker_cmds and no other command module."""
    imported = imported_by(["worker", "heartbeat", "--help"])
    assert ["corral.cli.worker_cmds"] == [m for m in imported if m.endswith("_cmds")]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--name", "x", "ready"], ["ready"]),  # argparse reads --name as --namespace
        (["--d", "x.db", "worker", "--n", "y", "list"], ["worker", "list"]),
        (["--db=x.db", "--json", "worker", "list", "--name", "n"], ["worker", "list"]),
        (["--", "ready"], ["ready"]),
    ],
)
def test_command_words_skip_the_values_of_abbreviated_options(argv, expected):
    """The command's words are the ones argparse will read, whatever the store options."""
    assert expected == command_words(argv)
