"""What every command needs: where the store is, the settings, and how to print.

The store is opened on first use, so `--help` and usage errors never touch a database.
"""

from __future__ import annotations

import gc
import json
import os
import sys
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from corral.errors import InvalidInput, StoreError
from corral.settings import Settings, load_settings
from corral.store import Store, open_store
from corral.store.location import DB_NAME, DEFAULT_DIR, config_path, resolve_db

if TYPE_CHECKING:
    import argparse
    from typing import TypeAlias

    # What the fast path (fast_parse) or argparse (argtree) made of the command line.
    Args: TypeAlias = SimpleNamespace | argparse.Namespace


class Context:
    """Resolved options of one command invocation."""

    def __init__(self, args: Args) -> None:
        self.args = args
        self.json = bool(getattr(args, "json", False))
        self._db: str | None = getattr(args, "db", None) or os.environ.get("CORRAL_DB") or None
        self._store: Store | None = None
        self._settings: Settings | None = None

    @property
    def db(self) -> str:
        """`--db`, else CORRAL_DB, else the nearest `.corral/corral.db`; `init` creates one here."""
        if self._db is None:
            cwd = os.getcwd()
            found = None if self.args.command == "init" else resolve_db(None, {}, cwd)
            if found is None:
                if self.args.command != "init":
                    raise StoreError(
                        f"no corral store in {cwd} or above it: run `corral init`, "
                        "or name one with --db or CORRAL_DB"
                    )
                os.makedirs(os.path.join(cwd, DEFAULT_DIR), exist_ok=True)
                found = os.path.join(cwd, DEFAULT_DIR, DB_NAME)
            self._db = found
        # Absolute, so task commands running in other folders find the same store.
        if self._db.startswith("sqlite:///"):
            self._db = "sqlite:///" + os.path.abspath(self._db.removeprefix("sqlite:///"))
        elif "://" not in self._db:
            self._db = os.path.abspath(self._db)
        return self._db

    @property
    def settings(self) -> Settings:
        """Defaults < `config.toml` beside the database < `CORRAL_*` variables."""
        if self._settings is None:
            self._settings = load_settings(config_path=config_path(self.db))
        return self._settings

    @property
    def store(self) -> Store:
        """The store, opened (and migrated) on first use."""
        if self._store is None:
            self.settings  # noqa: B018 - every command reports a bad config the same way
            # `db status` shows what is pending and `db migrate` applies it: they open as is.
            self._store = open_store(self.db, migrate=self.args.command != "db")
        return self._store

    def token(self) -> int | None:
        """`--token`, else `CORRAL_CLAIM_TOKEN`, else None (act as an operator)."""
        raw = getattr(self.args, "token", None) or os.environ.get("CORRAL_CLAIM_TOKEN") or None
        if raw is None:
            return None
        try:
            return int(raw)
        except ValueError:
            raise InvalidInput("token", "a whole number (the claim's fencing token)", raw) from None

    def emit(self, data: Any, human: str) -> None:
        """Print `data` as JSON with --json, else the human text.

        JSON is indented for a terminal and one line for a pipe, as `gh` does: scripts
        parse either, and only json's C encoder, which cannot indent, keeps a listing of
        a hundred tasks from costing a command a millisecond or more (bench/cli_latency.py).
        """
        if self.json:
            indent = 2 if sys.stdout.isatty() else None
            sys.stdout.write(json.dumps(data, indent=indent) + "\n")
        elif human:
            print(human)

    @staticmethod
    def long_running() -> None:
        """Collect garbage again: the console script turns the collector off for commands that
        live milliseconds (corral.cli.run), but a runner or an orchestrator lives for days."""
        gc.enable()

    def close(self) -> None:
        """Close the store if it was opened."""
        if self._store is not None:
            self._store.close()
