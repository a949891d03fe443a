"""Run `cidrx exporter` as a real process and scrape it: used by the exporter tests and the RSS bench.

The exporter binds port 0 and logs the address it got, so there is no race for a free port. Waiting is a
bounded poll (a scrape every few hundredths of a second until a condition holds), never a fixed sleep.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

SERVING = re.compile(r"serving (http://\S+)/metrics")
DEADLINE = 60.0  # seconds any one wait may take before the test fails (a hung exporter, not a slow one)
POLL = 0.05

Sample = tuple[str, frozenset[tuple[str, str]]]


@dataclass
class Scrape:
    """One /metrics answer: every sample by (name, labels), and the HELP text of every family."""

    samples: dict[Sample, float]
    helps: dict[str, str]

    def value(self, metric: str, **labels: str) -> float:
        """The one sample of `metric` whose labels include `labels`."""
        found = [v for (n, ls), v in self.samples.items() if n == metric and set(labels.items()) <= ls]
        assert len(found) == 1, f"{len(found)} samples of {metric} {labels}"
        return found[0]

    def names(self) -> set[str]:
        return {n for n, _ in self.samples} | set(self.helps)

    def data(self) -> dict[Sample, float]:
        """The capacity and finding samples (what `diagnose -o prometheus` has too)."""
        return {k: v for k, v in self.samples.items() if k[0].startswith(("cidrx_capacity_", "cidrx_finding"))}


def parse(text: str) -> Scrape:
    from prometheus_client.parser import text_string_to_metric_families

    samples: dict[Sample, float] = {}
    helps: dict[str, str] = {}
    for family in text_string_to_metric_families(text):
        helps[family.name] = family.documentation
        for s in family.samples:
            key = (s.name, frozenset(s.labels.items()))
            assert key not in samples, f"duplicate series {key}"
            samples[key] = s.value
    return Scrape(samples, helps)


class Exporter:
    """`cidrx exporter ARGS --listen 127.0.0.1:0`, its stderr in a file."""

    def __init__(self, args: list[str], log: Path, env: Mapping[str, str] | None = None) -> None:
        self.log = log
        self._err = log.open("w")
        full_env = {**os.environ, "CIDRX_RETRY_MAX_ATTEMPTS": "1", **(env or {})}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cidrx", "exporter", *args, "--listen", "127.0.0.1:0"],
            stdout=subprocess.DEVNULL,
            stderr=self._err,
            env=full_env,
        )
        self.url = self._wait_for_url()

    def _wait_for_url(self) -> str:
        end = time.monotonic() + DEADLINE
        while time.monotonic() < end:
            m = SERVING.search(self.log.read_text())
            if m:
                return m.group(1)
            assert self.proc.poll() is None, f"exporter exited {self.proc.returncode}: {self.log.read_text()}"
            time.sleep(POLL)
        raise AssertionError(f"exporter never said where it serves: {self.log.read_text()}")

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(self.url + path, timeout=10) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def scrape(self) -> Scrape:
        status, body = self.get("/metrics")
        assert status == 200, body
        return parse(body)

    def wait(self, what: str, ok: Callable[[Scrape], bool]) -> Scrape:
        """Scrape until `ok` holds for a scrape; fail after DEADLINE."""
        end = time.monotonic() + DEADLINE
        while time.monotonic() < end:
            s = self.scrape()
            if ok(s):
                return s
            assert self.proc.poll() is None, f"exporter exited {self.proc.returncode}: {self.log.read_text()}"
            time.sleep(POLL)
        raise AssertionError(f"timed out waiting for {what}; stderr: {self.log.read_text()}")

    def collections(self, s: Scrape) -> float:
        return s.value("cidrx_collections_total")

    def terminate(self) -> int:
        """SIGTERM; the exit code (the process is killed if it does not stop in time)."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise
        finally:
            self._err.close()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._err.close()
