"""What GKE reads from the cluster itself: Dataplane V2's EgressNATPolicies.

The cluster collector (cidrx.kube.collect) reads nodes, pods and events the same way for every provider and
asks this module (the provider's `kube_collect` and `kube_fields`) for the rest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cidrx.kube.collect import CustomResourceReads

# GKE Dataplane V2's egress NAT policy (cluster-scoped; GKE creates one named `default`).
EGRESS_NAT_GROUP, EGRESS_NAT_VERSION, EGRESS_NAT_PLURAL = "networking.gke.io", "v1", "egressnatpolicies"


@dataclass(frozen=True)
class EgressNatPolicy:
    """A GKE Dataplane V2 EgressNATPolicy (networking.gke.io/v1, cluster-scoped): the destinations whose
    traffic keeps the pod address (action NoSNAT)."""

    name: str
    action: str = ""
    destinations: tuple[str, ...] = ()
    resource_version: str = ""


# The field GKE adds to the snapshot's kube section: the EgressNATPolicies, read when the cluster serves the
# group; None: not served.
FIELDS: tuple[tuple[str, Any, Any], ...] = (("egress_nat_policies", tuple[EgressNatPolicy, ...] | None, None),)


def egress_nat_from(obj: Mapping[str, Any]) -> EgressNatPolicy:
    """networking.gke.io/v1 EgressNATPolicy: spec.action and spec.destinations[].cidr."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    return EgressNatPolicy(
        name=str(meta.get("name") or ""),
        action=str(spec.get("action") or ""),
        destinations=tuple(str(d.get("cidr")) for d in spec.get("destinations") or () if isinstance(d, Mapping)),
        resource_version=str(meta.get("resourceVersion") or ""),
    )


READS = CustomResourceReads(
    EGRESS_NAT_GROUP,
    EGRESS_NAT_VERSION,
    EGRESS_NAT_PLURAL,
    "egress_nat_policies",
    egress_nat_from,
    key=lambda p: p.name,
)
