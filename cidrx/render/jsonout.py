"""Machine-readable output: the versioned `cidrx.diagnosis/v1` document (docs/schemas) and plans as the
exact JSON of their plan file.

Named jsonout, not json, so that `import json` means the standard library everywhere in this package.
Every key is always present (null when not applicable) so consumers can rely on the shape.
"""

from __future__ import annotations

from typing import Any

from cidrx.model import codec
from cidrx.model.findings import Capacity, Diagnosis, Finding, Severity
from cidrx.model.plan import Plan, content_digest


def capacity_doc(c: Capacity) -> dict[str, Any]:
    return {
        "kind": c.kind,
        "name": c.name,
        "cidr": c.cidr,
        "size": c.size,
        "used": c.used,
        "free": c.free,
        "utilization": c.utilization,
        "max_nodes": c.max_nodes,
        "nodes": c.nodes,
        "nodes_fit": c.nodes_fit,
        "zone": c.zone,
        "note": c.note,
        "extra": dict(c.extra),
        "unit": c.unit,
    }


def finding_doc(f: Finding) -> dict[str, Any]:
    return {
        "id": f.id,
        "severity": f.severity.value,
        "subject": f.subject,
        "summary": f.summary,
        "evidence": list(f.evidence),
        "remediation": f.remediation,
    }


def diagnosis_doc(d: Diagnosis) -> dict[str, Any]:
    counts = {s.value: d.counts.get(s.value, sum(1 for f in d.findings if f.severity is s)) for s in Severity}
    return {
        "schema": d.schema,
        "target": codec.to_builtins(d.target),
        "snapshot_fingerprint": d.snapshot_fingerprint,
        "capacity": [capacity_doc(c) for c in d.capacity],
        "findings": [finding_doc(f) for f in d.findings],
        "counts": counts,
        "taken_at": d.taken_at,
    }


def render_diagnosis(d: Diagnosis) -> str:
    return codec.dumps(diagnosis_doc(d))


def render_plan(plan: Plan) -> str:
    """Byte for byte what `save_plan` writes, so `-o json` output can be saved and applied."""
    return codec.dumps(plan)


def apply_doc(
    plan: Plan,
    results: list[tuple[str, str, dict[str, Any]]],
    verification: dict[str, Any] | None,
    unverified: str | None,
) -> dict[str, Any]:
    """The `cidrx.apply/v1` document `--apply ... -o json` prints: every step's status and outputs, the
    before -> after comparison of a fresh snapshot (null, with `verification_error`, when it could not be
    taken) and the plan's notes, what is left to do by hand."""
    return {
        "schema": "cidrx.apply/v1",
        "plan_id": plan.plan_id,
        "content_digest": content_digest(plan),
        "target": codec.to_builtins(plan.target),
        "steps": [{"step": step, "status": status, "outputs": outputs} for step, status, outputs in results],
        "verification": verification,
        "verification_error": unverified,
        "next_steps": list(plan.notes),
    }
