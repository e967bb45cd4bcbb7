"""`run_worker`: the Python way to run a worker, with a function for the work.

Its keywords are worker options of the same names (corral.foundation.worker_options.KEYWORDS says
which, and why not the others); they make the same `WorkerSpec` as `worker start`'s
flags, and the same assembly builds the runner (assembly.py)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from corral.foundation.errors import InvalidInput, StoreError
from corral.foundation.policies import WorkerSpec
from corral.foundation.settings import Settings, load_settings
from corral.model.namespaces import DEFAULT_NAMESPACE, checked
from corral.model.tasks import Task
from corral.runtime.worker.assembly import parse_options, prepare
from corral.runtime.worker.python_job import Execute, PythonJob
from corral.store import open_store
from corral.store.location import config_path, resolve_db


def run_worker(
    execute: Execute,
    *,
    capture_io: Callable[[str, Task], dict[str, str]] | None = None,
    context: dict[str, Any] | None = None,
    kinds: tuple[str, ...] | list[str] = (),
    queues: tuple[str, ...] | list[str] = (),
    name: str | None = None,
    db: str | None = None,
    token: str | None = None,
    settings: Settings | None = None,
    concurrency: int = 1,
    max_tasks: int | None = None,
    once: bool = False,
    lease_s: float | None = None,
    shutdown_timeout_s: float = 300.0,
    batch: int = 1,
    version: str = "",
    labels: dict[str, str] | None = None,
    namespace: str | None = None,
) -> int:
    """Run a worker whose tasks are `execute(task, ctx)` calls; returns the exit code.

    The store is `db`, else CORRAL_DB, else the nearest `.corral/corral.db`; an
    `http(s)://` URL reaches it through `corral serve` with `token` (else CORRAL_TOKEN).
    It stops on
    SIGTERM or SIGINT (from the main thread), when drained, or after `max_tasks` / `once`.
    `batch` > 1 lets it claim up to that many tasks at once and report them together
    (docs/workers.md, "Batches"); 1 claims one task at a time. `version` and `labels` are
    recorded on the worker (`worker list`), as `worker start --version --label` records them.
    It works in `namespace`, else CORRAL_NAMESPACE, else `default` (docs/concepts.md).
    """
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise InvalidInput("batch", "a whole number of at least 1", batch)
    if not isinstance(version, str):
        raise InvalidInput("version", "text", version)
    given = labels or {}
    if not isinstance(given, dict) or not all(
        isinstance(k, str) and k and "=" not in k and isinstance(v, str) for k, v in given.items()
    ):
        raise InvalidInput("labels", "a dict of text keys (without =) to text values", labels)
    chosen_namespace = checked(
        namespace or os.environ.get("CORRAL_NAMESPACE") or DEFAULT_NAMESPACE, field_name="namespace"
    )
    found = resolve_db(db, os.environ, os.getcwd())
    if found is None:
        raise StoreError("no corral store found: pass db=, set CORRAL_DB, or run `corral init`")
    chosen = settings or load_settings(config_path=config_path(found))
    # The options as `worker start` takes them: the same record, parsed the same way.
    options = {
        "kinds": list(kinds),
        "queues": list(queues),
        "labels": [f"{k}={v}" for k, v in given.items()],
        "version": version,
        "concurrency": concurrency,
        "batch": batch,
        "max_tasks": max_tasks,
        "lease_s": lease_s,
    }
    spec = WorkerSpec(
        name=name or f"py-{os.getpid()}",
        options=parse_options({f"pool_{k}": v for k, v in options.items() if v is not None}),
        once=once,
        shutdown_timeout_s=shutdown_timeout_s,
    )
    job = PythonJob(execute=execute, capture_io=capture_io, context=dict(context or {}))
    assembly = prepare(spec, settings=chosen, db=found, python=job)
    with (
        open_store(found, token=token, namespace=chosen_namespace) as store,
        assembly.runner(store) as runner,
    ):
        return runner.run()
