"""GKE strategy `cluster-range` (the default on Autopilot): a new pod range on the cluster's subnet, added to
the cluster's additional pod ranges (multi-pod CIDR), from which GKE serves node pools created afterwards.

Pure: no I/O. `check_drift` compares a plan's basis with a fresh snapshot before apply.
"""

from __future__ import annotations

from collections.abc import Collection

from cidrx.model.options import PlanOptions
from cidrx.model.plan import Plan, Step
from cidrx.model.snapshot import Snapshot
from cidrx.providers.gke.actions.cluster_ranges import ADD_CLUSTER_POD_RANGES
from cidrx.providers.gke.actions.firewall import ADD_FIREWALL_RANGE
from cidrx.providers.gke.actions.ip_masq import ADD_IP_MASQ_CIDR
from cidrx.providers.gke.actions.subnet_ranges import ADD_SECONDARY_RANGE
from cidrx.providers.gke.strategies.pod_range import draft, finish, range_drift, refuse_stale, sizing, start

NAME = "cluster-range"
ACTIONS = (ADD_SECONDARY_RANGE, ADD_FIREWALL_RANGE, ADD_IP_MASQ_CIDR, ADD_CLUSTER_POD_RANGES)


def make_plan(snapshot: Snapshot, opts: PlanOptions, created_at: str) -> Plan:
    found = start(snapshot, opts)
    size = sizing(found, opts)
    d = draft(snapshot, found, size, size.add_nodes, opts)
    gke = found.gke
    c = gke.cluster
    d.steps.append(
        Step(
            id="add-cluster-pod-ranges",
            action=ADD_CLUSTER_POD_RANGES.name,
            params={"project": gke.project, "location": c.location, "cluster": c.name, "range_names": [d.range_name]},
            description=f"add {d.range_name} to cluster {c.name}'s additional pod ranges",
            depends_on=d.after,
            permissions=ADD_CLUSTER_POD_RANGES.permissions,
        )
    )
    note = (
        f"Existing node pools keep their pod range; GKE serves node pools created after this change (by you "
        f"or node auto-provisioning) from the least used cluster range, {d.range_name} included. On Standard "
        "clusters, create a node pool afterwards to get nodes in it."
    )
    return finish(d, created_at, NAME, "", note)


def check_drift(plan: Plan, snapshot: Snapshot, begun: Collection[str] = ()) -> None:
    """Refuse (StalePlan, exit 4) when what the plan relied on no longer holds (pod_range.range_drift)."""
    refuse_stale(range_drift(plan, snapshot))
