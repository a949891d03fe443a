"""The toy IPAM's findings: one kind, declared where it is raised."""

from __future__ import annotations

from cidrx.model.findings import FindingKind, Severity

POOL_FULL = FindingKind(
    "TOY-POOL-FULL",
    "Every address of a toy pool is handed out: new pods on the toy network get none.",
    (Severity.CRITICAL,),
)
KINDS = (POOL_FULL,)
