"""Dispatch by provider: which collect/analyze/plan/apply functions serve a Target.

The CLI knows flags, the providers know clouds; this thin layer is the only place that joins them. Each
provider package exports one object (see `Provider`) that `cidrx.registry` names by a lazy path, so adding
one means one package and one `register()` line. Plans for in-cluster IPAMs (the registry's IPAM
strategies) are served by `cidrx.ipam.dispatch` whatever the target's cloud, since they only touch the
Kubernetes API. Provider objects are imported lazily: `cidrx --help` and `diagnose --snapshot` never pay
for cloud SDKs.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from cidrx import registry
from cidrx.errors import InvalidInput
from cidrx.kube.model import KubeSection
from cidrx.model.options import Access, PlanOptions
from cidrx.model.snapshot import Snapshot, seal
from cidrx.model.target import Target

if TYPE_CHECKING:
    from cidrx.engine.executor import Executor, Progress
    from cidrx.engine.verify import Verification
    from cidrx.engine.waiting import Waiter
    from cidrx.kube.api import KubeApi
    from cidrx.model.findings import Diagnosis
    from cidrx.model.plan import Plan

__all__ = ["PlanOptions", "Provider", "StepOutcome"]


@dataclass(frozen=True)
class StepOutcome:
    """One row of an apply's result: `done` (changed something) or `skipped` (found already done)."""

    step_id: str
    action: str
    status: str
    outputs: Mapping[str, Any]


class Provider(Protocol):
    """The object a provider package exports (named in its registry entry). analyze/make_plan/check_drift
    and address_maps are pure; `cloud_permissions` is what collect (and fleet listing) reads."""

    def collect(self, target: Target, access: Access, kube: KubeSection, taken_at: str) -> Snapshot: ...

    def analyze(self, snapshot: Snapshot) -> Diagnosis: ...

    def make_plan(self, snapshot: Snapshot, opts: PlanOptions, created_at: str) -> Plan: ...

    def check_drift(self, plan: Plan, snapshot: Snapshot) -> None: ...

    def executors(self) -> Mapping[str, Executor]: ...

    def apis(self, plan: Plan, access: Access, kube: KubeApi | None) -> Any: ...

    def address_maps(self, snapshot: Snapshot) -> Sequence[Any]: ...

    def cloud_permissions(self) -> tuple[str, ...]: ...


def utc_now() -> str:
    """UTC ISO-8601 to the second, the form every document cidrx writes uses."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def require_supported(target: Target) -> registry.ProviderSpec:
    spec = registry.provider_spec(target.provider)
    if spec is None:
        raise InvalidInput(f"unknown provider {target.provider!r}")
    return spec


def provider(target: Target) -> Provider:
    return cast("Provider", registry.load(require_supported(target).provider))


def provider_named(name: str) -> Provider:
    spec = registry.provider_spec(name)
    if spec is None:
        raise InvalidInput(f"unknown provider {name!r}")
    return cast("Provider", registry.load(spec.provider))


def strategies() -> tuple[str, ...]:
    """Every strategy `expand --plan` takes (any provider's, and the in-cluster calico-pool)."""
    return registry.expand_strategies()


def _collect_kube(opts: Access, provider: str) -> KubeSection:
    """The cluster side. Unreachable gives `available=False` with the reason (collect_kube decides that);
    access denied is an error, since a silently partial snapshot would mislead a plan."""
    if opts.no_kube:
        return KubeSection(available=False, reason="in-cluster checks skipped (--no-kube)")
    from cidrx.kube.collect import collect_kube

    return collect_kube(opts.kubeconfig, opts.context, provider=provider)


def collect_snapshot(target: Target, opts: Access) -> Snapshot:
    """A fresh, sealed snapshot of `target` (cloud section, plus the cluster unless --no-kube)."""
    module = provider(target)
    taken_at = utc_now()
    kube = _collect_kube(opts, target.provider)
    return seal(module.collect(target, opts, kube, taken_at))


def analyze(snapshot: Snapshot) -> Diagnosis:
    """The provider's diagnosis plus the in-cluster IPAM checks for whatever IPAMs the cluster runs."""
    from cidrx.ipam import dispatch as ipam
    from cidrx.model.findings import make_diagnosis

    d = provider(snapshot.target).analyze(snapshot)
    capacity, findings = ipam.analyze(snapshot.kube)
    if not capacity and not findings:
        return d
    return make_diagnosis(d.target, d.snapshot_fingerprint, [*d.capacity, *capacity], [*d.findings, *findings])


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
    import re

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
    """An expand plan: the provider's, or an in-cluster one (calico-pool) for any target."""
    module = provider(snapshot.target)
    own = require_supported(snapshot.target).strategies
    if opts.strategy in registry.ipam_strategies():
        from cidrx.ipam import dispatch as ipam

        if opts.strategy in registry.reclaim_strategies():
            raise InvalidInput(f"--strategy {opts.strategy} is a reclaim plan: use `cidrx reclaim --ipam ...`")
        check_plan_options(snapshot.target.provider, opts.strategy, opts)
        return ipam.make_expand_plan(snapshot, opts, utc_now())
    if opts.strategy and opts.strategy not in own:
        in_cluster = [s for s in registry.expand_strategies() if s in registry.ipam_strategies()]
        raise InvalidInput(
            f"--strategy {opts.strategy} does not apply to {snapshot.target.provider} clusters; choose one of "
            f"{', '.join([*own, *in_cluster])}"
        )
    if own:
        check_plan_options(snapshot.target.provider, opts.strategy or own[0], opts)
    return module.make_plan(snapshot, opts, utc_now())


def make_reclaim_plan(snapshot: Snapshot, ipam_name: str) -> Plan:
    """A plan that frees addresses an in-cluster IPAM holds for pods that no longer need them."""
    from cidrx.ipam import dispatch as ipam

    require_supported(snapshot.target)
    return ipam.make_reclaim_plan(snapshot, ipam_name, utc_now())


def is_ipam_plan(plan: Plan) -> bool:
    return plan.strategy in registry.ipam_strategies()


def collect_for_plan(plan: Plan, opts: Access) -> Snapshot:
    """The fresh snapshot apply checks `plan` against: in-cluster plans need only the cluster (no cloud
    credentials), cloud plans the whole target."""
    if not is_ipam_plan(plan):
        return collect_snapshot(plan.target, opts)
    require_supported(plan.target)
    if opts.no_kube:
        raise InvalidInput(f"plan strategy {plan.strategy} changes in-cluster objects; drop --no-kube")
    taken_at = utc_now()
    return seal(Snapshot(target=plan.target, taken_at=taken_at, kube=_collect_kube(opts, plan.target.provider)))


def check_drift(plan: Plan, snapshot: Snapshot, begun: Collection[str] = ()) -> None:
    """Raise StalePlan (exit 4) when what `plan` relied on no longer holds in `snapshot`. `begun`: the steps
    an earlier apply started (per the journal); in-cluster reclaim plans cannot tell their own deletions
    from someone else's without it."""
    if is_ipam_plan(plan):
        from cidrx.ipam import dispatch as ipam

        ipam.check_drift(plan, snapshot, begun)
        return
    provider(plan.target).check_drift(plan, snapshot)


def cluster_steps(plan: Plan) -> list[str]:
    """Ids of the steps of `plan` that read or change in-cluster objects (their permissions say so)."""
    return [s.id for s in plan.steps if is_ipam_plan(plan) or any(p.startswith("kubernetes:") for p in s.permissions)]


def require_reach(plan: Plan, snapshot: Snapshot, opts: Access) -> None:
    """Refuse, before the first write, a plan whose steps need the cluster when the fresh snapshot could
    not read it: an apply must prove access to everything it touches first (a cloud that cannot be reached
    already failed the snapshot), and an unread cluster is an outage to report (exit 6), not drift (exit 4)."""
    needing = cluster_steps(plan)
    if not needing:
        return
    if opts.no_kube:
        raise InvalidInput(
            f"plan {plan.plan_id} changes in-cluster objects (step {needing[0]}), so its apply must reach the "
            "cluster; drop --no-kube"
        )
    if not snapshot.kube.available:
        from cidrx.errors import Unreachable

        raise Unreachable(
            f"cannot reach the cluster of {plan.target.label()}, which plan {plan.plan_id} changes (step "
            f"{needing[0]}): {snapshot.kube.reason or 'the Kubernetes API could not be read'}; nothing was changed",
            hint="check the kubeconfig (--kubeconfig, --context) and network access to the API server, then run "
            "the same command again",
        )


def kube_api(opts: Access, snapshot: Snapshot) -> KubeApi | None:
    """The Kubernetes client for steps that change in-cluster objects; None when the fresh snapshot could
    not reach the cluster (those steps then stop with a message saying so)."""
    if opts.no_kube or not snapshot.kube.available:
        return None
    from cidrx.kube.api import KubeApi

    return KubeApi(opts.kubeconfig, opts.context)


def apply_plan(
    plan: Plan, plan_path: str | Path, snapshot: Snapshot, opts: Access, progress: Progress
) -> list[StepOutcome]:
    """Run `plan` through the engine: drift check (against `snapshot`, taken just now) before any write,
    then every step with the journal beside `plan_path`. Raises StalePlan / ApplyInterrupted / AccessDenied."""
    from cidrx.engine.apply import run_plan
    from cidrx.engine.executor import StepContext
    from cidrx.engine.journal import Journal
    from cidrx.engine.waiting import Waiter
    from cidrx.ipam import dispatch as ipam
    from cidrx.kube.api import KubeApis

    module = provider(plan.target)
    journal = Journal.open(plan_path, plan)  # reads only: a journal of another plan is refused first
    require_reach(plan, snapshot, opts)
    kube = kube_api(opts, snapshot)
    executors = ipam.executors(plan) if is_ipam_plan(plan) else module.executors()
    try:
        ctx = StepContext(
            plan=plan,
            apis=KubeApis(kube) if is_ipam_plan(plan) else module.apis(plan, opts, kube),
            waiter=Waiter(report=progress.waiting, report_every=progress.report_every),
            progress=progress,
        )
        begun = frozenset(e.step for e in journal.events)
        result = run_plan(plan, executors, ctx, journal, preflight=lambda: check_drift(plan, snapshot, begun))
    finally:
        if kube is not None:
            kube.close()
    return [StepOutcome(s.step_id, s.action, s.status, s.outputs) for s in result.steps]


def address_maps(snapshot: Snapshot) -> tuple[Any, ...]:
    """The address maps of the snapshot (cidrx.model.netmap.NetworkMap): the provider's networks (an EKS
    VPC's blocks, a GKE network's spaces) and the in-cluster IPAM pools, for the HTML map."""
    from cidrx.ipam.netmap import address_maps as ipam_maps

    return (*provider(snapshot.target).address_maps(snapshot), *ipam_maps(snapshot.kube))


def plan_diagnosis(plan: Plan, snapshot: Snapshot) -> Diagnosis:
    """The diagnosis an apply of `plan` is judged by: the whole target's, or for an in-cluster plan (whose
    snapshot holds only the cluster) the in-cluster IPAMs'."""
    if not is_ipam_plan(plan):
        return analyze(snapshot)
    from cidrx.ipam import dispatch as ipam
    from cidrx.model.findings import make_diagnosis

    capacity, findings = ipam.analyze(snapshot.kube)
    return make_diagnosis(snapshot.target, snapshot.fingerprint, capacity, findings)


def verify_apply(plan: Plan, plan_path: str | Path, before: Snapshot, opts: Access) -> Verification:
    """After an apply: a fresh snapshot, compared with the one the apply started from; the comparison is
    recorded in the journal (event `verified`) and returned."""
    from cidrx.engine.journal import VERIFY_STEP, Journal
    from cidrx.engine.verify import compare, verification_doc

    after = collect_for_plan(plan, opts)
    result = compare(plan, plan_diagnosis(plan, before), plan_diagnosis(plan, after))
    Journal.open(plan_path, plan).record(VERIFY_STEP, "verified", verification_doc(result))
    return result


@contextmanager
def holding_lock(
    plan: Plan, plan_path: str | Path, opts: Access, progress: Progress, wait: float | None = None
) -> Iterator[None]:
    """Hold `plan`'s lock (cidrx.engine.lock) for the `with` body: the file lock beside `plan_path`, and the
    plan's Lease in the target cluster. Without a cluster Lease only runs sharing the plan file are kept apart,
    which is said on stderr: with --no-kube, or when a plan that changes nothing in the cluster finds it
    unreachable. A plan that changes the cluster (or an in-cluster plan) needs it: unreachable exits 6."""
    from cidrx.engine.lock import LEASE_NAMESPACE, lease_name, plan_lock
    from cidrx.engine.waiting import Waiter
    from cidrx.kube.api import KubeApi
    from cidrx.kube.errors import KubeUnavailable
    from cidrx.kube.leases import KubeLeases

    needs_cluster = bool(cluster_steps(plan))
    kube: KubeApi | None = None
    leases: KubeLeases | None = None
    only_file = "only runs sharing this plan file are kept apart"
    if opts.no_kube:
        progress.note(f"no cluster Lease for the plan's lock (--no-kube): {only_file}")
    else:
        try:
            kube = KubeApi(opts.kubeconfig, opts.context)
            leases = KubeLeases(kube)
            leases.get(LEASE_NAMESPACE, lease_name(plan))  # can the cluster be reached at all?
        except KubeUnavailable as exc:
            if kube is not None:
                kube.close()
            kube, leases = None, None
            if needs_cluster:
                from cidrx.errors import Unreachable

                raise Unreachable(
                    f"cannot reach the cluster of {plan.target.label()} to take the lock of plan {plan.plan_id}, "
                    f"which changes it: {exc.message}; nothing was changed",
                    hint=exc.hint or "check the kubeconfig (--kubeconfig, --context) and network access",
                ) from None
            progress.note(f"no cluster Lease for the plan's lock ({exc.message}): {only_file}")
    try:
        waiter = Waiter(report=progress.waiting, report_every=progress.report_every)
        with plan_lock(plan, plan_path, leases=leases, wait=wait, waiter=waiter, note=progress.note):
            yield
    finally:
        if kube is not None:
            kube.close()


def undos(plan: Plan) -> tuple[dict[str, Any], list[str]]:
    """{action: its Undo} for the actions of `plan`'s kind that declare one, and a line per step of `plan`
    whose action declares none (with why), for `cidrx rollback` to refuse up front."""
    from cidrx.engine.undo import missing_undos

    declared = registry.strategy(plan.strategy)
    actions = registry.strategy_actions(declared) if declared is not None else ()
    found = {a.name: registry.resolve(a.undo)() for a in actions if a.undo}
    reasons = {a.name: a.no_undo for a in actions if a.no_undo}
    return found, missing_undos(plan, found, reasons)


def rollback(
    plan: Plan,
    plan_path: str | Path,
    opts: Access,
    progress: Progress,
    confirm: Callable[[Sequence[Any]], None],
    wait: float | None = None,
    *,
    waiter: Waiter | None = None,
    wrap: Callable[[Any], Any] | None = None,
    writing: Callable[[], AbstractContextManager[Any]] = nullcontext,
) -> tuple[list[Any], list[StepOutcome]]:
    """Take back what an apply of `plan` created or changed (cidrx.engine.undo), holding the plan's lock:
    survey what is left (read live, by the plan tag and the apply journal's records), refuse with InUse (exit
    4) before any write when something is still in use, `confirm(items)` (which raises to cancel), then undo
    newest first with the rollback journal beside the plan. Returns the items surveyed (none: nothing to
    roll back) and what each undo step did. `writing` marks the stretch where writes happen (the CLI's
    Ctrl-C there means "stopped partway"); `waiter` (its clock) and `wrap` (around each Undo) are for tests,
    as the apply engine's are."""
    from cidrx.engine.executor import StepContext
    from cidrx.engine.journal import Journal
    from cidrx.engine.undo import recover_outputs, refuse_in_use, run_rollback, survey
    from cidrx.engine.waiting import Waiter
    from cidrx.ipam import dispatch as ipam
    from cidrx.kube.api import KubeApis

    declared = registry.strategy(plan.strategy)
    if declared is None or declared.reclaim:
        raise InvalidInput(
            f"plan {plan.plan_id} is a {plan.strategy} plan, and reclaim plans cannot be rolled back: the addresses "
            "they released belonged to pods that were gone, and handing them back would leak them again"
        )
    found, missing = undos(plan)
    if wrap is not None:
        found = {action: wrap(undo) for action, undo in found.items()}
    if missing:
        raise InvalidInput(
            f"cannot roll back plan {plan.plan_id}, so nothing was changed: " + "; ".join(missing),
            hint="undo those steps by hand, or use a cidrx version that declares their undo",
        )
    module = provider(plan.target)
    apply_journal = Journal.open(plan_path, plan)
    rollback_journal = Journal.open(f"{plan_path}.rollback", plan)
    needing = cluster_steps(plan)
    if needing and opts.no_kube:
        raise InvalidInput(f"plan {plan.plan_id} changed in-cluster objects (step {needing[0]}); drop --no-kube")
    with holding_lock(plan, plan_path, opts, progress, wait):
        kube = None if opts.no_kube else _kube_or_none(opts)
        try:
            ctx = StepContext(
                plan=plan,
                apis=KubeApis(kube) if is_ipam_plan(plan) else module.apis(plan, opts, kube),
                waiter=waiter or Waiter(report=progress.waiting, report_every=progress.report_every),
                progress=progress,
                journal_outputs={s.id: o for s in plan.steps if (o := apply_journal.outputs_of(s.id)) is not None},
                recorded_before={s.id: b for s in plan.steps if (b := apply_journal.before_of(s.id)) is not None},
            )
            executors = ipam.executors(plan) if is_ipam_plan(plan) else module.executors()
            items = survey(plan, found, ctx, recover_outputs(plan, executors, ctx))
            if not items:
                return [], []
            refuse_in_use(plan, items)
            confirm(items)
            with writing():
                result = run_rollback(plan, items, found, ctx, rollback_journal)
        finally:
            if kube is not None:
                kube.close()
    return items, [StepOutcome(s.step_id, s.action, s.status, s.outputs) for s in result.steps]


def _kube_or_none(opts: Access) -> KubeApi | None:
    """A client for the cluster, or None when no kubeconfig leads to one (the undos that need it say so)."""
    from cidrx.kube.api import KubeApi
    from cidrx.kube.errors import KubeUnavailable

    try:
        return KubeApi(opts.kubeconfig, opts.context)
    except KubeUnavailable:
        return None
