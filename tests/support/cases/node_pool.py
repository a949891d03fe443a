"""Conformance case of GKE's `node-pool`: the GKE incident (a full pod range) in the loopback GCP fake."""

from __future__ import annotations

from tests.support.cases import Case, Interrupt
from tests.support.cases.gke_edits import overlap_on_another_subnet
from tests.support.cases.live import gke

CASE = Case(
    "node-pool",
    estate=gke(),
    stale=overlap_on_another_subnet,
    interrupt=Interrupt("gcp", "POST", "/nodePools"),
)
