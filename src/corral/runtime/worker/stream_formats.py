"""The agent output formats corral reads: which lines of each are worth decoding, and
what each says (runtime/worker/agent_streams.py reads the transcript and hands them here).

Formats (model.agents.OUTPUTS), checked on 2026-11-26 against the tools' docs and trackers:
- claude-stream-json, Claude Code 2.1 (headless docs, Agent SDK message types): JSONL;
  `system`/`init` first (session_id, claude_code_version), `assistant`/`user` messages,
  `rate_limit_event` (since 2.1.45: status allowed|allowed_warning|rejected, resetsAt in
  epoch seconds, rateLimitType), one `result` last (usage, total_cost_usd, is_error,
  subtype, api_error_status, permission_denials). A result is a failure when is_error is
  true or it names an api_error_status, whatever its subtype says (a 429 arrives as
  subtype success, is_error true, api_error_status 429: a usage limit, github/gh-aw#31073);
  a result whose permission_denials ([{tool_name, tool_use_id, tool_input}]) is not empty
  was refused tools it needed, though its subtype is success and it exited 0. A
  question is an assistant tool_use named AskUserQuestion, its text in
  input.questions[].question. anthropics/claude-code#49640 (2.1.74): a rate_limit_event
  can be written into the middle of another line, breaking it: malformed lines are skipped.
- codex-json, Codex CLI 0.146 (`codex exec --json`, codex-rs/exec exec_events.rs):
  thread.started (thread_id), turn.started, item.*, turn.completed (that turn's usage),
  turn.failed (error.message), error (message; also transient "Reconnecting..." notes,
  so an error that a completed turn follows is no failure). Its usage's input_tokens
  already count the cached_input_tokens (OpenAI's convention, the opposite of Claude's):
  corral's input_tokens are the uncached ones, input_tokens - cached_input_tokens, so that
  input_tokens + cache_read_tokens is what the turn read, for every tool alike. A usage
  limit is prose only:
  UsageLimitReachedError (codex-rs/core/src/error.rs) prints "You've hit your usage limit.
  ... try again at Aug 27th, 2026 5:05 AM." in local time (the time alone on the same
  day); releases of 2025 said "try again in 2 days 17 hours 14 minutes"; the backend's
  body, when passed through, holds "resets_at" (epoch) and "resets_in_seconds".
- aider-text, aider 0.86 (base_coder.py calculate_and_show_tokens_and_cost): a line per
  model call, `Tokens: 2.4k sent, 1.2k cache write, 5k cache hit, 188 received. Cost:
  $0.0099 message, $0.0123 session.`; "sent" already counts the cache writes.
- generic: the last line, when it is a JSON object with a `usage` object, as given.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from corral.foundation.clock import Clock
from corral.foundation.printable import one_line, visible
from corral.model.waiting import WaitKind, reason

TEXT_CHARS = 200  # Limit.message, StreamFacts.waiting
ERROR_CHARS = 2000
MINUTE_S = 60.0
JSON_LINE = b'{"type":"'  # how every line of both CLIs' compact JSON starts


@dataclass(frozen=True, slots=True, kw_only=True)
class Limit:
    """A usage limit the agent hit, and when it resets."""

    reset_at: float | None  # epoch seconds of the reset; None when the stream does not say
    message: str  # short and printable, e.g. "claude five_hour limit"


@dataclass(slots=True)
class StreamFacts:
    """What the reader has learnt so far: one object, updated in place by every read."""

    session_id: str | None = None
    # Normalized (module docstring); None: the stream reported none (never zeros).
    usage: dict[str, Any] | None = None
    # The usage streamed so far, message by message, before the run's own totals (claude's
    # assistant messages, read when a budget watches the run; codex and aider sum their
    # turns in `usage` itself): what a budget is checked against while it runs.
    streamed: dict[str, Any] | None = None
    limit: Limit | None = None
    # Why the agent waits for a person (the first seen): a wait reason, model/waiting.py.
    waiting: str | None = None
    error: str | None = None  # the agent's own failure text
    denied: tuple[str, ...] = ()  # the tools it was refused (claude permission_denials)
    agent_version: str | None = None
    model: str | None = None  # the model the agent said it runs (claude's init line)


@dataclass(frozen=True, slots=True, kw_only=True)
class Layout:
    """Which lines of a format are worth decoding, told by their first bytes (see above)."""

    skip: tuple[bytes, ...] = ()
    scan: tuple[bytes, ...] = ()  # prefix of lines decoded only when they hold `needle`
    needle: tuple[bytes, int] = (b"", 0)  # the string, and where in it a rare byte is
    take: tuple[bytes, ...] = ()
    usual: bytes = JSON_LINE  # the usual layout's start: such a line not named above is skipped
    markers: tuple[bytes, ...] = ()  # a line in another layout is decoded if it holds one


class LineFormat(Protocol):
    layout: Layout

    def take(self, line: bytes) -> None:
        """Learn what the (complete) `line` says."""
        ...


def format_for(
    output: str, facts: StreamFacts, clock: Clock, *, streamed: bool = False
) -> LineFormat | None:
    """The reader of `output`'s lines; None for generic, whose last line alone counts.
    `streamed`: claude's usage is summed message by message as it streams (a budget
    watches it), which reads every assistant line."""
    if output == "claude-stream-json":
        return _Claude(facts, streamed=streamed)
    if output == "codex-json":
        return _Codex(facts, clock)
    if output == "aider-text":
        return _Aider(facts)
    return None


def json_object(line: bytes | str) -> dict[str, Any] | None:
    """The JSON object `line` holds; None for anything else (a broken line is skipped)."""
    try:
        event = json.loads(line)
    except ValueError:  # JSONDecodeError and UnicodeDecodeError alike
        return None
    return event if isinstance(event, dict) else None


def _count(value: Any) -> int | None:
    """A token count, if `value` is one."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not value.is_integer():
        return None
    return int(value)


def _number(value: Any) -> float | None:
    """A finite number (a cost, an epoch), if `value` is one."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _text(value: Any) -> str | None:
    """A non-empty string, or None."""
    return value if isinstance(value, str) and value else None


_CLAUDE_USAGE = {
    "input_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "cache_read_input_tokens": "cache_read_tokens",
    "cache_creation_input_tokens": "cache_write_tokens",
}
_CODEX_USAGE = {  # codex's input_tokens include the cached ones: _uncached takes them out
    "input_tokens": "input_tokens",
    "cached_input_tokens": "cache_read_tokens",
    "output_tokens": "output_tokens",
}
RATE_LIMITED = 429  # an api_error_status that is a usage limit


class _Claude:
    """claude-stream-json: init, rate_limit_event, AskUserQuestion, result."""

    layout = Layout(
        skip=(b'{"type":"user"',),
        scan=(b'{"type":"assistant"',),
        needle=(b"AskUserQuestion", 7),  # Q: rare in text and code alike
        take=(b'{"type":"result"', b'{"type":"system"', b'{"type":"rate_limit_event"'),
        markers=(b'"result"', b'"system"', b"rate_limit_event", b"AskUserQuestion"),
    )
    # Under a budget every assistant line is read, for its message's usage.
    streaming = Layout(
        skip=(b'{"type":"user"',),
        take=(
            b'{"type":"assistant"',
            b'{"type":"result"',
            b'{"type":"system"',
            b'{"type":"rate_limit_event"',
        ),
        markers=(b'"result"', b'"system"', b"rate_limit_event", b'"assistant"'),
    )

    def __init__(self, facts: StreamFacts, *, streamed: bool = False) -> None:
        self.facts = facts
        self._streamed = streamed
        if streamed:
            self.layout = self.streaming
        # Each API call's usage, by its message id, until the result gives the run's own.
        self._turns: dict[bytes, dict[str, int]] = {}

    def take(self, line: bytes) -> None:
        """Learn from one line, by its type; an assistant line is decoded whole only
        when it calls AskUserQuestion (its usage is read from its end)."""
        if self._streamed and (
            line.startswith(b'{"type":"assistant"')
            or (not line.startswith(b'{"type":"') and b'"assistant"' in line)
        ):
            self._assistant(line)
            if self.facts.waiting is not None or b"AskUserQuestion" not in line:
                return
        event = json_object(line)
        if event is None:
            return
        kind = event.get("type")
        if self.facts.session_id is None:
            self.facts.session_id = _text(event.get("session_id"))
        if kind == "system" and event.get("subtype") == "init":
            self.facts.agent_version = _text(event.get("claude_code_version"))
            self.facts.model = _text(event.get("model"))
        elif kind == "assistant" and self.facts.waiting is None:
            self.facts.waiting = _question(event.get("message"))
        elif kind == "rate_limit_event":
            self._rate_limit(event.get("rate_limit_info"))
        elif kind == "result":
            self._result(event)

    def _assistant(self, line: bytes) -> None:
        """Add the usage of one API call (each `assistant` message carries its own, and
        every line of a message repeats it) to the streamed sum."""
        turn = _message_usage(line)
        if turn is None:
            return
        message_id, counts = turn
        known = self._turns.setdefault(message_id, {})
        total = dict(self.facts.streamed or {})
        for key, value in counts.items():  # a later line of a message may count more
            grown = value - known.get(key, 0)
            if grown > 0:
                known[key] = value
                total[key] = total.get(key, 0) + grown
        self.facts.streamed = total or None

    def _rate_limit(self, info: Any) -> None:
        """Only a rejected request is a limit; allowed and allowed_warning are news."""
        if not isinstance(info, dict) or info.get("status") != "rejected":
            return
        reset = _number(info.get("resetsAt"))
        window = _text(info.get("rateLimitType")) or "usage"
        message = one_line(f"claude {window} limit", TEXT_CHARS)
        self.facts.limit = Limit(reset_at=reset, message=message)

    def _result(self, event: dict[str, Any]) -> None:
        """The run's totals, and its failure text when it failed."""
        self.facts.session_id = _text(event.get("session_id")) or self.facts.session_id
        usage = _renamed(event.get("usage"), _CLAUDE_USAGE)
        cost = _number(event.get("total_cost_usd"))
        if cost is not None:
            usage = {**(usage or {}), "cost_usd": cost}
        if usage is not None:
            self.facts.usage = usage
        self.facts.denied = _denied(event.get("permission_denials"))
        status = event.get("api_error_status")
        if event.get("is_error") is True or status not in (None, ""):
            text = _text(event.get("result")) or _text(event.get("subtype")) or "error"
            if status not in (None, ""):
                text = f"API error {visible(str(status))}: {text}"
            self.facts.error = text[:ERROR_CHARS]
        rate_limited = _count(status) == RATE_LIMITED or status == str(RATE_LIMITED)
        if rate_limited and self.facts.limit is None:  # else a rejected event's reset stands
            self.facts.limit = Limit(reset_at=None, message="claude API error 429")


_USAGE_KEY = re.compile(rb'"usage"\s*:\s*\{')
_MESSAGE_ID = re.compile(rb'"id"\s*:\s*"([^"\\]{1,200})"')
_USAGE_COUNT = re.compile(
    rb'"(input_tokens|output_tokens|cache_read_input_tokens|cache_creation_input_tokens)"'
    rb"\s*:\s*(\d{1,15})[,}\s]"
)


def _message_usage(line: bytes) -> tuple[bytes, dict[str, int]] | None:
    """(message id, its counts under corral's names) of a claude `assistant` line, read
    without decoding the line: the message's `usage` is its last (a key `"usage":` cannot
    occur inside a JSON string, whose quotes are escaped), its id its first; after the
    usage come only the line's own keys (session_id, uuid), none of them a count's name."""
    at = line.rfind(b'"usage"')
    found = _USAGE_KEY.match(line, at) if at >= 0 else None
    ident = _MESSAGE_ID.search(line) if found is not None else None
    if found is None or ident is None:
        return None
    counts = {
        _CLAUDE_USAGE[name.decode()]: int(value)
        for name, value in _USAGE_COUNT.findall(line, found.end())
    }
    return (ident[1], counts) if counts else None


def _renamed(usage: Any, names: dict[str, str]) -> dict[str, Any] | None:
    """The counts of `usage` under corral's names; None when it has none."""
    if not isinstance(usage, dict):
        return None
    found = {new: _count(usage.get(old)) for old, new in names.items()}
    counts = {name: value for name, value in found.items() if value is not None}
    return counts or None


def _denied(denials: Any) -> tuple[str, ...]:
    """The distinct tool names of a result's permission_denials, in order."""
    names: dict[str, None] = {}
    for denial in denials if isinstance(denials, list) else ():
        name = _text(denial.get("tool_name")) if isinstance(denial, dict) else None
        if name is not None:
            names[one_line(name, TEXT_CHARS)] = None
    return tuple(names)


def _question(message: Any) -> str | None:
    """The question asked, as the task's wait reason ("question: <text>"), when the message
    calls AskUserQuestion."""
    content = message.get("content") if isinstance(message, dict) else None
    for block in content if isinstance(content, list) else ():
        if isinstance(block, dict) and block.get("name") == "AskUserQuestion":
            text = _question_text(block.get("input"))
            return one_line(reason(WaitKind.QUESTION, text or ""), TEXT_CHARS)
    return None


def _question_text(tool_input: Any) -> str | None:
    """The first question's text in an AskUserQuestion input."""
    if not isinstance(tool_input, dict):
        return None
    questions = tool_input.get("questions")
    if isinstance(questions, list) and questions and isinstance(questions[0], dict):
        return _text(questions[0].get("question"))
    return _text(tool_input.get("question"))


def _uncached(usage: dict[str, Any] | None) -> dict[str, Any] | None:
    """Codex's counts with input_tokens made the uncached ones (its own include the cached)."""
    if usage is None or "input_tokens" not in usage or "cache_read_tokens" not in usage:
        return usage
    cached = min(usage["cache_read_tokens"], usage["input_tokens"])
    return {**usage, "input_tokens": usage["input_tokens"] - cached, "cache_read_tokens": cached}


class _Codex:
    """codex-json: thread.started, turn.completed (summed), turn.failed, error."""

    layout = Layout(
        skip=(b'{"type":"item.', b'{"type":"turn.started"'),
        take=(
            b'{"type":"thread.started"',
            b'{"type":"turn.completed"',
            b'{"type":"turn.failed"',
            b'{"type":"error"',
        ),
        markers=(b"thread.started", b"turn.completed", b"turn.failed", b'"error"'),
    )

    def __init__(self, facts: StreamFacts, clock: Clock) -> None:
        self.facts = facts
        self._clock = clock
        self._failed = False  # the error is a turn's failure, not a note a turn outlived

    def take(self, line: bytes) -> None:
        """Learn from one decoded line, by its type."""
        event = json_object(line)
        if event is None:
            return
        kind = event.get("type")
        if kind == "thread.started":
            self.facts.session_id = _text(event.get("thread_id")) or self.facts.session_id
        elif kind == "turn.completed":
            self._add_usage(_uncached(_renamed(event.get("usage"), _CODEX_USAGE)))
            if not self._failed:
                self.facts.error = None
        elif kind == "turn.failed":
            error = event.get("error")
            self._error(_text(error.get("message")) if isinstance(error, dict) else None)
            self._failed = True
        elif kind == "error":
            self._error(_text(event.get("message")))

    def _add_usage(self, turn: dict[str, Any] | None) -> None:
        """Add one turn's counts to the run's."""
        if turn is None:
            return
        total = self.facts.usage or {}
        self.facts.usage = {**total, **{k: total.get(k, 0) + v for k, v in turn.items()}}

    def _error(self, message: str | None) -> None:
        """Record the failure text, and a usage limit when it says so."""
        text = message or "error"
        self.facts.error = text[:ERROR_CHARS]
        if not _USAGE_LIMIT.search(text):
            return
        reset = _codex_reset(text, self._clock.now())
        known = self.facts.limit  # the first reset named stands: the exact one comes first
        if known is None or known.reset_at is None:
            self.facts.limit = Limit(reset_at=reset, message="codex usage limit")


_USAGE_LIMIT = re.compile(r"(?i)usage[ _]limit")
_RESETS_AT = re.compile(r'"resets_at"\s*:\s*(\d{9,11})')
_RESETS_IN = re.compile(r'"resets_in_seconds"\s*:\s*(\d{1,9})')
_TRY_AT = re.compile(
    r"(?i)try again at (?:(?P<month>[a-z]{3}) (?P<day>\d{1,2})(?:st|nd|rd|th)?, "
    r"(?P<year>\d{4}) )?(?P<hour>\d{1,2}):(?P<minute>\d{2}) ?(?P<half>[ap]m)"
)
_TRY_IN = re.compile(r"(?i)try again in ((?:\d+ ?[a-z]+[ ,]*(?:and )?)+)")
_DURATION_PART = re.compile(r"(?i)(\d+) ?(d|h|m|s)")
_UNIT_S = {"d": 86400, "h": 3600, "m": 60, "s": 1}
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


def _codex_reset(text: str, now: datetime) -> float | None:
    """The epoch second a codex usage limit resets at, from its message; None if not said.

    The prose forms give minutes only (seconds truncated), so a minute is added: a retry
    at the time named could come before the reset, never after it by more than a minute.
    """
    if found := _RESETS_AT.search(text):
        return float(found[1])
    if found := _RESETS_IN.search(text):
        return now.timestamp() + float(found[1])
    if found := _TRY_AT.search(text):
        at = _local_time(found, now)
        return None if at is None else at + MINUTE_S
    if found := _TRY_IN.search(text):
        parts = _DURATION_PART.findall(found[1])
        seconds = sum(int(n) * _UNIT_S[unit.lower()] for n, unit in parts)
        return now.timestamp() + seconds + MINUTE_S if parts else None
    return None


def _local_time(found: re.Match[str], now: datetime) -> float | None:
    """The epoch second of codex's "Aug 27th, 2026 5:05 AM" (or "5:05 AM": today), local time."""
    hour = int(found["hour"]) % 12 + (12 if found["half"].lower() == "pm" else 0)
    try:
        if found["month"] is None:
            today = now.astimezone()
            year, month, day = today.year, today.month, today.day
        else:
            year, month = int(found["year"]), _MONTHS.index(found["month"].lower()) + 1
            day = int(found["day"])
        # Naive, then astimezone(): read as local wall time under that day's own zone rule
        # (summer time included), as codex wrote it.
        return datetime(year, month, day, hour, int(found["minute"])).astimezone().timestamp()
    except (ValueError, OverflowError):
        return None


class _Aider:
    """aider-text: the `Tokens: ... Cost: ...` line of each model call."""

    layout = Layout(take=(b"Tokens: ",), usual=b"")
    FIGURE = rb"(\d+(?:,\d{3})*(?:\.\d+)?[kKmM]?)"
    TOKENS = re.compile(
        rb"Tokens: %s sent(?:, %s cache write)?(?:, %s cache (?:hit|read))?, %s received"
        % (FIGURE, FIGURE, FIGURE, FIGURE)
    )
    COST = re.compile(rb"Cost: \$([\d,]+(?:\.\d+)?) message, \$([\d,]+(?:\.\d+)?) session")
    KEYS = ("input_tokens", "cache_write_tokens", "cache_read_tokens", "output_tokens")

    def __init__(self, facts: StreamFacts) -> None:
        self.facts = facts

    def take(self, line: bytes) -> None:
        """Add the message's tokens to the run's; the session cost is the latest."""
        tokens = self.TOKENS.match(line)
        if tokens is None:
            return
        usage = dict(self.facts.usage or {})
        for key, figure in zip(self.KEYS, tokens.groups(), strict=True):
            if figure is not None:
                usage[key] = usage.get(key, 0) + _figure(figure)
        if cost := self.COST.search(line, tokens.end()):
            usage["cost_usd"] = float(cost[2].replace(b",", b""))
        self.facts.usage = usage


def _figure(text: bytes) -> int:
    """aider's token figure: `188`, `12,345`, `2.4k`, `1.2M`."""
    scale = {b"k": 1000, b"m": 1_000_000}.get(text[-1:].lower(), 1)
    digits = text[:-1] if scale != 1 else text
    return round(float(digits.replace(b",", b"")) * scale)
