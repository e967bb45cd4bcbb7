"""The store's operations as the wire sees them: each repository is the one its name says,
every operation a remote store may call is declared once with a role and what a worker
token must own, and one that is not declared never reaches the network from a client."""

from __future__ import annotations

import importlib
import inspect

import pytest

from corral.foundation.errors import InvalidInput
from corral.model.events import EventFilter
from corral.model.tasks import TaskFilter
from corral.store import Store, open_store
from corral.store.operations import ADMIN, OPERATOR, REPOSITORIES, VIEWER, WORKER, operations
from corral.store.remote import wire


def test_each_repository_is_the_module_and_class_the_store_declares():
    declared = Store.__annotations__
    for attribute, (module, name) in REPOSITORIES.items():
        cls = getattr(importlib.import_module(module), name)
        assert (declared[attribute], cls.NAME) == (name, attribute)
    assert {a for a in declared if a != "NAME"} == set(REPOSITORIES)


def test_each_served_operation_has_a_role_an_owned_argument_and_wire_types():
    found = operations()
    assert {"now", "tasks.enqueue", "claims.exchange", "workers.heartbeat"} <= set(found)
    for name, op in found.items():
        parameters = inspect.signature(op.function).parameters
        assert op.served.role in (VIEWER, WORKER, OPERATOR, ADMIN), name
        if op.served.owns is not None:
            assert op.served.role == WORKER and op.served.owns in parameters, name
        types = wire.hints(op.function)
        assert "return" in types, name
        assert [op for op in found.values() if op.served.long_poll] == [found["claims.exchange"]]


def test_an_operation_that_is_not_served_is_refused_on_a_remote_store_without_a_request():
    store = open_store("http://127.0.0.1:9")  # the discard port: nothing may be sent there
    with pytest.raises(InvalidInput, match="beside the database"):
        store.retention.count_prunable(tasks_before=None, events_before=None, workers_before=None)
    with pytest.raises(InvalidInput, match="beside the database"):
        store.sign_ins.dashboard_session("x")


@pytest.mark.parametrize(
    ("tp", "named"), [(EventFilter, "an EventFilter object"), (TaskFilter, "a TaskFilter object")]
)
def test_a_value_of_the_wrong_type_names_what_was_expected_with_its_article(
    tp: type, named: str
) -> None:
    """A request's value that is not the record it must be is refused naming the record,
    after the article its name takes."""
    with pytest.raises(InvalidInput, match=f"^flt: expected {named}, got 5$"):
        wire.decode(5, tp, "flt")
