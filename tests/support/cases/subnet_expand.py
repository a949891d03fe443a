"""Conformance case of GKE's `subnet-expand`: the incident cluster whose subnet's primary range is full, in the
loopback GCP fake. The expansion cannot be undone, so its rollback is a refusal (the conformance suite checks
that for every strategy whose actions declare `no_undo`)."""

from __future__ import annotations

from ipaddress import IPv4Network
from typing import Any

from tests.support.cases import Case, Interrupt
from tests.support.cases.live import gke
from tests.support.estates import gke as gw


def overlap_with_the_planned_range(live: Any, plan: Any) -> list[str]:
    """A secondary range of another subnet taken in the part of the planned range the subnet does not have yet."""
    cidr = IPv4Network(plan.basis["cidr"])
    theirs = str(list(cidr.subnets(new_prefix=cidr.prefixlen + 1))[1])
    region, _primary, _ = gw.OTHER_SUBNETS["us-workloads"]
    found = live.gcp.subnet(gw.PROJECT, region, "us-workloads")
    ranges = [*found.get("secondaryIpRanges", []), {"rangeName": "late-comer", "ipCidrRange": theirs}]
    live.gcp.update_subnet(gw.PROJECT, region, "us-workloads", {"secondaryIpRanges": ranges})
    return [f"{cidr} now overlaps {theirs}"]


CASE = Case(
    "subnet-expand",
    estate=gke(gw.build_node_subnet_full),
    stale=overlap_with_the_planned_range,
    interrupt=Interrupt("gcp", "POST", "/expandIpCidrRange"),
)
