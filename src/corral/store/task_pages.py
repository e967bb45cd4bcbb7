"""Store reads of the dashboard's pages: a keyset page of tasks, a bounded count, a task's
dependents and timeline, and the overview's events per minute.

Each sort has its own named query (task_page_newest, _oldest, _priority), so each reads
its index in order from the cursor and stops at the page's end; the filters are the same
in all three. Text search is a LIKE (ILIKE on PostgreSQL) over the title, the
description and the payload's JSON text: a scan, bounded by the page's LIMIT when
matches are frequent.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from corral.model.states import TaskStatus
from corral.model.task_pages import PageKey, TaskPage, TaskQuery, TaskSort
from corral.store import rows
from corral.store.driver import Driver, Row, Tx

if TYPE_CHECKING:
    from corral.model.events import Event


class TaskPageOps:
    """Pages of tasks by filters, sort and cursor; how many tasks the filters match; the
    tasks that wait on one."""

    _driver: Driver

    def task_page(self, query: TaskQuery) -> TaskPage:
        """The page of `query`: at most `query.limit` tasks after `query.after`."""
        params = _filters(query, self._driver.dialect)
        after = query.after
        params["after_seq"] = None if after is None else after.seq
        params["after_priority"] = None if after is None else after.priority
        params["limit"] = query.limit + 1  # one more says whether a next page exists
        with self._driver.read() as tx:
            found = _page_rows(tx, query.sort, params)
            tasks = [rows.task(self._driver, r) for r in found[: query.limit]]
        more = len(found) > query.limit
        last = found[query.limit - 1] if more else None
        key = None if last is None else PageKey(seq=last["seq"], priority=last["priority"])
        return TaskPage(tasks=tasks, next=key)

    def count_task_page(self, query: TaskQuery, *, cap: int) -> int:
        """How many tasks `query`'s filters match (its sort and cursor aside), at most `cap`."""
        with self._driver.read() as tx:
            row = tx.one("count_task_page", cap=cap, **_filters(query, self._driver.dialect))
            return int(row["n"]) if row else 0

    def task_dependents(self, task_id: str, limit: int = 200) -> list[tuple[str, str, TaskStatus]]:
        """(id, title, status) of the tasks that depend on `task_id`, oldest first."""
        with self._driver.read() as tx:
            found = tx.all("task_dependents", task_id=task_id, limit=limit)
            return [(r["id"], r["title"], TaskStatus(r["status"])) for r in found]

    def task_timeline(self, task_id: str, limit: int) -> list[Event]:
        """The newest `limit` events of task `task_id`, newest first."""
        with self._driver.read() as tx:
            found = tx.all("task_timeline", task_id=task_id, limit=limit)
            return [rows.event(self._driver, r) for r in found]

    def events_per_minute(
        self, names: tuple[str, ...], since_at: datetime
    ) -> list[tuple[str, int, int]]:
        """(name, minute, how many) of the events of `names` written since `since_at`,
        minute 0 being the one that starts at `since_at`."""
        with self._driver.read() as tx:
            found = tx.all("events_per_minute", names=list(names), since_at=since_at)
            return [(r["name"], int(r["minute"]), int(r["n"])) for r in found]


def _page_rows(tx: Tx, sort: TaskSort, params: dict[str, Any]) -> list[Row]:
    if sort is TaskSort.OLDEST:
        return tx.all("task_page_oldest", **params)
    if sort is TaskSort.PRIORITY and params["statuses"] and len(params["statuses"]) == 1:
        return tx.all("task_page_priority_of_status", status=params["statuses"][0], **params)
    if sort is TaskSort.PRIORITY:
        return tx.all("task_page_priority", **params)
    return tx.all("task_page_newest", **params)


def _filters(query: TaskQuery, dialect: str) -> dict[str, Any]:
    """The filter parameters every task_page query takes."""
    key, value = query.label if query.label is not None else (None, None)
    params: dict[str, Any] = {
        "statuses": [str(s) for s in query.statuses] or None,
        "queue": query.queue,
        "kind": query.kind,
        "assignee": query.assignee,
        "label_value": value,
        "pattern": None if not query.text else f"%{_escaped(query.text)}%",
    }
    if dialect == "sqlite":
        params["label_path"] = None if key is None else f'$."{key}"'  # a checked name
    else:
        params["label_key"] = key
    return params


def _escaped(text: str) -> str:
    """`text` matched literally by LIKE: its escape, % and _ escaped with a backslash."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
