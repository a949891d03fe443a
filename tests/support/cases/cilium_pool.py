"""Conformance case of `cilium-pool`: a cluster-pool cluster whose every node CIDR is held, in the fake
Kubernetes API server with the cilium-operator simulation."""

from __future__ import annotations

from typing import Any

from tests.support.cases import Case, Interrupt, PlanDoc
from tests.support.estates import cilium


def someone_appends(live: Any, plan: PlanDoc) -> list[str]:
    """Someone (a helm upgrade) appends another range to the cluster pool after the plan."""
    live.kube.put(cilium.config(cidrs="10.0.0.0/22 172.20.0.0/16"))
    return ["cluster-pool-ipv4-cidr is now '10.0.0.0/22 172.20.0.0/16'"]


CASE = Case(
    "cilium-pool",
    estate=cilium.k8s(cilium.cluster_pool_full),
    stale=someone_appends,
    interrupt=Interrupt("kube", "PATCH", "/configmaps/cilium-config"),
)
