"""Why a task waits for a person (TaskStatus.WAITING), as its recorded reason begins.

A task waits, keeping its worktree and its agent's session, when finishing it needs a
person: the run changed nothing (`[worktree] on_empty = wait`), the agent was refused a
permission it needed, it asked a question, its worker reported it blocked (seed 001's
board), its work kept failing the verify step (model/verify_retries.py), it
reached its budget (model/budgets.py), or its agent asked through corral's MCP server for
a permission (`permission_prompt`, a person allows or denies it). The reason is
one of these words, then `: ` and the detail (`refused: Bash, Edit`), so `why`, `status`
and the dashboard can both group by the word and show the detail. `corral answer`, `retry`
or `cancel` ends the wait.
"""

from __future__ import annotations

from enum import StrEnum


class WaitKind(StrEnum):
    """The kinds of reasons a task waits."""

    NO_CHANGE = "no_change"  # the run left no new commit and nothing to commit
    REFUSED = "refused"  # the agent reported it was denied what it needed
    QUESTION = "question"  # the agent asked a person a question
    BUDGET = "budget"  # the task crossed its budget
    BLOCKED = "blocked"  # its worker moved it to seed 001's `blocked` column (board/)
    VERIFY = "verify"  # its work failed the verify step after its verify retries
    PERMISSION = "permission"  # its agent asks a person to allow a tool call (corral mcp)


# A permission's answer: `allow`, or `deny` and why (`deny: not outside the worktree`);
# any other text denies with that text as the reason, so nothing but `allow` allows.
ALLOW, DENY = "allow", "deny"


def reason(kind: WaitKind, detail: str) -> str:
    """The reason recorded on the task: the kind, then the detail."""
    return f"{kind}: {detail}" if detail else str(kind)


def kind_of(recorded: str | None) -> WaitKind | None:
    """The kind a recorded reason starts with, or None for another text."""
    if not recorded:
        return None
    word = recorded.partition(":")[0]
    try:
        return WaitKind(word)
    except ValueError:
        return None


def decision(answer: str | None) -> tuple[bool, str]:
    """(allowed, message) of a person's answer to a permission: only `allow` allows; a
    denial's message is what followed `deny:`, the whole text otherwise."""
    text = (answer or "").strip()
    if text.lower() == ALLOW:
        return True, ""
    word, _, rest = text.partition(":")
    if word.strip().lower() == DENY:
        return False, rest.strip() or "a person denied it"
    return False, text or "a person denied it"


def permission_answer(allowed: bool, message: str | None = None) -> str:
    """The answer text of an allow or a deny (`corral answer --allow`, `--deny`)."""
    if allowed:
        return ALLOW
    return f"{DENY}: {message.strip()}" if message and message.strip() else DENY
