"""The one settings record: defaults, validation, the config file and the environment."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

from pathlib import Path

import pytest

from corral.foundation.errors import InvalidInput
from corral.foundation.policies import (
    LeasePolicy,
    LivenessPolicy,
    ProcessPolicy,
    QueueLimits,
    RetryPolicy,
)
from corral.foundation.settings import SPEC, Settings, load_settings


def test_defaults_come_from_the_spec_table() -> None:
    """Every field's default is the one the SPEC table documents."""
    defaults = Settings()
    assert {name: spec.default for name, spec in SPEC.items()} == {
        name: getattr(defaults, name) for name in SPEC
    }


def test_components_get_their_slice() -> None:
    """retry, lease and liveness slices carry the matching fields."""
    s = Settings(
        lease_s=60,
        max_renewals=2,
        heartbeat_interval_s=5,
        dead_after_missed=4,
        max_attempts=7,
        retry_base_s=1,
        retry_max_s=30,
        retry_jitter=0.1,
    )
    assert RetryPolicy(max_attempts=7, base_s=1, max_s=30, jitter=0.1) == s.retry
    assert LeasePolicy(lease_s=60, max_renewals=2) == s.lease
    assert LivenessPolicy(heartbeat_interval_s=5, dead_after_missed=4) == s.liveness


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("lease_s", 0),
        ("max_renewals", -1),
        ("heartbeat_interval_s", 0.01),
        ("dead_after_missed", 0),
        ("max_attempts", 0),
        ("max_crashes", 0),
        ("retry_base_s", -1),
        ("retry_max_s", -1),
        ("retry_jitter", -0.1),
        ("retry_jitter", 1.5),
        ("retry_jitter", float("nan")),
        ("lease_s", float("nan")),
    ],
)
def test_out_of_range_values_name_the_field(field: str, value: float) -> None:
    """A value below its minimum (or a jitter above 1) is InvalidInput naming the field."""
    with pytest.raises(InvalidInput, match=f"^{field}: expected") as caught:
        Settings(**{field: value})  # type: ignore[arg-type]
    assert field == caught.value.field


def test_with_values_coerces_text_by_unit() -> None:
    """Durations accept 30m, counts whole numbers, fractions decimals."""
    s = Settings().with_values(
        {"lease_s": "30m", "max_renewals": "4", "retry_jitter": "0.5", "retry_base_s": 2},
        "test",
    )
    assert (1800.0, 4, 0.5, 2.0) == (s.lease_s, s.max_renewals, s.retry_jitter, s.retry_base_s)
    assert isinstance(s.max_renewals, int)


@pytest.mark.parametrize(
    ("values", "field", "expected"),
    [
        ({"bogus": 1}, "test: bogus", "one of"),
        ({"max_renewals": "many"}, "test: max_renewals", "a number"),
        ({"max_renewals": 2.5}, "test: max_renewals", "a whole number"),
        ({"lease_s": "forever"}, "test: lease_s", "a duration"),
        ({"retry_jitter": None}, "test: retry_jitter", "a number"),
        ({"max_attempts": 0}, "test: max_attempts", "a value of at least 1"),
    ],
)
def test_with_values_refuses_bad_values_naming_source_and_field(
    values: dict[str, object], field: str, expected: str
) -> None:
    """Every bad value names where it came from and the setting."""
    with pytest.raises(InvalidInput, match=expected) as caught:
        Settings().with_values(values, "test")
    assert field == caught.value.field


def test_load_settings_without_file_or_environment_gives_defaults(tmp_path: Path) -> None:
    """No config file and no CORRAL_* variables: the defaults."""
    missing = str(tmp_path / "nope.toml")
    assert Settings() == load_settings(environ={"CORRAL_DB": "x.db"}, config_path=missing)


def _write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_load_settings_reads_the_corral_table_of_the_config_file(tmp_path: Path) -> None:
    """A [corral] table in config.toml sets values, durations as text or seconds."""
    path = _write(tmp_path, '[corral]\nlease_s = "30m"\nmax_renewals = 5\nretry_base_s = 2.5\n')
    s = load_settings(environ={}, config_path=path)
    assert (1800.0, 5, 2.5) == (s.lease_s, s.max_renewals, s.retry_base_s)


def test_load_settings_accepts_top_level_keys(tmp_path: Path) -> None:
    """Without a [corral] table, top-level keys are the settings."""
    path = _write(tmp_path, "max_attempts = 9\n")
    assert 9 == load_settings(environ={}, config_path=path).max_attempts


def test_the_environment_wins_over_the_file(tmp_path: Path) -> None:
    """CORRAL_<NAME> overrides the same setting from the config file."""
    path = _write(tmp_path, '[corral]\nlease_s = "30m"\nmax_attempts = 4\n')
    s = load_settings(environ={"CORRAL_LEASE_S": "2h"}, config_path=path)
    assert (7200.0, 4) == (s.lease_s, s.max_attempts)


@pytest.mark.parametrize(("text", "seconds"), [("120", 120.0), ("1.5", 1.5), ("2m", 120.0)])
def test_duration_settings_take_bare_seconds_or_units(text: str, seconds: float) -> None:
    """A *_s variable accepts a bare number of seconds as well as a duration with units."""
    assert seconds == load_settings(environ={"CORRAL_LEASE_S": text}).lease_s


def test_nan_in_a_config_file_is_refused(tmp_path: Path) -> None:
    """TOML's nan is not a valid setting: validation names the file and the field."""
    path = _write(tmp_path, "[corral]\nretry_jitter = nan\n")
    with pytest.raises(InvalidInput, match=r"config.toml: retry_jitter: expected"):
        load_settings(environ={}, config_path=path)


def test_corral_config_names_the_file(tmp_path: Path) -> None:
    """CORRAL_CONFIG points at the config file, ahead of the default path."""
    path = _write(tmp_path, "max_crashes = 7\n")
    s = load_settings(environ={"CORRAL_CONFIG": path}, config_path=str(tmp_path / "other.toml"))
    assert 7 == s.max_crashes


@pytest.mark.parametrize(
    ("environ", "field"),
    [
        ({"CORRAL_MAX_ATTEMPTS": "many"}, "environment: max_attempts"),
        ({"CORRAL_LEASE_S": "forever"}, "environment: lease_s"),
        ({"CORRAL_MAX_RENEWALS": "1.5"}, "environment: max_renewals"),
        ({"CORRAL_MAX_ATTEMPTS": "0"}, "environment: max_attempts"),
        ({"CORRAL_RETRY_JITTER": "2"}, "environment: retry_jitter"),
        ({"CORRAL_RETRY_JITTER": "nan"}, "environment: retry_jitter"),
    ],
)
def test_bad_environment_values_name_the_variable(environ: dict[str, str], field: str) -> None:
    """A bad CORRAL_* value is InvalidInput naming the environment and the setting."""
    with pytest.raises(InvalidInput) as caught:
        load_settings(environ=environ)
    assert field == caught.value.field


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("lease_s = ", "a readable TOML file"),
        ("corral = 5\n", "a \\[corral\\] table"),
        ("[bogus]\nx = 1\n", "one of the sections"),
        ("[process]\nrestart = 1\n", "one of process.kill_timeout"),
        ("[env]\ndeny = [1]\n", "a list of strings"),
        ("[pool]\nexec = 5\n", "text"),
        ("[queues]\nbatch = 5\n", "a table with max_ready"),
        ("[queues.batch]\nmax_waiting = 5\n", "one of max_ready, max_running, rate"),
        ("[queues.batch]\nmax_running = 0\n", "greater than 0"),
        ("[queues.batch]\nmax_ready = 2.5\n", "a whole number"),
        ("[corral]\nbogus = 1\n", "one of"),
        ('[corral]\nlease_s = "soon"\n', "a duration"),
    ],
)
def test_bad_config_files_name_the_file(tmp_path: Path, text: str, expected: str) -> None:
    """A config file that does not parse, or holds bad values, is InvalidInput naming its path."""
    path = _write(tmp_path, text)
    with pytest.raises(InvalidInput, match=expected) as caught:
        load_settings(environ={}, config_path=path)
    assert caught.value.field.startswith(path)


def test_a_named_config_file_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    """CORRAL_CONFIG naming a missing file is refused rather than silently ignored."""
    with pytest.raises(InvalidInput, match=r"^CORRAL_CONFIG: expected the path of an existing"):
        load_settings(environ={"CORRAL_CONFIG": str(tmp_path / "missing.toml")})


def test_sections_name_settings_by_section_and_key(tmp_path: Path) -> None:
    """`[process] kill_timeout` sets kill_timeout_s; every SPEC row has one place in the file."""
    path = _write(
        tmp_path,
        '[lease]\nduration = "5m"\n[process]\nkill_timeout = "3s"\nmax_restarts = 4\n'
        '[reconcile]\ninterval = "1s"\n[pool]\nworkers = 3\nexec = "./agent.sh"\nkinds = ["code"]\n'
        '[env]\nallow = ["ANTHROPIC_API_KEY"]\n',
    )
    s = load_settings(environ={}, config_path=path)
    assert (300.0, 3.0, 4, 1.0) == (
        s.lease_s,
        s.kill_timeout_s,
        s.max_restarts,
        s.reconcile_interval_s,
    )
    assert (
        ProcessPolicy(
            restart_delay_s=1.0,
            max_restart_delay_s=60.0,
            max_restarts=4,
            min_uptime_s=10.0,
            kill_timeout_s=3.0,
            log_max_bytes=10_485_760,
            log_backups=3,
        )
        == s.process
    )
    assert (3, "./agent.sh", ("code",), ()) == (
        s.pool.workers,
        s.pool.options.exec,
        s.pool.options.kinds,
        s.pool.options.queues,
    )
    assert ("ANTHROPIC_API_KEY",) == s.env.allow
    assert "AWS_*" in s.env.deny
    assert len({spec.key for spec in SPEC.values()}) == len(SPEC)


def test_origins_say_where_each_value_came_from(tmp_path: Path) -> None:
    """Defaults, the file's path and the variable's name are recorded per setting."""
    path = _write(tmp_path, "[retry]\nmax_attempts = 5\n[queues.api]\nrate = 30\n")
    s = load_settings(environ={"CORRAL_LEASE_S": "1h"}, config_path=path)
    assert "default" == s.source_of("max_crashes")
    assert path == s.source_of("max_attempts")
    assert path == s.source_of("queues.api")
    assert "environment (CORRAL_LEASE_S)" == s.source_of("lease_s")


def test_queue_limits_are_read_per_queue(tmp_path: Path) -> None:
    """`[queues.NAME]` tables give max_ready, max_running and rate; absent keys are unlimited."""
    path = _write(
        tmp_path, "[queues.api]\nmax_running = 2\nrate = 30\n[queues.bulk]\nmax_ready = 100\n"
    )
    s = load_settings(environ={}, config_path=path)
    assert {
        "api": QueueLimits(max_running=2, rate=30.0),
        "bulk": QueueLimits(max_ready=100),
    } == dict(s.queues)


def test_list_settings_take_comma_separated_text_from_the_environment() -> None:
    """CORRAL_ENV_ALLOW=A,B is the list ("A", "B"); an empty entry is dropped."""
    s = load_settings(environ={"CORRAL_ENV_ALLOW": "OPENAI_API_KEY, ANTHROPIC_API_KEY,"})
    assert ("OPENAI_API_KEY", "ANTHROPIC_API_KEY") == s.env_allow


def test_a_boolean_is_not_a_number() -> None:
    """`max_restarts = true` is refused instead of read as 1."""
    with pytest.raises(InvalidInput, match="max_restarts: expected a number"):
        Settings().with_values({"max_restarts": True}, "test")
