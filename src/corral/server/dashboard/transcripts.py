"""A run's transcript as the task page shows it: a window of its end, folded into turns.

A transcript may be 50 MB: the page reads only a window of WINDOW_BYTES (the last one
first, then earlier ones by `before=OFFSET`), starting at a line's beginning, and never
the whole file. Each line of stream-json (Claude Code's `--output-format stream-json`,
Codex's `--json`) becomes a turn: the assistant's text, a tool call with its input, a
tool's result, the final result with its cost; the lines that open an agent's session
(Claude Code's init, Codex's thread, aider's banner: sessions.py) one summary line; other
JSON lines show their type and their JSON; plain lines are kept together as text. All
text goes through ansi.py.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from corral.server.dashboard.ansi import to_html
from corral.server.dashboard.sessions import aider_banner, session_line

WINDOW_BYTES = 256 * 1024
MAX_PART_CHARS = 20_000  # the most of one tool result or input shown


@dataclass(frozen=True, slots=True, kw_only=True)
class Turn:
    """One block of the transcript: its kind (a class of the page), heading and body."""

    kind: str
    heading: str
    body: Markup


@dataclass(frozen=True, slots=True, kw_only=True)
class Window:
    """The turns of bytes [start, end) of a transcript of `size` bytes."""

    turns: list[Turn]
    start: int
    end: int
    size: int

    @property
    def later(self) -> int | None:
        """The end of the window after this one, or None when this one ends the file."""
        return None if self.end >= self.size else min(self.end + WINDOW_BYTES, self.size)


def read_window(path: str, before: int | None = None) -> Window:
    """The window that ends at `before` (None: at the end of the file), from a line's start."""
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        end = size if before is None else max(0, min(before, size))
        start = max(0, end - WINDOW_BYTES)
        handle.seek(start)
        data = handle.read(end - start)
    if start > 0 and b"\n" in data:  # the first line began before the window: drop it
        cut = data.index(b"\n") + 1
        data, start = data[cut:], start + cut
    text = data.decode("utf-8", errors="replace")
    return Window(turns=fold(text), start=start, end=end, size=size)


def fold(text: str) -> list[Turn]:
    """The turns of `text`: one or more of each JSON line, plain lines gathered."""
    turns: list[Turn] = []
    plain: list[str] = []
    for line in text.splitlines():
        parsed = _json_object(line)
        if parsed is None:
            plain.append(line)
            continue
        turns.extend(_plain(plain))
        plain = []
        turns.extend(_turns_of(parsed))
    turns.extend(_plain(plain))
    return turns


def _plain(lines: list[str]) -> list[Turn]:
    """The turn of plain lines gathered (none of none), aider's banner a session line."""
    turns = []
    banner = aider_banner(lines)
    if banner is not None:
        turns.append(_session(banner[0]))
        lines = banner[1]
    if lines:
        turns.append(Turn(kind="text", heading="Output", body=to_html("\n".join(lines))))
    return turns


def _session(line: str) -> Turn:
    return Turn(kind="session", heading="Session", body=to_html(line))


def _json_object(line: str) -> dict[str, Any] | None:
    if not line.startswith("{"):
        return None
    try:
        parsed = json.loads(line)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def _turns_of(message: dict[str, Any]) -> list[Turn]:
    session = session_line(message)
    if session is not None:
        return [_session(session)] if session else []
    kind = message.get("type")
    if kind in ("assistant", "user") and isinstance(message.get("message"), dict):
        content = message["message"].get("content")
        items = content if isinstance(content, list) else [{"type": "text", "text": content}]
        return [_item(str(kind), item) for item in items if isinstance(item, dict)]
    if kind == "result":
        cost = message.get("total_cost_usd")
        heading = "Result" + (f" (cost ${cost:.4f})" if isinstance(cost, int | float) else "")
        return [Turn(kind="result", heading=heading, body=to_html(_text(message.get("result"))))]
    return [Turn(kind="event", heading=str(kind or "event"), body=to_html(_text(message)))]


def _item(role: str, item: dict[str, Any]) -> Turn:
    """A turn of one content item of an assistant or user message."""
    kind = item.get("type")
    if kind == "tool_use":
        name = _text(item.get("name"))
        return Turn(
            kind="tool", heading=f"Tool call: {name}", body=to_html(_text(item.get("input")))
        )
    if kind == "tool_result":
        failed = " (error)" if item.get("is_error") else ""
        return Turn(
            kind="tool", heading=f"Tool result{failed}", body=to_html(_text(item.get("content")))
        )
    heading = "Assistant" if role == "assistant" else "User"
    return Turn(kind=role, heading=heading, body=to_html(_text(item.get("text", item))))


def _text(value: Any) -> str:
    """`value` as text to show: a string as it is, a list of text parts joined, else JSON."""
    if isinstance(value, str):
        shown = value
    elif isinstance(value, list) and all(isinstance(v, dict) and "text" in v for v in value):
        shown = "\n".join(str(v["text"]) for v in value)
    else:
        shown = json.dumps(value, indent=2, ensure_ascii=False)
    return shown if len(shown) <= MAX_PART_CHARS else shown[:MAX_PART_CHARS] + "\n…"
