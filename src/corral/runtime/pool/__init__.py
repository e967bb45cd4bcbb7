"""The pool: the orchestrator, its supervisor of worker processes, and leadership."""
