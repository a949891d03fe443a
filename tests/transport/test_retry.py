"""The retry policy (cidrx/transport/retry.py) and the three classifiers that feed it, on real SDK exceptions:
bounded attempts, full-jitter backoff, the total budget, Retry-After (seconds and HTTP date), the env knobs,
and which failures each provider retries for reads and for writes. Sleeps and clocks are replaced."""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import format_datetime
from typing import Any

import pytest

from cidrx.errors import InvalidInput
from cidrx.transport import retry
from cidrx.transport.retry import Retryable, RetryPolicy, call_with_retry, gave_up_note, parse_retry_after
from tests.support.engine import FakeClock


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    c = FakeClock()
    monkeypatch.setattr(retry, "sleep", c.sleep)
    monkeypatch.setattr(retry, "monotonic", c.monotonic)
    return c


class Flaky:
    """Fails with the given exceptions in turn, then returns "ok"."""

    def __init__(self, *failures: BaseException) -> None:
        self.failures = list(failures)
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        return "ok"


class Transient(Exception):
    def __init__(self, hint: float | None = None) -> None:
        super().__init__("transient")
        self.hint = hint


def classify(exc: BaseException) -> Retryable | None:
    return Retryable(exc.hint) if isinstance(exc, Transient) else None


def test_transient_failures_are_retried_with_full_jitter_backoff(clock: FakeClock) -> None:
    fn = Flaky(Transient(), Transient(), Transient())
    policy = RetryPolicy(max_attempts=6, base_delay=1.0, max_delay=3.0)
    assert call_with_retry(fn, classify, policy) == "ok"
    assert fn.calls == 4
    caps = [1.0, 2.0, 3.0]  # base × 2^(n−1), capped by max_delay
    assert len(clock.sleeps) == 3 and all(0 <= s <= cap for s, cap in zip(clock.sleeps, caps, strict=True))


def test_backoff_is_uniform_up_to_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retry, "uniform", lambda low, high: high)  # the top of the jitter range
    policy = RetryPolicy(base_delay=0.5, max_delay=20.0)
    assert [policy.backoff(n) for n in range(1, 9)] == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 20.0, 20.0]


def test_permanent_errors_are_raised_at_once(clock: FakeClock) -> None:
    fn = Flaky(ValueError("denied"))
    with pytest.raises(ValueError, match="denied") as caught:
        call_with_retry(fn, classify, RetryPolicy())
    assert fn.calls == 1 and clock.sleeps == []
    assert gave_up_note(caught.value) == ""


def test_attempts_are_bounded_and_the_error_says_so(clock: FakeClock) -> None:
    fn = Flaky(*[Transient() for _ in range(10)])
    with pytest.raises(Transient) as caught:
        call_with_retry(fn, classify, RetryPolicy(max_attempts=4))
    assert fn.calls == 4 and len(clock.sleeps) == 3
    assert gave_up_note(caught.value).startswith(" (gave up after 4 attempts over ")


def test_the_total_budget_stops_retries_before_a_sleep_would_pass_it(clock: FakeClock) -> None:
    fn = Flaky(*[Transient(hint=25.0) for _ in range(10)])
    with pytest.raises(Transient) as caught:
        call_with_retry(fn, classify, RetryPolicy(max_attempts=10, budget=60.0))
    assert clock.sleeps == [25.0, 25.0]  # a third sleep would end at 75 s > 60 s
    assert fn.calls == 3
    assert gave_up_note(caught.value) == " (gave up after 3 attempts over 50.0 s)"


def test_retry_after_is_used_as_given(clock: FakeClock) -> None:
    fn = Flaky(Transient(hint=7.0), Transient(hint=0.0))
    assert call_with_retry(fn, classify, RetryPolicy(max_delay=1.0)) == "ok"
    assert clock.sleeps == [7.0, 0.0]


def test_parse_retry_after(monkeypatch: pytest.MonkeyPatch) -> None:
    now = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
    monkeypatch.setattr(retry, "wall_clock", now.timestamp)
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(" 1.5 ") == 1.5
    assert parse_retry_after(format_datetime(datetime(2024, 5, 1, 12, 0, 30, tzinfo=UTC), usegmt=True)) == 30.0
    assert parse_retry_after("Wed, 01 May 2024 11:00:00 GMT") == 0.0  # in the past: no wait
    for junk in (None, "", "-1", "soon", "Wed, 99 Foo"):
        assert parse_retry_after(junk) is None


def test_env_tunes_the_default_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    assert retry.default_policy() == RetryPolicy()
    monkeypatch.setenv(retry.MAX_ATTEMPTS_ENV, "2")
    monkeypatch.setenv(retry.BUDGET_ENV, "5.5")
    assert (retry.default_policy().max_attempts, retry.default_policy().budget) == (2, 5.5)
    for bad in ("0", "x", "-3"):
        monkeypatch.setenv(retry.MAX_ATTEMPTS_ENV, bad)
        with pytest.raises(InvalidInput, match=retry.MAX_ATTEMPTS_ENV) as caught:
            retry.default_policy()
        assert caught.value.exit_code == 2


def test_env_sets_the_request_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    assert retry.request_timeout(60.0) == 60.0
    monkeypatch.setenv(retry.TIMEOUT_ENV, "2.5")
    assert retry.request_timeout(60.0) == 2.5
    for bad in ("0", "x", "-1"):
        monkeypatch.setenv(retry.TIMEOUT_ENV, bad)
        with pytest.raises(InvalidInput, match=retry.TIMEOUT_ENV) as caught:
            retry.request_timeout(60.0)
        assert caught.value.exit_code == 2


def test_keyboard_interrupt_is_never_retried(clock: FakeClock) -> None:
    fn = Flaky(KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        call_with_retry(fn, lambda exc: Retryable(), RetryPolicy())
    assert fn.calls == 1


# ---- the classifiers, on real SDK exceptions ---------------------------------------------------------


def _client_error(code: str, status: int, headers: dict[str, str] | None = None) -> Any:
    from botocore.exceptions import ClientError

    response: Any = {
        "Error": {"Code": code, "Message": code},
        "ResponseMetadata": {"HTTPStatusCode": status, "HTTPHeaders": headers or {}},
    }
    return ClientError(response, "DescribeSubnets")


def test_aws_classifier() -> None:
    from botocore import exceptions as bx

    from cidrx.providers.eks.api import classify as aws

    for code, status in (("RequestLimitExceeded", 503), ("Throttling", 400), ("ThrottlingException", 400)):
        for write in (False, True):
            assert aws(_client_error(code, status), write=write) == Retryable(None), code
    assert aws(_client_error("TooManyRequestsException", 429, {"Retry-After": "4"}), write=True) == Retryable(4.0)
    for code, status in (("ServiceUnavailable", 503), ("InternalError", 500), ("Whatever", 502)):
        assert aws(_client_error(code, status), write=False) == Retryable(None)
        assert aws(_client_error(code, status), write=True) is None  # a write may have happened
    for code, status in (("UnauthorizedOperation", 403), ("InvalidParameterValue", 400), ("CidrConflict", 400)):
        assert aws(_client_error(code, status), write=False) is None
    refused = bx.EndpointConnectionError(endpoint_url="http://127.0.0.1:1")
    closed = bx.ConnectionClosedError(endpoint_url="http://127.0.0.1:1")
    timeout = bx.ReadTimeoutError(endpoint_url="http://127.0.0.1:1")
    assert aws(refused, write=True) == aws(refused, write=False) == Retryable()
    assert aws(closed, write=False) == aws(timeout, write=False) == Retryable()
    assert aws(closed, write=True) is None and aws(timeout, write=True) is None
    assert aws(bx.SSLError(endpoint_url="https://x", error=ValueError("bad cert")), write=False) is None
    assert aws(bx.NoCredentialsError(), write=False) is None


def test_gcp_classifier() -> None:
    import requests
    import urllib3.exceptions as ux
    from google.api_core import exceptions as gx

    from cidrx.providers.gke.api import classify as gcp

    for exc in (gx.TooManyRequests("slow"), gx.Forbidden("x", errors=[{"reason": "rateLimitExceeded"}])):
        assert gcp(exc, write=True) == gcp(exc, write=False) == Retryable(None)
    for cls in (gx.InternalServerError, gx.BadGateway, gx.ServiceUnavailable, gx.GatewayTimeout):
        assert gcp(cls("x"), write=False) == Retryable(None)
        assert gcp(cls("x"), write=True) is None
    for permanent in (gx.Forbidden, gx.BadRequest, gx.NotFound, gx.Conflict, gx.PreconditionFailed, gx.Unauthorized):
        assert gcp(permanent("x"), write=False) is None
    refused = requests.exceptions.ConnectionError(
        ux.MaxRetryError(None, "/", ux.NewConnectionError(None, "refused"))  # type: ignore[arg-type]
    )
    reset = requests.exceptions.ConnectionError(ux.ProtocolError("Connection aborted.", ConnectionResetError()))
    assert gcp(refused, write=True) == gcp(refused, write=False) == Retryable()
    assert gcp(reset, write=False) == Retryable() and gcp(reset, write=True) is None
    assert gcp(requests.exceptions.ReadTimeout(), write=True) is None
    assert gcp(requests.exceptions.SSLError(), write=False) is None


def _google_error(status: int, headers: dict[str, str]) -> Exception:
    """The exception google-api-core's REST transport raises for this HTTP answer (from_http_response)."""
    import io
    import json

    import requests
    from google.api_core import exceptions as gx

    response = requests.Response()
    response.status_code = status
    response.headers.update(headers)
    response.raw = io.BytesIO(json.dumps({"error": {"code": status, "message": "slow down"}}).encode())
    response.request = requests.Request("GET", "http://127.0.0.1/v1/projects/p1/locations/l/clusters/c").prepare()
    error = gx.from_http_response(response)  # type: ignore[no-untyped-call]
    assert isinstance(error, Exception)
    return error


def test_gcp_retry_after_is_slept_as_given(clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    from google.api_core import exceptions as gx

    from cidrx.providers.gke.api import classify as gcp

    monkeypatch.setattr(retry, "wall_clock", datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC).timestamp)
    throttled = _google_error(429, {"Retry-After": "4"})
    dated = _google_error(503, {"Retry-After": "Wed, 01 May 2024 12:00:30 GMT"})
    assert isinstance(throttled, gx.TooManyRequests) and isinstance(dated, gx.ServiceUnavailable)
    read = Flaky(throttled, dated)
    assert call_with_retry(read, lambda exc: gcp(exc, write=False), RetryPolicy(max_delay=1.0)) == "ok"
    assert clock.sleeps == [4.0, 30.0] and read.calls == 3

    # A write: the 429 is retried after its Retry-After; the 503 is not (the write may have happened).
    write = Flaky(_google_error(429, {"Retry-After": "2"}), _google_error(503, {"Retry-After": "1"}))
    with pytest.raises(gx.ServiceUnavailable):
        call_with_retry(write, lambda exc: gcp(exc, write=True), RetryPolicy(max_delay=1.0))
    assert clock.sleeps == [4.0, 30.0, 2.0] and write.calls == 2


def test_kube_classifier() -> None:
    import httpx2

    from cidrx.kube.api import classify as kube

    request = httpx2.Request("GET", "http://127.0.0.1/api/v1/nodes")

    def status(code: int, headers: dict[str, str] | None = None) -> Exception:
        response = httpx2.Response(code, headers=headers, json={"kind": "Status", "code": code}, request=request)
        return httpx2.HTTPStatusError("x", request=request, response=response)

    assert kube(status(429, {"Retry-After": "2"}), write=True) == Retryable(2.0)
    for code in (500, 502, 503, 504):
        assert kube(status(code), write=False) == Retryable(None)
        assert kube(status(code), write=True) == (Retryable(None) if code == 503 else None)
    assert kube(status(503, {"Retry-After": "3"}), write=True) == Retryable(3.0)  # not processed: repeat it
    for code in (400, 401, 403, 404, 409, 410, 422):
        assert kube(status(code), write=False) is None
    connect = httpx2.ConnectError("refused", request=request)
    for exc in (httpx2.ReadError("reset", request=request), httpx2.RemoteProtocolError("eof", request=request)):
        assert kube(exc, write=False) == Retryable() and kube(exc, write=True) is None
    assert kube(connect, write=True) == kube(connect, write=False) == Retryable()
