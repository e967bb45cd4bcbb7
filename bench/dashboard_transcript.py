"""A task page whose run left a 50 MB transcript, against one whose transcript is 10 KB
(issue 18: a transcript of 50 MB opens on its last page and pages backwards without
loading the whole file; every page under 100 ms at p95).

One SQLite store holds two tasks, each with a run whose transcript is Claude Code
stream-json (assistant text, tool calls and their results, repeated to the size). `corral
serve` starts on it (loopback, no token: the dashboard lets a local browser in), and each
page is loaded --samples times over HTTP: the task page (the transcript's last window) and
an earlier window from the middle of the file. Printed: request times (p50, p95) and the
ratio to the small transcript's, and the server's resident memory after the loads: had
the page read the whole file, it would grow by the file's size.

    .venv/bin/python bench/dashboard_transcript.py [--mb 50] [--samples 50]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.request

import psutil

import measure
from corral import NewRun, NewTask, NewWorker, claim, enqueue, register

CORRAL = os.path.join(measure.VENV_BIN, "corral")
P95_S = 0.100
RATIO = 2.0
FLOOR_BYTES = 10_000


def _turns() -> bytes:
    """A few lines of stream-json as an agent writes them: text, a tool call, its result."""
    text = "I will read the failing test first, then fix the parser. " * 4
    lines = [
        {"type": "assistant", "message": {"content": [{"type": "text", "text": text}]}},
        {"type": "assistant", "message": {"content": [
            {"type": "tool_use", "id": "toolu_1", "name": "Bash",
             "input": {"command": "pytest -q tests/test_parser.py"}}]}},
        {"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "toolu_1",
             "content": "F.\n" + "assert parse('a') == 'a'\n" * 6}]}},
    ]  # fmt: skip
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def _transcript(path: str, size: int) -> None:
    block = _turns()
    with open(path, "wb") as out:
        written = 0
        chunk = block * max(1, 65536 // len(block))
        while written < size:
            out.write(chunk)
            written += len(chunk)


def _task_with_transcript(db: str, folder: str, name: str, size: int) -> str:
    path = os.path.join(folder, f"{name}.jsonl")
    _transcript(path, size)
    with measure.new_store(db) as store:
        worker = register(store, NewWorker(name=name)).worker.id
        task = enqueue(store, NewTask(title=f"{name} transcript")).id
        held = claim(store, task, worker)
        store.runs.start_run(
            NewRun(task_id=task, worker_id=worker, token=held.token, attempt=1, prompt="p",
                   command=("claude",), cwd=folder, transcript_path=path, stderr_path=None)
        )  # fmt: skip
    return task


def _times(url: str, samples: int) -> measure.Spread:
    found = []
    for _ in range(samples):
        start = time.perf_counter()
        with urllib.request.urlopen(url, timeout=30) as answer:  # noqa: S310 - http://
            answer.read()
        found.append(time.perf_counter() - start)
    return measure.Spread.of(found)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=50.0)
    parser.add_argument("--samples", type=int, default=50)
    args = parser.parse_args()
    big_bytes = int(args.mb * 1_000_000)
    measure.banner("dashboard transcript", f"{args.mb:g} MB against {FLOOR_BYTES // 1000} KB")
    verdicts = measure.Verdicts("dashboard transcript")
    with measure.temp_dir("dashboard-transcript") as folder:
        db = os.path.join(folder, "corral.db")
        small = _task_with_transcript(db, folder, "small", FLOOR_BYTES)
        big = _task_with_transcript(db, folder, "big", big_bytes)
        with measure.served_loopback(db) as (proc, base):
            server = psutil.Process(proc.pid)
            _times(f"{base}/tasks/{small}", 3)  # the templates compiled, the caches warm
            rss_before = server.memory_info().rss
            pages = {
                "last window": (f"/tasks/{small}", f"/tasks/{big}"),
                "a window in the middle": (
                    f"/tasks/{small}?before={FLOOR_BYTES // 2}",
                    f"/tasks/{big}?before={big_bytes // 2}",
                ),
            }
            rows = []
            for name, (floor_page, big_page) in pages.items():
                floor = _times(base + floor_page, args.samples)
                found = _times(base + big_page, args.samples)
                ratio = found.p95_s / floor.p95_s
                times = [floor.p50_s, floor.p95_s, found.p50_s, found.p95_s]
                rows.append([name, *map(measure.ms, times), f"{ratio:.2f}"])
                verdicts.check(f"{name}: p95 < {measure.ms(P95_S)}", measure.ms(found.p95_s),
                               found.p95_s < P95_S)  # fmt: skip
                verdicts.check(f"{name}: ratio < {RATIO}", f"{ratio:.2f}", ratio < RATIO)
            grown = (server.memory_info().rss - rss_before) / 1e6
    print(measure.table(
        ["page", "p50 10 KB", "p95 10 KB", f"p50 {args.mb:g} MB", f"p95 {args.mb:g} MB",
         "ratio p95"], rows,
    ))  # fmt: skip
    print(f"server RSS grew by {grown:.1f} MB over the loads")
    verdicts.check(
        f"server RSS growth < a tenth of the transcript ({args.mb / 10:g} MB)",
        f"{grown:.1f} MB", grown < args.mb / 10,
    )  # fmt: skip
    return verdicts.finish()


if __name__ == "__main__":
    sys.exit(main())
