"""`corral serve` against other web pages, through a real server on loopback: a rebound
Host is refused while no token exists, and a write another site's page sent is refused on
every route (host_guard.py, dashboard/csrf.py)."""

from __future__ import annotations

import http.client
import json
import re
import urllib.parse

from corral.model.tasks import NewTask, TaskStatus
from corral.usecases.tasks import enqueue

from .conftest import Server

Answer = tuple[int, dict[str, str], bytes]


def _request(
    server: Server, method: str, path: str, headers: dict[str, str], body: bytes = b""
) -> Answer:
    """(status, headers, body) of one request carrying exactly `headers` (Host included)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for name, value in {**headers, "Content-Length": str(len(body))}.items():
            conn.putheader(name, value)
        conn.endheaders(body)
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def _form_post(server: Server, path: str, host: str, extra: dict[str, str]) -> Answer:
    """A dashboard write as a browser of `host` sends it: the page's CSRF token and
    cookie first read from the task list with that Host, then the form with `extra`."""
    _, headers, page = _request(server, "GET", "/tasks", {"Host": host})
    found = re.search(rb'name="csrf" value="([^"]+)"', page)
    token = found.group(1).decode() if found else "guessed"
    cookie = headers.get("set-cookie", "corral_csrf=guessed").split(";")[0]
    form = urllib.parse.urlencode({"csrf": token}).encode()
    sent = {"Host": host, "Cookie": cookie, "Content-Type": "application/x-www-form-urlencoded"}
    return _request(server, "POST", path, {**sent, **extra}, form)


def _task(server: Server) -> str:
    with server.store() as store:
        return enqueue(store, NewTask(title="keep me")).id


def _status(server: Server, task: str) -> TaskStatus:
    with server.store() as store:
        return store.tasks.get_task(task).status


def test_without_a_token_a_rebound_host_is_refused_on_every_route(server: Server) -> None:
    """The probe's case: no token, `Host: rebind.evil.example:PORT` from the loopback reads
    no page and cancels nothing (403, one line), on the dashboard, the API and /healthz."""
    server.start()
    task = _task(server)
    evil = f"rebind.evil.example:{server.port}"
    for path in ("/", f"/tasks/{task}", "/api/tasks", "/healthz"):
        status, _, body = _request(server, "GET", path, {"Host": evil})
        assert 403 == status, path
        assert "not served while no token exists" in json.loads(body)["error"]
    cancel = _form_post(server, f"/tasks/{task}/cancel", evil, {"Origin": f"http://{evil}"})
    assert 403 == cancel[0]
    assert TaskStatus.READY == _status(server, task)


def test_without_a_token_loopback_names_are_served(server: Server) -> None:
    """localhost, *.localhost, 127.0.0.1 and [::1] at any port read pages, and a write with
    the page's token and its own Origin goes through (the guard keeps the dashboard)."""
    server.start()
    task = _task(server)
    for host in (
        "localhost",
        f"localhost:{server.port}",
        "app.localhost:1",
        "127.0.0.1:9",
        "[::1]",
    ):
        assert 200 == _request(server, "GET", "/tasks", {"Host": host})[0], host
    host = f"localhost:{server.port}"
    cancel = _form_post(server, f"/tasks/{task}/cancel", host, {"Origin": f"http://{host}"})
    assert 303 == cancel[0]
    assert TaskStatus.CANCELLED == _status(server, task)


def test_allowed_hosts_are_served_without_a_token(server: Server) -> None:
    """A name of `[server] allowed_hosts` is served as the loopback's names are."""
    server.env["CORRAL_ALLOWED_HOSTS"] = "corral.lan, box.internal"
    server.start()
    assert 200 == _request(server, "GET", "/tasks", {"Host": f"corral.lan:{server.port}"})[0]
    assert 403 == _request(server, "GET", "/tasks", {"Host": "other.lan"})[0]


def test_with_a_token_any_host_needs_the_token(server: Server) -> None:
    """Once a token exists any Host is served, and every request needs the token: the
    dashboard sends a rebound Host to its login, the API answers the bearer token."""
    operator = server.token("operator")
    server.start()
    evil = {"Host": "rebind.evil.example"}
    page = _request(server, "GET", "/tasks", evil)
    assert (303, "/login?next=%2Ftasks") == (page[0], page[1]["location"])
    assert 401 == _request(server, "GET", "/api/tasks", evil)[0]
    bearer = {**evil, "Authorization": f"Bearer {operator}"}
    assert 200 == _request(server, "GET", "/api/tasks", bearer)[0]


def test_a_write_from_another_site_is_refused_on_every_route(server: Server) -> None:
    """An API write with a valid bearer token but another site's Origin or
    `Sec-Fetch-Site: cross-site` (or same-site) is 403; the CLI's (neither header) is 201."""
    operator = server.token("operator")
    server.start()
    own = {"Host": f"127.0.0.1:{server.port}", "Authorization": f"Bearer {operator}"}
    body = b'{"title": "x"}'
    for sent in (
        {"Origin": "https://evil.example"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
    ):
        status, _, answer = _request(server, "POST", "/api/tasks", {**own, **sent}, body)
        assert 403 == status, sent
        assert "from another site's page is refused" in json.loads(answer)["error"]
    assert 201 == _request(server, "POST", "/api/tasks", own, body)[0]
    same = {**own, "Origin": f"http://127.0.0.1:{server.port}", "Sec-Fetch-Site": "same-origin"}
    assert 201 == _request(server, "POST", "/api/tasks", same, body)[0]


def test_a_dashboard_write_needs_its_origin_or_sec_fetch_site(server: Server) -> None:
    """Without a token, a loopback write with the page's CSRF token is still refused
    cross-site, or with neither Origin nor Sec-Fetch-Site; `Sec-Fetch-Site: same-origin`
    without an Origin goes through."""
    server.start()
    task = _task(server)
    host = f"127.0.0.1:{server.port}"
    path = f"/tasks/{task}/cancel"
    for extra in ({"Origin": "http://evil.example"}, {"Sec-Fetch-Site": "cross-site"}, {}):
        assert 403 == _form_post(server, path, host, extra)[0], extra
    assert TaskStatus.READY == _status(server, task)
    assert 303 == _form_post(server, path, host, {"Sec-Fetch-Site": "same-origin"})[0]
    assert TaskStatus.CANCELLED == _status(server, task)
