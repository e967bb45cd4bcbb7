"""The store's repositories, and which of their operations a remote store may call.

The store is a handful of repositories, one module per entity (`store.tasks`,
`store.claims`, `store.workers`, ...: REPOSITORIES), each built over the store's driver
the first time a command touches it, so a command loads only the modules of what it uses.

An operation that travels to `corral serve` says so where it is written, with `@served`:
the least role that may call it, what a worker token must own to call it (the argument
naming its worker, its run or its claim), and whether it can free work (wake the claims
that wait for some). The same method runs on both sides: beside the database it runs its
body; on a store reached over HTTP (`CORRAL_DB=https://...`), the wrapper hands the call
to the store's transport (store/remote/transport.py), which sends its arguments and returns
the server's result, and the server (server/store_calls.py) runs the same method on its
own store. An operation without `@served` never travels: on a remote store it meets a
driver that says it runs beside the database.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, ParamSpec, Protocol, TypeVar

if TYPE_CHECKING:
    from corral.store.driver import Driver

P = ParamSpec("P")
R = TypeVar("R")

# The roles, least first (model/api_tokens.py's Role, by value: this module stays light).
VIEWER, WORKER, OPERATOR, ADMIN = "viewer", "worker", "operator", "admin"

# Repository attribute -> (its module, its class). `Store` (store/__init__.py) builds each
# on first use; the attribute is the module's name, so `store.tasks` is store/tasks.py.
REPOSITORIES: dict[str, tuple[str, str]] = {
    "tasks": ("corral.store.tasks", "Tasks"),
    "task_pages": ("corral.store.task_pages", "TaskPages"),
    "events": ("corral.store.events", "Events"),
    "tallies": ("corral.store.tallies", "Tallies"),
    "claims": ("corral.store.claims", "Claims"),
    "workers": ("corral.store.workers", "Workers"),
    "recovery": ("corral.store.recovery", "Recoveries"),
    "runs": ("corral.store.runs", "Runs"),
    "artifacts": ("corral.store.artifacts", "Artifacts"),
    "queues": ("corral.store.queues", "Queues"),
    "reviews": ("corral.store.reviews", "Reviews"),
    "review_staleness": ("corral.store.review_staleness", "ReviewStaleness"),
    "messages": ("corral.store.messages", "Messages"),
    "orchestrators": ("corral.store.orchestrators", "Orchestrators"),
    "schedules": ("corral.store.schedules", "Schedules"),
    "providers": ("corral.store.providers", "Providers"),
    "day_caps": ("corral.store.day_caps", "DayCaps"),
    "api_tokens": ("corral.store.api_tokens", "ApiTokens"),
    "sign_ins": ("corral.store.sign_ins", "SignIns"),
    "retention": ("corral.store.retention", "Retention"),
    "namespaces": ("corral.store.namespaces", "Namespaces"),
}


class Served(NamedTuple):
    """How an operation travels: who may call it and what a worker token must own."""

    role: str  # VIEWER, WORKER, OPERATOR or ADMIN: the least role that may call it
    # For a worker token: the argument naming what it must own (`worker_id` a worker it
    # registered, `run_id` a run of one, `token` a claim of one), or None.
    owns: str | None
    # False for writes after which no task can have become claimable that was not before
    # (a worker's beat, its run's records, messages): the server does not wake its waiting
    # claims for them, or 200 idle runners' beats would wake each claim 20 times a second.
    frees_work: bool
    long_poll: bool  # a claim that finds nothing may wait on the server for work


class Transport(Protocol):
    """What carries a served operation to `corral serve` and back (store/remote/)."""

    def forward(
        self,
        name: str,
        function: Callable[..., Any],
        how: Served,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        """Run operation `name` (`repository.method`, `function` as written, travelling as
        `how` says) on the server with these arguments; its result."""
        ...

    def stop_waiting(self) -> None:
        """End a wait for work in flight, and make no more (a runner stopping)."""
        ...


def served(
    role: str, *, owns: str | None = None, frees_work: bool = True, long_poll: bool = False
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Declare a repository method an operation a remote store may call (module doc)."""
    if role not in (VIEWER, WORKER, OPERATOR, ADMIN):
        raise ValueError(f"served: unknown role {role!r}")
    how = Served(role, owns, frees_work and role != VIEWER, long_poll)

    def declare(function: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(function)
        def operation(*args: P.args, **kwargs: P.kwargs) -> R:
            transport = args[0]._transport  # type: ignore[attr-defined]
            if transport is None:
                return function(*args, **kwargs)
            owner: str = args[0].NAME  # type: ignore[attr-defined]
            name = f"{owner}.{function.__name__}" if owner else function.__name__
            result: R = transport.forward(name, function, how, args[1:], kwargs)
            return result

        operation.__served__ = how  # type: ignore[attr-defined]
        return operation

    return declare


class Repository:
    """One entity's operations over the store's driver (and, on a remote store, its
    transport). It holds nothing else, so two threads that build the same repository at
    once build two equal ones, and either serves."""

    NAME = ""  # its attribute on the store: REPOSITORIES' key

    def __init__(self, driver: Driver, transport: Transport | None) -> None:
        self._driver = driver
        self._transport = transport


class Operation(NamedTuple):
    """A served operation as the server finds it by name."""

    repository: str  # the store's attribute ("" for the store itself)
    method: str
    function: Callable[..., Any]  # the method as written (its signature and types)
    served: Served


def served_by(cls: type) -> dict[str, tuple[Callable[..., Any], Served]]:
    """The methods of `cls` declared `@served`, by name: each as written, and how it travels."""
    return {
        name: (value.__wrapped__, value.__served__)
        for name, value in vars(cls).items()
        if callable(value) and hasattr(value, "__served__")
    }


@functools.cache
def operations() -> dict[str, Operation]:
    """Every served operation by its name on the wire, `repository.method` (`now` and
    `schema_version` on the store itself); imports every repository (the server's start)."""
    from corral.store import Store  # the package imports this module  # noqa: PLC0415

    found: dict[str, Operation] = {}
    for method, (function, how) in served_by(Store).items():
        found[method] = Operation("", method, function, how)
    for attribute, (module, name) in REPOSITORIES.items():
        cls = getattr(importlib.import_module(module), name)
        for method, (function, how) in served_by(cls).items():
            found[f"{attribute}.{method}"] = Operation(attribute, method, function, how)
    return found
