"""Whereabouts as a plugin: its declaration (`SPEC`, `STRATEGIES`), read by cidrx.registry."""

from __future__ import annotations

from cidrx.registry import IpamSpec, Strategy

SPEC = IpamSpec(
    name="whereabouts",
    title="Whereabouts",
    api_groups=("whereabouts.cni.cncf.io",),
    finding_prefix="WHEREABOUTS-",
    collect="cidrx.ipam.whereabouts.collect",
    ipam="cidrx.ipam.whereabouts.ipam:IPAM",
    field="whereabouts",
    section="cidrx.ipam.whereabouts.model:WhereaboutsSection",
    actions="cidrx.ipam.whereabouts.plan:ACTIONS",
)

STRATEGIES = (
    Strategy(
        "whereabouts-reclaim",
        "whereabouts",
        "release Whereabouts allocations of pods that are gone",
        "cidrx.ipam.whereabouts.plan:ACTIONS",
        reclaim=True,
    ),
)
