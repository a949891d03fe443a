"""Conformance case of `calico-reclaim`: the Calico incident (leaked addresses, an empty block) in the fake
Kubernetes API server."""

from __future__ import annotations

from tests.support.cases import Case, Interrupt
from tests.support.cases import calico as calico_cases
from tests.support.cases.kube_edits import calico_pod_back
from tests.support.cases.live import k8s

CASE = Case(
    "calico-reclaim",
    estate=k8s(lambda: calico_cases.incident().objects()),
    stale=calico_pod_back,
    interrupt=Interrupt("kube", "PUT", "/ipamblocks/"),
)
