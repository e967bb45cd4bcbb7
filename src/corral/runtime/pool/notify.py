"""`[notify]`: a user's command, an HTTP endpoint and an ntfy topic, told of what needs a
person, never of every turn.

The orchestrator follows the event log from its start and, while it leads (one notifies
per store however many orchestrators share it), queues a delivery on each channel set
for each event that asks for attention:

    task.failed                          a task failed for good (retries are not news)
    task.waiting                         a task waits for a person (the run changed
                                         nothing, was refused, asked a question, hit its
                                         budget)
    run.waiting                          a run still going waits: its agent asked a
                                         question, or it fell silent (when a question ends
                                         the run, its task's task.waiting with the same
                                         reason is not sent again: one question, one
                                         notice)
    task.submitted, or a task completed  a task waits for review
        into in_review ("review.requested")
    task.pr_closed                       a task's pull request was closed unmerged: it
                                         waits in review for a person (`land = pr`)
    worker.dead                          the reconciler declared a worker dead
    provider.parked                      a provider account hit its usage limit
    provider.set with unparked           `provider set --resume` ("provider.unparked")
    review.stale                         a review waited past review_stale_after (once)

A worker is told dead once per death, and a name at most once per `[notify] dead_every`
(an hour): a slot that crash-loops has a new worker of the same name die at each
incarnation, and one notice says so; the deaths held back are counted in the log
(`notify.dead_held`) and in the next notice of that name (`data.held_back`).

`[notify] events`, `queues` and `namespaces` narrow that (a queue filter passes the
notices about no task: a worker, an account). The command (split like `--exec`, never
through a shell) gets the notice's JSON (the event's shape without its claim token) on
stdin and `CORRAL_NOTICE` (the kind above), `CORRAL_EVENT_ID`, `CORRAL_TASK_ID` in its
environment, which is otherwise the pool workers' (filtered by `env.deny`), bounded by
NOTIFY_TIMEOUT_S. `url` gets the same JSON POSTed (runtime/pool/webhook.py), `ntfy` a
line of text (runtime/pool/ntfy.py). Each goes through its own delivery queue
(runtime/pool/deliveries.py): retried with backoff, never holding up the log's reading nor
another channel, recorded as `notify.delivered` or `notify.gave_up`.
"""

from __future__ import annotations

import json
import logging
import shlex
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from corral.foundation.clock import Clock, SystemClock
from corral.foundation.errors import InvalidInput, NotFound, StoreError
from corral.foundation.logs import event
from corral.foundation.records import replace
from corral.foundation.threads import ThreadService
from corral.model.events import Event, EventFilter
from corral.model.states import TaskStatus
from corral.runtime.follow import Follower
from corral.runtime.pool.deliveries import BACKOFF_S, Channel, Deliveries
from corral.store import Store

if TYPE_CHECKING:
    from corral.runtime.pool.webhook import Webhook

NOTIFY_TIMEOUT_S = 30.0
POLL_S = 0.5  # a notice is for a person: half a second late is on time
NOTICE_EVENTS = ("task.failed", "task.waiting", "run.waiting", "task.submitted",
                 "task.completed", "task.pr_closed", "worker.dead", "provider.parked",
                 "provider.set", "review.stale")  # fmt: skip
REVIEW_REQUESTED = "review.requested"
PROVIDER_UNPARKED = "provider.unparked"
# Every kind of notice, as `[notify] events` names them.
NOTICE_KINDS = ("task.failed", "task.waiting", "run.waiting", REVIEW_REQUESTED,
                "task.pr_closed", "worker.dead", "provider.parked", PROVIDER_UNPARKED,
                "review.stale")  # fmt: skip


def notice_of(ev: Event) -> str | None:
    """The kind of notice `ev` calls for, or None (a task completed straight to done, an
    account's settings changed with no unpark)."""
    if ev.name in ("task.submitted", "task.completed"):
        return REVIEW_REQUESTED if ev.to_status == TaskStatus.IN_REVIEW else None
    if ev.name == "provider.set":
        return PROVIDER_UNPARKED if (ev.data or {}).get("unparked") else None
    return ev.name if ev.name in NOTICE_EVENTS else None


def payload_of(ev: Event) -> dict[str, Any]:
    """What a notice carries: the event's JSON shape without its claim token (a fencing
    token a worker acts with: no business of a chat channel's)."""
    body = ev.to_dict()
    del body["token"]
    return body


def checked_kinds(kinds: tuple[str, ...]) -> tuple[str, ...]:
    """`[notify] events`, each a kind of notice; InvalidInput naming the first that is not."""
    for kind in kinds:
        if kind not in NOTICE_KINDS:
            raise InvalidInput("notify.events", "kinds among " + ", ".join(NOTICE_KINDS), kind)
    return kinds


@dataclass(frozen=True)
class NoticeFilter:
    """`[notify] events`, `queues`, `namespaces`: each empty passes everything."""

    kinds: tuple[str, ...] = ()
    queues: tuple[str, ...] = ()
    namespaces: tuple[str, ...] = ()

    def admits(self, kind: str, namespace: str, queue: Callable[[], str | None]) -> bool:
        """Whether a notice of `kind` in `namespace` goes out; `queue` (the queue of the
        task it is about, None for no task) is asked only when queues are named."""
        if self.kinds and kind not in self.kinds:
            return False
        if self.namespaces and namespace not in self.namespaces:
            return False
        if not self.queues:
            return True
        found = queue()
        return found is None or found in self.queues


def notify_argv(command: str) -> tuple[str, ...]:
    """`[notify] command` as an argument list; InvalidInput for unbalanced quotes."""
    try:
        argv = tuple(shlex.split(command))
    except ValueError as exc:
        raise InvalidInput(
            "notify.command", "a command line with balanced quotes", str(exc)
        ) from None
    if not argv:
        raise InvalidInput("notify.command", "a command to run", command)
    return argv


class Command:
    """`[notify] command`, as the channel `command`."""

    name = "command"

    def __init__(self, argv: tuple[str, ...], env: dict[str, str]) -> None:
        self._argv, self._env = argv, env
        self.shown = argv[0]

    def send(self, notice: str, ev: Event) -> str | None:
        """Run the command once; None when it exited 0, else why not."""
        env = {
            **self._env,
            "CORRAL_NOTICE": notice,
            "CORRAL_EVENT_ID": str(ev.id),
            "CORRAL_TASK_ID": ev.task_id or "",
        }
        try:
            done = subprocess.run(  # noqa: S603 - the user's own configured command
                self._argv,
                input=json.dumps(payload_of(ev)) + "\n",
                text=True,
                env=env,
                capture_output=True,
                timeout=NOTIFY_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return str(exc)
        if done.returncode != 0:
            return f"exit status {done.returncode}: {done.stderr.strip()[-300:]}"
        return None


class Posted:
    """`[notify] url`, as the channel `url`: the notice's JSON POSTed."""

    name = "url"

    def __init__(self, webhook: Webhook) -> None:
        self._webhook = webhook
        self.shown = webhook.shown

    def send(self, notice: str, ev: Event) -> str | None:
        """POST the notice; None once the endpoint took it."""
        return self._webhook.post(payload_of(ev), notice=notice, event_id=ev.id)


class DeadNotices:
    """`worker.dead` notices held to one per worker name per `every_s` (module docstring):
    the deaths of a name held back since its last notice, told with the next."""

    def __init__(self, every_s: float) -> None:
        self._every_s = every_s
        self._told: dict[str, float] = {}  # name -> when (monotonic s) it was last told
        self._held: dict[str, int] = {}  # name -> deaths held back since then

    def admit(self, name: str, now_s: float) -> int | None:
        """The deaths held back before this one when it is to be told, else None."""
        last = self._told.get(name)
        if last is not None and now_s - last < self._every_s:
            self._held[name] = self._held.get(name, 0) + 1
            return None
        self._told[name] = now_s
        return self._held.pop(name, 0)


class Notifier(ThreadService):
    """A daemon thread following the log, queueing a delivery on each of `channels` for
    each notice from now on that `only` passes."""

    def __init__(
        self,
        store: Store,
        channels: Sequence[Channel],
        *,
        leading: Callable[[], bool],
        log: logging.Logger,
        only: NoticeFilter | None = None,
        backoff_s: tuple[float, ...] = BACKOFF_S,
        dead_every_s: float = 3600.0,
        clock: Clock | None = None,
    ) -> None:
        super().__init__("corral-notify")
        self._store, self._channels, self._leading, self._log = store, channels, leading, log
        self._only = only or NoticeFilter()
        self._asked: dict[str, str] = {}  # task id -> the reason its run.waiting was sent
        self._dead = DeadNotices(dead_every_s)
        self._clock = clock or SystemClock()
        self._queues = [Deliveries(store, log=log, backoff_s=backoff_s) for _ in channels]
        flt = EventFilter(names=NOTICE_EVENTS, limit=0)  # none from before now
        self._follower = Follower(
            store, flt, clock=SystemClock(), on_outage=self._outage, poll_s=POLL_S, listen=False
        )
        self._follower.begin()  # an event committed once this returns is told
        self.start()

    def _run(self) -> None:
        self._follower.run(self._on_event)

    def _interrupt(self) -> None:
        self._follower.stop()
        for queue in self._queues:
            queue.ask_to_stop()
        for queue in self._queues:
            queue.join()

    def _outage(self, message: str) -> None:
        event(self._log, "notify.store_unreachable", logging.WARNING, error=message)

    def _on_event(self, ev: Event) -> None:
        kind = notice_of(ev)
        if kind is None or not self._leading() or self._told_already(ev):
            return
        if not self._only.admits(kind, self._store.namespace, lambda: self._queue_of(ev)):
            return
        if kind == "worker.dead":
            told = self._dead_notice(ev)
            if told is None:
                return
            ev = told
        for channel, queue in zip(self._channels, self._queues, strict=True):
            queue.put(kind, ev, channel)

    def _dead_notice(self, ev: Event) -> Event | None:
        """`ev` (a worker.dead) as it is told, with the deaths of its worker's name held back
        since that name's last notice; None: held back itself (`[notify] dead_every`)."""
        name = self._worker_name(ev)
        held = self._dead.admit(name, self._clock.monotonic())
        if held is None:
            event(self._log, "notify.dead_held", worker_id=ev.worker_id, name=name)
            return None
        if not held:
            return ev
        return replace(ev, data={**(ev.data or {}), "held_back": held})

    def _worker_name(self, ev: Event) -> str:
        """The name of the worker `ev` is about (its id when it cannot be read)."""
        worker_id = ev.worker_id or ""
        try:
            return self._store.workers.get_worker(worker_id).name
        except (NotFound, StoreError):
            return worker_id

    def _queue_of(self, ev: Event) -> str | None:
        """The queue of the task `ev` is about; None for no task, a task gone (pruned) or a
        store away: such a notice is told rather than lost."""
        if ev.task_id is None:
            return None
        try:
            return self._store.tasks.get_task(ev.task_id).queue
        except (NotFound, StoreError):
            return None

    def _told_already(self, ev: Event) -> bool:
        """True for a task.waiting whose reason its run's run.waiting already told; keeps
        one entry per task with a run waiting, dropped at the task's next notice."""
        if ev.task_id is None:
            return False
        if ev.name == "run.waiting":
            self._asked[ev.task_id] = ev.reason or ""
            return False
        asked = self._asked.pop(ev.task_id, None)
        return ev.name == "task.waiting" and asked is not None and asked == (ev.reason or "")
