"""A lane's exchanges with the store: one write transaction reports what finished and claims.

    exchange(finished, asked) ─► claims.exchange: the reports, applied under their tokens,
        and up to `asked` tasks claimed, each run opened by the job inside the transaction
      ─ store unavailable ─► nothing claimed; the reports stay, to go with the next one
        (retried first, with growing waits, when there are reports: retries.py)
      ─ a remote store's long poll cut by the runner's stop (WaitEnded) ─► the same, with
        no warning and no retry: the stopping lane's next exchange makes no wait
      ─ applied ─► each report settled: its claim no longer watched, its run closed by
        the job, its outcome logged (a stale one's run as the store finished it:
        Exchanged.settled);
        each task claimed watched by the heartbeat, and handed back with its opened run

An exchange that fails may still have committed (its reply lost): the runner then does
not know the tasks it claimed. The next exchange first adopts them (adoption.py).

The store may refuse to claim: the worker was drained, declared stale or dead, or taken
offline. The heartbeat then beats at once and learns which: a stale worker is idle or busy
again and claims at its next exchange; a drained, dead or offline one stops claiming
(lanes.py).
"""

from __future__ import annotations

import logging
import random
import threading
from typing import Any, NamedTuple

from corral.foundation.errors import StoreError, WaitEnded
from corral.foundation.logs import event
from corral.model.exchange import ClaimAsk, Exchanged, Held, Report, RunStart
from corral.model.runs import Run, RunOutcome
from corral.model.tasks import Task
from corral.runtime.worker.adoption import orphaned_claims
from corral.runtime.worker.config import RunnerConfig, Workplace
from corral.runtime.worker.heartbeat import Heartbeat
from corral.runtime.worker.jobs import Opened, Runs
from corral.runtime.worker.retries import retrying
from corral.usecases import claims

_SUCCESSFUL = frozenset({RunOutcome.DONE, RunOutcome.DEFERRED, RunOutcome.SHUTDOWN})


# NamedTuples, not frozen dataclasses: made for every task, and cheaper to define at a
# runner's start-up (jobs.Opened says why).
class Claimed(NamedTuple):
    """A task claimed for this runner, with the run its job opened for it."""

    held: Held
    opened: Opened[Any]


class Finished(NamedTuple):
    """A run's report, waiting for an exchange, with the task held and the run the job
    closes after it."""

    held: Held
    report: Report
    opened: Opened[Any]


class Exchanger:
    """The exchanges of one runner's lanes, and what their outcomes tell the runner."""

    def __init__(
        self,
        place: Workplace,
        config: RunnerConfig,
        runs: Runs[Any],
        heartbeat: Heartbeat,
        rng: random.Random,
    ) -> None:
        self._place, self._config, self._runs = place, config, runs
        self._heartbeat, self._rng = heartbeat, rng
        self._lock = threading.Lock()
        self._opening: set[str] = set()  # runs opened by exchanges in flight, by run id
        self._unsure = False  # an exchange failed: did it commit claims? (adoption.py)
        self._adopting = threading.Lock()  # one adoption at a time
        self._reached = threading.local()  # did this lane's last exchange reach the store?
        self.unsuccessful = 0  # runs that ended neither done, deferred nor shut down

    def exchange(self, finished: list[Finished], asked: int) -> list[Claimed]:
        """Report `finished`, and claim up to `asked` tasks, in one transaction; the tasks
        claimed (with, first, any claim of an earlier exchange whose reply was lost:
        adoption.py). `finished` is emptied once the store took its reports."""
        self._reached.ok, self._reached.waited = True, False
        if not finished and not asked:
            return []
        opened: dict[str, Opened[Any]] = {}  # the runs this transaction opened, by run id
        adopted: list[Claimed] = []

        def open_run(task: Task, token: int, run_id: str) -> RunStart:
            run = opened[run_id] = self._runs.open(task, token, run_id)
            with self._lock:
                self._opening.add(run_id)
            return run.start

        reports = [f.report for f in finished]
        c = self._config
        ask = ClaimAsk(
            limit=asked, kinds=c.kinds, queues=c.queues, lease_s=c.lease_s, run=self._runs.start
        )

        def once() -> Exchanged:
            adopted.extend(self._adopt())
            try:
                return claims.exchange(
                    self._place.store,
                    self._place.worker_id,
                    reports=reports,
                    ask=ask if asked else None,
                    open_run=open_run,
                    settings=self._place.settings,
                    rng=self._rng,
                )
            except StoreError:
                self._forget(opened, unsure=bool(asked))  # it may have committed
                raise

        try:
            done = retrying(once, self._place) if reports else once()
        except WaitEnded:  # the runner's stop cut its long poll: the next exchange reports
            return adopted
        except StoreError as exc:  # tried again with the next exchange
            self._reached.ok = False
            event(
                self._place.log,
                "claim.failed",
                logging.WARNING,
                worker_id=self._place.worker_id,
                error=exc.message,
            )
            return adopted
        self._settle(finished, done)
        self._reached.waited = done.waited
        finished.clear()
        for h in done.held:
            self._heartbeat.hold(h.task.id, h.token)
        claimed = [Claimed(held=h, opened=opened[h.opened_run()]) for h in done.held]
        self._forget(opened, unsure=False)
        return adopted + claimed

    def unreachable(self) -> bool:
        """Whether the calling lane's last exchange failed because the store could not be
        reached (its reports are kept for the next one)."""
        return not getattr(self._reached, "ok", True)

    def waited(self) -> bool:
        """Whether the calling lane's last exchange found no work after waiting for it as
        long as the store holds a claim (an HTTP store's long poll): ask again at once."""
        return bool(getattr(self._reached, "waited", False))

    def _forget(self, opened: dict[str, Opened[Any]], *, unsure: bool) -> None:
        """The runs an exchange opened are no longer in flight: held now, or, when the
        exchange failed, `unsure` whether they were committed (the next one looks)."""
        with self._lock:
            self._opening.difference_update(opened)
            self._unsure = self._unsure or unsure
        opened.clear()

    def _adopt(self) -> list[Claimed]:
        """After an exchange whose outcome is unknown: this worker's claims the runner did
        not learn of, held and watched now (adoption.py)."""
        with self._adopting:
            if not self._unsure:
                return []

            def known(run: Run) -> bool:
                with self._lock:
                    in_flight = run.id in self._opening
                return in_flight or self._heartbeat.holds(run.task_id, run.token)

            found = orphaned_claims(self._place, self._runs, known)
            for held, _ in found:
                self._heartbeat.hold(held.task.id, held.token)
            with self._lock:
                self._unsure = False
            return [Claimed(held=held, opened=opened) for held, opened in found]

    def _settle(self, finished: list[Finished], done: Exchanged) -> None:
        """After an exchange: each run closed and its outcome logged (a stale report's run
        as the store finished it: as reported under its token meanwhile, else lease_lost)."""
        place = self._place
        if done.refused is not None:
            event(place.log, "claim.refused", worker_id=place.worker_id, reason=done.refused)
            self._heartbeat.beat_now()  # stale: idle again; dead, offline, draining: known
        stale = {r.token for r in done.stale}
        for f in finished:
            held, outcome = f.held, f.report.outcome
            if held.token in stale:
                outcome = RunOutcome(done.settled.get(held.opened_run(), RunOutcome.LEASE_LOST))
            self._heartbeat.drop(held.task.id, outcome)
            self._runs.close(held, f.opened)  # after the report: a task now in review keeps it
            if outcome not in _SUCCESSFUL:
                with self._lock:
                    self.unsuccessful += 1
            event(
                place.log,
                "task.finished",
                logging.DEBUG if outcome is RunOutcome.DONE else logging.INFO,
                worker_id=place.worker_id,
                task_id=held.task.id,
                run_id=held.run_id,
                outcome=outcome,
            )
