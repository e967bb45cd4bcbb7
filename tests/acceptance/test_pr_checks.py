"""Issue 31, `land = pr`: a pull request's failing checks go back to the agent. A real
runner runs the stand-in claude (tests/agents/fakes) in a real worktree, pushes to a real
bare remote and opens the pull request with the stand-in `gh`, which answers `gh pr
checks` and `gh run view --log-failed` as gh does (its JSON fields, exit 1 on a failure, 8
while pending) from files the test writes; `corral reconcile` reads the checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.acceptance.test_work_lands import Project, init_repo
from tests.agents.recorded import assert_resumed
from tests.git.conftest import git

URL = "https://github.example/acme/repo/pull/1"
LINK = "https://github.example/acme/repo/actions/runs/811/job/8110"


class Forged(Project):
    """A project landing by pull request on its remote `origin`, the stand-in gh's files
    in `forge/`."""

    @property
    def env(self) -> dict[str, str]:
        forge = self.folder / "forge"
        return super().env | {
            "CORRAL_WORKTREE_REMOTE": "origin",
            "CORRAL_WORKTREE_LAND": "pr",
            "GH_LOG": str(forge / "gh.log"),
            "GH_STATE": str(forge / "state.json"),
            "GH_CHECKS": str(forge / "checks.json"),
            "GH_LOGS": str(forge / "logs.json"),
        }

    def forge(self, name: str, value: object) -> None:
        (self.folder / "forge" / name).write_text(json.dumps(value))

    def reconcile(self) -> dict[str, int]:
        done = self("reconcile", "--json")
        assert 0 == done.returncode, done.stderr
        return dict(json.loads(done.stdout))


@pytest.fixture
def project(tmp_path: Path) -> Forged:
    folder, bare = tmp_path / "project", tmp_path / "origin.git"
    folder.mkdir()
    init_repo(folder)
    git(tmp_path, "init", "--quiet", "--bare", "-b", "main", str(bare))
    git(folder, "remote", "add", "origin", str(bare))
    git(folder, "push", "--quiet", "origin", "main")
    (folder / ".corral").mkdir()
    (folder / "forge").mkdir()
    made = Forged(folder)
    assert 0 == made("init").returncode
    return made


def test_a_failing_check_goes_back_to_the_same_session_with_its_log_then_it_merges(
    project: Forged,
) -> None:
    """The run opens the pull request; its `test` check fails: reconcile sends the task back
    (prs_checks_failed 1); the next run resumes the same session in the same worktree, told
    the check's name, state, link and log's tail, and updates the same pull request; its
    checks pass, and the merge on the forge finishes the task."""
    task = project.add("Fix the widget")
    assert 0 == project.work("claude").returncode
    shown = project.json("show", task)
    assert "in_review" == shown["status"]
    failing = {"name": "test", "state": "FAILURE", "bucket": "fail", "link": LINK,
               "startedAt": "2026-11-29T10:00:00Z"}  # fmt: skip
    passing = {"name": "lint", "state": "SUCCESS", "bucket": "pass", "link": LINK,
               "startedAt": "2026-11-29T10:00:00Z"}  # fmt: skip
    project.forge("checks.json", {URL: [passing, failing]})
    project.forge("logs.json", {"811": "test\tpytest\tFAILED test_widget - assert 3 == 2\n"})
    report = project.reconcile()
    assert (1, 0) == (report["prs_checks_failed"], report["prs_checks_waiting"])
    assert ("ready", 0) == (
        project.json("show", task)["status"],
        project.json("show", task)["attempts"],
    )

    assert 0 == project.work("claude").returncode
    first, second = project.calls()
    assert_resumed(first, second)
    assert f"- test: FAILURE {LINK}" in second["prompt"]
    assert "FAILED test_widget - assert 3 == 2" in second["prompt"]
    review = project.json("review", "show", task)["review"]
    assert ("in_review", URL) == (project.json("show", task)["status"], review["pr_url"])

    fixed = {**failing, "bucket": "pass", "state": "SUCCESS", "startedAt": "2026-11-29T10:05:00Z"}
    project.forge("checks.json", {URL: [passing, fixed]})
    assert 0 == project.reconcile()["prs_checks_failed"]
    merged = git(project.folder, "rev-parse", "main")
    project.forge("state.json", {URL: {"state": "MERGED", "mergeCommit": {"oid": merged}}})
    assert 1 == project.reconcile()["prs_merged"]
    assert "done" == project.json("show", task)["status"]
