"""A command task run as an agent (`--agent`): its session resumed, its stream watched.

Before the run (`resume_of`): a task that comes back to a worker (after a crash, a
timeout, a lost lease, a deferral, a usage limit or `request-changes`) resumes the
session its agent's last run recorded, when the profile can resume, the user did not
turn it off (`[agents] resume = false`, or a task payload's `"resume": false`), the
last run was of the same profile, and this run works in the same folder (an agent's
sessions belong to a folder: a kept worktree is one). The prompt is then short: a
person's answer to why it waited (`corral answer`), the reviewer's note, or "you were
interrupted; continue".

While it runs (`StreamWatch.poll`, called at every poll of the command's watch): the
transcript the agent writes is read as it grows (agent_streams.py). The session id is
recorded the moment the stream names it, so a crash of the runner itself leaves it for
the next run; a question flags the run `waiting` (event `run.waiting`); a usage limit
parks the provider account at once (every worker of it, on every host, stops claiming in
its next claim), and ends the run. A budgeted run (its task's budget, a day cap of its
queue or account) records the usage it has streamed as it grows (every USAGE_EVERY_S at
most, only while its claim is active), so a run whose runner is killed still counts
toward its caps; before it starts, a cap already reached keeps the agent from starting
(`reached`).

At its end (`StreamWatch.finish`): the usage (the agent's own totals, else, for a
budgeted run cut short by a crash, a kill or a stop, what it streamed, priced), the
agent's own verdict (a stream that says
it failed fails the run whatever the exit status), and a limit seen in the stream or in
the profile's exit signature, which defers the task until the reset without counting an
attempt. A run that otherwise succeeded but was refused tools (claude's
permission_denials) or asked a question waits for a person (`wait_reason`): exit 0 is
not success when the agent could not do what it was asked.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from corral.foundation.errors import CorralError
from corral.foundation.logs import event
from corral.foundation.printable import visible
from corral.model.agents import AgentProfile
from corral.model.budgets import (
    BILLED_TOKENS,
    Budget,
    DayCap,
    Spent,
    crossed,
    day_crossed,
    day_start,
    next_day,
    priced,
    spent_of,
)
from corral.model.providers import park_until
from corral.model.tasks import Task
from corral.model.usage import USAGE_KEYS, UsageTotal
from corral.model.verify_retries import CHECKS_PREFIX
from corral.model.waiting import WaitKind
from corral.model.waiting import reason as wait_text
from corral.runtime.worker.agent_streams import Limit, StreamFacts, StreamReader
from corral.runtime.worker.config import Workplace
from corral.runtime.worker.prompts import answer_note
from corral.store import Store

LIMIT_STOP = "usage_limit"  # the stop reason of a run ended by its provider's usage limit
BUDGET_STOP = "budget"  # the stop reason of a run ended at its task's budget
# A budgeted run's streamed usage is recorded at most this often while it grows: what a
# runner killed mid-run loses of its usage is at most this long's.
USAGE_EVERY_S = 2.0
MAX_REASON_CHARS = 300


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentSetup:
    """How a runner's agent runs: its profile and what the worker adds to it."""

    profile: AgentProfile
    model: str | None = None
    extra_args: tuple[str, ...] = ()
    provider: str | None = None  # the provider account it spends (parked at its limit)
    resume: bool = True  # [agents] resume
    park_s: float = 3600.0  # [agents] park_default: a limit with no reset time parks this long
    park_min_s: float = 60.0  # [agents] park_min: every park lasts at least this long


@dataclass(frozen=True, slots=True, kw_only=True)
class Resume:
    """The earlier run whose agent session a new run continues."""

    run_id: str
    session_id: str


def resume_of(store: Store, agent: AgentSetup, task: Task, cwd: str) -> Resume | None:
    """The session a new run of `task` in `cwd` resumes, or None: start afresh."""
    if not (agent.resume and agent.profile.can_resume) or task.payload.get("resume") is False:
        return None
    last = store.runs.last_session(task.id)
    if last is None:
        return None
    run_id, session_id, profile, last_cwd = last
    if profile != agent.profile.name or os.path.realpath(last_cwd) != os.path.realpath(cwd):
        return None
    return Resume(run_id=run_id, session_id=session_id)


def continuation_prompt(
    task: Task, changes_note: str | None, verify_note: str | None = None
) -> str:
    """What a resumed session is told: a person's answer to why it waited, the reviewer's
    note, its work's verify failure (runtime/worker/verify_step.py), or to carry on."""
    answered = answer_note(task)
    if changes_note and changes_note.startswith(CHECKS_PREFIX):  # a verify step on the forge
        return (
            f"About task {task.id} ({task.title}), its {changes_note}\n\n"
            f"{answered}Fix what they report, then finish as before."
        )
    if changes_note:
        return (
            f"The reviewer asked for changes to task {task.id} ({task.title}):\n"
            f"{changes_note}\n\n{answered}Make them, then finish as before."
        )
    if verify_note:
        return (
            f"About task {task.id} ({task.title}):{verify_note}\n"
            f"{answered}Fix what it reports, then finish as before."
        )
    if answered:
        return f"About task {task.id} ({task.title}):\n{answered}Continue, then finish as before."
    return (
        f"You were interrupted before you finished task {task.id} ({task.title}). "
        "Continue where you left off, then finish as before."
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """What the watch concluded when the run ended."""

    facts: StreamFacts
    limit_until: datetime | None  # the task is deferred until then (a usage limit)
    limit_reason: str | None
    stop_reason: str
    over_budget: str | None = None  # stopped at a budget: the wait or defer reason's detail
    over_until: datetime | None = None  # a day cap's: deferred until it lifts (else it waits)
    # The run's usage: its agent's own totals, else (a budgeted run cut short: stopped at a
    # cap, crashed, killed) what it streamed, priced.
    spent: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetWatch:
    """A run's caps and what was spent of each before it: its task's budget (the task's
    earlier runs) and the day caps of its queue and provider account (today's runs)."""

    budget: Budget
    before: Spent
    days: tuple[tuple[DayCap, Spent], ...] = ()
    until: datetime | None = None  # with days: when they lift (the next day)


def budget_watch(
    place: Workplace, agent: AgentSetup, *, task_id: str, queue: str, budget: Budget
) -> BudgetWatch | None:
    """What a run of task `task_id` (of `queue`, its budget `budget`) is checked against,
    or None: nothing caps it. Spending as the runs recorded it: their own cost, or the
    estimate a run stopped at a budget recorded."""
    store, now = place.store, place.clock.now()
    mine = {("queue", queue), ("provider", agent.provider)}
    days = [cap for cap in store.day_caps.day_caps() if (cap.scope, cap.name) in mine]
    if not budget.capped and not days:
        return None
    before = Spent()
    if budget.capped:
        before = _spent(agent, store.runs.usage_by("task", task_id=task_id, limit=1))
    zone = place.settings.day_zone
    today = day_start(now, zone)
    spent_today = []
    for cap in days:
        groups = store.runs.usage_by(cap.scope, since=today)
        spent_today.append((cap, _spent(agent, [t for t in groups if t.key == cap.name])))
    until = next_day(now, zone)
    return BudgetWatch(budget=budget, before=before, days=tuple(spent_today), until=until)


def _spent(agent: AgentSetup, totals: list[UsageTotal]) -> Spent:
    """What the runs of `totals` (one group, or none) spent; a group that reported no
    cost has its tokens priced."""
    if not totals:
        return Spent()
    total = totals[0]
    tokens = sum(getattr(total, key) or 0 for key in BILLED_TOKENS)
    if total.cost_usd is not None:
        return Spent(cost_usd=total.cost_usd, tokens=tokens)
    usage = {key: getattr(total, key) for key in USAGE_KEYS}
    return Spent(cost_usd=spent_of(usage, agent.profile.prices).cost_usd, tokens=tokens)


class StreamWatch:
    """One agent run's transcript, read as it grows and once more at its end."""

    def __init__(
        self,
        place: Workplace,
        agent: AgentSetup,
        *,
        run_id: str,
        task_id: str,
        transcript_path: str,
        budget: BudgetWatch | None = None,
    ) -> None:
        self._place, self._agent, self._run, self._task = place, agent, run_id, task_id
        self._reader = StreamReader(
            agent.profile.output, transcript_path, clock=place.clock, streamed=budget is not None
        )
        self._session_noted = self._waiting_noted = False
        self._park: tuple[datetime, str] | None = None
        self._parked = False  # the store has the park
        self._budget = budget
        self._over: str | None = None  # the budget's crossing, once seen
        self._day_until: datetime | None = None  # a day cap's: when it lifts
        self._kept: dict[str, Any] | None = None  # the streamed usage last recorded
        self._kept_at: float | None = None  # when (monotonic s)

    def poll(self) -> str | None:
        """Read what the agent wrote since the last poll; LIMIT_STOP once it hit a limit,
        BUDGET_STOP once its task's spending reached a cap."""
        facts = self._reader.poll()
        self._note(facts)
        if facts.limit is not None:
            self._park_provider(facts.limit)
            return LIMIT_STOP
        if self._budget is not None and self._over is None:
            self._over = self._crossed(self._budget, self._spent(facts))
            if self._over is not None:
                event(self._place.log, "run.over_budget", run_id=self._run, task_id=self._task,
                      detail=self._over)  # fmt: skip
            else:  # after the check: a write never delays a stop
                self._keep_usage(facts)
        return None if self._over is None else BUDGET_STOP

    def reached(self) -> Verdict | None:
        """Before the agent starts: the verdict of a run not to start, its task's budget or
        a day cap of its queue or account already reached by earlier runs (a provider's
        account then parked until the cap lifts); None: it may start."""
        if self._budget is None:
            return None
        self._over = self._crossed(self._budget, Spent())
        if self._over is None:
            return None
        event(self._place.log, "run.not_started", run_id=self._run, task_id=self._task,
              reason=BUDGET_STOP, why=self._over)  # fmt: skip
        self._record(stop_reason=BUDGET_STOP)
        return Verdict(
            facts=StreamFacts(),
            limit_until=None,
            limit_reason=None,
            stop_reason=BUDGET_STOP,
            over_budget=self._over,
            over_until=self._day_until,
        )

    def _crossed(self, watch: BudgetWatch, run: Spent) -> str | None:
        """The first cap this run's spending `run` reached: its task's, else a day cap's
        (its provider account's then parked until the cap lifts, for every host)."""
        over = crossed(watch.budget, watch.before.plus(run))
        if over is not None:
            return over
        for cap, today in watch.days:
            over = day_crossed(cap, today.plus(run))
            if over is not None:
                self._day_until = watch.until
                if cap.scope == "provider" and watch.until is not None:
                    self._park_day(watch.until, over)
                return over
        return None

    def _park_day(self, until: datetime, over: str) -> None:
        """Park this worker's provider account until its day cap lifts."""
        place, reason = self._place, wait_text(WaitKind.BUDGET, over)
        self._store_call(
            lambda: place.store.providers.park_worker_provider(
                place.worker_id, until=until, reason=reason, task_id=self._task
            )
        )

    def _keep_usage(self, facts: StreamFacts) -> None:
        """Record the usage streamed so far when it grew, at most every USAGE_EVERY_S, so
        that a run whose runner is killed before it reports still counts toward its caps
        (the store keeps it only while the run's claim is active)."""
        usage = self._priced_stream(facts)
        now_s = self._place.clock.monotonic()
        if usage is None or usage == self._kept:
            return
        if self._kept_at is not None and now_s - self._kept_at < USAGE_EVERY_S:
            return
        if self._store_call(lambda: self._place.store.runs.record_usage(self._run, usage)):
            self._kept, self._kept_at = usage, now_s

    def _spent(self, facts: StreamFacts) -> Spent:
        """This run's spending so far: its own totals once given, else the streamed sum."""
        usage = facts.usage if facts.usage is not None else facts.streamed
        return spent_of(usage, self._agent.profile.prices)

    def _priced_stream(self, facts: StreamFacts) -> dict[str, Any] | None:
        """The usage a run stopped at its budget records: its own totals if they came,
        else the streamed sum with its estimated cost (so the task's next run counts it)."""
        if facts.usage is not None or facts.streamed is None:
            return facts.usage
        cost = priced(facts.streamed, self._agent.profile.prices)
        return facts.streamed if cost is None else {**facts.streamed, "cost_usd": cost}

    def finish(self, *, exit_code: int | None, stderr_tail: str, ending: str) -> Verdict:
        """Read the rest; the usage, the limit (stream or exit signature), the stop reason."""
        facts = self._reader.finish()
        self._note(facts)
        limit = facts.limit
        if limit is None and exit_code not in (0, None):
            limit = _limit_signature(self._agent.profile, f"{facts.error or ''}\n{stderr_tail}")
        until: datetime | None = None
        reason: str | None = None
        if limit is not None:
            until, reason = self._park_provider(limit)
            stop = LIMIT_STOP
        elif self._over is not None:
            stop = BUDGET_STOP
        else:
            stop = _stop_reason(facts, exit_code, ending)
        self._record(stop_reason=stop)
        if stop == BUDGET_STOP:
            return Verdict(
                facts=facts,
                limit_until=None,
                limit_reason=None,
                stop_reason=stop,
                over_budget=self._over,
                over_until=self._day_until,
                spent=self._priced_stream(facts),
            )
        return Verdict(
            facts=facts,
            limit_until=until,
            limit_reason=reason,
            stop_reason=stop,
            spent=self._priced_stream(facts),
        )

    def _note(self, facts: StreamFacts) -> None:
        """Record what the stream newly said: its session, a question."""
        if facts.session_id is not None and not self._session_noted:
            self._session_noted = self._record(session_id=facts.session_id)
        if facts.waiting is not None and not self._waiting_noted:
            self._waiting_noted = self._store_call(
                lambda: self._place.store.runs.mark_waiting(self._run, _short(facts.waiting or ""))
            )

    def _record(self, **fields: str) -> bool:
        return self._store_call(
            lambda: self._place.store.runs.record_agent_run(self._run, **fields)
        )

    def _store_call(self, call: Callable[[], object]) -> bool:
        """Make a small write; a store that cannot be reached now is tried at the next poll
        (what the run does is unaffected)."""
        try:
            call()
        except CorralError as exc:
            event(self._place.log, "run.note_failed", logging.WARNING, run_id=self._run,
                  error=exc.message)  # fmt: skip
            return False
        return True

    def _park_provider(self, limit: Limit) -> tuple[datetime, str]:
        """Park the provider account until the reset; (until, why). Decided once a run;
        recorded again at each later poll (and at the end) while the store refused it.
        The store parks the account this worker registered with, in its namespace, as a
        worker token may (store/providers.py)."""
        if self._park is None:
            self._park = self._decide_park(limit)
        until, reason = self._park
        place, provider = self._place, self._agent.provider
        if provider is not None and not self._parked:
            self._parked = self._store_call(
                lambda: place.store.providers.park_worker_provider(
                    place.worker_id, until=until, reason=reason, task_id=self._task
                )
            )
        return self._park

    def _decide_park(self, limit: Limit) -> tuple[datetime, str]:
        """Until when, and why: the reset the stream gave, else `[agents] park_default`;
        at least `[agents] park_min` from now (model/providers.py park_until)."""
        agent = self._agent
        reset = None if limit.reset_at is None else datetime.fromtimestamp(limit.reset_at, UTC)
        until, least = park_until(
            reset,
            self._place.clock.now(),  # no store round trip
            default_s=agent.park_s,
            min_s=agent.park_min_s,
        )
        if least:
            reason = _short(f"{limit.message} (parked the minimum, {agent.park_min_s:g} s)")
        elif reset is None:
            reason = _short(f"{limit.message} (no reset time given: parked {agent.park_s:g} s)")
        else:
            reason = _short(limit.message)
        event(self._place.log, "run.usage_limit", run_id=self._run,
              provider=self._agent.provider, until=until.isoformat(), reason=reason)  # fmt: skip
        return until, reason


def _limit_signature(profile: AgentProfile, text: str) -> Limit | None:
    """A usage limit the agent's exit text shows (the profile's limit_patterns), if any."""
    for pattern in profile.limit_patterns:
        found = re.search(pattern, text)
        if found is None:
            continue
        reset = found.groupdict().get("reset")
        message = f"{profile.name}: {visible(found.group(0))}"
        return Limit(reset_at=float(reset) if reset else None, message=_short(message))
    return None


def wait_reason(facts: StreamFacts) -> str | None:
    """Why a run that otherwise succeeded waits for a person: the tools it was refused
    (distinct, in order), else the question it asked; None: it did not."""
    if facts.denied:
        return _short(wait_text(WaitKind.REFUSED, ", ".join(facts.denied)))
    return facts.waiting


def _stop_reason(facts: StreamFacts, exit_code: int | None, ending: str) -> str:
    """Why the agent stopped, in a word or a short line."""
    if ending != "exited":
        return ending  # timeout, stalled, stopped
    if facts.error is not None:
        return _short(f"error: {facts.error}")
    if exit_code == 0:
        return wait_reason(facts) or "success"
    return f"exited with status {exit_code}"


def _short(text: str) -> str:
    """`text` as one printable line a record and an event can hold."""
    line = " ".join(visible(text).split())
    return line if len(line) <= MAX_REASON_CHARS else line[: MAX_REASON_CHARS - 1] + "…"
