"""The screen of `corral status --watch` as lines of text, laid out for a terminal's size.

Pure: a `Glance` (corral.runtime.pool.glance), the size and a notice in, the lines out,
each at most `width` cells, at most `height` of them. The curses loop draws them; the
benchmark renders them without a terminal.

    corral status --watch  every 1s  12:00:03 UTC  q quits
    orchestrator: running  pid 412 on build-1  up 2h10m
    workers: 4 live (busy 3, idle 1)   tasks: ready 12, running 3, done 5120
    (a store outage, while it lasts)

    PROVIDERS HELD BACK           (only while one is: parked, paused, at its cap)
    claude  parked until 2026-11-26T09:00:00+00:00: claude five_hour limit

    SLOT    WORKER      TASK        TIME   TITLE              LAST OUTPUT
    slot-1  w-5f2c...   t-81aa...   4m2s   fix the login bug  Bash: make test
    slot-2  w-77d0...   -                  (no task)

    WAITING FOR A PERSON                  (while there are any)
    t-c09e...  refused: Bash, Edit  deploy the docs

    WORK (24h: landed 14, in review 3, kept 1)   (while there is any)
    kept    t-4d1a...  corral/t-4d1a...  tidy the CLI      (for `corral land ID`)
    landed  t-9b2e... at 3f2a9c41d0e7  fix the login bug (the newest first)

    QUEUE    READY  DELAYED  ...
    EVENTS   (the newest last)

An agent's last output line is in words (the assistant's text, the tool it is using),
never its raw JSON (corral.runtime.worker.stream_text). The sections share the rows left
below the head one row at a time, so a long one never pushes another off the screen; a
section that is cut ends with `… N more`. Every piece of user data (titles, output
lines, reasons, host names) goes through `printable.clean` before it is measured.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime

from corral.cli import render
from corral.cli.cells import fit, pad, width_of
from corral.foundation.durations import format_duration
from corral.foundation.printable import clean
from corral.model.orchestrators import LIVE
from corral.runtime.pool.glance import Glance

HEADERS = ("SLOT", "WORKER", "TASK", "TIME", "TITLE", "LAST OUTPUT")
_TITLE_SHARE = 0.4  # of the width left after the short columns; the output line gets the rest
_MIN_TITLE_CELLS = 10


def screen(
    found: Glance | None, *, width: int, height: int, interval_s: float, notice: str | None
) -> list[str]:
    """The lines to draw: the head, then slots and running tasks, queues and events."""
    now = found.orchestrator.now if found is not None else None
    stamp = now.strftime("%H:%M:%S UTC") if now is not None else "no data yet"
    head = [f"corral status --watch  every {format_duration(interval_s)}  {stamp}  q quits"]
    if found is not None:
        head += [_orchestrator_line(found), *_group_lines(found), _counts_line(found)]
    if notice:
        head.append(notice)
    lines = [fit(clean(line), width) for line in head][:height]
    if found is not None:
        lines += _sections(found, width, height - len(lines))
    return lines


def _orchestrator_line(found: Glance) -> str:
    state = found.orchestrator.state
    if state.pid is None:
        return "orchestrator: never started on this store (slots appear once it runs)"
    live = state.status in LIVE
    since = state.started_at if live else state.stopped_at
    age = "" if since is None else format_duration(_seconds(found.orchestrator.now, since))
    when = f"  {'up' if live else 'stopped'} {age}" if age else ""
    return f"orchestrator: {state.status}  pid {state.pid} on {state.host}{when}"


def _group_lines(found: Glance) -> list[str]:
    """A line per group of a pool with `[[pool.group]]`, while its orchestrator runs."""
    state = found.orchestrator.state
    if state.status not in LIVE:
        return []
    return [render.group_line(g, state.slots) for g in render.pool_groups(state.config)]


def _counts_line(found: Glance) -> str:
    by_status = Counter(str(w.status) for w in found.workers)
    shown = ", ".join(f"{status} {n}" for status, n in sorted(by_status.items()))
    live = f"workers: {len(found.workers)} live ({shown})" if shown else "workers: none live"
    return f"{live}   {render.task_counts(found.tasks)}"


def _sections(found: Glance, width: int, room: int) -> list[str]:
    """Held providers (if any), slots and running tasks, tasks waiting for a person and
    where tasks' work ended (when there are any), queues, events: each a title and rows,
    sharing `room`."""
    running = _running_rows(found, width)
    hidden = max(0, found.tasks.get("running", 0) - len(found.running))
    waiting = [f"{t.id}  {t.wait_reason or '-'}  {clean(t.title)}" for t in found.waiting]
    more_waiting = max(0, found.tasks.get("waiting", 0) - len(found.waiting))
    queues = render.queue_table(found.queues).splitlines() or ["QUEUE", "(none with work)"]
    events = [render.event_line(e) for e in found.events] or ["(none)"]
    held = [f"{p.name}  {p.held}" for p in found.held]
    work = found.work
    ended = [f"kept    {render.kept_line(w)}" for w in work.kept]
    ended += [f"landed  {render.landed_line(w)}" for w in work.landed]
    sections = [
        *([("PROVIDERS HELD BACK", held, 0)] if held else []),
        (running[0], running[1:], hidden),
        *([("WAITING FOR A PERSON", waiting, more_waiting)] if waiting else []),
        *([(f"WORK (24h: {render.work_counts(work)})", ended, 0)] if ended or work.counts else []),
        (queues[0], queues[1:], 0),
        ("EVENTS (newest last)", events[::-1], 0),  # newest first while sharing rows
    ]
    shares = _share([len(rows) for _, rows, _ in sections], room - 2 * len(sections))
    out: list[str] = []
    for (title, rows, more), share in zip(sections, shares, strict=True):
        if len(out) + 2 > room:
            break
        kept = _cut(rows, share, more)
        if title.startswith("EVENTS"):
            kept = kept[::-1]
        out += ["", title, *kept]
    return [fit(clean(line), width) for line in out]


def _share(wants: Sequence[int], room: int) -> list[int]:
    """Rows for each section: one at a time to each that wants more, until `room` is used."""
    given = [0] * len(wants)
    while room > 0 and any(g < w for g, w in zip(given, wants, strict=True)):
        for i, want in enumerate(wants):
            if room > 0 and given[i] < want:
                given[i] += 1
                room -= 1
    return given


def _cut(rows: Sequence[str], share: int, more: int) -> list[str]:
    """The first `share` rows; when some (or `more` beyond them) do not fit, the last row
    kept says how many are left out."""
    left_out = len(rows) - share + more
    if left_out <= 0 or share == 0:
        return list(rows[:share])
    return [*rows[: share - 1], f"… {left_out + 1} more"]


def _running_rows(found: Glance, width: int) -> list[str]:
    """The slot table's header and rows: each live slot with its tasks (or none), then the
    running tasks of workers outside the pool."""
    state = found.orchestrator.state
    slots = state.slots if state.status in LIVE else []
    by_worker: dict[str, list[list[str]]] = {}
    for task in found.running:
        age = format_duration(_seconds(found.orchestrator.now, task.claimed_at))
        output = found.last_output.get(task.task_id, "")
        cells = [task.worker_id, task.task_id, age, clean(task.title), clean(output)]
        by_worker.setdefault(task.worker_id, []).append(cells)
    rows = []
    for slot in slots:
        worker = slot.get("worker_id") or "-"
        idle = f"(held: {slot['held']})" if slot.get("held") else f"({slot.get('state')})"
        tasks = by_worker.pop(worker, None) or [[worker, "-", "", idle, ""]]
        rows += [[str(slot.get("name")), *cells] for cells in tasks]
    rows += [["-", *cells] for tasks in by_worker.values() for cells in tasks]
    return _table([list(HEADERS), *rows], width)


def _table(rows: list[list[str]], width: int) -> list[str]:
    """Columns as wide as their widest cell, but the title at most its share of what the
    short columns leave; the last column (the output line) takes whatever remains."""
    widths = [max(width_of(r[i]) for r in rows) for i in range(len(HEADERS) - 1)]
    short = sum(widths[:-1]) + 2 * (len(HEADERS) - 1)
    widths[-1] = min(widths[-1], max(_MIN_TITLE_CELLS, int((width - short) * _TITLE_SHARE)))
    return ["  ".join([*(pad(c, w) for c, w in zip(r, widths, strict=False)), r[-1]]) for r in rows]


def _seconds(now: datetime, since: datetime) -> float:
    return max(0.0, (now - since).total_seconds())
