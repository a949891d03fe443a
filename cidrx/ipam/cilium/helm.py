"""The Helm values of a cluster-pool plan (`cidrx expand --plan --emit helm`): the package's `emits` entry.

Why it exists: the Cilium chart writes `cluster-pool-ipv4-cidr` from `ipam.operator.clusterPoolIPv4PodCIDRList`
(install/kubernetes/cilium/templates/cilium-configmap.yaml, docs/cloud-facts.md "Cilium"), so a range cidrx
appends to the ConfigMap is taken out again by the next `helm upgrade` unless the values carry it too. This
writes the values snippet that keeps the list as the plan leaves it (existing entries first, in order).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from cidrx.errors import InvalidInput
from cidrx.ipam.cilium.model import CLUSTER_POOL

if TYPE_CHECKING:
    from cidrx.model.plan import Plan


def values(plan: Plan) -> str:
    """The values.yaml snippet (YAML; the CIDRs quoted as JSON strings, which YAML reads the same)."""
    if plan.basis.get("mode") != CLUSTER_POOL:
        raise InvalidInput(
            "--emit helm: this plan adds a CIDR to a CiliumPodIPPool, which no Cilium chart value holds",
            hint="add the CIDR to the pool's manifest wherever it is kept",
        )
    cidrs = [*plan.basis["cluster_pool"], plan.basis["cidr"]]
    items = "".join(f"      - {json.dumps(c)}\n" for c in cidrs)
    return (
        f"# Cilium Helm values from cidrx plan {plan.plan_id} ({plan.target.label()}): the cluster pool with\n"
        f"# {plan.basis['cidr']} appended. Merge into your values before the next helm upgrade.\n"
        "ipam:\n  operator:\n    clusterPoolIPv4PodCIDRList:\n" + items
    )
