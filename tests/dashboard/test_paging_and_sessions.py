"""In a real browser: Previous as well as Next on the tasks page, older and newer pages
of events, search by the text index, sign-out that ends the session server-side, and a
bulk action on more tasks than one batch, with its progress."""

from __future__ import annotations

import urllib.error
import urllib.request

from playwright.sync_api import expect

from corral.model.states import TaskStatus
from corral.model.task_pages import TaskQuery
from corral.model.tasks import NewTask
from corral.usecases.tasks import enqueue


def test_previous_page_goes_back_to_the_rows_shown_before(server, open_page):
    """Next twice, then Previous twice: the same rows as on the way out, and the first
    page has no Previous."""
    server.start()
    with server.store() as store:
        for i in range(60):
            enqueue(store, NewTask(title=f"task {i:02}"))
    page = open_page(server.url + "/tasks?limit=25")
    expect(page.get_by_role("link", name="Previous page")).to_have_count(0)
    seen = [page.locator("tbody a").all_inner_texts()]
    for _ in range(2):
        page.get_by_role("link", name="Next page").click()
        expect(page.get_by_role("link", name="Previous page")).to_be_visible()
        seen.append(page.locator("tbody a").all_inner_texts())
    assert [f"task {i:02}" for i in reversed(range(60))] == [t for p in seen for t in p]
    for expected in (seen[1], seen[0]):
        page.get_by_role("link", name="Previous page").click()
        expect(page.locator("tbody a").first).to_have_text(expected[0])
        assert expected == page.locator("tbody a").all_inner_texts()
    expect(page.get_by_role("link", name="Previous page")).to_have_count(0)


def test_search_by_a_words_middle_and_events_older_and_newer(server, open_page):
    """A search for the middle of a word in a description finds its task alone; on the
    events page Older events and Newer events page the log."""
    server.start()
    with server.store() as store:
        enqueue(store, NewTask(title="needle", description="Refactor the Frobnicator"))
        for i in range(12):
            enqueue(store, NewTask(title=f"hay {i}"))
    page = open_page(server.url + "/tasks")
    page.get_by_label("Search").fill("OBNIC")
    page.get_by_role("button", name="Filter").click()
    expect(page.get_by_role("link", name="needle")).to_be_visible()
    expect(page.locator("tbody a")).to_have_count(1)
    page.goto(server.url + "/events?type=task.created&limit=5")
    rows = page.locator("tbody tr td:nth-child(3)")  # each event's task
    newest = rows.all_inner_texts()
    assert 5 == len(newest)
    expect(page.get_by_role("link", name="Newer events")).to_have_count(0)
    page.get_by_role("link", name="Older events").click()
    expect(page.get_by_role("link", name="Newer events")).to_be_visible()
    older = rows.all_inner_texts()
    assert 5 == len(older)
    assert not set(older) & set(newest)
    page.get_by_role("link", name="Newer events").click()
    expect(rows.first).to_have_text(newest[0])
    assert newest == rows.all_inner_texts()


def test_sign_out_ends_the_session_on_the_server(server, open_page):
    """After Sign out, the cookie the browser held opens nothing, even sent again by hand;
    the token still signs in afresh."""
    operator = server.token("operator")
    server.start()
    page = open_page(server.url + "/login")
    page.get_by_label("API token").fill(operator)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    cookie = {c["name"]: c["value"] for c in page.context.cookies()}["corral_session"]
    assert operator not in cookie
    assert 200 == _get_with_session(server.url + "/tasks", cookie)
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in to corral")).to_be_visible()
    assert 303 == _get_with_session(server.url + "/tasks", cookie)  # to the sign-in form
    page.get_by_label("API token").fill(operator)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()


def _get_with_session(url: str, session: str) -> int:
    """The status of a GET carrying `session` as the session cookie, redirects not followed."""

    class _Stay(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: object, **kwargs: object) -> None:
            return None

    request = urllib.request.Request(url)  # noqa: S310 - http://
    request.add_header("Cookie", f"corral_session={session}")
    try:
        with urllib.request.build_opener(_Stay).open(request, timeout=10) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_cancel_more_than_a_batch_by_filter_shows_progress(server, open_page):
    """1,100 tasks of a queue, cancelled by filter: the confirmation counts them, the page
    goes on batch after batch by itself and ends on the list with the total; a task of
    another queue is untouched."""
    server.start()
    with server.store() as store:
        for i in range(1100):
            enqueue(store, NewTask(title=f"bulk {i}", queue="bulk"))
        kept = enqueue(store, NewTask(title="keep me", queue="other")).id
    page = open_page(server.url + "/tasks?queue=bulk")
    page.get_by_label("Act on", exact=True).select_option("matching")
    page.get_by_role("button", name="Cancel").click()
    expect(page.get_by_role("heading", name="Cancel 1100 tasks?")).to_be_visible()
    page.get_by_role("button", name="Yes, cancel 1100").click()
    expect(page.get_by_role("status")).to_contain_text("of 1100: going on")
    expect(page.get_by_role("status")).to_contain_text("Cancelled 1100 tasks", timeout=60_000)
    with server.store() as store:
        assert 1100 == store.task_pages.count_task_page(_cancelled_in("bulk"), cap=5000)
        assert TaskStatus.READY == store.tasks.get_task(kept).status


def _cancelled_in(queue: str) -> TaskQuery:
    return TaskQuery(queue=queue, statuses=(TaskStatus.CANCELLED,))


def test_the_overview_counts_a_new_task_live(server, open_page):
    """A task added while the overview is open shows in its counts without a reload, the
    figures being a snapshot of at most a second before."""
    server.start()
    page = open_page(server.url + "/")
    expect(page.get_by_text("No task yet.").first).to_be_visible()
    page.wait_for_function("() => window.htmx !== undefined")
    page.wait_for_timeout(300)  # the event stream connects
    assert 0 == server.corral("add", "counted live").returncode
    ready = page.get_by_role("row", name="ready 1")
    expect(ready).to_be_visible()
