"""`cidrx reclaim`: free addresses an in-cluster IPAM still holds for pods that are gone.

In-cluster IPAMs keep the reservations of pods that died with their node, leaked IPs and empty blocks;
the IPAMs that can give them back declare a reclaim strategy (cidrx.registry). `--plan` lists exactly
what would be released and why; `--apply PLAN.json` re-reads every pool and pod right before acting and
never releases an address that has become live again. No workload has to be scaled down.
"""

from __future__ import annotations

import click

from cidrx import registry
from cidrx.cli.diagnose import get_snapshot
from cidrx.cli.expand import WAIT_FOR_LOCK, apply, write_plan
from cidrx.cli.options import OutputFormat, TargetOptions, target_options
from cidrx.errors import InvalidInput
from cidrx.model import files
from cidrx.render import PLAN_FORMATS

IPAMS = tuple(dict.fromkeys(s.owner for s in registry.strategies() if s.reclaim))
_TITLES = [spec.title for name in IPAMS if (spec := registry.ipam_spec(name)) is not None]
HELP = f"""Release addresses {" or ".join(_TITLES)} hold for pods that no longer exist.

    \b
      cidrx reclaim --k8s [--context C] --ipam {IPAMS[0] if IPAMS else "NAME"} --plan --out r.json
      cidrx reclaim --apply r.json --yes

    Pending pods and pods whose address is still reported live are never touched; every write is a
    compare-and-swap on the object's resourceVersion, re-decided on conflict.
    """


@click.command(short_help="Plan (--plan) or apply (--apply) the release of stale in-cluster IPAM addresses.", help=HELP)
@target_options
@click.option("--ipam", type=click.Choice(IPAMS), help="Which IPAM's stale addresses to release (with --plan).")
@click.option("--plan", "plan_mode", is_flag=True, help="Make a plan and write it to --out (changes nothing).")
@click.option("--apply", "apply_path", metavar="PLAN.json", help="Carry out a plan made with --plan.")
@click.option("--snapshot", "snapshot_path", metavar="FILE", help="With --plan: plan from a saved snapshot (offline).")
@click.option(
    "--out",
    metavar="PLAN.json",
    help="With --plan: where to write the plan [default: cidrx-plan-<cluster>.json]; - prints its JSON instead.",
)
@click.option(
    "-o",
    "--output",
    type=OutputFormat(PLAN_FORMATS),
    default="table",
    show_default=True,
    help="Plan output format; with --apply, table or json (the cidrx.apply/v1 document); text means table.",
)
@click.option("--yes", is_flag=True, help="With --apply: do not ask (required when stdin is not a terminal).")
@WAIT_FOR_LOCK
def reclaim(
    target: TargetOptions,
    ipam: str | None,
    plan_mode: bool,
    apply_path: str | None,
    snapshot_path: str | None,
    out: str | None,
    output: str,
    yes: bool,
    wait_for_lock: float | None,
) -> int:
    if plan_mode and apply_path:
        raise InvalidInput("--plan and --apply are mutually exclusive: make the plan, review it, then apply it")
    if not plan_mode and not apply_path:
        raise InvalidInput(f"reclaim needs --plan --ipam {'|'.join(IPAMS)}, or --apply PLAN.json")
    if target.no_kube:
        raise InvalidInput("reclaim frees in-cluster IPAM addresses through the Kubernetes API; drop --no-kube")
    if apply_path:
        given = [n for n, v in (("--ipam", ipam), ("--snapshot", snapshot_path), ("--out", out)) if v is not None]
        if given:
            raise InvalidInput(f"{', '.join(given)} only work with --plan; the plan file already fixes them")
        return apply(target, apply_path, yes, command="reclaim", output=output, wait_for_lock=wait_for_lock)
    if wait_for_lock is not None:
        raise InvalidInput("--wait-for-lock only works with --apply; --plan takes no lock")
    if yes:
        raise InvalidInput("--yes only works with --apply; --plan never changes anything")
    if ipam is None:
        raise InvalidInput(f"reclaim --plan needs {' or '.join(f'--ipam {name}' for name in IPAMS)}")
    from cidrx.app.plan import make_reclaim_plan

    if out:
        files.check_writable(out)
    snap = get_snapshot(target, snapshot_path)
    return write_plan(make_reclaim_plan(snap, ipam), out, output, "reclaim", snap)
