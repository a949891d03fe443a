"""The apply loop every fix runs through, whatever the provider: check -> act -> wait -> verify per step.

Safety comes from the order of operations, not from the journal: each step first asks the cloud whether
its effect already exists (created resources carry the plan tag), so a rerun after any crash, with or
without the journal, converges without duplicates. The journal records each event durably as it happens
(the ids of what `act` created go in before the slow wait) for review and as hints for executors.

Error policy (the exit codes of docs/cli.md): access (6) and stale (4) errors pass through unchanged, and a
cloud that kept failing after every retry (7) too, saying the same command resumes; any
other cidrx error, a timeout or Ctrl-C becomes ApplyInterrupted (5, "run the same command again"); an
unexpected exception is recorded and re-raised for the CLI to report as a bug (1).
"""

from __future__ import annotations

import contextlib
import ipaddress
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from cidrx.engine.executor import Executor, Outputs, StepContext, parse_ref, resolve_params
from cidrx.engine.journal import Journal
from cidrx.errors import AccessDenied, ApplyInterrupted, CidrxError, InvalidInput, RetriesExhausted, StalePlan
from cidrx.model.plan import Plan, Step

StepStatus = Literal["done", "skipped"]


@dataclass(frozen=True)
class StepResult:
    step_id: str
    action: str
    status: StepStatus
    outputs: Outputs = field(default_factory=dict)


@dataclass(frozen=True)
class ApplyResult:
    plan_id: str
    steps: tuple[StepResult, ...]

    @property
    def done(self) -> int:
        """Steps that changed something in this run."""
        return sum(1 for s in self.steps if s.status == "done")

    @property
    def skipped(self) -> int:
        """Steps found already done (by an earlier run, or by hand)."""
        return sum(1 for s in self.steps if s.status == "skipped")

    @property
    def changed(self) -> bool:
        return self.done > 0

    def outputs(self, step_id: str) -> Outputs:
        for s in self.steps:
            if s.step_id == step_id:
                return s.outputs
        raise KeyError(step_id)


def execution_order(plan: Plan) -> list[Step]:
    """Plan order, except that a step never runs before the steps it depends on (stable topological sort).

    Raises InvalidInput for unknown dependencies or a cycle; `load_plan` checks the former too, this also
    covers plans built in code.
    """
    ids = {s.id for s in plan.steps}
    for s in plan.steps:
        missing = [d for d in s.depends_on if d not in ids]
        if missing:
            raise InvalidInput(f"step {s.id} depends on unknown step(s) {', '.join(missing)}; re-plan")
    pending = list(plan.steps)
    finished: set[str] = set()
    order: list[Step] = []
    while pending:
        ready = next((s for s in pending if all(d in finished for d in s.depends_on)), None)
        if ready is None:
            cycle = ", ".join(s.id for s in pending)
            raise InvalidInput(f"plan steps depend on each other in a cycle ({cycle}); re-plan")
        pending.remove(ready)
        finished.add(ready.id)
        order.append(ready)
    return order


def _cidr_key(key: str) -> bool:
    return "cidr" in key.lower()


def _param_problems(step: Step, key: str, value: Any, reachable: set[str]) -> list[str]:
    """What is wrong with one parameter (recursively): a reference to a step this one does not come after, or
    a CIDR (a key naming one) that is not an IP network."""
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _param_problems(step, f"{key}.{k}", v, reachable)]
    if isinstance(value, list | tuple):
        return [p for i, v in enumerate(value) for p in _param_problems(step, f"{key}[{i}]", v, reachable)]
    if not isinstance(value, str):
        return []
    ref = parse_ref(value)
    if ref is not None:
        if ref[0] not in reachable:
            return [f"step {step.id} parameter {key} refers to step {ref[0]}, which it does not come after"]
        return []
    if _cidr_key(key.rpartition(".")[2].partition("[")[0]) and value:
        try:
            ipaddress.ip_network(value, strict=False)
        except ValueError:
            return [f"step {step.id} parameter {key} is {value!r}, not a CIDR"]
    return []


def validate_params(plan: Plan, order: list[Step]) -> None:
    """Refuse (InvalidInput, exit 2) before the first write a plan whose step parameters cannot be carried out:
    a plan sealed after a hand edit must not half-apply and then stop on a value no retry can fix."""
    by_id = {s.id: s for s in plan.steps}
    problems: list[str] = []
    for step in order:
        reachable: set[str] = set()
        pending = list(step.depends_on)
        while pending:
            sid = pending.pop()
            if sid not in reachable and sid in by_id:
                reachable.add(sid)
                pending += by_id[sid].depends_on
        for key, value in step.params.items():
            problems += _param_problems(step, key, value, reachable)
    if problems:
        raise InvalidInput(
            f"plan {plan.plan_id} cannot be applied: " + "; ".join(problems[:5]) + "; nothing was applied",
            hint="make a new plan with --plan",
        )


def _safe_record(journal: Journal, step_id: str, error: str) -> None:
    # The failure record is for humans; if the disk is the problem, the original error matters more.
    with contextlib.suppress(OSError):
        journal.record(step_id, "failed", error=error)


def run_plan(
    plan: Plan,
    executors: Mapping[str, Executor],
    ctx: StepContext,
    journal: Journal,
    *,
    preflight: Callable[[], None] | None = None,
) -> ApplyResult:
    """Run every step of `plan` (see the module doc); returns what each step did and produced.

    `preflight` (e.g. the provider's drift check) runs after the plan is validated and before any write.
    `ctx.outputs` is filled as steps finish; `ctx.journal_outputs` is set from the journal.
    """
    order = execution_order(plan)
    unknown = sorted({s.action for s in order if s.action not in executors})
    if unknown:
        raise InvalidInput(
            f"plan uses action(s) this cidrx cannot apply: {', '.join(unknown)}; "
            "apply it with the cidrx version that made it, or re-plan"
        )
    validate_params(plan, order)
    if preflight is not None:
        preflight()

    ctx.journal_outputs = {s.id: out for s in order if (out := journal.outputs_of(s.id)) is not None}
    results: list[StepResult] = []
    total = len(order)
    for index, step in enumerate(order, start=1):
        executor = executors[step.action]
        ctx.progress.step_started(step, index, total)
        try:
            params = resolve_params(step.params, ctx.outputs)
            found = executor.check(step, params, ctx)
            if found is not None:
                outputs = dict(found)
                journal.record(step.id, "skipped", outputs, changed=False)
                status: StepStatus = "skipped"
            else:
                if journal.is_done(step.id):
                    ctx.progress.note(
                        f"{step.id}: the journal says this step was done, but the cloud no longer shows it; "
                        "doing it again"
                    )
                before = getattr(executor, "before", None)  # RecordsBefore: what act will overwrite
                journal.record(step.id, "started", before(step, params, ctx) if before is not None else None)
                outputs = dict(executor.act(step, params, ctx))
                journal.record(step.id, "acted", outputs)
                executor.wait(step, params, ctx, outputs)
                executor.verify(step, params, ctx, outputs)
                journal.record(step.id, "done", outputs, changed=True)
                status = "done"
        except (AccessDenied, StalePlan) as exc:
            _safe_record(journal, step.id, str(exc))
            ctx.progress.step_finished(step, "failed", {})
            raise
        except RetriesExhausted as exc:  # the cloud kept failing: exit 7, and the same command resumes later
            _safe_record(journal, step.id, str(exc))
            ctx.progress.step_finished(step, "failed", {})
            raise RetriesExhausted(
                f"step {step.id} ({step.description}): {exc.message}",
                hint=f"{exc.hint or 'retry later'}; the same command resumes where this one stopped",
            ) from exc
        except ApplyInterrupted as exc:  # e.g. a wait that timed out; its message already says to rerun
            _safe_record(journal, step.id, str(exc))
            ctx.progress.step_finished(step, "failed", {})
            raise ApplyInterrupted(f"step {step.id} ({step.description}): {exc.message}", hint=exc.hint) from exc
        except CidrxError as exc:
            _safe_record(journal, step.id, str(exc))
            ctx.progress.step_finished(step, "failed", {})
            raise ApplyInterrupted(
                f"step {step.id} ({step.description}) failed: {exc}; "
                "fix the cause and run the same command again to resume"
            ) from exc
        except KeyboardInterrupt as exc:
            _safe_record(journal, step.id, "interrupted")
            ctx.progress.step_finished(step, "interrupted", {})
            raise ApplyInterrupted(f"interrupted during step {step.id}; run the same command again to resume") from exc
        except Exception as exc:
            _safe_record(journal, step.id, f"{type(exc).__name__}: {exc}")
            ctx.progress.step_finished(step, "failed", {})
            raise
        ctx.outputs[step.id] = outputs
        ctx.progress.step_finished(step, status, outputs)
        results.append(StepResult(step.id, step.action, status, outputs))
    return ApplyResult(plan.plan_id, tuple(results))
