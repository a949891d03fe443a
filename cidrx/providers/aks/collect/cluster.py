"""What AKS reads from the cluster itself: Azure CNI's ClusterSubnetState objects.

With dynamic pod IP allocation, Azure CNI's controller writes one ClusterSubnetState (acn.azure.com/v1alpha1,
namespaced, named after the subnet) per pod subnet and sets `status.exhausted` when the subnet has no batch of
addresses left to hand out (docs/cloud-facts.md, "AKS"). The cluster collector (cidrx.kube.collect) reads
nodes, pods and events the same way for every provider and asks this module for the rest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cidrx.kube.collect import CustomResourceReads

GROUP, VERSION, PLURAL = "acn.azure.com", "v1alpha1", "clustersubnetstates"


@dataclass(frozen=True)
class ClusterSubnetState:
    namespace: str
    name: str  # the subnet's name
    exhausted: bool
    timestamp: str = ""


# The field AKS adds to the snapshot's kube section; None: the group is not served (not dynamic allocation).
FIELDS: tuple[tuple[str, Any, Any], ...] = (("cluster_subnet_states", tuple[ClusterSubnetState, ...] | None, None),)


def state_from(obj: Mapping[str, Any]) -> ClusterSubnetState:
    meta = obj.get("metadata") or {}
    status = obj.get("status") or {}
    return ClusterSubnetState(
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        exhausted=bool(status.get("exhausted")),
        timestamp=str(status.get("timestamp") or ""),
    )


READS = CustomResourceReads(
    GROUP, VERSION, PLURAL, "cluster_subnet_states", state_from, key=lambda s: (s.namespace, s.name)
)
