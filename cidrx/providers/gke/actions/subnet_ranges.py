"""Step action `gke.add-secondary-range`: a new secondary range on the cluster's subnet (in the host project
under Shared VPC), its executor, its undo and its Terraform.

The executor asks the cloud first whether the range is there with its CIDR, so a crashed or repeated apply
converges without duplicates. The subnet is patched with the fingerprint it was read with; when GCE answers
412 the subnet is read again and the patch retried only if what the plan relied on (its existing ranges, free
room for the new CIDR) still holds. The undo removes the range only when it has the very name and CIDR the plan
gave it and was not there when the plan was made (GCE ranges carry no labels), and nothing uses it: node pools
or the cluster's pod ranges that name it, pods with an address in it. That needs the cluster, so a GKE rollback
with --no-kube refuses (GCE refuses removing a range in use too, but only after earlier undos ran: a half-done
rollback is worse than none).
"""

from __future__ import annotations

from typing import Any

from cidrx import netmath
from cidrx.engine.executor import Outputs, StepContext
from cidrx.errors import CloudError, StalePlan
from cidrx.model.plan import Step
from cidrx.providers.gke.actions.cluster_ranges import ADD_CLUSTER_POD_RANGES, cluster_pod_ranges
from cidrx.providers.gke.actions.node_pool import pool_labels
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
from cidrx.providers.gke.facts.pool_copy import PLAN_LABEL
from cidrx.registry import Action
from cidrx.render.hcl import Block, Comment, snippet
from cidrx.render.terraform import Emitter

FINGERPRINT_RETRIES = 3
SUBNET_TIMEOUT = 10 * 60.0


def _ranges(subnet: dict[str, Any]) -> dict[str, str]:
    return {str(r.get("rangeName")): str(r.get("ipCidrRange")) for r in subnet.get("secondaryIpRanges") or []}


def _basis_problem(subnet: dict[str, Any], params: dict[str, Any], ctx: StepContext) -> str | None:
    """Why the plan no longer fits this subnet (None: it still does).

    It does when every secondary range the plan saw is still there with its CIDR and nothing in the
    subnet overlaps the new CIDR now.
    """
    have = _ranges(subnet)
    seen: dict[str, str] = dict(ctx.plan.basis.get("subnet_ranges") or {})
    for name, cidr in seen.items():
        if name not in have:
            return f"secondary range {name} ({cidr}) was removed"
        if have[name] != cidr:
            return f"secondary range {name} changed from {cidr} to {have[name]}"
    new = netmath.parse_cidr(params["cidr"])
    for name, cidr in have.items():
        if name == params["range_name"]:
            continue
        if netmath.overlaps(new, netmath.parse_cidr(cidr)):
            return f"secondary range {name} ({cidr}) now overlaps {params['cidr']}"
    primary = subnet.get("ipCidrRange")
    if primary and netmath.overlaps(new, netmath.parse_cidr(str(primary))):
        return f"the subnet's primary range {primary} overlaps {params['cidr']}"
    return None


class AddSecondaryRange:
    def _subnet(self, params: dict[str, Any], ctx: StepContext) -> dict[str, Any]:
        return gke_api(ctx).get_subnetwork(params["region"], params["subnet"], params.get("project"))

    def _found(self, subnet: dict[str, Any], params: dict[str, Any]) -> Outputs | None:
        have = _ranges(subnet).get(params["range_name"])
        if have is None:
            return None
        if have != params["cidr"]:
            raise StalePlan(
                f"subnet {params['region']}/{params['subnet']} already has a secondary range "
                f"{params['range_name']} with {have}, not {params['cidr']}; make a new plan"
            )
        return {"range_name": params["range_name"], "cidr": params["cidr"]}

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        return self._found(self._subnet(params, ctx), params)

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        from cidrx.providers.gke.api import StaleFingerprint

        settle_earlier_operation(ctx, step)
        where = f"subnet {params['region']}/{params['subnet']}"
        for _ in range(FINGERPRINT_RETRIES + 1):
            subnet = self._subnet(params, ctx)
            found = self._found(subnet, params)
            if found is not None:  # written meanwhile (e.g. by an earlier run's operation that finished)
                return found
            problem = _basis_problem(subnet, params, ctx)
            if problem is not None:
                raise StalePlan(f"{where} changed since the plan was made: {problem}; make a new plan")
            ranges = [
                {"rangeName": r["rangeName"], "ipCidrRange": r["ipCidrRange"]}
                for r in subnet.get("secondaryIpRanges") or []
            ]
            ranges.append({"rangeName": params["range_name"], "ipCidrRange": params["cidr"]})
            fingerprint = str(subnet.get("fingerprint") or "")

            def patch(fp: str = fingerprint, full: list[dict[str, Any]] = ranges) -> dict[str, Any]:
                return gke_api(ctx).patch_subnetwork_secondary_ranges(
                    params["region"], params["subnet"], fp, full, params.get("project")
                )

            try:
                op = when_free(ctx, f"{where} to accept a change", patch)
            except StaleFingerprint:
                # Someone else changed the subnet between our read and our patch (GCE 412, docs/cloud-facts.md):
                # read again.
                continue
            return {"range_name": params["range_name"], "cidr": params["cidr"], "operation": op}
        raise CloudError(f"{where} kept changing under us ({FINGERPRINT_RETRIES + 1} stale fingerprints); run again")

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        op = outputs.get("operation")
        if op:
            what = f"secondary range {params['range_name']} on subnet {params['subnet']}"
            wait_operation(ctx, op, what, SUBNET_TIMEOUT)

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        if self.check(step, params, ctx) is None:
            raise CloudError(
                f"subnet {params['region']}/{params['subnet']} has no secondary range "
                f"{params['range_name']} {params['cidr']} after the patch"
            )


class UndoSecondaryRange:
    def _subnet(self, params: dict[str, Any], ctx: StepContext) -> dict[str, Any]:
        return gke_api(ctx).get_subnetwork(params["region"], params["subnet"])

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
            for p in gke_api(ctx).list_node_pools(cluster_name)
            if (p.get("networkConfig") or {}).get("podRange") == name and pool_labels(p).get(PLAN_LABEL) != ctx.plan_id
        ]
        cluster = gke_api(ctx).get_cluster(cluster_name)
        planned = any(s.action == ADD_CLUSTER_POD_RANGES.name for s in ctx.plan.steps)
        if name in cluster_pod_ranges(cluster) and not planned:
            users.append(f"cluster {cluster_name}'s pod ranges")
        if users:
            return f"secondary range {name} is used by {', '.join(users)}"
        if cluster_api(ctx) is None:
            return no_cluster(f"secondary range {name}")
        pods = pods_in(ctx, params["cidr"])
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
                return gke_api(ctx).patch_subnetwork_secondary_ranges(params["region"], params["subnet"], fp, full)

            try:
                op = when_free(ctx, f"{where} to accept a change", patch)
            except StaleFingerprint:  # changed between our read and our patch: read again
                continue
            return {"range_name": params["range_name"], "operation": op}
        raise CloudError(f"{where} kept changing under us ({FINGERPRINT_RETRIES + 1} stale fingerprints); run again")

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        what = f"removal of secondary range {params['range_name']}"
        until_gone(self, step, params, outputs, ctx, what, SUBNET_TIMEOUT)


def secondary_range_hcl(e: Emitter, step: Step) -> None:
    """A snippet to merge into the team's own subnetwork resource (Terraform manages its ranges as one list)."""
    p = step.params
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


ADD_SECONDARY_RANGE = Action(
    "gke.add-secondary-range",
    ("compute.subnetworks.get", "compute.subnetworks.update", "compute.regionOperations.get"),
    AddSecondaryRange,
    undo=UndoSecondaryRange,
    undo_permissions=(
        "compute.subnetworks.get",
        "compute.subnetworks.update",
        "compute.regionOperations.get",
        "container.clusters.get",
        "kubernetes: pods list",
    ),
    hcl=secondary_range_hcl,
)
