"""Terraform for GKE plans (node-pool, cluster-range): the document, split into a host-project part and a
service-project part under Shared VPC. Reached as `emit` through the registry (`SPEC.terraform`); each step's
HCL comes from its action (the `hcl` of its declaration in cidrx.providers.gke.actions), and the HCL itself is
written by cidrx.render.hcl."""

from __future__ import annotations

from cidrx import registry
from cidrx.errors import InvalidInput
from cidrx.model.plan import Step
from cidrx.providers.gke.actions.subnet_ranges import ADD_SECONDARY_RANGE
from cidrx.render.hcl import Comment
from cidrx.render.terraform import Emitter


def _project_part(e: Emitter, step: Step, done: set[str]) -> None:
    """Under Shared VPC the plan touches two projects, usually two Terraform configurations with different
    owners: mark where each part starts (the host network's subnet, then the service project's cluster)."""
    host = e.plan.basis.get("network_project")
    if not host:
        return
    part = "host" if step.action == ADD_SECONDARY_RANGE.name else "service"
    if part in done:
        return
    done.add(part)
    if part == "host":
        e.items.append(
            Comment(
                f"===== Part 1 of 2: Shared VPC HOST project {host} =====\n"
                "Goes into the Terraform that manages the shared network (applied by the host project's network "
                "admin). Apply it before part 2."
            )
        )
    else:
        e.items.append(
            Comment(
                f"===== Part 2 of 2: SERVICE project {step.params.get('project', '')} =====\n"
                "Goes into the Terraform that manages the cluster. Apply it after part 1."
            )
        )


def emit(e: Emitter) -> None:
    parts: set[str] = set()
    actions = {a.name: a for a in registry.actions("gke")}
    for step in e.plan.steps:
        _project_part(e, step, parts)
        action = actions.get(step.action)
        if action is None or action.hcl is None:
            raise InvalidInput(f"plan step {step.id} ({step.action}) has no Terraform equivalent in cidrx")
        registry.resolve(action.hcl)(e, step)
