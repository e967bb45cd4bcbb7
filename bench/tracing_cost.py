"""Traces' cost to a runner (runtime/worker/tracing.py), off and on, beside a run of `true`.

- a run of `true`: executor.run_command of `true` with its output files, the least a task
  run costs (median of --runs); the yardstick both sides are divided by.
- off (no OTEL_* variable): what a run's path gains, `agent_resource` (the agent's
  OTEL_RESOURCE_ATTRIBUTES) and the lane's `is None`, timed over many calls; and the
  opentelemetry modules a fresh interpreter has after importing the runner's modules (0).
  Target: under 1% of a run of `true`.
- on: RunTracer.ended for a run claimed on a SQLite store (the store read of the task's
  runs for the link, the span made and handed to the batch processor), to an exporter
  that drops what it is given, median of --runs; and the worker's one-time start-up,
  importing the SDK and the OTLP exporter and building the tracer, in a fresh interpreter.
  Target: a span under 1 ms (an agent's run lasts minutes).

    .venv/bin/python bench/tracing_cost.py [--runs 300]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from corral import NewTask, NewWorker, Settings, SystemClock, enqueue, register
from corral.foundation.logs import logger
from corral.model.agents import BUILT_IN
from corral.model.exchange import Action, ClaimAsk, Report, RunStart
from corral.model.runs import RunOutcome
from corral.runtime.worker.agent_runs import AgentSetup
from corral.runtime.worker.config import Workplace
from corral.runtime.worker.executor import CommandSpec, run_command
from corral.runtime.worker.reports import Done, Ending
from corral.runtime.worker.tracing import RunTracer, agent_resource
from corral.usecases import claims
from measure import Verdicts, banner, new_store, table, temp_dir, us

CALLS = 100_000
STARTUP = """
import time
started = time.perf_counter()
from corral.model.agents import BUILT_IN
from corral.runtime.worker.agent_runs import AgentSetup
from corral.runtime.worker import tracing
tracer = tracing.start({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"},
                       AgentSetup(profile=BUILT_IN["claude"]), worker="bench")
print(time.perf_counter() - started)
"""
OFF = """
import json, sys
import corral.runtime.worker.assembly, corral.runtime.worker.lanes
print(json.dumps([m for m in sys.modules if m.startswith("opentelemetry")]))
"""


class Dropped(SpanExporter):
    """An exporter that takes every span and keeps none."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        """Nothing to release."""


def true_run_s(folder: str, runs: int) -> float:
    """A run of `true` through the executor, median seconds."""
    times = []
    for n in range(runs):
        spec = CommandSpec(argv=("true",), stdin_text=None, env=dict(os.environ), cwd=folder,
                           transcript_path=f"{folder}/{n}.out", stderr_path=f"{folder}/{n}.err",
                           run_id=f"r-{n}")  # fmt: skip
        began = time.perf_counter()
        run_command(spec, clock=SystemClock(), stop=lambda: None)
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def off_s() -> float:
    """What a run's path gains with traces off: agent_resource and one `is None`."""
    tracer = None
    began = time.perf_counter()
    for n in range(CALLS):
        agent_resource("team=search", task_id="t-01JABCDEFGHJK", run_id=f"r-{n}")
        if tracer is not None:
            raise AssertionError
    return (time.perf_counter() - began) / CALLS


def span_s(folder: str, runs: int) -> float:
    """RunTracer.ended for a run claimed on a SQLite store, median seconds."""
    store = new_store(os.path.join(folder, "corral.db"))
    worker = register(store, NewWorker(name="w", hostname="h", pid=None), settings=Settings())
    place = Workplace(store=store, worker_id=worker.worker.id, settings=Settings(),
                      clock=SystemClock(), log=logger("bench"))  # fmt: skip
    agent = AgentSetup(profile=BUILT_IN["claude"], model="claude-sonnet-4-5")
    tracer = RunTracer([Dropped()], agent, worker="w")
    usage = {"input_tokens": 12, "output_tokens": 34, "cache_read_tokens": 7800,
             "cache_write_tokens": 560, "cost_usd": 0.0421}  # fmt: skip
    times = []
    for n in range(runs):
        enqueue(store, NewTask(title=f"t{n}"))
        ask = ClaimAsk(limit=1, run=RunStart(command=("claude",), cwd=folder))
        (held,) = claims.exchange(store, worker.worker.id, ask=ask, settings=Settings()).held
        done = Done(ending=Ending.EXITED, success=True, exit_code=0, usage=usage,
                    session_id="s-1", model="claude-sonnet-4-5")  # fmt: skip
        report = Report.of(held, Action.COMPLETE, RunOutcome.DONE, usage=usage)
        began = time.perf_counter()
        tracer.ended(place, held, done, report, started_at=place.clock.now())
        times.append(time.perf_counter() - began)
        store.claims.exchange(worker.worker.id, reports=[report])
    tracer.close()
    store.close()
    return statistics.median(times)


def fresh(script: str) -> str:
    """What `script` prints in a fresh interpreter."""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True)  # fmt: skip
    return done.stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    args = parser.parse_args()
    banner("tracing_cost", "a run's span, off and on, beside a run of `true`")
    with temp_dir("tracing") as folder:
        true_s = true_run_s(folder, args.runs)
        off = off_s()
        on = span_s(folder, args.runs)
    startup_s = float(fresh(STARTUP))
    off_modules = json.loads(fresh(OFF))
    print(table(["figure", "us", "of a run of true"], [
        ["a run of `true` (executor)", us(true_s), "100%"],
        ["off: added to a run's path", f"{off * 1e6:.2f}", f"{off / true_s:.3%}"],
        ["on: one span (RunTracer.ended)", us(on), f"{on / true_s:.1%}"],
        ["on: worker start-up, once", us(startup_s), ""],
    ]))  # fmt: skip
    print(f"\nopentelemetry modules imported with traces off: {len(off_modules)}")
    verdicts = Verdicts("tracing_cost")
    verdicts.check("off: under 1% of a run of true", f"{off / true_s:.3%}", off < 0.01 * true_s)
    verdicts.check("off: no opentelemetry module", str(len(off_modules)), not off_modules)
    verdicts.check("on: a span under 1 ms", f"{on * 1000:.3f} ms", on < 0.001)
    return verdicts.finish()


if __name__ == "__main__":
    sys.exit(main())
