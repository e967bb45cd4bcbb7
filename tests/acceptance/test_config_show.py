"""`corral config show`: every setting in force, with where it came from."""

from __future__ import annotations

import json
from pathlib import Path


def test_config_show_names_the_source_of_each_value(cli) -> None:  # type: ignore[no-untyped-def]
    """Defaults, the file beside the store and CORRAL_* variables each appear as the source."""
    config = Path(cli.db).parent / "config.toml"
    config.write_text('[process]\nkill_timeout = "3s"\n[queues.api]\nmax_running = 2\n')
    result = cli("config", "show", "--json", env={"CORRAL_LEASE_S": "1h"})
    assert 0 == result.code, result.err
    rows = {row["key"]: row for row in json.loads(result.out)}
    assert (3600.0, "environment (CORRAL_LEASE_S)") == (
        rows["lease.duration"]["value"],
        rows["lease.duration"]["source"],
    )
    assert (3.0, str(config)) == (
        rows["process.kill_timeout"]["value"],
        rows["process.kill_timeout"]["source"],
    )
    assert (2, str(config)) == (
        rows["queues.api.max_running"]["value"],
        rows["queues.api.max_running"]["source"],
    )
    assert "default" == rows["retry.max_attempts"]["source"]
    human = cli("config", "show").out
    assert "process.kill_timeout" in human and f"[{config}]" in human


def test_a_bad_file_is_one_line_naming_the_key(cli) -> None:  # type: ignore[no-untyped-def]
    """A value of the wrong type names the file, the section.key's setting and what was expected."""
    (Path(cli.db).parent / "config.toml").write_text('[process]\nmax_restarts = "many"\n')
    result = cli("config", "show")
    assert 2 == result.code
    where = Path(cli.db).parent / "config.toml"
    expected = f"{where}: process.max_restarts: expected a number (count), got 'many'"
    assert [f"corral: error: {expected}"] == result.err.splitlines()


def test_a_bad_setting_fails_a_command_that_reads_none(cli) -> None:  # type: ignore[no-untyped-def]
    """`ready` reads no setting, yet a bad file or variable fails it as it fails any command."""
    assert 0 == cli("ready").code
    bad = cli("ready", env={"CORRAL_LEASE_S": "soon"})
    assert (2, True) == (bad.code, bad.err.startswith("corral: error: environment: lease_s: "))
    (Path(cli.db).parent / "config.toml").write_text('[lease]\nduration = "soon"\n')
    assert 2 == cli("ready").code
