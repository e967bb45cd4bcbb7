"""What the fake agent CLIs (claude, codex, aider beside this file) share.

A fake stands in for the real tool on PATH: tests prepend this folder to PATH. Its
behaviour is chosen by directives in the prompt (a task's title or description) and by
the environment:

- no directive: success, with usage and cost;
- `FAKE:limit`: while the file named by FAKE_LIMIT_UNTIL holds an epoch second still
  ahead, the tool's usage-limit failure, with that reset time; once it has passed, success;
- `FAKE:crash`: a few lines, then SIGKILL to itself mid-stream;
- `FAKE:nousage`: success whose stream reports no usage at all;
- `FAKE:question`: (claude) a question for a person, then a sleep until killed
  (FAKE_SLEEP seconds, 30 by default);
- `FAKE:sleep=N`: a sleep of N seconds before finishing (to hold a slot).

Every invocation appends one JSON line to the file named by FAKE_AGENT_LOG, if set:
the agent, its argv, cwd, prompt, the session id it reports, whether it resumed one, and
its CORRAL_* environment (and the variables FAKE_LOG_ENV names, comma-separated).
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
from dataclasses import dataclass

DIRECTIVE = re.compile(r"FAKE:(limit|crash|nousage|question|sleep=(\d+(?:\.\d+)?))")


@dataclass(frozen=True, slots=True, kw_only=True)
class Directives:
    """What the prompt asks the fake to do."""

    limit: bool = False
    crash: bool = False
    nousage: bool = False
    question: bool = False
    sleep_s: float = 0.0


def directives(prompt: str) -> Directives:
    """The directives found anywhere in `prompt`."""
    found = {m.group(1).split("=")[0]: m.group(2) for m in DIRECTIVE.finditer(prompt)}
    return Directives(
        limit="limit" in found,
        crash="crash" in found,
        nousage="nousage" in found,
        question="question" in found,
        sleep_s=float(found["sleep"]) if "sleep" in found else 0.0,
    )


def limited_until() -> int | None:
    """The epoch second the limit lasts until, if FAKE_LIMIT_UNTIL names one still ahead."""
    path = os.environ.get("FAKE_LIMIT_UNTIL")
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            until = int(float(handle.read().strip()))
    except (OSError, ValueError):
        return None
    return until if until > time.time() else None


def log_invocation(agent: str, prompt: str, session_id: str | None, resumed: bool) -> None:
    """Append this invocation to FAKE_AGENT_LOG (one line, one write: appends stay whole)."""
    path = os.environ.get("FAKE_AGENT_LOG")
    if not path:
        return
    shown = set(os.environ.get("FAKE_LOG_ENV", "").split(","))  # more variables to log
    entry = {
        "agent": agent,
        "argv": sys.argv[1:],
        "cwd": os.getcwd(),
        "prompt": prompt,
        "session_id": session_id,
        "resumed": resumed,
        "env": {k: v for k, v in os.environ.items() if k.startswith("CORRAL_") or k in shown},
    }
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (json.dumps(entry) + "\n").encode())
    finally:
        os.close(fd)


def emit(event: dict[str, object]) -> None:
    """One line of compact JSON on stdout, flushed (as the real tools stream it)."""
    sys.stdout.write(json.dumps(event, separators=(",", ":"), ensure_ascii=False) + "\n")
    sys.stdout.flush()


def say(text: str) -> None:
    """A line of plain text on stdout, flushed."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def crash() -> None:
    """Die at once, as a killed agent does: no last line, no exit status of its own."""
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def hold(seconds: float) -> None:
    """Sleep `seconds` (a signal ends the process as it would the real tool)."""
    time.sleep(seconds)


def question_wait_s() -> float:
    """How long a fake that asked a question waits for an answer that never comes."""
    return float(os.environ.get("FAKE_SLEEP", "30"))
