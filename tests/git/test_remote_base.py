"""A remote as the base of record (`[worktree] remote`): two clones of one bare repository
stand for two hosts sharing one store; runners on either start from the remote's main and
land there, never forced, and either host shows, approves and merges the other's review."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

import corral
from corral.foundation.settings import Settings
from corral.git.merging import GitBranches
from corral.git.task_worktrees import Entered, TaskWorktrees
from corral.git.worktrees import Worktrees
from corral.model.reviews import MergeStrategy, WorkOutcome
from corral.model.states import TaskStatus
from corral.model.tasks import NewTask
from corral.usecases import landings, reviews
from corral.usecases.landings import Where

from .conftest import commit_file, git

POLICY = Settings(worktree_remote="origin").worktree


@dataclass
class Host:
    """One host's clone of the remote, and its runner's worktrees."""

    name: str
    clone: Path
    trees: Worktrees

    def runner(self, store) -> TaskWorktrees:
        return TaskWorktrees(
            store,
            self.trees,
            worker_name=self.name,
            base_ref="main",
            policy=POLICY,
            log=logging.getLogger("test"),
        )

    def branches(self) -> GitBranches:
        return GitBranches(Worktrees.open(str(self.clone), POLICY))


@pytest.fixture
def bare(tmp_path: Path) -> Path:
    """A bare repository whose main has one commit (README and a shared file)."""
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "--quiet", "--bare", "-b", "main", str(origin))
    seed = tmp_path / "seed"
    git(tmp_path, "clone", "--quiet", str(origin), str(seed))
    git(seed, "checkout", "--quiet", "-b", "main")
    commit_file(seed, "README", "hello\n")
    commit_file(seed, "shared.txt", "one\ntwo\nthree\n")
    git(seed, "push", "--quiet", "origin", "main")
    return origin


def host(tmp_path: Path, bare: Path, name: str) -> Host:
    """A clone of `bare` on `main`, as host `name` has it."""
    clone = tmp_path / name
    git(tmp_path, "clone", "--quiet", str(bare), str(clone))
    return Host(name=name, clone=clone, trees=Worktrees.open(str(clone), POLICY))


@pytest.fixture
def a(tmp_path: Path, bare: Path) -> Host:
    """Host A."""
    return host(tmp_path, bare, "a")


@pytest.fixture
def b(tmp_path: Path, bare: Path) -> Host:
    """Host B."""
    return host(tmp_path, bare, "b")


def start(store, settings, on: Host, *, review: bool = False, title: str = "edit"):
    """Add a task and claim it on host `on`, whose runner enters its worktree: (task, token,
    runner, entered)."""
    task = corral.enqueue(store, NewTask(title=title, requires_review=review), settings=settings)
    worker = corral.register(
        store, corral.NewWorker(name=on.name, hostname=on.name, pid=None), settings=settings
    ).worker
    claim = corral.claim(store, task.id, worker.id, settings=settings)
    runner = on.runner(store)
    entered = runner.enter(store.tasks.get_task(task.id), claim.token, worker.id)
    return store.tasks.get_task(task.id), claim.token, runner, entered


def finish(store, task, token: int, runner: TaskWorktrees) -> str | None:
    """What the runner does after a run that succeeded: land (the error, if any), report."""
    error = runner.land(task, token, runner.final_commit(task.id)).error
    if error is None:
        corral.complete(store, task.id, token=token)
    runner.leave(task.id, token)
    return error


def work(entered: Entered, name: str, text: str) -> None:
    """The agent's edit, committed on the task's branch."""
    commit_file(entered.path, name, text)


def test_a_land_reaches_the_remotes_main_at_the_recorded_sha(store, settings, bare, b):
    """The merge is pushed to the remote's main, its commit recorded; the host's own main
    stays where it was, and the branch and worktree go (nothing left to back up)."""
    local_main = git(b.clone, "rev-parse", "main")
    task, token, runner, entered = start(store, settings, b)
    work(entered, "a.txt", "a\n")
    assert None is finish(store, task, token, runner)
    merged = store.reviews.get_review(task.id).merged_commit
    assert git(bare, "rev-parse", "main") == merged
    assert "a\n" == git(bare, "show", "main:a.txt") + "\n"
    assert local_main == git(b.clone, "rev-parse", "main")
    assert "" == git(b.clone, "branch", "--list", entered.branch)
    assert "" == git(b.clone, "for-each-ref", "refs/corral/backup/")


def test_a_worktree_starts_from_the_remotes_main_not_the_hosts(store, settings, bare, a, b):
    """Host B's local main is behind: its task starts from what host A landed."""
    first, token, runner, entered = start(store, settings, a)
    work(entered, "a.txt", "a\n")
    assert None is finish(store, first, token, runner)
    _, _, _, on_b = start(store, settings, b)
    assert git(bare, "rev-parse", "main") == on_b.start_commit
    assert "a\n" == (Path(on_b.path) / "a.txt").read_text()


def test_a_push_refused_because_main_moved_merges_again_and_both_land(store, settings, bare, a, b):
    """Both hosts start from one main; A lands first, B's push is refused (its view of main
    is old), so B fetches, merges again on A's commit and pushes: both on main, no force."""
    t1, k1, r1, e1 = start(store, settings, a, title="one")
    t2, k2, r2, e2 = start(store, settings, b, title="two")
    work(e1, "one.txt", "1\n")
    work(e2, "two.txt", "2\n")
    assert None is finish(store, t1, k1, r1)
    assert None is finish(store, t2, k2, r2)
    first = store.reviews.get_review(t1.id).merged_commit
    second = store.reviews.get_review(t2.id).merged_commit
    assert git(bare, "rev-parse", "main") == second
    assert first == git(bare, "rev-parse", f"{second}^1")
    assert ("1", "2") == (git(bare, "show", "main:one.txt"), git(bare, "show", "main:two.txt"))


def test_hosts_landing_at_once_all_reach_main(store, settings, bare, a, b):
    """Three tasks on each host land at the same moment from both hosts: every change is on
    the remote's main at its recorded commit, each an ancestor of main (nothing forced)."""
    started = [start(store, settings, on, title=f"t{n}") for n, on in enumerate((a, b) * 3)]
    for n, (_, _, _, entered) in enumerate(started):
        work(entered, f"f{n}.txt", f"{n}\n")
    gate = threading.Barrier(len(started))
    errors: list[str | None] = []

    def land(task, token, runner) -> None:
        gate.wait()
        errors.append(finish(store, task, token, runner))

    threads = [
        threading.Thread(target=land, args=(task, token, runner))
        for task, token, runner, _ in started
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [None] * len(started) == errors
    main = git(bare, "rev-parse", "main")
    for n, (task, _, _, _) in enumerate(started):
        merged = store.reviews.get_review(task.id).merged_commit
        assert merged is not None
        git(bare, "merge-base", "--is-ancestor", merged, main)
        assert f"{n}" == git(bare, "show", f"main:f{n}.txt")


def test_a_real_conflict_goes_back_to_the_task_and_main_keeps_the_first(
    store, settings, bare, a, b
):
    """Both hosts change the same line: the second land fails its run with the conflict
    recorded and a note naming the remote's main; the remote's main has the first only."""
    t1, k1, r1, e1 = start(store, settings, a, title="one")
    t2, k2, r2, e2 = start(store, settings, b, title="two")
    work(e1, "shared.txt", "one\nmine\nthree\n")
    work(e2, "shared.txt", "one\ntheirs\nthree\n")
    assert None is finish(store, t1, k1, r1)
    error = finish(store, t2, k2, r2)
    assert "land conflict with main in shared.txt" == error
    review = store.reviews.get_review(t2.id)
    assert ("shared.txt",) == review.conflict_files
    assert review.changes_note == landings.conflict_note("origin/main", ("shared.txt",))
    assert store.reviews.get_review(t1.id).merged_commit == git(bare, "rev-parse", "main")


def test_a_conflicting_branch_is_kept_and_on_the_remote_for_any_host(store, settings, bare, a, b):
    """The land that conflicts notes the task's work kept (a land that needs a person) and
    pushes its branch to the remote, so the other host sees it and no edit is only on the
    host that ran it."""
    t1, k1, r1, e1 = start(store, settings, a, title="one")
    t2, k2, r2, e2 = start(store, settings, b, title="two")
    work(e1, "shared.txt", "one\nmine\nthree\n")
    work(e2, "shared.txt", "one\ntheirs\nthree\n")
    assert None is finish(store, t1, k1, r1)
    assert "land conflict with main in shared.txt" == finish(store, t2, k2, r2)
    assert WorkOutcome.KEPT == store.reviews.get_review(t2.id).outcome
    assert git(b.clone, "rev-parse", e2.branch) == git(bare, "rev-parse", e2.branch)


def test_a_review_run_on_one_host_is_shown_approved_and_merged_on_the_other(
    store, settings, bare, a, b
):
    """Host B's review branch is pushed as it enters review; host A (no such local branch)
    shows its diff, approves it and merges it onto the remote's main; the remote's copy of
    the branch is then deleted."""
    task, token, runner, entered = start(store, settings, b, review=True)
    work(entered, "b.txt", "b\n")
    assert None is finish(store, task, token, runner)
    assert TaskStatus.IN_REVIEW == store.tasks.get_task(task.id).status
    assert "" == git(a.clone, "branch", "--list", entered.branch)
    shown = reviews.show(store, task.id, a.branches)
    assert "b.txt | 1 +" in (shown.diff_stat or "")
    reviews.approve(store, task.id, branches=a.branches)
    merged = reviews.merge(store, task.id, branches=a.branches, strategy=MergeStrategy.MERGE)
    assert TaskStatus.DONE == merged.task.status
    assert git(bare, "rev-parse", "main") == merged.merged_commit
    assert "" == git(bare, "branch", "--list", entered.branch)


def test_branches_say_the_same_on_both_hosts(store, settings, bare, a, b):
    """A task landed from B, one kept in review from B, one landed from A: `branches` on
    either host gives the same place for each."""
    t1, k1, r1, e1 = start(store, settings, b)
    work(e1, "one.txt", "1\n")
    finish(store, t1, k1, r1)
    t2, k2, r2, e2 = start(store, settings, b, review=True)
    work(e2, "two.txt", "2\n")
    finish(store, t2, k2, r2)
    t3, k3, r3, e3 = start(store, settings, a)
    work(e3, "three.txt", "3\n")
    finish(store, t3, k3, r3)

    def places(on: Host) -> dict[str, str]:
        return {s.task.id: str(s.where) for s in landings.branch_states(store, on.branches())}

    expected = {t1.id: Where.LANDED, t2.id: Where.IN_REVIEW, t3.id: Where.LANDED}
    assert expected == places(a)
    assert expected == places(b)


def kept_on_b(store, settings, b):
    """A task run on host B with land = keep: its branch committed, pushed and kept; the
    task and the worktree it ran in."""
    keep = Settings(worktree_remote="origin", worktree_land="keep").worktree
    task = corral.enqueue(store, NewTask(title="kept"), settings=settings)
    worker = corral.register(store, corral.NewWorker(name="b", pid=None), settings=settings).worker
    claim = corral.claim(store, task.id, worker.id, settings=settings)
    runner = TaskWorktrees(
        store, b.trees, worker_name="b", base_ref="main", policy=keep, log=logging.getLogger("t")
    )
    entered = runner.enter(store.tasks.get_task(task.id), claim.token, worker.id)
    work(entered, "k.txt", "k\n")
    assert None is finish(store, store.tasks.get_task(task.id), claim.token, runner)
    return task, entered


def test_corral_land_on_another_host_lands_a_kept_branch(store, settings, bare, a, b, tmp_path):
    """With land = keep, host B's branch is pushed and kept; `corral land` on host A lands it
    from the remote's copy."""
    task, _ = kept_on_b(store, settings, b)
    landed = landings.land_kept(
        store, task.id, repo=a.branches(), strategy=MergeStrategy.MERGE, actor="operator"
    )
    assert git(bare, "rev-parse", "main") == landed.merged_commit
    assert "k" == git(bare, "show", "main:k.txt")


def test_a_task_run_again_on_another_host_continues_from_the_remotes_branch(
    store, settings, bare, a, b
):
    """Host B's review gets changes requested; host A runs the task next: its worktree has
    host B's commit, and its own lands on top after review."""
    task, token, runner, entered = start(store, settings, b, review=True)
    work(entered, "b.txt", "b\n")
    finish(store, task, token, runner)
    reviews.request_changes(store, task.id, note="more")
    worker = corral.register(
        store, corral.NewWorker(name="a", hostname="a", pid=None), settings=settings
    ).worker
    claim = corral.claim(store, task.id, worker.id, settings=settings)
    on_a = a.runner(store)
    again = on_a.enter(store.tasks.get_task(task.id), claim.token, worker.id)
    assert entered.branch == again.branch
    assert "b\n" == (Path(again.path) / "b.txt").read_text()
    work(again, "a.txt", "a\n")
    assert None is finish(store, store.tasks.get_task(task.id), claim.token, on_a)
    reviews.approve(store, task.id, branches=b.branches)
    merged = reviews.merge(store, task.id, branches=b.branches, strategy=MergeStrategy.MERGE)
    assert ("a", "b") == (git(bare, "show", "main:a.txt"), git(bare, "show", "main:b.txt"))
    assert git(bare, "rev-parse", "main") == merged.merged_commit


def test_a_push_the_remote_refuses_for_good_keeps_the_branch_there(store, settings, bare, b):
    """The remote's hook declines every push to main: nothing is forced, the task is done
    with its branch kept (and pushed, so any host can land it later)."""
    hook = bare / "hooks" / "pre-receive"
    hook.write_text(
        '#!/bin/sh\nwhile read old new ref; do [ "$ref" = refs/heads/main ] && exit 1; done\n'
        "exit 0\n"
    )
    hook.chmod(0o755)
    before = git(bare, "rev-parse", "main")
    task, token, runner, entered = start(store, settings, b)
    work(entered, "a.txt", "a\n")
    assert None is finish(store, task, token, runner)
    assert before == git(bare, "rev-parse", "main")
    assert git(b.clone, "rev-parse", entered.branch) == git(bare, "rev-parse", entered.branch)
    places = {s.task.id: s.where for s in landings.branch_states(store, b.branches())}
    assert {task.id: Where.KEPT} == places


def test_a_remote_whose_fetch_refspec_maps_nothing_still_tracks_the_pushed_base(
    store, settings, bare, b
):
    """Without `remote.origin.fetch`, git's push moves no remote-tracking ref: corral moves
    it, so the host's view of the base has the land (and the branch is found merged)."""
    git(b.clone, "config", "--unset-all", "remote.origin.fetch")
    task, token, runner, entered = start(store, settings, b)
    work(entered, "a.txt", "a\n")
    assert None is finish(store, task, token, runner)
    assert git(bare, "rev-parse", "main") == git(b.clone, "rev-parse", "refs/remotes/origin/main")
    assert "" == git(b.clone, "branch", "--list", entered.branch)


RACER = """
import sys
from corral.foundation.errors import Refused
from corral.git.worktrees import Worktrees
from corral.foundation.settings import Settings

role, clone, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
remote = Worktrees.open(clone, Settings(worktree_remote="origin").worktree).remote
refused = []
for n in range(rounds):
    try:
        if role == "push":
            tip = remote.fetch("main")
            tree = remote.git.out("rev-parse", tip + "^{tree}")
            remote.push_base(remote.git.out("commit-tree", tree, "-p", tip, "-m", str(n)), "main")
        else:
            remote.fetch("main")
    except Refused as exc:
        refused.append(exc.message)
print(len(refused), refused[:1])
"""


def test_a_fetch_beside_a_push_on_one_host_is_never_refused(bare, a):
    """Runners of one host land (push, which moves `origin/main` here) while others fetch
    the base: git's compare-and-set on the remote-tracking ref never fails a fetch."""
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, role, str(a.clone), "40"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for role in ("push", "fetch", "fetch", "fetch")
    ]
    said = [racer.communicate(timeout=120) for racer in racers]
    assert [("0 []\n", "")] * 4 == said


def test_a_backup_written_on_one_host_is_where_the_next_run_on_another_starts(
    store, settings, bare, a, b
):
    """Host A's task is cancelled mid-run leaving an uncommitted edit: its worktree goes,
    the backup ref pushed to the remote first; retried on host B (which never had that
    ref), the run starts from it, the edit in its worktree."""
    task, token, runner, entered = start(store, settings, a)
    (Path(entered.path) / "left.txt").write_text("uncommitted on a\n")
    corral.cancel(store, task.id)
    runner.leave(task.id, token)
    (ref,) = store.reviews.get_review(task.id).backup_refs
    assert git(a.clone, "rev-parse", ref) == git(bare, "rev-parse", ref)
    corral.retry(store, task.id)
    worker = corral.register(
        store, corral.NewWorker(name="b", hostname="b", pid=None), settings=settings
    ).worker
    claim = corral.claim(store, task.id, worker.id, settings=settings)
    again = b.runner(store).enter(store.tasks.get_task(task.id), claim.token, worker.id)
    assert (ref, entered.branch) == (again.restored_from, again.branch)
    assert "uncommitted on a\n" == (Path(again.path) / "left.txt").read_text()


def test_a_backup_the_remote_refuses_keeps_the_worktree(store, settings, bare, a):
    """A remote that will not take the backup ref: the worktree and its edit stay where
    they are (the clean-up fails), nothing removed before its backup is on the remote."""
    hook = bare / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho no >&2\nexit 1\n")
    hook.chmod(0o755)
    task, token, runner, entered = start(store, settings, a)
    (Path(entered.path) / "left.txt").write_text("uncommitted on a\n")
    corral.cancel(store, task.id)
    runner.leave(task.id, token)
    assert "uncommitted on a\n" == (Path(entered.path) / "left.txt").read_text()
    assert () == store.reviews.get_review(task.id).backup_refs


def test_corral_land_on_another_host_lands_work_left_only_in_a_backup_ref(
    store, settings, bare, a, b
):
    """Host B's kept branch is deleted, its work saved in a backup ref (pushed); `corral
    land` on host A, which never had the branch nor the ref, lands it from the remote's
    copy of the backup."""
    task, entered = kept_on_b(store, settings, b)
    b.trees.remove(entered.path)
    backup = b.trees.delete_branch(entered.branch, "main")
    assert backup is not None
    b.trees.remote.unpublish(entered.branch)
    store.reviews.record_cleanup(
        task.id, token=None, backups=(backup,), branch_deleted=False, actor="t"
    )
    landed = landings.land_kept(
        store, task.id, repo=a.branches(), strategy=MergeStrategy.MERGE, actor="operator"
    )
    assert git(bare, "rev-parse", "main") == landed.merged_commit
    assert "k" == git(bare, "show", "main:k.txt")
