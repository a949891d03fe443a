"""The plans cidrx applied to a GKE cluster, told by the plan label on the node pools they created (`node-pool`
plans), with the room their pod range still has, counted in the pool's own per-node blocks.

Why it exists: after a node-pool plan is applied, the old pod range is still full, yet GKE needs no migration:
each node got its pod block when it was created and keeps it, so the old nodes and their pods carry on, and what
the full range stops is only new nodes, which cluster-autoscaler now adds to the new pool (docs/cloud-facts.md,
"GKE after an expansion"). Diagnosis (cidrx.providers.gke.analyze) tells the full old range apart from a real
incident with these records, and `expand --plan` (ProviderSpec.applied_plans) refuses to stack a second
expansion while the new range has room. The cluster-range plan creates no pool and leaves no label (a secondary
range carries none), so it is not recognised here. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from cidrx.model.applied import AppliedPlan
from cidrx.model.kube import KubeSection, first_node_created
from cidrx.model.snapshot import Snapshot
from cidrx.providers.gke.facts.pod_ranges import RangeUse, pod_ranges, pool_node_prefix
from cidrx.providers.gke.facts.pool_copy import PLAN_LABEL, labels
from cidrx.providers.gke.model import GkeSection, NodePool


@dataclass(frozen=True)
class AppliedPool:
    """Node pool `pool`, created by plan `plan_id`, taking its nodes' pod blocks from `range`."""

    plan_id: str
    pool: NodePool
    range: RangeUse
    # The creation time of the pool's first node (its Node object), "" when unknown (no cluster access, no
    # node yet). The container API gives a node pool no creation time, so this is the earliest moment the
    # snapshot can prove the pool existed.
    first_node: str

    @property
    def node_prefix(self) -> int:
        return pool_node_prefix(self.pool)

    @property
    def free_blocks(self) -> int:
        """How many more nodes of this pool its range has a pod block for."""
        return self.range.free_for(self.node_prefix)

    @property
    def space(self) -> str:
        return f"node pool {self.pool.name} (pod range {self.range.label})"


def applied_pools(gke: GkeSection, kube: KubeSection, ranges: list[RangeUse]) -> list[AppliedPool]:
    """Every node pool a cidrx plan created (it carries the `cidrx-plan` label), by plan id."""
    found = []
    for pool in gke.node_pools:
        plan_id = labels(pool).get(PLAN_LABEL)
        use = next((r for r in ranges if pool.name in r.pools), None)
        if plan_id and use is not None:
            found.append(AppliedPool(plan_id, pool, use, first_node_created(kube, pool.name)))
    return sorted(found, key=lambda a: (a.plan_id, a.pool.name))


def applied_plans(snapshot: Snapshot) -> tuple[AppliedPlan, ...]:
    gke: GkeSection | None = snapshot.gke
    if gke is None:
        return ()
    found = applied_pools(gke, snapshot.kube, pod_ranges(gke, snapshot.kube))
    return tuple(
        AppliedPlan(
            a.plan_id,
            a.space,
            a.range.size,
            max(0, a.range.size - a.range.used) if a.free_blocks else 0,
            a.first_node,
        )
        for a in found
    )
