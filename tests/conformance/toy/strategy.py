"""The toy IPAM's one strategy, a unit: its plan, its drift check and the actions its plans use."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from cidrx.errors import StalePlan
from cidrx.model.plan import Plan, Step, seal
from tests.conformance.toy.actions import CREATE_POOL

ACTIONS = (CREATE_POOL,)


def make_plan(snapshot: Any, opts: Any, created_at: str) -> Plan:
    cidr = getattr(opts, "cidr", None) or "10.99.0.0/24"
    name = "toy-" + cidr.replace(".", "-").replace("/", "-")
    step = Step(
        "create-pool",
        CREATE_POOL.name,
        {"name": name, "cidr": cidr},
        f"create toy pool {name} {cidr}",
        permissions=CREATE_POOL.permissions,
    )
    plan = Plan(
        target=snapshot.target,
        created_at=created_at,
        snapshot_fingerprint=snapshot.fingerprint,
        strategy="toy-pool",
        basis={"name": name, "cidr": cidr},
        steps=(step,),
    )
    return seal(plan)


def check_drift(plan: Plan, snapshot: Any, begun: Collection[str] = ()) -> None:
    section = getattr(snapshot.kube, "toy", None)
    taken = {p.name for p in section.pools} if section is not None else set()
    if plan.basis["name"] in taken and "create-pool" not in begun:
        raise StalePlan(f"a toy pool named {plan.basis['name']} was created by someone else")
