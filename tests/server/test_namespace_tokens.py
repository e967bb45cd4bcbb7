"""A token of `corral serve` belongs to one namespace: the server acts in it alone, and a
client that names another is refused in one line naming both."""

from __future__ import annotations

import json
import urllib.request

from tests.server.conftest import Server

from corral.usecases.sign_ins import sign_in

B = "team-b"


def test_a_token_acts_in_its_namespace_and_refuses_a_client_naming_another(
    server: Server,
) -> None:
    """Over HTTP, a team-b token lists, adds and counts team-b's tasks only; with another
    CORRAL_NAMESPACE its client gets one line naming both (exit 2)."""
    made = server.corral("--namespace", B, "token", "create", "--role", "operator", "--json")
    assert 0 == made.returncode, made.stderr
    created = json.loads(made.stdout)
    assert B == created["namespace"]
    assert 0 == server.corral("add", "ours, in default").returncode
    server.start()
    remote = {**server.env, "CORRAL_DB": server.url, "CORRAL_TOKEN": created["token"]}
    server.env, local = {**remote, "CORRAL_NAMESPACE": B}, server.env
    assert 0 == server.corral("add", "theirs").returncode
    listed = server.corral("list", "--json")
    assert ["theirs"] == [t["title"] for t in json.loads(listed.stdout)]
    server.env = remote  # no CORRAL_NAMESPACE: the client asks for `default`
    refused = server.corral("list")
    assert 2 == refused.returncode
    line = refused.stderr.strip()
    assert 1 == len(line.splitlines())
    assert "namespace 'default' was asked for" in line
    assert f"belongs to namespace {B!r}" in line
    server.env = local
    listed = server.corral("list", "--json")
    assert ["ours, in default"] == [t["title"] for t in json.loads(listed.stdout)]


def test_metrics_are_labelled_with_the_tokens_namespace(server: Server) -> None:
    """A team-b viewer scrapes team-b's gauges, labelled namespace="team-b"."""
    made = server.corral("--namespace", B, "token", "create", "--role", "viewer")
    assert 0 == server.corral("--namespace", B, "add", "b").returncode
    assert 0 == server.corral("add", "a", "--queue", "elsewhere").returncode
    server.start()
    lines = server.text("/metrics", made.stdout.strip(), namespace=B).splitlines()
    labels = f'kind="default",namespace="{B}",queue="default",status="ready"'
    assert f"corral_tasks{{{labels}}} 1.0" in lines
    assert not [line for line in lines if 'queue="elsewhere"' in line]


def test_the_dashboard_shows_the_signed_in_tokens_namespace(server: Server) -> None:
    """A browser names no namespace: signed in with a team-b token, the task list is
    team-b's."""
    viewer = server.corral("--namespace", B, "token", "create", "--role", "viewer")
    assert 0 == server.corral("--namespace", B, "add", "theirs-title").returncode
    assert 0 == server.corral("add", "ours-title").returncode
    with server.store() as store:  # the session a sign-in with that token opens
        opened = sign_in(store, viewer.stdout.strip(), max_age_s=60)
    assert opened is not None
    server.start()
    request = urllib.request.Request(f"{server.url}/tasks")  # noqa: S310 - http://
    request.add_header("Cookie", f"corral_session={opened[1]}")
    with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 - http://
        page = answer.read().decode()
    assert ("theirs-title" in page, "ours-title" in page) == (True, False)
