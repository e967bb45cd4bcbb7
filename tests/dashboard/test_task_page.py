"""The task page in a real browser: a review approved and merged onto a real repository,
changes requested, a transcript that grows while the page is open, escapes made inert."""

from __future__ import annotations

import json
import os

from playwright.sync_api import expect
from tests.conftest import run_under
from tests.dashboard.conftest import shoot
from tests.git.conftest import GIT_ENV, claim_into_worktree, commit_file, git

from corral.foundation.settings import Settings
from corral.git import worktrees
from corral.model.artifacts import Artifact
from corral.model.states import TaskStatus
from corral.model.tasks import NewTask
from corral.model.workers import NewWorker
from corral.store.location import runs_dir
from corral.usecases import workers
from corral.usecases.claims import claim
from corral.usecases.reviews import submit
from corral.usecases.tasks import enqueue


def _in_review(server, title: str, files: dict[str, str]) -> str:
    with server.store() as store:
        task = enqueue(store, NewTask(title=title, requires_review=True))
        trees = worktrees.Worktrees.open(str(server.folder), Settings().worktree)
        held, _ = claim_into_worktree(store, Settings(), trees, task.id, f"w{task.id}", files)
        submit(store, task.id, token=held.token, note="please look")
    return task.id


def test_approve_and_merge_a_review_lands_its_branch(repo_server, open_page):
    """The page shows the diff; Approve then Merge land the branch's commit on main."""
    server = repo_server
    task_id = _in_review(server, "add greeting", {"greeting.txt": "hi <there>\n"})
    server.start()
    page = open_page(f"{server.url}/tasks/{task_id}")
    expect(page.get_by_label("Diff against the base")).to_contain_text("+hi <there>")
    shoot(page, "review")
    page.get_by_role("button", name="Approve").click()
    expect(page.get_by_role("status")).to_contain_text("Approved")
    page.get_by_role("button", name="Merge").click()
    expect(page.get_by_role("status")).to_contain_text("Merged")
    assert "hi <there>\n" == git(server.folder, "show", "main:greeting.txt") + "\n"
    with server.store() as store:
        assert TaskStatus.DONE == store.tasks.get_task(task_id).status


def test_approve_refuses_a_branch_that_moved_after_the_page_showed_it(repo_server, open_page):
    """The Approve button carries the head whose diff the page showed: a commit added to
    the branch since makes it refuse in one line, and the task stays in review."""
    server = repo_server
    with server.store() as store:
        task = enqueue(store, NewTask(title="add greeting", requires_review=True))
        trees = worktrees.Worktrees.open(str(server.folder), Settings().worktree)
        held, path = claim_into_worktree(store, Settings(), trees, task.id, "w1", {"a.txt": "a\n"})
        submit(store, task.id, token=held.token, note="please look")
    server.start()
    page = open_page(f"{server.url}/tasks/{task.id}")
    expect(page.get_by_label("Diff against the base")).to_contain_text("+a")
    commit_file(path, "late.txt", "never shown to the reviewer\n")
    page.get_by_role("button", name="Approve").click()
    expect(page.get_by_role("alert")).to_contain_text("review it again")
    with server.store() as store:
        assert TaskStatus.IN_REVIEW == store.tasks.get_task(task.id).status


def test_a_review_run_on_another_host_is_approved_and_merged_onto_the_remote(
    server, open_page, tmp_path, monkeypatch
):
    """With `[worktree] remote`, the server's folder is host A's clone; the task ran on host
    B, whose branch only the remote has: the page shows its diff and its pull request, and
    Approve then Merge put it on the remote's main."""
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    server.env.update(GIT_ENV)
    bare, host_b = tmp_path / "origin.git", tmp_path / "b"
    git(tmp_path, "init", "--quiet", "--bare", "-b", "main", str(bare))
    git(tmp_path, "clone", "--quiet", str(bare), str(host_b))
    git(host_b, "checkout", "--quiet", "-b", "main")
    (host_b / "README").write_text("hello\n")
    git(host_b, "add", "README")
    git(host_b, "commit", "--quiet", "-m", "initial")
    git(host_b, "push", "--quiet", "origin", "main")
    root = server.folder  # host A: the server's folder, a clone of the remote
    git(root, "init", "--quiet", "-b", "main")
    git(root, "remote", "add", "origin", str(bare))
    git(root, "fetch", "--quiet", "origin")
    git(root, "reset", "--quiet", "--hard", "origin/main")
    (root / ".git" / "info" / "exclude").write_text(".corral/\n*.log\n")
    (root / ".corral" / "config.toml").write_text('[worktree]\nremote = "origin"\n')
    remote = Settings(worktree_remote="origin")
    url = "https://github.example/acme/repo/pull/7"
    with server.store() as store:
        task = enqueue(store, NewTask(title="from b", requires_review=True))
        trees = worktrees.Worktrees.open(str(host_b), remote.worktree)
        held, _ = claim_into_worktree(store, remote, trees, task.id, "b", {"b.txt": "from b\n"})
        assert trees.remote is not None
        trees.remote.publish(store.tasks.get_task(task.id).branch or "")
        submit(store, task.id, token=held.token, pr_url=url)
    server.start()
    page = open_page(f"{server.url}/tasks/{task.id}")
    expect(page.get_by_label("Diff against the base")).to_contain_text("+from b")
    expect(page.get_by_role("link", name=url)).to_have_attribute("href", url)
    page.get_by_role("button", name="Approve").click()
    expect(page.get_by_role("status")).to_contain_text("Approved")
    page.get_by_role("button", name="Merge").click()
    expect(page.get_by_role("status")).to_contain_text("Merged")
    assert "from b" == git(bare, "show", "main:b.txt")


def test_request_changes_sends_the_task_back_with_its_note(repo_server, open_page):
    """Request changes with a note: the task is ready again on its branch, the note kept."""
    server = repo_server
    task_id = _in_review(server, "rename things", {"names.txt": "a\n"})
    server.start()
    page = open_page(f"{server.url}/tasks/{task_id}")
    page.get_by_label("Changes to ask for").fill("use longer names")
    page.get_by_role("button", name="Request changes").click()
    expect(page.get_by_role("status")).to_contain_text("Changes requested")
    expect(page.locator("#live .status").first).to_have_text("ready")
    with server.store() as store:
        assert "use longer names" == store.reviews.get_review(task_id).changes_note


def test_a_running_transcript_grows_on_the_page_and_escapes_stay_inert(server, open_page):
    """Lines appended to a running run's transcript appear without a reload: stream-json
    turns folded, ANSI colours as classes, a script in the output shown as text."""
    server.start()
    with server.store() as store:
        task = enqueue(store, NewTask(title="long job"))
        worker = workers.register(store, NewWorker(name="w")).worker
        held = claim(store, task.id, worker.id)
        transcript = os.path.join(runs_dir(server.db), "r-test.jsonl")
        os.makedirs(os.path.dirname(transcript), exist_ok=True)
        with open(transcript, "w") as out:
            out.write("\x1b[1;31mred alert\x1b[0m \x1b]0;title\x07<script>alert(1)</script>\n")
        store.runs.start_run(run_under(held, transcript_path=transcript, stderr_path=None))
    page = open_page(f"{server.url}/tasks/{task.id}")
    red = page.locator("#transcript .ansi-bold.ansi-fg-1")
    expect(red).to_have_text("red alert")
    expect(page.locator("#transcript")).to_contain_text("<script>alert(1)</script>")
    assert "\x1b" not in page.locator("#transcript").inner_text()
    assert 0 == page.locator("#transcript script").count()
    turn = {
        "type": "assistant",
        "message": {
            "content": [
                {"type": "text", "text": "I will list the files"},
                {"type": "tool_use", "name": "Bash", "input": {"command": "ls"}},
            ]
        },
    }
    with open(transcript, "a") as out:
        out.write(json.dumps(turn) + "\n")
    expect(page.get_by_role("heading", name="Tool call: Bash")).to_be_visible()
    expect(page.locator("#transcript")).to_contain_text("I will list the files")
    shoot(page, "task")


def test_the_page_lists_a_runs_artifacts_and_the_tasks_children(server, open_page):
    """The chosen run's artifacts (copied with their hash, or why skipped; a name with an
    escape shown as text) and the task's children with their states."""
    server.start()
    with server.store() as store:
        task = enqueue(store, NewTask(title="parent"))
        enqueue(store, NewTask(title="first child", parent_id=task.id))
        child = enqueue(store, NewTask(title="second child", parent_id=task.id))
        worker = workers.register(store, NewWorker(name="w")).worker
        held = claim(store, child.id, worker.id)
        run = store.runs.start_run(run_under(held, transcript_path=None, stderr_path=None))
        kept = [
            Artifact(path="out/a<b>\x1b.txt", size_bytes=6, sha256="ab" * 32),
            Artifact(path="out/big.bin", size_bytes=3_000_000, skipped="past the 1 MB cap"),
        ]
        store.artifacts.record_artifacts(run.id, kept)
    page = open_page(f"{server.url}/tasks/{task.id}")
    children = page.get_by_role("list", name="Children")
    expect(children).to_contain_text("first child")
    expect(children).to_contain_text("running")
    page = open_page(f"{server.url}/tasks/{child.id}")
    table = page.get_by_role("table", name=f"Artifacts of {run.id}")
    expect(table).to_contain_text("out/a<b>")
    expect(table).to_contain_text("ab" * 32)
    expect(table).to_contain_text("skipped: past the 1 MB cap")
    expect(page.get_by_role("link", name=task.id)).to_be_visible()
