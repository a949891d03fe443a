"""AKS strategy `aks-pod-subnet` (Azure CNI with a pod subnet, dynamic or static block allocation): a new pod
subnet in the VNet and an agent pool, a copy of the template pool on the same node subnet, whose pods take
addresses from it (`podSubnetID`). Pure: no I/O."""

from __future__ import annotations

from cidrx.model.options import PlanOptions
from cidrx.model.plan import Plan
from cidrx.model.snapshot import Snapshot
from cidrx.providers.aks.strategies import subnet
from cidrx.providers.aks.strategies.subnet import ACTIONS, check_drift

NAME = "aks-pod-subnet"
__all__ = ["ACTIONS", "check_drift", "make_plan"]


def make_plan(snapshot: Snapshot, opts: PlanOptions, created_at: str) -> Plan:
    return subnet.make_plan(snapshot, opts, created_at, NAME, "pods")
