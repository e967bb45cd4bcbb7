"""Issue 31's task budget as a user meets it: a real runner runs the stand-in claude
(tests/agents/fakes, FAKE:turns=N: the real stream-json, each assistant message carrying
its `message.usage`, the result its `total_cost_usd`) in a real worktree. Past the task's
cap the run is stopped within one turn and the task waits `budget: ...`, its worktree and
session kept; `answer --budget +1` resumes the same session, which finishes and lands."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.acceptance.test_work_lands import Project, assert_landed, init_repo
from tests.agents.recorded import assert_resumed

# The stand-in's turn at the built-in claude profile's prices (its TURN_COST_USD).
TURN_USD = (2000 * 3 + 4000 * 3.75 + 20000 * 0.30 + 5000 * 15) / 1_000_000
TURN_TOKENS = 2000 + 4000 + 5000  # billed: input, cache writes, output (no cache reads)


class Budgeted(Project):
    """A project whose stand-in reads its directives from a file, a turn 0.3 s apart
    (far longer than the watch's poll)."""

    @property
    def env(self) -> dict[str, str]:
        return super().env | {
            "FAKE_DIRECTIVES": str(self.folder / "directives"),
            "FAKE_TURN_S": "0.3",
        }


@pytest.fixture
def project(tmp_path: Path) -> Budgeted:
    init_repo(tmp_path)
    (tmp_path / ".corral").mkdir()
    made = Budgeted(tmp_path)
    assert 0 == made("init").returncode
    return made


def directives(project: Project, text: str) -> None:
    """What the stand-in's next run does (FAKE_DIRECTIVES, read at each invocation)."""
    (project.folder / "directives").write_text(text)


def budgeted(project: Project, *caps: str) -> str:
    done = project("add", "Refactor the parser", *caps)
    assert 0 == done.returncode, done.stderr
    return done.stdout.strip()


def runs(project: Project, task: str) -> list[dict[str, object]]:
    return list(project.json("runs", "--task", task))


def test_a_run_past_its_cost_cap_stops_within_a_turn_waits_and_resumes_when_raised(
    project: Project,
) -> None:
    directives(project, "FAKE:turns=30")
    task = budgeted(project, "--max-cost", "1.00")
    stopped = project.work("claude")
    assert "outcome=waiting" in stopped.stderr, stopped.stderr
    shown = project.json("show", task)
    assert ("waiting", "budget") == (shown["status"], shown["wait_reason"].split(":")[0])
    [run] = runs(project, task)
    usage = run["usage"]
    assert isinstance(usage, dict)
    assert "budget" == run["stop_reason"]
    assert 1.00 <= usage["cost_usd"] < 1.00 + TURN_USD  # within one turn of the cap
    [first] = project.calls()
    assert Path(first["cwd"]).is_dir()  # its worktree kept
    [caps] = project.json("usage", "--caps")  # no day cap: the task's budget alone
    expected = {"scope": "task", "name": task, "status": "waiting", "max_cost_usd": 1.0}
    assert expected | {"max_tokens": None, "cost_usd": usage["cost_usd"]} == {
        k: v for k, v in caps.items() if k not in ("title", "tokens")
    }
    shown_caps = project("usage", "--caps").stdout.splitlines()
    assert ["no day caps", ""] == shown_caps[:2]
    assert [task, "waiting", f"${usage['cost_usd']:.2f}", "of", "$1.00", "-"] == shown_caps[
        3
    ].split()[:6]

    directives(project, "FAKE:turns=2")
    assert 0 == project("answer", task, "--budget", "+1").returncode
    assert {"max_cost_usd": 2.0} == project.json("show", task)["payload"]["budget"]
    finished = project.work("claude")
    assert 0 == finished.returncode, finished.stderr
    _, second = project.calls()
    assert_resumed(first, second)
    assert_landed(project, task)
    assert [] == project.json("usage", "--caps")  # done: no longer listed
    [later] = [r["usage"] for r in runs(project, task) if r["id"] != run["id"]]
    assert isinstance(later, dict)
    assert round(2 * TURN_USD, 6) == round(later["cost_usd"], 6)  # the agent's own cost


def test_a_token_cap_alone_stops_a_run_too(project: Project) -> None:
    """For a flat-rate plan: tokens only, no price needed."""
    directives(project, "FAKE:turns=30")
    task = budgeted(project, "--max-tokens", "50k")
    project.work("claude")
    shown = project.json("show", task)
    assert "waiting" == shown["status"]
    assert shown["wait_reason"].startswith("budget: task cap reached: ")
    [run] = runs(project, task)
    usage = run["usage"]
    assert isinstance(usage, dict)
    billed = usage["input_tokens"] + usage["output_tokens"] + usage["cache_write_tokens"]
    assert 50_000 <= billed < 50_000 + TURN_TOKENS


def test_a_bad_cap_or_raise_exits_2_naming_it_and_writes_nothing(project: Project) -> None:
    for flag, value in (("--max-cost", "lots"), ("--max-cost", "-1"), ("--max-tokens", "2X")):
        done = project("add", "Refactor", flag, value)
        assert (2, "") == (done.returncode, done.stdout), (flag, value)
        assert flag.removeprefix("--").replace("-", "_") in done.stderr
    assert [] == project.json("list")
    task = budgeted(project, "--max-tokens", "2M")
    refused = project("answer", task, "--budget", "+1")
    assert 0 != refused.returncode
    assert "ready" == project.json("show", task)["status"]


def test_a_day_zone_that_is_no_zone_is_one_line_naming_its_key(project: Project) -> None:
    """`[budgets] day_zone = "Mars/Olympus"`: every command refuses the settings, exit 2,
    one line naming the file and the key; a real zone is taken."""
    config = project.folder / ".corral" / "config.toml"
    config.write_text('[budgets]\nday_zone = "Mars/Olympus"\n')
    refused = project("usage", "--caps")
    expected = (
        f"corral: error: {config}: budgets.day_zone: expected an IANA time zone name such "
        "as Europe/Paris or UTC, got 'Mars/Olympus'\n"
    )
    assert (2, "", expected) == (refused.returncode, refused.stdout, refused.stderr)
    config.write_text('[budgets]\nday_zone = "Europe/Paris"\n')
    assert 0 == project("usage", "--caps").returncode
