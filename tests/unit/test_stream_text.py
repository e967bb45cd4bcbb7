"""An agent's output line in words (runtime/worker/stream_text.py), on lines of the shapes
claude stream-json and codex exec --json print: what `status --watch` shows instead of
raw JSON."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import json
from typing import Any

import pytest

from corral.runtime.worker.stream_text import readable


def line(event: dict[str, Any]) -> str:
    """`event` as the tools print it: compact JSON."""
    return json.dumps(event, separators=(",", ":"))


def assistant(*blocks: dict[str, Any]) -> str:
    message = {"id": "msg_01", "type": "message", "role": "assistant", "content": list(blocks)}
    return line({"type": "assistant", "message": message, "session_id": "s-1"})


def tool(name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": "toolu_01", "name": name, "input": tool_input}


def item(**fields: Any) -> str:
    return line({"type": "item.completed", "item": {"id": "item_3", **fields}})


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (
            assistant({"type": "text", "text": "Reading the\n  parser now."}),
            "Reading the parser now.",
        ),
        (
            assistant(
                {"type": "text", "text": "Let me test."},
                tool("Bash", {"command": "make test", "description": "Run tests"}),
            ),
            "Bash: make test",
        ),
        (assistant(tool("Write", {"file_path": "/w/a.py", "content": "x"})), "Write: /w/a.py"),
        (assistant(tool("Grep", {"pattern": "TODO"})), "Grep: TODO"),
        (assistant(tool("TodoWrite", {"todos": []})), "TodoWrite"),
        (
            assistant(tool("AskUserQuestion", {"questions": [{"question": "Which DB?"}]})),
            "asks: Which DB?",
        ),
        (assistant({"type": "thinking", "thinking": "hmm"}), None),
        (
            line(
                {
                    "type": "user",
                    "message": {
                        "role": "user",
                        "content": [{"type": "tool_result", "content": "ok"}],
                    },
                }
            ),
            None,
        ),
        (line({"type": "system", "subtype": "init", "session_id": "s-1"}), None),
        (
            line(
                {"type": "result", "subtype": "success", "is_error": False, "result": "All done."}
            ),
            "result: All done.",
        ),
        (
            line({"type": "rate_limit_event", "rate_limit_info": {"status": "rejected"}}),
            "usage limit reached",
        ),
        (line({"type": "rate_limit_event", "rate_limit_info": {"status": "allowed"}}), None),
        (line({"type": "thread.started", "thread_id": "th-1"}), None),
        (line({"type": "turn.started"}), None),
        (item(type="agent_message", text="Done."), "Done."),
        (item(type="reasoning", text="**Plan**"), "**Plan**"),
        (
            item(type="command_execution", command="bash -lc ls", status="in_progress"),
            "$ bash -lc ls",
        ),
        (
            item(
                type="file_change",
                changes=[{"path": "a.py", "kind": "add"}, {"path": "b.py", "kind": "update"}],
                status="completed",
            ),
            "editing a.py, b.py",
        ),
        (item(type="web_search", query="codex sandbox"), "searching: codex sandbox"),
        (line({"type": "turn.completed", "usage": {"input_tokens": 1}}), None),
        (
            line({"type": "turn.failed", "error": {"message": "stream disconnected"}}),
            "turn failed: stream disconnected",
        ),
        (line({"type": "error", "message": "Reconnecting... 1/5"}), "error: Reconnecting... 1/5"),
        (line({"usage": {"input_tokens": 5}}), None),
        ('{"type":"assistant","message":{"content":[{"type":"te{"type":"rate_limit_event"}', None),
        ("Tokens: 2.4k sent, 188 received.", "Tokens: 2.4k sent, 188 received."),
        ("[INFO] compiling", "[INFO] compiling"),
        ("{ not json at all", "{ not json at all"),
        ("   ", None),
        (line({"type": "assistant", "message": "not an object"}), None),
        ("[1, 2]", "[1, 2]"),
    ],
)
def test_a_line_in_words(text: str, words: str | None) -> None:
    """Each event in words: text, the tool and what it is called on, the command, the
    files; nothing for events with nothing to show or broken JSON; other text as it is."""
    assert words == readable(text)
