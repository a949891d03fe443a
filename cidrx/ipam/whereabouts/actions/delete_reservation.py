"""The `whereabouts.delete-reservation` step action: its declaration and its executor.

Why it exists: an OverlappingRangeIPReservation of a pod that is gone keeps its address from every other
pool of the same range; deleting it is only safe while it still names the same pod, no unfinished pod reports
an address its name spells, and no pool still allocates that address to anyone. All of that is read again
right before the delete, which carries the resourceVersion just read (a conflict means: decide again).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cidrx.engine.executor import Outputs, StepContext
from cidrx.errors import CloudError
from cidrx.ipam.liveness import canonical_ip
from cidrx.ipam.whereabouts.actions.reads import ATTEMPTS, Pods, kube_of
from cidrx.ipam.whereabouts.analyze import kept_reason, stale_reason
from cidrx.ipam.whereabouts.collect import pool_from
from cidrx.ipam.whereabouts.model import GROUP, POOLS, RESERVATIONS, VERSION, name_addresses
from cidrx.model.plan import Step
from cidrx.registry import Action

if TYPE_CHECKING:
    from cidrx.kube.api import KubeApi


class DeleteReservation:
    """`whereabouts.delete-reservation`: params {namespace, name, podref, addresses, why}; deletes the
    OverlappingRangeIPReservation only while it names the same pod, no unfinished pod reports an address
    its name spells, and no pool still allocates that address to anyone (re-read right before deleting)."""

    def _decide(self, params: dict[str, Any], kube: KubeApi) -> tuple[str | None, str]:
        """(resourceVersion to delete, why) or (None, why it stays / is gone)."""
        obj = kube.get_custom(GROUP, VERSION, RESERVATIONS, params["name"], params["namespace"])
        if obj is None:
            return None, "already gone"
        podref = str((obj.get("spec") or {}).get("podref") or "")
        if podref != params["podref"]:
            return None, f"now reserved for {podref or 'no pod'}; kept"
        addresses = name_addresses(params["name"])
        wanted = {canonical_ip(ip) for ip in addresses}
        for raw in kube.iter_custom(GROUP, VERSION, POOLS):
            pool = pool_from(raw)
            for a in pool.allocations:
                if a.ip and canonical_ip(a.ip) in wanted:
                    return None, f"{a.ip} is still allocated in IPPool {pool.key} to {a.podref or 'no pod'}; kept"
        pods = Pods(kube)
        why = stale_reason(addresses, podref, pods.get(podref), pods.holders)
        if why is None:
            return None, f"{kept_reason(addresses, podref, pods.get(podref), pods.holders)}; kept"
        return str(obj["metadata"]["resourceVersion"]), why

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        rv, why = self._decide(params, kube_of(ctx, step))
        return None if rv is not None else {"deleted": False, "why": why}

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        from cidrx.kube.errors import Conflict

        kube = kube_of(ctx, step)
        for _ in range(ATTEMPTS):
            rv, why = self._decide(params, kube)
            if rv is None:
                return {"deleted": False, "why": why}
            try:
                kube.delete_custom(
                    GROUP, VERSION, RESERVATIONS, params["name"], params["namespace"], resource_version=rv
                )
            except Conflict:
                continue
            return {"deleted": True, "why": why}
        raise CloudError(
            f"OverlappingRangeIPReservation {params['namespace']}/{params['name']} changed on every one of "
            f"{ATTEMPTS} attempts. Run the same command again"
        )

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        return None

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        if not outputs.get("deleted"):
            return
        obj = kube_of(ctx, step).get_custom(GROUP, VERSION, RESERVATIONS, params["name"], params["namespace"])
        if obj is not None and (obj.get("spec") or {}).get("podref") == params["podref"]:
            raise CloudError(f"OverlappingRangeIPReservation {params['namespace']}/{params['name']} is still there")


# Declared once (see RELEASE): each step narrows the first grant to the reservation's namespace. Before
# deleting, apply lists the pods and the pools (an allocation of its address that is not stale keeps it).
DELETE_RESERVATION = Action(
    "whereabouts.delete-reservation",
    (
        "kubernetes: overlappingrangeipreservations.whereabouts.cni.cncf.io get,delete",
        "kubernetes: pods get,list",
        "kubernetes: ippools.whereabouts.cni.cncf.io list",
    ),
    executor=DeleteReservation,
)
