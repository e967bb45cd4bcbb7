"""Agent stream readers (runtime/worker/agent_streams.py) on transcripts built here from the
tools' recorded shapes, read whole and in polls; then the fake agents of tests/agents/fakes,
run as real processes, read the same way.

Shapes: claude stream-json from Claude Code's headless-mode docs and Agent SDK message
types (init, assistant, result), rate_limit_event from anthropics/claude-code#49640 and
the wrappers that parse it (2.1.45+); codex from codex-rs/exec exec_events.rs and
UsageLimitReachedError in codex-rs/core/src/error.rs; aider from base_coder.py
calculate_and_show_tokens_and_cost. All checked 2026-11-26.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from corral.foundation.clock import FakeClock, SystemClock
from corral.foundation.errors import InvalidInput
from corral.model.agents import BUILT_IN
from corral.runtime.worker import agent_streams
from corral.runtime.worker.agent_streams import Limit, StreamFacts, StreamReader, read_stream
from corral.runtime.worker.executor import CommandSpec, run_command
from corral.runtime.worker.reports import Ending

FAKES = Path(__file__).resolve().parents[1] / "agents" / "fakes"
SESSION = "9f2c1e64-2c4b-4be5-9d0e-3c54a1f0b7aa"


def line(event: dict[str, Any]) -> str:
    """One line as both CLIs print it: compact JSON."""
    return json.dumps(event, separators=(",", ":")) + "\n"


def write(path: Path, *lines: str) -> Path:
    """Append `lines` to `path` as they are (a missing newline stays missing)."""
    with open(path, "a", encoding="utf-8") as handle:
        handle.write("".join(lines))
    return path


# -- claude-stream-json ---------------------------------------------------------------------

CLAUDE_MODEL = "claude-sonnet-4-5"  # what its init line says it runs (a span's request.model)


def init() -> str:
    return line(
        {
            "type": "system",
            "subtype": "init",
            "cwd": "/work",
            "session_id": SESSION,
            "tools": ["Bash", "Read", "AskUserQuestion"],
            "model": CLAUDE_MODEL,
            "permissionMode": "default",
            "claude_code_version": "2.1.30",
        }
    )


def assistant(*blocks: dict[str, Any]) -> str:
    usage = {"input_tokens": 3, "cache_read_input_tokens": 22077, "output_tokens": 2}
    message = {"model": "claude-sonnet-4-5", "id": "msg_01", "type": "message"}
    message |= {"role": "assistant", "content": list(blocks), "usage": usage}
    return line({"type": "assistant", "message": message, "session_id": SESSION})


def text(words: str) -> dict[str, Any]:
    return {"type": "text", "text": words}


def tool_use(name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": "toolu_01", "name": name, "input": tool_input}


def rate_limit(status: str, **info: Any) -> str:
    return line({"type": "rate_limit_event", "rate_limit_info": {"status": status, **info}})


def result(**fields: Any) -> str:
    event = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": "Done.",
        "session_id": SESSION,
        "total_cost_usd": 0.1834,
        "usage": {
            "input_tokens": 10,
            "cache_creation_input_tokens": 1200,
            "cache_read_input_tokens": 45000,
            "output_tokens": 520,
            "service_tier": "standard",
        },
    }
    return line(event | fields)


CLAUDE_USAGE = {
    "input_tokens": 10,
    "output_tokens": 520,
    "cache_read_tokens": 45000,
    "cache_write_tokens": 1200,
    "cost_usd": 0.1834,
}


STREAMED = {"input_tokens": 3, "output_tokens": 2, "cache_read_tokens": 22077}


def claude(path: Path, *, streamed: bool = False) -> StreamFacts:
    return read_stream("claude-stream-json", str(path), streamed=streamed)


def test_a_claude_run_gives_its_session_version_usage_and_cost(tmp_path: Path) -> None:
    """init, messages, an allowed rate_limit_event and the result: the normalized totals."""
    path = write(
        tmp_path / "t.jsonl",
        init(),
        assistant(text("Reading the code.")),
        rate_limit("allowed", resetsAt=1900000000, rateLimitType="five_hour"),
        line({"type": "user", "message": {"role": "user", "content": [{"type": "tool_result"}]}}),
        result(),
    )
    expected = StreamFacts(
        session_id=SESSION, usage=CLAUDE_USAGE, agent_version="2.1.30", model=CLAUDE_MODEL
    )
    assert expected == claude(path)
    assert STREAMED == claude(path, streamed=True).streamed  # under a budget


def test_usage_keys_are_ints_and_the_cost_a_float(tmp_path: Path) -> None:
    """A cost of 0 is the float 0.0; counts written as 12.0 are the int 12."""
    usage = {"input_tokens": 12.0, "output_tokens": 3, "cache_read_input_tokens": True}
    path = write(tmp_path / "t.jsonl", result(total_cost_usd=0, usage=usage))
    facts = claude(path)
    assert {"input_tokens": 12, "output_tokens": 3, "cost_usd": 0.0} == facts.usage
    assert [int, int, float] == [type(v) for v in (facts.usage or {}).values()]


def test_spaced_json_and_another_key_order_are_read_too(tmp_path: Path) -> None:
    """The fast path assumes compact JSON with the type first; other layouts still count."""
    spaced = json.dumps(json.loads(result())) + "\n"  # ", " and ": " separators
    reordered = json.dumps({"session_id": SESSION, **json.loads(init())}) + "\n"
    path = write(tmp_path / "t.jsonl", reordered, spaced)
    expected = StreamFacts(
        session_id=SESSION, usage=CLAUDE_USAGE, agent_version="2.1.30", model=CLAUDE_MODEL
    )
    assert expected == claude(path)


def test_no_result_line_means_no_usage_even_with_assistant_usage(tmp_path: Path) -> None:
    """Per-message usage is not the run's: without a result the stream reported none; a
    budget's reader sums it apart, as `streamed`."""
    path = write(tmp_path / "t.jsonl", init(), assistant(text("Working.")))
    facts = claude(path, streamed=True)
    assert (SESSION, None, STREAMED) == (facts.session_id, facts.usage, facts.streamed)
    assert None is claude(path).streamed  # no budget: assistant lines are not read for it


def message_line(message_id: str, block: dict[str, Any], **usage: int) -> str:
    message = {"id": message_id, "type": "message", "role": "assistant"}
    message |= {"content": [block], "usage": usage}
    return line({"type": "assistant", "message": message, "session_id": SESSION})


def test_streamed_usage_sums_each_message_once_as_its_lines_repeat_it(tmp_path: Path) -> None:
    """Claude writes a line per content block of a message, each with the message's usage:
    a message counts once (its highest figures), messages add up, and a `usage` key in a
    tool's input is not the message's."""
    first = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 100}
    path = write(
        tmp_path / "t.jsonl",
        init(),
        message_line("msg_a", text("Reading."), **first),
        message_line("msg_a", tool_use("Write", {"usage": {"input_tokens": 9999}}), **first),
        message_line("msg_b", text("Done."), input_tokens=20, output_tokens=1),
        message_line("msg_b", text("Done."), input_tokens=20, output_tokens=7),
    )
    expected = {"input_tokens": 30, "output_tokens": 12, "cache_write_tokens": 100}
    assert expected == claude(path, streamed=True).streamed


def test_only_a_rejected_rate_limit_event_is_a_limit(tmp_path: Path) -> None:
    """allowed and allowed_warning are news; rejected is the limit, with its reset."""
    path = write(
        tmp_path / "t.jsonl",
        init(),
        rate_limit("allowed_warning", resetsAt=1900000000, rateLimitType="seven_day"),
        rate_limit("rejected", resetsAt=1900003600, rateLimitType="five_hour"),
        result(is_error=True, result="You've hit your limit · resets 5pm (UTC)"),
    )
    facts = claude(path)
    assert Limit(reset_at=1900003600.0, message="claude five_hour limit") == facts.limit
    assert "You've hit your limit · resets 5pm (UTC)" == facts.error


def test_a_rejected_event_without_a_reset_is_a_limit_without_one(tmp_path: Path) -> None:
    """No resetsAt (nor type): reset_at None, a generic message."""
    path = write(tmp_path / "t.jsonl", rate_limit("rejected"))
    assert Limit(reset_at=None, message="claude usage limit") == claude(path).limit


def test_a_failed_result_gives_its_text_or_else_its_subtype(tmp_path: Path) -> None:
    """is_error true: the result text; error_max_turns carries none, so the subtype."""
    failed = write(tmp_path / "a.jsonl", result(is_error=True, result="API Error: 500"))
    turns = line({"type": "result", "subtype": "error_max_turns", "is_error": True})
    assert "API Error: 500" == claude(failed).error
    assert "error_max_turns" == claude(write(tmp_path / "b.jsonl", turns)).error


DENIAL_WRITE = {
    "tool_name": "Write",
    "tool_use_id": "toolu_01A",
    "tool_input": {"file_path": "/w/notes.txt", "content": "hi"},
}
DENIAL_BASH = {"tool_name": "Bash", "tool_use_id": "toolu_01B", "tool_input": {"command": "ls"}}
DENIAL_EDIT = {
    "tool_name": "Edit",
    "tool_use_id": "toolu_01C",
    "tool_input": {"file_path": "/w/a.py", "old_string": "a", "new_string": "b"},
}


@pytest.mark.parametrize(
    ("fields", "denied", "error", "limit"),
    [
        ({}, (), None, None),
        ({"permission_denials": []}, (), None, None),
        ({"permission_denials": [DENIAL_WRITE]}, ("Write",), None, None),
        (
            {"permission_denials": [DENIAL_WRITE, DENIAL_BASH, DENIAL_WRITE, DENIAL_EDIT]},
            ("Write", "Bash", "Edit"),
            None,
            None,
        ),
        ({"permission_denials": [{"tool_use_id": "x"}, "Write", None]}, (), None, None),
        ({"is_error": True, "result": "boom"}, (), "boom", None),
        (
            {"is_error": True, "api_error_status": 500, "result": "API Error: 500"},
            (),
            "API error 500: API Error: 500",
            None,
        ),
        (
            {"api_error_status": "529", "result": "Overloaded"},
            (),
            "API error 529: Overloaded",
            None,
        ),
        (
            {"is_error": True, "api_error_status": 429, "result": "API Error: 429 rate limit"},
            (),
            "API error 429: API Error: 429 rate limit",
            Limit(reset_at=None, message="claude API error 429"),
        ),
        ({"api_error_status": None}, (), None, None),
    ],
)
def test_a_claude_result_says_what_was_refused_and_whether_it_failed(
    tmp_path: Path,
    fields: dict[str, Any],
    denied: tuple[str, ...],
    error: str | None,
    limit: Limit | None,
) -> None:
    """permission_denials: the distinct tool names in order (a subtype success still); an
    is_error or an api_error_status is a failure; a 429 is a usage limit too."""
    facts = claude(write(tmp_path / "t.jsonl", result(**fields)))
    assert (denied, error, limit) == (facts.denied, facts.error, facts.limit)


def test_a_429_result_keeps_the_reset_of_a_rejected_rate_limit_event(tmp_path: Path) -> None:
    """A rejected rate_limit_event's reset stands when the 429 result follows it."""
    path = write(
        tmp_path / "t.jsonl",
        rate_limit("rejected", resetsAt=1900000000, rateLimitType="five_hour"),
        result(is_error=True, api_error_status=429, result="limit"),
    )
    assert Limit(reset_at=1900000000.0, message="claude five_hour limit") == claude(path).limit


def test_ask_user_question_is_waiting_with_the_first_question(tmp_path: Path) -> None:
    """The first AskUserQuestion counts; a text naming the tool or another tool does not."""
    first = {"questions": [{"question": "Which database?", "header": "DB", "options": []}]}
    path = write(
        tmp_path / "t.jsonl",
        init(),
        assistant(text("I could call AskUserQuestion here.")),
        assistant(tool_use("Bash", {"command": "echo AskUserQuestion"})),
        assistant(text("Let me ask."), tool_use("AskUserQuestion", first)),
        assistant(tool_use("AskUserQuestion", {"questions": [{"question": "Second?"}]})),
    )
    assert "question: Which database?" == claude(path).waiting


def test_a_question_without_text_still_waits(tmp_path: Path) -> None:
    """An AskUserQuestion whose input has no question text: waiting is "question"."""
    path = write(tmp_path / "t.jsonl", assistant(tool_use("AskUserQuestion", {})))
    assert "question" == claude(path).waiting


def test_a_question_text_is_one_printable_line_of_at_most_200_chars(tmp_path: Path) -> None:
    """Control characters are shown escaped, and a long question is cut."""
    asked = {"questions": [{"question": "\x1b[2J" + "why? " * 100}]}
    path = write(tmp_path / "t.jsonl", assistant(tool_use("AskUserQuestion", asked)))
    waiting = claude(path).waiting or ""
    assert (200, True, False) == (
        len(waiting),
        waiting.startswith("question: \\x1b"),
        "\x1b" in waiting,
    )


def test_malformed_lines_are_skipped_and_the_rest_is_read(tmp_path: Path) -> None:
    """claude-code#49640: a rate_limit_event written into an assistant line breaks it in two;
    so do other bad lines (not JSON, not an object, not UTF-8): the facts around them hold."""
    broken = (
        '{"type":"assistant","message":{"content":[{"type":"text","text":"partial text'
        + rate_limit("allowed", resetsAt=1900000000)
        + ' continuation of text"}]},"session_id":"other"}\n'
    )
    path = write(tmp_path / "t.jsonl", init(), broken, "not json\n", "[1, 2]\n", '"result"\n')
    with open(path, "ab") as handle:
        handle.write(b'{"type":"result","result":"\xff\xfe"}\n')
    write(path, '{"type":"result", "usage":\n', result())
    expected = StreamFacts(
        session_id=SESSION, usage=CLAUDE_USAGE, agent_version="2.1.30", model=CLAUDE_MODEL
    )
    assert expected == claude(path)


# -- polls ----------------------------------------------------------------------------------


def test_polls_read_what_was_appended_and_a_line_split_between_them(tmp_path: Path) -> None:
    """A line half-written at one poll is read whole at the next; finish reads a last line
    without a newline, which polls leave alone."""
    path = tmp_path / "t.jsonl"
    reader = StreamReader("claude-stream-json", str(path))
    assert StreamFacts() == reader.poll()  # not created yet
    whole = result()
    write(path, init(), whole[:40])
    assert (SESSION, None) == (reader.poll().session_id, reader.poll().usage)
    write(path, whole[40:], rate_limit("rejected", resetsAt=1900000000).rstrip("\n"))
    facts = reader.poll()
    assert (CLAUDE_USAGE, None) == (facts.usage, facts.limit)
    assert 1900000000.0 == getattr(reader.finish().limit, "reset_at", None)


def test_lines_across_chunk_boundaries_are_read_whole(tmp_path: Path) -> None:
    """A 2.5 MiB assistant line spans three 1 MiB reads; a question after it and the result
    are found, whatever the chunk a poll stops in."""
    big = assistant(text("x" * (5 * agent_streams.CHUNK_BYTES // 2)))
    asked = assistant(tool_use("AskUserQuestion", {"question": "Go on?"}))
    path = tmp_path / "t.jsonl"
    reader = StreamReader("claude-stream-json", str(path))
    write(path, init(), big[: agent_streams.CHUNK_BYTES + 7])
    reader.poll()
    write(path, big[agent_streams.CHUNK_BYTES + 7 :], asked, result())
    facts = reader.finish()
    assert ("question: Go on?", CLAUDE_USAGE) == (facts.waiting, facts.usage)


def test_a_line_past_the_bound_is_skipped_not_held(tmp_path: Path) -> None:
    """A 9 MiB line holding a question is dropped (never buffered whole); the lines after
    it are read."""
    huge = assistant(tool_use("AskUserQuestion", {"question": "q" * (9 << 20)}))
    path = tmp_path / "t.jsonl"
    reader = StreamReader("claude-stream-json", str(path))
    write(path, init(), huge[: 5 << 20])
    reader.poll()
    write(path, huge[5 << 20 :], result())
    facts = reader.finish()
    assert (None, CLAUDE_USAGE) == (facts.waiting, facts.usage)


def test_an_unknown_output_is_refused() -> None:
    """The output must be one of model.agents.OUTPUTS."""
    with pytest.raises(InvalidInput, match="output"):
        StreamReader("jsonl", "/nonexistent")


def test_a_missing_transcript_gives_empty_facts() -> None:
    """Nothing to read is no error: every fact stays unknown."""
    assert StreamFacts() == read_stream("codex-json", "/nonexistent/transcript.jsonl")


# -- codex-json -----------------------------------------------------------------------------


def codex(path: Path, clock: FakeClock | None = None) -> StreamFacts:
    return read_stream("codex-json", str(path), clock=clock)


def turn(input_tokens: int, cached: int, output: int) -> str:
    usage = {"input_tokens": input_tokens, "cached_input_tokens": cached, "output_tokens": output}
    return line({"type": "turn.completed", "usage": usage})


def failed(message: str) -> str:
    return line({"type": "error", "message": message}) + line(
        {"type": "turn.failed", "error": {"message": message}}
    )


def test_codex_usage_is_summed_over_turns_under_corral_names(tmp_path: Path) -> None:
    """thread.started gives the session; each turn.completed adds its counts."""
    item = {"id": "item_0", "type": "agent_message", "text": "turn.completed"}
    path = write(
        tmp_path / "t.jsonl",
        line({"type": "thread.started", "thread_id": "0199a213-81c0-7800-8aa1-bbab2a035a53"}),
        line({"type": "turn.started"}),
        line({"type": "item.completed", "item": item}),
        turn(2400, 1800, 310),
        line({"type": "turn.started"}),
        turn(1000, 900, 42),
    )
    facts = codex(path)
    assert "0199a213-81c0-7800-8aa1-bbab2a035a53" == facts.session_id
    assert {"input_tokens": 700, "cache_read_tokens": 2700, "output_tokens": 352} == facts.usage


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (
            {"input_tokens": 2400, "cached_input_tokens": 1800, "output_tokens": 310},
            {"input_tokens": 600, "cache_read_tokens": 1800, "output_tokens": 310},
        ),
        (
            {"input_tokens": 2400, "output_tokens": 310},
            {"input_tokens": 2400, "output_tokens": 310},
        ),
        (
            {"input_tokens": 100, "cached_input_tokens": 150, "output_tokens": 1},
            {"input_tokens": 0, "cache_read_tokens": 100, "output_tokens": 1},
        ),
    ],
)
def test_codex_cached_input_is_counted_once(
    tmp_path: Path, usage: dict[str, int], expected: dict[str, int]
) -> None:
    """Codex's input_tokens include cached_input_tokens: corral's input_tokens are the
    uncached rest, so input + cache_read is what the turn read, never more."""
    path = write(tmp_path / "t.jsonl", line({"type": "turn.completed", "usage": usage}))
    assert expected == codex(path).usage


def test_a_codex_error_a_completed_turn_outlives_is_no_failure(tmp_path: Path) -> None:
    """ "Reconnecting..." errors come and go; a turn.failed stays."""
    note = line({"type": "error", "message": "Reconnecting... 1/5"})
    passing = write(tmp_path / "a.jsonl", note, turn(1, 0, 1))
    failing = write(tmp_path / "b.jsonl", failed("stream disconnected"), turn(1, 0, 1))
    assert (None, "stream disconnected") == (codex(passing).error, codex(failing).error)


def test_a_codex_usage_limit_takes_its_reset_from_the_backend_body(tmp_path: Path) -> None:
    """An embedded "resets_at" is the reset, exactly; the prose after it does not move it."""
    body = '{"error":{"type":"usage_limit_reached","resets_at":1777936568,"resets_in_seconds":9}}'
    path = write(
        tmp_path / "t.jsonl",
        line({"type": "error", "message": f"unexpected status 429 Too Many Requests: {body}"}),
        failed("You've hit your usage limit. Try again at Aug 27th, 2026 5:05 AM."),
    )
    facts = codex(path)
    assert Limit(reset_at=1777936568.0, message="codex usage limit") == facts.limit
    assert "You've hit your usage limit. Try again at Aug 27th, 2026 5:05 AM." == facts.error


def local_epoch(*fields: int) -> float:
    """The epoch second of a local wall time (codex prints its resets in local time)."""
    return datetime(*fields).astimezone().timestamp()


NOW = datetime(2026, 8, 20, 12, 0, tzinfo=UTC)
TODAY = NOW.astimezone().timetuple()[:3]


@pytest.mark.parametrize(
    ("message", "reset_at"),
    [
        ('{"resets_in_seconds": 3600}', NOW.timestamp() + 3600),
        ("Try again in 2 days 17 hours 14 minutes.", NOW.timestamp() + 234840 + 60),
        ("or try again at Aug 27th, 2026 5:05 PM.", local_epoch(2026, 8, 27, 17, 5) + 60),
        ("Try again at 12:30 AM.", local_epoch(*TODAY, 0, 30) + 60),
        ("Try again later.", None),
    ],
)
def test_a_codex_usage_limit_reset_is_read_from_each_form(
    tmp_path: Path, message: str, reset_at: float | None
) -> None:
    """Relative forms count from the injected clock; local times are read as local (the
    time alone: today); the prose forms, cut to the minute by codex, get the minute back."""
    path = write(tmp_path / "t.jsonl", failed(f"You've hit your usage limit. {message}"))
    facts = codex(path, FakeClock(NOW))
    assert Limit(reset_at=reset_at, message="codex usage limit") == facts.limit


def test_a_codex_failure_that_is_no_limit_has_no_limit(tmp_path: Path) -> None:
    """Only a usage-limit message is a limit."""
    path = write(tmp_path / "t.jsonl", failed("shared rollout token budget exhausted"))
    facts = codex(path)
    assert (None, "shared rollout token budget exhausted") == (facts.limit, facts.error)


# -- aider-text and generic -----------------------------------------------------------------


def test_aider_usage_sums_the_messages_and_keeps_the_last_session_cost(tmp_path: Path) -> None:
    """k, M and thousands separators; cache write and hit; the cost is the session's."""
    path = write(
        tmp_path / "t.txt",
        "Aider v0.86.1\nTokens: 12,345 sent, 1,234 cache write, 5,000 cache hit, 188 received.\n",
        "Tokens: 2.4k sent, 188 received. Cost: $0.0099 message, $0.0123 session.\n",
        "some reply mentioning Tokens: 5 sent, 5 received.\n",
        "Tokens: 1.2M sent, 12k received. Cost: $1.50 message, $1,001.51 session.",
    )
    expected = {
        "input_tokens": 12345 + 2400 + 1_200_000,
        "cache_write_tokens": 1234,
        "cache_read_tokens": 5000,
        "output_tokens": 188 + 188 + 12000,
        "cost_usd": 1001.51,
    }
    assert StreamFacts(usage=expected) == read_stream("aider-text", str(path))


def test_aider_without_a_tokens_line_reports_no_usage(tmp_path: Path) -> None:
    """A model without pricing or a run that never called the model: None, not zeros."""
    path = write(tmp_path / "t.txt", "Aider v0.86.1\nApplied edit to hello.py\n")
    assert read_stream("aider-text", str(path)).usage is None


def test_generic_takes_the_usage_object_of_the_last_line_as_given(tmp_path: Path) -> None:
    """The user's own keys, unrenamed; trailing blank lines ignored (command_job's rule)."""
    last = '{"usage": {"tokens": 7, "model": "m"}}'
    path = write(tmp_path / "t.jsonl", '{"usage": {"tokens": 1}}\n', "log\n", last, "\n\n")
    assert StreamFacts(usage={"tokens": 7, "model": "m"}) == read_stream("generic", str(path))


def test_generic_polls_see_the_last_whole_line_and_finish_the_last_of_all(tmp_path: Path) -> None:
    """While running the unterminated line is not the last line yet; at the end it is."""
    path = write(tmp_path / "t.jsonl", '{"usage": {"a": 1}}\n', '{"usage": {"b"')
    reader = StreamReader("generic", str(path))
    assert {"a": 1} == reader.poll().usage
    write(path, ": 2}}")
    assert ({"a": 1}, {"b": 2}) == (reader.poll().usage, reader.finish().usage)


def test_generic_without_a_usage_line_last_reports_none(tmp_path: Path) -> None:
    """A last line that is no JSON object with a usage object: None."""
    path = write(tmp_path / "t.jsonl", '{"usage": {"a": 1}}\n', "done\n")
    assert read_stream("generic", str(path)).usage is None
    assert read_stream("generic", str(write(tmp_path / "e.jsonl", ""))).usage is None


# -- the fake agents, as real processes -----------------------------------------------------


def run_fake(
    tmp_path: Path,
    agent: str,
    prompt: str,
    *,
    session_id: str | None = None,
    env: dict[str, str] | None = None,
) -> tuple[int, StreamFacts]:
    """Run the fake `agent` with its built-in profile's argv; exit code and what it streamed."""
    profile = BUILT_IN[agent]
    message = tmp_path / "prompt.txt"
    message.write_text(prompt, encoding="utf-8")
    argv = profile.argv(model="m1", session_id=session_id, prompt_file=str(message))
    out = tmp_path / f"{agent}.out"
    with open(out, "wb") as stdout:
        done = subprocess.run(
            argv,
            input=None if profile.prompt == "file" else prompt.encode(),
            stdout=stdout,
            env=fake_env(tmp_path, env),
            cwd=tmp_path,
            timeout=30,
            check=False,
        )
    return done.returncode, read_stream(profile.output, str(out))


def fake_env(tmp_path: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """This environment with the fakes first on PATH and the invocation log in tmp_path."""
    path = f"{FAKES}{os.pathsep}{os.environ['PATH']}"
    return {**os.environ, "PATH": path, "FAKE_AGENT_LOG": str(tmp_path / "log.jsonl")} | (
        extra or {}
    )


def invocations(tmp_path: Path) -> list[dict[str, Any]]:
    with open(tmp_path / "log.jsonl", encoding="utf-8") as handle:
        return [json.loads(entry) for entry in handle]


FAKE_CLAUDE_USAGE = {
    "input_tokens": 12,
    "output_tokens": 34,
    "cache_read_tokens": 7800,
    "cache_write_tokens": 560,
    "cost_usd": 0.0421,
}
FAKE_CODEX_USAGE = {"input_tokens": 600, "cache_read_tokens": 1800, "output_tokens": 310}
FAKE_AIDER_USAGE = {
    "input_tokens": 5500,
    "cache_write_tokens": 1200,
    "cache_read_tokens": 5000,
    "output_tokens": 283,
    "cost_usd": 0.016,
}


@pytest.mark.parametrize(
    ("agent", "usage"),
    [("claude", FAKE_CLAUDE_USAGE), ("codex", FAKE_CODEX_USAGE), ("aider", FAKE_AIDER_USAGE)],
)
def test_each_fake_succeeds_with_usage_the_reader_finds(
    tmp_path: Path, agent: str, usage: dict[str, Any]
) -> None:
    """The default run: exit 0, its usage (and a fresh session where the tool has one)."""
    code, facts = run_fake(tmp_path, agent, "Fix the bug.")
    logged = invocations(tmp_path)[0]
    assert (0, usage, None, None) == (code, facts.usage, facts.limit, facts.error)
    assert (agent, "Fix the bug.", logged["session_id"]) == (
        logged["agent"],
        logged["prompt"],
        facts.session_id,
    )
    assert (agent == "aider") == (facts.session_id is None)


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_each_fresh_run_of_a_fake_has_a_new_session(tmp_path: Path, agent: str) -> None:
    """Two fresh runs: two different uuids."""
    first, second = (run_fake(tmp_path, agent, "Go.")[1].session_id for _ in range(2))
    assert first != second
    assert str(uuid.UUID(str(first))) == first


def test_a_fake_told_to_sleep_holds_its_slot_then_succeeds(tmp_path: Path) -> None:
    """FAKE:sleep=N: at least N seconds, then the usual success."""
    began = time.monotonic()
    code, facts = run_fake(tmp_path, "codex", "FAKE:sleep=0.3")
    assert (0, FAKE_CODEX_USAGE) == (code, facts.usage)
    assert time.monotonic() - began >= 0.3


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_a_resumed_fake_reports_the_session_it_was_given(tmp_path: Path, agent: str) -> None:
    """`--resume ID` / `resume ID`: the same id; a title that looks like an option is text."""
    code, facts = run_fake(tmp_path, agent, "--force the issue", session_id="sess-1")
    logged = invocations(tmp_path)[0]
    assert (0, "sess-1", True) == (code, facts.session_id, logged["resumed"])
    assert "--force the issue" == logged["prompt"]
    assert "sess-1" in logged["argv"]


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_a_fake_at_its_limit_says_when_it_resets_and_works_once_it_has(
    tmp_path: Path, agent: str
) -> None:
    """FAKE:limit with a reset ahead: exit 1 and the Limit with that epoch; once past: success."""
    until_file = tmp_path / "until"
    until = int(time.time()) + 3600
    until_file.write_text(str(until), encoding="utf-8")
    env = {"FAKE_LIMIT_UNTIL": str(until_file)}
    code, facts = run_fake(tmp_path, agent, "FAKE:limit", env=env)
    assert (1, float(until)) == (code, getattr(facts.limit, "reset_at", None))
    until_file.write_text(str(int(time.time()) - 1), encoding="utf-8")
    code, facts = run_fake(tmp_path, agent, "FAKE:limit", env=env)
    assert (0, None) == (code, facts.limit)


@pytest.mark.parametrize("agent", ["claude", "codex", "aider"])
def test_a_crashed_fake_leaves_no_usage(tmp_path: Path, agent: str) -> None:
    """FAKE:crash: killed by SIGKILL mid-stream, no result: usage None."""
    code, facts = run_fake(tmp_path, agent, "FAKE:crash")
    assert (-signal.SIGKILL, None) == (code, facts.usage)


@pytest.mark.parametrize("agent", ["claude", "codex", "aider"])
def test_a_fake_without_usage_succeeds_with_none(tmp_path: Path, agent: str) -> None:
    """FAKE:nousage: exit 0 and no usage at all."""
    code, facts = run_fake(tmp_path, agent, "FAKE:nousage")
    assert (0, None) == (code, facts.usage)


def test_a_fake_claude_question_is_seen_while_it_waits_and_ends_the_run(tmp_path: Path) -> None:
    """Polled from the executor's stop callback, as the runner wires it: the question is
    seen while claude waits, and stopping on it ends the run long before FAKE_SLEEP."""
    out = tmp_path / "run.jsonl"
    reader = StreamReader("claude-stream-json", str(out))
    spec = CommandSpec(
        argv=BUILT_IN["claude"].argv(),
        stdin_text="FAKE:question",
        env=fake_env(tmp_path, {"FAKE_SLEEP": "60"}),
        cwd=str(tmp_path),
        transcript_path=str(out),
        stderr_path=str(tmp_path / "run.stderr"),
        run_id="run-question",
        grace_s=2.0,
    )

    def stop() -> str | None:
        return reader.poll().waiting

    began = time.monotonic()
    ran = run_command(spec, clock=SystemClock(), stop=stop, poll_s=0.02)
    assert (Ending.STOPPED, "question: Which database should the service use?") == (
        ran.ending,
        ran.stop_reason,
    )
    assert time.monotonic() - began < 30
