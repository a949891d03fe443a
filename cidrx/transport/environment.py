"""The environment every HTTP client cidrx drives reads on its own: proxy variables, checked once, up front.

Why it exists: botocore (urllib3), google-auth (requests) and lightkube (httpx) each read HTTP_PROXY,
HTTPS_PROXY and ALL_PROXY themselves, and each fails differently on a malformed one (`junk://x`): a
connection error that looks like an unreachable cloud (exit 6), or an exception that looks like a bug.
A proxy variable is the user's input, so a bad one is refused as such (exit 2), naming the variable.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from cidrx.errors import InvalidInput

PROXY_VARIABLES = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy")
# What the clients' proxy support accepts: plain and TLS HTTP proxies, and SOCKS where installed.
PROXY_SCHEMES = frozenset({"http", "https", "socks4", "socks4a", "socks5", "socks5h"})


def check_proxy_environment() -> None:
    """Refuse a proxy variable that is not a proxy URL (scheme and host), naming it."""
    for name in PROXY_VARIABLES:
        value = os.environ.get(name, "").strip()
        if not value:
            continue
        # "host:port" without a scheme is read as http:// by every client.
        text = value if "://" in value else f"http://{value}"
        try:
            parts = urlsplit(text)
            host, _ = parts.hostname, parts.port
        except ValueError as exc:
            raise InvalidInput(f"{name}={value!r} is not a proxy URL: {exc}", hint=f"fix or unset {name}") from None
        if parts.scheme.lower() not in PROXY_SCHEMES or not host:
            raise InvalidInput(
                f"{name}={value!r} is not a proxy URL (expected http://HOST:PORT, https:// or socks5://)",
                hint=f"fix or unset {name}",
            )
