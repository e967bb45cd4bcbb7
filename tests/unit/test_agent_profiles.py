"""The built-in profiles' permissions: what each adds so its agent can work unattended,
and when the user's own arguments leave them out (model/agents.py, docs/agents.md
"Permissions and commits")."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

from pathlib import Path

import pytest

from corral.agents import load_profile
from corral.model.agents import BUILT_IN

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
