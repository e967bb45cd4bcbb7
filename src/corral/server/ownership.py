"""What a worker token may touch: the workers it registered, their claims, its queues.

A worker token (`corral token create --role worker [--queue Q ...]`) acts only for the
workers it registered: the server marks each one, as it registers it, with the token's id
in the label OWNER_LABEL. Through them it reaches their claims (named by fencing token)
and their runs. A token with queues registers workers for those queues only and claims
nothing outside them. Each refusal is Denied (403) before anything is written.

Which token registered a worker is read from the store once per worker and kept: the
label is written when the worker registers and never changes (no statement updates a
worker's labels, none deletes a worker), so a runner's every call does not pay a read
for it. The lookup still fails as before (NotFound) for a worker that does not exist.

`scoped` holds a store operation's arguments (POST /api/store/NAME) to what a worker
token owns, by the argument its `@served` declaration names; the claim and report routes
(claims.py) go through the same `own_exchange` and `own_claim`. `own_*` and `within` are
for worker tokens only; `acting_for` and `acting_under` hold a
worker token and let an operator's (which is held to nothing) through.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from corral.model.api_tokens import ApiToken, Role
from corral.model.claims import Claim
from corral.model.exchange import ClaimAsk, Report
from corral.model.workers import NewWorker
from corral.server.auth import Denied
from corral.store import Store
from corral.store.operations import Operation

OWNER_LABEL = "corral.token"
OWNERS_KEPT = 10_000  # workers whose owner is kept; past it, forgotten all at once

# (store URL, namespace, worker id) -> the id of the token that registered the worker
_owners: dict[tuple[str, str, str], str | None] = {}


def own_worker_spec(token: ApiToken, spec: NewWorker) -> NewWorker:
    """`spec` as worker token `token` may register it: within its queues (its queues when
    the spec names none), and marked as its own."""
    queues = spec.queues or token.queues
    within(token, queues)
    return dataclasses.replace(spec, queues=queues, labels={**spec.labels, OWNER_LABEL: token.id})


def own_worker(store: Store, token: ApiToken, worker_id: str | None) -> None:
    """Denied unless worker `worker_id` was registered with `token` (NotFound if none)."""
    if worker_id is None or _owner(store, worker_id) != token.id:
        raise Denied(403, f"token {token.name!r} acts only for workers it registered")


def _owner(store: Store, worker_id: str) -> str | None:
    """The id of the token that registered worker `worker_id` (None: registered without
    one); NotFound if there is no such worker."""
    key = (store.url, store.namespace, worker_id)  # an id is found in its namespace alone
    if key not in _owners:
        if len(_owners) >= OWNERS_KEPT:
            _owners.clear()
        _owners[key] = store.workers.get_worker(worker_id).labels.get(OWNER_LABEL)
    return _owners[key]


def own_claim(store: Store, token: ApiToken, fencing_token: int | None) -> Claim:
    """The claim `fencing_token` names, if one of `token`'s workers holds or held it; a
    stale claim of its own passes (the use case then refuses it, 409)."""
    claim = store.claims.claim_by_token(fencing_token) if fencing_token is not None else None
    if claim is None:
        raise Denied(403, f"token {token.name!r} acts only under its own workers' claims")
    own_worker(store, token, claim.worker_id)
    return claim


def within(token: ApiToken, queues: tuple[str, ...]) -> None:
    """Denied if `queues` reach past `token`'s queues (a token without queues has all)."""
    outside = [q for q in queues if token.queues and q not in token.queues]
    if outside:
        allowed = ", ".join(token.queues)
        raise Denied(403, f"token {token.name!r} may use the queues {allowed}; not {outside[0]}")


def acting_for(store: Store, token: ApiToken, worker_id: str) -> None:
    """`own_worker` for a worker token; an operator's acts for any worker."""
    if token.role == Role.WORKER:
        own_worker(store, token, worker_id)


def acting_under(store: Store, token: ApiToken, fencing_token: int) -> None:
    """`own_claim` for a worker token; an operator's reports under any claim."""
    if token.role == Role.WORKER:
        own_claim(store, token, fencing_token)


def scoped(
    store: Store, token: ApiToken, operation: Operation, args: dict[str, Any]
) -> dict[str, Any]:
    """`args`, held to what worker token `token` owns; Denied (403) where they reach past it."""
    if operation.method in ("register_worker", "slot_worker"):
        return {**args, "spec": own_worker_spec(token, args["spec"])}
    if operation.served.long_poll:
        return {**args, **_exchange_args(store, token, args)}
    owned = operation.served.owns
    if owned == "worker_id":
        own_worker(store, token, args.get("worker_id"))
    elif owned == "run_id":
        run = store.runs.get_run(args["run_id"])
        own_worker(store, token, run.worker_id)
    elif owned == "token":
        own_claim(store, token, args.get("token"))
    return args


def _exchange_args(store: Store, token: ApiToken, args: dict[str, Any]) -> dict[str, Any]:
    reports, ask = own_exchange(
        store, token, args["worker_id"], args.get("reports", ()), args.get("ask")
    )
    return {"reports": reports} if ask is None else {"reports": reports, "ask": ask}


def own_exchange(
    store: Store,
    token: ApiToken,
    worker_id: str | None,
    reports: Sequence[Report],
    ask: ClaimAsk | None,
) -> tuple[list[Report], ClaimAsk | None]:
    """A runner's exchange (its worker's), a claim by the REST route, or an agent's report
    (`corral done --token`, no worker), as worker token `token` may make it: each report
    under a claim of one of its workers, which the store then checks as the report's
    holder; a claim only for its own worker, in its queues (its queues when the ask names
    none)."""
    if worker_id is not None or ask is not None:
        own_worker(store, token, worker_id)
    owned: list[Report] = []
    for report in reports:
        holder = worker_id
        if holder is None and report.token is not None:
            claim = store.claims.claim_by_token(report.token)
            holder = None if claim is None else claim.worker_id
            own_worker(store, token, holder)
        if report.token is None or holder is None or report.holder not in (None, holder):
            raise Denied(403, f"token {token.name!r} reports only its own workers' claims")
        owned.append(report._replace(holder=holder))
    if ask is None:
        return owned, None
    if ask.task_id is not None and token.queues:
        within(token, (store.tasks.get_task(ask.task_id).queue,))
    queues = ask.queues or token.queues
    within(token, queues)
    return owned, ask._replace(queues=queues)
