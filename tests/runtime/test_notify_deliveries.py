"""`[notify]`'s deliveries: every kind of notice told once on each channel (a webhook and
an ntfy topic on a real loopback server, a real command), within 5 s, retried across an
endpoint that is down, given up and recorded, filtered, and never carrying a secret
(runtime/pool/notify.py, deliveries.py, ntfy.py)."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from tests.runtime.conftest import wait_until

import corral
from corral import Event, EventFilter, NewTask, NewWorker, Settings, Store
from corral.foundation.clock import FakeClock
from corral.runtime.pool.deliveries import Deliveries
from corral.runtime.pool.notify import Command, NoticeFilter, Notifier, Posted
from corral.runtime.pool.ntfy import Ntfy
from corral.runtime.pool.webhook import Webhook
from corral.usecases.reconcile import recover_worker

SECRET = "s3cr3t-pw"  # noqa: S105 - a made-up password no payload may carry
HOOK = "/hooks/T000/XXXX-path-token"
TOPIC = "/corral-alerts-q7x"
# Appends each notice it reads on stdin, with its kind, to the file named by argv[1].
RECORD = (
    "import json, os, sys; ev = json.load(sys.stdin); "
    "open(sys.argv[1], 'a').write(json.dumps([os.environ['CORRAL_NOTICE'], ev]) + '\\n')"
)
DELIVERY_NAMES = ("notify.delivered", "notify.gave_up")


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float  # time.monotonic() on receipt


@dataclass
class Receiver:
    """A loopback HTTP server that records each POST and can go down and come back on
    its port (a refused connection while down)."""

    port: int = 0
    seen: list[Received] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None

    def url(self, path: str) -> str:
        return f"http://alice:{SECRET}@127.0.0.1:{self.port}{path}"

    def at(self, path: str) -> list[Received]:
        return [r for r in self.seen if r.path == path]

    def up(self) -> None:
        seen = self.seen

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                seen.append(Received(self.path, dict(self.headers), body, time.monotonic()))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                """Quiet: the test reads `seen`."""

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def down(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    found.up()
    yield found
    found.down()


@pytest.fixture
def log() -> Iterator[tuple[logging.Logger, list[str]]]:
    """A logger whose formatted lines are kept."""
    kept: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            kept.append(record.getMessage())

    logger = logging.getLogger(f"test-deliveries-{id(kept)}")
    logger.addHandler(Keep())
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    yield logger, kept


def _deliveries(store: Store) -> list[Event]:
    return store.events.list_events(EventFilter(names=DELIVERY_NAMES, limit=500))


def _claimed(store: Store, settings: Settings, spec: NewTask) -> tuple[str, int]:
    task = corral.enqueue(store, spec, settings=settings)
    spec_w = NewWorker(name=f"w-{task.id}", pid=None)
    worker = corral.register(store, spec_w, settings=settings).worker
    return task.id, corral.claim(store, task.id, worker.id, settings=settings).token


def _no_secret(text: str) -> bool:
    return not any(s in text for s in (SECRET, HOOK, TOPIC, "alice"))


def test_each_notice_goes_out_once_on_each_channel_within_5_s(
    store: Store, settings: Settings, receiver: Receiver, tmp_path: Path, log
) -> None:
    """Routine successes (a task done, a claim, an account's cap set) tell nobody; a task
    waiting, failed for good, ready for review, a worker dead, an account parked and
    unparked are each told once on the webhook, the ntfy topic and the command, within
    5 s of the write, with no claim token and no URL secret; each delivery is one
    `notify.delivered` event naming its notice and event."""
    logger, kept = log
    commanded = tmp_path / "notices.jsonl"
    channels = [
        Posted(Webhook(receiver.url(HOOK))),
        Ntfy(receiver.url(TOPIC)),
        Command((sys.executable, "-c", RECORD, str(commanded)), {}),
    ]
    notifier = Notifier(store, channels, leading=lambda: True, log=logger)
    written: dict[str, float] = {}
    try:
        done, token = _claimed(store, settings, NewTask(title="routine"))
        corral.complete(store, done, token=token)
        store.providers.set_provider("claude", max_running=2, actor="t")

        waits, token = _claimed(store, settings, NewTask(title="asks"))
        corral.wait(store, waits, reason="budget: spent", token=token)
        written["task.waiting"] = time.monotonic()
        fails, token = _claimed(store, settings, NewTask(title="fails", max_attempts=1))
        corral.fail(store, fails, error="boom", token=token, settings=settings)
        written["task.failed"] = time.monotonic()
        reviewed, token = _claimed(store, settings, NewTask(title="r", requires_review=True))
        corral.complete(store, reviewed, token=token)
        written["review.requested"] = time.monotonic()
        dead = corral.register(store, NewWorker(name="d", pid=None), settings=settings).worker
        recover_worker(store, dead.id, reason="process gone", settings=settings)
        written["worker.dead"] = time.monotonic()
        until = store.now() + timedelta(hours=1)
        store.providers.park_provider("claude", until=until, reason="limit", actor="t")
        written["provider.parked"] = time.monotonic()
        store.providers.set_provider("claude", unpark=True, actor="t")
        written["provider.unparked"] = time.monotonic()

        told = 3 * len(written)
        wait_until(lambda: len(receiver.seen) == 2 * len(written), timeout_s=10)
        wait_until(lambda: len(_deliveries(store)) == told, timeout_s=10)
    finally:
        notifier.stop()
        notifier.join()

    kinds = sorted(written)
    for path in (HOOK, TOPIC):
        got = receiver.at(path)
        assert kinds == sorted(r.headers["X-Corral-Notice"] for r in got)
        late = {r.headers["X-Corral-Notice"]: r.at - written[r.headers["X-Corral-Notice"]]
                for r in got}  # fmt: skip
        assert all(seconds < 5.0 for seconds in late.values()), late
    posted = {r.headers["X-Corral-Notice"]: json.loads(r.body) for r in receiver.at(HOOK)}
    assert (waits, fails, reviewed, dead.id) == (
        posted["task.waiting"]["task_id"],
        posted["task.failed"]["task_id"],
        posted["review.requested"]["task_id"],
        posted["worker.dead"]["worker_id"],
    )
    assert all("token" not in body for body in posted.values())
    lines = [json.loads(line) for line in commanded.read_text().splitlines()]
    assert kinds == sorted(kind for kind, _ in lines)
    assert all("token" not in body for _, body in lines)
    published = {r.headers["X-Corral-Notice"]: r for r in receiver.at(TOPIC)}
    failed = published["task.failed"]
    assert (f"{fails}: failed for good (boom)", "corral: task.failed", "high", "x") == (
        failed.body.decode(),
        failed.headers["Title"],
        failed.headers["Priority"],
        failed.headers["Tags"],
    )
    assert "text/plain; charset=utf-8" == failed.headers["Content-Type"]

    recorded = _deliveries(store)
    assert {"notify.delivered"} == {e.name for e in recorded}
    by_event = {
        (e.data or {})["event_id"]: e for e in recorded if (e.data or {})["channel"] == "url"
    }
    assert {int(r.headers["X-Corral-Event-Id"]) for r in receiver.at(HOOK)} == set(by_event)
    assert sorted(["command", "ntfy", "url"] * len(written)) == sorted(
        (e.data or {})["channel"] for e in recorded
    )
    everything = [r.body.decode() for r in receiver.seen]
    everything += [json.dumps(e.to_dict()) for e in recorded] + kept
    assert _no_secret("\n".join(everything))


HELD = "import os, sys, time\nwhile not os.path.exists(sys.argv[1]): time.sleep(0.01)"


def test_a_command_that_takes_its_time_holds_up_no_other_channel(
    store: Store, settings: Settings, receiver: Receiver, tmp_path: Path, log
) -> None:
    """The command first among the channels, held until the test lets it go: both notices
    reach the webhook meanwhile (each channel sends on a thread of its own), and the
    command is told of both once it goes on."""
    logger, _ = log
    gate = tmp_path / "go"
    channels = [
        Command((sys.executable, "-c", HELD, str(gate)), {}),
        Posted(Webhook(receiver.url(HOOK))),
    ]
    notifier = Notifier(store, channels, leading=lambda: True, log=logger)
    try:
        for title in ("one", "two"):
            task_id, token = _claimed(store, settings, NewTask(title=title, max_attempts=1))
            corral.fail(store, task_id, error="boom", token=token, settings=settings)
        wait_until(lambda: len(receiver.seen) == len(_deliveries(store)) == 2, timeout_s=10)
        assert ["url", "url"] == [(e.data or {})["channel"] for e in _deliveries(store)]
        gate.touch()
        wait_until(lambda: len(_deliveries(store)) == 4, timeout_s=10)
    finally:
        gate.touch()
        notifier.stop()
        notifier.join()
    assert {"notify.delivered"} == {e.name for e in _deliveries(store)}


@pytest.mark.parametrize("down_s", [1.5])
def test_a_receiver_that_is_down_gets_its_notices_once_it_is_back(
    store: Store, settings: Settings, receiver: Receiver, tmp_path: Path, log, down_s: float
) -> None:
    """With the webhook down for `down_s` (10 s in the issue, which passes too; short here,
    with the injected backoff scaled to it, to keep the test short), its notices are
    retried until it is back and then told once each, while the command, later in the
    queue, is told at once all along."""
    logger, kept = log
    commanded = tmp_path / "notices.jsonl"
    channels = [
        Posted(Webhook(receiver.url(HOOK))),
        Command((sys.executable, "-c", RECORD, str(commanded)), {}),
    ]
    backoff = tuple(down_s * f for f in (0.15, 0.3, 0.6, 1.2))  # 2.25 x `down_s` in all
    receiver.down()
    notifier = Notifier(store, channels, leading=lambda: True, log=logger, backoff_s=backoff)
    try:
        went_down = time.monotonic()
        waits, token = _claimed(store, settings, NewTask(title="asks"))
        corral.wait(store, waits, reason="refused: Bash", token=token)
        fails, token = _claimed(store, settings, NewTask(title="fails", max_attempts=1))
        corral.fail(store, fails, error="boom", token=token, settings=settings)
        wait_until(lambda: commanded.exists() and len(commanded.read_text().splitlines()) == 2,
                   timeout_s=5)  # fmt: skip
        # Told while the webhook's notices were still being retried, not after they gave up
        # (events, not a stopwatch: a busy machine takes its time over the two claims).
        webhook = [e for e in _deliveries(store) if (e.data or {})["channel"] == "url"]
        assert ([], []) == (webhook, receiver.seen)
        time.sleep(max(0.0, down_s - (time.monotonic() - went_down)))  # the outage itself
        receiver.up()  # the next retry comes within the longest wait, 1.2 x `down_s`
        wait_until(lambda: len(receiver.seen) == 2, timeout_s=5 + 1.2 * down_s)
        wait_until(lambda: len(_deliveries(store)) == 4, timeout_s=10)
    finally:
        notifier.stop()
        notifier.join()
    assert ["task.failed", "task.waiting"] == sorted(
        r.headers["X-Corral-Notice"] for r in receiver.seen
    )
    recorded = [e for e in _deliveries(store) if (e.data or {})["channel"] == "url"]
    assert {"notify.delivered"} == {e.name for e in recorded}
    assert all((e.data or {})["attempts"] > 1 for e in recorded)
    assert any(line.startswith("notify.failed") for line in kept)
    assert _no_secret("\n".join(kept))


def test_a_notice_is_given_up_once_its_retries_run_out(
    store: Store, settings: Settings, receiver: Receiver, log
) -> None:
    """An endpoint that never comes back: after the first try and one per wait of the
    backoff, one `notify.gave_up` event, its reason the last error, no secret in it."""
    logger, _ = log
    receiver.down()
    hook = Posted(Webhook(receiver.url(HOOK)))
    notifier = Notifier(store, [hook], leading=lambda: True, log=logger, backoff_s=(0.05, 0.1))
    try:
        waits, token = _claimed(store, settings, NewTask(title="asks"))
        corral.wait(store, waits, reason="refused: Bash", token=token)
        wait_until(lambda: len(_deliveries(store)) == 1, timeout_s=10)
    finally:
        notifier.stop()
        notifier.join()
    [gave_up] = _deliveries(store)
    assert ("notify.gave_up", waits, 3, "task.waiting", "url") == (
        gave_up.name,
        gave_up.task_id,
        (gave_up.data or {})["attempts"],
        (gave_up.data or {})["notice"],
        (gave_up.data or {})["channel"],
    )
    assert "refused" in (gave_up.reason or "").lower()
    assert _no_secret(json.dumps(gave_up.to_dict()))


def test_notices_are_filtered_by_kind_and_queue(
    store: Store, settings: Settings, receiver: Receiver, log
) -> None:
    """`[notify] events = ["task.failed", "worker.dead"]`, `queues = ["ops"]`: a task
    failed in another queue and a task waiting in ops are not told; a task failed in ops
    and a worker dead (no queue) are."""
    logger, _ = log
    only = NoticeFilter(kinds=("task.failed", "worker.dead"), queues=("ops",))
    hook = Posted(Webhook(receiver.url(HOOK)))
    notifier = Notifier(store, [hook], leading=lambda: True, log=logger, only=only)
    try:
        elsewhere, token = _claimed(store, settings, NewTask(title="f", max_attempts=1))
        corral.fail(store, elsewhere, error="boom", token=token, settings=settings)
        waits, token = _claimed(store, settings, NewTask(title="w", queue="ops"))
        corral.wait(store, waits, reason="question: which?", token=token)
        ops, token = _claimed(store, settings, NewTask(title="f", queue="ops", max_attempts=1))
        corral.fail(store, ops, error="boom", token=token, settings=settings)
        dead = corral.register(store, NewWorker(name="d", pid=None), settings=settings).worker
        recover_worker(store, dead.id, reason="process gone", settings=settings)
        wait_until(lambda: len(receiver.seen) == 2, timeout_s=10)
    finally:
        notifier.stop()
        notifier.join()
    told: list[dict[str, Any]] = [json.loads(r.body) for r in receiver.seen]
    assert [("task.failed", ops), ("worker.dead", None)] == [
        (b["name"], b["task_id"]) for b in told
    ]


def test_past_its_bound_the_queue_gives_a_notice_up_at_once(
    store: Store, settings: Settings, receiver: Receiver, log
) -> None:
    """One delivery waiting for its retry fills a queue of one: the next notice is given up
    at once (`too many notices waiting`) rather than kept."""
    logger, _ = log
    receiver.down()
    first, token = _claimed(store, settings, NewTask(title="a"))
    corral.wait(store, first, reason="question: a?", token=token)
    second, token = _claimed(store, settings, NewTask(title="b"))
    corral.wait(store, second, reason="question: b?", token=token)
    waited = store.events.list_events(EventFilter(names=("task.waiting",)))
    hook = Posted(Webhook(receiver.url(HOOK)))
    deliveries = Deliveries(store, log=logger, backoff_s=(60.0,), max_pending=1)
    try:
        deliveries.put("task.waiting", waited[0], hook)
        wait_until(lambda: any(line.startswith("notify.failed") for line in log[1]), 10)
        deliveries.put("task.waiting", waited[1], hook)
        [gave_up] = _deliveries(store)
    finally:
        deliveries.stop()
    assert (second, "too many notices waiting", 1) == (
        gave_up.task_id,
        gave_up.reason,
        deliveries.pending(),
    )


def test_a_crash_looping_slot_is_told_dead_once_per_window(
    store: Store, settings: Settings, receiver: Receiver, log
) -> None:
    """Three workers named `slot-1` declared dead one after another (a slot's incarnations)
    and one named `slot-2`: `slot-1` is told once, `slot-2` once; once `dead_every` has
    passed (a fake clock), the next death of `slot-1` is told with the two held back."""
    logger, kept = log
    clock = FakeClock()
    hook = Posted(Webhook(receiver.url(HOOK)))
    notifier = Notifier(
        store, [hook], leading=lambda: True, log=logger, dead_every_s=600.0, clock=clock
    )

    def dies(name: str) -> str:
        worker = corral.register(store, NewWorker(name=name, pid=None), settings=settings)
        recover_worker(store, worker.worker.id, reason="process gone", settings=settings)
        return worker.worker.id

    try:
        first = dies("slot-1")
        for _ in range(2):
            dies("slot-1")
        other = dies("slot-2")
        wait_until(lambda: sum("notify.dead_held" in line for line in kept) == 2, timeout_s=10)
        wait_until(lambda: len(receiver.seen) == 2, timeout_s=10)
        clock.advance(600.0)
        last = dies("slot-1")
        wait_until(lambda: len(receiver.seen) == 3, timeout_s=10)
    finally:
        notifier.stop()
        notifier.join()
    told = [json.loads(r.body) for r in receiver.seen]
    assert [first, other, last] == [b["worker_id"] for b in told]
    assert [None, None, 2] == [(b["data"] or {}).get("held_back") for b in told]
