"""`expand --apply` and `reclaim --apply` as a use case: one `ApplySession` owns the clients of the whole
apply and runs its safety sequence, lock -> fresh snapshot -> drift check -> run -> verify.

Why it exists: every apply must prove the plan still holds before its first write and show afterwards what it
changed, and two applies of one plan must never run at once. One session holds one Kubernetes client for all
of it (the plan's Lease, both snapshots, the steps). What the steps run comes from the plan's strategy, a unit
the registry declares (`Strategy.drift`, its actions' executors) and from the object of the spec that owns it
(`apis`, `cluster_only`); nothing here names a plugin.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from cidrx import registry
from cidrx.app.diagnose import analyze, cluster_diagnosis, collect_cluster, collect_snapshot
from cidrx.app.owners import cluster_only, require_supported, step_apis
from cidrx.errors import CidrxError, InvalidInput, StalePlan

if TYPE_CHECKING:
    from cidrx.engine.executor import Executor, Progress
    from cidrx.engine.verify import Verification
    from cidrx.kube.api import KubeApi
    from cidrx.kube.errors import KubeUnavailable
    from cidrx.kube.leases import KubeLeases
    from cidrx.model.findings import Diagnosis
    from cidrx.model.options import Access
    from cidrx.model.plan import Plan
    from cidrx.model.snapshot import Snapshot


@dataclass(frozen=True)
class StepOutcome:
    """One row of an apply's result: `done` (changed something) or `skipped` (found already done)."""

    step_id: str
    action: str
    status: str
    outputs: Mapping[str, Any]


@dataclass(frozen=True)
class Applied:
    """What an apply did, and what the fresh snapshot after it showed (or why it could not be taken)."""

    outcomes: list[StepOutcome]
    verification: Verification | None
    unverified: str | None
    follow_up: str | None = None  # the command that plans what is left (a migration onto the new space)


def follow_up_of(plan: Plan, after: Snapshot | None) -> str | None:
    """After an expansion, the migration its provider declares, when planning it on the snapshot taken after
    the apply finds work (nodes left in full space): the command that makes that plan, else None."""
    from cidrx.app.diagnose import utc_now
    from cidrx.model.options import PlanOptions

    declared = registry.strategy(plan.strategy)
    if after is None or declared is None or declared.migration:
        return None
    for s in registry.strategies():
        if not s.migration or s.owner != plan.target.provider:
            continue
        try:
            registry.load(s.plan)(after, PlanOptions(strategy=s.name), utc_now())
        except CidrxError:
            continue  # nothing to migrate
        return f"cidrx expand {plan.target.flags()} --strategy {s.name} --plan --out migrate.json"
    return None


def check_drift(plan: Plan, snapshot: Snapshot, begun: Collection[str] = ()) -> None:
    """Raise StalePlan (exit 4) when what `plan` relied on no longer holds in `snapshot`, by the drift check
    its strategy declares. `begun`: the steps an earlier apply started (per the journal); in-cluster reclaim
    plans cannot tell their own deletions from someone else's without it."""
    declared = registry.strategy(plan.strategy)
    if declared is None:
        raise InvalidInput(f"plan {plan.plan_id} has strategy {plan.strategy!r}, which this cidrx does not know")
    from cidrx.engine.basis import basis_problems, merged_message, stale_message

    own: CidrxError | None = None
    try:
        registry.load(declared.drift)(plan, snapshot, begun)
    except (StalePlan, InvalidInput) as exc:
        own = exc
    if isinstance(own, InvalidInput) and snapshot.target != plan.target:
        raise own
    # Every basis fact, re-read (cidrx.engine.basis): the strategy's own check names what it knows best.
    # A kind without a reader (reclaim plans, whose own checks go through their basis entry by entry) has
    # only its strategy's check.
    current = registry.load(declared.basis)(plan, snapshot) if declared.basis else plan.basis
    problems, unchecked = basis_problems(plan.basis, current)
    if unchecked:
        raise InvalidInput(
            f"plan {plan.plan_id} relies on {', '.join(unchecked)}, which this cidrx cannot re-check before "
            "applying; nothing was applied",
            hint="make a new plan with this cidrx",
        )
    if isinstance(own, StalePlan):
        raise StalePlan(merged_message(own.message, problems), hint=own.hint) from None
    if problems:  # also when the strategy's check could not read an edited basis value
        raise StalePlan(stale_message(problems)) from None
    if own is not None:
        raise own


def executors(plan: Plan) -> dict[str, Executor]:
    """{action: a new instance of its Executor} for the actions `plan`'s strategy declares."""
    declared = registry.strategy(plan.strategy)
    if declared is None:
        raise InvalidInput(f"plan {plan.plan_id} has strategy {plan.strategy!r}, which this cidrx does not know")
    return {a.name: registry.resolve(a.executor)() for a in registry.strategy_actions(declared)}


def cluster_steps(plan: Plan) -> list[str]:
    """Ids of the steps of `plan` that read or change in-cluster objects (their permissions say so)."""
    every = cluster_only(plan)
    return [s.id for s in plan.steps if every or any(p.startswith("kubernetes:") for p in s.permissions)]


def require_kube_allowed(plan: Plan, access: Access) -> None:
    """Refuse --no-kube for a plan with in-cluster steps, before anything is read (the cloud included)."""
    needing = cluster_steps(plan)
    if needing and access.no_kube:
        raise InvalidInput(
            f"plan {plan.plan_id} changes in-cluster objects (step {needing[0]}), so its apply must reach the "
            "cluster; drop --no-kube"
        )


def require_reach(plan: Plan, snapshot: Snapshot, access: Access) -> None:
    """Refuse, before the first write, a plan whose steps need the cluster when the fresh snapshot could
    not read it: an apply must prove access to everything it touches first (a cloud that cannot be reached
    already failed the snapshot), and an unread cluster is an outage to report (exit 6), not drift (exit 4)."""
    needing = cluster_steps(plan)
    if not needing:
        return
    require_kube_allowed(plan, access)
    if not snapshot.kube.available:
        from cidrx.errors import Unreachable

        raise Unreachable(
            f"cannot reach the cluster of {plan.target.label()}, which plan {plan.plan_id} changes (step "
            f"{needing[0]}): {snapshot.kube.reason or 'the Kubernetes API could not be read'}; nothing was changed",
            hint="check the kubeconfig (--kubeconfig, --context) and network access to the API server, then run "
            "the same command again",
        )


def plan_diagnosis(plan: Plan, snapshot: Snapshot) -> Diagnosis:
    """The diagnosis an apply of `plan` is judged by: the whole target's, or for a cluster-only plan (whose
    snapshot holds only the cluster) the in-cluster IPAMs'."""
    return cluster_diagnosis(snapshot) if cluster_only(plan) else analyze(snapshot)


class ApplySession:
    """One apply (or rollback) of `plan`, saved at `plan_path`: the one Kubernetes client it uses throughout
    (None with --no-kube, or when no kubeconfig leads to a cluster), opened on `with` and closed after.

    `apply()` runs the whole safety sequence; `locked()`, `fresh_snapshot()`, `run()` and `verify()` are its
    parts, for callers (rollback, tests) that need only some of them.
    """

    def __init__(self, plan: Plan, plan_path: str | Path, access: Access, progress: Progress) -> None:
        self.plan = plan
        self.plan_path = plan_path
        self.access = access
        self.progress = progress
        self.kube: KubeApi | None = None
        self._unavailable: KubeUnavailable | None = None
        self.after: Snapshot | None = None  # the snapshot verify took after the steps

    def __enter__(self) -> ApplySession:
        from cidrx.kube.api import KubeApi
        from cidrx.kube.errors import KubeUnavailable

        if not self.access.no_kube:
            try:
                self.kube = KubeApi(self.access.kubeconfig, self.access.context)
            except KubeUnavailable as exc:
                self._unavailable = exc
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.kube is not None:
            self.kube.close()
            self.kube = None

    # ---- the parts -------------------------------------------------------------------------------

    @contextmanager
    def locked(self, wait: float | None = None) -> Iterator[None]:
        """Hold the plan's lock (cidrx.engine.lock) for the `with` body: the file lock beside the plan, and
        the plan's Lease in the target cluster. Without a cluster Lease only runs sharing the plan file are
        kept apart, which is said on stderr: with --no-kube, or when a plan that changes nothing in the
        cluster finds it unreachable. A plan that changes the cluster (or a cluster-only plan) needs it:
        unreachable exits 6."""
        from cidrx.engine.lock import LEASE_NAMESPACE, lease_name, plan_lock
        from cidrx.engine.waiting import Waiter
        from cidrx.kube.errors import KubeUnavailable
        from cidrx.kube.leases import KubeLeases

        plan, progress = self.plan, self.progress
        leases: KubeLeases | None = None
        only_file = "only runs sharing this plan file are kept apart"
        if self.access.no_kube:
            progress.note(f"no cluster Lease for the plan's lock (--no-kube): {only_file}")
        else:
            try:
                if self.kube is None:
                    assert self._unavailable is not None
                    raise self._unavailable
                leases = KubeLeases(self.kube)
                leases.get(LEASE_NAMESPACE, lease_name(plan))  # can the cluster be reached at all?
            except KubeUnavailable as exc:
                leases = None
                if cluster_steps(plan):
                    from cidrx.errors import Unreachable

                    raise Unreachable(
                        f"cannot reach the cluster of {plan.target.label()} to take the lock of plan "
                        f"{plan.plan_id}, which changes it: {exc.message}; nothing was changed",
                        hint=exc.hint or "check the kubeconfig (--kubeconfig, --context) and network access",
                    ) from None
                progress.note(f"no cluster Lease for the plan's lock ({exc.message}): {only_file}")
        waiter = Waiter(report=progress.waiting, report_every=progress.report_every)
        with plan_lock(plan, self.plan_path, leases=leases, wait=wait, waiter=waiter, note=progress.note):
            yield

    def fresh_snapshot(self) -> Snapshot:
        """The snapshot the plan is checked against, taken now: a cluster-only plan needs only the cluster
        (no cloud credentials), any other the whole target."""
        plan, access = self.plan, self.access
        if not cluster_only(plan):
            return collect_snapshot(plan.target, access, self.kube)
        require_supported(plan.target)
        if access.no_kube:
            raise InvalidInput(f"plan strategy {plan.strategy} changes in-cluster objects; drop --no-kube")
        if self.kube is None and self._unavailable is not None:
            from cidrx.app.diagnose import utc_now
            from cidrx.model.kube import KubeSection
            from cidrx.model.snapshot import Snapshot, seal

            unread = KubeSection(available=False, reason=str(self._unavailable), context=access.context or "")
            return seal(Snapshot(target=plan.target, taken_at=utc_now(), kube=unread))
        return collect_cluster(plan.target, access, self.kube)

    def run(self, snapshot: Snapshot) -> list[StepOutcome]:
        """Run the plan through the engine: drift check (against `snapshot`, taken just now) before any
        write, then every step with the journal beside the plan. Raises StalePlan / ApplyInterrupted /
        AccessDenied."""
        from cidrx.engine.apply import run_plan
        from cidrx.engine.executor import StepContext
        from cidrx.engine.journal import Journal
        from cidrx.engine.waiting import Waiter

        plan, progress = self.plan, self.progress
        journal = Journal.open(self.plan_path, plan)  # reads only: a journal of another plan is refused first
        require_reach(plan, snapshot, self.access)
        kube = self.kube if snapshot.kube.available else None
        ctx = StepContext(
            plan=plan,
            apis=step_apis(plan, self.access, kube),
            waiter=Waiter(report=progress.waiting, report_every=progress.report_every),
            progress=progress,
        )
        begun = frozenset(e.step for e in journal.events)
        result = run_plan(plan, executors(plan), ctx, journal, preflight=lambda: check_drift(plan, snapshot, begun))
        return [StepOutcome(s.step_id, s.action, s.status, s.outputs) for s in result.steps]

    def verify(self, before: Snapshot) -> Verification:
        """After the steps: a fresh snapshot, compared with `before` (the one the apply started from); the
        comparison is recorded in the journal (event `verified`) and returned."""
        from cidrx.engine.journal import VERIFY_STEP, Journal
        from cidrx.engine.verify import compare, verification_doc

        after = self.fresh_snapshot()
        self.after = after
        result = compare(self.plan, plan_diagnosis(self.plan, before), plan_diagnosis(self.plan, after))
        Journal.open(self.plan_path, self.plan).record(VERIFY_STEP, "verified", verification_doc(result))
        return result

    # ---- the whole sequence ----------------------------------------------------------------------

    def apply(
        self,
        wait: float | None = None,
        *,
        reading: Callable[[str], AbstractContextManager[Any]] = lambda title: nullcontext(),
        writing: Callable[[], AbstractContextManager[Any]] = nullcontext,
    ) -> Applied:
        """Lock -> fresh snapshot -> drift -> run -> verify. The lock comes first: the drift check must see
        what a run that held it before left behind. `reading(title)` wraps each snapshot (the CLI's spinner),
        `writing()` the stretch where writes happen (the CLI's Ctrl-C there means "stopped partway"). A
        failed verification does not fail the apply: it says why its result could not be checked."""
        label = self.plan.target.label()
        require_kube_allowed(self.plan, self.access)
        with self.locked(wait):
            self.progress.note(f"taking a fresh snapshot of {label} to check the plan still holds")
            with reading(f"reading {label}"):
                snapshot = self.fresh_snapshot()
            with writing():
                outcomes = self.run(snapshot)
            self.progress.note(f"taking a fresh snapshot of {label} to see what the apply changed")
            verification = None
            unverified = None
            try:
                with reading(f"reading {label} again"):
                    verification = self.verify(snapshot)
            except CidrxError as exc:  # the apply itself is done; say why its result could not be checked
                unverified = exc.message
        follow_up = follow_up_of(self.plan, self.after) if verification is not None else None
        return Applied(outcomes, verification, unverified, follow_up)
