"""The pure parts of runtime/worker/tracing.py: when OTEL_* ask for traces, which values a
runner refuses, the agent's OTEL_RESOURCE_ATTRIBUTES, usage as the GenAI conventions
count it, and the ids a run's span is given. None of them imports OpenTelemetry."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from corral.foundation.errors import InvalidInput
from corral.runtime.worker.tracing import (
    agent_resource,
    check,
    configured,
    ids_of,
    usage_attributes,
)

ENDPOINT = "http://127.0.0.1:4318"


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": ENDPOINT}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": ENDPOINT + "/v1/traces"}, True),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": ""}, False),
        ({"OTEL_TRACES_EXPORTER": "console"}, True),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": ENDPOINT}, False),
        ({"OTEL_TRACES_EXPORTER": "none, console"}, True),
        ({"OTEL_SDK_DISABLED": "TRUE", "OTEL_EXPORTER_OTLP_ENDPOINT": ENDPOINT}, False),
        ({"OTEL_SDK_DISABLED": "false", "OTEL_EXPORTER_OTLP_ENDPOINT": ENDPOINT}, True),
        ({"OTEL_SERVICE_NAME": "corral", "OTEL_RESOURCE_ATTRIBUTES": "a=b"}, False),
    ],
)
def test_traces_are_asked_for_by_an_exporter_or_an_endpoint_unless_disabled(
    environ: dict[str, str], expected: bool
) -> None:
    """An exporter other than none, or an OTLP endpoint, unless OTEL_SDK_DISABLED=true;
    a service name or resource attributes alone ask for nothing."""
    assert expected == configured(environ)


@pytest.mark.parametrize(
    ("environ", "field"),
    [
        ({"OTEL_TRACES_EXPORTER": "jaeger"}, "OTEL_TRACES_EXPORTER"),
        ({"OTEL_TRACES_EXPORTER": "otlp,zipkin"}, "OTEL_TRACES_EXPORTER"),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": ENDPOINT, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
            "OTEL_EXPORTER_OTLP_PROTOCOL",
        ),
        (
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": ENDPOINT,
                "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
                "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json",
            },
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        ),
    ],
)
def test_an_exporter_or_protocol_corral_lacks_is_refused_naming_its_variable(
    environ: dict[str, str], field: str
) -> None:
    """InvalidInput (exit 2) names the variable; the traces' own protocol wins over the
    general one, as the specification orders them."""
    with pytest.raises(InvalidInput) as refused:
        check(environ)
    assert field == refused.value.field


def test_what_corral_exports_with_passes_the_check() -> None:
    """otlp over http/protobuf, console, and otlp with a gRPC protocol it is not using."""
    assert check(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": ENDPOINT, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}
    )
    assert check({"OTEL_TRACES_EXPORTER": "console", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})
    assert not check({})


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (None, "corral.task.id=t-1,corral.run.id=r-1"),
        ("", "corral.task.id=t-1,corral.run.id=r-1"),
        ("team=search", "team=search,corral.task.id=t-1,corral.run.id=r-1"),
        (
            "team=search, corral.run.id=old,corral.task.id = older",
            "team=search,corral.task.id=t-1,corral.run.id=r-1",
        ),
    ],
)
def test_the_agent_s_resource_attributes_are_the_user_s_with_the_task_and_run_ids(
    given: str | None, expected: str
) -> None:
    """The user's attributes kept, corral's ids last and never the user's stale ones."""
    assert expected == agent_resource(given, task_id="t-1", run_id="r-1")


def test_an_id_the_variable_cannot_hold_as_it_is_is_percent_encoded() -> None:
    """A comma or an equals sign would split the variable's list: encoded."""
    assert "corral.task.id=a%2Cb%3Dc,corral.run.id=r%20" == agent_resource(
        None, task_id="a,b=c", run_id="r "
    )


def test_input_tokens_count_the_cached_ones_and_each_count_keeps_its_name() -> None:
    """corral's uncached input + cache reads + cache writes; output, the cache counts and
    the cost under their names; a figure not reported is left out, never 0."""
    usage = {
        "input_tokens": 12,
        "output_tokens": 34,
        "cache_read_tokens": 7800,
        "cache_write_tokens": 560,
        "cost_usd": 0.0421,
    }
    assert {
        "gen_ai.usage.input_tokens": 8372,
        "gen_ai.usage.output_tokens": 34,
        "gen_ai.usage.cache_read.input_tokens": 7800,
        "gen_ai.usage.cache_creation.input_tokens": 560,
        "corral.usage.cost_usd": 0.0421,
    } == usage_attributes(usage)
    assert {"gen_ai.usage.output_tokens": 5} == usage_attributes(
        {"output_tokens": 5, "input_tokens": "many", "cost_usd": True}
    )
    assert {} == usage_attributes(None)


def test_a_run_s_ids_are_its_own_stable_and_valid() -> None:
    """The same run id gives the same ids in every process; another run, others; none 0."""
    trace_id, span_id = ids_of("r-1")
    assert (trace_id, span_id) == ids_of("r-1")
    assert ids_of("r-2") != (trace_id, span_id)
    assert 0 < trace_id < 1 << 128 and 0 < span_id < 1 << 64
    script = "from corral.runtime.worker.tracing import ids_of; print(*ids_of('r-1'))"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert f"{trace_id} {span_id}\n" == done.stdout


def test_the_module_imports_nothing_of_opentelemetry() -> None:
    """Importing tracing.py (as every command runner does) loads no opentelemetry module."""
    script = (
        "import sys, corral.runtime.worker.tracing\n"
        "print([m for m in sys.modules if m.startswith('opentelemetry')])"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert "[]\n" == done.stdout


def test_doctor_says_whether_runs_are_traced_where_to_and_what_a_worker_refuses() -> None:
    """Off, on (an endpoint by its scheme and host: no credential shown), and a warning
    naming the variable a worker of an agent would refuse."""
    from corral.runtime.doctor import traces

    assert ("ok", "off: no OTEL_* variable asks for them") == _shown(traces({}))
    on = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "https://user:secret@collector:4318/otlp",
        "OTEL_TRACES_EXPORTER": "otlp,console",
    }
    assert ("ok", "on: otlp to https://collector:4318, console (standard output)") == _shown(
        traces(on)
    )
    status, detail = _shown(traces({"OTEL_TRACES_EXPORTER": "zipkin"}))
    assert ("warn", True) == (status, detail.startswith("OTEL_TRACES_EXPORTER: expected"))


def _shown(check: Any) -> tuple[str, str]:
    return check.status, check.detail
