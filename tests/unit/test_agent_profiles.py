"""The built-in profiles' permissions: what each adds so its agent can work unattended,
and when the user's own arguments leave them out (model/agents.py, docs/agents.md
"Permissions and commits")."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corral.foundation.errors import InvalidInput
from corral.model.agents import BUILT_IN
from corral.usecases.agents import load_profile

CLAUDE = ("claude", "-p", "--output-format", "stream-json", "--verbose")
ACCEPT_EDITS = ("--permission-mode", "acceptEdits")
WORKSPACE_WRITE = ("--sandbox", "workspace-write")


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ((), (*CLAUDE, *ACCEPT_EDITS)),
        (("--max-turns", "5"), (*CLAUDE, *ACCEPT_EDITS, "--max-turns", "5")),
        (("--permission-mode", "plan"), (*CLAUDE, "--permission-mode", "plan")),
        (
            ("--permission-mode=bypassPermissions",),
            (*CLAUDE, "--permission-mode=bypassPermissions"),
        ),
        (("--dangerously-skip-permissions",), (*CLAUDE, "--dangerously-skip-permissions")),
        (
            ("--allowedTools", "Bash(git commit:*)"),
            (*CLAUDE, *ACCEPT_EDITS, "--allowedTools", "Bash(git commit:*)"),
        ),
        (
            ("--permission-prompt-tool", "mcp__p__ok"),
            (*CLAUDE, "--permission-prompt-tool", "mcp__p__ok"),
        ),
    ],
)
def test_claude_gets_accept_edits_unless_the_user_chose_its_permissions(
    extra: tuple[str, ...], expected: tuple[str, ...]
) -> None:
    """--permission-mode acceptEdits is added unless an --agent-arg chooses the mode (or
    skips permissions, or names a prompt tool); --allowedTools rules add to the mode."""
    assert expected == BUILT_IN["claude"].argv(extra=extra)


@pytest.mark.parametrize(
    ("extra", "sandboxed"),
    [
        ((), True),
        (("--skip-git-repo-check",), True),
        (("--sandbox", "danger-full-access"), False),
        (("-s", "read-only"), False),
        (("--dangerously-bypass-approvals-and-sandbox",), False),
        (("--yolo",), False),
        (("--full-auto",), False),
        (("-c", "sandbox_mode=danger-full-access"), False),
        (("-c", "model_reasoning_effort=high"), True),
    ],
)
def test_codex_gets_the_workspace_write_sandbox_unless_the_user_chose_one(
    extra: tuple[str, ...], sandboxed: bool
) -> None:
    """--sandbox workspace-write (never the deprecated --full-auto) unless the user set a
    sandbox, bypassed it, or set sandbox_mode through -c."""
    argv = BUILT_IN["codex"].argv(extra=extra, session_id="th-1")
    base = ("codex", "exec", "resume", "--json", "th-1", "-")
    assert (*base, *(WORKSPACE_WRITE if sandboxed else ()), *extra) == argv


def test_aider_adds_no_permission_flag() -> None:
    """aider's --yes-always already answers its questions: nothing is added."""
    argv = BUILT_IN["aider"].argv(prompt_file="/p")
    assert ("aider", "--yes-always", "--no-pretty", "--message-file", "/p") == argv


def test_a_user_profile_keeps_its_bases_permissions_unless_it_sets_them(tmp_path: Path) -> None:
    """`extends = "claude"` with a command of its own still gets acceptEdits; a command
    that chooses a mode, or `permissions = []`, gets none added."""
    (tmp_path / "own.toml").write_text('extends = "claude"\ncommand = ["/opt/claude", "-p"]\n')
    (tmp_path / "plan.toml").write_text(
        'extends = "claude"\ncommand = ["claude", "-p", "--permission-mode", "plan"]\n'
    )
    (tmp_path / "none.toml").write_text('extends = "claude"\npermissions = []\n')
    own, plan, none = (load_profile(n, str(tmp_path)).argv() for n in ("own", "plan", "none"))
    assert ("/opt/claude", "-p", *ACCEPT_EDITS) == own
    assert ("claude", "-p", "--permission-mode", "plan") == plan
    assert CLAUDE == none


@pytest.mark.parametrize(
    ("value", "expected"),
    [("8000", 8000), ("0", None), ('"8G"', None), ("true", None), ("2147483648", None)],
)
def test_a_profile_states_its_runs_memory_in_whole_megabytes(
    tmp_path: Path, value: str, expected: int | None
) -> None:
    """`memory_mb = 8000` is the run's expected peak; anything but 1 MB .. 2 PB in whole
    megabytes is one error naming the file and key."""
    (tmp_path / "big.toml").write_text(f'extends = "claude"\nmemory_mb = {value}\n')
    if expected is not None:
        assert expected == load_profile("big", str(tmp_path)).memory_mb
        return
    with pytest.raises(InvalidInput) as caught:
        load_profile("big", str(tmp_path))
    assert str(caught.value).startswith(
        "agents/big.toml memory_mb: expected a whole number of MB from 1 to 2147483647"
    )


def test_claude_mcp_hands_claude_corrals_server_and_its_permission_prompts() -> None:
    """claude-mcp is claude with `corral mcp` in an --mcp-config (starting and resuming)
    and permission requests sent to corral's permission_prompt, acceptEdits kept; a mode
    the user chooses replaces both permission flags, the server stays."""
    profile = BUILT_IN["claude-mcp"]
    config = json.loads(profile.command[profile.command.index("--mcp-config") + 1])
    assert {"type": "stdio", "command": "corral", "args": ["mcp"]} == config["mcpServers"]["corral"]
    assert profile.resume[-2:] == profile.command[-2:]
    assert (*profile.command, *ACCEPT_EDITS, "--permission-prompt-tool",
            "mcp__corral__permission_prompt") == profile.argv(extra=())  # fmt: skip
    assert (*profile.command, "--permission-mode", "plan") == profile.argv(
        extra=("--permission-mode", "plan")
    )
