"""`[notify] ntfy`: each notice published to an ntfy topic (`https://ntfy.sh/TOPIC`, or a
server of one's own), which a phone or a desktop subscribed to it shows at once.

ntfy takes a plain-text POST to the topic's URL, its message the body, with headers for
the rest (docs.ntfy.sh/publish):

    POST https://ntfy.sh/TOPIC   body: one line, "<task or worker or account>: <what>"
                                 Title: corral: <notice>
                                 Priority: high for a failure or a dead worker, else default
                                 Tags: the notice's emoji short code
                                 X-Corral-Notice, X-Corral-Event-Id as the webhook's

A protected topic takes `https://user:password@host/TOPIC` (HTTP Basic, as a webhook's
userinfo). The line names what the event is about and its reason, never its claim token.
"""

from __future__ import annotations

from corral.model.events import Event
from corral.runtime.pool.webhook import Webhook

URGENT = ("task.failed", "worker.dead")  # something stopped: a person should look soon
TAGS = {
    "task.failed": "x",
    "worker.dead": "skull",
    "task.waiting": "raising_hand",
    "run.waiting": "raising_hand",
    "review.requested": "eyes",
    "review.stale": "hourglass",
    "task.pr_closed": "no_entry",
    "provider.parked": "parking",
    "provider.unparked": "arrow_forward",
}

WHAT = {
    "task.failed": "failed for good",
    "worker.dead": "declared dead",
    "task.waiting": "waits for a person",
    "run.waiting": "its run waits for a person",
    "review.requested": "ready for review",
    "review.stale": "its review is waiting too long",
    "task.pr_closed": "pull request closed unmerged",
    "provider.parked": "parked",
    "provider.unparked": "unparked",
}


def message_of(notice: str, ev: Event) -> str:
    """The notice as one line a person reads on a lock screen."""
    data = ev.data or {}
    subject = ev.task_id or ev.worker_id or str(data.get("provider") or "corral")
    what = WHAT[notice] + (f" until {data['until']}" if data.get("until") else "")
    return f"{subject}: {what}" + (f" ({ev.reason})" if ev.reason else "")


class Ntfy:
    """A topic that takes notices, as the channel `ntfy`."""

    name = "ntfy"

    def __init__(self, url: str) -> None:
        self._hook = Webhook(url)
        self.shown = self._hook.shown

    def send(self, notice: str, ev: Event) -> str | None:
        """Publish the notice's line; None once the server took it, else why not."""
        headers = {
            "Content-Type": "text/plain; charset=utf-8",
            "Title": f"corral: {notice}",
            "Priority": "high" if notice in URGENT else "default",
            "Tags": TAGS[notice],
            "X-Corral-Notice": notice,
            "X-Corral-Event-Id": str(ev.id),
        }
        return self._hook.send(message_of(notice, ev).encode(), headers)
