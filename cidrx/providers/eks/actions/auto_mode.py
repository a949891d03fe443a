"""The EKS Auto Mode action: create (or repoint) a NodeClass whose podSubnetSelectorTerms select the new pod
subnets; with its executor, its undo (delete the NodeClass cidrx created while no NodePool or node uses it,
or put the recorded selectors back) and its Terraform (kubernetes_manifest for a created NodeClass).
"""

from __future__ import annotations

import copy
from typing import Any

from cidrx.engine.executor import Outputs, StepContext
from cidrx.errors import CloudError, StalePlan
from cidrx.model.plan import DIGEST_TAG, Step
from cidrx.providers.eks.actions.context import kube_api, recorded_outputs
from cidrx.providers.eks.actions.hcl import partial_change
from cidrx.providers.eks.actions.kube_objects import (
    label,
    labelled,
    replace_until_done,
    restore_field,
    selector_ids,
    unmark,
)
from cidrx.providers.eks.collect.provisioners import AUTO_NODE_CLASSES, NODE_POOLS
from cidrx.registry import Action
from cidrx.render.hcl import Block, import_block, tf_name
from cidrx.render.terraform import Emitter


class ApplyAutoNodeClass:
    """Set an Auto Mode NodeClass's pod subnets and pod security groups, or create cidrx's own NodeClass."""

    def before(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        """The selector terms act sets, as they were (before None: the NodeClass did not exist), for rollback."""
        obj = kube_api(ctx, step).get_custom(*AUTO_NODE_CLASSES, params["name"])
        if obj is None:
            return {"before": None}
        spec = obj.get("spec") or {}
        fields = ("podSubnetSelectorTerms", "podSecurityGroupSelectorTerms", "subnetSelectorTerms")
        kept = {k: copy.deepcopy(spec.get(k)) for k in fields}
        return {"before": {**kept, "labels": "labels" in (obj.get("metadata") or {})}}

    def _done(self, obj: dict[str, Any], params: dict[str, Any], plan_id: str) -> bool:
        spec = obj.get("spec") or {}
        return bool(
            labelled(obj, plan_id)
            and spec.get("podSubnetSelectorTerms") == selector_ids(params["pod_subnets"])
            and spec.get("podSecurityGroupSelectorTerms") == selector_ids(params["pod_security_groups"])
            and ("subnets" not in params or spec.get("subnetSelectorTerms") == selector_ids(params["subnets"]))
        )

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        obj = kube_api(ctx, step).get_custom(*AUTO_NODE_CLASSES, params["name"])
        if obj is None:
            if params.get("create"):
                return None
            raise StalePlan(f"NodeClass {params['name']} no longer exists; make a new plan")
        if params.get("create") and not labelled(obj, ctx.plan_id):
            raise StalePlan(f"NodeClass {params['name']} exists but was not made by this plan; make a new plan")
        return {"name": params["name"]} if self._done(obj, params, ctx.plan_id) else None

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        from cidrx.kube.errors import AlreadyExists

        kube = kube_api(ctx, step)
        pods = {
            "podSubnetSelectorTerms": selector_ids(params["pod_subnets"]),
            "podSecurityGroupSelectorTerms": selector_ids(params["pod_security_groups"]),
        }
        if params.get("create") and kube.get_custom(*AUTO_NODE_CLASSES, params["name"]) is None:
            spec: dict[str, Any] = {
                "subnetSelectorTerms": selector_ids(params["subnets"]),
                "securityGroupSelectorTerms": selector_ids(params["security_groups"]),
                **pods,
            }
            if params.get("role"):
                spec["role"] = params["role"]
            body = {"metadata": {"name": params["name"], "labels": {DIGEST_TAG: ctx.plan_id}}, "spec": spec}
            try:
                kube.create_custom(*AUTO_NODE_CLASSES, "NodeClass", body)
                return {"name": params["name"], "created": True}
            except AlreadyExists:
                pass  # someone made it meanwhile: the check below decides whether it is ours

        def change(obj: dict[str, Any]) -> dict[str, Any]:
            if params.get("create") and not labelled(obj, ctx.plan_id):
                raise StalePlan(f"NodeClass {params['name']} appeared after the plan was made; make a new plan")
            spec = obj.setdefault("spec", {})
            before = {
                "previous_pod_subnet_terms": copy.deepcopy(spec.get("podSubnetSelectorTerms")),
                "previous_pod_security_group_terms": copy.deepcopy(spec.get("podSecurityGroupSelectorTerms")),
                "previous_subnet_terms": copy.deepcopy(spec.get("subnetSelectorTerms"))
                if "subnets" in params
                else None,
            }
            spec.update(pods)
            if "subnets" in params:
                spec["subnetSelectorTerms"] = selector_ids(params["subnets"])
            label(obj, ctx.plan_id)
            return before

        before = replace_until_done(kube, AUTO_NODE_CLASSES, params["name"], None, change)
        return {"name": params["name"], **{k: v for k, v in before.items() if v is not None}}

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        return None

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        if self.check(step, params, ctx) is None:
            raise CloudError(f"NodeClass {params['name']} does not select the planned pod subnets")


_AUTO_FIELDS = ("podSubnetSelectorTerms", "podSecurityGroupSelectorTerms", "subnetSelectorTerms")


class UndoAutoNodeClass:
    """Delete the NodeClass the plan created (labelled, and no NodePool or node uses it), or put an existing
    one's selector terms back to their recorded values."""

    def _planned(self, params: dict[str, Any]) -> dict[str, Any]:
        planned = {
            "podSubnetSelectorTerms": selector_ids(params["pod_subnets"]),
            "podSecurityGroupSelectorTerms": selector_ids(params["pod_security_groups"]),
        }
        if "subnets" in params:
            planned["subnetSelectorTerms"] = selector_ids(params["subnets"])
        return planned

    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        obj = kube_api(ctx, step).get_custom(*AUTO_NODE_CLASSES, params["name"])
        if obj is None or not labelled(obj, ctx.plan_id):
            return None
        recorded = recorded_outputs(step, ctx)
        if params.get("create") and recorded.get("before") is None:
            # Created by the plan: an existing unlabelled one is refused by the apply, so the label is proof.
            return {"delete": True, "resource_version": str(obj["metadata"].get("resourceVersion") or "")}
        before = recorded.get("before")
        if not isinstance(before, dict):
            return {"unknown": True}
        spec = obj.get("spec") or {}
        restore = {k: before.get(k) for k in self._planned(params) if spec.get(k) != before.get(k)}
        return {"restore": restore, "labels": bool(before.get("labels"))}

    def in_use(
        self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext, obj: dict[str, Any] | None = None
    ) -> str | None:
        name = params["name"]
        if found.get("unknown"):
            return f"the journal beside the plan has no record of NodeClass {name} before the apply"
        kube = kube_api(ctx, step)
        if found.get("delete"):
            pools = [
                str(p["metadata"]["name"])
                for p in kube.iter_custom(*NODE_POOLS)
                if ((p.get("spec") or {}).get("template") or {}).get("spec", {}).get("nodeClassRef", {}).get("name")
                == name
            ]
            if pools:
                return f"NodeClass {name} is used by NodePool(s) {', '.join(sorted(pools))}"
            # Nodes name their node class in a label: Karpenter's karpenter.k8s.aws/ec2nodeclass
            # (aws/karpenter-provider-aws pkg/apis/v1/labels.go LabelNodeClass, 1d927085), Auto Mode's
            # eks.amazonaws.com/nodeclass by the same rule.
            nodes = [
                n["metadata"]["name"]
                for n in kube.iter_nodes()
                if (n["metadata"].get("labels") or {}).get("eks.amazonaws.com/nodeclass") == name
            ]
            if nodes:
                return f"NodeClass {name} still has {len(nodes)} node(s) ({', '.join(sorted(nodes)[:3])})"
            return None
        spec = ((kube.get_custom(*AUTO_NODE_CLASSES, name) if obj is None else obj) or {}).get("spec") or {}
        planned = self._planned(params)
        others = [k for k in found["restore"] if spec.get(k) != planned[k]]
        if others:
            return f"{', '.join(others)} of NodeClass {name} changed since the apply; set back by hand"
        return None

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        if found.get("delete"):
            return f"delete Auto Mode NodeClass {params['name']}"
        return f"restore {', '.join(found.get('restore') or ()) or 'the label'} of Auto Mode NodeClass {params['name']}"

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        from cidrx.kube.errors import Conflict

        kube = kube_api(ctx, step)
        if found.get("delete"):
            try:
                kube.delete_custom(*AUTO_NODE_CLASSES, params["name"], resource_version=found["resource_version"])
            except Conflict:
                raise CloudError(f"NodeClass {params['name']} changed since it was read; run again") from None
            return {"deleted": params["name"]}
        restore: dict[str, Any] = found["restore"]

        def change(obj: dict[str, Any]) -> dict[str, Any]:
            if self.in_use(step, params, found, ctx, obj):  # changed since the survey: not overwritten
                raise CloudError(f"NodeClass {params['name']} changed during the rollback; run the same command")
            spec = obj.setdefault("spec", {})
            for k, v in restore.items():
                restore_field(spec, k, v)
            unmark(obj, bool(found.get("labels")))
            return {}

        replace_until_done(kube, AUTO_NODE_CLASSES, params["name"], None, change)
        return {"restored": params["name"]}

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        return None


AUTO_NODE_CLASS_API = "eks.amazonaws.com/v1"


def _selector_ids(e: Emitter, values: list[str]) -> list[dict[str, object]]:
    return [{"id": e.ref(v)} for v in values]


def _node_class_hcl(e: Emitter, step: Step) -> None:
    """A NodeClass cidrx creates; a change of some fields of an existing one has no Terraform resource."""
    p = step.params
    if not p.get("create"):
        partial_change(e, step)
        return
    spec: dict[str, object] = {
        "subnetSelectorTerms": _selector_ids(e, p["subnets"]),
        "securityGroupSelectorTerms": _selector_ids(e, p["security_groups"]),
        "podSubnetSelectorTerms": _selector_ids(e, p["pod_subnets"]),
        "podSecurityGroupSelectorTerms": _selector_ids(e, p["pod_security_groups"]),
    }
    if p.get("role"):
        spec["role"] = p["role"]
    manifest = {
        "apiVersion": AUTO_NODE_CLASS_API,
        "kind": "NodeClass",
        "metadata": {"name": p["name"], "labels": {DIGEST_TAG: e.plan.plan_id}},
        "spec": spec,
    }
    b = Block("resource", ("kubernetes_manifest", f"nodeclass_{tf_name(p['name'])}"))
    b.attr("manifest", manifest)
    e.depends(b, step)
    address = e.add(step, b)
    if e.out(step.id, "name"):
        e.imports.append(import_block(address, f"apiVersion={AUTO_NODE_CLASS_API},kind=NodeClass,name={p['name']}"))


APPLY_AUTO_NODE_CLASS = Action(
    "kube.apply-auto-nodeclass",
    ("kubernetes: nodeclasses.eks.amazonaws.com get,create,update",),
    ApplyAutoNodeClass,
    undo=UndoAutoNodeClass,
    undo_permissions=(
        "kubernetes: nodeclasses.eks.amazonaws.com get,update,delete",
        "kubernetes: nodepools.karpenter.sh list",
        "kubernetes: nodes list",
    ),
    hcl=_node_class_hcl,
)
