"""The ENIConfig action: create (or repoint) the ENIConfig of one zone at its pod subnet, for VPC CNI custom
networking; with its executor (resourceVersion-guarded writes, labelled with the plan), its undo (delete it,
or point it back at the subnet the journal recorded) and its Terraform (kubernetes_manifest).
"""

from __future__ import annotations

from typing import Any

from cidrx.engine.executor import Outputs, StepContext
from cidrx.errors import CloudError, StalePlan
from cidrx.model.plan import DIGEST_TAG, Step
from cidrx.providers.eks.actions.context import CONFLICT_RETRIES, kube_api
from cidrx.registry import Action
from cidrx.render.hcl import Block, import_block, tf_name
from cidrx.render.terraform import Emitter

ENICONFIG = ("crd.k8s.amazonaws.com", "v1alpha1", "eniconfigs", "ENIConfig")


def _eniconfig_matches(obj: dict[str, Any], params: dict[str, Any]) -> bool:
    spec = obj.get("spec", {})
    return bool(
        spec.get("subnet") == params["subnet"]
        and sorted(spec.get("securityGroups") or []) == sorted(params["security_groups"])
    )


class ApplyEniConfig:
    def before(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        """The ENIConfig's spec before a repoint (None: it did not exist), for `cidrx rollback`."""
        obj = kube_api(ctx, step).get_custom(*ENICONFIG[:3], params["name"])
        return {"before": None if obj is None else dict(obj.get("spec") or {})}

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        obj = kube_api(ctx, step).get_custom(*ENICONFIG[:3], params["name"])
        return {"name": params["name"]} if obj is not None and _eniconfig_matches(obj, params) else None

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        from cidrx.kube.errors import Conflict

        kube = kube_api(ctx, step)
        for _ in range(CONFLICT_RETRIES):
            current = kube.get_custom(*ENICONFIG[:3], params["name"])
            spec = {"subnet": params["subnet"], "securityGroups": list(params["security_groups"])}
            if current is None:
                body = {
                    "apiVersion": f"{ENICONFIG[0]}/{ENICONFIG[1]}",
                    "kind": ENICONFIG[3],
                    "metadata": {"name": params["name"], "labels": {DIGEST_TAG: ctx.plan_id}},
                    "spec": spec,
                }
                try:
                    kube.create_custom(*ENICONFIG[:3], ENICONFIG[3], body)
                    return {"name": params["name"]}
                except Conflict:
                    continue
            labels = current.get("metadata", {}).get("labels") or {}
            if labels.get(DIGEST_TAG) != ctx.plan_id and params["name"] not in ctx.plan.basis.get("eniconfigs", []):
                raise StalePlan(f"ENIConfig {params['name']} appeared after the plan was made; make a new plan")
            # An ENIConfig that existed when the plan was reviewed is repointed at the new subnet.
            current.setdefault("metadata", {}).setdefault("labels", {})[DIGEST_TAG] = ctx.plan_id
            current["spec"] = {**current.get("spec", {}), **spec}
            try:
                kube.replace_custom(*ENICONFIG[:3], current)
                return {"name": params["name"]}
            except Conflict:
                continue
        raise CloudError(f"ENIConfig {params['name']} kept changing under us; run the same command again")

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        return None

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        if self.check(step, params, ctx) is None:
            raise CloudError(f"ENIConfig {params['name']} does not point at {params['subnet']}")


class UndoEniConfig:
    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        obj = kube_api(ctx, step).get_custom(*ENICONFIG[:3], params["name"])
        if obj is None or (obj.get("metadata", {}).get("labels") or {}).get(DIGEST_TAG) != ctx.plan_id:
            return None
        recorded = ctx.recorded_before.get(step.id)
        if recorded is not None and "before" in recorded:
            # The journal's record is the truth: None means this apply created it (delete), a spec that it
            # repointed one that existed (point it back).
            before = recorded["before"]
            return {"name": params["name"], "before": dict(before) if isinstance(before, dict) else None}
        # No record (journal lost): one the plan's basis lists existed before, and its spec is unknown.
        if params["name"] in ctx.plan.basis.get("eniconfigs", []):
            return {"unknown": True}
        return {"name": params["name"], "before": None}

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        if found.get("unknown"):
            return f"ENIConfig {params['name']} existed before the apply and the journal has no record of its spec"
        return None

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        if found.get("before") is not None:
            return f"point ENIConfig {params['name']} back at subnet {found['before'].get('subnet')}"
        return f"delete ENIConfig {params['name']}"

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        from cidrx.kube.errors import Conflict

        kube = kube_api(ctx, step)
        for _ in range(CONFLICT_RETRIES):
            obj = kube.get_custom(*ENICONFIG[:3], params["name"])
            if obj is None:
                return {"name": params["name"]}
            rv = str(obj.get("metadata", {}).get("resourceVersion") or "")
            try:
                if found.get("before") is None:
                    kube.delete_custom(*ENICONFIG[:3], params["name"], resource_version=rv)
                else:
                    labels = {k: v for k, v in (obj["metadata"].get("labels") or {}).items() if k != DIGEST_TAG}
                    obj["metadata"]["labels"] = labels
                    obj["spec"] = dict(found["before"])
                    kube.replace_custom(*ENICONFIG[:3], obj)
            except Conflict:
                continue
            return {"name": params["name"]}
        raise CloudError(f"ENIConfig {params['name']} kept changing under us; run the same command again")

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        return None


ENICONFIG_API = "crd.k8s.amazonaws.com/v1alpha1"


def _eniconfig_hcl(e: Emitter, step: Step) -> None:
    p = step.params
    manifest = {
        "apiVersion": ENICONFIG_API,
        "kind": "ENIConfig",
        "metadata": {"name": p["name"], "labels": {DIGEST_TAG: e.plan.plan_id}},
        "spec": {"subnet": e.ref(p["subnet"]), "securityGroups": list(p["security_groups"])},
    }
    b = Block("resource", ("kubernetes_manifest", f"eniconfig_{tf_name(p['name'])}"))
    b.attr("manifest", manifest)
    address = e.add(step, b)
    if e.out(step.id, "name"):
        e.imports.append(import_block(address, f"apiVersion={ENICONFIG_API},kind=ENIConfig,name={p['name']}"))


APPLY_ENICONFIG = Action(
    "kube.apply-eniconfig",
    ("kubernetes: eniconfigs.crd.k8s.amazonaws.com get,create,update",),
    ApplyEniConfig,
    undo=UndoEniConfig,
    undo_permissions=("kubernetes: eniconfigs.crd.k8s.amazonaws.com get,update,delete",),
    hcl=_eniconfig_hcl,
)
