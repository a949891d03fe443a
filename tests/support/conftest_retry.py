"""Pytest plugin: no test sleeps for real in cidrx's retry policy (docs/architecture.md, tests and fakes).

Every cloud and Kubernetes call retries transient failures (cidrx/transport/retry.py); tests that reach an
unreachable endpoint or inject a 503 would otherwise wait out real backoffs. This autouse fixture swaps the
policy's `sleep` for one that only records the delays; ``retry_sleeps`` gives a test that list.
"""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def retry_sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    from cidrx.transport import retry

    slept: list[float] = []
    monkeypatch.setattr(retry, "sleep", slept.append)
    return slept


@pytest.fixture
def retry_clock(monkeypatch: pytest.MonkeyPatch, retry_sleeps: list[float]) -> list[float]:
    """The retry policy's clock as a one-item list: each recorded sleep moves it on, so retry budgets
    (`CIDRX_RETRY_BUDGET`) run out without real waiting. Delays still land in ``retry_sleeps``."""
    from cidrx.transport import retry

    clock = [0.0]

    def sleep(seconds: float) -> None:
        retry_sleeps.append(seconds)
        clock[0] += seconds

    monkeypatch.setattr(retry, "sleep", sleep)
    monkeypatch.setattr(retry, "monotonic", lambda: clock[0])
    return clock
