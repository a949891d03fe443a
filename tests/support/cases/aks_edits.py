"""What someone else changes in an AKS estate between `--plan` and `--apply` (shared by the AKS cases)."""

from __future__ import annotations

from ipaddress import IPv4Network
from typing import Any

from tests.support.estates import aks as aw


def overlapping_subnet(live: Any, plan: Any) -> list[str]:
    """A subnet inside the planned CIDR, added to the VNet by someone else."""
    cidr = IPv4Network(plan.basis["cidr"])
    theirs = str(next(cidr.subnets(new_prefix=min(29, cidr.prefixlen + 1))))
    vnet = plan.basis["vnet"].rsplit("/", 1)[-1]
    live.arm.put_subnet(aw.SUB, aw.RG, vnet, aw.subnet_json(vnet, "someone-else", theirs))
    return [f"{cidr} now overlaps {theirs} (subnet someone-else)"]
