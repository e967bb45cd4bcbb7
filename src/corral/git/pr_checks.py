"""A pull request's checks (`[worktree] land = pr`), read through the forge's CLI, and what
its task's agent is told when they fail (git/pull_requests.py `settle` acts on them).

    `pr_checks_command` (`gh pr checks URL --json name,state,bucket,link,startedAt`):
        a JSON array, one object a check; its `bucket` sorts `state` into pass, fail,
        pending, skipping or cancel
          a check whose bucket is fail    ─► failed: each such check's name, state, link
          else one pending                ─► pending (looked at again at the next pass)
          else                            ─► passed (a cancelled check is one a newer
                                               push replaced: it is no failure)
        gh exits 0 when all passed, 1 when one failed, 8 while some are pending, always
        with the JSON; exit 1 with no JSON ("no checks reported on the 'B' branch") is
        none yet. Anything else is a look that failed (CorralError, logged by the pass).
    a failed check whose link is a GitHub Actions run (`.../actions/runs/RUN/...`)
        ─► `pr_check_log_command` (`gh run view RUN --log-failed`): its tail, for the agent.

The commands are argument lists from the settings, run without a shell; `{url}` and
`{run}` are replaced only as whole arguments, as the other pull request commands' are.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from dataclasses import dataclass
from typing import Any

from corral.foundation.errors import CorralError, InvalidInput
from corral.model.verify_retries import CHECKS_PREFIX

COMMAND_TIMEOUT_S = 120.0
LOG_TAIL_CHARS = 3000  # of a failed check's log, as a verify step's output's tail
PENDING_EXIT = 8  # gh pr checks: some checks are still pending
_ACTIONS_RUN = re.compile(r"/actions/runs/(\d+)")


@dataclass(frozen=True, slots=True, kw_only=True)
class Check:
    """One check of a pull request, as `gh pr checks --json` describes it."""

    name: str
    state: str
    bucket: str
    link: str
    started_at: str = ""

    @property
    def key(self) -> str:
        """What tells this run of the check from another (a new push's has a new link)."""
        return f"{self.name}|{self.link}|{self.started_at}"


@dataclass(frozen=True, slots=True, kw_only=True)
class ChecksLook:
    """Where a pull request's checks stand: passed, pending, failed or none (yet)."""

    status: str
    failed: tuple[Check, ...] = ()


def split_command(key: str, line: str) -> tuple[str, ...]:
    """A configured command line as arguments (empty: none); InvalidInput names `key`."""
    try:
        return tuple(shlex.split(line))
    except ValueError:
        raise InvalidInput(key, "a command line with balanced quotes", line) from None


def look_checks(argv: tuple[str, ...], url: str, cwd: str) -> ChecksLook:
    """The checks of the pull request at `url`, by `argv` (`{url}` replaced)."""
    code, out, err = capture([url if a == "{url}" else a for a in argv], cwd)
    if code not in (0, 1, PENDING_EXIT):
        raise CorralError(f"{argv[0]} exited with status {code}: {_tail(err or out, 500)}")
    try:
        found: Any = json.loads(out) if out.strip() else None
    except ValueError:
        found = None
    if found is None and code == 1:
        return ChecksLook(status="none")  # "no checks reported on the 'B' branch"
    if not isinstance(found, list) or not all(isinstance(c, dict) for c in found):
        raise CorralError(f"{argv[0]} answered no checks for {url}: {_tail(out or err, 500)}")
    checks = [_check(c) for c in found]
    failed = tuple(c for c in checks if c.bucket == "fail")
    if failed:
        return ChecksLook(status="failed", failed=failed)
    if any(c.bucket == "pending" for c in checks):
        return ChecksLook(status="pending")
    return ChecksLook(status="passed" if checks else "none")


def failure_log(argv: tuple[str, ...], check: Check, cwd: str) -> str | None:
    """The tail of a failed check's log, when its link is a GitHub Actions run and `argv`
    (`{run}` replaced by the run's id) gives one; None otherwise (no log is no error)."""
    found = _ACTIONS_RUN.search(check.link)
    if not argv or found is None:
        return None
    try:
        code, out, _ = capture([found[1] if a == "{run}" else a for a in argv], cwd)
    except CorralError:
        return None
    return _tail(out, LOG_TAIL_CHARS) if code == 0 and out.strip() else None


def failure_note(failed: tuple[Check, ...], logs: dict[str, str]) -> str:
    """What the agent (and a person, once retries are spent) is told: each failing check's
    name, state and link, then the tail of each log read."""
    lines = [f"{CHECKS_PREFIX}:"]
    lines += [f"- {c.name}: {c.state} {c.link}".rstrip() for c in failed]
    for check in failed:
        if check.key in logs:
            lines += [f"\nThe end of {check.name}'s failed log:", logs[check.key]]
    return "\n".join(lines)


def _check(raw: dict[str, Any]) -> Check:
    return Check(
        name=str(raw.get("name") or "?"),
        state=str(raw.get("state") or ""),
        bucket=str(raw.get("bucket") or ""),
        link=str(raw.get("link") or ""),
        started_at=str(raw.get("startedAt") or ""),
    )


def capture(argv: list[str], cwd: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """The forge command's exit status, stdout and stderr (in `env`, else this process's
    environment); CorralError when it cannot run or outlasts COMMAND_TIMEOUT_S."""
    try:
        # S603: the user's own configured command, as an argument list.
        proc = subprocess.run(  # noqa: S603
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=COMMAND_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CorralError(f"{argv[0]} failed: {exc}") from None
    return proc.returncode, proc.stdout, proc.stderr


def _tail(text: str, chars: int) -> str:
    return text.strip()[-chars:] or "(no output)"
