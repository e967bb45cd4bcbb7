"""The record of where a task's work ended (reviews: outcome, backup_refs, branch_deleted),
on every store: SQLite, PostgreSQL and HTTP over loopback."""

from __future__ import annotations

from datetime import timedelta

import pytest

import corral
from corral.foundation.errors import CorralError
from corral.model.events import EventFilter
from corral.model.reviews import WorkOutcome
from corral.model.tasks import NewTask


def _claimed(store, settings):
    """A task claimed by a new worker, with its branch recorded: (task id, token)."""
    task = corral.enqueue(store, NewTask(title="edit"), settings=settings)
    spec = corral.NewWorker(name="w", hostname="h", pid=None)
    worker = corral.register(store, spec, settings=settings).worker
    claim = corral.claim(store, task.id, worker.id, settings=settings)
    store.reviews.record_branch(
        task.id,
        token=claim.token,
        branch="corral/w/t",
        base_ref="main",
        worktree_path="/repo/.corral/worktrees/t",
        actor=worker.id,
    )
    return task.id, claim.token


def test_an_outcome_is_recorded_under_the_claim_with_its_event(store, settings):
    """record_outcome under the held claim: the review says it, one task.outcome event."""
    task_id, token = _claimed(store, settings)
    store.reviews.record_outcome(task_id, token=token, outcome="no_change", actor="w")
    assert WorkOutcome.NO_CHANGE is store.reviews.get_review(task_id).outcome
    [noted] = store.events.list_events(EventFilter(task_id=task_id, names=("task.outcome",)))
    assert {"outcome": "no_change"} == noted.data


def test_an_outcome_under_a_token_no_longer_held_is_refused(store, settings):
    """A stale token records nothing."""
    task_id, token = _claimed(store, settings)
    with pytest.raises(CorralError):
        store.reviews.record_outcome(task_id, token=token + 1000, outcome="kept", actor="w")
    assert store.reviews.get_review(task_id).outcome is None


def test_disabled_tests_are_flagged_under_the_claim_with_their_event(store, settings):
    """record_tests_disabled under the held claim: the review lists the findings, one
    task.tests_disabled event; a stale token records nothing."""
    task_id, token = _claimed(store, settings)
    found = ("tests/test_a.py: @pytest.mark.skip", "tests/test_b.py: deleted")
    with pytest.raises(CorralError):
        store.reviews.record_tests_disabled(task_id, token=token + 1000, found=found, actor="w")
    assert () == store.reviews.get_review(task_id).tests_disabled
    store.reviews.record_tests_disabled(task_id, token=token, found=found, actor="w")
    assert found == store.reviews.get_review(task_id).tests_disabled
    names = ("task.tests_disabled",)
    [flagged] = store.events.list_events(EventFilter(task_id=task_id, names=names))
    assert {"found": list(found)} == flagged.data


def test_clean_ups_append_backup_refs_and_note_a_deletion(store, settings):
    """Each clean-up appends its backup refs (once each, oldest first); a deletion by
    corral sticks; a clean-up that did nothing records nothing."""
    task_id, token = _claimed(store, settings)
    store.reviews.record_cleanup(
        task_id, token=token, backups=("refs/a",), branch_deleted=False, actor="w"
    )
    store.reviews.record_cleanup(
        task_id, token=None, backups=(), branch_deleted=False, actor="prune"
    )
    store.reviews.record_cleanup(
        task_id, token=None, backups=("refs/a", "refs/b"), branch_deleted=True, actor="prune"
    )
    review = store.reviews.get_review(task_id)
    assert (("refs/a", "refs/b"), True) == (review.backup_refs, review.branch_deleted)
    noted = store.events.list_events(
        EventFilter(task_id=task_id, names=("task.branch_cleaned_up",))
    )
    assert 2 == len(noted)


def test_a_landing_and_a_submission_record_their_outcomes(store, settings):
    """record_landing records landed with the commit; submit records in_review."""
    task_id, token = _claimed(store, settings)
    store.reviews.record_landing(
        task_id, token=token, branch="corral/w/t", base_ref="main", merged_commit="c0ffee",
        actor="w",
    )  # fmt: skip
    review = store.reviews.get_review(task_id)
    assert (WorkOutcome.LANDED, "c0ffee") == (review.outcome, review.merged_commit)
    other, other_token = _claimed(store, settings)
    store.reviews.submit(other, token=other_token, note=None, pr_url=None, actor="w")
    assert WorkOutcome.IN_REVIEW is store.reviews.get_review(other).outcome


def test_a_clean_up_under_another_tasks_claim_is_refused(store, settings):
    """The claim a clean-up names must be one of its task's: nothing recorded otherwise."""
    task_id, _ = _claimed(store, settings)
    _, other_token = _claimed(store, settings)
    with pytest.raises(CorralError):
        store.reviews.record_cleanup(
            task_id, token=other_token, backups=("refs/x",), branch_deleted=True, actor="w"
        )
    assert ((), False) == (
        store.reviews.get_review(task_id).backup_refs,
        store.reviews.get_review(task_id).branch_deleted,
    )


def test_where_work_ended_lists_the_oldest_kept_and_the_newest_landed(store, settings, clock):
    """work_ends: counts by outcome recorded since a moment; the done tasks whose branch is
    kept, oldest first (a running one is not for a person yet); the landed, newest first
    with their commits; a later write that leaves the outcome alone keeps its time."""

    def ended(outcome: str, commit: str | None = None, *, done: bool = True) -> str:
        task_id, token = _claimed(store, settings)
        if commit is None:
            store.reviews.record_outcome(task_id, token=token, outcome=outcome, actor="w")
        else:
            store.reviews.record_landing(
                task_id, token=token, branch="b", base_ref="main", merged_commit=commit,
                actor="w",
            )  # fmt: skip
        if done:
            corral.complete(store, task_id, token=token)
        clock.advance(10)
        return task_id

    old_kept = ended("kept")
    since = store.now()
    first, kept, second = ended("landed", "c1"), ended("kept"), ended("landed", "c2")
    ended("kept", done=False)
    ended("no_change")
    store.reviews.record_cleanup(first, token=None, backups=(), branch_deleted=True, actor="prune")
    work = store.reviews.work_ends(since=since, limit=10)
    assert {"landed": 2, "kept": 2, "no_change": 1} == dict(work.counts)
    assert [old_kept, kept] == [w.task_id for w in work.kept]
    assert [(second, "c2"), (first, "c1")] == [(w.task_id, w.commit) for w in work.landed]
    assert ["corral/w/t", "corral/w/t"] == [w.branch for w in work.kept]
    assert [since + timedelta(seconds=20), since] == [w.ended_at for w in work.landed]
    one = store.reviews.work_ends(since=since, limit=1)
    assert ([old_kept], [second]) == (
        [w.task_id for w in one.kept],
        [w.task_id for w in one.landed],
    )
