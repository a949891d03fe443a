"""The self-managed node group actions: a launch template version with the new max pods, and the Auto
Scaling group switched to it; with their executors, undos (the group back to its recorded version, the
version deleted while no group uses it) and no Terraform (a partial change of a launch template has none).
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from cidrx.engine.executor import Outputs, StepContext
from cidrx.errors import CloudError, StalePlan
from cidrx.model.plan import Step
from cidrx.providers.eks.actions.context import eks_api, recorded_before
from cidrx.providers.eks.actions.hcl import partial_change
from cidrx.providers.eks.collect.provisioners import max_pods_from_user_data
from cidrx.registry import Action

_MAX_PODS_ARG = re.compile(r"(--max-pods[= ]+|\bmaxPods:\s*)(\d+)")


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
        for v in eks_api(ctx).launch_template_versions(params["template_id"]):
            if v.get("VersionDescription") == _description(ctx.plan_id):
                return v
        return None

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        found = self._mine(params, ctx)
        return {"version": str(found["VersionNumber"])} if found else None

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        api = eks_api(ctx)
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
        groups = eks_api(ctx).describe_auto_scaling_groups(names=[params["group"]])
        if not groups:
            raise CloudError(f"Auto Scaling group {params['group']} no longer exists")
        return dict(groups[0].get("LaunchTemplate") or {})

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        lt = self._current(params, ctx)
        same = lt.get("LaunchTemplateId") == params["template_id"] and str(lt.get("Version")) == str(params["version"])
        return {"version": str(params["version"])} if same else None

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        before = self._current(params, ctx)
        eks_api(ctx).set_group_launch_template(params["group"], params["template_id"], str(params["version"]))
        return {"version": str(params["version"]), "previous_version": str(before.get("Version") or "")}

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        return None

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        if self.check(step, params, ctx) is None:
            raise CloudError(f"Auto Scaling group {params['group']} does not use the new launch template version")


def _set_version(step: Step, params: dict[str, Any], ctx: StepContext) -> str:
    """The version the step pointed the group at: its resolved parameter, or what its act recorded."""
    version = str(params.get("version") or "")
    if version.startswith("${"):
        version = str((ctx.journal_outputs.get(step.id) or {}).get("version") or "")
    return version


class UndoGroupLaunchTemplate:
    """Point the Auto Scaling group back at the launch template version it used before the apply."""

    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        groups = eks_api(ctx).describe_auto_scaling_groups(names=[params["group"]])
        if not groups:
            return None  # the group is gone: nothing launches from it to point back
        lt = dict(groups[0].get("LaunchTemplate") or {})
        current = (str(lt.get("LaunchTemplateId") or ""), str(lt.get("Version") or ""))
        before = recorded_before(step, ctx)
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
        eks_api(ctx).set_group_launch_template(params["group"], str(before["template_id"]), str(before["version"]))
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
            if s.action == "eks.set-group-launch-template" and recorded_before(s, ctx) is not None
        }

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        template, version = params["template_id"], found["version"]
        if found["default"]:
            return f"launch template {template} v{version} is its default version now; make another the default"
        names = set(ctx.plan.basis.get("self_managed") or {}) - self._restored_first(ctx)
        users = [
            str(g["AutoScalingGroupName"])
            for g in (eks_api(ctx).describe_auto_scaling_groups(names=sorted(names)) if names else [])
            if (g.get("LaunchTemplate") or {}).get("LaunchTemplateId") == template
            and str((g.get("LaunchTemplate") or {}).get("Version")) == version
        ]
        if users:
            return f"Auto Scaling group(s) {', '.join(sorted(users))} launch with {template} v{version}"
        return None

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        return f"delete launch template {params['template_id']} v{found['version']} (made by the plan)"

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        eks_api(ctx).delete_launch_template_version(params["template_id"], found["version"])
        return {"version": found["version"]}

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        return None


CREATE_LAUNCH_TEMPLATE_VERSION = Action(
    "eks.create-launch-template-version",
    ("ec2:CreateLaunchTemplateVersion", "ec2:DescribeLaunchTemplateVersions"),
    CreateLaunchTemplateVersion,
    undo=UndoLaunchTemplateVersion,
    undo_permissions=(
        "ec2:DeleteLaunchTemplateVersions",
        "ec2:DescribeLaunchTemplateVersions",
        "autoscaling:DescribeAutoScalingGroups",
    ),
    hcl=partial_change,
)
SET_GROUP_LAUNCH_TEMPLATE = Action(
    "eks.set-group-launch-template",
    ("autoscaling:UpdateAutoScalingGroup", "autoscaling:DescribeAutoScalingGroups"),
    SetGroupLaunchTemplate,
    undo=UndoGroupLaunchTemplate,
    undo_permissions=("autoscaling:UpdateAutoScalingGroup", "autoscaling:DescribeAutoScalingGroups"),
    hcl=partial_change,
)
