"""Pool worker processes: the environment they inherit and the rotation of their logs."""

from __future__ import annotations

from corral.runtime.pool.worker_process import rotate_log
from corral.settings import Settings


def test_deny_patterns_drop_secrets_and_allow_patterns_keep_named_ones():
    """*_TOKEN and AWS_* go; an allowed API key and ordinary names stay."""
    policy = Settings(env_allow=("OPENAI_API_KEY",)).env
    env = {
        "PATH": "/bin",
        "FOO_TOKEN": "t",
        "AWS_SECRET_ACCESS_KEY": "a",
        "OPENAI_API_KEY": "k",
        "OTHER_API_KEY": "o",
    }
    assert (
        {"PATH": "/bin", "OPENAI_API_KEY": "k"},
        sorted(env.keys() - {"PATH", "OPENAI_API_KEY"}),
    ) == policy.split(env)


def test_the_defaults_match_without_regard_to_case_and_catch_bare_and_suffixed_secrets():
    """Bare TOKEN, lower-case names, *_SECRETS, *_PAT, *_AUTH are withheld; PATH and
    SSH_AUTH_SOCK are not."""
    secrets = [
        "TOKEN",
        "token",
        "Secret",
        "PASSWORD",
        "API_KEY",
        "CI_SECRETS",
        "GH_PAT",
        "npm_auth",
        "my_api_key",
        "GITHUB_TOKEN",
        "AWS_PROFILE",
        "PGPASSWORD",
    ]
    ordinary = ["PATH", "SSH_AUTH_SOCK", "HOME", "TOKENIZERS_PARALLELISM"]
    env = dict.fromkeys(secrets + ordinary, "x")
    kept, withheld = Settings().env.split(env)
    assert (sorted(ordinary), sorted(secrets)) == (sorted(kept), withheld)


def test_a_value_holding_a_url_password_is_withheld_whatever_its_name_unless_allowed():
    """DATABASE_URL with user:pass@ (or ?password=) goes; one without a password stays;
    an allowed name passes."""
    env = {
        "DATABASE_URL": "postgresql://app:hunter2@db/app",
        "BROKER": "amqp://u:p@mq//",
        "PG": "postgresql://db/app?user=a&password=hunter2",
        "PLAIN_URL": "postgresql://app@db/app",
        "HTTP_PROXY": "http://proxy:3128",
        "KEPT_URL": "https://u:p@example.com/",
    }
    kept, withheld = Settings(env_allow=("kept_url",)).env.split(env)
    assert ["BROKER", "DATABASE_URL", "PG"] == withheld
    assert {"PLAIN_URL", "HTTP_PROXY", "KEPT_URL"} == kept.keys()


def test_a_log_at_its_size_limit_is_copied_aside_and_truncated(tmp_path):
    """log -> log.1 -> log.2; the live file starts empty; older copies past backups are gone."""
    log = tmp_path / "slot-1.log"
    for n in range(3):
        log.write_text(f"round {n}\n" * 200)
        assert rotate_log(str(log), max_bytes=1024, backups=2)
    assert "" == log.read_text()
    assert (tmp_path / "slot-1.log.1").read_text().startswith("round 2")
    assert (tmp_path / "slot-1.log.2").read_text().startswith("round 1")
    assert not (tmp_path / "slot-1.log.3").exists()


def test_a_log_under_its_limit_is_left_alone(tmp_path):
    """No rotation below max_bytes."""
    log = tmp_path / "slot-1.log"
    log.write_text("short\n")
    assert not rotate_log(str(log), max_bytes=1024, backups=2)
    assert "short\n" == log.read_text()
