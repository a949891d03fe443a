"""Terraform for the node-provisioner steps of EKS plans (cidrx.providers.eks.provisioner_plan), called by
cidrx.providers.eks.terraform for the actions it does not know.

Only whole objects and single env variables have a Terraform resource: cidrx's own Auto Mode NodeClass
(`kubernetes_manifest`) and Karpenter's RESERVED_ENIS (`kubernetes_env`, hashicorp/kubernetes >= 2.10).
Changing some fields of an existing EC2NodeClass, NodeClass or launch template has none: such a plan is
refused for --emit terraform with what to do instead.
"""

from __future__ import annotations

from cidrx.errors import InvalidInput
from cidrx.model.plan import DIGEST_TAG, Step
from cidrx.providers.eks.provisioner_plan import APPLY_AUTO_NODE_CLASS, PROVISIONER_ACTIONS, SET_DEPLOYMENT_ENV
from cidrx.render.hcl import Block, import_block, tf_name
from cidrx.render.terraform import Emitter

AUTO_NODE_CLASS_API = "eks.amazonaws.com/v1"
NAMES = frozenset(a.name for a in PROVISIONER_ACTIONS)


def _ids(e: Emitter, values: list[str]) -> list[dict[str, object]]:
    return [{"id": e.ref(v)} for v in values]


def emit_step(e: Emitter, step: Step) -> None:
    p = step.params
    if step.action == SET_DEPLOYMENT_ENV.name:
        b = Block("resource", ("kubernetes_env", tf_name(f"{p['name']}_{p['container']}")))
        b.attr("api_version", "apps/v1").attr("kind", "Deployment").attr("container", p["container"])
        b.attr("force", True)
        b.block("metadata").attr("name", p["name"]).attr("namespace", p["namespace"])
        for name, value in p["env"].items():
            b.block("env").attr("name", name).attr("value", str(value))
        e.depends(b, step)
        e.add(
            step,
            b,
            f"{step.description}.\nKarpenter is usually installed with Helm: set settings.reservedENIs in its "
            "values instead if Terraform manages that release.",
        )
        return
    if step.action == APPLY_AUTO_NODE_CLASS.name and p.get("create"):
        spec: dict[str, object] = {
            "subnetSelectorTerms": _ids(e, p["subnets"]),
            "securityGroupSelectorTerms": _ids(e, p["security_groups"]),
            "podSubnetSelectorTerms": _ids(e, p["pod_subnets"]),
            "podSecurityGroupSelectorTerms": _ids(e, p["pod_security_groups"]),
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
        return
    raise InvalidInput(
        f"plan step {step.id} ({step.action}) changes some fields of an existing object ({step.description}); "
        "Terraform has no resource for that",
        hint="apply the plan with `cidrx expand --apply`, or make the change where that object is managed",
    )
