"""What someone else changes in the GKE estate between `--plan` and `--apply` (shared by the GKE cases)."""

from __future__ import annotations

from ipaddress import IPv4Network
from typing import Any

from tests.support.estates import gke as gw


def overlap_on_another_subnet(live: Any, plan: Any) -> list[str]:
    """A secondary range inside the planned CIDR, added to another subnet of the network."""
    region, _primary, _ = gw.OTHER_SUBNETS["us-workloads"]
    cidr = IPv4Network(plan.basis["cidr"])
    theirs = str(next(cidr.subnets(new_prefix=cidr.prefixlen + 1)))
    found = live.gcp.subnet(gw.PROJECT, region, "us-workloads")
    ranges = [*found.get("secondaryIpRanges", []), {"rangeName": "batch-pods", "ipCidrRange": theirs}]
    live.gcp.update_subnet(gw.PROJECT, region, "us-workloads", {"secondaryIpRanges": ranges})
    return [f"{cidr} now overlaps {theirs}"]
