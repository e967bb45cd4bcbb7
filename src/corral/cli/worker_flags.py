"""The worker options as flags, the same on `worker start` and `orchestrator start`.

Both commands' flags come from the one table (corral.foundation.worker_options), and what was given
goes through the settings' parsing (`Settings.with_flags`), so a flag and its `[pool]`
key take the same values and refuse the same mistakes. `worker start` adds the options a
pool decides for its slots (`START`: `--name`, `--once`, `--shutdown-timeout`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from corral.cli.commands import Arg
from corral.foundation.errors import InvalidInput
from corral.foundation.worker_options import OPTIONS, START, Option

if TYPE_CHECKING:
    import argparse

    from corral.cli.context import Args

# `worker start` takes one of them (an argparse group), or `--agent` (which may add --exec).
JOB = frozenset({"exec", "call"})


def option_args(*, skip: frozenset[str] = frozenset()) -> tuple[Arg, ...]:
    """An Arg per worker option, but those in `skip`."""
    return tuple(_arg(o) for o in OPTIONS if o.field not in skip)


def start_args() -> tuple[Arg, ...]:
    """`worker start`'s flags but its job group: `--name` (required), every option, then
    `--once` and `--shutdown-timeout`."""
    name, *after = (_arg(o) for o in START)
    name.options["required"] = True  # no worker is nameless
    return (name, *option_args(skip=JOB), *after)


def add_job_group(parser: argparse.ArgumentParser) -> None:
    """`--exec CMD | --call MODULE:FUNCTION`, not both (`worker start`); whether one is
    needed depends on `--agent`, which preflight checks (one line, exit 2)."""
    group = parser.add_mutually_exclusive_group()
    for option in OPTIONS:
        if option.field in JOB:
            arg = _arg(option)
            group.add_argument(*arg.flags, **arg.options)


def given(args: Args) -> dict[str, Any]:
    """The worker options given on the command line, by setting name (`pool_timeout_s`)."""
    values: dict[str, Any] = {}
    for option in OPTIONS:
        raw = getattr(args, _arg(option).dest, None)
        if raw == "":  # `--provider "$UNSET"`: a list's items are checked as names
            raise InvalidInput(option.flag.lstrip("-"), "a value (it was given empty)", raw)
        if raw is not None and raw is not False:
            values[option.setting] = raw
    return values


def _arg(option: Option) -> Arg:
    extra: dict[str, Any] = {"metavar": option.metavar} if option.metavar else {}
    if option.unit == "flag":
        extra["action"] = "store_true"
    elif option.unit == "list":
        extra["action"] = "append"
    return Arg(option.flag, help=option.help, **extra)
