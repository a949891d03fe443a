"""Polling until the cloud says a change is usable, with a deadline that turns into a resumable stop.

Cloud mutations finish asynchronously (a subnet goes `pending` -> `available`, a node group takes
minutes, GCE operations must be polled). Every executor waits the same way: probe, back off exponentially
up to a cap, tell the user what it is waiting for now and then, and give up with exit 5 rather than hang
a pipeline forever. The clock and sleep are injectable so tests run a ten-minute wait in microseconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from cidrx.errors import ApplyInterrupted

T = TypeVar("T")

Report = Callable[[str, float], None]
"""Called with (what, elapsed seconds) while a wait is in progress."""


class Waiter:
    """Polls a probe until it returns a value; `report` hears about long waits at most every `report_every` s."""

    def __init__(
        self,
        *,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
        report: Report | None = None,
        report_every: float = 10.0,
    ) -> None:
        self.sleep = sleep
        self.monotonic = monotonic
        self.report = report
        self.report_every = report_every

    def wait_until(
        self,
        what: str,
        probe: Callable[[], T | None],
        *,
        timeout: float,
        interval: float = 2.0,
        max_interval: float = 30.0,
        report: Report | None = None,
    ) -> T:
        """Return the first non-None value of `probe()`; raise ApplyInterrupted after `timeout` seconds.

        The probe runs at once, then after `interval`, 2×`interval`, … capped at `max_interval`; the last
        sleep is shortened so the final probe happens at the deadline. Exceptions from the probe propagate.
        """
        if interval <= 0 or max_interval < interval:
            raise ValueError(f"bad polling intervals: interval={interval}, max_interval={max_interval}")
        sink = report if report is not None else self.report
        start = self.monotonic()
        last_report = start
        delay = interval
        while True:
            value = probe()
            if value is not None:
                return value
            now = self.monotonic()
            elapsed = now - start
            if elapsed >= timeout:
                raise ApplyInterrupted(
                    f"timed out after {timeout:.0f}s waiting for {what}; run the same command again to resume"
                )
            if sink is not None and now - last_report >= self.report_every:
                sink(what, elapsed)
                last_report = now
            self.sleep(min(delay, timeout - elapsed))
            delay = min(delay * 2, max_interval)
