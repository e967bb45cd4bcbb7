"""PostgreSQL's sessions of their own: the ready listener and the leader lock."""

from __future__ import annotations

import threading
from collections.abc import Callable

import corral
from corral import NewTask, NewWorker, open_store

WAIT_S = 10.0  # a bound for a test that fails, never reached by one that passes


def _listening(store: corral.Store) -> tuple[threading.Event, Callable[[], None]]:
    """A listener on `store`, with its first (catch-up) wake-up already consumed."""
    wake = threading.Event()
    stop = store.wake_on_work(wake)
    assert wake.wait(WAIT_S), "the listener never started listening"
    wake.clear()
    return wake, stop


def test_an_enqueue_wakes_a_listener_at_commit(pg_url):
    """A task inserted ready notifies corral_ready; the listener sets its event."""
    with open_store(pg_url) as store:
        wake, stop = _listening(store)
        try:
            corral.enqueue(store, NewTask(title="t"))
            assert wake.wait(WAIT_S)
        finally:
            stop()


def test_a_listener_is_not_woken_by_another_schema_of_the_database(pg_schema):
    """Two stores in two schemas of one database: an enqueue wakes only its own runners."""
    (url_a, drop_a), (url_b, drop_b) = pg_schema(), pg_schema()
    try:
        with open_store(url_a) as a, open_store(url_b) as b:
            wake, stop = _listening(a)
            try:
                corral.enqueue(b, NewTask(title="for b"))
                assert not wake.wait(0.5), "woken by the other schema's task"
                corral.enqueue(a, NewTask(title="for a"))
                assert wake.wait(WAIT_S)
            finally:
                stop()
    finally:
        drop_a()
        drop_b()


def test_a_task_becoming_ready_again_notifies(pg_url):
    """A released task notifies: its status goes back to ready."""
    with open_store(pg_url) as store:
        task = corral.enqueue(store, NewTask(title="t"))
        worker = corral.register(store, NewWorker(name="w")).worker
        claim = corral.claim(store, task.id, worker.id, lease_s=30.0)
        wake, stop = _listening(store)
        try:
            corral.release(store, task.id, token=claim.token)
            assert wake.wait(WAIT_S)
        finally:
            stop()


def test_one_session_holds_the_leader_lock_until_it_ends(pg_url):
    """Of two stores' locks one wins; asking again keeps it; once released the other wins."""
    with open_store(pg_url) as first, open_store(pg_url) as second:
        a, b = first.leader_lock(), second.leader_lock()
        assert a is not None and b is not None
        assert (True, False) == (a.try_acquire(), b.try_acquire())
        assert (True, False) == (a.try_acquire(), b.try_acquire())
        a.release()
        try:
            assert (True, False) == (b.try_acquire(), a.try_acquire())
        finally:
            a.release()
            b.release()


def test_sqlite_has_no_leader_lock_and_its_listener_stops(tmp_path):
    """On SQLite there is one orchestrator (no lock) and nothing to listen to."""
    with open_store(str(tmp_path / "c.db")) as store:
        wake = threading.Event()
        store.wake_on_work(wake)()
        corral.enqueue(store, NewTask(title="t"))
        assert (None, False) == (store.leader_lock(), wake.is_set())
