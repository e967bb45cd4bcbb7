"""A command task run as an agent (`--agent`): its session resumed, its stream watched.

Before the run (`resume_of`): a task that comes back to a worker (after a crash, a
timeout, a lost lease, a deferral, a usage limit or `request-changes`) resumes the
session its agent's last run recorded, when the profile can resume, the user did not
turn it off (`[agents] resume = false`, or a task payload's `"resume": false`), the
last run was of the same profile, and this run works in the same folder (an agent's
sessions belong to a folder: a kept worktree is one). The prompt is then short: a
person's answer to why it waited (`corral answer`), the reviewer's note, or "you were
interrupted; continue".

While it runs (`StreamWatch.poll`, called at every poll of the command's watch): the
transcript the agent writes is read as it grows (agent_streams.py). The session id is
recorded the moment the stream names it, so a crash of the runner itself leaves it for
the next run; a question flags the run `waiting` (event `run.waiting`); a usage limit
parks the provider account at once (every worker of it, on every host, stops claiming in
its next claim), and ends the run.

At its end (`StreamWatch.finish`): the usage, the agent's own verdict (a stream that says
it failed fails the run whatever the exit status), and a limit seen in the stream or in
the profile's exit signature, which defers the task until the reset without counting an
attempt. A run that otherwise succeeded but was refused tools (claude's
permission_denials) or asked a question waits for a person (`wait_reason`): exit 0 is
not success when the agent could not do what it was asked.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from corral.errors import CorralError
from corral.logs import event
from corral.model.agents import AgentProfile
from corral.model.providers import park_until
from corral.model.tasks import Task
from corral.model.waiting import WaitKind
from corral.model.waiting import reason as wait_text
from corral.printable import visible
from corral.runtime.worker.agent_streams import Limit, StreamFacts, StreamReader
from corral.runtime.worker.config import Workplace
from corral.runtime.worker.prompts import answer_note
from corral.store import Store

LIMIT_STOP = "usage_limit"  # the stop reason of a run ended by its provider's usage limit
MAX_REASON_CHARS = 300


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentSetup:
    """How a runner's agent runs: its profile and what the worker adds to it."""

    profile: AgentProfile
    model: str | None = None
    extra_args: tuple[str, ...] = ()
    provider: str | None = None  # the provider account it spends (parked at its limit)
    resume: bool = True  # [agents] resume
    park_s: float = 3600.0  # [agents] park_default: a limit with no reset time parks this long
    park_min_s: float = 60.0  # [agents] park_min: every park lasts at least this long


@dataclass(frozen=True, slots=True, kw_only=True)
class Resume:
    """The earlier run whose agent session a new run continues."""

    run_id: str
    session_id: str


def resume_of(store: Store, agent: AgentSetup, task: Task, cwd: str) -> Resume | None:
    """The session a new run of `task` in `cwd` resumes, or None: start afresh."""
    if not (agent.resume and agent.profile.can_resume) or task.payload.get("resume") is False:
        return None
    last = store.last_session(task.id)
    if last is None:
        return None
    run_id, session_id, profile, last_cwd = last
    if profile != agent.profile.name or os.path.realpath(last_cwd) != os.path.realpath(cwd):
        return None
    return Resume(run_id=run_id, session_id=session_id)


def continuation_prompt(task: Task, changes_note: str | None) -> str:
    """What a resumed session is told: a person's answer to why it waited, the reviewer's
    note, or to carry on."""
    answered = answer_note(task)
    if changes_note:
        return (
            f"The reviewer asked for changes to task {task.id} ({task.title}):\n"
            f"{changes_note}\n\n{answered}Make them, then finish as before."
        )
    if answered:
        return f"About task {task.id} ({task.title}):\n{answered}Continue, then finish as before."
    return (
        f"You were interrupted before you finished task {task.id} ({task.title}). "
        "Continue where you left off, then finish as before."
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """What the watch concluded when the run ended."""

    facts: StreamFacts
    limit_until: datetime | None  # the task is deferred until then (a usage limit)
    limit_reason: str | None
    stop_reason: str


class StreamWatch:
    """One agent run's transcript, read as it grows and once more at its end."""

    def __init__(
        self,
        place: Workplace,
        agent: AgentSetup,
        *,
        run_id: str,
        task_id: str,
        transcript_path: str,
    ) -> None:
        self._place, self._agent, self._run, self._task = place, agent, run_id, task_id
        self._reader = StreamReader(agent.profile.output, transcript_path, clock=place.clock)
        self._session_noted = self._waiting_noted = False
        self._park: tuple[datetime, str] | None = None
        self._parked = False  # the store has the park

    def poll(self) -> str | None:
        """Read what the agent wrote since the last poll; LIMIT_STOP once it hit a limit."""
        facts = self._reader.poll()
        self._note(facts)
        if facts.limit is not None:
            self._park_provider(facts.limit)
            return LIMIT_STOP
        return None

    def finish(self, *, exit_code: int | None, stderr_tail: str, ending: str) -> Verdict:
        """Read the rest; the usage, the limit (stream or exit signature), the stop reason."""
        facts = self._reader.finish()
        self._note(facts)
        limit = facts.limit
        if limit is None and exit_code not in (0, None):
            limit = _limit_signature(self._agent.profile, f"{facts.error or ''}\n{stderr_tail}")
        until: datetime | None = None
        reason: str | None = None
        if limit is not None:
            until, reason = self._park_provider(limit)
            stop = LIMIT_STOP
        else:
            stop = _stop_reason(facts, exit_code, ending)
        self._record(stop_reason=stop)
        return Verdict(facts=facts, limit_until=until, limit_reason=reason, stop_reason=stop)

    def _note(self, facts: StreamFacts) -> None:
        """Record what the stream newly said: its session, a question."""
        if facts.session_id is not None and not self._session_noted:
            self._session_noted = self._record(session_id=facts.session_id)
        if facts.waiting is not None and not self._waiting_noted:
            self._waiting_noted = self._store_call(
                lambda: self._place.store.mark_waiting(self._run, _short(facts.waiting or ""))
            )

    def _record(self, **fields: str) -> bool:
        return self._store_call(lambda: self._place.store.record_agent_run(self._run, **fields))

    def _store_call(self, call: Callable[[], object]) -> bool:
        """Make a small write; a store that cannot be reached now is tried at the next poll
        (what the run does is unaffected)."""
        try:
            call()
        except CorralError as exc:
            event(self._place.log, "run.note_failed", logging.WARNING, run_id=self._run,
                  error=exc.message)  # fmt: skip
            return False
        return True

    def _park_provider(self, limit: Limit) -> tuple[datetime, str]:
        """Park the provider account until the reset; (until, why). Decided once a run;
        recorded again at each later poll (and at the end) while the store refused it."""
        if self._park is None:
            self._park = self._decide_park(limit)
        until, reason = self._park
        place, provider = self._place, self._agent.provider
        if provider is not None and not self._parked:
            self._parked = self._store_call(
                lambda: place.store.park_provider(
                    provider, until=until, reason=reason, actor=place.worker_id, task_id=self._task
                )
            )
        return self._park

    def _decide_park(self, limit: Limit) -> tuple[datetime, str]:
        """Until when, and why: the reset the stream gave, else `[agents] park_default`;
        at least `[agents] park_min` from now (model/providers.py park_until)."""
        agent = self._agent
        reset = None if limit.reset_at is None else datetime.fromtimestamp(limit.reset_at, UTC)
        until, least = park_until(
            reset,
            self._place.clock.now(),  # no store round trip
            default_s=agent.park_s,
            min_s=agent.park_min_s,
        )
        if least:
            reason = _short(f"{limit.message} (parked the minimum, {agent.park_min_s:g} s)")
        elif reset is None:
            reason = _short(f"{limit.message} (no reset time given: parked {agent.park_s:g} s)")
        else:
            reason = _short(limit.message)
        event(self._place.log, "run.usage_limit", run_id=self._run,
              provider=self._agent.provider, until=until.isoformat(), reason=reason)  # fmt: skip
        return until, reason


def _limit_signature(profile: AgentProfile, text: str) -> Limit | None:
    """A usage limit the agent's exit text shows (the profile's limit_patterns), if any."""
    for pattern in profile.limit_patterns:
        found = re.search(pattern, text)
        if found is None:
            continue
        reset = found.groupdict().get("reset")
        message = f"{profile.name}: {visible(found.group(0))}"
        return Limit(reset_at=float(reset) if reset else None, message=_short(message))
    return None


def wait_reason(facts: StreamFacts) -> str | None:
    """Why a run that otherwise succeeded waits for a person: the tools it was refused
    (distinct, in order), else the question it asked; None: it did not."""
    if facts.denied:
        return _short(wait_text(WaitKind.REFUSED, ", ".join(facts.denied)))
    return facts.waiting


def _stop_reason(facts: StreamFacts, exit_code: int | None, ending: str) -> str:
    """Why the agent stopped, in a word or a short line."""
    if ending != "exited":
        return ending  # timeout, stalled, stopped
    if facts.error is not None:
        return _short(f"error: {facts.error}")
    if exit_code == 0:
        return wait_reason(facts) or "success"
    return f"exited with status {exit_code}"


def _short(text: str) -> str:
    """`text` as one printable line a record and an event can hold."""
    line = " ".join(visible(text).split())
    return line if len(line) <= MAX_REASON_CHARS else line[: MAX_REASON_CHARS - 1] + "…"
