"""Every route and every store operation, called by every kind of caller through a real
`corral serve`, answers exactly what server/roles.py and the `@served` declarations say:
no token 401 (a dashboard page sends the browser to sign in), a role too low or a
namespace not the token's 403, anything else is served (its own 2xx or 4xx). The routes
come from the app itself and the operations from their registry, so a route or an
operation added without a declaration fails here; docs/http-api.md's tables are the
same declarations, checked here too."""

from __future__ import annotations

import http.client
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlencode

import pytest
from starlette.requests import Request
from starlette.routing import Mount, Route
from tests.served import Served
from tests.server.conftest import Server

from corral import InvalidInput, NewWorker, Settings, Store, open_store
from corral.model.api_tokens import Role
from corral.server import dashboard
from corral.server.app import create_app
from corral.server.auth import RANK
from corral.server.dashboard import csrf
from corral.server.roles import ROLES
from corral.store.operations import operations
from corral.store.providers import MAX_WORKER_PARK_S
from corral.usecases.sign_ins import sign_in

OTHER = "team-b"
CSRF_SECRET = "s" * 43  # the CSRF cookie every caller's browser holds
SAMPLES = {"stream": "transcript", "queue": "default"}  # a path parameter's value, else "nope"
DOCS = Path(__file__).parents[2] / "docs" / "http-api.md"


@dataclass(frozen=True)
class Caller:
    """Who calls: a token of a role in a namespace, or nobody."""

    label: str
    role: Role | None = None
    namespace: str = "default"
    token: str | None = None


@dataclass(frozen=True)
class Call:
    """One (method, path) of the app, with the role declared for it and how it is called."""

    method: str
    path: str  # as the app routes it, `{id}` and all
    role: Role | None
    browser: bool  # a dashboard route: a session cookie and a form, no namespace named

    def url(self) -> str:
        """The path with a value for each parameter (ids that name nothing)."""
        if self.path == "/static":
            return "/static/dashboard.css"
        return re.sub(r"\{(\w+)(?::\w+)?\}", lambda m: SAMPLES.get(m[1], "nope"), self.path)


def _app_routes() -> list[tuple[str, str, bool]]:
    """Every (method, path) the app routes (HEAD aside: its GET's), and whether it is the
    dashboard's."""
    with open_store(":memory:") as store:
        app = create_app(store, Settings())
    found = []
    for route in app.routes:
        browser = route in dashboard.ROUTES
        if isinstance(route, Mount):
            found.append(("GET", route.path, browser))
        elif isinstance(route, Route):
            methods = sorted(m for m in route.methods or () if m != "HEAD")
            found += [(method, route.path, browser) for method in methods]
    return found


ROUTES = _app_routes()


def test_every_route_of_the_app_declares_its_role():
    """The table names exactly the app's routes: none undeclared, none left over."""
    assert sorted(ROLES) == sorted((method, path) for method, path, _ in ROUTES)


def _expected(role: Role | None, caller: Caller, *, browser: bool) -> str:
    """The answer a caller should get: `served`, `signed out` (401) or `refused` (403)."""
    if role is None:
        return "served"
    if caller.token is None:
        return "signed out"
    assert caller.role is not None
    # A browser names no namespace: the dashboard shows the signed-in token's.
    foreign = caller.namespace != "default" and caller.role is not Role.ADMIN
    if foreign and not browser:
        return "refused"
    return "served" if RANK[caller.role] >= RANK[role] else "refused"


def _observed(method: str, status: int, location: str, text: str) -> str:
    """What an answer says of the caller's rights; a 5xx is a bug, never an answer."""
    assert status < 500, (status, text)
    if method == "GET" and status == 303 and location.startswith("/login"):
        return "signed out"  # a dashboard page sends the browser to its login form
    if status == 401 and ("token is needed" in text or "sign in first" in text):
        return "signed out"
    if status == 403 and ("this needs a" in text or "was asked for" in text):
        return "refused"
    return "served"  # 2xx, or a 4xx of the input or the state: the role let it through


class Client:
    """Requests to the server, each with a caller's token, session and CSRF token."""

    def __init__(self, server: Server, store: Store) -> None:
        self.server = server
        self.store = store

    def answer(self, call: Call, caller: Caller, path: str | None = None) -> str:
        """The caller's answer to `call` (at `path`, else the call's own)."""
        headers = {"Origin": self.server.url, "Sec-Fetch-Site": "same-origin"}
        if caller.token is not None:
            headers["Authorization"] = f"Bearer {caller.token}"
        body = None
        if call.browser:
            session = self._session(caller)
            headers["Cookie"] = f"{csrf.CSRF_COOKIE}={CSRF_SECRET}; corral_session={session}"
            if call.method == "POST":
                form = {csrf.CSRF_FIELD: _csrf_token(session), "token": caller.token or ""}
                body = urlencode(form).encode()
                headers["Content-Type"] = "application/x-www-form-urlencoded"
        elif call.method != "GET":
            body = b"{}"
            headers["Content-Type"] = "application/json"
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=30)
        try:
            conn.request(call.method, path or call.url(), body=body, headers=headers)
            response = conn.getresponse()
            # A served stream never ends: its status says enough.
            text = "" if response.status < 300 else response.read().decode(errors="replace")
            location = response.getheader("location") or ""
            return _observed(call.method, response.status, location, text)
        finally:
            conn.close()

    def _session(self, caller: Caller) -> str:
        """A new dashboard session of the caller's token (each request its own: one may be
        a sign-out), or none."""
        if caller.token is None:
            return ""
        opened = sign_in(self.store, caller.token, max_age_s=600)
        assert opened is not None
        return opened[1]


def _csrf_token(session: str) -> str:
    """The CSRF token a dashboard page of this session gives its forms."""
    cookie = f"{csrf.CSRF_COOKIE}={CSRF_SECRET}; corral_session={session}"
    return csrf.token_of(Request({"type": "http", "headers": [(b"cookie", cookie.encode())]}))


@pytest.fixture
def callers(server: Server) -> Iterator[tuple[Client, list[Caller]]]:
    """A started server, and one caller of each kind: nobody, a token of each role in
    `default`, an admin's of another namespace and an operator's of another namespace."""
    made = [Caller("no token")]
    for label, role, namespace in (
        ("viewer", Role.VIEWER, "default"),
        ("worker", Role.WORKER, "default"),
        ("operator", Role.OPERATOR, "default"),
        ("admin (of team-b)", Role.ADMIN, OTHER),
        ("operator of team-b", Role.OPERATOR, OTHER),
    ):
        created = server.corral("--namespace", namespace, "token", "create", "--role", role)
        assert 0 == created.returncode, created.stderr
        made.append(Caller(label, role, namespace, created.stdout.strip()))
    server.start()
    with server.store() as store:
        yield Client(server, store), made


def test_every_route_answers_every_caller_as_declared(callers):
    """Each route of the app, called by each kind of caller, is served, signed out or
    refused exactly as its declared role says."""
    client, made = callers
    wrong = []
    for method, path, browser in ROUTES:
        call = Call(method, path, ROLES[(method, path)], browser)
        for caller in made:
            expected = _expected(call.role, caller, browser=browser)
            got = client.answer(call, caller)
            if got != expected:
                wrong.append(f"{method} {path} by {caller.label}: {got}, not {expected}")
    assert [] == wrong


def test_every_store_operation_answers_every_caller_as_declared(callers):
    """Each operation of the remote store (POST /api/store/NAME), called by each kind of
    caller, is served, signed out or refused exactly as its `@served` role says."""
    client, made = callers
    call = Call("POST", "/api/store/{name}", Role.VIEWER, browser=False)
    wrong = []
    for name, operation in sorted(operations().items()):
        role = Role(operation.served.role)
        for caller in made:
            expected = _expected(role, caller, browser=False)
            got = client.answer(call, caller, f"/api/store/{name}")
            if got != expected:
                wrong.append(f"{name} by {caller.label}: {got}, not {expected}")
    assert [] == wrong


def routes_table() -> str:
    """docs/http-api.md's table of the routes and their roles, from ROLES."""
    rows = [
        f"| `{method} {path}` | {'none' if role is None else role} |"
        for (method, path), role in sorted(ROLES.items(), key=lambda item: item[0][::-1])
    ]
    return "\n".join(["| route | least role |", "|---|---|", *rows])


def operations_table() -> str:
    """docs/http-api.md's table of the store operations by their least role."""
    by_role: dict[str, list[str]] = {str(role): [] for role in Role}
    for name, operation in sorted(operations().items()):
        by_role[operation.served.role].append(f"`{name}`")
    rows = [f"| `{role}` | {', '.join(names)} |" for role, names in by_role.items() if names]
    return "\n".join(["| least role | operations |", "|---|---|", *rows])


@pytest.mark.parametrize("table", [routes_table, operations_table])
def test_the_docs_table_of_roles_is_the_declared_one(table):
    """docs/http-api.md holds the table as the declarations make it (paste it from the
    failure when a role changes)."""
    made = table()
    documented = made in DOCS.read_text(encoding="utf-8")
    assert documented, "docs/http-api.md lacks:\n" + made


def test_an_admin_acts_in_the_namespace_a_request_names_and_no_other_token_does(server):
    """An admin token of team-b lists team-c's tasks when a request names team-c; an
    operator token of `default` naming team-c is refused in one line naming both."""
    admin = server.corral("--namespace", OTHER, "token", "create", "--role", "admin")
    operator = server.token("operator")
    assert 0 == server.corral("--namespace", "team-c", "add", "theirs").returncode
    server.start()
    listed = json.loads(_get(server, "/api/tasks", admin.stdout.strip(), "team-c")[1])
    assert ["theirs"] == [task["title"] for task in listed]
    status, text = _get(server, "/api/tasks", operator, "team-c")
    assert (403, "namespace 'team-c' was asked for") == (status, json.loads(text)["error"][:32])


def _get(server: Server, path: str, token: str, namespace: str) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        headers = {"Authorization": f"Bearer {token}", "X-Corral-Namespace": namespace}
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        return response.status, response.read().decode()
    finally:
        conn.close()


def test_a_worker_token_parks_only_the_account_its_own_worker_spends(tmp_path):
    """Over HTTP a worker token may not park an account by name (403), nor another
    token's worker's account; it parks its own worker's, in its namespace, for a week at
    most. Queue limits are refused to it too."""
    served = Served(open_store(str(tmp_path / "corral.db")))
    ours, other = served.remote("worker"), served.remote("worker")
    try:
        far = ours.now() + timedelta(days=3650)
        with pytest.raises(InvalidInput, match="this needs an operator token"):
            ours.providers.park_provider("claude", until=far, reason="x", actor="w")
        with pytest.raises(InvalidInput, match="this needs an operator token"):
            ours.queues.set_queue_limits("default", {"max_ready": 0}, actor="w")
        spec = NewWorker(name="w", hostname="h", pid=None, provider="claude")
        mine = ours.workers.register_worker(spec, actor="w")
        theirs = other.workers.register_worker(replace(spec, name="x"), actor="x")
        with pytest.raises(InvalidInput, match="acts only for workers it registered"):
            ours.providers.park_worker_provider(theirs.id, until=far, reason="x")
        assert ours.providers.park_worker_provider(mine.id, until=far, reason="limit")
        (state,) = served.local.providers.provider_states()
        assert state.parked_until is not None
        assert state.parked_until <= ours.now() + timedelta(seconds=MAX_WORKER_PARK_S)
        assert [] == served.local.in_namespace(OTHER).providers.provider_states()
    finally:
        ours.close()
        other.close()
        served.stop()
        served.local.close()
