"""Plan: the ordered, idempotent steps that carry out a fix, as a reviewable JSON file.

The digest covers the whole document except the digest itself (notes, summary and created_at are what a
reviewer reads, so they are sealed too), so a hand-edited plan is refused (exit 2), and every resource
apply creates is tagged with `plan_id` (the digest's first 16 hex digits, short enough for a GCE label)
so a resumed apply finds what it made even when the journal is gone.

`content_digest` covers only what the plan would do: its target, basis and steps. Two plans made from the
same estate at different times (or with different notes) share it, so an hourly CI job can tell "the same
plan as yesterday" from a new one. It is sealed by the digest like every other field; a plan written before
it existed has none, and `content_digest()` computes it for such a file. Review comments never go into the
sealed document: they live beside it, in `PLAN.json.notes` (`notes_path`), which cidrx never digests.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cidrx.errors import InvalidInput
from cidrx.model import codec, files
from cidrx.model.target import Target

if TYPE_CHECKING:
    from cidrx.model.snapshot import Snapshot

PLAN_SCHEMA = "cidrx.plan/v1"
DIGEST_TAG = "cidrx.io/plan"  # tag/label key carrying plan_id on created resources


@dataclass(frozen=True)
class Step:
    id: str
    action: str
    params: dict[str, Any]
    description: str
    depends_on: tuple[str, ...] = ()
    permissions: tuple[str, ...] = ()


@dataclass(frozen=True)
class Plan:
    target: Target
    created_at: str
    snapshot_fingerprint: str
    strategy: str
    basis: dict[str, Any]
    steps: tuple[Step, ...]
    notes: tuple[str, ...] = ()
    summary: dict[str, Any] = field(default_factory=dict)
    content_digest: str = ""
    digest: str = ""
    schema: str = PLAN_SCHEMA

    @property
    def plan_id(self) -> str:
        return self.digest[:16]

    def step(self, step_id: str) -> Step:
        for s in self.steps:
            if s.id == step_id:
                return s
        raise KeyError(step_id)


def digest_of(plan: Plan) -> str:
    """sha256 of the canonical JSON of the whole plan document but its `digest` field, taken over the
    document as written (JSON arrays, where the model holds tuples), so anyone can recompute it from the file."""
    document = json.loads(codec.dumps(plan))
    document.pop("digest", None)
    return codec.sha256_of(document)


def _digest_of_older_cidrx(plan: Plan) -> str:
    """The digest cidrx wrote before it sealed the whole document (target, strategy, basis, steps only);
    kept to tell a plan made by an older cidrx from an edited one."""
    return codec.sha256_of({"target": plan.target, "strategy": plan.strategy, "basis": plan.basis, "steps": plan.steps})


def content_digest_of(plan: Plan) -> str:
    """sha256 of the canonical JSON of what the plan would do: {target, basis, steps} (no time, no notes)."""
    return codec.sha256_of({"target": plan.target, "basis": plan.basis, "steps": plan.steps})


def content_digest(plan: Plan) -> str:
    """The plan's content digest: the sealed one, or for a plan written before the field existed, computed."""
    return plan.content_digest or content_digest_of(plan)


def notes_path(plan_path: str | Path) -> Path:
    """Where reviewers keep their notes on the plan at `plan_path`: beside it, never inside the sealed file."""
    return Path(f"{plan_path}.notes")


def seal(plan: Plan) -> Plan:
    with_content = dataclasses.replace(plan, content_digest=content_digest_of(plan))
    return dataclasses.replace(with_content, digest=digest_of(with_content))


def seal_plan(
    snapshot: Snapshot,
    created_at: str,
    strategy: str,
    basis: dict[str, Any],
    steps: Iterable[Step],
    notes: Iterable[str] = (),
    summary: dict[str, Any] | None = None,
) -> Plan:
    """The sealed plan of `strategy` made from `snapshot`: what every provider's planner ends with."""
    return seal(
        Plan(
            target=snapshot.target,
            created_at=created_at,
            snapshot_fingerprint=snapshot.fingerprint,
            strategy=strategy,
            basis=basis,
            steps=tuple(steps),
            notes=tuple(notes),
            summary=summary or {},
        )
    )


def load_plan(path: str | Path) -> Plan:
    p = Path(path)
    data = codec.read_document(p, "plan")
    codec.check_schema(data, PLAN_SCHEMA, "plan", f"plan {p}")
    plan = codec.loads(data, Plan, what=f"plan {p}")
    if plan.schema != PLAN_SCHEMA:
        raise InvalidInput(f"plan {p} has schema {plan.schema!r}; this cidrx applies {PLAN_SCHEMA}")
    if not plan.digest:
        raise InvalidInput(f"plan {p} has no digest; make it with --plan")
    if plan.digest != digest_of(plan):
        if plan.digest == _digest_of_older_cidrx(plan):
            raise InvalidInput(
                f"plan {p} was made by an older cidrx: its digest does not cover the whole plan (notes, summary, "
                "created_at), so this cidrx cannot tell it was not edited; make a new one with --plan"
            )
        raise InvalidInput(f"plan {p} was modified after it was made (digest mismatch); make a new one with --plan")
    if plan.content_digest and plan.content_digest != content_digest_of(plan):
        raise InvalidInput(
            f"plan {p} was modified after it was made (content digest mismatch); make a new one with --plan"
        )
    ids = [s.id for s in plan.steps]
    if len(set(ids)) != len(ids):
        raise InvalidInput(f"plan {p} has duplicate step ids")
    for s in plan.steps:
        missing = [d for d in s.depends_on if d not in ids]
        if missing:
            raise InvalidInput(f"plan {p}: step {s.id} depends on unknown step(s) {', '.join(missing)}")
    return plan


def save_plan(plan: Plan, path: str | Path) -> None:
    files.write_file(path, codec.dumps(plan))
