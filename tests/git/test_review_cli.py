"""The review commands as a user runs them: JSON shapes, one-line refusals, exit codes."""

from __future__ import annotations

import json


def _in_review(cli) -> str:
    task = cli("add", "write docs", "--review").out.strip()
    worker = cli("worker", "register", "--name", "w1", "--pid", "1").out.strip()
    token = json.loads(cli("claim", task, worker, "--json").out)["token"]
    submitted = cli("submit", task, "--note", "please look", "--token", str(token), "--json")
    assert 0 == submitted.code, submitted.err
    assert "in_review" == json.loads(submitted.out)["status"]
    return task


def test_submit_list_approve_merge_without_a_branch(cli):
    """A branchless task goes in_review -> approved -> done; review list shows it meanwhile."""
    task = _in_review(cli)
    listed = json.loads(cli("review", "list", "--json").out)
    assert [(task, "in_review", "please look", False)] == [
        (r["id"], r["status"], r["note"], r["stale"]) for r in listed
    ]
    assert 0 == cli("approve", task, "--note", "fine").code
    merged = cli("merge", task, "--json")
    assert (0, "done") == (merged.code, json.loads(merged.out)["task"]["status"])
    assert "nothing in review" == cli("review", "list").out.strip()


def test_refusals_are_one_line_with_their_exit_codes(cli):
    """merge before approval and approve outside review: exit 1; a missing note: exit 2."""
    task = _in_review(cli)
    refused = cli("merge", task)
    assert (1, f"corral: error: cannot merge task {task}: it is in_review, not approved\n") == (
        refused.code,
        refused.err,
    )
    assert 2 == cli("request-changes", task).code
    assert 0 == cli("request-changes", task, "--note", "add an example").code
    again = cli("approve", task)
    assert (1, 1) == (again.code, len(again.err.splitlines()))
    assert "it is ready, not in_review" in again.err
    shown = json.loads(cli("review", "show", task, "--json").out)
    assert ("add an example", None) == (shown["review"]["changes_note"], shown["diff_stat"])
    assert 2 == cli("merge", task, "--strategy", "rebase").code
