"""The mirror's documents (runtime/pool/mirror.py) on each store: written from the store as
it is when asked, removed when their task or worker ends, rebuilt whole; never written
through a folder that is a symbolic link."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

import corral
from corral import NewTask, NewWorker, Store
from corral.runtime.pool.mirror import Documents, mirror_dir


@pytest.fixture
def documents(store: Store, tmp_path: Path) -> Documents:
    return Documents(store, str(tmp_path / "state"), logging.getLogger("test.mirror"))


def test_a_task_in_hand_has_a_document_until_it_ends(
    store: Store, documents: Documents, tmp_path: Path
) -> None:
    """Claimed: written, with its status; done: removed. A worker's goes when it does."""
    worker = corral.register(store, NewWorker(name="w", hostname="h", pid=None)).worker
    task_id = corral.enqueue(store, NewTask(title="t")).id
    path = tmp_path / "state" / "tasks" / f"{task_id}.json"
    documents.task(task_id)
    assert not path.exists()  # ready: not in hand
    claim = corral.claim(store, task_id, worker.id)
    documents.task(task_id)
    assert ("running", worker.id) == (json.loads(path.read_text())["status"],
                                      json.loads(path.read_text())["worker_id"])  # fmt: skip
    corral.complete(store, task_id, token=claim.token)
    documents.task(task_id)
    assert not path.exists()
    documents.worker(worker.id)
    worker_path = tmp_path / "state" / "workers" / f"{worker.id}.json"
    assert "w" == json.loads(worker_path.read_text())["name"]
    corral.deregister(store, worker.id)
    documents.worker(worker.id)
    assert not worker_path.exists()


def test_a_rebuild_writes_what_is_and_removes_what_is_not(
    store: Store, documents: Documents, tmp_path: Path
) -> None:
    """Stray documents (a crash, another writer) go; other files are not the mirror's."""
    worker = corral.register(store, NewWorker(name="w", hostname="h", pid=None)).worker
    task_id = corral.enqueue(store, NewTask(title="t")).id
    corral.claim(store, task_id, worker.id)
    tasks = tmp_path / "state" / "tasks"
    tasks.mkdir(parents=True)
    (tasks / "t-gone.json").write_text("{}")
    (tasks / "notes.txt").write_text("mine")
    documents.rebuild()
    assert sorted([f"{task_id}.json", "notes.txt"]) == sorted(p.name for p in tasks.iterdir())
    assert [f"{worker.id}.json"] == [p.name for p in (tmp_path / "state" / "workers").iterdir()]


def test_a_folder_that_is_a_link_is_not_written_through(
    store: Store, documents: Documents, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """`state/tasks` a link elsewhere: nothing is written or removed there, one line is
    logged."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "t-theirs.json").write_text("{}")
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "tasks").symlink_to(elsewhere)
    worker = corral.register(store, NewWorker(name="w", hostname="h", pid=None)).worker
    task_id = corral.enqueue(store, NewTask(title="t")).id
    with caplog.at_level(logging.WARNING, logger="test.mirror"):
        documents.rebuild()  # no task in hand: nothing to write, nothing removed there
        corral.claim(store, task_id, worker.id)
        documents.task(task_id)
        documents.rebuild()
    assert ["t-theirs.json"] == [p.name for p in elsewhere.iterdir()]
    assert 1 == sum("mirror.failed" in r.getMessage() for r in caplog.records)


def test_another_namespace_has_a_folder_of_its_own(tmp_path: Path) -> None:
    """`default` at .corral/state, any other under state/namespaces/, never beside it."""
    db = str(tmp_path / ".corral" / "corral.db")
    assert str(tmp_path / ".corral" / "state") == mirror_dir(db, "default")
    assert str(tmp_path / ".corral" / "state" / "namespaces" / "tasks") == mirror_dir(db, "tasks")
