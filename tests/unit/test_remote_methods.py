"""Every operation of the store is either one that travels over HTTP, with its role, or one
a remote store answers itself: a new store operation cannot be forgotten by the remote store
(it would fail there with no driver to run it)."""

from __future__ import annotations

import inspect

from corral.store import Store
from corral.store.remote import methods


def test_each_store_operation_travels_or_is_local_and_only_one_of_them():
    operations = {
        name
        for name, member in inspect.getmembers(Store)
        if not name.startswith("_") and (inspect.isfunction(member) or isinstance(member, property))
    } - {"url", "dialect", "long_polls"}
    kinds = [methods.READS, set(methods.WORKER_OWNS), methods.OPERATES, methods.LOCAL]
    assert operations == set().union(*kinds)
    assert sum(len(k) for k in kinds) == len(operations)
