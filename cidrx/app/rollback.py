"""`cidrx rollback` as a use case: take back what an apply of a plan created or changed, holding the plan's
lock, with the undos its strategy's actions declare.

Why it exists: a rollback is an apply in reverse and shares its safety: the lock and the one client of an
`ApplySession`, a survey of what is left before any write, and a refusal up front when a step cannot be
undone or something is still in use.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cidrx import registry
from cidrx.app.apply import ApplySession, StepOutcome, cluster_steps, executors
from cidrx.app.owners import step_apis
from cidrx.errors import InvalidInput

if TYPE_CHECKING:
    from cidrx.engine.executor import Progress
    from cidrx.engine.waiting import Waiter
    from cidrx.model.options import Access
    from cidrx.model.plan import Plan


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
) -> tuple[list[Any], list[StepOutcome], list[Any]]:
    """Take back what an apply of `plan` created or changed (cidrx.engine.undo), holding the plan's lock:
    survey what is left (read live, by the plan tag and the apply journal's records), refuse with InUse (exit
    4) before any write when something is still in use, `confirm(items)` (which raises to cancel), then undo
    newest first with the rollback journal beside the plan. Only the steps an apply changed are undone (per
    the apply journal; without one, what carries the plan's tag). Returns the items surveyed (none: nothing to
    roll back), what each undo step did, and the steps left as they are with why (cidrx.engine.undo.Left).
    `writing` marks the stretch where writes happen (the CLI's Ctrl-C there means "stopped partway");
    `waiter` (its clock) and `wrap` (around each Undo) are for tests, as the apply engine's are."""
    from cidrx.engine.executor import StepContext
    from cidrx.engine.journal import Journal
    from cidrx.engine.undo import recover_outputs, refuse_in_use, run_rollback, survey
    from cidrx.engine.waiting import Waiter

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
    apply_journal = Journal.open(plan_path, plan)
    rollback_journal = Journal.open(f"{plan_path}.rollback", plan)
    needing = cluster_steps(plan)
    if needing and opts.no_kube:
        raise InvalidInput(f"plan {plan.plan_id} changed in-cluster objects (step {needing[0]}); drop --no-kube")
    with ApplySession(plan, plan_path, opts, progress) as session, session.locked(wait):
        ctx = StepContext(
            plan=plan,
            apis=step_apis(plan, opts, session.kube),
            waiter=waiter or Waiter(report=progress.waiting, report_every=progress.report_every),
            progress=progress,
            journal_outputs={s.id: o for s in plan.steps if (o := apply_journal.outputs_of(s.id)) is not None},
            recorded_before={s.id: b for s in plan.steps if (b := apply_journal.before_of(s.id)) is not None},
        )
        changed = {s.id: apply_journal.changed(s.id) for s in plan.steps} if apply_journal.events else None
        items, left = survey(plan, found, ctx, recover_outputs(plan, executors(plan), ctx), changed)
        if not items:
            return [], [], left
        refuse_in_use(plan, items)
        confirm(items)
        with writing():
            result = run_rollback(plan, items, found, ctx, rollback_journal)
    return items, [StepOutcome(s.step_id, s.action, s.status, s.outputs) for s in result.steps], left
