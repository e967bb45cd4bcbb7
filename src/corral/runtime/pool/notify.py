"""`[notify] command` and `[notify] url`: a user's command, and an HTTP endpoint, told of
what needs a person, never of every turn.

The orchestrator follows the event log from its start and, while it leads (one notifies
per store however many orchestrators share it), runs the command once for each event
that asks for attention:

    task.failed                          a task failed for good (retries are not news)
    task.waiting                         a task waits for a person (the run changed
                                         nothing, was refused, asked a question)
    run.waiting                          a run still going waits: its agent asked a
                                         question, or it fell silent (when a question ends
                                         the run, its task's task.waiting with the same
                                         reason is not sent again: one question, one
                                         notice)
    task.submitted, or a task completed  a task waits for review
        into in_review ("review.requested")
    task.pr_closed                       a task's pull request was closed unmerged: it
                                         waits in review for a person (`land = pr`)
    provider.parked                      a provider account hit its usage limit
    review.stale                         a review waited past review_stale_after (once)

The command (split like `--exec`, never through a shell) gets the event's JSON shape on
stdin and `CORRAL_NOTICE` (the kind above), `CORRAL_EVENT_ID`, `CORRAL_TASK_ID` in its
environment, which is otherwise the pool workers' (filtered by `env.deny`). It runs one
at a time, each bounded by NOTIFY_TIMEOUT_S; a command that fails or hangs is logged and
the next event still goes out. With `url`, the same event is POSTed there as JSON
(runtime/pool/webhook.py: one try, bounded, the URL's secrets never logged), after the
command when both are set.
"""

from __future__ import annotations

import json
import logging
import shlex
import subprocess
from collections.abc import Callable
from typing import TYPE_CHECKING

from corral.clock import SystemClock
from corral.errors import InvalidInput
from corral.logs import event
from corral.model.events import Event, EventFilter
from corral.model.states import TaskStatus
from corral.runtime.follow import Follower
from corral.store import Store
from corral.threads import ThreadService

if TYPE_CHECKING:
    from corral.runtime.pool.webhook import Webhook

NOTIFY_TIMEOUT_S = 30.0
POLL_S = 0.5  # a notice is for a person: half a second late is on time
NOTICE_EVENTS = ("task.failed", "task.waiting", "run.waiting", "task.submitted",
                 "task.completed", "task.pr_closed", "provider.parked",
                 "review.stale")  # fmt: skip
REVIEW_REQUESTED = "review.requested"


def notice_of(ev: Event) -> str | None:
    """The kind of notice `ev` calls for, or None (a task completed straight to done)."""
    if ev.name in ("task.submitted", "task.completed"):
        return REVIEW_REQUESTED if ev.to_status == TaskStatus.IN_REVIEW else None
    return ev.name if ev.name in NOTICE_EVENTS else None


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


class Notifier(ThreadService):
    """A daemon thread running the notify command (`argv`, None: none) and POSTing to the
    webhook (None: none) for each notice from now on."""

    def __init__(
        self,
        store: Store,
        argv: tuple[str, ...] | None,
        *,
        leading: Callable[[], bool],
        env: dict[str, str],
        log: logging.Logger,
        webhook: Webhook | None = None,
    ) -> None:
        super().__init__("corral-notify")
        self._argv, self._leading, self._env, self._log = argv, leading, env, log
        self._webhook = webhook
        self._asked: dict[str, str] = {}  # task id -> the reason its run.waiting was sent
        flt = EventFilter(names=NOTICE_EVENTS, limit=0)  # none from before now
        self._follower = Follower(
            store, flt, clock=SystemClock(), on_outage=self._outage, poll_s=POLL_S, listen=False
        )
        self.start()

    def _run(self) -> None:
        self._follower.run(self._on_event)

    def _interrupt(self) -> None:
        self._follower.stop()

    def _outage(self, message: str) -> None:
        event(self._log, "notify.store_unreachable", logging.WARNING, error=message)

    def _on_event(self, ev: Event) -> None:
        kind = notice_of(ev)
        if kind is None or not self._leading() or self._told_already(ev):
            return
        if self._argv is not None:
            self._run_command(kind, ev, self._argv)
        if self._webhook is not None:
            self._post(kind, ev, self._webhook)

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

    def _post(self, kind: str, ev: Event, webhook: Webhook) -> None:
        error = webhook.post(ev.to_dict(), notice=kind, event_id=ev.id)
        if error is not None:
            event(self._log, "notify.failed", logging.WARNING, notice=kind, url=webhook.shown,
                  error=error)  # fmt: skip
            return
        event(self._log, "notify.sent", notice=kind, event_id=ev.id, task_id=ev.task_id,
              url=webhook.shown)  # fmt: skip

    def _run_command(self, kind: str, ev: Event, argv: tuple[str, ...]) -> None:
        env = {
            **self._env,
            "CORRAL_NOTICE": kind,
            "CORRAL_EVENT_ID": str(ev.id),
            "CORRAL_TASK_ID": ev.task_id or "",
        }
        try:
            done = subprocess.run(  # noqa: S603 - the user's own configured command
                argv,
                input=json.dumps(ev.to_dict()) + "\n",
                text=True,
                env=env,
                capture_output=True,
                timeout=NOTIFY_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            event(self._log, "notify.failed", logging.WARNING, notice=kind, error=str(exc))
            return
        if done.returncode != 0:
            tail = done.stderr.strip()[-300:]
            event(self._log, "notify.failed", logging.WARNING, notice=kind,
                  status=done.returncode, error=tail)  # fmt: skip
            return
        event(self._log, "notify.sent", notice=kind, event_id=ev.id, task_id=ev.task_id)
