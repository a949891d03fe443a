"""Conformance case of `whereabouts-reclaim`: a node crashed, its pods' Whereabouts reservations stayed."""

from __future__ import annotations

from tests.support.cases import Case, Interrupt
from tests.support.cases import whereabouts as wc
from tests.support.cases.kube_edits import whereabouts_pod_back_pending
from tests.support.cases.live import k8s

CASE = Case(
    "whereabouts-reclaim",
    estate=k8s(wc.crashed_node_objects),
    stale=whereabouts_pod_back_pending,
    interrupt=Interrupt("kube", "DELETE", "/overlappingrangeipreservations/"),
)
