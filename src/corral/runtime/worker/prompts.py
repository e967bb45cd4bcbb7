"""A task's prompt: a template file rendered from the task's fields.

Templates use `${name}` placeholders (string.Template): `id`, `title`, `description`,
`kind`, `queue`, `priority`, `attempt`, `payload` (the whole payload as JSON), and every
top-level payload field by its name. Lists render as numbered lines, objects as JSON.
The fields seed prompts use (`instructions`, `deliverables`, `steps`) have defaults, so
a template may name them for any task; other unknown placeholders are left as written.
Nothing here is ever interpreted by a shell: the prompt goes to stdin or one argv item.

A task a person answered (`corral answer`, after it waited: model/waiting.py) has the
answer, and why it had waited, added after the rendered template (`answer_note`), in
every run until it waits again; a resumed agent session is told it in its short prompt
(agent_runs.continuation_prompt).
"""

from __future__ import annotations

import json
import os
import stat
from string import Template
from typing import Any

from corral.foundation.errors import InvalidInput
from corral.model.tasks import Task

# A template is a page or two of text; a larger file is a mistake (or `/dev/zero`).
MAX_TEMPLATE_BYTES = 1024 * 1024
DEFAULT_TEMPLATE = """\
You are a worker agent assigned one task.

Task ID: ${id}
Title: ${title}
Attempt: ${attempt}

Description:
${description}

Instructions:
${instructions}

Deliverables:
${deliverables}

Steps:
${steps}

When you have finished, exit with status 0 (or run `corral done ${id}` yourself).
To give up, exit with a non-zero status; to step aside for now, run
`corral defer ${id} --until 30m` or exit with status 75.
"""

_DEFAULTS = {
    "instructions": "Complete the task as described above.",
    "deliverables": "A short summary of what was done.",
    "steps": "(no specific steps)",
}


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(f"{n}. {_text(item)}" for n, item in enumerate(value, 1))
    return json.dumps(value)


def answer_note(task: Task) -> str:
    """What a person answered when the task last waited, and why it had waited; '' when no
    person has answered it since."""
    if task.answered_reason is None:
        return ""
    stopped = f"You stopped earlier and waited for a person ({task.answered_reason}).\n"
    if task.answer is None:
        return stopped + "A person sent the task back without an answer: carry on.\n"
    return stopped + f"A person answered: {task.answer}\n"


def render_prompt(task: Task, template: str = DEFAULT_TEMPLATE) -> str:
    """The prompt for `task`, then the answer to its last wait, if a person gave one;
    placeholders that name nothing stay as written."""
    fields: dict[str, str] = dict(_DEFAULTS)
    fields.update({k: _text(v) for k, v in task.payload.items() if isinstance(k, str)})
    fields.update(
        id=task.id,
        title=task.title,
        description=task.description or "(none)",
        kind=task.kind,
        queue=task.queue,
        priority=str(task.priority),
        attempt=str(task.attempts),
        payload=json.dumps(task.payload, indent=2),
    )
    prompt = Template(template).safe_substitute(fields)
    note = answer_note(task)
    return f"{prompt.rstrip(chr(10))}\n\n{note}" if note else prompt


def load_template(path: str) -> str:
    """The template in `path`, or InvalidInput naming the file. A regular file of at most
    MAX_TEMPLATE_BYTES only: `/dev/zero` would be read without end, and a FIFO would block
    the start for ever (it is opened without waiting for a writer, then refused)."""
    expected = f"a readable UTF-8 text file of at most {MAX_TEMPLATE_BYTES // 1024} KiB"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise InvalidInput("prompt_template", expected, f"{path}: {exc.strerror}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InvalidInput("prompt_template", expected, f"{path}: not a regular file")
        data = os.read(fd, MAX_TEMPLATE_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_TEMPLATE_BYTES:
        raise InvalidInput("prompt_template", expected, f"{path}: larger")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput("prompt_template", expected, f"{path}: not UTF-8") from None
