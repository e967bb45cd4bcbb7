"""corral's MCP server through the SDK's own client: `corral mcp` on stdio (a real
subprocess) and `/mcp` of a real `corral serve` on loopback, every tool on each; the
API's tokens, roles and namespaces on `/mcp`; a stale claim token refused in the CLI's
words; a question and a permission answered by a person while the call waits; and a
stand-in agent, run by a real runner, that finishes its task through MCP alone."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import contextlib
import json
import shlex
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.types import ResourceUpdatedNotification
from tests.runtime.conftest import wait_until
from tests.server.conftest import CORRAL, Server
from tests.server.mcp_clients import call, decoded, over_http, over_stdio, refused

AGENT = Path(__file__).with_name("mcp_agent.py")
OTHER = "team-b"


class Mcp:
    """One transport to the server under test: stdio, or HTTP with an operator token."""

    def __init__(self, server: Server, transport: str) -> None:
        self.server, self.transport = server, transport
        self.worker_id = ""
        if transport == "http":
            self.operator = server.token("operator", name="op")
            server.start()

    def connect(
        self, handler: Any = None, **caller: str
    ) -> contextlib.AbstractAsyncContextManager[Client]:
        """A client whose caller is `caller` (task_id, token, run_id), as the transport
        names it: the environment of `corral mcp`, or X-Corral-* headers; `handler` sees
        every message the server sends."""
        if self.transport == "stdio":
            names = {"task_id": "CORRAL_TASK_ID", "token": "CORRAL_CLAIM_TOKEN"}
            env = {**self.server.env, **{names[k]: v for k, v in caller.items()}}
            return over_stdio(env, str(self.server.folder), handler)
        names = {"task_id": "X-Corral-Task-Id", "token": "X-Corral-Claim-Token"}
        headers = {names[k]: v for k, v in caller.items()}
        url = f"{self.server.url}/mcp"
        return over_http(url, {**headers, **self.bearer(self.operator)}, handler)

    @staticmethod
    def bearer(token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}

    def claimed(self, title: str) -> tuple[str, str]:
        """A task added and claimed with the CLI: (its id, the claim's token)."""
        if not self.worker_id:
            self.worker_id = self.cli(
                "worker", "register", "--name", "w", "--max-concurrent", "10"
            ).strip()
        task_id = self.cli("add", title).strip()
        claim = json.loads(self.cli("claim", task_id, self.worker_id, "--json"))
        return task_id, str(claim["token"])

    def cli(self, *args: str) -> str:
        done = self.server.corral(*args)
        assert 0 == done.returncode, done.stderr
        return done.stdout

    def task(self, task_id: str) -> dict[str, Any]:
        shown: dict[str, Any] = json.loads(self.cli("show", task_id, "--json"))
        return shown


@pytest.fixture(params=["stdio", "http"])
def mcp(request: pytest.FixtureRequest, server: Server) -> Mcp:
    """The server's store reached over one transport."""
    return Mcp(server, request.param)


def run(scenario: Callable[[], Any]) -> None:
    """Run an async scenario to its end, on a thread of its own: a test before this one in
    the same process may leave an event loop running on the main thread (the dashboard
    tests' Playwright does), and anyio will not start a second there. A failure inside the
    SDK's task groups is raised as itself, not as the groups around it."""
    failed: list[BaseException] = []

    def scenario_thread() -> None:
        try:
            anyio.run(scenario)
        except BaseException as exc:  # handed to the test's thread below
            failed.append(exc)

    thread = threading.Thread(target=scenario_thread, name="mcp-scenario")
    thread.start()
    thread.join()
    if not failed:
        return
    leaf = failed[0]
    while isinstance(leaf, BaseExceptionGroup):
        leaf = leaf.exceptions[0]
    raise leaf from None


@contextlib.contextmanager
def beside(action: Callable[[], None], mcp: Mcp, task_id: str) -> Iterator[None]:
    """Run `action` on a thread while the block runs (a person acting during a call); if it
    fails, the task is cancelled, which ends the call's wait, and the failure is raised."""
    failed: list[BaseException] = []

    def act() -> None:
        try:
            action()
        except BaseException as exc:  # the test's own failure, reported after the block
            failed.append(exc)
            mcp.server.corral("cancel", task_id)

    thread = threading.Thread(target=act, daemon=True)
    thread.start()
    yield
    thread.join(timeout=30)
    assert [] == failed


def test_every_reading_and_adding_tool(mcp: Mcp) -> None:
    """add_task, list_tasks, show_task, send_message and read_messages do what `corral
    add`, `list`, `show` and `msg send|inbox` do, on the same store."""

    async def scenario() -> None:
        async with mcp.connect() as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            added = await call(client, "add_task", title="from mcp", queue="q1", priority=3)
            listed = await call(client, "list_tasks", queue="q1")
            shown = await call(client, "show_task", task_id=added["id"])
            sent = await call(client, "send_message", to="orchestrator", type="note", body={"n": 1})
            read = await call(client, "read_messages", inbox="orchestrator")
            resource = await client.read_resource(f"corral://tasks/{added['id']}")
        expected_tools = {"list_tasks", "show_task", "add_task", "add_subtask", "finish",
                          "report_progress", "ask", "permission_prompt", "send_message",
                          "read_messages"}  # fmt: skip
        assert expected_tools == tools
        assert ("from mcp", "ready", 3) == (added["title"], added["status"], added["priority"])
        assert [added["id"]] == [t["id"] for t in listed["tasks"]]
        assert (added["id"], []) == (shown["id"], shown["children"])
        assert mcp.task(added["id"])["title"] == shown["title"]
        assert [sent["id"]] == [m["id"] for m in read["messages"]]
        assert {"n": 1} == read["messages"][0]["body"]
        assert added["id"] == json.loads(resource.contents[0].text)["id"]  # type: ignore[union-attr]

    run(scenario)


def test_finish_reports_done_fail_and_defer_under_the_claim_token(mcp: Mcp) -> None:
    """finish is `corral done|fail|defer ID --token` under the caller's token."""
    done_id, done_token = mcp.claimed("done")
    fail_id, fail_token = mcp.claimed("fail")
    defer_id, defer_token = mcp.claimed("defer")

    async def scenario() -> None:
        async with mcp.connect(task_id=done_id, token=done_token) as client:
            await call(client, "finish", outcome="done", result={"pr": 7})
        async with mcp.connect(task_id=fail_id, token=fail_token) as client:
            await call(client, "finish", outcome="fail", error="the tests fail")
        async with mcp.connect() as client:  # task_id and token given as arguments
            await call(client, "finish", outcome="defer", delay_s=3600, error="later",
                       task_id=defer_id, token=int(defer_token))  # fmt: skip

    run(scenario)
    done, failed, deferred = (mcp.task(t) for t in (done_id, fail_id, defer_id))
    assert ("done", {"pr": 7}) == (done["status"], done["result"])
    assert ("ready", "the tests fail") == (failed["status"], failed["last_error"])
    assert ("ready", 0) == (deferred["status"], deferred["attempts"])
    assert deferred["run_after"] > failed["run_after"]


def test_a_stale_claim_token_is_refused_in_the_clis_words(mcp: Mcp) -> None:
    """A token whose claim was released and taken again: finish refuses it with the very
    line `corral done ID --token` prints, and the task keeps its new claim."""
    task_id, stale = mcp.claimed("stale")
    mcp.cli("claim:release", task_id, mcp.worker_id, "--no-attempt")
    fresh = json.loads(mcp.cli("claim", task_id, mcp.worker_id, "--json"))["token"]

    async def scenario() -> str:
        async with mcp.connect(task_id=task_id, token=stale) as client:
            return await refused(client, "finish", outcome="done")

    said: list[str] = []
    run(lambda: _kept(said, scenario))
    cli = mcp.server.corral("done", task_id, "--token", stale)
    assert (1, f"corral: error: {said[0]}\n") == (cli.returncode, cli.stderr)
    assert f"token {stale} is stale" in said[0]
    assert ("running", fresh) == (mcp.task(task_id)["status"], mcp.task(task_id)["token"])


async def _kept(into: list[str], scenario: Callable[[], Any]) -> None:
    into.append(await scenario())


def test_a_subtask_needs_the_parents_claim(mcp: Mcp) -> None:
    """add_subtask under the caller's claim adds a child of its task; under a token that is
    not the claim's it is refused, nothing added."""
    task_id, token = mcp.claimed("parent")

    async def scenario() -> str:
        async with mcp.connect(task_id=task_id, token=token) as client:
            child = await call(client, "add_subtask", title="child")
            assert task_id == child["parent_id"]
        async with mcp.connect(task_id=task_id, token=str(int(token) + 100)) as client:
            return await refused(client, "add_subtask", title="not added")

    said: list[str] = []
    run(lambda: _kept(said, scenario))
    assert said[0].startswith(f"token {int(token) + 100} is stale")
    children = json.loads(mcp.cli("list", "--parent", task_id, "--json"))
    assert ["child"] == [c["title"] for c in children]


def test_a_question_answered_during_the_call_is_its_result(mcp: Mcp) -> None:
    """ask makes the task wait with the question; a person's `corral answer` while the call
    waits is the call's result, and the task is ready again with the answer."""
    task_id, token = mcp.claimed("asks")

    def answer() -> None:
        wait_until(lambda: mcp.task(task_id)["status"] == "waiting", 30)
        mcp.cli("answer", task_id, "use PostgreSQL")

    async def scenario() -> Any:
        async with mcp.connect(task_id=task_id, token=token) as client:
            with beside(answer, mcp, task_id):
                return await call(client, "ask", question="Which database?", wait_s=60)

    got: list[Any] = []
    run(lambda: _kept(got, scenario))
    assert {"task_id": task_id, "status": "ready", "answered": True,
            "answer": "use PostgreSQL"} == got[0]  # fmt: skip
    shown = mcp.task(task_id)
    assert ("question: Which database?", "use PostgreSQL") == (
        shown["answered_reason"],
        shown["answer"],
    )


def test_a_call_that_waits_tells_the_client_it_still_waits(mcp: Mcp) -> None:
    """While ask waits for a person it sends progress notifications (every 5 s) on the
    call's own stream, and its task's resource is notified updated as it starts waiting
    and once answered; answered after the first progress, the call returns the answer."""
    task_id, token = mcp.claimed("asks slowly")
    told = threading.Event()
    messages: list[str | None] = []
    updated: list[str] = []

    async def notified(message: Any) -> None:
        root = getattr(message, "root", message)
        if isinstance(root, ResourceUpdatedNotification):
            updated.append(str(root.params.uri))

    async def progress(done: float, total: float | None, message: str | None) -> None:
        messages.append(message)
        told.set()

    def answer() -> None:
        assert told.wait(30), "no progress notification within 30 s"
        mcp.cli("answer", task_id, "port 8080")

    async def scenario() -> Any:
        async with mcp.connect(task_id=task_id, token=token, handler=notified) as client:
            with beside(answer, mcp, task_id):
                arguments = {"question": "Which port?", "wait_s": 60}
                return await client.call_tool("ask", arguments, progress_callback=progress)

    got: list[Any] = []
    run(lambda: _kept(got, scenario))
    assert (False, "port 8080") == (got[0].is_error, got[0].structured_content["answer"])
    assert "waiting for a person" == messages[0]
    assert [f"corral://tasks/{task_id}"] * 2 == updated  # waiting, then answered


def test_a_question_not_answered_in_time_leaves_the_task_waiting(mcp: Mcp) -> None:
    """ask with wait_s 0: the task waits with the question, the call says so at once."""
    task_id, token = mcp.claimed("asks later")

    async def scenario() -> Any:
        async with mcp.connect(task_id=task_id, token=token) as client:
            return await call(client, "ask", question="Which port?")

    got: list[Any] = []
    run(lambda: _kept(got, scenario))
    assert {"task_id": task_id, "status": "waiting", "answered": False, "answer": None} == got[0]
    assert ("waiting", "question: Which port?") == (
        mcp.task(task_id)["status"],
        mcp.task(task_id)["wait_reason"],
    )


def test_a_permission_request_waits_for_a_persons_allow(mcp: Mcp) -> None:
    """permission_prompt puts the task in waiting naming the tool and its input; `corral
    answer --allow` is the tool's answer, Claude Code's allow with the input unchanged;
    asked again for the same call (a resumed session), it is allowed at once."""
    task_id, token = mcp.claimed("edits")
    tool_input = {"command": "rm -rf build"}
    reasons: list[str] = []

    def allow() -> None:
        wait_until(lambda: mcp.task(task_id)["status"] == "waiting", 30)
        reasons.append(mcp.task(task_id)["wait_reason"])
        mcp.cli("answer", task_id, "--allow")

    async def scenario() -> tuple[Any, Any]:
        async with mcp.connect(task_id=task_id, token=token) as client:
            with beside(allow, mcp, task_id):
                first = await call(client, "permission_prompt", tool_name="Bash",
                                   input=tool_input, tool_use_id="toolu_1")  # fmt: skip
            again = await call(client, "permission_prompt", tool_name="Bash", input=tool_input)
        return decoded(first), decoded(again)

    got: list[Any] = []
    run(lambda: _kept(got, scenario))
    allowed = {"behavior": "allow", "updatedInput": tool_input}
    assert (allowed, allowed) == got[0]
    assert ['permission: Bash {"command": "rm -rf build"}'] == reasons
    assert "ready" == mcp.task(task_id)["status"]


def test_a_permission_denied_tells_the_agent_why(mcp: Mcp) -> None:
    """`corral answer --deny TEXT`: Claude Code's deny, TEXT its message."""
    task_id, token = mcp.claimed("pushes")

    def deny() -> None:
        wait_until(lambda: mcp.task(task_id)["status"] == "waiting", 30)
        mcp.cli("answer", task_id, "--deny", "never push from a task")

    async def scenario() -> Any:
        async with mcp.connect(task_id=task_id, token=token) as client:
            with beside(deny, mcp, task_id):
                return await call(client, "permission_prompt", tool_name="Bash",
                                  input={"command": "git push"})  # fmt: skip

    got: list[Any] = []
    run(lambda: _kept(got, scenario))
    assert {"behavior": "deny", "message": "never push from a task"} == decoded(got[0])


def test_an_allow_over_the_http_answer_route(server: Server) -> None:
    """POST /api/tasks/ID/answer {"decision": "allow"} answers a permission as the CLI's
    --allow does; another decision is 422 naming the field."""
    mcp = Mcp(server, "http")
    task_id, token = mcp.claimed("edits")

    def allow() -> None:
        wait_until(lambda: mcp.task(task_id)["status"] == "waiting", 30)
        body = json.dumps({"decision": "maybe"}).encode()
        bad = server.call("POST", f"/api/tasks/{task_id}/answer", mcp.operator, body)
        assert (422, "decision") == (bad[0], bad[1]["field"])
        body = json.dumps({"decision": "allow"}).encode()
        assert 200 == server.call("POST", f"/api/tasks/{task_id}/answer", mcp.operator, body)[0]

    async def scenario() -> Any:
        async with mcp.connect(task_id=task_id, token=token) as client:
            with beside(allow, mcp, task_id):
                return await call(client, "permission_prompt", tool_name="Edit",
                                  input={"file_path": "a.py"})  # fmt: skip

    got: list[Any] = []
    run(lambda: _kept(got, scenario))
    assert "allow" == decoded(got[0])["behavior"]


def test_a_wrong_token_is_401_before_the_sdk(server: Server) -> None:
    """/mcp without a valid token: 401 in the API's JSON shape, and the SDK's client fails."""
    server.start()
    request = urllib.request.Request(  # noqa: S310 - http://
        f"{server.url}/mcp", data=b"{}", method="POST", headers=Mcp.bearer("corral_wrong")
    )
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=10)  # noqa: S310 - http://
    assert 401 == caught.value.code
    assert json.loads(caught.value.read())["error"].startswith("a valid token is needed")

    async def scenario() -> None:
        async with over_http(f"{server.url}/mcp", Mcp.bearer("corral_wrong")) as client:
            await client.list_tools()

    with pytest.raises(Exception, match="error response"):  # the SDK's words for the 401
        run(scenario)


def test_a_viewer_reads_but_cannot_add(server: Server) -> None:
    """A viewer's token lists tasks; add_task is refused with the API's 403 words."""
    viewer = server.token("viewer", name="eyes")
    server.start()

    async def scenario() -> tuple[Any, str]:
        async with over_http(f"{server.url}/mcp", Mcp.bearer(viewer)) as client:
            return await call(client, "list_tasks"), await refused(client, "add_task", title="x")

    got: list[Any] = []
    run(lambda: _kept(got, scenario))
    listed, said = got[0]
    assert ({"tasks": []}, "this needs an operator token; 'eyes' is a viewer token") == (
        listed,
        said,
    )
    assert [] == json.loads(server.corral("list", "--json").stdout)


def test_another_namespaces_task_is_not_found(server: Server) -> None:
    """A team-b token in team-b sees no task of the default namespace: show_task and
    finish say not found, as for an id that names nothing; its own list is empty."""
    made = server.corral("--namespace", OTHER, "token", "create", "--role", "operator")
    theirs = made.stdout.strip()
    ours = server.corral("add", "default's").stdout.strip()
    server.start()
    headers = {**Mcp.bearer(theirs), "X-Corral-Namespace": OTHER}

    async def scenario() -> tuple[str, str, Any]:
        async with over_http(f"{server.url}/mcp", headers) as client:
            shown = await refused(client, "show_task", task_id=ours)
            finished = await refused(client, "finish", outcome="done", task_id=ours, token=1)
            return shown, finished, await call(client, "list_tasks")

    got: list[Any] = []
    run(lambda: _kept(got, scenario))
    assert (f"task {ours!r} not found", f"task {ours!r} not found", {"tasks": []}) == got[0]
    assert "ready" == json.loads(server.corral("show", ours, "--json").stdout)["status"]


@pytest.mark.parametrize("mode", ["stdio", "http"])
def test_a_stand_in_agent_finishes_its_task_through_mcp_alone(server: Server, mode: str) -> None:
    """A real runner runs an agent that speaks only MCP: its progress is on its run, its
    subtask is a child of its task, its message is in the orchestrator's inbox, its task
    is done with its result; its run's transcript is a resource."""
    env = {}
    if mode == "http":
        # A file, not the token itself: the task environment withholds secrets (*TOKEN).
        access = server.folder / "mcp-access"
        access.write_text(server.token("worker"))
        env = {"CORRAL_MCP_URL": f"{server.url}/mcp", "CORRAL_MCP_ACCESS_FILE": str(access)}
        viewer = server.token("viewer")
        server.start()
    task_id = server.corral("add", "work through mcp").stdout.strip()
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(AGENT))} {mode}"
    runner = [*CORRAL, "worker", "start", "--name", "r", "--exec", command, "--once"]
    done = server.spawn(runner, "runner", env)
    assert 0 == done.wait(timeout=60), (server.folder / "runner.log").read_text()
    task = json.loads(server.corral("show", task_id, "--json").stdout)
    (run_record,) = json.loads(server.corral("runs", "--task", task_id, "--json").stdout)
    children = json.loads(server.corral("list", "--parent", task_id, "--json").stdout)
    inbox = json.loads(server.corral("msg", "inbox", "orchestrator", "--json").stdout)
    assert ("done", {"by": "mcp", "mode": mode}) == (task["status"], task["result"])
    assert ["follow-up found on the way"] == [c["title"] for c in children]
    assert [("note", {"by": mode})] == [(m["type"], m["body"]) for m in inbox]
    assert "halfway there" == run_record["progress"]

    async def transcript() -> str:
        if mode == "http":
            connect = over_http(f"{server.url}/mcp", Mcp.bearer(viewer))
        else:
            connect = over_stdio(server.env, str(server.folder))
        async with connect as client:
            read = await client.read_resource(f"corral://runs/{run_record['id']}/transcript")
        return str(read.contents[0].text)  # type: ignore[union-attr]

    got: list[str] = []
    run(lambda: _kept(got, transcript))
    assert f"agent {task_id} starts" in got[0]
