"""Use cases of tasks outside their claims: enqueue, cancel, retry, answer, reprioritise.

Plain functions over a `Store`; the claim cycle (claim, renew, release, defer, complete,
fail) is corral.usecases.claims. Task records and the state machine are in corral.model.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from corral.foundation import documents
from corral.foundation.documents import MAX_INT32
from corral.foundation.errors import InvalidTransition, Refused
from corral.foundation.settings import Settings
from corral.model.actors import OPERATOR
from corral.model.states import TaskStatus
from corral.store import Store

if TYPE_CHECKING:
    from corral.model.budgets import BudgetRaise
    from corral.model.tasks import NewTask, Task

DEFAULTS = Settings()


def enqueue(
    store: Store, spec: NewTask, *, settings: Settings = DEFAULTS, parent_token: int | None = None
) -> Task:
    """Add a task; attempts and backoff default from `settings` when the spec leaves them.

    A task of a queue listed in `review_queues` requires review whatever the spec says.
    With `parent_token`, a subtask its parent's agent adds under its claim (MCP's
    `add_subtask`): the parent must still be held by that token, in the same transaction.
    """
    if spec.queue in settings.review_queues and not spec.requires_review:
        spec = replace(spec, requires_review=True)
    if parent_token is None:
        return store.tasks.enqueue(
            spec,
            max_attempts=settings.max_attempts,
            retry_base_s=settings.retry_base_s,
            actor=OPERATOR,
        )
    return store.tasks.enqueue(
        spec,
        max_attempts=settings.max_attempts,
        retry_base_s=settings.retry_base_s,
        actor=f"token:{parent_token}",
        parent_token=parent_token,
    )


def cancel(store: Store, task_id: str, *, reason: str | None = None) -> Task:
    """Cancel a task that has not finished; a worker holding it finds its token stale."""
    return store.tasks.cancel(task_id, reason=reason, actor=OPERATOR)


def retry(store: Store, task_id: str) -> Task:
    """Put a failed, cancelled or waiting task back in the queue with a fresh attempt budget. A done
    task is final: one whose work never landed is told to `corral land` instead."""
    try:
        return store.tasks.retry(task_id, actor=OPERATOR)
    except InvalidTransition as exc:
        hint = _land_instead(store, task_id)
        if hint is None:
            raise
        raise Refused(f"{exc.message}: {hint}") from None


def _land_instead(store: Store, task_id: str) -> str | None:
    """Where a done task's work is, and how to land it, when it is not on its base."""
    from corral.model.reviews import WorkOutcome  # noqa: PLC0415 - a refusal only

    task = store.tasks.get_task(task_id)
    if task.status is not TaskStatus.DONE or not task.branch:
        return None
    review = store.reviews.get_review(task_id)
    if review.outcome is WorkOutcome.LANDED or not review.base_ref:
        return None
    where = (
        f"backup ref {review.backup_refs[-1]}" if review.backup_refs else f"branch {task.branch}"
    )
    return (
        f"its work is not on {review.base_ref} but in {where}: land it with `corral land {task_id}`"
    )


def answer(
    store: Store, task_id: str, text: str | None = None, *, budget: BudgetRaise | None = None
) -> Task:
    """Answer a task waiting for a person: ready again, its next runs told `text` (an empty
    one is no text: carry on) and the reason it waited; `budget` raises its budget's cap
    (a wait at its budget: its next run resumes the same session with room to go on)."""
    text = text.strip() if text is not None else None
    if text:
        documents.check_text("answer", text)
    if budget is None:
        return store.tasks.answer(task_id, text or None, actor=OPERATOR)
    return store.tasks.answer(
        task_id,
        text or None,
        actor=OPERATOR,
        budget_cost=budget.cost_usd,
        budget_tokens=budget.tokens,
    )


def reprioritise(store: Store, task_id: str, priority: int) -> Task:
    """Give a task that has not finished a new priority: claims take higher ones first."""
    return store.tasks.set_task_priority(
        task_id, documents.whole("priority", priority, -MAX_INT32 - 1), actor=OPERATOR
    )
