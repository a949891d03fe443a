"""Executors of the node-provisioner steps (cidrx.providers.eks.provisioner_plan): Karpenter's EC2NodeClass
and controller env, EKS Auto Mode's NodeClass.

Every write is a replace guarded by the object's resourceVersion (a concurrent writer makes it fail with 409;
the step re-reads and decides again), every changed object carries the plan label, and each step's check
finds its own earlier work, so a crashed or repeated apply converges.
"""

from __future__ import annotations

import base64
import binascii
import copy
import re
from typing import TYPE_CHECKING, Any

from cidrx.engine.executor import Outputs, StepContext
from cidrx.errors import CloudError, StalePlan
from cidrx.model.plan import DIGEST_TAG, Step
from cidrx.providers.eks.collect.provisioners import AUTO_NODE_CLASSES, EC2_NODE_CLASSES, max_pods_from_user_data

if TYPE_CHECKING:
    from cidrx.kube.api import KubeApi
    from cidrx.providers.eks.api import EksApi
    from cidrx.providers.eks.steps import EksApis

CONFLICT_RETRIES = 5
ROLLOUT_TIMEOUT = 15 * 60.0


def _kube(ctx: StepContext, step: Step) -> KubeApi:
    apis: EksApis = ctx.apis
    if apis.kube is None:
        raise CloudError(f"step {step.id} needs Kubernetes access; pass --kubeconfig/--context (not --no-kube)")
    return apis.kube


def _ids(values: list[str]) -> list[dict[str, str]]:
    return [{"id": v} for v in values]


def _labelled(obj: dict[str, Any], plan_id: str) -> bool:
    return (obj.get("metadata", {}).get("labels") or {}).get(DIGEST_TAG) == plan_id


def _label(obj: dict[str, Any], plan_id: str) -> None:
    obj.setdefault("metadata", {}).setdefault("labels", {})[DIGEST_TAG] = plan_id


def _replace_until_done(
    kube: KubeApi,
    res: tuple[str, str, str],
    name: str,
    namespace: str | None,
    change: Any,
) -> dict[str, Any]:
    """Read, change (a function of the object that edits it in place and returns what it replaced), replace
    guarded by resourceVersion; on 409 read again. Returns what `change` reported of the first read."""
    from cidrx.kube.api import Conflict

    for _ in range(CONFLICT_RETRIES):
        current = kube.get_custom(*res, name, namespace)
        if current is None:
            raise CloudError(f"{res[2]} {name} no longer exists; make a new plan")
        before = change(current)
        try:
            kube.replace_custom(*res, current)
        except Conflict:
            continue
        return dict(before)
    raise CloudError(f"{res[2]} {name} kept changing under us; run the same command again")


class UpdateEc2NodeClass:
    """Tag the EC2NodeClass with the plan (spec.tags is hashed: Karpenter replaces its nodes), and set the
    node subnets / kubelet.maxPods the plan names."""

    def before(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        """The fields act changes, as they were (None: unset), for `cidrx rollback`."""
        obj = _kube(ctx, step).get_custom(*EC2_NODE_CLASSES, params["name"]) or {}
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
        if (spec.get("tags") or {}).get(DIGEST_TAG) != plan_id or not _labelled(obj, plan_id):
            return False
        if "subnet_ids" in params and spec.get("subnetSelectorTerms") != _ids(params["subnet_ids"]):
            return False
        return "max_pods" not in params or (spec.get("kubelet") or {}).get("maxPods") == params["max_pods"]

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        obj = _kube(ctx, step).get_custom(*EC2_NODE_CLASSES, params["name"])
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
                spec["subnetSelectorTerms"] = _ids(params["subnet_ids"])
            if "max_pods" in params:
                spec["kubelet"] = {**(spec.get("kubelet") or {}), "maxPods": params["max_pods"]}
            _label(obj, ctx.plan_id)
            return before

        before = _replace_until_done(_kube(ctx, step), EC2_NODE_CLASSES, params["name"], None, change)
        return {"name": params["name"], **{k: v for k, v in before.items() if v is not None}}

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        return None

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        if self.check(step, params, ctx) is None:
            raise CloudError(f"EC2NodeClass {params['name']} does not carry the planned change")


class ApplyAutoNodeClass:
    """Set an Auto Mode NodeClass's pod subnets and pod security groups, or create cidrx's own NodeClass."""

    def before(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        """The selector terms act sets, as they were (before None: the NodeClass did not exist), for rollback."""
        obj = _kube(ctx, step).get_custom(*AUTO_NODE_CLASSES, params["name"])
        if obj is None:
            return {"before": None}
        spec = obj.get("spec") or {}
        fields = ("podSubnetSelectorTerms", "podSecurityGroupSelectorTerms", "subnetSelectorTerms")
        kept = {k: copy.deepcopy(spec.get(k)) for k in fields}
        return {"before": {**kept, "labels": "labels" in (obj.get("metadata") or {})}}

    def _done(self, obj: dict[str, Any], params: dict[str, Any], plan_id: str) -> bool:
        spec = obj.get("spec") or {}
        return bool(
            _labelled(obj, plan_id)
            and spec.get("podSubnetSelectorTerms") == _ids(params["pod_subnets"])
            and spec.get("podSecurityGroupSelectorTerms") == _ids(params["pod_security_groups"])
            and ("subnets" not in params or spec.get("subnetSelectorTerms") == _ids(params["subnets"]))
        )

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        obj = _kube(ctx, step).get_custom(*AUTO_NODE_CLASSES, params["name"])
        if obj is None:
            if params.get("create"):
                return None
            raise StalePlan(f"NodeClass {params['name']} no longer exists; make a new plan")
        if params.get("create") and not _labelled(obj, ctx.plan_id):
            raise StalePlan(f"NodeClass {params['name']} exists but was not made by this plan; make a new plan")
        return {"name": params["name"]} if self._done(obj, params, ctx.plan_id) else None

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        from cidrx.kube.api import AlreadyExists

        kube = _kube(ctx, step)
        pods = {
            "podSubnetSelectorTerms": _ids(params["pod_subnets"]),
            "podSecurityGroupSelectorTerms": _ids(params["pod_security_groups"]),
        }
        if params.get("create") and kube.get_custom(*AUTO_NODE_CLASSES, params["name"]) is None:
            spec: dict[str, Any] = {
                "subnetSelectorTerms": _ids(params["subnets"]),
                "securityGroupSelectorTerms": _ids(params["security_groups"]),
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
            if params.get("create") and not _labelled(obj, ctx.plan_id):
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
                spec["subnetSelectorTerms"] = _ids(params["subnets"])
            _label(obj, ctx.plan_id)
            return before

        before = _replace_until_done(kube, AUTO_NODE_CLASSES, params["name"], None, change)
        return {"name": params["name"], **{k: v for k, v in before.items() if v is not None}}

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        return None

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        if self.check(step, params, ctx) is None:
            raise CloudError(f"NodeClass {params['name']} does not select the planned pod subnets")


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
        obj = _kube(ctx, step).get_custom(*DEPLOYMENTS, params["name"], params["namespace"])
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

        before = _replace_until_done(_kube(ctx, step), DEPLOYMENTS, params["name"], params["namespace"], change)
        return {"deployment": f"{params['namespace']}/{params['name']}", **before}

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        def rolled_out() -> bool | None:
            return True if _rolled_out(self._get(step, params, ctx)) else None

        ctx.wait_until(f"Deployment {params['name']} rollout", rolled_out, timeout=ROLLOUT_TIMEOUT, interval=5.0)

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        if not _env_applied(self._get(step, params, ctx), params["container"], params["env"]):
            raise CloudError(f"Deployment {params['name']} env does not carry {', '.join(params['env'])}")


# --- self-managed groups: a launch template version with the new max pods -------------------------------

_MAX_PODS_ARG = re.compile(r"(--max-pods[= ]+|\bmaxPods:\s*)(\d+)")


def _eks(ctx: StepContext) -> EksApi:
    apis: EksApis = ctx.apis
    return apis.eks


def _description(plan_id: str) -> str:
    # Launch template versions take no tags of their own: the description carries the plan id.
    return f"cidrx plan {plan_id}: max pods"


def rewrite_max_pods(user_data: str, old: int, new: int) -> str | None:
    """Base64 user data with every --max-pods / maxPods of `old` set to `new`; None when it is not plain text
    or does not say `old` (then it was changed since the plan was made, or is not what cidrx read)."""
    try:
        text = base64.b64decode(user_data, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    found = [int(m.group(2)) for m in _MAX_PODS_ARG.finditer(text)]
    if not found or set(found) != {old}:
        return None
    changed = _MAX_PODS_ARG.sub(lambda m: f"{m.group(1)}{new}", text)
    return base64.b64encode(changed.encode("utf-8")).decode("ascii")


class CreateLaunchTemplateVersion:
    def _mine(self, params: dict[str, Any], ctx: StepContext) -> dict[str, Any] | None:
        for v in _eks(ctx).launch_template_versions(params["template_id"]):
            if v.get("VersionDescription") == _description(ctx.plan_id):
                return v
        return None

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        found = self._mine(params, ctx)
        return {"version": str(found["VersionNumber"])} if found else None

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        api = _eks(ctx)
        source = api.launch_template_versions(params["template_id"], [str(params["source_version"])])
        data = (source[0].get("LaunchTemplateData") or {}) if source else {}
        rewritten = rewrite_max_pods(str(data.get("UserData") or ""), params["max_pods_from"], params["max_pods_to"])
        if rewritten is None:
            raise StalePlan(
                f"launch template {params['template_id']} v{params['source_version']} no longer sets max pods "
                f"{params['max_pods_from']} in plain user data; make a new plan"
            )
        made = api.create_launch_template_version(
            params["template_id"], str(params["source_version"]), _description(ctx.plan_id), {"UserData": rewritten}
        )
        return {"version": str(made["VersionNumber"])}

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        return None

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        found = self._mine(params, ctx)
        data = (found or {}).get("LaunchTemplateData") or {}
        if found is None or max_pods_from_user_data(str(data.get("UserData") or "")) != params["max_pods_to"]:
            raise CloudError(f"launch template {params['template_id']} has no version with the new max pods")


class SetGroupLaunchTemplate:
    def before(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        """The launch template and version the group used, for `cidrx rollback`."""
        lt = self._current(params, ctx)
        return {"before": {"template_id": lt.get("LaunchTemplateId"), "version": str(lt.get("Version") or "")}}

    def _current(self, params: dict[str, Any], ctx: StepContext) -> dict[str, Any]:
        groups = _eks(ctx).describe_auto_scaling_groups(names=[params["group"]])
        if not groups:
            raise CloudError(f"Auto Scaling group {params['group']} no longer exists")
        return dict(groups[0].get("LaunchTemplate") or {})

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        lt = self._current(params, ctx)
        same = lt.get("LaunchTemplateId") == params["template_id"] and str(lt.get("Version")) == str(params["version"])
        return {"version": str(params["version"])} if same else None

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        before = self._current(params, ctx)
        _eks(ctx).set_group_launch_template(params["group"], params["template_id"], str(params["version"]))
        return {"version": str(params["version"]), "previous_version": str(before.get("Version") or "")}

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        return None

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        if self.check(step, params, ctx) is None:
            raise CloudError(f"Auto Scaling group {params['group']} does not use the new launch template version")
