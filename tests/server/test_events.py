"""The event routes through a real server, on both stores: pages that go on from a cursor
and an SSE stream read by a real HTTP client, neither missing nor repeating an event while
other processes write; a reconnect by Last-Event-ID; the filters of `events --follow`;
one-line 422s naming the parameter; tokens; a clean end on shutdown or a client's leaving."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest
from tests.server.conftest import Server

from corral import EventFilter, open_store
from corral.model.event_cursors import parse_cursor

# Enqueue argv[2] tasks titled argv[3]-N in the store argv[1]: a writer of its own process.
WRITER = """
import sys
from corral import NewTask, enqueue, open_store
with open_store(sys.argv[1]) as store:
    for n in range(int(sys.argv[2])):
        enqueue(store, NewTask(title=f"{sys.argv[3]}-{n}"))
"""
WRITERS, PER_WRITER = 4, 40


def _writers(db: str) -> list[subprocess.Popen[bytes]]:
    return [
        subprocess.Popen([sys.executable, "-c", WRITER, db, str(PER_WRITER), f"w{n}"])
        for n in range(WRITERS)
    ]


def _all_done(writers: list[subprocess.Popen[bytes]]) -> bool:
    return all(w.poll() is not None for w in writers)


def _event_ids(db: str, **fields: object) -> list[int]:
    with open_store(db) as store:
        return [e.id for e in store.events.list_events(EventFilter(limit=100_000, **fields))]  # type: ignore[arg-type]


def wait_until(predicate: Callable[[], bool], timeout_s: float = 10.0) -> None:
    """Poll `predicate` until it holds; fail if it does not within `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"condition not met within {timeout_s} s"
        time.sleep(0.01)


@pytest.fixture
def viewer(served: Server) -> Iterator[str]:
    """A viewer token, the server started."""
    token = served.token("viewer")
    served.start()
    yield token


def test_pages_from_a_cursor_miss_and_repeat_nothing_while_other_processes_write(
    served: Server, viewer: str
) -> None:
    """Four processes add tasks while a client pages with after=: every event written
    after its first cursor, each once."""
    before = set(_event_ids(served.db))
    status, first = served.call("GET", "/api/events?limit=0", viewer)
    assert (200, []) == (status, first["events"])
    cursor, read = first["cursor"], []
    writers = _writers(served.db)
    while True:
        finished = _all_done(writers)  # before the read: a read after the last commit
        page = served.call("GET", f"/api/events?after={cursor}&limit=17", viewer)[1]
        read += [e["id"] for e in page["events"]]
        cursor = page["cursor"]
        if finished and not page["more"] and not page["events"]:
            break
    assert [0] * WRITERS == [w.wait() for w in writers]

    expected = set(_event_ids(served.db)) - before
    assert WRITERS * PER_WRITER == len(expected)
    assert sorted(expected) == sorted(read)


def test_pages_filter_as_events_follow_does(served: Server, viewer: str) -> None:
    """task, worker, type (repeatable) and since select what `corral events` selects."""
    task = json.loads(served.corral("add", "a", "--json").stdout)["id"]
    served.corral("add", "b")
    worker = json.loads(served.corral("worker", "register", "--name", "w", "--json").stdout)["id"]
    assert 0 == served.corral("claim", task, worker).returncode
    cases = {
        f"task={task}": {"task_id": task},
        f"worker={worker}": {"worker_id": worker},
        "type=task.claimed&type=worker.registered": {
            "names": ("task.claimed", "worker.registered")
        },
        "since=1h": {},
    }
    for query, fields in cases.items():
        page = served.call("GET", f"/api/events?limit=1000&{query}", viewer)[1]
        assert _event_ids(served.db, **fields) == [e["id"] for e in page["events"]], query
    assert [] == served.call("GET", "/api/events?since=0s", viewer)[1]["events"]


BAD = [
    ("after=abc", "after"),
    ("after=12", "after"),
    ("after=-1-2", "after"),
    ("after=0-99999999999999999999", "after"),
    ("after=0-1&limit=0", "limit"),
    ("limit=1001", "limit"),
    ("limit=-1", "limit"),
    ("limit=" + "9" * 5000, "limit"),
    ("type=task.exploded", "type"),
    ("since=soon", "since"),
    ("since=-5m", "since"),
    ("since=999999999999d", "since"),
    ("task=a%20b", "task"),
    ("task=%00", "task"),
    ("worker=" + "x" * 101, "worker"),
    ("task=a&task=b", "task"),
    ("colour=red", "colour"),
]


def test_each_bad_parameter_is_a_422_naming_it_on_both_routes(served: Server, viewer: str) -> None:
    """A page or a stream asked with a bad parameter: 422, one line naming it, no stream;
    a bad Last-Event-ID too."""
    for query, field in BAD:
        for route in ("/api/events", "/api/events/stream"):
            status, answer = served.call("GET", f"{route}?{query}", viewer)
            assert (422, field) == (status, answer.get("field")), (route, query, answer)
            assert "\n" not in answer["error"], answer
    refused = served.stream("/api/events/stream", viewer, last_event_id="yesterday")
    answer = json.loads(refused.response.read())
    refused.close()
    assert (422, "Last-Event-ID") == (refused.status, answer["field"])


def test_both_routes_need_a_token_and_every_role_may_read(served: Server) -> None:
    """No token or a wrong one: 401, the stream not opened; viewer, worker, operator: 200
    (a viewer route has no lower role to refuse with 403)."""
    tokens = [served.token(role) for role in ("viewer", "worker", "operator")]
    served.start()
    for route in ("/api/events", "/api/events/stream"):
        for bad in (None, "corral_k-nosuchtoken.secret"):
            status, answer = served.call("GET", route, bad)
            assert (401, "a valid token is needed") == (status, answer["error"][:23])
    for token in tokens:
        assert 200 == served.call("GET", "/api/events", token)[0]
        opened = served.stream("/api/events/stream", token)
        assert 200 == opened.status
        opened.close()


def test_a_stream_sends_the_newest_then_each_new_event_with_its_cursor_as_id(
    served: Server, viewer: str
) -> None:
    """limit=2: the two newest events, then a task added meanwhile as it commits, its data
    the event's JSON and its id a cursor that a page goes on from exactly."""
    for n in range(3):
        served.corral("add", f"old {n}")
    newest = _event_ids(served.db)[-2:]
    stream = served.stream("/api/events/stream?limit=2", viewer)
    assert ("text/event-stream", 200) == (
        stream.response.getheader("content-type", "").split(";")[0],
        stream.status,
    )
    assert newest == [e["id"] for e in stream.events(2)]
    task = json.loads(served.corral("add", "new", "--json").stdout)["id"]
    (event,) = stream.events(1)
    with open_store(served.db) as store:
        (stored,) = store.events.list_events(EventFilter(task_id=task))

    assert stored.to_dict() == event
    assert stream.last_id is not None
    parse_cursor("id", stream.last_id)
    assert [] == served.call("GET", f"/api/events?after={stream.last_id}", viewer)[1]["events"]
    stream.close()


def test_a_stream_with_nothing_to_send_yet_says_where_it_stands(
    served: Server, viewer: str
) -> None:
    """limit=0: no event, but an id alone (no data) at once, from which a reconnect goes on."""
    stream = served.stream("/api/events/stream?limit=0", viewer)
    mark = stream.message()
    stream.close()
    served.corral("add", "meanwhile")
    resumed = served.stream("/api/events/stream", viewer, last_event_id=mark.id if mark else None)

    assert mark is not None and mark.data is None and mark.id is not None
    assert "task.created" == resumed.events(1)[0]["name"]
    resumed.close()


def test_a_client_that_reconnects_with_last_event_id_gets_the_rest_once(
    served: Server, viewer: str
) -> None:
    """Four processes add tasks; a client reads some, drops the connection, reconnects
    with Last-Event-ID while they still write: every task.created once, none twice."""
    route = "/api/events/stream?type=task.created&limit=0"
    stream = served.stream(route, viewer)
    assert stream.message() is not None  # where it stands: an id alone
    writers = _writers(served.db)
    read = [e["id"] for e in stream.events(30)]
    stream.close()
    resumed = served.stream(route, viewer, last_event_id=stream.last_id)
    read += [e["id"] for e in resumed.events(WRITERS * PER_WRITER - 30)]
    assert [0] * WRITERS == [w.wait() for w in writers]
    resumed.close()

    expected = _event_ids(served.db, names=("task.created",))
    assert WRITERS * PER_WRITER == len(read) == len(set(read))
    assert sorted(expected) == sorted(read)


def test_a_filtered_stream_sends_only_what_matches(served: Server, viewer: str) -> None:
    """type=task.completed&task=ID: of everything written, that task's completion only."""
    worker = json.loads(served.corral("worker", "register", "--name", "w", "--json").stdout)["id"]
    tasks = [json.loads(served.corral("add", f"t{n}", "--json").stdout)["id"] for n in range(2)]
    stream = served.stream(
        f"/api/events/stream?type=task.completed&task={quote(tasks[1])}&limit=0", viewer
    )
    for task in tasks:
        assert 0 == served.corral("claim", task, worker).returncode
        assert 0 == served.corral("done", task).returncode
    (event,) = stream.events(1)
    assert ("task.completed", tasks[1]) == (event["name"], event["task_id"])
    assert (
        []
        == served.call(
            "GET", f"/api/events?after={stream.last_id}&type=task.completed&task={tasks[1]}", viewer
        )[1]["events"]
    )
    stream.close()


def test_open_streams_end_cleanly_when_the_server_shuts_down(served: Server, viewer: str) -> None:
    """SIGTERM with three streams open: the server exits 0 within 5 s, each stream ends
    with its last chunk (no error), the log holds no error."""
    streams = [served.stream("/api/events/stream?limit=0", viewer) for _ in range(3)]
    for stream in streams:
        assert stream.message() is not None
    assert served.proc is not None
    started = time.monotonic()
    served.proc.terminate()

    assert 0 == served.proc.wait(timeout=10)
    assert time.monotonic() - started < 5
    assert [None] * 3 == [s.message() for s in streams]
    for stream in streams:
        stream.close()
    logged = served.log.read_text()
    assert "ERROR" not in logged and "Traceback" not in logged, logged


def _followers(pg_url: str) -> int:
    with psycopg.connect(pg_url) as conn:
        row = conn.execute("SELECT count(*) FROM event_followers").fetchone()
        return int(row[0]) if row else 0


def test_the_streams_of_a_server_share_one_listener_given_up_with_the_last(
    tmp_path: Path, pg_url: str
) -> None:
    """PostgreSQL: two streams, one LISTEN session (a follower of the log); when both
    clients go, it leaves, so commits stop notifying; the server goes on answering."""
    served = Server(tmp_path, pg_url)
    viewer = served.token("viewer")
    served.start()
    try:
        streams = [served.stream("/api/events/stream?limit=0", viewer) for _ in range(2)]
        for stream in streams:
            assert stream.message() is not None
        wait_until(lambda: _followers(pg_url) == 1)
        for stream in streams:
            stream.close()
        wait_until(lambda: _followers(pg_url) == 0)
        assert 200 == served.call("GET", "/api/events", viewer)[0]
        logged = served.stop()
    finally:
        served.kill()
    assert "ERROR" not in logged and "Traceback" not in logged, logged
