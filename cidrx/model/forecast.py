"""The forecast of each address space's use, from the history of cidrx's own series: the `cidrx.forecast/v1`
document (docs/schemas/forecast.schema.json) and the pure step from samples to one range's forecast.

Why it exists: a diagnosis says what is full now; a platform team also asks when the next range runs out and
whether that is within the change window. Prometheus keeps the history of `cidrx_capacity_used_addresses`;
`forecast_range` turns one range's samples into today's use, the trend per day with its 95 % band (Theil–Sen,
cidrx/model/trend.py), the days left and the date it runs out, or that it does not within the horizon.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime

from cidrx.model import trend


def rfc3339(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Window:
    """The samples the trend was fitted on: from `start` to `end`, `points` of them; `after_step` is the
    level shift (a batch of pods, a new range) the window starts after, `steps_removed` True when there were
    too few samples after it and the whole history was fitted with its shifts taken out."""

    start: str
    end: str
    points: int
    after_step: str | None = None
    steps_removed: bool = False


@dataclass(frozen=True)
class RangeForecast:
    """One address space (keyed by target, kind and CIDR, or name where it has no CIDR).

    `days_left` is 0 when already full and None when it does not run out within the horizon; the band is
    `days_left_low`..`days_left_high` (None: not within the horizon) from the trend's 95 % band.
    """

    target: str
    kind: str
    name: str
    cidr: str | None
    zone: str | None
    size: int
    used: int
    trend_per_day: float
    trend_low_per_day: float
    trend_high_per_day: float
    days_left: float | None
    days_left_low: float | None
    days_left_high: float | None
    runs_out_at: str | None
    window: Window
    level: float = 0.0  # the fitted use now, where the projection starts
    history: tuple[tuple[float, float], ...] = ()  # (unix seconds, used), for the HTML chart only


@dataclass(frozen=True)
class Forecast:
    target: str
    prometheus: str
    generated_at: str
    horizon_days: float
    history_days: float
    ranges: tuple[RangeForecast, ...]
    schema: str = "cidrx.forecast/v1"


@dataclass(frozen=True)
class RangeEntry:
    """One range in the `cidrx.forecast/v1` document. `days_left`: 0 when already full, null when it does not
    run out within the horizon; `days_left_band` is the same from the trend's 95 % band (low, high);
    `runs_out_at` is RFC 3339 or null; `window` the samples the trend was fitted on."""

    target: str
    kind: str
    name: str
    cidr: str | None
    zone: str | None
    size: int
    used: int
    trend_per_day: float
    trend_band_per_day: tuple[float, float]
    days_left: float | None
    days_left_band: tuple[float | None, float | None]
    runs_out_at: str | None
    window: Window


@dataclass(frozen=True)
class ForecastDocument:
    """What `cidrx forecast -o json` prints: one entry per range, soonest to run out first."""

    target: str
    prometheus: str
    generated_at: str
    horizon_days: float
    history_days: float
    ranges: tuple[RangeEntry, ...]
    schema: str = "cidrx.forecast/v1"


def document(f: Forecast) -> ForecastDocument:
    entries = tuple(
        RangeEntry(
            target=r.target,
            kind=r.kind,
            name=r.name,
            cidr=r.cidr,
            zone=r.zone,
            size=r.size,
            used=r.used,
            trend_per_day=r.trend_per_day,
            trend_band_per_day=(r.trend_low_per_day, r.trend_high_per_day),
            days_left=r.days_left,
            days_left_band=(r.days_left_low, r.days_left_high),
            runs_out_at=r.runs_out_at,
            window=r.window,
        )
        for r in f.ranges
    )
    return ForecastDocument(f.target, f.prometheus, f.generated_at, f.horizon_days, f.history_days, entries)


def _days(seconds: float | None, horizon_days: float) -> float | None:
    if seconds is None:
        return None
    days = round(seconds / trend.DAY, 2)
    return days if days <= horizon_days else None


def forecast_range(
    key: tuple[str, str, str, str | None, str | None],
    size: int,
    history: list[tuple[float, float]],
    now: float,
    horizon_days: float,
) -> RangeForecast | None:
    """The forecast of one range from its (time, used) history, oldest first; None without two samples.
    `key` is (target, kind, name, cidr, zone) as the latest series labels them."""
    ts = [t for t, _ in history]
    ys = [y for _, y in history]
    f = trend.fit(ts, ys)
    if f is None:
        return None
    used = round(ys[-1])
    if used >= size > 0:
        left: float | None = 0.0
        low: float | None = 0.0
        high: float | None = 0.0
    else:
        left = _days(trend.seconds_until(f, size, now), horizon_days)
        low = _days(trend.seconds_until(replace(f, slope=f.slope_high), size, now), horizon_days)
        high = _days(trend.seconds_until(replace(f, slope=f.slope_low), size, now), horizon_days)
    target, kind, name, cidr, zone = key
    window = Window(
        rfc3339(f.start),
        rfc3339(f.at),
        f.points,
        rfc3339(f.shift_at) if f.shift_at is not None else None,
        f.shifts_removed,
    )
    return RangeForecast(
        target=target,
        kind=kind,
        name=name,
        cidr=cidr,
        zone=zone,
        size=size,
        used=used,
        trend_per_day=round(f.slope * trend.DAY, 3),
        trend_low_per_day=round(f.slope_low * trend.DAY, 3),
        trend_high_per_day=round(f.slope_high * trend.DAY, 3),
        days_left=left,
        days_left_low=low,
        days_left_high=high,
        runs_out_at=rfc3339(now + left * trend.DAY) if left is not None else None,
        window=window,
        level=round(f.value(now), 3),
        history=tuple(history),
    )
