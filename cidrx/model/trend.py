"""Robust straight-line fits of a range's use over time, for `cidrx forecast`.

Why it exists: address use grows by jumps (a batch of pods, a new node group) and drops when a range is
added or pods move; a least-squares line through such history answers the wrong question. The fit here is
Theil–Sen (the median of the slopes between every pair of points), which ignores up to ~29 % wild points,
with Sen's distribution-free confidence interval for the slope. Before fitting, the history is searched for
level shifts (one sample-to-sample change far outside what the series does otherwise); the fit then uses
only the samples after the last shift, so yesterday's batch of pods neither steepens nor flattens the trend.
Pure: numbers in, numbers out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import pairwise
from statistics import median

DAY = 86400.0
# Sen's interval at 95 %: the normal quantile.
Z_95 = 1.959964
# A level shift is a single step at least this many robust standard deviations away from the typical step...
SHIFT_SIGMAS = 8.0
# ...and at least this many times the typical step, and at least this many addresses (counts are integers).
SHIFT_TYPICAL = 10.0
SHIFT_MIN = 3.0
# Fewer samples after the last shift than this, and the fit uses the whole history with the shifts taken out.
MIN_POINTS = 6


@dataclass(frozen=True)
class Fit:
    """A line through (t, y): y = level + slope × (t − at). Slopes are per second; `slope_low`/`slope_high` is
    the 95 % band; `start`/`points` the window fitted; `shift_at` the time of the last level shift the window
    starts after (None: no shift found), `shifts_removed` True when the window is the whole history with its
    shifts taken out (too few samples after the last one)."""

    slope: float
    slope_low: float
    slope_high: float
    level: float
    at: float
    start: float
    points: int
    shift_at: float | None = None
    shifts_removed: bool = False

    def value(self, t: float) -> float:
        return self.level + self.slope * (t - self.at)


def _mad_sigma(values: list[float]) -> float:
    m = median(values)
    return 1.4826 * median(abs(v - m) for v in values)


def _residual_steps(ts: list[float], ys: list[float]) -> tuple[list[float], float]:
    """Each step less what the typical rate would have added over its interval (so a gap in the history is
    not a shift), and that typical rate."""
    rate = median((b - a) / (u - t) for t, u, a, b in zip(ts, ts[1:], ys, ys[1:], strict=False))
    return [(b - a) - rate * (u - t) for t, u, a, b in zip(ts, ts[1:], ys, ys[1:], strict=False)], rate


def shifts(ts: list[float], ys: list[float]) -> list[int]:
    """Indices i where the step ys[i-1] -> ys[i] is a level shift (see SHIFT_*): far from the typical step."""
    if len(ys) < 3:
        return []
    residuals, rate = _residual_steps(ts, ys)
    typical = abs(rate) * median(u - t for t, u in pairwise(ts))
    threshold = max(SHIFT_SIGMAS * _mad_sigma(residuals), SHIFT_TYPICAL * typical, SHIFT_MIN)
    return [i + 1 for i, r in enumerate(residuals) if abs(r) > threshold]


def theil_sen(ts: list[float], ys: list[float]) -> tuple[float, float, float, float]:
    """(slope, slope_low, slope_high, level at the last t): the median pairwise slope, Sen's 95 % interval
    and the median intercept, evaluated at the last sample's time."""
    n = len(ts)
    slopes = sorted((ys[j] - ys[i]) / (ts[j] - ts[i]) for i in range(n) for j in range(i + 1, n) if ts[j] != ts[i])
    if not slopes:
        return 0.0, 0.0, 0.0, ys[-1]
    slope = median(slopes)
    spread = Z_95 * math.sqrt(n * (n - 1) * (2 * n + 5) / 18.0)
    lo = max(0, math.floor((len(slopes) - spread) / 2))
    hi = min(len(slopes) - 1, math.ceil((len(slopes) + spread) / 2))
    at = ts[-1]
    level = median(y - slope * (t - at) for t, y in zip(ts, ys, strict=True))
    return slope, slopes[lo], slopes[hi], level


def fit(ts: list[float], ys: list[float]) -> Fit | None:
    """The trend of a series sampled at increasing times `ts`; None without two samples at distinct times."""
    if len(ts) < 2 or ts[-1] <= ts[0]:
        return None
    found = shifts(ts, ys)
    if not found:
        slope, lo, hi, level = theil_sen(ts, ys)
        return Fit(slope, lo, hi, level, ts[-1], ts[0], len(ts))
    last = found[-1]
    if len(ts) - last >= MIN_POINTS:
        slope, lo, hi, level = theil_sen(ts[last:], ys[last:])
        return Fit(slope, lo, hi, level, ts[-1], ts[last], len(ts) - last, shift_at=ts[last])
    # Too little after the last shift to see a trend: take every shift out (the shift's step replaced by what
    # the typical rate adds) and fit the whole history, anchored to the level after the last shift.
    residuals, _ = _residual_steps(ts, ys)
    offset, flat = 0.0, [ys[0]]
    for i in range(1, len(ys)):
        if i in found:
            offset += residuals[i - 1]
        flat.append(ys[i] - offset)
    slope, lo, hi, _ = theil_sen(ts, flat)
    after = list(zip(ts[last:], ys[last:], strict=True))
    level = median(y - slope * (t - ts[-1]) for t, y in after)
    return Fit(slope, lo, hi, level, ts[-1], ts[0], len(ts), shift_at=ts[last], shifts_removed=True)


def seconds_until(f: Fit, limit: float, now: float) -> float | None:
    """Seconds from `now` until the line reaches `limit` (0 when it already has); None when it never does."""
    level = f.value(now)
    if level >= limit:
        return 0.0
    if f.slope <= 0:
        return None
    return (limit - level) / f.slope
