"""Two hosts, one remote of record, as users run them: host A serves the store (`corral
serve` on loopback) and has its own clone; host B's runner reaches the store only over
HTTP, works in its own clone, and reads `[worktree] remote` from its own config. Host B's
landed task is on the remote's main; its review task is shown, approved and merged from
host A; `corral branches` says the same on both hosts."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from tests.server.conftest import CORRAL, Server

from .conftest import agent_script, commit_file, git

# The agent edits a file named after its task and commits it, as an agent asked to commit does.
AGENT = """#!/bin/sh
echo "$CORRAL_TASK_ID" > "$CORRAL_TASK_ID.txt"
git add -A && git commit --quiet -m "work on $CORRAL_TASK_ID"
"""
REMOTE_CONFIG = '[worktree]\nremote = "origin"\n'


@pytest.fixture
def served(tmp_path: Path) -> Server:
    """Host A's store, served (started by the test)."""
    made = Server(tmp_path)
    yield made
    made.close()


def clone_of(bare: Path, where: Path) -> Path:
    git(where.parent, "clone", "--quiet", str(bare), str(where))
    return where


def test_host_bs_work_lands_on_the_remote_and_host_a_reviews_and_merges_it(
    served: Server, tmp_path: Path
):
    """A plain task run on host B is on the remote's main at its recorded commit; host B's
    review task is shown, approved and merged from host A (which never had its branch);
    `branches` is the same on both hosts."""
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "--quiet", "--bare", "-b", "main", str(bare))
    seed = clone_of(bare, tmp_path / "seed")
    git(seed, "checkout", "--quiet", "-b", "main")
    commit_file(seed, "README", "hello\n")
    git(seed, "push", "--quiet", "origin", "main")
    host_a, host_b = clone_of(bare, tmp_path / "a"), clone_of(bare, tmp_path / "b")
    (tmp_path / ".corral" / "config.toml").write_text(REMOTE_CONFIG)  # host A's, by its store
    (tmp_path / "b.toml").write_text(REMOTE_CONFIG)  # host B's own
    worker, operator = served.token("worker"), served.token("operator")
    served.start()
    plain = served.corral("add", "plain").stdout.strip()
    reviewed = served.corral("add", "reviewed", "--review").stdout.strip()
    script, _ = agent_script(tmp_path, AGENT)
    host_b_env = {
        **{k: v for k, v in served.env.items() if not k.startswith("CORRAL_")},
        "CORRAL_DB": served.url,
        "CORRAL_TOKEN": worker,
        "CORRAL_CONFIG": str(tmp_path / "b.toml"),
    }
    for _ in (plain, reviewed):
        ran = _run_worker(host_b_env, host_b, script)
        assert 0 == ran.returncode, ran.stderr
    listed = served.corral("branches", "--repo", str(host_a), "--json").stdout
    landed = next(b for b in json.loads(listed) if b["task_id"] == plain)
    assert ("done", "landed") == (landed["task_status"], landed["where"])
    assert git(bare, "rev-parse", "main") == landed["merged_commit"]
    assert plain == git(bare, "show", f"main:{plain}.txt")

    review = served.corral("review", "show", reviewed, "--repo", str(host_a), "--json")
    assert 0 == review.returncode, review.stderr
    assert f"{reviewed}.txt | 1 +" in json.loads(review.stdout)["diff_stat"]
    approved = served.corral("approve", reviewed, "--repo", str(host_a), "--merge", "--json")
    assert 0 == approved.returncode, approved.stderr
    assert git(bare, "rev-parse", "main") == json.loads(approved.stdout)["merged_commit"]
    assert reviewed == git(bare, "show", f"main:{reviewed}.txt")

    on_a = served.corral("branches", "--repo", str(host_a), "--json")
    on_b = subprocess.run(
        [*CORRAL, "branches", "--repo", str(host_b), "--json"],
        env={**host_b_env, "CORRAL_TOKEN": operator},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert 0 == on_b.returncode, on_b.stderr
    where_a = {b["task_id"]: b["where"] for b in json.loads(on_a.stdout)}
    where_b = {b["task_id"]: b["where"] for b in json.loads(on_b.stdout)}
    assert {plain: "landed", reviewed: "landed"} == where_a
    assert where_a == where_b


def _run_worker(env: dict[str, str], repo: Path, script: str) -> subprocess.CompletedProcess[str]:
    """One task run by host B's runner in its own clone, over HTTP."""
    return subprocess.run(
        [
            *CORRAL,
            *("worker", "start", "--name", "hostb", "--exec", script, "--once", "--worktree"),
        ],
        env=env,
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_a_worker_with_a_remote_that_does_not_exist_is_refused_at_start(tmp_path: Path):
    """`[worktree] remote` naming no remote of the repository: exit 2, the key named."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "--quiet", "-b", "main")
    commit_file(repo, "README", "hello\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    env |= {"CORRAL_DB": str(tmp_path / "c.db"), "CORRAL_WORKTREE_REMOTE": "nowhere"}
    ran = subprocess.run(
        [*CORRAL, "worker", "start", "--name", "w", "--exec", "true", "--once", "--worktree"],
        env=env,
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert (
        2,
        "corral: error: worktree.remote: expected a remote of the repository, got 'nowhere'\n",
    ) == (
        ran.returncode,
        ran.stderr,
    )
