"""`cidrx diagnose`: what is full and why, as a table, JSON or Markdown; the exit code gates CI jobs.

Reads a live target or a snapshot file (offline: no credentials, no network). Exit 3 when a finding is at
or above `--fail-on`, so a scheduled job fails before the incident does.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from cidrx.cli.options import TargetOptions, check_matches, resolve_target, target_options
from cidrx.errors import EXIT_FINDINGS, EXIT_OK, InvalidInput
from cidrx.render import FORMATS

if TYPE_CHECKING:
    from cidrx.model.findings import Diagnosis
    from cidrx.model.snapshot import Snapshot

# Models, providers and renderers are imported inside the functions: `cidrx --help` must stay fast.
FAIL_ON = ("critical", "warning", "never")


def exit_code_for(d: Diagnosis, fail_on: str) -> int:
    """3 when any finding is at or above `fail_on` (critical | warning), 0 otherwise or for `never`."""
    from cidrx.model.findings import Severity

    if fail_on == "never":
        return EXIT_OK
    floor = Severity(fail_on).rank
    return EXIT_FINDINGS if any(f.severity.rank >= floor for f in d.findings) else EXIT_OK


def read_snapshot(path: str, opts: TargetOptions) -> Snapshot:
    """A snapshot file (`-` for stdin); target flags given alongside must name the same cluster."""
    from cidrx.model import codec
    from cidrx.model.snapshot import SNAPSHOT_SCHEMA, Snapshot, fingerprint_of, load_snapshot

    if path == "-":
        snap = codec.loads(sys.stdin.buffer.read(), Snapshot, what="snapshot on stdin")
        if snap.schema != SNAPSHOT_SCHEMA:
            raise InvalidInput(f"snapshot on stdin has schema {snap.schema!r}; this cidrx reads {SNAPSHOT_SCHEMA}")
        if snap.fingerprint and snap.fingerprint != fingerprint_of(snap):
            raise InvalidInput("snapshot on stdin was edited after it was taken (fingerprint mismatch)")
    else:
        snap = load_snapshot(path)
    check_matches(opts, snap.target, f"snapshot {path}")
    return snap


def collect_live(opts: TargetOptions) -> Snapshot:
    """A fresh snapshot of the target the flags name.

    A plain Kubernetes target has nothing but the cluster: when its API cannot be read, the snapshot is
    empty and a diagnosis of it would pass a CI gate, so that is an access error (exit 6) instead.
    """
    from cidrx import targets
    from cidrx.errors import AccessDenied

    target = resolve_target(opts)
    targets.require_supported(target)
    snap = targets.collect_snapshot(target, opts)
    if target.provider == "k8s" and not snap.kube.available:
        raise AccessDenied(
            f"cannot read {target.label()}: {snap.kube.reason or 'the Kubernetes API is unreachable'}",
            hint="check --kubeconfig / --context and network access to the API server",
        )
    return snap


def get_snapshot(opts: TargetOptions, snapshot_path: str | None) -> Snapshot:
    if snapshot_path:
        return read_snapshot(snapshot_path, opts)
    return collect_live(opts)


@click.command(short_help="What is full and why pods get no IP (exit 3 on findings).")
@target_options
@click.option("--snapshot", "snapshot_path", metavar="FILE", help="Diagnose a saved snapshot (offline).")
@click.option("-o", "--output", type=click.Choice(FORMATS), default="table", show_default=True, help="Output format.")
@click.option(
    "--fail-on",
    type=click.Choice(FAIL_ON),
    default="critical",
    show_default=True,
    envvar="CIDRX_FAIL_ON",
    help="Exit 3 when a finding is at or above this severity.",
)
def diagnose(target: TargetOptions, snapshot_path: str | None, output: str, fail_on: str) -> int:
    """Find what is full (subnets, pod ranges, pools) and why pods get no IP.

    TARGET is --eks --region R --cluster C (plus --kubeconfig/--context for the in-cluster side), or
    --snapshot FILE from `cidrx snapshot`.
    """
    from cidrx import targets
    from cidrx.render import render_diagnosis

    snap = get_snapshot(target, snapshot_path)
    d = targets.analyze(snap)
    click.echo(render_diagnosis(d, output), nl=False)
    return exit_code_for(d, fail_on)
