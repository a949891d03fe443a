"""How `cidrx rollback` takes back each GKE step action (cidrx.engine.undo.Undo), declared beside the executors.

A node pool is the plan's when it carries the plan's label; a secondary range or a cluster pod range when it
has the very name and CIDR the plan gave it and was not there when the plan was made (GCE ranges carry no
labels). The subnet is patched with the fingerprint it was read with, leaving every other range as it is.
"In use" is decided here, before anything is removed, from the cluster: nodes of the pool, pods with an
address in the range, node pools or the cluster's pod ranges that still name it. It needs the cluster, so a
GKE rollback with --no-kube refuses (the fake GCP refuses removing a range in use, GCE too, but only after
earlier undos ran: a half-done rollback is worse than none).
"""

from __future__ import annotations

from typing import Any

from cidrx.engine.executor import Outputs, StepContext
from cidrx.errors import CloudError
from cidrx.model.plan import Step
from cidrx.providers.gke.pool_copy import PLAN_LABEL
from cidrx.providers.gke.steps import (
    CLUSTER_TIMEOUT,
    FINGERPRINT_RETRIES,
    FIREWALL_TIMEOUT,
    NODE_POOL_TIMEOUT,
    SUBNET_TIMEOUT,
    AddFirewallRange,
    AddIpMasqCidr,
    CreateNodePool,
    _cluster_pod_ranges,
    _gke,
    _labels,
    _ranges,
    _settle_earlier_operation,
    _wait_operation,
    _when_free,
)

POOL_LABEL = "cloud.google.com/gke-nodepool"  # the label GKE puts on every node of a pool


def _kube(ctx: StepContext) -> Any:
    return ctx.apis.kube


def _no_cluster(what: str) -> str:
    return f"cannot see whether {what} is in use without cluster access (drop --no-kube, or pass --kubeconfig)"


def _pods_in(ctx: StepContext, cidr: str) -> list[str]:
    pods: list[str] = _kube(ctx).pods_in(cidr)
    return pods


def _until_gone(
    undo: Any, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext, what: str, timeout: float
) -> None:
    """Wait for the operation the undo started, then until its `find` sees nothing left."""
    if outputs.get("operation"):
        _wait_operation(ctx, outputs["operation"], what, timeout)
    ctx.wait_until(
        what,
        lambda: True if undo.find(step, params, ctx) is None else None,
        timeout=timeout,
        interval=2.0,
        max_interval=15.0,
    )


class UndoNodePool:
    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        pool = CreateNodePool()._find(params, ctx)
        if pool is None or _labels(pool).get(PLAN_LABEL) != ctx.plan_id:
            return None
        return {"node_pool": pool["name"], "status": str(pool.get("status") or "")}

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        name = found["node_pool"]
        if _kube(ctx) is None:
            return _no_cluster(f"node pool {name}")
        nodes = sorted(
            n["metadata"]["name"]
            for n in _kube(ctx).iter_nodes()
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
        op = _when_free(
            ctx,
            f"cluster {params['cluster']} to accept the deletion of node pool {found['node_pool']}",
            lambda: _gke(ctx).delete_node_pool(params["cluster"], found["node_pool"]),
        )
        return {"node_pool": found["node_pool"], "operation": op}

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        what = f"deletion of node pool {outputs['node_pool']}"
        _until_gone(self, step, params, outputs, ctx, what, NODE_POOL_TIMEOUT)


class UndoSecondaryRange:
    def _subnet(self, params: dict[str, Any], ctx: StepContext) -> dict[str, Any]:
        return _gke(ctx).get_subnetwork(params["region"], params["subnet"])

    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        if params["range_name"] in (ctx.plan.basis.get("subnet_ranges") or {}):
            return None  # there before the plan: not the plan's to remove
        have = _ranges(self._subnet(params, ctx)).get(params["range_name"])
        if have != params["cidr"]:
            return None
        return {"range_name": params["range_name"], "cidr": params["cidr"]}

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        name, cluster_name = params["range_name"], ctx.plan.target.cluster
        users = [
            f"node pool {p.get('name')}"
            for p in _gke(ctx).list_node_pools(cluster_name)
            if (p.get("networkConfig") or {}).get("podRange") == name and _labels(p).get(PLAN_LABEL) != ctx.plan_id
        ]
        cluster = _gke(ctx).get_cluster(cluster_name)
        planned = any(s.action == "gke.add-cluster-pod-ranges" for s in ctx.plan.steps)
        if name in _cluster_pod_ranges(cluster) and not planned:
            users.append(f"cluster {cluster_name}'s pod ranges")
        if users:
            return f"secondary range {name} is used by {', '.join(users)}"
        if _kube(ctx) is None:
            return _no_cluster(f"secondary range {name}")
        pods = _pods_in(ctx, params["cidr"])
        if pods:
            return f"{len(pods)} pod(s) have addresses in {name} {params['cidr']} ({', '.join(pods[:3])})"
        return None

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        return f"remove secondary range {params['range_name']} {params['cidr']} from subnet {params['subnet']}"

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        from cidrx.providers.gke.api import StaleFingerprint

        where = f"subnet {params['region']}/{params['subnet']}"
        for _ in range(FINGERPRINT_RETRIES + 1):
            subnet = self._subnet(params, ctx)
            if _ranges(subnet).get(params["range_name"]) != params["cidr"]:
                return {"range_name": params["range_name"]}
            ranges = [
                {"rangeName": r["rangeName"], "ipCidrRange": r["ipCidrRange"]}
                for r in subnet.get("secondaryIpRanges") or []
                if r.get("rangeName") != params["range_name"]
            ]
            fingerprint = str(subnet.get("fingerprint") or "")

            def patch(fp: str = fingerprint, full: list[dict[str, Any]] = ranges) -> dict[str, Any]:
                return _gke(ctx).patch_subnetwork_secondary_ranges(params["region"], params["subnet"], fp, full)

            try:
                op = _when_free(ctx, f"{where} to accept a change", patch)
            except StaleFingerprint:  # changed between our read and our patch: read again
                continue
            return {"range_name": params["range_name"], "operation": op}
        raise CloudError(f"{where} kept changing under us ({FINGERPRINT_RETRIES + 1} stale fingerprints); run again")

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        what = f"removal of secondary range {params['range_name']}"
        _until_gone(self, step, params, outputs, ctx, what, SUBNET_TIMEOUT)


class UndoClusterPodRanges:
    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        before = set(ctx.plan.basis.get("cluster_pod_ranges") or [])
        listed = set(_cluster_pod_ranges(_gke(ctx).get_cluster(params["cluster"])))
        ours = [n for n in params["range_names"] if n in listed and n not in before]
        return {"range_names": ours} if ours else None

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        if _kube(ctx) is None:
            return _no_cluster(f"pod range(s) {', '.join(found['range_names'])}")
        cidr = ctx.plan.basis.get("cidr")
        pods = _pods_in(ctx, cidr) if cidr else []
        if pods:
            return f"{len(pods)} pod(s) have addresses in {cidr} ({', '.join(pods[:3])})"
        return None

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        return f"remove {', '.join(found['range_names'])} from cluster {params['cluster']}'s additional pod ranges"

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        op = _when_free(
            ctx,
            f"cluster {params['cluster']} to accept the removal of pod ranges",
            lambda: _gke(ctx).remove_cluster_pod_ranges(params["cluster"], list(found["range_names"])),
        )
        return {"range_names": list(found["range_names"]), "operation": op}

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        what = f"removal of pod ranges from cluster {params['cluster']}"
        _until_gone(self, step, params, outputs, ctx, what, CLUSTER_TIMEOUT)


# The list-widening steps (a firewall rule's ranges, ip-masq-agent's nonMasqueradeCIDRs) are taken back by
# removing exactly the planned CIDR, and only when it was not in the list the plan saw (`seen`): a range someone
# else had listed stays. Nothing "uses" a list entry; pods in the range hold the secondary range's undo back,
# and every undo is checked before the first one runs.


def _ours(now: list[str], params: dict[str, Any]) -> bool:
    return params["cidr"] in now and params["cidr"] not in params["seen"]


class UndoFirewallRange:
    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        now = AddFirewallRange()._ranges(params, ctx)
        return {"firewall": params["firewall"], "cidr": params["cidr"]} if _ours(now, params) else None

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        return None

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        return f"remove {params['cidr']} from firewall rule {params['firewall']}'s {params['field']}"

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        _settle_earlier_operation(ctx, step)
        # Firewall rules have no fingerprint: read right before the patch, write the full list without the
        # planned CIDR, and let `wait` confirm it is gone (a concurrent writer may still race this one read).
        now = AddFirewallRange()._ranges(params, ctx)
        if not _ours(now, params):
            return {"firewall": params["firewall"]}
        kept = [r for r in now if r != params["cidr"]]
        op = _gke(ctx).patch_firewall_ranges(params["firewall"], params["field"], kept, params["project"])
        return {"firewall": params["firewall"], "operation": op}

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        what = f"firewall rule {params['firewall']} without {params['cidr']}"
        _until_gone(self, step, params, outputs, ctx, what, FIREWALL_TIMEOUT)


class UndoIpMasqCidr:
    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        adder = AddIpMasqCidr()
        cm = _kube(ctx).get_custom("", "v1", "configmaps", params["name"], params["namespace"])
        if cm is None:
            return None
        cidrs, _ = adder._cidrs(cm, params)
        return {"config_map": f"{params['namespace']}/{params['name']}"} if _ours(cidrs, params) else None

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        return None if _kube(ctx) is not None else _no_cluster(f"ConfigMap {found['config_map']}")

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        return f"remove {params['cidr']} from nonMasqueradeCIDRs of ConfigMap {found['config_map']}"

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        return AddIpMasqCidr().patch({**params, "remove": True}, ctx, lambda cidrs: not _ours(cidrs, params))

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        return None  # the patch is the change; find() sees it at once
