"""How `cidrx rollback` takes back each EKS step action (cidrx.engine.undo.Undo), declared beside the executors.

Each undo finds only what carries the plan's tag (node group, subnets, reservations, ENIConfigs) or what the
plan itself names (its VPC CIDR, not in the VPC before the plan; the route table association of its own
subnet), and settings are put back to the values the apply journal recorded before the change. "In use" is
decided here, before anything is removed, because EC2 refuses some of these deletions only later (a subnet
with network interfaces: DependencyViolation) and moto refuses none of them: a node group with nodes, a
subnet with network interfaces, a VPC CIDR with subnets the plan did not make.
"""

from __future__ import annotations

import json
from typing import Any

from cidrx.engine.executor import Outputs, StepContext
from cidrx.errors import CloudError
from cidrx.model.plan import DIGEST_TAG, Step
from cidrx.providers.eks.facts.cni import addon_env
from cidrx.providers.eks.facts.subnets import NODEGROUP_LABEL
from cidrx.providers.eks.steps import (
    CONFLICT_RETRIES,
    ENICONFIG,
    NODEGROUP_TIMEOUT,
    SHORT_TIMEOUT,
    AssociateRouteTable,
    AssociateVpcCidrFromPool,
    CreateSubnet,
    ReserveSubnetCidr,
    SetDaemonSetEnv,
    UpdateAddonEnv,
    _container,
    _eks,
    _kube,
    _rolled_out,
)


def _tag(obj: dict[str, Any]) -> str | None:
    tags = obj.get("Tags") or obj.get("tags") or {}
    if isinstance(tags, list):
        tags = {t.get("Key"): t.get("Value") for t in tags}
    value = tags.get(DIGEST_TAG)
    return str(value) if value is not None else None


def _recorded_before(step: Step, ctx: StepContext) -> dict[str, Any] | None:
    before = (ctx.recorded_before.get(step.id) or {}).get("before")
    return dict(before) if isinstance(before, dict) else None


class UndoNodegroup:
    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        api = _eks(ctx)
        if params["name"] not in api.list_nodegroups(params["cluster"]):
            return None
        ng = api.describe_nodegroup(params["cluster"], params["name"])
        if _tag(ng) != ctx.plan_id:
            return None  # not this plan's: never touched
        return {"nodegroup": params["name"], "status": str(ng.get("status") or "")}

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        if ctx.apis.kube is None:
            return f"cannot see whether node group {params['name']} has nodes without cluster access"
        nodes = [
            n["metadata"]["name"]
            for n in _kube(ctx, step).iter_nodes()
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
            _eks(ctx).delete_nodegroup(params["cluster"], params["name"])
        return {"nodegroup": params["name"]}

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        def gone() -> bool | None:
            return True if params["name"] not in _eks(ctx).list_nodegroups(params["cluster"]) else None

        ctx.wait_until(f"node group {params['name']} to be deleted", gone, timeout=NODEGROUP_TIMEOUT, interval=15)


def _env_to_restore(have: dict[str, Any], params: dict[str, Any], before: dict[str, Any]) -> dict[str, Any] | None:
    """{name: value before (None: unset)} of the variables still set as the plan set them; None when every one
    is back at its before-value already."""
    changed = {k: before.get(k) for k in params["env"] if have.get(k) != before.get(k)}
    return changed or None


def restore_env(obj: dict[str, Any], container: str, restore: dict[str, Any]) -> None:
    """Set the variables of `restore` in the pod template's `container` back ({name: value}, None: unset)."""
    for c in obj["spec"]["template"]["spec"]["containers"]:
        if c.get("name") != container:
            continue
        env = []
        for e in c.get("env") or []:
            if e.get("name") not in restore:
                env.append(e)
            elif restore[e["name"]] is not None:
                env.append({"name": e["name"], "value": restore[e["name"]]})
        c["env"] = env


class _EnvUndo:
    """Puts the variables an env step set back to the values the apply journal recorded before the change."""

    def _have(self, step: Step, params: dict[str, Any], ctx: StepContext) -> dict[str, Any]:
        raise NotImplementedError

    def _where(self, params: dict[str, Any]) -> str:
        raise NotImplementedError

    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        have = self._have(step, params, ctx)
        before = _recorded_before(step, ctx)
        if before is None:
            # No record of the values before (journal lost, or an apply from before cidrx recorded them).
            applied = any(have.get(k) == v for k, v in params["env"].items())
            return {"unknown": True} if applied else None
        restore = _env_to_restore(have, params, before)
        return {"restore": restore} if restore else None

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        if found.get("unknown"):
            return (
                f"the journal beside the plan has no record of {', '.join(params['env'])} {self._where(params)} "
                "before the apply; set them back by hand"
            )
        have = self._have(step, params, ctx)
        others = [k for k in found["restore"] if have.get(k) != params["env"][k]]
        if others:
            return f"{', '.join(others)} {self._where(params)} changed since the apply; set them back by hand"
        return None

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        values = ", ".join(f"{k}={'(unset)' if v is None else v}" for k, v in (found.get("restore") or {}).items())
        return f"restore {values} {self._where(params)}"


class UndoDaemonSetEnv(_EnvUndo):
    def _have(self, step: Step, params: dict[str, Any], ctx: StepContext) -> dict[str, Any]:
        ds = SetDaemonSetEnv()._get(step, params, ctx)
        return {e.get("name"): e.get("value") for e in _container(ds, params["container"]).get("env") or []}

    def _where(self, params: dict[str, Any]) -> str:
        return f"on DaemonSet {params['namespace']}/{params['name']}"

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        from cidrx.kube.api import Conflict

        restore: dict[str, Any] = found["restore"]
        for _ in range(CONFLICT_RETRIES):
            ds = SetDaemonSetEnv()._get(step, params, ctx)
            restore_env(ds, params["container"], restore)
            try:
                _kube(ctx, step).replace_daemonset(ds)  # guarded by metadata.resourceVersion
            except Conflict:
                continue
            return {"restored": sorted(restore)}
        raise CloudError(f"DaemonSet {params['namespace']}/{params['name']} kept changing under us; run again")

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        def rolled_out() -> bool | None:
            return True if _rolled_out(SetDaemonSetEnv()._get(step, params, ctx)) else None

        ctx.wait_until(f"DaemonSet {params['name']} rollout", rolled_out, timeout=15 * 60.0, interval=5.0)


class UndoAddonEnv(_EnvUndo):
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
        update_id = _eks(ctx).update_addon_configuration(params["cluster"], params["addon"], json.dumps(config))
        return {"update_id": update_id}

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        def settled() -> bool | None:
            status = str(UpdateAddonEnv()._addon(params, ctx).get("status") or "ACTIVE")
            if status in ("UPDATE_FAILED", "DEGRADED"):
                raise CloudError(f"add-on {params['addon']} is {status} after its configuration was restored")
            return True if status == "ACTIVE" else None

        ctx.wait_until(f"add-on {params['addon']} update", settled, timeout=SHORT_TIMEOUT * 3, interval=5.0)


class UndoEniConfig:
    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        obj = _kube(ctx, step).get_custom(*ENICONFIG[:3], params["name"])
        if obj is None or (obj.get("metadata", {}).get("labels") or {}).get(DIGEST_TAG) != ctx.plan_id:
            return None
        recorded = ctx.recorded_before.get(step.id) or {}
        before = recorded.get("before") if "before" in recorded else None
        existed = params["name"] in ctx.plan.basis.get("eniconfigs", [])
        if existed and not isinstance(before, dict):
            return {"unknown": True}
        return {"name": params["name"], "before": before if existed else None}

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        if found.get("unknown"):
            return f"ENIConfig {params['name']} existed before the apply and the journal has no record of its spec"
        return None

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        if found.get("before") is not None:
            return f"point ENIConfig {params['name']} back at subnet {found['before'].get('subnet')}"
        return f"delete ENIConfig {params['name']}"

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        from cidrx.kube.api import Conflict

        kube = _kube(ctx, step)
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


def _subnet_id(params: dict[str, Any]) -> str | None:
    """The subnet a step names, when its reference could be resolved (from the journal or the plan tag)."""
    value = params.get("subnet_id")
    if isinstance(value, str) and value.startswith("subnet-"):
        return value
    return None


class UndoRouteTableAssociation:
    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        subnet_id = _subnet_id(params)
        if subnet_id is None:
            return None  # its subnet is gone (or was never made): nothing is associated
        ours = _eks(ctx).find_subnets_by_tag(ctx.plan.basis.get("vpc_id", ""), DIGEST_TAG, ctx.plan_id)
        if subnet_id not in {s["SubnetId"] for s in ours}:
            return None
        found = AssociateRouteTable()._association(params, ctx)
        return {"route_table_id": found[0], "association_id": found[1]} if found else None

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        return None  # a subnet in use is refused by its own undo

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        return f"disassociate subnet {params['subnet_id']} from route table {found['route_table_id']}"

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        _eks(ctx).disassociate_route_table(found["association_id"])
        return {"association_id": found["association_id"]}

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        return None


class UndoSubnet:
    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        found = CreateSubnet()._mine(params, ctx)
        # The CIDR as created: planned, or carved from the CIDR an IPAM pool gave.
        return {"subnet_id": found["SubnetId"], "cidr": str(found.get("CidrBlock") or "")} if found else None

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        enis = [
            e.get("NetworkInterfaceId", "")
            for e in _eks(ctx).describe_network_interfaces(params["vpc_id"])
            if e.get("SubnetId") == found["subnet_id"]
        ]
        if enis:
            return (
                f"subnet {found['subnet_id']} ({found['cidr']}) still has {len(enis)} network interface(s) "
                f"({', '.join(sorted(enis)[:3])})"
            )
        return None

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        return f"delete subnet {found['subnet_id']} ({found['cidr']} in {params['az']})"

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        _eks(ctx).delete_subnet(found["subnet_id"])
        return {"subnet_id": found["subnet_id"]}

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        return None


class UndoVpcCidr:
    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        if params["cidr"] in ctx.plan.basis.get("vpc_cidrs", []):
            return None  # it was there before the plan: not the plan's to remove
        found = _eks(ctx).find_vpc_cidr(params["vpc_id"], params["cidr"])
        return {"association_id": found["AssociationId"]} if found else None

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        from ipaddress import IPv4Network

        cidr = IPv4Network(params["cidr"])
        others = [
            s["SubnetId"]
            for s in _eks(ctx).describe_subnets(params["vpc_id"])
            if IPv4Network(s["CidrBlock"]).subnet_of(cidr) and _tag(s) != ctx.plan_id
        ]
        if others:
            return f"{params['cidr']} holds subnet(s) this plan did not make ({', '.join(sorted(others))})"
        return None

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        return f"disassociate secondary CIDR {params['cidr']} from {params['vpc_id']}"

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        _eks(ctx).disassociate_vpc_cidr(found["association_id"])
        return {"association_id": found["association_id"]}

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        def gone() -> bool | None:
            return True if _eks(ctx).find_vpc_cidr(params["vpc_id"], params["cidr"]) is None else None

        ctx.wait_until(f"{params['cidr']} to be disassociated", gone, timeout=SHORT_TIMEOUT, interval=2.0)


class UndoVpcCidrFromPool(UndoVpcCidr):
    """The CIDR an IPAM pool gave: found as the apply found it (new since the plan, of the planned size, allocated
    to this VPC by the pool); disassociating it returns the allocation to the pool."""

    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        found = AssociateVpcCidrFromPool()._find(params, ctx)
        return {"association_id": found["AssociationId"], "cidr": found["CidrBlock"]} if found else None

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        return super().in_use(step, {**params, "cidr": found["cidr"]}, found, ctx)

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        return f"disassociate {found['cidr']} (from IPAM pool {params['ipam_pool_id']}) from {params['vpc_id']}"

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        return {**super().act(step, params, found, ctx), "cidr": found["cidr"]}

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        super().wait(step, {**params, "cidr": outputs["cidr"]}, outputs, ctx)


class UndoSubnetCidrReservation:
    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        found = ReserveSubnetCidr()._found(params, ctx)
        if found is None:
            return None
        tag = _tag(found)
        # Untagged (an endpoint that drops the tags, as moto does): the plan's when it reserves exactly the
        # plan's CIDR and the subnet had no such reservation when the plan was made.
        before = (ctx.plan.basis.get("reservations") or {}).get(params["subnet_id"]) or []
        if tag != ctx.plan_id and (tag is not None or params["cidr"] in before):
            return None
        return {"reservation_id": found.get("SubnetCidrReservationId", "")}

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        return None  # prefixes already assigned inside it stay assigned: EC2 only stops keeping the rest free

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        return f"delete the reservation of {params['cidr']} in {params['subnet_id']}"

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        _eks(ctx).delete_subnet_cidr_reservation(found["reservation_id"])
        return {"reservation_id": found["reservation_id"]}

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        return None
