"""Calico analysis and planning, pure: the block-affinity borrowing incident and its fixes as JSON cases."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from cidrx.errors import InvalidInput, StalePlan
from cidrx.ipam.calico.analyze import analyze_calico
from cidrx.ipam.calico.collect import pod_refs
from cidrx.ipam.calico.ipam import IPAM
from cidrx.ipam.calico.strategies import pool as pool_strategy
from cidrx.ipam.calico.strategies import reclaim
from cidrx.model.findings import Severity
from cidrx.model.options import PlanOptions
from cidrx.model.plan import DIGEST_TAG, load_plan, save_plan
from cidrx.model.snapshot import load_snapshot, seal
from tests.support.cases import calico as cases

CREATED = "2024-05-01T10:05:00Z"
EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "calico-borrowing.snapshot.json"


def findings_by_id(world: cases.World) -> dict[str, list[tuple[str, str, str]]]:
    _, findings = analyze_calico(world.calico(), world.pod_states(), world.kube_nodes())
    out: dict[str, list[tuple[str, str, str]]] = {}
    for f in findings:
        out.setdefault(f.id, []).append((f.severity.value, f.subject, f.summary))
    return out


def test_incident_findings_have_exact_numbers() -> None:
    found = findings_by_id(cases.incident())
    assert found["CALICO-POOL-BLOCKS-EXHAUSTED"] == [
        (
            "critical",
            "IPPool default-ipv4-ippool (10.0.0.0/24)",
            "all 4 /26 blocks of 10.0.0.0/24 are claimed; 1 node(s) have no block: node-3",
        )
    ]
    assert found["CALICO-NODE-WITHOUT-BLOCK"] == [
        (
            "warning",
            "nodes node-3",
            "1 node(s) hold no Calico block; 1 of them borrow addresses from other nodes' blocks",
        )
    ]
    [(sev, subject, summary)] = found["CALICO-BORROWED-IPS"]
    assert (sev, subject) == ("warning", "block 10.0.0.0/26 of node node-1")
    assert summary.startswith("3 address(es) of node-1's block 10.0.0.0/26 are used by pods on node-3")
    assert "blackhole" in summary
    assert [s for _, s, _ in found["CALICO-NODE-HOARDING-BLOCKS"]] == ["node node-1", "node node-2"]
    assert found["CALICO-EMPTY-BLOCK"] == [
        ("warning", "block 10.0.0.192/26 of node node-2", "node-2 holds block 10.0.0.192/26 with no address in use")
    ]
    assert [(s, summary.split(" ")[0]) for _, s, summary in found["CALICO-LEAKED-IP"]] == [
        ("block 10.0.0.0/26", "1"),
        ("block 10.0.0.64/26", "1"),
    ]
    assert "CALICO-POOL-NEARLY-FULL" not in found  # 90 of 256 addresses: it is blocks that ran out


def test_incident_evidence_and_remediation_name_the_fix() -> None:
    w = cases.incident()
    _, findings = analyze_calico(w.calico(), w.pod_states(), w.kube_nodes())
    borrowed = next(f for f in findings if f.id == "CALICO-BORROWED-IPS")
    assert borrowed.evidence[:3] == (
        "10.0.0.41 used by default/app-0 on node-3",
        "10.0.0.42 used by default/app-1 on node-3",
        "10.0.0.43 used by default/app-2 on node-3",
    )
    assert "strictAffinity" in borrowed.remediation
    assert "cidrx expand --k8s --strategy calico-pool" in borrowed.remediation
    leaks = [e for f in findings if f.id == "CALICO-LEAKED-IP" for e in f.evidence]
    assert leaks == [
        "10.0.0.44 (k8s-pod-network.default.web-gone): no pod reports it and pod default/web-gone no longer exists",
        "10.0.0.74 (k8s-pod-network.default.replaced): no pod reports it and pod default/replaced no longer exists",
    ]
    exhausted = next(f for f in findings if f.id == "CALICO-POOL-BLOCKS-EXHAUSTED")
    assert "blocks per node: node-1 2, node-2 2" in exhausted.evidence
    assert "cidrx reclaim --k8s --ipam calico" in exhausted.remediation


def test_incident_capacity() -> None:
    w = cases.incident()
    capacity, _ = analyze_calico(w.calico(), w.pod_states(), w.kube_nodes())
    pool, blocks = capacity
    assert (pool.kind, pool.cidr, pool.size, pool.used, pool.free, pool.max_nodes, pool.nodes) == (
        "calico-pool",
        "10.0.0.0/24",
        256,
        90,
        166,
        4,
        2,
    )
    assert (blocks.kind, blocks.size, blocks.used, blocks.free, blocks.utilization) == ("calico-blocks", 4, 4, 0, 1.0)


def test_tunnel_and_pending_addresses_are_never_leaks() -> None:
    w = cases.incident()
    _, findings = analyze_calico(w.calico(), w.pod_states(), w.kube_nodes())
    evidence = " ".join(e for f in findings if f.id == "CALICO-LEAKED-IP" for e in f.evidence)
    assert "10.0.0.0 " not in evidence and "10.0.0.128" not in evidence  # ipip tunnel addresses
    assert "web-pending" not in evidence
    assert "default/web-pending" in pod_refs(w.calico())
    assert not any(r.startswith("ipip") or "tunnel" in r for r in pod_refs(w.calico()))


def test_unavailable_pods_mean_no_leak_findings() -> None:
    w = cases.incident()
    _, findings = analyze_calico(w.calico(), {}, w.kube_nodes(), available=False)
    assert not [f for f in findings if f.id == "CALICO-LEAKED-IP"]


def test_healthy_cluster_has_no_findings() -> None:
    w = cases.healthy()
    capacity, findings = analyze_calico(w.calico(), w.pod_states(), w.kube_nodes())
    assert findings == []
    assert [(c.kind, c.used, c.size) for c in capacity] == [("calico-pool", 18, 256), ("calico-blocks", 3, 4)]


def test_full_pool_is_critical() -> None:
    w = cases.World()
    w.pools = [cases.ippool("small", "10.0.0.0/28", block_size=28)]
    w.nodes = [cases.node("node-1", "10.10.0.11")]
    used = {o: cases.pod_attr("default", f"p{o}", "node-1") for o in range(16)}
    w.pods = [cases.pod("default", f"p{o}", "node-1", f"10.0.0.{o}") for o in range(16)]
    w.blocks = [cases.ipamblock("10.0.0.0/28", "node-1", used)]
    found = findings_by_id(w)
    assert found["CALICO-POOL-NEARLY-FULL"] == [
        ("critical", "IPPool small (10.0.0.0/28)", "16 of 16 addresses allocated (100%)")
    ]
    # every block claimed, but every node has one: the next node is the problem
    assert found["CALICO-POOL-BLOCKS-EXHAUSTED"][0][0] == "warning"


# ---- plans ---------------------------------------------------------------------------------------


def test_reclaim_plan_lists_exactly_the_leaks_and_the_spare_empty_block() -> None:
    plan = reclaim.make_plan(cases.incident().snapshot(), PlanOptions(), CREATED)
    assert plan.strategy == "calico-reclaim"
    assert [(s.id, s.action) for s in plan.steps] == [
        ("release-ips-10-0-0-0-26", "calico.release-ips"),
        ("release-ips-10-0-0-64-26", "calico.release-ips"),
        ("release-empty-block-10-0-0-192-26", "calico.release-empty-block"),
    ]
    first = plan.steps[0].params
    assert first["block"] == "10-0-0-0-26"
    assert first["ips"] == [
        {
            "ordinal": 44,
            "ip": "10.0.0.44",
            "handle_id": "k8s-pod-network.default.web-gone",
            "handle": "k8s-pod-network.default.web-gone",
            "pod": "default/web-gone",
            "why": "no pod reports it and pod default/web-gone no longer exists",
        }
    ]
    assert plan.steps[1].params["ips"][0]["ordinal"] == 10
    assert plan.steps[2].params == {
        "block": "10-0-0-192-26",
        "cidr": "10.0.0.192/26",
        "node": "node-2",
        "affinity": "node-2-10-0-0-192-26",
    }
    assert plan.summary == {"leaked_ips": 2, "blocks_with_leaks": 2, "empty_blocks": 1}


def test_a_nodes_only_block_is_never_released() -> None:
    w = cases.World()
    w.pools = [cases.ippool("p", "10.0.0.0/24")]
    w.nodes = [cases.node("node-1", "10.10.0.11")]
    w.blocks = [cases.ipamblock("10.0.0.0/26", "node-1", {}), cases.ipamblock("10.0.0.64/26", "node-1", {})]
    w.affinities = [cases.affinity("node-1", "10.0.0.0/26"), cases.affinity("node-1", "10.0.0.64/26")]
    plan = reclaim.make_plan(w.snapshot(), PlanOptions(), CREATED)
    assert [s.params["block"] for s in plan.steps] == ["10-0-0-64-26"]  # keeps 10-0-0-0-26


def test_pool_plan_picks_free_space_and_block_size() -> None:
    snap = cases.incident().snapshot()
    plan = pool_strategy.make_plan(snap, PlanOptions(strategy="calico-pool"), CREATED)
    [step] = plan.steps
    assert step.action == "calico.create-ippool"
    # 3 nodes x 2 blocks of /26 (and 110 pods) -> a /23; 10.0.0.0/24 is the pool, 10.10/16 the nodes.
    assert step.params == {
        "name": "cidrx-10-0-2-0-23",
        "cidr": "10.0.2.0/23",
        "block_size": 26,
        "ipip_mode": "Always",
        "vxlan_mode": "",
        "nat_outgoing": True,
        "node_selector": "all()",
    }
    assert plan.summary["blocks"] == 8

    bigger = pool_strategy.make_plan(snap, PlanOptions(add_nodes=20), CREATED)
    assert (bigger.summary["cidr"], bigger.summary["block_size"], bigger.summary["nodes"]) == ("10.0.16.0/20", 26, 23)

    given = pool_strategy.make_plan(snap, PlanOptions(cidr="10.1.0.0/24", add_nodes=20, pool_name="extra"), CREATED)
    # 23 nodes need 46 blocks of a /24: /30 blocks (64 of them)
    assert (given.steps[0].params["name"], given.summary["block_size"], given.summary["blocks"]) == ("extra", 30, 64)


@pytest.mark.parametrize(
    ("cidr", "message"),
    [
        ("10.0.0.128/25", "overlaps IPPool default-ipv4-ippool"),
        ("10.10.5.0/24", "network of node node-1"),
        ("127.0.0.0/24", "loopback"),
        ("10.1.0.0/31", "cannot give"),
        ("10.1.0.1/24", "host bits set"),
    ],
)
def test_pool_plan_validates_a_given_cidr(cidr: str, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        pool_strategy.make_plan(cases.incident().snapshot(), PlanOptions(cidr=cidr, add_nodes=20), CREATED)


def test_pool_plan_refuses_a_taken_name() -> None:
    with pytest.raises(InvalidInput, match="already exists"):
        pool_strategy.make_plan(cases.incident().snapshot(), PlanOptions(pool_name="default-ipv4-ippool"), CREATED)


def test_pool_plan_drift(tmp_path: Path) -> None:
    w = cases.incident()
    plan = pool_strategy.make_plan(w.snapshot(), PlanOptions(), CREATED)
    save_plan(plan, tmp_path / "p.json")
    assert load_plan(tmp_path / "p.json") == plan
    IPAM.check_drift(plan, w.snapshot())  # unchanged world

    ours = cases.ippool(plan.basis["pool_name"], plan.basis["cidr"])
    ours["metadata"]["labels"] = {DIGEST_TAG: plan.plan_id}
    w.pools.append(ours)
    IPAM.check_drift(plan, w.snapshot())  # our own pool from an earlier apply is progress

    w.pools[-1] = cases.ippool(plan.basis["pool_name"], plan.basis["cidr"])
    with pytest.raises(StalePlan, match="created by someone else"):
        IPAM.check_drift(plan, w.snapshot())

    w.pools[-1] = cases.ippool("other", "10.0.2.0/24")
    with pytest.raises(StalePlan, match="overlaps IPPool other"):
        IPAM.check_drift(plan, w.snapshot())


def test_drift_refuses_another_cluster() -> None:
    snap = cases.incident().snapshot()
    plan = reclaim.make_plan(snap, PlanOptions(), CREATED)
    other = seal(dataclasses.replace(snap, target=dataclasses.replace(snap.target, cluster="prod")))
    with pytest.raises(InvalidInput, match="not k8s"):
        IPAM.check_drift(plan, other)
    no_calico = seal(dataclasses.replace(snap, kube=dataclasses.replace(snap.kube, calico=None)))
    with pytest.raises(StalePlan):
        IPAM.check_drift(plan, no_calico)


def test_bundled_example_is_the_incident() -> None:
    snap = load_snapshot(EXAMPLE)
    assert snap.kube.calico is not None
    _, findings = analyze_calico(
        snap.kube.calico, {p.key: p for p in snap.kube.ipam_pods}, snap.kube.nodes, available=snap.kube.available
    )
    ids = {f.id for f in findings}
    assert {"CALICO-POOL-BLOCKS-EXHAUSTED", "CALICO-BORROWED-IPS", "CALICO-NODE-WITHOUT-BLOCK"} <= ids
    assert max(f.severity.rank for f in findings) == Severity.CRITICAL.rank


def test_collect_leaves_out_objects_whose_numbers_do_not_hold_together(caplog: pytest.LogCaptureFixture) -> None:
    """The CRDs accept any cidr / blockSize; analysis computes with them (a /40 block of a /16 pool would
    shift by a negative count), so the collector keeps them out of the snapshot and says so."""
    from cidrx.ipam.calico.collect import section_from

    pools = [
        {"metadata": {"name": "bad-size"}, "spec": {"cidr": "10.0.0.0/16", "blockSize": 40}},
        {"metadata": {"name": "bad-cidr"}, "spec": {"cidr": "10.1.0.1/16"}},
        {"metadata": {"name": "good"}, "spec": {"cidr": "10.2.0.0/16", "blockSize": 26}},
    ]
    blocks = [
        {"metadata": {"name": "x"}, "spec": {"cidr": "x", "allocations": []}},
        {"metadata": {"name": "10-2-0-0-26"}, "spec": {"cidr": "10.2.0.0/26", "allocations": [None] * 64}},
    ]
    with caplog.at_level("WARNING", logger="cidrx.ipam.calico.collect"):
        section = section_from(pools, blocks, [], [], [])
    assert [p.name for p in section.pools] == ["good"]
    assert [b.name for b in section.blocks] == ["10-2-0-0-26"]
    text = caplog.text
    assert "IPPool bad-size: has block_size 40" in text and "IPPool bad-cidr" in text and "IPAMBlock x" in text
