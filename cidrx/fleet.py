"""Fleet mode: diagnose many clusters at once (`--all-clusters`, `--all-contexts`, repeated `--context`).

Platform teams run one scheduled job over every cluster of an account or project. Each cluster is
collected and analysed on its own (a bounded thread pool: collection is network-bound), a cluster that
cannot be read is reported with its error instead of stopping the others, and the job's exit code is
the worst of all clusters. The Kubernetes side of a cloud cluster is read through the kubeconfig context
that the provider's own tooling names for it (`aws eks update-kubeconfig`, `eksctl`, `gcloud ...
get-credentials`); a cluster with no such context is diagnosed from the cloud side alone, and says so.
Bare cluster names are never matched: two clusters of the same name in different regions or accounts
often share the same VPC ranges, so nothing downstream would notice the mix-up.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

from cidrx.errors import AccessDenied, CidrxError, ExitStatus, InvalidInput
from cidrx.model.findings import Diagnosis, Severity
from cidrx.model.target import Target

FLEET_SCHEMA = "cidrx.fleet/v1"
DEFAULT_PARALLEL = 4
MAX_PARALLEL = 32
# Exit codes from least to most serious. A cluster that could not be diagnosed (usage, access, a bug)
# outranks one with findings: the job's picture is incomplete, which a gate must not pass as "known".
# 4 and 5 never come out of diagnose; they are ranked so that the order is total and deterministic.
_RANK: dict[int, int] = {
    ExitStatus.OK: 0,
    ExitStatus.FINDINGS: 1,
    ExitStatus.STALE: 2,
    ExitStatus.PARTIAL: 3,
    ExitStatus.USAGE: 4,
    ExitStatus.ACCESS: 5,
    ExitStatus.INTERNAL: 6,
}
NO_KUBE_REASON = "in-cluster checks skipped (--no-kube)"


@dataclass(frozen=True)
class Job:
    """One cluster to diagnose. `kube_context` is how its Kubernetes API is reached; `kube_skipped` says
    why it is not read at all (no matching context, --no-kube), None when it is."""

    target: Target
    kube_context: str | None = None
    kube_skipped: str | None = None


@dataclass(frozen=True)
class Member:
    """One cluster of the fleet: its diagnosis, or the error (and hint) that kept it from being read."""

    target: Target
    kube_context: str | None
    note: str | None
    exit_code: int
    error: str | None
    hint: str | None
    diagnosis: Diagnosis | None


@dataclass(frozen=True)
class FleetCounts:
    """Totals: clusters listed, clusters that could not be read, findings of the others by severity."""

    clusters: int
    unreadable: int
    critical: int
    warning: int
    info: int


@dataclass(frozen=True)
class Fleet:
    """Members in listing order, totals, fleet-wide notes and the exit code (the worst cluster's, or worse)."""

    clusters: tuple[Member, ...]
    counts: FleetCounts
    exit_code: int
    notes: tuple[str, ...] = ()
    schema: str = FLEET_SCHEMA


def worst_exit(codes: Sequence[int]) -> int:
    """The most serious exit code (see _RANK); an unknown code outranks every known one."""
    return max(codes, key=lambda c: (_RANK.get(c, len(_RANK)), c), default=ExitStatus.OK)


def make_fleet(members: Sequence[Member], *, notes: Sequence[str] = (), floor: int = ExitStatus.OK) -> Fleet:
    """The fleet of `members`, counts filled; the exit code is at least as serious as `floor`."""
    read = [m.diagnosis for m in members if m.diagnosis is not None]

    def total(sev: Severity) -> int:
        return sum(d.counts.get(sev.value, sum(1 for f in d.findings if f.severity is sev)) for d in read)

    counts = FleetCounts(
        clusters=len(members),
        unreadable=len(members) - len(read),
        critical=total(Severity.CRITICAL),
        warning=total(Severity.WARNING),
        info=total(Severity.INFO),
    )
    code = worst_exit([floor, *(m.exit_code for m in members)])
    return Fleet(tuple(members), counts, code, tuple(notes))


# -- which kubeconfig context is which cloud cluster ------------------------------------------------------


@dataclass(frozen=True)
class Listing:
    """The clusters a provider's `list_clusters` hook found. `notes`: what it could not list (the fleet is
    then incomplete: exit 3 at least, and an empty listing is not an error of its own); `account`: asked
    by its `kube_context` hook when a context needs it; `empty` / `empty_hint`: the error when none."""

    targets: tuple[Target, ...]
    notes: tuple[str, ...] = ()
    account: Callable[[], Any] | None = None
    empty: str = ""
    empty_hint: str = ""


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
