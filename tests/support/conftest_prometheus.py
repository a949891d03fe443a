"""The session's real Prometheus server, loaded with weeks of backfilled history of cidrx's capacity series
(tests/support/prometheus_server.py), for the forecast tests. Started once, on first use; stopped at the end.

The history (`LAB`) is a set of ranges whose answers are known by construction: steady growth, a step change,
flat use and a full range. It ends at the moment the fixture starts, so `cidrx forecast` run right after reads
it as today's history.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.prometheus_server import History, backfill, series_count, serve
from tests.support.tools_required import require_tool

TARGET = "k8s:forecast-lab/forecast-lab"  # what `--k8s --context forecast-lab` names
CONTEXT = "forecast-lab"
DAYS = 14
EVERY = 240.0  # seconds between samples (within the server's 5m lookback)
DAY = 86400.0


@dataclass(frozen=True)
class Lab:
    url: str
    now: float  # the last sample's time


def _labels(kind: str, name: str, cidr: str, zone: str = "") -> dict[str, str]:
    return {"target": TARGET, "kind": kind, "name": name, "cidr": cidr, "zone": zone}


def _noise(i: int) -> int:
    return (i * 7) % 3 - 1  # -1, 0 or +1, deterministic


def lab_history(now: float) -> list[History]:
    """The known cases, sampled every EVERY seconds for DAYS days up to `now`:

    - steady: subnet 10.0.0.0/24 (251 usable), 100 + 5/day (±1); renamed halfway (the `name` label changes),
      so only the CIDR keys it. Today 170: 16.2 days left.
    - step: calico-pool 10.1.0.0/20 (4096), 1000 + 40/day with a batch of +1500 at day 10. Today 3060:
      (4096 − 3060) / 40 = 25.9 days left; fitted on the four days after the step.
    - flat: whereabouts-pool 10.2.0.0/24 (254), 120 (±1): no run-out.
    - full: nodegroup `ng` (no CIDR), 58 of 58 pod slots: 0 days left.
    - orphan: subnet 10.3.0.0/24 with a used series and no size series: left out.
    """
    n = int(DAYS * DAY / EVERY)
    times = [now - (n - i) * EVERY for i in range(n + 1)]
    days = [(t - times[0]) / DAY for t in times]
    steady = [100 + round(5 * d) + _noise(i) for i, d in enumerate(days)]
    step = [1000 + round(40 * d) + (1500 if d >= 10 else 0) for d in days]
    flat = [120 + _noise(i) for i in range(len(days))]
    half = len(times) // 2
    out: list[History] = []

    def add(labels: dict[str, str], size: int, used: list[int], split: int | None = None) -> None:
        parts = [(labels, 0, len(times))]
        if split is not None:
            renamed = {**labels, "name": labels["name"] + " (web)"}
            parts = [(labels, 0, split), (renamed, split, len(times))]
        for lab, lo, hi in parts:
            out.append(History("cidrx_capacity_size_addresses", lab, [(t, size) for t in times[lo:hi]]))
            out.append(History("cidrx_capacity_used_addresses", lab, list(zip(times[lo:hi], used[lo:hi], strict=True))))

    add(_labels("subnet", "subnet-0a", "10.0.0.0/24", "lab-a"), 251, steady, split=half)
    add(_labels("calico-pool", "default-ipv4-ippool", "10.1.0.0/20"), 4096, step)
    add(_labels("whereabouts-pool", "kube-system/10.2.0.0-24", "10.2.0.0/24"), 254, flat)
    add(_labels("nodegroup", "ng", ""), 58, [58] * len(times))
    # Use without a size (a half-written scrape): nothing to run out of, so no forecast for it.
    orphan = _labels("subnet", "subnet-0b", "10.3.0.0/24", "lab-b")
    out.append(History("cidrx_capacity_used_addresses", orphan, list(zip(times, steady, strict=True))))
    return sorted(out, key=lambda h: h.metric)


@pytest.fixture(scope="session")
def forecast_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    promtool = require_tool("promtool", "backfills the forecast tests' history")
    prometheus = require_tool("prometheus", "the forecast tests read history from a real server")
    root = tmp_path_factory.mktemp("prometheus")
    data = root / "data"
    now = float(int(time.time()))
    backfill(promtool, lab_history(now), data)
    with serve(prometheus, data, Path(root / "prometheus.log")) as url:
        assert series_count(url, f'{{target="{TARGET}"}}') == 11
        yield Lab(url, now)
