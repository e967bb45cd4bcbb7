"""Store operations on API tokens: make one, list them, revoke one, find one by id.

The store keeps a token's id, name, role, queues and expiry and its secret's hash
(model/tokens.py); it never sees a secret. Revoking is a compare-and-set on
`revoked_at IS NULL`: a token is revoked once, and a second revoke says it was.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from corral import errors
from corral.store import journal
from corral.store.driver import Driver, Json, Row

if TYPE_CHECKING:
    from datetime import datetime

    from corral.model.tokens import Role, Token


class TokenOps:
    """Who may use `corral serve`."""

    _driver: Driver

    def create_token(
        self,
        *,
        token_id: str,
        name: str,
        role: Role,
        queues: tuple[str, ...],
        secret_hash: str,
        expires_s: float | None,
        actor: str,
    ) -> Token:
        """A new token; Conflict if the name is taken (nothing written)."""
        with self._driver.write() as tx:
            if tx.one("token_by_name", name=name) is not None:
                raise errors.Refused(
                    f"a token named {name!r} exists: revoke it or pick another name"
                )
            row = tx.one(
                "insert_token",
                id=token_id,
                name=name,
                role=str(role),
                queues=Json(list(queues)),
                secret_hash=secret_hash,
                expires_s=expires_s,
            )
            assert row is not None  # an INSERT ... RETURNING returns its row
            token = _token(self._driver, row)
            journal.record(
                tx,
                "token.created",
                actor=actor,
                data={"name": name, "role": str(role), "queues": list(queues)},
            )
        return token

    def revoke_token(self, name: str, *, actor: str) -> Token:
        """Revoke token `name` now; NotFound, or Conflict if it was revoked already."""
        with self._driver.write() as tx:
            row = tx.one("revoke_token", name=name)
            if row is None:
                if tx.one("token_by_name", name=name) is None:
                    raise errors.NotFound("token", name)
                raise errors.Refused(f"token {name!r} is revoked already")
            journal.record(tx, "token.revoked", actor=actor, data={"name": name})
            return _token(self._driver, row)

    def list_tokens(self) -> list[Token]:
        """Every token, oldest first, then by name (revoked and expired ones too)."""
        with self._driver.read() as tx:
            return [_token(self._driver, row) for row in tx.all("list_tokens")]

    def token_secret_hash(self, token_id: str) -> tuple[Token, str] | None:
        """Token `token_id` with its secret's hash, or None: what authentication compares."""
        with self._driver.read() as tx:
            row = tx.one("token_by_id", id=token_id)
        return None if row is None else (_token(self._driver, row), row["secret_hash"])

    def any_usable_token(self) -> bool:
        """Whether a token exists that is neither revoked nor expired."""
        with self._driver.read() as tx:
            return bool(tx.one("any_usable_token")["found"])  # type: ignore[index]


def _token(driver: Driver, row: Row) -> Token:
    # Imported here, so that no other command's start-up builds the token records.
    from corral.model.tokens import Role, Token  # noqa: PLC0415 - see the line above

    def instant(value: object) -> datetime | None:
        return None if value is None else driver.instant(value)

    return Token(
        id=row["id"],
        name=row["name"],
        role=Role(row["role"]),
        queues=tuple(driver.json(row["queues"])),
        created_at=driver.instant(row["created_at"]),
        expires_at=instant(row["expires_at"]),
        revoked_at=instant(row["revoked_at"]),
        namespace=row["namespace"],
    )
