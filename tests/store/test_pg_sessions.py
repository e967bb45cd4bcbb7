"""PostgreSQL's sessions of their own: the ready and events listeners, the leader lock."""

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


# -- the events channel: notified only while a follower listens -----------------------------


class Spy:
    """A bare session listening on a store's events channel without listing itself."""

    def __init__(self, url: str) -> None:
        import psycopg

        self.conn = psycopg.connect(url, autocommit=True)
        row = self.conn.execute("SELECT 'corral_events_' || md5(current_schema())").fetchone()
        assert row is not None
        self.channel = str(row[0])
        self.conn.execute(f'LISTEN "{self.channel}"')

    def heard(self) -> list[str]:
        """The payloads notified before a marker this sends now: what writers sent so far."""
        self.conn.execute("SELECT pg_notify(%s, 'marker')", (self.channel,))
        payloads = []
        for note in self.conn.notifies(timeout=WAIT_S):
            payloads.append(note.payload)
            if note.payload == "marker":
                break
        return payloads

    def followers(self) -> list[int]:
        """The pids listed in event_followers."""
        return [r[0] for r in self.conn.execute("SELECT pid FROM event_followers ORDER BY pid")]


def test_writers_notify_the_events_channel_only_while_a_follower_listens(pg_url):
    """No follower: an event notifies nobody. A follower listed: it is woken. Stopped: it
    strikes itself off, and writers stop notifying."""
    with open_store(pg_url) as store:
        spy = Spy(pg_url)
        try:
            corral.enqueue(store, NewTask(title="unheard"))
            assert ["marker"] == spy.heard()
            wake = threading.Event()
            stop = store.events.wake_on_events(wake)
            assert wake.wait(WAIT_S), "the follower never started listening"
            wake.clear()
            assert 1 == len(spy.followers())
            corral.enqueue(store, NewTask(title="heard"))
            assert wake.wait(WAIT_S)
            assert ["", "marker"] == spy.heard()
            stop()
            assert [] == spy.followers()
            corral.enqueue(store, NewTask(title="unheard again"))
            assert ["marker"] == spy.heard()
        finally:
            spy.conn.close()


def test_a_follower_whose_session_died_does_not_keep_writers_notifying(pg_url):
    """A listed pid with no session (a follower killed with -9) is ignored, then struck off
    by the next follower to listen."""
    with open_store(pg_url) as store:
        spy = Spy(pg_url)
        try:
            spy.conn.execute("INSERT INTO event_followers (pid) VALUES (0)")
            corral.enqueue(store, NewTask(title="unheard"))
            assert ["marker"] == spy.heard()
            wake = threading.Event()
            stop = store.events.wake_on_events(wake)
            assert wake.wait(WAIT_S)
            stop()
            assert [] == spy.followers()
        finally:
            spy.conn.close()
