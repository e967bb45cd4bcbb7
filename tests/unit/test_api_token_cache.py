"""The server's cache of checked tokens: trusted for its time, never past expiry, never a
failure kept, keyed so a different secret is a different entry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from corral.model.api_tokens import ApiToken, Role, matches, secret_hash
from corral.server.api_token_cache import TokenCache

T0 = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


def _token(expires_at: datetime | None = None) -> ApiToken:
    return ApiToken(
        id="k-1",
        name="fleet",
        role=Role.WORKER,
        queues=(),
        created_at=T0,
        expires_at=expires_at,
        revoked_at=None,
    )


class _Store:
    """Stands for the store's read: counts the checks, answers what it is told."""

    def __init__(self, answer: ApiToken | None) -> None:
        self.answer = answer
        self.reads = 0

    def check(self, presented: str) -> ApiToken | None:
        self.reads += 1
        return self.answer if presented == "corral_k-1_good" else None


def _cache(ttl_s: float) -> tuple[TokenCache, list[float]]:
    now = [100.0]
    return TokenCache(ttl_s, clock=lambda: now[0], wall=lambda: T0), now


def test_a_checked_token_is_trusted_for_the_cache_time_then_read_again():
    cache, now = _cache(1.0)
    store = _Store(_token())
    assert store.answer == cache.token("corral_k-1_good", store.check)
    now[0] += 0.99
    assert store.answer == cache.token("corral_k-1_good", store.check)
    assert 1 == store.reads
    store.answer = None  # revoked meanwhile
    now[0] += 0.02
    assert cache.token("corral_k-1_good", store.check) is None
    assert 2 == store.reads


def test_a_failure_is_never_kept_and_another_secret_is_another_entry():
    cache, _ = _cache(1.0)
    store = _Store(_token())
    assert cache.token("corral_k-1_bad", store.check) is None
    assert cache.token("corral_k-1_bad", store.check) is None
    assert store.answer == cache.token("corral_k-1_good", store.check)
    assert cache.token("corral_k-1_bad", store.check) is None
    assert 4 == store.reads


def test_an_expiring_token_is_not_trusted_past_its_expiry():
    cache, now = _cache(10.0)
    store = _Store(_token(expires_at=T0 + timedelta(seconds=2)))
    cache.token("corral_k-1_good", store.check)
    now[0] += 1.9
    cache.token("corral_k-1_good", store.check)
    assert 1 == store.reads
    now[0] += 0.2
    cache.token("corral_k-1_good", store.check)
    assert 2 == store.reads


def test_a_cache_time_of_zero_reads_the_store_every_time():
    cache, _ = _cache(0)
    store = _Store(_token())
    for _ in range(3):
        assert store.answer == cache.token("corral_k-1_good", store.check)
    assert 3 == store.reads


def test_a_secret_matches_its_own_hash_only_and_no_hash_matches_nothing():
    """`matches` is the one comparison of a presented secret: an unknown id (no hash) is
    refused, even for the secret whose hash it compares against to take the same time."""
    stored = secret_hash("s3cret")
    assert (True, False, False, False) == (
        matches("s3cret", stored),
        matches("other", stored),
        matches("", None),
        matches("s3cret", None),
    )
