"""Terraform for EKS plans: the document `--emit terraform` writes, assembled step by step from the HCL each
step's action declares (cidrx.providers.eks.actions).

Why it exists: the Terraform equivalent of a plan is written by the package that makes the plan, so a new
provider brings its own; cidrx.render.terraform calls `emit` through the registry and cidrx.render.hcl
writes the HCL.
"""

from __future__ import annotations

from cidrx import registry
from cidrx.errors import InvalidInput
from cidrx.render.terraform import Emitter


def emit(e: Emitter) -> None:
    actions = {a.name: a for a in registry.actions("eks")}
    for step in e.plan.steps:
        action = actions.get(step.action)
        if action is None or action.hcl is None:
            raise InvalidInput(f"plan step {step.id} ({step.action}) has no Terraform equivalent in cidrx")
        action.hcl(e, step)
