"""Terraform shared by the EKS action families: the tags of what an apply creates, and the refusal for a step that
changes some fields of an existing object (an EC2NodeClass, a NodeClass, a launch template), which no Terraform
resource expresses."""

from __future__ import annotations

from cidrx.errors import InvalidInput
from cidrx.model.plan import DIGEST_TAG, Step
from cidrx.providers.eks.model import APPLIED_AT_TAG
from cidrx.render.hcl import Expr
from cidrx.render.terraform import Emitter

# The time tag is the apply's (actions/context.py plan_tags): an imported resource carries it, and Terraform must
# neither remove it nor need it in the configuration.
IGNORE_APPLIED_AT = Expr(f'tags["{APPLIED_AT_TAG}"]')


def plan_tags_hcl(e: Emitter, tags: dict[str, str]) -> dict[str, str]:
    """The `tags` argument of a created resource: the step's tags and the plan tag."""
    return {**tags, DIGEST_TAG: e.plan.plan_id}


def partial_change(e: Emitter, step: Step) -> None:
    """Refuse `--emit terraform` for `step`, saying what to do instead."""
    raise InvalidInput(
        f"plan step {step.id} ({step.action}) changes some fields of an existing object ({step.description}); "
        "Terraform has no resource for that",
        hint="apply the plan with `cidrx expand --apply`, or make the change where that object is managed",
    )
