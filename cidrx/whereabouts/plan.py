"""Whereabouts reclaim planning: exactly the stale allocations (and the reservations that go with them),
as reviewable steps.

Why it exists: today's fixes for a pool full of dead pods' reservations are scaling every workload to zero
and deleting the pools, or hand-editing the IPPool (shared/incidents/whereabouts-stale-reservations-kb.txt).
The plan lists each entry to free (pool, offset, IP, podref, why) for review; apply re-reads and decides
again right before writing, so the plan is a ceiling, never an order to remove something now live.
Pure: no I/O. `check_drift` refuses only what makes the plan meaningless (another target, a pool whose
range changed so offsets decode to other addresses); a changed allocation is handled per entry at apply.
"""

from __future__ import annotations

from typing import Any

from cidrx.errors import InvalidInput, StalePlan
from cidrx.kube.model import PodState
from cidrx.model.plan import Plan, Step, seal
from cidrx.model.snapshot import Snapshot
from cidrx.whereabouts.analyze import (
    StaleAllocation,
    allocations_by_reservation,
    matching_allocations,
    stale_allocations,
    stale_reason,
)
from cidrx.whereabouts.model import OverlappingReservation, WhereaboutsSection, reservation_name

STRATEGY = "whereabouts-reclaim"
RELEASE = "whereabouts.release-allocations"
DELETE_RESERVATION = "whereabouts.delete-reservation"


def _section(snapshot: Snapshot) -> WhereaboutsSection:
    section = snapshot.kube.whereabouts
    if section is None:
        raise InvalidInput(f"no Whereabouts found in {snapshot.target.label()} (its CRDs are not installed)")
    return section


def _slug(*parts: str) -> str:
    return "-".join(p.replace("/", "-").replace(":", "-").replace(".", "-") for p in parts if p)


def reclaimable_reservations(
    section: WhereaboutsSection, pods: dict[str, PodState], stale: list[StaleAllocation]
) -> list[tuple[OverlappingReservation, StaleAllocation | None, str]]:
    """Reservations to delete: those of a stale allocation (same address, same pod), and orphans (no
    allocation of theirs left) whose pod is gone; each with the stale allocation it goes with and why."""
    by_key = {(reservation_name(s.allocation.ip), s.allocation.podref): s for s in stale}
    out: list[tuple[OverlappingReservation, StaleAllocation | None, str]] = []
    index = allocations_by_reservation(section)
    for r in section.overlapping:
        match = by_key.get((r.name, r.podref))
        if match is not None:
            out.append((r, match, match.why))
            continue
        if matching_allocations(section, r, index):
            continue  # the pod's allocation is live: so is its reservation
        why = stale_reason(r.name, r.podref, pods.get(r.podref))
        if why is not None:
            out.append((r, None, why))
    return out


def make_reclaim_plan(snapshot: Snapshot, created_at: str) -> Plan:
    """One release step per pool with stale allocations, then one delete step per reclaimable reservation."""
    if not snapshot.kube.available:
        raise InvalidInput(f"reclaim needs the Kubernetes API, which was not reachable: {snapshot.kube.reason}")
    section = _section(snapshot)
    pods = {p.key: p for p in snapshot.kube.ipam_pods}
    stale = stale_allocations(section, pods)
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
                }
                for s in mine
            ],
        }
        steps.append(
            Step(
                id=step_id,
                action=RELEASE,
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
                permissions=(
                    f"kubernetes: ippools.whereabouts.cni.cncf.io get,patch in {pool.namespace}",
                    "kubernetes: pods get",
                ),
            )
        )
    reservations_basis: dict[str, Any] = {}
    for r, match, why in reclaimable_reservations(section, pods, stale):
        key = f"{r.namespace}/{r.name}"
        reservations_basis[key] = {"podref": r.podref, "resource_version": r.resource_version}
        steps.append(
            Step(
                id=_slug("unreserve", r.namespace, r.name),
                action=DELETE_RESERVATION,
                params={"namespace": r.namespace, "name": r.name, "podref": r.podref, "why": why},
                description=f"delete OverlappingRangeIPReservation {key} of {r.podref or 'no pod'}: {why}",
                depends_on=(step_of_pool[match.pool.key],) if match is not None else (),
                permissions=(
                    f"kubernetes: overlappingrangeipreservations.whereabouts.cni.cncf.io get,delete in {r.namespace}",
                    "kubernetes: pods get",
                ),
            )
        )
    notes: list[str] = []
    if not steps:
        notes.append("no stale Whereabouts allocations or reservations: nothing to reclaim")
    else:
        notes.append(
            "apply re-reads every pool and pod right before writing: an entry whose pod is back, Pending, or "
            "whose allocation changed since this plan is kept and reported, never removed"
        )
    released = sum(len(p["stale"]) for p in pools_basis.values())
    plan = Plan(
        target=snapshot.target,
        created_at=created_at,
        snapshot_fingerprint=snapshot.fingerprint,
        strategy=STRATEGY,
        basis={"pools": pools_basis, "reservations": reservations_basis},
        steps=tuple(steps),
        notes=tuple(notes),
        summary={"pools": len(pools_basis), "allocations": released, "reservations": len(reservations_basis)},
    )
    return seal(plan)


def check_drift(plan: Plan, snapshot: Snapshot) -> None:
    """Refuse (StalePlan, exit 4) only when the plan no longer means what it says.

    A bumped resourceVersion, a released or re-assigned allocation, or a pod that came back are not drift:
    apply decides those per entry. A pool whose range changed is: its offsets now name other addresses.
    """
    if snapshot.target != plan.target:
        raise InvalidInput(f"plan is for {plan.target.label()}, not {snapshot.target.label()}")
    if not plan.steps:
        return
    section = snapshot.kube.whereabouts
    if section is None:
        raise StalePlan(
            "the plan is stale: Whereabouts is no longer found in the cluster (CRDs removed or not readable). "
            "Nothing was applied; make a new plan"
        )
    pools = {p.key: p for p in section.pools}
    problems: list[str] = []
    for key, basis in (plan.basis.get("pools") or {}).items():
        pool = pools.get(key)
        if pool is not None and pool.range != basis.get("range"):
            problems.append(f"IPPool {key} now has range {pool.range}, not {basis.get('range')}")
    if problems:
        raise StalePlan("the plan is stale: " + "; ".join(problems) + ". Nothing was applied; make a new plan")
