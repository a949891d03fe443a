"""How `cidrx rollback` takes back the node-provisioner steps (cidrx.providers.eks.provisioner_steps): Karpenter's
EC2NodeClass and controller env, EKS Auto Mode's NodeClass, a self-managed group's launch template version.

Settings changed in place are put back to the values the executor's `before` recorded in the apply journal,
and only while they still hold the plan's values (someone else's later change is refused, not overwritten);
what the plan created is removed only when it carries the plan's label (the NodeClass) or description (the
launch template version) and nothing uses it. Every Kubernetes write is guarded by resourceVersion.
"""

from __future__ import annotations

from typing import Any

from cidrx.engine.executor import Outputs, StepContext
from cidrx.errors import CloudError
from cidrx.model.plan import DIGEST_TAG, Step
from cidrx.providers.eks.collect.provisioners import AUTO_NODE_CLASSES, EC2_NODE_CLASSES, NODE_POOLS
from cidrx.providers.eks.provisioner_steps import (
    DEPLOYMENTS,
    ROLLOUT_TIMEOUT,
    CreateLaunchTemplateVersion,
    SetDeploymentEnv,
    _container,
    _eks,
    _ids,
    _kube,
    _labelled,
    _replace_until_done,
    _rolled_out,
)
from cidrx.providers.eks.undo import _EnvUndo, _recorded_before, restore_env


def _recorded(step: Step, ctx: StepContext) -> dict[str, Any]:
    return dict(ctx.recorded_before.get(step.id) or {})


def _unmark(obj: dict[str, Any], had_labels: bool) -> None:
    """Drop the plan label (and the labels map, when the object had none before the apply)."""
    meta = obj.setdefault("metadata", {})
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != DIGEST_TAG}
    if labels or had_labels:
        meta["labels"] = labels
    else:
        meta.pop("labels", None)


def _restore(spec: dict[str, Any], key: str, value: Any) -> None:
    if value is None:
        spec.pop(key, None)
    else:
        spec[key] = value


class UndoDeploymentEnv(_EnvUndo):
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
        had_annotations = bool(_recorded(step, ctx).get("annotations"))

        def change(obj: dict[str, Any]) -> dict[str, Any]:
            restore_env(obj, params["container"], restore)
            meta = obj["metadata"]
            annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != DIGEST_TAG}
            if annotations or had_annotations:
                meta["annotations"] = annotations
            else:
                meta.pop("annotations", None)
            return {}

        _replace_until_done(_kube(ctx, step), DEPLOYMENTS, params["name"], params["namespace"], change)
        return {"restored": sorted(restore)}

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        def rolled_out() -> bool | None:
            return True if _rolled_out(SetDeploymentEnv()._get(step, params, ctx)) else None

        ctx.wait_until(f"Deployment {params['name']} rollout", rolled_out, timeout=ROLLOUT_TIMEOUT, interval=5.0)


def _planned_ec2(params: dict[str, Any]) -> dict[str, Any]:
    """The values the update set, by the names `before` records them under."""
    planned: dict[str, Any] = {}
    if "subnet_ids" in params:
        planned["subnetSelectorTerms"] = _ids(params["subnet_ids"])
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
        obj = _kube(ctx, step).get_custom(*EC2_NODE_CLASSES, params["name"])
        if obj is None:
            return None
        marked = (
            _labelled(obj, ctx.plan_id) or ((obj.get("spec") or {}).get("tags") or {}).get(DIGEST_TAG) == ctx.plan_id
        )
        before = _recorded_before(step, ctx)
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
            obj = _kube(ctx, step).get_custom(*EC2_NODE_CLASSES, params["name"]) or {}
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
                _restore(spec, "subnetSelectorTerms", restore["subnetSelectorTerms"])
            if "maxPods" in restore:
                kubelet = dict(spec.get("kubelet") or {})
                _restore(kubelet, "maxPods", restore["maxPods"])
                _restore(spec, "kubelet", kubelet if kubelet or before.get("kubelet") else None)
            tags = {k: v for k, v in (spec.get("tags") or {}).items() if k != DIGEST_TAG}
            _restore(spec, "tags", tags if tags or before.get("tags") else None)
            _unmark(obj, bool(before.get("labels")))
            return {}

        _replace_until_done(_kube(ctx, step), EC2_NODE_CLASSES, params["name"], None, change)
        return {"name": params["name"]}

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        return None


_AUTO_FIELDS = ("podSubnetSelectorTerms", "podSecurityGroupSelectorTerms", "subnetSelectorTerms")


class UndoAutoNodeClass:
    """Delete the NodeClass the plan created (labelled, and no NodePool or node uses it), or put an existing
    one's selector terms back to their recorded values."""

    def _planned(self, params: dict[str, Any]) -> dict[str, Any]:
        planned = {
            "podSubnetSelectorTerms": _ids(params["pod_subnets"]),
            "podSecurityGroupSelectorTerms": _ids(params["pod_security_groups"]),
        }
        if "subnets" in params:
            planned["subnetSelectorTerms"] = _ids(params["subnets"])
        return planned

    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        obj = _kube(ctx, step).get_custom(*AUTO_NODE_CLASSES, params["name"])
        if obj is None or not _labelled(obj, ctx.plan_id):
            return None
        recorded = _recorded(step, ctx)
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
        kube = _kube(ctx, step)
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
        from cidrx.kube.api import Conflict

        kube = _kube(ctx, step)
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
                _restore(spec, k, v)
            _unmark(obj, bool(found.get("labels")))
            return {}

        _replace_until_done(kube, AUTO_NODE_CLASSES, params["name"], None, change)
        return {"restored": params["name"]}

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        return None


def _set_version(step: Step, params: dict[str, Any], ctx: StepContext) -> str:
    """The version the step pointed the group at: its resolved parameter, or what its act recorded."""
    version = str(params.get("version") or "")
    if version.startswith("${"):
        version = str((ctx.journal_outputs.get(step.id) or {}).get("version") or "")
    return version


class UndoGroupLaunchTemplate:
    """Point the Auto Scaling group back at the launch template version it used before the apply."""

    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        groups = _eks(ctx).describe_auto_scaling_groups(names=[params["group"]])
        if not groups:
            return None  # the group is gone: nothing launches from it to point back
        lt = dict(groups[0].get("LaunchTemplate") or {})
        current = (str(lt.get("LaunchTemplateId") or ""), str(lt.get("Version") or ""))
        before = _recorded_before(step, ctx)
        ours = current == (params["template_id"], _set_version(step, params, ctx))
        if before is None:
            return {"unknown": True} if ours else None
        if current == (str(before.get("template_id") or ""), str(before.get("version") or "")):
            return None
        return {"before": before, "current": list(current), "ours": ours}

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        if found.get("unknown"):
            return f"the journal beside the plan has no record of the launch template group {params['group']} used"
        if not found["ours"]:
            return (
                f"Auto Scaling group {params['group']} was pointed at {found['current'][0]} v{found['current'][1]} "
                "since the apply; set it back by hand"
            )
        return None

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        before = found.get("before") or {}
        return (
            f"point Auto Scaling group {params['group']} back at {before.get('template_id')} v{before.get('version')}"
        )

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        before = found["before"]
        _eks(ctx).set_group_launch_template(params["group"], str(before["template_id"]), str(before["version"]))
        return {"version": str(before["version"])}

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        return None


class UndoLaunchTemplateVersion:
    """Delete the launch template version the plan made (its description names the plan), unless a group
    launches with it by number or it became the template's default version."""

    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        found = CreateLaunchTemplateVersion()._mine(params, ctx)
        if found is None:
            return None
        return {"version": str(found["VersionNumber"]), "default": bool(found.get("DefaultVersion"))}

    def _restored_first(self, ctx: StepContext) -> set[str]:
        """Groups this plan pointed at the version, whose own undo (newer, so run first) points them back."""
        return {
            str(s.params.get("group"))
            for s in ctx.plan.steps
            if s.action == "eks.set-group-launch-template" and _recorded_before(s, ctx) is not None
        }

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        template, version = params["template_id"], found["version"]
        if found["default"]:
            return f"launch template {template} v{version} is its default version now; make another the default"
        names = set(ctx.plan.basis.get("self_managed") or {}) - self._restored_first(ctx)
        users = [
            str(g["AutoScalingGroupName"])
            for g in (_eks(ctx).describe_auto_scaling_groups(names=sorted(names)) if names else [])
            if (g.get("LaunchTemplate") or {}).get("LaunchTemplateId") == template
            and str((g.get("LaunchTemplate") or {}).get("Version")) == version
        ]
        if users:
            return f"Auto Scaling group(s) {', '.join(sorted(users))} launch with {template} v{version}"
        return None

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        return f"delete launch template {params['template_id']} v{found['version']} (made by the plan)"

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        _eks(ctx).delete_launch_template_version(params["template_id"], found["version"])
        return {"version": found["version"]}

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        return None
