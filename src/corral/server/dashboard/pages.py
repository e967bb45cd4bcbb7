"""Rendering a dashboard page: Jinja2 with autoescape, and the headers every page carries.

Everything from a task (titles, payloads, transcripts, branch names, errors) reaches the
page through a template's `{{ }}`, which escapes it; only markup built here from escaped
parts (transcripts.py's colours, charts.py's SVG) is marked safe. Every answer carries a
Content-Security-Policy that allows scripts and styles from this server's files only
(no inline script, no style attribute, nothing from elsewhere), and refuses framing.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import quote

import jinja2
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from corral.foundation.durations import format_age, format_duration
from corral.server.dashboard import csrf
from corral.server.dashboard.visitors import Visitor

TEMPLATES = os.path.join(os.path.dirname(__file__), "templates")
NOTICE_COOKIE = "corral_notice"

CSP = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "connect-src 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
    ]
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}

_env = jinja2.Environment(
    loader=jinja2.FileSystemLoader(TEMPLATES),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
_env.filters["duration"] = lambda s: "" if s is None else format_duration(max(0.0, float(s)))
_env.filters["age"] = lambda s: "" if s is None else format_age(float(s))
_env.filters["when"] = lambda t: "" if t is None else t.strftime("%Y-%m-%d %H:%M:%S")


def plural(n: int, one: str, many: str | None = None) -> str:
    """`n` and the noun that agrees with it: 1 run, 2 runs, 0 runs (`many`: an irregular
    plural)."""
    return f"{n} {one if n == 1 else many or one + 's'}"


_env.filters["plural"] = plural


def render(
    request: Request,
    visitor: Visitor,
    template: str,
    status: int = 200,
    *,
    live: str | None = None,
    **context: Any,
) -> Response:
    """Template `template` as the page of `request` for `visitor`, with its headers. With
    `live` (a /live URL), the page listens to that stream and its live region follows it.
    A notice is shown, and spent, by a whole page only: a live region's fetch (htmx's
    `HX-Request`) that came between a write's redirect and the browser following it would
    spend it where nobody sees it."""
    notice = None if request.headers.get("hx-request") else request.cookies.get(NOTICE_COOKIE)
    html = _env.get_template(template).render(
        visitor=visitor,
        csrf=csrf.token_of(request),
        path=request.url.path,
        here=here(request),
        live=live,
        notice=notice,
        **context,
    )
    response = HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)
    csrf.remember(request, response)
    if notice is not None:
        response.delete_cookie(NOTICE_COOKIE, samesite="strict")
    return response


def render_bare(request: Request, template: str, status: int = 200, **context: Any) -> Response:
    """A page without a visitor (the login form, an error before one is known)."""
    html = _env.get_template(template).render(
        csrf=csrf.token_of(request),
        path=request.url.path,
        here=here(request),
        live=None,
        notice=None,
        **context,
    )
    response = HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)
    csrf.remember(request, response)
    return response


def redirect(request: Request, to: str, notice: str | None = None) -> Response:
    """303 to `to` (a path of this server), with `notice` shown once on the page it opens."""
    response = RedirectResponse(local(to), status_code=303, headers=SECURITY_HEADERS)
    if notice:
        response.set_cookie(
            NOTICE_COOKIE,
            notice[:300],
            max_age=60,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
    return response


def local(to: str) -> str:
    """`to` if it is a path of this server, else `/`: a `next` never leads elsewhere."""
    if not to.startswith("/") or to.startswith("//") or "\\" in to:
        return "/"
    return to


def here(request: Request) -> str:
    """The path and query of `request`: where a live region fetches itself again."""
    return request.url.path + (f"?{request.url.query}" if request.url.query else "")


def login_url(request: Request) -> str:
    """The login form, coming back to `request`'s page after."""
    return "/login?next=" + quote(here(request), safe="")
