"""A write's notice is shown once, by the whole page the browser opens after the write:
a live region's fetch (htmx) that comes in between neither shows nor spends it."""

from __future__ import annotations

import urllib.request

from corral.server.dashboard.pages import NOTICE_COOKIE


def _get(url: str, cookie: str, *, live: bool) -> tuple[str, str]:
    """The page's HTML and its Set-Cookie headers, joined."""
    request = urllib.request.Request(url)  # noqa: S310 - http:// on loopback
    request.add_header("Cookie", cookie)
    if live:
        request.add_header("HX-Request", "true")
    with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 - http://
        return answer.read().decode(), " ".join(answer.headers.get_all("set-cookie") or [])


def test_a_live_fetch_leaves_the_notice_to_the_page_the_redirect_opens(server):
    server.start()
    cookie = f'{NOTICE_COOKIE}="Draining builder-2"'
    live_html, live_cookie = _get(server.url + "/workers", cookie, live=True)
    page_html, page_cookie = _get(server.url + "/workers", cookie, live=False)
    assert "Draining builder-2" not in live_html
    assert NOTICE_COOKIE not in live_cookie
    assert "Draining builder-2" in page_html
    assert f"{NOTICE_COOKIE}=" in page_cookie  # spent here
