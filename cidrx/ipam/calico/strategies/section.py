"""The Calico section a plan is made from, and the one its drift check reads: shared by the calico-reclaim and
calico-pool strategies. Pure: no I/O."""

from __future__ import annotations

from cidrx.errors import InvalidInput, StalePlan
from cidrx.ipam.calico.model import CalicoSection
from cidrx.model.plan import Plan
from cidrx.model.snapshot import Snapshot


def calico_section(snapshot: Snapshot) -> CalicoSection:
    calico: CalicoSection | None = snapshot.kube.calico
    if calico is None:
        raise InvalidInput(
            f"no Calico IPAM found in {snapshot.target.label()} "
            "(neither crd.projectcalico.org nor projectcalico.org is served)"
        )
    return calico


def current_section(plan: Plan, snapshot: Snapshot) -> CalicoSection:
    """The Calico section of `snapshot` (taken just now) that `plan`'s drift check reads: refused when the
    snapshot is of another target (InvalidInput) or Calico is gone from the cluster (StalePlan, exit 4)."""
    if snapshot.target != plan.target:
        raise InvalidInput(f"plan is for {plan.target.label()}, not {snapshot.target.label()}")
    calico: CalicoSection | None = snapshot.kube.calico
    if calico is None:
        raise StalePlan("the plan is stale: Calico IPAM is no longer found in the cluster. Nothing was applied")
    return calico
