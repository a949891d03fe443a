"""`-o prometheus`: the text exposition format, parsed back with a small strict parser (prometheus_client is
not a dependency) and checked for exact values, label escaping and the format's structural rules."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from cidrx.cli import cli
from cidrx.errors import InvalidInput
from cidrx.model.findings import Capacity, Finding, Severity, make_diagnosis
from cidrx.model.plan import Plan
from cidrx.model.target import Target
from cidrx.render import FORMATS, render_diagnosis, render_plan
from cidrx.render.prometheus import escape_label, format_value, metric_name, render_prometheus
from tests.support.prometheus_text import parse

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "eks-demo-ip.snapshot.json"
TARGET = Target("k8s", "lab", context="lab")
LABEL = "k8s:lab/lab"


def capacity(**kw: object) -> Capacity:
    base: dict[str, object] = {
        "kind": "whereabouts-pool",
        "name": "macvlan-10.10.0.0-28",
        "cidr": "10.10.0.0/28",
        "size": 14,
        "used": 13,
        "free": 1,
        "utilization": 0.9286,
    }
    return Capacity(**{**base, **kw})  # type: ignore[arg-type]


def test_capacity_figures_with_exact_values_and_labels() -> None:
    rows = [
        capacity(note="3 of them stale"),
        capacity(
            kind="node-ipam", name="cluster-cidr", cidr="10.244.0.0/16", size=65536, used=768, free=64768,
            utilization=0.0117, max_nodes=256, nodes=3,
        ),
        capacity(kind="subnet", name="subnet-a", cidr="10.0.208.0/27", size=27, used=27, free=0, utilization=1.0,
                 zone="ap-southeast-2a"),
    ]  # fmt: skip
    p = parse(render_prometheus(make_diagnosis(TARGET, "f" * 64, rows, [])))
    pool = {"target": LABEL, "kind": "whereabouts-pool", "name": "macvlan-10.10.0.0-28", "cidr": "10.10.0.0/28"}
    assert p.value("cidrx_capacity_size_addresses", **pool) == 14
    assert p.value("cidrx_capacity_used_addresses", **pool) == 13
    assert p.value("cidrx_capacity_free_addresses", **pool) == 1
    assert p.value("cidrx_capacity_utilization_ratio", **pool) == 0.9286
    assert ("zone", "") in next(iter(p.samples["cidrx_capacity_size_addresses"]))
    assert p.value("cidrx_capacity_max_nodes", kind="node-ipam") == 256
    assert p.value("cidrx_capacity_nodes", kind="node-ipam") == 3
    assert p.value("cidrx_capacity_free_addresses", zone="ap-southeast-2a") == 0
    assert p.value("cidrx_capacity_utilization_ratio", cidr="10.0.208.0/27") == 1
    # Node counts only where the row has them.
    assert len(p.samples["cidrx_capacity_max_nodes"]) == 1
    assert list(p.help) == [
        "cidrx_capacity_size_addresses",
        "cidrx_capacity_used_addresses",
        "cidrx_capacity_free_addresses",
        "cidrx_capacity_utilization_ratio",
        "cidrx_capacity_max_nodes",
        "cidrx_capacity_nodes",
        "cidrx_findings",
    ]
    label_names = {name for series in p.samples["cidrx_capacity_size_addresses"] for name, _ in series}
    assert label_names == {"target", "kind", "name", "cidr", "zone"}


def test_findings_counts_for_every_severity_and_one_series_each() -> None:
    findings = [
        Finding("WHEREABOUTS-STALE-ALLOCATIONS", Severity.CRITICAL, "pool a", "s"),
        Finding("NODE-IPAM-NEARLY-EXHAUSTED", Severity.WARNING, "10.244.0.0/16", "s"),
        Finding("NODE-IPAM-NEARLY-EXHAUSTED", Severity.WARNING, "10.244.0.0/16", "again"),
    ]
    p = parse(render_prometheus(make_diagnosis(TARGET, "", [], findings)))
    assert p.samples["cidrx_findings"] == {
        (("target", LABEL), ("severity", "critical")): 1,
        (("target", LABEL), ("severity", "warning")): 2,
        (("target", LABEL), ("severity", "info")): 0,
    }
    assert p.value("cidrx_finding", id="WHEREABOUTS-STALE-ALLOCATIONS", severity="critical", subject="pool a") == 1
    assert p.value("cidrx_finding", id="NODE-IPAM-NEARLY-EXHAUSTED") == 2  # identical series are counted
    assert "cidrx_capacity_size_addresses" not in p.samples


def test_empty_diagnosis_still_reports_zero_findings() -> None:
    text = render_prometheus(make_diagnosis(TARGET, "", [], []))
    p = parse(text)
    assert set(p.samples) == {"cidrx_findings"}
    assert sum(p.samples["cidrx_findings"].values()) == 0


def test_label_values_are_escaped() -> None:
    nasty = 'pool "blue"\\net\nline2'
    rows = [capacity(name=nasty, zone="z\\1")]
    finding = Finding("X-ID", Severity.INFO, 'subject with "quotes" and \\ and\nnewline', "s")
    text = render_prometheus(make_diagnosis(TARGET, "", rows, [finding]))
    assert 'name="pool \\"blue\\"\\\\net\\nline2"' in text
    assert all(line.count("\n") == 0 for line in text.splitlines())
    p = parse(text)
    assert p.value("cidrx_capacity_size_addresses", name=nasty, zone="z\\1") == 14
    assert p.value("cidrx_finding", subject='subject with "quotes" and \\ and\nnewline') == 1
    assert escape_label('a"b\\c\nd') == 'a\\"b\\\\c\\nd'


def test_duplicate_rows_give_one_series() -> None:
    p = parse(render_prometheus(make_diagnosis(TARGET, "", [capacity(), capacity(used=1)], [])))
    assert p.value("cidrx_capacity_used_addresses", kind="whereabouts-pool") == 13


def test_per_kind_extra_figures() -> None:
    rows = [
        capacity(extra={"stale": 3}),
        capacity(
            kind="calico-blocks", name="default-ipv4-ippool", cidr="10.0.0.0/24", size=4, used=4,
            free=0, utilization=1.0,
            extra={"blocks claimed": 4, "blocks_total": 4, "borrowed": 7, "size_addresses": 99, "flag": True},  # type: ignore[dict-item]
        ),
    ]  # fmt: skip
    p = parse(render_prometheus(make_diagnosis(TARGET, "", rows, [])))  # type: ignore[arg-type]
    assert p.value("cidrx_capacity_stale", kind="whereabouts-pool") == 3
    assert p.value("cidrx_capacity_blocks_claimed", kind="calico-blocks") == 4
    assert p.value("cidrx_capacity_blocks_total", name="default-ipv4-ippool") == 4
    assert p.value("cidrx_capacity_borrowed", cidr="10.0.0.0/24") == 7
    assert "reclaimable" in p.help["cidrx_capacity_stale"]
    # A figure that would collide with a core metric, or is not a number, is left out.
    assert p.value("cidrx_capacity_size_addresses", kind="calico-blocks") == 4
    assert "cidrx_capacity_flag" not in p.samples
    assert metric_name("blocks-claimed/total") == "cidrx_capacity_blocks_claimed_total"


def test_value_formatting() -> None:
    assert [format_value(v) for v in (0, 27, 1.0, 0.8276, float("nan"), float("inf"), -float("inf"))] == [
        "0",
        "27",
        "1",
        "0.8276",
        "NaN",
        "+Inf",
        "-Inf",
    ]


def test_registered_for_diagnoses_only() -> None:
    assert "prometheus" in FORMATS
    d = make_diagnosis(TARGET, "", [capacity()], [])
    assert render_diagnosis(d, "prometheus") == render_prometheus(d)
    plan = Plan(
        target=TARGET,
        created_at="2024-05-02T10:00:00Z",
        snapshot_fingerprint="",
        strategy="calico-pool",
        basis={},
        steps=(),
    )
    with pytest.raises(InvalidInput, match="diagnoses only"):
        render_plan(plan, "prometheus")


def test_cli_diagnose_example_gives_metrics_for_the_four_subnets() -> None:
    result = CliRunner().invoke(cli, ["diagnose", "--snapshot", str(EXAMPLE), "-o", "prometheus"])
    assert result.exit_code == 3, result.output  # the example has critical findings
    p = parse(result.stdout)
    subnets = {
        labels_dict["cidr"]: labels_dict
        for labels_dict in (dict(ls) for ls in p.samples["cidrx_capacity_size_addresses"])
        if labels_dict["kind"] == "subnet"
    }
    assert set(subnets) == {"10.0.186.0/27", "10.0.192.0/27", "10.0.208.0/27", "10.0.224.0/27"}
    expected = {  # cidr: (zone, used, free, utilization)
        "10.0.208.0/27": ("ap-southeast-2a", 27, 0, 1.0),
        "10.0.224.0/27": ("ap-southeast-2b", 27, 0, 1.0),
        "10.0.186.0/27": ("ap-southeast-2a", 1, 26, 0.037),
        "10.0.192.0/27": ("ap-southeast-2b", 1, 26, 0.037),
    }
    for cidr, (zone, used, free, ratio) in expected.items():
        assert subnets[cidr]["zone"] == zone and subnets[cidr]["target"] == "eks:ap-southeast-2/demo-ip"
        assert p.value("cidrx_capacity_size_addresses", kind="subnet", cidr=cidr) == 27
        assert p.value("cidrx_capacity_used_addresses", kind="subnet", cidr=cidr) == used
        assert p.value("cidrx_capacity_free_addresses", kind="subnet", cidr=cidr) == free
        assert p.value("cidrx_capacity_utilization_ratio", kind="subnet", cidr=cidr) == ratio
    full = subnets["10.0.208.0/27"]["name"]
    assert full == "subnet-0cd55c38980375d58"  # the id only: a renamed Name tag keeps the series
    info = next(dict(ls) for ls in p.samples["cidrx_capacity_info"] if dict(ls)["name"] == full)
    assert info["display_name"] == "eks-demo-ip-vpc-stack-PublicSubnet01"
    subject = f"{full} ({info['display_name']})"
    assert p.value("cidrx_finding", id="EKS-SUBNET-EXHAUSTED", subject=subject) == 1
    # the VPC's CIDR blocks are counted as blocks, not addresses
    assert p.value("cidrx_capacity_size_blocks", kind="vpc-cidr-blocks") == 5
    assert not any(dict(ls)["kind"] == "vpc-cidr-blocks" for ls in p.samples["cidrx_capacity_size_addresses"])
    assert p.value("cidrx_findings", severity="critical") >= 2
    never = CliRunner().invoke(cli, ["diagnose", "--snapshot", str(EXAMPLE), "-o", "prometheus", "--fail-on", "never"])
    assert never.exit_code == 0 and never.stdout == result.stdout
