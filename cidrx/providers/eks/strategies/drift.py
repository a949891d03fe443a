"""The drift checks every EKS strategy shares, run before its own: the plan is for this cluster and its VPC,
the VPC CNI is still managed where the plan changes it (add-on or DaemonSet), and the node provisioners the
plan changes still look as planned. A strategy's own check adds its problems; any problem refuses the apply
(StalePlan, exit 4) before the first write.
"""

from __future__ import annotations

from collections.abc import Callable

from cidrx.errors import InvalidInput, StalePlan
from cidrx.model.plan import Plan
from cidrx.model.snapshot import Snapshot
from cidrx.providers.eks.actions.cni_env import SET_DAEMONSET_ENV, UPDATE_ADDON_ENV
from cidrx.providers.eks.model import EksSection, eks_section
from cidrx.providers.eks.strategies.provisioners import provisioner_drift

# A strategy's own drift check: what its plan relied on that no longer holds in the fresh snapshot.
OwnDrift = Callable[[Plan, EksSection, Snapshot], list[str]]


def cni_management_drift(plan: Plan, eks: EksSection) -> list[str]:
    """The CNI change targets either the managed add-on or the aws-node DaemonSet; if the cluster moved
    from one to the other since the plan was made, the planned change would land where it is ignored
    (EKS overwrites DaemonSet edits of a managed add-on) or fail halfway through the apply."""
    for step in plan.steps:
        if step.action == UPDATE_ADDON_ENV.name and eks.vpc_cni_addon is None:
            return [
                f"the VPC CNI is no longer the EKS add-on {step.params['addon']} (the plan would update the add-on)"
            ]
        if step.action == SET_DAEMONSET_ENV.name and eks.vpc_cni_addon is not None:
            return [
                f"the VPC CNI is now the managed EKS add-on {eks.vpc_cni_addon.name} "
                "(the plan would edit the aws-node DaemonSet)"
            ]
    return []


def check_plan_drift(plan: Plan, snapshot: Snapshot, own: OwnDrift) -> None:
    """Refuse (StalePlan, exit 4) when what the plan relied on no longer holds: the shared checks, then `own`.

    What this plan already did (resources tagged with its plan id, its own CIDR association) is not
    drift, so a resumed apply passes; unrelated changes (a tag elsewhere) do not matter either.
    """
    eks = eks_section(snapshot)
    if snapshot.target != plan.target:
        raise InvalidInput(f"plan is for {plan.target.label()}, not {snapshot.target.label()}")
    b = plan.basis
    problems: list[str] = []
    if eks.vpc.vpc_id != b["vpc_id"]:
        problems.append(f"the cluster now uses VPC {eks.vpc.vpc_id}, not {b['vpc_id']}")
    problems += cni_management_drift(plan, eks)
    problems += provisioner_drift(plan.steps, b, eks, plan.plan_id)
    problems += own(plan, eks, snapshot)
    if problems:
        raise StalePlan("the plan is stale: " + "; ".join(problems) + ". Nothing was applied; make a new plan")
