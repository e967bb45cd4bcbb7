"""A run's outbox as its runner reads it (runtime/worker/outbox.py), on each store: each
line taken in once, in order; a partial last line waits; hostile lines are refused with one
log line and never applied; a file shrunk or replaced is read no further."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

import pytest

import corral
from corral import FakeClock, NewTask, NewWorker, Settings, Store, TaskStatus
from corral.model.outbox import MAX_LINE_BYTES
from corral.runtime.worker.config import Workplace
from corral.runtime.worker.outbox import RETRY_S, Outbox


class Run:
    """One claimed task with its outbox, and what the runner logged."""

    def __init__(
        self,
        store: Store,
        folder: Path,
        caplog: pytest.LogCaptureFixture,
        clock: FakeClock | None = None,
    ) -> None:
        self.store = store
        worker = corral.register(store, NewWorker(name="w", hostname="h", pid=None)).worker
        self.task_id = corral.enqueue(store, NewTask(title="t")).id
        claim = corral.claim(store, self.task_id, worker.id)
        self.token = claim.token
        log = logging.getLogger("test.outbox")
        place = Workplace(store, worker.id, Settings(), clock or FakeClock(), log)
        self.path = folder / "r-1.outbox"
        self.outbox = Outbox(str(self.path), place=place, task_id=self.task_id, run_id="r-1",
                             token=claim.token)  # fmt: skip
        self.caplog = caplog
        caplog.set_level(logging.INFO, logger="test.outbox")

    def write(self, data: bytes) -> None:
        with open(self.path, "ab") as handle:
            handle.write(data)

    def line(self, verb: str, token: int | None = None, **fields: object) -> None:
        document = {"verb": verb, "token": self.token if token is None else token, **fields}
        self.write(json.dumps(document).encode() + b"\n")

    def messages(self) -> list[object]:
        found = self.store.messages.list_messages(recipient="orchestrator", after_id=0,
                                                  unacked=False)  # fmt: skip
        return [m.body for m in found]

    def status(self) -> TaskStatus:
        return self.store.tasks.get_task(self.task_id).status

    def refusals(self) -> list[str]:
        return [r.getMessage() for r in self.caplog.records if "outbox.refused" in r.getMessage()]


@pytest.fixture
def run(store: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> Run:
    return Run(store, tmp_path, caplog)


def test_each_line_is_taken_once_and_a_partial_line_waits(run: Run) -> None:
    """Polled again and again, a message is sent once; a line without its newline waits."""
    run.line("msg", type="progress", body=1)
    run.write(b'{"verb": "msg", "token": %d, "type": "progress", "bo' % run.token)
    for _ in range(3):
        run.outbox.take_in()
    assert [1] == run.messages()
    run.write(b'dy": 2}\n')
    run.outbox.take_in()
    run.outbox.take_in()
    assert [1, 2] == run.messages()
    assert [] == run.refusals()


def test_the_last_line_counts_without_its_newline_once_the_agent_exited(run: Run) -> None:
    """At the end the last line is whole, newline or not: done completes the task."""
    run.write(b'{"verb": "done", "token": %d, "result": {"ok": true}}' % run.token)
    run.outbox.take_in()
    assert TaskStatus.RUNNING == run.status()
    run.outbox.finish()
    assert TaskStatus.DONE == run.status()
    assert {"ok": True} == run.store.tasks.get_task(run.task_id).result


def test_a_question_puts_the_task_in_waiting(run: Run) -> None:
    """ask: the task waits for a person, the question its reason."""
    run.line("ask", question="Which database?")
    run.outbox.take_in()
    task = run.store.tasks.get_task(run.task_id)
    assert (TaskStatus.WAITING, "question: Which database?") == (task.status, task.wait_reason)


def test_hostile_lines_are_refused_and_never_applied(run: Run) -> None:
    """Each bad line: one refusal logged, nothing applied; the good line after them counts."""
    run.write(b"not json\n")
    run.write(b'["a list"]\n')
    run.write(b"\xff\xfe\n")
    run.write(b'{"verb": "msg", "token": %d, "type": "x", "body": "a\\u0000b"}\n' % run.token)
    run.write(b'{"verb": "msg", "token": %d, "type": "x", "body": %s}\n'
              % (run.token, b"[" * 100 + b"]" * 100))  # fmt: skip
    run.write(b"x" * (3 * MAX_LINE_BYTES) + b"\n")  # skipped to its newline, read in pieces
    run.line("launch", body=1)
    run.line("msg", type="cancel", body={"task_id": run.task_id})
    run.line("msg", token=run.token + 1, type="progress", body="wrong token")
    run.line("done", token=run.token + 1)
    run.line("fail", token=run.token + 7, error="not mine")
    run.line("done", token=True)
    run.line("done", extra=1)
    for _ in range(4):
        run.outbox.take_in()
    assert [] == run.messages()
    assert TaskStatus.RUNNING == run.status()
    expected = ["valid JSON", "a JSON object", "UTF-8", "NUL", "nested more than 64",
                "at most 131072 bytes", "verb: expected one of", "other than drain and cancel",
                "this run's token", "token 2 is stale", "token 8 is stale",
                "token: expected the claim's token", "extra: expected only result"]  # fmt: skip
    refused = run.refusals()
    assert len(expected) == len(refused), refused
    assert [] == [
        (want, got) for want, got in zip(expected, refused, strict=True) if want not in got
    ]
    run.line("msg", type="progress", body="after")
    run.outbox.take_in()
    assert ["after"] == run.messages()


def test_lines_after_done_that_need_the_claim_are_refused(run: Run) -> None:
    """done ends the claim: a fail after it, under the same token, is stale."""
    run.line("done")
    run.line("fail", error="too late")
    run.outbox.finish()
    assert TaskStatus.DONE == run.status()
    assert 1 == len(run.refusals())


def test_a_shrunk_or_replaced_file_is_read_no_further(run: Run, tmp_path: Path) -> None:
    """The agent truncating its outbox, or putting a link to another file in its place:
    nothing of it is taken."""
    run.line("msg", type="progress", body=1)
    run.outbox.take_in()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_bytes(b'{"verb": "done", "token": %d}\n' % run.token)
    os.unlink(run.path)
    os.symlink(elsewhere, run.path)
    run.outbox.finish()
    assert TaskStatus.RUNNING == run.status()
    assert [1] == run.messages()
    assert 1 == len(run.refusals())


def test_a_truncated_file_is_read_no_further(run: Run) -> None:
    """The agent rewriting its outbox from the start: its old lines are not taken again,
    nor its new ones."""
    run.line("msg", type="progress", body=1)
    run.outbox.take_in()
    run.path.write_bytes(b"")
    run.outbox.take_in()
    run.line("msg", type="progress", body=1)
    run.outbox.finish()
    assert [1] == run.messages()
    (refused,) = run.refusals()
    assert "the file shrank to 0 bytes" in refused


def test_a_line_waits_while_the_store_is_out_and_is_taken_once_it_is_back(
    private_server: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The PostgreSQL server stopped: the message waits, one line logged; polls within the
    retry interval do not touch the store; back, it is sent once."""
    clock = FakeClock()
    store = corral.open_store(private_server.url, clock=clock)
    try:
        run = Run(store, tmp_path, caplog, clock=clock)
        run.line("msg", type="progress", body=1)
        private_server.ctl("-m", "immediate", "stop")
        for _ in range(3):
            run.outbox.take_in()
        private_server.ctl("start")
        run.outbox.take_in()  # within the retry interval: not tried
        assert [] == run.messages()
        clock.advance(RETRY_S)
        run.outbox.take_in()
        run.outbox.take_in()
        assert [1] == run.messages()
        unreachable = [r for r in caplog.records if "outbox.store_unreachable" in r.getMessage()]
        assert 1 == len(unreachable)
    finally:
        store.close()


def test_a_line_read_again_is_not_applied_again(run: Run) -> None:
    """Every line applied, then read again from the start (as after a send whose reply was
    lost: it committed, the runner could not know): the message is not sent twice, the
    done is refused as stale, the task done once."""
    run.line("msg", type="progress", body=1)
    run.line("done", result=1)
    run.outbox.take_in()
    run.outbox._offset = 0  # the re-read a lost reply would cause
    run.outbox.finish()
    assert [1] == run.messages()
    assert TaskStatus.DONE == run.status()
    (refused,) = run.refusals()
    assert "is stale" in refused
