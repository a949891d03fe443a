"""What someone else changes in a cluster's IPAM between `--plan` and `--apply` (shared by the in-cluster cases)."""

from __future__ import annotations

from ipaddress import IPv4Network
from typing import Any

from tests.support.cases import PlanDoc
from tests.support.cases import calico as calico_cases
from tests.support.cases import whereabouts as wc


def whereabouts_pod_back_pending(live: Any, plan: PlanDoc) -> list[str]:
    """The StatefulSet re-creates db-0, whose reservation the plan releases: Pending, no network-status yet."""
    live.kube.put(wc.pod("db-0", "Pending", wc.LIVE_NODES[0]))
    return [f"its pod {wc.db(9)} is live again (Pending)"]


def calico_pod_back(live: Any, plan: PlanDoc) -> list[str]:
    """The pod whose leaked address the plan releases is running again with it."""
    live.kube.put(calico_cases.pod("default", "web-gone", "node-1", "10.0.0.44"))
    return ["is in use: its pod default/web-gone is live again (Running)"]


def calico_overlapping_pool(live: Any, plan: PlanDoc) -> list[str]:
    """Someone creates an IPPool inside the planned CIDR."""
    theirs = str(next(IPv4Network(plan.basis["cidr"]).subnets(new_prefix=26)))
    live.kube.put(calico_cases.ippool("team-pool", theirs))
    return [f"{plan.basis['cidr']} now overlaps IPPool team-pool ({theirs})"]
