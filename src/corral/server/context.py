"""What every route reads from the application: its store and settings."""

from __future__ import annotations

from starlette.requests import Request

from corral.settings import Settings
from corral.store import Store


def store_of(request: Request) -> Store:
    """The store the server was started on (one for every request, thread-safe)."""
    store: Store = request.app.state.store
    return store


def settings_of(request: Request) -> Settings:
    """The settings the server was started with (the use cases' policies)."""
    settings: Settings = request.app.state.settings
    return settings
