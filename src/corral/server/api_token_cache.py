"""Tokens the server checked a moment ago, trusted for a bounded time without a store read.

Authenticating a request reads the token's row: on an idle fleet of remote workers that read
is as costly as the heartbeat it admits. A presented token that checked out is trusted for
`auth_cache_s` (1 s by default; 0 reads every time) and never past its expiry: a `corral
token revoke` is therefore refused within that time, not at the very next request. Only
successes are kept, so a new token works at once and a wrong secret always reaches the store
(and its constant-time comparison). Entries are keyed by the presented text's hash, not the
secret itself.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from corral.model.api_tokens import ApiToken, secret_hash

# A bound on memory: only valid tokens get in, so this many is already a large fleet's worth.
MAX_ENTRIES = 4096


class TokenCache:
    """`presented text -> Token` for at most `ttl_s` seconds; thread-safe (routes check tokens
    on worker threads)."""

    def __init__(
        self,
        ttl_s: float,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._ttl_s = ttl_s
        self._clock = clock
        self._wall = wall
        self._entries: dict[str, tuple[float, ApiToken]] = {}
        self._lock = threading.Lock()

    def token(self, presented: str, check: Callable[[str], ApiToken | None]) -> ApiToken | None:
        """The token `presented` stands for: from the cache while fresh, else `check(presented)`
        (which reads the store), whose success is kept."""
        if self._ttl_s <= 0:
            return check(presented)
        key = secret_hash(presented)
        now = self._clock()
        with self._lock:
            kept = self._entries.get(key)
        if kept is not None and now < kept[0]:
            return kept[1]
        token = check(presented)
        if token is not None:
            self._keep(key, now + self._fresh_for(token), token)
        return token

    def _fresh_for(self, token: ApiToken) -> float:
        """How long `token` may be trusted: the cache's time, cut short by the token's expiry
        (its remaining life by this host's clock: a skew beyond the cache's time is moot, as
        the store's clock decided it was usable just now)."""
        if token.expires_at is None:
            return self._ttl_s
        left = token.expires_at - self._wall()
        return max(0.0, min(self._ttl_s, left / timedelta(seconds=1)))

    def _keep(self, key: str, until: float, token: ApiToken) -> None:
        with self._lock:
            if len(self._entries) >= MAX_ENTRIES:
                self._entries.clear()
            self._entries[key] = (until, token)
