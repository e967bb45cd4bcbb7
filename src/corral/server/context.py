"""What every route reads from the application: its store and settings."""

from __future__ import annotations

from starlette.requests import Request

from corral.foundation.settings import Settings
from corral.model.namespaces import DEFAULT_NAMESPACE, checked
from corral.store import Store
from corral.store.remote import NAMESPACE_HEADER


def store_of(request: Request) -> Store:
    """The store the server was started on (one for every request, thread-safe), in the
    namespace the request names (X-Corral-Namespace, else `default`). `auth.require`
    refuses a request whose token belongs to another namespace, so a route that has
    checked its token acts in the token's namespace alone."""
    store: Store = request.app.state.store
    return store.in_namespace(namespace_of(request))


def namespace_of(request: Request) -> str:
    """The namespace of a dashboard visitor's token (dashboard/visitors.py), else the one
    the request names; a bad name is InvalidInput (422)."""
    visiting = getattr(request.state, "namespace", None)
    if visiting is not None:
        return str(visiting)
    named = request.headers.get(NAMESPACE_HEADER)
    return DEFAULT_NAMESPACE if named is None else checked(named, field_name=NAMESPACE_HEADER)


def settings_of(request: Request) -> Settings:
    """The settings the server was started with (the use cases' policies)."""
    settings: Settings = request.app.state.settings
    return settings
