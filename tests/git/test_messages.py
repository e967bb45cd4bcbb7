"""Messages: appended, never rewritten, read in order across processes, acked, exported."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess

import pytest
from tests.conftest import CORRAL

import corral
from corral.foundation.errors import InvalidInput
from corral.model.states import TaskStatus, WorkerStatus
from corral.model.tasks import NewTask
from corral.usecases import messages


def _worker(store, settings, name="w1"):
    spec = corral.NewWorker(name=name, hostname="h", pid=None)
    return corral.register(store, spec, settings=settings).worker


def test_an_inbox_reads_in_order_and_acks_are_rows_of_their_own(store, settings):
    """Sent to a worker by id, read by its name, in order; ack hides it from the unread view."""
    w = _worker(store, settings)
    first = messages.send(store, to=w.id, type="note", body={"n": 1}, sender="orchestrator")
    messages.send(store, to="w1", type="note", body={"n": 2}, sender="orchestrator")
    assert [1, 2] == [m.body["n"] for m in store.messages.list_messages(recipient="w1")]
    acked = messages.ack(store, str(first.id), actor="w1")
    assert (acked.acked_by, acked.acked_at is not None) == ("w1", True)
    assert [2] == [m.body["n"] for m in store.messages.list_messages(recipient="w1", unacked=True)]
    assert acked == messages.ack(store, str(first.id), actor="someone-else")  # once is enough


def _raw_connection(store):
    """A connection of the store's own driver library, and the error a trigger raises in it."""
    if store.dialect == "postgresql":
        import psycopg

        return psycopg.connect(store.url, autocommit=True), psycopg.errors.IntegrityError
    return sqlite3.connect(store.url), sqlite3.IntegrityError


def test_messages_cannot_be_rewritten_or_deleted(store, settings):
    """The database itself refuses an UPDATE or a DELETE of a message."""
    messages.send(store, to="orchestrator", type="note", body="hi", sender="w1")
    conn, refused = _raw_connection(store)
    try:
        for statement in ("UPDATE messages SET body = '\"bye\"'", "DELETE FROM messages"):
            with pytest.raises(refused, match="append-only"):
                conn.execute(statement)
    finally:
        conn.close()
    assert ["hi"] == [m.body for m in store.messages.list_messages(recipient="orchestrator")]


def test_bad_messages_are_refused_and_nothing_is_appended(store, settings):
    """An unknown recipient, a bad type, a cancel without a task: InvalidInput, no message."""
    with pytest.raises(InvalidInput, match="to:"):
        messages.send(store, to="nobody", type="note", sender="operator")
    with pytest.raises(InvalidInput, match="type"):
        messages.send(store, to="orchestrator", type="two words", sender="operator")
    with pytest.raises(InvalidInput, match="body"):
        messages.send(store, to="orchestrator", type="cancel", body={}, sender="operator")
    with pytest.raises(InvalidInput, match="id"):
        messages.ack(store, "first", actor="operator")
    assert [] == store.messages.list_messages()


def test_drain_and_cancel_take_effect_when_sent(store, settings):
    """`drain` marks the worker draining; `cancel` cancels the named task."""
    w = _worker(store, settings)
    corral.heartbeat(store, w.id, settings=settings)
    messages.send(store, to="w1", type="drain", sender="orchestrator")
    assert WorkerStatus.DRAINING == store.workers.get_worker(w.id).status
    task = corral.enqueue(store, NewTask(title="stop me"), settings=settings)
    messages.send(store, to="w1", type="cancel", body={"task_id": task.id}, sender="orchestrator")
    assert TaskStatus.CANCELLED == store.tasks.get_task(task.id).status
    assert ["drain", "cancel"] == [m.type for m in store.messages.list_messages(recipient="w1")]


def test_messages_from_several_processes_arrive_in_order(cli, tmp_path):
    """Three senders race while a follower reads: every message once, in id order, each
    sender's own in the order it sent them; export has the same lines."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    env["CORRAL_DB"] = cli.db
    assert 0 == cli("init").code
    follower = subprocess.Popen(
        [CORRAL, "msg", "inbox", "orchestrator", "--follow", "--json", "--count", "30"],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    script = (
        "for i in $(seq 1 10); do "
        "{c} msg send --to orchestrator --type n --from $0 --body $i >/dev/null; done"
    )
    senders = [
        subprocess.Popen(["sh", "-c", script.format(c=CORRAL), f"s{n}"], env=env) for n in range(3)
    ]
    try:
        assert [0, 0, 0] == [s.wait(timeout=120) for s in senders]
        out, _ = follower.communicate(timeout=60)
    finally:
        follower.kill()
    got = [json.loads(line) for line in out.splitlines()]
    assert sorted(m["id"] for m in got) == [m["id"] for m in got]
    for n in range(3):
        assert list(range(1, 11)) == [m["body"] for m in got if m["from"] == f"s{n}"]
    exported = [json.loads(line) for line in cli("msg", "export").out.splitlines()]
    assert got == exported
