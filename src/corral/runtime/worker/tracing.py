"""Traces of agents' runs: one OpenTelemetry span per run, when the `OTEL_*` variables ask.

When (`configured`): OTEL_TRACES_EXPORTER names an exporter other than `none`, or an OTLP
endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), and
OTEL_SDK_DISABLED is not `true`. Otherwise nothing of OpenTelemetry is imported and a
lane's only cost is one `is None`: the SDK (the `otel` extra) is imported by `start`
alone, by a runner of an agent whose environment asks for traces. `check` refuses, before
the worker starts, an exporter or OTLP protocol corral does not ship (`otlp` over
http/protobuf and `console` it does) and a missing extra.

The span (`RunTracer.ended`, called by the lane once a run's report is made, so it knows
the outcome after the worktree's commit, verify and land steps): the GenAI semantic
conventions' invoke-agent client span, `invoke_agent {gen_ai.agent.name}`, kind CLIENT
(the agent runs outside corral's process and calls its provider's service; INTERNAL is
for an agent inside the instrumenting process), its attributes from `span_attributes`.
Made at the run's end with the run's start as its start time: everything is known then,
and nothing is carried through the run. Exported in batches from the SDK's own thread.

Attempts linked: each run is a trace of its own whose trace and span ids are derived from
the run's id (`ids_of`, SHA-256), and a run's span links to the span of the task's run
before it (its id read from the store), so the link needs nothing stored. Not one trace
per task: a task's runs may be hours or days apart (a usage limit's reset, a person's
answer), and collectors and tail samplers close a trace after seconds or minutes, so a
trace that long would be cut into pieces anyway; OpenTelemetry's specification models a
retry, work caused by other work but not nested in it, as a link.

The agent's own telemetry (Claude Code exports OpenTelemetry itself) joins by resource:
every command's environment gets OTEL_RESOURCE_ATTRIBUTES with corral.task.id and
corral.run.id (`agent_resource`), after those the task environment already had, traced or
not: it is one variable, and costs nothing to an agent that exports nothing.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

from corral import __version__
from corral.foundation.errors import CorralError, InvalidInput
from corral.foundation.logs import event
from corral.model.exchange import Held, Report
from corral.model.runs import RunOutcome
from corral.runtime.worker.tools import ToolUnavailable

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.sdk.trace.id_generator import IdGenerator
    from opentelemetry.trace import Link

    from corral.runtime.worker.agent_runs import AgentSetup
    from corral.runtime.worker.config import Workplace
    from corral.runtime.worker.reports import Done

ENDPOINTS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
PROTOCOLS = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
EXPORTERS = ("otlp", "console", "none")
PROTOCOL = "http/protobuf"
DEFAULT_ENDPOINT = "http://localhost:4318"  # the OTLP/HTTP exporter's, when none is set
RESOURCE_VARIABLE = "OTEL_RESOURCE_ATTRIBUTES"
# The GenAI conventions' provider names of the agents whose provider the format tells.
PROVIDERS = {"claude-stream-json": "anthropic", "codex-json": "openai"}
# Outcomes in which the agent's invocation did not complete: the span's status is ERROR.
FAILED = frozenset(
    {
        RunOutcome.FAILED,
        RunOutcome.TIMEOUT,
        RunOutcome.KILLED,
        RunOutcome.STALLED,
        RunOutcome.LEASE_LOST,
    }
)
DESCRIPTION_CHARS = 300
USAGE_COUNTS = (  # corral's usage key -> the attribute; input_tokens is their sum (below)
    ("output_tokens", "gen_ai.usage.output_tokens"),
    ("cache_read_tokens", "gen_ai.usage.cache_read.input_tokens"),
    ("cache_write_tokens", "gen_ai.usage.cache_creation.input_tokens"),
)
# corral's input_tokens are the uncached ones (stream_formats.py); the conventions'
# gen_ai.usage.input_tokens count every input token, cached ones included.
INPUT_KEYS = ("input_tokens", "cache_read_tokens", "cache_write_tokens")


def _exporters(environ: Mapping[str, str]) -> tuple[str, ...]:
    """The exporters OTEL_TRACES_EXPORTER names (a comma-separated list), lower-cased."""
    names = environ.get("OTEL_TRACES_EXPORTER", "").split(",")
    return tuple(name.strip().lower() for name in names if name.strip())


def configured(environ: Mapping[str, str]) -> bool:
    """Whether `environ` asks for traces (module docstring); imports nothing."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    names = _exporters(environ)
    if names:
        return any(name != "none" for name in names)
    return any(environ.get(name) for name in ENDPOINTS)


def check(environ: Mapping[str, str]) -> bool:
    """Whether a runner of an agent traces its runs; InvalidInput (exit 2) for an exporter
    or protocol corral cannot export with, ToolUnavailable (exit 3) when the `otel` extra
    is not installed. Imports nothing of OpenTelemetry."""
    if not configured(environ):
        return False
    names = _exporters(environ) or ("otlp",)
    unknown = [name for name in names if name not in EXPORTERS]
    if unknown:
        expected = "otlp, console or none (comma-separated)"
        raise InvalidInput("OTEL_TRACES_EXPORTER", expected, environ["OTEL_TRACES_EXPORTER"])
    protocol = next((environ[name] for name in PROTOCOLS if environ.get(name)), PROTOCOL)
    if "otlp" in names and protocol.strip() != PROTOCOL:
        field = next(name for name in PROTOCOLS if environ.get(name))
        raise InvalidInput(field, f"{PROTOCOL} (corral's OTLP exporter)", protocol)
    needed = ["opentelemetry.sdk"]
    if "otlp" in names:
        needed.append("opentelemetry.exporter.otlp.proto.http")
    if not all(_installed(module) for module in needed):
        raise ToolUnavailable(
            "OpenTelemetry (traces asked for by OTEL_*): not installed; pip install 'corral[otel]'"
        )
    return True


def destinations(environ: Mapping[str, str]) -> str:
    """Where spans go, for a person (`corral doctor`): each exporter, an OTLP endpoint by
    its scheme and host only (a URL may carry a credential)."""
    shown = []
    for name in _exporters(environ) or ("otlp",):
        if name == "otlp":
            url = next((environ[n] for n in ENDPOINTS if environ.get(n)), DEFAULT_ENDPOINT)
            parts = urlsplit(url)
            shown.append(f"otlp to {parts.scheme}://{parts.netloc.rpartition('@')[2]}")
        elif name == "console":
            shown.append("console (standard output)")
    return ", ".join(shown)


def _installed(module: str) -> bool:
    """Whether `module` can be imported (its parent packages are, which is cheap)."""
    import importlib.util  # only where OTEL_* ask for traces

    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


def agent_resource(given: str | None, *, task_id: str, run_id: str) -> str:
    """OTEL_RESOURCE_ATTRIBUTES for a run's command: `given`'s attributes (those it had)
    with corral.task.id and corral.run.id set to this run's, percent-encoded as the
    variable's specification asks."""
    ours = {"corral.task.id": task_id, "corral.run.id": run_id}
    kept = [
        pair
        for pair in (given or "").split(",")
        if pair.strip() and pair.split("=", 1)[0].strip() not in ours
    ]
    kept += [f"{key}={quote(value, safe='')}" for key, value in ours.items()]
    return ",".join(kept)


def ids_of(run_id: str) -> tuple[int, int]:
    """The trace id (128 bits) and span id (64 bits) of run `run_id`'s span."""
    digest = hashlib.sha256(f"corral.run:{run_id}".encode()).digest()
    trace_id = int.from_bytes(digest[:16], "big") or 1  # an id of zeros is invalid
    span_id = int.from_bytes(digest[16:24], "big") or 1
    return trace_id, span_id


def span_attributes(
    agent: AgentSetup, held: Held, done: Done, report: Report, *, worker_id: str, namespace: str
) -> dict[str, Any]:
    """The attributes of a run's span: the GenAI conventions' and corral's own."""
    profile = agent.profile
    found: dict[str, Any] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": PROVIDERS.get(profile.output, profile.name),
        "gen_ai.agent.name": profile.name,
        "gen_ai.conversation.id": done.session_id,
        "gen_ai.request.model": agent.model or done.model,
        "corral.task.id": held.task.id,
        "corral.run.id": held.run_id,
        "corral.run.attempt": held.task.attempts,
        "corral.run.outcome": None if report.outcome is None else str(report.outcome),
        "corral.worker.id": worker_id,
        "corral.namespace": namespace,
        "error.type": str(report.outcome) if report.outcome in FAILED else None,
    }
    found |= usage_attributes(report.usage)
    return {key: value for key, value in found.items() if value is not None}


def usage_attributes(usage: Mapping[str, Any] | None) -> dict[str, Any]:
    """A run's usage (corral's keys) as the conventions' counts, and its cost."""
    usage = usage or {}
    counts = {key: value for key, value in usage.items() if _whole(value)}
    found: dict[str, Any] = {name: counts[key] for key, name in USAGE_COUNTS if key in counts}
    inputs = [counts[key] for key in INPUT_KEYS if key in counts]
    if inputs:
        found["gen_ai.usage.input_tokens"] = sum(inputs)
    cost = usage.get("cost_usd")
    if isinstance(cost, int | float) and not isinstance(cost, bool):
        found["corral.usage.cost_usd"] = float(cost)
    return found


def _whole(value: Any) -> bool:
    """Whether `value` is a count (an int, not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _ns(at: datetime) -> int:
    """An instant as the nanoseconds since the epoch a span's times are."""
    return int(at.timestamp() * 1_000_000_000)


class RunTracer:
    """A runner's spans: one per agent run (`ended`), exported until `close`."""

    def __init__(
        self, exporters: Sequence[SpanExporter], agent: AgentSetup, *, worker: str
    ) -> None:
        """Spans of `agent`'s runs for the worker named `worker`, to each of `exporters`."""
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        resource = Resource.create({"corral.worker.name": worker})
        if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
            resource = resource.merge(Resource({"service.name": "corral"}))
        self._next = threading.local()  # the ids of the span a lane is about to start
        provider = TracerProvider(resource=resource, id_generator=_run_ids(self._next))
        for exporter in exporters:
            provider.add_span_processor(BatchSpanProcessor(exporter))
        self._provider, self._agent = provider, agent
        self._tracer = provider.get_tracer("corral", __version__)

    def ended(
        self,
        place: Workplace,
        held: Held,
        done: Done,
        report: Report,
        *,
        started_at: datetime,
    ) -> None:
        """The span of the run `held` opened, which ended now as `done` and `report` say."""
        from opentelemetry.context import Context
        from opentelemetry.trace import SpanKind, Status, StatusCode

        run_id = held.opened_run()
        attributes = span_attributes(
            self._agent,
            held,
            done,
            report,
            worker_id=place.worker_id,
            namespace=place.store.namespace,
        )
        self._next.ids = ids_of(run_id)
        span = self._tracer.start_span(
            f"invoke_agent {self._agent.profile.name}",
            context=Context(),  # a root: the run's own trace
            kind=SpanKind.CLIENT,
            attributes=attributes,
            links=self._previous(place, held),
            start_time=_ns(started_at),
        )
        if "error.type" in attributes:
            span.set_status(Status(StatusCode.ERROR, (report.error or "")[:DESCRIPTION_CHARS]))
        span.end(end_time=_ns(place.clock.now()))

    def _previous(self, place: Workplace, held: Held) -> list[Link]:
        """A link to the span of the task's run before this one, if it had one; none
        while the store cannot be read (the span goes out without it)."""
        from opentelemetry.trace import Link, SpanContext, TraceFlags

        try:
            runs = place.store.runs.list_runs(task_id=held.task.id, limit=2)
        except CorralError as exc:
            event(place.log, "run.trace_link_failed", logging.WARNING, run_id=held.run_id,
                  error=exc.message)  # fmt: skip
            return []
        before = [run.id for run in runs if run.id != held.run_id]
        if not before:
            return []
        trace_id, span_id = ids_of(before[0])
        flags = TraceFlags(TraceFlags.SAMPLED)
        context = SpanContext(trace_id, span_id, is_remote=True, trace_flags=flags)
        return [Link(context, {"corral.run.id": before[0]})]

    def close(self) -> None:
        """Export what is left, and stop (the runner is done)."""
        self._provider.shutdown()


def _run_ids(pending: threading.local) -> IdGenerator:
    """The provider's id generator: the ids `pending.ids` holds (set on the lane's thread
    just before its span starts), else random ones (a span not of a run)."""
    from opentelemetry.sdk.trace.id_generator import IdGenerator, RandomIdGenerator

    class RunIds(IdGenerator):
        """A run's ids when one is pending on this thread; random ones otherwise."""

        def __init__(self) -> None:
            self._random = RandomIdGenerator()

        def generate_trace_id(self) -> int:
            """The pending run's trace id."""
            ids = getattr(pending, "ids", None)
            return self._random.generate_trace_id() if ids is None else int(ids[0])

        def generate_span_id(self) -> int:
            """The pending run's span id, which uses the pair up."""
            ids = getattr(pending, "ids", None)
            pending.ids = None  # the trace id is asked for first: the pair is used up
            return self._random.generate_span_id() if ids is None else int(ids[1])

    return RunIds()


def start(environ: Mapping[str, str], agent: AgentSetup, *, worker: str) -> RunTracer:
    """The tracer of a runner whose environment `check` passed: to the exporters
    OTEL_TRACES_EXPORTER names (otlp when it names none), which read their own OTEL_*
    settings (endpoint, headers, timeout)."""
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter

    exporters: list[SpanExporter] = []
    for name in _exporters(environ) or ("otlp",):
        if name == "otlp":
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
                OTLPSpanExporter,
            )

            exporters.append(OTLPSpanExporter())
        elif name == "console":
            exporters.append(ConsoleSpanExporter())
    return RunTracer(exporters, agent, worker=worker)
