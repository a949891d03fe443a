"""`expand --plan` and `reclaim --plan` as use cases: check the options against the strategy, look the
strategy up in the registry and call its plan function.

Why it exists: a strategy is a unit declared by its owner (`Strategy.plan`); this module finds it, picks the
default one when `--strategy` is not given (the owner's `default_strategy`, else its first expand strategy,
else the `default_strategy` of the in-cluster IPAM the cluster runs), and refuses options the strategy would
ignore, and another expansion while one cidrx applied still has room (the provider's `applied_plans`; `--force`
overrides, and the plan says so). It names no strategy and no plugin.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING

from cidrx import registry
from cidrx.app.diagnose import utc_now
from cidrx.app.owners import require_supported
from cidrx.errors import InvalidInput
from cidrx.model.options import PlanOptions
from cidrx.model.plan import seal

if TYPE_CHECKING:
    from cidrx.model.applied import AppliedPlan
    from cidrx.model.plan import Plan
    from cidrx.model.snapshot import Snapshot


def strategies() -> tuple[str, ...]:
    """Every strategy `expand --plan` takes (every provider's, then the in-cluster ones)."""
    return registry.expand_strategies()


# The `expand --plan` options each strategy reads (besides --strategy); a flag given to a strategy that does
# not read it is refused instead of silently ignored. Keys are PlanOptions fields; values their flags.
_FLAGS = {
    "cidr": "--cidr",
    "add_nodes": "--add-nodes",
    "pool_name": "--pool-name",
    "template": "--template-pool",
    "max_pods_per_node": "--max-pods-per-node",
    "allow_class_e": "--allow-class-e",
}


def check_plan_options(provider_name: str, strategy: str, opts: PlanOptions) -> None:
    """Refuse (exit 2) flags `strategy` would ignore and a --pool-name the system would reject."""
    declared = registry.strategy(strategy)
    reads = declared.options if declared is not None and declared.options is not None else frozenset(_FLAGS)
    spec = registry.provider_spec(provider_name)
    why_not = dict(spec.why_not) if spec is not None else {}
    given = [f for f in _FLAGS if getattr(opts, f) not in (None, False)]
    unused = [f for f in given if f not in reads]
    if unused:
        why = next((why_not[f] for f in unused if f in why_not), None)
        flags = ", ".join(_FLAGS[f] for f in unused)
        raise InvalidInput(
            f"{flags} {'does' if len(unused) == 1 else 'do'} not apply to --strategy {strategy}"
            + (f": {why}" if why else " (it would be ignored)"),
            hint="drop it" if len(unused) == 1 else "drop them",
        )
    if opts.pool_name is not None:
        rule = declared.pool_name if declared is not None else None
        if rule is not None:
            pattern, limit, words = rule
            if not re.fullmatch(pattern, opts.pool_name) or len(opts.pool_name) > limit:
                raise InvalidInput(f"--pool-name {opts.pool_name!r} is not a valid name: use {words}")


def make_plan(snapshot: Snapshot, opts: PlanOptions) -> Plan:
    """An expand plan: one of the target's provider's strategies, or an in-cluster one for any target."""
    spec = require_supported(snapshot.target)
    own = spec.strategies
    in_cluster = registry.ipam_strategies()
    if opts.strategy in in_cluster:
        if opts.strategy in registry.reclaim_strategies():
            raise InvalidInput(f"--strategy {opts.strategy} is a reclaim plan: use `cidrx reclaim --ipam ...`")
        check_plan_options(snapshot.target.provider, opts.strategy, opts)
        return _cluster_plan(snapshot, opts.strategy, opts)
    if opts.strategy and opts.strategy not in own:
        others = [s for s in registry.expand_strategies() if s in in_cluster]
        raise InvalidInput(
            f"--strategy {opts.strategy} does not apply to {snapshot.target.provider} clusters; choose one of "
            f"{', '.join([*own, *others])}"
        )
    if own:
        check_plan_options(snapshot.target.provider, opts.strategy or own[0], opts)
    name = opts.strategy or ""
    if not name and spec.default_strategy:
        name = registry.load(spec.default_strategy)(snapshot, opts)
    if not name and own:
        name = own[0]
    if not name:
        name = ipam_default(snapshot, opts)
        if name:
            check_plan_options(snapshot.target.provider, name, opts)
            return _cluster_plan(snapshot, name, opts)
    if not name:
        what = spec.help.removeprefix("Target a ").removeprefix("Target an ").rstrip(".")
        raise InvalidInput(f"{what}s ({spec.flag}) have no expand strategy of their own", hint=in_cluster_hint(spec))
    declared = registry.strategy(name)
    if declared is not None and declared.migration:
        return _run_plan(name, snapshot, opts)  # it moves workloads onto the applied plans' space
    roomy = applied_with_room(spec, snapshot)
    if roomy and not opts.force:
        a = roomy[0]
        raise InvalidInput(
            f"plan {a.plan_id}{a.when} to {snapshot.target.label()} still has room in its new space ({a.space}: "
            f"{a.free} of {a.size} addresses free); another expansion would stack on it",
            hint="`cidrx diagnose` says what is left to do (a migration where the provider needs one), or pass --force "
            "to plan another expansion anyway (the plan records why)",
        )
    plan = _run_plan(name, snapshot, opts)
    if roomy:
        forced = "; ".join(f"plan {a.plan_id} ({a.space}: {a.free} of {a.size} addresses free)" for a in roomy)
        note = f"Planned with --force although applied plans still had room: {forced}."
        plan = seal(replace(plan, notes=(*plan.notes, note), digest=""))
    return plan


def applied_with_room(spec: registry.ProviderSpec, snapshot: Snapshot) -> list[AppliedPlan]:
    """The plans cidrx applied in the target's estate (by the provider's `applied_plans`) whose new space
    still has free addresses."""
    if not spec.applied_plans:
        return []
    found: tuple[AppliedPlan, ...] = registry.load(spec.applied_plans)(snapshot)
    return [a for a in found if a.free > 0]


def ipam_default(snapshot: Snapshot, opts: PlanOptions) -> str:
    """The expand strategy the cluster's in-cluster IPAM declares as its default (`default_strategy`), when
    exactly one such IPAM holds pools in the snapshot; "" when none does."""
    found = []
    for spec in registry.ipams():
        section = getattr(snapshot.kube, spec.field, None) if snapshot.kube.available else None
        if spec.default_strategy and section is not None and section.pools:
            found.append(spec)
    if len(found) > 1:
        choices = ", ".join(f"--strategy {registry.load(s.default_strategy)(snapshot, opts)}" for s in found)
        raise InvalidInput(f"the cluster runs {' and '.join(s.title for s in found)}: choose {choices}")
    return registry.load(found[0].default_strategy)(snapshot, opts) if found else ""


def in_cluster_hint(spec: registry.ProviderSpec) -> str:
    """What to run on a target without strategies of its own: the in-cluster IPAMs' expand strategies and the
    IPAMs `cidrx reclaim` takes."""
    ipams = {i.name: i for i in registry.ipams()}
    expand = [
        f"--strategy {s.name} for {ipams[s.owner].title}"
        for s in registry.strategies()
        if s.owner in ipams and not s.reclaim
    ]
    owners = {s.owner for s in registry.strategies() if s.reclaim}
    reclaim = f"`cidrx reclaim {spec.flag} --ipam {'|'.join(name for name in ipams if name in owners)}`"
    return f"use {', '.join(expand)}, or {reclaim}" if expand else f"use {reclaim}"


def make_reclaim_plan(snapshot: Snapshot, ipam_name: str) -> Plan:
    """A plan that frees addresses an in-cluster IPAM holds for pods that no longer need them."""
    require_supported(snapshot.target)
    reclaims = [s for s in registry.strategies() if s.reclaim]
    owners = {s.owner for s in reclaims}
    reclaiming = [i.name for i in registry.ipams() if i.name in owners]
    spec = registry.ipam_spec(ipam_name)
    if spec is None or ipam_name not in reclaiming:
        raise InvalidInput(f"unknown IPAM {ipam_name!r}; choose one of {', '.join(reclaiming)}")
    require_pools(snapshot, spec)
    name = next(s.name for s in reclaims if s.owner == ipam_name)
    return _run_plan(name, snapshot, PlanOptions(strategy=name))


def require_pools(snapshot: Snapshot, spec: registry.IpamSpec) -> None:
    """An in-cluster plan needs the cluster read and the IPAM's pools found in it."""
    kube = snapshot.kube
    if not kube.available:
        raise InvalidInput(f"{spec.name} plans need the Kubernetes API, which was not reachable: {kube.reason}")
    section = getattr(kube, spec.field)
    if section is None or not section.pools:
        raise InvalidInput(f"no {spec.name} IP pools found in {snapshot.target.label()}: nothing to reclaim or extend")


def _cluster_plan(snapshot: Snapshot, name: str, opts: PlanOptions) -> Plan:
    """The plan of an in-cluster expand strategy, made by the IPAM that owns it."""
    spec = registry.owner_of(name)
    if not isinstance(spec, registry.IpamSpec) or not spec.ipam or spec.providers:
        raise InvalidInput(f"plan strategy {name!r} is not an in-cluster IPAM plan")
    require_pools(snapshot, spec)
    return _run_plan(name, snapshot, opts)


def _run_plan(name: str, snapshot: Snapshot, opts: PlanOptions) -> Plan:
    """The plan of strategy `name`, made by the plan function it declares."""
    declared = registry.strategy(name)
    assert declared is not None
    plan: Plan = registry.load(declared.plan)(snapshot, replace(opts, strategy=name), utc_now())
    return plan
