"""The robust fit behind `cidrx forecast` on series with known answers (no server: cidrx/model/trend.py)."""

from __future__ import annotations

import pytest

from cidrx.model import trend
from cidrx.model.forecast import forecast_range

DAY = trend.DAY
HOUR = 3600.0
T = [i * HOUR for i in range(14 * 24 + 1)]  # 14 days, hourly
NOW = T[-1]


def test_steady_growth_slope_band_and_days_left() -> None:
    ys = [100 + 10 * t / DAY for t in T]
    f = trend.fit(T, ys)
    assert f is not None and f.shift_at is None and f.points == len(T)
    assert f.slope * DAY == pytest.approx(10)
    assert f.slope_low * DAY <= 10 <= f.slope_high * DAY
    assert trend.seconds_until(f, 300, NOW) == pytest.approx((300 - 240) / 10 * DAY)


def test_a_step_is_found_and_the_fit_starts_after_it() -> None:
    ys = [100 + 10 * t / DAY + (500 if t >= 10 * DAY else 0) for t in T]
    f = trend.fit(T, ys)
    assert f is not None and f.shift_at == 10 * DAY and not f.shifts_removed
    assert f.slope * DAY == pytest.approx(10)
    assert f.value(NOW) == pytest.approx(740)


def test_a_step_in_the_last_samples_is_taken_out_of_the_whole_history() -> None:
    ys = [100 + 10 * t / DAY + (500 if t >= NOW - 2 * HOUR else 0) for t in T]
    f = trend.fit(T, ys)
    assert f is not None and f.shifts_removed and f.points == len(T)
    assert f.slope * DAY == pytest.approx(10)
    assert f.value(NOW) == pytest.approx(740)


def test_a_gap_in_the_history_is_not_a_step() -> None:
    ts = [t for t in T if not 5 * DAY < t < 8 * DAY]
    ys = [100 + 10 * t / DAY for t in ts]
    f = trend.fit(ts, ys)
    assert f is not None and f.shift_at is None


def test_flat_noisy_use_has_no_trend_and_never_runs_out() -> None:
    ys = [120 + (i * 7) % 3 - 1 for i in range(len(T))]
    r = forecast_range(("t", "subnet", "s", "10.0.0.0/24", None), 251, list(zip(T, ys, strict=True)), NOW, 30)
    assert r is not None
    assert abs(r.trend_per_day) < 0.1
    assert (r.days_left, r.runs_out_at) == (None, None)


def test_full_is_zero_days_and_now() -> None:
    r = forecast_range(("t", "nodegroup", "ng", None, None), 58, [(t, 58.0) for t in T], NOW, 30)
    assert r is not None and r.days_left == 0 and r.runs_out_at == "1970-01-15T00:00:00Z"


def test_beyond_the_horizon_is_null_and_one_sample_is_no_forecast() -> None:
    ys = [100 + 1 * t / DAY for t in T]
    r = forecast_range(("t", "subnet", "s", "c", None), 251, list(zip(T, ys, strict=True)), NOW, 30)
    assert r is not None and r.days_left is None and r.days_left_low is None
    assert forecast_range(("t", "subnet", "s", "c", None), 251, [(NOW, 5.0)], NOW, 30) is None
