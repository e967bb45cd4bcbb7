"""`corral serve` as a real process on loopback: tokens and roles, task routes, errors as
one-line JSON with the documented statuses, body limits, and the bind rule."""

from __future__ import annotations

import json
import time

import pytest

from .conftest import Server


def test_roles_guard_the_routes_and_a_task_added_over_http_is_the_stores(
    server: Server,
) -> None:
    """No token: 401 (healthz aside); viewer reads, cannot add (403 naming operator);
    operator adds (201) and the CLI sees the task; a revoked token is 401 once the server's
    authentication cache (`auth_cache_s`) has let it go."""
    viewer, operator = server.token("viewer"), server.token("operator")
    server.env["CORRAL_AUTH_CACHE_S"] = "0.2"
    server.start()
    assert (401, 403) == (
        server.call("GET", "/api/tasks")[0],
        server.call("POST", "/api/tasks", viewer, b'{"title": "x"}')[0],
    )
    _, refused = server.call("POST", "/api/tasks", viewer, b'{"title": "x"}')
    assert "needs an operator token" in refused["error"]
    status, task = server.call(
        "POST",
        "/api/tasks",
        operator,
        json.dumps({"title": "Fix the login bug", "kind": "code"}).encode(),
    )
    assert (201, "ready", "code") == (status, task["status"], task["kind"])
    shown = json.loads(server.corral("show", task["id"], "--json").stdout)
    assert task["title"] == shown["title"]
    assert (200, [task["id"]]) == (
        server.call("GET", "/api/tasks?status=ready", viewer)[0],
        [t["id"] for t in server.call("GET", "/api/tasks?status=ready", viewer)[1]],
    )
    assert (200, task["id"]) == (
        server.call("GET", f"/api/tasks/{task['id']}", viewer)[0],
        server.call("GET", f"/api/tasks/{task['id']}", viewer)[1]["id"],
    )
    name = json.loads(server.corral("token", "list", "--json").stdout)[0]["name"]
    assert 0 == server.corral("token", "revoke", name).returncode
    time.sleep(0.2)  # the cache's time: the revoke's own bound, not a wait for something else
    assert 401 == server.call("GET", "/api/tasks", viewer)[0]
    logged = server.stop()
    assert viewer not in logged and operator not in logged


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        (b"not json", 422, "body"),
        (b"[1, 2]", 422, "body"),
        (b'{"title": "x", "colour": "red"}', 422, "colour"),
        (b'{"title": 7}', 422, "title"),
        (b'{"title": "x", "priority": true}', 422, "priority"),
        (b'{"title": "x", "priority": 1e400}', 422, "body"),  # no infinity in a document
        (b'{"title": "x", "priority": 100000000000000000000}', 422, "priority"),
        (b'{"title": "x", "depends_on": [1]}', 422, "depends_on"),
        (b'{"title": "x", "payload": ' + b"[" * 200 + b"]" * 200 + b"}", 422, "body"),
        (b'{"title": ""}', 422, "title"),
        (b'{"title": "x", "depends_on": ["t-nosuchtask0"]}', 422, "depends_on"),
        (b'{"title": "x", "parent_id": "t-nosuchtask0"}', 422, "parent"),
        (b'{"title": "x", "parent_id": 5}', 422, "parent_id"),
        (b'{"title": "x", "parent_runs_first": true}', 422, "parent_runs_first"),
    ],
)
def test_bad_bodies_are_one_line_errors_naming_the_field_and_write_nothing(
    server: Server, body: bytes, status: int, field: str | None
) -> None:
    """Each bad body: its status, one line, the field it is about; no task made."""
    operator = server.token("operator")
    server.start()
    got, answer = server.call("POST", "/api/tasks", operator, body)
    assert (status, field) == (got, answer.get("field")), answer
    assert "\n" not in answer["error"] and "Traceback" not in answer["error"]
    assert [] == server.call("GET", "/api/tasks", operator)[1]


def test_a_child_added_over_http_blocks_its_parent_and_lists_under_it(server: Server) -> None:
    """POST /api/tasks with parent_id makes a child; GET /api/tasks?parent=ID lists it."""
    operator = server.token("operator")
    server.start()
    _, parent = server.call("POST", "/api/tasks", operator, b'{"title": "parent"}')
    body = json.dumps({"title": "child", "parent_id": parent["id"]}).encode()
    status, child = server.call("POST", "/api/tasks", operator, body)
    assert (201, parent["id"]) == (status, child["parent_id"])
    assert "blocked" == server.call("GET", f"/api/tasks/{parent['id']}", operator)[1]["status"]
    listed = server.call("GET", f"/api/tasks?parent={parent['id']}", operator)[1]
    assert [child["id"]] == [t["id"] for t in listed]


def test_a_huge_body_is_413_and_unknown_routes_and_tasks_are_404(server: Server) -> None:
    """Over 1 MiB: 413 before it is read; an unknown route or task: 404 in the same shape."""
    operator = server.token("operator")
    server.start()
    huge = b'{"title": "' + b"x" * (2 << 20) + b'"}'
    assert 413 == server.call("POST", "/api/tasks", operator, huge)[0]
    assert 404 == server.call("GET", "/api/nothing", operator)[0]
    status, answer = server.call("GET", "/api/tasks/t-nosuchtask0", operator)
    assert (404, "task 't-nosuchtask0' not found") == (status, answer["error"])
    assert 422 == server.call("GET", "/api/tasks?status=sleeping", operator)[0]
    assert 422 == server.call("GET", "/api/tasks?limit=0", operator)[0]
    assert 422 == server.call("GET", "/api/tasks?limit=" + "9" * 5000, operator)[0]


ANY_ADDRESS = "0.0.0.0"  # noqa: S104 - the bind this test is about


def test_serve_listens_off_loopback_only_once_a_token_exists(server: Server) -> None:
    """--host 0.0.0.0 with no token: exit 2, one line, nothing listening; with one it serves."""
    refused = server.corral("serve", "--host", ANY_ADDRESS, "--port", str(server.port))
    assert 2 == refused.returncode
    (line,) = refused.stderr.splitlines()
    assert line.startswith("corral: error: host: expected a loopback address"), line
    server.token("viewer")
    server.start("--host", ANY_ADDRESS)
    assert 200 == server.call("GET", "/healthz")[0]
