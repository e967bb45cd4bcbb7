"""The review flow over a real repository: submit, approve (pinned), request changes, merge,
conflicts, and the refusals that change nothing."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import corral
from corral.foundation.errors import InvalidInput, Refused
from corral.foundation.settings import Settings
from corral.git.merging import GitBranches
from corral.git.worktrees import Worktrees
from corral.model.reviews import MergeStrategy
from corral.model.states import TaskStatus
from corral.model.tasks import NewTask
from corral.usecases import reviews

from .conftest import claim_into_worktree, commit_file, git


@pytest.fixture
def trees(repo: Path) -> Worktrees:
    """corral's worktrees of the test repository, default settings."""
    return Worktrees.open(str(repo), Settings().worktree)


@pytest.fixture
def branches(trees: Worktrees):
    """The review flow's factory for the test repository."""
    return lambda: GitBranches(trees)


@pytest.fixture
def work(store, settings, trees):
    """Claim task `task_id` as worker `name`, make its worktree, commit `files`, submit it."""

    def run(task_id: str, name: str, files: dict[str, str]) -> str:
        claim, path = claim_into_worktree(store, settings, trees, task_id, name, files)
        reviews.submit(store, task_id, token=claim.token, note="ready")
        return path

    return run


def _add(store, settings, title="edit"):
    return corral.enqueue(store, NewTask(title=title, requires_review=True), settings=settings)


def test_two_workers_same_file_second_merge_conflicts_then_resolves(
    store, settings, repo, branches, work
):
    """Both approved; the second merge conflicts, returns to ready with the file recorded,
    is fixed on its own branch by another worker and then merges."""
    first, second = _add(store, settings, "first"), _add(store, settings, "second")
    work(first.id, "w1", {"shared.txt": "one\nTWO by w1\nthree\n"})
    path2 = work(second.id, "w2", {"shared.txt": "one\ntwo by w2\nthree\n"})
    for task in (first, second):
        assert TaskStatus.APPROVED == reviews.approve(store, task.id, branches=branches).status
    merged = reviews.merge(store, first.id, branches=branches, strategy=MergeStrategy.MERGE)
    assert (TaskStatus.DONE, ()) == (merged.task.status, merged.conflicts)
    assert git(repo, "rev-parse", "main") == merged.merged_commit
    assert "one\nTWO by w1\nthree" == (repo / "shared.txt").read_text().strip()
    assert not Worktrees.open(str(repo), Settings().worktree).branch_exists(merged.task.branch)
    clash = reviews.merge(store, second.id, branches=branches, strategy=MergeStrategy.MERGE)
    assert (TaskStatus.READY, ("shared.txt",)) == (clash.task.status, clash.conflicts)
    assert ("shared.txt",) == store.reviews.get_review(second.id).conflict_files
    assert "merge conflict in shared.txt" == store.tasks.get_task(second.id).last_error
    assert merged.merged_commit == git(repo, "rev-parse", "main")  # nothing changed in git
    # w3 resumes on the same branch, in the same worktree, merges main in and resolves.
    task = store.tasks.get_task(second.id)
    assert "corral/w2/" + second.id == task.branch
    spec = corral.NewWorker(name="w3", hostname="h", pid=None)
    w3 = corral.register(store, spec, settings=settings).worker
    claim = corral.claim(store, second.id, w3.id, settings=settings)
    agent = subprocess.run(["git", "merge", "main"], cwd=path2, capture_output=True, check=False)
    assert 0 != agent.returncode  # the conflict, as the agent sees it
    Path(path2, "shared.txt").write_text("one\nTWO by w1, two by w2\nthree\n")
    git(path2, "commit", "--quiet", "-am", "resolve")
    reviews.submit(store, second.id, token=claim.token)
    reviews.approve(store, second.id, branches=branches)
    final = reviews.merge(store, second.id, branches=branches, strategy=MergeStrategy.MERGE)
    assert TaskStatus.DONE == final.task.status
    assert "one\nTWO by w1, two by w2\nthree\n" == (repo / "shared.txt").read_text()
    assert [] == [t.path for t in Worktrees.open(str(repo), Settings().worktree).trees()]


def _events(store, task_id):
    return [
        e.name for e in store.events.list_events(corral.EventFilter(task_id=task_id, limit=1000))
    ]


def test_merge_refuses_a_task_that_is_not_approved_and_changes_nothing(
    store, settings, repo, branches, work
):
    """In review, not approved: refused by name of its state; git and store unchanged."""
    task = _add(store, settings)
    work(task.id, "w1", {"a.txt": "a\n"})
    main = git(repo, "rev-parse", "main")
    seen = _events(store, task.id)
    with pytest.raises(Refused, match="it is in_review, not approved"):
        reviews.merge(store, task.id, branches=branches, strategy=MergeStrategy.MERGE)
    assert (main, seen) == (git(repo, "rev-parse", "main"), _events(store, task.id))


def test_approve_refuses_a_task_not_in_review(store, settings, branches):
    """A ready task cannot be approved; it stays ready."""
    task = _add(store, settings)
    with pytest.raises(Refused, match="it is ready, not in_review"):
        reviews.approve(store, task.id, branches=branches)
    assert TaskStatus.READY == store.tasks.get_task(task.id).status


def test_a_branch_that_moved_after_approval_is_not_merged_until_approved_again(
    store, settings, repo, branches, work
):
    """Approval pins the head: a later commit makes merge refuse, a new approval allows it."""
    task = _add(store, settings)
    path = work(task.id, "w1", {"a.txt": "a\n"})
    approved = reviews.approve(store, task.id, branches=branches)
    pinned = store.reviews.get_review(task.id).approved_commit
    assert git(path, "rev-parse", "HEAD") == pinned
    commit_file(path, "b.txt", "sneaked in\n")
    with pytest.raises(Refused, match="moved after approval"):
        reviews.merge(store, task.id, branches=branches, strategy=MergeStrategy.MERGE)
    assert TaskStatus.APPROVED == store.tasks.get_task(task.id).status == approved.status
    reviews.request_changes(store, task.id, note="look at b.txt")
    assert store.reviews.get_review(task.id).approved_commit is None


def test_approve_at_the_commit_shown_refuses_a_branch_that_moved_since(
    store, settings, repo, branches, work
):
    """`review show` names the head its diff is of; approving at that commit (whole or
    abbreviated) pins it; once the branch has moved, approving at the old one is refused
    and changes nothing; a malformed commit is bad input, before anything is read."""
    task = _add(store, settings)
    path = work(task.id, "w1", {"a.txt": "a\n"})
    shown = reviews.show(store, task.id, branches, full_diff=True)
    assert git(path, "rev-parse", "HEAD") == shown.head
    assert "a.txt" in (shown.diff or "")
    commit_file(path, "b.txt", "sneaked in after the review\n")
    with pytest.raises(Refused, match=f"is now at {git(path, 'rev-parse', 'HEAD')[:12]}"):
        reviews.approve(store, task.id, branches=branches, seen=shown.head[:12])
    assert TaskStatus.IN_REVIEW == store.tasks.get_task(task.id).status
    for bad in ("abc", "not-a-commit", "g" * 40):
        with pytest.raises(InvalidInput, match="commit: expected a commit id"):
            reviews.approve(store, task.id, branches=branches, seen=bad)
    again = reviews.show(store, task.id, branches)
    approved = reviews.approve(store, task.id, branches=branches, seen=again.head.upper())
    assert TaskStatus.APPROVED == approved.status
    assert again.head == store.reviews.get_review(task.id).approved_commit


def test_review_show_reads_again_while_a_commit_lands_and_gives_up_on_a_branch_that_keeps_moving(
    store, settings, repo, trees, work
):
    """An agent committing while its branch is shown: the diff and the head named are read
    again until they agree (one late commit: shown with it); a branch that moves at every
    read is refused after READS reads, not shown with a head its diff is not of."""
    task = _add(store, settings)
    path = work(task.id, "w1", {"a.txt": "a\n"})
    commits = iter(range(1, 100))

    class Committing(GitBranches):
        """git, and an agent's commit landing on the branch during each diff's read."""

        moves = 1

        def diff_stat(self, base: str, branch: str) -> str:
            if self.moves:
                self.moves -= 1
                commit_file(path, f"late-{next(commits)}.txt", "late\n")
            return super().diff_stat(base, branch)

    once = Committing(trees)
    shown = reviews.show(store, task.id, lambda: once)
    assert (git(path, "rev-parse", "HEAD"), True) == (shown.head, "late-1.txt" in shown.diff_stat)
    always = Committing(trees)
    always.moves = reviews.READS
    with pytest.raises(Refused, match=f"moved while it was read, {reviews.READS} times"):
        reviews.show(store, task.id, lambda: always)


def test_a_branch_deleted_behind_corrals_back_is_refused(store, settings, repo, branches, work):
    """Approve and merge name the missing branch; the task keeps its state."""
    task = _add(store, settings)
    path = work(task.id, "w1", {"a.txt": "a\n"})
    git(repo, "worktree", "remove", "--force", path)
    git(repo, "branch", "-D", store.tasks.get_task(task.id).branch)
    with pytest.raises(Refused, match="no longer exists"):
        reviews.approve(store, task.id, branches=branches)
    assert TaskStatus.IN_REVIEW == store.tasks.get_task(task.id).status


def test_uncommitted_changes_the_merge_would_overwrite_are_refused(
    store, settings, repo, branches, work
):
    """The base checkout has uncommitted changes to a file the merge touches: refused, the
    file named, nothing changes."""
    task = _add(store, settings)
    work(task.id, "w1", {"README": "from the branch\n"})
    reviews.approve(store, task.id, branches=branches)
    (repo / "README").write_text("edited, not committed\n")
    main = git(repo, "rev-parse", "main")
    with pytest.raises(Refused, match="uncommitted changes to README: commit or stash"):
        reviews.merge(store, task.id, branches=branches, strategy=MergeStrategy.MERGE)
    assert (TaskStatus.APPROVED, main) == (
        store.tasks.get_task(task.id).status,
        git(repo, "rev-parse", "main"),
    )


def test_uncommitted_changes_elsewhere_are_carried_over(store, settings, repo, branches, work):
    """The base checkout has uncommitted changes the merge does not touch: merged, and the
    changes are still there, uncommitted."""
    task = _add(store, settings)
    work(task.id, "w1", {"a.txt": "a\n"})
    reviews.approve(store, task.id, branches=branches)
    (repo / "README").write_text("edited, not committed\n")
    reviews.merge(store, task.id, branches=branches, strategy=MergeStrategy.MERGE)
    assert ("a\n", " M README") == (
        (repo / "a.txt").read_text(),
        " " + git(repo, "status", "--short"),
    )


def test_request_changes_returns_to_ready_with_the_note_and_a_fresh_budget(
    store, settings, trees, work
):
    """Same branch, note recorded for the next run, attempts back to 0."""
    task = _add(store, settings)
    work(task.id, "w1", {"a.txt": "a\n"})
    with pytest.raises(InvalidInput, match="note"):
        reviews.request_changes(store, task.id, note="  ")
    reopened = reviews.request_changes(store, task.id, note="add tests")
    assert (TaskStatus.READY, 0) == (reopened.status, reopened.attempts)
    assert "add tests" == store.reviews.get_review(task.id).changes_note
    plan = trees.plan("w9", task.id, "main", reopened.branch)
    assert (reopened.branch, True) == (plan.branch, plan.reuse)


@pytest.mark.parametrize("strategy", list(MergeStrategy))
def test_each_strategy_lands_the_branch_when_the_base_is_not_checked_out(
    store, settings, repo, branches, work, strategy
):
    """ff, merge and squash; with main checked out nowhere, the ref moves by compare-and-set.
    A merge commit names the branch it brought in; a squash commit is titled by the task."""
    git(repo, "checkout", "--quiet", "--detach")
    task = _add(store, settings)
    path = work(task.id, "w1", {"a.txt": "a\n", "b.txt": "b\n"})
    head = git(path, "rev-parse", "HEAD")
    reviews.approve(store, task.id, branches=branches)
    result = reviews.merge(store, task.id, branches=branches, strategy=strategy)
    main = git(repo, "rev-parse", "main")
    assert main == result.merged_commit
    parents = git(repo, "log", "-1", "--format=%P", "main").split()
    expected = {"ff": 1, "merge": 2, "squash": 1}[strategy]
    assert expected == len(parents)
    assert (main == head) == (strategy is MergeStrategy.FF)
    assert "b" == git(repo, "show", "main:b.txt")
    branch = store.tasks.get_task(task.id).branch
    subject = {
        MergeStrategy.FF: git(repo, "log", "-1", "--format=%s", head),
        MergeStrategy.MERGE: f"Merge {branch}: {task.title} ({task.id})",
        MergeStrategy.SQUASH: task.title,
    }[strategy]
    assert subject == git(repo, "log", "-1", "--format=%s", "main")
    assert () == result.backups


def test_ff_refuses_a_branch_behind_its_base(store, settings, repo, branches, work):
    """The base moved on: no fast-forward, the task stays approved."""
    task = _add(store, settings)
    work(task.id, "w1", {"a.txt": "a\n"})
    reviews.approve(store, task.id, branches=branches)
    commit_file(repo, "other.txt", "other\n")
    with pytest.raises(Refused, match="cannot be fast-forwarded"):
        reviews.merge(store, task.id, branches=branches, strategy=MergeStrategy.FF)
    assert TaskStatus.APPROVED == store.tasks.get_task(task.id).status


def test_pending_lists_reviews_and_flags_stale_ones(store, settings, clock, work):
    """A review older than review_stale_after is flagged; approved ones are listed too."""
    task = _add(store, settings)
    work(task.id, "w1", {"a.txt": "a\n"})
    assert [False] == [p.stale for p in reviews.pending(store, stale_after_s=60)]
    clock.advance(61)
    listed = reviews.pending(store, stale_after_s=60)
    assert [(task.id, True, "ready")] == [(p.task.id, p.stale, p.review.note) for p in listed]


def test_a_task_without_a_branch_is_approved_and_merged_without_git(store, settings):
    """No worktree was used: approve pins nothing, merge simply marks it done."""
    task = _add(store, settings)
    spec = corral.NewWorker(name="w1", hostname="h", pid=None)
    worker = corral.register(store, spec, settings=settings).worker
    corral.claim(store, task.id, worker.id, settings=settings)
    reviews.submit(store, task.id, note="done")

    def no_git():
        raise AssertionError("git was not needed")

    reviews.approve(store, task.id, branches=no_git)
    done = reviews.merge(store, task.id, branches=no_git, strategy=MergeStrategy.MERGE)
    assert TaskStatus.DONE == done.task.status


def test_a_queue_listed_in_review_queues_requires_review(store):
    """worktree.review_queues: its tasks go to in_review on success, others to done."""
    settings = Settings(review_queues=("code",))
    reviewed = corral.enqueue(store, NewTask(title="patch", queue="code"), settings=settings)
    plain = corral.enqueue(store, NewTask(title="report"), settings=settings)
    assert (True, False) == (reviewed.requires_review, plain.requires_review)


def test_a_merge_cut_short_before_it_was_recorded_completes_without_a_second_commit(
    store, settings, repo, trees, branches, work
):
    """git merged but the store still says approved (killed in between): merging again
    records it, and the base gets no further commit."""
    task = _add(store, settings)
    work(task.id, "w1", {"a.txt": "a\n"})
    reviews.approve(store, task.id, branches=branches)
    branch = store.tasks.get_task(task.id).branch
    landed = GitBranches(trees).merge(
        branch=branch, base="main", strategy=MergeStrategy.SQUASH, message="squashed"
    )
    result = reviews.merge(store, task.id, branches=branches, strategy=MergeStrategy.SQUASH)
    assert (TaskStatus.DONE, landed.merged_commit) == (result.task.status, result.merged_commit)
    assert landed.merged_commit == git(repo, "rev-parse", "main")


def test_review_show_of_a_landed_task_shows_what_landed(store, settings, repo, branches, work):
    """Merged, its branch deleted by corral: `show` neither fails nor calls it deleted
    outside corral; it names the landed commit and its diff against its first parent."""
    task = _add(store, settings)
    work(task.id, "w1", {"a.txt": "a\n"})
    reviews.approve(store, task.id, branches=branches)
    merged = reviews.merge(store, task.id, branches=branches, strategy=MergeStrategy.MERGE)
    commit_file(repo, "later.txt", "after the land\n")  # the base moved on since
    shown = reviews.show(store, task.id, branches, full_diff=True)
    assert merged.merged_commit == shown.landed_commit
    assert "a.txt | 1 +" in (shown.diff_stat or "")
    assert "+a" in (shown.diff or "") and "later.txt" not in (shown.diff or "")


def test_a_merge_where_git_knows_nobody_is_corrals(
    store, settings, repo, branches, work, tmp_path, monkeypatch
):
    """A fresh account with no git identity (git refuses to guess one): the squash commit is
    made as corral instead of failing the landing (with one, it is the user's: above)."""
    task = _add(store, settings)
    work(task.id, "w1", {"a.txt": "a\n"})
    reviews.approve(store, task.id, branches=branches)
    config = tmp_path / "gitconfig"
    config.write_text("[user]\n\tuseConfigOnly = true\n")
    for name in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME",
                 "GIT_COMMITTER_EMAIL", "EMAIL"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    result = reviews.merge(store, task.id, branches=branches, strategy=MergeStrategy.SQUASH)
    assert TaskStatus.DONE == result.task.status
    assert "corral <corral@localhost>" == git(repo, "log", "-1", "--format=%cn <%ce>", "main")
