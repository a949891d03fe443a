"""Step action `gke.add-firewall-range`: the new pod range added to a VPC firewall rule that names the pod
ranges (facts.firewalls decides which), its executor, its undo and its Terraform.

compute v1 Firewall has no fingerprint (discovery document, schema Firewall; unlike Subnetwork), so the API
offers no guard against a concurrent writer: the rule is re-read right before the patch and patched only if its
ranges are still the ones the plan saw, and read again after to check nothing was lost. The undo removes exactly
the planned CIDR, and only when the plan added it.
"""

from __future__ import annotations

from typing import Any

from cidrx.engine.executor import Outputs, StepContext
from cidrx.errors import CloudError
from cidrx.model.plan import Step
from cidrx.providers.gke.actions.operations import gke_api, settle_earlier_operation, until_gone, wait_operation
from cidrx.providers.gke.actions.range_lists import added_by_plan, already_or_unchanged, covered
from cidrx.registry import Action
from cidrx.render.hcl import Block, Comment, snippet, tf_name
from cidrx.render.terraform import Emitter

FIREWALL_TIMEOUT = 5 * 60.0


class AddFirewallRange:
    def _ranges(self, params: dict[str, Any], ctx: StepContext) -> list[str]:
        rule = gke_api(ctx).get_firewall(params["firewall"], params["project"])
        return [str(r) for r in rule.get(params["field"]) or []]

    def _done(self, params: dict[str, Any]) -> Outputs:
        return {"firewall": params["firewall"], "cidr": params["cidr"]}

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        return self._done(params) if covered(self._ranges(params, ctx), params["cidr"]) else None

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        settle_earlier_operation(ctx, step)
        name = params["firewall"]
        now = self._ranges(params, ctx)
        if already_or_unchanged(now, params, f"firewall rule {name}", params["field"]):
            return self._done(params)
        op = gke_api(ctx).patch_firewall_ranges(name, params["field"], [*now, params["cidr"]], params["project"])
        return {**self._done(params), "operation": op, "before": now}

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        op = outputs.get("operation")
        if op:
            wait_operation(ctx, op, f"firewall rule {params['firewall']} to allow {params['cidr']}", FIREWALL_TIMEOUT)

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        now = self._ranges(params, ctx)
        if not covered(now, params["cidr"]):
            raise CloudError(f"firewall rule {params['firewall']} does not cover {params['cidr']} after the patch")
        lost = [r for r in outputs.get("before") or [] if r not in now]
        if lost:
            raise CloudError(
                f"firewall rule {params['firewall']} lost {', '.join(lost)} while cidrx patched it (someone else "
                "wrote it at the same time; firewall rules have no fingerprint): add them back by hand"
            )


class UndoFirewallRange:
    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        now = AddFirewallRange()._ranges(params, ctx)
        return {"firewall": params["firewall"], "cidr": params["cidr"]} if added_by_plan(now, params) else None

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        return None

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        return f"remove {params['cidr']} from firewall rule {params['firewall']}'s {params['field']}"

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        settle_earlier_operation(ctx, step)
        # Firewall rules have no fingerprint: read right before the patch, write the full list without the
        # planned CIDR, and let `wait` confirm it is gone (a concurrent writer may still race this one read).
        now = AddFirewallRange()._ranges(params, ctx)
        if not added_by_plan(now, params):
            return {"firewall": params["firewall"]}
        kept = [r for r in now if r != params["cidr"]]
        op = gke_api(ctx).patch_firewall_ranges(params["firewall"], params["field"], kept, params["project"])
        return {"firewall": params["firewall"], "operation": op}

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        what = f"firewall rule {params['firewall']} without {params['cidr']}"
        until_gone(self, step, params, outputs, ctx, what, FIREWALL_TIMEOUT)


def firewall_range_hcl(e: Emitter, step: Step) -> None:
    """The rule's new list of ranges, for the team's own google_compute_firewall resource."""
    p = step.params
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


# firewalls.patch needs compute.firewalls.update and, on the rule's network, compute.networks.updatePolicy
# (Compute Engine IAM reference of firewalls.patch); the rule is re-read before the patch (firewalls.get).
ADD_FIREWALL_RANGE = Action(
    "gke.add-firewall-range",
    (
        "compute.firewalls.get",
        "compute.firewalls.update",
        "compute.networks.updatePolicy",
        "compute.globalOperations.get",
    ),
    AddFirewallRange,
    undo=UndoFirewallRange,
    undo_permissions=(
        "compute.firewalls.get",
        "compute.firewalls.update",
        "compute.networks.updatePolicy",
        "compute.globalOperations.get",
    ),
    hcl=firewall_range_hcl,
)
