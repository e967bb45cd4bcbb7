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

`own_*` and `within` are for worker tokens only; `acting_for` and `acting_under` hold a
worker token and let an operator's (which is held to nothing) through.
"""

from __future__ import annotations

import dataclasses

from corral.model.claims import Claim
from corral.model.tokens import Role, Token
from corral.model.workers import NewWorker
from corral.server.auth import Denied
from corral.store import Store

OWNER_LABEL = "corral.token"
OWNERS_KEPT = 10_000  # workers whose owner is kept; past it, forgotten all at once

_owners: dict[tuple[str, str], str | None] = {}  # (store URL, worker id) -> its token's id


def own_worker_spec(token: Token, spec: NewWorker) -> NewWorker:
    """`spec` as worker token `token` may register it: within its queues (its queues when
    the spec names none), and marked as its own."""
    queues = spec.queues or token.queues
    within(token, queues)
    return dataclasses.replace(spec, queues=queues, labels={**spec.labels, OWNER_LABEL: token.id})


def own_worker(store: Store, token: Token, worker_id: str | None) -> None:
    """Denied unless worker `worker_id` was registered with `token` (NotFound if none)."""
    if worker_id is None or _owner(store, worker_id) != token.id:
        raise Denied(403, f"token {token.name!r} acts only for workers it registered")


def _owner(store: Store, worker_id: str) -> str | None:
    """The id of the token that registered worker `worker_id` (None: registered without
    one); NotFound if there is no such worker."""
    key = (store.url, worker_id)
    if key not in _owners:
        if len(_owners) >= OWNERS_KEPT:
            _owners.clear()
        _owners[key] = store.get_worker(worker_id).labels.get(OWNER_LABEL)
    return _owners[key]


def own_claim(store: Store, token: Token, fencing_token: int | None) -> Claim:
    """The claim `fencing_token` names, if one of `token`'s workers holds or held it; a
    stale claim of its own passes (the use case then refuses it, 409)."""
    claim = store.claim_by_token(fencing_token) if fencing_token is not None else None
    if claim is None:
        raise Denied(403, f"token {token.name!r} acts only under its own workers' claims")
    own_worker(store, token, claim.worker_id)
    return claim


def within(token: Token, queues: tuple[str, ...]) -> None:
    """Denied if `queues` reach past `token`'s queues (a token without queues has all)."""
    outside = [q for q in queues if token.queues and q not in token.queues]
    if outside:
        allowed = ", ".join(token.queues)
        raise Denied(403, f"token {token.name!r} may use the queues {allowed}; not {outside[0]}")


def acting_for(store: Store, token: Token, worker_id: str) -> None:
    """`own_worker` for a worker token; an operator's acts for any worker."""
    if token.role == Role.WORKER:
        own_worker(store, token, worker_id)


def acting_under(store: Store, token: Token, fencing_token: int) -> None:
    """`own_claim` for a worker token; an operator's reports under any claim."""
    if token.role == Role.WORKER:
        own_claim(store, token, fencing_token)
