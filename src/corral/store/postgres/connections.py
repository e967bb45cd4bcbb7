"""PostgreSQL sessions of their own, outside the pool: listeners and the leader lock.

Each lives on one dedicated connection, because what it holds belongs to a session:
- A `Listener` LISTENs on one of its schema's channels from a daemon thread and sets an
  event at each notification: the ready channel (tasks_notify_ready, migration 0009) wakes
  idle runners, the events channel (events_notify, migration 0011) wakes followers of the
  event log, which list themselves as they listen (`event_followers`: nobody notifies an
  empty channel) and strike themselves off as they stop (`FollowerListener`). A dropped
  connection loses notifications until it is back; the waiter's polling covers that gap,
  and the listener sets the event once it listens again, so what was missed is looked for.
- `LeaderLock` takes the session advisory lock 'corral.leader' with pg_try_advisory_lock.
  The server releases it when the session ends, however the leader died.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

import psycopg

from corral.foundation.clock import SystemClock
from corral.foundation.errors import StoreError
from corral.foundation.threads import ThreadService

Connect = Callable[[], "psycopg.Connection[Any]"]
POLL_S = 0.5  # how often the listener looks whether it was told to stop
RETRY_MAX_S = 5.0  # the longest wait before listening again after a lost connection


class Listener(ThreadService):
    """A daemon thread (started here) that sets `wake` at each notification of the channel
    `listen_sql` listens on."""

    # Its stop does not wait: the thread may sit in `notifies` for `poll_s`, and holds only
    # its own connection; a runner's exit must not wait for it.
    join_on_stop = False
    poll_s = POLL_S

    def __init__(
        self,
        connect: Connect,
        listen_sql: bytes,
        wake: threading.Event,
        leave_sql: bytes | None = None,
    ) -> None:
        super().__init__("corral-listen")
        self._connect, self._sql, self._wake = connect, listen_sql, wake
        self._leave_sql = leave_sql  # run before the connection closes, if any
        self.start()

    def _run(self) -> None:
        retry_s = 0.2
        while not self.stopping.is_set():
            try:
                self._listen()
                retry_s = 0.2
            except (StoreError, OSError, psycopg.Error):
                # The server went away: poll (the runner's backoff) until it is back.
                SystemClock().wait(self.stopping, retry_s)
                retry_s = min(RETRY_MAX_S, retry_s * 2)

    def _listen(self) -> None:
        with self._connect() as conn:
            conn.execute(self._sql)
            self._wake.set()  # whatever became ready while nobody listened
            while not self.stopping.is_set():
                for _ in conn.notifies(timeout=self.poll_s):
                    self._wake.set()
            if self._leave_sql is not None:
                with contextlib.suppress(psycopg.Error):  # gone: the next listener strikes it
                    conn.execute(self._leave_sql)


class FollowerListener(Listener):
    """A `Listener` that strikes its session off the followers (`leave_sql`) as it stops:
    its stop waits for that, at most `poll_s`, so that writers stop notifying at once."""

    join_on_stop = True
    poll_s = 0.1


class LeaderLock:
    """The session advisory lock that makes one orchestrator the leader of a store."""

    def __init__(self, connect: Connect, lock_sql: bytes, unlock_sql: bytes) -> None:
        self._connect, self._sql, self._unlock_sql = connect, lock_sql, unlock_sql
        self._conn: psycopg.Connection[Any] | None = None

    def try_acquire(self) -> bool:
        """Take the lock if nobody holds it; True while this session holds it.

        Asked again by its holder, it answers True as long as the session lives (the lock
        is re-entrant), so the same call tells a leader it still leads.
        """
        try:
            if self._conn is None or self._conn.closed:
                self._conn = self._connect()
            row = self._conn.execute(self._sql).fetchone()
        except (StoreError, psycopg.Error):
            self.release()
            return False
        return bool(row and row[0])

    def release(self) -> None:
        """Give the lock up (free when this returns) and end the session."""
        conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            with contextlib.suppress(psycopg.Error):  # gone, and the lock with it
                conn.execute(self._unlock_sql)
        finally:
            conn.close()
