"""Which of the store's operations travel over HTTP, and the role each one needs.

A remote store (`CORRAL_DB=https://...`) runs every use case on the client, as a local
store does, and sends each store operation to `corral serve` (POST /api/store/NAME), which
runs it on its own store: one atomic transaction with its compare-and-set, exactly as on
the store's host. Only the operations named here travel; a token's role decides which it
may call (viewer < worker < operator), and a worker token is further held to the
workers it registered, their claims and runs, and its queues (server/store_calls.py).

Operations that only make sense beside the database (migrations, listening for
notifications, the leader lock, reading a token's secret hash) are not here: a remote
store answers them itself (store/remote/client.py).
"""

from __future__ import annotations

from corral.model.tokens import Role

# Reads: what `corral status`, `list`, `show`, `why`, `events`, `runs` ... need.
READS = frozenset(
    {
        "now",
        "schema_version",
        "get_task",
        "list_tasks",
        "count_tasks",
        "count_ready",
        "count_events",
        "count_runs",
        "find_workers",
        "count_workers",
        "task_counts",
        "task_gauges",
        "ready_tasks",
        "dependency_statuses",
        "count_ahead",
        "why_not_held",
        "why_not_claimable",
        "claim_by_token",
        "active_claim",
        "running_tasks",
        "get_worker",
        "list_workers",
        "get_run",
        "run_artifacts",
        "list_runs",
        "waiting_runs",
        "last_session",
        "unfinished_runs",
        "usage_by",
        "list_events",
        "events_page",
        "events_head",
        "next_run_after",
        "event_tallies",
        "tasks_with_payload",
        "queue_stats",
        "get_review",
        "branched_tasks",
        "reviews_of",
        "work_ends",
        "list_messages",
        "get_orchestrator",
        "list_orchestrators",
        "provider_states",
        "reconcile_snapshot",
        "get_schedule",
        "list_schedules",
        "due_schedules",
        "schedule_fires",
    }
)

# A runner's own operations, each held to what its token's workers own (by argument):
# `worker_id` a worker it registered; `run_id` a run of one; `token` a claim of one.
WORKER_OWNS = {
    "register_worker": None,  # the server marks the worker as this token's
    "heartbeat": "worker_id",
    "deregister_worker": "worker_id",
    "exchange": "worker_id",
    "renew": "worker_id",
    "set_run_start": "run_id",
    "set_run_paths": "run_id",
    "launch_run": "run_id",
    "mark_waiting": "run_id",
    "record_agent_run": "run_id",
    "record_progress": "run_id",
    "record_artifacts": "run_id",
    "record_branch": "token",
    "record_landing": "token",
    "record_outcome": "token",
    "record_cleanup": "token",
    "land_conflict": "token",
    "submit": "token",
    "park_provider": None,  # an account's limit, seen by any of its agents
    "send_message": None,
    "ack_message": None,
}

# Writes after which no task can have become claimable that was not before: a worker's
# beat or its run's records, messages, tokens, an orchestrator's beats. The server does not
# wake its waiting claims for them (the heartbeats of 200 idle runners would otherwise wake
# every waiting claim 20 times a second, each to find nothing). An exchange wakes them only
# when it reported something (a claim alone only takes work).
FREES_NO_WORK = frozenset(
    {
        "register_worker",
        "heartbeat",
        "set_run_start",
        "set_run_paths",
        "launch_run",
        "mark_waiting",
        "record_agent_run",
        "record_progress",
        "record_branch",
        "send_message",
        "ack_message",
        "create_token",
        "revoke_token",
        "beat_orchestrator",
        "beat_member",
    }
)

# Everything else an operator may do: add, cancel, review, drain, configure, reconcile,
# run an orchestrator, manage tokens.
OPERATES = frozenset(
    {
        "enqueue",
        "cancel",
        "retry",
        "answer",
        "set_task_priority",
        "drain_worker",
        "start_run",
        "finish_run",
        "approve",
        "request_changes",
        "finish_merge",
        "merge_conflict",
        "settle_pull_request",
        "set_queue_limits",
        "set_provider",
        "create_token",
        "revoke_token",
        "list_tokens",
        "apply_recoveries",
        "note_stale_reviews",
        "acquire_orchestrator",
        "set_orchestrator_status",
        "beat_orchestrator",
        "request_orchestrator_stop",
        "join_orchestrators",
        "beat_member",
        "add_schedule",
        "apply_fire_plans",
        "fire_schedule",
        "pause_schedule",
        "resume_schedule",
        "remove_schedule",
    }
)


# What never travels: a remote store answers these itself (store/remote/client.py), or
# they exist only beside the database (a token's secret hash stays on the server;
# retention deletes runs' files, which lie on the store's host).
LOCAL = frozenset(
    {
        "prunable_tasks",
        "count_prunable",
        "delete_tasks",
        "event_boundary",
        "delete_events_before",
        "prunable_workers",
        "delete_workers",
        "migrate",
        "pending_migrations",
        "wake_on_work",
        "wake_on_events",
        "leader_lock",
        "stop_waiting",
        "close",
        "token_secret_hash",
        "any_usable_token",
        # A remote store's namespace is its own (the token's); the counts of every
        # namespace are for the store's host, not for a token of one namespace.
        "namespace",
        "in_namespace",
        "namespace_counts",
        # The dashboard's reads: it runs in `corral serve`, beside the store.
        "task_page",
        "count_task_page",
        "task_dependents",
        "task_timeline",
        "events_per_minute",
        "events_around",
        "start_dashboard_session",
        "dashboard_session",
        "end_dashboard_session",
    }
)


def role_for(name: str) -> Role | None:
    """The least role that may call operation `name`; None when it does not travel."""
    if name in READS:
        return Role.VIEWER
    if name in WORKER_OWNS:
        return Role.WORKER
    if name in OPERATES:
        return Role.OPERATOR
    return None
