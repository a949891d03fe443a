"""The agent pool a plan copies, and its copy: every writable property of the template (VM size, OS, zones,
labels, taints, mode, max pods, autoscaler, kubelet and OS settings, ...) except its name and subnet(s).

Which properties are writable follows the AgentPool / ManagedClusterAgentPoolProfileProperties schema of
azure-rest-api-specs (docs/cloud-facts.md, "AKS"); read-only ones (provisioningState, powerState,
nodeImageVersion, currentOrchestratorVersion, eTag) are never sent. Pure: no I/O.
"""

from __future__ import annotations

import copy
from typing import Any

from cidrx.errors import InvalidInput
from cidrx.providers.aks.model import AgentPool, AksSection

PLAN_TAG = "cidrx-plan"  # the tag on what a plan creates: its plan id

# Writable agent pool properties a copy keeps (REST names).
COPIED = (
    "count",
    "vmSize",
    "osDiskSizeGB",
    "osDiskType",
    "kubeletDiskType",
    "workloadRuntime",
    "maxPods",
    "osType",
    "osSKU",
    "maxCount",
    "minCount",
    "enableAutoScaling",
    "scaleDownMode",
    "type",
    "mode",
    "orchestratorVersion",
    "upgradeSettings",
    "availabilityZones",
    "enableNodePublicIP",
    "nodePublicIPPrefixID",
    "scaleSetPriority",
    "scaleSetEvictionPolicy",
    "spotMaxPrice",
    "tags",
    "nodeLabels",
    "nodeTaints",
    "proximityPlacementGroupID",
    "kubeletConfig",
    "linuxOSConfig",
    "enableEncryptionAtHost",
    "enableUltraSSD",
    "enableFIPS",
    "gpuInstanceProfile",
    "hostGroupID",
    "podIPAllocationMode",
    "networkProfile",
    "securityProfile",
    "gpuProfile",
)
# What a copy replaces: the subnets (the point of the copy) and the name; the rest is the template's.
NOT_COPIED = ("vnetSubnetID", "podSubnetID")


def copied_properties(properties: dict[str, Any]) -> dict[str, Any]:
    """The template's writable properties (COPIED), as ARM returned them."""
    return {k: copy.deepcopy(properties[k]) for k in COPIED if properties.get(k) not in (None, "", [], {})}


def choose_template(aks: AksSection, subnet_ids: set[str], wanted: str | None) -> AgentPool:
    """--template, else the pool with the most nodes among those on `subnet_ids` (User pools first), else the
    largest pool."""
    if wanted:
        found = aks.pool(wanted)
        if found is None:
            known = ", ".join(p.name for p in aks.agent_pools) or "none"
            raise InvalidInput(f"agent pool {wanted!r} not found in cluster {aks.cluster.name} (known: {known})")
        return found
    lowered = {i.lower() for i in subnet_ids}
    on = [p for p in aks.agent_pools if {p.vnet_subnet_id.lower(), p.pod_subnet_id.lower()} & lowered]
    candidates = on or list(aks.agent_pools)
    if not candidates:
        raise InvalidInput(f"cluster {aks.cluster.name} has no agent pool to copy")
    return max(candidates, key=lambda p: (p.mode == "User", p.count, p.name))


def pool_name(aks: AksSection, template: AgentPool, wanted: str | None, limit: int = 12) -> str:
    taken = {p.name for p in aks.agent_pools}
    if wanted:
        if wanted in taken:
            raise InvalidInput(f"agent pool {wanted!r} already exists in cluster {aks.cluster.name}")
        return wanted
    n = 2
    while True:
        suffix = str(n)
        name = template.name[: limit - len(suffix)] + suffix
        if name not in taken:
            return name
        n += 1


def agent_pool_body(
    template: AgentPool, node_subnet_id: str, pod_subnet_id: str, max_pods: int, count: int
) -> dict[str, Any]:
    """The new pool's REST body (without the plan tag, which the executor adds)."""
    props = copy.deepcopy(template.properties)
    props["maxPods"] = max_pods
    props["vnetSubnetID"] = node_subnet_id
    if pod_subnet_id:
        props["podSubnetID"] = pod_subnet_id
    if props.get("enableAutoScaling"):
        low = int(props.get("minCount") or 0)
        props["count"] = max(low, min(count, int(props.get("maxCount") or count)))
    else:
        props["count"] = count
    props.pop("orchestratorVersion", None)  # the cluster's version: a copy follows the control plane
    return {"properties": props}


def differences(template: AgentPool, body: dict[str, Any]) -> list[str]:
    """How the copy differs from its template, in words."""
    p = body["properties"]
    out = [f"subnet {p['vnetSubnetID'].rsplit('/', 1)[-1]} (template: {template.vnet_subnet_id.rsplit('/', 1)[-1]})"]
    if p.get("podSubnetID"):
        out.append(
            f"pod subnet {p['podSubnetID'].rsplit('/', 1)[-1]} (template: {template.pod_subnet_id.rsplit('/', 1)[-1]})"
        )
    if p["maxPods"] != template.max_pods:
        out.append(f"max pods {p['maxPods']} (template: {template.max_pods})")
    if p.get("count") != template.count:
        out.append(f"count {p['count']} (template: {template.count})")
    if template.properties.get("orchestratorVersion"):
        out.append(
            "Kubernetes version: the cluster's (template pins " + str(template.properties["orchestratorVersion"]) + ")"
        )
    return out
