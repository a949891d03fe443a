"""Fleet mode of `cidrx diagnose`: many clusters at once, with the real clients against the fakes.

EKS: three clusters in moto's server (the incident, a roomy one, one whose subnets and VPC were deleted
after it was made) listed with ListClusters; the incident's Kubernetes side is found through the
kubeconfig context named by its ARN (the account id from STS). GKE: the incident and a roomy cluster in
another location of the same project, listed across all locations. Kubernetes: a kubeconfig whose
contexts point at fake API servers, one of them unreachable. Each time: one combined document, every
cluster in it, the worst exit code, and the cluster that cannot be read reported in its row.

Parallelism is checked by holding each cluster's first API request until the test lets it go: with
`--parallel 2` a third cluster's collection never starts while two are held.
"""

from __future__ import annotations

import itertools
import json
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import Result

from cidrx.app import fleet
from cidrx.cli.diagnose import DEFAULT_PARALLEL, MAX_PARALLEL
from cidrx.errors import EXIT_ACCESS, EXIT_FINDINGS, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, AccessDenied
from cidrx.model import fleet as fleet_model
from cidrx.model.findings import Diagnosis, make_diagnosis
from cidrx.model.target import Target
from cidrx.providers.eks.fleet import eks_context
from cidrx.providers.gke.fleet import gke_context
from tests.support.cases import whereabouts as wc
from tests.support.cli import run as cli_run
from tests.support.estates import gke as gke_world
from tests.support.estates.eks import ACCOUNT, REGION, build_incident, fake_aws_env, moto_server
from tests.support.estates.eks_cluster import incident_server, shared_botocore_loader
from tests.support.fakes.gcp_server import FakeGcp
from tests.support.fakes.kube_server import FAKE_TOKEN, FakeKubeServer, RequestRecord
from tests.support.ports import refused_port
from tests.support.prometheus_text import parse


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("CIDRX_") or name == "KUBECONFIG":
            monkeypatch.delenv(name)


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    # Wide enough that every summary row stays on one line (the table fits COLUMNS).
    return cli_run(*args, env={"COLUMNS": "250", **(env or {})})


def fleet_json(result: Result) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(result.stdout)
    assert doc["schema"] == "cidrx.fleet/v1"
    return doc


def by_cluster(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {m["target"]["cluster"]: m for m in doc["clusters"]}


def finding_ids(member: dict[str, Any]) -> set[str]:
    return {f["id"] for f in member["diagnosis"]["findings"]}


def closed_port_url() -> str:
    """An http URL on 127.0.0.1 where nothing listens (connection refused)."""
    return f"http://127.0.0.1:{refused_port()}"


def write_kubeconfig(path: Path, servers: dict[str, str]) -> Path:
    """A kubeconfig with one context (and cluster) per name -> API server URL, in that order."""
    names = list(servers)
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": f"c-{n}", "cluster": {"server": url}} for n, url in servers.items()],
        "contexts": [{"name": n, "context": {"cluster": f"c-{n}", "user": "u"}} for n in names],
        "users": [{"name": "u", "user": {"token": FAKE_TOKEN}}],
        "current-context": names[0] if names else "",
    }
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.fixture
def servers() -> Iterator[Callable[..., FakeKubeServer]]:
    """Start fake API servers on demand; stopped (and checked for fake errors) at teardown."""
    started: list[FakeKubeServer] = []

    def start(**options: Any) -> FakeKubeServer:
        server = FakeKubeServer(**options).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
    for server in started:
        if server.errors:
            raise server.errors[0]


# --- pure parts ---------------------------------------------------------------------------------------


def test_worst_exit_ranks_unreadable_above_findings_and_bugs_above_all() -> None:
    assert fleet_model.worst_exit([]) == EXIT_OK
    assert fleet_model.worst_exit([EXIT_OK, EXIT_FINDINGS, EXIT_OK]) == EXIT_FINDINGS
    assert fleet_model.worst_exit([EXIT_FINDINGS, EXIT_ACCESS]) == EXIT_ACCESS
    assert fleet_model.worst_exit([EXIT_ACCESS, EXIT_USAGE, EXIT_FINDINGS]) == EXIT_ACCESS
    assert fleet_model.worst_exit([EXIT_ACCESS, EXIT_INTERNAL]) == EXIT_INTERNAL
    # 4 and 5 are not "internal": the answer does not depend on the order.
    assert fleet_model.worst_exit([5, EXIT_INTERNAL]) == fleet_model.worst_exit([EXIT_INTERNAL, 5]) == EXIT_INTERNAL
    assert fleet_model.worst_exit([4, 5]) == fleet_model.worst_exit([5, 4]) == 5
    assert fleet_model.worst_exit([EXIT_FINDINGS, 4]) == 4
    assert fleet_model.worst_exit([EXIT_INTERNAL, 130]) == 130  # unknown: surfaced, not hidden


EKS = Target("eks", "demo", region="ap-southeast-2")
ARN = f"arn:aws:eks:ap-southeast-2:{ACCOUNT}:cluster/demo"


def test_eks_context_by_exact_arn_when_the_account_is_known() -> None:
    other_account = "arn:aws:eks:ap-southeast-2:999999999999:cluster/demo"
    contexts = [other_account, ARN, "demo"]
    assert eks_context(EKS, contexts, ("aws", ACCOUNT)) == ARN
    # Another account's cluster of the same name is another cluster.
    assert eks_context(EKS, [other_account, "demo"], ("aws", ACCOUNT)) is None
    cn = Target("eks", "demo", region="cn-north-1")
    cn_arn = f"arn:aws-cn:eks:cn-north-1:{ACCOUNT}:cluster/demo"
    assert eks_context(cn, [cn_arn], ("aws-cn", ACCOUNT)) == cn_arn


def test_eks_context_without_the_account_takes_the_only_arn_of_that_region_and_name() -> None:
    assert eks_context(EKS, ["demo", ARN, ARN.replace("demo", "demo-2")], None) == ARN
    assert eks_context(EKS, [ARN.replace("ap-southeast-2", "us-east-1")], None) is None
    # Two accounts hold a "demo" there: which one is meant cannot be told.
    assert eks_context(EKS, [ARN, ARN.replace(ACCOUNT, "999999999999")], None) is None
    eksctl = "ci@demo.ap-southeast-2.eksctl.io"
    assert eks_context(EKS, [eksctl, "demo"], None) == eksctl
    assert eks_context(EKS, [eksctl], ("aws", ACCOUNT)) == eksctl
    # A bare name is never matched: same-named clusters in other regions often share VPC ranges.
    assert eks_context(EKS, ["demo"], None) is None


def test_gke_context_is_the_gcloud_name() -> None:
    t = Target("gke", "demo-ip", project="p1", location="australia-southeast1")
    assert gke_context(t, ["demo-ip", "gke_p1_australia-southeast1_demo-ip"]) == ("gke_p1_australia-southeast1_demo-ip")
    assert gke_context(t, ["demo-ip", "gke_p1_us-central1_demo-ip"]) is None


def test_the_account_is_asked_once_and_only_when_a_context_is_an_arn() -> None:
    asked: list[int] = []

    def account() -> tuple[str, str] | None:
        asked.append(1)
        return ("aws", ACCOUNT)

    targets = [EKS, Target("eks", "other", region="ap-southeast-2")]
    jobs = fleet.cloud_jobs(targets, ["lab", "gke_p_l_c"], no_kube=False, account=account)
    assert asked == []
    assert [j.kube_skipped for j in jobs] == [
        "cloud side only: no kubeconfig context named arn:aws:eks:ap-southeast-2:ACCOUNT:cluster/demo",
        "cloud side only: no kubeconfig context named arn:aws:eks:ap-southeast-2:ACCOUNT:cluster/other",
    ]
    jobs = fleet.cloud_jobs(targets, ["lab", ARN], no_kube=False, account=account)
    assert asked == [1]
    assert [(j.kube_context, j.kube_skipped) for j in jobs] == [
        (ARN, None),
        (None, f"cloud side only: no kubeconfig context named arn:aws:eks:ap-southeast-2:{ACCOUNT}:cluster/other"),
    ]
    skipped = fleet.cloud_jobs(targets, [ARN], no_kube=True, account=account)
    assert {(j.kube_context, j.kube_skipped) for j in skipped} == {(None, fleet_model.NO_KUBE_REASON)}
    assert asked == [1]


def _diagnosis(target: Target) -> Diagnosis:
    return make_diagnosis(target, "f" * 64, [], [])


def test_diagnose_fleet_keeps_order_turns_failures_into_members_and_reports_in_the_calling_thread() -> None:
    jobs = [fleet_model.Job(Target("k8s", n, context=n), n) for n in ("a", "denied", "bug", "b")]
    seen: list[tuple[str, str]] = []

    def diagnose(job: fleet_model.Job) -> Diagnosis:
        if job.target.cluster == "denied":
            raise AccessDenied("forbidden: cannot list nodes", hint="grant list on nodes")
        if job.target.cluster == "bug":
            raise KeyError("oops")
        return _diagnosis(job.target)

    result = fleet.diagnose_fleet(
        jobs,
        diagnose,
        lambda d: EXIT_FINDINGS if d.target.cluster == "b" else EXIT_OK,
        parallel=3,
        on_done=lambda m: seen.append((m.target.cluster, threading.current_thread().name)),
    )
    assert [m.target.cluster for m in result.clusters] == ["a", "denied", "bug", "b"]
    assert sorted(c for c, _ in seen) == ["a", "b", "bug", "denied"]
    assert {name for _, name in seen} == {threading.current_thread().name}
    a, denied, bug, b = result.clusters
    assert (a.exit_code, a.error, a.diagnosis is not None) == (EXIT_OK, None, True)
    assert (denied.exit_code, denied.error, denied.hint) == (
        EXIT_ACCESS,
        "forbidden: cannot list nodes",
        "grant list on nodes",
    )
    assert bug.exit_code == EXIT_INTERNAL and bug.error == "internal error: KeyError: 'oops'"
    assert b.exit_code == EXIT_FINDINGS
    assert result.exit_code == EXIT_INTERNAL
    assert result.counts == fleet_model.FleetCounts(clusters=4, unreadable=2, critical=0, warning=0, info=0)


def test_diagnose_fleet_never_runs_more_than_parallel_at_once() -> None:
    """Each job holds until the test releases it; with parallel=2 the third job starts only after one of
    the first two was let go, whatever the pool would otherwise do."""
    jobs = [fleet_model.Job(Target("k8s", str(i), context=str(i)), str(i)) for i in range(5)]
    cond = threading.Condition()
    running: set[str] = set()
    released: set[str] = set()
    most = 0

    def diagnose(job: fleet_model.Job) -> Diagnosis:
        nonlocal most
        name = job.target.cluster
        with cond:
            running.add(name)
            most = max(most, len(running))
            cond.notify_all()
            assert cond.wait_for(lambda: name in released, timeout=30)
            running.discard(name)
        return _diagnosis(job.target)

    def control() -> None:
        for i in range(len(jobs)):
            with cond:
                cond.wait_for(lambda: len(running - released) >= min(2, len(jobs) - len(released)), timeout=30)
                if i == 0:  # time for an unbounded pool to start a third job
                    cond.wait_for(lambda: len(running - released) > 2, timeout=0.2)
                released.add(sorted(running - released)[0])
                cond.notify_all()

    controller = threading.Thread(target=control)
    controller.start()
    result = fleet.diagnose_fleet(jobs, diagnose, lambda d: EXIT_OK, parallel=2)
    controller.join(timeout=30)
    assert most == 2
    assert result.exit_code == EXIT_OK and len(result.clusters) == 5


def test_the_cli_literals_are_the_fleet_constants() -> None:
    assert (DEFAULT_PARALLEL, MAX_PARALLEL) == (fleet.DEFAULT_PARALLEL, fleet.MAX_PARALLEL)


# --- usage errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "expect"),
    [
        (["--eks", "--region", "r", "--all-clusters", "--cluster", "c"], "--cluster cannot be used"),
        (["--gke", "--project", "p", "--all-clusters", "--location", "l"], "--location cannot be used"),
        (["--eks", "--region", "r", "--all-clusters", "--snapshot", "x.json"], "--snapshot diagnoses one"),
        (["--k8s", "--all-contexts", "--snapshot", "x.json"], "--snapshot diagnoses one"),
        (["--eks", "--all-clusters"], "needs --region"),
        (["--gke", "--all-clusters"], "needs --project"),
        (["--k8s", "--all-clusters"], "use --all-contexts"),
        (["--all-clusters"], "--all-clusters needs --eks --region R or --gke --project P"),
        (["--eks", "--region", "r", "--all-clusters", "--context", "x"], "--context cannot be used"),
        (["--all-contexts"], "--all-contexts works with --k8s"),
        (["--eks", "--region", "r", "--all-contexts"], "--all-contexts works with --k8s"),
        (["--eks", "--region", "r", "--cluster", "c", "--context", "a", "--context", "b"], "works with --k8s"),
        (["--k8s", "--all-contexts", "--context", "a"], "drop --context"),
        (["--k8s", "--context", "a", "--context", "b", "--cluster", "c"], "--cluster cannot be used"),
        (["--k8s", "--all-contexts", "--all-clusters"], "not both"),
    ],
)
def test_fleet_flag_errors_exit_2_with_one_line(args: list[str], expect: str) -> None:
    result = run("diagnose", *args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cidrx: error: "), lines
    assert expect in lines[0]


@pytest.mark.parametrize("value", ["0", "33", "many"])
def test_parallel_out_of_bounds_is_a_usage_error(value: str) -> None:
    result = run("diagnose", "--k8s", "--all-contexts", "--parallel", value)
    assert result.exit_code == 2
    assert "--parallel" in result.output


@pytest.mark.parametrize("command", [["snapshot", "--out", "-"], ["expand", "--plan"], ["reclaim", "--plan"]])
def test_other_commands_refuse_a_second_context(command: list[str]) -> None:
    extra = ["--ipam", "whereabouts"] if command[0] == "reclaim" else []
    result = run(command[0], "--k8s", "--context", "a", "--context", "b", *command[1:], *extra)
    assert result.exit_code == 2, result.output
    assert "--context was given 2 times" in result.stderr
    assert "only `cidrx diagnose --k8s` takes several" in result.stderr


def test_cidrx_context_stays_one_name_even_with_spaces(tmp_path: Path, servers: Callable[..., FakeKubeServer]) -> None:
    server = servers()
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", {"my lab": server.url})
    result = run("diagnose", "--k8s", "--kubeconfig", str(kubeconfig), "-o", "json", env={"CIDRX_CONTEXT": "my lab"})
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["target"]["context"] == "my lab"


# --- Kubernetes contexts ------------------------------------------------------------------------------


@pytest.fixture
def lab(tmp_path: Path, servers: Callable[..., FakeKubeServer]) -> dict[str, Any]:
    """Contexts: lab-full (a Whereabouts pool full of stale reservations), lab-ok (a healthy empty
    cluster), lab-down (nothing listens there)."""
    full = servers()
    full.put_many(wc.crashed_node_objects())
    ok = servers()
    urls = {"lab-full": full.url, "lab-ok": ok.url, "lab-down": closed_port_url()}
    return {"kubeconfig": str(write_kubeconfig(tmp_path / "kubeconfig", urls)), "full": full, "ok": ok}


def test_all_contexts_reports_the_unreachable_one_and_exits_with_the_worst(lab: dict[str, Any]) -> None:
    result = run("diagnose", "--k8s", "--kubeconfig", lab["kubeconfig"], "--all-contexts", "-o", "json")
    assert result.exit_code == EXIT_ACCESS, result.output
    doc = fleet_json(result)
    assert [m["target"]["cluster"] for m in doc["clusters"]] == ["lab-full", "lab-ok", "lab-down"]
    members = by_cluster(doc)
    full, ok, down = members["lab-full"], members["lab-ok"], members["lab-down"]
    assert full["exit_code"] == EXIT_FINDINGS and full["error"] is None
    assert {"WHEREABOUTS-POOL-FULL", "WHEREABOUTS-STALE-ALLOCATION"} <= finding_ids(full)
    assert full["kube_context"] == "lab-full" and full["diagnosis"]["target"]["context"] == "lab-full"
    assert ok["exit_code"] == EXIT_OK and ok["diagnosis"]["counts"]["critical"] == 0
    assert down["exit_code"] == EXIT_ACCESS and down["diagnosis"] is None
    assert "cannot read k8s:lab-down/lab-down" in down["error"] and "cannot reach" in down["error"]
    assert down["hint"]
    assert doc["exit_code"] == EXIT_ACCESS
    assert doc["counts"] == {
        "clusters": 3,
        "unreadable": 1,
        "critical": full["diagnosis"]["counts"]["critical"] + ok["diagnosis"]["counts"]["critical"],
        "warning": full["diagnosis"]["counts"]["warning"] + ok["diagnosis"]["counts"]["warning"],
        "info": full["diagnosis"]["counts"]["info"] + ok["diagnosis"]["counts"]["info"],
    }
    # Progress on stderr, one line per cluster as it finishes; stdout is the document alone.
    progress = [line for line in result.stderr.splitlines() if "] k8s:" in line]
    assert len(progress) == 3 and {line.split("] ")[0][-4:] for line in progress} == {"[1/3", "[2/3", "[3/3"}
    assert any("k8s:lab-down/lab-down: unreadable (exit 6)" in line for line in progress)


def test_repeated_context_reads_only_those(lab: dict[str, Any]) -> None:
    result = run("diagnose", "--k8s", "--kubeconfig", lab["kubeconfig"], "--context", "lab-ok", "--context", "lab-full")
    assert result.exit_code == EXIT_FINDINGS, result.output
    table = result.stdout
    rows = [line for line in table.splitlines() if line.startswith("k8s:")]
    assert [r.split()[0] for r in rows] == ["k8s:lab-ok/lab-ok", "k8s:lab-full/lab-full"]
    assert "lab-down" not in table
    full_row = rows[1]
    assert "findings (exit 3)" in full_row and "whereabouts-pool" in full_row and "100.0% used, 0 free" in full_row
    assert "2 cluster(s):" in table and "0 could not be read; exit 3" in table
    # Then each cluster's own diagnosis.
    assert "cidrx diagnosis of k8s:lab-full/lab-full" in table and "WHEREABOUTS-STALE-ALLOCATION" in table
    assert "cidrx diagnosis of k8s:lab-ok/lab-ok" in table


def test_a_context_missing_from_the_kubeconfig_is_a_row(lab: dict[str, Any]) -> None:
    result = run(
        "diagnose", "--k8s", "--kubeconfig", lab["kubeconfig"], "--context", "lab-ok", "--context", "nope", "-o", "json"
    )
    assert result.exit_code == EXIT_ACCESS, result.output
    nope = by_cluster(fleet_json(result))["nope"]
    assert nope["exit_code"] == EXIT_ACCESS and "context nope not found" in nope["error"]
    assert "lab-full" in nope["hint"]  # the hint lists the contexts there are


def test_markdown_has_the_summary_table_and_each_cluster(lab: dict[str, Any]) -> None:
    result = run("diagnose", "--k8s", "--kubeconfig", lab["kubeconfig"], "--all-contexts", "-o", "markdown")
    assert result.exit_code == EXIT_ACCESS
    md = result.stdout
    assert md.startswith("## cidrx fleet diagnosis\n")
    assert "| cluster | status | critical | warning | info | kube context | fullest capacity / error |" in md
    assert "| k8s:lab-down/lab-down | unreadable (exit 6) |" in md
    assert "### cidrx diagnosis: `k8s:lab-full/lab-full`" in md
    assert "### cidrx could not diagnose `k8s:lab-down/lab-down`" in md


def test_prometheus_for_a_fleet_has_each_family_once(lab: dict[str, Any]) -> None:
    result = run("diagnose", "--k8s", "--kubeconfig", lab["kubeconfig"], "--all-contexts", "-o", "prometheus")
    assert result.exit_code == EXIT_ACCESS
    parsed = parse(result.stdout)  # fails on a family split in two or a duplicate series
    targets = {dict(labels)["target"] for labels in parsed.samples["cidrx_findings"]}
    assert targets == {"k8s:lab-full/lab-full", "k8s:lab-ok/lab-ok"}
    assert parsed.value("cidrx_findings", target="k8s:lab-ok/lab-ok", severity="critical") == 0
    assert parsed.value("cidrx_capacity_free_addresses", target="k8s:lab-full/lab-full", kind="whereabouts-pool") == 0
    assert result.stdout.count("# TYPE cidrx_findings gauge") == 1


def test_parallel_bounds_the_clusters_read_at_once(tmp_path: Path, servers: Callable[..., FakeKubeServer]) -> None:
    """Four clusters, --parallel 2: each server holds its first request until the test lets it go, so two
    collections stay in progress; a third must not start until one of them is released."""
    cond = threading.Condition()
    arrived: list[str] = []
    gates = {name: threading.Event() for name in ("a", "b", "c", "d")}

    def hold_first(name: str) -> Callable[[RequestRecord], None]:
        def hook(record: RequestRecord) -> None:
            with cond:
                if name in arrived:
                    return
                arrived.append(name)
                cond.notify_all()
            gates[name].wait(timeout=30)

        return hook

    urls = {}
    for name in gates:
        server = servers()
        server.on_request = hold_first(name)
        urls[name] = server.url
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", urls)
    seen: list[list[str]] = []

    def control() -> None:
        try:
            with cond:
                cond.wait_for(lambda: len(arrived) >= 2, timeout=30)
                cond.wait_for(lambda: len(arrived) > 2, timeout=0.3)  # time for a third, if it could start
                seen.append(list(arrived))
            for name in seen[0]:
                gates[name].set()
            with cond:
                cond.wait_for(lambda: len(arrived) == 4, timeout=30)
                seen.append(list(arrived))
        finally:
            for gate in gates.values():
                gate.set()

    controller = threading.Thread(target=control)
    controller.start()
    result = run(
        "diagnose", "--k8s", "--kubeconfig", str(kubeconfig), "--all-contexts", "--parallel", "2", "-o", "json"
    )
    controller.join(timeout=30)
    assert result.exit_code == EXIT_OK, result.output
    assert len(seen[0]) == 2, f"{len(seen[0])} clusters were being read at once with --parallel 2"
    assert sorted(seen[1]) == ["a", "b", "c", "d"]
    assert [m["exit_code"] for m in fleet_json(result)["clusters"]] == [0, 0, 0, 0]


def test_parallel_1_reads_one_cluster_after_the_other(tmp_path: Path, servers: Callable[..., FakeKubeServer]) -> None:
    log: list[str] = []
    lock = threading.Lock()
    urls = {}
    for name in ("a", "b", "c"):
        server = servers()
        server.put_many(wc.crashed_node_objects())

        def record(r: RequestRecord, name: str = name) -> None:
            with lock:
                log.append(name)

        server.on_request = record
        urls[name] = server.url
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", urls)
    result = run("diagnose", "--k8s", "--kubeconfig", str(kubeconfig), "--all-contexts", "--parallel", "1")
    assert result.exit_code == EXIT_FINDINGS, result.output
    groups = [name for name, _ in itertools.groupby(log)]
    assert sorted(groups) == ["a", "b", "c"], f"requests of the clusters interleaved: {groups}"


def test_a_kubeconfig_without_contexts_is_an_access_error(tmp_path: Path) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", {})
    result = run("diagnose", "--k8s", "--kubeconfig", str(kubeconfig), "--all-contexts")
    assert result.exit_code == EXIT_ACCESS
    assert "cidrx: error: no context in the kubeconfig: nothing to diagnose" in result.stderr


# --- EKS ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def moto_url() -> Iterator[str]:
    with moto_server() as url, shared_botocore_loader():
        yield url


@pytest.fixture
def eks_fleet(moto_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """In one region: the incident `demo` (its cluster on a fake API server, reached through the context
    named by its ARN), `roomy` (two empty /20s, no context), and `gone` (its subnets and VPC deleted)."""
    import boto3
    import requests

    fake_aws_env(monkeypatch, AWS_ENDPOINT_URL=moto_url)
    requests.post(f"{moto_url}/moto-api/reset", timeout=10).raise_for_status()
    session = boto3.Session(region_name=REGION)
    ec2, eks = session.client("ec2"), session.client("eks")
    world = build_incident(ec2, eks, region=REGION, cluster="demo")
    role = f"arn:aws:iam::{ACCOUNT}:role/eks-cluster-role"
    vpc = ec2.create_vpc(CidrBlock="10.20.0.0/16")["Vpc"]["VpcId"]
    roomy_subnets = [
        ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.20.{16 * i}.0/20", AvailabilityZone=f"{REGION}{az}")["Subnet"][
            "SubnetId"
        ]
        for i, az in enumerate("ab")
    ]
    eks.create_cluster(name="roomy", roleArn=role, resourcesVpcConfig={"subnetIds": roomy_subnets})
    gone_vpc = ec2.create_vpc(CidrBlock="10.30.0.0/16")["Vpc"]["VpcId"]
    gone_subnet = ec2.create_subnet(VpcId=gone_vpc, CidrBlock="10.30.0.0/20", AvailabilityZone=f"{REGION}a")
    eks.create_cluster(name="gone", roleArn=role, resourcesVpcConfig={"subnetIds": [gone_subnet["Subnet"]["SubnetId"]]})
    ec2.delete_subnet(SubnetId=gone_subnet["Subnet"]["SubnetId"])
    ec2.delete_vpc(VpcId=gone_vpc)
    kube, _, _ = incident_server(world)
    arn = world.cluster_arn
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", {"lab": closed_port_url(), arn: kube.url})
    try:
        yield {"kubeconfig": str(kubeconfig), "arn": arn, "kube": kube}
    finally:
        kube.stop()
    if kube.errors:
        raise kube.errors[0]


def test_eks_all_clusters_reads_every_cluster_and_reports_the_one_that_cannot_be_read(
    eks_fleet: dict[str, Any],
) -> None:
    args = ["diagnose", "--eks", "--region", REGION, "--all-clusters", "--kubeconfig", eks_fleet["kubeconfig"]]
    result = run(*args, "-o", "json")
    assert result.exit_code == EXIT_ACCESS, result.output
    doc = fleet_json(result)
    assert [m["target"]["cluster"] for m in doc["clusters"]] == ["demo", "gone", "roomy"]
    members = by_cluster(doc)
    demo, gone, roomy = members["demo"], members["gone"], members["roomy"]
    assert eks_fleet["arn"] == f"arn:aws:eks:{REGION}:{ACCOUNT}:cluster/demo"
    assert demo["kube_context"] == eks_fleet["arn"] and demo["note"] is None
    assert demo["exit_code"] == EXIT_FINDINGS
    # The pod events come from the cluster's API: the kube side was read through the ARN context.
    assert {"EKS-SUBNET-EXHAUSTED", "EKS-POD-IP-ASSIGN-FAILED"} <= finding_ids(demo)
    assert "KUBE-UNREACHABLE" not in finding_ids(demo)
    assert gone["exit_code"] == EXIT_ACCESS and gone["diagnosis"] is None
    assert "not found" in gone["error"] and gone["hint"]
    assert roomy["exit_code"] == EXIT_OK and roomy["kube_context"] is None
    assert roomy["note"] == f"cloud side only: no kubeconfig context named arn:aws:eks:{REGION}:{ACCOUNT}:cluster/roomy"
    unreachable = [f for f in roomy["diagnosis"]["findings"] if f["id"] == "KUBE-UNREACHABLE"]
    assert unreachable and unreachable[0]["evidence"] == [roomy["note"]]
    assert roomy["diagnosis"]["counts"]["critical"] == 0
    assert doc["counts"]["clusters"] == 3 and doc["counts"]["unreadable"] == 1

    table = run(*args, "--fail-on", "never")
    assert table.exit_code == EXIT_ACCESS  # --fail-on never does not hide a cluster that could not be read
    rows = {line.split()[0]: line for line in table.stdout.splitlines() if line.startswith("eks:")}
    assert "findings" not in rows[f"eks:{REGION}/demo"] and "ok (exit 0)" in rows[f"eks:{REGION}/demo"]
    assert "none: cloud side only" in rows[f"eks:{REGION}/roomy"]
    assert "unreadable (exit 6)" in rows[f"eks:{REGION}/gone"]


def test_eks_all_clusters_without_kubeconfig_and_with_no_kube(eks_fleet: dict[str, Any], tmp_path: Path) -> None:
    missing = str(tmp_path / "nowhere.yaml")
    result = run("diagnose", "--eks", "--region", REGION, "--all-clusters", "--kubeconfig", missing, "-o", "json")
    assert result.exit_code == EXIT_ACCESS, result.output
    demo = by_cluster(fleet_json(result))["demo"]
    assert demo["exit_code"] == EXIT_FINDINGS
    assert demo["kube_context"] is None and demo["note"].startswith("cloud side only: kubeconfig ")
    assert eks_fleet["kube"].count() == 0
    no_kube = run("diagnose", "--eks", "--region", REGION, "--all-clusters", "--no-kube", "-o", "json")
    notes = {m["note"] for m in fleet_json(no_kube)["clusters"]}
    assert notes == {"in-cluster checks skipped (--no-kube)"}
    assert eks_fleet["kube"].count() == 0


def test_eks_list_clusters_pages_and_the_account_comes_from_sts(moto_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import boto3
    import requests

    from cidrx.providers.eks.api import EksApi

    fake_aws_env(monkeypatch, AWS_ENDPOINT_URL=moto_url)
    requests.post(f"{moto_url}/moto-api/reset", timeout=10).raise_for_status()
    ec2, eks = boto3.client("ec2", region_name=REGION), boto3.client("eks", region_name=REGION)
    vpc = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.9.0.0/24")["Subnet"]["SubnetId"]
    names = [f"c{i:03d}" for i in range(105)]  # ListClusters pages hold at most 100
    for name in names:
        eks.create_cluster(
            name=name, roleArn=f"arn:aws:iam::{ACCOUNT}:role/r", resourcesVpcConfig={"subnetIds": [subnet]}
        )
    api = EksApi(REGION)
    assert sorted(api.list_clusters()) == names
    assert api.caller_account() == ("aws", ACCOUNT)


def test_no_eks_cluster_in_the_region_is_an_access_error(moto_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import requests

    fake_aws_env(monkeypatch, AWS_ENDPOINT_URL=moto_url)
    requests.post(f"{moto_url}/moto-api/reset", timeout=10).raise_for_status()
    result = run("diagnose", "--eks", "--region", "eu-west-3", "--all-clusters", "--no-kube")
    assert result.exit_code == EXIT_ACCESS
    assert "cidrx: error: no EKS cluster in eu-west-3: nothing to diagnose" in result.stderr


# --- GKE ----------------------------------------------------------------------------------------------

ROOMY_LOCATION = "us-central1"


def add_roomy_cluster(fake: FakeGcp) -> None:
    """A cluster in us-central1 on the world's `us-workloads` subnet, pod range `us-pods` (a /16: room
    for 256 nodes of /24), one node pool."""
    fake.add_cluster(
        gke_world.PROJECT,
        ROOMY_LOCATION,
        {
            "name": "roomy",
            "network": gke_world.NETWORK,
            "subnetwork": "us-workloads",
            "locations": [f"{ROOMY_LOCATION}-a"],
            "defaultMaxPodsConstraint": {"maxPodsPerNode": "110"},
            "ipAllocationPolicy": {
                "useIpAliases": True,
                "clusterSecondaryRangeName": "us-pods",
                "clusterIpv4CidrBlock": "10.5.0.0/16",
            },
            "nodePools": [
                {
                    "name": "pool-1",
                    "config": {"machineType": "e2-standard-4"},
                    "initialNodeCount": 1,
                    "locations": [f"{ROOMY_LOCATION}-a"],
                    "autoscaling": {"enabled": True, "minNodeCount": 1, "maxNodeCount": 3},
                    "maxPodsConstraint": {"maxPodsPerNode": "110"},
                    "networkConfig": {"podRange": "us-pods", "podIpv4CidrBlock": "10.5.0.0/16"},
                }
            ],
        },
    )


def test_gke_all_clusters_lists_every_location(
    gcp: FakeGcp, tmp_path: Path, servers: Callable[..., FakeKubeServer]
) -> None:
    add_roomy_cluster(gcp)
    kube = servers(crds=False)
    incident_context = f"gke_{gke_world.PROJECT}_{gke_world.LOCATION}_{gke_world.CLUSTER}"
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", {incident_context: kube.url})
    result = run(
        "diagnose",
        "--gke",
        "--project",
        gke_world.PROJECT,
        "--all-clusters",
        "--kubeconfig",
        str(kubeconfig),
        "-o",
        "json",
    )
    assert result.exit_code == EXIT_FINDINGS, result.output
    doc = fleet_json(result)
    assert [(m["target"]["location"], m["target"]["cluster"]) for m in doc["clusters"]] == [
        (gke_world.LOCATION, gke_world.CLUSTER),
        (ROOMY_LOCATION, "roomy"),
    ]
    incident, roomy = doc["clusters"]
    assert incident["exit_code"] == EXIT_FINDINGS and "GKE-POD-RANGE-EXHAUSTED" in finding_ids(incident)
    assert incident["kube_context"] == incident_context and kube.count() > 0
    assert roomy["exit_code"] == EXIT_OK and roomy["kube_context"] is None
    assert roomy["note"] == f"cloud side only: no kubeconfig context named gke_p1_{ROOMY_LOCATION}_roomy"
    pod_range = next(c for c in roomy["diagnosis"]["capacity"] if c["kind"] == "pod-range")
    assert (pod_range["cidr"], pod_range["max_nodes"]) == ("10.5.0.0/16", 256)
    # One fleet listing, plus one per member's collect (routes-based clusters on its network).
    assert gcp.count("GET", "/locations/-/clusters") == 1 + len(doc["clusters"])


def test_gke_zones_it_could_not_list_make_the_fleet_incomplete(gcp: FakeGcp) -> None:
    listing = {
        "clusters": [gcp.cluster(gke_world.PROJECT, gke_world.LOCATION, gke_world.CLUSTER)],
        "missingZones": ["us-east1-b"],
    }
    gcp.inject(200, method="GET", path_contains="/locations/-/clusters", body=listing)
    result = run("diagnose", "--gke", "--project", gke_world.PROJECT, "--all-clusters", "--no-kube", "-o", "json")
    assert result.exit_code == EXIT_ACCESS, result.output
    doc = fleet_json(result)
    assert doc["notes"] == ["GKE could not list clusters in us-east1-b: clusters there are not diagnosed"]
    assert [m["exit_code"] for m in doc["clusters"]] == [EXIT_FINDINGS]
    assert "note: GKE could not list clusters in us-east1-b" in result.stderr
