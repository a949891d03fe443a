"""The EKS plan actions as apply-engine executors: each finds its own earlier work by the plan tag before
acting, so a crashed or repeated apply converges without duplicates.

Writes that can race use the API's guard: Kubernetes objects are replaced with their resourceVersion
(a concurrent writer makes the replace fail with 409, and the step re-reads and decides again).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from ipaddress import IPv4Network
from typing import TYPE_CHECKING, Any

from cidrx.engine.executor import Executor, Outputs, StepContext
from cidrx.errors import CloudError, InvalidInput, StalePlan
from cidrx.model.plan import DIGEST_TAG, Step
from cidrx.providers.eks.facts.addon_schema import schema_problem
from cidrx.providers.eks.facts.cni import addon_env
from cidrx.providers.eks.facts.ipam_pools import GONE, subnet_cidr
from cidrx.providers.eks.plan import ACTIONS
from cidrx.registry import executors

if TYPE_CHECKING:
    from cidrx.kube.api import KubeApi
    from cidrx.providers.eks.api import EksApi

ENICONFIG = ("crd.k8s.amazonaws.com", "v1alpha1", "eniconfigs", "ENIConfig")
CONFLICT_RETRIES = 5
# CreateNodegroup typically takes 3-10 minutes; VPC CIDR association and add-on updates take seconds.
NODEGROUP_TIMEOUT = 40 * 60.0
SHORT_TIMEOUT = 5 * 60.0


@dataclass(frozen=True)
class EksApis:
    eks: EksApi
    kube: KubeApi | None


def _eks(ctx: StepContext) -> EksApi:
    apis: EksApis = ctx.apis
    return apis.eks


def _kube(ctx: StepContext, step: Step) -> KubeApi:
    apis: EksApis = ctx.apis
    if apis.kube is None:
        raise CloudError(f"step {step.id} needs Kubernetes access; pass --kubeconfig/--context (not --no-kube)")
    return apis.kube


def _tags(ctx: StepContext, tags: dict[str, str] | None = None) -> dict[str, str]:
    return {**(tags or {}), DIGEST_TAG: ctx.plan_id}


class AssociateVpcCidr:
    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        found = _eks(ctx).find_vpc_cidr(params["vpc_id"], params["cidr"])
        return {"association_id": found["AssociationId"]} if found else None

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        assoc = _eks(ctx).associate_vpc_cidr(params["vpc_id"], params["cidr"])
        return {"association_id": assoc["AssociationId"]}

    def _state(self, params: dict[str, Any], ctx: StepContext, association_id: str) -> str:
        vpc = _eks(ctx).describe_vpc(params["vpc_id"])
        for assoc in vpc.get("CidrBlockAssociationSet", []):
            if assoc.get("AssociationId") == association_id:
                return str(assoc.get("CidrBlockState", {}).get("State", ""))
        return "missing"

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        def probe() -> str | None:
            state = self._state(params, ctx, outputs["association_id"])
            if state in ("failed", "failing", "disassociated", "missing"):
                raise CloudError(f"association of {cidr} with {params['vpc_id']} ended in state {state}")
            return state if state == "associated" else None

        cidr = outputs.get("cidr") or params["cidr"]
        ctx.wait_until(f"{cidr} to be associated", probe, timeout=SHORT_TIMEOUT, interval=2.0)

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        state = self._state(params, ctx, outputs["association_id"])
        if state != "associated":
            cidr = outputs.get("cidr") or params["cidr"]
            raise CloudError(f"{cidr} is {state} on {params['vpc_id']}, expected associated")


class AssociateVpcCidrFromPool(AssociateVpcCidr):
    """AssociateVpcCidrBlock from an IPAM pool (cidrx.providers.eks.facts.ipam_pools); its outputs carry the CIDR IPAM
    picked. Associations carry no tags: a CIDR of the planned size from the pool that the VPC gained after the
    plan was made is this plan's (the drift check refuses an apply when the VPC gained any other CIDR); the
    journal normally records it anyway."""

    def _find(self, params: dict[str, Any], ctx: StepContext) -> dict[str, Any] | None:
        vpc = _eks(ctx).describe_vpc(params["vpc_id"])
        before = set(ctx.plan.basis.get("vpc_cidrs", ()))
        candidates = [
            a
            for a in vpc.get("CidrBlockAssociationSet", [])
            if a.get("CidrBlockState", {}).get("State") not in GONE
            and a.get("CidrBlock") not in before
            and IPv4Network(str(a.get("CidrBlock"))).prefixlen == int(params["netmask_length"])
        ]
        if not candidates:
            return None
        allocated = {
            str(a.get("Cidr"))
            for a in _eks(ctx).get_ipam_pool_allocations(params["ipam_pool_id"])
            if a.get("ResourceId") == params["vpc_id"]
        }
        ours = [a for a in candidates if a.get("CidrBlock") in allocated]
        if len(ours) > 1:
            raise CloudError(
                f"{params['vpc_id']} holds {len(ours)} new /{params['netmask_length']} CIDRs from IPAM pool "
                f"{params['ipam_pool_id']}; cannot tell which one this plan made",
                hint="remove the extra association, then run the same command again",
            )
        return dict(ours[0]) if ours else None

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        found = self._find(params, ctx)
        return {"association_id": found["AssociationId"], "cidr": found["CidrBlock"]} if found else None

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        assoc = _eks(ctx).associate_vpc_cidr(
            params["vpc_id"], pool_id=params["ipam_pool_id"], netmask_length=int(params["netmask_length"])
        )
        return {"association_id": assoc["AssociationId"], "cidr": assoc["CidrBlock"]}


class CreateSubnet:
    def _mine(self, params: dict[str, Any], ctx: StepContext) -> dict[str, Any] | None:
        for s in _eks(ctx).find_subnets_by_tag(params["vpc_id"], DIGEST_TAG, ctx.plan_id):
            if s.get("CidrBlock") == subnet_cidr(params) and s.get("AvailabilityZone") == params["az"]:
                return s
        return None

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        found = self._mine(params, ctx)
        return {"subnet_id": found["SubnetId"]} if found else None

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        cidr = subnet_cidr(params)  # planned, or carved from the CIDR an IPAM pool gave
        for s in _eks(ctx).describe_subnets(params["vpc_id"]):
            if s.get("CidrBlock") == cidr:
                tags = {t.get("Key"): t.get("Value") for t in s.get("Tags") or []}
                if tags.get(DIGEST_TAG) == ctx.plan_id:
                    # Created by another run of this very plan (a crashed one, or one racing us before the
                    # plan lock existed): adopt it, as a resume would.
                    return {"subnet_id": s["SubnetId"]}
                raise StalePlan(f"subnet {s['SubnetId']} with {cidr} exists but is not from this plan; make a new plan")
        subnet = _eks(ctx).create_subnet(params["vpc_id"], params["az"], cidr, _tags(ctx, params["tags"]))
        return {"subnet_id": subnet["SubnetId"]}

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        def probe() -> bool | None:
            found = self._mine(params, ctx)
            return True if found and found.get("State", "available") == "available" else None

        ctx.wait_until(f"subnet {outputs['subnet_id']} to be available", probe, timeout=SHORT_TIMEOUT)

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        found = self._mine(params, ctx)
        if found is None or found["SubnetId"] != outputs["subnet_id"]:
            raise CloudError(f"subnet {outputs['subnet_id']} ({subnet_cidr(params)} in {params['az']}) is not there")


class AssociateRouteTable:
    def _association(self, params: dict[str, Any], ctx: StepContext) -> tuple[str, str] | None:
        vpc_id = ctx.plan.basis.get("vpc_id", "")
        for rt in _eks(ctx).describe_route_tables(vpc_id):
            for assoc in rt.get("Associations", []):
                if assoc.get("SubnetId") == params["subnet_id"]:
                    return str(rt["RouteTableId"]), str(assoc["RouteTableAssociationId"])
        return None

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        found = self._association(params, ctx)
        if found is None:
            return None
        table, assoc = found
        if table != params["route_table_id"]:
            raise CloudError(
                f"subnet {params['subnet_id']} is associated with {table}, not {params['route_table_id']}; "
                "someone changed it during apply"
            )
        return {"association_id": assoc}

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        return {"association_id": _eks(ctx).associate_route_table(params["route_table_id"], params["subnet_id"])}

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        return None

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        if self.check(step, params, ctx) is None:
            raise CloudError(f"subnet {params['subnet_id']} is not associated with {params['route_table_id']}")


def _eniconfig_matches(obj: dict[str, Any], params: dict[str, Any]) -> bool:
    spec = obj.get("spec", {})
    return bool(
        spec.get("subnet") == params["subnet"]
        and sorted(spec.get("securityGroups") or []) == sorted(params["security_groups"])
    )


class ApplyEniConfig:
    def before(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        """The ENIConfig's spec before a repoint (None: it did not exist), for `cidrx rollback`."""
        obj = _kube(ctx, step).get_custom(*ENICONFIG[:3], params["name"])
        return {"before": None if obj is None else dict(obj.get("spec") or {})}

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        obj = _kube(ctx, step).get_custom(*ENICONFIG[:3], params["name"])
        return {"name": params["name"]} if obj is not None and _eniconfig_matches(obj, params) else None

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        from cidrx.kube.api import Conflict

        kube = _kube(ctx, step)
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
        ds = _kube(ctx, step).get_daemonset(params["namespace"], params["name"])
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
        from cidrx.kube.api import Conflict

        kube = _kube(ctx, step)
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
        addon = _eks(ctx).describe_addon(params["cluster"], params["addon"])
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
        schema = _eks(ctx).addon_configuration_schema(params["addon"], str(addon.get("addonVersion") or ""))
        problem = schema_problem(schema, config)
        if problem:
            raise InvalidInput(
                f"the {params['addon']} add-on {addon.get('addonVersion')} rejects the configuration this plan "
                f"writes: {problem}; the add-on was not changed"
            )
        update_id = _eks(ctx).update_addon_configuration(params["cluster"], params["addon"], json.dumps(config))
        return {"update_id": update_id}

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        if "update_id" not in outputs:
            return

        def probe() -> bool | None:
            update = _eks(ctx).describe_update(params["cluster"], outputs["update_id"], params["addon"])
            status = update.get("status")
            if status in ("Failed", "Cancelled"):
                errors = "; ".join(e.get("errorMessage", "") for e in update.get("errors", []))
                raise CloudError(f"add-on update {outputs['update_id']} {status}: {errors or 'no detail'}")
            return True if status == "Successful" else None

        ctx.wait_until(f"add-on {params['addon']} update", probe, timeout=SHORT_TIMEOUT * 3, interval=5.0)

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        if not self._carries_env(self._addon(params, ctx), params):
            raise CloudError(f"add-on {params['addon']} does not carry {', '.join(params['env'])}")


class CreateNodegroup:
    def _find(self, params: dict[str, Any], ctx: StepContext) -> dict[str, Any] | None:
        api = _eks(ctx)
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
            "tags": _tags(ctx, params.get("tags")),
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
        ng = _eks(ctx).create_nodegroup(**kwargs)
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


class ReserveSubnetCidr:
    def _found(self, params: dict[str, Any], ctx: StepContext) -> dict[str, Any] | None:
        for r in _eks(ctx).get_subnet_cidr_reservations(params["subnet_id"]):
            if r.get("Cidr") == params["cidr"]:
                return r
        return None

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        found = self._found(params, ctx)
        return {"reservation_id": found.get("SubnetCidrReservationId", "")} if found else None

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        r = _eks(ctx).create_subnet_cidr_reservation(
            params["subnet_id"],
            params["cidr"],
            f"cidrx plan {ctx.plan_id}: keep for /28 prefixes",
            reservation_type=params.get("type", "prefix"),
            tags=_tags(ctx),
        )
        return {"reservation_id": r.get("SubnetCidrReservationId", "")}

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        return None

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        if self._found(params, ctx) is None:
            raise CloudError(f"reservation {params['cidr']} in {params['subnet_id']} is not there")


# Derived from the plan module's declarations: the executor each step action names.
EXECUTORS: dict[str, Executor] = executors(ACTIONS)
