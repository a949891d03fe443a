"""The `whereabouts-reclaim` strategy: exactly the stale allocations (and the reservations that go with them),
as reviewable steps.

Why it exists: today's fixes for a pool full of dead pods' reservations are scaling every workload to zero
and deleting the pools, or hand-editing the IPPool (docs/cloud-facts.md, "Incidents the examples reproduce").
The plan lists each entry to free (pool, offset, IP, podref, why) for review; apply re-reads and decides
again right before writing, so the plan is a ceiling, never an order to remove something now live.
Pure: no I/O. `check_drift` refuses (exit 4, before any write) a plan whose entries someone else changed
since it was made: an allocation or reservation now held by another pod, a pod that exists again, an
address some unfinished pod now reports, a pool whose range changed. Changes that land after that check,
while apply runs, are decided per entry by the executors of cidrx.ipam.whereabouts.actions (kept, never
removed).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

from cidrx.errors import InvalidInput, StalePlan
from cidrx.ipam.liveness import AddressHolders, PodsByKey
from cidrx.ipam.whereabouts.actions.delete_reservation import DELETE_RESERVATION
from cidrx.ipam.whereabouts.actions.release_allocations import RELEASE
from cidrx.ipam.whereabouts.analyze import (
    ReservationVerdict,
    StaleAllocation,
    holders_of,
    judge_reservations,
    stale_allocations,
    stale_reason,
)
from cidrx.ipam.whereabouts.model import Allocation, WhereaboutsSection
from cidrx.model.kube import PodState
from cidrx.model.plan import Plan, Step, seal_plan
from cidrx.model.snapshot import Snapshot

if TYPE_CHECKING:
    from cidrx.model.options import PlanOptions

STRATEGY = "whereabouts-reclaim"
ACTIONS = (RELEASE, DELETE_RESERVATION)  # the step actions its plans use, in plan order


def _section(snapshot: Snapshot) -> WhereaboutsSection:
    section: WhereaboutsSection | None = snapshot.kube.whereabouts
    if section is None:
        raise InvalidInput(f"no Whereabouts found in {snapshot.target.label()} (its CRDs are not installed)")
    return section


def _slug(*parts: str) -> str:
    return "-".join(p.replace("/", "-").replace(":", "-").replace(".", "-") for p in parts if p)


def reclaimable_reservations(
    section: WhereaboutsSection,
    pods: Mapping[str, PodState],
    stale: list[StaleAllocation],
    holders: AddressHolders | None = None,
) -> list[ReservationVerdict]:
    """Reservations to delete (see analyze.judge_reservation), each with the stale allocations of its
    address that are released first."""
    live = holders if holders is not None else holders_of(pods)
    return [v for v in judge_reservations(section, pods, stale, live) if v.why is not None]


def make_plan(snapshot: Snapshot, opts: PlanOptions, created_at: str) -> Plan:
    """One release step per pool with stale allocations, then one delete step per reclaimable reservation
    (`opts` is not read: a reclaim plan has no options)."""
    if not snapshot.kube.available:
        raise InvalidInput(f"reclaim needs the Kubernetes API, which was not reachable: {snapshot.kube.reason}")
    section = _section(snapshot)
    pods = PodsByKey(snapshot.kube.ipam_pods)
    holders = holders_of(pods)
    stale = stale_allocations(section, pods, holders)
    steps: list[Step] = []
    pools_basis: dict[str, Any] = {}
    step_of_pool: dict[str, str] = {}
    for pool in section.pools:
        mine = [s for s in stale if s.pool is pool]
        if not mine:
            continue
        entries = [
            {"offset": s.allocation.offset, "ip": s.allocation.ip, "podref": s.allocation.podref, "why": s.why}
            for s in mine
        ]
        step_id = _slug("release", pool.namespace, pool.name)
        step_of_pool[pool.key] = step_id
        pools_basis[pool.key] = {
            "range": pool.range,
            "resource_version": pool.resource_version,
            "stale": [
                {
                    "offset": s.allocation.offset,
                    "ip": s.allocation.ip,
                    "podref": s.allocation.podref,
                    "id": s.allocation.id,
                    "pod_existed": s.allocation.podref in pods,
                }
                for s in mine
            ],
        }
        steps.append(
            Step(
                id=step_id,
                action=RELEASE.name,
                params={
                    "namespace": pool.namespace,
                    "pool": pool.name,
                    "range": pool.range,
                    "allocations": [{**e, "id": s.allocation.id} for e, s in zip(entries, mine, strict=True)],
                },
                description=(
                    f"release {len(mine)} stale allocation(s) from IPPool {pool.key} ({pool.range}): "
                    + ", ".join(f"{s.allocation.ip} ({s.allocation.podref})" for s in mine)
                ),
                permissions=(f"{RELEASE.permissions[0]} in {pool.namespace}", *RELEASE.permissions[1:]),
            )
        )
    reservations_basis: dict[str, Any] = {}
    for verdict in reclaimable_reservations(section, pods, stale, holders):
        r, why = verdict.reservation, str(verdict.why)
        key = f"{r.namespace}/{r.name}"
        reservations_basis[key] = {
            "podref": r.podref,
            "resource_version": r.resource_version,
            "pod_existed": r.podref in pods,
            "addresses": list(r.addresses),
        }
        steps.append(
            Step(
                id=_slug("unreserve", r.namespace, r.name),
                action=DELETE_RESERVATION.name,
                params={
                    "namespace": r.namespace,
                    "name": r.name,
                    "podref": r.podref,
                    "addresses": list(r.addresses),
                    "why": why,
                },
                description=(
                    f"delete OverlappingRangeIPReservation {key} ({', '.join(r.addresses)}) of "
                    f"{r.podref or 'no pod'}: {why}"
                ),
                depends_on=tuple(dict.fromkeys(step_of_pool[s.pool.key] for s in verdict.after)),
                permissions=(
                    f"{DELETE_RESERVATION.permissions[0]} in {r.namespace}",
                    *DELETE_RESERVATION.permissions[1:],
                ),
            )
        )
    notes: list[str] = []
    if not steps:
        notes.append("no stale Whereabouts allocations or reservations: nothing to reclaim")
    else:
        notes.append(
            "apply refuses (exit 4, nothing written) when an entry's pod exists again or its allocation or "
            "reservation is held by another pod since this plan; it re-reads every pool and pod right before "
            "writing, and an entry that changes while it runs is kept and reported, never removed"
        )
    released = sum(len(p["stale"]) for p in pools_basis.values())
    basis = {"pools": pools_basis, "reservations": reservations_basis}
    summary = {"pools": len(pools_basis), "allocations": released, "reservations": len(reservations_basis)}
    return seal_plan(snapshot, created_at, STRATEGY, basis, steps, notes, summary)


def _pod_problem(
    addresses: list[str], podref: str, basis: Mapping[str, Any], pods: Mapping[str, PodState], holders: AddressHolders
) -> str | None:
    """Why the pods make a planned entry unsafe now: its address is live (any pod reports it), its pod is
    live again, or back when it was gone."""
    pod = pods.get(podref)
    phase = (pod.phase if pod is not None else "") or "unknown phase"
    if pod is not None and stale_reason(addresses, podref, pod, AddressHolders()) is None:
        return f"its pod {podref} is live again ({phase})"
    for ip in addresses:
        if holders.is_live(ip):
            return f"{ip} is {holders.describe(ip)}"
    if pod is None:
        return None
    if basis.get("pod_existed") is False:
        return f"its pod {podref} exists again ({phase})"
    return None


def _holder(a: Allocation) -> str:
    container = f", container {a.id[:12]}" if a.id else ""
    return f"{a.podref or 'no pod'}{container}"


def _allocation_drift(
    plan: Plan, section: WhereaboutsSection, pods: Mapping[str, PodState], holders: AddressHolders, step: Step
) -> list[str]:
    key = f"{step.params['namespace']}/{step.params['pool']}"
    basis = (plan.basis.get("pools") or {}).get(key) or {}
    pool = next((p for p in section.pools if p.key == key), None)
    if pool is None or pool.range != basis.get("range"):
        return []  # gone: nothing left to release; a changed range is reported for every step below
    held = {a.offset: a for a in pool.allocations}
    problems: list[str] = []
    for entry in basis.get("stale") or []:
        cur = held.get(str(entry.get("offset")))
        if cur is None:
            continue  # released by someone else meanwhile: nothing to do, not a reason to stop
        ip, offset, podref = entry.get("ip"), entry.get("offset"), entry.get("podref")
        was = f"IPPool {key}: {ip} (offset {offset}), planned for release from {podref},"
        if cur.podref != podref or (entry.get("id") and cur.id != entry.get("id")):
            problems.append(f"{was} is now held by {_holder(cur)}")
            continue
        why = _pod_problem([str(ip)], cur.podref, entry, pods, holders)
        if why is not None:
            problems.append(f"{was} is in use: {why}")
    return problems


def _reservation_drift(
    plan: Plan, section: WhereaboutsSection, pods: Mapping[str, PodState], holders: AddressHolders, step: Step
) -> list[str]:
    key = f"{step.params['namespace']}/{step.params['name']}"
    basis = (plan.basis.get("reservations") or {}).get(key) or {"podref": step.params.get("podref")}
    cur = next((r for r in section.overlapping if f"{r.namespace}/{r.name}" == key), None)
    if cur is None:
        return []  # deleted by someone else meanwhile
    was = f"OverlappingRangeIPReservation {key}, planned for deletion from {basis.get('podref') or 'no pod'},"
    if cur.podref != basis.get("podref"):
        return [f"{was} is now reserved for {cur.podref or 'no pod'}"]
    why = _pod_problem(list(cur.addresses), cur.podref, basis, pods, holders)
    return [f"{was} is in use: {why}"] if why is not None else []


def check_drift(plan: Plan, snapshot: Snapshot, begun: Collection[str] = ()) -> None:
    """Refuse (StalePlan, exit 4) before any write when someone else changed what the plan would remove.

    Drift: a pool whose range changed (its offsets now name other addresses); an allocation the plan would
    release that another pod or container now holds; a reservation now naming another pod; an entry whose
    pod is live again or, gone when planned, exists again. Not drift: a bumped resourceVersion, an entry
    someone else already released, an unrelated edit. `begun` names the steps an earlier apply of this
    plan already started (from the journal): whatever happened to their entries since may be this plan's
    own doing (a released address handed to a new pod), so they, and the steps that depend on them, are
    decided per entry at apply instead.
    """
    if snapshot.target != plan.target:
        raise InvalidInput(f"plan is for {plan.target.label()}, not {snapshot.target.label()}")
    if not plan.steps:
        return
    section: WhereaboutsSection | None = snapshot.kube.whereabouts
    if section is None:
        raise StalePlan(
            "the plan is stale: Whereabouts is no longer found in the cluster (CRDs removed or not readable). "
            "Nothing was applied; make a new plan"
        )
    pools = {p.key: p for p in section.pools}
    pods = PodsByKey(snapshot.kube.ipam_pods)
    holders = holders_of(pods)
    problems: list[str] = []
    for key, basis in (plan.basis.get("pools") or {}).items():
        pool = pools.get(key)
        if pool is not None and pool.range != basis.get("range"):
            problems.append(f"IPPool {key} now has range {pool.range}, not {basis.get('range')}")
    for step in plan.steps:
        if step.id in begun or any(d in begun for d in step.depends_on):
            continue
        if step.action == RELEASE.name:
            problems += _allocation_drift(plan, section, pods, holders, step)
        elif step.action == DELETE_RESERVATION.name:
            problems += _reservation_drift(plan, section, pods, holders, step)
    if problems:
        done = "Nothing more was applied" if begun else "Nothing was applied"
        raise StalePlan(f"the plan is stale: {'; '.join(problems)}. {done}; make a new plan")
