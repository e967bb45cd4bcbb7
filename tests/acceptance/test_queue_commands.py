"""`corral queue set` / `queue list` and the limits from config.toml, through the CLI."""

from __future__ import annotations

import json
from pathlib import Path


def test_init_writes_configured_limits_and_add_beyond_max_ready_exits_1(cli) -> None:  # type: ignore[no-untyped-def]
    """[queues.small] max_ready = 1 in config.toml: init applies it, the second add is refused."""
    (Path(cli.db).parent / "config.toml").write_text("[queues.small]\nmax_ready = 1\n")
    assert ["small"] == json.loads(cli("init", "--json").out)["queue_limits"]
    assert 0 == cli("add", "first", "--queue", "small").code
    refused = cli("add", "second", "--queue", "small")
    assert 1 == refused.code
    expected = "corral: error: queue 'small' is full: 1 tasks waiting, its max_ready is 1"
    assert [expected] == refused.err.splitlines()
    assert 1 == len(json.loads(cli("list", "--json").out))


def test_queue_set_and_list_show_what_is_held_back(cli) -> None:  # type: ignore[no-untyped-def]
    """With max_running 1 and one task running, `queue list` says the queue is held back."""
    assert 0 == cli("queue", "set", "api", "--max-running", "1", "--rate", "30").code
    cli("add", "a", "--queue", "api")
    cli("add", "b", "--queue", "api")
    worker = cli("worker", "register", "--name", "w", "--max-concurrent", "2").out.strip()
    assert 0 == cli("claim:next", worker).code
    assert 0 == cli("claim:next", worker).code  # nothing claimable: exits 0, prints nothing
    [api] = json.loads(cli("queue", "list", "--json").out)
    assert (1, 1, 1, 30.0) == (api["ready"], api["running"], api["max_running"], api["rate"])
    assert "at max_running (1 of 1 running)" == api["held"]
    assert "at max_running" in cli("queue", "list").out
    cleared = json.loads(cli("queue", "set", "api", "--max-running", "none", "--json").out)
    assert (None, 30.0) == (cleared["max_running"], cleared["rate"])


def test_bad_limits_exit_2_with_one_line(cli) -> None:  # type: ignore[no-untyped-def]
    """A limit that is not a positive number is one line naming the flag's field, exit 2."""
    result = cli("queue", "set", "api", "--max-ready", "many")
    expected = (
        "corral: error: max_ready: expected a finite number greater than 0 in ASCII digits, "
        "or none, got 'many'"
    )
    assert (2, [expected]) == (result.code, result.err.splitlines())
    assert [] == json.loads(cli("queue", "list", "--json").out)
