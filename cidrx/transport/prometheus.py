"""A small reader of the Prometheus HTTP API (`/api/v1/query_range`), for `cidrx forecast`.

Why it exists: the forecast reads the history Prometheus already keeps of cidrx's own series and needs
nothing else, no cloud credentials and no client library: the standard library's HTTP client is enough for
one GET per metric. Errors are cidrx's: an address that cannot be reached is exit 6, a URL that is not one
or a query Prometheus refuses is exit 2, a Prometheus that keeps answering 5xx or 429 is exit 7 after the
usual retries (cidrx/transport/retry.py). API reference: https://prometheus.io/docs/prometheus/latest/querying/api/
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from cidrx.errors import AccessDenied, InvalidInput, RetriesExhausted, Unreachable
from cidrx.transport.retry import Retryable, call_with_retry, parse_retry_after, status_is_transient

TIMEOUT = 30.0


@dataclass(frozen=True)
class Series:
    """One time series of a range query: its labels and its (unix seconds, value) samples, oldest first."""

    labels: dict[str, str]
    samples: tuple[tuple[float, float], ...]


def check_url(url: str) -> str:
    """The base URL without a trailing slash; InvalidInput unless it is an http(s) URL with a host."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise InvalidInput(f"--prometheus {url!r} is not an http(s) URL, e.g. http://prometheus:9090")
    return url.rstrip("/")


def _classify(exc: BaseException) -> Retryable | None:
    if isinstance(exc, urllib.error.HTTPError) and status_is_transient(exc.code, write=False):
        return Retryable(parse_retry_after(exc.headers.get("Retry-After")) if exc.headers else None)
    return None


def _get(url: str) -> dict[str, Any]:
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
        body: dict[str, Any] = json.loads(response.read())
    return body


def _error_text(exc: urllib.error.HTTPError) -> str:
    try:
        return str(json.loads(exc.read()).get("error", "")) or exc.reason
    except (ValueError, OSError, AttributeError):
        return str(exc.reason)


def query_range(base: str, query: str, start: float, end: float, step: float) -> list[Series]:
    """Every series `query` returns between `start` and `end` (unix seconds) at `step` seconds."""
    params = urllib.parse.urlencode({"query": query, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"})
    url = f"{base}/api/v1/query_range?{params}"
    try:
        body = call_with_retry(lambda: _get(url), _classify)
    except urllib.error.HTTPError as exc:
        text = _error_text(exc)
        if exc.code in (401, 403):
            raise AccessDenied(f"Prometheus at {base} refused the query ({exc.code}: {text})") from None
        if status_is_transient(exc.code, write=False):
            raise RetriesExhausted(f"Prometheus at {base} kept failing ({exc.code}: {text}); retry later") from None
        raise InvalidInput(f"Prometheus at {base} refused the query {query!r} ({exc.code}: {text})") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise Unreachable(
            f"cannot reach Prometheus at {base}: {reason}", hint="check --prometheus and that it answers /-/ready"
        ) from None
    except ValueError:
        raise InvalidInput(f"{base} did not answer with Prometheus API JSON; is --prometheus its base URL?") from None
    if body.get("status") != "success" or not isinstance(body.get("data"), dict):
        raise InvalidInput(f"Prometheus at {base} answered {body.get('error') or 'an unexpected document'}")
    out = []
    for item in body["data"].get("result") or []:
        samples = tuple((float(t), float(v)) for t, v in item.get("values") or [])
        out.append(Series(dict(item.get("metric") or {}), samples))
    return out
