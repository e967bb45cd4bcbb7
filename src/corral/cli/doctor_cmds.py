"""`corral doctor`: this machine checked for what corral needs (runtime/doctor.py)."""

from __future__ import annotations

import os

from corral.cli.commands import Command
from corral.cli.context import Context
from corral.foundation.errors import InvalidInput, StoreError


def cmd_doctor(ctx: Context) -> int:
    """Print each check; exit 1 when one failed (corral itself will not work here)."""
    from corral.foundation.settings import Settings, load_settings
    from corral.runtime.doctor import FAIL, check_machine, pool_programs, task_env
    from corral.store import open_store
    from corral.usecases.agents import agents_dir

    try:
        db: str | None = ctx.db
    except StoreError:
        db = None  # none found: the store's check says so
    problem = None
    try:
        settings = ctx.settings if db is not None else load_settings()
    except InvalidInput as exc:  # every other command would refuse to start: one check
        settings, problem = Settings(), exc.message

    def probe(url: str) -> object:
        with open_store(url, migrate=False) as store:
            return store.schema_version()

    checks = check_machine(
        db, store_mode=settings.store_mode, open_store=probe, settings_problem=problem
    )
    folder = agents_dir(db) if db is not None else ""
    checks += pool_programs(settings, folder) + task_env(os.environ, settings, folder)
    width = max(len(c.name) for c in checks)
    lines = [f"{c.status:<4}  {c.name:<{width}}  {c.detail}" for c in checks]
    ctx.emit([c.to_dict() for c in checks], "\n".join(lines))
    return 1 if any(c.status == FAIL for c in checks) else 0


COMMANDS = (Command("doctor", cmd_doctor, "check this machine for what corral needs"),)
