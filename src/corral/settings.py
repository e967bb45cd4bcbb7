"""One settings record: every tunable with its default, unit and reason, validated in one place.

Sources, later ones winning: defaults < the config file (`config.toml` beside the
database, e.g. `.corral/config.toml`, or `CORRAL_CONFIG`) < the environment (`CORRAL_<NAME>`) <
command-line flags. Components receive the slice they need (`settings.retry`), never
the whole record.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from corral.durations import parse_duration_s
from corral.errors import InvalidInput


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """How failed work is retried: exponential backoff with jitter, up to max_attempts."""

    max_attempts: int
    base_s: float
    max_s: float
    jitter: float


@dataclass(frozen=True, slots=True, kw_only=True)
class LeasePolicy:
    """How long a claim lasts and how often it may be renewed explicitly."""

    lease_s: float
    max_renewals: int


@dataclass(frozen=True, slots=True, kw_only=True)
class LivenessPolicy:
    """When a silent worker becomes stale, then dead."""

    heartbeat_interval_s: float
    dead_after_missed: int


# name -> (default, minimum, unit, reason). The table is the documentation's source too.
SPEC: dict[str, tuple[float, float, str, str]] = {
    "lease_s": (1800, 1, "s", "a claim lasts this long unless renewed or heartbeated"),
    "max_renewals": (10, 0, "count", "explicit renewals per claim: hung work cannot hold on"),
    "heartbeat_interval_s": (10, 0.05, "s", "how often workers are told to heartbeat"),
    "dead_after_missed": (3, 1, "count", "missed heartbeats before a worker is dead"),
    "max_attempts": (3, 1, "count", "runs of a task before it fails for good"),
    "max_crashes": (3, 1, "count", "lost leases before a task is quarantined as poison"),
    "retry_base_s": (10, 0, "s", "first retry delay; doubles with each attempt"),
    "retry_max_s": (3600, 0, "s", "retry delays never exceed this"),
    "retry_jitter": (0.2, 0, "fraction", "random spread of retry delays, so retries do not align"),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """Every tunable of the core, flat so files and the environment can name each one."""

    lease_s: float = float(SPEC["lease_s"][0])
    max_renewals: int = int(SPEC["max_renewals"][0])
    heartbeat_interval_s: float = float(SPEC["heartbeat_interval_s"][0])
    dead_after_missed: int = int(SPEC["dead_after_missed"][0])
    max_attempts: int = int(SPEC["max_attempts"][0])
    max_crashes: int = int(SPEC["max_crashes"][0])
    retry_base_s: float = float(SPEC["retry_base_s"][0])
    retry_max_s: float = float(SPEC["retry_max_s"][0])
    retry_jitter: float = float(SPEC["retry_jitter"][0])

    def __post_init__(self) -> None:
        for name, (_, minimum, unit, _) in SPEC.items():
            value = getattr(self, name)
            if not value >= minimum:  # written so that NaN (from a TOML file) fails too
                raise InvalidInput(name, f"a value of at least {minimum:g} ({unit})", value)
        if self.retry_jitter > 1:
            raise InvalidInput("retry_jitter", "a fraction between 0 and 1", self.retry_jitter)

    @property
    def retry(self) -> RetryPolicy:
        """The retry slice."""
        return RetryPolicy(
            max_attempts=self.max_attempts,
            base_s=self.retry_base_s,
            max_s=self.retry_max_s,
            jitter=self.retry_jitter,
        )

    @property
    def lease(self) -> LeasePolicy:
        """The lease slice."""
        return LeasePolicy(lease_s=self.lease_s, max_renewals=self.max_renewals)

    @property
    def liveness(self) -> LivenessPolicy:
        """The liveness slice."""
        return LivenessPolicy(
            heartbeat_interval_s=self.heartbeat_interval_s,
            dead_after_missed=self.dead_after_missed,
        )

    def with_values(self, values: Mapping[str, Any], source: str) -> Settings:
        """A copy with `values` applied; unknown names and bad values name `source`."""
        known = {f.name: f.type for f in fields(self)}
        changes: dict[str, Any] = {}
        for name, raw in values.items():
            if name not in known:
                raise InvalidInput(f"{source}: {name}", f"one of {', '.join(sorted(known))}")
            changes[name] = _coerce(f"{source}: {name}", raw, SPEC[name][2])
        try:
            return replace(self, **changes)
        except InvalidInput as exc:
            raise InvalidInput(
                f"{source}: {exc.field}", exc.expected, values.get(exc.field)
            ) from None


def _coerce(field: str, raw: Any, unit: str) -> float | int:
    if unit == "s":
        return parse_duration_s(field, raw)
    try:
        number = float(raw)
    except (TypeError, ValueError):
        raise InvalidInput(field, f"a number ({unit})", raw) from None
    if unit == "count":
        if not number.is_integer():
            raise InvalidInput(field, "a whole number", raw)
        return int(number)
    return number


def load_settings(
    environ: Mapping[str, str] | None = None, config_path: str | None = None
) -> Settings:
    """Defaults, then the config file if it exists, then `CORRAL_*` variables."""
    environ = os.environ if environ is None else environ
    settings = Settings()
    named = environ.get("CORRAL_CONFIG")
    if named and not os.path.isfile(named):
        raise InvalidInput("CORRAL_CONFIG", "the path of an existing TOML file", named)
    path = named or config_path
    if path and os.path.isfile(path):
        settings = settings.with_values(_read_toml(path), path)
    from_env = {
        name: environ[f"CORRAL_{name.upper()}"]
        for name in SPEC
        if f"CORRAL_{name.upper()}" in environ
    }
    return settings.with_values(from_env, "environment") if from_env else settings


def _read_toml(path: str) -> dict[str, Any]:
    import tomllib  # only when a config file exists: keeps the CLI's start-up lean

    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise InvalidInput(path, "a readable TOML file", str(exc)) from None
    section = data.get("corral", data)
    if not isinstance(section, dict):
        raise InvalidInput(path, "a [corral] table")
    return section
