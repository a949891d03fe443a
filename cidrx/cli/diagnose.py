"""`cidrx diagnose`: what is full and why, as a table, JSON or Markdown; the exit code gates CI jobs.

Reads a live target or a snapshot file (offline: no credentials, no network). Exit 3 when a finding is at
or above `--fail-on`, so a scheduled job fails before the incident does. Fleet mode (`--all-clusters`,
`--all-contexts`, `--context` repeated) diagnoses many clusters at once through cidrx.app.fleet: one summary,
one combined document, the worst exit code; a cluster that cannot be read is a row, not the end of the job.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from cidrx import registry
from cidrx.cli import boundary
from cidrx.cli.options import (
    VALUES,
    OutputFormat,
    TargetOptions,
    check_matches,
    fleet_target_options,
    for_snapshot,
    resolve_target,
)
from cidrx.errors import ExitStatus, InvalidInput
from cidrx.render import FORMATS

if TYPE_CHECKING:
    from cidrx.model.findings import Diagnosis
    from cidrx.model.fleet import Job, Member
    from cidrx.model.snapshot import Snapshot

# Models, providers and renderers are imported inside the functions: `cidrx --help` must stay fast.
FAIL_ON = ("critical", "warning", "info", "never")
# cidrx.app.fleet.DEFAULT_PARALLEL / MAX_PARALLEL, literal here so that --help imports nothing (a test checks).
DEFAULT_PARALLEL = 4
MAX_PARALLEL = 32


def exit_code_for(d: Diagnosis, fail_on: str) -> int:
    """3 when any finding is at or above `fail_on` (critical | warning | info), 0 otherwise or for `never`."""
    from cidrx.model.findings import Severity

    if fail_on == "never":
        return ExitStatus.OK
    floor = Severity(fail_on).rank
    return ExitStatus.FINDINGS if any(f.severity.rank >= floor for f in d.findings) else ExitStatus.OK


@functools.cache
def _fix_command() -> re.Pattern[str]:
    """A fix command of a finding: `cidrx expand|reclaim --<provider>` and its target options."""
    flags = "|".join(re.escape(p.name) for p in registry.providers())
    names = {o for p in registry.providers() for o in p.requires} | {"cluster", "context"}
    options = "|".join(sorted(o.replace("_", "-") for o in names))
    return re.compile(rf"cidrx (expand|reclaim) --(?:{flags})(?: --(?:{options}) [^\s`,;]+)*")


def offline_fixes(d: Diagnosis, path: str) -> Diagnosis:
    """`d` with its fix commands planning from the snapshot file diagnosed (`cidrx expand --snapshot FILE
    ...`; expand and reclaim --plan both read one) instead of from the live cluster the snapshot names."""
    import shlex

    def offline(text: str) -> str:
        return _fix_command().sub(lambda m: f"cidrx {m[1]} --snapshot {shlex.quote(path)}", text)

    findings = tuple(dataclasses.replace(f, remediation=offline(f.remediation)) for f in d.findings)
    return dataclasses.replace(d, findings=findings)


def warn_skipped_checks(d: Diagnosis) -> None:
    """One line on stderr when the in-cluster checks did not run: the diagnosis on stdout covers less than
    asked, and a finding of severity info is easy to miss (or not shown at all in JSON read by a script)."""
    from cidrx.model.findings import KUBE_UNREACHABLE

    for f in d.findings:
        if f.id == KUBE_UNREACHABLE.id:
            why = f": {f.evidence[0]}" if f.evidence else ""
            click.echo(f"cidrx: warning: in-cluster checks did not run{why}", err=True)


def read_snapshot(path: str, opts: TargetOptions) -> Snapshot:
    """A snapshot file (`-` for stdin); target flags given alongside must name the same cluster."""
    from cidrx.model.snapshot import load_snapshot, parse_snapshot

    what = "the snapshot on stdin" if path == "-" else f"snapshot {path}"
    opts = for_snapshot(opts, what)
    snap = parse_snapshot(sys.stdin.buffer.read(), "snapshot on stdin") if path == "-" else load_snapshot(path)
    check_matches(opts, snap.target, f"snapshot {path}")
    return snap


def collect_live(opts: TargetOptions) -> Snapshot:
    """A fresh snapshot of the target the flags name (cidrx.app.diagnose.collect_target)."""
    from cidrx.app.diagnose import collect_target

    return collect_target(resolve_target(opts), opts)


def get_snapshot(opts: TargetOptions, snapshot_path: str | None) -> Snapshot:
    if snapshot_path:
        return read_snapshot(snapshot_path, opts)
    try:
        title = f"reading {resolve_target(opts).label()}"
    except InvalidInput:  # collect_live says what is wrong with the flags
        title = "reading the target"
    with reading_status(title):
        return collect_live(opts)


def reading_status(title: str) -> contextlib.AbstractContextManager[None]:
    """A spinner on stderr naming each request (and retry) while the block reads the cloud or cluster."""
    from cidrx.render.progress import showing_activity

    return showing_activity(title, sys.stderr, boundary.state.verbose)


# -- fleet mode ----------------------------------------------------------------------------------------


def _in_cluster(provider: str | None) -> bool:
    from cidrx.app.fleet import in_cluster

    return in_cluster(provider)


def is_fleet(opts: TargetOptions, all_clusters: bool, all_contexts: bool) -> bool:
    return all_clusters or all_contexts or len(opts.contexts) > 1


def _refuse_given(opts: TargetOptions, names: tuple[str, ...], why: str) -> None:
    given = [f"--{n.replace('_', '-')}" for n in names if getattr(opts, n)]
    if given:
        raise InvalidInput(f"{', '.join(given)} cannot be used {why}")


def check_fleet_flags(opts: TargetOptions, all_clusters: bool, all_contexts: bool, snapshot_path: str | None) -> None:
    """Fleet flags that do not fit together are a usage error (exit 2), each with one line saying why."""
    if snapshot_path:
        raise InvalidInput(
            "--snapshot diagnoses one saved cluster; it cannot be combined with --all-clusters, "
            "--all-contexts or several --context"
        )
    if all_clusters and all_contexts:
        raise InvalidInput("choose --all-clusters (with --eks or --gke) or --all-contexts (with --k8s), not both")
    if all_clusters:
        from cidrx import registry

        listed = [p for p in registry.providers() if p.list_clusters]
        spec = registry.provider_spec(opts.provider or "")
        if spec is None or not spec.list_clusters:
            ways = " or ".join(f"{p.flag} --{p.fleet_scope} {p.fleet_scope[0].upper()}" for p in listed)
            raise InvalidInput(f"--all-clusters needs {ways} (for --k8s, use --all-contexts)")
        scope = spec.fleet_scope
        if not getattr(opts, scope):
            raise InvalidInput(f"{spec.flag} --all-clusters needs --{scope} (or CIDRX_{scope.upper()})")
        others = [o for o in spec.requires if o not in (scope, "cluster")]
        _refuse_given(opts, ("cluster", *others, *spec.refuses), f"with {spec.flag} --all-clusters")
        if opts.contexts:
            raise InvalidInput(
                "--context cannot be used with --all-clusters: each cluster's context is found in the "
                "kubeconfig by the name `aws eks update-kubeconfig` / `gcloud ... get-credentials` gives it"
            )
        return
    what = "--all-contexts" if all_contexts else "--context more than once"
    if not _in_cluster(opts.provider):
        raise InvalidInput(f"{what} works with --k8s; for EKS or GKE clusters use --all-clusters")
    if all_contexts and opts.contexts:
        raise InvalidInput("--all-contexts reads every context of the kubeconfig; drop --context")
    _refuse_given(opts, (*VALUES, "no_kube"), f"with {what}")


def fleet_jobs(opts: TargetOptions, all_contexts: bool) -> tuple[list[Job], list[str], int]:
    """The clusters the fleet flags name, fleet-wide notes and the fleet's least exit code
    (cidrx.app.fleet.fleet_jobs)."""
    from cidrx.app.fleet import fleet_jobs as jobs

    return jobs(
        opts,
        opts.provider,
        contexts=opts.contexts,
        all_contexts=all_contexts,
        region=opts.region,
        project=opts.project,
        subscription=opts.subscription,
    )


def diagnose_many(opts: TargetOptions, all_contexts: bool, parallel: int, output: str, fail_on: str) -> int:
    """Fleet mode: every cluster, `parallel` at a time; progress on stderr as each one finishes."""
    from cidrx.app import fleet
    from cidrx.render.fleet import cut, render_fleet, status
    from cidrx.render.progress import make_progress
    from cidrx.render.term import stdout_term

    jobs, notes, floor = fleet_jobs(opts, all_contexts)
    progress = make_progress(sys.stderr)
    for note in notes:
        progress.note(f"note: {note}")
    progress.note(f"diagnosing {len(jobs)} cluster(s), at most {min(parallel, len(jobs))} at a time")
    done = 0

    def on_done(m: Member) -> None:
        nonlocal done
        done += 1
        detail = f": {cut(m.error)}" if m.error else ""
        progress.note(f"[{done}/{len(jobs)}] {m.target.label()}: {status(m)}{detail}")

    result = fleet.diagnose_fleet(
        jobs,
        fleet.diagnose_members(opts),
        lambda d: exit_code_for(d, fail_on),
        parallel=parallel,
        on_done=on_done,
        notes=notes,
        floor=floor,
    )
    code = boundary.decided(result.exit_code)
    click.echo(render_fleet(result, output, stdout_term()), nl=False)
    return code


def fleet_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """--all-clusters, --all-contexts and --parallel: the fleet flags of `diagnose` and `exporter`."""
    for option in reversed(_FLEET_OPTIONS):
        f = option(f)
    return f


_FLEET_OPTIONS: list[Callable[[Callable[..., Any]], Callable[..., Any]]] = [
    click.option(
        "--all-clusters",
        is_flag=True,
        envvar="CIDRX_ALL_CLUSTERS",
        help="Fleet mode: every cluster of --eks --region R, of --gke --project P (all locations) or of --aks "
        "--subscription S.",
    ),
    click.option(
        "--all-contexts",
        is_flag=True,
        envvar="CIDRX_ALL_CONTEXTS",
        help="Fleet mode: every context of the kubeconfig, each a --k8s cluster.",
    ),
    click.option(
        "--parallel",
        type=click.IntRange(1, MAX_PARALLEL),
        default=DEFAULT_PARALLEL,
        show_default=True,
        envvar="CIDRX_PARALLEL",
        metavar="N",
        help="Fleet mode: clusters diagnosed at the same time.",
    ),
]


@click.command(short_help="What is full and why pods get no IP (exit 3 on findings).")
@fleet_target_options
@click.option("--snapshot", "snapshot_path", metavar="FILE", help="Diagnose a saved snapshot (offline).")
@click.option(
    "-o",
    "--output",
    type=OutputFormat(FORMATS),
    default="table",
    show_default=True,
    help="Output format (text: table).",
)
@click.option(
    "--fail-on",
    type=click.Choice(FAIL_ON),
    default="critical",
    show_default=True,
    envvar="CIDRX_FAIL_ON",
    help="Exit 3 when a finding is at or above this severity.",
)
@fleet_options
def diagnose(
    target: TargetOptions,
    snapshot_path: str | None,
    output: str,
    fail_on: str,
    all_clusters: bool,
    all_contexts: bool,
    parallel: int,
) -> int:
    """Find what is full (subnets, pod ranges, pools) and why pods get no IP.

    TARGET is --eks --region R --cluster C (plus --kubeconfig/--context for the in-cluster side), or
    --snapshot FILE from `cidrx snapshot`.

    Fleet mode diagnoses many clusters at once and prints one summary row per cluster, then each
    cluster's diagnosis (-o json: one cidrx.fleet/v1 document). The exit code is the worst cluster's; a
    cluster that cannot be read is reported in its row (exit 6 or 2 there) and the others go on. A cloud
    cluster's in-cluster side is read through the kubeconfig context its tooling names (the cluster ARN,
    eksctl's name, gke_PROJECT_LOCATION_CLUSTER), else from the cloud side alone.

    \b
      cidrx diagnose --eks --region R --all-clusters
      cidrx diagnose --gke --project P --all-clusters
      cidrx diagnose --k8s --context a --context b
      cidrx diagnose --k8s --all-contexts --parallel 8
    """
    from cidrx.app.diagnose import address_maps, analyze
    from cidrx.render import render_diagnosis
    from cidrx.render.term import stdout_term

    if is_fleet(target, all_clusters, all_contexts):
        check_fleet_flags(target, all_clusters, all_contexts, snapshot_path)
        if output == "html":
            raise InvalidInput("-o html maps one cluster; diagnose the clusters one by one, or use -o markdown")
        return diagnose_many(target, all_contexts, parallel, output, fail_on)
    snap = get_snapshot(target, snapshot_path)
    d = analyze(snap)
    if snapshot_path:
        d = dataclasses.replace(d, taken_at=snap.taken_at)  # a saved snapshot: say how old it is
    if snapshot_path and snapshot_path != "-":
        d = offline_fixes(d, snapshot_path)
    warn_skipped_checks(d)
    if output == "html":
        from cidrx.render.html import render_html

        code = boundary.decided(exit_code_for(d, fail_on))
        click.echo(render_html(d, address_maps(snap)), nl=False)
        return code
    code = boundary.decided(exit_code_for(d, fail_on))
    click.echo(render_diagnosis(d, output, stdout_term()), nl=False)
    return code
