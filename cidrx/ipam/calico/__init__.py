"""Calico IPAM as a plugin: its declaration (`SPEC`, `STRATEGIES`), read by cidrx.registry."""

from __future__ import annotations

from cidrx.registry import IpamSpec, Strategy

# Calico IPPools are DNS-1123 subdomains (projectcalico/calico libcalico-go/lib/validator/v3/validator.go,
# nameSubdomainFmt, at 87c15906f20c4ca1fda55af92295e7678b0cc0b2).
_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
IPPOOL_NAME = (
    rf"{_LABEL}(\.{_LABEL})*",
    253,
    "lowercase letters, digits, '-' and '.', starting and ending "
    "with a letter or digit, at most 253 characters (a Calico IPPool name, DNS-1123 subdomain)",
)

SPEC = IpamSpec(
    name="calico",
    title="Calico",
    api_groups=("crd.projectcalico.org",),
    finding_prefix="CALICO-",
    collect="cidrx.ipam.calico.collect",
    ipam="cidrx.ipam.calico.ipam:IPAM",
    field="calico",
    section="cidrx.ipam.calico.model:CalicoSection",
    terraform="cidrx.ipam.calico.terraform:emit",
    # What cidrx.ipam.calico.collect lists (Calico's IPAM resources of the Kubernetes datastore).
    kube_reads=(
        "kubernetes: ippools.crd.projectcalico.org list",
        "kubernetes: ipamblocks.crd.projectcalico.org list",
        "kubernetes: blockaffinities.crd.projectcalico.org list",
        "kubernetes: ipamhandles.crd.projectcalico.org list",
        "kubernetes: ipamconfigs.crd.projectcalico.org list",
    ),
    maps="cidrx.ipam.calico.netmap:address_maps",
    # `expand --plan` without --strategy on a cluster that runs Calico: a new IPPool.
    default_strategy="cidrx.ipam.calico.strategies.pool:default_strategy",
    fix_tools=("calicoctl",),
)

STRATEGIES = (
    Strategy(
        "calico-reclaim",
        "calico",
        "release Calico IPs of pods that are gone and empty blocks",
        "cidrx.ipam.calico.strategies.reclaim:ACTIONS",
        plan="cidrx.ipam.calico.strategies.reclaim:make_plan",
        drift="cidrx.ipam.calico.strategies.reclaim:check_drift",
        reclaim=True,
    ),
    Strategy(
        "calico-pool",
        "calico",
        "a new Calico IPPool",
        "cidrx.ipam.calico.strategies.pool:ACTIONS",
        plan="cidrx.ipam.calico.strategies.pool:make_plan",
        drift="cidrx.ipam.calico.strategies.pool:check_drift",
        basis="cidrx.ipam.calico.strategies.pool:read_basis",
        options=frozenset({"cidr", "add_nodes", "pool_name"}),
        pool_name=IPPOOL_NAME,
    ),
)
