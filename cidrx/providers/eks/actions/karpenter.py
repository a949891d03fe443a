"""The Karpenter actions: tag and repoint an EC2NodeClass (Karpenter replaces its nodes, which then use the
new pod subnets or max pods), and set RESERVED_ENIS on the Karpenter controller Deployment for custom
networking; with their executors, undos (recorded values back, only while they still hold the plan's) and
Terraform (kubernetes_env for the controller; none for a partial change of a node class).
"""

from __future__ import annotations

import copy
from typing import Any

from cidrx.engine.executor import Outputs, StepContext
from cidrx.errors import CloudError, StalePlan
from cidrx.model.plan import DIGEST_TAG, Step
from cidrx.providers.eks.actions.context import ROLLOUT_TIMEOUT, kube_api, recorded_before, recorded_outputs
from cidrx.providers.eks.actions.env import EnvUndo, restore_env
from cidrx.providers.eks.actions.hcl import partial_change
from cidrx.providers.eks.actions.kube_objects import (
    label,
    labelled,
    replace_until_done,
    restore_field,
    selector_ids,
    unmark,
)
from cidrx.providers.eks.collect.provisioners import EC2_NODE_CLASSES
from cidrx.registry import Action
from cidrx.render.hcl import Block, tf_name
from cidrx.render.terraform import Emitter


class UpdateEc2NodeClass:
    """Tag the EC2NodeClass with the plan (spec.tags is hashed: Karpenter replaces its nodes), and set the
    node subnets / kubelet.maxPods the plan names."""

    def before(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        """The fields act changes, as they were (None: unset), for `cidrx rollback`."""
        obj = kube_api(ctx, step).get_custom(*EC2_NODE_CLASSES, params["name"]) or {}
        spec = obj.get("spec") or {}
        return {
            "before": {
                "subnetSelectorTerms": copy.deepcopy(spec.get("subnetSelectorTerms")),
                "maxPods": (spec.get("kubelet") or {}).get("maxPods"),
                "kubelet": "kubelet" in spec,
                "tags": "tags" in spec,
                "labels": "labels" in (obj.get("metadata") or {}),
            }
        }

    def _done(self, obj: dict[str, Any], params: dict[str, Any], plan_id: str) -> bool:
        spec = obj.get("spec") or {}
        if (spec.get("tags") or {}).get(DIGEST_TAG) != plan_id or not labelled(obj, plan_id):
            return False
        if "subnet_ids" in params and spec.get("subnetSelectorTerms") != selector_ids(params["subnet_ids"]):
            return False
        return "max_pods" not in params or (spec.get("kubelet") or {}).get("maxPods") == params["max_pods"]

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        obj = kube_api(ctx, step).get_custom(*EC2_NODE_CLASSES, params["name"])
        if obj is None:
            raise StalePlan(f"EC2NodeClass {params['name']} no longer exists; make a new plan")
        return {"name": params["name"]} if self._done(obj, params, ctx.plan_id) else None

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        def change(obj: dict[str, Any]) -> dict[str, Any]:
            spec = obj.setdefault("spec", {})
            before = {
                "previous_subnet_terms": copy.deepcopy(spec.get("subnetSelectorTerms")),
                "previous_max_pods": (spec.get("kubelet") or {}).get("maxPods"),
            }
            spec["tags"] = {**(spec.get("tags") or {}), DIGEST_TAG: ctx.plan_id}
            if "subnet_ids" in params:
                spec["subnetSelectorTerms"] = selector_ids(params["subnet_ids"])
            if "max_pods" in params:
                spec["kubelet"] = {**(spec.get("kubelet") or {}), "maxPods": params["max_pods"]}
            label(obj, ctx.plan_id)
            return before

        before = replace_until_done(kube_api(ctx, step), EC2_NODE_CLASSES, params["name"], None, change)
        return {"name": params["name"], **{k: v for k, v in before.items() if v is not None}}

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        return None

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        if self.check(step, params, ctx) is None:
            raise CloudError(f"EC2NodeClass {params['name']} does not carry the planned change")


DEPLOYMENTS = ("apps", "v1", "deployments")


def _container(obj: dict[str, Any], name: str) -> dict[str, Any]:
    for c in obj.get("spec", {}).get("template", {}).get("spec", {}).get("containers", []):
        if c.get("name") == name:
            return dict(c)
    raise CloudError(f"Deployment {obj['metadata'].get('name')} has no container {name!r}")


def _env_applied(obj: dict[str, Any], container: str, env: dict[str, str]) -> bool:
    have = {e.get("name"): e.get("value") for e in _container(obj, container).get("env") or []}
    return all(have.get(k) == v for k, v in env.items())


def _rolled_out(obj: dict[str, Any]) -> bool:
    """The Deployment controller has seen the latest spec and every replica runs it and is available."""
    generation = int(obj.get("metadata", {}).get("generation", 0))
    status = obj.get("status") or {}
    if int(status.get("observedGeneration", 0)) < generation:
        return False
    replicas = int((obj.get("spec") or {}).get("replicas", 1))
    return (
        int(status.get("updatedReplicas", 0)) >= replicas
        and int(status.get("availableReplicas", 0)) >= replicas
        and int(status.get("replicas", replicas)) <= replicas  # old pods gone
    )


class SetDeploymentEnv:
    """Set env variables of one container of a Deployment (Karpenter's RESERVED_ENIS) and wait for the rollout."""

    def before(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        """The values of the variables act sets (None: not set), for `cidrx rollback`."""
        obj = self._get(step, params, ctx)
        have = {e.get("name"): e.get("value") for e in _container(obj, params["container"]).get("env") or []}
        return {"before": {k: have.get(k) for k in params["env"]}, "annotations": "annotations" in obj["metadata"]}

    def _get(self, step: Step, params: dict[str, Any], ctx: StepContext) -> dict[str, Any]:
        obj = kube_api(ctx, step).get_custom(*DEPLOYMENTS, params["name"], params["namespace"])
        if obj is None:
            raise CloudError(f"Deployment {params['namespace']}/{params['name']} not found")
        return obj

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        obj = self._get(step, params, ctx)
        # Done means rolled out too, so a rerun after a timed-out wait waits again before the nodes roll.
        if _env_applied(obj, params["container"], params["env"]) and _rolled_out(obj):
            return {"generation": obj["metadata"].get("generation", 0)}
        return None

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        def change(obj: dict[str, Any]) -> dict[str, Any]:
            before: dict[str, Any] = {}
            for c in obj["spec"]["template"]["spec"]["containers"]:
                if c.get("name") != params["container"]:
                    continue
                old = {e.get("name"): e.get("value") for e in c.get("env") or []}
                before = {"previous_env": {k: old.get(k) for k in params["env"]}}
                env = [e for e in c.get("env") or [] if e.get("name") not in params["env"]]
                c["env"] = env + [{"name": k, "value": v} for k, v in params["env"].items()]
            meta = obj.setdefault("metadata", {})
            meta.setdefault("annotations", {})[DIGEST_TAG] = ctx.plan_id
            return before

        before = replace_until_done(kube_api(ctx, step), DEPLOYMENTS, params["name"], params["namespace"], change)
        return {"deployment": f"{params['namespace']}/{params['name']}", **before}

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        def rolled_out() -> bool | None:
            return True if _rolled_out(self._get(step, params, ctx)) else None

        ctx.wait_until(f"Deployment {params['name']} rollout", rolled_out, timeout=ROLLOUT_TIMEOUT, interval=5.0)

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        if not _env_applied(self._get(step, params, ctx), params["container"], params["env"]):
            raise CloudError(f"Deployment {params['name']} env does not carry {', '.join(params['env'])}")


class UndoDeploymentEnv(EnvUndo):
    """Karpenter's RESERVED_ENIS back to its recorded value (unset if it was unset), and the plan annotation off."""

    def _have(self, step: Step, params: dict[str, Any], ctx: StepContext) -> dict[str, Any]:
        obj = SetDeploymentEnv()._get(step, params, ctx)
        return {e.get("name"): e.get("value") for e in _container(obj, params["container"]).get("env") or []}

    def _where(self, params: dict[str, Any]) -> str:
        return f"on Deployment {params['namespace']}/{params['name']}"

    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        found = super().find(step, params, ctx)
        if found is not None:
            return found
        obj = SetDeploymentEnv()._get(step, params, ctx)
        marked = (obj["metadata"].get("annotations") or {}).get(DIGEST_TAG) == ctx.plan_id
        return {"restore": {}} if marked else None

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        if not found.get("restore") and not found.get("unknown"):
            return f"remove the plan annotation {self._where(params)}"
        return super().describe(step, params, found)

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        restore: dict[str, Any] = found["restore"]
        had_annotations = bool(recorded_outputs(step, ctx).get("annotations"))

        def change(obj: dict[str, Any]) -> dict[str, Any]:
            restore_env(obj, params["container"], restore)
            meta = obj["metadata"]
            annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != DIGEST_TAG}
            if annotations or had_annotations:
                meta["annotations"] = annotations
            else:
                meta.pop("annotations", None)
            return {}

        replace_until_done(kube_api(ctx, step), DEPLOYMENTS, params["name"], params["namespace"], change)
        return {"restored": sorted(restore)}

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        def rolled_out() -> bool | None:
            return True if _rolled_out(SetDeploymentEnv()._get(step, params, ctx)) else None

        ctx.wait_until(f"Deployment {params['name']} rollout", rolled_out, timeout=ROLLOUT_TIMEOUT, interval=5.0)


def _planned_ec2(params: dict[str, Any]) -> dict[str, Any]:
    """The values the update set, by the names `before` records them under."""
    planned: dict[str, Any] = {}
    if "subnet_ids" in params:
        planned["subnetSelectorTerms"] = selector_ids(params["subnet_ids"])
    if "max_pods" in params:
        planned["maxPods"] = params["max_pods"]
    return planned


def _ec2_have(obj: dict[str, Any]) -> dict[str, Any]:
    spec = obj.get("spec") or {}
    return {
        "subnetSelectorTerms": spec.get("subnetSelectorTerms"),
        "maxPods": (spec.get("kubelet") or {}).get("maxPods"),
    }


class UndoEc2NodeClass:
    """subnetSelectorTerms and kubelet.maxPods back to their recorded values; the plan tag and label off.
    Taking spec.tags back changes the hashed spec again, so Karpenter replaces the nodes once more."""

    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        obj = kube_api(ctx, step).get_custom(*EC2_NODE_CLASSES, params["name"])
        if obj is None:
            return None
        marked = (
            labelled(obj, ctx.plan_id) or ((obj.get("spec") or {}).get("tags") or {}).get(DIGEST_TAG) == ctx.plan_id
        )
        before = recorded_before(step, ctx)
        if before is None:
            return {"unknown": True} if marked else None
        have = _ec2_have(obj)
        restore = {k: before.get(k) for k in _planned_ec2(params) if have[k] != before.get(k)}
        return {"restore": restore, "before": before} if restore or marked else None

    def in_use(
        self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext, obj: dict[str, Any] | None = None
    ) -> str | None:
        if found.get("unknown"):
            return f"the journal beside the plan has no record of EC2NodeClass {params['name']} before the apply"
        if obj is None:
            obj = kube_api(ctx, step).get_custom(*EC2_NODE_CLASSES, params["name"]) or {}
        have, planned = _ec2_have(obj), _planned_ec2(params)
        others = [k for k in found["restore"] if have[k] != planned[k]]
        if others:
            return f"{', '.join(others)} of EC2NodeClass {params['name']} changed since the apply; set back by hand"
        return None

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        values = ", ".join(f"{k}={'(unset)' if v is None else v}" for k, v in (found.get("restore") or {}).items())
        return f"restore EC2NodeClass {params['name']}: {values + ', ' if values else ''}plan tag removed"

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        restore: dict[str, Any] = found["restore"]
        before: dict[str, Any] = found["before"]

        def change(obj: dict[str, Any]) -> dict[str, Any]:
            # Re-checked on the object the guarded replace writes: a change since the survey is not overwritten.
            if self.in_use(step, params, found, ctx, obj):
                raise CloudError(f"EC2NodeClass {params['name']} changed during the rollback; run the same command")
            spec = obj.setdefault("spec", {})
            if "subnetSelectorTerms" in restore:
                restore_field(spec, "subnetSelectorTerms", restore["subnetSelectorTerms"])
            if "maxPods" in restore:
                kubelet = dict(spec.get("kubelet") or {})
                restore_field(kubelet, "maxPods", restore["maxPods"])
                restore_field(spec, "kubelet", kubelet if kubelet or before.get("kubelet") else None)
            tags = {k: v for k, v in (spec.get("tags") or {}).items() if k != DIGEST_TAG}
            restore_field(spec, "tags", tags if tags or before.get("tags") else None)
            unmark(obj, bool(before.get("labels")))
            return {}

        replace_until_done(kube_api(ctx, step), EC2_NODE_CLASSES, params["name"], None, change)
        return {"name": params["name"]}

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        return None


UPDATE_EC2_NODE_CLASS = Action(
    "kube.update-ec2nodeclass",
    ("kubernetes: ec2nodeclasses.karpenter.k8s.aws get,update",),
    UpdateEc2NodeClass,
    undo=UndoEc2NodeClass,
    undo_permissions=("kubernetes: ec2nodeclasses.karpenter.k8s.aws get,update",),
    hcl=partial_change,
)


def _deployment_env_hcl(e: Emitter, step: Step) -> None:
    p = step.params
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


SET_DEPLOYMENT_ENV = Action(
    "kube.set-deployment-env",
    ("kubernetes: deployments.apps get,update",),
    SetDeploymentEnv,
    undo=UndoDeploymentEnv,
    undo_permissions=("kubernetes: deployments.apps get,update",),
    hcl=_deployment_env_hcl,
)
