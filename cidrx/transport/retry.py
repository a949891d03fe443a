"""The one retry policy for every cloud and Kubernetes call: bounded, jittered, budgeted, Retry-After aware.

Why it exists: clouds throttle (AWS RequestLimitExceeded, GCP 429, the Kubernetes API's priority-and-fairness
429) and have bad seconds (5xx, connection resets); a diagnose run from CI or an apply halfway through a
change must ride those out the same way whichever SDK made the call, and must not hide real errors behind
minutes of retries. So the SDKs' own retries are switched off (botocore total_max_attempts=1, GAPIC
retry=None, lightkube has none) and each `*/api.py` choke point runs its calls through `call_with_retry`
with a provider-specific `classify` that says which failures are transient.

What is safe to retry (the classifiers follow this; see each `*/api.py`):
- Reads: always, on throttling, 5xx and connection failures (a failed list page is re-requested with the
  same continue token; pages already handed to the caller are never fetched twice).
- Writes: only when the request certainly did not take effect: throttling (429 / RequestLimitExceeded:
  the service refused it; for the Kubernetes API also 503, see RETRYABLE_KUBE_WRITE_STATUSES) and failures
  to connect (nothing was sent). A 5xx or a reset after the request
  was sent may hide a write that happened; it is not retried here: the apply engine's check-then-act on
  the next run (resume) finds it done instead of doing it twice.
- Never: access denied, invalid parameter, not found, 4xx other than 429, and the 409/412/422 conflicts
  that callers handle by re-reading.

Delays: full jitter, uniform(0, min(max_delay, base_delay × 2^retry)), unless the error carries a
Retry-After (seconds or an HTTP date), which is then used as is. Attempts are bounded by `max_attempts`
and by a total time `budget`: a retry whose sleep would end past the budget is not made, and the last
error is raised (its message then says how many attempts were made). `sleep`, `monotonic` and `uniform`
are module attributes so tests can replace them; CIDRX_RETRY_MAX_ATTEMPTS and CIDRX_RETRY_BUDGET tune
the policy from the environment, and CIDRX_HTTP_TIMEOUT caps the seconds one request may wait for its
answer (`request_timeout`): an endpoint that hangs is then retried as a read, and ends as unreachable.
"""

from __future__ import annotations

import contextlib
import os
import random
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import TypeVar

from cidrx.errors import AccessDenied, CidrxError, InvalidInput, RetriesExhausted
from cidrx.transport import activity

T = TypeVar("T")

MAX_ATTEMPTS_ENV = "CIDRX_RETRY_MAX_ATTEMPTS"
BUDGET_ENV = "CIDRX_RETRY_BUDGET"
TIMEOUT_ENV = "CIDRX_HTTP_TIMEOUT"

# Replaceable by tests (never sleep for real in a test).
sleep: Callable[[float], None] = time.sleep
monotonic: Callable[[], float] = time.monotonic
uniform: Callable[[float, float], float] = random.uniform
wall_clock: Callable[[], float] = time.time  # for Retry-After given as an HTTP date

# The attribute set on an exception that was raised after retrying: (attempts, seconds spent).
_GAVE_UP = "_cidrx_retry_gave_up"


@dataclass(frozen=True)
class Retryable:
    """What a classifier says about a transient failure: retry it, after `delay_hint` seconds if given."""

    delay_hint: float | None = None


Classify = Callable[[BaseException], Retryable | None]


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 6  # including the first
    base_delay: float = 0.5  # seconds; the cap of the first backoff
    max_delay: float = 20.0  # cap of any computed backoff (a Retry-After is honoured as given)
    budget: float = 60.0  # total seconds from the first attempt after which no retry is started

    def __post_init__(self) -> None:
        if self.max_attempts < 1 or self.base_delay < 0 or self.max_delay < self.base_delay or self.budget < 0:
            raise ValueError(f"bad retry policy: {self}")

    def backoff(self, retry: int) -> float:
        """Full-jitter delay before retry number `retry` (1 for the first retry)."""
        cap = min(self.max_delay, self.base_delay * (2 ** (retry - 1)))
        return uniform(0.0, cap)


def _env_number(name: str, default: float, *, integer: bool) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw) if integer else float(raw)
    except ValueError:
        value = -1
    if value < (1 if integer else 0):
        kind = "a whole number ≥ 1" if integer else "a number of seconds ≥ 0"
        raise InvalidInput(f"{name}={raw!r} is not {kind}", hint=f"unset {name} or fix it")
    return value


def default_policy() -> RetryPolicy:
    """The policy every api.py uses: the defaults, tuned by CIDRX_RETRY_MAX_ATTEMPTS / CIDRX_RETRY_BUDGET."""
    base = RetryPolicy()
    return RetryPolicy(
        max_attempts=int(_env_number(MAX_ATTEMPTS_ENV, base.max_attempts, integer=True)),
        base_delay=base.base_delay,
        max_delay=base.max_delay,
        budget=_env_number(BUDGET_ENV, base.budget, integer=False),
    )


def request_timeout(default: float) -> float:
    """Seconds one HTTP request may take: CIDRX_HTTP_TIMEOUT when set (a number > 0), else the client's
    `default`."""
    seconds = _env_number(TIMEOUT_ENV, default, integer=False)
    if seconds <= 0:
        raise InvalidInput(
            f"{TIMEOUT_ENV}={seconds:g} is not a number of seconds > 0", hint=f"unset {TIMEOUT_ENV} or fix it"
        )
    return seconds


def parse_retry_after(value: object) -> float | None:
    """Seconds to wait from a Retry-After value: delta-seconds or an HTTP date (RFC 9110 §10.2.3)."""
    if value is None:
        return None
    text = str(value).strip()
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            return None
        return max(0.0, when.timestamp() - wall_clock())
    return seconds if seconds >= 0 else None


def call_with_retry(fn: Callable[[], T], classify: Classify, policy: RetryPolicy | None = None) -> T:
    """Call `fn` until it returns, retrying the failures `classify` calls transient within `policy`.

    The last failure is re-raised unchanged (callers translate it); when retries were made it carries how
    many, for `gave_up_note`. Exceptions that are not `Exception`s (KeyboardInterrupt) are never caught.
    """
    policy = policy or default_policy()
    start = monotonic()
    attempt = 1
    while True:
        try:
            return fn()
        except CidrxError:
            raise
        except Exception as exc:
            verdict = classify(exc)
            if verdict is None:
                raise
            elapsed = monotonic() - start
            delay = verdict.delay_hint if verdict.delay_hint is not None else policy.backoff(attempt)
            if attempt >= policy.max_attempts or elapsed + delay > policy.budget:
                with contextlib.suppress(AttributeError):  # exceptions with __slots__
                    setattr(exc, _GAVE_UP, (attempt, elapsed))
                raise
            activity.retrying(attempt + 1, policy.max_attempts, delay, exc)
            sleep(delay)
            attempt += 1


def certificate_failure(exc: BaseException | None, seen: set[int] | None = None) -> str | None:
    """The verifier's words when `exc` (or what caused it) is a TLS certificate verification failure: a
    permanent error of configuration, never worth a retry, and not an unreachable server."""
    seen = set() if seen is None else seen
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, ssl.SSLCertVerificationError):
            return str(exc.verify_message or exc.reason or exc)
        # Wrappers (requests, urllib3, botocore) hold the ssl error in args / kwargs: its words are best.
        nested = [a for a in getattr(exc, "args", ()) if isinstance(a, BaseException)]
        nested += [v for v in (getattr(exc, "kwargs", None) or {}).values() if isinstance(v, BaseException)]
        for inner in nested:
            found = certificate_failure(inner, seen)
            if found:
                return found
        text = str(exc)
        if "CERTIFICATE_VERIFY_FAILED" in text:
            return text.split("CERTIFICATE_VERIFY_FAILED", 1)[1].strip(" ]:(')\"") or "certificate verify failed"
        exc = exc.__cause__ or exc.__context__
    return None


def gave_up_note(exc: BaseException | None) -> str:
    """ " (gave up after N attempts over S s)" for an error `call_with_retry` re-raised after retrying, else ""."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        info = getattr(exc, _GAVE_UP, None)
        if isinstance(info, tuple):
            attempts, elapsed = info
            if attempts > 1:
                return f" (gave up after {attempts} attempts over {elapsed:.1f} s)"
            return ""
        exc = exc.__cause__ or exc.__context__
    return ""


RETRY_LATER_HINT = "the cloud or cluster kept failing after every retry; nothing is wrong with the input: retry later"


def _retried(exc: BaseException | None) -> bool:
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(getattr(exc, _GAVE_UP, None), tuple):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def with_gave_up_note(err: CidrxError, cause: BaseException) -> CidrxError:
    """`err` with the retry note of `cause` added to its message (in place; returned for chaining).

    A failure the policy called transient (5xx, throttling) that outlasted every retry comes back as
    RetriesExhausted (exit 7): nothing is wrong with the input. Failures to connect stay access errors."""
    note = gave_up_note(cause)
    if note and note not in err.message:
        err.message += note
        err.args = (err.message,)
    if _retried(cause) and not isinstance(err, AccessDenied | InvalidInput | RetriesExhausted):
        return RetriesExhausted(err.message, hint=RETRY_LATER_HINT)
    return err


RETRYABLE_READ_STATUSES = frozenset({429, 500, 502, 503, 504})
# Answers that say a write was not processed, so sending it again is safe. 429: refused before it was handled
# (every API here). For the Kubernetes API server also 503: its max-in-flight and API priority-and-fairness
# filters reject a request before any handler runs (429 with Retry-After,
# https://kubernetes.io/docs/concepts/cluster-administration/flow-control/), and client-go repeats any verb,
# writes included, on 429 and 5xx answers that carry Retry-After (kubernetes/client-go rest/request.go,
# checkWait). Every cidrx write to Kubernetes carries its own guard (resourceVersion, a JSON-patch test, a
# create that answers AlreadyExists), so a 503 whose request did happen behind a proxy meets that guard on the
# repeat, never a second change. Other 5xx may hide a write that happened: the apply stops and its re-run
# checks first.
RETRYABLE_WRITE_STATUSES = frozenset({429})
RETRYABLE_KUBE_WRITE_STATUSES = frozenset({429, 503})


def status_is_transient(status: int, *, write: bool, kube: bool = False) -> bool:
    """Whether an HTTP status is worth retrying: 429 always, 500/502/503/504 for reads, and for writes to the
    Kubernetes API (`kube`) also 503 (see RETRYABLE_KUBE_WRITE_STATUSES)."""
    if not write:
        return status in RETRYABLE_READ_STATUSES
    return status in (RETRYABLE_KUBE_WRITE_STATUSES if kube else RETRYABLE_WRITE_STATUSES)
