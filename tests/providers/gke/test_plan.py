"""GKE expansion plans from snapshots built in code: where the new range goes, what the steps carry, and
when a plan has gone stale. Pure: no cloud, no fake (tests/support/cases/gke.py builds every case)."""

from __future__ import annotations

import dataclasses
from ipaddress import IPv4Network
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cidrx import netmath
from cidrx.errors import InvalidInput, StalePlan
from cidrx.model import codec
from cidrx.model.options import PlanOptions
from cidrx.model.plan import Plan, load_plan, save_plan
from cidrx.model.snapshot import Snapshot
from cidrx.model.target import Target
from cidrx.providers.gke.facts.occupied import occupied_space
from cidrx.providers.gke.facts.pool_copy import PLAN_LABEL
from cidrx.providers.gke.model import PeeringRoute, SecondaryRange, Subnetwork
from cidrx.providers.gke.provider import PROVIDER
from tests.support.cases import gke as cases
from tests.support.cases.gke import (
    CLUSTER,
    CONTROL_PLANE,
    INCIDENT_PLAN_CIDR,
    LOCATION,
    NETWORK,
    OTHER_REGION_SUBNET,
    PEERING_ROUTE,
    POD_CIDR,
    POOL,
    PROJECT,
    PSA_RANGE,
    SERVICES_CIDR,
    SUBNET,
    ZONES,
)


def plan_for(snap: Snapshot, created_at: str = "", **opts: Any) -> Plan:
    """A plan as `expand --plan` makes it (node-pool unless `strategy` says otherwise)."""
    return PROVIDER.make_plan(snap, PlanOptions(**{"strategy": "node-pool", **opts}), created_at)


@pytest.fixture(scope="module")
def incident_plan() -> Plan:
    return plan_for(cases.incident())


# --- the incident -----------------------------------------------------------------------------------


def test_incident_plan_steps_exactly(incident_plan: Plan) -> None:
    assert incident_plan.strategy == "node-pool"
    assert [s.id for s in incident_plan.steps] == ["add-secondary-range", "create-node-pool"]
    add, create = incident_plan.steps
    assert add.action == "gke.add-secondary-range"
    assert add.params == {
        "project": PROJECT,
        "region": LOCATION,
        "subnet": SUBNET,
        "range_name": "pods-2",
        "cidr": INCIDENT_PLAN_CIDR,
    }
    assert add.depends_on == ()
    assert create.action == "gke.create-node-pool"
    assert create.depends_on == ("add-secondary-range",)
    assert create.params == {
        "project": PROJECT,
        "location": LOCATION,
        "cluster": CLUSTER,
        "node_pool": {
            "name": "default-pool-pods2",
            "config": cases.pool_config(),
            "initialNodeCount": 1,
            "locations": list(ZONES),
            "autoscaling": {"enabled": True, "minNodeCount": 1, "maxNodeCount": 7, "locationPolicy": "BALANCED"},
            "maxPodsConstraint": {"maxPodsPerNode": 110},
            "management": {"autoUpgrade": True, "autoRepair": True},
            "networkConfig": {"podRange": "pods-2"},
        },
        "differences": [
            "name: default-pool-pods2 (template default-pool)",
            "pod range: pods-2 (template pods)",
            "resource label cidrx-plan=<plan id> added (how cidrx finds its own pool again)",
        ],
    }
    assert all(s.permissions for s in incident_plan.steps)


def test_incident_range_is_sized_for_the_autoscaler_max(incident_plan: Plan) -> None:
    # max(2 x 4 nodes today, autoscaler max 7 x 3 zones = 21) = 21 nodes of /24 -> 32 blocks -> a /19
    s = incident_plan.summary
    assert s["cidr"] == INCIDENT_PLAN_CIDR
    assert (s["per_node_prefix"], s["max_pods_per_node"], s["new_range_max_nodes"]) == (24, 110, 32)
    assert s["expanded_range"] == {"name": "pods", "cidr": POD_CIDR, "max_nodes": 4, "nodes": 4}
    assert s["capacity_before"] == {"max_nodes": 4, "nodes": 4}
    assert s["capacity_after"] == {"max_nodes": 36}
    assert (s["node_pool"], s["template_pool"]) == ("default-pool-pods2", POOL)


def test_incident_basis(incident_plan: Plan) -> None:
    assert incident_plan.basis == {
        "network": NETWORK,
        "subnet_region": LOCATION,
        "subnet": SUBNET,
        "subnet_ranges": {"pods": POD_CIDR, "services": SERVICES_CIDR},
        "cidr": INCIDENT_PLAN_CIDR,
        "range_name": "pods-2",
        "node_pool_name": "default-pool-pods2",
        "template_pool": POOL,
        "cluster_pod_ranges": [],
    }
    assert incident_plan.snapshot_fingerprint == cases.incident().fingerprint


def test_incident_notes_say_what_to_update_by_hand(incident_plan: Plan) -> None:
    text = "\n".join(incident_plan.notes)
    assert f"nonMasqueradeCIDRs, add {INCIDENT_PLAN_CIDR}" in text
    assert f"NetworkPolicy ipBlocks that list the pod range {POD_CIDR}" in text
    assert "Firewall rules" in text
    assert f"cidrx does not drain {POOL}" in text


def test_occupied_space_lists_every_kind() -> None:
    occupied = {str(net): where for net, where in occupied_space(cases.incident_gke())}
    assert occupied["10.0.0.0/24"] == f"subnet {LOCATION}/{SUBNET}"
    assert occupied[POD_CIDR] in (
        f"secondary range pods of subnet {LOCATION}/{SUBNET}",
        f"pod range of cluster {CLUSTER}",
    )
    assert occupied[OTHER_REGION_SUBNET] == "subnet us-central1/us-apps"
    assert occupied["10.12.0.0/14"] == "secondary range us-pods of subnet us-central1/us-apps"
    assert occupied["10.129.0.0/23"] == f"subnet {LOCATION}/proxy-only"
    assert occupied[PEERING_ROUTE] == f"route {PEERING_ROUTE} imported over peering corp-hub"
    assert occupied[PSA_RANGE] == "private services access range google-managed-services-demo-vpc"
    assert occupied[CONTROL_PLANE] == f"control plane range of cluster {CLUSTER}"
    assert SERVICES_CIDR in occupied


def test_a_default_route_over_peering_blocks_nothing() -> None:
    g = cases.incident_gke()
    g = dataclasses.replace(g, peering_routes=(*g.peering_routes, PeeringRoute("0.0.0.0/0", "corp-hub")))
    assert all(net.prefixlen > 0 for net, _ in occupied_space(g))


# --- where the range goes ---------------------------------------------------------------------------


def _without(snap: Snapshot, what: str) -> Snapshot:
    g = cases.gke_of(snap)
    if what == "psa":
        return cases.with_gke(snap, reserved_ranges=())
    if what == "peering":
        return cases.with_gke(snap, reserved_ranges=(), peering_routes=())
    return cases.with_gke(snap, reserved_ranges=(), peering_routes=(), subnets=(g.subnet,))


@pytest.mark.parametrize(
    ("removed", "expected"),
    [("psa", "10.0.128.0/19"), ("peering", "10.0.64.0/19"), ("other-region subnet", "10.0.32.0/19")],
)
def test_each_occupied_kind_is_skipped(removed: str, expected: str) -> None:
    """With the obstacle gone, the choice moves onto the space it held: so it was what pushed it on."""
    assert plan_for(_without(cases.incident(), removed)).summary["cidr"] == expected


def test_crowded_rfc1918_falls_back_to_100_64() -> None:
    plan = plan_for(cases.crowded_rfc1918())
    assert plan.summary["cidr"] == "100.64.0.0/19"


def test_class_e_only_with_the_flag() -> None:
    with pytest.raises(InvalidInput, match=r"no free /19 .*allow-class-e"):
        plan_for(cases.class_e_only())
    assert plan_for(cases.class_e_only(), allow_class_e=True).summary["cidr"] == "240.0.0.0/19"


def test_no_room_anywhere_is_invalid_input() -> None:
    snap = cases.crowded_rfc1918("100.64.0.0/10", "198.18.0.0/15", "240.0.0.0/4")
    with pytest.raises(InvalidInput, match="no free /19 for a pod range in network demo-vpc"):
        plan_for(snap, allow_class_e=True)


def test_add_nodes_sizes_the_range() -> None:
    plan = plan_for(cases.incident(), add_nodes=100)  # 128 blocks of /24
    assert netmath.parse_cidr(plan.summary["cidr"]).prefixlen == 17
    assert plan.summary["new_range_max_nodes"] == 128
    # one node asked for, but the new pool starts with one node in each of 3 zones: 4 blocks, a /22
    assert plan_for(cases.incident(), add_nodes=1).summary["cidr"].endswith("/22")
    assert plan_for(cases.incident(), add_nodes=1, strategy="cluster-range").summary["cidr"].endswith("/24")


def test_default_size_doubles_a_range_bigger_than_the_autoscaler_max() -> None:
    # nearly exhausted: 8 nodes max today, autoscaler total max 8 -> 16 nodes -> /20
    plan = plan_for(cases.nearly_exhausted())
    assert netmath.parse_cidr(plan.summary["cidr"]).prefixlen == 20


def test_add_nodes_must_be_positive() -> None:
    with pytest.raises(InvalidInput, match="--add-nodes must be at least 1"):
        plan_for(cases.incident(), add_nodes=0)


def test_max_pods_per_node_sets_the_block_and_the_pool() -> None:
    plan = plan_for(cases.incident(), max_pods_per_node=32)
    # 21 nodes of /26 -> 32 blocks -> /21
    assert plan.summary["per_node_prefix"] == 26
    assert netmath.parse_cidr(plan.summary["cidr"]).prefixlen == 21
    assert plan.step("create-node-pool").params["node_pool"]["maxPodsConstraint"] == {"maxPodsPerNode": 32}


def test_max_pods_out_of_range_is_invalid_input() -> None:
    with pytest.raises(InvalidInput, match="between 8 and 256"):
        plan_for(cases.incident(), max_pods_per_node=4)


def test_given_cidr_is_used() -> None:
    plan = plan_for(cases.incident(), cidr="100.64.0.0/20")
    assert plan.step("add-secondary-range").params["cidr"] == "100.64.0.0/20"
    assert plan.summary["new_range_max_nodes"] == 16


@pytest.mark.parametrize(
    ("cidr", "message"),
    [
        (
            "10.0.64.0/20",
            f"10.0.64.0/20 overlaps {PEERING_ROUTE} (route {PEERING_ROUTE} imported over peering corp-hub)",
        ),
        ("10.0.128.0/24", f"overlaps {PSA_RANGE} (private services access range"),
        ("10.0.32.0/19", f"overlaps {OTHER_REGION_SUBNET} (subnet us-central1/us-apps)"),
        ("10.8.0.0/24", "overlaps 10.8.0.0/24"),
        ("172.16.0.0/24", f"overlaps {CONTROL_PLANE} (control plane range of cluster {CLUSTER})"),
        ("10.0.161.0/19", "did you mean 10.0.160.0/19"),
        ("127.0.0.0/16", "loopback"),
        ("240.0.0.0/19", "class E"),
        ("8.8.0.0/16", "not in a private range GCP accepts"),
        ("10.0.160.0/25", "cannot hold even one /24"),
        ("banana", "not a valid IPv4 CIDR"),
    ],
)
def test_bad_cidr_is_one_line_invalid_input(cidr: str, message: str) -> None:
    with pytest.raises(InvalidInput) as err:
        plan_for(cases.incident(), cidr=cidr)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_given_class_e_cidr_with_the_flag() -> None:
    plan = plan_for(cases.incident(), cidr="240.0.0.0/19", allow_class_e=True)
    assert plan.summary["cidr"] == "240.0.0.0/19"


def test_given_cidr_too_small_for_the_starting_nodes() -> None:
    with pytest.raises(InvalidInput, match="holds 1 node"):
        plan_for(cases.incident(), cidr="10.0.160.0/24")


# --- names and templates ----------------------------------------------------------------------------


def test_range_and_pool_names_are_unique() -> None:
    snap = cases.with_subnet(cases.incident(), cases.cluster_subnet(SecondaryRange("pods-2", "10.6.0.0/24")))
    pool2 = cases.default_pool(name="default-pool-pods2", pod_range="pods-2", pod_cidr="10.6.0.0/24")
    snap = cases.with_pools(snap, cases.default_pool(), pool2)
    plan = plan_for(snap)
    assert plan.basis["range_name"] == "pods-3"
    assert plan.basis["node_pool_name"] == "default-pool-pods3"


def test_given_pool_name_is_used_and_must_be_new() -> None:
    assert plan_for(cases.incident(), pool_name="wide").basis["node_pool_name"] == "wide"
    with pytest.raises(InvalidInput, match="node pool 'default-pool' already exists"):
        plan_for(cases.incident(), pool_name=POOL)


def test_template_pool_option_copies_that_pool() -> None:
    plan = plan_for(cases.own_pod_range(), template="batch-pool")
    pool = plan.step("create-node-pool").params["node_pool"]
    assert plan.basis["range_name"] == "batch-pods-2"
    assert pool["name"] == "batch-pool-pods2"
    assert pool["maxPodsConstraint"] == {"maxPodsPerNode": 32}
    assert pool["autoscaling"] == {
        "enabled": True,
        "totalMinNodeCount": 0,
        "totalMaxNodeCount": 10,
        "locationPolicy": "BALANCED",
    }
    # batch-pods: 16 nodes max today, autoscaler 10 -> 32 nodes of /26 -> /21
    assert plan.summary["per_node_prefix"] == 26
    assert netmath.parse_cidr(plan.summary["cidr"]).prefixlen == 21


def test_unknown_template_pool_is_refused() -> None:
    with pytest.raises(InvalidInput, match=r"node pool 'nope' not found .*known: default-pool"):
        plan_for(cases.incident(), template="nope")


def test_default_template_is_the_pool_with_most_nodes() -> None:
    assert plan_for(cases.additional_ranges()).basis["template_pool"] == POOL


def test_without_kube_the_template_is_the_largest_autoscaling_max() -> None:
    snap = cases.no_kube()
    big = cases.default_pool(name="big-pool", pod_range="pods")
    big = dataclasses.replace(big, autoscaling=dataclasses.replace(big.autoscaling, max_node_count=20))
    snap = cases.with_pools(snap, cases.default_pool(), big)
    assert plan_for(snap).basis["template_pool"] == "big-pool"


def test_a_pool_cidrx_made_is_not_the_default_template() -> None:
    made = cases.default_pool(name="zz-made", resource_labels={PLAN_LABEL: "abc"})
    snap = cases.with_pools(cases.incident(), cases.default_pool(), made)
    snap = cases.with_nodes(snap, cases.nodes(4, POD_CIDR, pool="zz-made"))
    assert plan_for(snap).basis["template_pool"] == POOL


def test_template_plan_label_is_not_copied() -> None:
    config = {**cases.default_pool().config, "resourceLabels": {PLAN_LABEL: "old", "env": "prod"}}
    snap = cases.with_pools(cases.incident(), cases.default_pool(config=config))
    pool = plan_for(snap).step("create-node-pool").params["node_pool"]
    assert pool["config"]["resourceLabels"] == {"env": "prod"}


# --- strategies -------------------------------------------------------------------------------------


def test_cluster_range_strategy_steps() -> None:
    plan = plan_for(cases.additional_ranges(), strategy="cluster-range")
    assert [s.id for s in plan.steps] == ["add-secondary-range", "add-cluster-pod-ranges"]
    step = plan.step("add-cluster-pod-ranges")
    assert step.action == "gke.add-cluster-pod-ranges"
    assert step.params == {"project": PROJECT, "location": LOCATION, "cluster": CLUSTER, "range_names": ["pods-2"]}
    assert step.depends_on == ("add-secondary-range",)
    assert plan.basis["cluster_pod_ranges"] == [cases.EXTRA_RANGE]
    assert "node_pool_name" not in plan.basis
    assert any("node pools created after this change" in n for n in plan.notes)


def test_autopilot_refuses_node_pool_but_allows_cluster_range() -> None:
    with pytest.raises(InvalidInput, match=r"Autopilot.*--strategy cluster-range"):
        plan_for(cases.autopilot())
    plan = plan_for(cases.autopilot(), strategy="cluster-range")
    assert plan.step("add-cluster-pod-ranges").params["range_names"] == ["pods-2"]


def test_unknown_strategy_is_refused() -> None:
    with pytest.raises(InvalidInput, match="unknown GKE strategy 'bigger'"):
        plan_for(cases.incident(), strategy="bigger")


def test_snapshot_without_gke_is_refused() -> None:
    with pytest.raises(InvalidInput, match="no GKE section"):
        plan_for(dataclasses.replace(cases.incident(), gke=None))


# --- digest -----------------------------------------------------------------------------------------


def test_digest_is_stable_and_covers_the_steps(incident_plan: Plan, tmp_path: Any) -> None:
    again = plan_for(cases.incident())
    assert again.digest == incident_plan.digest and len(incident_plan.plan_id) == 16
    # created_at is sealed too: it is what a reviewer reads
    assert plan_for(cases.incident(), created_at="2030-01-01T00:00:00Z").digest != incident_plan.digest
    assert plan_for(cases.incident(), add_nodes=100).digest != incident_plan.digest
    path = tmp_path / "plan.json"
    save_plan(incident_plan, path)
    assert load_plan(path) == incident_plan


# --- drift ------------------------------------------------------------------------------------------


def _stale(plan: Plan, snap: Snapshot, match: str) -> None:
    with pytest.raises(StalePlan, match=match) as err:
        PROVIDER.check_drift(plan, snap)
    assert err.value.exit_code == 4


def _with_planned_range(snap: Snapshot, name: str = "pods-2", cidr: str = INCIDENT_PLAN_CIDR) -> Snapshot:
    subnet = dataclasses.replace(cases.cluster_subnet(SecondaryRange(name, cidr)), fingerprint="fp-2")
    return cases.with_subnet(snap, subnet)


def test_unchanged_snapshot_passes(incident_plan: Plan) -> None:
    PROVIDER.check_drift(incident_plan, cases.incident())


def test_fingerprint_change_alone_is_not_drift(incident_plan: Plan) -> None:
    subnet = dataclasses.replace(cases.cluster_subnet(), fingerprint="fp-99")
    PROVIDER.check_drift(incident_plan, cases.with_subnet(cases.incident(), subnet))


def test_unrelated_subnet_elsewhere_is_not_drift(incident_plan: Plan) -> None:
    g = cases.gke_of(cases.incident())
    extra = Subnetwork("eu-apps", "europe-west1", NETWORK, "10.200.0.0/20")
    PROVIDER.check_drift(incident_plan, cases.with_gke(cases.incident(), subnets=(*g.subnets, extra)))


def test_unrelated_field_change_is_not_drift(incident_plan: Plan) -> None:
    snap = cases.with_kube(cases.incident(), events=())
    snap = cases.with_cluster(snap, version="1.28.1-gke.200")
    PROVIDER.check_drift(incident_plan, snap)


def test_our_own_range_and_pool_are_progress(incident_plan: Plan) -> None:
    snap = _with_planned_range(cases.incident())
    PROVIDER.check_drift(incident_plan, snap)
    ours = cases.default_pool(
        name="default-pool-pods2",
        pod_range="pods-2",
        pod_cidr=INCIDENT_PLAN_CIDR,
        resource_labels={PLAN_LABEL: incident_plan.plan_id},
    )
    PROVIDER.check_drift(incident_plan, cases.with_pools(snap, cases.default_pool(), ours))


def test_our_range_name_with_another_cidr_is_stale(incident_plan: Plan) -> None:
    _stale(incident_plan, _with_planned_range(cases.incident(), cidr="10.0.192.0/19"), "pods-2 now exists")


def test_basis_range_removed_or_changed_is_stale(incident_plan: Plan) -> None:
    subnet = dataclasses.replace(cases.cluster_subnet(), secondary_ranges=(SecondaryRange("pods", POD_CIDR),))
    _stale(incident_plan, cases.with_subnet(cases.incident(), subnet), "services .* is gone")
    subnet = dataclasses.replace(
        cases.cluster_subnet(),
        secondary_ranges=(SecondaryRange("pods", POD_CIDR), SecondaryRange("services", "10.9.0.0/24")),
    )
    _stale(incident_plan, cases.with_subnet(cases.incident(), subnet), "services changed from 10.8.0.0/24")


def test_overlapping_subnet_elsewhere_is_stale(incident_plan: Plan) -> None:
    g = cases.gke_of(cases.incident())
    extra = Subnetwork("eu-apps", "europe-west1", NETWORK, "10.0.176.0/20")
    _stale(
        incident_plan,
        cases.with_gke(cases.incident(), subnets=(*g.subnets, extra)),
        "overlaps 10.0.176.0/20 \\(subnet europe-west1/eu-apps\\)",
    )


def test_overlapping_peering_route_is_stale(incident_plan: Plan) -> None:
    g = cases.gke_of(cases.incident())
    route = PeeringRoute("10.0.128.0/17", "corp-hub", LOCATION)
    snap = cases.with_gke(cases.incident(), peering_routes=(*g.peering_routes, route))
    _stale(incident_plan, snap, "imported over peering corp-hub")


def test_someone_elses_pool_with_the_planned_name_is_stale(incident_plan: Plan) -> None:
    theirs = cases.default_pool(name="default-pool-pods2")
    _stale(
        incident_plan,
        cases.with_pools(cases.incident(), cases.default_pool(), theirs),
        "node pool named default-pool-pods2 was created by someone else",
    )


def test_template_pool_gone_is_stale(incident_plan: Plan) -> None:
    other = cases.default_pool(name="other-pool")
    _stale(incident_plan, cases.with_pools(cases.incident(), other), "template node pool default-pool no longer exists")


def test_other_target_is_refused(incident_plan: Plan) -> None:
    snap = dataclasses.replace(cases.incident(), target=Target("gke", "other", project=PROJECT, location=LOCATION))
    with pytest.raises(InvalidInput, match="plan is for"):
        PROVIDER.check_drift(incident_plan, snap)


def test_cluster_range_drift_ignores_pools() -> None:
    plan = plan_for(cases.incident(), strategy="cluster-range")
    snap = cases.with_pools(cases.incident(), cases.default_pool(name="other-pool"))
    snap = cases.with_cluster(_with_planned_range(snap), additional_pod_ranges=())
    PROVIDER.check_drift(plan, snap)


# --- property ---------------------------------------------------------------------------------------

_SPACES = [netmath.parse_cidr(s) for s in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10")]


@st.composite
def _networks(draw: st.DrawFn) -> IPv4Network:
    space = draw(st.sampled_from(_SPACES))
    prefix = draw(st.integers(min_value=space.prefixlen, max_value=26))
    offset = draw(st.integers(min_value=0, max_value=(1 << (prefix - space.prefixlen)) - 1))
    return IPv4Network((int(space.network_address) + (offset << (32 - prefix)), prefix))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    subnets=st.lists(_networks(), max_size=12),
    routes=st.lists(_networks(), max_size=6),
    add_nodes=st.integers(min_value=1, max_value=300),
)
def test_chosen_cidr_never_overlaps_and_is_allowed(
    subnets: list[IPv4Network], routes: list[IPv4Network], add_nodes: int
) -> None:
    g = cases.gke_of(cases.incident())
    others = tuple(
        Subnetwork(f"s{i}", "us-east1", NETWORK, "10.255.255.0/28", (SecondaryRange("r", str(n)),))
        for i, n in enumerate(subnets)
    )
    peering = tuple(PeeringRoute(str(n), "hub") for n in routes)
    snap = cases.with_gke(cases.incident(), subnets=(*g.subnets, *others), peering_routes=(*g.peering_routes, *peering))
    try:
        plan = plan_for(snap, add_nodes=add_nodes)
    except InvalidInput as exc:
        assert "no free" in str(exc)
        return
    chosen = netmath.parse_cidr(plan.summary["cidr"])
    occupied = occupied_space(cases.gke_of(snap))
    assert not [where for net, where in occupied if netmath.overlaps(net, chosen)]
    netmath.gcp_check_allowed(chosen)
    assert plan.summary["new_range_max_nodes"] >= add_nodes
    assert codec.sha256_of(plan.steps)  # serialisable
