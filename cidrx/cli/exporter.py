"""`cidrx exporter`: the diagnosis as a Prometheus endpoint, collected every interval (cidrx/app/exporter.py).

Takes every target `diagnose` takes (one cluster, a snapshot file, a fleet) with the same flags and the same
checks (cidrx/cli/diagnose.py); bad --listen or --interval values are one line and exit 2 before anything
is collected. A cluster that cannot be read later is not fatal: the exporter keeps serving its last good
figures with `cidrx_up 0` and tries again next interval.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from cidrx.cli.diagnose import check_fleet_flags, fleet_jobs, fleet_options, is_fleet, read_snapshot, reading_status
from cidrx.cli.options import TargetOptions, check_matches, fleet_target_options, for_snapshot, resolve_target
from cidrx.errors import InvalidInput

if TYPE_CHECKING:
    from cidrx.app.exporter import Collect

# cidrx.app.exporter.DEFAULT_PORT, literal here so that --help imports nothing.
DEFAULT_LISTEN = "0.0.0.0:9877"
DEFAULT_INTERVAL = "60"


def _log(line: str) -> None:
    click.echo(f"cidrx exporter: {line}", err=True)


@click.command(short_help="Serve the diagnosis as Prometheus metrics (/metrics, /healthz).")
@fleet_target_options
@click.option("--snapshot", "snapshot_path", metavar="FILE", help="Serve a saved snapshot (re-read every interval).")
@click.option(
    "--listen",
    default=DEFAULT_LISTEN,
    show_default=True,
    envvar="CIDRX_LISTEN",
    metavar="HOST:PORT",
    help="Address to serve on; [::]:PORT for IPv6, port 0 for any free port.",
)
@click.option(
    "--interval",
    default=DEFAULT_INTERVAL,
    show_default=True,
    envvar="CIDRX_INTERVAL",
    metavar="SECONDS",
    help="Seconds between collections (jittered by ±10%; a slow one delays the next).",
)
@fleet_options
def exporter(
    target: TargetOptions,
    snapshot_path: str | None,
    listen: str,
    interval: str,
    all_clusters: bool,
    all_contexts: bool,
    parallel: int,
) -> int:
    """Serve what `cidrx diagnose` finds as Prometheus metrics, collected every --interval.

    TARGET is any target `cidrx diagnose` takes, fleet mode included (a `target` label per cluster).
    /metrics has the same cidrx_capacity_* and cidrx_finding(s) series as `diagnose -o prometheus`,
    plus cidrx_up, cidrx_last_success_timestamp_seconds and cidrx_collection_duration_seconds
    (docs/metrics.md). A failed collection keeps the last good values, sets cidrx_up to 0 and logs one
    line on stderr. /healthz answers 200 while the collector runs. SIGTERM or Ctrl-C stops it (exit 0).

    \b
      cidrx exporter --eks --region R --cluster C --listen 0.0.0.0:9877 --interval 300
      cidrx exporter --k8s --all-contexts --interval 120
    """
    from cidrx.app import exporter as app
    from cidrx.app.owners import require_supported

    host, port = app.parse_listen(listen)
    seconds = app.parse_interval(interval)
    collect: Collect
    if is_fleet(target, all_clusters, all_contexts):
        check_fleet_flags(target, all_clusters, all_contexts, snapshot_path)
        collect = app.fleet_collect(target, lambda: fleet_jobs(target, all_contexts), parallel)
    elif snapshot_path:
        if snapshot_path == "-":
            raise InvalidInput("--snapshot -: the exporter re-reads its snapshot every interval; give a file")
        read_snapshot(snapshot_path, target)  # a missing or corrupt file is exit 2 now, not a failing exporter
        path = snapshot_path
        offline = for_snapshot(target, f"snapshot {path}")
        collect = app.snapshot_collect(path, lambda snap: check_matches(offline, snap.target, f"snapshot {path}"))
    else:
        resolved = resolve_target(target)
        require_supported(resolved)
        collect = app.target_collect(resolved, target, reading_status)
    return app.run_exporter(collect, host, port, seconds, _log)
