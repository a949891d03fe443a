"""`cidrx rollback PLAN.json`: take back what an apply of that plan created or changed.

Why it exists: a fix can turn out wrong after it is applied, and finding by hand every subnet, range, node
group and setting an apply touched is slow and error-prone. Rollback reads the live state first (only what
carries the plan's tag/label, settings back to the values the apply journal recorded before changing them),
shows what it will remove, refuses when something is still in use, and then undoes newest first, resumably.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import click

from cidrx.cli import boundary
from cidrx.cli.expand import stdin_is_terminal, wait_for_lock_option
from cidrx.cli.options import TargetOptions, check_matches, target_options
from cidrx.errors import InvalidInput


@click.command(short_help="Undo what an apply of a plan created or changed.")
@click.argument("plan_path", metavar="PLAN.json")
@target_options
@click.option("--yes", is_flag=True, help="Do not ask (required when stdin is not a terminal).")
@wait_for_lock_option("W")
def rollback(target: TargetOptions, plan_path: str, yes: bool, wait_for_lock: float | None) -> int:
    """Undo, newest step first, what `expand --apply PLAN.json` created or changed.

    \b
      cidrx rollback PLAN.json            shows what it would undo, then asks
      cidrx rollback PLAN.json --yes      in a pipeline

    Only what carries the plan's tag or label is removed; changed settings (the VPC CNI's env, the add-on's
    configuration) go back to the values the apply recorded before changing them. Refuses (exit 4, nothing
    changed) while something it would remove is in use: nodes in the node group or pool, network interfaces
    in a subnet, pods with addresses in a range, allocations in an in-cluster IPAM pool. Reclaim plans cannot be
    rolled back (exit 2). If it stops partway (exit 5), the same command resumes; run again when done, it
    changes nothing.
    """
    from cidrx.app.owners import require_supported
    from cidrx.app.rollback import rollback as roll_back
    from cidrx.engine.undo import ALREADY_DONE
    from cidrx.model.plan import load_plan
    from cidrx.render.progress import make_progress

    plan = load_plan(plan_path)
    check_matches(target, plan.target, f"plan {plan_path}")
    require_supported(plan.target)
    progress = make_progress(sys.stderr)

    def confirm(items: Sequence[Any]) -> None:
        lines = [f"cidrx rollback of plan {plan.plan_id} ({plan.strategy}) on {plan.target.label()}, newest first:"]
        lines += [f"  {i}. {item.step.id}: {item.what}" for i, item in enumerate(items, start=1)]
        click.echo("\n".join(lines), err=True)
        if yes:
            return
        if not stdin_is_terminal():
            raise InvalidInput(
                "refusing to roll back without --yes: stdin is not a terminal",
                hint=f"review what it undoes (above), then run: cidrx rollback {plan_path} --yes",
            )
        if not click.confirm(f"Undo these {len(items)} step(s)?", default=False, err=True):
            raise InvalidInput("rollback cancelled at the prompt; nothing was changed")

    items, outcomes, left = roll_back(
        plan, plan_path, target, progress, confirm, wait_for_lock, writing=boundary.applying
    )
    kept = [x for x in left if x.why == ALREADY_DONE]
    if not items:
        click.echo(f"plan {plan.plan_id}: nothing to roll back (never applied, or already rolled back)")
        for x in kept:
            click.echo(f"{x.step.id}  left: {x.why}")
        return 0
    for o in outcomes:
        click.echo(f"{o.step_id}  {'undone' if o.status == 'done' else 'already undone'}")
    for x in kept:
        click.echo(f"{x.step.id}  left: {x.why}")
    done = sum(1 for o in outcomes if o.status == "done")
    tail = f", {len(kept)} left as they were (already done before this apply)" if kept else ""
    click.echo(f"plan {plan.plan_id} rolled back: {done} step(s) undone, {len(outcomes) - done} already undone{tail}")
    return 0
