"""AKS strategy `aks-node-pool` (Azure CNI node subnet, and the node subnet of Overlay and kubenet clusters):
a new node subnet in the VNet and an agent pool, a copy of the template pool, whose nodes (and with Azure CNI
node subnet their pods) take addresses from it. Pure: no I/O."""

from __future__ import annotations

from cidrx.model.options import PlanOptions
from cidrx.model.plan import Plan
from cidrx.model.snapshot import Snapshot
from cidrx.providers.aks.strategies import subnet
from cidrx.providers.aks.strategies.subnet import ACTIONS, check_drift

NAME = "aks-node-pool"
__all__ = ["ACTIONS", "check_drift", "make_plan"]


def make_plan(snapshot: Snapshot, opts: PlanOptions, created_at: str) -> Plan:
    return subnet.make_plan(snapshot, opts, created_at, NAME, "nodes")
