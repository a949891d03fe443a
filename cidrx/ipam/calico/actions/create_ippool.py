"""The `calico.create-ippool` step action: its declaration, its executor, its undo and its Terraform.

Why it exists: the calico-pool plan adds address space as one new IPPool, labelled with the plan's id so a
repeated apply finds it, and the same object is what `--emit terraform` writes as a kubernetes_manifest.

Undo: only an IPPool labelled with the plan's id is removed, and only while nothing uses it: no IPAM block has
been carved from its CIDR (a block holds allocations and a node's affinity) and no pod has an address in it.
Deleting follows Calico's own order (libcalico-go/lib/clientv3/ippool.go, ipPools.Delete, projectcalico/calico
at 87c15906f20c4ca1fda55af92295e7678b0cc0b2): disable the pool first so no new block is claimed from it, look
again, then delete, each write guarded by the resourceVersion just read. Calico's Delete would then release
the pool's block affinities; cidrx refuses any pool that has blocks, so there are none to release.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cidrx import netmath
from cidrx.engine.executor import Outputs, StepContext
from cidrx.errors import CloudError, InUse, StalePlan
from cidrx.ipam.calico.actions.objects import CONFLICT_RETRIES, get_object, group_version, kube_of, spec_of
from cidrx.ipam.calico.model import V1_API
from cidrx.model.plan import DIGEST_TAG, Step
from cidrx.registry import Action

if TYPE_CHECKING:
    from cidrx.render.terraform import Emitter


def ippool_object(params: dict[str, Any], plan_id: str) -> dict[str, Any]:
    """The IPPool a `calico.create-ippool` step creates (metadata and spec), labelled with the plan id: what
    apply sends and what `--emit terraform` writes as a kubernetes_manifest. Always for pods: allowedUses
    Workload (+Tunnel, upstream's default) and assignmentMode Automatic."""
    spec: dict[str, Any] = {
        "cidr": params["cidr"],
        "blockSize": params["block_size"],
        "natOutgoing": bool(params.get("nat_outgoing")),
        "nodeSelector": params.get("node_selector") or "all()",
        "disabled": False,
        "allowedUses": ["Workload", "Tunnel"],
        "assignmentMode": "Automatic",
    }
    if params.get("ipip_mode"):
        spec["ipipMode"] = params["ipip_mode"]
    if params.get("vxlan_mode"):
        spec["vxlanMode"] = params["vxlan_mode"]
    return {"metadata": {"name": params["name"], "labels": {DIGEST_TAG: plan_id}}, "spec": spec}


class CreateIpPool:
    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        pool = get_object(kube_of(ctx, step), params, "ippools", params["name"])
        if pool is None:
            return None
        labels = (pool.get("metadata") or {}).get("labels") or {}
        if labels.get(DIGEST_TAG) != ctx.plan_id:
            raise StalePlan(
                f"IPPool {params['name']} exists and was not created by this plan ({spec_of(pool).get('cidr')}); "
                "nothing was changed; make a new plan"
            )
        return {"name": params["name"], "cidr": spec_of(pool).get("cidr")}

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        from cidrx.kube.errors import AlreadyExists

        api = kube_of(ctx, step)
        try:
            api.create_custom(*group_version(params), "ippools", "IPPool", ippool_object(params, ctx.plan_id))
        except AlreadyExists:
            found = self.check(step, params, ctx)
            if found is None:
                raise
            return found
        return {"name": params["name"], "cidr": params["cidr"]}

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        return None

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        pool = get_object(kube_of(ctx, step), params, "ippools", params["name"])
        spec = spec_of(pool) if pool is not None else {}
        if spec.get("cidr") != params["cidr"] or int(spec.get("blockSize") or 0) != params["block_size"]:
            raise CloudError(f"IPPool {params['name']} is not {params['cidr']} with /{params['block_size']} blocks")


def _ours(pool: dict[str, Any] | None, plan_id: str) -> bool:
    return pool is not None and ((pool.get("metadata") or {}).get("labels") or {}).get(DIGEST_TAG) == plan_id


def _users(step: Step, params: dict[str, Any], ctx: StepContext) -> str | None:
    api = kube_of(ctx, step)
    net = netmath.parse_cidr(params["cidr"])
    blocks = []
    for b in api.iter_custom(*group_version(params), "ipamblocks"):
        cidr = spec_of(b).get("cidr")
        if cidr and netmath.overlaps(netmath.parse_cidr(str(cidr)), net):
            used = sum(1 for a in spec_of(b).get("allocations") or [] if a is not None)
            blocks.append(f"{cidr} ({used} allocated)")
    if blocks:
        return f"IPPool {params['name']} has {len(blocks)} IPAM block(s): {', '.join(sorted(blocks)[:3])}"
    pods = api.pods_in(params["cidr"])
    if pods:
        return f"{len(pods)} pod(s) have addresses in {params['cidr']} ({', '.join(sorted(pods)[:3])})"
    return None


class UndoIpPool:
    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        pool = get_object(kube_of(ctx, step), params, "ippools", params["name"])
        return {"name": params["name"], "cidr": params["cidr"]} if _ours(pool, ctx.plan_id) else None

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        return _users(step, params, ctx)

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        return f"disable, then delete IPPool {params['name']} {params['cidr']}"

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        from cidrx.kube.errors import Conflict

        api = kube_of(ctx, step)
        for _ in range(CONFLICT_RETRIES):
            pool = get_object(api, params, "ippools", params["name"])
            if not _ours(pool, ctx.plan_id):
                return {"name": params["name"]}
            assert pool is not None
            try:
                if not spec_of(pool).get("disabled"):
                    pool["spec"] = {**spec_of(pool), "disabled": True}
                    api.replace_custom(*group_version(params), "ippools", pool)
                    continue  # look again with the pool disabled: nothing can claim a block from it now
                blocker = _users(step, params, ctx)
                if blocker:
                    raise InUse(f"cannot delete IPPool {params['name']}: {blocker}", hint="it stays disabled")
                rv = str((pool.get("metadata") or {}).get("resourceVersion") or "")
                api.delete_custom(*group_version(params), "ippools", params["name"], resource_version=rv)
            except Conflict:
                continue
            return {"name": params["name"]}
        raise CloudError(f"IPPool {params['name']} kept changing under us; run the same command again")

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        return None


def terraform(e: Emitter, step: Step) -> None:
    """The step as Terraform: the IPPool as a kubernetes_manifest (with an import block once an apply created
    it), written into the emitter of the plan's document (cidrx.ipam.calico.terraform)."""
    from cidrx.render.hcl import Block, import_block, tf_name

    p = step.params
    api = str(p.get("api") or V1_API)  # the API the cluster's Calico objects were read from
    manifest = {"apiVersion": api, "kind": "IPPool", **ippool_object(p, e.plan.plan_id)}
    b = Block("resource", ("kubernetes_manifest", f"ippool_{tf_name(p['name'])}"))
    b.attr("manifest", manifest)
    address = e.add(
        step,
        b,
        f"{step.description}.\nCalico's Kubernetes datastore CRD, as cidrx writes it; with the Calico API server "
        "installed you may prefer projectcalico.org/v3 (same spec).",
    )
    if e.out(step.id, "name"):
        e.imports.append(import_block(address, f"apiVersion={api},kind=IPPool,name={p['name']}"))


# Declared once: the pool plan attaches its name and permissions to its Step, `cidrx permissions` prints them
# without making a plan, apply runs its executor, rollback its undo, `--emit terraform` its `hcl`
# (called with the plan's Terraform emitter and the step).
CREATE_IPPOOL = Action(
    "calico.create-ippool",
    ("kubernetes: ippools.crd.projectcalico.org get,create",),
    executor=CreateIpPool,
    undo=UndoIpPool,
    undo_permissions=(
        "kubernetes: ippools.crd.projectcalico.org get,update,delete",
        "kubernetes: ipamblocks.crd.projectcalico.org list",
        "kubernetes: pods list",
    ),
    hcl=terraform,
)
