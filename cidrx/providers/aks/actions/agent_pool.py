"""Step action `aks.create-agent-pool`: the new agent pool of an AKS plan (a copy of the template pool whose
nodes, or pods, take addresses from the new subnet), its executor, its undo and its Terraform.

The pool carries the plan id in its tags (facts.pool_copy.PLAN_TAG): the executor recognises its own pool by it
after a crash or a parallel run, and the undo deletes only a pool carrying it once no node is left in it. The
create sends `If-None-Match: *` and the delete the pool's ETag (`If-Match`). The Terraform is an
`azurerm_kubernetes_cluster_node_pool`.
"""

from __future__ import annotations

import copy
from typing import Any

from cidrx.engine.executor import Outputs, StepContext
from cidrx.errors import CloudError, StalePlan
from cidrx.model.plan import Step
from cidrx.providers.aks.actions.common import POOL_TIMEOUT, aks_api, cluster_api, no_cluster, wait
from cidrx.providers.aks.facts.pool_copy import PLAN_TAG
from cidrx.registry import Action
from cidrx.render.hcl import Block, Expr, import_block, tf_name
from cidrx.render.terraform import Emitter

POOL_LABEL = "kubernetes.azure.com/agentpool"  # the label AKS puts on every node of a pool


def _tags(pool: dict[str, Any]) -> dict[str, str]:
    return dict((pool.get("properties") or {}).get("tags") or {})


class CreateAgentPool:
    def _get(self, params: dict[str, Any], ctx: StepContext) -> dict[str, Any] | None:
        return aks_api(ctx).get_agent_pool(params["resource_group"], params["cluster"], params["pool"])

    def _ours(self, pool: dict[str, Any], params: dict[str, Any], ctx: StepContext) -> None:
        tag = _tags(pool).get(PLAN_TAG)
        if tag != ctx.plan_id:
            by = f"by plan {tag}" if tag else "by someone else"
            raise StalePlan(
                f"an agent pool named {params['pool']} was created {by} in cluster {params['cluster']}; "
                "make a new plan (or pick another name with --pool-name)"
            )

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        pool = self._get(params, ctx)
        if pool is None:
            return None
        self._ours(pool, params, ctx)
        state = (pool.get("properties") or {}).get("provisioningState")
        if state == "Failed":
            raise CloudError(
                f"agent pool {params['pool']} failed to provision; delete it (az aks nodepool delete --cluster-name "
                f"{params['cluster']} --name {params['pool']}) and run the same command again"
            )
        if state != "Succeeded":
            ctx.wait_until(
                f"agent pool {params['pool']} to be Succeeded",
                lambda: (
                    True
                    if ((self._get(params, ctx) or {}).get("properties") or {}).get("provisioningState") == "Succeeded"
                    else None
                ),
                timeout=POOL_TIMEOUT,
                interval=10.0,
                max_interval=30.0,
            )
        return {"agent_pool": params["pool"]}

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        body = copy.deepcopy(params["body"])
        props = body["properties"]
        props["tags"] = {**(props.get("tags") or {}), PLAN_TAG: ctx.plan_id}
        poller = aks_api(ctx).create_agent_pool(params["resource_group"], params["cluster"], params["pool"], body)
        wait(ctx, poller, f"creation of agent pool {params['pool']}", POOL_TIMEOUT)
        return {"agent_pool": params["pool"]}

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        return None

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        pool = self._get(params, ctx)
        if pool is None:
            raise CloudError(f"agent pool {params['pool']} is not in cluster {params['cluster']} after its creation")
        self._ours(pool, params, ctx)
        have = pool.get("properties") or {}
        want = params["body"]["properties"]
        for key in ("vnetSubnetID", "podSubnetID"):
            if want.get(key) and str(have.get(key) or "").lower() != want[key].lower():
                raise CloudError(f"agent pool {params['pool']} has {key} {have.get(key)}, not {want[key]}")


class UndoAgentPool:
    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        pool = CreateAgentPool()._get(params, ctx)
        if pool is None or _tags(pool).get(PLAN_TAG) != ctx.plan_id:
            return None
        return {"agent_pool": params["pool"], "etag": str(pool.get("etag") or "")}

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        name = params["pool"]
        kube = cluster_api(ctx)
        if kube is None:
            return no_cluster(f"agent pool {name}")
        nodes = sorted(
            n["metadata"]["name"]
            for n in kube.iter_nodes()
            if (n.get("metadata", {}).get("labels") or {}).get(POOL_LABEL) == name
        )
        if nodes:
            return (
                f"agent pool {name} still has {len(nodes)} node(s) ({', '.join(nodes[:3])}); drain them and scale "
                "the pool to 0"
            )
        return None

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        return f"delete agent pool {params['pool']} of cluster {params['cluster']}"

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        poller = aks_api(ctx).delete_agent_pool(
            params["resource_group"], params["cluster"], params["pool"], found["etag"]
        )
        wait(ctx, poller, f"deletion of agent pool {params['pool']}", POOL_TIMEOUT)
        return {"agent_pool": params["pool"]}

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        return None


# AKS REST property -> azurerm_kubernetes_cluster_node_pool argument, for the scalar ones.
_HCL = {
    "vmSize": "vm_size",
    "osType": "os_type",
    "osSKU": "os_sku",
    "osDiskSizeGB": "os_disk_size_gb",
    "osDiskType": "os_disk_type",
    "kubeletDiskType": "kubelet_disk_type",
    "maxPods": "max_pods",
    "mode": "mode",
    "availabilityZones": "zones",
    "nodeLabels": "node_labels",
    "nodeTaints": "node_taints",
    "enableAutoScaling": "auto_scaling_enabled",
    "minCount": "min_count",
    "maxCount": "max_count",
    "count": "node_count",
    "scaleSetPriority": "priority",
    "scaleSetEvictionPolicy": "eviction_policy",
    "spotMaxPrice": "spot_max_price",
    "enableNodePublicIP": "node_public_ip_enabled",
    "enableEncryptionAtHost": "host_encryption_enabled",
    "enableFIPS": "fips_enabled",
    "enableUltraSSD": "ultra_ssd_enabled",
    "workloadRuntime": "workload_runtime",
    "scaleDownMode": "scale_down_mode",
    "proximityPlacementGroupID": "proximity_placement_group_id",
    "nodePublicIPPrefixID": "node_public_ip_prefix_id",
    "hostGroupID": "host_group_id",
}


def agent_pool_hcl(e: Emitter, step: Step) -> None:
    """An azurerm_kubernetes_cluster_node_pool, and its import block once an apply created the pool."""
    p = step.params
    props = p["body"]["properties"]
    b = Block("resource", ("azurerm_kubernetes_cluster_node_pool", tf_name(p["pool"])))
    b.attr("name", p["pool"]).attr("kubernetes_cluster_id", p["cluster_id"])
    skipped = []
    for key, value in props.items():
        if key in ("vnetSubnetID", "podSubnetID", "tags"):
            continue
        if key in _HCL:
            b.attr(_HCL[key], value)
        else:
            skipped.append(key)
    for key, attr in (("vnetSubnetID", "vnet_subnet_id"), ("podSubnetID", "pod_subnet_id")):
        if props.get(key):
            b.attr(attr, e.ref(props[key]) if props[key].startswith("${") else props[key])
    b.attr("tags", {**(props.get("tags") or {}), "cidrx-plan": e.plan.plan_id})
    if props.get("enableAutoScaling"):
        b.block("lifecycle").attr("ignore_changes", [Expr("node_count")])
    e.depends(b, step)
    comment = step.description
    if skipped:
        comment += f"\nNot translated from the template (set them by hand): {', '.join(skipped)}"
    address = e.add(step, b, comment)
    if e.out(step.id, "agent_pool"):
        e.imports.append(import_block(address, f"{p['cluster_id']}/agentPools/{p['pool']}"))


CREATE_AGENT_POOL = Action(
    "aks.create-agent-pool",
    (
        "Microsoft.ContainerService/managedClusters/agentPools/read",
        "Microsoft.ContainerService/managedClusters/agentPools/write",
        "Microsoft.Network/virtualNetworks/subnets/join/action",
    ),
    CreateAgentPool,
    undo=UndoAgentPool,
    undo_permissions=(
        "Microsoft.ContainerService/managedClusters/agentPools/read",
        "Microsoft.ContainerService/managedClusters/agentPools/delete",
        "kubernetes: nodes list",
    ),
    hcl=agent_pool_hcl,
)
