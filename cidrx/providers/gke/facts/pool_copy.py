"""The new node pool of a GKE `node-pool` plan as a faithful copy of an existing pool, and which pool to copy.

Why a module of its own: a copy that silently drops part of its template is worse than no copy (a GPU
pool without `accelerators` never schedules the GPU pods that were starving). So the copy keeps the
template's whole node configuration as collected (collect.NODE_CONFIG_KEYS, every writable NodeConfig
field), its NodePool-level settings, zones, autoscaling and management, and changes only the name, the pod
range and, when asked, the max pods; `differences` lists every way the copy differs, for the plan to show.

The template is the pool that runs the starving pods when the snapshot says so (a waiting pod pinned to
the pool by its nodeSelector, waiting on one of its nodes, or named with the pool's instance group in an
autoscaler event), otherwise the largest pool cidrx did not create. Pure: no I/O.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from cidrx.model.snapshot import Snapshot
from cidrx.providers.gke.facts.pod_ranges import pool_max_nodes
from cidrx.providers.gke.model import GkeSection, NodePool

# GCE label keys allow only [a-z0-9_-], so the plan id label is not DIGEST_TAG ("cidrx.io/plan").
PLAN_LABEL = "cidrx-plan"
# Managed instance groups of GKE node pools are named gke-<cluster>-<pool>-<hash>-grp (the instanceGroupUrls
# of every pool in gcpdiag's real dumps, GoogleCloudPlatform/gcpdiag test-data/gke1/json-dumps/
# container-clusters.json at 06ec8584ec5919df53a4e6841ad2ad74a5f045b2); cluster-autoscaler names them in
# its scale-up events.
_INSTANCE_GROUP = re.compile(r"\bgke-[a-z0-9-]+-grp\b")


def labels(pool: NodePool) -> dict[str, str]:
    """The pool's GCE resource labels (where cidrx's plan label lives)."""
    out = dict(pool.resource_labels)
    extra = pool.config.get("resourceLabels")
    if isinstance(extra, dict):
        out.update({str(k): str(v) for k, v in extra.items()})
    return out


def pools_named(gke: GkeSection, message: str) -> set[str]:
    """The node pools whose managed instance groups a cluster-autoscaler message names (gke-<cluster>-<pool>-
    <hash>-grp; the longest pool name that fits, so `default-pool-2`'s group is not also `default-pool`'s)."""
    prefixes = sorted(((f"gke-{gke.cluster.name}-{p.name}-", p.name) for p in gke.node_pools), reverse=True)
    found = set()
    for group in _INSTANCE_GROUP.findall(message):
        pool = next((name for prefix, name in prefixes if group.startswith(prefix)), None)
        if pool is not None:
            found.add(pool)
    return found


def starving_pools(snapshot: Snapshot, gke: GkeSection) -> dict[str, int]:
    """Waiting pods per node pool, counting only pods the snapshot ties to a pool."""
    pools = {p.name for p in gke.node_pools}
    node_pool = {n.name: n.pool for n in snapshot.kube.nodes if n.pool}
    mentioned: dict[tuple[str, str], set[str]] = {}
    for e in snapshot.kube.events:
        if e.kind != "Pod":
            continue
        for pool in pools_named(gke, e.message):
            mentioned.setdefault((e.namespace, e.name), set()).add(pool)
    counts: dict[str, int] = {}
    for pod in snapshot.kube.waiting_pods:
        hits = {pod.node_pool} if pod.node_pool in pools else set()
        if pod.node and node_pool.get(pod.node) in pools:
            hits.add(node_pool[pod.node])
        hits |= mentioned.get((pod.namespace, pod.name), set())
        for pool in hits:
            counts[pool] = counts.get(pool, 0) + 1
    return counts


def choose_template(snapshot: Snapshot, gke: GkeSection) -> NodePool | None:
    """The pool to copy: the one most starving pods point at; then pools cidrx did not make (re-planning
    after an apply copies the user's own pool), with most nodes, then the largest autoscaling limit."""
    if not gke.node_pools:
        return None
    starving = starving_pools(snapshot, gke)
    nodes: dict[str, int] = {}
    for n in snapshot.kube.nodes:
        nodes[n.pool] = nodes.get(n.pool, 0) + 1
    return max(
        gke.node_pools,
        key=lambda p: (
            starving.get(p.name, 0),
            PLAN_LABEL not in labels(p),
            nodes.get(p.name, 0),
            pool_max_nodes(p),
            p.name,
        ),
    )


def autoscaling_json(pool: NodePool) -> dict[str, Any]:
    a = pool.autoscaling
    if not a.enabled:
        return {}
    out: dict[str, Any] = {"enabled": True}
    if a.total_max_node_count:
        out["totalMinNodeCount"] = a.total_min_node_count
        out["totalMaxNodeCount"] = a.total_max_node_count
    else:
        out["minNodeCount"] = a.min_node_count
        out["maxNodeCount"] = a.max_node_count
    if a.location_policy:
        out["locationPolicy"] = a.location_policy
    return out


def initial_nodes(pool: NodePool) -> int:
    """Per zone: one node where the template autoscales (room for Pending pods at once), else its size."""
    a = pool.autoscaling
    if not a.enabled:
        return pool.initial_node_count
    start = max(1, a.min_node_count)
    return min(start, a.max_node_count) if a.max_node_count else start


def node_pool_json(template: NodePool, name: str, range_name: str, max_pods: int) -> dict[str, Any]:
    """REST NodePool for the new pool: the template's whole node config, settings, zones, autoscaling and
    management, with its own name, max pods and pod range. The plan-id label is added at apply time."""
    config = copy.deepcopy(template.config)
    if template.machine_type:
        config["machineType"] = template.machine_type
    resource_labels = {k: v for k, v in labels(template).items() if k != PLAN_LABEL}
    config.pop("resourceLabels", None)
    if resource_labels:
        config["resourceLabels"] = resource_labels
    settings = copy.deepcopy(template.settings or {})
    network = {**settings.pop("networkConfig", {}), "podRange": range_name}
    pool: dict[str, Any] = {
        "name": name,
        "config": config,
        "initialNodeCount": initial_nodes(template),
        "locations": list(template.locations),
        "maxPodsConstraint": {"maxPodsPerNode": max_pods},
        "networkConfig": network,
    }
    autoscaling = autoscaling_json(template)
    if autoscaling:
        pool["autoscaling"] = autoscaling
    if template.management:
        pool["management"] = dict(template.management)
    pool.update(settings)
    return pool


def differences(template: NodePool, pool: dict[str, Any], cluster_version: str = "") -> list[str]:
    """Every way the new pool differs from its template, one line each."""
    out = [
        f"name: {pool['name']} (template {template.name})",
        f"pod range: {pool['networkConfig']['podRange']} (template "
        f"{template.pod_range or template.pod_cidr or 'the cluster default range'})",
    ]
    max_pods = pool["maxPodsConstraint"]["maxPodsPerNode"]
    if max_pods != template.max_pods_per_node:
        out.append(f"max pods per node: {max_pods} (template {template.max_pods_per_node})")
    if pool["initialNodeCount"] != template.initial_node_count:
        out.append(
            f"initial nodes per zone: {pool['initialNodeCount']} (template was created with "
            f"{template.initial_node_count}; the autoscaler takes it from there)"
        )
    if template.version and template.version != cluster_version:
        plane = f"; the control plane runs {cluster_version}" if cluster_version else ""
        out.append(f"version: GKE's default for a new node pool{plane} (template runs {template.version})")
    out.append(f"resource label {PLAN_LABEL}=<plan id> added (how cidrx finds its own pool again)")
    for key in template.config_not_copied or ():
        out.append(f"node config field {key} not copied: cidrx does not know it; set it by hand if it matters")
    return out
