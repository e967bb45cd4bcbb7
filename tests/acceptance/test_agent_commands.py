"""The agent commands through the CLI as processes: `provider list|set`, `usage`, `worker
start --agent` with the fake agent CLIs, user profiles, `show`'s totals and `why` naming a
parked provider (docs/agents.md, docs/cli.md "Agent commands").

Every test runs real `corral` processes on a SQLite store in `.corral/` of its own folder,
so user profiles live in `.corral/agents/` as the docs say; the fakes of tests/agents/fakes
come first on PATH and log each invocation (argv, prompt, session) to FAKE_AGENT_LOG. The
store's conformance for providers and usage is tests/store/test_providers.py; the
end-to-end fleet behaviour (parking, resume) is tests/runtime/test_agents.py.
"""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import json
import os
import sqlite3
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import Result

from corral import NewWorker, open_store
from corral.usecases import workers

FAKES = Path(__file__).resolve().parents[1] / "agents" / "fakes"
PROVIDER_HEADERS = ["PROVIDER", "WORKERS", "RUNNING", "MAX_RUNNING", "PARKED_UNTIL", "HELD"]
USAGE_COLUMNS = ["RUNS", "WITH_USAGE", "INPUT", "OUTPUT", "CACHE_READ", "CACHE_WRITE", "COST"]
TOTAL_KEYS = (
    "runs",
    "with_usage",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cost_usd",
    "wall_s",
)
CLAUDE_USAGE = {  # what one fake claude run reports (tests/agents/fakes/claude)
    "input_tokens": 12,
    "output_tokens": 34,
    "cache_read_tokens": 7800,
    "cache_write_tokens": 560,
    "cost_usd": 0.0421,
}


@dataclass
class Project:
    """A folder with its store in `.corral/`, and `corral` run there with the fakes on PATH."""

    folder: Path
    run: Any  # the `cli` fixture

    @property
    def db(self) -> str:
        return str(self.folder / ".corral" / "corral.db")

    @property
    def log(self) -> Path:
        return self.folder / "agents.jsonl"

    def __call__(self, *args: str, path: str | None = None) -> Result:
        env = {
            "CORRAL_DB": self.db,
            "PATH": path if path is not None else f"{FAKES}:{os.environ['PATH']}",
            "FAKE_AGENT_LOG": str(self.log),
            "FAKE_LIMIT_UNTIL": str(self.folder / "limit-until"),
        }
        result: Result = self.run(*args, env=env)
        return result

    def json(self, *args: str) -> Any:
        """The JSON a command that succeeds prints."""
        result = self(*args, "--json")
        assert 0 == result.code, result.err
        return json.loads(result.out)

    def add(self, title: str) -> str:
        result = self("add", "--", title)
        assert 0 == result.code, result.err
        return result.out.strip()

    def work(self, *args: str, path: str | None = None) -> Result:
        """`worker start ... --once` in the project's folder: at most one task."""
        return self("worker", "start", "--workdir", str(self.folder), "--once", *args, path=path)

    def calls(self) -> list[dict[str, Any]]:
        """Every fake agent invocation so far, oldest first."""
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def profile(self, name: str, text: str) -> None:
        """Write the user profile `.corral/agents/NAME.toml`."""
        folder = self.folder / ".corral" / "agents"
        folder.mkdir(exist_ok=True)
        (folder / f"{name}.toml").write_text(text)

    def rows(self, table: str) -> list[tuple[object, ...]]:
        """Every row of `table`, read without writing."""
        conn = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)
        try:
            return sorted(conn.execute(f"SELECT * FROM {table}"), key=repr)
        finally:
            conn.close()


@pytest.fixture
def project(cli, tmp_path: Path) -> Project:  # type: ignore[no-untyped-def]
    """An initialized project folder."""
    (tmp_path / ".corral").mkdir()
    made = Project(tmp_path, cli)
    assert 0 == made("init").code
    return made


def one_error_line(result: Result) -> str:
    """The one line a refused command printed on stderr (exit 2, no traceback)."""
    assert 2 == result.code, (result.out, result.err)
    assert "Traceback" not in result.err
    (line,) = result.err.splitlines()
    assert line.startswith("corral: error: ")
    return line.removeprefix("corral: error: ")


def only_run(project: Project, task_id: str) -> dict[str, Any]:
    (run,) = project.json("runs", "--task", task_id)
    return dict(run)


# --- provider list / provider set --------------------------------------------------------


def test_provider_set_caps_an_account_and_provider_list_shows_it(project: Project) -> None:
    """`provider set claude --max-running 2`: the table's columns, and the JSON shape."""
    assert "no provider accounts" == project("provider", "list").out.strip()
    assert [] == project.json("provider", "list")
    done = project("provider", "set", "claude", "--max-running", "2")
    assert (0, "provider claude: claims go ahead") == (done.code, done.out.strip())
    header, row = project("provider", "list").out.splitlines()
    assert PROVIDER_HEADERS == header.split()
    assert ["claude", "0", "0", "2", "-"] == row.split()
    assert [
        {
            "name": "claude",
            "max_running": 2,
            "paused": False,
            "parked": False,
            "parked_until": None,
            "park_reason": None,
            "running": 0,
            "workers": 0,
            "held": None,
        }
    ] == project.json("provider", "list")


def test_pause_stops_an_accounts_claims_until_resume(project: Project) -> None:
    """`--pause` holds the account (held `paused`), `--resume` lets it claim again; the
    cap set before is kept by both."""
    project("provider", "set", "claude", "--max-running", "2")
    paused = project("provider", "set", "claude", "--pause")
    assert (0, "provider claude: paused") == (paused.code, paused.out.strip())
    (state,) = project.json("provider", "list")
    assert (2, True, "paused") == (state["max_running"], state["paused"], state["held"])
    assert "paused" == project("provider", "list").out.splitlines()[1].split()[-1]
    resumed = project.json("provider", "set", "claude", "--resume")
    assert (2, False, None) == (resumed["max_running"], resumed["paused"], resumed["held"])
    assert [resumed] == project.json("provider", "list")


def test_max_running_none_removes_the_cap_and_zero_stops_claims(project: Project) -> None:
    """`--max-running none` leaves the account without a cap; 0 holds every claim."""
    project("provider", "set", "claude", "--max-running", "2")
    uncapped = project.json("provider", "set", "claude", "--max-running", "none")
    assert (None, None) == (uncapped["max_running"], uncapped["held"])
    assert all(s["max_running"] is None for s in project.json("provider", "list"))
    stopped = project("provider", "set", "claude:work", "--max-running", "0")
    assert "provider claude:work: at max_running (0 of 0 running)" == stopped.out.strip()


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["../x", "--max-running", "1"], "provider"),
        (["Claude", "--max-running", "1"], "provider"),
        (["claude:Work", "--pause"], "provider"),
        (["claude", "--max-running", "-1"], "max_running"),
        (["claude", "--max-running", "many"], "max_running"),
        (["claude", "--max-running", " 5"], "max_running"),
        (["claude", "--max-running", "+5"], "max_running"),
        (["claude", "--max-running", "1_000"], "max_running"),
        (["claude", "--max-running", "\u0665"], "max_running"),  # an Arabic-Indic 5
        (["claude", "--max-running", "2147483648"], "max_running"),
        (["claude", "--pause", "--resume"], "pause"),
        (["claude"], "provider"),
    ],
)
def test_bad_provider_set_is_one_line_exit_2_and_writes_nothing(
    project: Project, args: list[str], field: str
) -> None:
    """Each refusal names its field in one line and leaves the accounts and the journal
    as they were: on an empty store, and with an account set."""
    for setup in ([], ["provider", "set", "claude", "--max-running", "3"]):
        if setup:
            assert 0 == project(*setup).code
        before = (project.rows("providers"), project.rows("events"))
        listed = project("provider", "list", "--json").out
        line = one_error_line(project("provider", "set", *args))
        assert line.startswith(f"{field}: expected "), line
        assert before == (project.rows("providers"), project.rows("events"))
        assert listed == project("provider", "list", "--json").out


# --- usage ---------------------------------------------------------------------------------


def test_usage_with_no_runs_says_so(project: Project) -> None:
    """No run: `no runs`, and `[]` in JSON, whatever the grouping."""
    for by in ("task", "agent", "day", "total"):
        shown = project("usage", "--by", by)
        assert (0, "no runs") == (shown.code, shown.out.strip())
        assert [] == project.json("usage", "--by", by)


def test_usage_sums_real_claude_runs_by_agent_day_and_since(project: Project) -> None:
    """Two tasks run by `worker start --agent claude --once`: `usage --by agent` sums what
    each stream reported; `--by day` groups them under the UTC day they started;
    `--since 1h` keeps them, a window that ended before them keeps none."""
    tasks = [project.add("first"), project.add("second")]
    for _ in tasks:
        assert 0 == project.work("--name", "a", "--agent", "claude").code
    (total,) = project.json("usage", "--by", "agent")
    assert {
        "key": "claude",
        "runs": 2,
        "with_usage": 2,
        "tasks": 2,
        "input_tokens": 24,
        "output_tokens": 68,
        "cache_read_tokens": 15600,
        "cache_write_tokens": 1120,
    } == {k: v for k, v in total.items() if k not in ("cost_usd", "wall_s")}
    assert pytest.approx(2 * 0.0421) == total["cost_usd"]
    assert total["wall_s"] > 0
    (day,) = {run["started_at"][:10] for run in project.json("runs")}  # UTC
    header, row, total_row = project("usage", "--by", "day").out.splitlines()
    assert ["DAY", *USAGE_COLUMNS, "WALL_S"] == header.split()
    assert [day, "2", "2", "24", "68", "15600", "1120", "$0.0842"] == row.split()[:8]
    assert ["total", "2", "2", "24", "68", "15600", "1120", "$0.0842"] == total_row.split()[:8]
    assert [total] == project.json("usage", "--by", "agent", "--since", "1h")
    time.sleep(0.01)  # so that 1 ms ago is after both runs started
    assert "no runs" == project("usage", "--since", "1ms").out.strip()


def test_usage_by_task_shows_each_title_and_a_total_row(project: Project) -> None:
    """`usage` (by task): the task's title last on its line (one printable line), then a
    `total` row summing every figure; `--json` gives each group's `title`."""
    first, second = project.add("port the parser"), project.add("fix \x1b[31mred\x1b[0m")
    for name in ("a", "b"):
        assert 0 == project.work("--name", name, "--agent", "claude").code
    lines = project("usage").out.splitlines()
    assert ["TASK", *USAGE_COLUMNS, "WALL_S", "TITLE"] == lines[0].split()
    titles = {line.split()[0]: line.split(maxsplit=9)[9] for line in lines[1:3]}
    assert {first: "port the parser", second: "fix \\x1b[31mred\\x1b[0m"} == titles
    assert ["total", "2", "2", "24", "68", "15600", "1120", "$0.0842"] == lines[3].split()[:8]
    by_key = {t["key"]: t["title"] for t in project.json("usage")}
    assert {first: "port the parser", second: "fix \x1b[31mred\x1b[0m"} == by_key


def test_usage_by_total_is_the_total_row_as_a_one_row_listing(project: Project) -> None:
    """`--json` stays an array; `--by total --json` is `[total]`: the text's total row's
    figures, `tasks` counting each task once; the text is that one row, not twice."""
    for title in ("port the parser", "fix the lexer"):
        project.add(title)
    for name in ("a", "b"):
        assert 0 == project.work("--name", name, "--agent", "claude").code
    assert all(t["key"] != "total" for t in project.json("usage"))
    (total,) = project.json("usage", "--by", "total")
    figures = ("runs", "with_usage", "tasks", "input_tokens", "output_tokens")
    assert ("total", 2, 2, 2, 24, 68) == (total["key"], *(total[k] for k in figures))
    assert pytest.approx(2 * 0.0421) == total["cost_usd"]
    header, row = project("usage", "--by", "total").out.splitlines()
    assert ["TOTAL", *USAGE_COLUMNS, "WALL_S"] == header.split()
    assert ["total", "2", "2", "24", "68", "15600", "1120", "$0.0842"] == row.split()[:8]


def test_usage_refuses_an_unknown_grouping(project: Project) -> None:
    """`--by colour` is a usage error: exit 2, the choices named, nothing printed on stdout."""
    refused = project("usage", "--by", "colour")
    assert (2, "") == (refused.code, refused.out)
    assert "Traceback" not in refused.err
    assert refused.err.splitlines()[-1].startswith("corral: error: argument --by: invalid choice")


def test_a_run_without_usage_counts_in_runs_but_not_in_with_usage(project: Project) -> None:
    """A run whose stream reported nothing (FAKE:nousage) adds a run, no figure: the cost
    is the other run's, never 0 made up for the unknown, and the task's row shows `-`."""
    reported, silent = project.add("reports"), project.add("says nothing FAKE:nousage")
    for _ in range(2):
        assert 0 == project.work("--name", "a", "--agent", "claude").code
    assert None is only_run(project, silent)["usage"]
    (total,) = project.json("usage", "--by", "agent")
    assert (2, 1, 2, 12, 0.0421) == (
        total["runs"],
        total["with_usage"],
        total["tasks"],
        total["input_tokens"],
        total["cost_usd"],
    )
    rows = project("usage").out.splitlines()[1:-1]  # the total row last
    by_task = {row.split()[0]: row.split()[1:8] for row in rows}
    assert {
        reported: ["1", "1", "12", "34", "7800", "560", "$0.0421"],
        silent: ["1", "0", "-", "-", "-", "-", "-"],
    } == by_task
    assert [reported, silent] == [t["key"] for t in project.json("usage")]  # costliest first


# --- codex and aider --------------------------------------------------------------------------


def test_a_codex_run_records_its_thread_as_session_and_usage_without_cost(
    project: Project,
) -> None:
    """`--agent codex`: `codex exec --json -` with the prompt on stdin; the run's session
    is the thread id, its usage the turns' sum, and no `cost_usd` (codex reports none)."""
    task = project.add("port the parser")
    assert 0 == project.work("--name", "c", "--agent", "codex").code
    run = only_run(project, task)
    (called,) = project.calls()
    assert ["exec", "--json", "-", "--sandbox", "workspace-write"] == called["argv"]
    assert run["prompt"] == called["prompt"]
    assert ("codex", called["session_id"], "success", "done") == (
        run["agent"],
        run["session_id"],
        run["stop_reason"],
        run["outcome"],
    )
    assert {"input_tokens": 600, "cache_read_tokens": 1800, "output_tokens": 310} == run["usage"]
    (total,) = project.json("usage", "--by", "agent")
    assert (None, None) == (total["cost_usd"], total["cache_write_tokens"])


def test_an_aider_run_gets_its_prompt_in_a_message_file_and_records_cost(
    project: Project,
) -> None:
    """`--agent aider`: the prompt in a file named after `--message-file`, which holds the
    prompt; the usage is the Tokens lines' sum, the cost the last session cost."""
    task = project.add("rename the module")
    assert 0 == project.work("--name", "d", "--agent", "aider").code
    run = only_run(project, task)
    (called,) = project.calls()
    flags, prompt_file = called["argv"][:3], called["argv"][3]
    assert ["--yes-always", "--no-pretty", "--message-file"] == flags
    assert 4 == len(called["argv"])
    assert run["prompt"] == Path(prompt_file).read_text() == called["prompt"]
    assert "rename the module" in run["prompt"]
    assert {
        "input_tokens": 5500,
        "output_tokens": 283,
        "cache_read_tokens": 5000,
        "cache_write_tokens": 1200,
        "cost_usd": 0.016,
    } == run["usage"]
    assert ("aider", None, "success") == (run["agent"], run["session_id"], run["stop_reason"])


def test_model_and_agent_args_follow_the_profiles_own_even_when_they_are_flags(
    project: Project,
) -> None:
    """`--model M` adds `--model M`; each `--agent-arg` adds one argument after the
    profile's, a flag such as `--sandbox` too (written as docs/agents.md writes it), and a
    sandbox of the user's replaces the profile's `--sandbox workspace-write`."""
    project.add("with flags")
    done = project.work(
        "--name", "c", "--agent", "codex", "--model", "gpt-5.1-codex",
        "--agent-arg", "--sandbox", "--agent-arg", "danger-full-access",
        "--agent-arg", "-c", "--agent-arg", "x=1",
    )  # fmt: skip
    assert 0 == done.code, done.err
    (called,) = project.calls()
    model, sandbox = ["--model", "gpt-5.1-codex"], ["--sandbox", "danger-full-access"]
    assert ["exec", "--json", "-", *model, *sandbox, "-c", "x=1"] == called["argv"]


# --- user profiles ----------------------------------------------------------------------------


def test_a_user_profile_extends_claude_on_another_provider_account(project: Project) -> None:
    """`.corral/agents/mine.toml` extending claude with `provider = "claude:work"`: the
    worker spends claude:work, the run is the profile's and reads claude's stream."""
    project.profile("mine", 'extends = "claude"\nprovider = "claude:work"\n')
    task = project.add("on the work account")
    assert 0 == project.work("--name", "m", "--agent", "mine").code
    (worker,) = project.json("worker", "list")
    assert ("m", "claude:work") == (worker["name"], worker["provider"])
    run = only_run(project, task)
    assert ("mine", "done", CLAUDE_USAGE) == (run["agent"], run["outcome"], run["usage"])
    assert ["claude:work"] == [t["key"] for t in project.json("usage", "--by", "provider")]


def test_a_prompt_arg_profile_passes_an_option_like_title_after_dash_dash(
    project: Project,
) -> None:
    """A profile with `prompt = "arg"` (its command the fake's path): a task titled
    `--dangerously-skip-permissions` reaches the agent as text, after `--`."""
    flags = ["-p", "--output-format", "stream-json", "--verbose"]
    command = json.dumps([str(FAKES / "claude"), *flags])
    project.profile("argy", f'extends = "claude"\nprompt = "arg"\ncommand = {command}\n')
    (project.folder / "title-only.txt").write_text("${title}")
    task = project.add("--dangerously-skip-permissions")
    template = str(project.folder / "title-only.txt")
    started = project.work("--name", "g", "--agent", "argy", "--prompt-template", template)
    assert 0 == started.code, started.err
    (called,) = project.calls()
    permissions = ["--permission-mode", "acceptEdits"]
    assert [*flags, *permissions, "--", "--dangerously-skip-permissions"] == called["argv"]
    assert "--dangerously-skip-permissions" == called["prompt"]
    run = only_run(project, task)
    assert ("argy", "done", CLAUDE_USAGE) == (run["agent"], run["outcome"], run["usage"])


@pytest.mark.parametrize(
    ("text", "named"),
    [
        pytest.param(
            'extends = "claude"\ncolour = "red"\n',
            "agents/bad.toml colour: expected one of the",
            id="unknown-key",
        ),
        pytest.param(
            'extends = "claude"\ncommand = "claude"\n',
            "agents/bad.toml command: expected a list",
            id="wrong-type",
        ),
        pytest.param(
            'extends = "claude"\nprompt = 3\n',
            "agents/bad.toml prompt: expected a string",
            id="wrong-type-text",
        ),
        pytest.param(
            'extends = "nope"\n',
            "agents/bad.toml extends: expected one of aider, claude, claude-mcp, codex",
            id="extends-nope",
        ),
        pytest.param(
            "extends = []\n",
            "agents/bad.toml extends: expected one of aider, claude, claude-mcp, codex",
            id="extends-list",
        ),
        pytest.param(
            'extends = "claude\n',
            "agents/bad.toml: expected a readable TOML file",
            id="toml-syntax",
        ),
        pytest.param(
            'extends = "claude"\nprompt = "file"\n',
            "agents/bad.toml command: expected an argument",
            id="file-without-placeholder",
        ),
        pytest.param(
            'extends = "claude"\noutput = "xml"\n',
            "agents/bad.toml output: expected one of",
            id="unknown-output",
        ),
        pytest.param(
            'extends = "claude"\nprovider = "Work"\n',
            "agents/bad.toml provider: expected a name",
            id="bad-provider",
        ),
        pytest.param(
            'extends = "claude"\nresume = ["claude"]\n',
            "agents/bad.toml resume: expected an arg",
            id="resume-without-session",
        ),
        pytest.param(
            'output = "generic"\n',
            "agents/bad.toml command: expected a list of strings",
            id="no-command",
        ),
    ],
)
def test_a_bad_profile_is_one_line_naming_the_file_and_key(
    project: Project, text: str, named: str
) -> None:
    """A profile that cannot work is refused before the worker registers: exit 2, one
    line naming the file and the key, nothing claimed."""
    project.profile("bad", text)
    task = project.add("never claimed")
    line = one_error_line(project.work("--name", "b", "--agent", "bad"))
    assert line.startswith(named), line
    assert [] == project.json("worker", "list")
    assert "ready" == project.json("show", task)["status"]


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--agent", "Bad/name"], "agent"),
        (["--agent", "nosuch"], "agent"),
        (["--agent", "claude", "--exec", "x"], "exec"),
        (["--agent", "claude", "--exec", "true"], "exec"),
        (["--agent", "generic"], "exec"),
        (["--agent", "claude", "--call", "m:f"], "call"),
        (["--agent", "claude", "--provider", "a b"], "provider"),
    ],
)
def test_bad_agent_options_are_one_line_exit_2_and_register_nothing(
    project: Project, args: list[str], field: str
) -> None:
    """Each refusal names its option; no worker is registered, no task claimed."""
    task = project.add("never claimed")
    line = one_error_line(project.work("--name", "b", *args))
    assert line.startswith(f"{field}: expected "), line
    assert [] == project.json("worker", "list")
    assert "ready" == project.json("show", task)["status"]


def test_an_agent_missing_from_path_is_exit_2(project: Project) -> None:
    """PATH without the fakes (nor any real claude): the program is named, nothing runs."""
    empty = project.folder / "no-programs"
    empty.mkdir()
    project.add("never claimed")
    line = one_error_line(project.work("--name", "b", "--agent", "claude", path=str(empty)))
    assert "agent: expected a program on PATH, or the path of an executable, got 'claude'" == line
    assert [] == project.json("worker", "list")


# --- show totals, why ---------------------------------------------------------------------


def test_show_adds_the_totals_over_a_tasks_runs(project: Project) -> None:
    """Before any run `totals` is null and the human form has no totals lines; after a
    claude run both give its sums."""
    task = project.add("totalled")
    assert None is project.json("show", task)["totals"]
    assert "cost:" not in project("show", task).out
    assert 0 == project.work("--name", "a", "--agent", "claude").code
    totals = project.json("show", task)["totals"]
    assert set(TOTAL_KEYS) <= set(totals)
    assert {"runs": 1, "with_usage": 1, **CLAUDE_USAGE} == {
        k: totals[k] for k in TOTAL_KEYS if k != "wall_s"
    }
    assert totals["wall_s"] > 0
    lines = project("show", task).out.splitlines()
    assert [
        "runs:         1 (1 reported usage), attempts 1",
        "tokens:       12 in, 34 out, 7,800 cache read, 560 cache write",
        "cost:         $0.0421",
    ] == lines[-4:-1]
    assert lines[-1].startswith("wall time:    ")


def test_why_names_the_parked_provider_of_the_only_worker(project: Project) -> None:
    """The one live worker spends claude, parked until a reset: `why` says so (code
    provider_held), in both forms."""
    task = project.add("waits for the reset")
    with open_store(project.db) as store:
        workers.register(store, NewWorker(name="w", provider="claude"))
        until = store.now() + timedelta(hours=1)
        store.providers.park_provider(
            "claude", until=until, reason="claude five_hour limit", actor="test"
        )
    (state,) = project.json("provider", "list")
    message = f"provider claude is parked until {state['parked_until']}: claude five_hour limit"
    assert [f"{task} is ready:", f"  - {message}"] == project("why", task).out.splitlines()
    assert [{"code": "provider_held", "message": message}] == project.json("why", task)["reasons"]


def test_a_real_usage_limit_parks_the_provider_and_why_names_it(project: Project) -> None:
    """A claude run at its usage limit (FAKE:limit) parks claude until the reset its
    stream gave and defers the task without an attempt; with a live claude worker, `why`
    names the park beside the delay."""
    reset = int(time.time()) + 3600
    (project.folder / "limit-until").write_text(str(reset))
    task = project.add("limited FAKE:limit")
    assert 0 == project.work("--name", "a", "--agent", "claude").code
    run = only_run(project, task)
    assert ("deferred", "usage_limit") == (run["outcome"], run["stop_reason"])
    until = datetime.fromtimestamp(reset, UTC).isoformat()
    (state,) = project.json("provider", "list")
    assert (True, until, "claude five_hour limit") == (
        state["parked"],
        state["parked_until"],
        state["park_reason"],
    )
    shown = project.json("show", task)
    assert ("ready", 0, until) == (shown["status"], shown["attempts"], shown["run_after"])
    with open_store(project.db) as store:
        workers.register(store, NewWorker(name="w", provider="claude"))
    reasons = {r["code"]: r["message"] for r in project.json("why", task)["reasons"]}
    expected = f"provider claude is parked until {until}: claude five_hour limit"
    assert expected == reasons["provider_held"]
    assert "delayed" in reasons


def test_agent_list_shows_each_profile_its_program_and_version(project: Project) -> None:
    """`agent list`: the built-in profiles with the program found on PATH and the version
    it reports, generic, a user profile, and an invalid one listed with its error."""
    agents = project.folder / ".corral" / "agents"
    agents.mkdir()
    (agents / "mine.toml").write_text('extends = "claude"\nprovider = "claude:work"\n')
    (agents / "broken.toml").write_text('command = "not a list"\n')
    listed = project.json("agent", "list")
    seen = {p["name"]: p for p in listed}
    assert ["aider", "claude", "claude-mcp", "codex", "generic", "broken", "mine"] == [
        p["name"] for p in listed
    ]
    assert (str(FAKES / "claude"), "2.1.30 (Claude Code)", True) == (
        seen["claude"]["program"],
        seen["claude"]["version"],
        seen["claude"]["can_resume"],
    )
    assert ("codex-cli 0.146.0", "aider 0.86.1") == (
        seen["codex"]["version"],
        seen["aider"]["version"],
    )
    assert ("agents/mine.toml", "claude:work") == (seen["mine"]["source"], seen["mine"]["provider"])
    assert "command" in seen["broken"]["error"]
    bare = project("agent", "list", "--json", path="/usr/bin:/bin")
    claude = next(p for p in json.loads(bare.out) if p["name"] == "claude")
    assert (None, None) == (claude["program"], claude["version"])
    shown = project("agent", "list").out
    assert "missing" not in shown and "invalid: " in shown
