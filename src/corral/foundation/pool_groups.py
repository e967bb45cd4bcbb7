"""`[[pool.group]]`: one pool, several kinds of worker.

Each `[[pool.group]]` table of config.toml is one group of the orchestrator's slots:
`workers` of them (default 1), named `NAME-1` ... `NAME-N` after the group's `name`
(default: its agent profile's name, else `groupN`), each running a worker with the
`[pool]` options as the group's own keys change them; any `[pool]` key but `workers` may
be a group's. A flag of `orchestrator start` (a worker option) wins over both, in every
group. Errors name the group by its place in the file, counted from 1:
`pool.group[2].workers: expected a positive integer`. Read only when a file has groups
(settings.py imports this module then).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from corral.foundation.errors import InvalidInput
from corral.foundation.worker_options import OPTIONS

if TYPE_CHECKING:
    from corral.foundation.settings import Settings

# A group's name starts its slots' names, and so their workers' names and log files.
GROUP_NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,39}"
_OPTION_BY_KEY = {o.key: o for o in OPTIONS}
_KEYS = ("name", "workers", *_OPTION_BY_KEY)


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupConfig:
    """One `[[pool.group]]` as the file gave it, checked: its own worker options by
    setting name (`pool_agent` ...), as the `[pool]` keys of the same name would be."""

    name: str
    workers: int
    values: Mapping[str, Any]


def parse_groups(raw: Any, path: str, base: Settings, most: int) -> tuple[GroupConfig, ...]:
    """The file's `[[pool.group]]` tables, checked against `base` (the settings with the
    file's other keys): each option as its `[pool]` key would be, names unique, at most
    `most` workers in all. InvalidInput names the group and key."""
    if not isinstance(raw, list) or not raw or not all(isinstance(t, dict) for t in raw):
        raise InvalidInput(f"{path}: pool.group", "[[pool.group]] tables")
    groups = tuple(_group(table, n, path, base) for n, table in enumerate(raw, start=1))
    seen: set[str] = set()
    for n, group in enumerate(groups, start=1):
        if group.name in seen:
            expected = "a name no other group has (set name = ...)"
            raise InvalidInput(f"{path}: pool.group[{n}].name", expected, group.name)
        seen.add(group.name)
    if sum(g.workers for g in groups) > most:
        raise InvalidInput(f"{path}: pool.group", f"at most {most} workers in all the groups")
    return groups


def _group(table: dict[str, Any], n: int, path: str, base: Settings) -> GroupConfig:
    where = f"{path}: pool.group[{n}]"
    for key in table:
        if key not in _KEYS:
            raise InvalidInput(f"{where}.{key}", f"one of {', '.join(_KEYS)}")
    workers = table.get("workers", 1)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InvalidInput(f"{where}.workers", "a positive integer", workers)
    own = {_OPTION_BY_KEY[k].setting: v for k, v in table.items() if k in _OPTION_BY_KEY}
    labels = {
        _OPTION_BY_KEY[k].setting: f"pool.group[{n}].{k}" for k in table if k in _OPTION_BY_KEY
    }
    checked = base.with_values(own, path, labels)  # each value as its [pool] key is checked
    values = {name: getattr(checked, name) for name in own}
    name = table.get("name", checked.pool_agent or f"group{n}")
    if not isinstance(name, str) or not re.fullmatch(GROUP_NAME, name):
        expected = "a name of up to 40 letters, digits, _ . and -, such as claude"
        raise InvalidInput(f"{where}.name", expected, name)
    return GroupConfig(name=name, workers=workers, values=values)
