"""Human renderings: aligned tables and `key: value` blocks. JSON needs none of this."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from corral.foundation.durations import format_duration, iso
from corral.foundation.printable import one_line, visible

if TYPE_CHECKING:
    from corral.model.artifacts import Artifact
    from corral.model.events import Event
    from corral.model.orchestrators import OrchestratorState
    from corral.model.providers import ProviderState
    from corral.model.queues import QueueStat
    from corral.model.reviews import WorkEnd, WorkEnds
    from corral.model.runs import Run
    from corral.model.tasks import Task
    from corral.model.usage import UsageTotal
    from corral.model.workers import Worker
    from corral.runtime.pool.overview import Overview
    from corral.usecases.orchestrators import OrchestratorReport
    from corral.usecases.reviews import PendingReview


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Left-aligned columns; the last column is not padded."""
    if not rows:
        return ""
    cells = [
        [str(h) for h in headers],
        *[["" if c is None else one_line(str(c)) for c in r] for r in rows],
    ]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers) - 1)]
    lines = []
    for row in cells:
        padded = [cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])]
        lines.append("  ".join([*padded, row[-1]]).rstrip())
    return "\n".join(lines)


def task_table(tasks: Sequence[Task]) -> str:
    """The columns people scan: id, status, priority, queue, kind, attempts, worker, title."""
    return table(
        ["ID", "STATUS", "PRI", "QUEUE", "KIND", "TRIES", "WORKER", "TITLE"],
        [
            [
                t.id,
                t.status,
                t.priority,
                t.queue,
                t.kind,
                f"{t.attempts}/{t.max_attempts}",
                t.worker_id or "-",
                t.title,
            ]
            for t in tasks
        ],
    )


def task_detail(task: Task) -> str:
    """Every field worth reading, one per line."""
    data = task.to_dict()
    order = [
        "id",
        "title",
        "status",
        "queue",
        "kind",
        "priority",
        "attempts",
        "max_attempts",
        "crashes",
        "depends_on",
        "assignee",
        "worker_id",
        "token",
        "lease_expires_at",
        "run_after",
        "timeout_s",
        "requires_review",
        "last_error",
        "failure_reason",
        "wait_reason",
        "answered_reason",
        "answer",
        "site",
        "result",
        "payload",
        "labels",
        "description",
        "created_at",
        "updated_at",
        "finished_at",
    ]
    return key_values({key: data[key] for key in order})


def artifacts(kept: list[Artifact], folder: str | None) -> str:
    """`artifacts (in FOLDER):`, then a line per file: path, size, SHA-256 or why skipped."""
    where = f" (in {one_line(folder)})" if folder else ""
    lines = [
        f"  {one_line(a.path)}  {a.size_bytes} B  "
        + (a.sha256 or f"skipped: {one_line(a.skipped or '')}")
        for a in kept
    ]
    return "\n".join([f"artifacts{where}:", *lines])


def children(tasks: list[Task]) -> str:
    """`children:` then one line per child: its id, status and title."""
    lines = [f"  {t.id}  {t.status:<10} {one_line(t.title)}" for t in tasks]
    return "\n".join(["children:", *lines])


def key_values(data: dict[str, object]) -> str:
    """`key:  value` lines for the fields that are set; lists, dicts and booleans as JSON.
    A text of several lines keeps them, each further line indented under the first, so
    no value can forge a `key:` line."""
    width = max((len(k) for k in data), default=0) + 2  # no field set: no line
    return "\n".join(
        f"{key + ':':{width}}{_shown(value, width)}"
        for key, value in data.items()
        if value not in (None, "", [], {})
    )


def _shown(value: object, width: int) -> str:
    if not isinstance(value, str):
        return json.dumps(value)  # escapes every control character
    return visible(value).replace("\n", "\n" + " " * width)


# CPU and MEM are the runner's own; AGENT CPU and AGENT MEM its tasks' process trees'.
WORKER_COLUMNS = (
    *("ID", "NAME", "STATUS", "ACTIVE", "DONE", "FAILED", "SEEN", "HOST", "PID", "KINDS"),
    *("CPU", "MEM", "AGENT CPU", "AGENT MEM"),
)


def worker_table(workers: Sequence[Worker], now: datetime) -> str:
    """One line per worker, with how long ago it was last heard from."""
    return table(
        WORKER_COLUMNS,
        [
            [
                w.id,
                w.name,
                w.status,
                f"{w.active}/{w.max_concurrent}",
                w.completed_total,
                w.failed_total,
                format_duration((now - w.last_heartbeat_at).total_seconds()) + " ago",
                w.hostname,
                w.pid,
                ",".join(w.kinds) or "*",
                percent(w.cpu_percent),
                megabytes(w.rss_bytes),
                percent(w.agent_cpu_percent),
                megabytes(w.agent_rss_bytes),
            ]
            for w in workers
        ],
    )


def percent(value: float | None) -> str:
    """`12.5%`, or `-` when not measured."""
    return "-" if value is None else f"{value:.1f}%"


def megabytes(value: int | None) -> str:
    """Bytes as `123.4M` (MiB), or `-` when not measured."""
    return "-" if value is None else f"{value / 1048576:.1f}M"


def event_line(event: Event) -> str:
    """`time  name  subject  from -> to  (reason)`."""
    subject = one_line(" ".join(x for x in (event.task_id, event.worker_id) if x))
    move = f"{event.from_status or ''} -> {event.to_status}" if event.to_status else ""
    why = f"  ({one_line(' | '.join(event.reason.split(chr(10))))})" if event.reason else ""
    name = one_line(event.name)
    stamp = event.at.strftime("%Y-%m-%d %H:%M:%S")
    return f"{stamp}  {name:22} {subject:26} {move}{why}".rstrip()


def run_table(runs: Sequence[Run], now: datetime) -> str:
    """One line per run: when it started, how long it took (so far), and how it ended."""
    return table(
        ["RUN", "TASK", "WORKER", "STARTED", "DURATION", "OUTCOME", "EXIT", "COST"],
        [
            [
                r.id,
                r.task_id,
                r.worker_id,
                r.started_at.strftime("%Y-%m-%d %H:%M:%S"),
                format_duration(((r.finished_at or now) - r.started_at).total_seconds()),
                run_state(r),
                "-" if r.exit_code is None else r.exit_code,
                run_cost(r),
            ]
            for r in runs
        ],
    )


def run_state(run: Run) -> str:
    """The outcome of a finished run; `running` or `waiting` for one that is not."""
    if run.outcome is not None:
        return str(run.outcome)
    return "waiting" if run.stalled_at is not None else "running"


def run_cost(run: Run) -> str:
    """What its agent said it cost, `-` when it said nothing (never $0 for "unknown")."""
    cost = (run.usage or {}).get("cost_usd")
    return f"${cost:.4f}" if isinstance(cost, int | float) and not isinstance(cost, bool) else "-"


def task_totals(totals: UsageTotal, attempts: int) -> str:
    """`show`'s totals over every run of a task."""

    def figure(value: float | None) -> str:
        return "-" if value is None else f"{value:,.0f}"

    cost = "-" if totals.cost_usd is None else f"${totals.cost_usd:.4f}"
    return (
        f"runs:         {totals.runs} ({totals.with_usage} reported usage), attempts {attempts}\n"
        f"tokens:       {figure(totals.input_tokens)} in, {figure(totals.output_tokens)} out, "
        f"{figure(totals.cache_read_tokens)} cache read, "
        f"{figure(totals.cache_write_tokens)} cache write\n"
        f"cost:         {cost}\n"
        f"wall time:    {format_duration(totals.wall_s or 0.0)}"
    )


def run_detail(run: Run) -> str:
    """Every field that is set, one per line; the prompt, often long, comes last."""
    data = run.to_dict()
    data["outcome"] = run_state(run)
    data["prompt"] = data.pop("prompt")
    return key_values(data)


def orchestrator_status(state: OrchestratorState, now: datetime) -> str:
    """The state row in two lines, then one line per pool slot."""
    if state.pid is None:
        return "orchestrator: never started on this store"

    def ago(at: datetime | None) -> str:
        return "never" if at is None else format_duration((now - at).total_seconds()) + " ago"

    config = state.config
    when = (
        f"stopped {ago(state.stopped_at)}"
        if state.stopped_at is not None
        else f"started {ago(state.started_at)}  last reconcile {ago(state.last_reconcile_at)}"
    )
    host = one_line(state.host or "")
    head = f"orchestrator: {state.status}  pid {state.pid} on {host}  {when}"
    pool = f"pool: {config.get('workers')} worker(s)  {_pool_job(config)}"
    groups = pool_groups(config)
    if groups:
        pool = f"pool: {config.get('workers')} worker(s) in {len(groups)} group(s)\n" + "\n".join(
            f"  {group_line(g, state.slots)}" for g in groups
        )
    slots = table(
        ["SLOT", "STATE", "WORKER", "PID", "RESTARTS", "LAST EXIT"],
        [
            [s["name"], s["state"], s["worker_id"], s["pid"], s["restarts"], s["last_exit_code"]]
            for s in state.slots
        ],
    )
    held = "\n".join(
        f"slot {s['name']} holds back: {s['held']} (its tasks stay ready)"
        for s in state.slots
        if s.get("held")
    )
    return "\n".join(line for line in (head, pool, slots, held) if line)


def _pool_job(config: dict[str, Any]) -> str:
    """What a pool's (or a group's) workers run, and which tasks: its recorded options."""
    job = f"call {config['call']!r}" if config.get("call") else f"exec {config.get('exec')!r}"
    if config.get("agent"):
        job = f"agent {config['agent']}" + (f" ({job})" if config.get("exec") else "")
        job += f"  provider {config['provider']}" if config.get("provider") else ""
    return (
        f"{job}  "
        f"kinds {','.join(config.get('kinds') or []) or '*'}  "
        f"queues {','.join(config.get('queues') or []) or '*'}"
        f"{'  worktrees' if config.get('worktree') else ''}"
    )


def pool_groups(config: dict[str, Any]) -> list[dict[str, Any]]:
    """The groups of a pool with `[[pool.group]]` as its state row records them; none for
    a pool of one group, `slot` (its slots need no group said)."""
    groups: list[dict[str, Any]] = config.get("groups") or []
    return groups if any(g.get("name") != "slot" for g in groups) else []


def group_line(group: dict[str, Any], slots: Sequence[dict[str, Any]]) -> str:
    """One group of the pool: its slots by state, their restarts, what they run."""
    mine = [s for s in slots if s.get("group") == group.get("name")]
    states = Counter(str(s.get("state")) for s in mine)
    shown = ", ".join(f"{state} {n}" for state, n in sorted(states.items())) or "no slot"
    restarts = sum(int(s.get("restarts") or 0) for s in mine)
    return (
        f"group {group.get('name')}: {group.get('workers')} worker(s) ({shown}; "
        f"{restarts} restart(s))  {_pool_job(group)}"
    )


def orchestrator_report(report: OrchestratorReport) -> str:
    """The state row and its pool; then, if any runs, the leader and each orchestrator."""
    human = orchestrator_status(report.state, report.now)
    if not report.orchestrators:
        return human
    rows = [[o["host"], o["pid"], o["role"], o["status"]] for o in report.orchestrators]
    fleet = table(["HOST", "PID", "ROLE", "STATUS"], rows)
    return f"{human}\nleader: {one_line(report.leader or 'none')}\n{fleet}"


def task_counts(counts: dict[str, int]) -> str:
    """`tasks: ready 3, running 2, done 10` (or `tasks: none`)."""
    shown = ", ".join(f"{status} {n}" for status, n in counts.items())
    return f"tasks: {shown or 'none'}"


def queue_table(stats: Sequence[QueueStat]) -> str:
    """Each queue's depth, running tasks, limits and what holds it back now."""

    def limit(value: float | None) -> str:
        return "-" if value is None else f"{value:g}"

    rows = [
        (
            s.queue,
            s.ready,
            s.delayed,
            s.blocked,
            s.running,
            limit(s.limits.max_ready),
            limit(s.limits.max_running),
            limit(s.limits.rate),
            s.held or ("full" if s.full else ""),
        )
        for s in stats
    ]
    headers = ("QUEUE", "READY", "DELAYED", "BLOCKED", "RUNNING", "MAX_READY", "MAX_RUNNING")
    return table((*headers, "RATE/MIN", "HELD BACK"), rows)


def overview(found: Overview) -> str:
    """`corral status`: one block each for the orchestrator, workers, queues, tasks,
    reviews and leftover processes."""
    now = found.orchestrator.now
    leftovers = ", ".join(f"pid {x.pid} (run {x.run_id})" for x in found.leftovers)
    blocks = [
        orchestrator_report(found.orchestrator),
        worker_table(found.workers, now) or "workers: none live",
        queue_table(found.queues) if found.queues else "queues: none with work or limits",
        task_counts(found.tasks),
        *([providers_block(found.providers)] if found.providers else []),
        waiting_tasks_line(found.waiting_tasks, found.tasks.get("waiting", 0)),
        waiting_line(found.waiting),
        reviews_line(found.reviews),
        work_block(found.work),
        f"left behind by finished runs: {leftovers or 'none'}",
    ]
    return "\n\n".join(blocks)


def providers_block(states: Sequence[ProviderState]) -> str:
    """Each provider account: its agents running, its cap, and why it is held back."""
    lines = []
    for s in states:
        cap = "" if s.max_running is None else f" of {s.max_running}"
        lines.append(
            f"provider {s.name}: {s.running}{cap} running" + (f", {s.held}" if s.held else "")
        )
    return "\n".join(lines)


def waiting_tasks_line(shown: Sequence[Task], count: int) -> str:
    """`tasks waiting for a person: 2`, then each one's id, since when and why: what
    `corral answer` (or retry, or cancel) is for."""
    if not count:
        return "tasks waiting for a person: none"
    lines = [
        f"  {t.id} since {iso(t.updated_at)}: {one_line(t.wait_reason or '-')}  "
        f"{one_line(t.title, 60)}"
        for t in shown
    ]
    if count > len(shown):
        lines.append(f"  … {count - len(shown)} more (`corral list --status waiting`)")
    return f"tasks waiting for a person: {count}\n" + "\n".join(lines)


def waiting_line(waiting: Sequence[dict[str, Any]]) -> str:
    """`runs waiting for a person: t-abc (question: ...)`: runs still going that need
    attention (silent, or their agent asked a question)."""
    if not waiting:
        return "runs waiting for a person: none"
    return "runs waiting for a person:\n" + "\n".join(
        f"  {w['task_id']} ({w['run_id']}) since {w['since']}: {w['reason']}" for w in waiting
    )


# model.reviews.WorkOutcome's values in its order, spelled here: render is on every
# command's start-up path, the model module is not.
OUTCOMES = ("landed", "in_review", "kept", "no_change", "refused")


def work_counts(work: WorkEnds) -> str:
    """`landed 14, in review 3, kept 2`: the outcomes recorded since `work.since`."""
    shown = [f"{o.replace('_', ' ')} {work.counts[o]}" for o in OUTCOMES if work.counts.get(o)]
    return ", ".join(shown) or "none recorded"


def kept_line(w: WorkEnd) -> str:
    """A kept branch: `t-abc  corral/t-abc  title` (what `corral land ID` lands)."""
    return f"{w.task_id}  {one_line(w.branch or '-')}  {one_line(w.title, 60)}"


def landed_line(w: WorkEnd) -> str:
    """A landed task: `t-abc at 3f2a9c41d0e7  title`."""
    return f"{w.task_id} at {(w.commit or '-')[:12]}  {one_line(w.title, 60)}"


def work_block(work: WorkEnds) -> str:
    """Where tasks' work ended over the last day, the kept branches a person must land,
    and the newest landed with their commits."""
    lines = [f"work in the last 24h: {work_counts(work)}"]
    if work.kept:
        lines.append("  kept for a person (`corral land ID`):")
        lines += [f"    {kept_line(w)}" for w in work.kept]
    if work.landed:
        lines.append("  landed lately:")
        lines += [f"    {landed_line(w)}" for w in work.landed]
    return "\n".join(lines)


def reviews_line(reviews: Sequence[PendingReview]) -> str:
    """`reviews: 3 waiting (1 stale: t-abc)`: stale ones have waited past review_stale_after."""
    if not reviews:
        return "reviews: none waiting"
    stale = [r.task.id for r in reviews if r.stale]
    flagged = f" ({len(stale)} stale: {', '.join(stale)})" if stale else ""
    return f"reviews: {len(reviews)} waiting{flagged}"
