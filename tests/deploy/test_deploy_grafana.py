"""deploy/grafana: the dashboard is valid JSON of Grafana's dashboard model, and every metric its queries
use is one the exporter serves (computed here from the bundled example snapshots, the way the exporter does).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from cidrx.app.diagnose import analyze
from cidrx.app.exporter import Outcome, State
from cidrx.model.snapshot import load_snapshot

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "deploy" / "grafana" / "cidrx-dashboard.json"
METRIC = re.compile(r"\b(cidrx_[a-z_]+)\b")


def served() -> set[str]:
    """Every family the exporter serves for any of the example snapshots."""
    names: set[str] = set()
    for path in sorted((ROOT / "examples").glob("*.snapshot.json")):
        state = State()
        d = analyze(load_snapshot(path))
        state.record(Outcome((d,), (), (d.target.label(),)), 0.5, 1.0)
        names |= {f.name for f in state.families()}
    return names


def queries(dash: dict[str, Any]) -> list[str]:
    out = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    out += [v["definition"] for v in dash["templating"]["list"] if v["type"] == "query"]
    return out


def test_dashboard_parses_and_has_the_grafana_shape() -> None:
    dash = json.loads(DASHBOARD.read_text())
    assert {"title", "uid", "panels", "templating", "schemaVersion"} <= dash.keys()
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids)), "panel ids are unique"
    variables = {v["name"] for v in dash["templating"]["list"]}
    assert {"datasource", "target"} <= variables
    for p in dash["panels"]:
        g = p["gridPos"]
        assert g["x"] >= 0 and g["x"] + g["w"] <= 24, p["title"]
        if p["type"] != "row":
            assert p["targets"] and p["datasource"]["uid"] == "${datasource}", p["title"]
            assert len({t["refId"] for t in p["targets"]}) == len(p["targets"]), p["title"]


def test_dashboard_uses_only_metrics_the_exporter_serves() -> None:
    dash = json.loads(DASHBOARD.read_text())
    used = {m for q in queries(dash) for m in METRIC.findall(q)}
    serves = served()
    assert used - serves == set(), "the dashboard queries metrics the exporter does not serve"
    # And it shows the figures people alert on.
    assert {"cidrx_up", "cidrx_capacity_utilization_ratio", "cidrx_capacity_stale", "cidrx_finding"} <= used
    # Metric names in label_values() and in queries carry no typos the regex would miss: nothing else cidrx-like.
    assert all(re.fullmatch(r"cidrx_[a-z_]+", m) for m in used)
