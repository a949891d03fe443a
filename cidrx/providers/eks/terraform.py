"""Terraform for EKS plans: the document `--emit terraform` writes, assembled step by step from the HCL each
step's action declares (cidrx.providers.eks.actions).

Why it exists: the Terraform equivalent of a plan is written by the package that makes the plan, so a new
provider brings its own; cidrx.render.terraform calls `emit` through the registry and cidrx.render.hcl
writes the HCL.
"""

from __future__ import annotations

from cidrx.errors import InvalidInput
from cidrx.providers.eks.actions.all import ACTIONS
from cidrx.render.terraform import Emitter

_BY_NAME = {a.name: a for a in ACTIONS}


def emit(e: Emitter) -> None:
    for step in e.plan.steps:
        action = _BY_NAME.get(step.action)
        if action is None or action.hcl is None:
            raise InvalidInput(f"plan step {step.id} ({step.action}) has no Terraform equivalent in cidrx")
        action.hcl(e, step)
