"""Store reads of the dashboard's pages: a keyset page of tasks, a bounded count, a task's
dependents and timeline, the tasks, workers and claim holders events name, and the
overview's events per minute.

Each sort has its own named query (task_page_newest, _oldest, _priority), so each reads
its index in order from the cursor and stops at the page's end; the filters are the same
in all three. A previous page reads the same order backwards from its cursor (newest
backwards is oldest forwards; priority has its `_back` queries) and is turned round.

Text search is a case-insensitive substring match over the title, the description and
the payload's JSON text. From MIN_INDEXED characters on, the task_search_* queries find
the matches by a trigram index (SQLite: the FTS5 table task_text; PostgreSQL: pg_trgm's
GIN index on the table task_text), so a search costs what its matches cost, however many
tasks there are. Both tables are kept by triggers on a task's insert, delete and change
of text, never by a claim. A shorter text has no trigram to look up: it is a LIKE (ILIKE) over every
task, bounded by the page's LIMIT when matches are frequent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from corral.model.states import TaskStatus
from corral.store import rows
from corral.store.driver import Row, Tx
from corral.store.operations import Repository

MIN_INDEXED = 3  # the shortest text a trigram index can find

# The pages' records (model/task_pages.py) are imported by the functions that use them:
# only the dashboard reads pages, and no command's start-up should build those records.
if TYPE_CHECKING:
    from datetime import datetime

    from corral.model.events import Event
    from corral.model.task_pages import PageKey, TaskPage, TaskQuery, TaskSort


class TaskPages(Repository):
    """Pages of tasks by filters, sort and cursor; how many tasks the filters match; the
    tasks that wait on one."""

    NAME = "task_pages"

    def task_page(self, query: TaskQuery) -> TaskPage:
        """The page of `query`: at most `query.limit` tasks after `query.after` (or
        before `query.before`)."""
        from corral.model.task_pages import TaskPage  # noqa: PLC0415 - only the dashboard reads pages

        back = query.before is not None
        params = _filters(query, self._driver.dialect)
        key = query.before if back else query.after
        params["after_seq"] = None if key is None else key.seq
        params["after_priority"] = None if key is None else key.priority
        params["limit"] = query.limit + 1  # one more says whether a page lies beyond
        with self._driver.read() as tx:
            found = _page_rows(tx, query.sort, back, params)
            shown = found[: query.limit]
            tasks = [rows.task(self._driver, r) for r in shown]
        beyond = len(found) > query.limit
        if back:  # read from the cursor backwards: turn the page round
            tasks.reverse()
            shown.reverse()
        first = _key(shown[0]) if shown else None
        last = _key(shown[-1]) if shown else None
        if back:
            return TaskPage(tasks=tasks, next=last, previous=first if beyond else None)
        return TaskPage(
            tasks=tasks,
            next=last if beyond else None,
            previous=first if query.after is not None else None,
        )

    def count_task_page(self, query: TaskQuery, *, cap: int) -> int:
        """How many tasks `query`'s filters match (its sort and cursor aside), at most `cap`."""
        params = _filters(query, self._driver.dialect)
        with self._driver.read() as tx:
            if params["phrase"]:
                row = tx.one("count_task_search", cap=cap, **params)
            else:
                row = tx.one("count_task_page", cap=cap, **params)
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

    def task_titles(self, task_ids: list[str]) -> dict[str, str]:
        """The title of each task of `task_ids` in this namespace, by id."""
        with self._driver.read() as tx:
            return {r["id"]: r["title"] for r in tx.all("task_titles", ids=task_ids)}

    def worker_names(self, worker_ids: list[str]) -> dict[str, str]:
        """The name of each worker of `worker_ids` in this namespace, by id."""
        with self._driver.read() as tx:
            return {r["id"]: r["name"] for r in tx.all("worker_names", ids=worker_ids)}

    def claim_holders(self, tokens: list[int]) -> dict[int, str]:
        """The name of the worker that held each claim of `tokens`, by token; a claim
        whose worker is of another namespace is left out."""
        with self._driver.read() as tx:
            return {int(r["token"]): r["name"] for r in tx.all("claim_holders", tokens=tokens)}

    def events_per_minute(
        self, names: tuple[str, ...], since_at: datetime
    ) -> list[tuple[str, int, int]]:
        """(name, minute, how many) of the events of `names` written since `since_at`,
        minute 0 being the one that starts at `since_at`."""
        with self._driver.read() as tx:
            found = tx.all("events_per_minute", names=list(names), since_at=since_at)
            return [(r["name"], int(r["minute"]), int(r["n"])) for r in found]


def _page_rows(tx: Tx, sort: TaskSort, back: bool, params: dict[str, Any]) -> list[Row]:
    """The page's rows in the order read: from the cursor on, or with `back` from the
    cursor backwards (newest backwards is oldest forwards). Each query is named by a
    literal: tests/store/test_sql_files.py ties every name the code runs to queries.sql."""
    from corral.model.task_pages import TaskSort  # noqa: PLC0415 - only the dashboard reads pages

    if params["phrase"]:
        return _search_rows(tx, sort, back, params)
    if sort is TaskSort.PRIORITY:
        return _priority_rows(tx, back, params)
    if (sort is TaskSort.OLDEST) != back:
        return tx.all("task_page_oldest", **params)
    return tx.all("task_page_newest", **params)


def _priority_rows(tx: Tx, back: bool, params: dict[str, Any]) -> list[Row]:
    """_page_rows in claim order: of one status, by the claim order's index."""
    if params["statuses"] and len(params["statuses"]) == 1:
        status = params["statuses"][0]
        if back:
            return tx.all("task_page_priority_of_status_back", status=status, **params)
        return tx.all("task_page_priority_of_status", status=status, **params)
    if back:
        return tx.all("task_page_priority_back", **params)
    return tx.all("task_page_priority", **params)


def _search_rows(tx: Tx, sort: TaskSort, back: bool, params: dict[str, Any]) -> list[Row]:
    """_page_rows of a text search: the text index finds the matches."""
    from corral.model.task_pages import TaskSort  # noqa: PLC0415 - only the dashboard reads pages

    if sort is not TaskSort.PRIORITY:
        if (sort is TaskSort.OLDEST) != back:
            return tx.all("task_search_oldest", **params)
        return tx.all("task_search_newest", **params)
    if back:
        return tx.all("task_search_priority_back", **params)
    return tx.all("task_search_priority", **params)


def _key(row: Row) -> PageKey:
    from corral.model.task_pages import PageKey  # noqa: PLC0415 - only the dashboard reads pages

    return PageKey(seq=row["seq"], priority=row["priority"])


def _filters(query: TaskQuery, dialect: str) -> dict[str, Any]:
    """The filter parameters every task_page query takes."""
    key, value = query.label if query.label is not None else (None, None)
    params: dict[str, Any] = {
        "statuses": [str(s) for s in query.statuses] or None,
        "queue": query.queue,
        "kind": query.kind,
        "assignee": query.assignee,
        "label_value": value,
        "pattern": None,
        "phrase": None,
    }
    text = query.text or ""
    if len(text) >= MIN_INDEXED:
        params["phrase"] = _phrase(text, dialect)
    elif text:
        params["pattern"] = f"%{_escaped(text)}%"
    if dialect == "sqlite":
        params["label_path"] = None if key is None else f'$."{key}"'  # a checked name
    else:
        params["label_key"] = key
    return params


def _phrase(text: str, dialect: str) -> str:
    """`text` as the text index's query of it, matched literally: an FTS5 phrase (in
    double quotes, its own doubled: no operator, column filter or prefix of FTS5's query
    syntax survives) or an ILIKE pattern (its wildcards escaped)."""
    if dialect == "sqlite":
        return '"' + text.replace('"', '""') + '"'
    return f"%{_escaped(text)}%"


def _escaped(text: str) -> str:
    """`text` matched literally by LIKE: its escape, % and _ escaped with a backslash."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
