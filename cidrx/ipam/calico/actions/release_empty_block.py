"""The `calico.release-empty-block` step action: its declaration and its executor, which releases an empty
block its node can spare, in the order Calico's releaseBlockAffinity does.

Why it exists: a node that holds empty blocks keeps other nodes from claiming them; releasing one is only
safe while it is still empty, still that node's, its BlockAffinity confirmed and old enough, and the node
keeps another block (cidrx.ipam.calico.blocks), all judged again right before the writes.
"""

from __future__ import annotations

import contextlib
import copy
from typing import TYPE_CHECKING, Any

from cidrx.engine.executor import Outputs, StepContext
from cidrx.errors import CloudError
from cidrx.ipam.calico.actions.objects import (
    CONFLICT_RETRIES,
    JSON,
    delete_marked,
    get_object,
    group_version,
    kube_of,
    name_of,
    now_rfc3339,
    resource_version,
    spec_of,
)
from cidrx.ipam.calico.blocks import empty_block_keep_reason
from cidrx.ipam.calico.collect import affinity_from, block_from
from cidrx.model.plan import Step
from cidrx.registry import Action

if TYPE_CHECKING:
    from cidrx.kube.api import KubeApi


def _find_affinity(api: KubeApi, params: dict[str, Any]) -> JSON | None:
    found = get_object(api, params, "blockaffinities", str(params.get("affinity") or ""))
    if found is not None:
        return found
    for obj in api.iter_custom(*group_version(params), "blockaffinities"):
        spec = spec_of(obj)
        if spec.get("node") == params["node"] and spec.get("cidr") == params["cidr"]:
            return obj
    return None


def _other_blocks(api: KubeApi, params: dict[str, Any]) -> int:
    """The node's other blocks it surely keeps: confirmed affinities (one pending or being deleted may vanish)."""
    node, cidr = params["node"], params["cidr"]
    return sum(
        1
        for obj in api.iter_custom(*group_version(params), "blockaffinities")
        if spec_of(obj).get("node") == node
        and spec_of(obj).get("cidr") != cidr
        and spec_of(obj).get("state") == "confirmed"
    )


def _keep_reason(api: KubeApi, block: JSON, params: dict[str, Any], affinity: JSON | None) -> str | None:
    spec = spec_of(block)
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
    return spec_of(block).get("deleted") is True


class ReleaseEmptyBlock:
    """releaseBlockAffinity's order: affinity -> pendingDeletion, block marked deleted and deleted, then the
    affinity deleted. A block already marked deleted counts as gone (upstream's Get deletes it)."""

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        api = kube_of(ctx, step)
        block = get_object(api, params, "ipamblocks", params["block"])
        affinity = _find_affinity(api, params)
        if block is None or _marked_deleted(block):
            if block is not None or (affinity is not None and spec_of(affinity).get("state") == "pendingDeletion"):
                return None  # a release under way (an interrupted run): act finishes it
            return {"block": params["block"], "released": affinity is None}
        why = _keep_reason(api, block, params, affinity)
        return {"block": params["block"], "released": False, "kept": why} if why else None

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        from cidrx.kube.errors import Conflict

        api = kube_of(ctx, step)
        for _ in range(CONFLICT_RETRIES):
            block = get_object(api, params, "ipamblocks", params["block"])
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
                    if spec_of(affinity).get("state") != "pendingDeletion":
                        try:
                            affinity = self._mark_pending_deletion(api, params, affinity)
                            marked_now = True
                        except Conflict:
                            continue
                try:
                    delete_marked(api, params, "ipamblocks", block)
                except Conflict:
                    # An address was allocated (or the block touched) since we read it: give the node its
                    # affinity back and decide again.
                    if marked_now and affinity is not None:
                        self._restore(api, params, affinity)
                    continue
            elif affinity is None or spec_of(affinity).get("state") != "pendingDeletion":
                return {"block": params["block"], "released": affinity is None, "uid": uid}
            if affinity is not None:
                try:
                    api.delete_custom(
                        *group_version(params),
                        "blockaffinities",
                        name_of(affinity),
                        resource_version=resource_version(affinity),
                    )
                except Conflict:
                    continue
            return {"block": params["block"], "released": True, "uid": uid}
        raise CloudError(f"IPAMBlock {params['block']} kept changing; run the same command again")

    @staticmethod
    def _mark_pending_deletion(api: KubeApi, params: dict[str, Any], affinity: JSON) -> JSON:
        marked = copy.deepcopy(affinity)
        marked["spec"]["state"] = "pendingDeletion"
        return api.replace_custom(*group_version(params), "blockaffinities", marked)

    @staticmethod
    def _restore(api: KubeApi, params: dict[str, Any], affinity: JSON) -> None:
        from cidrx.kube.errors import Conflict

        restored = copy.deepcopy(affinity)
        restored["spec"]["state"] = "confirmed"
        with contextlib.suppress(Conflict):  # changed by Calico meanwhile: Calico's state wins
            api.replace_custom(*group_version(params), "blockaffinities", restored)

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        return None

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        if not outputs.get("released"):
            return
        block = get_object(kube_of(ctx, step), params, "ipamblocks", params["block"])
        # Calico may claim the same CIDR again at once (a new object, new uid): that is not our block.
        if block is not None and (block.get("metadata") or {}).get("uid") == outputs.get("uid"):
            raise CloudError(f"IPAMBlock {params['block']} still exists after its delete")


# Declared once (see cidrx.ipam.calico.actions.release_ips).
RELEASE_EMPTY_BLOCK = Action(
    "calico.release-empty-block",
    (
        "kubernetes: ipamblocks.crd.projectcalico.org get,update,delete",
        "kubernetes: blockaffinities.crd.projectcalico.org get,list,update,delete",
    ),
    executor=ReleaseEmptyBlock,
)
