"""BatchOps: a runner's reports and its next claims, in one transaction.

The work is in store/batch_exchange.py, imported on first use: a `corral` command never
exchanges, and the batch records would cost every command's start-up (bench/cli_latency.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from corral.store.base import Driver

if TYPE_CHECKING:
    from corral.batch import ClaimAsk, Exchanged, Report, RunStart
    from corral.tasks import Task


class BatchOps:
    """Report finished tasks and claim the next ones, in one transaction."""

    _driver: Driver

    def exchange(
        self,
        worker_id: str,
        *,
        reports: Sequence[Report] = (),
        ask: ClaimAsk | None = None,
        open_run: Callable[[Task, int, str], RunStart] | None = None,
    ) -> Exchanged:
        """Apply `reports` under their tokens, then claim what `ask` asks for
        (store/batch_exchange.py says how)."""
        from corral.store.batch_exchange import exchange

        return exchange(self._driver, worker_id, reports=reports, ask=ask, open_run=open_run)
