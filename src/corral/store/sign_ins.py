"""Store operations on the dashboard's sign-ins: open one, find a live one, end one.

The store keeps a session's id, the hash of its secret and the token it was opened with
(corral/usecases/sign_ins.py says why the cookie holds no token). Ending is a
compare-and-set on `ended_at IS NULL`: a session ends once.
"""

from __future__ import annotations

from corral.store.operations import Repository


class SignIns(Repository):
    """Who is signed in to the dashboard, server-side."""

    NAME = "sign_ins"

    def start_dashboard_session(
        self, *, session_id: str, secret_hash: str, token_id: str, expires_s: float
    ) -> None:
        """A new session of token `token_id`, usable for `expires_s` seconds; the sessions
        that have ended or expired are deleted in the same transaction."""
        with self._driver.write() as tx:
            tx.run("forget_dashboard_sessions")
            tx.run(
                "insert_dashboard_session",
                id=session_id,
                secret_hash=secret_hash,
                token_id=token_id,
                expires_s=expires_s,
            )

    def dashboard_session(self, session_id: str) -> tuple[str, str] | None:
        """(token id, secret hash) of session `session_id` if it is neither ended nor
        expired, else None."""
        with self._driver.read() as tx:
            row = tx.one("dashboard_session", id=session_id)
        return None if row is None else (row["token_id"], row["secret_hash"])

    def end_dashboard_session(self, session_id: str) -> bool:
        """End session `session_id` now; False if it had ended already (or never was)."""
        with self._driver.write() as tx:
            return tx.one("end_dashboard_session", id=session_id) is not None
