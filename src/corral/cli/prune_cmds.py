"""`corral prune`: delete what is old enough (corral/usecases/retention.py), or count it."""

from __future__ import annotations

from corral.cli import parsing
from corral.cli.commands import Arg, Command
from corral.cli.context import Context
from corral.foundation.errors import InvalidInput
from corral.store import is_http_url


def cmd_prune(ctx: Context) -> int:
    """One retention pass with the ages given, else those of `[retention]`; its counts."""
    from corral.usecases import retention  # prune alone

    a = ctx.args
    if is_http_url(ctx.db):
        raise InvalidInput(
            "db", "a local store: prune runs on the store's host, where the runs' files are", ctx.db
        )
    s = ctx.settings
    ages = retention.Ages(
        finished_s=_age("finished_older_than", a.finished_older_than, s.retention_finished_after_s),
        events_s=_age("events_older_than", a.events_older_than, s.retention_events_after_s),
        workers_s=_age("workers_offline_older_than", a.workers_offline_older_than,
                       s.retention_workers_after_s),
    )  # fmt: skip
    pruned = retention.prune(
        ctx.store.for_maintenance(),  # retention deletes in every namespace
        ages,
        dry_run=a.dry_run,
        unlanded=a.with_unlanded_work or s.retention_unlanded_work,
    )
    verb = "would delete" if pruned.dry_run else "deleted"
    line = f"{verb} {pruned.tasks} tasks"
    if not pruned.dry_run:
        line += f" ({pruned.runs} runs, {pruned.files} files)"
    ctx.emit(pruned.to_dict(), f"{line}, {pruned.events} events, {pruned.workers} workers")
    return 0


def _age(field: str, raw: str | None, configured: float | None) -> float | None:
    """The flag's duration, else the setting's; `0` keeps that kind of row."""
    given = parsing.duration(field, raw)
    value = configured if given is None else given
    return value or None


COMMANDS = (
    Command(
        "prune",
        cmd_prune,
        "delete finished tasks, events and gone workers older than given",
        Arg("--finished-older-than", metavar="DURATION",
            help="finished tasks unchanged this long (default retention.finished_after; 0 keeps)"),
        Arg("--events-older-than", metavar="DURATION",
            help="events this old (default retention.events_after; 0 keeps)"),
        Arg("--workers-offline-older-than", metavar="DURATION",
            help="dead or offline workers silent this long (default 7d; 0 keeps)"),
        Arg("--with-unlanded-work", action="store_true",
            help="also finished tasks whose unlanded work only backup refs hold, each named "
                 "in a task.pruned_unlanded event (default retention.unlanded_work)"),
        Arg("--dry-run", action="store_true", help="count, delete nothing"),
    ),
)  # fmt: skip
