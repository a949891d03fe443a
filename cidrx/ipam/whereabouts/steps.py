"""The Whereabouts reclaim actions as apply-engine executors.

Why it exists: removing a reservation is only safe if it is still stale at the moment of the write. The
reconciler race (whereabouts issues 162 and 207; docs/cloud-facts.md) came from deciding on a pool read and a
pod read that were already out of date. So each act re-reads the pool and every pod it names right before
writing, decides each entry again with the same rule as analysis (a Pending pod or one without
network-status is live), and writes one JSON patch whose first op tests /metadata/resourceVersion: if
Whereabouts allocated in between, the patch fails with 422 and the step reads and decides again. A change
made before apply started is refused by the plan's drift check (exit 4); entries that change after it,
while apply runs (another pod or container holds the offset, the pod is back), are kept and reported in
the step outputs. Everything is safe to repeat: a second apply finds nothing to remove.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from cidrx.engine.executor import Executor, Outputs, StepContext
from cidrx.errors import CloudError, StalePlan
from cidrx.ipam.liveness import AddressHolders, canonical_ip
from cidrx.ipam.whereabouts.analyze import kept_reason, stale_reason
from cidrx.ipam.whereabouts.collect import pool_from
from cidrx.ipam.whereabouts.model import GROUP, POOLS, RESERVATIONS, VERSION, name_addresses
from cidrx.ipam.whereabouts.plan import ACTIONS
from cidrx.kube.model import PodState
from cidrx.model.plan import Step
from cidrx.registry import executors

if TYPE_CHECKING:
    from cidrx.kube.api import KubeApi

ATTEMPTS = 5  # re-read-and-decide rounds when another writer keeps bumping the object


def _kube(ctx: StepContext, step: Step) -> KubeApi:
    kube: KubeApi | None = getattr(ctx.apis, "kube", None)
    if kube is None:
        raise CloudError(f"step {step.id} needs Kubernetes access; pass --kubeconfig/--context (not --no-kube)")
    return kube


def pointer_token(key: str) -> str:
    """A map key as one JSON-pointer reference token (RFC 6901 §3: `~` -> `~0`, `/` -> `~1`)."""
    return key.replace("~", "~0").replace("/", "~1")


class _Pods:
    """Pods read once per decision round: the named ones by "namespace/name", and every unfinished pod
    (one list) for the liveness rule: an address any of them reports is live, whoever the record names."""

    def __init__(self, kube: KubeApi) -> None:
        self.kube = kube
        self.seen: dict[str, PodState | None] = {}
        self._holders: AddressHolders | None = None

    @property
    def holders(self) -> AddressHolders:
        if self._holders is None:
            from cidrx.kube.collect import POD_FIELD_SELECTOR, pod_state_from

            self._holders = AddressHolders.of(pod_state_from(p) for p in self.kube.pod_records(POD_FIELD_SELECTOR))
        return self._holders

    def get(self, ref: str) -> PodState | None:
        if ref not in self.seen:
            from cidrx.kube.collect import pod_state_from

            namespace, _, name = ref.partition("/")
            obj = self.kube.get_custom("", "v1", "pods", name, namespace) if namespace and name else None
            self.seen[ref] = pod_state_from(obj) if obj is not None else None
        return self.seen[ref]


def _allocations(pool: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = pool.get("spec") or {}
    found = spec.get("allocations") if isinstance(spec, Mapping) else None
    return found if isinstance(found, Mapping) else {}


def _entry_out(entry: Mapping[str, Any], why: str) -> dict[str, str]:
    return {"offset": str(entry["offset"]), "ip": str(entry["ip"]), "podref": str(entry["podref"]), "why": why}


class ReleaseAllocations:
    """`whereabouts.release-allocations`: params {namespace, pool, range, allocations: [{offset, ip, podref,
    id, why}]}. Outputs: released, kept (with why), already_released."""

    def _decide(self, step: Step, params: dict[str, Any], kube: KubeApi) -> tuple[dict[str, Any] | None, Outputs]:
        pool = kube.get_custom(GROUP, VERSION, POOLS, params["pool"], params["namespace"])
        out: Outputs = {"remove": [], "kept": [], "already_released": []}
        if pool is None:
            out["already_released"] = [_entry_out(e, "the IPPool is gone") for e in params["allocations"]]
            return None, out
        current_range = (pool.get("spec") or {}).get("range")
        if current_range != params["range"]:
            raise StalePlan(
                f"IPPool {params['namespace']}/{params['pool']} now has range {current_range}, not "
                f"{params['range']}: its offsets name other addresses. Nothing more was changed; make a new plan"
            )
        held = _allocations(pool)
        pods = _Pods(kube)
        for e in params["allocations"]:
            cur = held.get(e["offset"])
            if not isinstance(cur, Mapping):
                out["already_released"].append(_entry_out(e, "no longer allocated"))
                continue
            podref, cid = str(cur.get("podref") or ""), str(cur.get("id") or "")
            if podref != e["podref"] or (e.get("id") and cid != e["id"]):
                now = f"{podref or 'no pod'} (container {cid or 'unknown'})"
                out["kept"].append(_entry_out(e, f"allocation changed since the plan: now held by {now}"))
                continue
            why = stale_reason(e["ip"], podref, pods.get(podref), pods.holders)
            if why is None:
                kept = kept_reason([e["ip"]], podref, pods.get(podref), pods.holders)
                out["kept"].append(_entry_out(e, f"{kept}; not removed"))
                continue
            out["remove"].append(_entry_out(e, why))
        return pool, out

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        _, out = self._decide(step, params, _kube(ctx, step))
        if out["remove"]:
            return None
        return {"released": [], "kept": out["kept"], "already_released": out["already_released"]}

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        from cidrx.kube.errors import Conflict, NotFound

        kube = _kube(ctx, step)
        for _ in range(ATTEMPTS):
            pool, out = self._decide(step, params, kube)
            if pool is None or not out["remove"]:
                return {"released": [], "kept": out["kept"], "already_released": out["already_released"]}
            ops: list[dict[str, Any]] = [
                {"op": "test", "path": "/metadata/resourceVersion", "value": pool["metadata"]["resourceVersion"]}
            ]
            ops += [{"op": "remove", "path": f"/spec/allocations/{pointer_token(e['offset'])}"} for e in out["remove"]]
            try:  # PatchTestFailed (422) is a Conflict: Whereabouts wrote the pool since we read it
                kube.json_patch(GROUP, VERSION, POOLS, params["pool"], ops, params["namespace"])
            except (Conflict, NotFound):
                continue
            ctx.progress.note(
                f"{step.id}: released {len(out['remove'])} allocation(s)"
                + (f", kept {len(out['kept'])} that are live or changed" if out["kept"] else "")
            )
            return {"released": out["remove"], "kept": out["kept"], "already_released": out["already_released"]}
        raise CloudError(
            f"IPPool {params['namespace']}/{params['pool']} changed on every one of {ATTEMPTS} attempts; "
            "Whereabouts is busy allocating from it. Run the same command again"
        )

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        return None

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        pool = _kube(ctx, step).get_custom(GROUP, VERSION, POOLS, params["pool"], params["namespace"])
        held = _allocations(pool) if pool is not None else {}
        planned = {e["offset"]: e for e in params["allocations"]}
        for e in outputs.get("released", []):
            cur = held.get(e["offset"])
            same_id = not planned[e["offset"]].get("id") or (
                isinstance(cur, Mapping) and cur.get("id") == planned[e["offset"]]["id"]
            )
            if isinstance(cur, Mapping) and cur.get("podref") == e["podref"] and same_id:
                raise CloudError(
                    f"IPPool {params['namespace']}/{params['pool']} still holds offset {e['offset']} for {e['podref']}"
                )


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
        pods = _Pods(kube)
        why = stale_reason(addresses, podref, pods.get(podref), pods.holders)
        if why is None:
            return None, f"{kept_reason(addresses, podref, pods.get(podref), pods.holders)}; kept"
        return str(obj["metadata"]["resourceVersion"]), why

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        rv, why = self._decide(params, _kube(ctx, step))
        return None if rv is not None else {"deleted": False, "why": why}

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        from cidrx.kube.errors import Conflict

        kube = _kube(ctx, step)
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
        obj = _kube(ctx, step).get_custom(GROUP, VERSION, RESERVATIONS, params["name"], params["namespace"])
        if obj is not None and (obj.get("spec") or {}).get("podref") == params["podref"]:
            raise CloudError(f"OverlappingRangeIPReservation {params['namespace']}/{params['name']} is still there")


# Derived from the plan module's declarations: the executor each step action names.
EXECUTORS: dict[str, Executor] = executors(ACTIONS)
