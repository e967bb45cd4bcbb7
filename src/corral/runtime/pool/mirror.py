"""`[files] mirror`: `.corral/state/`, the store as files, for agents and tools that only
read files (seed 004's `.worker-state/`).

    .corral/state/workers/<worker id>.json   one per live worker (starting, idle, busy,
                                             draining, stale): `worker list --json`'s shape
    .corral/state/tasks/<task id>.json       one per task in hand (running, waiting,
                                             in_review, approved): `show --json`'s shape

(another namespace than `default`: under `.corral/state/namespaces/<name>/`). Each file is
replaced whole and atomically (a temporary file beside it, flushed to disk, renamed over
it, the folder synced: board/status_file.py), so a reader parses the old document or the
new one, never a part; it is removed when its task leaves those states (done, failed,
cancelled, back to ready) or its worker is dead, offline or gone.

Two threads keep it. One follows the event log (runtime/follow.py) and rewrites the
documents of the task and the worker each event names, read from the store then, so an
event seen late or twice writes what is true now. The other rebuilds the whole folder
from the store every heartbeat interval, and once at start before the first: that brings
the heartbeats (which write no event) up to date, and removes what a crash, an outage or
another writer left, so a mirror is never wrong for longer than an interval. Both write
under one lock, reading the store inside it, so a later write never puts back an older
state. The folders are corral's own: one that is a symbolic link is not written through
(logged once). The store out, the files stay as they were until it is back.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from corral.board.status_file import write_atomically
from corral.foundation import filemodes
from corral.foundation.clock import SystemClock
from corral.foundation.errors import CorralError, NotFound
from corral.foundation.logs import event
from corral.foundation.threads import ThreadService
from corral.model.events import Event, EventFilter
from corral.model.namespaces import DEFAULT_NAMESPACE
from corral.model.states import TaskStatus, WorkerStatus
from corral.model.tasks import Task, TaskFilter
from corral.model.workers import Worker
from corral.runtime.follow import Follower
from corral.store import Store
from corral.store.location import state_dir

IN_HAND = (TaskStatus.RUNNING, TaskStatus.WAITING, TaskStatus.IN_REVIEW, TaskStatus.APPROVED)
LIVE = (WorkerStatus.STARTING, WorkerStatus.IDLE, WorkerStatus.BUSY, WorkerStatus.DRAINING,
        WorkerStatus.STALE)  # fmt: skip
POLL_S = 0.2  # events: as the task lines, a reader of files does not see 200 ms
PAGE = 1000  # tasks read at once while rebuilding
KINDS = ("workers", "tasks")


def mirror_dir(db: str, namespace: str) -> str:
    """The folder the mirror of store `db`'s `namespace` is kept in."""
    root = os.path.join(state_dir(db), "state")
    if namespace == DEFAULT_NAMESPACE:
        return root
    return os.path.join(root, "namespaces", namespace)


class Mirror:
    """The mirror of `store` in `folder`, rebuilt now and kept from now on (started here)."""

    def __init__(self, store: Store, folder: str, *, resync_s: float, log: logging.Logger) -> None:
        self._documents = Documents(store, folder, log)
        self._events = _Events(store, self._documents, log)  # from now on: begun before ...
        self._documents.rebuild()  # ... the rebuild, so that nothing between is missed
        self._events.start()
        self._resync = _Resync(self._documents, resync_s)
        self._resync.start()

    def stop(self) -> None:
        """Stop both threads, then rebuild once more: the pool has stopped, and its workers'
        documents go (the files that stay are the store's state as last seen)."""
        self._events.stop()
        self._resync.stop()
        self._documents.rebuild()


class Documents:
    """The mirror's files: written, or removed, from the store as it is when asked."""

    def __init__(self, store: Store, folder: str, log: logging.Logger) -> None:
        self._store, self._folder, self._log = store, folder, log
        self._lock = threading.Lock()
        self._written: dict[str, bytes] = {}  # path -> what this process last wrote there
        self._failing = False

    def task(self, task_id: str) -> None:
        """Write task `task_id`'s document, or remove it if the task is not in hand."""
        with self._lock, self._logged():
            try:
                task = self._store.tasks.get_task(task_id)
            except NotFound:
                task = None
            path = self._path("tasks", task_id)
            if task is not None and task.status in IN_HAND:
                self._write(path, task.to_dict())
            else:
                self._remove(path)

    def worker(self, worker_id: str) -> None:
        """Write worker `worker_id`'s document, or remove it if it is not live."""
        with self._lock, self._logged():
            try:
                worker = self._store.workers.get_worker(worker_id)
            except NotFound:
                worker = None
            path = self._path("workers", worker_id)
            if worker is not None and worker.status in LIVE:
                self._write(path, worker.to_dict())
            else:
                self._remove(path)

    def rebuild(self) -> None:
        """Every document from the store as it is now; every other `.json` file removed."""
        with self._lock, self._logged():
            wanted = {self._path("workers", w.id): w.to_dict() for w in self._workers()}
            wanted.update((self._path("tasks", t.id), t.to_dict()) for t in self._tasks())
            for path, document in wanted.items():
                self._write(path, document)
            for kind in KINDS:
                for path in self._files(kind):
                    if path not in wanted:
                        self._remove(path)

    def _workers(self) -> list[Worker]:
        return self._store.workers.list_workers(LIVE)

    def _tasks(self) -> Iterator[Task]:
        after = None
        while True:
            page = self._store.tasks.list_tasks(
                TaskFilter(statuses=IN_HAND, limit=PAGE, after_seq=after)
            )
            yield from page
            if len(page) < PAGE:
                return
            after = page[-1].seq

    def _path(self, kind: str, item_id: str) -> str:
        return os.path.join(self._folder, kind, f"{item_id}.json")

    def _write(self, path: str, document: dict[str, Any]) -> None:
        content = json.dumps(document, indent=2).encode() + b"\n"
        if self._written.get(path) == content and os.path.exists(path):
            return
        self._own_folder(os.path.dirname(path))
        write_atomically(path, content)
        self._written[path] = content

    def _remove(self, path: str) -> None:
        self._written.pop(path, None)
        try:
            os.unlink(path)  # a link: the link itself, never what it names
        except FileNotFoundError:
            return

    def _files(self, kind: str) -> list[str]:
        """The `.json` entries of the `kind` folder (links and all: none is followed)."""
        folder = os.path.join(self._folder, kind)
        if not os.path.lexists(folder):
            return []
        self._own_folder(folder)  # never a listing, or a removal, through a link
        entries = list(os.scandir(folder))
        return [
            e.path
            for e in entries
            if e.name.endswith(".json") and not e.is_dir(follow_symlinks=False)
        ]

    def _own_folder(self, folder: str) -> None:
        """Make `folder` if missing; refuse one (or a parent up to the mirror's) that is a
        symbolic link: the mirror writes and removes only inside corral's own folder."""
        filemodes.make_dirs(folder)
        for path in (folder, self._folder):
            if stat.S_ISLNK(os.lstat(path).st_mode):
                raise OSError(f"{path} is a symbolic link: the mirror is not written through it")

    @contextmanager
    def _logged(self) -> Iterator[None]:
        """A store or file failure as one log line (until a write gets through), not raised."""
        try:
            yield
        except CorralError as exc:
            self._failed(exc.message)
        except OSError as exc:
            self._failed(str(exc))
        else:
            self._failing = False

    def _failed(self, error: str) -> None:
        if not self._failing:
            event(self._log, "mirror.failed", logging.WARNING, folder=self._folder, error=error)
        self._failing = True


class _Events(ThreadService):
    """The thread rewriting the documents of what each event names, from now on."""

    def __init__(self, store: Store, documents: Documents, log: logging.Logger) -> None:
        super().__init__("corral-mirror-events")
        self._documents, self._log = documents, log
        self._follower = Follower(
            store,
            EventFilter(limit=0),  # none from before now: the rebuild has those
            clock=SystemClock(),
            on_outage=self._outage,
            poll_s=POLL_S,
            listen=False,
        )
        self._follower.begin()

    def _run(self) -> None:
        self._follower.run(self._on_event)

    def _interrupt(self) -> None:
        self._follower.stop()

    def _on_event(self, ev: Event) -> None:
        if ev.task_id is not None:
            self._documents.task(ev.task_id)
        if ev.worker_id is not None:
            self._documents.worker(ev.worker_id)

    def _outage(self, message: str) -> None:
        event(self._log, "mirror.store", logging.WARNING, message=message)


class _Resync(ThreadService):
    """The thread rebuilding the whole mirror every `interval_s`."""

    def __init__(self, documents: Documents, interval_s: float) -> None:
        super().__init__("corral-mirror-resync")
        self._documents, self._interval_s = documents, interval_s

    def _run(self) -> None:
        while not self.stopping.wait(self._interval_s):
            self._documents.rebuild()
