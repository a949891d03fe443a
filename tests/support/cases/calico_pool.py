"""Conformance case of `calico-pool`: the Calico incident (every block of the pool claimed) in the fake
Kubernetes API server."""

from __future__ import annotations

from tests.support.cases import Case, Interrupt
from tests.support.cases import calico as calico_cases
from tests.support.cases.kube_edits import calico_overlapping_pool
from tests.support.cases.live import k8s

CASE = Case(
    "calico-pool",
    estate=k8s(lambda: calico_cases.incident().objects()),
    stale=calico_overlapping_pool,
    interrupt=Interrupt("kube", "POST", "/ippools"),
)
