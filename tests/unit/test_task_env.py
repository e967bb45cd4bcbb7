"""A task's environment: the allow-list, then the secret filter by names and by values."""

from __future__ import annotations

import json

import pytest

from corral.foundation.settings import Settings
from corral.foundation.task_env import NOT_ALLOWED, secret_in
from corral.model.agents import BUILT_IN

# Names that must not reach a task even when `[env] allow = ["*"]` opens the allow-list:
# the findings first, then the older defaults.
SECRET_NAMES = [
    "MYSQL_PWD",
    "DB_PASS",
    "SMTP_PASS",
    "SECRET_KEY",
    "ENCRYPTION_KEY",
    "PRIVATE_KEY",
    "OPENAI_APIKEY",
    "SESSION_COOKIE",
    "KUBE_BEARER",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "SLACK_WEBHOOK_URL",
    "TOKEN",
    "token",
    "GITHUB_TOKEN",
    "CI_JOB_TOKEN_FILE",
    "API_TOKENS",
    "Secret",
    "CI_SECRETS",
    "PASSWORD",
    "PGPASSWORD",
    "DB_PASSWD",
    "API_KEY",
    "my_api_key",
    "GH_PAT",
    "npm_auth",
    "AWS_PROFILE",
    "AWS_ACCESS_KEY_ID",
    "MONKEY",  # accepted: a name ending in KEY is a key far more often than not
    "SSH_ASKPASS",  # accepted: a program that hands out passwords
]
# Names that pass the secret filter (with `allow = ["*"]`, or as the worker's own).
ORDINARY_NAMES = [
    "PATH",
    "HOME",
    "LANG",
    "TERM",
    "PWD",
    "KEYBOARD_LAYOUT",
    "TOKENIZERS_PARALLELISM",
    "SSH_AUTH_SOCK",
    "GIT_AUTHOR_NAME",
    "PASSAGE",
    "EDITOR",
]

SERVICE_ACCOUNT = json.dumps({"type": "service_account", "private_key": "-----BEGIN..."})
SECRET_VALUES = [
    "host=db password=x",
    "host=db user=app password='x y'",
    "postgresql://db/app?user=a&password=hunter2",
    "Server=db;Uid=app;Pwd=hunter2;",
    "postgresql://app:hunter2@db/app",
    "amqp://u:p@mq//",
    "https://hooks.slack.com/services/T000/B000/XXXX",
    "https://discord.com/api/webhooks/123/abc",
    "https://discordapp.com/api/webhooks/123/abc",
    "Basic dXNlcjpwYXNzd29yZA==",
    "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.x",
    '{"Authorization": "bearer 0123456789abcdef"}',
    SERVICE_ACCOUNT,
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn...",
]
ORDINARY_VALUES = [
    "/usr/local/bin:/usr/bin",
    "postgresql://app@db/app",
    "http://proxy:3128",
    "host=db user=app",
    "password=",
    "bypass=1",
    "Basic authentication is on",
    "Bearer",
    '{"type": "service_account", "client_email": "a@b"}',
    "https://example.com/api/webhooks/",
]


@pytest.mark.parametrize("name", SECRET_NAMES)
def test_a_secret_name_is_withheld_even_where_a_pattern_allows_every_name(name: str) -> None:
    """With `allow = ["*"]` a name the deny patterns match is still withheld, with the pattern."""
    sifted = Settings(env_allow=("*",)).env.for_task({name: "x"})
    assert {} == sifted.kept
    assert sifted.withheld[name].startswith("name matches ")


@pytest.mark.parametrize("name", ORDINARY_NAMES)
def test_an_ordinary_name_passes_the_secret_filter(name: str) -> None:
    """PATH, PWD, KEYBOARD_LAYOUT, TOKENIZERS_PARALLELISM ... are no secrets."""
    assert {name: "x"} == Settings().env.for_worker({name: "x"}).kept


@pytest.mark.parametrize("value", SECRET_VALUES)
def test_a_secret_value_is_withheld_whatever_its_name(value: str) -> None:
    """A DSN's password=, a URL's password, a webhook, an Authorization header or a
    private key: withheld from the worker and the task alike, the reason naming the kind."""
    policy = Settings(env_allow=("*",)).env
    for sifted in (policy.for_task({"PG_DSN": value}), policy.for_worker({"PG_DSN": value})):
        assert {} == sifted.kept
        assert sifted.withheld["PG_DSN"].startswith("value holds ")


@pytest.mark.parametrize("value", ORDINARY_VALUES)
def test_an_ordinary_value_passes(value: str) -> None:
    """A URL without a password, an empty password=, prose about Basic authentication."""
    assert None is secret_in(value)


def test_a_task_gets_the_allow_list_alone() -> None:
    """The base names and CORRAL_* pass; another ordinary name is withheld as not allowed."""
    env = {"PATH": "/bin", "HOME": "/h", "LC_ALL": "C", "CORRAL_DB": "x.db", "EDITOR": "vi"}
    sifted = Settings().env.for_task(env)
    assert {"PATH", "HOME", "LC_ALL", "CORRAL_DB"} == sifted.kept.keys()
    assert {"EDITOR": NOT_ALLOWED} == sifted.withheld


def test_corral_own_secrets_stay_withheld() -> None:
    """CORRAL_* opens the allow-list, but CORRAL_TOKEN is a token."""
    sifted = Settings().env.for_task({"CORRAL_TOKEN": "t", "CORRAL_DB": "x.db"})
    assert ["CORRAL_TOKEN"] == sifted.withheld_names


def test_a_name_allowed_whole_passes_both_layers_and_a_pattern_only_the_first() -> None:
    """`allow = ["DB_PASS", "MY_*"]`: DB_PASS passes; MY_HOST passes; MY_SECRET and a MY_
    value holding a password do not."""
    policy = Settings(env_allow=("db_pass", "MY_*")).env
    env = {"DB_PASS": "p", "MY_HOST": "h", "MY_SECRET": "s", "MY_URL": "https://u:p@h/"}
    sifted = policy.for_task(env)
    assert {"DB_PASS", "MY_HOST"} == sifted.kept.keys()
    assert ["MY_SECRET", "MY_URL"] == sifted.withheld_names


def test_an_agents_declared_key_reaches_its_task_and_no_other_agents() -> None:
    """claude's task gets ANTHROPIC_API_KEY and CLAUDE_CONFIG_DIR, not OPENAI_API_KEY;
    codex's the reverse; a plain command neither."""
    env = {"ANTHROPIC_API_KEY": "a", "OPENAI_API_KEY": "o", "CLAUDE_CONFIG_DIR": "/c"}
    policy = Settings().env
    assert {"ANTHROPIC_API_KEY", "CLAUDE_CONFIG_DIR"} == (
        policy.for_task(env, BUILT_IN["claude"].env).kept.keys()
    )
    assert {"OPENAI_API_KEY"} == policy.for_task(env, BUILT_IN["codex"].env).kept.keys()
    assert {} == policy.for_task(env).kept


def test_a_declared_pattern_does_not_pass_a_secret() -> None:
    """claude declares CLAUDE_*: CLAUDE_SECRET is still withheld."""
    sifted = Settings().env.for_task({"CLAUDE_SECRET": "s"}, BUILT_IN["claude"].env)
    assert ["CLAUDE_SECRET"] == sifted.withheld_names


def test_the_worker_gets_everything_but_secrets_and_the_pools_agent_key() -> None:
    """A pool worker keeps EDITOR (no allow-list) and drops FOO_TOKEN; the key its agent
    declares passes to it."""
    env = {"EDITOR": "vi", "FOO_TOKEN": "t", "ANTHROPIC_API_KEY": "k"}
    assert {"EDITOR"} == Settings().env.for_worker(env).kept.keys()
    declared = BUILT_IN["claude"].env
    assert {"EDITOR", "ANTHROPIC_API_KEY"} == Settings().env.for_worker(env, declared).kept.keys()


def test_pgpassword_is_granted_only_when_named_whole() -> None:
    """grants("PGPASSWORD") for `allow = ["pgpassword"]`, not for `PG*`."""
    assert Settings(env_allow=("pgpassword",)).env.grants("PGPASSWORD")
    assert not Settings(env_allow=("PG*",)).env.grants("PGPASSWORD")
