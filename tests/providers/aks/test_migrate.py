"""`aks-migrate` planning, pure: after an applied pod-subnet expansion the old pool on the full pod subnet is
cordoned, drained and scaled to 0 (autoscaling off); a System pool is drained only; with nothing applied, or only
node-subnet expansions (nothing has to move), there is nothing to plan."""

from __future__ import annotations

import pytest

from cidrx.app import plan as app_plan
from cidrx.errors import InvalidInput
from cidrx.model.options import PlanOptions
from tests.support.cases import aks as aks_cases

OPTS = PlanOptions(strategy="aks-migrate")


def test_the_old_user_pool_is_drained_then_scaled_to_zero() -> None:
    plan = app_plan.make_plan(aks_cases.pod_subnet_expanded(), OPTS)
    nodes = [f"aks-workers-41275501-vmss00000{i}" for i in range(3)]
    assert [s.id for s in plan.steps] == [x for n in nodes for x in (f"cordon-{n}", f"evict-{n}")] + ["scale-workers"]
    scale = plan.steps[-1]
    assert scale.params["to"] == {"count": 0, "enableAutoScaling": False}
    assert set(scale.depends_on) == {f"evict-{n}" for n in nodes}
    # What rollback restores: the count and the autoscaler's range as the snapshot showed them.
    assert plan.basis["agent_pools"] == {
        "workers": {"count": 3, "enableAutoScaling": True, "minCount": 2, "maxCount": 6}
    }
    assert plan.basis["nodes"] == dict.fromkeys(nodes, "workers")
    assert plan.summary["onto"] == ["agent pool workers2 (pod subnet pods2 10.30.8.0/22)"]


def test_a_system_pool_is_drained_but_not_scaled() -> None:
    plan = app_plan.make_plan(aks_cases.pod_subnet_expanded(mode="System"), OPTS)
    assert {s.action for s in plan.steps} == {"aks.cordon-node", "aks.evict-node-pods"}
    assert plan.summary["drained_only"] == ["workers"] and plan.basis["agent_pools"] == {}
    assert any("cannot be scaled to 0" in n for n in plan.notes)


@pytest.mark.parametrize(
    ("snapshot", "says"),
    [
        (aks_cases.pod_subnet, "no pod-subnet expansion cidrx applied"),
        (aks_cases.node_subnet, "no pod-subnet expansion cidrx applied"),
    ],
)
def test_nothing_to_migrate_is_refused(snapshot: object, says: str) -> None:
    with pytest.raises(InvalidInput, match=says):
        app_plan.make_plan(snapshot(), OPTS)  # type: ignore[operator]
