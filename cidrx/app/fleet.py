"""Fleet mode: diagnose many clusters at once (`--all-clusters`, `--all-contexts`, repeated `--context`).

Platform teams run one scheduled job over every cluster of an account or project. Each cluster is
collected and analysed on its own (a bounded thread pool: collection is network-bound), a cluster that
cannot be read is reported with its error instead of stopping the others, and the job's exit code is
the worst of all clusters. The Kubernetes side of a cloud cluster is read through the kubeconfig context
that the provider's own tooling names for it (its `kube_context` hook: the context its CLI writes); a
cluster with no such context is diagnosed from the cloud side alone, and says so.
Bare cluster names are never matched: two clusters of the same name in different regions or accounts
often share the same VPC ranges, so nothing downstream would notice the mix-up.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from typing import TYPE_CHECKING, Any

from cidrx.errors import AccessDenied, CidrxError, ExitStatus, InvalidInput
from cidrx.model.findings import Diagnosis
from cidrx.model.fleet import NO_KUBE_REASON, Fleet, Job, Listing, Member, make_fleet
from cidrx.model.options import Access
from cidrx.model.target import Target

if TYPE_CHECKING:
    from cidrx.model.snapshot import Snapshot

DEFAULT_PARALLEL = 4
MAX_PARALLEL = 32

# -- which kubeconfig context is which cloud cluster ------------------------------------------------------


def _context_hook(provider: str) -> Callable[[Target, Sequence[str], Callable[[], Any] | None], tuple[str | None, str]]:
    from cidrx import registry

    spec = registry.provider_spec(provider)
    if spec is None or not spec.kube_context:
        raise InvalidInput(f"{provider} clusters cannot be listed in fleet mode")
    hook: Callable[[Target, Sequence[str], Callable[[], Any] | None], tuple[str | None, str]]
    hook = registry.load(spec.kube_context)
    return hook


def cloud_jobs(
    targets: Sequence[Target],
    contexts: Sequence[str] | None,
    *,
    no_kube: bool,
    account: Callable[[], Any] | None = None,
    why_no_contexts: str = "",
) -> list[Job]:
    """A job per cloud cluster, each with its kubeconfig context (named by its provider's `kube_context`
    hook), or cloud-only with the reason.

    `contexts` is None when there is no kubeconfig at all (`why_no_contexts` says why). `account` is
    asked at most once, and only when a hook needs it (it costs a request).
    """
    if no_kube:
        return [Job(t, None, NO_KUBE_REASON) for t in targets]
    names = list(contexts or ())
    asked: list[Any] = []

    def once() -> Any:
        if not asked and account is not None:
            asked.append(account())
        return asked[0] if asked else None

    jobs = []
    for t in targets:
        ctx, wanted = _context_hook(t.provider)(t, names, once if account is not None else None)
        if ctx is not None:
            jobs.append(Job(t, ctx))
        elif contexts is None:
            jobs.append(Job(t, None, f"cloud side only: {why_no_contexts or 'no kubeconfig'}"))
        else:
            jobs.append(Job(t, None, f"cloud side only: no kubeconfig context named {wanted}"))
    return jobs


def k8s_jobs(contexts: Sequence[str]) -> list[Job]:
    """A job per kubeconfig context (each is its own cluster), duplicates dropped, order kept."""
    return [Job(Target("k8s", c, context=c), c) for c in dict.fromkeys(contexts)]


def require_some(jobs: Sequence[Job], message: str, hint: str) -> None:
    """An empty fleet is an access error: a scheduled job pointed at the wrong region or project must
    not pass silently."""
    if not jobs:
        raise AccessDenied(message, hint=hint)


# -- running -------------------------------------------------------------------------------------------


def diagnose_member(job: Job, diagnose: Callable[[Job], Diagnosis], fail_code: Callable[[Diagnosis], int]) -> Member:
    """Diagnose one cluster; any failure becomes the member's error instead of an exception."""
    try:
        d = diagnose(job)
    except CidrxError as exc:
        message = " ".join(exc.message.split()) or type(exc).__name__
        return Member(job.target, job.kube_context, job.kube_skipped, exc.exit_code, message, exc.hint, None)
    except Exception as exc:  # a bug in one cluster's analysis must not hide the others' results
        detail = " ".join(str(exc).split()) or "(no message)"
        return Member(
            job.target,
            job.kube_context,
            job.kube_skipped,
            ExitStatus.INTERNAL,
            f"internal error: {type(exc).__name__}: {detail}",
            "this is a bug; please report it with the output of `cidrx snapshot` for this cluster",
            None,
        )
    return Member(job.target, job.kube_context, job.kube_skipped, fail_code(d), None, None, d)


def diagnose_fleet(
    jobs: Sequence[Job],
    diagnose: Callable[[Job], Diagnosis],
    fail_code: Callable[[Diagnosis], int],
    *,
    parallel: int = DEFAULT_PARALLEL,
    on_done: Callable[[Member], None] | None = None,
    notes: Sequence[str] = (),
    floor: int = ExitStatus.OK,
) -> Fleet:
    """Diagnose every job with at most `parallel` running at a time.

    `on_done` is called in the calling thread as each cluster finishes (in finishing order); the fleet's
    members keep the order of `jobs`. On Ctrl-C the clusters not yet started are cancelled.
    """
    workers = max(1, min(parallel, MAX_PARALLEL, len(jobs)))
    results: list[Member | None] = [None] * len(jobs)
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="cidrx-fleet")
    try:
        futures: dict[Future[Member], int] = {
            pool.submit(diagnose_member, job, diagnose, fail_code): i for i, job in enumerate(jobs)
        }
        for future in as_completed(futures):
            member = future.result()
            results[futures[future]] = member
            if on_done is not None:
                on_done(member)
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    members = [m for m in results if m is not None]
    return make_fleet(members, notes=notes, floor=floor)


# -- listing and reading the members ---------------------------------------------------------------------


def in_cluster(provider: str | None) -> bool:
    """Whether `provider`'s targets are reached through kubeconfig alone (`--k8s`): one per context."""
    from cidrx import registry

    spec = registry.provider_spec(provider) if provider else None
    return spec is not None and spec.in_cluster


def fleet_jobs(
    access: Access,
    provider: str | None,
    *,
    contexts: Sequence[str],
    all_contexts: bool,
    region: str | None,
    project: str | None,
    subscription: str | None = None,
) -> tuple[list[Job], list[str], int]:
    """The clusters to diagnose (listed from the cloud or the kubeconfig), fleet-wide notes, and the
    least exit code the fleet can have (an incomplete listing is an access problem in itself)."""
    from cidrx import registry
    from cidrx.kube.errors import KubeUnavailable
    from cidrx.kube.kubeconfig import list_contexts

    if in_cluster(provider):
        names = list(contexts) if not all_contexts else list_contexts(access.kubeconfig)
        jobs = k8s_jobs(names)
        require_some(jobs, "no context in the kubeconfig: nothing to diagnose", "pass --kubeconfig PATH")
        return jobs, [], ExitStatus.OK

    found: list[str] | None = None
    why = ""
    if not access.no_kube:
        try:
            found = list_contexts(access.kubeconfig)
        except KubeUnavailable as exc:
            why = exc.message
    spec = registry.provider_spec(provider or "")
    assert spec is not None and spec.list_clusters  # the CLI checked the fleet flags
    # The scope of providers listing by subscription goes only to them (the others' hooks do not take it).
    scope = {"subscription": subscription} if spec.fleet_scope == "subscription" else {}
    listing: Listing = registry.load(spec.list_clusters)(
        region=region, project=project, profile=access.profile, **scope
    )
    notes = list(listing.notes)
    jobs = cloud_jobs(listing.targets, found, no_kube=access.no_kube, account=listing.account, why_no_contexts=why)
    if not notes:
        require_some(jobs, listing.empty, listing.empty_hint)
    return jobs, notes, ExitStatus.ACCESS if notes else ExitStatus.OK


def member_access(access: Access, job: Job) -> Access:
    """How to reach one member of the fleet: through its own context (or not at all when it has none)."""
    context = job.kube_context
    no_kube = access.no_kube or (not in_cluster(job.target.provider) and context is None)
    return Access(kubeconfig=access.kubeconfig, context=context, profile=access.profile, no_kube=no_kube)


def collect_member(access: Access, job: Job) -> Snapshot:
    """A fresh snapshot of one member: through its context, or the cloud side alone with the reason the
    diagnosis then reports (KUBE-UNREACHABLE)."""
    from cidrx.app.diagnose import collect_cloud_side, collect_target

    member = member_access(access, job)
    if job.kube_skipped is None or access.no_kube:
        return collect_target(job.target, member)
    return collect_cloud_side(job.target, member, job.kube_skipped)


def diagnose_members(access: Access) -> Callable[[Job], Diagnosis]:
    """The function that diagnoses one member of the fleet (collect, then analyze)."""
    from cidrx.app.diagnose import analyze

    def diagnose(job: Job) -> Diagnosis:
        return analyze(collect_member(access, job))

    return diagnose
