"""The `calico.release-ips` step action: its declaration and its executor, which releases leaked addresses
of one IPAM block.

Why it exists: an address is only safe to release if it is still leaked at the moment of the write, so the
executor reads the block and the pods again right before writing and decides each address again with
analysis' rule (cidrx.ipam.calico.analyze.leak_reason): one that is live, or that was given to someone
else meanwhile, is never released. The block is written with compare-and-swap on its resourceVersion, the
way Calico writes it (cidrx.ipam.calico.actions.blockmath); each handle's per-block count is then set to
what the block really holds.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cidrx.engine.executor import Outputs, StepContext
from cidrx.errors import CloudError
from cidrx.ipam.calico.actions.blockmath import attr_at, handle_count, release_ordinals
from cidrx.ipam.calico.actions.objects import (
    CONFLICT_RETRIES,
    JSON,
    delete_marked,
    get_object,
    group_version,
    kube_of,
    spec_of,
)
from cidrx.ipam.calico.analyze import block_ip, leak_reason, live_reason
from cidrx.ipam.calico.collect import attribute_from, config_from, config_plural
from cidrx.ipam.calico.model import V1_API
from cidrx.ipam.liveness import AddressHolders
from cidrx.model.kube import PodState
from cidrx.model.plan import Step
from cidrx.registry import Action

if TYPE_CHECKING:
    from cidrx.kube.api import KubeApi


def _cooldown_seconds(api: KubeApi, params: Mapping[str, Any]) -> int:
    """IPAMConfig `default` spec.ipCooldownSeconds as it is now (absent: 0)."""
    plural, _ = config_plural(str(params.get("api") or V1_API))
    found = get_object(api, params, plural, "default")
    config = config_from(found) if found is not None else None
    return (config.ip_cooldown_seconds or 0) if config is not None else 0


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
    spec = spec_of(block)
    cidr = str(spec.get("cidr"))
    refs: set[str] = set()
    for entry in entries:
        raw = attr_at(spec, int(entry["ordinal"]))
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
        raw = attr_at(spec, ordinal)
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
    spec = spec_of(block) if block is not None else {}
    cidr = str(spec.get("cidr") or "")
    for entry in entries:
        handle = get_object(api, params, "ipamhandles", str(entry.get("handle") or ""))
        if handle is None or not cidr:
            continue
        counts = spec_of(handle).get("block") or {}
        actual = handle_count(spec, str(entry.get("handle_id")))
        if counts.get(cidr, 0) != actual and not (actual == 0 and cidr not in counts):
            return False
    return True


def _settle_handle(api: KubeApi, params: Mapping[str, Any], name: str, handle_id: str, cidr: str, actual: int) -> None:
    """Set the handle's count for `cidr` to `actual` (dropping it at zero, deleting an empty handle)."""
    from cidrx.kube.errors import Conflict

    for _ in range(CONFLICT_RETRIES):
        handle = get_object(api, params, "ipamhandles", name)
        if handle is None or spec_of(handle).get("handleID", handle_id) != handle_id:
            return
        counts = dict(spec_of(handle).get("block") or {})
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
                api.replace_custom(*group_version(params), "ipamhandles", updated)
            else:
                delete_marked(api, params, "ipamhandles", handle)
            return
        except Conflict:
            continue
    raise CloudError(f"IPAMHandle {name} kept changing; run the same command again")


class ReleaseIps:
    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        api = kube_of(ctx, step)
        block = get_object(api, params, "ipamblocks", params["block"])
        if block is None:
            return {"block": params["block"], "released": [], "kept": [], "gone": True}
        decision = _decide(api, block, params["ips"])
        if decision.release or not _handles_settled(api, params, block, params["ips"]):
            return None
        return {"block": params["block"], "released": [], "kept": decision.kept}

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        from cidrx.kube.errors import Conflict

        api = kube_of(ctx, step)
        for _ in range(CONFLICT_RETRIES):
            block = get_object(api, params, "ipamblocks", params["block"])
            if block is None:
                return {"block": params["block"], "released": [], "kept": [], "gone": True}
            decision = _decide(api, block, params["ips"])
            updated = block
            if decision.release:
                ordinals = {int(e["ordinal"]) for e in decision.release}
                updated = release_ordinals(block, ordinals, _cooldown_seconds(api, params))
                try:
                    updated = api.replace_custom(*group_version(params), "ipamblocks", updated)
                except Conflict:
                    continue  # someone wrote the block since we read it: read it again and decide again
            spec = spec_of(updated)
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
        block = get_object(kube_of(ctx, step), params, "ipamblocks", params["block"])
        if block is None:
            return
        spec = spec_of(block)
        released = set(outputs.get("released") or [])
        for entry in params["ips"]:
            if entry["ip"] not in released:
                continue
            raw = attr_at(spec, int(entry["ordinal"]))
            if raw is not None and raw.get("handle_id") == entry.get("handle_id"):
                raise CloudError(f"{entry['ip']} is still allocated to {entry.get('handle_id')} in {params['block']}")


# Declared once: the reclaim plan attaches its name and permissions to its Steps, `cidrx permissions` prints
# them without making a plan, apply runs its executor. On a projectcalico.org/v3-only cluster the same
# resources of that group.
BLOCK_PERMS = "kubernetes: ipamblocks.crd.projectcalico.org get,update"
HANDLE_PERMS = "kubernetes: ipamhandles.crd.projectcalico.org get,update,delete"
RELEASE_IPS = Action(
    "calico.release-ips",
    (
        BLOCK_PERMS,
        HANDLE_PERMS,
        "kubernetes: ipamconfigs.crd.projectcalico.org get",
        "kubernetes: pods list",
    ),
    executor=ReleaseIps,
)
