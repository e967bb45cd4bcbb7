"""Agent stream reading: a claude stream-json transcript of 50 MB read by corral's reader
(runtime/worker/agent_streams.py), beside `cat` of the same file.

The target (issue 16): the transcript through the profile's reader costs at most 1.3x
`cat` of it, and the runner's RSS stays under 60 MB.

- (a) cat: `cat transcript > out` with subprocess; the wall time.
- the reader: finish() of a new StreamReader over the whole transcript, in this process
  (median of --reps): what reading an agent's 50 MB stream costs. This is the target.
- (c) a run, no reader: the same `cat transcript` as a task command through
  executor.run_command (what any `--exec` run costs); (b) a run + reader: the same, with
  StreamReader.poll() called from the `stop` callback (every poll_s, as the runner wires
  it), then finish(). Both in a child process whose peak RSS (ru_maxrss) is reported beside
  that of a child that only imports the same modules; the facts found are checked
  (session id, version, usage and cost). b/a and b/c are printed, not judged: cat writes
  50 MB in less than one poll period, so the reader does all its work after the command
  ended; a real agent writes its stream over minutes and the reader keeps up at each poll.
- All sides alternate, in both orders, --reps times (medians); `out` is a new file each
  time. Then the floors of any reader in Python: reading the file in 1 MiB chunks, and
  that plus finding every newline.
- The transcript: an init line, a rate_limit_event (allowed), then assistant text and
  tool_use lines and user tool_result lines (with the tool_use_result copy Claude Code
  adds) in the proportions of a coding session, and a result line last.

    .venv/bin/python bench/agent_stream.py [--mb 50] [--reps 5]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
import uuid
from typing import TYPE_CHECKING, Any

from measure import Verdicts, banner, dump, table, tail, temp_dir

if TYPE_CHECKING:
    from corral.runtime.worker.executor import CommandSpec

RATIO_TARGET = 1.3
RSS_TARGET_MB = 60.0
TIMEOUT_S = 120
POLL_S = 0.05  # the runner's poll period: how often `stop` is called
SESSION = str(uuid.UUID(int=random.Random(7).getrandbits(128)))
VERSION = "2.1.30"
RESULT_USAGE = {
    "input_tokens": 4_211,
    "output_tokens": 96_502,
    "cache_creation_input_tokens": 310_044,
    "cache_read_input_tokens": 12_876_310,
}
COST_USD = 38.41272
EXPECTED_USAGE = {
    "input_tokens": 4_211,
    "output_tokens": 96_502,
    "cache_write_tokens": 310_044,
    "cache_read_tokens": 12_876_310,
    "cost_usd": COST_USD,
}
MODULES = (
    "corral.foundation.clock",
    "corral.runtime.worker.executor",
    "corral.runtime.worker.agent_streams",
)

# -- the transcript -------------------------------------------------------------------------

VOCABULARY = (
    "the a of to and in is that for it as with on be by this are from or if not return "
    "value self def class import None True False data path file line test error result "
    "Request Response Config HTTP JSON parse read write open close run { } ( ) [ ] = "
    "== != + - * / : ; , . -> => < > # // \\ ' ` | & 0 1 2 10 42 255 1024 é"
)
WORDS = VOCABULARY.split()
# The reader's anchor byte for AskUserQuestion is "Q": as often as in real code, about 300
# times a MB (CPython's standard library: 211 a MB; corral's own source: 322).
RARE_WORD, RARE_P = "SQL", 1 / 600


def _prose(rng: random.Random, chars: int) -> str:
    """About `chars` characters of code-like text, with newlines, quotes and tabs."""
    out: list[str] = []
    size = 0
    while size < chars:
        word = RARE_WORD if rng.random() < RARE_P else rng.choice(WORDS)
        roll = rng.random()
        if roll < 0.08:
            word += "\n" + "    " * rng.randint(0, 3)
        elif roll < 0.10:
            word = f'"{word}"'
        elif roll < 0.11:
            word += "\t"
        out.append(word)
        size += len(word) + 1
    return " ".join(out)


def _line(event: dict[str, Any]) -> str:
    """One line as Claude Code prints it: compact JSON, non-ASCII kept."""
    return json.dumps(event, separators=(",", ":"), ensure_ascii=False) + "\n"


def _usage(rng: random.Random) -> dict[str, Any]:
    return {
        "input_tokens": rng.randint(1, 9),
        "cache_creation_input_tokens": rng.randint(0, 4000),
        "cache_read_input_tokens": rng.randint(10_000, 120_000),
        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
        "output_tokens": rng.randint(1, 900),
        "service_tier": "standard",
    }


def _assistant(rng: random.Random, n: int, block: dict[str, Any]) -> str:
    message = {
        "model": "claude-sonnet-4-5-20250929",
        "id": f"msg_01{n:022d}",
        "type": "message",
        "role": "assistant",
        "content": [block],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": _usage(rng),
        "context_management": None,
    }
    event = {"type": "assistant", "message": message, "parent_tool_use_id": None}
    return _line({**event, "session_id": SESSION, "uuid": str(uuid.UUID(int=n))})


def _tool_use(rng: random.Random, n: int) -> dict[str, Any]:
    tool = rng.choice(("Bash", "Read", "Edit", "Write", "Grep"))
    inputs: dict[str, Any] = {
        "Bash": {"command": _prose(rng, 80), "description": _prose(rng, 40)},
        "Read": {"file_path": f"/work/src/module_{n % 97}.py"},
        "Edit": {
            "file_path": f"/work/src/module_{n % 97}.py",
            "old_string": _prose(rng, rng.randint(50, 1500)),
            "new_string": _prose(rng, rng.randint(50, 1500)),
        },
        "Write": {"file_path": f"/work/src/new_{n}.py", "content": _prose(rng, 4000)},
        "Grep": {"pattern": "def [a-z_]+", "path": "/work/src"},
    }
    return {"type": "tool_use", "id": f"toolu_01{n:022d}", "name": tool, "input": inputs[tool]}


def _user(rng: random.Random, n: int) -> str:
    output = _prose(rng, rng.choice((300, 2000, 8000, 20000)))
    block = {"tool_use_id": f"toolu_01{n:022d}", "type": "tool_result", "content": output}
    event = {
        "type": "user",
        "message": {"role": "user", "content": [block]},
        "parent_tool_use_id": None,
        "session_id": SESSION,
        "uuid": str(uuid.UUID(int=n)),
        "tool_use_result": {"stdout": output, "stderr": "", "interrupted": False},
    }
    return _line(event)


def write_transcript(path: str, size_bytes: int) -> int:
    """Write a claude stream-json transcript of about `size_bytes`; its line count."""
    rng = random.Random(16)
    init = {
        "type": "system",
        "subtype": "init",
        "cwd": "/work",
        "session_id": SESSION,
        "tools": ["Task", "Bash", "Glob", "Grep", "Read", "Edit", "Write", "AskUserQuestion"],
        "mcp_servers": [],
        "model": "claude-sonnet-4-5-20250929",
        "permissionMode": "bypassPermissions",
        "slash_commands": ["compact", "context", "cost", "init", "review"],
        "apiKeySource": "none",
        "claude_code_version": VERSION,
        "output_style": "default",
        "uuid": str(uuid.UUID(int=0)),
    }
    info = {"status": "allowed", "resetsAt": 1_900_000_000, "rateLimitType": "five_hour"}
    rate = {"type": "rate_limit_event", "rate_limit_info": info, "session_id": SESSION}
    lines = 2
    with open(path, "w", encoding="utf-8") as out:
        written = out.write(_line(init)) + out.write(_line(rate))
        n = 0
        while written < size_bytes:
            n += 1
            if rng.random() < 0.45:
                text = {"type": "text", "text": _prose(rng, rng.randint(80, 1500))}
                written += out.write(_assistant(rng, n, text))
                lines += 1
            written += out.write(_assistant(rng, n, _tool_use(rng, n)))
            written += out.write(_user(rng, n))
            lines += 2
        result = {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "duration_ms": 1_804_113,
            "num_turns": n,
            "result": "Done: the tests pass.",
            "session_id": SESSION,
            "total_cost_usd": COST_USD,
            "usage": RESULT_USAGE,
            "permission_denials": [],
            "uuid": str(uuid.UUID(int=n + 1)),
        }
        out.write(_line(result))
    return lines + 1


# -- the two sides --------------------------------------------------------------------------


def fresh(path: str) -> str:
    """`path`, with no file there (removed outside any timing)."""
    for name in (path, f"{path}.stderr"):
        if os.path.exists(name):
            os.unlink(name)
    return path


def cat_floor(transcript: str, out: str) -> float:
    """Seconds for `cat transcript > out` through subprocess."""
    fd = os.open(fresh(out), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        began = time.perf_counter()
        subprocess.run(["cat", transcript], stdout=fd, check=True)
        return time.perf_counter() - began
    finally:
        os.close(fd)


def plain_run(transcript: str, out: str, poll_s: float) -> float:
    """Seconds for cat through run_command with no reader: what any `--exec` run costs."""
    from corral.foundation.clock import SystemClock
    from corral.runtime.worker.executor import run_command

    began = time.perf_counter()
    run_command(cat_spec(transcript, out), clock=SystemClock(), stop=lambda: None, poll_s=poll_s)
    return time.perf_counter() - began


def cat_spec(transcript: str, out: str) -> CommandSpec:
    """`cat transcript` as a task command whose transcript file is `out` (made anew)."""
    from corral.runtime.worker.executor import CommandSpec

    return CommandSpec(
        argv=("cat", transcript),
        stdin_text=None,
        env=dict(os.environ),
        cwd=os.path.dirname(out),
        transcript_path=fresh(out),
        stderr_path=f"{out}.stderr",
        run_id="bench-agent-stream",
    )


def corral_run(transcript: str, out: str, poll_s: float) -> dict[str, Any]:
    """Seconds for cat through run_command with the reader polled from `stop`, then
    finish(); and what the reader found."""
    from corral.foundation.clock import SystemClock
    from corral.runtime.worker.agent_streams import StreamReader
    from corral.runtime.worker.executor import run_command

    spec = cat_spec(transcript, out)
    reader = StreamReader("claude-stream-json", out)
    polls = 0

    def stop() -> str | None:
        nonlocal polls
        polls += 1
        reader.poll()
        return None

    began = time.perf_counter()
    result = run_command(spec, clock=SystemClock(), stop=stop, poll_s=poll_s)
    ended = time.perf_counter()
    facts = reader.finish()
    wall_s = time.perf_counter() - began
    found = {
        "session_id": facts.session_id,
        "agent_version": facts.agent_version,
        "usage": facts.usage,
        "limit": facts.limit,
        "waiting": facts.waiting,
        "error": facts.error,
    }
    expected = {
        "session_id": SESSION,
        "agent_version": VERSION,
        "usage": EXPECTED_USAGE,
        "limit": None,
        "waiting": None,
        "error": None,
    }
    if result.exit_code != 0 or found != expected:
        raise RuntimeError(f"wrong facts (exit {result.exit_code}): {found}")
    return {"wall_s": wall_s, "finish_s": wall_s - (ended - began), "polls": polls}


def compare_child(transcript: str, folder: str, reps: int, poll_s: float) -> dict[str, Any]:
    """In a child process: cat and corral alternated `reps` times, in both orders; then
    this process's peak RSS."""
    out = os.path.join(folder, "out.jsonl")
    corral_run(transcript, out, poll_s)  # a runner is long-lived: its first run is not timed
    cats: list[float] = []
    plains: list[float] = []
    runs: list[dict[str, Any]] = []
    for rep in range(reps):
        order = ("cat", "plain", "corral") if rep % 2 == 0 else ("corral", "plain", "cat")
        for side in order:
            if side == "cat":
                cats.append(cat_floor(transcript, out))
            elif side == "plain":
                plains.append(plain_run(transcript, out, poll_s))
            else:
                runs.append(corral_run(transcript, out, poll_s))
    rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"cats": cats, "plains": plains, "runs": runs, "rss_kb": rss_kb}


def import_child() -> dict[str, Any]:
    """In a child process: the peak RSS after importing what the corral side imports."""
    import importlib

    for module in MODULES:
        importlib.import_module(module)
    return {"rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}


def child(*args: str) -> dict[str, Any]:
    """Run this script as a child with `args`; the JSON it prints."""
    argv = [sys.executable, os.path.abspath(__file__), "--child", *args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the child {args} exited {done.returncode}:\n{done.stderr}")
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


# -- in this process: finish() alone and the floors ----------------------------------------


def timed(action: Any, reps: int) -> float:
    """The median seconds of `reps` calls of `action()`."""
    samples = []
    for _ in range(reps):
        began = time.perf_counter()
        action()
        samples.append(time.perf_counter() - began)
    return statistics.median(samples)


def read_chunks(path: str, find_newlines: bool) -> None:
    """Read `path` in 1 MiB chunks, and find every newline in it if asked."""
    fd = os.open(path, os.O_RDONLY)
    try:
        while data := os.read(fd, 1 << 20):
            pos = data.find(b"\n")
            while find_newlines and pos >= 0:
                pos = data.find(b"\n", pos + 1)
    finally:
        os.close(fd)


def in_process(path: str, reps: int) -> dict[str, float]:
    """Seconds of finish() alone and of the two floors, on the written transcript."""
    from corral.runtime.worker.agent_streams import StreamReader

    return {
        "finish": timed(lambda: StreamReader("claude-stream-json", path).finish(), reps),
        "read": timed(lambda: read_chunks(path, False), reps),
        "newlines": timed(lambda: read_chunks(path, True), reps),
    }


# -- main -----------------------------------------------------------------------------------


def report(mb: float, compared: dict[str, Any], alone: dict[str, float]) -> int:
    """Print the tables and the verdicts; the exit code."""
    cats, runs, plains = compared["cats"], compared["runs"], compared["plains"]
    cat_s = statistics.median(cats)
    plain_s = statistics.median(plains)
    corral_s = statistics.median(r["wall_s"] for r in runs)
    rss_mb = compared["rss_kb"] / 1024
    bare_mb = child("import")["rss_kb"] / 1024
    rows = [
        [f"rep {i + 1}", c, p, r["wall_s"], r["finish_s"], r["wall_s"] / c, r["wall_s"] / p]
        for i, (c, p, r) in enumerate(zip(cats, plains, runs, strict=True))
    ]
    finish_s = statistics.median(r["finish_s"] for r in runs)
    rows.append(
        ["median", cat_s, plain_s, corral_s, finish_s, corral_s / cat_s, corral_s / plain_s]
    )
    cells = [
        [name, *(f"{s * 1000:.1f}" for s in row[:4]), *(f"{x:.2f}" for x in row[4:])]
        for name, *row in rows
    ]
    print(f"a {mb:.1f} MB transcript written by cat; wall ms (polls a run: {runs[0]['polls']})")
    headers = ["", "(a) cat", "(c) run, no reader", "(b) run + reader", "of it finish()"]
    print(table([*headers, "b / a", "b / c"], cells))
    print(f"\npeak RSS of the child running both: {rss_mb:.1f} MB; imports alone: {bare_mb:.1f} MB")
    print(f"\n{mb:.1f} MB in this process, medians (ms, MB/s, share of cat's wall time)")
    rows = [
        [name, f"{s * 1000:.1f}", f"{mb / s:,.0f}", f"{s / cat_s:.2f}"]
        for name, s in (
            ("finish() alone", alone["finish"]),
            ("floor: read in 1 MiB chunks", alone["read"]),
            ("floor: read + find every newline", alone["newlines"]),
        )
    ]
    print(table(["", "ms", "MB/s", "/ cat"], rows))
    v = Verdicts("agent_stream")
    v.check(
        f"reader over the transcript / cat of it <= {RATIO_TARGET}",
        f"{alone['finish'] / cat_s:.2f} ({alone['finish'] * 1000:.1f} vs {cat_s * 1000:.1f} ms)",
        alone["finish"] / cat_s <= RATIO_TARGET,
    )
    v.check(f"peak RSS of (b) < {RSS_TARGET_MB:.0f} MB", f"{rss_mb:.1f} MB", rss_mb < RSS_TARGET_MB)
    return v.finish()


def main() -> int:
    """Write the transcript, compare cat and corral, time finish() and the floors."""
    if len(sys.argv) >= 3 and sys.argv[1] == "--child":
        if sys.argv[2] == "compare":
            transcript, folder, reps, poll_s = sys.argv[3:7]
            answer = compare_child(transcript, folder, int(reps), float(poll_s))
        else:
            answer = import_child()
        print(dump(answer))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=50.0, help="transcript size in MB (10^6)")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--poll-s", type=float, default=POLL_S, help="how often `stop` is called")
    opts = parser.parse_args()
    banner("agent stream reading: a claude transcript beside cat", __doc__.split("\n\n")[1])
    with temp_dir("agent-stream") as folder:
        transcript = os.path.join(folder, "transcript.jsonl")
        lines = write_transcript(transcript, int(opts.mb * 1_000_000))
        mb = os.path.getsize(transcript) / 1_000_000
        print(f"transcript: {mb:.1f} MB, {lines:,} lines, in {folder}\n")
        try:
            compared = child("compare", transcript, folder, str(opts.reps), str(opts.poll_s))
        except RuntimeError as exc:
            print(f"{exc}\n{tail(os.path.join(folder, 'out.jsonl.stderr'))}")
            return 2
        alone = in_process(os.path.join(folder, "out.jsonl"), opts.reps)
        return report(mb, compared, alone)


if __name__ == "__main__":
    sys.exit(main())
