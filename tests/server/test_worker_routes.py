"""The worker routes (seed 002) in plain HTTP, through a real `corral serve` on each store:
a worker's whole life, the long poll, drain in the heartbeat answer, fencing, what a
worker token may touch, bad and hostile input, and a worker loop written in Node."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from tests.server.conftest import Server

NODE = shutil.which("node")
LOOP = Path(__file__).with_name("seed002_worker.mjs")


def post(served: Server, path: str, token: str, body: Any = None, **more: Any) -> tuple[int, Any]:
    """POST `body` as JSON (none: no body at all)."""
    raw = None if body is None else json.dumps(body).encode()
    return served.call("POST", path, token, raw, **more)


def register(served: Server, token: str, **fields: Any) -> dict[str, Any]:
    status, answer = post(served, "/api/workers", token, {"name": "w", **fields})
    assert 201 == status, answer
    worker: dict[str, Any] = answer["worker"]
    return worker


def add(served: Server, operator: str, **fields: Any) -> str:
    status, task = post(served, "/api/tasks", operator, {"title": "t", **fields})
    assert 201 == status, task
    task_id: str = task["id"]
    return task_id


def claim(served: Server, token: str, worker_id: str, **ask: Any) -> tuple[int, Any]:
    wait_s = ask.setdefault("wait_s", 0)
    return post(served, f"/api/workers/{worker_id}/claim", token, ask, timeout_s=wait_s + 10)


def shown(served: Server, task_id: str) -> dict[str, Any]:
    task: dict[str, Any] = json.loads(served.corral("show", task_id, "--json").stdout)
    return task


def wait_for(check: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def while_a_claim_waits(
    served: Server, token: str, worker_id: str, act: Any
) -> tuple[tuple[int, Any], float]:
    """(the answer to a claim that waits up to 30 s, seconds from `act` to that answer):
    `act` runs half a second into the wait."""
    got: list[tuple[int, Any]] = []
    waiting = threading.Thread(
        target=lambda: got.append(claim(served, token, worker_id, wait_s=30))
    )
    waiting.start()
    time.sleep(0.5)  # the scenario, not a synchronisation: `act` comes while the claim waits
    acted_at = time.monotonic()
    act()
    waiting.join(timeout=45)
    (answer,) = got
    return answer, time.monotonic() - acted_at


def test_a_worker_lives_its_whole_life_in_plain_http(served: Server) -> None:
    """Register (201: the worker as `worker list --json` shows it, and the server's
    heartbeat interval), heartbeat, claim (204 on an empty queue, then the task under a
    token), renew, complete; the worker's totals count it; deregister takes it offline and
    its next heartbeat is 409 saying so."""
    served.env["CORRAL_HEARTBEAT_INTERVAL_S"] = "7"
    worker_token, operator, viewer = (served.token(r) for r in ("worker", "operator", "viewer"))
    served.start()
    status, answer = post(
        served,
        "/api/workers",
        worker_token,
        {
            "name": "go-1",
            "queues": ["code"],
            "kinds": ["echo"],
            "hostname": "box-7",
            "pid": 4242,
            "version": "1.2.3",
            "max_concurrent": 2,
            "labels": {"lang": "go"},
        },
    )
    assert (201, 7.0) == (status, answer["heartbeat_interval_s"])
    worker = answer["worker"]
    listed = json.loads(served.corral("worker", "list", "--json").stdout)
    assert [worker] == listed
    assert ("starting", "box-7", 4242, "go") == (
        worker["status"],
        worker["hostname"],
        worker["pid"],
        worker["labels"]["lang"],
    )
    wid = worker["id"]
    beat = post(served, f"/api/workers/{wid}/heartbeat", worker_token, {"cpu_percent": 12.5})
    assert (200, {"id": wid, "status": "idle", "heartbeat_interval_s": 7.0, "drain": False}) == beat
    assert (204, None) == claim(served, worker_token, wid)

    task_id = add(served, operator, kind="echo", queue="code", payload={"n": 1})
    status, held = claim(served, worker_token, wid, lease_s=60)
    assert (200, task_id, "running") == (status, held["task"]["id"], held["task"]["status"])
    assert {"n": 1} == held["task"]["payload"]
    token = held["token"]
    status, renewed = post(
        served, f"/api/tasks/{task_id}/renew", worker_token, {"token": token, "lease_s": 120}
    )
    assert (200, token, 1) == (status, renewed["token"], renewed["renewals"])
    assert renewed["lease_expires_at"] > held["lease_expires_at"]
    status, done = post(
        served, f"/api/tasks/{task_id}/complete", worker_token, {"token": token, "result": [1]}
    )
    assert (200, "done", [1]) == (status, done["status"], done["result"])
    assert ("done", [1]) == (shown(served, task_id)["status"], shown(served, task_id)["result"])

    status, seen = served.call("GET", f"/api/workers/{wid}", viewer)
    assert (200, 1, 12.5, None) == (
        status,
        seen["completed_total"],
        seen["cpu_percent"],
        seen["deregistered_at"],
    )
    assert [wid] == [w["id"] for w in served.call("GET", "/api/workers?queue=code", viewer)[1]]
    assert [] == served.call("GET", "/api/workers?queue=docs&status=idle", viewer)[1]
    status, gone = served.call("DELETE", f"/api/workers/{wid}", worker_token)
    assert (200, "offline") == (status, gone["status"])
    assert (
        gone["deregistered_at"]
        == served.call("GET", f"/api/workers/{wid}", viewer)[1]["deregistered_at"]
    )
    assert gone["deregistered_at"] >= seen["last_heartbeat_at"]
    status, refused = post(served, f"/api/workers/{wid}/heartbeat", worker_token)
    assert (409, "offline") == (status, refused["details"]["status"])
    assert f"worker {wid} is offline: register a new worker" == refused["error"]


def test_a_long_poll_is_answered_when_a_task_is_added_and_204_when_none_comes(
    served: Server,
) -> None:
    """A claim waiting on an empty queue is handed a task added meanwhile within a second
    of the add (woken, not polled: the wait was 30 s); with `wait_s` 1 and nothing added
    it answers 204 after about that long."""
    worker_token, operator = served.token("worker"), served.token("operator")
    served.start()
    wid = register(served, worker_token)["id"]
    started = time.monotonic()
    status, _ = claim(served, worker_token, wid, wait_s=1)
    assert 204 == status
    assert 1.0 <= time.monotonic() - started < 5

    added: list[str] = []
    answer, handed_s = while_a_claim_waits(
        served, worker_token, wid, lambda: added.append(add(served, operator))
    )
    assert (200, added) == (answer[0], [answer[1]["task"]["id"]])
    assert handed_s < 1.0, handed_s


def test_the_kinds_filter_is_in_the_claim_never_a_claim_given_back(served: Server) -> None:
    """A worker of kind `echo` is handed the newer echo task, never the older `code` one
    (which stays ready, unclaimed); kinds asked outside its own find nothing."""
    worker_token, operator = served.token("worker"), served.token("operator")
    served.start()
    wid = register(served, worker_token, kinds=["echo"], max_concurrent=5)["id"]
    older = add(served, operator, kind="code", priority=9)
    newer = add(served, operator, kind="echo")
    assert 204 == claim(served, worker_token, wid, kinds=["code"])[0]
    status, held = claim(served, worker_token, wid)
    assert (200, newer) == (status, held["task"]["id"])
    assert 204 == claim(served, worker_token, wid)[0]
    assert ("ready", 0) == (shown(served, older)["status"], shown(served, older)["attempts"])


def test_a_drain_is_seen_in_the_heartbeat_answer_and_ends_a_waiting_claim(
    served: Server,
) -> None:
    """An operator's drain: the worker's next heartbeat answers drain true and status
    draining, its claim waiting for work ends at once with 409, and a new claim is 409.
    A worker may drain itself (seed 002's deregister with drain)."""
    worker_token, operator = served.token("worker"), served.token("operator")
    served.start()
    wid = register(served, worker_token)["id"]

    def drain() -> None:
        status, drained = post(served, f"/api/workers/{wid}/drain", operator)
        assert (200, "draining") == (status, drained["status"])

    (status, refused), ended_s = while_a_claim_waits(served, worker_token, wid, drain)
    assert (409, "WorkerUnavailable") == (status, refused["type"])
    assert ended_s < 5
    beat = post(served, f"/api/workers/{wid}/heartbeat", worker_token)[1]
    assert (True, "draining") == (beat["drain"], beat["status"])
    assert 409 == claim(served, worker_token, wid)[0]

    own = register(served, worker_token)["id"]
    assert (200, "draining") == (
        post(served, f"/api/workers/{own}/drain", worker_token)[0],
        post(served, f"/api/workers/{own}/heartbeat", worker_token)[1]["status"],
    )


def test_a_dead_workers_heartbeat_is_409_so_it_stops(served: Server) -> None:
    """A worker the reconciler declared dead (heartbeats missed) is told so by its next
    heartbeat: 409, `details.status` dead; nothing about it changes."""
    served.env.update(CORRAL_HEARTBEAT_INTERVAL_S="0.1", CORRAL_DEAD_AFTER_MISSED="1")
    worker_token = served.token("worker")
    served.start()
    wid = register(served, worker_token)["id"]

    def dead() -> bool:
        served.corral("reconcile")
        return (
            "dead" == json.loads(served.corral("worker", "status", wid, "--json").stdout)["status"]
        )

    wait_for(dead, 30, "the reconciler to declare the worker dead")
    status, refused = post(served, f"/api/workers/{wid}/heartbeat", worker_token)
    assert (409, "dead") == (status, refused["details"]["status"])
    assert "dead" == json.loads(served.corral("worker", "status", wid, "--json").stdout)["status"]


def test_reports_are_fenced_by_the_claims_token(served: Server) -> None:
    """release, then a new claim: the old token is stale for complete, fail, defer,
    release and renew (409, the task unchanged); the current token fails the task (ready
    again after backoff, the error kept), and defers the next claim's; a second complete
    under a used token is 409."""
    worker_token, operator = served.token("worker"), served.token("operator")
    served.start()
    wid = register(served, worker_token)["id"]
    task_id = add(served, operator, max_attempts=5)
    first = claim(served, worker_token, wid)[1]["token"]
    released = post(served, f"/api/tasks/{task_id}/release", worker_token, {"token": first})
    assert (200, "ready", 0) == (released[0], released[1]["status"], released[1]["attempts"])
    second = claim(served, worker_token, wid)[1]["token"]
    assert second > first
    for action, extra in (
        ("complete", {}),
        ("fail", {"error": "x"}),
        ("defer", {"delay_s": 5}),
        ("release", {}),
        ("renew", {}),
    ):
        status, refused = post(
            served, f"/api/tasks/{task_id}/{action}", worker_token, {"token": first, **extra}
        )
        assert (409, "StaleToken") == (status, refused["type"]), (action, refused)
    assert ("running", second) == (
        shown(served, task_id)["status"],
        shown(served, task_id)["token"],
    )

    failed = post(
        served, f"/api/tasks/{task_id}/fail", worker_token, {"token": second, "error": "boom"}
    )
    assert (200, "ready", "boom") == (failed[0], failed[1]["status"], failed[1]["last_error"])
    assert 409 == post(served, f"/api/tasks/{task_id}/complete", worker_token, {"token": second})[0]

    other = add(served, operator)
    third = claim(served, worker_token, wid)[1]
    assert other == third["task"]["id"]
    deferred = post(
        served,
        f"/api/tasks/{other}/defer",
        worker_token,
        {"token": third["token"], "delay_s": 3600, "reason": "rate limited"},
    )
    assert (200, "ready", 0) == (deferred[0], deferred[1]["status"], deferred[1]["attempts"])
    later = datetime.fromisoformat(deferred[1]["run_after"])
    assert later - datetime.fromisoformat(third["claimed_at"]) >= timedelta(seconds=3599)


def test_worker_tokens_are_held_to_their_queues_and_their_own_workers(served: Server) -> None:
    """A `code` worker token cannot register for `docs`, claim in `docs`, heartbeat, claim
    for, drain or deregister another token's worker, nor report under its claim: each 403,
    one line, nothing changed; its own registration gets its queues. A viewer reads the
    workers but registers nothing."""
    code, other = served.token("worker", "code"), served.token("worker")
    viewer, operator = served.token("viewer"), served.token("operator")
    served.start()
    refused = post(served, "/api/workers", code, {"name": "x", "queues": ["docs"]})
    assert (403, "may use the queues code; not docs") == (refused[0], refused[1]["error"][-33:])
    mine = register(served, code)
    assert ["code"] == mine["queues"]
    assert 403 == claim(served, code, mine["id"], queues=["docs"])[0]

    theirs = register(served, other)["id"]
    task_id = add(served, operator)
    held = claim(served, other, theirs)[1]
    for method, path, body in (
        ("POST", f"/api/workers/{theirs}/heartbeat", None),
        ("POST", f"/api/workers/{theirs}/claim", {"wait_s": 0}),
        ("POST", f"/api/workers/{theirs}/drain", None),
        ("DELETE", f"/api/workers/{theirs}", None),
        ("POST", f"/api/tasks/{task_id}/complete", {"token": held["token"]}),
        ("POST", f"/api/tasks/{task_id}/renew", {"token": held["token"]}),
        ("POST", f"/api/tasks/{task_id}/complete", {"token": 999_999}),
    ):
        raw = None if body is None else json.dumps(body).encode()
        status, answer = served.call(method, path, code, raw)
        assert 403 == status, (path, answer)
        assert "\n" not in answer["error"]
    assert 403 == post(served, "/api/workers", viewer, {"name": "v"})[0]
    assert 403 == post(served, f"/api/workers/{theirs}/drain", viewer)[0]
    assert 2 == len(served.call("GET", "/api/workers", viewer)[1])
    assert ("running", held["token"]) == (
        shown(served, task_id)["status"],
        shown(served, task_id)["token"],
    )
    assert "busy" == served.call("GET", f"/api/workers/{theirs}", viewer)[1]["status"]


DEEP = b"[" * 100 + b"]" * 100
HUGE_INT = b"99999999999999999999"
# Bad bodies, by the route they are POSTed to ({w} a live worker, {t} its claimed task):
# (body, the field the 422 names).
BAD_BODIES: dict[str, list[tuple[bytes, str]]] = {
    "/api/workers": [
        (b"not json", "body"),
        (b"[]", "body"),
        (b"{}", "name"),
        (b'{"name": "x", "colour": 1}', "colour"),
        (b'{"name": 5}', "name"),
        (b'{"name": ""}', "name"),
        (b'{"name": "x", "kinds": "echo"}', "kinds"),
        (b'{"name": "x", "kinds": [1]}', "kinds[0]"),
        (b'{"name": "x", "kinds": ["a b"]}', "kinds"),
        (b'{"name": "x", "pid": true}', "pid"),
        (b'{"name": "x", "pid": 99999999999}', "pid"),
        (b'{"name": "x", "max_concurrent": 0}', "max_concurrent"),
        (b'{"name": "x", "labels": {"a": 1}}', "labels.a"),
        (b'{"name": "x", "hostname": "' + b"h" * 300 + b'"}', "hostname"),
        (b'{"name": "x", "version": "a\\nb"}', "version"),
        (b'{"name": "x\\u0000"}', "body"),
    ],
    "/api/workers/{w}/heartbeat": [
        (b'{"cpu_percent": "hot"}', "cpu_percent"),
        (b'{"cpu_percent": -1}', "cpu_percent"),
        (b'{"rss_bytes": 1e3}', "rss_bytes"),
        (b'{"rss_bytes": ' + HUGE_INT + b"}", "rss_bytes"),
    ],
    "/api/workers/{w}/claim": [
        (b'{"wait_s": 31}', "wait_s"),
        (b'{"wait_s": true}', "wait_s"),
        (b'{"lease_s": 0}', "lease_s"),
        (b'{"lease_s": 1e12}', "lease_s"),
        (b'{"queues": ["' + b"q" * 200 + b'"]}', "queues"),
        (b'{"worker": "x"}', "worker"),
    ],
    "/api/tasks/{t}/complete": [
        (b"{}", "token"),
        (b'{"token": "1"}', "token"),
        (b'{"token": 0}', "token"),
        (b'{"token": ' + HUGE_INT + b"}", "token"),
        (b'{"token": 1, "result": 1, "error": "x"}', "error"),
        (b'{"token": 1, "result": ' + DEEP + b"}", "body"),
    ],
    "/api/tasks/{t}/fail": [(b'{"token": 1}', "error"), (b'{"token": 1, "error": null}', "error")],
    "/api/tasks/{t}/defer": [
        (b'{"token": 1}', "delay_s"),
        (b'{"token": 1, "delay_s": -5}', "delay_s"),
    ],
    "/api/tasks/{t}/release": [(b'{"token": 1, "attempt": "yes"}', "attempt")],
    "/api/tasks/{t}/renew": [(b'{"token": 1, "lease_s": "1h"}', "lease_s")],
}
# Requests whose path or query is wrong: (method, path, status, field).
BAD_PATHS = [
    ("GET", "/api/workers?status=asleep", 422, "status"),
    ("GET", "/api/workers?queue=a%20b", 422, "queue"),
    ("GET", "/api/workers/w-nosuchworker", 404, None),
    ("GET", "/api/workers/w-%00", 404, None),
    ("POST", "/api/workers/w-%00/heartbeat", 404, None),
    ("DELETE", "/api/workers/w-" + "x" * 500, 404, None),
    ("POST", "/api/tasks/t-%00/complete", 404, None),
    ("POST", "/api/tasks/{t}/finish", 404, None),
    ("GET", "/api/tasks/t-%00", 404, None),
    ("GET", "/api/tasks/t-%00?view=seed001", 404, None),
    ("PATCH", "/api/tasks/t-%00", 404, None),
    ("DELETE", "/api/sessions/t-%00", 404, None),
    ("GET", "/api/runs/r-%00/output/transcript", 404, None),
    ("POST", "/api/runs/r-%00/output/transcript", 404, None),
]


def test_bad_and_hostile_input_is_a_one_line_error_naming_the_field_and_writes_nothing(
    served: Server,
) -> None:
    """Each bad request on every route: its status (422 naming the field, 404 for ids
    that name nothing, NUL ones too), one line, no traceback; a body over 1 MiB is 413.
    The store after them all is as before: one worker, one running task under its token."""
    operator = served.token("operator")
    served.start()
    wid = register(served, operator)["id"]
    task_id = add(served, operator)
    token = claim(served, operator, wid)[1]["token"]
    before = (
        served.corral("list", "--json").stdout,
        served.corral("worker", "list", "--json").stdout,
    )
    requests = [
        ("POST", template, body, 422, field)
        for template, cases in BAD_BODIES.items()
        for body, field in cases
    ]
    requests += [
        (method, path, b'{"token": 1}', status, f) for method, path, status, f in BAD_PATHS
    ]
    for method, template, body, status, field in requests:
        path = template.format(w=wid, t=task_id)
        got, answer = served.call(method, path, operator, None if method == "GET" else body)
        assert (status, field) == (got, answer.get("field")), (method, path, body, answer)
        assert "\n" not in answer["error"] and "Traceback" not in answer["error"]
        assert len(answer["error"]) < 400, answer["error"]
    huge = b'{"name": "' + b"x" * (2 << 20) + b'"}'
    for path in ("/api/workers", f"/api/workers/{wid}/claim", f"/api/tasks/{task_id}/complete"):
        assert 413 == served.call("POST", path, operator, huge)[0]
    after = (
        served.corral("list", "--json").stdout,
        served.corral("worker", "list", "--json").stdout,
    )
    assert json.loads(before[0]) == json.loads(after[0])
    assert [w["id"] for w in json.loads(before[1])] == [w["id"] for w in json.loads(after[1])]
    assert (token, "running") == (shown(served, task_id)["token"], shown(served, task_id)["status"])


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_a_worker_written_in_node_registers_long_polls_completes_and_deregisters(
    served: Server,
) -> None:
    """tests/server/seed002_worker.mjs (Node 20, built-in fetch only) against the server:
    it registers, heartbeats, long-polls, completes the echo tasks (one added while it
    waits), fails the one that asks to, and when an operator drains it, deregisters and
    exits 0. Every task is finished once; the worker is offline."""
    worker_token, operator = served.token("worker", "code"), served.token("operator")
    served.env["CORRAL_HEARTBEAT_INTERVAL_S"] = "0.5"
    served.start()
    first = [add(served, operator, kind="echo", queue="code", payload={"n": n}) for n in range(3)]
    poison = add(
        served, operator, kind="echo", queue="code", payload={"fail": True}, max_attempts=1
    )
    foreign = add(served, operator, kind="code", queue="code")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    env.update(CORRAL_URL=served.url, CORRAL_TOKEN=worker_token, WORKER_NAME="node-1")
    log = open(served.folder / "node.log", "wb")  # noqa: SIM115 - closed below
    node = subprocess.Popen([NODE, str(LOOP)], env=env, stdout=log, stderr=subprocess.STDOUT)
    served.children.append(node)

    def finished(ids: list[str]) -> bool:
        return all(shown(served, i)["status"] in ("done", "failed") for i in ids)

    wait_for(lambda: finished([*first, poison]), 60, "the node worker's first tasks")
    late = add(served, operator, kind="echo", queue="code", payload={"n": 9})
    wait_for(lambda: finished([late]), 30, "the task added while the node worker waits")
    (worker,) = json.loads(served.corral("worker", "list", "--json").stdout)
    assert 200 == post(served, f"/api/workers/{worker['id']}/drain", operator)[0]
    assert 0 == node.wait(timeout=30), (served.folder / "node.log").read_text()
    log.close()
    for n, task_id in enumerate([*first, late]):
        task = shown(served, task_id)
        assert ("done", {"echo": {"n": 9 if task_id == late else n}}) == (
            task["status"],
            task["result"],
        )
    assert ("failed", "asked to fail") == (
        shown(served, poison)["status"],
        shown(served, poison)["last_error"],
    )
    assert ("ready", 0) == (shown(served, foreign)["status"], shown(served, foreign)["attempts"])
    (gone,) = json.loads(served.corral("worker", "list", "--json").stdout)
    assert ("offline", 4, 1, "node-1") == (
        gone["status"],
        gone["completed_total"],
        gone["failed_total"],
        gone["name"],
    )


def test_the_heartbeat_route_takes_the_agent_figures_and_refuses_bad_ones(
    served: Server,
) -> None:
    """POST .../heartbeat carries the runner's and its agents' figures, active and the
    deltas (summed into the reported totals); a negative or non-finite figure is 422
    naming its field, and nothing is written."""
    worker_token, viewer = served.token("worker"), served.token("viewer")
    served.start()
    wid = register(served, worker_token)["id"]
    beat = {"cpu_percent": 2.0, "agent_cpu_percent": 190.5, "agent_rss_bytes": 5 << 20}
    for completed in (1, 2):
        body = {**beat, "active": 1, "completed": completed, "failed": 1}
        assert 200 == post(served, f"/api/workers/{wid}/heartbeat", worker_token, body)[0]
    before = served.call("GET", f"/api/workers/{wid}", viewer)[1]
    assert (190.5, 5 << 20, 1, 2, 3, 2) == (
        before["agent_cpu_percent"],
        before["agent_rss_bytes"],
        before["reported_active"],
        before["completed_delta"],
        before["reported_completed_total"],
        before["reported_failed_total"],
    )
    for field, bad in (("agent_cpu_percent", -1), ("completed", -3), ("active", 1.5)):
        status, refused = post(served, f"/api/workers/{wid}/heartbeat", worker_token, {field: bad})
        assert (422, True) == (status, refused["error"].startswith(field)), refused
    raw = b'{"cpu_percent": NaN}'
    assert 422 == served.call("POST", f"/api/workers/{wid}/heartbeat", worker_token, raw)[0]
    assert before == served.call("GET", f"/api/workers/{wid}", viewer)[1]


def test_the_worker_list_route_pages_and_filters_as_list_workers_does(served: Server) -> None:
    """GET /api/workers with `paged`: seed 002's ListWorkers, {"items", "next", "total"},
    walked by `after`; the filters select; a bad cursor is 422 naming `after`."""
    worker_token, viewer = served.token("worker"), served.token("viewer")
    served.start()
    made = [
        register(served, worker_token, name=f"w{n}", labels={"n": str(n % 2)}) for n in range(5)
    ]
    seen, after, totals = [], "", []
    while True:
        status, page = served.call("GET", f"/api/workers?paged&count&limit=2{after}", viewer)
        assert 200 == status, page
        seen += [w["id"] for w in page["items"]]
        totals.append(page["total"])
        if page["next"] is None:
            break
        after = f"&after={page['next']}"
    assert ([w["id"] for w in made], [5, 5, 5]) == (seen, totals)
    odd = served.call("GET", "/api/workers?label=n%3D1", viewer)[1]
    assert [made[1]["id"], made[3]["id"]] == [w["id"] for w in odd]
    status, refused = served.call("GET", "/api/workers?after=bm9wZQ", viewer)
    assert (422, True) == (status, refused["error"].startswith("after"))
