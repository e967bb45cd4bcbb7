"""Transcripts as the dashboard shows them: ANSI colours as classes, every other escape
gone, all text escaped; stream-json folded into turns; big files read a window at a time."""

from __future__ import annotations

import pytest

from corral.server.dashboard.ansi import to_html
from corral.server.dashboard.transcripts import WINDOW_BYTES, fold, read_window

CASES = [
    ("plain <b>", "plain &lt;b&gt;"),
    ("\x1b[1;31mred\x1b[0m ok", '<span class="ansi-bold ansi-fg-1">red</span> ok'),
    ("\x1b[92mbright\x1b[39m plain", '<span class="ansi-fg-2">bright</span> plain'),
    ("\x1b[38;5;208mx\x1b[38;2;1;2;3my", "xy"),  # extended colours are dropped
    ("\x1b]0;title\x07after", "after"),  # OSC
    ("\x1b]8;;http://e\x1b\\link", "link"),  # OSC ended by ST
    ("a\x1b[2Kb\x1b[3Ac\rd\x00e", "abcde"),  # cursor moves, CR and NUL
    ("\x1b[4mu\x1b[24mv", '<span class="ansi-underline">u</span>v'),
    ("cut \x1b[", "cut "),  # a sequence cut at the end of a window
]


@pytest.mark.parametrize(("raw", "html"), CASES)
def test_to_html(raw, html):
    """Each sequence becomes its classes or nothing; text is escaped."""
    assert html == str(to_html(raw))


def test_stream_json_folds_into_turns_and_plain_text_stays_together():
    """An assistant message's text and tool call, a tool result, the result with its cost,
    an unknown JSON line, and plain lines gathered into one turn."""
    text = "\n".join(
        [
            "starting",
            "still plain",
            '{"type":"assistant","message":{"content":[{"type":"text","text":"hi"},'
            '{"type":"tool_use","name":"Read","input":{"path":"a"}}]}}',
            '{"type":"user","message":{"content":[{"type":"tool_result","content":"ok",'
            '"is_error":true}]}}',
            '{"type":"result","result":"done","total_cost_usd":0.5}',
            '{"type":"thread.started","thread_id":"x"}',
        ]
    )
    assert [
        ("text", "Output"),
        ("assistant", "Assistant"),
        ("tool", "Tool call: Read"),
        ("tool", "Tool result (error)"),
        ("result", "Result (cost $0.5000)"),
        ("session", "Session"),
    ] == [(t.kind, t.heading) for t in fold(text)]


def test_a_big_transcript_opens_on_its_last_window_and_pages_backwards(tmp_path):
    """Windows of a 1.5 MB transcript start at line starts, end where the next begins, and
    together hold every line once; none reads more than its window."""
    path = tmp_path / "t.jsonl"
    lines = [f"line {i:06} " + "x" * 80 for i in range(16_000)]
    path.write_text("\n".join(lines) + "\n")
    seen: list[str] = []
    window = read_window(str(path))
    assert window.size == window.end and window.later is None
    while True:
        assert window.end - window.start <= WINDOW_BYTES
        seen = [line for turn in window.turns for line in str(turn.body).split("\n")] + seen
        if window.start == 0:
            break
        window = read_window(str(path), before=window.start)
    assert lines == seen


def test_each_agents_opening_is_one_session_line():
    """Claude Code's init event, Codex's thread (its turn.started left out) and aider's
    banner each become one line of what they give; what follows stays as it was."""
    claude = (
        '{"type":"system","subtype":"init","model":"claude-opus-4-1","tools":["Bash","Read"],'
        '"permissionMode":"acceptEdits","slash_commands":["compact"]}'
    )
    codex = '{"type":"thread.started","thread_id":"0199a"}\n{"type":"turn.started"}'
    aider = "\n".join(
        [
            "Aider v0.86.1",
            "Main model: anthropic/claude-sonnet-4-5 with diff edit format, infinite output",
            "Weak model: anthropic/claude-haiku-4-5",
            "Git repo: .git with 1 files",
            "Repo-map: disabled",
            "",
            "Applied edit to hello.py",
        ]
    )
    banner = "; ".join(aider.split("\n")[:5])
    assert [
        ("session", "Claude Code: model claude-opus-4-1, 2 tools (Bash, Read), "
                    "permission mode acceptEdits"),
        ("session", "Codex thread 0199a"),
        ("session", banner),
        ("text", "Applied edit to hello.py"),
    ] == [(t.kind, str(t.body)) for t in fold("\n".join([claude, codex, aider]))]  # fmt: skip
