"""The orchestrator: run the pool, reconcile (or stand by), beat its rows, stop in order.

Its role among its store's orchestrators is an object (roles.py): SQLite's sole holder of
the state row, or, on PostgreSQL, a member that leads while it holds the leader lock and
stands by otherwise (leadership.py). Below, "take" is the role's: the state row for a
sole holder (compare-and-set; a dead holder is replaced, a live one refuses us), the
member row for a member, which then leads once the lock is ours.

    take ─► adopt / spawn the pool ─► the role starts (leading: a pass at once) ─► running
      ─► loop: wait (on the clock) for an exit, a signal or the next due time (every.py);
               tick the pool; every reconcile_interval_s the role's interval (reconcile,
               or try to lead), and, if leading, sooner when the repair has something to
               do by time alone (a silent worker's mark, a lease's end: upkeep.py asks
               after each pass and at each such time); every scheduler_interval_s, if
               leading, a scheduler pass (corral.usecases.schedules); beat the role's rows
               every heartbeat, and after a change
      ─► SIGTERM/SIGINT (or `orchestrator stop`): stopping; workers get SIGTERM and finish
         their task within the stop timeout, then SIGQUIT, then SIGKILL; a leader keeps
         reconciling meanwhile ─► stopped, exit 0
      SIGQUIT or a second SIGINT: the same with no time for tasks.
      The store out (any store call of the loop fails): the pool is supervised as ever;
      the outage is logged once as it starts and once as it ends, beats probe the store
      with a capped backoff, and once one gets through the role's interval runs at once
      and the workers that exited meanwhile are recovered (outage.py).

Given `task_lines` (the CLI's stdout: the terminal, or `--daemon`'s log), a thread prints
a line per task the pool starts and ends (task_lines.py), from start until the pool has
stopped; with `[files] mirror`, two more keep `.corral/state/` (mirror.py). The loop
sleeps only in `clock.wait(wake, ...)`; watcher threads and signal handlers set `wake`,
so an exit is handled as it happens. Exit codes: 0 stopped cleanly; 1 another
orchestrator holds the store, or this one lost the row; 2 configuration error. Once
running, an unreachable store is never a reason to exit.
"""

from __future__ import annotations

import json
import logging
import math
import os
import random
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING, Any, TextIO

from corral.board.status_file import StatusFile
from corral.foundation.clock import Clock, SystemClock
from corral.foundation.errors import InvalidInput, StoreError
from corral.foundation.logs import event, logger
from corral.foundation.settings import Settings
from corral.foundation.variables import log_ignored
from corral.model.orchestrators import DEFAULT_STOP_TIMEOUT_S
from corral.runtime import signals
from corral.runtime.pool import worker_process
from corral.runtime.pool.deliveries import Channel
from corral.runtime.pool.every import Every
from corral.runtime.pool.leadership import Member
from corral.runtime.pool.notify import (
    Command,
    NoticeFilter,
    Notifier,
    Posted,
    checked_kinds,
    notify_argv,
)
from corral.runtime.pool.outage import Outage
from corral.runtime.pool.roles import OrchestratorRole, SoleHolder
from corral.runtime.pool.state_row import AlreadyRunning, StateRow
from corral.runtime.pool.supervisor import Supervisor
from corral.runtime.pool.task_lines import TaskLines
from corral.runtime.pool.upkeep import Upkeep
from corral.runtime.pool.worker_process import Layout
from corral.runtime.worker import preflight
from corral.runtime.worker.tools import log_tools
from corral.store import Store, is_http_url
from corral.store.remote import TOKEN_ENV
from corral.store.urls import safe_url
from corral.usecases.agents import agents_dir
from corral.usecases.usage import PROVIDER_ENV_VARIABLE, provider_env

if TYPE_CHECKING:
    from corral.runtime.pool.mirror import Mirror

# AlreadyRunning lives with the state row it guards; importable from here as before.
__all__ = ["AlreadyRunning", "Orchestrator", "Placement"]
_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT, signal.SIGHUP)
STARTING_BEAT_S = 0.25  # the beat while a worker has yet to register: status shows it soon
# A store call that took this long (or a heartbeat interval, if longer) was an outage too,
# however it ended: a SQLite file locked while this process queued behind other writers.
SLOW_CALL_S = 2.0
# A pass woken for a repair that comes due runs this long after it, so that the rounding
# of its times never finds it not yet due.
DUE_MARGIN_S = 0.05


@dataclass(frozen=True, slots=True, kw_only=True)
class Placement:
    """Where this orchestrator runs and what it hands its workers."""

    db: str
    config_path: str
    layout: Layout
    host: str


class Orchestrator:
    """One orchestrator process; `run()` returns its exit code."""

    def __init__(
        self,
        store: Store,
        *,
        settings: Settings,
        placement: Placement,
        clock: Clock | None = None,
        log: logging.Logger | None = None,
        task_lines: TextIO | None = None,
    ) -> None:
        # What each slot's `worker start` would refuse, refused here, before anything starts.
        checked = _preflight(settings, agents_dir(store.url))
        self._notify = notify_argv(settings.notify_command) if settings.notify_command else None
        checked_kinds(settings.notify_events)
        self._store, self._settings, self._place = store, settings, placement
        self._clock = clock or SystemClock()
        self._log = log or logger("corral.orchestrator")
        for group in checked.values():
            log_tools(self._log, group.tools)
        self._wake = threading.Event()
        self._stop_grace_s: float | None = None
        self._lines_out = task_lines  # where a line per task started and ended goes
        self._pid = os.getpid()
        self._outage = Outage(clock=self._clock, log=self._log, rng=random.Random())
        self._store_back = False  # a beat got through after an outage: the interval runs now
        self._upkeep = Upkeep(
            store, settings=settings, db=placement.db, clock=self._clock, log=self._log
        )
        self._role = self._role_for(store)
        self._env, _ = self._worker_env(None)  # notify's, and the workers' base
        sifted = {name: self._worker_env(group) for name, group in checked.items()}
        # Each group's workers': its agent's names, its account's.
        self._group_env = {name: env for name, (env, _) in sifted.items()}
        # The variables no worker inherits (names), logged at start.
        self._withheld = sorted(set.intersection(*(set(w) for _, w in sifted.values())))
        self.supervisor = Supervisor(
            store,
            settings=settings,
            env=self._env,
            layout=placement.layout,
            clock=self._clock,
            log=self._log,
            wake=self._wake,
            group_env=self._group_env,
            memory_mb={
                name: group.agent.memory_mb
                for name, group in checked.items()
                if group.agent is not None and group.agent.memory_mb is not None
            },
        )

    def _role_for(self, store: Store) -> OrchestratorRole:
        """SQLite has no leader lock: its one orchestrator holds the state row. PostgreSQL:
        one of several, leading while it holds the lock."""
        row = StateRow(
            store,
            pid=self._pid,
            host=self._place.host,
            config=self._config(),
            liveness=self._settings.liveness,
            log=self._log,
        )
        lock = store.leader_lock()
        if lock is None:
            return SoleHolder(row, self._upkeep)
        return Member(
            store,
            lock,
            row,
            self._upkeep,
            pid=self._pid,
            host=self._place.host,
            liveness=self._settings.liveness,
            log=self._log,
        )

    def _worker_env(self, checked: preflight.Checked | None) -> tuple[dict[str, str], list[str]]:
        """The environment of a group's workers, given what its options resolved to (its
        agent's names pass, its account's variables are added; None: neither), and the
        names the secret filter withheld from it."""
        agent = checked.agent if checked is not None else None
        sifted = self._settings.env.for_worker(os.environ, agent.env if agent is not None else ())
        env = sifted.kept
        env["CORRAL_DB"] = self._place.db
        env["CORRAL_NAMESPACE"] = self._store.namespace  # the pool works in its own
        token = os.environ.get(TOKEN_ENV)
        if token and is_http_url(self._place.db):
            env[TOKEN_ENV] = token  # corral's own workers reach the same server with it
        provider = checked.provider if checked is not None else None
        # Resolved here: the workers' environment lacks the `${VAR}`s.
        accounts = provider_env(self._settings, provider, os.environ)
        if accounts:
            env[PROVIDER_ENV_VARIABLE] = json.dumps(accounts)
        env.pop("CORRAL_CONFIG", None)
        if os.path.isfile(self._place.config_path):
            env["CORRAL_CONFIG"] = self._place.config_path
        return env, list(sifted.withheld_names)

    def _config(self) -> dict[str, Any]:
        """The configuration in force, as the state row records it: every worker option
        (by its field name: `exec`, `timeout_s` ...) and the orchestrator's own settings."""
        s = self._settings
        return {
            "workers": s.pool.workers,
            **worker_process.options_in_force(s.pool.options),
            "groups": [
                {"name": g.name, "workers": g.workers, **worker_process.options_in_force(g.options)}
                for g in s.pool.groups
            ],
            "reconcile_interval_s": s.reconcile_interval_s,
            "scheduler_interval_s": s.scheduler_interval_s,
            "heartbeat_interval_s": s.heartbeat_interval_s,
            "restart_delay_s": s.restart_delay_s,
            "max_restart_delay_s": s.max_restart_delay_s,
            "max_restarts": s.max_restarts,
            "min_uptime_s": s.min_uptime_s,
            "kill_timeout_s": s.kill_timeout_s,
            "db": safe_url(self._place.db),  # the row is read by anyone who reads the store
        }

    # -- run -----------------------------------------------------------------------------

    def run(self, on_held: Callable[[], None] | None = None) -> int:
        """Take the row (or, on PostgreSQL, join as a member), run the pool until told to
        stop, stop it; the exit code.

        `on_held` runs once the row is ours (the CLI writes its pid file then).
        """
        self._role.take()
        if on_held is not None:
            on_held()
        with signals.relayed(_SIGNALS, self._on_signal):
            return self._run_held()

    def _run_held(self) -> int:
        event(self._log, "orchestrator.starting", pid=self._pid, workers=len(self.supervisor.slots))
        if self._withheld:  # names only: never a value
            event(self._log, "orchestrator.env_withheld", names=",".join(self._withheld))
        log_ignored(self._log, "orchestrator", os.environ)
        self.supervisor.start()
        lines = self._start_task_lines()
        notifier = self._start_notifier()
        status = self._start_status_file()
        mirror = self._start_mirror()
        self._guarded(self._role.start)
        held = self._loop()
        if held:
            self._stop_pool()
        for service in (lines, notifier, status, mirror):
            if service is not None:
                service.stop()
        self._guarded(lambda: self._role.leave(stopped=held))
        return 0 if held else 1

    def _start_task_lines(self) -> TaskLines | None:
        if self._lines_out is None:
            return None
        return TaskLines(
            self._store, slot_of=self.supervisor.slot_of, out=self._lines_out, log=self._log
        )

    def _start_notifier(self) -> Notifier | None:
        """The notifier, when `[notify]` names a channel and its namespaces this one."""
        settings = self._settings
        channels: list[Channel] = []
        if self._notify is not None:
            env = {k: v for k, v in self._env.items() if k != PROVIDER_ENV_VARIABLE}
            channels.append(Command(self._notify, env))
        if settings.notify_url:
            from corral.runtime.pool.webhook import Webhook  # noqa: PLC0415 - urllib: only with one

            channels.append(Posted(Webhook(settings.notify_url)))
        if settings.notify_ntfy:
            from corral.runtime.pool.ntfy import Ntfy  # noqa: PLC0415 - as the webhook's

            channels.append(Ntfy(settings.notify_ntfy))
        if not channels:
            return None
        role = self._role
        only = NoticeFilter(
            kinds=settings.notify_events,
            queues=settings.notify_queues,
            namespaces=settings.notify_namespaces,
        )
        return Notifier(
            self._store,
            channels,
            leading=lambda: role.leading,
            log=self._log,
            only=only,
            dead_every_s=settings.notify_dead_every_s,
        )

    def _start_status_file(self) -> StatusFile | None:
        path = self._settings.status_file
        if not path:
            return None
        interval_s = self._settings.status_interval_s
        return StatusFile(self._store, path, interval_s=interval_s, log=self._log)

    def _start_mirror(self) -> Mirror | None:
        """`[files] mirror`: `.corral/state/`, rebuilt from the store now (mirror.py)."""
        if not self._settings.files_mirror:
            return None
        from corral.runtime.pool.mirror import Mirror, mirror_dir  # noqa: PLC0415 - only with it

        folder = mirror_dir(self._place.db, self._store.namespace)
        resync_s = self._settings.heartbeat_interval_s
        return Mirror(self._store, folder, resync_s=resync_s, log=self._log)

    def _loop(self) -> bool:
        """Until a stop is asked; False if another orchestrator took the row meanwhile."""
        s = self._settings
        reconciles = Every(
            s.reconcile_interval_s,
            lambda: self._guarded(self._role.on_interval),
            clock=self._clock,
            first_s=s.reconcile_interval_s,
        )
        beats = Every(self._beat_interval_s, self._beat, clock=self._clock, first_s=0.0)
        fires = Every(
            s.scheduler_interval_s,
            lambda: self._guarded(self._fire_schedules),
            clock=self._clock,
            first_s=s.scheduler_interval_s,
        )
        repair_at = math.inf  # monotonic: when the repair next has something to do
        while self._stop_grace_s is None:
            # While the store is out only beats probe it: a pass must not run before the
            # beat that ends the outage has told the passes to forgive its silence.
            out = self._outage.ongoing
            self._wait_until(
                beats.due_at, *(() if out else (reconciles.due_at, fires.due_at, repair_at))
            )
            changed = self.supervisor.tick()
            if not out and self._clock.monotonic() >= repair_at:
                repair_at = self._repair_at()  # asked again: a heartbeat may have moved it
                if repair_at <= self._clock.monotonic() + DUE_MARGIN_S:
                    reconciles.bring_forward(0.0)
            passed = None if out else reconciles.run_if_due()
            if passed is False:  # the store is out: probe soon
                beats.bring_forward(self._outage.retry_s())
            if not self._outage.ongoing and fires.run_if_due() is False:
                beats.bring_forward(self._outage.retry_s())
            beat = beats.run_if_due(force=changed or self._upkeep.reconciled)
            if beat is False:
                return False
            if (passed or beat) and not self._outage.ongoing:
                # Asked after each pass and each beat: a heartbeat interval apart at most,
                # so the mark of a worker that registers and falls silent is never missed.
                repair_at = self._repair_at()
            if self._store_back:  # back after an outage: reconcile (or contest) at once
                self._store_back = False
                reconciles.bring_forward(0.0)
        return True

    def _repair_at(self) -> float:
        """When (monotonic) the leader's repair next has something to do by time alone,
        a little after, so the pass finds it due; never, for a standby, or while the
        store cannot say."""
        if not self._role.leading:
            return math.inf
        began_at = self._clock.monotonic()
        try:
            in_s = self._upkeep.repair_due_in_s()
        except StoreError as exc:
            self._outage.failed(exc, began_at=began_at)
            return math.inf
        return math.inf if in_s is None else self._clock.monotonic() + in_s + DUE_MARGIN_S

    def _fire_schedules(self) -> None:
        """A scheduler pass, if this orchestrator leads (a standby's fires would be made
        once all the same, by their keys, but would only cost the store)."""
        if self._role.leading:
            self._upkeep.fire_schedules()

    def _guarded(self, call: Callable[[], object]) -> bool:
        """`call()`; False if the store could not be reached (the outage noted)."""
        began_at = self._clock.monotonic()
        try:
            call()
        except StoreError as exc:
            self._outage.failed(exc, began_at=began_at)
            return False
        self._note_slow(began_at)
        return True

    def _note_slow(self, began_at: float) -> None:
        """A call that got through, but only after waiting as long as an outage: one it was
        (workers could not heartbeat meanwhile either), and the next beat ends it."""
        waited_s = self._clock.monotonic() - began_at
        if waited_s > max(SLOW_CALL_S, self._settings.heartbeat_interval_s):
            slow = StoreError(f"a store call waited {waited_s:.1f} s")
            self._outage.failed(slow, began_at=began_at)

    def _beat_interval_s(self) -> float:
        if self._outage.ongoing:  # each beat probes the store
            return self._outage.retry_s()
        beat_s = self._settings.heartbeat_interval_s
        return min(beat_s, STARTING_BEAT_S) if self.supervisor.starting() else beat_s

    def _wait_until(self, *due_at: float) -> None:
        """Wait on the clock until the earliest due time (the pool's too) or a wake-up."""
        due = min(*due_at, self.supervisor.next_due() or min(due_at))
        self._clock.wait(self._wake, max(0.0, due - self._clock.monotonic()))
        self._wake.clear()

    def _beat(self) -> bool:
        """Note registrations, rotate logs, beat the role's rows; False once the row that
        makes this orchestrator what it is went to another.

        A store that cannot be reached now costs one beat, not the pool: the outage is
        noted and the next beat, soon, probes it. The first to get through ends the outage:
        the workers that exited meanwhile are recovered, and the interval runs at once.
        """
        self.supervisor.rotate_logs()
        began_at = self._clock.monotonic()
        try:
            self.supervisor.note_registrations()
            held = self._role.beat(
                self.supervisor.slot_rows(),
                reconciled=self._upkeep.reconciled,
                stopping=self._stop_grace_s is not None,
            )
        except StoreError as exc:
            self._outage.failed(exc, began_at=began_at)
            return True
        self._upkeep.reconciled = False
        self._note_slow(began_at)
        if self._outage.reached():
            self._store_back = True
            self._guarded(self._after_outage)
        if not held:  # a newer orchestrator judged us dead: it adopts our workers
            event(self._log, "orchestrator.row_lost", logging.ERROR, pid=self._pid)
        return held

    def _after_outage(self) -> None:
        """The store is back: the passes stop holding the outage's silence against workers
        and leases, and the pool's workers that exited meanwhile are recovered now."""
        self._upkeep.store_back()
        self.supervisor.recover_pending()

    # -- stop ----------------------------------------------------------------------------

    def request_stop(self, grace_s: float) -> None:
        """Stop the pool, giving running tasks up to `grace_s` (0: give them back now)."""
        current = self._stop_grace_s
        self._stop_grace_s = grace_s if current is None else min(current, grace_s)
        self._wake.set()

    def _stop_pool(self) -> None:
        grace_s = self._granted_grace_s()
        event(self._log, "orchestrator.stopping", grace_s=grace_s)
        self.supervisor.stop(grace_s)
        # A leader keeps reconciling while its pool drains: the grace can be long, and
        # other hosts' or bash loops' dead workers must not wait for it to end.
        interval_s = self._settings.reconcile_interval_s
        reconciles = Every(
            interval_s,
            lambda: self._guarded(self._role.on_stopping_interval),
            clock=self._clock,
            first_s=interval_s,
        )
        while not self.supervisor.all_stopped():
            out = self._outage.ongoing  # then beats probe the store, and no pass runs
            probe_at = self._clock.monotonic() + self._outage.retry_s()
            self._wait_until(probe_at if out else reconciles.due_at)
            if (self._stop_grace_s or 0.0) < grace_s:  # asked again, more urgently
                grace_s = self._stop_grace_s or 0.0
                self.supervisor.stop(grace_s)
            self.supervisor.tick()
            if not out:
                reconciles.run_if_due()
            self._beat()
        self._beat()

    def _granted_grace_s(self) -> float:
        """The grace the role grants running tasks; the store out, the one asked for (the
        pool stops all the same)."""
        asked_s = self._stop_grace_s or 0.0
        began_at = self._clock.monotonic()
        try:
            return self._role.stop(asked_s)
        except StoreError as exc:
            self._outage.failed(exc, began_at=began_at)
            return asked_s

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        """On the signal relay's thread (runtime/signals.py), one signal after another."""
        immediate = signum == signal.SIGQUIT or (
            signum == signal.SIGINT and self._stop_grace_s is not None
        )
        self.request_stop(0.0 if immediate else DEFAULT_STOP_TIMEOUT_S)
        event(self._log, "orchestrator.signal", signal=signal.Signals(signum).name)


def _preflight(settings: Settings, agents_folder: str) -> dict[str, preflight.Checked]:
    """Each group's options as `worker start` would resolve them, by group name, checked
    with its first slot's name (the branch names it will make); InvalidInput names the
    first option that cannot work, and its group if the file has groups."""
    checked = {}
    for n, group in enumerate(settings.pool.groups, start=1):
        try:
            checked[group.name] = preflight.check(
                group.options,
                worker=f"{group.name}-1",
                policy=settings.worktree,
                agents_folder=agents_folder,
            )
        except InvalidInput as exc:
            if not settings.pool_groups:
                raise
            raise InvalidInput(f"pool.group[{n}].{exc.field}", exc.expected, exc.got) from None
    return checked
