"""Commit to webhook: how soon `[notify] url` tells of a task that waits for a person.

For each store, a notifier (runtime/pool/notify.py, as the leading orchestrator runs it:
its follower polling every half second, its delivery thread POSTing) posts to a webhook
on loopback, a real HTTP server in this process. A writer process makes --notices tasks
wait for a person (enqueue, register, claim, `wait`: one `task.waiting` each), pausing
a random 0 to 300 ms between them so the writes fall anywhere in the notifier's poll,
with routine events between them (a task claimed and completed: no notice). The writer
notes time.time() right after each `wait` returns (its commit); the server notes
time.time() when the POST arrives. One machine, one clock: the difference is the
latency, commit to receipt. The target is the issue's: p95 under 5 s. With --command-s S,
a `[notify] command` that takes S seconds per notice is a channel beside the webhook, first
in the list: the webhook's latency must not grow with it.

    .venv/bin/python bench/notify_latency.py [--notices 60] [--stores sqlite postgresql]
        [--command-s 0]
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from corral import open_store
from corral.runtime.pool.notify import POLL_S, Command, Notifier, Posted
from corral.runtime.pool.webhook import Webhook
from measure import Spread, Verdicts, banner, ms, store_url, table, temp_dir

P95_TARGET_S = 5.0
TIMEOUT_S = 60.0

WRITER = """
import json, random, sys, time
import corral
from corral import NewTask, NewWorker, open_store

url, count = sys.argv[1], int(sys.argv[2])
rng = random.Random(7)
done = []
with open_store(url) as store:
    worker = corral.register(store, NewWorker(name="bench", pid=None)).worker
    for n in range(count):
        routine = corral.enqueue(store, NewTask(title=f"routine {n}"))
        claim = corral.claim(store, routine.id, worker.id)
        corral.complete(store, routine.id, token=claim.token)
        task = corral.enqueue(store, NewTask(title=f"asks {n}"))
        claim = corral.claim(store, task.id, worker.id)
        corral.wait(store, task.id, reason="question: which one?", token=claim.token)
        done.append((task.id, time.time()))
        time.sleep(rng.uniform(0, 0.300))
print(json.dumps(done))
"""


class Receiver:
    """A loopback webhook: task id -> time.time() of its POST's arrival."""

    def __init__(self) -> None:
        self.seen: dict[str, float] = {}
        seen = self.seen

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                seen.setdefault(json.loads(body)["task_id"], time.time())
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                """Quiet."""

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def measure(dialect: str, notices: int, command_s: float) -> tuple[list[float], int]:
    """The commit-to-receipt latencies (s), and how many notices arrived in all."""
    log = logging.getLogger("bench-notify")
    log.addHandler(logging.NullHandler())
    log.propagate = False
    with temp_dir("notify") as folder, store_url(dialect, folder) as url:
        store = open_store(url)
        receiver = Receiver()
        channels: list[Command | Posted] = [Posted(Webhook(receiver.url()))]
        if command_s > 0:
            slow = f"import sys, time; sys.stdin.read(); time.sleep({command_s})"
            channels.insert(0, Command((sys.executable, "-c", slow), {}))
        notifier = Notifier(store, channels, leading=lambda: True, log=log)
        try:
            out = subprocess.run(
                [sys.executable, "-c", WRITER, url, str(notices)],
                capture_output=True,
                text=True,
                check=True,
                timeout=300,
            ).stdout
            committed = dict(json.loads(out))
            deadline = time.monotonic() + TIMEOUT_S
            while len(receiver.seen) < len(committed) and time.monotonic() < deadline:
                time.sleep(0.01)
        finally:
            notifier.stop()
            notifier.join()
            receiver.close()
            store.close()
    if set(receiver.seen) - set(committed):
        raise RuntimeError("a notice arrived for a routine success")
    latencies = [receiver.seen[t] - at for t, at in committed.items() if t in receiver.seen]
    return latencies, len(receiver.seen)


def main() -> int:
    """Measure each store, print the spreads, check the target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notices", type=int, default=60, help="tasks made to wait")
    parser.add_argument("--stores", nargs="+", default=["sqlite", "postgresql"])
    parser.add_argument(
        "--command-s", type=float, default=0.0, help="a command channel this slow beside it"
    )
    opts = parser.parse_args()
    banner("notify: commit to webhook receipt", __doc__.split("\n\n")[1])
    v = Verdicts("notify_latency")
    rows = []
    for dialect in opts.stores:
        latencies, arrived = measure(dialect, opts.notices, opts.command_s)
        spread = Spread.of(latencies)
        rows.append(
            [dialect, opts.notices, arrived, ms(spread.p50_s), ms(spread.p95_s), ms(spread.max_s)]
        )
        v.check(f"{dialect}: every notice arrived", f"{arrived}/{opts.notices}",
                arrived == opts.notices)  # fmt: skip
        v.check(f"{dialect} p95 < {P95_TARGET_S:g} s", f"{ms(spread.p95_s)} ms",
                spread.p95_s < P95_TARGET_S)  # fmt: skip
    beside = f"; a {opts.command_s:g} s command beside it" if opts.command_s > 0 else ""
    print(f"commit to webhook receipt (ms); the notifier polls every {POLL_S:g} s{beside}")
    print(table(["store", "notices", "arrived", "p50", "p95", "max"], rows))
    return v.finish()


if __name__ == "__main__":
    sys.exit(main())
