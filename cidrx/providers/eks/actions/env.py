"""Putting the env variables an apply set back to the values the journal recorded before the change: the
undo shared by the VPC CNI's (aws-node DaemonSet, vpc-cni add-on) and Karpenter's controller env steps.
"""

from __future__ import annotations

from typing import Any

from cidrx.engine.executor import Outputs, StepContext
from cidrx.model.plan import Step
from cidrx.providers.eks.actions.context import recorded_before


def env_to_restore(have: dict[str, Any], params: dict[str, Any], before: dict[str, Any]) -> dict[str, Any] | None:
    """{name: value before (None: unset)} of the variables still set as the plan set them; None when every one
    is back at its before-value already."""
    changed = {k: before.get(k) for k in params["env"] if have.get(k) != before.get(k)}
    return changed or None


def restore_env(obj: dict[str, Any], container: str, restore: dict[str, Any]) -> None:
    """Set the variables of `restore` in the pod template's `container` back ({name: value}, None: unset)."""
    for c in obj["spec"]["template"]["spec"]["containers"]:
        if c.get("name") != container:
            continue
        env = []
        for e in c.get("env") or []:
            if e.get("name") not in restore:
                env.append(e)
            elif restore[e["name"]] is not None:
                env.append({"name": e["name"], "value": restore[e["name"]]})
        c["env"] = env


class EnvUndo:
    """Puts the variables an env step set back to the values the apply journal recorded before the change."""

    def _have(self, step: Step, params: dict[str, Any], ctx: StepContext) -> dict[str, Any]:
        raise NotImplementedError

    def _where(self, params: dict[str, Any]) -> str:
        raise NotImplementedError

    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        have = self._have(step, params, ctx)
        before = recorded_before(step, ctx)
        if before is None:
            # No record of the values before (journal lost, or an apply from before cidrx recorded them).
            applied = any(have.get(k) == v for k, v in params["env"].items())
            return {"unknown": True} if applied else None
        restore = env_to_restore(have, params, before)
        return {"restore": restore} if restore else None

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        if found.get("unknown"):
            return (
                f"the journal beside the plan has no record of {', '.join(params['env'])} {self._where(params)} "
                "before the apply; set them back by hand"
            )
        have = self._have(step, params, ctx)
        others = [k for k in found["restore"] if have.get(k) != params["env"][k]]
        if others:
            return f"{', '.join(others)} {self._where(params)} changed since the apply; set them back by hand"
        return None

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        values = ", ".join(f"{k}={'(unset)' if v is None else v}" for k, v in (found.get("restore") or {}).items())
        return f"restore {values} {self._where(params)}"
