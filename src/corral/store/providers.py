"""Store operations on provider accounts: cap, pause, park, and read them with their load.

The claim enforces them (store/exchange.py; corral_exchange in PostgreSQL, under the
account's row lock): a worker that names a provider account claims nothing while the
account is paused or parked, nor more than its `max_running` across every host.
Parking only ever moves the reset later, so workers that hit the same limit at once
record it once.

An account's cap, pause and park belong to one namespace (the store handle's): a park in
team-a holds back team-a's agents of that account, and team-b's keep running, as they
would if team-b spent the account under credentials of its own; a limit that is truly
shared reaches team-b's agents soon enough, and they park it in team-b. Capping, pausing
and parking an account are an operator's (`@served(OPERATOR)`); a worker parks only the
account its own worker spends, when an agent hits its usage limit, and for at most
MAX_WORKER_PARK_S (`park_worker_provider`), so a worker credential cannot stop a fleet
for long.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Literal

from corral.foundation import errors
from corral.foundation.durations import iso
from corral.store import journal
from corral.store.driver import Driver, Row, Tx
from corral.store.lookups import worker_in
from corral.store.operations import OPERATOR, VIEWER, WORKER, Repository, served

if TYPE_CHECKING:
    from datetime import datetime

    from corral.model.providers import ProviderState

#: `max_running` is a count of agents: a store `integer` holds it.
MAX_RUNNING = 2**31 - 1
KEEP: Literal["keep"] = "keep"  # set_provider: leave max_running as it is
#: The longest a worker parks its account: the longest window a provider's usage limits
#: have (a week); a park past it is an operator's to make.
MAX_WORKER_PARK_S = 7 * 24 * 3600


class Providers(Repository):
    """Provider accounts: caps, pauses and usage-limit parks shared by every host."""

    NAME = "providers"

    @served(OPERATOR)
    def set_provider(
        self,
        name: str,
        *,
        max_running: int | Literal["keep"] | None = KEEP,
        paused: bool | None = None,
        unpark: bool = False,
        actor: str,
    ) -> ProviderState:
        """Change provider account `name`: its cap (None removes it), whether it is paused,
        and (`unpark`) end its park now. Returns the account afterwards."""
        _check(name)
        keep = max_running == KEEP
        if not keep and max_running is not None:
            if isinstance(max_running, bool) or not isinstance(max_running, int):
                raise errors.InvalidInput("max_running", "a whole number", max_running)
            if not 0 <= max_running <= MAX_RUNNING:
                raise errors.InvalidInput(
                    "max_running", f"a whole number from 0 to {MAX_RUNNING}", max_running
                )
        with self._driver.write() as tx:
            tx.run(
                "set_provider",
                name=name,
                max_running=None if keep else max_running,
                keep_max_running=keep,
                paused=paused,
                unpark=unpark,
            )
            row = tx.one("provider_states", name=name)
            assert row is not None  # just written
            state = _state(self._driver, row, tx.now)
            journal.record(
                tx,
                "provider.set",
                actor=actor,
                data={
                    "provider": name,
                    "max_running": state.max_running,
                    "paused": state.paused,
                    "unparked": unpark,
                },
            )
        return state

    @served(OPERATOR)
    def park_provider(
        self, name: str, *, until: datetime, reason: str, actor: str, task_id: str | None = None
    ) -> bool:
        """Park provider account `name` until `until` (event `provider.parked`), unless it
        is parked that long already; whether this changed it."""
        _check(name)
        with self._driver.write() as tx:
            return _park(
                tx, self._driver, name, until=until, reason=reason, actor=actor, task_id=task_id
            )

    @served(WORKER, owns="worker_id", frees_work=False)
    def park_worker_provider(
        self, worker_id: str, *, until: datetime, reason: str, task_id: str | None = None
    ) -> bool:
        """Park the account worker `worker_id` spends until `until`, at most
        MAX_WORKER_PARK_S from now, in the worker's namespace, as that worker: an agent hit
        its usage limit. Whether this changed it (False for a worker that names no
        account); NotFound for no such worker."""
        with self._driver.write() as tx:
            worker = worker_in(tx, self._driver, worker_id)
            if worker.provider is None:
                return False
            latest = tx.now + timedelta(seconds=MAX_WORKER_PARK_S)
            return _park(
                tx,
                self._driver,
                worker.provider,
                until=min(until, latest),
                reason=reason,
                actor=worker_id,
                task_id=task_id,
                namespace=worker.namespace,
            )

    @served(VIEWER)
    def provider_states(self, name: str | None = None) -> list[ProviderState]:
        """Every provider account with settings or a live worker (or just `name`), by name."""
        with self._driver.read() as tx:
            return [_state(self._driver, r, tx.now) for r in tx.all("provider_states", name=name)]


def _park(
    tx: Tx,
    driver: Driver,
    name: str,
    *,
    until: datetime,
    reason: str,
    actor: str,
    task_id: str | None,
    namespace: str | None = None,
) -> bool:
    """Park `name` in `namespace` (None: the handle's) and record it; whether this
    changed it."""
    named = {} if namespace is None else {"namespace": namespace}
    row = tx.one("park_provider", name=name, until=until, reason=reason, **named)
    if row is None:
        return False
    journal.record(
        tx,
        "provider.parked",
        actor=actor,
        task_id=task_id,
        reason=reason,
        data={"provider": name, "until": _iso(driver, row["parked_until"])},
    )
    return True


def _check(name: str) -> None:
    # The model is imported where an account is named or read, so that no other command's
    # start-up builds its record (bench/cli_latency.py).
    from corral.model.providers import check_provider  # noqa: PLC0415 - see the line above

    check_provider(name)


def _iso(driver: Driver, value: object) -> str | None:
    return iso(driver.instant(value))


def _state(driver: Driver, row: Row, now: datetime) -> ProviderState:
    from corral.model.providers import ProviderState  # noqa: PLC0415 - as in _check

    def instant(value: object) -> datetime | None:
        return None if value is None else driver.instant(value)

    return ProviderState(
        name=row["name"],
        max_running=row["max_running"],
        paused=bool(row["paused"]),
        parked_until=instant(row["parked_until"]),
        parked_at=instant(row["parked_at"]),
        park_reason=row["park_reason"],
        running=row["running"],
        workers=row["workers"],
        now=now,
    )
