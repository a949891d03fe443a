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
    # What cidrx.ipam.whereabouts.collect lists: pools, reservations and the NetworkAttachmentDefinitions
    # whose IPAM config narrows the pools' ranges.
    kube_reads=(
        "kubernetes: ippools.whereabouts.cni.cncf.io list",
        "kubernetes: overlappingrangeipreservations.whereabouts.cni.cncf.io list",
        "kubernetes: network-attachment-definitions.k8s.cni.cncf.io list",
    ),
    maps="cidrx.ipam.whereabouts.netmap:address_maps",
)

STRATEGIES = (
    Strategy(
        "whereabouts-reclaim",
        "whereabouts",
        "release Whereabouts allocations of pods that are gone",
        "cidrx.ipam.whereabouts.strategies.reclaim:ACTIONS",
        plan="cidrx.ipam.whereabouts.strategies.reclaim:make_plan",
        drift="cidrx.ipam.whereabouts.strategies.reclaim:check_drift",
        reclaim=True,
    ),
)
