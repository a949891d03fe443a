"""The Calico plan actions as apply-engine executors: release leaked addresses, release an empty block,
create an IPPool.

Why it exists: Calico's own IPAM (calico-ipam on each node, kube-controllers) writes the same IPAMBlock
objects at any moment, so every write here is a compare-and-swap on metadata.resourceVersion (replace, or
delete with a precondition). On a conflict the object is read again and the decision made again; an
address that is live (cidrx.ipam.calico.analyze.leak_reason, judged on the block and the pods as they are
right before the write), or that was given to someone else meanwhile, is never released.

Blocks are written the way Calico's own IPAM writes them (projectcalico/calico libcalico-go/lib/ipam,
commit 87c15906f20c4ca1fda55af92295e7678b0cc0b2): every block update adds 1 to spec.sequenceNumber
(ipam_block_reader_writer.go updateBlock); a release points the ordinal at a new attribute holding only
`releasedAt`, records the block's sequence number in sequenceNumberForAllocation, and the ordinal returns
to `unallocated` only once IPAMConfig ipCooldownSeconds have passed (ipam_block.go release and
garbageCollect; so at 0 in the same write); attributes nothing points at are dropped and the indexes
renumbered. Deleting a block or handle first marks it `deleted` (an update without a bump), then deletes
that version (k8s/resources/ipam_block.go, ipam_handle.go DeleteKVP). An empty block is released as
releaseBlockAffinity does: its confirmed BlockAffinity is marked pendingDeletion, the block deleted, then
the affinity. Each handle's per-block count is set to what the block really holds.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from cidrx.engine.executor import Executor, Outputs, StepContext
from cidrx.errors import CloudError, StalePlan
from cidrx.ipam.calico.analyze import block_ip, leak_reason, live_reason
from cidrx.ipam.calico.collect import affinity_from, api_parts, attribute_from, block_from, config_from, config_plural
from cidrx.ipam.calico.model import V1_API
from cidrx.ipam.calico.plan import ACTIONS, empty_block_keep_reason, ippool_object, parse_time
from cidrx.ipam.liveness import AddressHolders
from cidrx.kube.model import PodState
from cidrx.model.plan import DIGEST_TAG, Step
from cidrx.registry import executors

if TYPE_CHECKING:
    from cidrx.kube.api import KubeApi

CONFLICT_RETRIES = 5
JSON = dict[str, Any]


def _kube(ctx: StepContext, step: Step) -> KubeApi:
    kube: KubeApi | None = getattr(ctx.apis, "kube", None)
    if kube is None:
        raise CloudError(f"step {step.id} needs Kubernetes access; pass --kubeconfig/--context (not --no-kube)")
    return kube


def _gv(params: Mapping[str, Any]) -> tuple[str, str]:
    """(group, version) the step writes: the API its objects were read from (v1 unless the plan says v3)."""
    return api_parts(str(params.get("api") or V1_API))


def _get(api: KubeApi, params: Mapping[str, Any], plural: str, name: str) -> JSON | None:
    return api.get_custom(*_gv(params), plural, name) if name else None


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _cooldown_seconds(api: KubeApi, params: Mapping[str, Any]) -> int:
    """IPAMConfig `default` spec.ipCooldownSeconds as it is now (absent: 0)."""
    plural, _ = config_plural(str(params.get("api") or V1_API))
    found = _get(api, params, plural, "default")
    config = config_from(found) if found is not None else None
    return (config.ip_cooldown_seconds or 0) if config is not None else 0


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


def garbage_collect(spec: JSON, cooldown: int, now: str) -> None:
    """Return to `unallocated` every ordinal whose cooldown entry's `releasedAt` is `cooldown` seconds or
    more in the past, and drop the attributes nothing points at (renumbering the rest), as upstream's
    allocationBlock.garbageCollect does. In place."""
    allocations: list[int | None] = list(spec.get("allocations") or [])
    attributes: list[JSON] = list(spec.get("attributes") or [])
    at = parse_time(now)
    seq_for = spec.get("sequenceNumberForAllocation")
    unallocated = list(spec.get("unallocated") or [])
    for ordinal, index in enumerate(allocations):
        if index is None or not 0 <= index < len(attributes):
            continue
        released = parse_time(str(attributes[index].get("releasedAt") or ""))
        if released is None or at is None:
            continue
        if cooldown < 0 or (at - released).total_seconds() >= cooldown:
            allocations[ordinal] = None
            unallocated.append(ordinal)
            if isinstance(seq_for, dict):
                seq_for.pop(str(ordinal), None)
    kept = sorted({a for a in allocations if a is not None})
    renumber = {old: new_index for new_index, old in enumerate(kept)}
    spec["attributes"] = [attributes[old] for old in kept]
    spec["allocations"] = [None if a is None else renumber[a] for a in allocations]
    spec["unallocated"] = unallocated


def release_ordinals(block: JSON, ordinals: set[int], cooldown: int = 0, now: str = "") -> JSON:
    """A copy of the IPAMBlock `block` with `ordinals` released as upstream's allocationBlock.release does
    (module doc), its sequenceNumber bumped by one."""
    now = now or now_rfc3339()
    new = copy.deepcopy(block)
    spec = new.setdefault("spec", {})
    seq = int(spec.get("sequenceNumber") or 0)
    allocations: list[int | None] = list(spec.get("allocations") or [])
    attributes: list[JSON] = list(spec.get("attributes") or [])
    seq_for = spec.get("sequenceNumberForAllocation")
    if not isinstance(seq_for, dict):
        seq_for = {}
    spec["sequenceNumberForAllocation"] = seq_for
    if ordinals:
        attributes.append({"releasedAt": now})
        for o in sorted(ordinals):
            allocations[o] = len(attributes) - 1
            seq_for[str(o)] = seq
    spec["allocations"], spec["attributes"] = allocations, attributes
    garbage_collect(spec, cooldown, now)
    spec["sequenceNumber"] = seq + 1
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


def _live_pods(api: KubeApi, cidr: str, refs: set[str]) -> dict[str, PodState]:
    """The unfinished pods, read now, that report an address in `cidr` or that `refs` names."""
    from cidrx.kube.collect import POD_FIELD_SELECTOR, pod_state_from
    from cidrx.netmath import parse_cidr

    net = parse_cidr(cidr)
    out: dict[str, PodState] = {}
    for raw in api.pod_records(POD_FIELD_SELECTOR):
        pod = pod_state_from(raw)
        if pod.key in refs or any(_in(ip, net) for ip in pod.ips):
            out[pod.key] = pod
    return out


def _in(ip: str, net: Any) -> bool:
    import ipaddress

    try:
        return ipaddress.ip_address(ip) in net
    except ValueError:
        return False


def _decide(api: KubeApi, block: JSON, entries: list[JSON]) -> _Decision:
    """Which planned addresses may be freed now, judged on the block and pods as they are at this moment
    (the pods are read again here: the plan's view of them is never trusted)."""
    spec = _spec(block)
    cidr = str(spec.get("cidr"))
    refs: set[str] = set()
    for entry in entries:
        raw = _attr_at(spec, int(entry["ordinal"]))
        if raw is not None:
            refs.update(attribute_from(raw).pod_refs)
    pods = _live_pods(api, cidr, refs)
    holders = AddressHolders.of(pods.values())
    release: list[JSON] = []
    kept: list[JSON] = []
    for entry in entries:
        ordinal, ip = int(entry["ordinal"]), str(entry["ip"])
        if block_ip(cidr, ordinal) != ip:
            kept.append({"ip": ip, "why": "the block no longer covers this address"})
            continue
        raw = _attr_at(spec, ordinal)
        if raw is None:
            continue  # already free: nothing to do, nothing to report
        attr = attribute_from(raw)
        if attr.in_cooldown:
            continue  # released meanwhile (by Calico or an earlier run): in cooldown, nothing to do
        if attr.handle_id != entry.get("handle_id") or attr.pod_ref != entry.get("pod"):
            kept.append({"ip": ip, "why": f"now allocated to {attr.pod_ref or attr.handle_id}"})
            continue
        if leak_reason(attr, ip, pods, holders) is None:
            kept.append({"ip": ip, "why": f"live: {live_reason(attr, ip, pods, holders) or 'in use'}"})
            continue
        release.append(entry)
    return _Decision(release, kept)


def _handles_settled(api: KubeApi, params: Mapping[str, Any], block: JSON | None, entries: list[JSON]) -> bool:
    spec = _spec(block) if block is not None else {}
    cidr = str(spec.get("cidr") or "")
    for entry in entries:
        handle = _get(api, params, "ipamhandles", str(entry.get("handle") or ""))
        if handle is None or not cidr:
            continue
        counts = _spec(handle).get("block") or {}
        actual = handle_count(spec, str(entry.get("handle_id")))
        if counts.get(cidr, 0) != actual and not (actual == 0 and cidr not in counts):
            return False
    return True


def _delete_marked(api: KubeApi, params: Mapping[str, Any], plural: str, obj: JSON) -> None:
    """Delete as Calico deletes blocks and handles: mark spec.deleted (an update, no sequence bump), then
    delete exactly that version (an object already marked, by an interrupted run or by Calico, is just
    deleted). Conflict from either write means someone changed it: decide again."""
    written = obj
    if _spec(obj).get("deleted") is not True:
        marked = copy.deepcopy(obj)
        marked.setdefault("spec", {})["deleted"] = True
        written = api.replace_custom(*_gv(params), plural, marked)
    api.delete_custom(*_gv(params), plural, _name(obj), resource_version=_rv(written))


def _settle_handle(api: KubeApi, params: Mapping[str, Any], name: str, handle_id: str, cidr: str, actual: int) -> None:
    """Set the handle's count for `cidr` to `actual` (dropping it at zero, deleting an empty handle)."""
    from cidrx.kube.errors import Conflict

    for _ in range(CONFLICT_RETRIES):
        handle = _get(api, params, "ipamhandles", name)
        if handle is None or _spec(handle).get("handleID", handle_id) != handle_id:
            return
        counts = dict(_spec(handle).get("block") or {})
        if counts.get(cidr) == actual or (actual == 0 and cidr not in counts):
            return
        if actual:
            counts[cidr] = actual
        else:
            counts.pop(cidr, None)
        try:
            if counts:
                updated = copy.deepcopy(handle)
                updated["spec"]["block"] = counts
                api.replace_custom(*_gv(params), "ipamhandles", updated)
            else:
                _delete_marked(api, params, "ipamhandles", handle)
            return
        except Conflict:
            continue
    raise CloudError(f"IPAMHandle {name} kept changing; run the same command again")


class ReleaseIps:
    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        api = _kube(ctx, step)
        block = _get(api, params, "ipamblocks", params["block"])
        if block is None:
            return {"block": params["block"], "released": [], "kept": [], "gone": True}
        decision = _decide(api, block, params["ips"])
        if decision.release or not _handles_settled(api, params, block, params["ips"]):
            return None
        return {"block": params["block"], "released": [], "kept": decision.kept}

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        from cidrx.kube.errors import Conflict

        api = _kube(ctx, step)
        for _ in range(CONFLICT_RETRIES):
            block = _get(api, params, "ipamblocks", params["block"])
            if block is None:
                return {"block": params["block"], "released": [], "kept": [], "gone": True}
            decision = _decide(api, block, params["ips"])
            updated = block
            if decision.release:
                ordinals = {int(e["ordinal"]) for e in decision.release}
                updated = release_ordinals(block, ordinals, _cooldown_seconds(api, params))
                try:
                    updated = api.replace_custom(*_gv(params), "ipamblocks", updated)
                except Conflict:
                    continue  # someone wrote the block since we read it: read it again and decide again
            spec = _spec(updated)
            for entry in params["ips"]:
                handle_id = str(entry.get("handle_id"))
                actual = handle_count(spec, handle_id)
                _settle_handle(api, params, str(entry.get("handle") or ""), handle_id, str(spec.get("cidr")), actual)
            return {
                "block": params["block"],
                "released": [e["ip"] for e in decision.release],
                "kept": decision.kept,
            }
        raise CloudError(f"IPAMBlock {params['block']} kept changing while releasing addresses; run again")

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        return None

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        block = _get(_kube(ctx, step), params, "ipamblocks", params["block"])
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
    found = _get(api, params, "blockaffinities", str(params.get("affinity") or ""))
    if found is not None:
        return found
    for obj in api.iter_custom(*_gv(params), "blockaffinities"):
        spec = _spec(obj)
        if spec.get("node") == params["node"] and spec.get("cidr") == params["cidr"]:
            return obj
    return None


def _other_blocks(api: KubeApi, params: dict[str, Any]) -> int:
    """The node's other blocks it surely keeps: confirmed affinities (one pending or being deleted may vanish)."""
    node, cidr = params["node"], params["cidr"]
    return sum(
        1
        for obj in api.iter_custom(*_gv(params), "blockaffinities")
        if _spec(obj).get("node") == node and _spec(obj).get("cidr") != cidr and _spec(obj).get("state") == "confirmed"
    )


def _keep_reason(api: KubeApi, block: JSON, params: dict[str, Any], affinity: JSON | None) -> str | None:
    spec = _spec(block)
    used = sum(1 for a in spec.get("allocations") or [] if a is not None)
    if used:
        return f"block now holds {used} address(es)"
    if spec.get("affinity") != f"host:{params['node']}" or spec.get("cidr") != params["cidr"]:
        return f"block now belongs to {spec.get('affinity') or 'no node'}"
    found = affinity_from(affinity) if affinity else None
    why = empty_block_keep_reason(block_from(block), found, now_rfc3339(), resuming=True)
    if why:
        return why
    if _other_blocks(api, params) < 1:
        return f"it is now the only block of {params['node']}"
    return None


def _marked_deleted(block: JSON) -> bool:
    return _spec(block).get("deleted") is True


class ReleaseEmptyBlock:
    """releaseBlockAffinity's order: affinity -> pendingDeletion, block marked deleted and deleted, then the
    affinity deleted. A block already marked deleted counts as gone (upstream's Get deletes it)."""

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        api = _kube(ctx, step)
        block = _get(api, params, "ipamblocks", params["block"])
        affinity = _find_affinity(api, params)
        if block is None or _marked_deleted(block):
            if block is not None or (affinity is not None and _spec(affinity).get("state") == "pendingDeletion"):
                return None  # a release under way (an interrupted run): act finishes it
            return {"block": params["block"], "released": affinity is None}
        why = _keep_reason(api, block, params, affinity)
        return {"block": params["block"], "released": False, "kept": why} if why else None

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        from cidrx.kube.errors import Conflict

        api = _kube(ctx, step)
        for _ in range(CONFLICT_RETRIES):
            block = _get(api, params, "ipamblocks", params["block"])
            affinity = _find_affinity(api, params)
            uid = ""
            if block is not None:
                uid = str((block.get("metadata") or {}).get("uid") or "")
                marked_now = False
                if not _marked_deleted(block):
                    why = _keep_reason(api, block, params, affinity)
                    if why:
                        return {"block": params["block"], "released": False, "kept": why}
                    assert affinity is not None  # _keep_reason keeps a block without an affinity
                    if _spec(affinity).get("state") != "pendingDeletion":
                        try:
                            affinity = self._mark_pending_deletion(api, params, affinity)
                            marked_now = True
                        except Conflict:
                            continue
                try:
                    _delete_marked(api, params, "ipamblocks", block)
                except Conflict:
                    # An address was allocated (or the block touched) since we read it: give the node its
                    # affinity back and decide again.
                    if marked_now and affinity is not None:
                        self._restore(api, params, affinity)
                    continue
            elif affinity is None or _spec(affinity).get("state") != "pendingDeletion":
                return {"block": params["block"], "released": affinity is None, "uid": uid}
            if affinity is not None:
                try:
                    api.delete_custom(*_gv(params), "blockaffinities", _name(affinity), resource_version=_rv(affinity))
                except Conflict:
                    continue
            return {"block": params["block"], "released": True, "uid": uid}
        raise CloudError(f"IPAMBlock {params['block']} kept changing; run the same command again")

    @staticmethod
    def _mark_pending_deletion(api: KubeApi, params: dict[str, Any], affinity: JSON) -> JSON:
        marked = copy.deepcopy(affinity)
        marked["spec"]["state"] = "pendingDeletion"
        return api.replace_custom(*_gv(params), "blockaffinities", marked)

    @staticmethod
    def _restore(api: KubeApi, params: dict[str, Any], affinity: JSON) -> None:
        from cidrx.kube.errors import Conflict

        restored = copy.deepcopy(affinity)
        restored["spec"]["state"] = "confirmed"
        with contextlib.suppress(Conflict):  # changed by Calico meanwhile: Calico's state wins
            api.replace_custom(*_gv(params), "blockaffinities", restored)

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        return None

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        if not outputs.get("released"):
            return
        block = _get(_kube(ctx, step), params, "ipamblocks", params["block"])
        # Calico may claim the same CIDR again at once (a new object, new uid): that is not our block.
        if block is not None and (block.get("metadata") or {}).get("uid") == outputs.get("uid"):
            raise CloudError(f"IPAMBlock {params['block']} still exists after its delete")


def _name(obj: JSON) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


# --------------------------------------------------------------------------------------------------
# calico.create-ippool
# --------------------------------------------------------------------------------------------------


class CreateIpPool:
    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        pool = _get(_kube(ctx, step), params, "ippools", params["name"])
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
        from cidrx.kube.errors import AlreadyExists

        api = _kube(ctx, step)
        try:
            api.create_custom(*_gv(params), "ippools", "IPPool", ippool_object(params, ctx.plan_id))
        except AlreadyExists:
            found = self.check(step, params, ctx)
            if found is None:
                raise
            return found
        return {"name": params["name"], "cidr": params["cidr"]}

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        return None

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        pool = _get(_kube(ctx, step), params, "ippools", params["name"])
        spec = _spec(pool) if pool is not None else {}
        if spec.get("cidr") != params["cidr"] or int(spec.get("blockSize") or 0) != params["block_size"]:
            raise CloudError(f"IPPool {params['name']} is not {params['cidr']} with /{params['block_size']} blocks")


# Derived from the plan module's declarations: the executor each step action names.
EXECUTORS: dict[str, Executor] = executors(ACTIONS)
