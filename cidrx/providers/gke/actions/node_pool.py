"""Step action `gke.create-node-pool`: the new node pool of a `node-pool` plan (a copy of an existing pool taking
its pod blocks from the new range), its executor, its undo and its Terraform.

The pool carries the plan's id in its GCE resource labels (facts.pool_copy.PLAN_LABEL): the executor finds its
own pool by it after a crash or a parallel run, and the undo deletes only a pool carrying it once no node is
left in it. The Terraform is a `google_container_node_pool` resource translated from the copied REST NodePool.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

from cidrx.engine.executor import Outputs, StepContext
from cidrx.errors import CloudError, StalePlan
from cidrx.model.plan import Step
from cidrx.providers.gke.actions.operations import (
    cluster_api,
    gke_api,
    no_cluster,
    until_gone,
    wait_operation,
    when_free,
)
from cidrx.providers.gke.facts.pool_copy import PLAN_LABEL
from cidrx.registry import Action
from cidrx.render.hcl import Block, Expr, import_block, tf_name
from cidrx.render.terraform import Emitter

# Node pool creation takes minutes; a cluster operation we queue behind (an upgrade) can take much longer.
NODE_POOL_TIMEOUT = 30 * 60.0
POOL_LABEL = "cloud.google.com/gke-nodepool"  # the label GKE puts on every node of a pool


def pool_labels(pool: dict[str, Any]) -> dict[str, str]:
    """The GCE resource labels of a REST NodePool (where the plan id label is)."""
    return dict((pool.get("config") or {}).get("resourceLabels") or {})


class CreateNodePool:
    def _find(self, params: dict[str, Any], ctx: StepContext) -> dict[str, Any] | None:
        name = params["node_pool"]["name"]
        for pool in gke_api(ctx).list_node_pools(params["cluster"]):
            if pool.get("name") == name:
                return pool
        return None

    def _ours(self, pool: dict[str, Any], params: dict[str, Any], ctx: StepContext) -> dict[str, Any]:
        label = pool_labels(pool).get(PLAN_LABEL)
        if label != ctx.plan_id:
            by = f"by plan {label}" if label else "by someone else"
            raise StalePlan(
                f"a node pool named {pool.get('name')} was created {by} in cluster {params['cluster']}; "
                "make a new plan (or pick another name with --pool-name)"
            )
        return pool

    def _outputs(self, params: dict[str, Any]) -> Outputs:
        return {"node_pool": params["node_pool"]["name"]}

    def _wait_running(self, params: dict[str, Any], ctx: StepContext, timeout: float) -> None:
        name = params["node_pool"]["name"]

        def probe() -> bool | None:
            pool = self._find(params, ctx)
            status = str((pool or {}).get("status") or "MISSING")
            if status in ("ERROR", "STOPPING", "MISSING"):
                detail = (pool or {}).get("statusMessage") or "no detail"
                hint = ""
                if status == "ERROR":
                    hint = (
                        f"; delete it (gcloud container node-pools delete {name} --cluster {params['cluster']} "
                        f"--location {params['location']}) and run the same command again"
                    )
                raise CloudError(f"node pool {name} is {status}: {detail}{hint}")
            if status == "RUNNING_WITH_ERROR":  # usable, but GKE reports a problem (e.g. a zone stockout)
                ctx.progress.note(f"node pool {name} runs with an error: {(pool or {}).get('statusMessage')}")
                return True
            return True if status == "RUNNING" else None

        ctx.wait_until(f"node pool {name} to be RUNNING", probe, timeout=timeout, interval=10.0, max_interval=30.0)

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        pool = self._find(params, ctx)
        if pool is None:
            return None
        self._ours(pool, params, ctx)
        if pool.get("status") not in ("RUNNING", "RUNNING_WITH_ERROR"):
            # Ours but still provisioning (an earlier run stopped during the wait): done once it runs.
            self._wait_running(params, ctx, NODE_POOL_TIMEOUT)
        return self._outputs(params)

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        from cidrx.providers.gke.api import AlreadyExists

        body = copy.deepcopy(params["node_pool"])
        config = body.setdefault("config", {})
        config["resourceLabels"] = {**(config.get("resourceLabels") or {}), PLAN_LABEL: ctx.plan_id}
        name = body["name"]
        try:
            op = when_free(
                ctx,
                f"cluster {params['cluster']} to accept node pool {name}",
                lambda: gke_api(ctx).create_node_pool(params["cluster"], body),
            )
        except AlreadyExists:
            # Created between our check and our create: ours (a parallel run of this plan) or not.
            pool = self._find(params, ctx)
            if pool is None:
                raise
            self._ours(pool, params, ctx)
            return self._outputs(params)
        return {**self._outputs(params), "operation": op}

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        name = params["node_pool"]["name"]
        op = outputs.get("operation")
        if op:
            wait_operation(ctx, op, f"creation of node pool {name}", NODE_POOL_TIMEOUT)
        self._wait_running(params, ctx, NODE_POOL_TIMEOUT)

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        name = params["node_pool"]["name"]
        pool = self._find(params, ctx)
        if pool is None:
            raise CloudError(f"node pool {name} is not in cluster {params['cluster']} after its creation")
        want = (params["node_pool"].get("networkConfig") or {}).get("podRange")
        have = (pool.get("networkConfig") or {}).get("podRange")
        if want and have != want:
            raise CloudError(f"node pool {name} takes pod IPs from {have or 'the default range'}, not {want}")
        if pool_labels(pool).get(PLAN_LABEL) != ctx.plan_id:
            raise CloudError(f"node pool {name} lacks the label {PLAN_LABEL}={ctx.plan_id}")


class UndoNodePool:
    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        pool = CreateNodePool()._find(params, ctx)
        if pool is None or pool_labels(pool).get(PLAN_LABEL) != ctx.plan_id:
            return None
        return {"node_pool": pool["name"], "status": str(pool.get("status") or "")}

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        name = found["node_pool"]
        if cluster_api(ctx) is None:
            return no_cluster(f"node pool {name}")
        nodes = sorted(
            n["metadata"]["name"]
            for n in cluster_api(ctx).iter_nodes()
            if (n.get("metadata", {}).get("labels") or {}).get(POOL_LABEL) == name
        )
        if nodes:
            listed = ", ".join(nodes[:3])
            return f"node pool {name} still has {len(nodes)} node(s) ({listed}); drain it and scale it to 0"
        return None

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        return f"delete node pool {found['node_pool']}"

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        if found.get("status") == "STOPPING":
            return {"node_pool": found["node_pool"]}
        op = when_free(
            ctx,
            f"cluster {params['cluster']} to accept the deletion of node pool {found['node_pool']}",
            lambda: gke_api(ctx).delete_node_pool(params["cluster"], found["node_pool"]),
        )
        return {"node_pool": found["node_pool"], "operation": op}

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        what = f"deletion of node pool {outputs['node_pool']}"
        until_gone(self, step, params, outputs, ctx, what, NODE_POOL_TIMEOUT)


_NODE_CONFIG_SCALARS = {
    "machineType": "machine_type",
    "diskSizeGb": "disk_size_gb",
    "diskType": "disk_type",
    "imageType": "image_type",
    "serviceAccount": "service_account",
    "oauthScopes": "oauth_scopes",
    "metadata": "metadata",
    "labels": "labels",
    "resourceLabels": "resource_labels",
    "tags": "tags",
    "preemptible": "preemptible",
    "spot": "spot",
    "localSsdCount": "local_ssd_count",
    "minCpuPlatform": "min_cpu_platform",
    "bootDiskKmsKey": "boot_disk_kms_key",
}


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _node_config(b: Block, config: Mapping[str, Any], plan_id: str) -> list[str]:
    nc = b.block("node_config")
    labels = {**(config.get("resourceLabels") or {}), PLAN_LABEL: plan_id}
    skipped: list[str] = []
    for key, value in config.items():
        if key == "resourceLabels":
            continue
        if key in _NODE_CONFIG_SCALARS:
            nc.attr(_NODE_CONFIG_SCALARS[key], value)
        elif key in ("shieldedInstanceConfig", "workloadMetadataConfig") and isinstance(value, Mapping):
            sub = nc.block(_snake(key))
            for k, v in value.items():
                sub.attr(_snake(k), v)
        elif key == "accelerators" and isinstance(value, list):
            for a in value:
                ga = nc.block("guest_accelerator").attr("type", a.get("acceleratorType", ""))
                ga.attr("count", int(a.get("acceleratorCount", 0)))
                if a.get("gpuPartitionSize"):
                    ga.attr("gpu_partition_size", a["gpuPartitionSize"])
                driver = a.get("gpuDriverInstallationConfig") or {}
                if driver.get("gpuDriverVersion"):
                    ga.block("gpu_driver_installation_config").attr("gpu_driver_version", driver["gpuDriverVersion"])
                skipped += [f"accelerators.{k}" for k in a if k == "gpuSharingConfig"]
        elif key == "reservationAffinity" and isinstance(value, Mapping):
            sub = nc.block("reservation_affinity")
            for k, v in value.items():
                sub.attr(_snake(k), v)
        elif key == "taints" and isinstance(value, list):
            for t in value:
                nc.block("taint").attr("key", t.get("key", "")).attr("value", t.get("value", "")).attr(
                    "effect", t.get("effect", "")
                )
        else:
            skipped.append(key)
    nc.attr("resource_labels", labels)
    return skipped


def _pool_settings(b: Block, pool: Mapping[str, Any]) -> list[str]:
    """upgrade_settings and placement_policy from the copied NodePool settings; the names of the rest."""
    skipped: list[str] = []
    for key in ("upgradeSettings", "placementPolicy"):
        value = pool.get(key)
        if not isinstance(value, Mapping):
            continue
        sub = b.block(_snake(key))
        for k, v in value.items():
            if isinstance(v, Mapping | list):
                skipped.append(f"{key}.{k}")
            else:
                sub.attr(_snake(k), v)
    for key in ("queuedProvisioning", "bestEffortProvisioning", "nodeDrainConfig", "maintenancePolicy"):
        if key in pool:
            skipped.append(key)
    return skipped


def node_pool_hcl(e: Emitter, step: Step) -> None:
    """A google_container_node_pool resource, and its import block once an apply created the pool."""
    p = step.params
    pool = p["node_pool"]
    b = Block("resource", ("google_container_node_pool", tf_name(pool["name"])))
    b.attr("project", p["project"]).attr("location", p["location"]).attr("cluster", p["cluster"])
    b.attr("name", pool["name"])
    if pool.get("locations"):
        b.attr("node_locations", list(pool["locations"]))
    b.attr("initial_node_count", pool.get("initialNodeCount", 1))
    if pool.get("maxPodsConstraint"):
        b.attr("max_pods_per_node", int(pool["maxPodsConstraint"]["maxPodsPerNode"]))
    skipped = _node_config(b, pool.get("config") or {}, e.plan.plan_id)
    network = b.block("network_config").attr("pod_range", pool["networkConfig"]["podRange"])
    for k, v in pool["networkConfig"].items():
        if k == "enablePrivateNodes":
            network.attr("enable_private_nodes", v)
        elif k != "podRange":
            skipped.append(f"networkConfig.{k}")
    skipped += _pool_settings(b, pool)
    auto = pool.get("autoscaling") or {}
    if auto.get("enabled"):
        ab = b.block("autoscaling")
        for k in ("minNodeCount", "maxNodeCount", "totalMinNodeCount", "totalMaxNodeCount", "locationPolicy"):
            if k in auto:
                ab.attr(_snake(k), auto[k])
    if pool.get("management"):
        mb = b.block("management")
        for k, v in pool["management"].items():
            mb.attr(_snake(k), v)
    # GKE changes the node count as it autoscales; initial_node_count only matters at creation.
    b.block("lifecycle").attr("ignore_changes", [Expr("initial_node_count")])
    comment = step.description
    if skipped:
        comment += f"\nNot translated from the template's config (set them by hand): {', '.join(skipped)}"
    comment += "\nIts pod range must exist on the subnet first: merge the snippet above before applying."
    address = e.add(step, b, comment)
    if e.out(step.id, "node_pool"):
        path = f"projects/{p['project']}/locations/{p['location']}/clusters/{p['cluster']}/nodePools/{pool['name']}"
        e.imports.append(import_block(address, path))


# nodePools.create is authorised by container.clusters.update, nodePools.get/list by container.clusters.get
# (GKE "API permissions" reference); actAs is for the node service account the pool runs as.
CREATE_NODE_POOL = Action(
    "gke.create-node-pool",
    ("container.clusters.get", "container.clusters.update", "container.operations.get", "iam.serviceAccounts.actAs"),
    CreateNodePool,
    undo=UndoNodePool,
    undo_permissions=(
        "container.clusters.get",
        "container.clusters.update",
        "container.operations.get",
        "kubernetes: nodes list",
    ),
    hcl=node_pool_hcl,
)
