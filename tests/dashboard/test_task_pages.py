"""The store's pages of the task list (the dashboard's), on SQLite and PostgreSQL: each
filter, each sort, and the keyset cursor that goes on after the last row shown."""

from __future__ import annotations

import secrets
import sqlite3
from dataclasses import replace

import psycopg
import pytest

from corral import open_store
from corral.foundation.errors import InvalidInput, InvalidTransition
from corral.model.states import TaskStatus
from corral.model.task_pages import TaskQuery, TaskSort
from corral.model.tasks import NewTask
from corral.store.queries import migration_files
from corral.usecases.tasks import cancel, enqueue, reprioritise


def _titles(store, query):
    return [t.title for t in store.task_pages.task_page(query).tasks]


def _every_page(store, query):
    """The titles of every page of `query`, each read after the cursor of the one before."""
    seen = []
    while True:
        page = store.task_pages.task_page(query)
        seen += [t.title for t in page.tasks]
        if page.next is None:
            return seen
        query = replace(query, after=page.next)


def test_each_filter_narrows_the_page(store):
    """Status, queue, kind, assignee, label and text (title, description, payload) filter."""
    enqueue(store, NewTask(title="alpha", queue="q1", kind="k1", assignee="ann"))
    enqueue(store, NewTask(title="beta", description="has 100%_done", labels={"team": "red"}))
    enqueue(store, NewTask(title="gamma", payload={"ticket": "XY-42"}))
    cancel(store, enqueue(store, NewTask(title="delta")).id)
    assert ["alpha"] == _titles(store, TaskQuery(queue="q1"))
    assert ["alpha"] == _titles(store, TaskQuery(kind="k1"))
    assert ["alpha"] == _titles(store, TaskQuery(assignee="ann"))
    assert ["beta"] == _titles(store, TaskQuery(label=("team", "red")))
    assert [] == _titles(store, TaskQuery(label=("team", "blue")))
    assert ["gamma"] == _titles(store, TaskQuery(text="xy-42"))
    assert ["beta"] == _titles(store, TaskQuery(text="100%_"))
    assert [] == _titles(store, TaskQuery(text="100%x"))  # % and _ are matched literally
    assert ["delta"] == _titles(store, TaskQuery(statuses=(TaskStatus.CANCELLED,)))


def test_pages_of_each_sort_hold_every_task_once(store):
    """Newest, oldest and priority order, read 3 at a time, list all 8 tasks in order."""
    for i in range(8):
        enqueue(store, NewTask(title=f"t{i}", priority=i % 3))
    expected = {
        TaskSort.NEWEST: [f"t{i}" for i in reversed(range(8))],
        TaskSort.OLDEST: [f"t{i}" for i in range(8)],
        TaskSort.PRIORITY: ["t2", "t5", "t1", "t4", "t7", "t0", "t3", "t6"],
    }
    for sort, titles in expected.items():
        assert titles == _every_page(store, TaskQuery(sort=sort, limit=3))
    assert 8 == store.task_pages.count_task_page(TaskQuery(), cap=100)
    assert 5 == store.task_pages.count_task_page(TaskQuery(), cap=5)


def test_reprioritise_refuses_a_finished_task_and_a_number_out_of_range(store):
    """A cancelled task keeps its priority (InvalidTransition); 2**31 is bad input."""
    task = enqueue(store, NewTask(title="t"))
    assert 5 == reprioritise(store, task.id, 5).priority
    with pytest.raises(InvalidInput):
        reprioritise(store, task.id, 2**31)
    cancel(store, task.id)
    with pytest.raises(InvalidTransition):
        reprioritise(store, task.id, 1)


def test_pages_in_priority_order_of_one_status(store):
    """The priority sort of one status (its own query) pages through that status only."""
    for i in range(7):
        enqueue(store, NewTask(title=f"t{i}", priority=i % 3))
    cancel(store, enqueue(store, NewTask(title="gone", priority=9)).id)
    query = TaskQuery(statuses=(TaskStatus.READY,), sort=TaskSort.PRIORITY, limit=2)
    assert ["t2", "t5", "t1", "t4", "t0", "t3", "t6"] == _every_page(store, query)


def _back_pages(store, query, start):
    """The titles of every page before cursor `start`, each read before the first row of
    the page after it, in the order they are shown."""
    seen = []
    query = replace(query, before=start)
    while True:
        page = store.task_pages.task_page(query)
        seen = [t.title for t in page.tasks] + seen
        if page.previous is None:
            return seen
        query = replace(query, before=page.previous)


def test_previous_pages_of_each_sort_go_back_to_the_first(store):
    """From the last page, Previous pages lead back through every task in the same order,
    in each sort, searching and not; the first page has no previous, a later one has."""
    for i in range(8):
        enqueue(store, NewTask(title=f"t{i} needle", priority=i % 3))
    for text in (None, "needle"):
        for sort in TaskSort:
            query = TaskQuery(sort=sort, limit=3, text=text)
            first = store.task_pages.task_page(query)
            assert first.previous is None
            second = store.task_pages.task_page(replace(query, after=first.next))
            assert second.previous is not None
            forward = _every_page(store, query)
            last = store.task_pages.task_page(replace(query, after=second.next))
            assert last.next is None
            assert forward == _back_pages(store, query, last.previous) + _titles(
                store, replace(query, after=second.next)
            ), (sort, text)


def test_search_finds_substrings_of_any_case_by_the_index(store):
    """A search of three characters or more is a case-insensitive substring of the title,
    the description or the payload's JSON text; FTS5 query syntax, quotes and LIKE
    wildcards in it are matched literally; one or two characters are a substring too."""
    enqueue(store, NewTask(title="Deploy the Frobnicator", description="on Monday"))
    enqueue(store, NewTask(title="plain", payload={"url": "https://x.example/a_b%c"}))
    enqueue(store, NewTask(title='say "hi" OR bye*', description="NEAR(a b)"))
    assert ["Deploy the Frobnicator"] == _titles(store, TaskQuery(text="FROBNIC"))
    assert ["Deploy the Frobnicator"] == _titles(store, TaskQuery(text="the frob"))
    assert ["Deploy the Frobnicator"] == _titles(store, TaskQuery(text="monday"))
    assert ["plain"] == _titles(store, TaskQuery(text="a_b%c"))
    assert [] == _titles(store, TaskQuery(text="axb%c"))
    assert ['say "hi" OR bye*'] == _titles(store, TaskQuery(text='"hi" OR bye*'))
    assert ['say "hi" OR bye*'] == _titles(store, TaskQuery(text="NEAR(a"))
    assert [] == _titles(store, TaskQuery(text="hi OR plain"))  # no operator: a phrase
    assert [] == _titles(store, TaskQuery(text="title:plain"))  # no column filter either
    assert ["Deploy the Frobnicator"] == _titles(store, TaskQuery(text="Fr"))
    assert 1 == store.task_pages.count_task_page(TaskQuery(text="frobnicator"), cap=10)
    assert 3 == store.task_pages.count_task_page(TaskQuery(text="a"), cap=10)


def test_a_deleted_task_leaves_the_search(store, clock):
    """Retention deletes a finished task: a search no longer finds it (the index follows
    deletes in the same transaction)."""
    from corral.usecases.retention import Ages, prune

    gone = enqueue(store, NewTask(title="old haystack"))
    enqueue(store, NewTask(title="new haystack"))
    cancel(store, gone.id)
    clock.advance(10 * 86400)
    prune(store, Ages(finished_s=86400.0))
    assert ["new haystack"] == _titles(store, TaskQuery(text="haystack"))


def _without_search(url: str) -> None:
    """Take the search migration's objects out of the store at `url` (later migrations'
    stay: the store is as one migrated before the search existed, then past it)."""
    if "://" not in url:
        conn = sqlite3.connect(url, isolation_level=None)
        conn.executescript(
            "DROP TRIGGER task_text_added; DROP TRIGGER task_text_removed;"
            " DROP TRIGGER task_text_changed; DROP TABLE task_text; DROP TABLE dashboard_sessions;"
        )
        conn.close()
        return
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            b"DROP TABLE task_text; DROP TRIGGER task_text_kept ON tasks;"
            b" DROP FUNCTION corral_keep_task_text(); DROP TABLE dashboard_sessions;"
        )


def _search_migration_again(url: str) -> None:
    """Run the search's migration file on the store at `url`, as `corral db migrate` does."""
    dialect = "postgresql" if "://" in url else "sqlite"
    (path,) = [path for _, path in migration_files(dialect) if path.endswith("_search.sql")]
    with open(path) as script:
        text = script.read()
    if dialect == "sqlite":
        conn = sqlite3.connect(url, isolation_level=None)
        conn.executescript(text)
        conn.close()
        return
    with psycopg.connect(url, autocommit=True) as pg:
        pg.execute(text.encode())


def test_the_migration_indexes_the_tasks_already_there(store, clock):
    """A store whose tasks were there before the search's migration ran: the migration
    fills the index, and a search finds those tasks and the ones added after."""
    enqueue(store, NewTask(title="from before", description="an old needle"))
    url = store._driver.url  # the test's own store, its search taken out and made again
    _without_search(url)
    _search_migration_again(url)
    reopened = open_store(url, clock=clock, migrate=False)
    try:
        assert [] == reopened.pending_migrations()
        enqueue(reopened, NewTask(title="from after", description="a new needle"))
        assert ["from after", "from before"] == _titles(reopened, TaskQuery(text="needle"))
    finally:
        reopened.close()


def test_without_pg_trgm_the_migration_goes_on_and_a_search_scans(pg_database):
    """A role that may not create the extension (no CREATE on the database) migrates to
    version 21 without the trigram index, and a search gives the same answers by a scan."""
    suffix = secrets.token_hex(4)
    role, database = f"corral_plain_{suffix}", f"corral_plain_{suffix}"
    server = pg_database.rsplit("/", 1)[0]
    with psycopg.connect(server + "/postgres", autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN".encode())
        admin.execute(f"CREATE DATABASE {database}".encode())
    try:
        with psycopg.connect(f"{server}/{database}", autocommit=True) as owner:
            owner.execute(f"CREATE SCHEMA corral AUTHORIZATION {role}".encode())
        url = f"{server.replace('postgres@', role + '@')}/{database}?options=-csearch_path%3Dcorral"
        with open_store(url) as plain:
            enqueue(plain, NewTask(title="found by a scan", description="haystack"))
            assert ["found by a scan"] == _titles(plain, TaskQuery(text="HAYSTACK"))
        with psycopg.connect(f"{server}/{database}") as owner:
            indexes = owner.execute(b"SELECT indexname FROM pg_indexes WHERE schemaname = 'corral'")
            assert "task_text_trigrams" not in {name for (name,) in indexes}
    finally:
        with psycopg.connect(server + "/postgres", autocommit=True) as admin:
            admin.execute(f"DROP DATABASE {database} WITH (FORCE)".encode())
            admin.execute(f"DROP ROLE {role}".encode())
