"""Review commands: submit, review list | show, approve, request-changes, merge."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from corral.cli import render
from corral.cli.commands import Arg, Command
from corral.cli.context import Context
from corral.foundation.durations import format_age
from corral.foundation.errors import InvalidInput
from corral.model.reviews import MergeStrategy
from corral.usecases import reviews

if TYPE_CHECKING:
    from corral.usecases.reviews import Branches, BranchesFactory, MergeResult


def branches_of(ctx: Context) -> BranchesFactory:
    """Git for the repository at `--repo` (default: here), opened only if a command needs it."""

    def open_branches() -> Branches:
        from corral.git import merging, worktrees  # a branch only needs git

        repo = getattr(ctx.args, "repo", None) or os.getcwd()
        return merging.GitBranches(worktrees.Worktrees.open(repo, ctx.settings.worktree))

    return open_branches


def strategy_of(ctx: Context) -> MergeStrategy:
    """`--strategy`, else `worktree.merge_strategy`."""
    raw = ctx.args.strategy or ctx.settings.worktree.merge_strategy
    try:
        return MergeStrategy(raw)
    except ValueError:
        raise InvalidInput("strategy", "one of ff, merge, squash", raw) from None


def cmd_submit(ctx: Context) -> int:
    """Hand a running task in for review."""
    a = ctx.args
    task = reviews.submit(ctx.store, a.id, token=ctx.token(), note=a.note, pr_url=a.pr_url)
    ctx.emit(task.to_dict(), f"{task.id} {task.status}")
    return 0


def cmd_review_list(ctx: Context) -> int:
    """Tasks waiting in review or approved, stale ones flagged."""
    items = reviews.pending(ctx.store, stale_after_s=ctx.settings.worktree.review_stale_after_s)
    rows = [
        (
            i.task.id,
            i.task.status,
            format_age(i.waiting_s) + (" STALE" if i.stale else ""),
            i.task.branch or "-",
            i.task.title,
        )
        for i in items
    ]
    human = render.table(("ID", "STATUS", "WAITING", "BRANCH", "TITLE"), rows) if rows else ""
    ctx.emit([i.to_dict() for i in items], human or "nothing in review")
    return 0


def cmd_review_show(ctx: Context) -> int:
    """One task's review: notes, pinned commit, conflicts, and the diff stat against its base;
    with `--patch`, the whole diff after the stat."""
    shown = reviews.show(ctx.store, ctx.args.id, branches_of(ctx), full_diff=ctx.args.patch)
    details = {k: v for k, v in shown.review.to_dict().items() if v is not None}
    disabled = details.pop("tests_disabled")
    landed = (
        f"landed at {shown.landed_commit} (branch deleted by corral)" if shown.landed_commit else ""
    )
    head = ""
    if shown.head is not None:  # the diff below is this commit's: `approve --commit` pins it
        approve = f"corral approve {shown.task.id} --commit {shown.head[:12]}"
        head = f"head: {shown.head} (to approve what is shown: {approve})"
    parts = (
        render.task_detail(shown.task),
        render.key_values(details),
        "\n".join(["tests disabled by its work:", *(f"  {d}" for d in disabled)])
        if disabled
        else "",
        landed,
        head,
        shown.diff_stat or "",
        shown.diff or "",
    )
    ctx.emit(shown.to_dict(), "\n\n".join(part for part in parts if part))
    return 0


def cmd_approve(ctx: Context) -> int:
    """Approve a task in review at its branch's current head; `--merge` merges it too."""
    a = ctx.args
    strategy = strategy_of(ctx) if a.merge else None
    task = reviews.approve(
        ctx.store,
        a.id,
        branches=branches_of(ctx),
        note=a.note,
        require_rebase=ctx.settings.review_require_rebase,
        seen=a.commit,
    )
    if strategy is None:
        ctx.emit(task.to_dict(), f"{task.id} {task.status}")
        return 0
    return _merged(
        ctx, reviews.merge(ctx.store, a.id, branches=branches_of(ctx), strategy=strategy)
    )


def cmd_request_changes(ctx: Context) -> int:
    """Send a reviewed task back to ready on its branch, with a note for the next run."""
    task = reviews.request_changes(ctx.store, ctx.args.id, note=ctx.args.note)
    ctx.emit(task.to_dict(), f"{task.id} {task.status} (changes requested)")
    return 0


def cmd_merge(ctx: Context) -> int:
    """Merge an approved task's branch into its base; exit 1 on a conflict."""
    result = reviews.merge(
        ctx.store, ctx.args.id, branches=branches_of(ctx), strategy=strategy_of(ctx)
    )
    return _merged(ctx, result)


def _merged(ctx: Context, result: MergeResult) -> int:
    task = result.task
    data = {
        "task": task.to_dict(),
        "merged_commit": result.merged_commit,
        "conflicts": list(result.conflicts),
        "backups": list(result.backups),
    }
    if result.conflicts:
        ctx.emit(data, "")
        sys.stderr.write(
            f"corral: error: merge conflict in {', '.join(result.conflicts)}: "
            f"task {task.id} is ready again on branch {task.branch}\n"
        )
        return 1
    merged = f" as {result.merged_commit[:12]}" if result.merged_commit else ""
    ctx.emit(data, f"{task.id} {task.status}: merged{merged}")
    return 0


REPO = Arg("--repo", metavar="DIR", help="the git repository (default: here)")
ID = Arg("id")

COMMANDS = (
    Command(
        "submit",
        cmd_submit,
        "hand a running task in for review",
        ID,
        Arg("--note", help="what the reviewer should know"),
        Arg("--pr-url", help="a pull request for the branch"),
        Arg("--token", help="the claim's token (default $CORRAL_CLAIM_TOKEN)"),
    ),
    Command("review list", cmd_review_list, "tasks in review or approved"),
    Command(
        "review show",
        cmd_review_show,
        "one review, with the diff stat",
        ID,
        REPO,
        Arg("--patch", action="store_true", help="and the whole diff after the stat"),
    ),
    Command(
        "approve",
        cmd_approve,
        "approve at the branch's head",
        ID,
        REPO,
        Arg("--note"),
        Arg(
            "--commit",
            metavar="SHA",
            help="only if the branch is still at SHA, the head `review show` showed",
        ),
        Arg("--merge", action="store_true", help="and merge it at once"),
        Arg("--strategy", help="ff, merge or squash (with --merge)"),
    ),
    Command(
        "request-changes",
        cmd_request_changes,
        "back to ready on its branch, with a note",
        ID,
        Arg("--note", required=True, help="what to change (the next run sees it)"),
    ),
    Command(
        "merge",
        cmd_merge,
        "merge an approved task's branch",
        ID,
        REPO,
        Arg("--strategy", help="ff, merge or squash (default worktree.merge_strategy)"),
    ),
)
