"""The cluster-config action: give the EKS control plane more subnets (UpdateClusterConfig with the cluster's
whole subnet list), with its executor (which waits for the update), its undo (the recorded list back) and its
Terraform (a snippet for the team's own aws_eks_cluster: a partial copy of the cluster could replace it).

EKS API reference: UpdateClusterConfig takes `resourcesVpcConfig.subnetIds` (the full list; subnets must be in
the Availability Zones the cluster was created with) and `securityGroupIds`, and returns an update of type
`VpcConfigUpdate` to poll with DescribeUpdate. No resource is created, so there is nothing to tag: rollback
puts back the list the journal recorded before the change (else the plan's basis).
"""

from __future__ import annotations

from typing import Any

from cidrx.engine.executor import Outputs, StepContext
from cidrx.errors import CloudError
from cidrx.model.plan import Step
from cidrx.providers.eks.actions.context import SHORT_TIMEOUT, eks_api, recorded_before
from cidrx.registry import Action
from cidrx.render.hcl import Block, Comment, snippet
from cidrx.render.terraform import Emitter

# A VPC config update replaces the control plane's network interfaces: minutes, not seconds.
UPDATE_TIMEOUT = SHORT_TIMEOUT * 6


def _vpc_config(params: dict[str, Any], ctx: StepContext) -> tuple[list[str], list[str], str]:
    """(subnetIds, securityGroupIds, status) of the cluster now."""
    cluster = eks_api(ctx).describe_cluster(params["cluster"])
    cfg = cluster.get("resourcesVpcConfig") or {}
    return (
        [str(s) for s in cfg.get("subnetIds") or ()],
        [str(g) for g in cfg.get("securityGroupIds") or ()],
        str(cluster.get("status") or "ACTIVE"),
    )


def _wait_update(ctx: StepContext, cluster: str, update_id: str, what: str) -> None:
    def probe() -> bool | None:
        update = eks_api(ctx).describe_update(cluster, update_id)
        status = update.get("status")
        if status in ("Failed", "Cancelled"):
            errors = "; ".join(str(e.get("errorMessage", "")) for e in update.get("errors") or [])
            raise CloudError(f"cluster update {update_id} ({what}) {status}: {errors or 'no detail'}")
        return True if status == "Successful" else None

    ctx.wait_until(f"cluster {cluster} update ({what})", probe, timeout=UPDATE_TIMEOUT, interval=15.0)


def _wait_active(ctx: StepContext, params: dict[str, Any], what: str) -> None:
    def active() -> bool | None:
        status = _vpc_config(params, ctx)[2]
        if status == "FAILED":
            raise CloudError(f"cluster {params['cluster']} is FAILED after {what}")
        return True if status == "ACTIVE" else None

    ctx.wait_until(f"cluster {params['cluster']} to be ACTIVE ({what})", active, timeout=UPDATE_TIMEOUT, interval=15.0)


class UpdateClusterSubnets:
    def before(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        """The cluster's subnet list before the change, for `cidrx rollback`."""
        return {"before": {"subnet_ids": _vpc_config(params, ctx)[0]}}

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        subnets, _groups, status = _vpc_config(params, ctx)
        if set(subnets) != set(params["subnet_ids"]):
            return None
        if status == "UPDATING":  # a rerun after a crash right after the update: wait as the first run would
            _wait_active(ctx, params, "adding subnets")
        return {"subnet_ids": subnets}

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        subnets, groups, _status = _vpc_config(params, ctx)
        if set(subnets) != set(params["previous"]):
            raise CloudError(
                f"cluster {params['cluster']} now has subnets {', '.join(subnets)}, not the ones this plan was made "
                "against; make a new plan"
            )
        update_id = eks_api(ctx).update_cluster_subnets(params["cluster"], params["subnet_ids"], groups)
        return {"update_id": update_id}

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        if "update_id" in outputs:
            _wait_update(ctx, params["cluster"], outputs["update_id"], "adding subnets")
        _wait_active(ctx, params, "adding subnets")

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        subnets = _vpc_config(params, ctx)[0]
        if set(subnets) != set(params["subnet_ids"]):
            raise CloudError(f"cluster {params['cluster']} has subnets {', '.join(subnets)}, not the planned ones")


class UndoClusterSubnets:
    def _before(self, step: Step, params: dict[str, Any], ctx: StepContext) -> list[str]:
        recorded = recorded_before(step, ctx)
        if recorded is not None and recorded.get("subnet_ids"):
            return [str(s) for s in recorded["subnet_ids"]]
        return [str(s) for s in params["previous"]]

    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        subnets = _vpc_config(params, ctx)[0]
        before = self._before(step, params, ctx)
        if set(subnets) == set(before):
            return None  # never applied, or already put back
        return {"subnet_ids": subnets, "restore": before}

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        if set(found["subnet_ids"]) != set(params["subnet_ids"]):
            return (
                f"cluster {params['cluster']} subnets changed since the apply ({', '.join(found['subnet_ids'])}); "
                "set them back by hand"
            )
        return None

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        return f"set the subnets of cluster {params['cluster']} back to {', '.join(found['restore'])}"

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        groups = _vpc_config(params, ctx)[1]
        update_id = eks_api(ctx).update_cluster_subnets(params["cluster"], found["restore"], groups)
        return {"update_id": update_id}

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        _wait_update(ctx, params["cluster"], outputs["update_id"], "restoring subnets")
        _wait_active(ctx, params, "restoring subnets")


def _cluster_subnets_hcl(e: Emitter, step: Step) -> None:
    """A snippet for the team's own aws_eks_cluster: its vpc_config with the added subnets."""
    p = step.params
    vpc = Block("vpc_config")
    vpc.comment("keep the other attributes your vpc_config block already has")
    vpc.attr("subnet_ids", list(p["subnet_ids"]))
    e.items.append(
        Comment(
            f"step {step.id}: {step.description}.\n"
            f'Terraform manages the cluster as one resource: set this in your existing resource "aws_eks_cluster" '
            f"for {p['cluster']}; a partial copy of the cluster here could replace it. Until you do, `terraform "
            "apply` on the cluster takes the subnets back out."
        )
    )
    e.items.append(snippet(f'vpc_config for aws_eks_cluster "{p["cluster"]}"', [vpc]))


UPDATE_CLUSTER_SUBNETS = Action(
    "eks.update-cluster-subnets",
    ("eks:UpdateClusterConfig", "eks:DescribeCluster", "eks:DescribeUpdate"),
    UpdateClusterSubnets,
    undo=UndoClusterSubnets,
    undo_permissions=("eks:UpdateClusterConfig", "eks:DescribeCluster", "eks:DescribeUpdate"),
    hcl=_cluster_subnets_hcl,
)
