"""Rollback: take back, newest step first, what an apply of a plan created or changed.

Why it exists: an apply can be wrong for reasons no plan check sees (a workload that must not move to the
new range, a budget), and putting things back by hand means finding every object cidrx made. Each step
action declares its `Undo` beside its executor (the registry's `Action.undo`); this module surveys them,
refuses before any write when something would be removed while in use, and runs them through the apply
loop (check -> act -> wait -> verify, with its own journal `PLAN.json.rollback.journal.jsonl`), so a
rollback that stopped partway resumes like an apply and a finished one changes nothing when run again.

An undo touches only what carries the plan's tag/label (or, for settings it changed, the values the
apply journal recorded before the change): `find` is the undo's whole view of what is left to take back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from cidrx.engine.apply import ApplyResult, execution_order, run_plan
from cidrx.engine.executor import Executor, Outputs, StepContext, resolve_params
from cidrx.engine.journal import Journal
from cidrx.errors import CidrxError, CloudError, InUse, InvalidInput
from cidrx.model.plan import Plan, Step

UNDO_PREFIX = "undo-"


class Undo(Protocol):
    """How one step action is taken back. Every phase must be safe to repeat (a rollback may stop anywhere)."""

    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        """What the apply of `step` left that this undo would take back (by the plan tag, or the recorded
        before-values), or None when there is nothing (never applied, or already undone)."""
        ...

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        """Why it cannot be taken back now (something still uses it), or None."""
        ...

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        """One line for the rollback's preview: what will be removed or restored."""
        ...

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        """Remove or restore it; return ids of what was changed."""
        ...

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        """Block (via `ctx.wait_until`) until the cloud reports it gone or restored; `outputs` are act's."""
        ...


@dataclass(frozen=True)
class Item:
    """One step of the plan with something left to take back."""

    step: Step
    params: dict[str, Any]
    found: Outputs
    what: str
    blocker: str | None


def missing_undos(plan: Plan, undos: Mapping[str, Undo | None], reasons: Mapping[str, str]) -> list[str]:
    """Lines naming each step of `plan` whose action declares no undo, and why."""
    lines = []
    for s in plan.steps:
        if undos.get(s.action) is None:
            why = reasons.get(s.action) or f"no undo is declared for action {s.action} yet"
            lines.append(f"{s.id} ({s.action}): {why}")
    return lines


def _lenient(params: dict[str, Any], outputs: dict[str, Outputs]) -> dict[str, Any]:
    try:
        return resolve_params(params, outputs)
    except CloudError:
        return dict(params)  # a reference nobody can resolve: the undo finds its object by the plan tag


def recover_outputs(plan: Plan, executors: Mapping[str, Executor], ctx: StepContext) -> dict[str, Outputs]:
    """What each step of the apply produced: from its journal, or (journal lost) by asking each step's own
    `check`, in apply order, which finds its work by the plan tag. Steps whose work is gone have none."""
    outputs: dict[str, Outputs] = {}
    for step in execution_order(plan):
        recorded = ctx.journal_outputs.get(step.id)
        if recorded is not None:
            outputs[step.id] = recorded
            continue
        try:
            params = resolve_params(step.params, outputs)
            found = executors[step.action].check(step, params, ctx)
        except CidrxError:
            continue
        if found is not None:
            outputs[step.id] = dict(found)
    return outputs


@dataclass(frozen=True)
class Left:
    """A step of the plan rollback leaves as it is, and why."""

    step: Step
    why: str


ALREADY_DONE = "found already done when it was applied (skipped): this plan did not change it, so it stays"
NOTHING_LEFT = "nothing of it is left to take back (not applied, or already undone)"


def survey(
    plan: Plan,
    undos: Mapping[str, Undo],
    ctx: StepContext,
    outputs: dict[str, Outputs],
    changed: Mapping[str, bool | None] | None = None,
) -> tuple[list[Item], list[Left]]:
    """Every step with something left to take back, newest first, with why it cannot be now (if so); and the
    steps left as they are, with why. `changed` (per step, from the apply journal: cidrx.engine.journal
    `Journal.changed`) marks the steps an apply found already done: they are not this plan's to undo. A step
    the journal does not know (journal lost) is judged by what its undo finds (the plan tag, recorded values)."""
    items: list[Item] = []
    left: list[Left] = []
    for step in reversed(execution_order(plan)):
        if (changed or {}).get(step.id) is False:
            left.append(Left(step, ALREADY_DONE))
            continue
        undo = undos[step.action]
        params = _lenient(step.params, outputs)
        found = undo.find(step, params, ctx)
        if found is None:
            left.append(Left(step, NOTHING_LEFT))
            continue
        blocker = undo.in_use(step, params, found, ctx)
        items.append(Item(step, params, dict(found), undo.describe(step, params, found), blocker))
    return items, left


def refuse_in_use(plan: Plan, items: Sequence[Item]) -> None:
    """Refuse (exit 4, nothing changed) when a step cannot be taken back now, with a hint that fits each cause:
    something still uses what would be removed, or the journal lacks the values to put back (an undo's
    `find` says so with `unknown`)."""
    blocked = [i for i in items if i.blocker]
    if not blocked:
        return
    lines = "; ".join(f"{i.step.id}: {i.blocker}" for i in blocked)
    hints = []
    if any(i.found.get("unknown") for i in blocked):
        hints.append(
            "the values to restore are recorded in the apply journal beside the plan (PLAN.json.journal.jsonl): "
            "put it back if it was moved, or restore those settings by hand"
        )
    if any(not i.found.get("unknown") for i in blocked):
        hints.append("free what is named (move the workloads off it), then run the same command again")
    raise InUse(f"cannot roll back plan {plan.plan_id}: {lines}; nothing was changed", hint="; ".join(hints))


class _UndoStep:
    """The apply loop's Executor for one undo: done means `find` sees nothing left."""

    def __init__(self, undo: Undo, originals: Mapping[str, Item]) -> None:
        self.undo = undo
        self.originals = originals

    def _of(self, step: Step) -> Item:
        return self.originals[step.id]

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        item = self._of(step)
        return {"undone": True} if self.undo.find(item.step, item.params, ctx) is None else None

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        item = self._of(step)
        found = self.undo.find(item.step, item.params, ctx)
        if found is None:
            return {"undone": True}
        blocker = self.undo.in_use(item.step, item.params, found, ctx)
        if blocker:  # came into use since the survey
            raise InUse(f"cannot take back step {item.step.id}: {blocker}", hint="free it and run the same command")
        return {**self.undo.act(item.step, item.params, found, ctx), "found": found}

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        item = self._of(step)
        self.undo.wait(item.step, item.params, outputs, ctx)

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        item = self._of(step)
        if self.undo.find(item.step, item.params, ctx) is not None:
            raise CloudError(f"step {item.step.id} is still in place after its undo: {item.what}")


def rollback_plan(plan: Plan, items: Sequence[Item]) -> tuple[Plan, dict[str, Item]]:
    """The undo steps as a plan the apply loop runs (each after the one before it), and their items by id."""
    steps: list[Step] = []
    by_id: dict[str, Item] = {}
    for item in items:
        sid = f"{UNDO_PREFIX}{item.step.id}"
        steps.append(
            Step(
                id=sid,
                action=f"undo {item.step.action}",
                params={},
                description=item.what,
                depends_on=(steps[-1].id,) if steps else (),
            )
        )
        by_id[sid] = item
    return replace(plan, steps=tuple(steps)), by_id


def run_rollback(
    plan: Plan,
    items: Sequence[Item],
    undos: Mapping[str, Undo],
    ctx: StepContext,
    journal: Journal,
    preflight: Callable[[], None] | None = None,
) -> ApplyResult:
    """Take back `items` (from `survey`) newest first through the apply loop, journaling each undo."""
    if any(i.step.action not in undos for i in items):
        raise InvalidInput("rollback was asked to undo an action without an undo")
    pseudo, by_id = rollback_plan(plan, items)
    executors: dict[str, Executor] = {f"undo {action}": _UndoStep(undo, by_id) for action, undo in undos.items()}
    return run_plan(pseudo, executors, ctx, journal, preflight=preflight)
