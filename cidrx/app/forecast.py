"""`forecast` as a use case: read the history of one target's capacity series from Prometheus and forecast
each range (cidrx/model/forecast.py).

Why it exists: the exporter already writes `cidrx_capacity_size_addresses` and `cidrx_capacity_used_addresses`
for every range (docs/metrics.md) and Prometheus keeps their history, so when a range runs out can be answered
from Prometheus alone, without cloud credentials. Ranges are keyed by their stable labels (target, kind and
CIDR; the name where a row has no CIDR), so a display name that changed does not split a range's history.
"""

from __future__ import annotations

import math
import re
import time

from cidrx.errors import InvalidInput
from cidrx.model.forecast import Forecast, RangeForecast, forecast_range, rfc3339
from cidrx.model.trend import DAY
from cidrx.transport.prometheus import Series, check_url, query_range

SIZE = "cidrx_capacity_size_addresses"
USED = "cidrx_capacity_used_addresses"
# About this many samples per range: enough for a robust fit, few enough for the pairwise slopes.
SAMPLES = 300
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNIT = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": DAY, "w": 7 * DAY}

Key = tuple[str, str, str]


def parse_duration(text: str, option: str) -> float:
    """Seconds in a duration like `30d`, `36h`, `2w`; InvalidInput naming the option otherwise."""
    m = _DURATION.match(text)
    if m is None or float(m[1]) <= 0:
        raise InvalidInput(f"{option} {text!r} is not a duration like 7d, 24h or 2w")
    return float(m[1]) * _UNIT[m[2]]


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def range_key(labels: dict[str, str]) -> Key:
    """A range's identity across scrapes: target, kind and CIDR, or the name for rows without a CIDR."""
    cidr = labels.get("cidr", "")
    return labels.get("target", ""), labels.get("kind", ""), cidr or f"name:{labels.get('name', '')}"


def _merge(series: list[Series]) -> dict[Key, tuple[dict[str, str], list[tuple[float, float]]]]:
    """Samples per range, series of one range merged (the labels of the one seen last win)."""
    merged: dict[Key, tuple[dict[str, str], dict[float, float], float]] = {}
    for s in series:
        if not s.samples:
            continue
        key = range_key(s.labels)
        labels, samples, latest = merged.get(key, ({}, {}, -math.inf))
        samples.update(s.samples)
        last = s.samples[-1][0]
        merged[key] = (s.labels, samples, last) if last >= latest else (labels, samples, latest)
    return {k: (labels, sorted(samples.items())) for k, (labels, samples, _) in merged.items()}


def forecast(
    target: str, url: str, horizon: float, history: float, now: float | None = None
) -> tuple[Forecast, list[RangeForecast]]:
    """The forecast of every range of `target` Prometheus has history for, soonest to run out first."""
    base = check_url(url)
    end = time.time() if now is None else now
    start = end - history
    step = max(15.0, math.ceil(history / SAMPLES))
    selector = f"{{target={_quote(target)}}}"
    used = _merge(query_range(base, USED + selector, start, end, step))
    sizes = _merge(query_range(base, SIZE + selector, start, end, step))
    if not used:
        raise InvalidInput(
            f"Prometheus at {base} has no {USED} series for target {target!r} in the last {history / DAY:g} days",
            hint="is the exporter scraped, and do the TARGET flags name the target label it writes?",
        )
    ranges = []
    for key, (labels, samples) in used.items():
        size_samples = sizes.get(key, (labels, []))[1]
        if not size_samples or size_samples[-1][1] <= 0:
            continue  # no size to run out of (a series scraped half-way, or an empty range)
        size = round(size_samples[-1][1])
        ident = (
            target,
            labels.get("kind", ""),
            labels.get("name", ""),
            labels.get("cidr") or None,
            labels.get("zone") or None,
        )
        r = forecast_range(ident, size, samples, end, horizon / DAY)
        if r is not None:
            ranges.append(r)
    ranges.sort(key=lambda r: (r.days_left is None, r.days_left or 0.0, -(r.used / r.size if r.size else 1.0)))
    doc = Forecast(target, base, rfc3339(end), horizon / DAY, history / DAY, tuple(ranges))
    return doc, ranges


def runs_out_within(ranges: list[RangeForecast], seconds: float) -> list[RangeForecast]:
    return [r for r in ranges if r.days_left is not None and r.days_left * DAY <= seconds]
