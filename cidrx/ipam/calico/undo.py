"""How `cidrx rollback` takes back a `calico.create-ippool` step (cidrx.engine.undo.Undo).

Only an IPPool labelled with the plan's id is removed, and only while nothing uses it: no IPAM block has been
carved from its CIDR (a block holds allocations and a node's affinity) and no pod has an address in it.
Deleting follows Calico's own order (libcalico-go/lib/clientv3/ippool.go, ipPools.Delete, projectcalico/calico
at 87c15906f20c4ca1fda55af92295e7678b0cc0b2): disable the pool first so no new block is claimed from it, look
again, then delete, each write guarded by the resourceVersion just read. Calico's Delete would then release
the pool's block affinities; cidrx refuses any pool that has blocks, so there are none to release.
"""

from __future__ import annotations

from typing import Any

from cidrx import netmath
from cidrx.engine.executor import Outputs, StepContext
from cidrx.errors import CloudError, InUse
from cidrx.ipam.calico.steps import CONFLICT_RETRIES, _get, _gv, _kube, _spec
from cidrx.model.plan import DIGEST_TAG, Step


def _ours(pool: dict[str, Any] | None, plan_id: str) -> bool:
    return pool is not None and ((pool.get("metadata") or {}).get("labels") or {}).get(DIGEST_TAG) == plan_id


def _users(step: Step, params: dict[str, Any], ctx: StepContext) -> str | None:
    api = _kube(ctx, step)
    net = netmath.parse_cidr(params["cidr"])
    blocks = []
    for b in api.iter_custom(*_gv(params), "ipamblocks"):
        cidr = _spec(b).get("cidr")
        if cidr and netmath.overlaps(netmath.parse_cidr(str(cidr)), net):
            used = sum(1 for a in _spec(b).get("allocations") or [] if a is not None)
            blocks.append(f"{cidr} ({used} allocated)")
    if blocks:
        return f"IPPool {params['name']} has {len(blocks)} IPAM block(s): {', '.join(sorted(blocks)[:3])}"
    pods = api.pods_in(params["cidr"])
    if pods:
        return f"{len(pods)} pod(s) have addresses in {params['cidr']} ({', '.join(sorted(pods)[:3])})"
    return None


class UndoIpPool:
    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        pool = _get(_kube(ctx, step), params, "ippools", params["name"])
        return {"name": params["name"], "cidr": params["cidr"]} if _ours(pool, ctx.plan_id) else None

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        return _users(step, params, ctx)

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        return f"disable, then delete IPPool {params['name']} {params['cidr']}"

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        from cidrx.kube.errors import Conflict

        api = _kube(ctx, step)
        for _ in range(CONFLICT_RETRIES):
            pool = _get(api, params, "ippools", params["name"])
            if not _ours(pool, ctx.plan_id):
                return {"name": params["name"]}
            assert pool is not None
            try:
                if not _spec(pool).get("disabled"):
                    pool["spec"] = {**_spec(pool), "disabled": True}
                    api.replace_custom(*_gv(params), "ippools", pool)
                    continue  # look again with the pool disabled: nothing can claim a block from it now
                blocker = _users(step, params, ctx)
                if blocker:
                    raise InUse(f"cannot delete IPPool {params['name']}: {blocker}", hint="it stays disabled")
                rv = str((pool.get("metadata") or {}).get("resourceVersion") or "")
                api.delete_custom(*_gv(params), "ippools", params["name"], resource_version=rv)
            except Conflict:
                continue
            return {"name": params["name"]}
        raise CloudError(f"IPPool {params['name']} kept changing under us; run the same command again")

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        return None
