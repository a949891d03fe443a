"""Smoke test of the benchmarks in bench/ (docs/performance.md): each script runs end to end in a tiny size and
prints its table. No timing is asserted here (timings belong to `bench/run`, never to tests); what is
asserted is what must hold at any size: the request pattern is O(pages) with no per-object reads, the free-
range search agrees with the naive one, and the start-up commands import no cloud SDK.
"""

from __future__ import annotations

import pytest

from bench import bench_diagnose, bench_exporter, bench_netmath, bench_startup
from bench.common import kube_resource
from bench.estate import KubeEstate, Sizes


def test_estate_scales_and_is_consistent() -> None:
    estate = KubeEstate(Sizes.at(0.01))
    kinds: dict[str, int] = {}
    for obj in estate.objects():
        kinds[obj["kind"]] = kinds.get(obj["kind"], 0) + 1
    assert kinds["Node"] == 20 and kinds["Event"] == 200 and kinds["IPAMBlock"] == 41
    assert kinds["Pod"] == 600 + 1  # and the kube-controller-manager pod


def test_kube_resource_names_requests() -> None:
    assert kube_resource("/api/v1/pods") == ("pods", False)
    assert kube_resource("/api/v1/namespaces/kube-system/configmaps/kubeadm-config") == ("configmaps", True)
    assert kube_resource("/apis/crd.projectcalico.org/v1/ipamblocks") == ("ipamblocks.crd.projectcalico.org", False)
    assert kube_resource("/apis") == ("discovery", False)


def test_diagnose_bench_smoke(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_diagnose.main(["--scale", "0.01", "--repeat", "1"]) == 0  # 1: a per-object read, or too many pages
    out = capsys.readouterr().out
    assert "kube: cidrx diagnose" in out and "gke: cidrx collect" in out
    assert "GET pods" in out and "compute.subnetworks.aggregatedList" in out
    assert "eks: cidrx collect" in out and "ec2:DescribeSubnets" in out and "eks:DescribeCluster" in out


def test_diagnose_growth_smoke() -> None:
    rows, problems = bench_diagnose.growth_rows(0.01, 1)
    assert problems == []
    assert [r[0] for r in rows] == ["0.5x", "1x", "2x"] and [r[1] for r in rows] == [300, 600, 1200]
    assert rows[0][-1] == "" and all(" s, " in r[-1] and r[-1].endswith(" MB") for r in rows[1:])


def test_netmath_bench_smoke(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_netmath.main(["--scale", "0.01", "--repeat", "1"]) == 0
    assert "first free /22 among 200 ranges" in capsys.readouterr().out


def test_startup_bench_smoke(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_startup.main(["--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "cidrx --help" in out and "none" in out


def test_exporter_bench_smoke(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_exporter.main(["--scale", "0.01", "--cycles", "4"]) == 0  # 1: a failed collection, or exit != 0
    out = capsys.readouterr().out
    assert "RSS after 4 collections (MB)" in out and "exit code after SIGTERM" in out
