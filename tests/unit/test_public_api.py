"""The public API: exactly these names, each resolving."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import corral

PUBLIC = [
    "Beat",
    "BeatFigures",
    "Claim",
    "ClaimStatus",
    "Clock",
    "CorralError",
    "Diagnosis",
    "Event",
    "EventFilter",
    "FakeClock",
    "InvalidInput",
    "InvalidTransition",
    "LimitReached",
    "NewRun",
    "NewSchedule",
    "NewTask",
    "NewWorker",
    "NotFound",
    "Overlap",
    "QueueLimits",
    "QueueStat",
    "ReconcileReport",
    "Refused",
    "Run",
    "RunOutcome",
    "Schedule",
    "ScheduleFire",
    "SchemaTooNew",
    "Settings",
    "StaleToken",
    "Store",
    "StoreError",
    "SystemClock",
    "Task",
    "TaskFilter",
    "TaskStatus",
    "Worker",
    "WorkerFilter",
    "WorkerStatus",
    "WorkerUnavailable",
    "add_schedule",
    "answer",
    "apply_configured_limits",
    "cancel",
    "claim",
    "claim_next",
    "complete",
    "defer",
    "deregister",
    "drain",
    "enqueue",
    "fail",
    "fire_due",
    "heartbeat",
    "load_settings",
    "open_store",
    "queue_stats",
    "reconcile_once",
    "register",
    "release",
    "renew",
    "retry",
    "run_worker",
    "set_queue_limits",
    "wait",
    "why",
]


def test_all_is_exactly_the_documented_surface() -> None:
    """corral.__all__ lists exactly the public names, sorted; a change here is an API change."""
    assert PUBLIC == corral.__all__
    assert sorted(PUBLIC) == PUBLIC


def test_every_public_name_resolves() -> None:
    """Each name in __all__ is an attribute of the package."""
    assert [] == [name for name in corral.__all__ if not hasattr(corral, name)]


def test_star_import_gives_the_public_names() -> None:
    """`from corral import *` binds exactly __all__."""
    namespace: dict[str, object] = {}
    exec("from corral import *", namespace)  # noqa: S102 -- the statement under test
    assert set(PUBLIC) == set(namespace) - {"__builtins__"}


def test_type_checkers_see_the_same_names_from_the_same_homes() -> None:
    """The TYPE_CHECKING re-exports of corral/__init__.py are exactly the table `_HOMES`."""
    import ast
    from pathlib import Path

    tree = ast.parse(Path(corral.__file__).read_text(encoding="utf-8"))
    blocks = [n for n in tree.body if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.dump(n)]
    seen = {
        (alias.asname, node.module)
        for block in blocks
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if alias.asname == alias.name  # `import X as X`: an explicit re-export
    }
    assert set(corral._HOME_OF.items()) == seen
