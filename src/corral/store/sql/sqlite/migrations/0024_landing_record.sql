-- Version 24: where a task's work ended (docs/review.md, Where the work is). The outcome of
-- its last run in a worktree (landed, in_review, kept, no_change, refused), the backup refs
-- corral wrote of its worktree or branch (a JSON list, oldest first), and whether corral
-- itself deleted its branch: `corral branches` answers from these, checked against git.
ALTER TABLE reviews ADD COLUMN outcome TEXT;
ALTER TABLE reviews ADD COLUMN backup_refs TEXT;
ALTER TABLE reviews ADD COLUMN branch_deleted INTEGER NOT NULL DEFAULT 0;
