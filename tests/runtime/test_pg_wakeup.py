"""An idle runner on PostgreSQL is woken by LISTEN/NOTIFY, not by its polling backoff."""

from __future__ import annotations

import threading

import psycopg
from tests.runtime.conftest import wait_until

import corral
from corral import NewTask, Settings, SystemClock, TaskStatus, open_store
from corral.runtime.worker.runner import PythonJob, Runner, RunnerConfig

IDLE_S = 3600.0  # a backoff no test outlives: only a notification can end the idle wait
BOUND_S = 20.0  # the test's own limit, far below IDLE_S


class WaitWatchingClock(SystemClock):
    """The real clock, noting when a runner starts an idle wait of `IDLE_S`."""

    def __init__(self) -> None:
        self.idle = threading.Event()

    def wait(self, event: threading.Event, seconds: float) -> bool:
        """Note an idle wait (the backoff's jitter takes it down to half), then wait."""
        if seconds >= IDLE_S / 2:
            self.idle.set()
        return super().wait(event, seconds)


def test_an_idle_runner_picks_up_an_enqueued_task_long_before_its_backoff(pg_url):
    """Enqueued while the runner waits an hour between polls, the task is done at once."""
    clock = WaitWatchingClock()
    with open_store(pg_url) as store:
        runner = Runner(
            store,
            RunnerConfig(name="idle", idle_min_s=IDLE_S, idle_max_s=IDLE_S),
            PythonJob(execute=lambda task, ctx: None),
            settings=Settings(),
            clock=clock,
        )
        thread = threading.Thread(target=runner.run, daemon=True)
        thread.start()
        try:
            assert clock.idle.wait(BOUND_S), "the runner never went idle"
            task = corral.enqueue(store, NewTask(title="wake up"))
            wait_until(lambda: store.tasks.get_task(task.id).status is TaskStatus.DONE, BOUND_S)
        finally:
            runner.stop(immediate=True)
            thread.join(BOUND_S)
        assert not thread.is_alive()


def _listeners(url: str) -> list[int]:
    """Backend pids of this database's sessions that LISTEN on a ready channel."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            """SELECT pid FROM pg_stat_activity WHERE datname = current_database()
               AND query LIKE '%%LISTEN%%corral_ready_%%' AND pid <> pg_backend_pid()"""
        ).fetchall()
    return [row[0] for row in rows]


def test_a_listener_whose_session_is_ended_listens_again(pg_url):
    """The server ends the listening session: the runner listens anew and is woken again."""
    clock = WaitWatchingClock()
    with open_store(pg_url) as store:
        runner = Runner(
            store,
            RunnerConfig(name="idle", idle_min_s=IDLE_S, idle_max_s=IDLE_S),
            PythonJob(execute=lambda task, ctx: None),
            settings=Settings(),
            clock=clock,
        )
        others = set(_listeners(pg_url))  # earlier tests' listeners, on their way out

        def new_listeners() -> set[int]:
            return set(_listeners(pg_url)) - others

        thread = threading.Thread(target=runner.run, daemon=True)
        thread.start()
        try:
            seen: list[set[int]] = [set()]

            def one_new() -> bool:  # the set read once: another test's may come and go
                seen[0] = new_listeners()
                return len(seen[0]) == 1

            wait_until(one_new, BOUND_S)
            (first,) = seen[0]
            clock.idle.clear()  # set again once the new listener's catch-up woke the runner
            with psycopg.connect(pg_url, autocommit=True) as conn:
                conn.execute("SELECT pg_terminate_backend(%s)", (first,))
            wait_until(lambda: new_listeners() - {first} != set(), BOUND_S)
            assert clock.idle.wait(BOUND_S), "the runner never went idle again"
            task = corral.enqueue(store, NewTask(title="wake up"))
            wait_until(lambda: store.tasks.get_task(task.id).status is TaskStatus.DONE, BOUND_S)
        finally:
            runner.stop(immediate=True)
            thread.join(BOUND_S)
        assert not thread.is_alive()
