"""`GET /metrics` through a real server: the gauges of the store's state, and the counters
and histograms summed over its event log, the same in every server of a store and after a
restart; the exposition parsed as Prometheus parses it."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import json
import urllib.request
from datetime import timedelta

from prometheus_client.parser import text_string_to_metric_families
from tests.server.conftest import Server

import corral
from corral import EventFilter, FakeClock, Settings, open_store
from corral.model.tallies import REPAIRS, RUN_BOUNDS_S, WAIT_BOUNDS_S

TALLIES = (
    "corral_tasks_completed",
    "corral_tasks_failed",
    "corral_task_queue_wait_seconds",
    "corral_run_duration_seconds",
    "corral_reconcile_repairs",
)
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def _tallies(text: str) -> Samples:
    """The samples of the log's tallies in an exposition, by name and labels."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        if family.name in TALLIES
        for s in family.samples
    }


def _value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, tuple(sorted(labels.items())))]


def _ok(server: Server, *args: str) -> str:
    done = server.corral(*args, "--json")
    assert 0 == done.returncode, done.stderr
    return done.stdout


def _id(server: Server, *args: str) -> str:
    found: str = json.loads(_ok(server, *args))["id"]
    return found


def test_metrics_are_the_stores_state_in_the_prometheus_format(server: Server) -> None:
    """/metrics for a viewer: corral_tasks by queue, kind and status, workers by status,
    a parked provider 1; without a token 401."""
    viewer, operator = server.token("viewer"), server.token("operator")
    assert 0 == server.corral("add", "a", "--kind", "code").returncode
    assert 0 == server.corral("add", "b", "--queue", "api").returncode
    assert 0 == server.corral("worker", "register", "--name", "w").returncode
    assert 0 == server.corral("provider", "set", "claude", "--pause").returncode
    with open_store(server.db) as store:
        until = store.now() + timedelta(hours=1)
        store.providers.park_provider("codex", until=until, reason="limit", actor="test")
    server.start()
    assert 401 == server.call("GET", "/metrics")[0]
    request = urllib.request.Request(f"http://127.0.0.1:{server.port}/metrics")
    request.add_header("Authorization", f"Bearer {viewer}")
    with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310 - http://
        assert answer.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = answer.read().decode()
    lines = set(text.splitlines())
    ns = 'namespace="default",'
    assert f'corral_tasks{{kind="code",{ns}queue="default",status="ready"}} 1.0' in lines
    assert f'corral_tasks{{kind="default",{ns}queue="api",status="ready"}} 1.0' in lines
    assert f'corral_workers{{{ns}status="starting"}} 1.0' in lines
    assert f'corral_workers{{{ns}status="dead"}} 0.0' in lines
    assert "corral_worker_active_claims 0.0" in lines
    assert 'corral_provider_parked{provider="claude"} 0.0' in lines  # paused, not parked
    assert 'corral_provider_parked{provider="codex"} 1.0' in lines
    assert operator not in text and viewer not in text


def test_a_task_waiting_for_a_person_is_counted_in_its_state(server: Server) -> None:
    """A task a run left waiting is corral_tasks{status="waiting"}, not ready or running."""
    viewer = server.token("viewer")
    with open_store(server.db) as store:
        task = corral.enqueue(store, corral.NewTask(title="asks"))
        worker = corral.register(store, corral.NewWorker(name="w")).worker
        claim = corral.claim(store, task.id, worker.id)
        corral.wait(store, task.id, reason="question: which one?", token=claim.token)
    server.start()
    lines = set(server.text("/metrics", viewer).splitlines())
    ns = 'namespace="default",'
    assert f'corral_tasks{{kind="default",{ns}queue="default",status="waiting"}} 1.0' in lines
    assert not any('status="running"' in line and "corral_tasks{" in line for line in lines)


def test_the_running_pools_slots_are_counted_by_group_and_state(server: Server) -> None:
    """corral_pool_slots{group,state} and corral_pool_slot_restarts{group}, from the slots
    the running orchestrator last reported; none while it is stopped."""
    from corral.model.orchestrators import OrchestratorStatus

    viewer = server.token("viewer")
    slots = [
        {"name": "claude-1", "group": "claude", "state": "running", "restarts": 0},
        {"name": "claude-2", "group": "claude", "state": "running", "restarts": 1},
        {"name": "codex-1", "group": "codex", "state": "backoff", "restarts": 3},
    ]
    with open_store(server.db) as store:
        seen = store.orchestrators.get_orchestrator()
        store.orchestrators.acquire_orchestrator(pid=7, host="h", config={}, seen=seen)
        store.orchestrators.set_orchestrator_status(
            pid=7, host="h", to=OrchestratorStatus.RUNNING, allowed=frozenset({"starting"})
        )
        store.orchestrators.beat_orchestrator(pid=7, host="h", slots=slots, reconciled=False)
    server.start()
    lines = set(server.text("/metrics", viewer).splitlines())
    ns = 'namespace="default"'
    assert {
        f'corral_pool_slots{{group="claude",{ns},state="running"}} 2.0',
        f'corral_pool_slots{{group="codex",{ns},state="backoff"}} 1.0',
        f'corral_pool_slot_restarts{{group="claude",{ns}}} 1.0',
        f'corral_pool_slot_restarts{{group="codex",{ns}}} 3.0',
    } == {line for line in lines if line.startswith("corral_pool_slot")}


def test_counters_and_histograms_count_real_claims_completions_failures_and_repairs(
    served: Server,
) -> None:
    """Through the CLI and a runner: a completion of each kind, a final failure, a claim's
    wait per claim, a run's duration per run; a reconcile pass's repairs by their event;
    every bucket series cumulative up to +Inf."""
    viewer = served.token("viewer")
    served.start()
    empty = _tallies(served.text("/metrics", viewer))
    assert {kind: 0.0 for kind in REPAIRS} == {
        dict(labels)["kind"]: v for (name, labels), v in empty.items() if "repairs" in name
    }
    code = _id(served, "add", "fix", "--kind", "code")
    doomed = _id(served, "add", "doomed", "--max-attempts", "1")
    worker = _id(served, "worker", "register", "--name", "w", "--kind", "code", "--kind", "default")
    token = json.loads(_ok(served, "claim", code, worker))["token"]
    _ok(served, "done", code, "--token", str(token))
    token = json.loads(_ok(served, "claim", doomed, worker))["token"]
    _ok(served, "fail", doomed, "--error", "no", "--token", str(token))
    _id(served, "add", "run me")
    ran = served.corral("worker", "start", "--name", "r", "--exec", "true", "--max-tasks", "1")
    assert 0 == ran.returncode, ran.stderr
    held = _id(served, "add", "held")
    silent = _id(served, "worker", "register", "--name", "silent", "--pid", "1")
    _ok(served, "claim", held, silent)
    with open_store(served.db) as store:
        late = FakeClock(start=store.now() + timedelta(hours=2))
    with open_store(served.db, clock=late) as store:
        report = corral.reconcile_once(store, settings=Settings())
        repaired = [
            e.name
            for e in store.events.list_events(EventFilter(limit=10_000))
            if e.actor == "reconciler" and e.name in REPAIRS
        ]

    samples = _tallies(served.text("/metrics", viewer))

    assert 1 == report.crashes
    assert 1 == _value(samples, "corral_tasks_completed_total", queue="default", kind="code")
    assert 1 == _value(samples, "corral_tasks_completed_total", queue="default", kind="default")
    assert 1 == _value(samples, "corral_tasks_failed_total", queue="default", kind="default")
    for kind in REPAIRS:
        assert repaired.count(kind) == _value(samples, "corral_reconcile_repairs_total", kind=kind)
    assert 1 == _value(samples, "corral_reconcile_repairs_total", kind="task.crashed")
    waits = "corral_task_queue_wait_seconds_count"
    assert 1 == _value(samples, waits, queue="default", kind="code")
    assert 3 == _value(samples, waits, queue="default", kind="default")  # doomed, run me, held
    runs = {"queue": "default", "kind": "default"}
    assert 1 == _value(samples, "corral_run_duration_seconds_count", **runs)
    assert 0 < _value(samples, "corral_run_duration_seconds_sum", **runs) < 60
    for name, bounds in (
        ("corral_task_queue_wait_seconds", WAIT_BOUNDS_S),
        ("corral_run_duration_seconds", RUN_BOUNDS_S),
    ):
        series = [
            _value(samples, f"{name}_bucket", le=le, **runs)
            for le in [*(repr(float(b)) for b in bounds), "+Inf"]
        ]
        assert sorted(series) == series
        assert _value(samples, f"{name}_count", **runs) == series[-1]


def test_every_server_of_a_store_and_a_restarted_one_answer_the_same_tallies(
    served: Server,
) -> None:
    """Two servers on one store, one of them restarted: the same counters and histograms,
    and each new completion counted once by each."""
    viewer = served.token("viewer")
    worker = _id(served, "worker", "register", "--name", "w")
    for n in range(3):
        task = _id(served, "add", f"t{n}")
        _ok(served, "claim", task, worker)
        _ok(served, "done", task)
    other = served.again()
    served.start()
    other.start()
    first = _tallies(served.text("/metrics", viewer))
    assert 3 == _value(first, "corral_tasks_completed_total", queue="default", kind="default")
    assert first == _tallies(other.text("/metrics", viewer))

    served.stop()
    task = _id(served, "add", "after the restart")
    _ok(served, "claim", task, worker)
    _ok(served, "done", task)
    served.start()
    again = _tallies(served.text("/metrics", viewer))

    assert 4 == _value(again, "corral_tasks_completed_total", queue="default", kind="default")
    assert again == _tallies(other.text("/metrics", viewer))
    other.stop()
