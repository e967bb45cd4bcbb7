"""`[notify] command` is told of `review.stale`, once, by a real command."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import dataclasses
import json
import logging
import sys
from pathlib import Path

from tests.runtime.conftest import wait_until

import corral
from corral import FakeClock, NewTask, NewWorker, Settings, Store
from corral.runtime.pool.notify import Command, NoticeFilter, Notifier

# Appends the event it reads on stdin, with its notice kind, to the file named by argv[1].
RECORD = (
    "import json, os, sys; ev = json.load(sys.stdin); "
    "open(sys.argv[1], 'a').write(json.dumps([os.environ['CORRAL_NOTICE'], ev['name']]) + '\\n')"
)


def test_the_notify_command_sees_a_stale_review_once(
    store: Store, clock: FakeClock, settings: Settings, tmp_path: Path
) -> None:
    """Two reconcile passes past review_stale_after: the command runs once, for review.stale."""
    settings = dataclasses.replace(settings, review_stale_after_s=60.0)
    task = corral.enqueue(store, NewTask(title="t", requires_review=True), settings=settings)
    spec = NewWorker(name="w", hostname="h", pid=1)
    worker = corral.register(store, spec, settings=settings).worker
    claim = corral.claim(store, task.id, worker.id, settings=settings)
    corral.complete(store, task.id, token=claim.token)
    seen = tmp_path / "notices.jsonl"
    argv = (sys.executable, "-c", RECORD, str(seen))
    only = NoticeFilter(kinds=("review.stale",))  # its silent worker is declared dead too
    log = logging.getLogger("test-notify")
    notifier = Notifier(store, [Command(argv, {})], leading=lambda: True, log=log, only=only)
    try:
        clock.advance(61)
        for _ in range(2):
            corral.reconcile_once(store, settings=settings)
        wait_until(seen.exists, timeout_s=10)
    finally:
        notifier.stop()
        notifier.join()
    lines = [json.loads(line) for line in seen.read_text().splitlines()]
    assert [["review.stale", "review.stale"]] == lines
