"""The command table (corral.cli.commands): each command's module and summary, kept equal to
what the modules declare, so that help can list commands without importing them."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import corral
from corral.cli.commands import COMMAND_MODULES, COMMAND_TABLE, all_commands, command_words
from corral.model.tasks import NewTask
from corral.model.workers import NewWorker
from corral.store import open_store
from corral.usecases import tasks, workers

# Run `corral ARGV` in a fresh interpreter and print the modules it imported.
IMPORTED = """
import contextlib, io, json, sys
from corral.cli.main import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        main(json.loads(sys.argv[1]))
    except SystemExit:
        pass
sys.stdout.write(json.dumps(sorted(sys.modules)))
"""


def imported_by(argv: list[str], env: dict[str, str] | None = None) -> list[str]:
    """The modules a fresh interpreter has imported after `corral ARGV`."""
    done = subprocess.run(
        [sys.executable, "-c", IMPORTED, json.dumps(argv)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
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


def test_version_builds_no_parser_and_opens_no_store():
    """`corral --version` prints what argparse would, importing neither argparse nor a
    command module nor the store: it starts as fast as any command (bench/cli_latency.py)."""
    done = subprocess.run(
        [sys.executable, "-m", "corral.cli.main", "--version"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (0, f"corral {corral.__version__}\n", "") == (done.returncode, done.stdout, done.stderr)
    imported = imported_by(["--version"])
    heavy = [m for m in imported if m == "argparse" or m.endswith("_cmds") or "store" in m]
    assert [] == heavy


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


# What none of the commands bench/cli_latency.py times needs: the policy records, the
# runtime, git, the settings file's parser, argparse, psutil, base64 (a cursor is made by
# binascii), dataclasses and inspect (corral.foundation.records makes the records), the human
# renderer (--json, or no listing), the provider and event records, the dashboard's page
# keys, the use cases of tasks and usage.
UNUSED = (
    "argparse",
    "base64",
    "dataclasses",
    "inspect",
    "corral.cli.argtree",
    "corral.cli.render",
    "corral.git",
    "corral.model.backoff",
    "corral.model.events",
    "corral.model.providers",
    "corral.model.task_pages",
    "corral.foundation.policies",
    "corral.runtime",
    "corral.usecases.tasks",
    "corral.usecases.usage",
    "psutil",
    "tomllib",
)


def test_the_measured_commands_import_nothing_they_do_not_use(tmp_path):
    """`ready --json`, `worker heartbeat`, `claim` and `worker register` start without the
    modules none of them uses (bench/cli_latency.py times them)."""
    db = str(tmp_path / "corral.db")
    with open_store(db) as store:
        worker = workers.register(store, NewWorker(name="w")).worker.id
        task = tasks.enqueue(store, NewTask(title="t")).id
    env = {**os.environ, "CORRAL_DB": db}
    lines = [
        ["ready", "--json"],
        ["worker", "heartbeat", worker],
        ["claim", task, worker],
        ["worker", "register", "--name", "x"],
    ]
    for argv in lines:
        imported = imported_by(argv, env)
        unused = [m for m in imported if _within(m, UNUSED)]
        assert (argv, []) == (argv, unused)


def _within(module: str, packages: tuple[str, ...]) -> bool:
    """Whether `module` is one of `packages` or inside one."""
    return any(module == p or module.startswith(f"{p}.") for p in packages)
