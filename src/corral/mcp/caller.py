"""Who calls a tool: the task, claim token, run and worker corral gave the agent.

A runner puts `CORRAL_TASK_ID`, `CORRAL_CLAIM_TOKEN`, `CORRAL_RUN_ID` and
`CORRAL_WORKER_ID` in its agent's environment; `corral mcp`, started by the agent, inherits
them (`from_environment`). Over HTTP the agent's MCP configuration sends them as headers
(`X-Corral-Task-Id`, `X-Corral-Claim-Token`, `X-Corral-Run-Id`: `from_headers`). A tool's
own `task_id` and `token` arguments win over both, so a caller without that environment
names its claim itself. The claim token is checked by the store's fence, never here: a
wrong or stale one is refused exactly as `corral done ID --token` refuses it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from corral.foundation.documents import MAX_INT64
from corral.foundation.errors import InvalidInput

HEADERS = {
    "task_id": "x-corral-task-id",
    "token": "x-corral-claim-token",
    "run_id": "x-corral-run-id",
    "worker_id": "x-corral-worker-id",
}
VARIABLES = {
    "task_id": "CORRAL_TASK_ID",
    "token": "CORRAL_CLAIM_TOKEN",
    "run_id": "CORRAL_RUN_ID",
    "worker_id": "CORRAL_WORKER_ID",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Caller:
    """The agent's task, its claim's fencing token, its run and its worker, where known."""

    task_id: str | None = None
    token: int | None = None
    run_id: str | None = None
    worker_id: str | None = None

    def task(self, given: str | None) -> str:
        """The task a tool acts on: `given`, else the caller's own; InvalidInput if neither."""
        task_id = given or self.task_id
        if not task_id:
            raise InvalidInput("task_id", "a task id (or CORRAL_TASK_ID, the agent's own task)")
        return task_id

    def claim_token(self, given: int | None) -> int | None:
        """The fencing token a report carries: `given`, else the caller's own (None: none)."""
        return given if given is not None else self.token

    def run(self, given: str | None) -> str:
        """The run a progress note goes on: `given`, else the caller's own."""
        run_id = given or self.run_id
        if not run_id:
            raise InvalidInput("run_id", "a run id (or CORRAL_RUN_ID, the agent's own run)")
        return run_id


def from_values(values: Mapping[str, str]) -> Caller:
    """A Caller of the raw texts named by its field names (empty texts are unset)."""
    raw_token = values.get("token") or None
    token = None
    if raw_token is not None:
        raw_token = raw_token.strip()
        if not raw_token.isascii() or not raw_token.isdigit() or len(raw_token) > 19:
            raise InvalidInput("token", "the claim's fencing token, a whole number", raw_token)
        token = int(raw_token)
        if not 1 <= token <= MAX_INT64:
            raise InvalidInput("token", f"a fencing token from 1 to {MAX_INT64}", raw_token)
    return Caller(
        task_id=values.get("task_id") or None,
        token=token,
        run_id=values.get("run_id") or None,
        worker_id=values.get("worker_id") or None,
    )


def from_environment(environ: Mapping[str, str]) -> Caller:
    """The caller a runner's environment names (`corral mcp` on stdio)."""
    return from_values({field: environ.get(name, "") for field, name in VARIABLES.items()})


def from_headers(headers: Mapping[str, str]) -> Caller:
    """The caller an HTTP request's headers name (`/mcp`)."""
    return from_values({field: headers.get(name, "") for field, name in HEADERS.items()})
