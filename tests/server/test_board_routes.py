"""Seed 001's compatibility routes through a real `corral serve` on each store: the board
view of tasks, PATCH moving a task through corral's fenced use cases, sessions, heartbeats,
roles and bad input; and the seed's own polling loop, in Node, completing tasks."""

from __future__ import annotations

import json
import os
import shutil
import signal
import threading
import urllib.request
from pathlib import Path
from typing import Any

import psutil
import pytest
from tests.runtime.conftest import wait_until

import corral
from corral import NewTask, NewWorker, Store, Task, TaskStatus
from corral.model.events import EventFilter
from corral.model.runs import RunOutcome
from corral.usecases.reviews import submit

from .conftest import CORRAL, Server

LOOP = Path(__file__).with_name("seed001_loop.mjs")
FAST = {"CORRAL_HEARTBEAT_INTERVAL_S": "0.2"}


def _worker(store: Store, name: str, **fields: Any) -> corral.Worker:
    """A registered worker that has beaten once (idle)."""
    worker = corral.register(store, NewWorker(name=name, **fields)).worker
    return corral.heartbeat(store, worker.id).worker


def _add(store: Store, title: str, **fields: Any) -> Task:
    return corral.enqueue(store, NewTask(title=title, **fields))


def _held(store: Store, title: str, worker: corral.Worker, **fields: Any) -> corral.Claim:
    """A task claimed by `worker`: its claim."""
    return corral.claim(store, _add(store, title, **fields).id, worker.id)


def _patch(server: Server, task_id: str, token: str, body: dict[str, Any]) -> tuple[int, Any]:
    return server.send("PATCH", f"/api/tasks/{task_id}", token, body)


def _events(store: Store, task_id: str) -> list[tuple[str, str]]:
    """(name, actor) of the task's events, oldest first."""
    found = store.events.list_events(EventFilter(task_id=task_id, limit=500))
    return [(e.name, e.actor) for e in found]


# -- the board view ---------------------------------------------------------------------


def test_the_seed_view_shows_each_corral_state_in_the_boards_words(served: Server) -> None:
    """view=seed001: ready and blocked are todo (blockedBy lists what it waits on), running
    in-progress, in_review review, done done, failed blocked, cancelled cancelled; the
    seed's fields from the task and its payload; without view, corral's shape as before."""
    viewer = served.token("viewer")
    payload = {"model": "m1", "instructions": "do it", "steps": ["a", "b"], "workdir": "/w"}
    with served.store() as store:
        worker = _worker(store, "slot-1", max_concurrent=9)
        first = _add(store, "first", assignee="slot-1", priority=5, payload=payload, timeout_s=60)
        waiting = _add(store, "waits", depends_on=(first.id,))
        running = _held(store, "running", worker).task_id
        review = _held(store, "review", worker)
        submit(store, review.task_id, token=review.token)
        done = _held(store, "done", worker)
        corral.complete(store, done.task_id, token=done.token)
        failed = _held(store, "failed", worker, max_attempts=1)
        corral.fail(store, failed.task_id, error="boom", token=failed.token)
        cancelled = _add(store, "cancelled")
        corral.cancel(store, cancelled.id)
    served.start()
    status, tasks = served.call("GET", "/api/tasks?view=seed001", viewer)
    assert 200 == status
    assert {
        first.id: "todo",
        waiting.id: "todo",
        running: "in-progress",
        review.task_id: "review",
        done.task_id: "done",
        failed.task_id: "blocked",
        cancelled.id: "cancelled",
    } == {t["id"]: t["status"] for t in tasks}
    shown = {t["id"]: t for t in tasks}
    assert ([first.id], [], "blocked") == (
        shown[waiting.id]["blockedBy"],
        shown[first.id]["blockedBy"],
        shown[waiting.id]["corralStatus"],
    )
    _, one = served.call("GET", f"/api/tasks/{first.id}?view=seed001", viewer)
    assert {
        "owner": "slot-1",
        "priority": 5,
        "model": "m1",
        "workingDir": "/w",
        "instructions": "do it",
        "deliverables": None,
        "steps": ["a", "b"],
        "timeoutMs": 60_000,
        "createdAt": round(first.created_at.timestamp() * 1000),
    } == {k: one[k] for k in ("owner", "priority", "model", "workingDir", "instructions",
                              "deliverables", "steps", "timeoutMs", "createdAt")}  # fmt: skip
    assert "boom" == shown[failed.task_id]["lastError"]
    assert isinstance(shown[running]["claimToken"], int)
    _, todo = served.call("GET", "/api/tasks?view=seed001&status=todo", viewer)
    assert {first.id, waiting.id} == {t["id"] for t in todo}
    _, plain = served.call("GET", "/api/tasks?status=ready", viewer)
    assert [(first.id, "ready", "slot-1")] == [(t["id"], t["status"], t["assignee"]) for t in plain]
    assert "owner" not in plain[0] and "createdAt" not in plain[0]
    _, plain_one = served.call("GET", f"/api/tasks/{first.id}", viewer)
    assert ("ready", False) == (plain_one["status"], "owner" in plain_one)
    for query, field in (("view=board", "view"), ("view=seed001&status=ready", "status")):
        status, error = served.call("GET", f"/api/tasks?{query}", viewer)
        assert (422, field) == (status, error["field"]), error


# -- PATCH: the mapping ------------------------------------------------------------------


def test_each_board_status_is_its_fenced_use_case(served: Server) -> None:
    """A worker token named slot-1 acts as the live worker slot-1: in-progress claims for
    it, done completes under its claim (metadata the result), review submits, blocked parks
    the task for a person (waiting, its reason the errorReason, whatever attempts remain;
    `corral answer` sends it back), todo releases with the attempt given back; the store
    records each as slot-1's."""
    slot = served.token("worker", name="slot-1")
    attempts = (("done", 3), ("review", 3), ("parked", 3), ("blocked", 1), ("todo", 3))
    with served.store() as store:
        worker = _worker(store, "slot-1")
        ids = {n: _add(store, n, assignee="slot-1", max_attempts=m).id for n, m in attempts}
    served.start()
    moves = {
        "done": {"status": "done", "metadata": {"summary": "ok"}},
        "review": {"status": "review", "metadata": {"errorReason": "please look"}},
        "parked": {"status": "blocked", "metadata": {"errorReason": "tests fail"}},
        "blocked": {"status": "blocked"},
        "todo": {"status": "todo", "metadata": {"crashRecovery": True}},
    }
    shown = {}
    for name, body in moves.items():
        status, claimed = _patch(served, ids[name], slot, {"status": "in-progress"})
        assert (200, "in-progress", worker.id) == (status, claimed["status"], claimed["workerId"])
        status, shown[name] = _patch(served, ids[name], slot, body)
        assert 200 == status, shown[name]
    assert {
        "done": ("done", "done"),
        "review": ("review", "in_review"),
        "parked": ("blocked", "waiting"),
        "blocked": ("blocked", "waiting"),
        "todo": ("todo", "ready"),
    } == {n: (t["status"], t["corralStatus"]) for n, t in shown.items()}
    with served.store() as store:
        tasks = {n: store.tasks.get_task(i) for n, i in ids.items()}
        assert {"summary": "ok"} == tasks["done"].result
        assert {"parked": "blocked: tests fail", "blocked": "blocked"} == {
            n: tasks[n].wait_reason for n in ("parked", "blocked")
        }
        assert (None, None) == (tasks["parked"].worker_id, tasks["blocked"].worker_id)
        assert TaskStatus.READY == corral.answer(store, ids["blocked"], "go on").status
        assert (0, None) == (tasks["todo"].attempts, tasks["todo"].worker_id)
        assert ("task.claimed", worker.id) == _events(store, ids["done"])[1]
        assert "task.completed" == _events(store, ids["done"])[2][0]
        assert "please look" == store.reviews.get_review(ids["review"]).note
        released = store.events.list_events(EventFilter(task_id=ids["todo"], limit=9))[-1]
        assert ("task.released", '{"crashRecovery":true}') == (released.name, released.reason)


def test_an_operator_claims_for_the_owner_and_reports_on_any_claim(served: Server) -> None:
    """An operator's in-progress claims the task for its owner's live worker; its done
    completes whatever claim is active, as `corral done` without --token; no owner: 409."""
    operator = served.token("operator")
    with served.store() as store:
        worker = _worker(store, "slot-2")
        owned = _add(store, "owned", assignee="slot-2").id
        ownerless = _add(store, "ownerless").id
    served.start()
    status, claimed = _patch(served, owned, operator, {"status": "in-progress"})
    assert (200, worker.id) == (status, claimed["workerId"])
    status, done = _patch(served, owned, operator, {"status": "done"})
    assert (200, "done") == (status, done["status"])
    status, error = _patch(served, ownerless, operator, {"status": "in-progress"})
    assert (409, f"cannot claim task {ownerless} for its owner: it has none") == (
        status,
        error["error"],
    )


# -- PATCH: fencing --------------------------------------------------------------------


def test_a_patch_that_would_break_fencing_is_409_and_changes_nothing(served: Server) -> None:
    """Completing a task another worker holds, a stale claimToken, reporting on a task
    nobody holds, claiming another slot's task, and a report by a token no live worker
    answers to: each 409 with the store's reason, and the task as it was."""
    slot = served.token("worker", name="slot-1")
    ghost = served.token("worker", name="slot-9")
    with served.store() as store:
        _worker(store, "slot-1", max_concurrent=2)
        other = _worker(store, "slot-2")
        theirs = _held(store, "theirs", other).task_id
        mine = _add(store, "mine", assignee="slot-1").id
        idle = _add(store, "idle").id
        owned = _add(store, "owned", assignee="slot-2").id
    served.start()
    _, first = _patch(served, mine, slot, {"status": "in-progress"})
    _patch(served, mine, slot, {"status": "todo"})
    _, second = _patch(served, mine, slot, {"status": "in-progress"})
    assert first["claimToken"] < second["claimToken"]
    with served.store() as store:
        before = {i: store.tasks.get_task(i) for i in (theirs, mine, idle, owned)}
    refused = [
        (theirs, slot, {"status": "done"}, f"task {theirs} is held by worker {other.id}"),
        (mine, slot, {"status": "done", "claimToken": first["claimToken"]}, "is stale"),
        (idle, slot, {"status": "done"}, f"cannot complete task {idle}: it is ready"),
        (owned, slot, {"status": "in-progress"}, f"task {owned} is assigned to slot-2"),
        (mine, ghost, {"status": "done"}, "no live worker answers to 'slot-9'"),
    ]
    for task_id, token, body, reason in refused:
        status, error = _patch(served, task_id, token, body)
        assert (409, True) == (status, reason in error["error"]), (body, error)
    with served.store() as store:
        assert before == {i: store.tasks.get_task(i) for i in before}
    fenced = {"status": "done", "claimToken": second["claimToken"]}
    status, done = _patch(served, mine, slot, fenced)
    assert (200, "done") == (status, done["status"])


# -- PATCH: bad input and roles ----------------------------------------------------------

DEEP = {"status": "done", "metadata": json.loads('{"a":' * 100 + "1" + "}" * 100)}
BAD_PATCHES: list[tuple[bytes, int, str | None]] = [
    (b"not json", 422, "body"),
    (b"[1, 2]", 422, "body"),
    (b"{}", 422, "status"),
    (b'{"status": "sleeping"}', 422, "status"),
    (b'{"status": 7}', 422, "status"),
    (b'{"status": null}', 422, "status"),
    (json.dumps({"status": "x" * 100_000}).encode(), 422, "status"),
    (b'{"status": "done", "colour": "red"}', 422, "colour"),
    (b'{"status": "done", "metadata": [1]}', 422, "metadata"),
    (b'{"status": "done", "claimToken": true}', 422, "claimToken"),
    (b'{"status": "done", "claimToken": "7"}', 422, "claimToken"),
    (b'{"status": "done", "claimToken": 0}', 422, "claimToken"),
    (b'{"status": "done", "claimToken": 1e3}', 422, "claimToken"),
    (b'{"status": "done", "claimToken": 100000000000000000000000}', 422, "claimToken"),
    (b'{"status": "in-progress", "metadata": {"a": 1}}', 422, "metadata"),
    (b'{"status": "in-progress", "claimToken": 5}', 422, "claimToken"),
    (b'{"status": "done", "metadata": {"a": "\\u0000"}}', 422, "body"),
    (json.dumps(DEEP).encode(), 422, "body"),
    (b'{"status": "done", "metadata": ' + b"[" * 5000 + b"]" * 5000 + b"}", 422, "body"),
]


def test_bad_patches_are_one_line_errors_naming_the_field_and_write_nothing(
    served: Server,
) -> None:
    """Each bad body: its status, one short line, the field; the task and the event log
    as they were. An unknown task is 404."""
    slot = served.token("worker", name="slot-1")
    with served.store() as store:
        _worker(store, "slot-1")
        task_id = _held(store, "held", store.workers.list_workers()[0]).task_id
        before = (
            store.tasks.get_task(task_id),
            len(store.events.list_events(EventFilter(limit=1000))),
        )
    served.start()
    for body, status, field in BAD_PATCHES:
        got, error = served.call("PATCH", f"/api/tasks/{task_id}", slot, body)
        assert (status, field) == (got, error.get("field")), (body[:60], error)
        assert "\n" not in error["error"] and len(error["error"]) < 300, error
    huge = b'{"status": "done", "metadata": "' + b"x" * (2 << 20) + b'"}'
    assert 413 == served.call("PATCH", f"/api/tasks/{task_id}", slot, huge)[0]
    with served.store() as store:
        assert before == (
            store.tasks.get_task(task_id),
            len(store.events.list_events(EventFilter(limit=1000))),
        )
    status, error = _patch(served, "t-nosuchtask0", slot, {"status": "done"})
    assert (404, "task 't-nosuchtask0' not found") == (status, error["error"])


def test_roles_and_queues_guard_the_seed_routes(served: Server) -> None:
    """No token: 401 everywhere; a viewer reads but cannot PATCH, spawn, kill or heartbeat
    (403); a worker token is a slot: it PATCHes, spawns, kills and heartbeats; a worker
    token of other queues cannot touch this queue's task or spawn in it, and a slot
    heartbeats for itself only (403); an operator may do all."""
    viewer, worker = served.token("viewer"), served.token("worker", name="slot-1")
    narrow = served.token("worker", "api", name="narrow")
    operator = served.token("operator")
    with served.store() as store:
        _worker(store, "narrow")
        task_id = _add(store, "t").id
    served.start()
    routes = [
        ("GET", "/api/tasks?view=seed001", None),
        ("GET", f"/api/tasks/{task_id}?view=seed001", None),
        ("PATCH", f"/api/tasks/{task_id}", {"status": "todo"}),
        ("POST", "/api/sessions/spawn", {"prompt": "p"}),
        ("GET", "/api/sessions", None),
        ("DELETE", "/api/sessions/nosuchsession", None),
        ("GET", "/api/heartbeats", None),
        ("POST", "/api/heartbeats", {"slot": "slot-1", "status": "idle"}),
    ]

    def statuses(token: str | None) -> list[int]:
        return [served.send(m, p, token, b)[0] if b else served.call(m, p, token)[0]
                for m, p, b in routes]  # fmt: skip

    assert [401] * 8 == statuses(None)
    assert [200, 200, 403, 403, 200, 403, 200, 403] == statuses(viewer)
    assert [200, 200, 409, 201, 200, 404, 200, 200] == statuses(worker)
    assert [200, 200, 409, 201, 200, 404, 200, 200] == statuses(operator)
    status, error = _patch(served, task_id, narrow, {"status": "in-progress"})
    assert (403, "token 'narrow' may touch queues api only, not 'default'") == (
        status,
        error["error"],
    )
    status, error = served.send("POST", "/api/sessions/spawn", narrow, {"prompt": "p"})
    assert (403, "token 'narrow' may touch queues api only, not 'default'") == (
        status,
        error["error"],
    )
    beat = {"slot": "slot-1", "status": "idle"}
    status, error = served.send("POST", "/api/heartbeats", narrow, beat)
    assert (403, "token 'narrow' heartbeats only for its slot 'narrow'") == (
        status,
        error["error"],
    )
    _, refused = served.send("POST", "/api/sessions/spawn", viewer, {"prompt": "p"})
    assert "this needs a worker token" in refused["error"]


# -- a slot's worker, registered by its first call ----------------------------------------


def _named(store: Store, name: str) -> list[corral.Worker]:
    return [w for w in store.workers.list_workers() if w.name == name]


def test_a_slots_first_claim_registers_its_worker_as_the_tokens_own(served: Server) -> None:
    """No worker is registered: a slot's PATCH to in-progress registers worker slot-1 (the
    token's, in its queues) and claims for it; the next claim reuses it. A token of queue
    api registers a worker of queue api."""
    slot = served.token("worker", name="slot-1")
    narrow = served.token("worker", "api", name="slot-api")
    with served.store() as store:
        first, second = (_add(store, n, assignee="slot-1").id for n in ("first", "second"))
        api = _add(store, "api", queue="api").id
    served.start()
    status, claimed = _patch(served, first, slot, {"status": "in-progress"})
    assert (200, "in-progress") == (status, claimed["status"]), claimed
    _patch(served, first, slot, {"status": "done"})
    _, again = _patch(served, second, slot, {"status": "in-progress"})
    assert 200 == _patch(served, api, narrow, {"status": "in-progress"})[0]
    with served.store() as store:
        (worker,) = _named(store, "slot-1")
        assert (claimed["workerId"], again["workerId"]) == (worker.id, worker.id)
        assert ((), "127.0.0.1") == (worker.queues, worker.hostname)
        assert "corral.token" in worker.labels
        assert ("api",) == _named(store, "slot-api")[0].queues
        registered = store.events.list_events(EventFilter(names=("worker.registered",)))
        assert ["slot-1", "slot-api"] == [e.actor for e in registered]


def test_first_calls_of_a_slot_at_once_register_one_worker(served: Server) -> None:
    """Twelve first heartbeats and claims of slot-1 at the same instant: every one served,
    and one worker registered (a slot's calls take turns in one transaction)."""
    slot = served.token("worker", name="slot-1")
    with served.store() as store:
        task_id = _add(store, "t", assignee="slot-1").id
    served.start()
    start = threading.Barrier(12)
    answers: list[int] = []

    def first_call(n: int) -> None:
        start.wait()
        if n == 0:
            answers.append(_patch(served, task_id, slot, {"status": "in-progress"})[0])
        else:
            beat = {"slot": "slot-1", "status": "idle"}
            answers.append(served.send("POST", "/api/heartbeats", slot, beat)[0])

    callers = [threading.Thread(target=first_call, args=(n,)) for n in range(12)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join(60)
    assert [200] * 12 == answers
    with served.store() as store:
        assert 1 == len(_named(store, "slot-1"))


def test_a_slots_heartbeat_keeps_its_worker_and_offline_ends_it(served: Server) -> None:
    """POST /api/heartbeats in the seed's schema registers the slot's worker (its version
    from the metadata) and answers its entry; later beats keep it (lastUpdate moves); an
    offline heartbeat takes it offline with its reason and gives its claim back."""
    slot = served.token("worker", name="slot-1")
    with served.store() as store:
        task_id = _add(store, "t", assignee="slot-1").id
    served.start()
    beat = {
        "slot": "slot-1",
        "status": "idle",
        "task": None,
        "taskTitle": None,
        "sessionId": None,
        "lastUpdate": 1770865572000,
        "startedAt": 1770860000000,
        "metadata": {"workerPid": 12345, "workerVersion": "1.0.0", "restartCount": 0},
    }
    status, first = served.send("POST", "/api/heartbeats", slot, beat)
    assert (200, ["slot-1"]) == (status, list(first["workers"]))
    one = first["workers"]["slot-1"]
    assert ("idle", "1.0.0", 0) == (
        one["status"],
        one["metadata"]["workerVersion"],
        one["metadata"]["restartCount"],
    )
    _patch(served, task_id, slot, {"status": "in-progress"})
    _, later = served.send("POST", "/api/heartbeats", slot, {**beat, "status": "working"})
    two = later["workers"]["slot-1"]
    assert ("working", task_id, one["metadata"]["workerId"]) == (
        two["status"],
        two["task"],
        two["metadata"]["workerId"],
    )
    assert two["lastUpdate"] >= one["lastUpdate"]
    offline = {**beat, "status": "offline", "metadata": {"offlineReason": "graceful-shutdown"}}
    _, gone = served.send("POST", "/api/heartbeats", slot, offline)
    assert ("offline", "graceful-shutdown") == (
        gone["workers"]["slot-1"]["status"],
        gone["workers"]["slot-1"]["metadata"]["offlineReason"],
    )
    with served.store() as store:
        assert (TaskStatus.READY, 0) == (
            store.tasks.get_task(task_id).status,
            store.tasks.get_task(task_id).attempts,
        )
    assert (200, {"workers": {}}) == served.send("POST", "/api/heartbeats", slot, offline)


BAD_BEATS: list[tuple[dict[str, Any], str]] = [
    ({"status": "idle"}, "slot"),
    ({"slot": "slot-1"}, "status"),
    ({"slot": "slot-1", "status": "asleep"}, "status"),
    ({"slot": 1, "status": "idle"}, "slot"),
    ({"slot": "slot-1", "status": "idle", "lastUpdate": "now"}, "lastUpdate"),
    ({"slot": "slot-1", "status": "idle", "metadata": [1]}, "metadata"),
    ({"slot": "slot-1", "status": "idle", "metadata": {"workerVersion": 1}},
     "metadata.workerVersion"),
    ({"slot": "slot-1", "status": "offline", "metadata": {"offlineReason": "x" * 201}},
     "metadata.offlineReason"),
    ({"slot": "slot-1", "status": "idle", "colour": "red"}, "colour"),
]  # fmt: skip


def test_bad_heartbeats_are_422_naming_the_field_and_register_nothing(served: Server) -> None:
    """Each bad heartbeat: 422 naming its field, one line; no worker registered."""
    slot = served.token("worker", name="slot-1")
    served.start()
    for body, field in BAD_BEATS:
        status, error = served.send("POST", "/api/heartbeats", slot, body)
        assert (422, field) == (status, error.get("field")), (body, error)
        assert "\n" not in error["error"]
    with served.store() as store:
        assert [] == store.workers.list_workers()


def test_a_worker_token_of_another_namespace_registers_its_slot_there(server: Server) -> None:
    """A team-b slot's first heartbeat registers its worker in team-b, though default has
    a live worker of its name; default's is untouched."""
    made = server.corral("--namespace", "team-b", "token", "create", "--role", "worker",
                         "--name", "slot-1")  # fmt: skip
    assert 0 == made.returncode, made.stderr
    with server.store() as store:
        ours = _worker(store, "slot-1")
    server.start()
    request = urllib.request.Request(  # noqa: S310 - http://
        f"{server.url}/api/heartbeats",
        data=json.dumps({"slot": "slot-1", "status": "idle"}).encode(),
        method="POST",
        headers={
            "Authorization": f"Bearer {made.stdout.strip()}",
            "X-Corral-Namespace": "team-b",
            "Content-Type": "application/json",
        },
    )
    with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310 - http://
        assert 200 == answer.status
    with server.store() as store:
        assert [ours] == store.workers.list_workers()
        (theirs,) = store.in_namespace("team-b").workers.list_workers()
        assert ("slot-1", "idle") == (theirs.name, str(theirs.status))


# -- sessions ---------------------------------------------------------------------------


def _script(server: Server, name: str, body: str) -> str:
    """An executable bash script in the server's folder."""
    path = server.folder / name
    path.write_text("#!/usr/bin/env bash\n" + body)
    path.chmod(0o755)
    return str(path)


def _runner(server: Server, script: str) -> None:
    """A corral runner for sessions (`worker start --kind session`), beating every 0.2 s."""
    argv = [*CORRAL, "worker", "start", "--name", "agents", "--kind", "session", "--exec", script]
    server.spawn(argv, "agents", FAST)


def _session(server: Server, token: str, session_id: str) -> dict[str, Any]:
    _, listed = server.call("GET", "/api/sessions", token)
    (found,) = [s for s in listed if s["id"] == session_id]
    return found


SPAWN = {
    "sessionLabel": "agent:main:worker-slot-1:5d0c",
    "channel": "internal",
    "prompt": "Fix the login bug",
    "model": "anthropic/claude-sonnet-4-5",
    "thinking": "low",
    "autoStart": True,
}


def test_a_session_is_a_task_for_the_pool_and_killing_it_ends_its_process(
    served: Server,
) -> None:
    """spawn adds a session task (its label its id; the same label again answers it, 200);
    the list is newest first; a runner runs it, which the heartbeats show; DELETE cancels
    it, and the runner ends the process because its claim is gone; again 409, unknown 404."""
    viewer, operator = served.token("viewer"), served.token("operator")
    served.start()
    status, labelled = served.send("POST", "/api/sessions/spawn", operator, SPAWN)
    label = SPAWN["sessionLabel"]
    assert (201, label, label, False, None, "ready") == (
        status,
        labelled["id"],
        labelled["label"],
        labelled["completed"],
        labelled["error"],
        labelled["status"],
    )
    status, again = served.send("POST", "/api/sessions/spawn", operator, {**SPAWN, "prompt": "x"})
    assert (200, labelled["taskId"]) == (status, again["taskId"])
    status, plain = served.send("POST", "/api/sessions/spawn", operator, {"prompt": "Write docs"})
    assert (201, plain["taskId"], None) == (status, plain["id"], plain["label"])
    _, listed = served.call("GET", "/api/sessions", viewer)
    assert [plain["id"], label] == [s["id"] for s in listed]
    with served.store() as store:
        task = store.tasks.get_task(labelled["taskId"])
        assert ("session", "Fix the login bug", "session " + label) == (
            task.kind,
            task.description,
            task.title,
        )
        assert {k: v for k, v in SPAWN.items() if k not in ("sessionLabel", "autoStart")} == {
            k: task.payload[k] for k in ("channel", "prompt", "model", "thinking")
        }
    pid_file = served.folder / "agent.pid"
    _runner(served, _script(served, "hang.sh", f"echo $$ > {pid_file}\nexec sleep 300\n"))
    wait_until(lambda: pid_file.exists() and pid_file.read_text().strip() != "", 30)
    pid = int(pid_file.read_text())
    with served.store() as store:
        (run,) = store.runs.list_runs(task_id=labelled["taskId"])
    _, beats = served.call("GET", "/api/heartbeats", viewer)
    agents = beats["workers"]["agents"]
    assert ("working", labelled["taskId"], "session " + label, run.id) == (
        agents["status"],
        agents["task"],
        agents["taskTitle"],
        agents["sessionId"],
    )
    status, killed = served.call("DELETE", f"/api/sessions/{label}", operator)
    assert (200, "cancelled", "cancelled", False) == (
        status,
        killed["status"],
        killed["error"],
        killed["completed"],
    )
    with served.store() as store:
        wait_until(lambda: store.runs.get_run(run.id).finished_at is not None, 20)
        assert RunOutcome.LEASE_LOST == store.runs.get_run(run.id).outcome
    wait_until(lambda: not psutil.pid_exists(pid), 20)
    status, error = served.call("DELETE", f"/api/sessions/{label}", operator)
    assert (409, f"cannot cancel task {labelled['taskId']}: it is cancelled") == (
        status,
        error["error"],
    )
    status, error = served.call("DELETE", "/api/sessions/agent:nobody", operator)
    assert (404, "session 'agent:nobody' not found") == (status, error["error"])


def test_a_slots_session_is_its_claims_in_the_heartbeats(served: Server) -> None:
    """A slot that holds a claim spawns a session with its worker token: the session keeps
    the slot and the claim's task, the slot's heartbeat shows it as `sessionId`; another
    slot may not kill it (403, nothing changes), the slot may."""
    slot, other = served.token("worker", name="slot-1"), served.token("worker", name="slot-2")
    viewer = served.token("viewer")
    with served.store() as store:
        task_id = _add(store, "t", assignee="slot-1").id
    served.start()
    _patch(served, task_id, slot, {"status": "in-progress"})
    status, session = served.send("POST", "/api/sessions/spawn", slot, SPAWN)
    label = SPAWN["sessionLabel"]
    assert (201, "slot-1", task_id, 1_800_000) == (
        status,
        session["slot"],
        session["task"],
        session["timeoutMs"],
    )
    _, beats = served.call("GET", "/api/heartbeats", viewer)
    assert (task_id, label) == (
        beats["workers"]["slot-1"]["task"],
        beats["workers"]["slot-1"]["sessionId"],
    )
    status, error = served.call("DELETE", f"/api/sessions/{label}", other)
    assert (403, "token 'slot-2' kills only the sessions its slot spawned") == (
        status,
        error["error"],
    )
    assert "ready" == _session(served, viewer, label)["status"]
    status, killed = served.call("DELETE", f"/api/sessions/{label}", slot)
    assert (200, "cancelled") == (status, killed["status"])


def test_a_tasks_timeout_on_the_board_is_30_minutes_and_at_most_the_maximum(
    served: Server,
) -> None:
    """timeoutMs in the board view: the task's own, else 30 minutes, at most 2 hours; a
    spawn's timeoutMs past the maximum is 422 naming it. `[board] max_timeout` moves it."""
    viewer, operator = served.token("viewer"), served.token("operator")
    with served.store() as store:
        ids = {s: _add(store, f"t{s}", timeout_s=s).id for s in (60, 3 * 3600)}
        plain = _add(store, "plain").id
    served.start()
    _, tasks = served.call("GET", "/api/tasks?view=seed001", viewer)
    assert {ids[60]: 60_000, ids[3 * 3600]: 7_200_000, plain: 1_800_000} == {
        t["id"]: t["timeoutMs"] for t in tasks
    }
    status, error = served.send(
        "POST", "/api/sessions/spawn", operator, {"prompt": "p", "timeoutMs": 7_200_001}
    )
    assert (422, "timeoutMs") == (status, error["field"]), error
    assert "milliseconds from 1 to 7200000" in error["error"]
    status, session = served.send(
        "POST", "/api/sessions/spawn", operator, {"prompt": "p", "timeoutMs": 7_200_000}
    )
    assert (201, 7_200_000) == (status, session["timeoutMs"])
    longer = served.again()
    longer.env["CORRAL_BOARD_MAX_TIMEOUT_S"] = "4h"
    try:
        longer.start()
        _, one = longer.call("GET", f"/api/tasks/{ids[3 * 3600]}?view=seed001", viewer)
        assert 10_800_000 == one["timeoutMs"]
    finally:
        longer.close()


BAD_SPAWNS: list[tuple[dict[str, Any], str]] = [
    ({}, "prompt"),
    ({"prompt": ""}, "prompt"),
    ({"prompt": 5}, "prompt"),
    ({"prompt": "p", "autoStart": False}, "autoStart"),
    ({"prompt": "p", "autoStart": "yes"}, "autoStart"),
    ({"prompt": "p", "sessionLabel": "has a space"}, "sessionLabel"),
    ({"prompt": "p", "sessionLabel": "t-0123456789"}, "sessionLabel"),
    ({"prompt": "p", "sessionLabel": "x" * 201}, "sessionLabel"),
    ({"prompt": "p", "model": ""}, "model"),
    ({"prompt": "p", "thinking": ["low"]}, "thinking"),
    ({"prompt": "p", "queue": "a b"}, "queue"),
    ({"prompt": "p", "priority": 9}, "priority"),
]


def test_bad_spawns_and_list_filters_are_422_naming_the_field(served: Server) -> None:
    """Each bad spawn body: 422 naming its field, no session added; bad list filters too."""
    operator = served.token("operator")
    served.start()
    for body, field in BAD_SPAWNS:
        status, error = served.send("POST", "/api/sessions/spawn", operator, body)
        assert (422, field) == (status, error.get("field")), (body, error)
    for query, field in (("status=asleep", "status"), ("limit=0", "limit"), ("limit=x", "limit")):
        status, error = served.call("GET", f"/api/sessions?{query}", operator)
        assert (422, field) == (status, error.get("field")), error
    assert (200, []) == served.call("GET", "/api/sessions", operator)


# -- heartbeats -------------------------------------------------------------------------


def test_heartbeats_are_the_seeds_schema_of_corrals_workers(served: Server) -> None:
    """One entry per slot: idle, working (its task and title), offline (its reason, no
    pid); a slot registered again counts a restart and shows its newest worker."""
    viewer = served.token("viewer")
    with served.store() as store:
        idle = _worker(store, "slot-1", version="1.0.0", pid=4242)
        gone = _worker(store, "slot-2")
        corral.deregister(store, gone.id)
        busy = _worker(store, "slot-2", version="1.0.1")
        claim = _held(store, "Review code changes for PR #42", busy)
        down = _worker(store, "slot-3")
        corral.deregister(store, down.id)
    served.start()
    status, beats = served.call("GET", "/api/heartbeats", viewer)
    assert (200, ["slot-1", "slot-2", "slot-3"]) == (status, sorted(beats["workers"]))
    one, two, three = (beats["workers"][f"slot-{n}"] for n in (1, 2, 3))
    assert {
        "slot": "slot-1",
        "status": "idle",
        "task": None,
        "taskTitle": None,
        "sessionId": None,
        "lastUpdate": round(idle.last_heartbeat_at.timestamp() * 1000),
        "startedAt": round(idle.registered_at.timestamp() * 1000),
        "metadata": {
            "workerPid": 4242,
            "workerVersion": "1.0.0",
            "restartCount": 0,
            "workerId": idle.id,
            "hostname": idle.hostname,
            "corralStatus": "idle",
        },
    } == one
    assert ("working", claim.task_id, "Review code changes for PR #42", None) == (
        two["status"],
        two["task"],
        two["taskTitle"],
        two["sessionId"],
    )
    assert (busy.id, 1, "1.0.1", round(claim.claimed_at.timestamp() * 1000)) == (
        two["metadata"]["workerId"],
        two["metadata"]["restartCount"],
        two["metadata"]["workerVersion"],
        two["metadata"]["taskStartedAt"],
    )
    assert ("offline", None, "deregistered") == (
        three["status"],
        three["metadata"]["workerPid"],
        three["metadata"]["offlineReason"],
    )


# -- the seed's own loop, in Node ---------------------------------------------------------

NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node is not on PATH")


def _loop(server: Server, token: str) -> Any:
    """The seed's loop for slot-1 (tests/server/seed001_loop.mjs) with nothing but the
    server's URL and the slot's worker token, its waits 1/200 of the seed's: a 30 s poll
    is 150 ms."""
    assert NODE is not None
    env = {"CORRAL_URL": server.url, "CORRAL_TOKEN": token, "SEED_TIME_SCALE": "0.005"}
    return server.spawn([NODE, str(LOOP), "slot-1"], "slot-1", env)


def _heartbeat_file(server: Server) -> dict[str, Any]:
    beats: dict[str, Any] = json.loads(
        (server.folder / ".clawhub" / "worker-heartbeats.json").read_text()
    )
    return beats["workers"]["slot-1"]


def _sessions(store: Store) -> list[Task]:
    return store.tasks.list_tasks(corral.TaskFilter(kinds=("session",)))


@needs_node
def test_the_seeds_own_loop_completes_its_slots_tasks(served: Server) -> None:
    """The seed's loop, as written, with only a base URL and a worker token named slot-1
    (no worker registered beforehand): its first heartbeat registers the slot's worker; it
    takes its own tasks highest priority first, spawns a session for each, which a corral
    runner runs, and marks each done; the heartbeats show its session while it works.
    Another slot's task stays ready; SIGTERM ends the loop gracefully (exit 0, its
    heartbeat offline, in its file and in corral)."""
    worker, viewer = served.token("worker", name="slot-1"), served.token("viewer")
    with served.store() as store:
        mine = {p: _add(store, f"task {p}", assignee="slot-1", priority=p).id for p in (1, 3, 2)}
        theirs = _add(store, "another slot's", assignee="slot-2").id
    served.start()
    loop = _loop(served, worker)
    with served.store() as store:
        wait_until(lambda: len(_sessions(store)) == 1, 30)
        (first,) = _sessions(store)
    _, beats = served.call("GET", "/api/heartbeats", viewer)
    assert ("working", mine[3], first.payload["session"]) == (
        beats["workers"]["slot-1"]["status"],
        beats["workers"]["slot-1"]["task"],
        beats["workers"]["slot-1"]["sessionId"],
    )
    _runner(served, _script(served, "agent.sh", "cat > /dev/null\necho did it\n"))
    with served.store() as store:
        done = TaskStatus.DONE
        wait_until(lambda: all(store.tasks.get_task(i).status is done for i in mine.values()), 60)
        (slot,) = _named(store, "slot-1")
        claimed = {
            p: store.events.list_events(EventFilter(task_id=i, names=("task.claimed",)))
            for p, i in mine.items()
        }
        assert {slot.id} == {e.actor for events in claimed.values() for e in events}
        assert [3, 2, 1] == sorted(mine, key=lambda p: claimed[p][0].id)
        sessions = _sessions(store)
        assert [TaskStatus.DONE] * 3 == [s.status for s in sessions]
        assert sorted(mine.values()) == sorted(s.payload["task"] for s in sessions)
        assert all(s.payload["session"].startswith("agent:main:worker-slot-1:") for s in sessions)
        assert TaskStatus.READY == store.tasks.get_task(theirs).status
    loop.send_signal(signal.SIGTERM)
    assert 0 == loop.wait(30)
    assert ("offline", "graceful-shutdown") == (
        _heartbeat_file(served)["status"],
        _heartbeat_file(served)["metadata"]["offlineReason"],
    )
    with served.store() as store:
        (slot,) = _named(store, "slot-1")
        assert ("offline", "graceful-shutdown") == (str(slot.status), slot.offline_reason)


@needs_node
def test_the_seeds_loop_parks_a_failed_session_for_a_person(served: Server) -> None:
    """A session that fails: the seed's loop moves its task to blocked, which parks it for
    a person (waiting, not retried); `corral answer` sends it back and the loop does it."""
    worker = served.token("worker", name="slot-1")
    with served.store() as store:
        task_id = _add(store, "hard", assignee="slot-1").id
    served.env["CORRAL_MAX_ATTEMPTS"] = "1"  # a session's first failure is its last
    served.start()
    _loop(served, worker)
    _runner(served, _script(served, "agent.sh", "cat > /dev/null\nexit 3\n"))
    with served.store() as store:
        wait_until(lambda: store.tasks.get_task(task_id).status is TaskStatus.WAITING, 60)
        assert "blocked" == store.tasks.get_task(task_id).wait_reason
        assert 1 == len(_sessions(store))
        for proc in served.children[1:]:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(30)
        _runner(served, _script(served, "agent2.sh", "cat > /dev/null\n"))
        corral.answer(store, task_id, "try again")
        wait_until(lambda: store.tasks.get_task(task_id).status is TaskStatus.DONE, 60)


@needs_node
def test_the_seeds_loop_gives_its_task_back_after_a_crash_and_does_it_again(
    served: Server,
) -> None:
    """kill -9 of the loop mid-task; started again, its crash recovery kills the orphaned
    session (DELETE: cancelled) and moves the task to todo (released, attempt given back),
    then takes it again; with a runner now, it completes."""
    worker = served.token("worker", name="slot-1")
    with served.store() as store:
        task_id = _add(store, "crashy", assignee="slot-1").id
    served.start()
    loop = _loop(served, worker)
    with served.store() as store:
        wait_until(lambda: len(_sessions(store)) == 1, 30)
        (orphan,) = _sessions(store)
        assert TaskStatus.RUNNING == store.tasks.get_task(task_id).status
    wait_until(lambda: _heartbeat_file(served).get("sessionId") is not None, 30)
    os.killpg(loop.pid, signal.SIGKILL)
    loop.wait(10)
    assert (task_id, orphan.payload["session"]) == (
        _heartbeat_file(served)["task"],
        _heartbeat_file(served)["sessionId"],
    )
    _loop(served, worker)
    with served.store() as store:
        wait_until(lambda: store.tasks.get_task(orphan.id).status is TaskStatus.CANCELLED, 30)
        _runner(served, _script(served, "agent.sh", "cat > /dev/null\n"))
        wait_until(lambda: store.tasks.get_task(task_id).status is TaskStatus.DONE, 60)
        names = [name for name, _actor in _events(store, task_id)]
        assert ["task.created", "task.claimed", "task.released", "task.claimed"] == names[:4]
        assert "task.completed" == names[-1]
        assert 1 == store.tasks.get_task(task_id).attempts
        assert 1 == len(_named(store, "slot-1"))
    assert 2 == _heartbeat_file(served)["metadata"]["restartCount"]
