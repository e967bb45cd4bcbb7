"""Conformance: provider accounts (caps, pauses, usage-limit parks) enforced in the claim,
and what agents' runs record (session, resume, usage summed), on every store."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from tests.conftest import run_under

import corral
from corral import FakeClock, InvalidInput, NewTask, NewWorker, Settings, Store, Task, Worker
from corral.model.exchange import ClaimAsk
from corral.model.runs import RunOutcome
from corral.store.providers import MAX_WORKER_PARK_S
from corral.usecases.usage import provider_states, set_provider, task_totals, usage_totals

Add = Callable[..., Task]

NOT_OVER_HTTP = {
    "test_a_park_holds_back_its_own_namespaces_agents_only": (
        "a remote store acts in one namespace (each namespace's park: both local stores)"
    ),
}


@pytest.fixture
def agent(store: Store, settings: Settings) -> Callable[..., Worker]:
    """An idle worker spending provider account `provider`."""

    def make(name: str, provider: str | None = "claude", max_concurrent: int = 1) -> Worker:
        spec = NewWorker(
            name=name, hostname="h", pid=None, provider=provider, max_concurrent=max_concurrent
        )
        registered = corral.register(store, spec, settings=settings).worker
        return corral.heartbeat(store, registered.id, settings=settings).worker

    return make


def test_a_parked_provider_claims_nothing_until_its_reset(
    store: Store, settings: Settings, clock: FakeClock, add: Add, agent: Callable[..., Worker]
) -> None:
    """Parked until T: no worker of it claims before T, one of another provider does, and
    at T claims go on by themselves."""
    add(), add()
    ours, other = agent("a"), agent("b", provider="codex")
    assert store.providers.park_provider(
        "claude", until=store.now() + timedelta(seconds=30), reason="five_hour", actor="t"
    )
    assert corral.claim_next(store, ours.id, settings=settings) is None
    assert corral.claim_next(store, other.id, settings=settings) is not None
    clock.advance(29.9)
    assert corral.claim_next(store, ours.id, settings=settings) is None
    clock.advance(0.1)
    assert corral.claim_next(store, ours.id, settings=settings) is not None


def test_parking_only_moves_the_reset_later_and_records_it_once(
    store: Store, events: Callable[..., list[str]]
) -> None:
    """Four workers hitting one limit park it once; an earlier reset changes nothing."""
    until = store.now() + timedelta(hours=1)
    changed = [
        store.providers.park_provider("claude", until=until, reason="limit", actor=f"w{n}")
        for n in range(4)
    ]
    assert [True, False, False, False] == changed
    assert not store.providers.park_provider(
        "claude", until=until - timedelta(minutes=5), reason="x", actor="w"
    )
    assert 1 == events().count("provider.parked")
    (state,) = provider_states(store)
    assert (True, until, "limit") == (state.parked, state.parked_until, state.park_reason)
    assert state.held is not None and state.held.startswith("parked until")


def test_a_park_holds_back_its_own_namespaces_agents_only(
    store: Store, settings: Settings, add: Add, agent: Callable[..., Worker]
) -> None:
    """A park of `claude` in default stops default's agents of it; team-b's agents of the
    same account keep claiming, and team-b's accounts read as not parked."""
    add()
    ours = agent("a")
    theirs_store = store.in_namespace("team-b")
    corral.enqueue(theirs_store, NewTask(title="theirs"), settings=settings)
    spec = NewWorker(name="b", hostname="h", pid=None, provider="claude")
    theirs = corral.register(theirs_store, spec, settings=settings).worker
    corral.heartbeat(theirs_store, theirs.id, settings=settings)
    until = store.now() + timedelta(hours=1)
    assert store.providers.park_provider("claude", until=until, reason="limit", actor="t")
    assert corral.claim_next(store, ours.id, settings=settings) is None
    assert corral.claim_next(theirs_store, theirs.id, settings=settings) is not None
    assert [("claude", True)] == [(s.name, s.parked) for s in provider_states(store)]
    assert [("claude", False)] == [(s.name, s.parked) for s in provider_states(theirs_store)]


def test_a_worker_parks_the_account_it_spends_for_a_week_at_most(
    store: Store, agent: Callable[..., Worker], events: Callable[..., list[str]]
) -> None:
    """park_worker_provider parks the worker's own account, as the worker, for at most
    MAX_WORKER_PARK_S; a worker of no account parks nothing."""
    worker, bare = agent("a"), agent("b", provider=None)
    far = store.now() + timedelta(days=365 * 70)
    assert store.providers.park_worker_provider(worker.id, until=far, reason="limit")
    (state,) = provider_states(store)
    week = store.now() + timedelta(seconds=MAX_WORKER_PARK_S)
    assert ("claude", week) == (state.name, state.parked_until)
    assert not store.providers.park_worker_provider(bare.id, until=far, reason="limit")
    assert ["provider.parked"] == [e for e in events() if e.startswith("provider.")]


def test_max_running_caps_claims_across_workers_and_resume_ends_a_park(
    store: Store, settings: Settings, add: Add, agent: Callable[..., Worker]
) -> None:
    """max_running 2: the third worker of the account claims nothing until one finishes;
    pause stops all; --resume ends the pause and a park."""
    for _ in range(5):
        add()
    workers = [agent(f"w{n}") for n in range(3)]
    set_provider(store, "claude", max_running=2)
    claims = [corral.claim_next(store, w.id, settings=settings) for w in workers]
    assert [True, True, False] == [c is not None for c in claims]
    first = claims[0]
    assert first is not None
    corral.complete(store, first.task_id, token=first.token)
    assert corral.claim_next(store, workers[2].id, settings=settings) is not None
    state = set_provider(store, "claude", paused=True)
    assert "paused" == state.held
    assert corral.claim_next(store, workers[0].id, settings=settings) is None
    store.providers.park_provider(
        "claude", until=store.now() + timedelta(hours=1), reason="r", actor="t"
    )
    resumed = set_provider(store, "claude", paused=False, unpark=True)
    assert (False, False, 2) == (resumed.paused, resumed.parked, resumed.running)
    assert corral.claim_next(store, workers[0].id, settings=settings) is None  # at its cap
    set_provider(store, "claude", max_running=None)
    assert corral.claim_next(store, workers[0].id, settings=settings) is not None


def test_a_batch_claim_stays_under_the_cap(
    store: Store, settings: Settings, add: Add, agent: Callable[..., Worker]
) -> None:
    """A worker asking for 4 at once gets what the account has room for."""
    for _ in range(6):
        add()
    w = agent("big", max_concurrent=4)
    set_provider(store, "claude", max_running=3)
    exchanged = store.claims.exchange(w.id, ask=ClaimAsk(limit=4, lease_s=60.0))
    assert 3 == len(exchanged.held)


def test_bad_provider_input_is_refused_and_writes_nothing(store: Store) -> None:
    """A name with `..` or upper case, a negative cap, or nothing to change: InvalidInput."""
    for name in ("../x", "Claude", "a b", ""):
        with pytest.raises(InvalidInput, match="provider"):
            set_provider(store, name, max_running=1)
    with pytest.raises(InvalidInput, match="max_running"):
        set_provider(store, "claude", max_running=-1)
    with pytest.raises(InvalidInput, match="at least one"):
        set_provider(store, "claude")
    assert [] == provider_states(store)


def test_a_run_records_its_agent_session_and_usage_summed_over_runs(
    store: Store, settings: Settings, clock: FakeClock, add: Add, agent: Callable[..., Worker]
) -> None:
    """Three runs of one task: each records its session (the last one resumable), their
    usage sums per task; a run with no usage counts as a run, not as zero tokens."""
    task, w = add(max_attempts=5), agent("a")
    usages = [
        {"input_tokens": 100, "output_tokens": 10, "cost_usd": 0.25},
        None,
        {"input_tokens": 50, "output_tokens": 5, "cache_read_tokens": 7, "cost_usd": 0.5},
    ]
    for n, usage in enumerate(usages):
        claim = corral.claim(store, task.id, w.id, settings=settings)
        run = store.runs.start_run(run_under(claim, transcript_path=None, stderr_path=None))
        store.runs.record_agent_run(run.id, agent="claude", session_id=f"s-{n}")
        clock.advance(10)
        store.runs.finish_run(run.id, outcome=RunOutcome.FAILED, exit_code=1, usage=usage)
        corral.fail(store, task.id, error="no", token=claim.token, settings=settings)
        clock.advance(settings.retry_max_s)
    last = store.runs.last_session(task.id)
    assert last is not None and ("s-2", "claude") == (last[1], last[2])
    totals = task_totals(store, task.id)
    assert totals is not None
    assert (3, 2, 150, 15, 7, None, 0.75, 30.0) == (
        totals.runs,
        totals.with_usage,
        totals.input_tokens,
        totals.output_tokens,
        totals.cache_read_tokens,
        totals.cache_write_tokens,
        totals.cost_usd,
        totals.wall_s,
    )
    (by_agent,) = usage_totals(store, by="agent")
    assert ("claude", 0.75) == (by_agent.key, by_agent.cost_usd)
    (total,) = usage_totals(store, by="total")  # every run in one group, both dialects
    assert ("total", 3, 1, 150, 0.75) == (
        total.key,
        total.runs,
        total.tasks,
        total.input_tokens,
        total.cost_usd,
    )
    assert [] == usage_totals(store, by="day", since_s=1)  # all started before that


def test_usage_grouping_is_checked(store: Store) -> None:
    """--by must name a grouping."""
    with pytest.raises(InvalidInput, match="by"):
        usage_totals(store, by="colour")
