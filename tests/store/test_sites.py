"""Conformance: a task whose run entered a worktree is kept at that worktree's site (a host
and a clone): while a live worker of that site can run it, no other worker claims it, so a
task that runs again resumes where its worktree and its agent's session are; once none is
left, any worker may."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

from collections.abc import Callable

import pytest

import corral
from corral import InvalidInput, NewWorker, Settings, Store, Task, Worker
from corral.model.exchange import Action, ClaimAsk, Held, Report, RunStart
from corral.model.runs import RunOutcome
from corral.usecases import claims

Add = Callable[..., Task]
MakeWorker = Callable[..., Worker]
SITE_A, SITE_B = "host-a:/src/app", "host-b:/src/app"


def _claim(store: Store, worker_id: str, settings: Settings) -> tuple[Held, ...]:
    ask = ClaimAsk(limit=1, run=RunStart(command=("agent",), cwd="/work"))
    return claims.exchange(store, worker_id, ask=ask, settings=settings).held


def _kept_at(store: Store, held: Held, site: str) -> None:
    """The run enters a worktree of `site`, then steps aside (a usage limit, a question
    answered): its task is ready again, kept at that site."""
    store.runs.set_run_start(held.opened_run(), RunStart(command=("agent",), cwd="/wt", site=site))
    report = Report.of(held, Action.RELEASE, RunOutcome.DEFERRED)
    assert () == store.claims.exchange(held.task.worker_id, reports=[report]).stale


def test_a_task_kept_at_a_site_is_claimed_there_while_a_worker_there_lives(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """Another site's worker, and a worker outside worktrees, pass it by while the site's
    worker lives (they take the next task); the site's worker gets it back."""
    kept, other = add("kept", priority=9), add("other")
    at_a, at_b, plain = worker("a", site=SITE_A), worker("b", site=SITE_B), worker("plain")
    (held,) = _claim(store, at_a.id, settings)
    assert kept.id == held.task.id
    _kept_at(store, held, SITE_A)
    (taken,) = _claim(store, at_b.id, settings)
    assert other.id == taken.task.id
    assert () == _claim(store, plain.id, settings)
    (again,) = _claim(store, at_a.id, settings)
    assert kept.id == again.task.id


@pytest.mark.parametrize("leave", [corral.deregister, corral.drain], ids=["gone", "draining"])
def test_a_task_kept_at_a_site_with_no_live_worker_that_runs_it_goes_to_any(
    store: Store,
    settings: Settings,
    add: Add,
    worker: MakeWorker,
    leave: Callable[[Store, str], object],
) -> None:
    """The site's worker deregistered, or drains (it claims nothing, so it keeps nothing
    either): a worker outside worktrees claims the task; a live worker of the site that
    does not run its kind never held it back."""
    kept = add("kept", kind="code")
    at_a = worker("a", site=SITE_A)
    (held,) = _claim(store, at_a.id, settings)
    _kept_at(store, held, SITE_A)
    worker("docs-at-a", kinds=("docs",), site=SITE_A)
    leave(store, at_a.id)
    (taken,) = _claim(store, worker("plain").id, settings)
    assert kept.id == taken.task.id


def test_the_site_of_a_finished_run_is_not_recorded(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """A run start recorded after its run ended (a late report) keeps nothing anywhere."""
    kept = add("kept")
    at_a = worker("a", site=SITE_A)
    (held,) = _claim(store, at_a.id, settings)
    report = Report.of(held, Action.RELEASE, RunOutcome.DEFERRED)
    store.claims.exchange(at_a.id, reports=[report])
    store.runs.set_run_start(held.opened_run(), RunStart(command=("x",), cwd="/wt", site=SITE_A))
    (taken,) = _claim(store, worker("b", site=SITE_B).id, settings)
    assert kept.id == taken.task.id


def test_a_worker_shows_its_site(store: Store, worker: MakeWorker) -> None:
    """`worker list --json`: the site a worktree worker registered, null for others."""
    at_a, plain = worker("a", site=SITE_A), worker("plain")
    assert (SITE_A, None) == (
        store.workers.get_worker(at_a.id).to_dict()["site"],
        store.workers.get_worker(plain.id).to_dict()["site"],
    )


@pytest.mark.parametrize("site", ["", "a\x00b", "x" * 5000, "host:\x1b[31m"])
def test_a_bad_site_is_refused_by_name(site: str) -> None:
    """Empty, a NUL, an escape sequence, past 4,351 characters: refused naming `site`."""
    with pytest.raises(InvalidInput, match=r"^site: "):
        NewWorker(name="w", site=site)


def test_why_names_the_site_a_task_is_kept_at(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """`why`: kept_at_site, and the site's busy worker is the one it waits for, though a
    worker of another site idles."""
    kept, at_a = add("kept"), worker("a", site=SITE_A)
    (held,) = _claim(store, at_a.id, settings)
    _kept_at(store, held, SITE_A)
    assert (kept.id, SITE_A) == (held.task.id, store.tasks.get_task(kept.id).site)
    busy = add("busy", priority=9)
    (holding,) = _claim(store, at_a.id, settings)
    assert busy.id == holding.task.id
    worker("b", site=SITE_B)
    codes = [r.code for r in corral.why(store, kept.id, settings=settings).reasons]
    assert ["kept_at_site", "workers_busy"] == codes
