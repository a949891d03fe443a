"""Terraform for AKS plans (aks-node-pool, aks-pod-subnet): reached as `emit` through the registry
(`SPEC.terraform`); each step's HCL comes from its action (the `hcl` of its declaration in
cidrx.providers.aks.actions), and the HCL itself is written by cidrx.render.hcl."""

from __future__ import annotations

from cidrx import registry
from cidrx.errors import InvalidInput
from cidrx.render.terraform import Emitter


def emit(e: Emitter) -> None:
    actions = {a.name: a for a in registry.actions("aks")}
    for step in e.plan.steps:
        action = actions.get(step.action)
        if action is None or action.hcl is None:
            raise InvalidInput(f"plan step {step.id} ({step.action}) has no Terraform equivalent in cidrx")
        registry.resolve(action.hcl)(e, step)
