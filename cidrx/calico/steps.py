"""The Calico plan actions as apply-engine executors: release leaked addresses, release an empty block,
create an IPPool.

Why it exists: Calico's own IPAM (calico-ipam on each node, kube-controllers) writes the same IPAMBlock
objects at any moment, so every write here is a compare-and-swap on metadata.resourceVersion (replace, or
delete with a precondition). On a conflict the object is read again and the decision made again; an
address whose pod is live again, or that was given to someone else meanwhile, is never released. The
block's invariants are kept the way Calico keeps them: a released ordinal goes back into `unallocated`,
its `allocations` entry becomes null, attributes nothing points at any more are dropped (the remaining
indexes renumbered), and each handle's per-block count is set to what the block really holds.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cidrx.calico.analyze import block_ip, leak_reason
from cidrx.calico.collect import GROUP, VERSION, attribute_from
from cidrx.calico.plan import ippool_object
from cidrx.engine.executor import Executor, Outputs, StepContext
from cidrx.errors import CloudError, StalePlan
from cidrx.model.plan import DIGEST_TAG, Step

if TYPE_CHECKING:
    from cidrx.kube.api import KubeApi

CONFLICT_RETRIES = 5
JSON = dict[str, Any]


def _kube(ctx: StepContext, step: Step) -> KubeApi:
    kube: KubeApi | None = getattr(ctx.apis, "kube", None)
    if kube is None:
        raise CloudError(f"step {step.id} needs Kubernetes access; pass --kubeconfig/--context (not --no-kube)")
    return kube


def _get(api: KubeApi, plural: str, name: str) -> JSON | None:
    return api.get_custom(GROUP, VERSION, plural, name) if name else None


def _rv(obj: JSON) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def _spec(obj: JSON) -> JSON:
    spec: JSON = obj.get("spec") or {}
    return spec


# --------------------------------------------------------------------------------------------------
# Block arithmetic (pure)
# --------------------------------------------------------------------------------------------------


def _attr_at(spec: JSON, ordinal: int) -> JSON | None:
    allocations = spec.get("allocations") or []
    attributes = spec.get("attributes") or []
    if not 0 <= ordinal < len(allocations):
        return None
    index = allocations[ordinal]
    if not isinstance(index, int) or not 0 <= index < len(attributes):
        return None
    attr: JSON = attributes[index]
    return attr


def release_ordinals(block: JSON, ordinals: set[int]) -> JSON:
    """A copy of the IPAMBlock `block` with `ordinals` freed and the invariants kept (module doc)."""
    new = copy.deepcopy(block)
    spec = new.setdefault("spec", {})
    allocations: list[int | None] = list(spec.get("allocations") or [])
    for o in ordinals:
        allocations[o] = None
    unallocated = [u for u in spec.get("unallocated") or [] if u not in ordinals]
    spec["unallocated"] = unallocated + sorted(ordinals)
    attributes = spec.get("attributes") or []
    kept = sorted({a for a in allocations if a is not None})
    renumber = {old: new_index for new_index, old in enumerate(kept)}
    spec["attributes"] = [attributes[old] for old in kept]
    spec["allocations"] = [None if a is None else renumber[a] for a in allocations]
    seq = spec.get("sequenceNumberForAllocation")
    if isinstance(seq, dict):  # Calico >= 3.20 tracks one sequence number per allocated ordinal
        spec["sequenceNumberForAllocation"] = {k: v for k, v in seq.items() if k not in {str(o) for o in ordinals}}
    return new


def handle_count(spec: JSON, handle_id: str) -> int:
    attributes = spec.get("attributes") or []
    return sum(
        1
        for a in spec.get("allocations") or []
        if isinstance(a, int) and 0 <= a < len(attributes) and attributes[a].get("handle_id") == handle_id
    )


# --------------------------------------------------------------------------------------------------
# calico.release-ips
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Decision:
    release: list[JSON]  # planned entries to free now
    kept: list[JSON]  # {"ip", "why"}


def _pod_state(api: KubeApi, ref: str) -> Any:
    from cidrx.kube.collect import pod_state_from

    namespace, _, name = ref.partition("/")
    pod = api.get_custom("", "v1", "pods", name, namespace)
    return None if pod is None else pod_state_from(pod)


def _decide(api: KubeApi, block: JSON, entries: list[JSON]) -> _Decision:
    """Which planned addresses may be freed now, judged on the block and pods as they are at this moment."""
    spec = _spec(block)
    release: list[JSON] = []
    kept: list[JSON] = []
    for entry in entries:
        ordinal, ip = int(entry["ordinal"]), str(entry["ip"])
        if block_ip(str(spec.get("cidr")), ordinal) != ip:
            kept.append({"ip": ip, "why": "the block no longer covers this address"})
            continue
        raw = _attr_at(spec, ordinal)
        if raw is None:
            continue  # already free: nothing to do, nothing to report
        attr = attribute_from(raw)
        if attr.handle_id != entry.get("handle_id") or attr.pod_ref != entry.get("pod"):
            kept.append({"ip": ip, "why": f"now allocated to {attr.pod_ref or attr.handle_id}"})
            continue
        if attr.pod_ref is None:  # a tunnel address, or one no pod holds: never ours to release
            kept.append({"ip": ip, "why": f"held by {attr.type or attr.handle_id}, not by a pod"})
            continue
        why = leak_reason(attr, ip, _pod_state(api, attr.pod_ref))
        if why is None:
            kept.append({"ip": ip, "why": f"pod {attr.pod_ref} is live"})
            continue
        release.append(entry)
    return _Decision(release, kept)


def _handles_settled(api: KubeApi, block: JSON | None, entries: list[JSON]) -> bool:
    spec = _spec(block) if block is not None else {}
    cidr = str(spec.get("cidr") or "")
    for entry in entries:
        handle = _get(api, "ipamhandles", str(entry.get("handle") or ""))
        if handle is None or not cidr:
            continue
        counts = _spec(handle).get("block") or {}
        actual = handle_count(spec, str(entry.get("handle_id")))
        if counts.get(cidr, 0) != actual and not (actual == 0 and cidr not in counts):
            return False
    return True


def _settle_handle(api: KubeApi, name: str, handle_id: str, cidr: str, actual: int) -> None:
    """Set the handle's count for `cidr` to `actual` (dropping it at zero, deleting an empty handle)."""
    for _ in range(CONFLICT_RETRIES):
        handle = _get(api, "ipamhandles", name)
        if handle is None or _spec(handle).get("handleID", handle_id) != handle_id:
            return
        counts = dict(_spec(handle).get("block") or {})
        if counts.get(cidr) == actual or (actual == 0 and cidr not in counts):
            return
        if actual:
            counts[cidr] = actual
        else:
            counts.pop(cidr, None)
        from cidrx.kube.api import Conflict

        try:
            if counts:
                updated = copy.deepcopy(handle)
                updated["spec"]["block"] = counts
                api.replace_custom(GROUP, VERSION, "ipamhandles", updated)
            else:
                api.delete_custom(GROUP, VERSION, "ipamhandles", name, resource_version=_rv(handle))
            return
        except Conflict:
            continue
    raise CloudError(f"IPAMHandle {name} kept changing; run the same command again")


class ReleaseIps:
    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        api = _kube(ctx, step)
        block = _get(api, "ipamblocks", params["block"])
        if block is None:
            return {"block": params["block"], "released": [], "kept": [], "gone": True}
        decision = _decide(api, block, params["ips"])
        if decision.release or not _handles_settled(api, block, params["ips"]):
            return None
        return {"block": params["block"], "released": [], "kept": decision.kept}

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        from cidrx.kube.api import Conflict

        api = _kube(ctx, step)
        for _ in range(CONFLICT_RETRIES):
            block = _get(api, "ipamblocks", params["block"])
            if block is None:
                return {"block": params["block"], "released": [], "kept": [], "gone": True}
            decision = _decide(api, block, params["ips"])
            updated = block
            if decision.release:
                updated = release_ordinals(block, {int(e["ordinal"]) for e in decision.release})
                try:
                    updated = api.replace_custom(GROUP, VERSION, "ipamblocks", updated)
                except Conflict:
                    continue  # someone wrote the block since we read it: read it again and decide again
            spec = _spec(updated)
            for entry in params["ips"]:
                handle_id = str(entry.get("handle_id"))
                actual = handle_count(spec, handle_id)
                _settle_handle(api, str(entry.get("handle") or ""), handle_id, str(spec.get("cidr")), actual)
            return {
                "block": params["block"],
                "released": [e["ip"] for e in decision.release],
                "kept": decision.kept,
            }
        raise CloudError(f"IPAMBlock {params['block']} kept changing while releasing addresses; run again")

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        return None

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        block = _get(_kube(ctx, step), "ipamblocks", params["block"])
        if block is None:
            return
        spec = _spec(block)
        released = set(outputs.get("released") or [])
        for entry in params["ips"]:
            if entry["ip"] not in released:
                continue
            raw = _attr_at(spec, int(entry["ordinal"]))
            if raw is not None and raw.get("handle_id") == entry.get("handle_id"):
                raise CloudError(f"{entry['ip']} is still allocated to {entry.get('handle_id')} in {params['block']}")


# --------------------------------------------------------------------------------------------------
# calico.release-empty-block
# --------------------------------------------------------------------------------------------------


def _find_affinity(api: KubeApi, params: dict[str, Any]) -> JSON | None:
    found = _get(api, "blockaffinities", str(params.get("affinity") or ""))
    if found is not None:
        return found
    for obj in api.iter_custom(GROUP, VERSION, "blockaffinities"):
        spec = _spec(obj)
        if spec.get("node") == params["node"] and spec.get("cidr") == params["cidr"]:
            return obj
    return None


def _other_blocks(api: KubeApi, node: str, cidr: str) -> int:
    return sum(
        1
        for obj in api.iter_custom(GROUP, VERSION, "blockaffinities")
        if _spec(obj).get("node") == node and _spec(obj).get("cidr") != cidr
    )


def _keep_reason(api: KubeApi, block: JSON, params: dict[str, Any]) -> str | None:
    spec = _spec(block)
    used = sum(1 for a in spec.get("allocations") or [] if a is not None)
    if used:
        return f"block now holds {used} address(es)"
    if spec.get("affinity") != f"host:{params['node']}" or spec.get("cidr") != params["cidr"]:
        return f"block now belongs to {spec.get('affinity') or 'no node'}"
    if _other_blocks(api, params["node"], params["cidr"]) < 1:
        return f"it is now the only block of {params['node']}"
    return None


def _delete_affinity(api: KubeApi, params: dict[str, Any]) -> None:
    from cidrx.kube.api import Conflict

    for _ in range(CONFLICT_RETRIES):
        affinity = _find_affinity(api, params)
        if affinity is None:
            return
        spec = _spec(affinity)
        if spec.get("node") != params["node"] or spec.get("cidr") != params["cidr"]:
            return
        name = str((affinity.get("metadata") or {}).get("name"))
        try:
            api.delete_custom(GROUP, VERSION, "blockaffinities", name, resource_version=_rv(affinity))
            return
        except Conflict:
            continue
    raise CloudError(f"BlockAffinity of {params['cidr']} kept changing; run the same command again")


class ReleaseEmptyBlock:
    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        api = _kube(ctx, step)
        block = _get(api, "ipamblocks", params["block"])
        if block is None:
            return None if _find_affinity(api, params) is not None else {"block": params["block"], "released": True}
        why = _keep_reason(api, block, params)
        return {"block": params["block"], "released": False, "kept": why} if why else None

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        from cidrx.kube.api import Conflict

        api = _kube(ctx, step)
        for _ in range(CONFLICT_RETRIES):
            block = _get(api, "ipamblocks", params["block"])
            uid = ""
            if block is not None:
                why = _keep_reason(api, block, params)
                if why:
                    return {"block": params["block"], "released": False, "kept": why}
                uid = str((block.get("metadata") or {}).get("uid") or "")
                try:
                    api.delete_custom(GROUP, VERSION, "ipamblocks", params["block"], resource_version=_rv(block))
                except Conflict:
                    continue  # an address was allocated (or the block touched) since we read it: decide again
            _delete_affinity(api, params)
            return {"block": params["block"], "released": True, "uid": uid}
        raise CloudError(f"IPAMBlock {params['block']} kept changing; run the same command again")

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        return None

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        if not outputs.get("released"):
            return
        block = _get(_kube(ctx, step), "ipamblocks", params["block"])
        # Calico may claim the same CIDR again at once (a new object, new uid): that is not our block.
        if block is not None and (block.get("metadata") or {}).get("uid") == outputs.get("uid"):
            raise CloudError(f"IPAMBlock {params['block']} still exists after its delete")


# --------------------------------------------------------------------------------------------------
# calico.create-ippool
# --------------------------------------------------------------------------------------------------


class CreateIpPool:
    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        pool = _get(_kube(ctx, step), "ippools", params["name"])
        if pool is None:
            return None
        labels = (pool.get("metadata") or {}).get("labels") or {}
        if labels.get(DIGEST_TAG) != ctx.plan_id:
            raise StalePlan(
                f"IPPool {params['name']} exists and was not created by this plan ({_spec(pool).get('cidr')}); "
                "nothing was changed; make a new plan"
            )
        return {"name": params["name"], "cidr": _spec(pool).get("cidr")}

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        from cidrx.kube.api import AlreadyExists

        api = _kube(ctx, step)
        try:
            api.create_custom(GROUP, VERSION, "ippools", "IPPool", ippool_object(params, ctx.plan_id))
        except AlreadyExists:
            found = self.check(step, params, ctx)
            if found is None:
                raise
            return found
        return {"name": params["name"], "cidr": params["cidr"]}

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        return None

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        pool = _get(_kube(ctx, step), "ippools", params["name"])
        spec = _spec(pool) if pool is not None else {}
        if spec.get("cidr") != params["cidr"] or int(spec.get("blockSize") or 0) != params["block_size"]:
            raise CloudError(f"IPPool {params['name']} is not {params['cidr']} with /{params['block_size']} blocks")


EXECUTORS: dict[str, Executor] = {
    "calico.release-ips": ReleaseIps(),
    "calico.release-empty-block": ReleaseEmptyBlock(),
    "calico.create-ippool": CreateIpPool(),
}
