"""Real temporary git repositories for the worktree and review tests."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

GIT_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_SYSTEM": os.devnull,
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.com",
}


def git(cwd: Path | str, *args: str) -> str:
    """Run git in `cwd`; its stdout, stripped. Fails the test on a non-zero exit."""
    proc = subprocess.run(
        ["git", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **GIT_ENV},
    )
    assert 0 == proc.returncode, proc.stderr
    return proc.stdout.strip()


def commit_file(cwd: Path | str, name: str, text: str, message: str | None = None) -> str:
    """Write `name` in `cwd`, commit it, return the commit."""
    Path(cwd, name).write_text(text)
    git(cwd, "add", name)
    git(cwd, "commit", "--quiet", "-m", message or f"write {name}")
    return git(cwd, "rev-parse", "HEAD")


def agent_script(folder: Path, text: str) -> tuple[str, Path]:
    """An executable agent script `text` in `folder`, and an empty `obs` folder beside it
    where it may record what it saw."""
    obs = folder / "obs"
    obs.mkdir()
    script = folder / "agent.sh"
    script.write_text(text)
    script.chmod(0o755)
    return str(script), obs


def claim_into_worktree(store, settings, trees, task_id: str, name: str, files: dict[str, str]):
    """Claim `task_id` as a new worker `name`, record and make its worktree as a runner does,
    commit `files` there; the claim and the worktree's path."""
    import corral

    spec = corral.NewWorker(name=name, hostname="h", pid=None)
    worker = corral.register(store, spec, settings=settings).worker
    claim = corral.claim(store, task_id, worker.id, settings=settings)
    plan = trees.plan(name, task_id, "main", store.tasks.get_task(task_id).branch)
    store.reviews.record_branch(
        task_id,
        token=claim.token,
        branch=plan.branch,
        base_ref="main",
        worktree_path=plan.path,
        actor=worker.id,
    )
    trees.create(plan)
    for file, text in files.items():
        commit_file(plan.path, file, text)
    return claim, plan.path


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every git run by corral in these tests has an identity and ignores user config."""
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository on `main` with one commit (README and a shared file)."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "--quiet", "-b", "main")
    (root / "README").write_text("hello\n")
    (root / "shared.txt").write_text("one\ntwo\nthree\n")
    git(root, "add", ".")
    git(root, "commit", "--quiet", "-m", "initial")
    return root
