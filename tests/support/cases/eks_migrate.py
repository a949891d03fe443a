"""Conformance case of EKS's `eks-migrate`: the EKS incident after a custom-networking expansion was applied
(its new subnets have room; the old group's nodes still sit in the full subnets), in moto and the fake API
server. The migration cordons those nodes, evicts their pods and scales the old node group to 0."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.cases import Case, Interrupt, PlanDoc
from tests.support.cases.live import Live, eks
from tests.support.cli import run
from tests.support.estates.eks import ROOMY_CONTROL_PLANE, build_incident


@contextlib.contextmanager
def after_expansion(tmp: Path, mp: pytest.MonkeyPatch) -> Iterator[Live]:
    # The control plane in roomy subnets of its own, so what is left after the migration is the migration's.
    with eks(functools.partial(build_incident, control_plane=ROOMY_CONTROL_PLANE))(tmp, mp) as live:
        plan = tmp / "expansion.json"
        made = run("expand", *live.target, "--strategy", "custom-networking", "--plan", "--out", str(plan))
        assert made.exit_code == 0, made.output
        applied = run("expand", "--apply", str(plan), "--yes", *live.access)
        assert applied.exit_code == 0, applied.output
        # The apply names the follow-up: the old group's nodes are left in the full subnets.
        assert "plan their migration next: cidrx expand" in applied.output, applied.output
        assert "--strategy eks-migrate --plan" in applied.output
        live.reset_log()
        yield live


def resize_old_group(live: Any, plan: PlanDoc) -> list[str]:
    """Someone scales the old node group up between plan and apply."""
    name = sorted(plan.basis["nodegroups"])[0]
    was = plan.basis["nodegroups"][name]
    live.estate.eks.update_nodegroup_config(
        clusterName=plan.doc["target"]["cluster"],
        nodegroupName=name,
        scalingConfig={
            **was,
            "desiredSize": was["desiredSize"] + 1,
            "maxSize": max(was["maxSize"], was["desiredSize"] + 1),
        },
    )
    return [f"node group {name}"]


CASE = Case(
    "eks-migrate",
    estate=after_expansion,
    stale=resize_old_group,
    interrupt=Interrupt("kube", "PATCH", "/nodes/"),
    skip={
        "rollback": "evicted pods are not put back (their controllers recreate them on other nodes; the fake API "
        "server runs no controllers), so the estate cannot return to its state before; rollback's uncordon and "
        "scale-back are checked in tests/providers/eks/test_migrate.py"
    },
)
