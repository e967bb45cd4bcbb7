"""Run every benchmark, one after the other, then summarise their verdicts (`make bench`).

Each script runs in its own process with this interpreter; its output streams through.
Exit code: 0 when every target was met, 1 when one was missed, 2 when a script failed.

    .venv/bin/python bench/run_all.py [claim_cycle cli_latency ...]
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = (
    "claim_cycle",
    "cli_latency",
    "claim_scaling",
    "heartbeat",
    "runner_throughput",
    "runner_overhead",
    "runner_idle",
    "worktree_ops",
    "landing",
    "land_remote",
    "land_queue",
    "orchestrator_throughput",
    "orchestrator_lifecycle",
    "pg_claim_cycle",
    "pg_notify_latency",
    "pg_runner_throughput",
    "status_watch",
    "events_follow",
    "outage_recovery",
    "runner_outage",
    "agent_stream",
    "tracing_cost",
    "limit_park",
    "metrics_scrape",
    "dashboard_pages",
    "dashboard_live",
    "retention_claims",
    "schedule_pass",
    "serve_throughput",
    "serve_handover",
    "serve_idle",
    "serve_startup",
    "mcp_roundtrip",
    "dead_worker_detection",
)
TIMEOUT_S = 900  # pg_runner_throughput drains 20,000 tasks nine times


def run(name: str) -> tuple[int, list[str]]:
    """Run bench/`name`.py, echoing its output; its exit code and its verdict lines."""
    argv = [sys.executable, os.path.join(HERE, f"{name}.py")]
    verdicts: list[str] = []
    with subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, bufsize=1) as proc:
        deadline = time.monotonic() + TIMEOUT_S
        assert proc.stdout is not None  # PIPE was asked for
        try:
            for line in proc.stdout:
                print(line, end="", flush=True)
                if line.rstrip().endswith(("PASS", "MISS")):
                    verdicts.append(line.rstrip())
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{name} ran past {TIMEOUT_S} s")
            proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return proc.returncode, verdicts


def main() -> int:
    """Run the scripts named on the command line, or all of them."""
    names = sys.argv[1:] or list(SCRIPTS)
    if {"-h", "--help"} & set(names):
        print(__doc__.strip())
        print(f"\nbenchmarks: {', '.join(SCRIPTS)}")
        return 0
    unknown = [n for n in names if n not in SCRIPTS]
    if unknown:
        print(f"unknown benchmark {', '.join(unknown)}; choose from {', '.join(SCRIPTS)}")
        return 2
    results = {}
    for name in names:
        print(f"\n######## bench/{name}.py ########", flush=True)
        t0 = time.monotonic()
        results[name] = (*run(name), time.monotonic() - t0)
    print("\n######## summary ########")
    worst = 0
    for name, (code, verdicts, took_s) in results.items():
        state = {0: "all targets met", 1: "target missed"}.get(code, f"FAILED (exit {code})")
        print(f"bench/{name}.py: {state} ({took_s:.0f} s)")
        for line in verdicts:
            print(f"    {line}")
        worst = max(worst, code if code in (0, 1) else 2)
    return worst


if __name__ == "__main__":
    sys.exit(main())
