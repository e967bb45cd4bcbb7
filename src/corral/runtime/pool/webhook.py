"""`[notify] url` and `[notify] ntfy`: each notice POSTed to a user's HTTP endpoint.

    notice ─► POST URL  body: the event's JSON shape (what `[notify] command` reads)
                        Content-Type: application/json, X-Corral-Notice: the kind,
                        X-Corral-Event-Id: the event's id
                        (ntfy: a line of text and its headers, runtime/pool/ntfy.py)
           ─► 2xx: sent; anything else, a refused connection or WEBHOOK_TIMEOUT_S without
              an answer: the error, which the delivery queue retries later
              (runtime/pool/deliveries.py)

A redirect is not followed (a POST sent on to a host the user did not name would carry
the event there). Credentials in the
URL (`https://user:secret@host/...`) go as HTTP Basic authentication, which urllib does not
take from the URL itself; the URL is shown and logged only as its scheme and host
(settings.shown_url), since a webhook's secret is as often in its path or query.
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from corral.foundation.settings import shown_url

WEBHOOK_TIMEOUT_S = 10.0


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A 3xx answer is the answer: reported as it is, never followed."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class Webhook:
    """One endpoint that takes notices."""

    def __init__(self, url: str, *, timeout_s: float = WEBHOOK_TIMEOUT_S) -> None:
        parts = urlsplit(url)
        host = parts.hostname or ""
        netloc = f"[{host}]" if ":" in host else host
        netloc += f":{parts.port}" if parts.port is not None else ""
        self._target = urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))
        self._headers = {"Content-Type": "application/json", "User-Agent": "corral"}
        if parts.username is not None:
            pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
            self._headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        self._secrets = [s for s in (url, self._target, parts.password, parts.path) if s]
        self._opener = urllib.request.build_opener(_NoRedirect)
        self._timeout_s = timeout_s
        self.shown = shown_url(url)

    def post(self, body: dict[str, Any], *, notice: str, event_id: int) -> str | None:
        """POST `body` as JSON; None when the endpoint took it, else why not (never with
        the URL's secrets in it)."""
        headers = {"X-Corral-Notice": notice, "X-Corral-Event-Id": str(event_id)}
        return self.send(json.dumps(body).encode(), headers)

    def send(self, data: bytes, headers: dict[str, str]) -> str | None:
        """POST `data` with `headers` (over the JSON content type and the URL's Basic
        authentication); None when the endpoint took it, else why not."""
        request = urllib.request.Request(  # noqa: S310 - the scheme was checked in settings
            self._target, data=data, headers={**self._headers, **headers}, method="POST"
        )
        try:
            with self._opener.open(request, timeout=self._timeout_s) as answer:
                answer.read()
        except urllib.error.HTTPError as exc:  # an answer that is not 2xx (3xx included)
            exc.close()
            return f"HTTP {exc.code}"
        except urllib.error.URLError as exc:
            return self._scrubbed(str(exc.reason))
        except (OSError, ValueError) as exc:  # a timeout while reading, a malformed answer
            return self._scrubbed(str(exc) or type(exc).__name__)
        return None

    def _scrubbed(self, text: str) -> str:
        for secret in sorted(self._secrets, key=len, reverse=True):
            if len(secret) > 1:
                text = text.replace(secret, "***")
        return text
