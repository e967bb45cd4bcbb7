"""`corral prune` as a user runs it."""

from __future__ import annotations

import json
from typing import Any

from corral import open_store


def test_prune_counts_then_deletes_only_what_is_old_and_finished(cli: Any) -> None:
    assert 0 == cli("init").code
    finished = cli("add", "finished").out.strip()
    kept = cli("add", "still ready").out.strip()
    assert 0 == cli("cancel", finished).code
    counted = cli("prune", "--finished-older-than", "1ms", "--dry-run", "--json")
    assert (0, 1, True) == (
        counted.code, json.loads(counted.out)["tasks"], json.loads(counted.out)["dry_run"],
    )  # fmt: skip
    assert 0 == cli("show", finished).code
    done = cli("prune", "--finished-older-than", "1ms")
    assert (0, "deleted 1 tasks (0 runs, 0 files), 0 events, 0 workers\n") == (done.code, done.out)
    assert 2 == cli("show", finished).code
    assert "ready" == json.loads(cli("show", kept, "--json").out)["status"]


def test_prune_refuses_a_remote_store_and_bad_ages_in_one_line(cli: Any) -> None:
    remote = cli("prune", env={"CORRAL_DB": "http://127.0.0.1:9", "CORRAL_TOKEN": "x"})
    assert (2, 1) == (remote.code, len(remote.err.splitlines()))
    assert "db: expected a local store: prune runs on the store's host" in remote.err
    assert 0 == cli("init").code
    bad = cli("prune", "--events-older-than", "soon")
    assert (2, 1) == (bad.code, len(bad.err.splitlines()))
    assert bad.err.startswith("corral: error: events_older_than: expected a duration")


def test_prune_keeps_work_only_a_backup_ref_holds_until_told(cli: Any) -> None:
    """A cancelled task whose review names a backup ref stays; the flag, or the setting
    `retention.unlanded_work`, deletes it."""
    assert 0 == cli("init").code
    tasks = [cli("add", f"left work {n}").out.strip() for n in range(2)]
    store = open_store(cli.db)  # to record the backups, as a runner's clean-up does
    try:
        for n, task in enumerate(tasks):
            ref = f"refs/corral/backup/corral/w/{task}/wip-{n:012d}"
            store.reviews.record_cleanup(
                task, token=None, backups=(ref,), branch_deleted=False, actor="t"
            )
    finally:
        store.close()
    assert 0 == cli("cancel", tasks[0]).code
    kept = cli("prune", "--finished-older-than", "1ms")
    assert (0, "deleted 0 tasks (0 runs, 0 files), 0 events, 0 workers\n") == (kept.code, kept.out)
    flagged = cli("prune", "--finished-older-than", "1ms", "--with-unlanded-work", "--json")
    assert (0, 1, 2) == (flagged.code, json.loads(flagged.out)["tasks"], cli("show", tasks[0]).code)
    assert 0 == cli("cancel", tasks[1]).code
    assert 0 == json.loads(cli("prune", "--finished-older-than", "1ms", "--json").out)["tasks"]
    configured = cli(
        "prune", "--finished-older-than", "1ms", "--json",
        env={"CORRAL_RETENTION_UNLANDED_WORK": "true"},
    )  # fmt: skip
    assert (0, 1) == (configured.code, json.loads(configured.out)["tasks"])
