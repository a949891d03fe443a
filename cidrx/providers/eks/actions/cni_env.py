"""The VPC CNI env actions: set env variables of the CNI, on the vpc-cni managed add-on (its
configurationValues, checked against the add-on's schema) or on the aws-node DaemonSet when the CNI is
self-managed; with their executors (which wait for the rollout), undos (the recorded values back) and
Terraform (aws_eks_addon, kubernetes_env).
"""

from __future__ import annotations

import json
from typing import Any

from cidrx.engine.executor import Outputs, StepContext
from cidrx.errors import CloudError, InvalidInput
from cidrx.model.plan import Step
from cidrx.providers.eks.actions.context import CONFLICT_RETRIES, SHORT_TIMEOUT, eks_api, kube_api
from cidrx.providers.eks.actions.env import EnvUndo, restore_env
from cidrx.providers.eks.facts.addon_schema import schema_problem
from cidrx.providers.eks.facts.cni import addon_env
from cidrx.registry import Action
from cidrx.render.hcl import Block, Expr, hcl_object, import_block, tf_name
from cidrx.render.terraform import Emitter


def env_json(env: dict[str, str]) -> str:
    """configurationValues for the vpc-cni add-on carrying `env` (EKS accepts JSON)."""
    return json.dumps({"env": env}, sort_keys=True)


def _container(ds: dict[str, Any], name: str) -> dict[str, Any]:
    for c in ds.get("spec", {}).get("template", {}).get("spec", {}).get("containers", []):
        if c.get("name") == name:
            return dict(c)
    raise CloudError(f"DaemonSet {ds['metadata']['name']} has no container {name!r}")


def _env_applied(container: dict[str, Any], env: dict[str, str]) -> bool:
    have = {e.get("name"): e.get("value") for e in container.get("env") or []}
    return all(have.get(k) == v for k, v in env.items())


def _rolled_out(ds: dict[str, Any]) -> bool:
    """The controller has seen the DaemonSet's latest spec and every scheduled pod runs it and is available."""
    generation = int(ds.get("metadata", {}).get("generation", 0))
    status = ds.get("status") or {}
    if int(status.get("observedGeneration", generation)) < generation:
        return False
    desired = int(status.get("desiredNumberScheduled", 0))
    updated = int(status.get("updatedNumberScheduled", desired))
    available = int(status.get("numberAvailable", desired))
    return updated >= desired and available >= desired


class SetDaemonSetEnv:
    def before(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        """The values of the variables act sets (None: not set), for `cidrx rollback`."""
        container = _container(self._get(step, params, ctx), params["container"])
        have = {e.get("name"): e.get("value") for e in container.get("env") or []}
        return {"before": {k: have.get(k) for k in params["env"]}}

    def _get(self, step: Step, params: dict[str, Any], ctx: StepContext) -> dict[str, Any]:
        ds = kube_api(ctx, step).get_daemonset(params["namespace"], params["name"])
        if ds is None:
            raise CloudError(f"DaemonSet {params['namespace']}/{params['name']} not found")
        return ds

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        ds = self._get(step, params, ctx)
        # Done means rolled out too: after a rollout wait that timed out, the rerun must wait again rather
        # than go on to the node group while aws-node still runs the old env.
        if _env_applied(_container(ds, params["container"]), params["env"]) and _rolled_out(ds):
            return {"generation": ds["metadata"].get("generation", 0)}
        return None

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        from cidrx.kube.errors import Conflict

        kube = kube_api(ctx, step)
        for _ in range(CONFLICT_RETRIES):
            ds = self._get(step, params, ctx)
            containers = ds["spec"]["template"]["spec"]["containers"]
            for c in containers:
                if c.get("name") != params["container"]:
                    continue
                env = [e for e in c.get("env") or [] if e.get("name") not in params["env"]]
                env += [{"name": k, "value": v} for k, v in params["env"].items()]
                c["env"] = env
            try:
                updated = kube.replace_daemonset(ds)  # guarded by metadata.resourceVersion
            except Conflict:
                continue
            return {"generation": updated.get("metadata", {}).get("generation", 0)}
        raise CloudError(f"DaemonSet {params['namespace']}/{params['name']} kept changing under us; run again")

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        def rolled_out() -> bool | None:
            return True if _rolled_out(self._get(step, params, ctx)) else None

        ctx.wait_until(f"DaemonSet {params['name']} rollout", rolled_out, timeout=15 * 60.0, interval=5.0)

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        if not _env_applied(_container(self._get(step, params, ctx), params["container"]), params["env"]):
            raise CloudError(f"DaemonSet {params['name']} env does not carry {', '.join(params['env'])}")


class UpdateAddonEnv:
    def before(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        """The add-on's values of the variables act sets (None: not set), for `cidrx rollback`."""
        have = addon_env(str(self._addon(params, ctx).get("configurationValues") or ""))
        return {"before": {k: have.get(k) for k in params["env"]}}

    def _addon(self, params: dict[str, Any], ctx: StepContext) -> dict[str, Any]:
        addon = eks_api(ctx).describe_addon(params["cluster"], params["addon"])
        if addon is None:
            raise CloudError(f"add-on {params['addon']} is no longer installed on {params['cluster']}")
        return addon

    def _carries_env(self, addon: dict[str, Any], params: dict[str, Any]) -> bool:
        have = addon_env(str(addon.get("configurationValues") or ""))
        return all(have.get(k) == v for k, v in params["env"].items())

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        addon = self._addon(params, ctx)
        if not self._carries_env(addon, params):
            return None
        # DescribeAddon shows the new configurationValues as soon as UpdateAddon is accepted, while the
        # add-on is still UPDATING (EKS API reference, Addon.status). A rerun after a crash right after
        # the update must wait for it, as the first run would have, before the node group is created.
        if str(addon.get("status") or "ACTIVE") in ("CREATING", "UPDATING"):

            def settled() -> bool | None:
                status = str(self._addon(params, ctx).get("status") or "ACTIVE")
                if status in ("CREATE_FAILED", "UPDATE_FAILED", "DEGRADED"):
                    raise CloudError(f"add-on {params['addon']} is {status} after its configuration update")
                return True if status == "ACTIVE" else None

            ctx.wait_until(f"add-on {params['addon']} update", settled, timeout=SHORT_TIMEOUT * 3, interval=5.0)
        return {"env": params["env"]}

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        addon = self._addon(params, ctx)
        text = str(addon.get("configurationValues") or "")
        try:
            config = json.loads(text) if text.strip() else {}
        except ValueError:
            raise CloudError(
                f"add-on {params['addon']} configurationValues is not JSON; set {', '.join(params['env'])} by hand"
            ) from None
        config["env"] = {**(config.get("env") or {}), **params["env"]}  # keep what others configured
        # Checked at plan time against the schema in the snapshot; the add-on may have changed since.
        schema = eks_api(ctx).addon_configuration_schema(params["addon"], str(addon.get("addonVersion") or ""))
        problem = schema_problem(schema, config)
        if problem:
            raise InvalidInput(
                f"the {params['addon']} add-on {addon.get('addonVersion')} rejects the configuration this plan "
                f"writes: {problem}; the add-on was not changed"
            )
        update_id = eks_api(ctx).update_addon_configuration(params["cluster"], params["addon"], json.dumps(config))
        return {"update_id": update_id}

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        if "update_id" not in outputs:
            return

        def probe() -> bool | None:
            update = eks_api(ctx).describe_update(params["cluster"], outputs["update_id"], params["addon"])
            status = update.get("status")
            if status in ("Failed", "Cancelled"):
                errors = "; ".join(e.get("errorMessage", "") for e in update.get("errors", []))
                raise CloudError(f"add-on update {outputs['update_id']} {status}: {errors or 'no detail'}")
            return True if status == "Successful" else None

        ctx.wait_until(f"add-on {params['addon']} update", probe, timeout=SHORT_TIMEOUT * 3, interval=5.0)

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        if not self._carries_env(self._addon(params, ctx), params):
            raise CloudError(f"add-on {params['addon']} does not carry {', '.join(params['env'])}")


class UndoDaemonSetEnv(EnvUndo):
    def _have(self, step: Step, params: dict[str, Any], ctx: StepContext) -> dict[str, Any]:
        ds = SetDaemonSetEnv()._get(step, params, ctx)
        return {e.get("name"): e.get("value") for e in _container(ds, params["container"]).get("env") or []}

    def _where(self, params: dict[str, Any]) -> str:
        return f"on DaemonSet {params['namespace']}/{params['name']}"

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        from cidrx.kube.errors import Conflict

        restore: dict[str, Any] = found["restore"]
        for _ in range(CONFLICT_RETRIES):
            ds = SetDaemonSetEnv()._get(step, params, ctx)
            restore_env(ds, params["container"], restore)
            try:
                kube_api(ctx, step).replace_daemonset(ds)  # guarded by metadata.resourceVersion
            except Conflict:
                continue
            return {"restored": sorted(restore)}
        raise CloudError(f"DaemonSet {params['namespace']}/{params['name']} kept changing under us; run again")

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        def rolled_out() -> bool | None:
            return True if _rolled_out(SetDaemonSetEnv()._get(step, params, ctx)) else None

        ctx.wait_until(f"DaemonSet {params['name']} rollout", rolled_out, timeout=15 * 60.0, interval=5.0)


class UndoAddonEnv(EnvUndo):
    def _have(self, step: Step, params: dict[str, Any], ctx: StepContext) -> dict[str, Any]:
        return dict(addon_env(str(UpdateAddonEnv()._addon(params, ctx).get("configurationValues") or "")))

    def _where(self, params: dict[str, Any]) -> str:
        return f"in the configuration of add-on {params['addon']}"

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        addon = UpdateAddonEnv()._addon(params, ctx)
        text = str(addon.get("configurationValues") or "")
        try:
            config = json.loads(text) if text.strip() else {}
        except ValueError:
            raise CloudError(f"add-on {params['addon']} configurationValues is not JSON; restore it by hand") from None
        env = dict(config.get("env") or {})
        for k, v in found["restore"].items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = v
        if env:
            config["env"] = env
        else:
            config.pop("env", None)
        update_id = eks_api(ctx).update_addon_configuration(params["cluster"], params["addon"], json.dumps(config))
        return {"update_id": update_id}

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        def settled() -> bool | None:
            status = str(UpdateAddonEnv()._addon(params, ctx).get("status") or "ACTIVE")
            if status in ("UPDATE_FAILED", "DEGRADED"):
                raise CloudError(f"add-on {params['addon']} is {status} after its configuration was restored")
            return True if status == "ACTIVE" else None

        ctx.wait_until(f"add-on {params['addon']} update", settled, timeout=SHORT_TIMEOUT * 3, interval=5.0)


def _env_hcl(e: Emitter, step: Step) -> None:
    p = step.params
    env = dict(p["env"])
    if step.action == UPDATE_ADDON_ENV.name:
        b = Block("resource", ("aws_eks_addon", tf_name(p["addon"])))
        b.attr("cluster_name", p["cluster"]).attr("addon_name", p["addon"])
        b.attr("configuration_values", Expr(f"jsonencode({hcl_object({'env': env})})"))
        b.attr("resolve_conflicts_on_update", "PRESERVE")
        e.depends(b, step)
        address = e.add(
            step,
            b,
            f"{step.description}.\nThe add-on already exists, so it is imported. configuration_values replaces the "
            "add-on's whole configuration: if it already carries settings (or your configuration already has this "
            "aws_eks_addon), merge the env keys into that instead of using this resource.",
        )
        e.imports.append(import_block(address, f"{p['cluster']}:{p['addon']}"))
        return
    # kubernetes_env (hashicorp/kubernetes >= 2.10) owns only these variables of one container; `force`
    # takes them over from the field manager that set them before (kubectl, EKS, a Helm chart).
    b = Block("resource", ("kubernetes_env", tf_name(p["name"])))
    b.attr("api_version", "apps/v1").attr("kind", "DaemonSet").attr("container", p["container"]).attr("force", True)
    b.block("metadata").attr("name", p["name"]).attr("namespace", p["namespace"])
    for name, value in env.items():
        b.block("env").attr("name", name).attr("value", str(value))
    e.depends(b, step)
    e.add(
        step,
        b,
        f"{step.description}.\nThe VPC CNI is self-managed here (no EKS add-on); kubernetes_env sets just these "
        "variables on the aws-node container and leaves the rest of the DaemonSet alone. Its rollout restarts "
        "aws-node pods.",
    )


UPDATE_ADDON_ENV = Action(
    "eks.update-addon-env",
    ("eks:UpdateAddon", "eks:DescribeAddon", "eks:DescribeAddonConfiguration", "eks:DescribeUpdate"),
    UpdateAddonEnv,
    undo=UndoAddonEnv,
    undo_permissions=("eks:UpdateAddon", "eks:DescribeAddon"),
    hcl=_env_hcl,
)
SET_DAEMONSET_ENV = Action(
    "kube.set-daemonset-env",
    ("kubernetes: daemonsets get,update in kube-system",),
    SetDaemonSetEnv,
    undo=UndoDaemonSetEnv,
    undo_permissions=("kubernetes: daemonsets get,update in kube-system",),
    hcl=_env_hcl,
)
