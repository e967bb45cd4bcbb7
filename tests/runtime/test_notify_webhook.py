"""`[notify] url`: notices POSTed as JSON to a real HTTP server on loopback, each POST one
try (the delivery queue retries: test_notify_deliveries.py), bounded, never followed
elsewhere, the URL's secrets in no log line (runtime/pool/webhook.py)."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import base64
import json
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from tests.runtime.conftest import wait_until

import corral
from corral import InvalidInput, NewTask, NewWorker, Settings, Store
from corral.runtime.pool.notify import Notifier, Posted
from corral.runtime.pool.webhook import Webhook
from corral.usecases import reviews

SECRET = "s3cr3t-pw"  # noqa: S105 - a made-up secret the logs must not show
PATH_SECRET = "/hooks/T000/XXXX-path-token"  # noqa: S105 - likewise, in the URL's path


@dataclass
class Endpoint:
    """What the loopback server was sent, and how it is to answer."""

    port: int
    status: int = 204
    location: str | None = None
    hold: threading.Event | None = None  # answer only once set
    seen: list[dict] = field(default_factory=list)

    def url(self, *, auth: bool = True) -> str:
        userinfo = f"alice:{SECRET}@" if auth else ""
        return f"http://{userinfo}127.0.0.1:{self.port}{PATH_SECRET}?key=q-token"


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    """An HTTP server on a free loopback port, in a thread, recording each request."""
    found = Endpoint(port=0)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            found.seen.append(
                {"path": self.path, "headers": dict(self.headers), "body": json.loads(body)}
            )
            if found.hold is not None:
                found.hold.wait(10)
            self.send_response(found.status)
            if found.location:
                self.send_header("Location", found.location)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            """Quiet: the test reads `seen`."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    found.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield found
    finally:
        if found.hold is not None:
            found.hold.set()
        server.shutdown()
        server.server_close()


@pytest.fixture
def lines() -> Iterator[tuple[logging.Logger, list[str]]]:
    """A logger whose formatted lines are kept."""
    kept: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            kept.append(record.getMessage())

    log = logging.getLogger(f"test-webhook-{id(kept)}")
    log.addHandler(Keep())
    log.setLevel(logging.DEBUG)
    log.propagate = False
    yield log, kept


def _secret_free(lines: list[str]) -> bool:
    text = "\n".join(lines)
    return not any(s in text for s in (SECRET, PATH_SECRET, "q-token", "alice"))


def _pr_closed(store: Store, settings: Settings) -> str:
    """A task in review whose pull request is then closed unmerged: its id."""
    task = corral.enqueue(store, NewTask(title="t"), settings=settings)
    worker = corral.register(store, NewWorker(name="w", pid=None), settings=settings).worker
    claim = corral.claim(store, task.id, worker.id, settings=settings)
    url = "https://github.example/acme/repo/pull/1"
    reviews.submit(store, task.id, token=claim.token, pr_url=url)
    reviews.settle_pull_request(store, task.id, pr_url=url, merged_commit=None)
    return task.id


def test_notices_are_posted_as_the_events_json(
    store: Store, settings: Settings, endpoint: Endpoint, lines
) -> None:
    """task.waiting, the review a pull request asks for and task.pr_closed reach the
    endpoint, one POST each, the event's JSON with its kind in a header and the URL's
    userinfo as Basic auth; no line logs a secret."""
    log, kept = lines
    notifier = Notifier(store, [Posted(Webhook(endpoint.url()))], leading=lambda: True, log=log)
    try:
        task = corral.enqueue(store, NewTask(title="w"), settings=settings)
        worker = corral.register(store, NewWorker(name="v", pid=None), settings=settings).worker
        claim = corral.claim(store, task.id, worker.id, settings=settings)
        corral.wait(store, task.id, reason="refused: Bash", token=claim.token)
        closed = _pr_closed(store, settings)
        wait_until(lambda: len(endpoint.seen) >= 3, timeout_s=10)
    finally:
        notifier.stop()
        notifier.join()
    got = [(s["headers"]["X-Corral-Notice"], s["body"]["name"], s["body"]["task_id"])
           for s in endpoint.seen]  # fmt: skip
    assert [("task.waiting", "task.waiting", task.id),
            ("review.requested", "task.submitted", closed),
            ("task.pr_closed", "task.pr_closed", closed)] == got  # fmt: skip
    first = endpoint.seen[0]
    expected_auth = "Basic " + base64.b64encode(f"alice:{SECRET}".encode()).decode()
    assert (f"{PATH_SECRET}?key=q-token", expected_auth, "application/json") == (
        first["path"],
        first["headers"]["Authorization"],
        first["headers"]["Content-Type"],
    )
    assert str(first["body"]["id"]) == first["headers"]["X-Corral-Event-Id"]
    assert 3 == sum(1 for line in kept if line.startswith("notify.sent"))
    assert f"to=http://127.0.0.1:{endpoint.port}/***" in kept[0]
    assert _secret_free(kept)


def test_an_endpoint_that_fails_gets_one_try_and_the_error_names_no_secret(
    endpoint: Endpoint,
) -> None:
    """A 500 is one POST and `HTTP 500`; a redirect is not followed (one POST, `HTTP 302`)."""
    hook = Webhook(endpoint.url())
    endpoint.status = 500
    assert "HTTP 500" == hook.post({"name": "x"}, notice="task.failed", event_id=1)
    endpoint.status, endpoint.location = 302, f"http://127.0.0.1:{endpoint.port}/elsewhere"
    assert "HTTP 302" == hook.post({"name": "x"}, notice="task.failed", event_id=2)
    assert [PATH_SECRET + "?key=q-token"] * 2 == [s["path"] for s in endpoint.seen]


def test_an_endpoint_that_does_not_answer_is_given_up_after_the_timeout(
    endpoint: Endpoint,
) -> None:
    """No answer within the timeout: the post returns `timed out`, quoting no secret."""
    endpoint.hold = threading.Event()
    error = Webhook(endpoint.url(), timeout_s=0.2).post({}, notice="task.failed", event_id=1)
    assert "timed out" == error
    endpoint.hold.set()


def test_a_refused_connection_is_reported_without_the_url() -> None:
    """Nothing listening: the error is the connection's, and it quotes no secret."""
    with ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler) as taken:
        port = taken.server_address[1]  # closed at once: nothing listens there after
    url = f"http://alice:{SECRET}@127.0.0.1:{port}{PATH_SECRET}"
    error = Webhook(url).post({}, notice="task.failed", event_id=1)
    assert error is not None and "refused" in error.lower()
    assert _secret_free([error])


def test_the_url_is_checked_and_never_shown_whole(tmp_path) -> None:
    """A URL (or an ntfy topic's) that is not http(s) is refused naming the key, not its
    value; `config show` gives the scheme and host only."""
    bad_urls = ("ftp://alice:pw@h/x", "hooks.example.com/x", "https://", "https://h:99999/x",
                "https://h:port/x")  # fmt: skip
    for bad in bad_urls:
        with pytest.raises(InvalidInput) as refused:
            Settings().with_values({"notify_url": bad}, "config.toml", {"notify_url": "notify.url"})
        assert "config.toml: notify.url: expected an http:// or https:// URL with a host" == str(
            refused.value
        )
    with pytest.raises(InvalidInput, match=r"notify\.ntfy: expected an http"):
        Settings().with_values(
            {"notify_ntfy": "ntfy.sh/topic"}, "c", {"notify_ntfy": "notify.ntfy"}
        )
    shown = Settings(
        notify_url=f"https://alice:{SECRET}@hooks.example.com{PATH_SECRET}",
        notify_ntfy="https://ntfy.sh/corral-secret-topic",
    )
    rows = {r["key"]: r["value"] for r in shown.rows()}
    assert ("https://hooks.example.com/***", "https://ntfy.sh/***") == (
        rows["notify.url"],
        rows["notify.ntfy"],
    )


def test_an_ipv6_webhook_with_a_port_is_taken_and_shown_by_host() -> None:
    """`http://[::1]:PORT/path`: a valid URL, shown as its scheme, host and port."""
    settings = Settings(notify_url="http://[::1]:8080/hook/secret")
    [row] = [r for r in settings.rows() if r["key"] == "notify.url"]
    assert "http://[::1]:8080/***" == row["value"]


def test_an_orchestrator_with_only_a_url_posts_a_task_failed_for_good(
    pool: Any, endpoint: Endpoint
) -> None:
    """`[notify] url` without a command: the orchestrator POSTs `task.failed` once its task
    fails for good, and its log names the endpoint by host only."""
    config = pool.folder / ".corral" / "config.toml"
    config.write_text(f'[notify]\nurl = "{endpoint.url()}"\n')
    pool.agent.write_text("#!/bin/sh\nexit 1\n")
    (task,) = pool.add(1, max_attempts=1)
    pool.start(workers=1)
    pool.wait(lambda: any(s["body"]["name"] == "task.failed" for s in endpoint.seen), 30)
    assert 0 == pool.corral("orchestrator", "stop", "--graceful").returncode
    failed = [s for s in endpoint.seen if s["body"]["name"] == "task.failed"]
    assert [task] == [s["body"]["task_id"] for s in failed]
    assert f"to=http://127.0.0.1:{endpoint.port}/***" in pool.log()
    assert _secret_free([pool.log()])
