"""`Tx.send`: statements whose outcome is read later or never still decide their transaction.

On PostgreSQL they travel in the pipeline with what follows; on SQLite they run at once.
Either way a failed one rolls its transaction back, and a compare-and-set read from its
`Sent` before the end still refuses the whole transaction.
"""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

from typing import Any

import psycopg
import pytest

import corral
from corral import EventFilter, NewTask, Store, StoreError, open_store
from corral.foundation.errors import StaleToken
from corral.store.driver import Json, Tx

NOT_OVER_HTTP = "the driver's send: a remote store has no driver"


def _event(tx: Tx, name: str) -> None:
    tx.send(
        "insert_event",
        name=name,
        task_id=None,
        worker_id=None,
        token=None,
        from_status=None,
        to_status=None,
        actor="test",
        reason=None,
        data=Json(None),
    )


def _event_names(store: Store) -> list[str]:
    return [e.name for e in store.events.list_events(EventFilter(limit=1000))]


def test_a_sent_statement_that_fails_unread_rolls_its_transaction_back(store: Store):
    """A statement never read that fails still fails the transaction: nothing before it stays."""
    with pytest.raises(StoreError) as caught, store._driver.write() as tx:
        _event(tx, "test.before")
        tx.send("insert_dependency", task_id="t-missing", depends_on="t-missing")
    assert "foreign key" in caught.value.message.lower()
    assert "test.before" not in _event_names(store)


def test_a_compare_and_set_read_from_its_sent_refuses_the_whole_transaction(store: Store):
    """A CAS that did not apply, read before the end, raises and takes back what was sent."""

    class Refused(Exception):
        """The test's own refusal."""

    with pytest.raises(Refused), store._driver.write() as tx:
        _event(tx, "test.before")
        if tx.send("end_claim", token=424242, status="completed").count() == 0:
            raise Refused
    assert "test.before" not in _event_names(store)
    with store._driver.write() as tx:
        _event(tx, "test.after")
    assert "test.after" in _event_names(store)


def test_results_read_from_several_sents_arrive_in_the_order_sent(store: Store):
    """Rows and counts of sent statements come back to the statement that asked for them."""
    task = corral.enqueue(store, NewTask(title="t"))
    with store._driver.write() as tx:
        first = tx.send("get_task", task_id=task.id)
        missing = tx.send("get_task", task_id="t-missing")
        nothing = tx.send("end_claim", token=424242, status="completed")
        second = tx.send("get_task", task_id=task.id)
        assert (task.id, None, 0, task.id) == (
            first.one()["id"],
            missing.one(),
            nothing.count(),
            second.all()[0]["id"],
        )


def test_a_stale_token_refuses_a_completion_and_changes_nothing(store: Store, worker: Any):
    """complete sends its writes before reading them; a stale token still changes nothing."""
    w = worker()
    task = corral.enqueue(store, NewTask(title="t"))
    claim = corral.claim_next(store, w.id)
    assert claim is not None
    before = _event_names(store)
    with pytest.raises(StaleToken):
        corral.complete(store, task.id, token=claim.token + 1)
    assert before == _event_names(store)
    assert "running" == store.tasks.get_task(task.id).status


def _terminate(admin_url: str) -> None:
    """End the sessions of the store under test and wait until they are gone."""
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity"
            " WHERE application_name = 'corral' AND datname = current_database()"
            " AND pid <> pg_backend_pid()"
        )


def test_a_connection_lost_mid_pipeline_is_a_store_error_and_nothing_is_written(
    pg_url: str, pg_database: str
):
    """The server ending the session between statements sent and COMMIT: a StoreError, no
    row of the transaction written, and the next operation finds a fresh connection."""
    with open_store(pg_url) as store:
        task = corral.enqueue(store, NewTask(title="t"))
        with pytest.raises(StoreError), store._driver.write() as tx:
            _event(tx, "test.lost")
            tx.send("get_task", task_id=task.id)
            _terminate(pg_database)
        assert "test.lost" not in _event_names(store)
        assert "t" == store.tasks.get_task(task.id).title
