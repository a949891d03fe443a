"""The plans cidrx applied to a GKE cluster, told by the plan label on the node pools they created (`node-pool`
plans), with the addresses their pod range still has free. The cluster-range plan creates no pool: existing
nodes keep their ranges and new pools draw from the added range, so there is nothing of it to wait for."""

from __future__ import annotations

from cidrx.model.applied import AppliedPlan
from cidrx.model.snapshot import Snapshot
from cidrx.providers.gke.facts.pod_ranges import pod_ranges
from cidrx.providers.gke.facts.pool_copy import PLAN_LABEL, labels
from cidrx.providers.gke.model import GkeSection


def applied_plans(snapshot: Snapshot) -> tuple[AppliedPlan, ...]:
    gke: GkeSection | None = snapshot.gke
    if gke is None:
        return ()
    ranges = pod_ranges(gke, snapshot.kube)
    found = []
    for pool in gke.node_pools:
        plan_id = labels(pool).get(PLAN_LABEL)
        use = next((r for r in ranges if pool.name in r.pools), None)
        if not plan_id or use is None:
            continue
        found.append(
            AppliedPlan(
                plan_id, f"node pool {pool.name} (pod range {use.label})", use.size, max(0, use.size - use.used)
            )
        )
    return tuple(sorted(found, key=lambda a: a.plan_id))
