"""`cidrx exporter` as a real process against the fake Kubernetes API server and moto.

Each test starts the exporter (interval 0.2 s), scrapes it at least twice, takes the API away (the server
stops; its port refuses connections) and checks that `cidrx_up` drops to 0 while /metrics still serves the
last good figures, brings the API back on the same port and checks `cidrx_up` returns to 1, then stops the
exporter with SIGTERM (exit 0). The figures are checked against the worlds' known contents and against
`diagnose -o prometheus` (both come from one function).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from cidrx.cli import cli
from tests.support.cases import calico as calico_cases
from tests.support.cases import whereabouts as wc
from tests.support.exporter_harness import Exporter, Scrape, parse
from tests.support.fakes.kube_server import FakeKubeServer

INTERVAL = "0.2"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
POOL = {"kind": "calico-pool", "name": "default-ipv4-ippool"}


@pytest.fixture
def exporters() -> Iterator[list[Exporter]]:
    started: list[Exporter] = []
    yield started
    for e in started:
        e.close()


def up(s: Scrape) -> float:
    return s.value("cidrx_up")


def test_calico_world_scraped_kept_through_an_outage_and_recovered(
    kube_server: FakeKubeServer, kubeconfig_path: Path, tmp_path: Path, exporters: list[Exporter]
) -> None:
    kube_server.put_many(calico_cases.incident().objects())
    e = Exporter(["--k8s", "--kubeconfig", str(kubeconfig_path), "--interval", INTERVAL], tmp_path / "err")
    exporters.append(e)

    first = e.wait("a successful collection", lambda s: s.samples.get(("cidrx_up", frozenset())) == 1)
    second = e.wait("a second collection", lambda s: e.collections(s) >= e.collections(first) + 1)
    assert up(second) == 1 and second.value("cidrx_collection_failures_total") == 0
    assert second.value("cidrx_target_up") == 1
    # The incident: 3 of node-1's addresses are used by node-3's pods, 2 are held for pods that are gone.
    assert second.value("cidrx_capacity_borrowed", **POOL) == 3
    assert second.value("cidrx_capacity_leaked", **POOL) == 2
    assert second.value("cidrx_capacity_blocks_claimed", **POOL) == 4
    assert second.value("cidrx_findings", severity="critical") == 1
    assert second.value("cidrx_finding", id="CALICO-LEAKED-IP", subject="block 10.0.0.0/26") == 1
    assert second.value("cidrx_last_success_timestamp_seconds") > 0
    assert second.data() == first.data()

    port = kube_server.port
    kube_server.stop()
    down = e.wait("cidrx_up 0 after the API went away", lambda s: up(s) == 0)
    assert down.data() == second.data(), "the last good figures are kept"
    assert down.value("cidrx_target_up") == 0
    assert down.value("cidrx_collection_failures_total") >= 1
    assert down.value("cidrx_last_success_timestamp_seconds") == second.value("cidrx_last_success_timestamp_seconds")
    status, body = e.get("/healthz")
    assert (status, body) == (200, "ok\n"), "the process is healthy; only the target is not"

    kube_server.start(port)
    back = e.wait("cidrx_up 1 after the API came back", lambda s: up(s) == 1)
    assert back.data() == second.data()
    assert e.terminate() == 0
    err = e.log.read_text().splitlines()
    failed = [line for line in err if "collection failed" in line]
    assert failed and all(line.startswith("cidrx exporter: collection failed: cannot read k8s:") for line in failed)
    assert "Traceback" not in e.log.read_text()
    assert err[-1] == "cidrx exporter: stopped"


def two_context_kubeconfig(path: Path, servers: dict[str, FakeKubeServer]) -> Path:
    docs = [s.kubeconfig_dict(context=name) for name, s in servers.items()]
    config = dict(docs[0])
    pairs = list(zip(servers, docs, strict=True))
    config["clusters"] = [{"name": n, "cluster": d["clusters"][0]["cluster"]} for n, d in pairs]
    config["users"] = [{"name": n, "user": d["users"][0]["user"]} for n, d in pairs]
    config["contexts"] = [{"name": n, "context": {"cluster": n, "user": n}} for n in servers]
    path.write_text(yaml.safe_dump(config))
    return path


def test_fleet_labels_each_cluster_and_keeps_the_unreachable_ones_figures(
    tmp_path: Path, exporters: list[Exporter]
) -> None:
    with FakeKubeServer() as calico, FakeKubeServer() as wb:
        calico.put_many(calico_cases.incident().objects())
        wb.put_many(wc.crashed_node_objects())
        config = two_context_kubeconfig(tmp_path / "kubeconfig", {"calico": calico, "wb": wb})
        e = Exporter(["--k8s", "--kubeconfig", str(config), "--all-contexts", "--interval", INTERVAL], tmp_path / "err")
        exporters.append(e)
        good = e.wait("both clusters read", lambda s: s.samples.get(("cidrx_up", frozenset())) == 1)
        assert good.value("cidrx_capacity_borrowed", target="k8s:calico/calico") == 3
        assert good.value("cidrx_capacity_stale", target="k8s:wb/wb", kind="whereabouts-pool") == 6
        assert {ls for n, ls in good.samples if n == "cidrx_target_up"} == {
            frozenset({("target", "k8s:calico/calico")}),
            frozenset({("target", "k8s:wb/wb")}),
        }

        port = wb.port
        wb.stop()
        down = e.wait("the whereabouts cluster marked down", lambda s: up(s) == 0)
        assert down.value("cidrx_target_up", target="k8s:wb/wb") == 0
        assert down.value("cidrx_target_up", target="k8s:calico/calico") == 1
        assert down.value("cidrx_capacity_stale", target="k8s:wb/wb", kind="whereabouts-pool") == 6
        wb.start(port)
        e.wait("both clusters read again", lambda s: up(s) == 1)
        assert e.terminate() == 0
    assert "collection failed for 1 cluster(s): k8s:wb/wb: " in e.log.read_text()


@pytest.fixture
def moto_world(tmp_path: Path) -> Iterator[tuple[Any, list[str], dict[str, str]]]:
    """The EKS incident in a moto server on a loopback port, with its cluster in a fake API server."""
    import boto3
    from moto.server import ThreadedMotoServer

    from tests.support.estates.eks import FAKE_AWS_ENV, REGION, build_incident
    from tests.support.estates.eks_cluster import incident_server

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    env = {**FAKE_AWS_ENV, "AWS_ENDPOINT_URL": f"http://{host}:{port}"}
    with pytest.MonkeyPatch.context() as mp:
        for name, value in env.items():
            mp.setenv(name, value)
        for name in list(os.environ):
            if name.startswith("CIDRX_") or name in ("KUBECONFIG", "AWS_PROFILE"):
                mp.delenv(name)
        session = boto3.Session(region_name=REGION)
        world = build_incident(session.client("ec2"), session.client("eks"), region=REGION, cluster="demo-ip")
        kube, _, _ = incident_server(world)
        kubeconfig = kube.kubeconfig(tmp_path / "kubeconfig")
        target = ["--eks", "--region", REGION, "--cluster", "demo-ip", "--kubeconfig", str(kubeconfig)]
        holder = {"server": server}
        try:
            yield holder, target, env
        finally:
            holder["server"].stop()
            kube.stop()


def test_eks_through_moto_and_an_aws_outage(
    moto_world: tuple[Any, list[str], dict[str, str]], tmp_path: Path, exporters: list[Exporter]
) -> None:
    from moto.server import ThreadedMotoServer

    holder, target, env = moto_world
    e = Exporter([*target, "--interval", INTERVAL], tmp_path / "err", env)
    exporters.append(e)
    first = e.wait("a successful collection", lambda s: s.samples.get(("cidrx_up", frozenset())) == 1)
    good = e.wait("a second collection", lambda s: e.collections(s) > e.collections(first))
    label = "eks:ap-southeast-2/demo-ip"
    assert good.value("cidrx_capacity_free_addresses", kind="subnet", cidr="10.0.208.0/27", target=label) == 0
    assert good.value("cidrx_capacity_autoscaling_max_nodes", kind="nodegroup") == 4
    assert not [k for k in good.samples if k[0] == "cidrx_capacity_max_nodes" and ("kind", "nodegroup") in k[1]]

    host, port = holder["server"].get_host_and_port()
    holder["server"].stop()
    down = e.wait("cidrx_up 0 while AWS is unreachable", lambda s: up(s) == 0)
    assert down.data() == good.data()
    holder["server"] = ThreadedMotoServer(ip_address=host, port=port, verbose=False)
    holder["server"].start()
    e.wait("cidrx_up 1 when AWS answers again", lambda s: up(s) == 1)
    assert e.terminate() == 0


def test_serves_what_diagnose_prints_and_documents_every_series(tmp_path: Path, exporters: list[Exporter]) -> None:
    """Snapshot targets: the exporter's capacity and finding samples are exactly `diagnose -o prometheus`'s,
    and docs/metrics.md documents every series either serves (and nothing else)."""
    root = EXAMPLES.parent  # the repository

    served: set[str] = set()
    for example in sorted(EXAMPLES.glob("*.snapshot.json")):
        e = Exporter(["--snapshot", str(example), "--interval", INTERVAL], tmp_path / f"{example.stem}.err")
        exporters.append(e)
        s = e.wait("a collection", lambda s: s.samples.get(("cidrx_up", frozenset())) == 1)
        text = CliRunner().invoke(cli, ["diagnose", "--snapshot", str(example), "-o", "prometheus"]).output
        assert s.data() == parse(text).data(), example.name
        served |= s.names()
        assert e.terminate() == 0
    documented = set(metric_names_in(root / "docs" / "metrics.md"))
    assert served - documented == set(), "served but not in docs/metrics.md"
    assert documented - served == set(), "in docs/metrics.md but served by no example"


def metric_names_in(path: Path) -> list[str]:
    import re

    return re.findall(r"^\| `(cidrx_[a-z_]+)`", path.read_text(), re.MULTILINE)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--listen", "nowhere"], "--listen wants HOST:PORT"),
        (["--listen", "127.0.0.1:70000"], "--listen wants HOST:PORT"),
        (["--listen", "::1:9877"], "put an IPv6 address in brackets"),
        (["--interval", "0"], "--interval wants seconds"),
        (["--interval", "soon"], "--interval wants seconds"),
        (["--snapshot", "-"], "re-reads its snapshot every interval"),
        (["--all-contexts"], "cannot be combined with --all-clusters"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(args: list[str], message: str) -> None:
    example = str(EXAMPLES / "calico-borrowing.snapshot.json")
    snapshot = [] if "--snapshot" in args else ["--snapshot", example]
    result = CliRunner().invoke(cli, ["exporter", *snapshot, *args])
    assert result.exit_code == 2, result.output
    lines = result.output.splitlines()
    assert len(lines) == 1 and lines[0].startswith("cidrx: error: ") and message in lines[0], result.output


def test_an_address_in_use_is_exit_2(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        example = str(EXAMPLES / "calico-borrowing.snapshot.json")
        result = CliRunner().invoke(cli, ["exporter", "--snapshot", example, "--listen", f"127.0.0.1:{port}"])
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"cidrx: error: --listen: cannot listen on 127.0.0.1:{port}: ")


def test_next_wait_is_the_jittered_interval_and_zero_after_an_overrun() -> None:
    from cidrx.app.exporter import JITTER, next_wait

    assert next_wait(10.0, started=100.0, now=101.0, rng=lambda: 0.5) == 9.0
    assert next_wait(10.0, started=100.0, now=100.0, rng=lambda: 0.0) == pytest.approx(10.0 * (1 - JITTER))
    assert next_wait(10.0, started=100.0, now=100.0, rng=lambda: 1.0) == pytest.approx(10.0 * (1 + JITTER))
    assert next_wait(10.0, started=100.0, now=125.0, rng=lambda: 0.5) == 0.0  # overran: the next starts at once


def test_state_keeps_last_good_per_cluster_and_drops_clusters_no_longer_listed() -> None:
    from cidrx.app.diagnose import analyze
    from cidrx.app.exporter import Outcome, State
    from cidrx.model.snapshot import load_snapshot

    eks = analyze(load_snapshot(EXAMPLES / "eks-demo-ip.snapshot.json"))
    gke = analyze(load_snapshot(EXAMPLES / "gke-demo-ip.snapshot.json"))
    a, b = eks.target.label(), gke.target.label()

    def samples(state: State) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for f in state.families():
            for labels, value in f.samples:
                target = dict(labels).get("target")
                if target and f.name == "cidrx_target_up":
                    out.setdefault("up" if value else "down", set()).add(target)
                elif target:
                    out.setdefault("data", set()).add(target)
        return out

    state = State()
    assert state.record(Outcome((eks, gke), (), (a, b)), 1.0, 10.0)
    assert samples(state) == {"up": {a, b}, "data": {a, b}}
    assert not state.record(Outcome((eks,), ((b, "denied"),), (a, b)), 1.0, 20.0)
    assert samples(state) == {"up": {a}, "down": {b}, "data": {a, b}}, "b keeps its last good figures"
    assert state.record(Outcome((eks,), (), (a,)), 1.0, 30.0)
    assert samples(state) == {"up": {a}, "data": {a}}, "b is no longer listed: gone"
    state.record_failure(2.0)
    assert samples(state) == {"down": {a}, "data": {a}}
    status = {f.name: f.samples for f in state.families() if not f.name.startswith("cidrx_capacity")}
    assert status["cidrx_up"] == (((), 0.0),)
    assert status["cidrx_last_success_timestamp_seconds"] == (((), 30.0),)
    assert status["cidrx_collection_duration_seconds"] == (((), 2.0),)
    assert (status["cidrx_collections_total"], status["cidrx_collection_failures_total"]) == (
        (((), 4.0),),
        (((), 2.0),),
    )
    types = {f.name: f.type for f in state.families()}
    assert types["cidrx_collections_total"] == types["cidrx_collection_failures_total"] == "counter"
    # the old gauge names stay for one release (docs/metrics.md marks them deprecated)
    assert (status["cidrx_collections"], status["cidrx_collection_failures"]) == ((((), 4.0),), (((), 2.0),))
    assert types["cidrx_collections"] == "gauge"
