"""Step action `gke.add-cluster-pod-ranges`: the new range added to the cluster's additional pod ranges
(multi-pod CIDR, from which GKE serves node pools created afterwards), its executor, its undo and its Terraform.

The executor re-reads the cluster's list on every attempt, so a queued or repeated run adds nothing twice; the
undo removes only names the plan added (not listed when the plan was made) once no pod has an address in the
range. The Terraform is a snippet for the team's own cluster resource: a partial copy of it could replace it.
"""

from __future__ import annotations

from typing import Any

from cidrx.engine.executor import Outputs, StepContext
from cidrx.errors import CloudError
from cidrx.model.plan import Step
from cidrx.providers.gke.actions.operations import (
    cluster_api,
    gke_api,
    no_cluster,
    pods_in,
    settle_earlier_operation,
    until_gone,
    wait_operation,
    when_free,
)
from cidrx.registry import Action
from cidrx.render.hcl import Block, Comment, snippet
from cidrx.render.terraform import Emitter

CLUSTER_TIMEOUT = 30 * 60.0


def cluster_pod_ranges(cluster: dict[str, Any]) -> list[str]:
    """The additional pod range names of a REST Cluster."""
    policy = cluster.get("ipAllocationPolicy") or {}
    return list((policy.get("additionalPodRangesConfig") or {}).get("podRangeNames") or [])


class AddClusterPodRanges:
    def _missing(self, params: dict[str, Any], ctx: StepContext) -> list[str]:
        have = set(cluster_pod_ranges(gke_api(ctx).get_cluster(params["cluster"])))
        return [n for n in params["range_names"] if n not in have]

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        return None if self._missing(params, ctx) else {"range_names": list(params["range_names"])}

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        settle_earlier_operation(ctx, step)

        def update() -> dict[str, Any]:
            # Re-read on every attempt: while we waited, the queued operation may have added them.
            missing = self._missing(params, ctx)
            if not missing:
                return {}
            return gke_api(ctx).add_cluster_pod_ranges(params["cluster"], missing)

        op = when_free(ctx, f"cluster {params['cluster']} to accept new pod ranges", update)
        outputs: Outputs = {"range_names": list(params["range_names"])}
        return {**outputs, "operation": op} if op else outputs

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        op = outputs.get("operation")
        if op:
            what = f"adding pod ranges {', '.join(params['range_names'])} to cluster {params['cluster']}"
            wait_operation(ctx, op, what, CLUSTER_TIMEOUT)

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        missing = self._missing(params, ctx)
        if missing:
            raise CloudError(f"cluster {params['cluster']} does not list pod range(s) {', '.join(missing)}")


class UndoClusterPodRanges:
    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        before = set(ctx.plan.basis.get("cluster_pod_ranges") or [])
        listed = set(cluster_pod_ranges(gke_api(ctx).get_cluster(params["cluster"])))
        ours = [n for n in params["range_names"] if n in listed and n not in before]
        return {"range_names": ours} if ours else None

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        if cluster_api(ctx) is None:
            return no_cluster(f"pod range(s) {', '.join(found['range_names'])}")
        cidr = ctx.plan.basis.get("cidr")
        pods = pods_in(ctx, cidr) if cidr else []
        if pods:
            return f"{len(pods)} pod(s) have addresses in {cidr} ({', '.join(pods[:3])})"
        return None

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        return f"remove {', '.join(found['range_names'])} from cluster {params['cluster']}'s additional pod ranges"

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        op = when_free(
            ctx,
            f"cluster {params['cluster']} to accept the removal of pod ranges",
            lambda: gke_api(ctx).remove_cluster_pod_ranges(params["cluster"], list(found["range_names"])),
        )
        return {"range_names": list(found["range_names"]), "operation": op}

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        what = f"removal of pod ranges from cluster {params['cluster']}"
        until_gone(self, step, params, outputs, ctx, what, CLUSTER_TIMEOUT)


def cluster_pod_ranges_hcl(e: Emitter, step: Step) -> None:
    """A snippet for the team's own google_container_cluster: its pod range names with the new one."""
    p = step.params
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


ADD_CLUSTER_POD_RANGES = Action(
    "gke.add-cluster-pod-ranges",
    ("container.clusters.get", "container.clusters.update", "container.operations.get"),
    AddClusterPodRanges,
    undo=UndoClusterPodRanges,
    undo_permissions=(
        "container.clusters.get",
        "container.clusters.update",
        "container.operations.get",
        "kubernetes: pods list",
    ),
    hcl=cluster_pod_ranges_hcl,
)
