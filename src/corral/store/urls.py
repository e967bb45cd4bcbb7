"""How a store's URL is shown: never with its password.

Apart from location.py, which every command imports: urllib.parse costs about 2 ms of a
command's start-up, and only the commands that print a URL need it.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit


def safe_url(url: str) -> str:
    """`url` with any password replaced by `***`."""
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
        return urlunsplit(parts._replace(netloc=netloc))
    except ValueError:
        return re.sub(r"(//[^:/@]*:)[^@/]*@", r"\1***@", url)
