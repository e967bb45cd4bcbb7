"""Traces of agents' runs (runtime/worker/tracing.py): a real runner runs the stand-in
claude and codex of tests/agents/fakes (their real stream formats), and its spans are
read from the SDK's in-memory exporter, or decoded by an OTLP receiver on loopback from
what a `corral worker start` process exports over HTTP: one `invoke_agent` span per run,
its token counts those `corral usage` reports, a retried task's second span linked to
its first (on SQLite and PostgreSQL); with no OTEL_* variable, nothing of OpenTelemetry
is imported."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from tests.conftest import CORRAL, STORE_DIALECTS, store_url

from corral import NewTask, Settings, Store, SystemClock, enqueue, open_store
from corral.model.agents import BUILT_IN
from corral.runtime.worker.agent_runs import AgentSetup
from corral.runtime.worker.command_job import CommandJob
from corral.runtime.worker.runner import Runner, RunnerConfig
from corral.runtime.worker.tracing import RunTracer, ids_of

FAKES = Path(__file__).resolve().parents[1] / "agents" / "fakes"
PROCESS_S = 60


@pytest.fixture(params=STORE_DIALECTS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A store of the test's own, of each dialect, on the system clock the runner uses."""
    with open_store(store_url(request.param, request, tmp_path)) as opened:
        yield opened


def fake_env(tmp_path: Path, **more: str) -> dict[str, str]:
    """This environment with the stand-in agents first on PATH, no OTEL_* of the caller's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "CORRAL_"))}
    log = str(tmp_path / "agents.jsonl")
    return {**env, "PATH": f"{FAKES}:{env['PATH']}", "FAKE_AGENT_LOG": log, **more}


def run_once(store: Store, tmp_path: Path, agent: AgentSetup, tracer: RunTracer, name: str) -> int:
    """A real runner of `agent` that takes one task, runs it and reports it; its exit code."""
    workdir = tmp_path / "work"
    workdir.mkdir(exist_ok=True)
    job = CommandJob(
        argv=agent.profile.command,
        runs_dir=str(tmp_path / "runs"),
        workdir=str(workdir),
        agent=agent,
        base_env=fake_env(tmp_path, FAKE_DIRECTIVES=str(tmp_path / "directives")),
    )
    runner = Runner(
        store,
        RunnerConfig(name=name, once=True, idle_min_s=0.01, idle_max_s=0.05),
        job,
        settings=Settings(),
        clock=SystemClock(),
        tracer=tracer,
    )
    return runner.run()


def usage_total(db: str) -> dict[str, Any]:
    """`corral usage --by total --json`: every run's usage summed."""
    done = subprocess.run(
        [CORRAL, "usage", "--by", "total", "--json", "--db", db],
        capture_output=True,
        text=True,
        check=True,
        timeout=PROCESS_S,
    )
    (total,) = json.loads(done.stdout)
    return dict(total)


def counted(attributes: Any) -> dict[str, Any]:
    """A span's token counts and cost."""
    names = (
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.output_tokens",
        "gen_ai.usage.cache_read.input_tokens",
        "gen_ai.usage.cache_creation.input_tokens",
        "corral.usage.cost_usd",
    )
    return {name: attributes[name] for name in names if name in attributes}


def as_usage(total: dict[str, Any]) -> dict[str, Any]:
    """`corral usage`'s figures under the conventions' names: input counts the cached."""
    inputs = [total[k] for k in ("input_tokens", "cache_read_tokens", "cache_write_tokens")]
    found = {
        "gen_ai.usage.input_tokens": sum(n for n in inputs if n is not None),
        "gen_ai.usage.output_tokens": total["output_tokens"],
        "gen_ai.usage.cache_read.input_tokens": total["cache_read_tokens"],
        "gen_ai.usage.cache_creation.input_tokens": total["cache_write_tokens"],
        "corral.usage.cost_usd": total["cost_usd"],
    }
    return {name: value for name, value in found.items() if value is not None}


@pytest.mark.parametrize(("agent_name", "provider"), [("claude", "anthropic"), ("codex", "openai")])
def test_a_run_is_one_invoke_agent_span_whose_tokens_are_corral_usage(
    store: Store, tmp_path: Path, agent_name: str, provider: str
) -> None:
    """One task through a real runner of the stand-in agent: one CLIENT span named
    `invoke_agent NAME` with the GenAI attributes (session, model, provider) and corral's
    own (task, run, attempt 1, outcome done); its input tokens count the cached ones
    (claude reports them apart, codex inside), and equal `corral usage`'s sum."""
    exporter = InMemorySpanExporter()
    agent = AgentSetup(profile=BUILT_IN[agent_name], model="model-asked-for")
    tracer = RunTracer([exporter], agent, worker="traced")
    task = enqueue(store, NewTask(title="add a line"))
    assert 0 == run_once(store, tmp_path, agent, tracer, "traced")
    tracer.close()
    (span,) = exporter.get_finished_spans()
    (run,) = store.runs.list_runs(task_id=task.id)
    attributes = dict(span.attributes or {})
    assert (f"invoke_agent {agent_name}", SpanKind.CLIENT, StatusCode.UNSET) == (
        span.name,
        span.kind,
        span.status.status_code,
    )
    assert {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": provider,
        "gen_ai.agent.name": agent_name,
        "gen_ai.conversation.id": run.session_id,
        "gen_ai.request.model": "model-asked-for",
        "corral.task.id": task.id,
        "corral.run.id": run.id,
        "corral.run.attempt": 1,
        "corral.run.outcome": "done",
        "corral.worker.id": run.worker_id,
        "corral.namespace": "default",
    } == {k: v for k, v in attributes.items() if not k.startswith(("gen_ai.usage", "corral.u"))}
    assert run.session_id is not None
    assert as_usage(usage_total(store.url)) == counted(attributes)
    expected_input = {"claude": 12 + 7800 + 560, "codex": 2400}[agent_name]
    assert expected_input == attributes["gen_ai.usage.input_tokens"]
    assert ids_of(run.id) == (span.context.trace_id, span.context.span_id)
    assert ("traced", "corral") == (
        span.resource.attributes["corral.worker.name"],
        span.resource.attributes["service.name"],
    )


def test_the_model_is_the_one_the_stream_names_when_none_was_asked_for(
    store: Store, tmp_path: Path
) -> None:
    """No `--model`: gen_ai.request.model is the model claude's init line says it runs."""
    exporter = InMemorySpanExporter()
    agent = AgentSetup(profile=BUILT_IN["claude"])
    tracer = RunTracer([exporter], agent, worker="traced")
    enqueue(store, NewTask(title="add a line"))
    assert 0 == run_once(store, tmp_path, agent, tracer, "traced")
    tracer.close()
    (span,) = exporter.get_finished_spans()
    assert "claude-sonnet-4-5-20250929" == (span.attributes or {})["gen_ai.request.model"]


def test_a_retried_task_s_second_span_links_the_first(store: Store, tmp_path: Path) -> None:
    """A run that fails (claude's API error) and its retry, which resumes the session:
    two spans, each its run's own trace; the first failed (ERROR, error.type failed,
    attempt 1), the second done (attempt 2) and linked to the first's span context; one
    conversation id; their token counts together are `corral usage`'s."""
    exporter = InMemorySpanExporter()
    agent = AgentSetup(profile=BUILT_IN["claude"])
    tracer = RunTracer([exporter], agent, worker="traced")
    task = enqueue(store, NewTask(title="add a line", retry_base_s=0))
    (tmp_path / "directives").write_text("FAKE:then=error")
    assert 1 == run_once(store, tmp_path, agent, tracer, "first")
    (tmp_path / "directives").unlink()
    assert 0 == run_once(store, tmp_path, agent, tracer, "second")
    tracer.close()
    first, second = sorted(exporter.get_finished_spans(), key=lambda s: s.start_time or 0)
    a, b = (dict(span.attributes or {}) for span in (first, second))
    assert (1, "failed", "failed", StatusCode.ERROR) == (
        a["corral.run.attempt"],
        a["corral.run.outcome"],
        a["error.type"],
        first.status.status_code,
    )
    assert (2, "done", StatusCode.UNSET) == (
        b["corral.run.attempt"],
        b["corral.run.outcome"],
        second.status.status_code,
    )
    assert first.context.trace_id != second.context.trace_id  # a trace per run
    (link,) = second.links
    assert (first.context.trace_id, first.context.span_id, a["corral.run.id"]) == (
        link.context.trace_id,
        link.context.span_id,
        (link.attributes or {})["corral.run.id"],
    )
    assert [] == list(first.links)
    assert a["gen_ai.conversation.id"] == b["gen_ai.conversation.id"]
    runs = store.runs.list_runs(task_id=task.id)
    assert [b["corral.run.id"], a["corral.run.id"]] == [run.id for run in runs]
    summed = {k: counted(a).get(k, 0) + counted(b).get(k, 0) for k in counted(b)}
    assert as_usage(usage_total(store.url)) == pytest.approx(summed)


class Receiver:
    """An OTLP/HTTP trace receiver on loopback: each POST to /v1/traces decoded."""

    def __init__(self) -> None:
        self.requests: list[ExportTraceServiceRequest] = []
        self.content_types: list[str] = []
        received = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # the exporter's one request type
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                received.requests.append(request)
                received.content_types.append(self.headers["Content-Type"])
                self.send_response(200 if self.path == "/v1/traces" else 404)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet: the test reads what was received, not the log."""

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def spans(self) -> list[tuple[dict[str, Any], Any]]:
        """Every span received: its resource's attributes, and the span."""
        found = []
        for request in self.requests:
            for spans in request.resource_spans:
                resource = {a.key: _value(a.value) for a in spans.resource.attributes}
                found += [(resource, s) for scope in spans.scope_spans for s in scope.spans]
        return found

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _value(value: Any) -> Any:
    """An OTLP AnyValue as Python."""
    return getattr(value, value.WhichOneof("value"))


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """An OTLP receiver listening on a port of loopback."""
    opened = Receiver()
    yield opened
    opened.close()


def test_a_worker_process_exports_its_runs_spans_to_an_otlp_receiver_over_http(
    tmp_path: Path, receiver: Receiver
) -> None:
    """`corral worker start --agent claude --once` with OTEL_EXPORTER_OTLP_ENDPOINT: the
    receiver decodes one invoke_agent span (protobuf over HTTP), kind CLIENT, with the
    run's ids and `corral usage`'s tokens, its resource the user's OTEL_RESOURCE_ATTRIBUTES
    and the worker's name; the agent got OTEL_RESOURCE_ATTRIBUTES with the task and run
    ids after the user's own."""
    db = str(tmp_path / "corral.db")
    with open_store(db) as opened:
        task = enqueue(opened, NewTask(title="add a line"))
    env = fake_env(
        tmp_path,
        OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
        OTEL_RESOURCE_ATTRIBUTES="team=search",
        CORRAL_ENV_ALLOW="OTEL_RESOURCE_ATTRIBUTES,FAKE_*",
        FAKE_LOG_ENV="OTEL_RESOURCE_ATTRIBUTES",
    )
    done = subprocess.run(
        [CORRAL, "worker", "start", "--agent", "claude", "--once", "--name", "w1", "--db", db],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=PROCESS_S,
        check=False,
    )
    assert 0 == done.returncode, done.stderr
    with open_store(db) as opened:
        (run,) = opened.runs.list_runs(task_id=task.id)
    ((resource, span),) = receiver.spans()
    attributes = {a.key: _value(a.value) for a in span.attributes}
    assert ("invoke_agent claude", 3) == (span.name, span.kind)  # 3: SPAN_KIND_CLIENT
    assert (task.id, run.id, run.session_id) == (
        attributes["corral.task.id"],
        attributes["corral.run.id"],
        attributes["gen_ai.conversation.id"],
    )
    assert ids_of(run.id) == (
        int.from_bytes(span.trace_id, "big"),
        int.from_bytes(span.span_id, "big"),
    )
    assert as_usage(usage_total(db)) == counted(attributes)
    assert ("search", "w1", "corral") == (
        resource["team"],
        resource["corral.worker.name"],
        resource["service.name"],
    )
    assert {"application/x-protobuf"} == set(receiver.content_types)
    (called,) = [json.loads(line) for line in (tmp_path / "agents.jsonl").read_text().splitlines()]
    expected = f"team=search,corral.task.id={task.id},corral.run.id={run.id}"
    assert expected == called["env"]["OTEL_RESOURCE_ATTRIBUTES"]


# A worker in this interpreter, then the OpenTelemetry modules it imported.
IMPORTED = """
import json, sys
from corral.cli.main import main
try:
    code = main(sys.argv[1:])
except SystemExit as exit:
    code = exit.code
print(json.dumps([code, sorted(m for m in sys.modules if m.startswith("opentelemetry"))]))
"""


def worker_imports(tmp_path: Path, **env: str) -> tuple[int, list[str]]:
    """A `worker start --agent claude --once` run in a fresh interpreter with `env` added:
    its exit code, and the opentelemetry modules it had imported when it ended."""
    tmp_path.mkdir()
    db = str(tmp_path / "corral.db")
    with open_store(db) as opened:
        enqueue(opened, NewTask(title="add a line"))
    argv = ["worker", "start", "--agent", "claude", "--once", "--name", "w1", "--db", db]
    done = subprocess.run(
        [sys.executable, "-c", IMPORTED, *argv],
        cwd=tmp_path,
        env=fake_env(tmp_path, **env),
        capture_output=True,
        text=True,
        timeout=PROCESS_S,
        check=True,
    )
    code, modules = json.loads(done.stdout.splitlines()[-1])
    return code, modules


def test_without_otel_variables_a_worker_imports_nothing_of_opentelemetry(
    tmp_path: Path,
) -> None:
    """No OTEL_* variable: a worker runs an agent's task and has imported no module of
    opentelemetry; with OTEL_TRACES_EXPORTER=console the same worker imports the SDK (so
    the check can tell the two apart)."""
    assert (0, []) == worker_imports(tmp_path / "off")
    code, modules = worker_imports(tmp_path / "on", OTEL_TRACES_EXPORTER="console")
    assert 0 == code
    assert "opentelemetry.sdk.trace" in modules


def test_an_otel_exporter_or_protocol_corral_lacks_is_refused_before_the_worker_starts(
    tmp_path: Path,
) -> None:
    """OTEL_TRACES_EXPORTER=zipkin, or OTLP over gRPC: exit 2 and one line naming the
    variable and what corral exports with, before any worker is registered."""
    db = str(tmp_path / "corral.db")
    open_store(db).close()  # the store made, so only the refusal can stop the start
    refusals = {
        "OTEL_TRACES_EXPORTER": "zipkin",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
    }
    for name, value in refusals.items():
        done = subprocess.run(
            [CORRAL, "worker", "start", "--agent", "claude", "--once", "--name", "w", "--db", db],
            cwd=tmp_path,
            env=fake_env(tmp_path, **{name: value, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}),
            capture_output=True,
            text=True,
            timeout=PROCESS_S,
            check=False,
        )
        assert 2 == done.returncode, done.stderr
        (line,) = done.stderr.splitlines()
        assert name in line and value in line
    with open_store(db) as opened:
        assert [] == opened.workers.list_workers()


# The worker of IMPORTED where no opentelemetry package can be imported.
WITHOUT_OTEL = """
import sys
class Missing:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "opentelemetry":
            raise ModuleNotFoundError(name)
sys.meta_path.insert(0, Missing())
from corral.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def test_traces_asked_for_without_the_otel_extra_are_refused_with_exit_3(tmp_path: Path) -> None:
    """OTEL_EXPORTER_OTLP_ENDPOINT set where OpenTelemetry is not installed: exit 3 (a tool
    is missing) and one line saying which extra to install."""
    db = str(tmp_path / "corral.db")
    open_store(db).close()  # the store made, so only the refusal can stop the start
    argv = ["worker", "start", "--agent", "claude", "--name", "w", "--db", db]
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_OTEL, *argv],
        cwd=tmp_path,
        env=fake_env(tmp_path, OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9"),
        capture_output=True,
        text=True,
        timeout=PROCESS_S,
        check=False,
    )
    assert 3 == done.returncode, done.stderr
    (line,) = done.stderr.splitlines()
    assert "corral[otel]" in line


def git_repo(folder: Path) -> Path:
    """A repository with one commit on main, in `folder`."""
    folder.mkdir()
    for args in (("init", "-q", "-b", "main"), ("commit", "-q", "--allow-empty", "-m", "base")):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t.invalid", *args],
            cwd=folder,
            check=True,
        )
    return folder


def test_a_worktree_run_s_span_goes_to_the_console_once_its_work_has_landed(
    tmp_path: Path,
) -> None:
    """`worker start --agent codex --worktree` with OTEL_TRACES_EXPORTER=console: the span
    is printed on the worker's standard output (the SDK's JSON) once the run's commit and
    land steps are over: outcome done, the edit on main."""
    repo = git_repo(tmp_path / "repo")
    db = str(tmp_path / "corral.db")
    with open_store(db) as opened:
        task = enqueue(opened, NewTask(title="add a line"))
    env = fake_env(tmp_path, OTEL_TRACES_EXPORTER="console")
    argv = ["worker", "start", "--agent", "codex", "--worktree", "--once", "--name", "w"]
    done = subprocess.run(
        [CORRAL, *argv, "--db", db],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=PROCESS_S,
        check=False,
    )
    assert 0 == done.returncode, done.stderr
    span = json.loads(done.stdout)
    attributes = span["attributes"]
    assert ("invoke_agent codex", "SpanKind.CLIENT") == (span["name"], span["kind"])
    assert (task.id, "done", "openai", 2400) == (
        attributes["corral.task.id"],
        attributes["corral.run.outcome"],
        attributes["gen_ai.provider.name"],
        attributes["gen_ai.usage.input_tokens"],
    )
    landed = subprocess.run(
        ["git", "log", "--format=%s", "main"], cwd=repo, capture_output=True, text=True, check=True
    )
    assert 2 <= len(landed.stdout.splitlines())  # the run's commit is on main
