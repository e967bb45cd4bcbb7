"""What an agent says of its session before it starts work, as one line of a transcript.

Each agent opens its output differently; the page shows each opening as one line
(`Turn(kind="session")`) instead of its JSON or its banner:

    Claude Code  {"type":"system","subtype":"init","model":..,"tools":[..],"permissionMode":..}
                 -> model, tools (the first TOOLS_NAMED by name), permission mode
    Codex        {"type":"thread.started","thread_id":..}, then {"type":"turn.started"}
                 -> the thread; a turn's start says nothing and is left out
    aider        plain lines: "Aider v0.86.1", "Main model: ..", "Weak model: ..",
                 "Git repo: ..", "Repo-map: .." -> one line of them

Anything else is None here, and transcripts.py shows it as it does any line.
"""

from __future__ import annotations

from typing import Any

TOOLS_NAMED = 8
AIDER_BANNER = ("Aider v", "Main model:", "Model:", "Weak model:", "Git repo:", "Repo-map:")


def session_line(message: dict[str, Any]) -> str | None:
    """The one line of a JSON line that opens a session, "" for one that says nothing
    (Codex's turn.started), None for any other line."""
    kind = message.get("type")
    if kind == "system" and message.get("subtype") == "init":
        return _claude_init(message)
    if kind == "thread.started":
        return f"Codex thread {message.get('thread_id', '?')}"
    if kind == "turn.started":
        return ""
    return None


def _claude_init(message: dict[str, Any]) -> str:
    parts = [f"model {message.get('model') or '?'}"]
    tools = [str(t) for t in message.get("tools") or () if isinstance(t, str)]
    if tools:
        named = ", ".join(tools[:TOOLS_NAMED])
        more = f" and {len(tools) - TOOLS_NAMED} more" if len(tools) > TOOLS_NAMED else ""
        parts.append(f"{len(tools)} tool{'' if len(tools) == 1 else 's'} ({named}{more})")
    if message.get("permissionMode"):
        parts.append(f"permission mode {message['permissionMode']}")
    version = message.get("claude_code_version")
    agent = f"Claude Code {version}" if version else "Claude Code"
    return f"{agent}: " + ", ".join(parts)


def aider_banner(lines: list[str]) -> tuple[str, list[str]] | None:
    """(its one line, the lines after it) when `lines` open with aider's banner."""
    if not lines or not lines[0].startswith("Aider v"):
        return None
    taken = 0
    while taken < len(lines) and lines[taken].startswith(AIDER_BANNER):
        taken += 1
    rest = lines[taken:]
    if rest and not rest[0].strip():  # the blank line that ends the banner
        rest = rest[1:]
    return "; ".join(line.strip() for line in lines[:taken]), rest
