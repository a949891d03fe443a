"""The managed node group action: create a node group like a template group (its nodes use the new pod
subnets); with its executor (waits until ACTIVE), its undo (delete it, only when it has no nodes) and its
Terraform (aws_eks_node_group).
"""

from __future__ import annotations

from typing import Any

from cidrx.engine.executor import Outputs, StepContext
from cidrx.errors import CloudError, StalePlan
from cidrx.model.plan import DIGEST_TAG, Step
from cidrx.providers.eks.actions.context import eks_api, kube_api, plan_tags, tag_of
from cidrx.providers.eks.actions.hcl import IGNORE_APPLIED_AT, plan_tags_hcl
from cidrx.providers.eks.facts.subnets import NODEGROUP_LABEL
from cidrx.registry import Action
from cidrx.render.hcl import Block, Expr, import_block, tf_name
from cidrx.render.terraform import Emitter

# CreateNodegroup typically takes 3-10 minutes; VPC CIDR association and add-on updates take seconds.
NODEGROUP_TIMEOUT = 40 * 60.0


class CreateNodegroup:
    def _find(self, params: dict[str, Any], ctx: StepContext) -> dict[str, Any] | None:
        api = eks_api(ctx)
        if params["name"] not in api.list_nodegroups(params["cluster"]):
            return None
        return api.describe_nodegroup(params["cluster"], params["name"])

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        ng = self._find(params, ctx)
        if ng is None:
            return None
        if (ng.get("tags") or {}).get(DIGEST_TAG) != ctx.plan_id:
            raise StalePlan(f"node group {params['name']} exists but was not made by this plan; make a new plan")
        return {"nodegroup": params["name"], "arn": ng.get("nodegroupArn", "")}

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        kwargs: dict[str, Any] = {
            "clusterName": params["cluster"],
            "nodegroupName": params["name"],
            "subnets": list(params["subnets"]),
            "nodeRole": params["node_role"],
            "scalingConfig": dict(params["scaling"]),
            "labels": dict(params.get("labels") or {}),
            "tags": plan_tags(ctx, params.get("tags")),
        }
        if "launch_template" in params:
            kwargs["launchTemplate"] = dict(params["launch_template"])
        else:
            kwargs["instanceTypes"] = list(params["instance_types"])
            if "disk_size" in params:
                kwargs["diskSize"] = params["disk_size"]
        if "ami_type" in params:
            kwargs["amiType"] = params["ami_type"]
        if "capacity_type" in params:
            kwargs["capacityType"] = params["capacity_type"]
        ng = eks_api(ctx).create_nodegroup(**kwargs)
        return {"nodegroup": params["name"], "arn": ng.get("nodegroupArn", "")}

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        def probe() -> bool | None:
            ng = self._find(params, ctx) or {}
            status = ng.get("status", "MISSING")
            if status in ("CREATE_FAILED", "DELETING", "DEGRADED", "MISSING"):
                issues = "; ".join(
                    f"{i.get('code')}: {i.get('message')}" for i in (ng.get("health") or {}).get("issues", [])
                )
                raise CloudError(f"node group {params['name']} is {status}: {issues or 'no detail'}")
            return True if status == "ACTIVE" else None

        ctx.wait_until(f"node group {params['name']} to become ACTIVE", probe, timeout=NODEGROUP_TIMEOUT, interval=15)

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        ng = self._find(params, ctx)
        if ng is None or sorted(ng.get("subnets", [])) != sorted(params["subnets"]):
            raise CloudError(f"node group {params['name']} is missing or not in subnets {params['subnets']}")


class UndoNodegroup:
    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        api = eks_api(ctx)
        if params["name"] not in api.list_nodegroups(params["cluster"]):
            return None
        ng = api.describe_nodegroup(params["cluster"], params["name"])
        if tag_of(ng) != ctx.plan_id:
            return None  # not this plan's: never touched
        return {"nodegroup": params["name"], "status": str(ng.get("status") or "")}

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        if ctx.apis.kube is None:
            return f"cannot see whether node group {params['name']} has nodes without cluster access"
        nodes = [
            n["metadata"]["name"]
            for n in kube_api(ctx, step).iter_nodes()
            if (n.get("metadata", {}).get("labels") or {}).get(NODEGROUP_LABEL) == params["name"]
        ]
        if nodes:
            return (
                f"node group {params['name']} still has {len(nodes)} node(s) ({', '.join(sorted(nodes)[:3])}); "
                "drain them and scale it to 0"
            )
        return None

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        return f"delete node group {params['name']}"

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        if found.get("status") != "DELETING":
            eks_api(ctx).delete_nodegroup(params["cluster"], params["name"])
        return {"nodegroup": params["name"]}

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        def gone() -> bool | None:
            return True if params["name"] not in eks_api(ctx).list_nodegroups(params["cluster"]) else None

        ctx.wait_until(f"node group {params['name']} to be deleted", gone, timeout=NODEGROUP_TIMEOUT, interval=15)


def _nodegroup_hcl(e: Emitter, step: Step) -> None:
    p = step.params
    b = Block("resource", ("aws_eks_node_group", tf_name(p["name"])))
    b.attr("cluster_name", p["cluster"]).attr("node_group_name", p["name"]).attr("node_role_arn", p["node_role"])
    b.attr("subnet_ids", [e.ref(s) for s in p["subnets"]])
    for key in ("ami_type", "capacity_type"):
        if p.get(key):
            b.attr(key, p[key])
    if "launch_template" not in p:
        b.attr("instance_types", list(p.get("instance_types", [])))
        if p.get("disk_size"):
            b.attr("disk_size", p["disk_size"])
    if p.get("labels"):
        b.attr("labels", dict(p["labels"]))
    b.attr("tags", plan_tags_hcl(e, p.get("tags", {})))
    s = p["scaling"]
    b.block("scaling_config").attr("desired_size", s["desiredSize"]).attr("max_size", s["maxSize"]).attr(
        "min_size", s["minSize"]
    )
    lt = p.get("launch_template")
    if lt:
        lb = b.block("launch_template")
        if lt.get("id"):
            lb.attr("id", lt["id"])
        else:
            lb.attr("name", lt.get("name", ""))
        lb.attr("version", lt.get("version", "$Latest"))
    # The cluster autoscaler changes the desired size; Terraform should not set it back.
    b.block("lifecycle").attr("ignore_changes", [Expr("scaling_config[0].desired_size"), IGNORE_APPLIED_AT])
    e.depends(b, step)
    address = e.add(step, b)
    if e.out(step.id, "nodegroup"):
        e.imports.append(import_block(address, f"{p['cluster']}:{p['name']}"))


# iam:PassRole: CreateNodegroup passes the node role to EKS.
CREATE_NODEGROUP = Action(
    "eks.create-nodegroup",
    ("eks:CreateNodegroup", "eks:ListNodegroups", "eks:DescribeNodegroup", "iam:PassRole"),
    CreateNodegroup,
    undo=UndoNodegroup,
    undo_permissions=("eks:DeleteNodegroup", "eks:ListNodegroups", "eks:DescribeNodegroup", "kubernetes: nodes list"),
    hcl=_nodegroup_hcl,
)
