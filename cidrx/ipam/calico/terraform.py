"""Terraform for Calico's plans (the package's `terraform` emitter): each step written by its action's `hcl`.

Why it exists: the Terraform equivalent of a plan is written by the package that makes the plan, so a new
IPAM brings its own; cidrx.render.terraform calls `emit` through the registry, each action's module writes
its own step (the IPPool as a kubernetes_manifest: cidrx.ipam.calico.actions.create_ippool) and
cidrx.render.hcl writes the HCL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cidrx import registry
from cidrx.errors import InvalidInput

if TYPE_CHECKING:
    from cidrx.render.terraform import Emitter


def emit(e: Emitter) -> None:
    writers = {a.name: a.hcl for a in registry.actions("calico") if a.hcl is not None}
    for step in e.plan.steps:
        writer = writers.get(step.action)
        if writer is None:
            raise InvalidInput(f"plan step {step.id} ({step.action}) has no Terraform equivalent in cidrx")
        writer(e, step)
