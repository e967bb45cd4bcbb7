"""The task page says where a task's work ended, served by a real `corral serve` on
loopback (no browser needed: the page's HTML is read)."""

from __future__ import annotations

import urllib.request

from tests.git.conftest import claim_into_worktree

from corral.foundation.settings import Settings
from corral.git import merging, worktrees
from corral.model.reviews import MergeStrategy
from corral.model.tasks import NewTask
from corral.usecases import landings, reviews
from corral.usecases.tasks import enqueue


def test_a_landed_task_whose_branch_corral_deleted_shows_landed_not_deleted_outside(
    repo_server,
):
    """Approved and merged (corral removed its branch): the page names the outcome and the
    commit, and never says "deleted outside corral"; `branches` says landed."""
    server = repo_server
    root = server.folder
    with server.store() as store:
        task = enqueue(store, NewTask(title="greet", requires_review=True))
        trees = worktrees.Worktrees.open(str(root), Settings().worktree)
        held, _ = claim_into_worktree(store, Settings(), trees, task.id, "w1", {"hi.txt": "hi\n"})
        reviews.submit(store, task.id, token=held.token, note=None)

        def repo() -> merging.GitBranches:
            return merging.GitBranches(trees)

        reviews.approve(store, task.id, branches=repo)
        merged = reviews.merge(store, task.id, branches=repo, strategy=MergeStrategy.MERGE)
        [state] = landings.branch_states(store, repo())
    assert ("landed", "landed", merged.merged_commit) == (state.where, state.state, state.sha)
    server.start()
    url = f"http://127.0.0.1:{server.port}/tasks/{task.id}"
    with urllib.request.urlopen(url, timeout=30) as answer:
        page = answer.read().decode()
    assert "deleted outside corral" not in page
    assert f'landed at <span class="mono">{merged.merged_commit[:12]}</span>' in page
    assert "deleted by corral" in page


def test_a_task_whose_run_disabled_tests_shows_what_it_disabled(repo_server):
    """Flagged under its claim (git/disabled_tests.py's findings): the task page lists
    each finding under Tests disabled."""
    server = repo_server
    with server.store() as store:
        task = enqueue(store, NewTask(title="green it", requires_review=True))
        trees = worktrees.Worktrees.open(str(server.folder), Settings().worktree)
        held, _ = claim_into_worktree(store, Settings(), trees, task.id, "w1", {"a.txt": "a\n"})
        found = ("tests/test_a.py: @pytest.mark.skip", "tests/test_b.py: deleted")
        store.reviews.record_tests_disabled(task.id, token=held.token, found=found, actor="w1")
    server.start()
    url = f"http://127.0.0.1:{server.port}/tasks/{task.id}"
    with urllib.request.urlopen(url, timeout=30) as answer:
        page = answer.read().decode()
    assert (
        '<dt>Tests disabled</dt><dd class="error"><code>tests/test_a.py: @pytest.mark.skip'
        "</code><br><code>tests/test_b.py: deleted</code></dd>"
    ) in page
