"""How far past its budget a run goes before it is stopped (issue 31).

Each run: a task with a cap (half of them `--max-cost 0.50`, half `--max-tokens 60k`), run
as the worker runs an agent (runtime/worker/command_job.py with its StreamWatch) by a
`claude` of this script's own that speaks Claude Code's stream-json: an init line, then
turns, each an `assistant` message written as two lines (a text block and a tool call,
both carrying the message's `message.usage`, as the real stream does), a tool result, and
a pause of 100 to 300 ms (a real turn takes seconds); each turn's usage is random (1k to
5k input, 2k to 8k cache writes, 10k to 40k cache reads, 1k to 6k output tokens, at Sonnet
4.5's list prices $0.03 to $0.15). It would write 40 turns; corral stops it at the cap.

- overshoot: what the run spent past its cap when stopped (the usage it recorded, priced
  by the profile), in dollars and billed tokens.
- turns past: turns the transcript holds after the one that crossed the cap. Target: 0 in
  every run, that is, the overshoot is at most the crossing turn's usage.

    .venv/bin/python bench/budget_overshoot.py [--runs 50]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys

from corral import FakeClock, NewTask, Settings, enqueue
from corral.model.agents import BUILT_IN
from corral.model.budgets import Budget, billed_tokens, budget_of, priced, with_budget
from corral.model.usage import USAGE_KEYS
from corral.runtime.worker.agent_runs import AgentSetup, StreamWatch, budget_watch
from corral.runtime.worker.command_job import CommandJob, prepare, run_prepared
from corral.runtime.worker.config import Workplace
from measure import Spread, Verdicts, banner, new_store, table, temp_dir

COST_CAP = 0.50
TOKEN_CAP = 60_000
AGENT = """#!{python}
import json, random, sys, time, uuid
sys.stdin.read()
session = str(uuid.uuid4())
def emit(event):
    sys.stdout.write(json.dumps(event, separators=(",", ":")) + "\\n")
    sys.stdout.flush()
emit({{"type": "system", "subtype": "init", "session_id": session}})
for turn in range(40):
    usage = {{"input_tokens": random.randint(1000, 5000),
              "cache_creation_input_tokens": random.randint(2000, 8000),
              "cache_read_input_tokens": random.randint(10000, 40000),
              "output_tokens": random.randint(1000, 6000)}}
    message_id = "msg_" + uuid.uuid4().hex
    for block in ({{"type": "text", "text": "Turn."}},
                  {{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {{}}}}):
        message = {{"id": message_id, "type": "message", "role": "assistant",
                    "content": [block], "usage": usage}}
        emit({{"type": "assistant", "message": message, "session_id": session}})
    emit({{"type": "user", "message": {{"role": "user", "content": []}}, "session_id": session}})
    time.sleep(random.uniform(0.1, 0.3))
emit({{"type": "result", "subtype": "success", "is_error": False, "session_id": session,
       "total_cost_usd": 9.99, "usage": {{}}}})
"""
CLAUDE_KEYS = {
    "input_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "cache_creation_input_tokens": "cache_write_tokens",
    "cache_read_input_tokens": "cache_read_tokens",
}


def turns_of(transcript: str) -> list[dict[str, int]]:
    """Each message's usage in the transcript, under corral's names, in order."""
    seen: dict[str, dict[str, int]] = {}
    with open(transcript, encoding="utf-8") as handle:
        for line in handle:
            event = json.loads(line)
            if event.get("type") == "assistant":
                message = event["message"]
                seen[message["id"]] = {CLAUDE_KEYS[k]: v for k, v in message["usage"].items()}
    return list(seen.values())


def one_run(folder: str, index: int, budget: Budget) -> tuple[float, int, int]:
    """(dollars past the cap, tokens past the cap, turns past the crossing one)."""
    store = new_store(os.path.join(folder, f"run-{index}.db"))
    profile = BUILT_IN["claude"]
    agent = AgentSetup(profile=profile, provider=None)
    env = {**os.environ, "PATH": f"{folder}:{os.environ['PATH']}"}
    job = CommandJob(argv=profile.command, runs_dir=os.path.join(folder, f"runs-{index}"),
                     workdir=folder, agent=agent, base_env=env)  # fmt: skip
    task = enqueue(store, NewTask(title="spend", payload=with_budget({}, budget)))
    place = Workplace(store=store, worker_id="w-bench", settings=Settings(),
                      clock=FakeClock(), log=logging.getLogger("bench"))  # fmt: skip
    prepared = prepare(job, task, token=1, run_id=f"r-{index}", worker_id="w-bench",
                       db=store.url, namespace="default")  # fmt: skip
    watching = budget_watch(place, agent, task_id=task.id, queue=task.queue,
                            budget=budget_of(task.payload))  # fmt: skip
    watch = StreamWatch(place, agent, run_id=f"r-{index}", task_id=task.id,
                        transcript_path=prepared.spec.transcript_path, budget=watching)  # fmt: skip
    done = run_prepared(job, prepared, clock=place.clock, stop=lambda: None,
                        on_stall=lambda: None, on_resume=lambda: None, watch=watch)  # fmt: skip
    store.close()
    assert done.wait_reason is not None and done.wait_reason.startswith("budget"), done
    spent_usd = priced(done.usage, profile.prices) or 0.0
    spent_tokens = billed_tokens(done.usage)
    turns = turns_of(prepared.spec.transcript_path)
    total: dict[str, int] = dict.fromkeys(USAGE_KEYS, 0)
    crossing = len(turns)
    for number, turn in enumerate(turns, 1):
        total = {k: total[k] + turn.get(k, 0) for k in USAGE_KEYS}
        over_cost = budget.max_cost_usd is not None and (
            (priced(total, profile.prices) or 0) >= budget.max_cost_usd
        )
        over_tokens = budget.max_tokens is not None and billed_tokens(total) >= budget.max_tokens
        if over_cost or over_tokens:
            crossing = number
            break
    usd_past = spent_usd - (budget.max_cost_usd or spent_usd)
    tokens_past = spent_tokens - (budget.max_tokens or spent_tokens)
    return usd_past, tokens_past, len(turns) - crossing


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    banner("budget overshoot", __doc__.split("\n\n")[1])
    verdicts = Verdicts("budget_overshoot")
    rows: list[tuple[object, ...]] = []
    with temp_dir("budget") as folder:
        agent = os.path.join(folder, "claude")
        with open(agent, "w", encoding="utf-8") as handle:
            handle.write(AGENT.format(python=sys.executable))
        os.chmod(agent, 0o700)  # the stand-in, run by this user only
        for cap, budget in (
            (f"${COST_CAP:.2f}", Budget(max_cost_usd=COST_CAP)),
            (f"{TOKEN_CAP} tokens", Budget(max_tokens=TOKEN_CAP)),
        ):
            results = [one_run(folder, len(rows) * 1000 + i, budget) for i in range(args.runs // 2)]
            usd = Spread.of([r[0] for r in results])
            tokens = Spread.of([float(r[1]) for r in results])
            past = max(r[2] for r in results)
            by_cost = budget.max_cost_usd is not None  # the other figure is not capped
            rows.append((cap, len(results),
                         f"{usd.p50_s:.3f} / {usd.max_s:.3f}" if by_cost else "-",
                         "-" if by_cost else f"{tokens.p50_s:,.0f} / {tokens.max_s:,.0f}",
                         past))  # fmt: skip
            verdicts.check(f"{cap}: turns past the crossing one, worst run", str(past), past == 0)
            verdicts.check(
                f"{cap}: never stopped short of the cap",
                f"${min(r[0] for r in results):.3f} min"
                if by_cost
                else f"{min(r[1] for r in results)} tokens min",
                all(r[0] >= 0 and r[1] >= 0 for r in results),
            )
    print(table(["cap", "runs", "$ past p50 / max", "tokens past p50 / max", "turns past"], rows))
    return verdicts.finish()


if __name__ == "__main__":
    sys.exit(main())
