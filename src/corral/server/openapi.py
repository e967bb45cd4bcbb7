"""GET /openapi.json: the API as an OpenAPI 3.1 document, written here route by route.

Each route of the app has one entry in SPECS below: its parameters, body and answers;
its role is the one server/roles.py declares. tests/server/test_openapi.py checks that
the app's routes and this document name the same (method, path) pairs, so neither can
gain a route the other lacks, and runs a property-based test (schemathesis) from the
document against a real server: no input it generates may make the server answer 5xx.
"""

from __future__ import annotations

import re
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from corral import __version__
from corral.foundation.documents import MAX_INT32, MAX_INT64
from corral.foundation.durations import MAX_SPAN_S
from corral.model.api_tokens import Role
from corral.model.states import TaskStatus, WorkerStatus
from corral.model.tasks import NEW_TASK_FIELDS, new_task_required
from corral.model.workers import MAX_CPU_PERCENT
from corral.server.answers import answer
from corral.server.auth import require
from corral.server.context import store_of
from corral.server.long_poll import MAX_WAIT_S
from corral.server.roles import ROLES
from corral.store.operations import operations

JSON = "application/json"
BYTES = "application/octet-stream"

ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {"type": "string", "description": "one line, as the CLI says it"},
        "field": {"type": "string", "description": "the input it is about"},
        "type": {"type": "string", "description": "corral's error class"},
        "details": {"type": "object"},
    },
}
TASK = {"type": "object", "description": "a task, as `corral show --json` prints it"}
NEW_TASK = {
    "type": "object",
    "required": new_task_required(),
    "additionalProperties": False,
    "properties": {
        f.name: {**f.schema, "description": f.doc} for f in NEW_TASK_FIELDS if f.schema is not None
    },
}


WORKER = {"type": "object", "description": "a worker, as `corral worker list --json` prints it"}
CLAIM = {"type": "object", "description": "a claim, as `corral claim --json` prints it"}
NAMES = {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 100}}
REGISTRATION = {
    "type": "object",
    "required": ["name"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 100},
        "queues": NAMES,
        "kinds": NAMES,
        "hostname": {"type": "string", "maxLength": 255},
        "pid": {"type": ["integer", "null"], "minimum": 1, "maximum": MAX_INT32},
        "version": {"type": "string", "maxLength": 100},
        "max_concurrent": {"type": "integer", "minimum": 1, "maximum": MAX_INT32},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
    },
}
PERCENT = {"type": ["number", "null"], "minimum": 0, "maximum": MAX_CPU_PERCENT}
MEMORY_BYTES = {"type": ["integer", "null"], "minimum": 0, "maximum": MAX_INT64}
HEARTBEAT = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "cpu_percent": PERCENT,
        "rss_bytes": MEMORY_BYTES,
        "agent_cpu_percent": PERCENT,
        "agent_rss_bytes": MEMORY_BYTES,
        "active": {"type": ["integer", "null"], "minimum": 0, "maximum": MAX_INT32},
        "completed": {"type": "integer", "minimum": 0, "maximum": MAX_INT32},
        "failed": {"type": "integer", "minimum": 0, "maximum": MAX_INT32},
    },
}
LEASE_S = {"type": ["number", "null"], "exclusiveMinimum": 0, "maximum": MAX_SPAN_S}
ASK = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "kinds": NAMES,
        "queues": NAMES,
        "lease_s": LEASE_S,
        "wait_s": {"type": "number", "minimum": 0, "maximum": MAX_WAIT_S},
    },
}
HELD = {
    "type": "object",
    "required": ["task", "token", "lease_expires_at"],
    "properties": {
        "task": TASK,
        "token": {"type": "integer"},
        "claimed_at": {"type": "string"},
        "lease_expires_at": {"type": "string"},
        "deadline_at": {"type": ["string", "null"]},
    },
}
BEAT = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "status": {"type": "string"},
        "heartbeat_interval_s": {"type": "number"},
        "drain": {"type": "boolean"},
    },
}


def _fenced(required: list[str], **fields: dict[str, Any]) -> dict[str, Any]:
    """A report's body: the claim's fencing token and the report's own fields."""
    return {
        "type": "object",
        "required": ["token", *required],
        "additionalProperties": False,
        "properties": {"token": {"type": "integer", "minimum": 1, "maximum": MAX_INT64}, **fields},
    }


REPORTS = {
    "complete": ("Report success", _fenced([], result={})),
    "fail": ("Report failure", _fenced(["error"], error={"type": "string"})),
    "defer": (
        "Step aside: ready again after delay_s, the attempt not counted",
        _fenced(
            ["delay_s"],
            delay_s={"type": "number", "minimum": 0, "maximum": MAX_SPAN_S},
            reason={"type": ["string", "null"]},
        ),
    ),
    "release": (
        "Give the task back (with attempt, the attempt counts)",
        _fenced([], reason={"type": ["string", "null"]}, attempt={"type": "boolean"}),
    ),
    "renew": ("Extend the lease", _fenced([], lease_s=LEASE_S)),
}


def _query(name: str, schema: dict[str, Any], description: str = "") -> dict[str, Any]:
    return {"name": name, "in": "query", "schema": schema, "description": description}


def _path(name: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": schema or {"type": "string"}}


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return {"content": {JSON: {"schema": schema}}}


SESSION = {"type": "object", "description": "a session in seed 001's shape"}
SPAWN = {
    "type": "object",
    "required": ["prompt"],
    "additionalProperties": False,
    "properties": {
        "prompt": {"type": "string", "minLength": 1},
        "sessionLabel": {"type": "string"},
        "model": {"type": "string"},
        "channel": {"type": "string"},
        "thinking": {"type": "string"},
        "autoStart": {"type": "boolean"},
        "queue": {"type": "string"},
        "timeoutMs": {"type": "integer", "minimum": 1},
    },
}
_MAYBE_TEXT = {"type": ["string", "null"]}
_MAYBE_MS = {"type": ["number", "null"]}
SLOT_BEAT: dict[str, Any] = {
    "type": "object",
    "required": ["slot", "status"],
    "additionalProperties": False,
    "properties": {
        "slot": {"type": "string"},
        "status": {"type": "string", "enum": ["idle", "working", "offline"]},
        "task": _MAYBE_TEXT,
        "taskTitle": _MAYBE_TEXT,
        "sessionId": _MAYBE_TEXT,
        "lastUpdate": _MAYBE_MS,
        "startedAt": _MAYBE_MS,
        "metadata": {"type": ["object", "null"]},
    },
}
EVENT_FILTERS = [
    _query("after", {"type": "string"}, "a cursor, XID-ID, from a page or an event's id"),
    _query("task", {"type": "string"}),
    _query("worker", {"type": "string"}),
    _query("type", {"type": "string"}, "an event name or a prefix such as task."),
    _query("since", {"type": "string"}, "a duration back from now, such as 10m"),
    _query("limit", {"type": "integer", "minimum": 1}),
]
RUN_OUTPUT = [
    _path("run_id"),
    _path("stream", {"type": "string", "enum": ["transcript", "stderr"]}),
    _query("offset", {"type": "integer", "minimum": 0}),
]

# (method, path) -> (summary, parameters, request body schema, answers)
SPECS: dict[tuple[str, str], dict[str, Any]] = {
    ("get", "/healthz"): {
        "summary": "Alive, and the store answers",
        "answers": {"200": _json({"type": "object"}), "503": _json(ERROR)},
    },
    ("get", "/openapi.json"): {
        "summary": "This document",
        "answers": {"200": _json({"type": "object"})},
    },
    ("get", "/metrics"): {
        "summary": "The store's state in the Prometheus text format",
        "answers": {"200": {"content": {"text/plain": {"schema": {"type": "string"}}}}},
    },
    ("get", "/api/tasks"): {
        "summary": "The tasks, in the order added",
        "parameters": [
            _query("status", {"type": "string", "enum": [str(s) for s in TaskStatus]}),
            _query("queue", {"type": "string"}),
            _query("kind", {"type": "string"}),
            _query("limit", {"type": "integer", "minimum": 1, "maximum": 10_000}),
            _query("view", {"type": "string", "enum": ["seed001"]}, "seed 001's shape"),
        ],
        "answers": {"200": _json({"type": "array", "items": TASK})},
    },
    ("post", "/api/tasks"): {
        "summary": "Add a task",
        "body": NEW_TASK,
        "answers": {"201": _json(TASK), "409": _json(ERROR)},
    },
    ("get", "/api/tasks/{task_id}"): {
        "summary": "One task",
        "parameters": [
            _path("task_id"),
            _query("view", {"type": "string", "enum": ["seed001"]}, "seed 001's shape"),
        ],
        "answers": {"200": _json(TASK), "404": _json(ERROR)},
    },
    ("post", "/api/tasks/{task_id}/answer"): {
        "summary": "Answer a task waiting for a person: ready again, its next run told the text",
        "parameters": [_path("task_id")],
        "body": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "text": {"type": "string"},
                "budget": {"type": "string"},
                "decision": {"type": "string", "enum": ["allow", "deny"]},
            },
        },
        "optional_body": True,
        "answers": {"200": _json(TASK), "404": _json(ERROR), "409": _json(ERROR)},
    },
    ("patch", "/api/tasks/{task_id}"): {
        "summary": "Move a task on seed 001's board (todo, in-progress, review, done, blocked)",
        "parameters": [_path("task_id")],
        "body": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "status": {
                    "type": "string",
                    "enum": ["todo", "in-progress", "review", "done", "blocked"],
                },
                "metadata": {"type": "object"},
                "claimToken": {"type": "integer"},
            },
        },
        "answers": {"200": _json(TASK), "404": _json(ERROR), "409": _json(ERROR)},
    },
    ("post", "/api/sessions/spawn"): {
        "summary": "Spawn a session: a task for the pool with a prompt, model and label",
        "body": SPAWN,
        "answers": {"201": _json(SESSION), "200": _json(SESSION), "409": _json(ERROR)},
    },
    ("get", "/api/sessions"): {
        "summary": "The sessions, newest first",
        "parameters": [
            _query("status", {"type": "string"}),
            _query("limit", {"type": "integer", "minimum": 1}),
        ],
        "answers": {"200": _json({"type": "array", "items": SESSION})},
    },
    ("delete", "/api/sessions/{session_id}"): {
        "summary": "Cancel a session; its runner ends the process",
        "parameters": [_path("session_id")],
        "answers": {"200": _json(SESSION), "404": _json(ERROR), "409": _json(ERROR)},
    },
    ("get", "/api/heartbeats"): {
        "summary": "Each slot's heartbeat in seed 001's schema",
        "answers": {"200": _json({"type": "object"})},
    },
    ("post", "/api/heartbeats"): {
        "summary": "A slot's heartbeat: registers its worker on its first call; offline ends it",
        "body": SLOT_BEAT,
        "answers": {"200": _json({"type": "object"}), "409": _json(ERROR)},
    },
    ("get", "/api/events"): {
        "summary": "A page of the event log, and the cursor to go on from",
        "parameters": EVENT_FILTERS,
        "answers": {"200": _json({"type": "object"})},
    },
    ("get", "/api/events/stream"): {
        "summary": "The events as Server-Sent Events as they commit (Last-Event-ID resumes)",
        "parameters": EVENT_FILTERS,
        "answers": {"200": {"content": {"text/event-stream": {"schema": {"type": "string"}}}}},
    },
    ("post", "/api/store/{name}"): {
        "summary": "One store operation, for corral's own remote client (docs/http-api.md)",
        "parameters": [
            _path(
                "name",
                {
                    "type": "string",
                    "enum": sorted(operations()),
                },
            )
        ],
        "body": {"type": "object", "description": "the operation's arguments by name"},
        "answers": {"200": _json({"type": "object"}), "404": _json(ERROR), "409": _json(ERROR)},
    },
    ("get", "/api/runs/{run_id}/output/{stream}"): {
        "summary": "A chunk of a run's transcript or stderr from an offset",
        "parameters": RUN_OUTPUT,
        "answers": {
            "200": {"content": {BYTES: {"schema": {"type": "string"}}}},
            "404": _json(ERROR),
        },
    },
    ("post", "/api/runs/{run_id}/output/{stream}"): {
        "summary": "Give the server bytes of a remote run's output from an offset",
        "parameters": RUN_OUTPUT,
        "raw_body": True,
        "answers": {
            "200": _json({"type": "object", "properties": {"size": {"type": "integer"}}}),
            "404": _json(ERROR),
        },
    },
}

WORKER_ID = [_path("worker_id")]
SPECS.update(
    {
        ("post", "/api/workers"): {
            "summary": "Register a worker; answers it and the heartbeat interval to keep",
            "body": REGISTRATION,
            "answers": {"201": _json({"type": "object"})},
        },
        ("get", "/api/workers"): {
            "summary": "The workers, oldest first",
            "parameters": [
                _query("status", {"type": "string", "enum": [str(s) for s in WorkerStatus]}),
                _query("queue", {"type": "string"}, "only the workers that serve it"),
                _query("kind", {"type": "string"}, "only the workers that run it"),
                _query("host", {"type": "string"}, "only the workers on it"),
                _query("label", {"type": "string"}, "K=V: only workers with it; repeatable"),
                _query("limit", {"type": "integer", "minimum": 1}, "a page of at most so many"),
                _query("after", {"type": "string"}, "the page after this cursor (`next`)"),
                _query("count", {"type": "string"}, "with paged: count them all (`total`)"),
                _query("paged", {"type": "string"}, 'answer {"items", "next", "total"}'),
            ],
            "answers": {"200": _json({"type": ["array", "object"], "items": WORKER})},
        },
        ("get", "/api/workers/{worker_id}"): {
            "summary": "One worker",
            "parameters": WORKER_ID,
            "answers": {"200": _json(WORKER), "404": _json(ERROR)},
        },
        ("delete", "/api/workers/{worker_id}"): {
            "summary": "Deregister: offline, its unfinished tasks back to the queue",
            "parameters": WORKER_ID,
            "answers": {"200": _json(WORKER), "404": _json(ERROR), "409": _json(ERROR)},
        },
        ("post", "/api/workers/{worker_id}/heartbeat"): {
            "summary": "The worker lives; answers the interval and whether to drain",
            "parameters": WORKER_ID,
            "body": HEARTBEAT,
            "optional_body": True,
            "answers": {"200": _json(BEAT), "404": _json(ERROR), "409": _json(ERROR)},
        },
        ("post", "/api/workers/{worker_id}/drain"): {
            "summary": "Take no new claims, finish what it holds",
            "parameters": WORKER_ID,
            "answers": {"200": _json(WORKER), "404": _json(ERROR), "409": _json(ERROR)},
        },
        ("post", "/api/workers/{worker_id}/claim"): {
            "summary": "Claim the next task the worker may run, waiting up to wait_s for one",
            "parameters": WORKER_ID,
            "body": ASK,
            "optional_body": True,
            "answers": {
                "200": _json(HELD),
                "204": {"description": "nothing to claim within wait_s"},
                "404": _json(ERROR),
                "409": _json(ERROR),
            },
        },
    }
)


def _report(summary: str, body: dict[str, Any], answered: dict[str, Any]) -> dict[str, Any]:
    return {
        "summary": summary + ", under the claim's fencing token",
        "parameters": [_path("task_id")],
        "body": body,
        "answers": {"200": _json(answered), "404": _json(ERROR), "409": _json(ERROR)},
    }


SPECS.update(
    {
        ("post", f"/api/tasks/{{task_id}}/{action}"): _report(
            summary, body, CLAIM if action == "renew" else TASK
        )
        for action, (summary, body) in REPORTS.items()
    }
)

_ALWAYS = {"401": _json(ERROR), "403": _json(ERROR), "413": _json(ERROR), "422": _json(ERROR)}


def document() -> dict[str, Any]:
    """The whole OpenAPI document."""
    paths: dict[str, dict[str, Any]] = {}
    for (method, path), spec in SPECS.items():
        role = role_of(method, path)
        operation: dict[str, Any] = {
            "summary": spec["summary"],
            "parameters": spec.get("parameters", []),
            "responses": {**(_ALWAYS if role else {}), **spec["answers"]},
        }
        if role is not None:
            operation["security"] = [{"token": []}]
            operation["description"] = f"Needs {role.article} token (or a higher role)."
        if "body" in spec:
            required = not spec.get("optional_body", False)
            operation["requestBody"] = {"required": required, **_json(spec["body"])}
        if spec.get("raw_body"):
            operation["requestBody"] = {
                "required": True,
                "content": {BYTES: {"schema": {"type": "string", "format": "binary"}}},
            }
        paths.setdefault(path, {})[method] = operation
    return {
        "openapi": "3.1.0",
        "info": {"title": "corral", "version": __version__, "description": "docs/http-api.md"},
        "components": {"securitySchemes": {"token": {"type": "http", "scheme": "bearer"}}},
        "security": [{"token": []}],
        "paths": paths,
    }


def role_of(method: str, path: str) -> Role | None:
    """The role server/roles.py declares for the route at `path` (`{id}` for `{id:path}`)."""
    routed = {(m, re.sub(r"\{(\w+):\w+\}", r"{\1}", p)): role for (m, p), role in ROLES.items()}
    return routed[(method.upper(), path)]


def openapi(request: Request) -> Response:
    """The document (viewer)."""
    require(request, store_of(request))
    return answer(document())


ROUTES = [Route("/openapi.json", openapi, methods=["GET"])]
