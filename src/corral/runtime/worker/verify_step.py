"""The verify step (`[worktree] verify`, seed 003 FR-058/059): a command that must pass in
the task's worktree after its agent exited 0, before the task is done, submitted or landed.

It runs as the agent's command does (executor.py: its own session, its whole process tree
ended on stop or timeout), in the worktree, from the task's environment (it runs what the
agent wrote: corral.foundation.task_env), with the worktree's variables and the task's id,
its output in two files beside the run's own (`RUN.verify.out`, `RUN.verify.err`).
A failure ends the run with the tail of that output as its error, and sends the task back
to its agent (corral.model.verify_retries): ready again at once, its attempt given back,
up to `[worktree] verify_retries` times in a row; then it waits for a person (`verify:
...`), the run's error holding the output's tail. The next run's prompt carries the
failure (`prompt_note`), so the agent sees what broke. A stop (shutdown, lost claim) stops
the run as a stopped command does: its task goes back, not failed.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from corral.foundation.clock import Clock
from corral.model import waiting
from corral.model.tasks import Task
from corral.model.verify_retries import PREFIX
from corral.model.waiting import WaitKind
from corral.runtime.worker.executor import CommandSpec, run_command
from corral.runtime.worker.jobs import Stop
from corral.runtime.worker.reports import Done, Ending

TAIL_CHARS = 3000  # of the verify step's output, in the run's error and the next prompt


@dataclass(frozen=True, slots=True, kw_only=True)
class VerifyStep:
    """The verify command of a worktree job."""

    argv: tuple[str, ...]
    timeout_s: float
    grace_s: float
    base_env: Mapping[str, str]  # the task's environment, which the step starts from
    retries: int = 2  # failures sent back to the agent in a row before the task waits

    @classmethod
    def of(
        cls,
        line: str,
        *,
        timeout_s: float,
        grace_s: float,
        base_env: Mapping[str, str],
        retries: int,
    ) -> VerifyStep | None:
        """The step `[worktree] verify` configures (checked by preflight), or None."""
        argv = tuple(shlex.split(line))
        if not argv:
            return None
        return cls(
            argv=argv, timeout_s=timeout_s, grace_s=grace_s, base_env=base_env, retries=retries
        )

    def after(
        self,
        done: Done,
        *,
        task: Task,
        run_id: str,
        workdir: str,
        env: dict[str, str],
        output_base: str,
        clock: Clock,
        stop: Stop,
        spent: Callable[[], int],
    ) -> Done:
        """`done` as the step leaves it: unchanged when it passes (or the run did not
        succeed), stopped when stopped; when it fails, sent back to the agent while fewer
        than `retries` verify retries in a row were `spent()`, else waiting for a person."""
        if not done.success:
            return done
        out, err = f"{output_base}.verify.out", f"{output_base}.verify.err"
        spec = CommandSpec(
            argv=self.argv,
            stdin_text=None,
            env={**self.base_env, **env, "CORRAL_TASK_ID": task.id},
            cwd=workdir,
            transcript_path=out,
            stderr_path=err,
            run_id=run_id,
            timeout_s=self.timeout_s,
            grace_s=self.grace_s,
        )
        result = run_command(spec, clock=clock, stop=stop)
        if result.ending is Ending.STOPPED:
            stopped = result.stop_reason
            return replace(done, ending=Ending.STOPPED, success=False, stop_reason=stopped)
        command = shlex.join(self.argv)
        if result.ending is Ending.TIMEOUT:
            why = f"{PREFIX}: `{command}` did not finish within {self.timeout_s:g} s"
        elif result.exit_code != 0:
            why = f"{PREFIX}: `{command}` exited with status {result.exit_code}"
        else:
            return done
        tail = _tail(out, err)
        failed = replace(done, success=False, error=f"{why}\n{tail}" if tail else why)
        what, used = why.removeprefix(f"{PREFIX}: "), spent()
        if used < self.retries:
            retry = f"verify: {what} (retry {used + 1} of {self.retries})"
            return replace(failed, defer_s=0.0, defer_reason=retry)
        detail = f"{what} after {used} retries; its output: {out}"
        return replace(failed, wait_reason=waiting.reason(WaitKind.VERIFY, detail))


def prompt_note(failure: str | None) -> str | None:
    """What the prompt of a run after a verify failure (its error: command, status and
    the output's tail) adds."""
    if failure is None:
        return None
    return "\nThe previous attempt's work failed the verify step:\n" + failure + "\n"


def _tail(*paths: str) -> str:
    """The end of the verify step's output: its stdout's, then its stderr's."""
    texts = []
    for path in paths:
        try:
            with open(path, "rb") as handle:
                handle.seek(max(0, os.fstat(handle.fileno()).st_size - TAIL_CHARS))
                texts.append(handle.read().decode("utf-8", "replace").strip())
        except OSError:
            continue
    return "\n".join(t for t in texts if t)[-TAIL_CHARS:]
