"""The MCP server: corral's tools and resources, for either transport.

`build(access)` registers each tool and resource on the SDK's `MCPServer`; `access` says,
per call, which store it acts on (stdio: the CLI's; HTTP: the request's token's
namespace, after the tool's least role in server/roles.py's `MCP_TOOLS`) and who calls
(caller.py). A `CorralError` becomes the tool's error result, its one line as the CLI
prints it (a stale token: the very words of `corral done ID --token`).

Tools: list_tasks, show_task, add_task, add_subtask, ask, report_progress, finish,
send_message, read_messages, permission_prompt. Resources: `corral://tasks/{task_id}`,
`corral://runs/{run_id}/transcript`.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Awaitable, Callable
from typing import Any, Literal, ParamSpec, Protocol, TypeVar, cast

import anyio
import anyio.from_thread
import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.types import (
    CallToolResult,
    ResourceUpdatedNotification,
    ResourceUpdatedNotificationParams,
    TextContent,
)

import corral
from corral.foundation.clock import SystemClock
from corral.foundation.errors import CorralError, InvalidInput
from corral.foundation.settings import Settings
from corral.mcp import operations as ops
from corral.mcp.caller import Caller
from corral.mcp.waits import MAX_WAIT_S, Ended, wait_for_answer
from corral.model import waiting
from corral.model.api_tokens import Role
from corral.model.states import TaskStatus
from corral.model.tasks import NewTask
from corral.store import Store

T = TypeVar("T")
R = TypeVar("R")
P = ParamSpec("P")
INSTRUCTIONS = (
    "corral's task queue. Your own task, claim token and run come from the environment "
    "corral gave you (CORRAL_TASK_ID, CORRAL_CLAIM_TOKEN, CORRAL_RUN_ID): finish it with "
    "`finish`, add work with `add_subtask`, ask a person with `ask`."
)
TASK_URI = "corral://tasks/"
TRANSCRIPT_BYTES = 256 * 1024  # the tail of a transcript a resource read returns


class Access(Protocol):
    """How a call reaches the store, and who makes it."""

    settings: Settings

    def store(self, ctx: Context, role: Role, tool: str) -> Store:
        """The store the call acts on, once its credentials may call `tool` (`role`)."""
        ...

    def caller(self, ctx: Context) -> Caller:
        """The agent's task, claim token and run, as its transport names them."""
        ...

    def sender(self, ctx: Context, caller: Caller) -> str:
        """Who a message the call sends is from."""
        ...

    def within_queues(self, ctx: Context, queue: str) -> None:
        """Refuse a task of `queue` that the call's credentials may not touch."""
        ...

    def work_added(self, ctx: Context) -> None:
        """A task became ready: wake whoever waits for work."""
        ...


def _refusals(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """The tool `fn`, whose CorralError (or a refused role) is its error result: the one
    line the CLI prints, without the SDK's `Error executing tool` before it."""

    @functools.wraps(fn)
    async def tool(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await fn(*args, **kwargs)
        except (CorralError, ToolError) as exc:
            text = exc.message if isinstance(exc, CorralError) else str(exc)
            failed: Any = CallToolResult(
                content=[TextContent(type="text", text=text)], is_error=True
            )
            return cast(R, failed)

    return tool


def _in_thread(call: Callable[[], T]) -> Awaitable[T]:
    """`call()` on a worker thread: the store's calls block."""
    return anyio.to_thread.run_sync(call)


def build(access: Access) -> MCPServer:
    """The server, every tool and resource registered."""
    server: MCPServer = MCPServer(
        "corral", version=corral.__version__, instructions=INSTRUCTIONS, log_level="WARNING"
    )
    _task_tools(server, access)
    _own_task_tools(server, access)
    _message_tools(server, access)
    _waiting_tools(server, access)
    _resources(server, access)
    return server


def _task_tools(server: MCPServer, access: Access) -> None:
    """Reading and adding tasks."""

    @server.tool()
    @_refusals
    async def list_tasks(
        ctx: Context,
        status: list[str] | None = None,
        queue: str | None = None,
        parent: str | None = None,
        limit: int = 100,
    ) -> dict[str, Any]:
        """List tasks (as `corral list`): by status (ready, running, waiting, done ...),
        queue and parent task, oldest first."""
        store = access.store(ctx, Role.VIEWER, "list_tasks")
        found = await _in_thread(
            lambda: ops.list_tasks(
                store, status=status or [], queue=queue, parent=parent, limit=limit
            )
        )
        return {"tasks": found}

    @server.tool()
    @_refusals
    async def show_task(ctx: Context, task_id: str) -> dict[str, Any]:
        """Show one task in full (as `corral show`), with its children."""
        store = access.store(ctx, Role.VIEWER, "show_task")
        return await _in_thread(lambda: ops.show_task(store, task_id))

    @server.tool()
    @_refusals
    async def add_task(
        ctx: Context,
        *,
        title: str,
        description: str = "",
        queue: str = "default",
        kind: str = "default",
        priority: int = 0,
        payload: dict[str, Any] | None = None,
        labels: dict[str, str] | None = None,
        depends_on: list[str] | None = None,
    ) -> dict[str, Any]:
        """Add a task to the queue (as `corral add`); the task, with its id."""
        store = access.store(ctx, Role.OPERATOR, "add_task")
        spec = NewTask(title=title, description=description, queue=queue, kind=kind,
                       priority=priority, payload=payload or {}, labels=labels or {},
                       depends_on=tuple(depends_on or ()))  # fmt: skip
        access.within_queues(ctx, spec.queue)
        added = await _in_thread(lambda: ops.add_task(store, spec, access.settings))
        access.work_added(ctx)
        return added

    @server.tool()
    @_refusals
    async def add_subtask(
        ctx: Context,
        *,
        title: str,
        description: str = "",
        queue: str = "default",
        kind: str = "default",
        priority: int = 0,
        payload: dict[str, Any] | None = None,
        task_id: str | None = None,
        token: int | None = None,
    ) -> dict[str, Any]:
        """Add a subtask of your own task, under your claim token (as `corral add --parent ID
        --parent-runs-first`): it runs once your task is done. task_id and token default to
        yours."""
        store = access.store(ctx, Role.WORKER, "add_subtask")
        caller = access.caller(ctx)
        spec = NewTask(title=title, description=description, queue=queue, kind=kind,
                       priority=priority, payload=payload or {},
                       parent_id=caller.task(task_id), parent_runs_first=True)  # fmt: skip
        access.within_queues(ctx, spec.queue)
        added = await _in_thread(
            lambda: ops.add_subtask(store, caller, spec, access.settings, token=token)
        )
        access.work_added(ctx)
        return added


def _own_task_tools(server: MCPServer, access: Access) -> None:
    """Reporting on the caller's own task and run."""

    @server.tool()
    @_refusals
    async def finish(
        ctx: Context,
        *,
        outcome: Literal["done", "fail", "defer"],
        result: Any = None,
        error: str | None = None,
        delay_s: float | None = None,
        task_id: str | None = None,
        token: int | None = None,
    ) -> dict[str, Any]:
        """Finish your own task under your claim token, as `corral done|fail|defer ID
        --token`: done (with an optional JSON result), fail (error: why; the retry policy
        decides) or defer (back in delay_s seconds; error: why). A stale token is refused."""
        store = access.store(ctx, Role.WORKER, "finish")
        caller = access.caller(ctx)

        def report() -> dict[str, Any]:
            access.within_queues(ctx, store.tasks.get_task(caller.task(task_id)).queue)
            return ops.finish(store, caller, access.settings, outcome=outcome, task_id=task_id,
                              token=token, result=result, error=error,
                              delay_s=delay_s)  # fmt: skip

        return await _in_thread(report)

    @server.tool()
    @_refusals
    async def report_progress(ctx: Context, note: str, run_id: str | None = None) -> dict[str, Any]:
        """Say where your run stands (one line): kept on your run as its progress, shown
        live by `corral run show` and the dashboard."""
        store = access.store(ctx, Role.WORKER, "report_progress")
        caller = access.caller(ctx)
        return await _in_thread(lambda: ops.report_progress(store, caller, note, run_id))


def _message_tools(server: MCPServer, access: Access) -> None:
    """The message channel (`corral msg`)."""

    @server.tool()
    @_refusals
    async def send_message(ctx: Context, to: str, type: str, body: Any = None) -> dict[str, Any]:
        """Append a message to an inbox (a worker's name, or `orchestrator`), as `corral
        msg send`; type names what it is (progress, note ...)."""
        store = access.store(ctx, Role.WORKER, "send_message")
        sender = access.sender(ctx, access.caller(ctx))
        return await _in_thread(
            lambda: ops.send_message(store, to=to, type=type, body=body, sender=sender)
        )

    @server.tool()
    @_refusals
    async def read_messages(
        ctx: Context, inbox: str, after_id: int = 0, unacked: bool = False
    ) -> dict[str, Any]:
        """Read an inbox's messages after after_id, oldest first (as `corral msg inbox`)."""
        store = access.store(ctx, Role.VIEWER, "read_messages")
        found = await _in_thread(
            lambda: ops.read_messages(store, inbox=inbox, after_id=after_id, unacked=unacked)
        )
        return {"messages": found}


def _waiting_tools(server: MCPServer, access: Access) -> None:
    """The calls that wait for a person: a question, a permission."""

    @server.tool()
    @_refusals
    async def ask(
        ctx: Context,
        question: str,
        wait_s: float = 0.0,
        task_id: str | None = None,
        token: int | None = None,
    ) -> dict[str, Any]:
        """Ask a person a question: your task waits until they answer (`corral answer`).
        An answer within wait_s seconds is this call's result; otherwise end your turn: a
        corral runner stops you and resumes your session with the answer."""
        if not 0 <= wait_s <= MAX_WAIT_S:
            raise InvalidInput("wait_s", f"0 to {MAX_WAIT_S:.0f} seconds", wait_s)
        store = access.store(ctx, Role.WORKER, "ask")
        caller = access.caller(ctx)
        reason = ops.question_reason(question)
        waits = await _in_thread(
            lambda: ops.begin_wait(store, caller, reason, task_id=task_id, token=token)
        )
        ended = await _wait(ctx, store, waits, reason, wait_s)
        return {"task_id": waits, **ended.to_dict()}

    @server.tool(structured_output=False)  # Claude Code reads the decision's JSON as text
    @_refusals
    async def permission_prompt(
        ctx: Context, tool_name: str, input: dict[str, Any], tool_use_id: str | None = None
    ) -> str:
        """Claude Code's --permission-prompt-tool: your task waits until a person allows or
        denies the call (`corral answer ID --allow|--deny`); the decision as Claude Code
        reads it, {"behavior": "allow", "updatedInput": ...} or {"behavior": "deny", ...}."""
        store = access.store(ctx, Role.WORKER, "permission_prompt")
        caller = access.caller(ctx)
        reason = ops.permission_reason(tool_name, input)
        task_id = caller.task(None)
        before = await _in_thread(lambda: ops.decided_before(store, task_id, reason))
        if before is None:
            await _in_thread(
                lambda: ops.begin_wait(store, caller, reason, task_id=None, token=None)
            )
            ended = await _wait(ctx, store, task_id, reason, MAX_WAIT_S)
            before = ended.answer if ended.answered else f"{waiting.DENY}: the task {ended.status}"
        allowed, message = waiting.decision(before)
        if allowed:
            return json.dumps({"behavior": "allow", "updatedInput": input})
        return json.dumps({"behavior": "deny", "message": message})


async def _task_changed(ctx: Context, task_id: str) -> None:
    """Tell the client its task's resource changed (its status: waiting, then answered),
    on the call's own stream (a stateless HTTP answer has no other)."""
    uri = f"{TASK_URI}{task_id}"
    changed = ResourceUpdatedNotification(params=ResourceUpdatedNotificationParams(uri=uri))
    await ctx.request_context.session.send_notification(changed, related_request_id=ctx.request_id)


async def _wait(ctx: Context, store: Store, task_id: str, reason: str, wait_s: float) -> Ended:
    """Wait on a worker thread for the task to leave `reason`, telling the client each
    few seconds that it still waits, and that its task changed as the wait begins and
    ends; a cancelled call stops the thread's wait."""
    await _task_changed(ctx, task_id)
    stop = threading.Event()

    def tick(elapsed_s: float) -> None:
        if not stop.is_set():
            anyio.from_thread.run(ctx.report_progress, elapsed_s, None, "waiting for a person")

    def wait() -> Ended:
        clock = SystemClock()
        return wait_for_answer(
            store, task_id, reason, wait_s=wait_s, clock=clock, tick=tick, stop=stop
        )

    try:
        ended = await anyio.to_thread.run_sync(wait, abandon_on_cancel=True)
    finally:
        stop.set()
    if ended.status is not TaskStatus.WAITING:
        await _task_changed(ctx, task_id)
    return ended


def _resources(server: MCPServer, access: Access) -> None:
    """A task, and a run's transcript."""

    @server.resource(TASK_URI + "{task_id}", mime_type="application/json")
    def task(task_id: str, ctx: Context) -> str:
        """A task in full, as `corral show --json`."""
        store = access.store(ctx, Role.VIEWER, "resources")
        return json.dumps(_readable(lambda: ops.show_task(store, task_id)))

    @server.resource("corral://runs/{run_id}/transcript", mime_type="text/plain")
    def transcript(run_id: str, ctx: Context) -> str:
        """A run's transcript (its last 256 KiB), as `corral logs`."""
        store = access.store(ctx, Role.VIEWER, "resources")
        return _readable(lambda: ops.transcript(store, run_id, TRANSCRIPT_BYTES))


def _readable(call: Callable[[], T]) -> T:
    """`call()`, its CorralError (a task not found ...) a resource error of its one line."""
    try:
        return call()
    except CorralError as exc:
        raise ResourceError(exc.message) from None
    except OSError as exc:
        raise ResourceError(f"{exc.strerror}: {exc.filename}") from None
