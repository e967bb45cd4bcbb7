"""The task page: one task's fields, dependencies and children, timeline, runs (the chosen
one's artifacts), transcript and review.

GET  /tasks/{id}?run=RUN&before=OFFSET   the page; `run` picks the transcript (default:
                                         the newest run), `before` an earlier window of it;
                                         `part=transcript`: the transcript alone (no git)
POST /tasks/{id}/retry | cancel          corral retry / cancel
POST /tasks/{id}/answer                  corral answer, with the form's `answer`
POST /tasks/{id}/approve                 corral approve --commit, the head the page showed
POST /tasks/{id}/request-changes         corral request-changes, with the form's `note`
POST /tasks/{id}/merge                   corral merge, with `worktree.merge_strategy`

Git is the repository `corral serve` runs in (as `corral review` without `--repo`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from corral.foundation.errors import CorralError, InvalidInput, NotFound
from corral.model import waiting
from corral.model.budgets import parse_raise
from corral.model.reviews import MergeStrategy
from corral.model.runs import Run
from corral.model.subtasks import MAX_CHILDREN
from corral.model.tasks import TaskFilter
from corral.server.context import settings_of, store_of
from corral.server.dashboard import event_names, transcripts
from corral.server.dashboard.forms import Form, one
from corral.server.dashboard.guards import routes
from corral.server.dashboard.pages import redirect, render
from corral.server.dashboard.visitors import Visitor
from corral.server.paths import path_id
from corral.server.run_output import output_path
from corral.store import Store
from corral.usecases import reviews, tasks, usage
from corral.usecases.reviews import Branches

TIMELINE = 200  # the newest events of the task shown
RUNS = 50
MAX_DIFF_CHARS = 400_000


def task_page(request: Request, visitor: Visitor) -> Response:
    """The task page."""
    store = store_of(request)
    task = store.tasks.get_task(path_id(request, "task_id", "task"))
    runs = store.runs.list_runs(task_id=task.id, limit=RUNS)
    chosen = _chosen_run(runs, request.query_params.get("run"))
    window = _window(store, chosen, request.query_params.get("before"))
    if request.query_params.get("part") == "transcript":  # a live refresh of it alone
        return render(
            request,
            visitor,
            "transcript.html",
            task=task,
            run=chosen,
            window=window,
            request_before=request.query_params.get("before"),
        )
    events = store.task_pages.task_timeline(task.id, TIMELINE)
    return render(
        request,
        visitor,
        "task.html",
        live=f"/live?limit=0&task={task.id}",
        task=task,
        blocked_by=store.tasks.dependency_statuses(task.id),
        blocking=store.task_pages.task_dependents(task.id),
        children=store.tasks.list_tasks(TaskFilter(parent_id=task.id, limit=MAX_CHILDREN)),
        events=events,
        actors=event_names.actor_names(store, events),
        runs=runs,
        totals=usage.task_totals(store, task.id),
        run=chosen,
        artifacts=store.artifacts.run_artifacts(chosen.id) if chosen is not None else [],
        window=window,
        review=_review(request, task.id) if task.branch else None,
        review_states=reviews.PENDING,
        request_before=request.query_params.get("before"),
    )


def _chosen_run(runs: list[Run], wanted: str | None) -> Run | None:
    if wanted is None:
        return runs[0] if runs else None
    for run in runs:
        if run.id == wanted:
            return run
    raise NotFound("run of this task", wanted[:40])


def _window(store: Store, run: Run | None, before: str | None) -> transcripts.Window | None:
    """The transcript window of `run`, or None when it has none the server can read."""
    if run is None:
        return None
    try:
        path = output_path(store, run.id, "transcript")
        offset = int(before) if before is not None and before.isdigit() else None
        return transcripts.read_window(path, offset)
    except (NotFound, FileNotFoundError):
        return None


def _review(request: Request, task_id: str) -> dict[str, Any]:
    """The review and the diff of the task's branch; git's refusal as a line to show."""
    try:
        shown = reviews.show(store_of(request), task_id, branches_of(request), full_diff=True)
    except CorralError as exc:
        return {"problem": exc.message, "head": None}
    diff = shown.diff  # None: no base to compare with yet (a task still running)
    return {
        "problem": None,
        "review": shown.review,
        "head": shown.head,
        "stat": shown.diff_stat,
        "diff": None if diff is None else diff[:MAX_DIFF_CHARS],
        "cut": diff is not None and len(diff) > MAX_DIFF_CHARS,
    }


def branches_of(request: Request) -> Callable[[], Branches]:
    """The repository `corral serve` runs in, opened when a use case first needs git."""
    settings = settings_of(request)

    def opened() -> Branches:
        from corral.git import merging, worktrees  # noqa: PLC0415 - only a branch needs git

        return merging.GitBranches(worktrees.Worktrees.open(os.getcwd(), settings.worktree))

    return opened


def _back(task_id: str) -> str:
    return f"/tasks/{task_id}"


def retry(request: Request, visitor: Visitor, form: Form) -> Response:
    """corral retry."""
    task = tasks.retry(store_of(request), path_id(request, "task_id", "task"))
    request.app.state.work_signal.notify()
    return redirect(request, _back(task.id), "Retried: the task is ready again.")


def cancel(request: Request, visitor: Visitor, form: Form) -> Response:
    """corral cancel."""
    task = tasks.cancel(store_of(request), path_id(request, "task_id", "task"))
    return redirect(request, _back(task.id), "Cancelled.")


def answer(request: Request, visitor: Visitor, form: Form) -> Response:
    """corral answer: a waiting task back to ready, its next run told the form's answer
    (and its budget raised by the form's `budget`, when given)."""
    raised = one(form, "budget").strip()  # a wait at a budget: `+1.50`, `+500k`
    text = one(form, "answer")
    decision = one(form, "decision")  # a permission's Allow or Deny (the answer: why not)
    if decision:
        text = waiting.permission_answer(_allowed(decision), text)
    task = tasks.answer(
        store_of(request),
        path_id(request, "task_id", "task"),
        text,
        budget=parse_raise("budget", raised) if raised else None,
    )
    request.app.state.work_signal.notify()
    return redirect(request, _back(task.id), "Answered: the task is ready again.")


def _allowed(decision: str) -> bool:
    """A permission form's decision: allow or deny; InvalidInput otherwise."""
    if decision not in (waiting.ALLOW, waiting.DENY):
        raise InvalidInput("decision", "allow or deny", decision)
    return decision == waiting.ALLOW


def approve(request: Request, visitor: Visitor, form: Form) -> Response:
    """corral approve, at the branch's head, if it is still the one the page showed."""
    task_id = path_id(request, "task_id", "task")
    note = one(form, "note").strip() or None
    require_rebase = settings_of(request).review_require_rebase
    reviews.approve(
        store_of(request),
        task_id,
        branches=branches_of(request),
        note=note,
        require_rebase=require_rebase,
        seen=one(form, "commit").strip() or None,  # the head the page showed
    )
    return redirect(request, _back(task_id), "Approved at the branch's head.")


def request_changes(request: Request, visitor: Visitor, form: Form) -> Response:
    """corral request-changes: back to ready on its branch, with the note."""
    task_id = path_id(request, "task_id", "task")
    reviews.request_changes(store_of(request), task_id, note=one(form, "note"))
    request.app.state.work_signal.notify()
    return redirect(request, _back(task_id), "Changes requested: the task is ready again.")


def merge(request: Request, visitor: Visitor, form: Form) -> Response:
    """corral merge, with the configured strategy."""
    task_id = path_id(request, "task_id", "task")
    strategy = MergeStrategy(settings_of(request).worktree.merge_strategy)
    result = reviews.merge(
        store_of(request), task_id, branches=branches_of(request), strategy=strategy
    )
    if result.conflicts:
        note = "Merge conflict in " + ", ".join(result.conflicts) + ": the task is ready again."
    else:
        note = f"Merged{f' as {result.merged_commit[:12]}' if result.merged_commit else ''}."
    return redirect(request, _back(task_id), note)


ROUTES = routes(
    "/tasks/{task_id}",
    task_page,
    {
        f"/tasks/{{task_id}}/{name}": action
        for name, action in (
            ("retry", retry),
            ("cancel", cancel),
            ("answer", answer),
            ("approve", approve),
            ("request-changes", request_changes),
            ("merge", merge),
        )
    },
)
