"""Fixtures of the dashboard's tests: `corral serve` as a real process on loopback
(tests/server/conftest.py's Server), and Debian's chromium driven by Playwright.

Chromium is the system's (`apt-get install chromium`, .ci/run does it); Playwright's own
browsers are never downloaded. Without it the tests skip, except under CI=true, where
they fail. With CORRAL_SCREENSHOTS=DIR set (`make screenshots`), `shoot` saves each
page's picture there: docs/dashboard.md shows them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest
from tests.git.conftest import GIT_ENV, git
from tests.server.conftest import served, server  # noqa: F401 - its fixtures, reused here

from corral import Store
from corral.model.workers import NewWorker
from corral.usecases import workers
from corral.usecases.claims import claim, fail

CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    """One headless chromium for the whole run."""
    if not os.path.exists(CHROMIUM) or shutil.which("chromium") is None:
        if os.environ.get("CI") == "true":
            raise AssertionError(f"{CHROMIUM} is missing: .ci/run installs Debian's chromium")
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        yield launched
        launched.close()


@pytest.fixture
def open_page(browser: object) -> Iterator[object]:
    """A function that opens a fresh browser page (own cookies) on a URL, `width` pixels
    wide; at the end, no page may have logged an error to its console (a refusal of the
    Content-Security-Policy, a file not found, a script's exception), but for the status
    of a page itself: an error page's 4xx is what a test asks for."""
    contexts: list[object] = []
    errors: list[str] = []

    def opened(url: str, scheme: str = "light", width: int = 1280) -> object:
        context = browser.new_context(  # type: ignore[attr-defined]
            viewport={"width": width, "height": 860}, color_scheme=scheme
        )
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(10_000)
        page.on("dialog", _no_dialog)
        page.on("console", lambda message: _note_error(message, page, errors))
        page.on("pageerror", lambda error: errors.append(f"script: {error}"))
        page.goto(url)
        return page

    yield opened
    for context in contexts:
        context.close()  # type: ignore[attr-defined]
    assert [] == errors


def _note_error(message: object, page: object, errors: list[str]) -> None:
    text = message.text  # type: ignore[attr-defined]
    where = message.location.get("url", "")  # type: ignore[attr-defined]
    if "Content Security Policy" in text:
        errors.append(text)
    elif message.type == "error" and where.split("#")[0] != page.url.split("#")[0]:  # type: ignore[attr-defined]
        errors.append(f"{text} ({where})")


def _no_dialog(dialog: object) -> None:
    raise AssertionError(f"a page opened a dialog: {dialog.message}")  # type: ignore[attr-defined]


def shoot(page: object, name: str) -> None:
    """Save the page's picture as NAME.png in $CORRAL_SCREENSHOTS, when it is set."""
    folder = os.environ.get("CORRAL_SCREENSHOTS")
    if folder:
        os.makedirs(folder, exist_ok=True)
        page.screenshot(path=os.path.join(folder, f"dashboard-{name}.png"), full_page=True)  # type: ignore[attr-defined]


def failed_task(store: Store, title: str, error: str = "it broke") -> str:
    """A task that ran once and failed for good; its id."""
    from corral.model.tasks import NewTask
    from corral.usecases.tasks import enqueue

    task = enqueue(store, NewTask(title=title, max_attempts=1))
    worker = workers.register(store, NewWorker(name=f"w-{task.id}")).worker
    held = claim(store, task.id, worker.id)
    fail(store, task.id, token=held.token, error=error)
    workers.deregister(store, worker.id)
    return task.id


@pytest.fixture
def repo_server(server, monkeypatch):  # noqa: F811 - the `server` fixture imported above
    """The server's folder as a git repository on `main`, the store ignored by git."""
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    server.env.update(GIT_ENV)
    root = server.folder
    git(root, "init", "--quiet", "-b", "main")
    (root / ".git" / "info" / "exclude").write_text(".corral/\n*.log\n")
    (root / "README").write_text("hello\n")
    git(root, "add", "README")
    git(root, "commit", "--quiet", "-m", "initial")
    return server
