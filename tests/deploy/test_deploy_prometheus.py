"""deploy/prometheus: the alert rules load (`promtool check rules`) and behave as their unit tests say
(`promtool test rules`), and every cidrx series they use is one cidrx serves (docs/metrics.md).

promtool comes from the OS's Prometheus package (Debian bookworm: 2.42); without it these tests skip,
unless CIDRX_REQUIRE_TOOLS says it must be there (tests/support/tools_required.py), as in CI.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.support.tools_required import ENV, is_required, require_tool

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy" / "prometheus" / "cidrx-rules.yml"
RULE_TESTS = ROOT / "deploy" / "prometheus" / "cidrx-rules.test.yml"
WHY = "Debian/Ubuntu: apt-get install prometheus"


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    tool = require_tool("promtool", WHY)
    return subprocess.run([tool, *args], cwd=RULES.parent, capture_output=True, text=True, timeout=120)


def test_promtool_check_rules() -> None:
    result = promtool("check", "rules", RULES.name)
    assert result.returncode == 0, result.stdout + result.stderr
    count = sum(len(g["rules"]) for g in yaml.safe_load(RULES.read_text())["groups"])
    assert f"SUCCESS: {count} rules found" in result.stdout


def test_promtool_test_rules() -> None:
    result = promtool("test", "rules", RULE_TESTS.name)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def documented_metrics() -> set[str]:
    text = (ROOT / "docs" / "metrics.md").read_text()
    return set(re.findall(r"^\| `(cidrx_[a-z_]+)`", text, re.MULTILINE))


def test_rules_use_only_documented_series_and_every_alert_is_documented_and_tested() -> None:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    rules = [r for g in groups for r in g["rules"]]
    used = {name for r in rules for name in re.findall(r"\b(cidrx_[a-z_]+)", r["expr"])}
    assert used and used <= documented_metrics(), used - documented_metrics()
    alerts = {r["alert"] for r in rules}
    docs = (ROOT / "docs" / "metrics.md").read_text()
    assert {a for a in alerts if f"`{a}`" not in docs} == set(), "alerts missing from docs/metrics.md"
    tests = yaml.safe_load(RULE_TESTS.read_text())["tests"]
    tested = {t["alertname"] for case in tests for t in case.get("alert_rule_test", []) if t.get("exp_alerts")}
    assert alerts - tested == set(), "alerts no unit test sees firing"


@pytest.mark.parametrize(
    ("value", "tool", "required"),
    [
        ("", "promtool", False),
        ("0", "promtool", False),
        ("1", "promtool", True),
        ("all", "terraform", True),
        ("promtool,chromium", "chromium", True),
        ("promtool", "terraform", False),
    ],
)
def test_require_tools_setting(monkeypatch: pytest.MonkeyPatch, value: str, tool: str, required: bool) -> None:
    monkeypatch.setenv(ENV, value)
    assert is_required(tool) is required


def test_a_missing_required_tool_fails_and_an_optional_one_skips(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setenv(ENV, "1")
    with pytest.raises(pytest.fail.Exception, match="no promtool on PATH"):
        require_tool("promtool", WHY)
    monkeypatch.setenv(ENV, "0")
    with pytest.raises(pytest.skip.Exception, match="set CIDRX_REQUIRE_TOOLS=1"):
        require_tool("promtool", WHY)
