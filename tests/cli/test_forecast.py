"""`cidrx forecast` against a real Prometheus server holding backfilled history with known answers
(tests/support/conftest_prometheus.py: steady growth, a step change, flat use, a full range).

Tolerances, stated once: the steady subnet grows 5/day (±1 address of noise per sample) from 100, so today
170 ±1, trend 5 ±0.1/day and 16.2 ±0.3 days left; the step case grows 40/day after a batch of +1500 at day 10,
so trend 40 ±1/day and 25.9 ±0.5 days left, with the window starting after the step (±1 query step,
history/300 seconds); the flat pool's trend is within ±0.2/day of 0 and it never runs out.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.support.cli import one_line_error, run
from tests.support.conftest_prometheus import CONTEXT, DAY, TARGET, Lab
from tests.support.ports import refused_port

STEP_AT = 10 * DAY  # after the history's start


def forecast(lab: Lab, *extra: str) -> Any:
    return run("forecast", "--k8s", "--context", CONTEXT, "--prometheus", lab.url, *extra)


@pytest.fixture(scope="module")
def doc(forecast_lab: Lab) -> dict[str, Any]:
    result = forecast(forecast_lab, "-o", "json")
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def by_kind(doc: dict[str, Any], kind: str) -> dict[str, Any]:
    (r,) = [r for r in doc["ranges"] if r["kind"] == kind]
    return r


def ts(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def test_document_shape(doc: dict[str, Any]) -> None:
    assert doc["schema"] == "cidrx.forecast/v1" and doc["target"] == TARGET
    schema = json.loads((Path(__file__).resolve().parents[2] / "docs/schemas/forecast.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(doc)
    # Four ranges (the subnet with no size series is left out); the renamed subnet is still one range
    # (keyed by its CIDR), under its newest name.
    assert sorted(r["kind"] for r in doc["ranges"]) == ["calico-pool", "nodegroup", "subnet", "whereabouts-pool"]
    assert by_kind(doc, "subnet")["name"] == "subnet-0a (web)"
    for r in doc["ranges"]:
        assert {"target", "kind", "name", "cidr", "size", "used", "trend_per_day", "days_left", "runs_out_at"} <= set(r)
        assert {"start", "end", "points"} <= set(r["window"])
    # Soonest first: full, then the subnet, then the step; the flat pool (never) last.
    assert [r["kind"] for r in doc["ranges"]] == ["nodegroup", "subnet", "calico-pool", "whereabouts-pool"]


def test_steady_growth(doc: dict[str, Any], forecast_lab: Lab) -> None:
    r = by_kind(doc, "subnet")
    assert (r["cidr"], r["size"]) == ("10.0.0.0/24", 251)
    assert r["used"] == pytest.approx(170, abs=1)
    assert r["trend_per_day"] == pytest.approx(5, abs=0.1)
    assert r["days_left"] == pytest.approx(16.2, abs=0.3)
    assert ts(r["runs_out_at"]) == pytest.approx(forecast_lab.now + 16.2 * DAY, abs=0.3 * DAY + 600)
    low, high = r["days_left_band"]
    assert low <= r["days_left"] <= high
    # The whole fortnight is one window, across the rename.
    assert r["window"]["after_step"] is None and r["window"]["points"] > 250


def test_step_change_is_fitted_after_the_step(doc: dict[str, Any], forecast_lab: Lab) -> None:
    r = by_kind(doc, "calico-pool")
    assert r["used"] == 3060
    assert r["trend_per_day"] == pytest.approx(40, abs=1)
    assert r["days_left"] == pytest.approx(25.9, abs=0.5)
    start = forecast_lab.now - 14 * DAY
    assert ts(r["window"]["after_step"]) == pytest.approx(start + STEP_AT, abs=14 * DAY / 300 + 1)
    assert ts(r["window"]["start"]) == ts(r["window"]["after_step"])


def test_flat_use_never_runs_out_and_full_is_zero(doc: dict[str, Any]) -> None:
    flat = by_kind(doc, "whereabouts-pool")
    assert flat["trend_per_day"] == pytest.approx(0, abs=0.2)
    assert (flat["days_left"], flat["runs_out_at"]) == (None, None)
    full = by_kind(doc, "nodegroup")
    assert (full["cidr"], full["used"], full["size"], full["days_left"]) == (None, 58, 58, 0)


def test_fail_within_exits_3_only_when_something_runs_out_in_time(forecast_lab: Lab) -> None:
    # The nodegroup is full (0 days): any --fail-within catches it.
    assert forecast(forecast_lab, "--fail-within", "1h").exit_code == 3
    table = forecast(forecast_lab, "--horizon", "20d")
    assert table.exit_code == 0, table.output
    assert "full now" in table.stdout and "not within 20d" in table.stdout
    assert "after a step" in table.stdout


def test_html_draws_each_range(forecast_lab: Lab) -> None:
    result = forecast(forecast_lab, "-o", "html")
    assert result.exit_code == 0, result.output
    page = result.stdout
    assert page.startswith("<!DOCTYPE html>") and page.count("<svg") == 4
    assert "http://" not in page.replace(forecast_lab.url, "")  # no external assets


def test_no_series_for_the_target_is_exit_2(forecast_lab: Lab) -> None:
    result = run("forecast", "--k8s", "--context", "elsewhere", "--prometheus", forecast_lab.url)
    assert result.exit_code == 2
    assert "no cidrx_capacity_used_addresses series for target 'k8s:elsewhere/elsewhere'" in one_line_error(result)


def test_unreachable_prometheus_is_exit_6() -> None:
    result = run("forecast", "--k8s", "--context", CONTEXT, "--prometheus", f"http://127.0.0.1:{refused_port()}")
    assert result.exit_code == 6
    assert "cannot reach Prometheus" in one_line_error(result)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--prometheus", "prometheus:9090"], "is not an http(s) URL"),
        (["--prometheus", "http://127.0.0.1:1", "--horizon", "soon"], "--horizon 'soon' is not a duration"),
    ],
)
def test_bad_input_is_exit_2(args: list[str], message: str) -> None:
    result = run("forecast", "--k8s", "--context", CONTEXT, *args)
    assert result.exit_code == 2 and message in one_line_error(result)
