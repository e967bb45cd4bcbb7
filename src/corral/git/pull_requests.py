"""Pull requests for `[worktree] land = pr`: a runner opens one for a finished task's branch
and the task waits in review; the reconciler looks at each open one through the forge's
CLI, and settles its task when it was merged or closed.

    runner     the branch pushed to the remote of record (remote_base.py) ─► `pr_command`
               in the task's worktree ─► the URL it prints last ─► the task submitted for
               review with that URL (`pr_url`, pull request open)
    run again  (changes requested) the task's pull request looked at first:
                 open                ─► the push updated it: submitted with the same URL
                 closed unmerged     ─► `pr_reopen_command`, then the same URL; a new one
                                        when that is empty or the forge refuses
                 merged, or none     ─► a new one (`pr_command`)
    reconcile  each task in review whose pull request is open ─► `pr_view_command` ─►
                 {"state": "MERGED", "mergeCommit": {"oid": SHA}} ─► done, SHA recorded
                 {"state": "CLOSED"}                              ─► in review, for a person
                 {"state": "OPEN"}, or a look that failed (logged) ─► as it was, then
                   its checks (`pr_checks_command`, git/pr_checks.py): failed ─► back to
                   its agent, the failing checks and their logs' tails its next run's
                   note, `[worktree] verify_retries` times in a row; then waiting for a
                   person (model/verify_retries.py); passed, pending, none ─► as it was

The commands are argument lists from the settings, run without a shell; a placeholder
(`{base}`, `{branch}`, `{title}`, `{body_file}`, `{task}`, `{url}`) is replaced only as a
whole argument, so a title is one argument whatever it holds. The defaults are GitHub's
`gh` (`gh pr create ...`, `gh pr view URL --json state,mergeCommit`, `gh pr reopen URL`);
another forge's CLI that answers the same JSON fits. A pull request is looked at before a
run that follows one is submitted because `gh pr create` refuses a branch that has an
open one ("a pull request for branch ... already exists"), and because the record may be
older than the forge (a person closed it after asking for changes in corral). Reopening,
rather than opening another, keeps the review's conversation in one place.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import tempfile
from dataclasses import dataclass
from typing import Any, NamedTuple

from corral.foundation.errors import (
    CorralError,
    InvalidInput,
    InvalidTransition,
    Refused,
    StoreError,
)
from corral.foundation.logs import event
from corral.foundation.policies import WorktreePolicy
from corral.git.pr_checks import (
    capture,
    failure_log,
    failure_note,
    look_checks,
    split_command,
)
from corral.model.events import EventFilter
from corral.model.reviews import PullRequestState, Review
from corral.model.states import TaskStatus
from corral.model.tasks import Task, TaskFilter
from corral.model.verify_retries import CHECKS_EVENTS, CHECKS_PREFIX, checks_sent, checks_spent
from corral.model.waiting import WaitKind
from corral.model.waiting import reason as waiting_reason
from corral.store import Store
from corral.usecases import reviews

# A forge's CLI that has not answered in this long is stuck (a network that hangs).
OUTPUT_TAIL_CHARS = 500
_STATES = {state.name: state for state in PullRequestState}  # as `gh` spells them: OPEN ...
SENT_BACK, WAITING = "sent_back", "waiting"  # what a pass did with a failed check


@dataclass(frozen=True, slots=True, kw_only=True)
class Looked:
    """What the forge says of one pull request."""

    state: PullRequestState
    merged_commit: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SettleReport:
    """The tasks one pass found merged and closed, and those whose checks failed: sent
    back to their agents, or waiting for a person."""

    merged: tuple[str, ...] = ()
    closed: tuple[str, ...] = ()
    checks_failed: tuple[str, ...] = ()
    checks_waiting: tuple[str, ...] = ()


class Submitted(NamedTuple):
    """The pull request a run's branch is in, and how: opened, updated or reopened."""

    url: str
    how: str
    reopen_refused: str | None = None  # why the forge would not reopen the closed one


def render(argv: tuple[str, ...], values: dict[str, str]) -> list[str]:
    """`argv` with each argument that is exactly `{name}` replaced by `values[name]`."""
    return [
        values.get(arg[1:-1], arg) if arg.startswith("{") and arg.endswith("}") else arg
        for arg in argv
    ]


class PullRequests:
    """The forge's CLI, as `[worktree] pr_command` and `pr_view_command` say."""

    def __init__(self, policy: WorktreePolicy) -> None:
        self._create = _split("worktree.pr_command", policy.pr_command)
        self._view = _split("worktree.pr_view_command", policy.pr_view_command)
        reopen = policy.pr_reopen_command
        self._reopen = _split("worktree.pr_reopen_command", reopen) if reopen.strip() else None
        self.checks = split_command("worktree.pr_checks_command", policy.pr_checks_command)
        self.check_log = split_command("worktree.pr_check_log_command", policy.pr_check_log_command)

    def for_run(
        self, task: Task, review: Review, *, branch: str, base: str, cwd: str, env: dict[str, str]
    ) -> Submitted:
        """The pull request of a run whose branch was just pushed: the task's own when it is
        open (the push updated it) or could be reopened, else a new one. CorralError when
        the forge's CLI fails (a look, a create)."""
        url = review.pr_url
        if url and review.pr_state != PullRequestState.MERGED:
            state = self.look(url, cwd).state
            if state is PullRequestState.OPEN:
                return Submitted(url, "updated")
            if state is PullRequestState.CLOSED and self._reopen is not None:
                try:
                    _run(render(self._reopen, {"url": url}), cwd, env)
                except CorralError as exc:  # the forge will not (its branch was recreated)
                    new = self.open(task, branch=branch, base=base, cwd=cwd, env=env)
                    return Submitted(new, "opened", reopen_refused=exc.message)
                return Submitted(url, "reopened")
        return Submitted(self.open(task, branch=branch, base=base, cwd=cwd, env=env), "opened")

    def open(self, task: Task, *, branch: str, base: str, cwd: str, env: dict[str, str]) -> str:
        """Open the pull request of `branch` onto `base`; its URL (the last line printed
        that is one). CorralError, with the output's tail, when there is none."""
        body = "\n\n".join(part for part in (task.description, f"corral task {task.id}") if part)
        with tempfile.TemporaryDirectory(prefix="corral-pr-") as folder:
            body_file = os.path.join(folder, "body.md")
            with open(body_file, "w", encoding="utf-8") as handle:
                handle.write(body + "\n")
            values = {
                "base": base,
                "branch": branch,
                "title": task.title,
                "body_file": body_file,
                "task": task.id,
            }
            out = _run(render(self._create, values), cwd, env)
        urls = [ln.strip() for ln in out.splitlines() if ln.strip().startswith("http")]
        if not urls:
            raise CorralError(f"{self._create[0]} printed no pull request URL: {_tail(out)}")
        return urls[-1]

    def look(self, url: str, cwd: str) -> Looked:
        """Where the pull request at `url` stands."""
        out = _run(render(self._view, {"url": url}), cwd, dict(os.environ))
        try:
            data: Any = json.loads(out)
            state = _STATES[str(data["state"]).upper()]
        except (ValueError, KeyError, TypeError):
            raise CorralError(
                f"{self._view[0]} answered no state for {url}: {_tail(out)}"
            ) from None
        merge = data.get("mergeCommit") or {}
        commit = merge.get("oid") if isinstance(merge, dict) else None
        if state is PullRequestState.MERGED and not commit:
            raise CorralError(f"{self._view[0]} says {url} is merged, but not at which commit")
        return Looked(state=state, merged_commit=commit)


def settle(
    store: Store, policy: WorktreePolicy, *, cwd: str, log: logging.Logger
) -> SettleReport | None:
    """One pass over the tasks whose pull request is open (None: `land` is not `pr`)."""
    if policy.land != "pr":
        return None
    prs = PullRequests(policy)
    tasks = store.tasks.list_tasks(TaskFilter(statuses=(TaskStatus.IN_REVIEW, TaskStatus.APPROVED)))
    found = store.reviews.reviews_of([t.id for t in tasks])
    merged: list[str] = []
    closed: list[str] = []
    checks_failed: list[str] = []  # sent back to their agents
    waiting: list[str] = []  # their checks failed past the verify retries
    for task_id, review in found.items():
        if not review.pr_url or review.pr_state not in (None, PullRequestState.OPEN):
            continue
        try:
            looked = prs.look(review.pr_url, cwd)
        except StoreError:
            raise
        except CorralError as exc:
            event(log, "task.pr_look_failed", logging.WARNING, task_id=task_id, error=exc.message)
            continue
        if looked.state is PullRequestState.OPEN:
            sent = _checks(store, prs, policy, task_id, review.pr_url, cwd=cwd, log=log)
            if sent is not None:
                (waiting if sent == WAITING else checks_failed).append(task_id)
            continue
        try:
            reviews.settle_pull_request(
                store, task_id, pr_url=review.pr_url, merged_commit=looked.merged_commit
            )
        except (Refused, InvalidTransition):  # settled meanwhile (another pass, a person)
            continue
        (merged if looked.merged_commit else closed).append(task_id)
        event(log, "task.pr_settled", task_id=task_id, url=review.pr_url, state=looked.state)
    return SettleReport(
        merged=tuple(merged),
        closed=tuple(closed),
        checks_failed=tuple(checks_failed),
        checks_waiting=tuple(waiting),
    )


def _checks(
    store: Store,
    prs: PullRequests,
    policy: WorktreePolicy,
    task_id: str,
    url: str,
    *,
    cwd: str,
    log: logging.Logger,
) -> str | None:
    """The checks of task `task_id`'s open pull request at `url`: when they failed, and
    were not acted on already, the task sent back to its agent (SENT_BACK) or, past its
    verify retries, waiting for a person (WAITING); else None (passed, pending, none, a
    look that failed: logged, or another pass acted first)."""
    if not prs.checks:
        return None
    try:
        looked = look_checks(prs.checks, url, cwd)
    except StoreError:
        raise
    except CorralError as exc:
        event(log, "task.pr_checks_look_failed", logging.WARNING, task_id=task_id,
              error=exc.message)  # fmt: skip
        return None
    if looked.status != "failed":
        return None
    flt = EventFilter(task_id=task_id, names=CHECKS_EVENTS, limit=policy.verify_retries + 50)
    events = sorted(store.events.list_events(flt), key=lambda e: e.id, reverse=True)
    keys = sorted(c.key for c in looked.failed)
    if frozenset(keys) == checks_sent(events):
        return None  # acted on already: the push's own checks have not started yet
    logs = {c.key: text for c in looked.failed if (text := failure_log(prs.check_log, c, cwd))}
    note, used = failure_note(looked.failed, logs), checks_spent(events)
    data = {"pr_url": url, "checks": keys, "retry": used + 1, "of": policy.verify_retries}
    try:
        if used < policy.verify_retries:
            reviews.checks_failed(store, task_id, pr_url=url, note=note, data=data)
            outcome = SENT_BACK
        else:
            names = ", ".join(c.name for c in looked.failed)
            why = f"{CHECKS_PREFIX} ({names}) after {used} retries\n{note}"
            reason = waiting_reason(WaitKind.VERIFY, why)
            reviews.checks_wait(store, task_id, pr_url=url, reason=reason, data=data)
            outcome = WAITING
    except (Refused, InvalidTransition):  # another pass, or a person, acted first
        return None
    event(log, "task.pr_checks_failed", task_id=task_id, url=url, outcome=outcome,
          checks=",".join(c.name for c in looked.failed))  # fmt: skip
    return outcome


def _split(key: str, line: str) -> tuple[str, ...]:
    try:
        argv = tuple(shlex.split(line))
    except ValueError:
        raise InvalidInput(key, "a command line with balanced quotes", line) from None
    if not argv:
        raise InvalidInput(key, "a command to run, since worktree.land is pr", line)
    return argv


def _run(argv: list[str], cwd: str, env: dict[str, str]) -> str:
    """The command's stdout; CorralError with its output's tail when it fails."""
    code, out, err = capture(argv, cwd, {**env, "GIT_TERMINAL_PROMPT": "0"})
    if code != 0:
        raise CorralError(f"{argv[0]} exited with status {code}: {_tail(err or out)}")
    return out


def _tail(text: str) -> str:
    return text.strip()[-OUTPUT_TAIL_CHARS:] or "(no output)"
