"""Seed 001's sessions: an agent session spawned for a prompt is a corral task for the pool.

A session is a task of kind `session` whose description is the prompt and whose payload
keeps what the spawn gave (`prompt`, `model`, `session`: the label, `channel`,
`thinking`), so a pool's prompt template can name any of them (`${prompt}`); a session a
slot spawned also keeps the slot (`slot`) and the claim it held then (`task`, `claim`: its
fencing token). Its id is its label when it was given one (the seed's loop finds its
session by the label it made) and its task id otherwise. It is `completed` once its task
finished well (done, or in review or approved when its queue requires review) and has an
`error` once it failed or was cancelled; while it retries after a failure it has neither.
"""

from __future__ import annotations

import re
from typing import Any

from corral.foundation import documents
from corral.foundation.durations import unix_ms
from corral.foundation.errors import InvalidInput
from corral.foundation.records import record
from corral.model.states import FINISHED_WELL, TaskStatus
from corral.model.tasks import NewTask, Task, check_name

KIND = "session"
# The seed's labels read `agent:main:worker-slot-1:<uuid>`; one shaped like a task id
# (`t-` and ten characters) would make a session id ambiguous, so it is refused.
LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9:._@/+-]{0,199}")
TASK_ID = re.compile(r"t-[0-9a-z]{10}")
MAX_SETTING_CHARS = 200


@record(frozen=True, slots=True, kw_only=True)
class NewSession:
    """What a spawn asks for; validated on construction."""

    prompt: str
    label: str | None = None
    model: str | None = None
    channel: str | None = None
    thinking: str | None = None
    queue: str = "default"
    timeout_s: float | None = None  # how long its run may take (the board's default: None)
    # Spawned by a slot (a worker token's name) while it held one claim: that claim's
    # token and task, so the slot's heartbeat shows this session as the claim's.
    slot: str | None = None
    claim: tuple[str, int] | None = None

    def __post_init__(self) -> None:
        if not self.prompt.strip():
            raise InvalidInput("prompt", "a non-empty prompt")
        documents.check_text("prompt", self.prompt)
        if self.label is not None and (
            not LABEL.fullmatch(self.label) or TASK_ID.fullmatch(self.label)
        ):
            raise InvalidInput(
                "sessionLabel",
                "1 to 200 letters, digits and : . _ @ / + -, not shaped like a task id",
                self.label,
            )
        for name in ("model", "channel", "thinking"):
            value = getattr(self, name)
            if value is not None and not (0 < len(value) <= MAX_SETTING_CHARS):
                raise InvalidInput(name, f"1 to {MAX_SETTING_CHARS} characters", value)
            if value is not None:
                documents.check_text(name, value)
        check_name("queue", self.queue)

    def task(self) -> NewTask:
        """The task that runs the session."""
        task, claim = self.claim if self.claim is not None else (None, None)
        given = {
            "prompt": self.prompt,
            "session": self.label,
            "model": self.model,
            "channel": self.channel,
            "thinking": self.thinking,
            "slot": self.slot,
            "task": task,
            "claim": claim,
        }
        return NewTask(
            title=f"session {self.label}" if self.label else "session",
            description=self.prompt,
            queue=self.queue,
            kind=KIND,
            payload={k: v for k, v in given.items() if v is not None},
            timeout_s=self.timeout_s,
        )


def session_id(task: Task) -> str:
    """The session's id: its label, or its task's id when it has none."""
    label = task.payload.get("session")
    return label if isinstance(label, str) else task.id


def error_of(task: Task) -> str | None:
    """Why the session ended without finishing, or None while it runs or once it finished."""
    if task.status is TaskStatus.FAILED:
        return task.last_error or "failed"
    if task.status is TaskStatus.CANCELLED:
        return "cancelled"
    return None


def session_view(task: Task) -> dict[str, Any]:
    """The session as seed 001's loop reads it (`id`, `completed`, `error`), and more."""
    payload = task.payload
    return {
        "id": session_id(task),
        "taskId": task.id,
        "label": payload.get("session"),
        "status": str(task.status),
        "completed": task.status in FINISHED_WELL,
        "error": error_of(task),
        "model": payload.get("model"),
        "channel": payload.get("channel"),
        "thinking": payload.get("thinking"),
        "queue": task.queue,
        "timeoutMs": None if task.timeout_s is None else round(task.timeout_s * 1000),
        "slot": payload.get("slot"),
        "task": payload.get("task"),
        "workerId": task.worker_id,
        "createdAt": unix_ms(task.created_at),
        "updatedAt": unix_ms(task.updated_at),
        "finishedAt": unix_ms(task.finished_at),
    }
