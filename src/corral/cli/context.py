"""What every command needs: where the store is, the settings, and how to print.

The store is opened on first use, so `--help` and usage errors never touch a database.
The settings are read on first use too, and before the store is opened whenever a config
file or a `CORRAL_<SETTING>` variable is there: a bad one fails every command alike, and
a command that reads no setting is spared building them from the defaults
(`corral.foundation.settings` is about 1.7 ms of start-up, bench/cli_latency.py).
"""

from __future__ import annotations

import gc
import json
import os
import sys
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from corral.foundation import filemodes
from corral.foundation.documents import MAX_INT64
from corral.foundation.errors import StoreError
from corral.foundation.printable import visible
from corral.foundation.variables import INERT
from corral.model.namespaces import DEFAULT_NAMESPACE, checked
from corral.store import Store, open_store
from corral.store.location import DB_NAME, DEFAULT_DIR, config_path, resolve_db

if TYPE_CHECKING:
    import argparse
    from typing import Protocol, TypeAlias

    from corral.foundation.settings import Settings

    # What the fast path (fast_parse) or argparse (argtree) made of the command line.
    Args: TypeAlias = SimpleNamespace | argparse.Namespace

    class Record(Protocol):
        """A record with a stable JSON shape."""

        def to_dict(self) -> dict[str, Any]:
            """The record as JSON (docs/cli.md)."""
            ...


class Context:
    """Resolved options of one command invocation."""

    def __init__(self, args: Args) -> None:
        self.args = args
        self.json = bool(getattr(args, "json", False))
        self._db: str | None = getattr(args, "db", None) or os.environ.get("CORRAL_DB") or None
        self._namespace: str | None = None
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
                from corral.foundation.settings import load_settings  # init alone

                filemodes.use(load_settings().store_mode)  # the store's folder is made now
                filemodes.make_dirs(os.path.join(cwd, DEFAULT_DIR))
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
            # Off the start-up path of the commands that read no setting (module docstring).
            from corral.foundation.settings import load_settings  # 1.7 ms, see above

            self._settings = load_settings(config_path=config_path(self.db))
            filemodes.use(self._settings.store_mode)
        return self._settings

    @property
    def namespace(self) -> str:
        """`--namespace`, else CORRAL_NAMESPACE, else `default`; a bad name is a usage error."""
        if self._namespace is None:
            named = getattr(self.args, "namespace", None)
            if named is None:  # an empty variable is unset, as CORRAL_DB's is
                named = os.environ.get("CORRAL_NAMESPACE") or None
            if named is None:
                self._namespace = DEFAULT_NAMESPACE
            else:
                self._namespace = checked(named)
        return self._namespace

    def configured(self) -> bool:
        """Whether a config file or a variable may change the defaults (and so may be bad)."""
        if os.path.isfile(config_path(self.db)):
            return True
        return any(n.startswith("CORRAL_") and n not in INERT for n in os.environ)

    @property
    def store(self) -> Store:
        """The store, opened (and migrated) on first use."""
        if self._store is None:
            if self.configured():
                self.settings  # noqa: B018 - every command reports a bad config the same way
            # `db status` shows what is pending and `db migrate` applies it: they open as is.
            namespace = self.namespace
            self._store = open_store(
                self.db, migrate=self.args.command != "db", namespace=namespace
            )
        return self._store

    def token(self) -> int | None:
        """`--token`, else `CORRAL_CLAIM_TOKEN`, else None (act as an operator)."""
        # A `--token` given is a token, even empty (`--token "$UNSET"`): never operator mode.
        given = getattr(self.args, "token", None)
        raw = given if given is not None else os.environ.get("CORRAL_CLAIM_TOKEN") or None
        if raw is None:
            return None
        from corral.cli.parsing import whole  # only commands given a token

        return whole("token", raw, minimum=1, maximum=MAX_INT64)

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
            print(visible(human))  # values' control characters shown, never obeyed

    def emit_all(self, records: Sequence[Record], human: Callable[[], str]) -> None:
        """A listing: each record's JSON shape with --json, else `human()`. Only the one
        printed is built: for a thousand tasks, either costs milliseconds."""
        if self.json:
            self.emit([r.to_dict() for r in records], "")
        else:
            self.emit(None, human())

    @staticmethod
    def long_running() -> None:
        """Collect garbage again: the console script turns the collector off for commands that
        live milliseconds (corral.cli.run), but a runner or an orchestrator lives for days."""
        gc.enable()

    def keep_state_out_of_git(self) -> None:
        """For a command that writes runs, logs or temporary folders beside its store: keep
        that `.corral/` folder (in the current folder, for a store given by URL) out of the
        git work tree it lies in, as `corral init` does for a SQLite store. A warning, never
        a failure, when git's exclude file cannot be written."""
        from corral.git.ignore import exclude_state_dir  # git: long-running commands only
        from corral.git.repo import GitFailed
        from corral.store.location import state_dir

        try:
            exclude_state_dir(state_dir(self.db))
        except GitFailed as exc:
            sys.stderr.write(f"corral: warning: {visible(exc.message)}\n")

    def close(self) -> None:
        """Close the store if it was opened."""
        if self._store is not None:
            self._store.close()
