"""Store operations on API tokens: make one, list them, revoke one, find one by id.

The store keeps a token's id, name, role, queues and expiry and its secret's hash
(model/api_tokens.py); it never sees a secret. Revoking is a compare-and-set on
`revoked_at IS NULL`: a token is revoked once, and a second revoke says it was.

Over HTTP only an admin token makes, lists or revokes tokens: an operator that could make
one could make an admin's, and so leave its namespace.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from corral.foundation import errors
from corral.store import journal
from corral.store.driver import Driver, Json, Row
from corral.store.operations import ADMIN, Repository, served

if TYPE_CHECKING:
    from datetime import datetime

    from corral.model.api_tokens import ApiToken, Role


class ApiTokens(Repository):
    """Who may use `corral serve`."""

    NAME = "api_tokens"

    @served(ADMIN, frees_work=False)
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
    ) -> ApiToken:
        """A new token; Conflict if the name is taken (nothing written)."""
        with self._driver.write() as tx:
            if tx.one("token_name_taken", name=name) is not None:
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

    @served(ADMIN, frees_work=False)
    def revoke_token(self, name: str, *, actor: str) -> ApiToken:
        """Revoke token `name` now; NotFound, or Conflict if it was revoked already."""
        with self._driver.write() as tx:
            row = tx.one("revoke_token", name=name)
            if row is None:
                if tx.one("token_by_name", name=name) is None:
                    raise errors.NotFound("token", name)
                raise errors.Refused(f"token {name!r} is revoked already")
            journal.record(tx, "token.revoked", actor=actor, data={"name": name})
            return _token(self._driver, row)

    @served(ADMIN)
    def list_tokens(self) -> list[ApiToken]:
        """Every token, oldest first, then by name (revoked and expired ones too)."""
        with self._driver.read() as tx:
            return [_token(self._driver, row) for row in tx.all("list_tokens")]

    def token_secret_hash(self, token_id: str) -> tuple[ApiToken, str] | None:
        """Token `token_id` with its secret's hash, or None: what authentication compares."""
        with self._driver.read() as tx:
            row = tx.one("token_by_id", id=token_id)
        return None if row is None else (_token(self._driver, row), row["secret_hash"])

    def any_usable_token(self) -> bool:
        """Whether a token exists that is neither revoked nor expired."""
        with self._driver.read() as tx:
            return bool(tx.one("any_usable_token")["found"])  # type: ignore[index]


def _token(driver: Driver, row: Row) -> ApiToken:
    # Imported here, so that no other command's start-up builds the token records.
    from corral.model.api_tokens import ApiToken, Role  # noqa: PLC0415 - see the line above

    def instant(value: object) -> datetime | None:
        return None if value is None else driver.instant(value)

    return ApiToken(
        id=row["id"],
        name=row["name"],
        role=Role(row["role"]),
        queues=tuple(driver.json(row["queues"])),
        created_at=driver.instant(row["created_at"]),
        expires_at=instant(row["expires_at"]),
        revoked_at=instant(row["revoked_at"]),
        namespace=row["namespace"],
    )
