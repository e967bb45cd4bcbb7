"""`[[pool.group]]` in config.toml: each group's options, names and checks
(corral.foundation.pool_groups), and how status shows the groups."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral.cli import render
from corral.foundation.errors import InvalidInput
from corral.foundation.settings import load_settings

FLEET = """
[pool]
timeout = "1h"
worktree = true

[[pool.group]]
agent = "claude"
workers = 3
kinds = ["code"]

[[pool.group]]
agent = "codex"
workers = 2
kinds = ["tests"]
timeout = "10m"

[[pool.group]]
name = "docs"
exec = "write-docs"
kinds = ["docs"]
"""


def _load(tmp_path: Path, text: str) -> object:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return load_settings({}, str(path))


def test_each_group_has_its_count_its_name_and_the_pool_keys_it_does_not_change(
    tmp_path: Path,
) -> None:
    """A group's own keys win over `[pool]`'s; its name is its `name`, else its agent's."""
    pool = _load(tmp_path, FLEET).pool  # type: ignore[attr-defined]
    assert [
        ("claude", 3, "claude", "", ("code",), 3600.0, True),
        ("codex", 2, "codex", "", ("tests",), 600.0, True),
        ("docs", 1, "", "write-docs", ("docs",), 3600.0, True),
    ] == [
        (
            g.name,
            g.workers,
            g.options.agent,
            g.options.exec,
            g.options.kinds,
            g.options.timeout_s,
            g.options.worktree,
        )
        for g in pool.groups
    ]
    assert 6 == pool.workers


def test_a_flag_wins_over_every_groups_own_key(tmp_path: Path) -> None:
    """`orchestrator start --timeout 5m` applies to each group, whatever its file says."""
    settings = _load(tmp_path, FLEET).with_flags({"pool_timeout_s": "5m"})  # type: ignore[attr-defined]
    assert [300.0, 300.0, 300.0] == [g.options.timeout_s for g in settings.pool.groups]


def test_a_pool_without_groups_is_one_group_named_slot(tmp_path: Path) -> None:
    """No `[[pool.group]]`: `pool.workers` slots of the `[pool]` options, as before."""
    pool = _load(tmp_path, '[pool]\nworkers = 4\nexec = "x"\n').pool  # type: ignore[attr-defined]
    assert [("slot", 4, "x")] == [(g.name, g.workers, g.options.exec) for g in pool.groups]


@pytest.mark.parametrize(
    ("right", "wrong", "expected"),
    [
        ("workers = 2", "workers = 0", "[2].workers: expected a positive integer, got 0"),
        ('timeout = "10m"', 'timeout = "soon"', "[2].timeout: expected a duration such as 90s"),
        ('name = "docs"', 'name = "codex"', "[3].name: expected a name no other group has"),
        ("workers = 3", "workers = 3\nconcurrency = 0", "[1].concurrency: expected a value of at"),
        ('agent = "codex"', 'agnt = "codex"', "[2].agnt: expected one of name, workers, exec"),
    ],
)
def test_a_bad_group_is_one_error_naming_it_by_its_place(
    tmp_path: Path, right: str, wrong: str, expected: str
) -> None:
    """A bad value, a duplicate name or an unknown key names `pool.group[N].KEY`."""
    with pytest.raises(InvalidInput) as caught:
        _load(tmp_path, FLEET.replace(right, wrong))
    assert str(caught.value).startswith(f"{tmp_path / 'config.toml'}: pool.group{expected}")


def test_pool_workers_beside_groups_is_refused(tmp_path: Path) -> None:
    """`[pool] workers` would say nothing with groups: it is an error, not ignored."""
    with pytest.raises(InvalidInput) as caught:
        _load(tmp_path, FLEET.replace("[pool]\n", "[pool]\nworkers = 2\n"))
    assert "pool.workers: expected no value beside [[pool.group]]" in str(caught.value)


def test_a_group_line_counts_its_slots_by_state_and_their_restarts() -> None:
    """status shows each group apart: its slots' states and restarts, what it runs."""
    slots = [
        {"name": "codex-1", "group": "codex", "state": "running", "restarts": 0},
        {"name": "codex-2", "group": "codex", "state": "backoff", "restarts": 2},
        {"name": "claude-1", "group": "claude", "state": "running", "restarts": 5},
    ]
    group = {"name": "codex", "workers": 2, "agent": "codex", "kinds": ["tests"], "queues": []}
    expected = "group codex: 2 worker(s) (backoff 1, running 1; 2 restart(s))  agent codex"
    assert f"{expected}  kinds tests  queues *" == render.group_line(group, slots)
    assert [] == render.pool_groups({"groups": [{"name": "slot", "workers": 2}]})


def test_config_show_lists_each_groups_keys_by_its_place(tmp_path: Path) -> None:
    """`config show --json` rows `pool.group[N].KEY` for each group's name, workers and keys."""
    settings = _load(tmp_path, FLEET)
    rows = {r["key"]: r["value"] for r in settings.rows() if r["key"].startswith("pool.group[2]")}  # type: ignore[attr-defined]
    expected = {
        "pool.group[2].name": "codex",
        "pool.group[2].workers": 2,
        "pool.group[2].agent": "codex",
        "pool.group[2].kinds": ["tests"],
        "pool.group[2].timeout": 600.0,
    }
    assert expected == rows
