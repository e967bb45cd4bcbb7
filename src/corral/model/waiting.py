"""Why a task waits for a person (TaskStatus.WAITING), as its recorded reason begins.

A task waits, keeping its worktree and its agent's session, when finishing it needs a
person: the run changed nothing (`[worktree] on_empty = wait`), the agent was refused a
permission it needed, it asked a question, or (later) it crossed a budget. The reason is
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
