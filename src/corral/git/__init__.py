"""Git for corral: the one place it runs `git`, task worktrees, their pruning, and merges.

repo.py            running git: argument lists, never a shell; version check
worktrees.py       a worktree and branch per task under `.corral/worktrees/`
task_worktrees.py  a runner's worktrees: enter one per task, leave it as its outcome says
prune.py           orphaned worktrees, removed with their work saved as backup refs
merging.py         the review flow's `Branches`: merge an approved branch into its base
"""
