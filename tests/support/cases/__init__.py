"""The conformance case of every registered strategy: one module per strategy, named after it.

Why it exists: tests/conformance runs each strategy `cidrx.registry.strategies()` lists through plan, drift,
apply, resume, rollback and permissions, so the list of strategies comes from the registry and never from a
hand-kept table. What cannot be derived from a declaration is how to build a live estate the strategy has
work to do in, and what someone else would change in it to make a plan stale: each strategy's module here
(`tests/support/cases/custom_networking.py` for `custom-networking`) says that in one `CASE`. A strategy
without a module fails the conformance suite, naming the module to add.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support.cases.live import Live

PHASES = ("plan", "drift", "apply", "resume", "rollback", "permissions")


class MissingCase(LookupError):
    """A registered strategy whose case module is missing."""


@dataclass(frozen=True)
class Interrupt:
    """The write right after which an apply is interrupted: `where` ("aws", "gcp", "kube") it goes, and the AWS
    operation name, or the HTTP method and a fragment of the path."""

    where: str
    method: str
    path_contains: str = ""


@dataclass(frozen=True)
class Case:
    """How to run one strategy for real.

    estate: builds a live estate in which `plan_args` make a plan with steps (see tests/support/cases/live.py).
    plan_args: what `--plan` is given after the target besides `--out` (default: `--strategy NAME` for an
        expand strategy, `--ipam OWNER` for a reclaim one).
    stale: plays someone else between `--plan` and `--apply`, changing the estate so the plan no longer holds;
        returns the fragments the refusal must name.
    interrupt: the write right after which an apply is stopped by Ctrl-C (the resume phase).
    skip: phase -> why that phase cannot run for this strategy (reported as a skip with the reason).
    """

    strategy: str
    estate: Callable[[Path, pytest.MonkeyPatch], contextlib.AbstractContextManager[Live]]
    stale: Callable[[Any, PlanDoc], list[str]]
    interrupt: Interrupt
    plan_args: tuple[str, ...] = ()
    skip: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = set(self.skip) - set(PHASES)
        assert not unknown, f"{self.strategy}: unknown phases {sorted(unknown)} (phases: {PHASES})"


@dataclass(frozen=True)
class PlanDoc:
    """A plan file as `--plan` wrote it (the public `cidrx.plan/v1` document), for the cases' edits."""

    path: Path
    doc: dict[str, Any]

    @property
    def basis(self) -> dict[str, Any]:
        basis: dict[str, Any] = self.doc["basis"]
        return basis

    @property
    def steps(self) -> list[dict[str, Any]]:
        steps: list[dict[str, Any]] = self.doc["steps"]
        return steps


def module_name(strategy: str) -> str:
    return f"{__name__}.{strategy.replace('-', '_')}"


def case_for(strategy: str) -> Case:
    """The case `strategy` declares; MissingCase naming the module to add when it declares none."""
    name = module_name(strategy)
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name:
            raise
        where = name.replace(".", "/") + ".py"
        raise MissingCase(
            f"strategy {strategy} declares no conformance case: add one in tests/support/cases/ ({where})"
        ) from None
    case = getattr(module, "CASE", None)
    if not isinstance(case, Case) or case.strategy != strategy:
        raise MissingCase(f"{name} must define CASE = Case({strategy!r}, ...)")
    return case
