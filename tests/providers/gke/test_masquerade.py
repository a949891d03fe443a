"""ip-masq-agent and Dataplane V2 EgressNATPolicy after a new GKE pod range (cidrx/providers/gke/facts/masquerade.py,
the kube.add-ip-masq-cidr step): what the plan changes, what it only says, drift, and the step against the
fake Kubernetes API server (a JSON patch guarded by the resourceVersion) through the CLI.

Facts from kubernetes-sigs/ip-masq-agent cmd/ip-masq-agent/ip-masq-agent.go (4e04115f860008bb50b1889c0b20164877049b14):
the config is YAML or JSON under the ConfigMap key `config`; without it the RFC 1918 ranges are not
masqueraded; a config without `nonMasqueradeCIDRs` keeps that default; at most 64 CIDRs.
"""

from __future__ import annotations

import dataclasses
import re
from ipaddress import IPv4Network
from pathlib import Path
from typing import Any

import pytest
import yaml

from cidrx.errors import StalePlan
from cidrx.model.kube import ConfigMapData
from cidrx.model.options import PlanOptions
from cidrx.model.plan import Plan, load_plan
from cidrx.model.snapshot import Snapshot, load_snapshot
from cidrx.providers.gke.collect.cluster import EgressNatPolicy
from cidrx.providers.gke.facts.masquerade import review_ip_masq, updated_config
from cidrx.providers.gke.provider import PROVIDER
from cidrx.render.terraform import render_terraform
from tests.support.cases import gke as cases
from tests.support.cli import run
from tests.support.estates.gke import CLUSTER, LOCATION, PROJECT
from tests.support.fakes.gcp_server import FakeGcp
from tests.support.fakes.kube_server import FakeKubeServer


def plan_of(snap: Snapshot, created_at: str = "", **opts: Any) -> Plan:
    """A plan as `expand --plan` makes it (node-pool unless `strategy` says otherwise)."""
    return PROVIDER.make_plan(snap, PlanOptions(**{"strategy": "node-pool", **opts}), created_at)


def masq_step(plan: Plan) -> Any:
    return next((s for s in plan.steps if s.action == "kube.add-ip-masq-cidr"), None)


def test_a_configmap_missing_the_new_range_gets_it_before_the_pool_is_created() -> None:
    plan = plan_of(cases.with_ip_masq(cases.incident()))
    cidr = plan.basis["cidr"]
    step = masq_step(plan)
    assert step is not None
    assert step.params == {
        "namespace": "kube-system",
        "name": "ip-masq-agent",
        "key": "config",
        "cidr": cidr,
        "seen": ["10.0.0.0/24", "10.4.0.0/22"],
    }
    assert step.permissions == ("kubernetes: configmaps get,patch in kube-system",)
    create = next(s for s in plan.steps if s.id == "create-node-pool")
    assert "ip-masq-agent" in create.depends_on
    assert plan.basis["ip_masq_agent"] == ["10.0.0.0/24", "10.4.0.0/22"]
    assert f"cidrx adds {cidr} to nonMasqueradeCIDRs of kube-system/ip-masq-agent" in plan.notes[0]


@pytest.mark.parametrize(
    ("config", "note"),
    [
        ("nonMasqueradeCIDRs: [10.0.0.0/8]\n", "already leaves"),  # covered by a broader range
        ("masqLinkLocal: true\n", "already leaves"),  # no list: the RFC 1918 defaults apply
        ("nonMasqueradeCIDRs: [10.0.0.0/24\n", "by hand"),  # not YAML
        ("- 10.0.0.0/8\n", "by hand"),  # not a mapping
        ("nonMasqueradeCIDRs:\n" + "".join(f"  - 172.16.{i}.0/24\n" for i in range(64)), "maximum (64)"),
    ],
)
def test_when_no_step_is_planned_the_note_says_why(config: str, note: str) -> None:
    plan = plan_of(cases.with_ip_masq(cases.incident(), config))
    assert masq_step(plan) is None
    assert "ip_masq_agent" not in plan.basis
    assert note in plan.notes[0]


def test_without_a_configmap_the_defaults_decide() -> None:
    snap = cases.with_kube(cases.incident(), config_maps=())
    assert "the agent's defaults (RFC 1918) already leave" in plan_of(snap).notes[0]
    outside = plan_of(snap, cidr="100.64.0.0/19")
    assert masq_step(outside) is None
    assert "100.64.0.0/19 is outside the agent's RFC 1918 defaults" in outside.notes[0]
    assert "10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, 100.64.0.0/19" in outside.notes[0]


def test_the_new_config_keeps_the_other_keys() -> None:
    text = updated_config(cases.IP_MASQ_CONFIG, "10.9.0.0/19")
    assert yaml.safe_load(text) == {
        "nonMasqueradeCIDRs": ["10.0.0.0/24", "10.4.0.0/22", "10.9.0.0/19"],
        "masqLinkLocal": False,
        "resyncInterval": "60s",
    }
    assert yaml.safe_load(updated_config("{}", "100.64.0.0/19"))["nonMasqueradeCIDRs"] == [
        "10.0.0.0/8",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "100.64.0.0/19",
    ]
    found = review_ip_masq(cases.with_ip_masq(cases.incident(), text).kube, IPv4Network("10.9.0.0/20"))
    assert found is not None and found.covered


def test_drift_of_the_configmap() -> None:
    snap = cases.with_ip_masq(cases.incident())
    plan = plan_of(snap)
    PROVIDER.check_drift(plan, cases.with_ip_masq(snap, resource_version="9999"))  # a new version alone is not drift
    grown = cases.IP_MASQ_CONFIG.replace("  - 10.4.0.0/22\n", f"  - 10.4.0.0/22\n  - {plan.basis['cidr']}\n")
    PROVIDER.check_drift(plan, cases.with_ip_masq(snap, grown))  # progress
    with pytest.raises(StalePlan, match=re.escape("ConfigMap kube-system/ip-masq-agent now lists 10.0.0.0/24")):
        PROVIDER.check_drift(plan, cases.with_ip_masq(snap, "nonMasqueradeCIDRs: [10.0.0.0/24]\n"))
    with pytest.raises(StalePlan, match=re.escape("ConfigMap kube-system/ip-masq-agent is gone")):
        PROVIDER.check_drift(plan, cases.with_kube(snap, config_maps=()))


def _dpv2(snap: Snapshot, *policies: EgressNatPolicy) -> Snapshot:
    cluster = dataclasses.replace(cases.gke_of(snap).cluster, datapath_provider="ADVANCED_DATAPATH")
    return cases.with_kube(cases.with_gke(snap, cluster=cluster), egress_nat_policies=policies)


def test_dataplane_v2_egress_nat_policy_missing_the_range_gets_an_exact_command() -> None:
    default = EgressNatPolicy("default", "NoSNAT", ("10.0.0.0/24", "10.4.0.0/22"), "12")
    plan = plan_of(_dpv2(cases.incident(), default))
    cidr = plan.basis["cidr"]
    text = "\n".join(plan.notes)
    assert f"EgressNATPolicy default does not list {cidr}" in text
    assert (
        "kubectl patch egressnatpolicy default --type=json -p "
        f'\'[{{"op":"add","path":"/spec/destinations/-","value":{{"cidr":"{cidr}"}}}}]\''
    ) in text
    assert not any(s.action.startswith("kube.") and "egress" in s.action for s in plan.steps)


def test_dataplane_v2_policy_covering_the_range_or_another_datapath_says_nothing() -> None:
    covered = EgressNatPolicy("default", "NoSNAT", ("10.0.0.0/8",))
    assert not any("EgressNATPolicy" in n for n in plan_of(_dpv2(cases.incident(), covered)).notes)
    legacy = cases.with_kube(cases.incident(), egress_nat_policies=(EgressNatPolicy("default", "NoSNAT", ()),))
    assert not any("EgressNATPolicy" in n for n in plan_of(legacy).notes)


def test_autopilot_keeps_the_cluster_range_strategy_and_gets_the_egress_advice() -> None:
    snap = cases.with_kube(cases.autopilot(), egress_nat_policies=(EgressNatPolicy("default", "NoSNAT", ()),))
    plan = plan_of(snap, strategy="cluster-range")
    assert [s.action for s in plan.steps if s.action.startswith("gke.")][-1] == "gke.add-cluster-pod-ranges"
    assert any("EgressNATPolicy default does not list" in n for n in plan.notes)


# --- through the CLI, against the GCP fake and the fake Kubernetes API server -----------------------------

TARGET = ["--gke", "--project", PROJECT, "--location", LOCATION, "--cluster", CLUSTER]


def _seed_configmap(kube: FakeKubeServer) -> None:
    kube.put(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "ip-masq-agent", "namespace": "kube-system"},
            "data": {"config": cases.IP_MASQ_CONFIG},
        }
    )


def _seeded_plan(kube: FakeKubeServer, tmp_path: Path) -> tuple[Path, Plan]:
    """The ConfigMap in the cluster, then `expand --plan` with cluster access; the plan file and the plan."""
    _seed_configmap(kube)
    plan_path = tmp_path / "plan.json"
    made = run("expand", *TARGET, "--plan", "--out", str(plan_path))
    assert made.exit_code == 0, made.output
    return plan_path, load_plan(plan_path)


def test_apply_patches_the_configmap_once(
    gcp: FakeGcp, kube_server: FakeKubeServer, kubeconfig_path: Path, tmp_path: Path
) -> None:
    plan_path, plan = _seeded_plan(kube_server, tmp_path)
    cidr = plan.basis["cidr"]
    assert masq_step(plan) is not None
    kube_server.reset_log()
    applied = run("expand", "--apply", str(plan_path), "--yes")
    assert applied.exit_code == 0, applied.output
    cm = kube_server.get("", "v1", "configmaps", "ip-masq-agent", "kube-system")
    assert cm is not None
    assert yaml.safe_load(cm["data"]["config"])["nonMasqueradeCIDRs"] == ["10.0.0.0/24", "10.4.0.0/22", cidr]
    assert len(kube_server.requests("PATCH", "configmaps")) == 1

    kube_server.reset_log()
    again = run("expand", "--apply", str(plan_path), "--yes")
    assert again.exit_code == 0, again.output
    assert kube_server.requests("PATCH", "configmaps") == []


def test_rollback_takes_exactly_the_planned_range_back_out_of_the_configmap(
    gcp: FakeGcp, kube_server: FakeKubeServer, kubeconfig_path: Path, tmp_path: Path
) -> None:
    plan_path, plan = _seeded_plan(kube_server, tmp_path)
    before = yaml.safe_load(cases.IP_MASQ_CONFIG)
    assert run("expand", "--apply", str(plan_path), "--yes").exit_code == 0
    # Someone adds another range after the apply: rollback must keep it.
    cm = kube_server.get("", "v1", "configmaps", "ip-masq-agent", "kube-system") or {}
    config = yaml.safe_load(cm["data"]["config"])
    config["nonMasqueradeCIDRs"].append("192.168.50.0/24")
    kube_server.put({**cm, "data": {"config": yaml.safe_dump(config)}})

    kube_server.reset_log()
    rolled = run("rollback", str(plan_path), "--yes")
    assert rolled.exit_code == 0, rolled.output
    cm = kube_server.get("", "v1", "configmaps", "ip-masq-agent", "kube-system") or {}
    assert yaml.safe_load(cm["data"]["config"])["nonMasqueradeCIDRs"] == [
        *before["nonMasqueradeCIDRs"],
        "192.168.50.0/24",
    ]
    assert len(kube_server.requests("PATCH", "configmaps")) == 1  # a JSON patch guarded by resourceVersion
    assert plan.basis["cidr"] not in cm["data"]["config"]

    kube_server.reset_log()
    again = run("rollback", str(plan_path), "--yes")
    assert again.exit_code == 0, again.output
    assert kube_server.requests("PATCH", "configmaps") == []


def test_a_configmap_rewritten_after_the_plan_is_left_alone(
    gcp: FakeGcp, kube_server: FakeKubeServer, kubeconfig_path: Path, tmp_path: Path
) -> None:
    plan_path, _ = _seeded_plan(kube_server, tmp_path)
    cm = kube_server.get("", "v1", "configmaps", "ip-masq-agent", "kube-system") or {}
    kube_server.put({**cm, "data": {"config": "nonMasqueradeCIDRs: [10.0.0.0/24]\n"}})
    applied = run("expand", "--apply", str(plan_path), "--yes")
    assert applied.exit_code == 4, applied.output
    assert "ConfigMap kube-system/ip-masq-agent now lists 10.0.0.0/24" in applied.output
    assert kube_server.requests("PATCH", "configmaps") == []


def test_the_collector_reads_the_configmap_and_egress_nat_policies(
    gcp: FakeGcp, kube_server: FakeKubeServer, kubeconfig_path: Path, tmp_path: Path
) -> None:
    _seed_configmap(kube_server)
    kube_server.register("networking.gke.io", "v1", "egressnatpolicies", "EgressNATPolicy", False)
    kube_server.put(
        {
            "apiVersion": "networking.gke.io/v1",
            "kind": "EgressNATPolicy",
            "metadata": {"name": "default"},
            "spec": {"action": "NoSNAT", "destinations": [{"cidr": "10.0.0.0/8"}, {"cidr": "172.16.0.0/12"}]},
        }
    )
    snap_path = tmp_path / "snap.json"
    assert run("snapshot", *TARGET, "--out", str(snap_path)).exit_code == 0
    kube = load_snapshot(snap_path).kube
    [cm] = kube.config_maps or ()
    assert (cm.namespace, cm.name, cm.data, bool(cm.resource_version)) == (
        "kube-system",
        "ip-masq-agent",
        {"config": cases.IP_MASQ_CONFIG},
        True,
    )
    assert isinstance(cm, ConfigMapData)
    [policy] = kube.egress_nat_policies or ()
    assert (policy.name, policy.action, policy.destinations) == ("default", "NoSNAT", ("10.0.0.0/8", "172.16.0.0/12"))


def test_a_failed_resource_version_test_is_read_again_and_retried(
    gcp: FakeGcp, kube_server: FakeKubeServer, kubeconfig_path: Path, tmp_path: Path
) -> None:
    # 422 is what the API server answers when the patch's `test` of /metadata/resourceVersion fails.
    plan_path, plan = _seeded_plan(kube_server, tmp_path)
    cidr = plan.basis["cidr"]
    kube_server.reset_log()
    kube_server.inject(422, method="PATCH", path_contains="/configmaps/ip-masq-agent", times=1)
    applied = run("expand", "--apply", str(plan_path), "--yes")
    assert applied.exit_code == 0, applied.output
    assert len(kube_server.requests("PATCH", "configmaps")) == 2
    cm = kube_server.get("", "v1", "configmaps", "ip-masq-agent", "kube-system") or {}
    assert yaml.safe_load(cm["data"]["config"])["nonMasqueradeCIDRs"].count(cidr) == 1


def test_terraform_says_what_the_configmap_must_list() -> None:
    plan = plan_of(cases.with_ip_masq(cases.incident()))
    text = " ".join(line.lstrip("#").strip() for line in render_terraform(plan).splitlines())
    assert f"set nonMasqueradeCIDRs to: 10.0.0.0/24, 10.4.0.0/22, {plan.basis['cidr']}" in text


def test_autopilot_defaults_to_the_cluster_range_strategy() -> None:
    from cidrx.app import plan as app_plan
    from cidrx.model.options import PlanOptions

    plan = app_plan.make_plan(cases.autopilot(), PlanOptions())
    assert plan.strategy == "cluster-range"
    assert not any(s.action == "gke.create-node-pool" for s in plan.steps)
