"""Schedule commands: add, list, show, preview, pause, resume, trigger, backfill, remove.

Each parses, calls one use case of corral.usecases.schedules, and renders. Bad input (an expression
that does not parse, a field out of range, an unknown time zone, one that never fires) is
one line naming the field, exit 2, before anything is written.
"""

from __future__ import annotations

from datetime import datetime

from corral.cli import parsing
from corral.cli.commands import Arg, Command
from corral.cli.context import Context
from corral.cli.render import table
from corral.foundation.durations import parse_instant
from corral.foundation.errors import InvalidInput
from corral.model import cron
from corral.model.schedules import NewSchedule, Overlap, Schedule, ScheduleFire
from corral.usecases import schedules

ID = Arg("id", metavar="ID")
UPCOMING = 3  # fire times `schedule list` shows
OVERLAPS = [str(o) for o in Overlap]


def _when(at: datetime | None) -> str:
    return "-" if at is None else at.strftime("%Y-%m-%d %H:%M:%SZ")


def cmd_add(ctx: Context) -> int:
    """Add a schedule; its first fire is its first time after now."""
    a = ctx.args
    template = {
        "title": a.title,
        "queue": a.queue,
        "kind": a.kind,
        "payload": parsing.json_object("payload", a.payload),
        "requires_review": a.review,
    }
    spec = NewSchedule(
        id=a.id,
        cron=a.cron,
        timezone=a.timezone,
        template=template,
        overlap=Overlap(parsing.each_of("overlap", [a.overlap], OVERLAPS)[0]),
        max_catchup=parsing.whole("max_catchup", a.max_catchup, minimum=1) or 100,
        catchup_window_s=parsing.positive_duration("catchup_window", a.catchup_window),
    )
    added = schedules.add_schedule(ctx.store, spec, settings=ctx.settings)
    ctx.emit(added.to_dict(), f"schedule {added.id}: next fire {_when(added.next_fire_at)}")
    return 0


def cmd_list(ctx: Context) -> int:
    """Each schedule: expression, next fire times, last fire, its task's status, paused."""
    found = ctx.store.schedules.list_schedules()
    upcoming = {s.id: schedules.upcoming(s, UPCOMING) for s in found}
    if ctx.json:
        shown = [
            {**s.to_dict(), "next_fires": [at.isoformat() for at in upcoming[s.id]]} for s in found
        ]
        ctx.emit(shown, "")
        return 0
    ctx.emit(None, _schedule_table(found, upcoming) if found else "no schedules")
    return 0


def _schedule_table(found: list[Schedule], upcoming: dict[str, list[datetime]]) -> str:
    rows = [
        (
            s.id,
            s.cron + ("" if s.timezone == "UTC" else f" ({s.timezone})"),
            ", ".join(_when(at) for at in upcoming[s.id]) or "-",
            _when(s.last_fire_at),
            s.last_task_status or "-",
            f"paused: {s.pause_note}"
            if s.paused and s.pause_note
            else "paused"
            if s.paused
            else "",
        )
        for s in found
    ]
    return table(("ID", "CRON", "NEXT FIRES", "LAST FIRE", "LAST TASK", "PAUSED"), rows)


def cmd_show(ctx: Context) -> int:
    """A schedule and its newest fires: time, key, outcome, task and its status, why."""
    found = ctx.store.schedules.get_schedule(ctx.args.id)
    limit = parsing.whole("limit", ctx.args.limit, minimum=1) or 50
    fires = ctx.store.schedules.schedule_fires(found.id, limit)
    data = {**found.to_dict(), "fires": [f.to_dict() for f in fires]}
    ctx.emit(data, _schedule_detail(found, fires))
    return 0


def _schedule_detail(found: Schedule, fires: list[ScheduleFire]) -> str:
    state = f"paused ({found.pause_note})" if found.pause_note else "paused"
    head = (
        f"{found.id}: {found.cron} {found.timezone}, overlap {found.overlap}, "
        f"max_catchup {found.max_catchup}; {state if found.paused else 'active'}; "
        f"next fire {_when(found.next_fire_at)}; task {found.template.get('title')!r}"
    )
    rows = [
        (_when(f.fire_at), f.key, f.outcome, f.task_id or "-", f.task_status or "-", f.note or "")
        for f in fires
    ]
    fired = table(("FIRE AT", "KEY", "OUTCOME", "TASK", "STATUS", "WHY"), rows) if rows else ""
    return head + ("\n" + fired if fired else "\nno fires yet")


def cmd_preview(ctx: Context) -> int:
    """The next fire times and keys of a schedule or an expression; writes nothing."""
    a = ctx.args
    if (a.id is None) == (a.cron is None):
        raise InvalidInput("schedule", "a schedule ID or --cron EXPR, one of the two")
    expr, zone, schedule_id = a.cron, a.timezone, None
    if a.id is not None:
        found = ctx.store.schedules.get_schedule(a.id)
        expr, zone, schedule_id = found.cron, found.timezone, found.id
    after = parse_instant("from", a.from_) if a.from_ else ctx.store.now()
    count = parsing.whole("count", a.count, minimum=1, maximum=10_000) or 10
    times = schedules.preview(expr, zone, after=after, count=count, schedule_id=schedule_id)
    data = [{"fire_at": at.isoformat(), "key": key} for at, key in times]
    ctx.emit(data, "\n".join(_preview_line(at, key, zone) for at, key in times))
    return 0


def _preview_line(at: datetime, key: str | None, zone: str) -> str:
    """`2030-03-31 01:00:00Z  03:00:00 Europe/Paris  schedule:ID:...` (local time if not UTC)."""
    local = "" if zone == "UTC" else f"{at.astimezone(cron.zone(zone)):%H:%M:%S} {zone}  "
    return f"{_when(at)}  {local}{key or ''}".rstrip()


def cmd_pause(ctx: Context) -> int:
    """Stop firing until resumed."""
    paused = schedules.pause(ctx.store, ctx.args.id, note=ctx.args.note)
    ctx.emit(paused.to_dict(), f"schedule {paused.id} paused")
    return 0


def cmd_resume(ctx: Context) -> int:
    """Fire again, catching up by the schedule's rules, or from the next time only."""
    a = ctx.args
    if a.catch_up and a.skip_missed:
        raise InvalidInput("resume", "--catch-up or --skip-missed, not both")
    resumed = schedules.resume(ctx.store, a.id, skip_missed=a.skip_missed)
    ctx.emit(resumed.to_dict(), f"schedule {resumed.id}: next fire {_when(resumed.next_fire_at)}")
    return 0


def cmd_trigger(ctx: Context) -> int:
    """One fire now, outside the cron."""
    fire = schedules.trigger(ctx.store, ctx.args.id, settings=ctx.settings)
    ctx.emit(fire.to_dict(), f"{fire.key}: task {fire.task_id}")
    return 0


def cmd_backfill(ctx: Context) -> int:
    """Every fire time in (from, to]; a time fired before is left as it was."""
    a = ctx.args
    fires = schedules.backfill(
        ctx.store,
        a.id,
        after=parse_instant("from", a.from_),
        until=parse_instant("to", a.to),
        settings=ctx.settings,
    )
    ctx.emit([f.to_dict() for f in fires], f"schedule {a.id}: {len(fires)} fires made")
    return 0


def cmd_remove(ctx: Context) -> int:
    """Delete a schedule and its fire records; the tasks it made stay."""
    schedules.remove(ctx.store, ctx.args.id)
    ctx.emit({"id": ctx.args.id, "removed": True}, f"schedule {ctx.args.id} removed")
    return 0


COMMANDS = (
    Command(
        "schedule add",
        cmd_add,
        "add a cron schedule that creates a task at each fire",
        ID,
        Arg(
            "--cron",
            required=True,
            metavar="EXPR",
            help='five fields "30 2 * * *", six with seconds first "0 30 2 * * *", '
            'or seven with a year last "0 30 2 * * * 2027"',
        ),
        Arg("--title", required=True, help="title of each fire's task"),
        Arg("--kind", default="default", help="capability a worker needs (default: default)"),
        Arg("--queue", default="default", help="queue name (default: default)"),
        Arg("--payload", help="JSON object handed to the worker"),
        Arg("--timezone", default="UTC", metavar="ZONE", help="IANA zone (default: UTC)"),
        Arg("--overlap", default="skip", help="skip (default), buffer-one or allow"),
        Arg("--max-catchup", metavar="N", help="fires made at most in one pass (default 100)"),
        Arg("--catchup-window", metavar="DURATION", help="no fire older than this (e.g. 1d)"),
        Arg("--review", action="store_true", help="each fire's task requires review"),
    ),
    Command("schedule list", cmd_list, "schedules, their next fires and last task"),
    Command(
        "schedule show",
        cmd_show,
        "a schedule and its fires",
        ID,
        Arg("--limit", help="newest fires to show (default 50)"),
    ),
    Command(
        "schedule preview",
        cmd_preview,
        "fire times and keys that would be made; writes nothing",
        Arg("id", nargs="?", metavar="ID"),
        Arg("--cron", metavar="EXPR"),
        Arg("--timezone", default="UTC", metavar="ZONE"),
        Arg("--count", help="how many (default 10)"),
        Arg("--from", dest="from_", metavar="TIME", help="after this ISO 8601 time (default: now)"),
    ),
    Command("schedule pause", cmd_pause, "stop firing until resumed", ID, Arg("--note")),
    Command(
        "schedule resume",
        cmd_resume,
        "fire again",
        ID,
        Arg("--catch-up", action="store_true", help="make missed fires by the rules (default)"),
        Arg("--skip-missed", action="store_true", help="fire from the next time after now only"),
    ),
    Command("schedule trigger", cmd_trigger, "one fire now, outside the cron", ID),
    Command(
        "schedule backfill",
        cmd_backfill,
        "every fire time in (from, to], each once",
        ID,
        Arg("--from", dest="from_", required=True, metavar="TIME"),
        Arg("--to", required=True, metavar="TIME"),
    ),
    Command("schedule remove", cmd_remove, "delete a schedule (its tasks stay)", ID),
)
