"""The claimable filter: which tasks a worker may claim now, defined once for both dialects.

A worker may claim a task that is
- ready (`ALLOWED_FROM["claim"]`) and due (`run_after` has passed);
- assigned to nobody, or to the worker (by id or by name);
- of the kinds and queues the worker may be handed (`store/capabilities.py` narrows what
  it declared by what it asks for; NULL is any);
- in no queue held back by its limits: at `max_running`, or at its `rate` of claims in the
  last minute (`RATE_WINDOW_S`);
- not kept at another site (`tasks.site`: its worktree and its agent's session are there)
  while a live worker of that site (a status of `CLAIMING`) can run it.

The conditions are written here once. The dialects differ in a few words only (SQLite
keeps a list of names as JSON text, PostgreSQL as an array), so each has a `_Words`; the
texts made from them are fragments (`store/queries.py`) of the files that use them:
`/* fragment: claimable */` in sqlite/queries.sql's claim statements, and the bodies of
`corral_may_claim`, `corral_site_open` and `corral_held_queues` in postgresql/functions.sql.
PostgreSQL computes the held queues once per statement and checks the site in a PL/pgSQL
function of its own, so that `corral_may_claim` stays one expression the planner inlines;
SQLite has both inline.
"""

from __future__ import annotations

from corral.foundation.records import record
from corral.model.states import ALLOWED_FROM, CLAIMING, TaskStatus

# The window of a queue's `rate` (claims a minute).
RATE_WINDOW_S = 60


@record(frozen=True, slots=True, kw_only=True)
class _Words:
    """How one dialect says what the filter needs: the task row's name, the parameters'
    names, a name in a list of names, an empty list, a comparison where NULL equals NULL,
    an instant some seconds before now, and the join of claims to their tasks."""

    task: str
    now: str
    worker_id: str
    worker_name: str
    kinds: str
    queues: str
    among_form: str
    empty_form: str
    same_form: str
    before_now_form: str
    join: str

    def among(self, value: str, names: str) -> str:
        """`value` is one of the list of names `names`."""
        return self.among_form.format(value=value, names=names)

    def empty(self, names: str) -> str:
        """The list of names `names` is empty."""
        return self.empty_form.format(names=names)

    def same(self, a: str, b: str) -> str:
        """`a` equals `b`, NULL equal to NULL."""
        return self.same_form.format(a=a, b=b)

    def before_now(self, seconds: int) -> str:
        """The instant `seconds` before now."""
        return self.before_now_form.format(seconds=seconds)


_SQLITE = _Words(
    task="tasks",
    now=":now",
    worker_id=":worker_id",
    worker_name=":worker_name",
    kinds=":kinds",
    queues=":queues",
    among_form="{value} IN (SELECT value FROM json_each({names}))",
    empty_form="{names} = '[]'",
    same_form="{a} IS {b}",
    before_now_form=":now - {seconds}",
    # CROSS JOIN: SQLite then reads the last minute's claims first (claims_by_start), never
    # every task of the namespace.
    join="CROSS JOIN",
)
_POSTGRESQL = _Words(
    task="t",
    now="p_now",
    worker_id="p_worker_id",
    worker_name="p_worker_name",
    kinds="p_kinds",
    queues="p_queues",
    among_form="{value} = ANY({names})",
    empty_form="cardinality({names}) = 0",
    same_form="{a} IS NOT DISTINCT FROM {b}",
    before_now_form="p_now - interval '{seconds} seconds'",
    join="JOIN",
)


def _one_of(statuses: frozenset[str]) -> str:
    """`= 'a'` or `IN ('a', 'b')`: the statuses as a SQL comparison."""
    if len(statuses) == 1:
        return f"= '{next(iter(statuses))}'"
    return "IN (" + ", ".join(f"'{s}'" for s in sorted(statuses)) + ")"


def held_queues(words: _Words, namespace: str) -> str:
    """The queues of `namespace` that claims pass by now, as a SELECT of `queue`."""
    return f"""SELECT l.queue FROM queue_limits l
WHERE l.namespace = {namespace}
  AND (l.max_running <= (SELECT count(*) FROM tasks r
                         WHERE r.namespace = l.namespace AND r.queue = l.queue
                           AND r.status = '{TaskStatus.RUNNING}')
       OR l.rate <= (SELECT count(*) FROM claims c {words.join} tasks ct ON ct.id = c.task_id
                     WHERE c.claimed_at > {words.before_now(RATE_WINDOW_S)}
                       AND ct.namespace = l.namespace AND ct.queue = l.queue))"""


def site_open(words: _Words) -> str:
    """Whether the worker may claim the task kept at its site (the task's site is not NULL)."""
    t = words.task
    worker_site = f"(SELECT w.site FROM workers w WHERE w.id = {words.worker_id})"
    return f"""{words.same(f"{t}.site", worker_site)}
OR NOT EXISTS (SELECT 1 FROM workers s
               WHERE s.site = {t}.site AND s.namespace = {t}.namespace
                 AND s.status {_one_of(CLAIMING)}
                 AND ({words.empty("s.kinds")} OR {words.among(f"{t}.kind", "s.kinds")})
                 AND ({words.empty("s.queues")} OR {words.among(f"{t}.queue", "s.queues")}))"""


def may_claim(words: _Words, *, held: str, site: str) -> str:
    """The filter on task row `words.task`; `held` is the queues held back (a list of
    names in the dialect's form), `site` whether a task kept at a site is open to the worker."""
    t = words.task
    return f"""{t}.status {_one_of(ALLOWED_FROM["claim"])} AND {t}.run_after <= {words.now}
AND ({t}.assignee IS NULL OR {t}.assignee IN ({words.worker_id}, {words.worker_name}))
AND ({words.kinds} IS NULL OR {words.among(f"{t}.kind", words.kinds)})
AND ({words.queues} IS NULL OR {words.among(f"{t}.queue", words.queues)})
AND NOT ({held})
AND ({t}.site IS NULL OR {site})"""


def fragments(dialect: str) -> dict[str, str]:
    """The filter's texts for `dialect`, by the fragment names its SQL files use."""
    if dialect == "sqlite":
        words = _SQLITE
        namespace = "(SELECT w.namespace FROM workers w WHERE w.id = :worker_id)"
        held = f"tasks.queue IN ({held_queues(words, namespace)})"
        claimable = may_claim(words, held=held, site=site_open(words))
        return {"claimable": f"tasks.namespace = {namespace}\nAND {claimable}"}
    words = _POSTGRESQL
    return {
        "may_claim": may_claim(
            words, held="t.queue = ANY(p_held)", site="corral_site_open(t, p_worker_id)"
        ),
        "site_open": site_open(words),
        "held_queues": held_queues(words, "p_namespace"),
    }
