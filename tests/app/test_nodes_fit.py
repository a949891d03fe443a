"""Nodes that still fit, for every provider and IPAM, on the bundled example snapshots (known answers worked
out from each example), and as the `cidrx_capacity_nodes_fit` series."""

from __future__ import annotations

from pathlib import Path

import pytest

from cidrx.app.diagnose import analyze
from cidrx.model.snapshot import load_snapshot
from cidrx.render.prometheus import render_diagnosis

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize(
    ("example", "kind", "name", "fit"),
    [
        ("gke-demo-ip", "pod-range", "pods", 0),  # 4 of 4 node blocks taken
        ("gke-shared-vpc", "node-pool", "shop-pool", 0),  # pod slots free, but no /24 left for a node
        ("calico-kubevirt", "calico-pool", "default-ipv4-ippool", 0),  # 4 of 4 blocks claimed
        ("calico-kubevirt", "calico-pool", "lb", 4),  # no block claimed yet
        ("calico-kubevirt", "calico-blocks", "lb", 4),
        # 249 free; live pods on lab-worker-1 hold 3 addresses of the range (api-0, starting-0, new-0): 249 // 3
        ("whereabouts-named-network", "whereabouts-pool", "kube-system/blue-10.40.0.0-24", 83),
        ("whereabouts-stale", "whereabouts-pool", "kube-system/10.10.0.0-28", 0),
        ("eks-karpenter", "karpenter-nodepool", "default", 0),
    ],
)
def test_nodes_fit_on_the_examples(example: str, kind: str, name: str, fit: int) -> None:
    d = analyze(load_snapshot(EXAMPLES / f"{example}.snapshot.json"))
    (row,) = [c for c in d.capacity if (c.kind, c.name) == (kind, name)]
    assert row.nodes_fit == fit


def test_network_space_has_no_nodes_fit_and_the_series_follows_the_rows() -> None:
    d = analyze(load_snapshot(EXAMPLES / "gke-demo-ip.snapshot.json"))
    assert all(c.nodes_fit is None for c in d.capacity if c.kind == "network-space")
    text = render_diagnosis(d)
    series = [line for line in text.splitlines() if line.startswith("cidrx_capacity_nodes_fit{")]
    assert len(series) == sum(1 for c in d.capacity if c.nodes_fit is not None) == 2
    assert all(line.endswith(" 0") for line in series)
