"""Who may call what: every route of `corral serve` and the least role it needs, in one table.

ROLES is the one place a route's role is written: `auth.require` reads it for the route a
request matched (Starlette's `scope["route"]`), the dashboard's guards read it for their
pages and forms, the OpenAPI document and docs/http-api.md print it, and
tests/server/test_roles.py walks every route of the app with every role and expects
exactly these answers, so a route added without a line here fails that test (and a
request to it is a KeyError, a 500, never an open door).

`None` is a route that needs no token. POST /api/store/{name} is the remote store's one
route: it needs a viewer token, and each operation it runs needs the role its `@served`
declaration names (store/operations.py, the registry of operations). A dashboard route
names the role of the session's token (dashboard/visitors.py). Roles rank viewer < worker
< operator < admin; only an admin acts in a namespace other than its token's (auth.py).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.routing import BaseRoute

from corral.model.api_tokens import Role

VIEWER, WORKER, OPERATOR = Role.VIEWER, Role.WORKER, Role.OPERATOR

# (method, the route's path as the app routes it) -> the least role, or None: no token.
ROLES: dict[tuple[str, str], Role | None] = {
    ("GET", "/healthz"): None,
    ("GET", "/openapi.json"): VIEWER,
    ("GET", "/metrics"): VIEWER,
    ("POST", "/api/store/{name}"): VIEWER,  # and each operation's own @served role
    ("GET", "/api/tasks"): VIEWER,
    ("POST", "/api/tasks"): OPERATOR,
    ("GET", "/api/tasks/{task_id}"): VIEWER,
    ("PATCH", "/api/tasks/{task_id}"): WORKER,
    ("POST", "/api/tasks/{task_id}/answer"): OPERATOR,
    ("POST", "/api/tasks/{task_id}/complete"): WORKER,
    ("POST", "/api/tasks/{task_id}/fail"): WORKER,
    ("POST", "/api/tasks/{task_id}/defer"): WORKER,
    ("POST", "/api/tasks/{task_id}/release"): WORKER,
    ("POST", "/api/tasks/{task_id}/renew"): WORKER,
    ("POST", "/api/sessions/spawn"): WORKER,  # a worker token: in its queues, as its slot
    ("GET", "/api/sessions"): VIEWER,
    ("DELETE", "/api/sessions/{session_id:path}"): WORKER,  # a worker token: its slot's own
    ("GET", "/api/heartbeats"): VIEWER,
    ("POST", "/api/heartbeats"): WORKER,  # a worker token: its own slot's
    ("GET", "/api/events"): VIEWER,
    ("GET", "/api/events/stream"): VIEWER,
    ("POST", "/api/workers"): WORKER,
    ("GET", "/api/workers"): VIEWER,
    ("GET", "/api/workers/{worker_id}"): VIEWER,
    ("DELETE", "/api/workers/{worker_id}"): WORKER,
    ("POST", "/api/workers/{worker_id}/heartbeat"): WORKER,
    ("POST", "/api/workers/{worker_id}/drain"): WORKER,
    ("POST", "/api/workers/{worker_id}/claim"): WORKER,
    ("GET", "/api/runs/{run_id}/output/{stream}"): VIEWER,
    ("POST", "/api/runs/{run_id}/output/{stream}"): WORKER,
    # The dashboard: its pages for any signed-in visitor, its forms for an operator.
    ("GET", "/login"): None,
    ("POST", "/login"): None,
    ("POST", "/logout"): None,
    ("GET", "/static"): None,
    ("GET", "/live"): VIEWER,
    ("GET", "/"): VIEWER,
    ("GET", "/tasks"): VIEWER,
    ("POST", "/tasks/bulk"): OPERATOR,
    ("GET", "/tasks/{task_id}"): VIEWER,
    ("POST", "/tasks/{task_id}/retry"): OPERATOR,
    ("POST", "/tasks/{task_id}/cancel"): OPERATOR,
    ("POST", "/tasks/{task_id}/answer"): OPERATOR,
    ("POST", "/tasks/{task_id}/approve"): OPERATOR,
    ("POST", "/tasks/{task_id}/request-changes"): OPERATOR,
    ("POST", "/tasks/{task_id}/merge"): OPERATOR,
    ("GET", "/runs"): VIEWER,
    ("GET", "/reviews"): VIEWER,
    ("GET", "/workers"): VIEWER,
    ("POST", "/workers/{worker_id}/drain"): OPERATOR,
    ("POST", "/workers/{worker_id}/stop"): OPERATOR,
    ("GET", "/queues"): VIEWER,
    ("POST", "/queues/{queue}/limits"): OPERATOR,
    ("POST", "/providers/{name}/pause"): OPERATOR,
    ("POST", "/providers/{name}/resume"): OPERATOR,
    ("POST", "/providers/{name}/cap"): OPERATOR,
    ("GET", "/schedules"): VIEWER,
    ("POST", "/schedules/{schedule_id}/pause"): OPERATOR,
    ("POST", "/schedules/{schedule_id}/resume"): OPERATOR,
    ("POST", "/schedules/{schedule_id}/trigger"): OPERATOR,
    ("GET", "/events"): VIEWER,
    # MCP (streamable HTTP): a viewer reaches the server; each tool needs MCP_TOOLS's role.
    ("GET", "/mcp"): VIEWER,
    ("POST", "/mcp"): VIEWER,
    ("DELETE", "/mcp"): VIEWER,
}

# Each MCP tool (corral/mcp/build.py) -> the least role its call needs over `/mcp`: the
# role of the route that does the same (reading: GET /api/tasks; adding a task: POST
# /api/tasks; reporting on one's own claim, its run and messages: a worker's routes).
MCP_TOOLS: dict[str, Role] = {
    "list_tasks": VIEWER,
    "show_task": VIEWER,
    "read_messages": VIEWER,
    "resources": VIEWER,  # a task, a run's transcript
    "add_task": OPERATOR,
    "add_subtask": WORKER,  # and the parent's claim token
    "finish": WORKER,
    "ask": WORKER,
    "permission_prompt": WORKER,
    "report_progress": WORKER,
    "send_message": WORKER,
}


def declared(request: Request) -> Role | None:
    """The role ROLES names for the route `request` matched (a HEAD is its GET's)."""
    route: BaseRoute = request.scope["route"]
    method = "GET" if request.method == "HEAD" else request.method
    return ROLES[(method, getattr(route, "path", ""))]
