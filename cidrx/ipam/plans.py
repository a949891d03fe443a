"""What every in-cluster IPAM object does the same way: its plans, drift checks, executors and API handles
come from the strategies and actions its package declares.

Why it exists: an IPAM object (`IPAM` in `cidrx.ipam.<name>.ipam`, named by its spec's `ipam` path) is asked
for plans by strategy kind (`make_reclaim_plan`, `make_pool_plan`) and for the drift check and executors of a
plan. Each strategy is one unit naming its `plan` and `drift` functions and its actions, so the object looks
the strategy up in the registry instead of branching on strategy names; this class is that lookup, shared.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from cidrx import registry
from cidrx.errors import InvalidInput
from cidrx.model.options import PlanOptions

if TYPE_CHECKING:
    from cidrx.engine.executor import Executor
    from cidrx.kube.api import KubeApi, KubeApis
    from cidrx.model.kube import KubeSection
    from cidrx.model.options import Access
    from cidrx.model.plan import Plan
    from cidrx.model.snapshot import Snapshot


class DeclaredPlans:
    """The plan side of the IPAM declared as `name` in the registry: its plans only touch the Kubernetes API."""

    cluster_only = True  # its plans' steps reach only the cluster (cidrx.kube.api.KubeApis)

    def __init__(self, name: str) -> None:
        self.name = name

    @property
    def spec(self) -> registry.IpamSpec:
        spec = registry.ipam_spec(self.name)
        if spec is None:
            raise InvalidInput(f"unknown IPAM {self.name!r}")
        return spec

    def _strategy(self, name: str) -> registry.Strategy | None:
        strategy = registry.strategy(name)
        return strategy if strategy is not None and strategy.owner == self.name else None

    def make_reclaim_plan(self, snapshot: Snapshot, created_at: str) -> Plan:
        """The plan of its reclaim strategy (a reclaim plan has no options)."""
        strategy = next((s for s in registry.strategies() if s.owner == self.name and s.reclaim), None)
        if strategy is None:
            raise InvalidInput(f"{self.spec.title} has no reclaim plan")
        plan: Plan = registry.load(strategy.plan)(snapshot, PlanOptions(), created_at)
        return plan

    def make_pool_plan(self, snapshot: Snapshot, opts: PlanOptions, created_at: str) -> Plan | None:
        """The plan of the expand strategy `opts.strategy` (None: it is not one of this IPAM's)."""
        strategy = self._strategy(opts.strategy or "")
        if strategy is None or strategy.reclaim:
            return None
        plan: Plan = registry.load(strategy.plan)(snapshot, opts, created_at)
        return plan

    def check_drift(self, plan: Plan, snapshot: Snapshot, begun: Collection[str] = ()) -> None:
        """The drift check `plan`'s strategy declares (StalePlan, exit 4, when its facts no longer hold)."""
        strategy = self._strategy(plan.strategy)
        if strategy is None:
            raise InvalidInput(f"plan strategy {plan.strategy!r} is not a {self.spec.title} plan")
        registry.load(strategy.drift)(plan, snapshot, begun)

    def executors(self) -> Mapping[str, Executor]:
        """An executor for every step action its plans use."""
        return registry.executors(registry.actions(self.name))

    def apis(self, plan: Plan, access: Access, kube: KubeApi | None) -> KubeApis:
        """What its steps reach through `ctx.apis`: the cluster alone."""
        from cidrx.kube.api import KubeApis

        return KubeApis(kube)

    def address_maps(self, section: Any, kube: KubeSection) -> Sequence[Any]:
        """Its address maps (cidrx.model.netmap.NetworkMap) of `section`, its part of the kube section `kube`."""
        return registry.load(self.spec.maps)(section, kube) if self.spec.maps else ()
