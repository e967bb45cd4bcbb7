"""Reading an agent's own output stream: its session, usage, cost, a usage limit, a question.

The agent's stdout goes straight to the run's transcript file (executor.py); a
`StreamReader` reads that file as it grows (`poll`, at every poll of the run's watch) and
once more at its end (`finish`). It never parses every line: an agent's transcript is
mostly assistant messages and tool output, tens of megabytes of JSON that say nothing
corral needs. Each chunk read is searched for the few byte markers that do (`"result"`,
`rate_limit_event` ...), and only the lines holding one are decoded, so a 50 MB
transcript costs about what copying it does (bench/agent_stream.py). A line longer than
MAX_LINE_BYTES is skipped, never buffered whole, and a line that is not JSON (a CLI bug
can splice an event into the middle of another) is skipped.

Formats, as each tool documents them (checked 2026-11-26; docs/agents.md):

- `claude-stream-json`: `claude -p --output-format stream-json --verbose` (Claude Code
  2.x). `{"type":"system","subtype":"init","session_id",...,"claude_code_version"}`;
  assistant messages (a `tool_use` named `AskUserQuestion` is a question for a person);
  `{"type":"rate_limit_event","rate_limit_info":{"status","resetsAt","rateLimitType"}}`,
  a limit only when status is `rejected`; the final `{"type":"result","subtype",
  "is_error","result","session_id","total_cost_usd","usage":{input_tokens,output_tokens,
  cache_creation_input_tokens,cache_read_input_tokens}}`.
- `codex-json`: `codex exec --json` (Codex CLI 0.14x). `thread.started{thread_id}` (the
  session), `turn.completed{usage:{input_tokens,cached_input_tokens,output_tokens}}`
  (summed over turns), `turn.failed{error:{message}}`, `error{message}`; the backend's
  usage limit reads "You've hit your usage limit ..." and may carry `resets_at` (epoch) or
  `resets_in_seconds`.
- `aider-text`: aider's console lines, `Tokens: 2.4k sent, 1.1k cache write, 188 received.
  Cost: $0.0099 message, $0.0123 session.`: tokens summed, cost the last session figure.
- `generic`: corral's own convention: a last line that is a JSON object with a `usage`
  object (kept as the command wrote it).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any

from corral.clock import Clock, SystemClock

CHUNK_BYTES = 1 << 20
MAX_LINE_BYTES = 8 << 20  # a longer line is skipped, not buffered
MAX_TEXT_CHARS = 200

_CLAUDE_MARKERS = (b'"system"', b'"result"', b"rate_limit_event", b"AskUserQuestion")
_CODEX_MARKERS = (b"thread.started", b"turn.completed", b"turn.failed", b'"error"')
_AIDER_MARKERS = (b"Tokens:", b"Cost:")
_LIMIT_TEXT = re.compile(r"usage limit|usage_limit|quota exceeded", re.IGNORECASE)
_RESETS_AT = re.compile(r'"?resets_at"?\s*[:=]\s*(\d{9,11})')
_RESETS_IN = re.compile(r'"?resets_in_seconds"?\s*[:=]\s*(\d+)')
_TRY_IN = re.compile(r"try again in (\d+(?:\.\d+)?)\s*(second|minute|hour|day)", re.IGNORECASE)
_UNIT_S = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}
_AIDER_TOKENS = re.compile(r"Tokens:\s*(.*?)(?:\.\s*Cost:|$)")
_AIDER_FIGURE = re.compile(r"([\d.,]+)\s*([kKmM]?)\s+(sent|received|cache write|cache hit)")
_AIDER_SESSION = re.compile(r"\$([\d.]+)\s+session")
_AIDER_KEYS = {
    "sent": "input_tokens",
    "received": "output_tokens",
    "cache write": "cache_write_tokens",
    "cache hit": "cache_read_tokens",
}


@dataclass(frozen=True, slots=True)
class Limit:
    """The provider's usage limit, as the stream showed it."""

    reset_at: float | None  # epoch seconds of the reset, None when the stream does not say
    message: str


@dataclass(slots=True)
class StreamFacts:
    """What the reader has learnt so far of one run."""

    session_id: str | None = None
    usage: dict[str, Any] | None = None  # None: the stream reported none (never zeros)
    limit: Limit | None = None
    waiting: str | None = None  # why the agent waits for a person (first seen)
    error: str | None = None  # the agent's own failure text
    agent_version: str | None = None


class StreamReader:
    """One transcript, read from where the last read stopped."""

    def __init__(self, output: str, path: str, *, clock: Clock | None = None) -> None:
        self._output, self._path = output, path
        self._clock = clock or SystemClock()
        self._offset = 0
        self._tail = b""  # an unterminated last line, kept for the next read
        self._skipping = False  # inside a line longer than MAX_LINE_BYTES
        self.facts = StreamFacts()
        self._markers = {
            "claude-stream-json": _CLAUDE_MARKERS,
            "codex-json": _CODEX_MARKERS,
            "aider-text": _AIDER_MARKERS,
        }.get(output, ())

    def poll(self) -> StreamFacts:
        """Read what was appended since the last call; only whole lines are parsed."""
        if self._markers:
            self._read(final=False)
        return self.facts

    def finish(self) -> StreamFacts:
        """Read the rest, a last line without its newline included."""
        if self._output == "generic":
            self.facts.usage = last_usage(self._path)
        elif self._markers:
            self._read(final=True)
        return self.facts

    def _read(self, *, final: bool) -> None:
        try:
            fd = os.open(self._path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return
        try:
            while True:
                data = os.pread(fd, CHUNK_BYTES, self._offset)
                if not data:
                    break
                self._offset += len(data)
                self._chunk(data)
        finally:
            os.close(fd)
        if final and self._tail and not self._skipping:
            self._lines(self._tail)
            self._tail = b""

    def _chunk(self, data: bytes) -> None:
        """Parse the whole lines of `data` (after the tail kept from before)."""
        end = data.rfind(b"\n")
        if end < 0:  # no line ends here
            self._keep(data)
            return
        head, rest = data[: end + 1], data[end + 1 :]
        if self._skipping:  # the rest of an overlong line, up to its newline
            head = head[head.find(b"\n") + 1 :]
            self._skipping = False
        elif self._tail:
            head = self._tail + head
        self._tail = b""
        self._lines(head)
        self._keep(rest)

    def _keep(self, data: bytes) -> None:
        if self._skipping:
            return
        self._tail += data
        if len(self._tail) > MAX_LINE_BYTES:
            self._tail, self._skipping = b"", True

    def _lines(self, block: bytes) -> None:
        """The lines of `block` holding a marker, each parsed once, in order."""
        starts: set[int] = set()
        for marker in self._markers:
            at = block.find(marker)
            while at >= 0:
                starts.add(block.rfind(b"\n", 0, at) + 1)
                at = block.find(marker, at + len(marker))
        for start in sorted(starts):
            stop = block.find(b"\n", start)
            self._line(block[start : len(block) if stop < 0 else stop])

    def _line(self, line: bytes) -> None:
        if self._output == "aider-text":
            _aider_line(self.facts, line.decode("utf-8", "replace"))
            return
        try:
            message = json.loads(line)
        except ValueError:
            return
        if not isinstance(message, dict):
            return
        if self._output == "claude-stream-json":
            _claude_message(self.facts, message)
        else:
            _codex_message(self.facts, message, self._clock)


def read_stream(output: str, path: str, *, clock: Clock | None = None) -> StreamFacts:
    """Everything the transcript at `path` says, read at once."""
    return StreamReader(output, path, clock=clock).finish()


# -- Claude Code ------------------------------------------------------------------------


def _claude_message(facts: StreamFacts, message: dict[str, Any]) -> None:
    kind = message.get("type")
    session = message.get("session_id")
    if isinstance(session, str) and session and facts.session_id is None:
        facts.session_id = session
    if kind == "system" and message.get("subtype") == "init":
        version = message.get("claude_code_version")
        facts.agent_version = version if isinstance(version, str) else facts.agent_version
    elif kind == "rate_limit_event":
        info = message.get("rate_limit_info")
        if isinstance(info, dict) and info.get("status") == "rejected" and facts.limit is None:
            reset = info.get("resetsAt")
            which = info.get("rateLimitType") or "usage"
            facts.limit = Limit(
                reset_at=_number(reset),
                message=_text(f"claude {which} limit"),
            )
    elif kind == "assistant" and facts.waiting is None:
        facts.waiting = _claude_question(message.get("message"))
    elif kind == "result":
        _claude_result(facts, message)


def _claude_question(message: Any) -> str | None:
    """The question of an AskUserQuestion tool use in an assistant message, if any."""
    content = message.get("content") if isinstance(message, dict) else None
    for block in content if isinstance(content, list) else ():
        if isinstance(block, dict) and block.get("name") == "AskUserQuestion":
            asked = block.get("input")
            text = json.dumps(asked) if not isinstance(asked, str) else asked
            return _text(f"question: {text}")
    return None


def _claude_result(facts: StreamFacts, message: dict[str, Any]) -> None:
    usage = message.get("usage")
    found: dict[str, Any] = {}
    if isinstance(usage, dict):
        for theirs, ours in (
            ("input_tokens", "input_tokens"),
            ("output_tokens", "output_tokens"),
            ("cache_read_input_tokens", "cache_read_tokens"),
            ("cache_creation_input_tokens", "cache_write_tokens"),
        ):
            if _is_number(usage.get(theirs)):
                found[ours] = int(usage[theirs])
    cost = _number(message.get("total_cost_usd"))
    if cost is not None:
        found["cost_usd"] = cost
    if found:
        facts.usage = found
    if message.get("is_error") is True:
        said = message.get("result") or message.get("subtype") or "error"
        facts.error = _text(str(said))


# -- Codex ------------------------------------------------------------------------------


def _codex_message(facts: StreamFacts, message: dict[str, Any], clock: Clock) -> None:
    kind = message.get("type")
    if kind == "thread.started":
        thread = message.get("thread_id")
        if isinstance(thread, str) and thread and facts.session_id is None:
            facts.session_id = thread
    elif kind in ("turn.completed", "turn.failed"):
        _add_codex_usage(facts, message.get("usage"))
        error = message.get("error")
        if kind == "turn.failed" and isinstance(error, dict):
            _codex_error(facts, str(error.get("message") or "turn failed"), clock)
    elif kind == "error":
        _codex_error(facts, str(message.get("message") or "error"), clock)


def _add_codex_usage(facts: StreamFacts, usage: Any) -> None:
    if not isinstance(usage, dict):
        return
    total = facts.usage if facts.usage is not None else {}
    for theirs, ours in (
        ("input_tokens", "input_tokens"),
        ("output_tokens", "output_tokens"),
        ("cached_input_tokens", "cache_read_tokens"),
    ):
        if _is_number(usage.get(theirs)):
            total[ours] = total.get(ours, 0) + int(usage[theirs])
    if total:
        facts.usage = total


def _codex_error(facts: StreamFacts, message: str, clock: Clock) -> None:
    facts.error = _text(message)
    if facts.limit is not None or not _LIMIT_TEXT.search(message):
        return
    facts.limit = Limit(reset_at=_reset_of(message, clock), message=_text(f"codex: {message}"))


def _reset_of(message: str, clock: Clock) -> float | None:
    """The reset a limit message states: an epoch, seconds from now, or "try again in"."""
    if found := _RESETS_AT.search(message):
        return float(found.group(1))
    if found := _RESETS_IN.search(message):
        return clock.now().timestamp() + float(found.group(1))
    if found := _TRY_IN.search(message):
        return clock.now().timestamp() + float(found.group(1)) * _UNIT_S[found.group(2).lower()]
    return None


# -- aider ------------------------------------------------------------------------------


def _aider_line(facts: StreamFacts, line: str) -> None:
    tokens = _AIDER_TOKENS.search(line)
    if tokens is not None:
        total = facts.usage if facts.usage is not None else {}
        for number, scale, what in _AIDER_FIGURE.findall(tokens.group(1)):
            value = float(number.replace(",", "")) * {"": 1, "k": 1e3, "m": 1e6}[scale.lower()]
            key = _AIDER_KEYS[what]
            total[key] = total.get(key, 0) + round(value)
        if total:
            facts.usage = total
    session = _AIDER_SESSION.search(line)
    if session is not None:
        facts.usage = {**(facts.usage or {}), "cost_usd": float(session.group(1))}


# -- generic ----------------------------------------------------------------------------


def last_usage(path: str, window: int = 65536) -> dict[str, Any] | None:
    """The `usage` object of the transcript's last line, when that line is JSON."""
    try:
        size = os.stat(path).st_size
        if not size:  # a command that printed nothing: one stat, no open
            return None
        with open(path, "rb") as handle:
            handle.seek(max(0, size - window))
            lines = handle.read().decode("utf-8", "replace").strip().splitlines()
    except OSError:
        return None
    if not lines:
        return None
    try:
        last = json.loads(lines[-1])
    except ValueError:
        return None
    usage = last.get("usage") if isinstance(last, dict) else None
    return usage if isinstance(usage, dict) else None


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value >= 0


def _number(value: Any) -> float | None:
    """`value` as a float, if it is a number of 0 or more (JSON's true is not one)."""
    return float(value) if _is_number(value) else None


def _text(text: str) -> str:
    """One short line of `text`."""
    line = " ".join(text.split())
    return line if len(line) <= MAX_TEXT_CHARS else line[: MAX_TEXT_CHARS - 1] + "…"
