"""Prompt rendering: task fields into a template, nothing ever read by a shell."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from corral.foundation.errors import InvalidInput
from corral.model.states import TaskStatus
from corral.model.tasks import Task
from corral.runtime.worker.agent_runs import continuation_prompt
from corral.runtime.worker.prompts import DEFAULT_TEMPLATE, load_template, render_prompt

NOW = datetime(2030, 1, 1, tzinfo=UTC)


def _task(**fields: object) -> Task:
    base: dict[str, object] = {
        "id": "t-1",
        "title": "Fix the login bug",
        "description": "It 500s.",
        "queue": "default",
        "kind": "code",
        "priority": 5,
        "status": TaskStatus.RUNNING,
        "payload": {},
        "labels": {},
        "depends_on": (),
        "assignee": None,
        "parent_id": None,
        "attempts": 2,
        "max_attempts": 3,
        "crashes": 0,
        "retry_base_s": 10.0,
        "timeout_s": None,
        "run_after": NOW,
        "requires_review": False,
        "branch": None,
        "result": None,
        "last_error": None,
        "failure_reason": None,
        "worker_id": "w-1",
        "token": 7,
        "lease_expires_at": NOW,
        "created_at": NOW,
        "updated_at": NOW,
        "finished_at": None,
    }
    base.update(fields)
    return Task(**base)  # type: ignore[arg-type]


def test_task_fields_and_payload_fields_fill_the_template() -> None:
    """${title}, ${attempt} and any top-level payload field by name are substituted."""
    task = _task(payload={"repo": "web", "ticket": 42})
    assert "web #42: Fix the login bug (attempt 2)" == render_prompt(
        task, "${repo} #${ticket}: ${title} (attempt ${attempt})"
    )


def test_lists_render_as_numbered_lines_and_objects_as_json() -> None:
    """Payload steps become `1. ...` lines; nested objects are JSON."""
    task = _task(payload={"steps": ["reproduce", "fix"], "limits": {"files": 3}})
    assert '1. reproduce\n2. fix | {"files": 3}' == render_prompt(task, "${steps} | ${limits}")


def test_seed_fields_have_defaults_and_unknown_placeholders_stay() -> None:
    """instructions/deliverables/steps default when absent; ${nope} is left as written."""
    rendered = render_prompt(_task(), "${instructions} / ${steps} / ${nope}")
    assert "Complete the task as described above. / (no specific steps) / ${nope}" == rendered


def test_the_default_template_names_the_task_and_how_to_finish() -> None:
    """The built-in prompt carries id, title, description and the completion contract."""
    rendered = render_prompt(_task(payload={"instructions": "Add a test first."}), DEFAULT_TEMPLATE)
    for expected in (
        "Task ID: t-1",
        "Title: Fix the login bug",
        "It 500s.",
        "Add a test first.",
        "corral done t-1",
        "status 75",
    ):
        assert expected in rendered


def test_shell_syntax_in_task_fields_is_plain_text() -> None:
    """A title full of shell syntax is copied verbatim into the prompt, not expanded."""
    title = "$(rm -rf /); `id` && echo ${HOME}"
    assert title == render_prompt(_task(title=title), "${title}")


def test_an_unreadable_template_is_invalid_input_naming_the_file(tmp_path: Path) -> None:
    """A missing template file is a one-line error naming the field and the path."""
    with pytest.raises(
        InvalidInput, match=r"^prompt_template: expected a readable UTF-8 text file"
    ):
        load_template(str(tmp_path / "missing.md"))


def test_a_persons_answer_follows_the_prompt_with_the_reason_it_answered() -> None:
    """After `corral answer`, the prompt ends with why the task waited and the answer."""
    task = _task(answered_reason="refused: Bash", answer="You may run the tests with Bash.")
    assert (
        "Fix the login bug\n\nYou stopped earlier and waited for a person (refused: Bash).\n"
        "A person answered: You may run the tests with Bash.\n"
    ) == render_prompt(task, "${title}\n")


def test_an_answer_without_text_says_to_carry_on() -> None:
    """An answer with no text still tells the run why it had waited, and to go on."""
    rendered = render_prompt(_task(answered_reason="no_change: nothing to commit"), "${title}")
    assert rendered.endswith(
        "(no_change: nothing to commit).\nA person sent the task back without an answer: "
        "carry on.\n"
    )


def test_no_answer_leaves_the_prompt_as_the_template_renders_it() -> None:
    """A task no person answered gets its template alone."""
    assert "Fix the login bug" == render_prompt(_task(), "${title}")


def test_a_resumed_session_is_told_the_answer_instead_of_to_carry_on() -> None:
    """The short prompt of a resumed agent session carries the answer and the reason."""

    task = _task(answered_reason="question: which database?", answer="staging")
    told = continuation_prompt(task, None)
    assert (
        "About task t-1 (Fix the login bug):\nYou stopped earlier and waited for a person "
        "(question: which database?).\nA person answered: staging\n"
        "Continue, then finish as before."
    ) == told
    assert "A person answered: staging" in continuation_prompt(task, "add a test")


def test_a_resumed_session_is_told_its_pull_requests_failing_checks() -> None:
    """A changes note of failed checks (git/pr_checks.py) is told as what the checks
    reported, not as a reviewer's request."""
    note = "pull request checks failed:\n- test: FAILURE https://ci/1\n\nassert 3 == 2"
    assert (
        "About task t-1 (Fix the login bug), its pull request checks failed:\n"
        "- test: FAILURE https://ci/1\n\nassert 3 == 2\n\nFix what they report, then finish "
        "as before."
    ) == continuation_prompt(_task(), note)
