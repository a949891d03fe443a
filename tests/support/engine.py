"""Driving cidrx's apply engine in tests: a fake clock for its waiter and an executor that crashes on cue.

Waits must never sleep for real in tests, and resume tests need a run that dies right after a write reached
the cloud; every engine, retry and resume test module used to keep its own copy of both.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cidrx.cli import boundary
from cidrx.engine.apply import run_plan
from cidrx.engine.executor import Executor, Outputs, StepContext
from cidrx.engine.journal import Journal
from cidrx.engine.waiting import Waiter
from cidrx.model.plan import Plan, Step, seal
from cidrx.model.target import Target
from cidrx.render.progress import NullProgress


@dataclass
class FakeClock:
    """Monotonic time that only moves when something sleeps; `on_sleep` lets the world move on too (a
    fake cloud finishing its pending operations, as real time would)."""

    now: float = 1000.0
    on_sleep: Callable[[], object] = lambda: None
    sleeps: list[float] = field(default_factory=list)

    @property
    def slept(self) -> float:
        return sum(self.sleeps)

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.sleeps.append(seconds)
        self.now += seconds
        self.on_sleep()


class CrashAfterAct:
    """The real executor, except that step `crash_at`'s act raises `error` (Ctrl-C by default) once the real
    act has returned: the cloud took the write, the engine has not journaled it."""

    def __init__(
        self,
        inner: Executor,
        crash_at: str,
        acted: dict[str, Outputs],
        error: type[BaseException] = KeyboardInterrupt,
    ) -> None:
        self.inner = inner
        self.crash_at = crash_at
        self.acted = acted
        self.error = error

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        return self.inner.check(step, params, ctx)

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        outputs = self.inner.act(step, params, ctx)
        if step.id == self.crash_at:
            self.acted[step.id] = outputs
            raise self.error
        return outputs

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        self.inner.wait(step, params, ctx, outputs)

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        self.inner.verify(step, params, ctx, outputs)


def apply_in_boundary(
    plan: Plan,
    plan_path: Path,
    executors: Mapping[str, Executor],
    apis: Callable[[], AbstractContextManager[Any]],
    clock: FakeClock,
) -> int:
    """`plan` through the engine with `executors`, waiting on `clock`, inside the CLI's error boundary as
    `expand --apply` runs it: the exit code a user would get. `apis` opens the provider's API handles."""

    def apply() -> None:
        with apis() as handles:
            ctx = StepContext(
                plan=plan,
                apis=handles,
                waiter=Waiter(sleep=clock.sleep, monotonic=clock.monotonic),
                progress=NullProgress(),
            )
            with boundary.applying():
                run_plan(plan, executors, ctx, Journal.open(plan_path, plan))

    return boundary.run(apply)


def small_plan(
    target: Target,
    strategy: str,
    *steps: Step,
    basis: dict[str, Any] | None = None,
    created_at: str = "2026-11-24T10:00:00Z",
) -> Plan:
    """A sealed plan of `steps` for `target` (tests that need a plan file, not a planner's output)."""
    return seal(
        Plan(
            target=target,
            created_at=created_at,
            snapshot_fingerprint="f" * 64,
            strategy=strategy,
            basis=basis or {},
            steps=steps,
        )
    )


def sealed_eks_plan(steps: tuple[Step, ...]) -> Plan:
    """A sealed custom-networking plan for the EKS cluster `demo` with these steps (engine and journal tests)."""
    target = Target("eks", "demo", region="ap-southeast-2")
    basis = {"vpc_cidrs": ["10.0.0.0/16"]}
    return small_plan(target, "custom-networking", *steps, basis=basis, created_at="2024-05-01T10:00:00Z")
