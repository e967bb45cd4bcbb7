"""The OpenAPI document: it names exactly the app's routes, the server serves it, and a
property-based test generated from it (schemathesis, valid and invalid inputs alike, with
an operator's token) never makes a real server answer 5xx."""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import GenerationMode
from starlette.routing import Route
from tests.served import Served

from corral import Settings, open_store
from corral.server import dashboard
from corral.server.app import create_app
from corral.server.openapi import document

SCHEMA = schemathesis.openapi.from_dict(document())
SCHEMA.config.generation.update(
    modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE],
    max_examples=30,
    deterministic=True,
    database="none",
)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, str]]:
    """One server on a SQLite store for the whole module, and an operator's token."""
    folder: Path = tmp_path_factory.mktemp("openapi")
    served = Served(open_store(str(folder / "corral.db")))
    remote = served.remote("operator")
    token = remote.transport._headers["Authorization"].removeprefix("Bearer ")
    remote.close()
    yield served, token
    served.stop()
    served.local.close()


def test_the_document_names_exactly_the_apps_routes(tmp_path):
    """Every (method, path) the app routes is in the document, and nothing else is (the
    dashboard's pages are for browsers, and `/mcp` speaks JSON-RPC under the Model Context
    Protocol's own schema: neither is part of the REST API)."""
    with open_store(str(tmp_path / "corral.db")) as store:
        app = create_app(store, Settings())
    routed = {
        (method.lower(), re.sub(r"\{(\w+):\w+\}", r"{\1}", route.path))  # {id:path}: {id}
        for route in app.routes
        if isinstance(route, Route) and route not in dashboard.ROUTES and route.path != "/mcp"
        for method in route.methods or ()
        if method != "HEAD"
    }
    documented = {(m, p) for p, ops in document()["paths"].items() for m in ops}
    assert routed == documented


def test_the_server_serves_the_document(live):
    """GET /openapi.json (a viewer's token or better) is the document."""
    served, token = live
    request = urllib.request.Request(f"{served.url}/openapi.json")  # noqa: S310 - http://
    request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310 - http://
        assert document() == json.loads(answer.read())


@SCHEMA.parametrize()
@settings(suppress_health_check=list(HealthCheck), deadline=None)
def test_no_input_makes_the_server_fail(case, live):
    """Whatever the document lets a client send, or breaks it in, the answer is not 5xx."""
    served, token = live
    response = case.call(base_url=served.url, headers={"Authorization": f"Bearer {token}"})
    assert response.status_code < 500, (case.method, case.formatted_path, response.text)
