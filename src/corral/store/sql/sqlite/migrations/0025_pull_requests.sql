-- Version 25: where a task's pull request stands (`[worktree] land = pr`, docs/review.md):
-- open (or unset, with a pr_url), merged or closed, as the reconciler last read it from the
-- forge. A task whose pull request is open stays in review; merged, it is done.
ALTER TABLE reviews ADD COLUMN pr_state TEXT;
