"""The contract between the provider-independent apply loop and each provider's step implementations.

Every plan action (associate a VPC CIDR, patch a subnet, release an in-cluster IPAM address, …) is an
Executor with four phases: `check` (already done? find it, e.g. by the plan tag), `act`, `wait` (until the
cloud says the change is usable) and `verify` (the end state is what the step promised). The loop in
apply.py owns ordering, journaling and error policy, so a provider only writes these four functions.

Steps refer to what earlier steps created with `"${step-id.key}"` parameters, resolved here right before
a step runs from the outputs the earlier steps returned (from `act`, or from `check` on a resumed run).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from cidrx.engine.waiting import Waiter
from cidrx.errors import CloudError
from cidrx.model.plan import Plan, Step

T = TypeVar("T")

Outputs = dict[str, Any]
"""Ids of what a step created or found (JSON-able); recorded in the journal, referenced by later steps."""

_REF = re.compile(r"\$\{([^.{}]+)\.([^{}]+)\}")


class Progress(Protocol):
    """What the apply engine tells the user (cidrx.render.progress shows it). `report_every` is how often
    (s) waits are worth a line."""

    report_every: float

    def step_started(self, step: Step, index: int, total: int) -> None: ...

    def step_finished(self, step: Step, status: str, outputs: dict[str, Any]) -> None: ...

    def note(self, text: str) -> None: ...

    def waiting(self, what: str, elapsed: float) -> None: ...


@dataclass
class StepContext:
    """What an executor may use while running one step. Mutable: the loop fills `outputs` as steps finish.

    `journal_outputs` holds what an earlier, interrupted run recorded per step id. They are hints only
    (the journal may be lost or stale): `check` must still look at the cloud.
    """

    plan: Plan
    apis: Any
    waiter: Waiter
    progress: Progress
    outputs: dict[str, Outputs] = field(default_factory=dict)
    journal_outputs: dict[str, Outputs] = field(default_factory=dict)
    # For rollback: what each step's `before` recorded in the apply journal (Journal.before_of), by step id.
    recorded_before: dict[str, Outputs] = field(default_factory=dict)

    @property
    def plan_id(self) -> str:
        return self.plan.plan_id

    def wait_until(self, what: str, probe: Callable[[], T | None], *, timeout: float, **pacing: float) -> T:
        """`Waiter.wait_until` (`interval`, `max_interval`), reporting through this apply's progress display."""
        return self.waiter.wait_until(what, probe, timeout=timeout, report=self.progress.waiting, **pacing)


class Executor(Protocol):
    """One plan action. All four phases must be safe to repeat: a run may stop between any two of them."""

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        """The step's outputs if its effect already exists in the cloud (found by plan tag), else None."""
        ...

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        """Make the change; return ids of what was created."""
        ...

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        """Block (via `ctx.wait_until`) until the cloud reports the change usable."""
        ...

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        """Raise CloudError if the end state is not what the step promised."""
        ...


class RecordsBefore(Protocol):
    """An Executor that changes a setting in place (rather than creating something tagged) also has `before`:
    the values its `act` is about to overwrite, recorded in the journal's first "started" event of the step so
    `cidrx rollback` can put them back (cidrx.engine.undo)."""

    def before(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs: ...


def parse_ref(value: str) -> tuple[str, str] | None:
    """`("step-id", "key")` when `value` is a whole-string `${step-id.key}` reference, else None."""
    m = _REF.fullmatch(value)
    return (m.group(1), m.group(2)) if m else None


def _lookup(ref: str, step_id: str, path: str, outputs: dict[str, Outputs]) -> Any:
    if step_id not in outputs:
        raise CloudError(f"parameter {ref} refers to step {step_id!r}, which has no recorded outputs")
    value: Any = outputs[step_id]
    # A key with dots is first tried whole, then as a path into nested outputs.
    if isinstance(value, dict) and path in value:
        return value[path]
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            raise CloudError(f"parameter {ref}: step {step_id!r} has no output {path!r}")
        value = value[part]
    return value


def _resolve(value: Any, outputs: dict[str, Outputs]) -> Any:
    if isinstance(value, str):
        ref = parse_ref(value)
        return value if ref is None else _lookup(value, ref[0], ref[1], outputs)
    if isinstance(value, dict):
        return {k: _resolve(v, outputs) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_resolve(v, outputs) for v in value]
    return value


def resolve_params(params: dict[str, Any], outputs: dict[str, Outputs]) -> dict[str, Any]:
    """A copy of `params` with every `"${step-id.key}"` string (in nested lists/dicts too) replaced by
    that step's output. Only whole strings are references. An unresolvable one raises CloudError: it
    means a plan bug or a resume whose earlier step's outputs could not be found again."""
    resolved: dict[str, Any] = _resolve(params, outputs)
    return resolved
