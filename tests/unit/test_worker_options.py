"""The one table of worker options: every place that names an option agrees with it."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest

from corral.cli import argtree, worker_flags
from corral.foundation.errors import InvalidInput
from corral.foundation.policies import WorkerOptions
from corral.foundation.settings import SPEC, Settings
from corral.foundation.worker_options import OPTIONS
from corral.runtime.pool.worker_process import worker_argv

DOCS = Path(__file__).parents[2] / "docs"

# A value off its default for every option, as a user would type it.
GIVEN = {
    "pool_exec": "agent --fast 'two words'",
    "pool_kinds": ["code", "review"],
    "pool_queues": ["q1"],
    "pool_labels": ["team=a", "zone=b=c"],
    "pool_version": "9.9",
    "pool_prompt_template": "prompt.txt",
    "pool_prompt_arg": True,
    "pool_prompt_arg_bare": True,
    "pool_workdir": "-odd dir",
    "pool_timeout_s": "45m",
    "pool_concurrency": "3",
    "pool_max_tasks": "7",
    "pool_lease_s": "10m",
    "pool_stall_timeout_s": "90s",
    "pool_kill_stalled": True,
    "pool_grace_s": "0",
    "pool_defer_delay_s": "2m",
    "pool_worktree": True,
    "pool_base": "develop",
    "pool_keep_worktrees": True,
}


def test_every_option_is_a_field_and_a_setting_in_the_tables_order() -> None:
    """WorkerOptions and settings.SPEC (`pool_FIELD`, `[pool] KEY`, default) follow the table."""
    assert [o.field for o in OPTIONS] == [f.name for f in fields(WorkerOptions)]
    assert [(o.setting, f"pool.{o.key}", o.default) for o in OPTIONS] == [
        (o.setting, SPEC[o.setting].key, getattr(Settings(), o.setting)) for o in OPTIONS
    ]


# `worker start` reads the slot's whole line; `orchestrator start` the options (no --name).
@pytest.mark.parametrize(
    ("words", "first"), [(["worker", "start"], 5), (["orchestrator", "start"], 9)]
)
def test_a_slots_command_line_means_the_pools_options_to_both_commands(words, first) -> None:
    """worker_argv's flags, parsed by `worker start` (and `orchestrator start`, which takes
    the same), yield the very options of the pool."""
    pool = Settings().with_flags({"pool_workers": "2", **GIVEN}).pool
    argv = worker_argv("slot-2", pool.options)
    assert ["worker", "start", "--name", "slot-2", "--shutdown-timeout", "1d"] == argv[3:9]
    parsed = argtree.parse([*words, *argv[first:]], words)
    assert pool.options == Settings().with_flags(worker_flags.given(parsed)).pool.options


def test_options_at_their_default_are_left_off_a_slots_command_line() -> None:
    """A pool of defaults runs `worker start --name --shutdown-timeout --exec` and no more."""
    pool = Settings().with_flags({"pool_exec": "agent"}).pool
    assert ["--name", "slot-1", "--shutdown-timeout", "1d", "--exec=agent"] == worker_argv(
        "slot-1", pool.options
    )[5:]


def test_a_flags_error_names_the_option_as_its_key_and_flags_are_recorded_as_such() -> None:
    """`--timeout 0` is `timeout: expected ...` in one line, the [pool] key's own check."""
    with pytest.raises(InvalidInput) as caught:
        Settings().with_flags({"pool_timeout_s": "0"})
    assert "timeout: expected a duration greater than zero, such as 30m, got 0.0" == str(
        caught.value
    )
    flagged = Settings().with_flags({"pool_concurrency": "2"})
    assert "command line" == flagged.source_of("pool_concurrency")


def test_the_configuration_page_lists_every_setting() -> None:
    """docs/configuration.md has a row for every `[section] key` of SPEC."""
    page = (DOCS / "configuration.md").read_text()
    missing = [
        spec.key
        for name, spec in SPEC.items()
        if f"| `{name}` | `[{spec.key.split('.')[0]}] {spec.key.split('.', 1)[1]}` |" not in page
    ]
    assert [] == missing
