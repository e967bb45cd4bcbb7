"""A run whose diff disables tests (a skip marker added, a test file deleted) is flagged on
the task: `show` (JSON and text) and `review show` list what it disabled."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .conftest import agent_script, git

SKIPPING_AGENT = """#!/bin/sh
mkdir -p tests
printf 'import pytest\\n\\n\\n@pytest.mark.skip(reason="flaky")\\ndef test_new():\\n    pass\\n' \\
    > tests/test_new.py
git rm --quiet tests/test_old.py
"""


def test_a_run_that_skips_and_deletes_tests_is_flagged_in_show_and_review(
    cli: Any, repo: Path, tmp_path: Path
) -> None:
    """The marker line and the deleted file, each named with its path."""
    (repo / "tests").mkdir()
    (repo / "tests" / "test_old.py").write_text("def test_old():\n    assert True\n")
    git(repo, "add", "tests")
    git(repo, "commit", "--quiet", "-m", "a test")
    script, _ = agent_script(tmp_path, SKIPPING_AGENT)
    task = cli("add", "make it green", "--review").out.strip()
    started = cli(
        *("worker", "start", "--name", "w", "--exec", script, "--once", "--worktree"),
        *("--workdir", str(repo)),
    )
    assert 0 == started.code, started.err
    expected = [
        'tests/test_new.py: @pytest.mark.skip(reason="flaky")',
        "tests/test_old.py: deleted",
    ]
    shown = json.loads(cli("show", task, "--json").out)
    assert ("in_review", expected) == (shown["status"], shown["work"]["tests_disabled"])
    text = cli("show", task).out
    assert "\ntests disabled: tests/test_old.py: deleted" in text
    review = cli("review", "show", task, "--repo", str(repo)).out
    assert "tests disabled by its work:\n  tests/test_new.py: @pytest.mark.skip" in review


def test_a_run_that_leaves_tests_alone_is_not_flagged(cli: Any, repo: Path, tmp_path: Path) -> None:
    """An ordinary edit: nothing listed, no line in `show`."""
    script, _ = agent_script(tmp_path, "#!/bin/sh\necho more >> shared.txt\n")
    task = cli("add", "edit", "--review").out.strip()
    started = cli(
        *("worker", "start", "--name", "w", "--exec", script, "--once", "--worktree"),
        *("--workdir", str(repo)),
    )
    assert 0 == started.code, started.err
    assert [] == json.loads(cli("show", task, "--json").out)["work"]["tests_disabled"]
    assert "tests disabled" not in cli("show", task).out
