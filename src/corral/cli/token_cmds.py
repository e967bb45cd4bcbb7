"""Token commands: `token create` (the token printed once), `token list`, `token revoke`.

Tokens guard `corral serve` ([http-api] in docs/cli.md): viewer, worker (for its queues)
or operator. The store keeps a token's hash, never the token: lose it and make another.
"""

from __future__ import annotations

from collections.abc import Sequence

from corral.cli import parsing
from corral.cli.commands import Arg, Command
from corral.cli.context import Context
from corral.cli.render import table
from corral.foundation.durations import iso
from corral.model.api_tokens import ApiToken
from corral.usecases.api_tokens import create_token, list_tokens, revoke_token


def cmd_token_create(ctx: Context) -> int:
    """Make a token; print it (its only showing) on stdout."""
    a = ctx.args
    token, shown = create_token(
        ctx.store,
        role=a.role,
        queues=tuple(a.queue or ()),
        name=a.name,
        expires_s=parsing.duration("expires", a.expires),
    )
    ctx.emit({**token.to_dict(), "token": shown}, shown)
    return 0


def cmd_token_list(ctx: Context) -> int:
    """Every token: name, role, queues, when it expires or was revoked; never a secret."""
    tokens = list_tokens(ctx.store)
    ctx.emit_all(tokens, lambda: token_table(tokens) if tokens else "no tokens")
    return 0


def token_table(tokens: Sequence[ApiToken]) -> str:
    """One line a token."""
    rows = [
        (
            t.name,
            t.id,
            t.role,
            ",".join(t.queues) or "*",
            iso(t.created_at),
            iso(t.expires_at) or "never",
            "revoked " + (iso(t.revoked_at) or "") if t.revoked_at else "",
        )
        for t in tokens
    ]
    return table(("NAME", "ID", "ROLE", "QUEUES", "CREATED", "EXPIRES", ""), rows)


def cmd_token_revoke(ctx: Context) -> int:
    """Revoke a token by name: `corral serve` refuses it from the next request."""
    token = revoke_token(ctx.store, ctx.args.name)
    ctx.emit(token.to_dict(), f"token {token.name} revoked")
    return 0


COMMANDS = (
    Command(
        "token create",
        cmd_token_create,
        "make an API token for corral serve (printed once)",
        Arg("--role", required=True, choices=("viewer", "worker", "operator", "admin")),
        Arg("--queue", action="append", metavar="Q", help="a worker token's queue; repeatable"),
        Arg("--name", metavar="N", help="its name (default: its id)"),
        Arg("--expires", metavar="DURATION", help="it stops working this long from now (90d)"),
    ),
    Command("token list", cmd_token_list, "the API tokens: names, roles, expiry"),
    Command("token revoke", cmd_token_revoke, "revoke an API token", Arg("name", metavar="NAME")),
)
