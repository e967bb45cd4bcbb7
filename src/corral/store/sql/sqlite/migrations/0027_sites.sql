-- Version 27: sites. A worktree worker registers the site where it makes worktrees
-- (`<hostname>:<clone>`), and a task's run in a worktree records that site on the task:
-- its worktree and its agent's session are there. A task kept at a site is claimed there
-- alone while a live worker of that site can run it (the claimable filter), so a task
-- that runs again resumes where its work is; when none is left, any worker may claim it.
ALTER TABLE workers ADD COLUMN site TEXT;
ALTER TABLE tasks ADD COLUMN site TEXT;
CREATE INDEX workers_by_site ON workers (site, namespace) WHERE site IS NOT NULL;
