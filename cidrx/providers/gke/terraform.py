"""Terraform for GKE plans (node-pool, cluster-range): google_* resources and snippets to merge, split into
a host-project part and a service-project part under Shared VPC. Lives beside the GKE planner (reached as
`emit` through the registry); the HCL itself is written by cidrx.render.hcl."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from cidrx.errors import InvalidInput
from cidrx.model.plan import Step
from cidrx.providers.gke.plan import (
    ADD_CLUSTER_POD_RANGES,
    ADD_FIREWALL_RANGE,
    ADD_IP_MASQ_CIDR,
    ADD_SECONDARY_RANGE,
    CREATE_NODE_POOL,
)
from cidrx.render.hcl import Block, Comment, Expr, import_block, snippet, tf_name
from cidrx.render.terraform import Emitter

GKE_PLAN_LABEL = "cidrx-plan"  # as cidrx.providers.gke.plan.PLAN_LABEL: GCE label keys allow no dots or slashes


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
    labels = {**(config.get("resourceLabels") or {}), GKE_PLAN_LABEL: plan_id}
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


def _node_pool(e: Emitter, step: Step) -> None:
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


def _project_part(e: Emitter, step: Step, done: set[str]) -> None:
    """Under Shared VPC the plan touches two projects, usually two Terraform configurations with different
    owners: mark where each part starts (the host network's subnet, then the service project's cluster)."""
    host = e.plan.basis.get("network_project")
    if not host:
        return
    part = "host" if step.action == ADD_SECONDARY_RANGE.name else "service"
    if part in done:
        return
    done.add(part)
    if part == "host":
        e.items.append(
            Comment(
                f"===== Part 1 of 2: Shared VPC HOST project {host} =====\n"
                "Goes into the Terraform that manages the shared network (applied by the host project's network "
                "admin). Apply it before part 2."
            )
        )
    else:
        e.items.append(
            Comment(
                f"===== Part 2 of 2: SERVICE project {step.params.get('project', '')} =====\n"
                "Goes into the Terraform that manages the cluster. Apply it after part 1."
            )
        )


def emit(e: Emitter) -> None:
    parts: set[str] = set()
    for step in e.plan.steps:
        p = step.params
        _project_part(e, step, parts)
        if step.action == ADD_SECONDARY_RANGE.name:
            block = Block("secondary_ip_range").attr("range_name", p["range_name"]).attr("ip_cidr_range", p["cidr"])
            existing = e.plan.basis.get("subnet_ranges") or {}
            listed = ", ".join(f"{n} {c}" for n, c in existing.items()) or "none"
            e.items.append(
                Comment(
                    f"step {step.id}: {step.description}.\n"
                    f"Terraform manages a subnetwork's secondary ranges as one list: add this block to your existing "
                    f'resource "google_compute_subnetwork" for {p["region"]}/{p["subnet"]} (project {p["project"]}), '
                    f"next to the ranges it already lists ({listed}). Until you do, `terraform apply` on that "
                    "resource removes the range, and with it the pod addresses of every node that uses it. "
                    "If the subnet is not in Terraform yet:\n"
                    f"  terraform import google_compute_subnetwork.<name> "
                    f"projects/{p['project']}/regions/{p['region']}/subnetworks/{p['subnet']}"
                )
            )
            e.items.append(snippet(f'secondary_ip_range for google_compute_subnetwork "{p["subnet"]}"', [block]))
        elif step.action == CREATE_NODE_POOL.name:
            _node_pool(e, step)
        elif step.action == ADD_IP_MASQ_CIDR.name:
            cidrs = ", ".join([*p["seen"], p["cidr"]])
            e.items.append(
                Comment(
                    f"step {step.id}: {step.description}.\n"
                    f"In ConfigMap {p['namespace']}/{p['name']}, key {p['key']}, set nonMasqueradeCIDRs to: {cidrs}. "
                    "If Terraform does not manage that ConfigMap, apply the step with cidrx instead."
                )
            )
        elif step.action == ADD_FIREWALL_RANGE.name:
            attr = "destination_ranges" if p["field"] == "destinationRanges" else "source_ranges"
            e.items.append(
                Comment(
                    f"step {step.id}: {step.description}.\n"
                    f'Set {attr} of your existing resource "google_compute_firewall" for {p["firewall"]} '
                    f"(project {p['project']}) to this list. If the rule is not in Terraform (GKE's own rules "
                    "are not), apply the step with cidrx instead."
                )
            )
            e.items.append(
                snippet(
                    f'{attr} for google_compute_firewall "{p["firewall"]}"',
                    [
                        Block("resource", ("google_compute_firewall", tf_name(p["firewall"]))).attr(
                            attr, [*p["seen"], p["cidr"]]
                        )
                    ],
                )
            )
        elif step.action == ADD_CLUSTER_POD_RANGES.name:
            names = list(p["range_names"])
            existing = list(e.plan.basis.get("cluster_pod_ranges") or [])
            policy = Block("ip_allocation_policy")
            policy.comment("keep the attributes your ip_allocation_policy block already has")
            policy.block("additional_pod_ranges_config").attr("pod_range_names", [*existing, *names])
            e.items.append(
                Comment(
                    f"step {step.id}: {step.description}.\n"
                    "Terraform manages the cluster as one resource: add this to your existing resource "
                    f'"google_container_cluster" for {p["cluster"]} ({p["location"]}, project {p["project"]}); a '
                    "partial copy of the cluster here could replace it. Until you do, `terraform apply` on the "
                    "cluster removes the range from it."
                )
            )
            e.items.append(snippet(f'ip_allocation_policy for google_container_cluster "{p["cluster"]}"', [policy]))
        else:
            raise InvalidInput(f"plan step {step.id} ({step.action}) has no Terraform equivalent in cidrx")
