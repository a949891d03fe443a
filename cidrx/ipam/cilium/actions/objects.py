"""How the Cilium actions read and write the cluster: the step's client, guarded JSON patches, the nodes'
CIDRs. Every write starts with a `test` of the resourceVersion just read, so a racing writer (Helm, the
operator, a human) makes it fail (Conflict) instead of being overwritten."""

from __future__ import annotations

from collections.abc import Mapping
from ipaddress import IPv4Network
from typing import TYPE_CHECKING, Any

from cidrx.engine.executor import StepContext
from cidrx.errors import CloudError
from cidrx.ipam.addresses import v4_network
from cidrx.ipam.cilium.collect import node_from
from cidrx.ipam.cilium.model import POOL_GROUP
from cidrx.model.plan import DIGEST_TAG, Step

if TYPE_CHECKING:
    from cidrx.kube.api import KubeApi

CONFLICT_RETRIES = 5
JSON = dict[str, Any]
PLAN_KEY = DIGEST_TAG.replace("~", "~0").replace("/", "~1")  # as a JSON pointer token


def kube_of(ctx: StepContext, step: Step) -> KubeApi:
    kube: KubeApi | None = getattr(ctx.apis, "kube", None)
    if kube is None:
        raise CloudError(f"step {step.id} needs Kubernetes access; pass --kubeconfig/--context (not --no-kube)")
    return kube


def meta_of(obj: Mapping[str, Any]) -> JSON:
    meta: JSON = obj.get("metadata") or {}
    return meta


def guard(obj: Mapping[str, Any]) -> JSON:
    """The `test` op that makes a JSON patch a compare-and-swap on `obj`'s resourceVersion."""
    return {"op": "test", "path": "/metadata/resourceVersion", "value": str(meta_of(obj).get("resourceVersion") or "")}


def set_annotation(annotations: Mapping[str, Any] | None, base: str, value: str | None) -> list[JSON]:
    """Ops setting (or, with None, removing) the `cidrx.io/plan` annotation under `base` (".../annotations")."""
    if value is None:
        return [{"op": "remove", "path": f"{base}/{PLAN_KEY}"}] if annotations and DIGEST_TAG in annotations else []
    if annotations is None:
        return [{"op": "add", "path": base, "value": {DIGEST_TAG: value}}]
    return [{"op": "add", "path": f"{base}/{PLAN_KEY}", "value": value}]


def node_cidrs_in(api: KubeApi, net: IPv4Network, pool: str | None = None) -> list[str]:
    """ "CiliumNode <name> holds <cidr>" for every node CIDR inside `net`: its podCIDRs (pool None) or what the
    multi-pool operator allocated it from `pool`."""
    out = []
    for obj in api.iter_custom(POOL_GROUP, "v2", "ciliumnodes"):
        node = node_from(obj)
        held = node.pod_cidrs if pool is None else tuple(c for a in node.allocated if a.pool == pool for c in a.cidrs)
        for text in held:
            cidr = v4_network(text)
            if cidr is not None and cidr.subnet_of(net):
                out.append(f"CiliumNode {node.name} holds {cidr}")
    return sorted(out)
