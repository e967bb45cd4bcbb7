"""`corral status` beyond the orchestrator: what waits for people."""

from __future__ import annotations

import json


def test_status_flags_reviews_waiting_too_long(cli) -> None:  # type: ignore[no-untyped-def]
    """A task in review longer than review_stale_after is named in `corral status`."""
    task = cli("add", "needs a look", "--review").out.strip()
    worker = cli("worker", "register", "--name", "w").out.strip()
    assert 0 == cli("claim", task, worker).code
    assert 0 == cli("done", task).code
    fresh = json.loads(cli("status", "--json").out)["reviews"]
    assert [(task, False)] == [(r["id"], r["stale"]) for r in fresh]
    stale_env = {"CORRAL_REVIEW_STALE_AFTER_S": "0"}
    assert f"reviews: 1 waiting (1 stale: {task})" in cli("status", env=stale_env).out
