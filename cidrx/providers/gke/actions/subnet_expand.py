"""Step action `gke.expand-subnet-range`: the cluster subnet's primary range widened with
`subnetworks.expandIpCidrRange` (in the host project under Shared VPC), its executor, its refusal to be undone
and its Terraform.

GCE cannot shrink a primary range again (the Compute Engine reference of `subnetworks.expandIpCidrRange`: the
new range "can only be larger than" the old; gcloud's expand-ip-range says the change "cannot be undone"), so
the action declares `no_undo` and `cidrx rollback` refuses the whole plan before any write. The request carries
no fingerprint (discovery document, `SubnetworksExpandIpCidrRangeRequest` has only `ipCidrRange`): the executor
re-reads the subnet right before and writes only when its primary range is still the one the plan saw; GCE
itself refuses a range that does not contain the current one, so a concurrent larger expansion cannot be undone
by this one either.
"""

from __future__ import annotations

from typing import Any

from cidrx.engine.executor import Outputs, StepContext
from cidrx.errors import CloudError, StalePlan
from cidrx.model.plan import Step
from cidrx.providers.gke.actions.operations import gke_api, settle_earlier_operation, wait_operation, when_free
from cidrx.registry import Action
from cidrx.render.hcl import Block, Comment, snippet, tf_name
from cidrx.render.terraform import Emitter

EXPAND_TIMEOUT = 10 * 60.0
NO_UNDO = "a subnet's primary range cannot be shrunk again once expanded (Compute Engine subnetworks.expandIpCidrRange)"


class ExpandSubnetRange:
    def _primary(self, params: dict[str, Any], ctx: StepContext) -> str:
        subnet = gke_api(ctx).get_subnetwork(params["region"], params["subnet"], params.get("project"))
        return str(subnet.get("ipCidrRange") or "")

    def _done(self, params: dict[str, Any]) -> Outputs:
        return {"subnet": params["subnet"], "cidr": params["cidr"]}

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        return self._done(params) if self._primary(params, ctx) == params["cidr"] else None

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        settle_earlier_operation(ctx, step)
        now = self._primary(params, ctx)
        if now == params["cidr"]:
            return self._done(params)
        where = f"subnet {params['region']}/{params['subnet']}"
        if now != params["from_cidr"]:
            raise StalePlan(
                f"{where} changed since the plan was made: its primary range is now {now or 'unset'}, not "
                f"{params['from_cidr']}; make a new plan"
            )

        def expand() -> dict[str, Any]:
            return gke_api(ctx).expand_subnetwork(params["region"], params["subnet"], params["cidr"], params["project"])

        op = when_free(ctx, f"{where} to accept a change", expand)
        return {**self._done(params), "operation": op, "before": now}

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        op = outputs.get("operation")
        if op:
            wait_operation(ctx, op, f"subnet {params['subnet']} expanded to {params['cidr']}", EXPAND_TIMEOUT)

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        now = self._primary(params, ctx)
        if now != params["cidr"]:
            raise CloudError(
                f"subnet {params['region']}/{params['subnet']} has primary range {now}, not {params['cidr']}, "
                "after the expansion"
            )


def expand_subnet_hcl(e: Emitter, step: Step) -> None:
    """The new `ip_cidr_range` for the team's own google_compute_subnetwork: the Google provider expands a range
    in place when the new one contains the old (hashicorp/terraform-provider-google, resource_compute_subnetwork:
    `ForceNewIfChange("ip_cidr_range", IsShrinkageIpCidr)`), and would replace the subnet if it were set back."""
    p = step.params
    e.items.append(
        Comment(
            f"step {step.id}: {step.description}.\n"
            f'Set ip_cidr_range of your existing resource "google_compute_subnetwork" for {p["region"]}/'
            f"{p['subnet']} (project {p['project']}) to {p['cidr']}: the Google provider expands it in place. "
            f"Never set it back to {p['from_cidr']}: that is a shrink, which the provider does by destroying "
            "and re-creating the subnet (and everything in it). If the subnet is not in Terraform yet:\n"
            f"  terraform import google_compute_subnetwork.{tf_name(p['subnet'])} "
            f"projects/{p['project']}/regions/{p['region']}/subnetworks/{p['subnet']}"
        )
    )
    block = Block("resource", ("google_compute_subnetwork", tf_name(p["subnet"]))).attr("ip_cidr_range", p["cidr"])
    e.items.append(snippet(f'ip_cidr_range for google_compute_subnetwork "{p["subnet"]}"', [block]))


# subnetworks.expandIpCidrRange needs compute.subnetworks.expandIpCidrRange (Compute Engine REST reference, "IAM
# Permissions" of the method); the subnet is re-read before and after (subnetworks.get) and the region operation
# polled.
EXPAND_SUBNET_RANGE = Action(
    "gke.expand-subnet-range",
    ("compute.subnetworks.get", "compute.subnetworks.expandIpCidrRange", "compute.regionOperations.get"),
    ExpandSubnetRange,
    no_undo=NO_UNDO,
    hcl=expand_subnet_hcl,
)
