"""Conformance: run records: started under the active claim, finished once, stalls, listings."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

import corral
from corral import (
    Claim,
    EventFilter,
    FakeClock,
    InvalidInput,
    NewRun,
    NotFound,
    Refused,
    Run,
    RunOutcome,
    Settings,
    StaleToken,
    Store,
    Task,
    Worker,
)

Add = Callable[..., Task]
MakeWorker = Callable[..., Worker]
Names = Callable[..., list[str]]
Claimed = Callable[..., Claim]


@pytest.fixture
def claimed(store: Store, settings: Settings, add: Add, worker: MakeWorker) -> Claimed:
    """Enqueue a task and claim it for a new worker (or the one named)."""

    def make(worker_id: str | None = None) -> Claim:
        holder = worker_id or worker().id
        return corral.claim(store, add().id, holder, settings=settings)

    return make


def new_run(claim: Claim, **fields: Any) -> NewRun:
    """The spec of a command run under `claim`; keyword arguments override its fields."""
    spec = NewRun(
        task_id=claim.task_id,
        worker_id=claim.worker_id,
        token=claim.token,
        attempt=1,
        prompt="Fix the bug",
        command=("agent", "--print"),
        cwd="/work/tree",
        transcript_path="/work/runs/r.jsonl",
        stderr_path="/work/runs/r.stderr",
    )
    return dataclasses.replace(spec, **fields)


def data_of(store: Store, name: str) -> list[dict[str, Any] | None]:
    """The `data` of every event named `name`, oldest first."""
    return [e.data for e in store.events.list_events(EventFilter(limit=10_000)) if e.name == name]


def test_start_run_records_the_spec_as_an_unfinished_run(
    store: Store, claimed: Claimed, events: Names
) -> None:
    """A started run holds what it was given, started now, and has no outcome yet."""
    claim = claimed()
    run = store.runs.start_run(new_run(claim, base_commit="abc123"))
    assert run.id.startswith("r-")
    assert (claim.task_id, claim.worker_id, claim.token, 1) == (
        run.task_id,
        run.worker_id,
        run.token,
        run.attempt,
    )
    assert ("Fix the bug", ("agent", "--print"), "/work/tree", "abc123") == (
        run.prompt,
        run.command,
        run.cwd,
        run.base_commit,
    )
    assert ("/work/runs/r.jsonl", "/work/runs/r.stderr") == (run.transcript_path, run.stderr_path)
    assert (store.now(), None, None, None, False) == (
        run.started_at,
        run.finished_at,
        run.outcome,
        run.exit_code,
        run.finished,
    )
    assert run == store.runs.get_run(run.id)
    assert "run.started" == events(task_id=claim.task_id)[-1]
    assert [{"run_id": run.id, "attempt": 1}] == data_of(store, "run.started")


def test_start_run_takes_the_id_the_runner_chose(store: Store, claimed: Claimed) -> None:
    """A runner that named its files after the run id gets a run with that id."""
    run = store.runs.start_run(new_run(claimed()), run_id="r-chosen0001")
    assert "r-chosen0001" == run.id


def test_start_run_refuses_an_id_without_the_run_prefix(store: Store, claimed: Claimed) -> None:
    """A run id must look like one (`r-...`)."""
    with pytest.raises(InvalidInput, match="run_id"):
        store.runs.start_run(new_run(claimed()), run_id="t-notarun00")


def test_start_run_under_a_stale_token_is_refused_and_records_nothing(
    store: Store, settings: Settings, claimed: Claimed, events: Names
) -> None:
    """A worker whose claim ended cannot start a run of the task."""
    claim = claimed()
    corral.release(store, claim.task_id, token=claim.token)
    seen = events()
    with pytest.raises(StaleToken, match=f"token {claim.token} is stale"):
        store.runs.start_run(new_run(claim))
    assert [] == store.runs.list_runs()
    assert seen == events()


def test_start_run_by_another_worker_than_the_holder_is_refused(
    store: Store, claimed: Claimed, worker: MakeWorker
) -> None:
    """The token is the holder's, so a run recorded by someone else is refused."""
    claim = claimed()
    other = worker("other")
    with pytest.raises(Refused, match="is held by worker"):
        store.runs.start_run(new_run(claim, worker_id=other.id))
    assert [] == store.runs.list_runs()


def test_finish_run_records_how_it_ended(store: Store, clock: FakeClock, claimed: Claimed) -> None:
    """Outcome, exit code, error, usage and final commit are kept, with the time it ended."""
    run = store.runs.start_run(new_run(claimed()))
    clock.advance(90)
    usage = {"tokens": 1200, "cost_usd": 0.42}
    ended = store.runs.finish_run(
        run.id,
        outcome=RunOutcome.FAILED,
        exit_code=3,
        error="tests failed",
        usage=usage,
        final_commit="def456",
    )
    assert (RunOutcome.FAILED, 3, "tests failed", usage, "def456") == (
        ended.outcome,
        ended.exit_code,
        ended.error,
        ended.usage,
        ended.final_commit,
    )
    assert (store.now(), 90.0, True) == (ended.finished_at, ended.duration_s, ended.finished)
    assert ended == store.runs.get_run(run.id)
    assert [{"run_id": run.id, "outcome": "failed", "exit_code": 3}] == data_of(
        store, "run.finished"
    )


def test_finish_run_needs_no_live_claim(store: Store, claimed: Claimed) -> None:
    """A run whose task was taken away is still recorded, as lease_lost."""
    claim = claimed()
    run = store.runs.start_run(new_run(claim))
    corral.cancel(store, claim.task_id)
    assert (
        RunOutcome.LEASE_LOST
        == store.runs.finish_run(run.id, outcome=RunOutcome.LEASE_LOST).outcome
    )


def test_a_finished_run_cannot_be_finished_again(
    store: Store, clock: FakeClock, claimed: Claimed, events: Names
) -> None:
    """Finishing twice is refused, naming the first outcome, and the record stays as it was."""
    run = store.runs.start_run(new_run(claimed()))
    ended = store.runs.finish_run(run.id, outcome=RunOutcome.DONE, exit_code=0)
    seen = events()
    clock.advance(5)
    with pytest.raises(Refused, match=f"run {run.id} is already finished \\(done\\)"):
        store.runs.finish_run(run.id, outcome=RunOutcome.KILLED, exit_code=-9)
    assert ended == store.runs.get_run(run.id)
    assert seen == events()


def test_finish_run_accepts_an_outcome_by_its_name_and_refuses_others(
    store: Store, claimed: Claimed
) -> None:
    """`"timeout"` is RunOutcome.TIMEOUT; a name that is no outcome is invalid input."""
    first = store.runs.start_run(new_run(claimed()))
    with pytest.raises(InvalidInput, match="outcome"):
        store.runs.finish_run(first.id, outcome="exploded")  # type: ignore[arg-type]
    assert not store.runs.get_run(first.id).finished
    ended = store.runs.finish_run(first.id, outcome="timeout")  # type: ignore[arg-type]
    assert RunOutcome.TIMEOUT == ended.outcome


def test_an_unknown_run_is_not_found(store: Store) -> None:
    """Every run operation names the missing run."""
    for operation in (
        lambda: store.runs.get_run("r-nope"),
        lambda: store.runs.finish_run("r-nope", outcome=RunOutcome.DONE),
        lambda: store.runs.mark_waiting("r-nope", "stalled: no output for the stall timeout"),
        lambda: store.runs.record_progress("r-nope", "half way"),
    ):
        with pytest.raises(NotFound, match="run 'r-nope' not found"):
            operation()


def test_mark_waiting_flags_the_run_once_with_an_event(
    store: Store, clock: FakeClock, claimed: Claimed
) -> None:
    """The first mark sets stalled_at and writes run.waiting; a second mark changes nothing."""
    claim = claimed()
    run = store.runs.start_run(new_run(claim))
    clock.advance(300)
    store.runs.mark_waiting(run.id, "stalled: no output for the stall timeout")
    flagged_at = store.now()
    clock.advance(60)
    store.runs.mark_waiting(run.id, "stalled: no output for the stall timeout")
    assert flagged_at == store.runs.get_run(run.id).stalled_at
    stalled = [
        e for e in store.events.list_events(EventFilter(limit=10_000)) if e.name == "run.waiting"
    ]
    assert [(claim.task_id, claim.worker_id, claim.token)] == [
        (e.task_id, e.worker_id, e.token) for e in stalled
    ]
    assert [{"run_id": run.id, "last_progress_at": None}] == [e.data for e in stalled]


def test_progress_clears_a_stall_so_a_later_one_is_flagged_again(
    store: Store, clock: FakeClock, claimed: Claimed
) -> None:
    """record_progress sets last_progress_at and the note and clears stalled_at."""
    run = store.runs.start_run(new_run(claimed()))
    store.runs.mark_waiting(run.id, "stalled: no output for the stall timeout")
    clock.advance(10)
    store.runs.record_progress(run.id, "tests pass")
    progressed = store.runs.get_run(run.id)
    assert (None, store.now(), "tests pass") == (
        progressed.stalled_at,
        progressed.last_progress_at,
        progressed.progress,
    )
    clock.advance(300)
    store.runs.mark_waiting(run.id, "stalled: no output for the stall timeout")
    assert store.now() == store.runs.get_run(run.id).stalled_at
    assert [
        {"run_id": run.id, "last_progress_at": None},
        {"run_id": run.id, "last_progress_at": progressed.to_dict()["last_progress_at"]},
    ] == data_of(store, "run.waiting")


def test_progress_without_a_note_keeps_the_last_note(
    store: Store, clock: FakeClock, claimed: Claimed
) -> None:
    """Output without words (a command printing) moves last_progress_at and keeps the note."""
    run = store.runs.start_run(new_run(claimed()))
    store.runs.record_progress(run.id, "step 2 of 5")
    clock.advance(3)
    store.runs.record_progress(run.id, None)
    after = store.runs.get_run(run.id)
    assert (store.now(), "step 2 of 5") == (after.last_progress_at, after.progress)


def test_a_finished_run_ignores_stalls_and_progress(
    store: Store, clock: FakeClock, claimed: Claimed, events: Names
) -> None:
    """A stall or progress report racing the run's end changes nothing and raises nothing."""
    run = store.runs.start_run(new_run(claimed()))
    ended = store.runs.finish_run(run.id, outcome=RunOutcome.DONE, exit_code=0)
    seen = events()
    clock.advance(1)
    store.runs.mark_waiting(run.id, "stalled: no output for the stall timeout")
    store.runs.record_progress(run.id, "late")
    assert ended == store.runs.get_run(run.id)
    assert seen == events()


def test_list_runs_is_newest_first_and_filters_by_task_and_worker(
    store: Store, clock: FakeClock, claimed: Claimed, worker: MakeWorker
) -> None:
    """Runs come newest first (ties in start time by insertion), narrowed by task or worker."""
    a, b = worker("a", max_concurrent=2), worker("b")
    first = store.runs.start_run(new_run(claimed(a.id)))
    second = store.runs.start_run(new_run(claimed(a.id)))  # same instant: insertion order decides
    clock.advance(1)
    third = store.runs.start_run(new_run(claimed(b.id)))
    assert [third.id, second.id, first.id] == [r.id for r in store.runs.list_runs()]
    assert [second.id, first.id] == [r.id for r in store.runs.list_runs(worker_id=a.id)]
    assert [first.id] == [r.id for r in store.runs.list_runs(task_id=first.task_id)]
    assert [third.id, second.id] == [r.id for r in store.runs.list_runs(limit=2)]
    assert [] == store.runs.list_runs(task_id="t-nothing")


def test_runs_of_one_task_are_its_attempts(
    store: Store, clock: FakeClock, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """Each claim of a task gets its own run; the task's runs list every attempt, newest first."""
    task, w = add(), worker()
    runs = []
    for attempt in (1, 2):
        claim = corral.claim(store, task.id, w.id, settings=settings)
        runs.append(store.runs.start_run(new_run(claim, attempt=attempt)))
        store.runs.finish_run(runs[-1].id, outcome=RunOutcome.FAILED, exit_code=1)
        corral.fail(store, task.id, error="no", token=claim.token, settings=settings)
        clock.advance(settings.retry_max_s)  # past the backoff
    assert [(2, runs[1].token), (1, runs[0].token)] == [
        (r.attempt, r.token) for r in store.runs.list_runs(task_id=task.id)
    ]
    assert runs[1].token > runs[0].token


def test_unfinished_runs_are_the_workers_open_runs_oldest_first(
    store: Store, clock: FakeClock, claimed: Claimed, worker: MakeWorker
) -> None:
    """Only the worker's runs without an outcome are listed, in the order they started."""
    w = worker("w", max_concurrent=3)
    first = store.runs.start_run(new_run(claimed(w.id)))
    clock.advance(1)
    done = store.runs.start_run(new_run(claimed(w.id)))
    clock.advance(1)
    last = store.runs.start_run(new_run(claimed(w.id)))
    store.runs.start_run(new_run(claimed()))  # another worker's
    store.runs.finish_run(done.id, outcome=RunOutcome.DONE, exit_code=0)
    assert [first.id, last.id] == [r.id for r in store.runs.unfinished_runs(w.id)]


def test_the_json_shape_of_a_run(store: Store, clock: FakeClock, claimed: Claimed) -> None:
    """to_dict gives every field, instants as ISO text and the command as a list."""
    run = store.runs.start_run(new_run(claimed()))
    clock.advance(2.5)
    ended = store.runs.finish_run(run.id, outcome=RunOutcome.DONE, exit_code=0, usage={"tokens": 7})
    shape = ended.to_dict()
    assert [
        "id",
        "task_id",
        "worker_id",
        "token",
        "attempt",
        "outcome",
        "exit_code",
        "error",
        "started_at",
        "finished_at",
        "duration_s",
        "cwd",
        "command",
        "prompt",
        "base_commit",
        "final_commit",
        "transcript_path",
        "stderr_path",
        "usage",
        "stalled_at",
        "last_progress_at",
        "progress",
        "agent",
        "session_id",
        "resumed_from",
        "stop_reason",
        "waiting",
    ] == list(shape)
    assert ("done", 2.5, ["agent", "--print"], {"tokens": 7}) == (
        shape["outcome"],
        shape["duration_s"],
        shape["command"],
        shape["usage"],
    )
    assert ended.finished_at is not None
    assert ended.finished_at.isoformat() == shape["finished_at"]


def test_a_python_run_without_files_or_prompt_is_recorded(store: Store, claimed: Claimed) -> None:
    """A run with no prompt, no capture files and an empty command is a valid record."""
    spec = new_run(claimed(), prompt=None, command=(), transcript_path=None, stderr_path=None)
    run = store.runs.start_run(spec)
    assert (None, (), None, None) == (run.prompt, run.command, run.transcript_path, run.stderr_path)
    assert isinstance(store.runs.get_run(run.id), Run)


def test_a_run_launches_only_while_its_claim_is_active(
    store: Store, claimed: Claimed, worker: MakeWorker, settings: Settings
) -> None:
    """launch_run allows the start under the active claim, and records it; once the claim
    ended (here: re-claimed by another worker) it refuses, and changes nothing."""
    claim = claimed()
    run = store.runs.start_run(new_run(claim))
    assert store.runs.launch_run(run.id)
    assert store.runs.get_run(run.id).last_progress_at is not None
    corral.release(store, claim.task_id, token=claim.token)
    again = corral.claim(store, claim.task_id, worker("other").id, settings=settings)
    late = store.runs.start_run(new_run(again))
    corral.release(store, claim.task_id, token=again.token)
    assert (False, None) == (
        store.runs.launch_run(late.id),
        store.runs.get_run(late.id).last_progress_at,
    )


def test_a_dead_workers_run_that_never_launched_is_lease_lost_not_killed(
    store: Store, clock: FakeClock, claimed: Claimed, worker: MakeWorker, settings: Settings
) -> None:
    """Declared dead, a worker's launched run ends killed; one that never started, lease_lost."""
    holder = worker(max_concurrent=2).id
    first, second = claimed(holder), claimed(holder)
    launched = store.runs.start_run(new_run(first))
    store.runs.launch_run(launched.id)
    never = store.runs.start_run(new_run(second))
    clock.advance(settings.heartbeat_interval_s * (settings.dead_after_missed + 0.5))
    assert 1 == corral.reconcile_once(store, settings=settings).workers_dead
    ended = [store.runs.get_run(launched.id), store.runs.get_run(never.id)]
    assert [RunOutcome.KILLED, RunOutcome.LEASE_LOST] == [r.outcome for r in ended]
    assert f"worker {holder} died (missed heartbeats)" == ended[0].error
    assert f"worker {holder} died (missed heartbeats), before its run started" == ended[1].error


def test_a_runs_streamed_usage_is_kept_while_its_claim_is_active_and_survives_its_death(
    store: Store, clock: FakeClock, claimed: Claimed, worker: MakeWorker, settings: Settings
) -> None:
    """record_usage keeps a running run's usage (each call replacing the last) while its
    claim is active; its worker declared dead, the run ends killed with that usage, and a
    later call changes nothing."""
    holder = worker().id
    run = store.runs.start_run(new_run(claimed(holder)))
    store.runs.launch_run(run.id)
    first = {"input_tokens": 100, "output_tokens": 20, "cost_usd": 0.01}
    grown = {"input_tokens": 300, "output_tokens": 90, "cost_usd": 0.04}
    assert (True, True) == (store.runs.record_usage(run.id, first),
                            store.runs.record_usage(run.id, grown))  # fmt: skip
    assert grown == store.runs.get_run(run.id).usage
    clock.advance(settings.heartbeat_interval_s * (settings.dead_after_missed + 0.5))
    assert 1 == corral.reconcile_once(store, settings=settings).workers_dead
    assert False is store.runs.record_usage(run.id, {"input_tokens": 1})
    ended = store.runs.get_run(run.id)
    assert (RunOutcome.KILLED, grown) == (ended.outcome, ended.usage)
    assert grown["cost_usd"] == store.runs.usage_by("task", task_id=run.task_id)[0].cost_usd
