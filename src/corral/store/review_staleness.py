"""A review that waits too long raises `review.stale`, once (seed 004's review_timeout).

The mark (`reviews.stale_noted_at`) and the event are written in one transaction by a
compare-and-set on the mark, so two reconcile passes at once (the orchestrator's and a
`corral reconcile`) raise it once between them. Sending the task back to work clears the
mark (store/reviews.py), so the next submission is a review of its own.
"""

from __future__ import annotations

from corral.foundation.durations import format_duration
from corral.store import journal
from corral.store.operations import OPERATOR, Repository, served


class ReviewStaleness(Repository):
    """Mark the reviews that went stale, each once, with its event."""

    NAME = "review_staleness"

    @served(OPERATOR)
    def note_stale_reviews(self, *, stale_after_s: float, actor: str) -> list[str]:
        """Mark each unmarked review waiting longer than `stale_after_s` and record its
        `review.stale`; the ids of the tasks marked by this call."""
        reason = f"waiting for review longer than {format_duration(stale_after_s)}"
        with self._driver.read() as tx:
            if not tx.all("any_unmarked_stale_review", stale_after_s=stale_after_s)[0]["found"]:
                return []
        with self._driver.write() as tx:
            found = tx.all("note_stale_reviews", stale_after_s=stale_after_s)
            marked = [row["task_id"] for row in found]
            for task_id in marked:
                journal.record(tx, "review.stale", actor=actor, task_id=task_id, reason=reason)
        return marked
