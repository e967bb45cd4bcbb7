"""What an agent is doing, in words: the readable form of a line of its JSON stream.

`corral status --watch` shows each running task's last output line. An agent that
streams JSON (claude stream-json, codex exec --json) ends its transcript with events,
not prose, so the raw last line is a wall of JSON. `readable` turns one line into what a
person wants to see: the assistant's text, the tool it calls (`Bash: make test`), the
command codex runs, the file it changes, the result; a line that says nothing worth
showing (a tool's output, usage, a session start), or broken JSON, is None (the caller
looks at the line before); any other line is itself. Nothing here is cleaned for a
terminal: the caller does that (printable.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

# Where the useful words of a tool call are, by tool name (claude's tools).
_TOOL_FIELDS = ("command", "file_path", "pattern", "path", "url", "query", "description")


def readable(line: str) -> str | None:
    """The words of one output line: an event's text, the line itself when it is not
    JSON, or None for a JSON line with nothing to show (or a piece of one)."""
    text = line.strip()
    if not text.startswith("{"):
        return text or None
    try:
        event = json.loads(text)
    except ValueError:  # broken JSON (claude-code#49640 splices lines): never shown raw
        return None if text.startswith('{"') else text
    return _words(event) if isinstance(event, dict) else None


def _words(event: dict[str, Any]) -> str | None:
    """What one event says, by its type (claude's and codex's)."""
    kind = event.get("type")
    if kind in ("item.started", "item.updated", "item.completed"):
        return _codex_item(event.get("item"))
    says = _EVENTS.get(kind) if isinstance(kind, str) else None
    return None if says is None else says(event)


def _result(event: dict[str, Any]) -> str | None:
    result = _text(event.get("result"))
    return f"result: {result}" if result else None


def _rate_limit(event: dict[str, Any]) -> str | None:
    info = event.get("rate_limit_info")
    status = _text(info.get("status")) if isinstance(info, dict) else None
    return "usage limit reached" if status == "rejected" else None


def _turn_failed(event: dict[str, Any]) -> str:
    error = event.get("error")
    message = _text(error.get("message")) if isinstance(error, dict) else None
    return f"turn failed: {message or 'error'}"


def _claude_message(message: Any) -> str | None:
    """The last text or tool call of an assistant message."""
    content = message.get("content") if isinstance(message, dict) else None
    for block in reversed(content if isinstance(content, list) else []):
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and _text(block.get("text")):
            return _text(block.get("text"))
        if block.get("type") == "tool_use" and _text(block.get("name")):
            return _tool(str(block["name"]), block.get("input"))
    return None


def _tool(name: str, tool_input: Any) -> str:
    """`Name: what it is called on` (the first telling field of its input)."""
    if isinstance(tool_input, dict):
        if name == "AskUserQuestion":
            questions = tool_input.get("questions")
            if isinstance(questions, list) and questions and isinstance(questions[0], dict):
                return f"asks: {_text(questions[0].get('question')) or '?'}"
        for field in _TOOL_FIELDS:
            value = _text(tool_input.get(field))
            if value:
                return f"{name}: {value}"
    return name


def _codex_item(item: Any) -> str | None:
    """A codex item in words: its message, command, file changes or tool."""
    kind = item.get("type") if isinstance(item, dict) else None
    says = _ITEMS.get(kind) if isinstance(kind, str) else None
    return None if says is None else says(item)


def _file_change(item: dict[str, Any]) -> str | None:
    changes = item.get("changes")
    found = changes if isinstance(changes, list) else []
    paths = [c["path"] for c in found if isinstance(c, dict) and isinstance(c.get("path"), str)]
    return "editing " + ", ".join(paths) if paths else None


def _text(value: Any) -> str | None:
    """A non-blank string, its whitespace runs made one space; else None."""
    if not isinstance(value, str):
        return None
    words = " ".join(value.split())
    return words or None


_EVENTS: dict[str, Callable[[dict[str, Any]], str | None]] = {
    "assistant": lambda e: _claude_message(e.get("message")),
    "result": _result,
    "rate_limit_event": _rate_limit,
    "turn.failed": _turn_failed,
    "error": lambda e: f"error: {_text(e.get('message')) or 'error'}",
}
_ITEMS: dict[str, Callable[[dict[str, Any]], str | None]] = {
    "agent_message": lambda i: _text(i.get("text")),
    "reasoning": lambda i: _text(i.get("text")),
    "command_execution": lambda i: f"$ {_text(i.get('command')) or '?'}",
    "file_change": _file_change,
    "mcp_tool_call": lambda i: f"tool {_text(i.get('tool')) or '?'}",
    "web_search": lambda i: f"searching: {_text(i.get('query')) or '?'}",
}
