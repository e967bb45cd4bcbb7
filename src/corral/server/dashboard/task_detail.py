"""The task page: one task's fields, dependencies and children, timeline, runs (the chosen
one's artifacts), transcript and review.

GET  /tasks/{id}?run=RUN&before=OFFSET   the page; `run` picks the transcript (default:
                                         the newest run), `before` an earlier window of it;
                                         `part=transcript`: the transcript alone (no git)
POST /tasks/{id}/retry | cancel          corral retry / cancel
POST /tasks/{id}/answer                  corral answer, with the form's `answer`
POST /tasks/{id}/approve                 corral approve (pins the branch's head)
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

from corral import reviews, tasks, usage
from corral.errors import CorralError, NotFound
from corral.model.reviews import MergeStrategy
from corral.model.runs import Run
from corral.model.subtasks import MAX_CHILDREN
from corral.model.tasks import TaskFilter
from corral.reviews import Branches
from corral.server.context import settings_of, store_of
from corral.server.dashboard import transcripts
from corral.server.dashboard.forms import Form, one
from corral.server.dashboard.guards import routes
from corral.server.dashboard.pages import redirect, render
from corral.server.dashboard.visitors import Visitor
from corral.server.paths import path_id
from corral.server.run_output import output_path
from corral.store import Store

TIMELINE = 200  # the newest events of the task shown
RUNS = 50
MAX_DIFF_CHARS = 400_000


def task_page(request: Request, visitor: Visitor) -> Response:
    """The task page."""
    store = store_of(request)
    task = store.get_task(path_id(request, "task_id", "task"))
    runs = store.list_runs(task_id=task.id, limit=RUNS)
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
    return render(
        request,
        visitor,
        "task.html",
        live=f"/live?limit=0&task={task.id}",
        task=task,
        blocked_by=store.dependency_statuses(task.id),
        blocking=store.task_dependents(task.id),
        children=store.list_tasks(TaskFilter(parent_id=task.id, limit=MAX_CHILDREN)),
        events=store.task_timeline(task.id, TIMELINE),
        runs=runs,
        totals=usage.task_totals(store, task.id),
        run=chosen,
        artifacts=store.run_artifacts(chosen.id) if chosen is not None else [],
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
        shown = reviews.show(store_of(request), task_id, _branches(request), full_diff=True)
    except CorralError as exc:
        return {"problem": exc.message}
    diff = shown.diff or ""
    return {
        "problem": None,
        "review": shown.review,
        "stat": shown.diff_stat,
        "diff": diff[:MAX_DIFF_CHARS],
        "cut": len(diff) > MAX_DIFF_CHARS,
    }


def _branches(request: Request) -> Callable[[], Branches]:
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
    """corral answer: a waiting task back to ready, its next run told the form's answer."""
    task = tasks.answer(store_of(request), path_id(request, "task_id", "task"), one(form, "answer"))
    request.app.state.work_signal.notify()
    return redirect(request, _back(task.id), "Answered: the task is ready again.")


def approve(request: Request, visitor: Visitor, form: Form) -> Response:
    """corral approve, at the branch's head."""
    task_id = path_id(request, "task_id", "task")
    note = one(form, "note").strip() or None
    require_rebase = settings_of(request).review_require_rebase
    reviews.approve(
        store_of(request),
        task_id,
        branches=_branches(request),
        note=note,
        require_rebase=require_rebase,
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
        store_of(request), task_id, branches=_branches(request), strategy=strategy
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
