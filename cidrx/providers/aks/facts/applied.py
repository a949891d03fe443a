"""The plans cidrx applied to an AKS cluster, told by the plan tag (`cidrx-plan`) on the agent pools they created,
with the room the pool's new subnet still has, and when the pool was created.

Why it exists: after an expansion the old subnet is still full, and what that means depends on the plan kind
(docs/cloud-facts.md, "AKS after an expansion"). With `aks-node-pool` (Azure CNI node subnet) every node got its
pods' addresses when it was created and keeps them, so the full subnet stops only new nodes, which now go to the
new pool. With `aks-pod-subnet` (dynamic pod IP allocation) the old pool's nodes keep asking the old pod subnet
for batches of 16 as their pods grow, so pods the scheduler puts on them still fail until they are moved.
Diagnosis (cidrx.providers.aks.analyze) tells a full old subnet apart from a real incident with these records, and
`expand --plan` (ProviderSpec.applied_plans) refuses to stack a second expansion while the new subnet has room.

ARM subnets carry no tags, so the pool is what is recognised; the new subnet is the one it takes addresses from
(its pod subnet for pod-subnet pools, its node subnet otherwise). Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from cidrx.model.applied import AppliedPlan
from cidrx.model.kube import KubeSection, first_node_created
from cidrx.model.snapshot import Snapshot
from cidrx.providers.aks.facts.pool_copy import PLAN_TAG
from cidrx.providers.aks.facts.subnets import SubnetUse, subnet_uses
from cidrx.providers.aks.model import AgentPool, AksSection


@dataclass(frozen=True)
class AppliedPool:
    """Agent pool `pool`, created by plan `plan_id`, taking its new addresses from `use` (role "nodes": its node
    subnet, an `aks-node-pool` plan; role "pods": its pod subnet, an `aks-pod-subnet` plan)."""

    plan_id: str
    pool: AgentPool
    use: SubnetUse
    # When the pool was created: ARM's systemData.createdAt, else the creation time of its first node; "" when
    # neither is known (an older API version, no cluster access, no node yet).
    applied_at: str

    @property
    def role(self) -> str:
        return self.use.role

    @property
    def room(self) -> int:
        """How many more nodes (role nodes) or pod batches of 16 (role pods) the new subnet has addresses for."""
        return self.use.room_for_nodes

    @property
    def space(self) -> str:
        s = self.use.subnet
        kind = "pod subnet" if self.role == "pods" else "subnet"
        return f"agent pool {self.pool.name} ({kind} {s.name} {s.address_prefix})"


def applied_pools(aks: AksSection, kube: KubeSection) -> list[AppliedPool]:
    """Every agent pool a cidrx plan created (it carries the `cidrx-plan` tag), by plan id."""
    uses = subnet_uses(aks)
    found = []
    for pool in aks.agent_pools:
        plan_id = pool.tags.get(PLAN_TAG)
        if not plan_id:
            continue
        role, subnet_id = ("pods", pool.pod_subnet_id) if pool.pod_subnet_id else ("nodes", pool.vnet_subnet_id)
        use = next((u for u in uses if u.role == role and u.subnet.id.lower() == subnet_id.lower()), None)
        if use is not None:
            when = aks.pools_created_at.get(pool.name) or first_node_created(kube, pool.name)
            found.append(AppliedPool(plan_id, pool, use, when))
    return sorted(found, key=lambda a: (a.plan_id, a.pool.name))


def applied_plans(snapshot: Snapshot) -> tuple[AppliedPlan, ...]:
    """The applied plans as `expand --plan` weighs them: the new subnet's usable and free addresses (free counted
    as 0 once not even one more node, or pod batch, fits)."""
    aks: AksSection | None = snapshot.aks
    if aks is None:
        return ()
    return tuple(
        AppliedPlan(a.plan_id, a.space, a.use.size, a.use.free if a.room else 0, a.applied_at)
        for a in applied_pools(aks, snapshot.kube)
    )
