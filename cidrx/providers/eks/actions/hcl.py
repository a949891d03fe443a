"""Terraform shared by the EKS action families: the refusal for a step that changes some fields of an existing
object (an EC2NodeClass, a NodeClass, a launch template), which no Terraform resource expresses."""

from __future__ import annotations

from cidrx.errors import InvalidInput
from cidrx.model.plan import Step
from cidrx.render.terraform import Emitter


def partial_change(e: Emitter, step: Step) -> None:
    """Refuse `--emit terraform` for `step`, saying what to do instead."""
    raise InvalidInput(
        f"plan step {step.id} ({step.action}) changes some fields of an existing object ({step.description}); "
        "Terraform has no resource for that",
        hint="apply the plan with `cidrx expand --apply`, or make the change where that object is managed",
    )
