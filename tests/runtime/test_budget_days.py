"""Day caps (issue 31): a queue's, or a provider account's, spending a day (UTC), checked
as the agent streams. The stand-in claude (tests/agents/fakes, FAKE:turns=N: the real
stream-json, each assistant message carrying its usage) runs as a real process through
a claim, its run and its report, on a store and a watch sharing one injected clock (the
process itself waited for in real time): past
the cap the run is stopped, its task deferred to the next day (no attempt counted); the
provider account is parked till then; the next day the cap has lifted."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import itertools
import logging
import os
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from corral import (
    FakeClock,
    NewTask,
    NewWorker,
    Settings,
    Store,
    TaskFilter,
    enqueue,
    open_store,
    register,
)
from corral.foundation.clock import SystemClock
from corral.model.agents import BUILT_IN
from corral.model.exchange import ClaimAsk, RunStart
from corral.model.states import TaskStatus
from corral.runtime.worker.agent_runs import AgentSetup
from corral.runtime.worker.command_job import CommandJob, CommandRuns
from corral.runtime.worker.config import Workplace
from corral.runtime.worker.reports import Done, report_of
from corral.usecases import claims
from corral.usecases.reconcile import recover_worker
from corral.usecases.usage import cap_spending, set_day_cap

FAKES = Path(__file__).resolve().parents[1] / "agents" / "fakes"
NOW = datetime(2026, 11, 29, 15, 0, tzinfo=UTC)
MIDNIGHT = datetime(2026, 11, 30, tzinfo=UTC)
TURN_USD = (2000 * 3 + 4000 * 3.75 + 20000 * 0.30 + 5000 * 15) / 1_000_000
RUN = RunStart(command=("claude",), cwd="/work")
NAMES = itertools.count(1)
DEFAULTS = Settings()
PARIS = Settings(budgets_day_zone="Europe/Paris")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(NOW)


@pytest.fixture
def store(tmp_path: Path, clock: FakeClock) -> Iterator[Store]:
    with open_store(str(tmp_path / "corral.db"), clock=clock) as opened:
        yield opened


class DayClock(SystemClock):
    """The injected clock's day (`now`, which the store reads too) over real waits: the
    agent's process is waited for in real time, as a runner waits for it."""

    def __init__(self, day: FakeClock) -> None:
        self._day = day

    def now(self) -> datetime:
        return self._day.now()


def run_one(
    store: Store,
    clock: FakeClock,
    tmp_path: Path,
    title: str | None,
    queue: str,
    priority: int = 0,
    settings: Settings = DEFAULTS,
    stop: Callable[[], str | None] = lambda: None,
    report: bool = True,
) -> Done:
    """Add task `title` to `queue` (None: add none), claim the next one of `queue` and run it
    with the stand-in claude on the `claude` account, as a runner does (command_job.py's
    CommandRuns: launch, budget watch, agent), and report it (unless not `report`: its
    runner died); the run's Done."""
    if title is not None:
        enqueue(store, NewTask(title=title, queue=queue, priority=priority))
    spec = NewWorker(name=f"w-{next(NAMES)}", hostname="h", pid=None, provider="claude",
                     queues=(queue,))  # fmt: skip
    worker = register(store, spec, settings=Settings()).worker
    (held,) = claims.exchange(
        store, worker.id, ask=ClaimAsk(limit=1, run=RUN), settings=Settings()
    ).held
    agent = AgentSetup(profile=BUILT_IN["claude"], provider="claude")
    env = {**os.environ, "PATH": f"{FAKES}:{os.environ['PATH']}", "FAKE_TURN_S": "0.3",
           }  # fmt: skip
    job = CommandJob(argv=agent.profile.command, runs_dir=str(tmp_path / "runs"),
                     workdir=str(tmp_path), agent=agent, base_env=env)  # fmt: skip
    place = Workplace(store=store, worker_id=worker.id, settings=settings, clock=DayClock(clock),
                      log=logging.getLogger("test.budget_days"))  # fmt: skip
    runs = CommandRuns(job, place)
    try:
        done = runs.perform(held, runs.open(held.task, held.token, held.opened_run()), stop)
    finally:
        runs.end()
    if report:
        reports = [report_of(held, done)]
        assert () == claims.exchange(store, worker.id, reports=reports, settings=DEFAULTS).stale
    return done


def launched(store: Store) -> list[bool]:
    """Whether each run, oldest first, started its command (launch_run: its claim held,
    its first sign of life recorded), or was given back before."""
    return [run.last_progress_at is not None for run in reversed(store.runs.list_runs())]


def test_a_queue_day_cap_defers_its_tasks_to_the_next_day_when_it_lifts(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    set_day_cap(store, "queue", "code", max_cost="0.50", max_tokens=None)
    done = run_one(store, clock, tmp_path, "Refactor FAKE:turns=30", "code")
    assert (MIDNIGHT, "budget") == (done.defer_until, done.stop_reason)
    assert (done.defer_reason or "").startswith("budget: queue code day cap reached: $0.5")
    assert 0.50 <= (done.usage or {})["cost_usd"] < 0.50 + TURN_USD  # within one turn
    (task,) = store.tasks.list_tasks(TaskFilter())
    assert ("ready", MIDNIGHT, 0) == (task.status, task.run_after, task.attempts)
    (spending,) = cap_spending(store)  # `corral usage --caps`
    assert (done.usage or {})["cost_usd"] == spending.cost_usd

    other = run_one(store, clock, tmp_path, "Other queue FAKE:turns=2", "docs")
    assert (True, None) == (other.success, other.defer_until)  # another queue: no cap
    again = run_one(store, clock, tmp_path, "Same queue FAKE:turns=2", "code", priority=1)
    assert MIDNIGHT == again.defer_until  # the day's spend is already past the cap
    assert ("budget", None) == (again.stop_reason, again.usage)
    assert [True, True, False] == launched(store)  # its agent never started
    assert (again.defer_reason or "").startswith("budget: queue code day cap reached: ")

    clock.sleep((MIDNIGHT - clock.now()).total_seconds() + 60)  # the next day: the cap lifted
    lifted = run_one(store, clock, tmp_path, None, "code")  # the deferred one, claimed again
    assert (True, None) == (lifted.success, lifted.defer_until)


def test_a_provider_day_cap_in_tokens_parks_the_account_until_the_next_day(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    set_day_cap(store, "provider", "claude", max_cost=None, max_tokens="40k")
    done = run_one(store, clock, tmp_path, "Refactor FAKE:turns=30", "code")
    assert MIDNIGHT == done.defer_until
    assert "provider claude day cap reached" in (done.defer_reason or "")
    (account,) = store.providers.provider_states("claude")
    assert MIDNIGHT == account.parked_until

    store.providers.set_provider("claude", unpark=True, actor="t")  # the cap still reached
    again = run_one(store, clock, tmp_path, "Another FAKE:turns=2", "code", priority=1)
    assert (MIDNIGHT, "budget") == (again.defer_until, again.stop_reason)
    assert [True, False] == launched(store)
    (account,) = store.providers.provider_states("claude")
    assert MIDNIGHT == account.parked_until  # parked again, not started


def test_a_day_cap_counts_and_lifts_by_the_configured_zones_day_across_a_dst_change(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    """`[budgets] day_zone = "Europe/Paris"`, the day clocks spring forward (2026-03-29, a
    23-hour day from 23:00 UTC the evening before): a run at 23:30 Paris time is the day
    before's, one at 00:30 (still the 28th in UTC) today's; the cap reached lifts at the
    next Paris midnight, 22:00 UTC."""
    set_day_cap(store, "queue", "code", max_cost="0.50", max_tokens=None)
    clock.sleep((datetime(2026, 3, 28, 22, 30, tzinfo=UTC) - clock.now()).total_seconds())
    before = run_one(store, clock, tmp_path, "Yesterday FAKE:turns=3", "code", settings=PARIS)
    clock.sleep(3600)  # 23:30 UTC, 00:30 in Paris: a new day there, not in UTC
    today = run_one(store, clock, tmp_path, "Today FAKE:turns=3", "code", settings=PARIS)
    assert (True, True) == (before.success, today.success)  # by UTC, the two pass $0.50
    (spending,) = cap_spending(store, zone=PARIS.day_zone)
    assert datetime(2026, 3, 28, 23, tzinfo=UTC) == spending.since
    assert (today.usage or {})["cost_usd"] == spending.cost_usd

    clock.sleep((datetime(2026, 3, 29, 10, tzinfo=UTC) - clock.now()).total_seconds())
    stopped = run_one(store, clock, tmp_path, "Later FAKE:turns=30", "code", settings=PARIS)
    lifts = datetime(2026, 3, 29, 22, tzinfo=UTC)  # 00:00 CEST on the 30th
    assert (lifts, "budget") == (stopped.defer_until, stopped.stop_reason)
    (task,) = store.tasks.list_tasks(TaskFilter(statuses=(TaskStatus.READY,)))
    assert lifts == task.run_after


def test_a_crashed_or_killed_runs_streamed_usage_counts_toward_the_day_caps(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    """An agent that crashes after three turns (SIGKILL, no result line) reports the usage
    it streamed, priced; a run whose runner dies mid-run (never reports: the reconciler
    ends it `killed`) keeps the usage it recorded as it streamed. Both count toward the
    queue's day."""
    set_day_cap(store, "queue", "code", max_cost="50", max_tokens=None)
    crashed = run_one(store, clock, tmp_path, "Crash FAKE:turns=3 FAKE:then=crash", "code")
    assert False is crashed.success
    streamed = (crashed.usage or {})["cost_usd"]  # its three turns, and its edit's call
    assert 3 * TURN_USD <= streamed < 4 * TURN_USD

    def usage_recorded() -> str | None:
        """The runner's death, once the store holds some of its run's usage."""
        newest = store.runs.list_runs(limit=1)[0]
        return "runner killed" if newest.usage else None

    run_one(store, clock, tmp_path, "Dies FAKE:turns=30", "code", stop=usage_recorded,
            report=False)  # fmt: skip
    dying = store.runs.list_runs(limit=1)[0]
    recover_worker(store, dying.worker_id, reason="process gone", settings=Settings())
    killed = store.runs.get_run(dying.id)
    assert "killed" == killed.outcome
    kept = (killed.usage or {})["cost_usd"]
    assert TURN_USD <= kept < 30 * TURN_USD
    (spending,) = cap_spending(store)
    assert pytest.approx(streamed + kept) == spending.cost_usd
