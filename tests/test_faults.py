"""Transient faults on every call, with the real clients: cidrx still reaches the same answers.

A seeded injector fails a given share (30%) of the requests each provider receives. AWS: a botocore
`before-send` handler put in BUILTIN_HANDLERS (so it reaches the sessions cidrx makes for itself) in place
of moto's own stub, which it calls for the requests it lets through. GCP and Kubernetes: their fakes' fault
switches, armed from an `on_request` hook for the very request being served. Reads get throttling or 5xx;
writes only throttling (cidrx's policy does not retry a 5xx write: it might have happened). At most
`MAX_RUN` faults in a row hit the same request, so a run cannot lose its last attempt by bad luck, and the
seed makes every run the same. Shown: diagnose gives byte-for-byte the same JSON as without faults (EKS,
GKE, --k8s Whereabouts); expand/reclaim --apply converges to the same end state as a clean run; permanent
errors are sent once and map to their exit codes; Retry-After is slept exactly; the total budget ends
retries with one line.

`STATS` counts, per provider, the faults injected and the faults survived (injected in a run that then
produced the expected result); the last test checks the totals (`pytest -s` shows them).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from cidrx.cli import cli
from cidrx.engine import retry
from cidrx.model.plan import load_plan
from tests import gke_world
from tests import whereabouts_cases as wc
from tests.eks_cluster import Hooks, incident_server, inventory, shared_botocore_loader
from tests.eks_world import REGION, World, fake_aws_env, moto_incident
from tests.fakes.eks_addons import raw_response
from tests.fakes.gcp_server import FakeGcp
from tests.fakes.kube_server import FakeKubeServer, RequestRecord

RATE = 0.3
SEEDS = (20240501, 7, 1234)  # each convergence test runs once per seed
MAX_RUN = 3  # faults in a row on one request; the policy makes 6 attempts
CLUSTER = "demo"

STATS: dict[str, dict[str, int]] = {p: {"injected": 0, "survived": 0} for p in ("aws", "gcp", "kube")}

gcp = gke_world.gcp


class Injector:
    """Decides, deterministically, which requests fail and how."""

    def __init__(self, provider: str, seed: int = SEEDS[0], rate: float = RATE) -> None:
        self.provider = provider
        self.rng = random.Random(f"{seed}-{provider}")
        self.rate = rate
        self.active = False
        self.requests = 0
        self.injected = 0
        self.runs: dict[Any, int] = {}

    def decide(self, key: Any, write: bool, reads: tuple[str, ...], writes: tuple[str, ...]) -> str | None:
        if not self.active:
            return None
        self.requests += 1
        if self.runs.get(key, 0) >= MAX_RUN or self.rng.random() >= self.rate:
            self.runs.pop(key, None)
            return None
        self.runs[key] = self.runs.get(key, 0) + 1
        self.injected += 1
        STATS[self.provider]["injected"] += 1
        return self.rng.choice(writes if write else reads)

    def survived(self) -> None:
        # (a seed may hit none of the few requests a small run makes; test_fault_totals checks the sums)
        STATS[self.provider]["survived"] += self.injected


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def error_line(result: Result) -> str:
    """The one error line the CLI prints (a hint may follow it)."""
    lines = [line for line in result.stderr.splitlines() if line.startswith("cidrx: error:")]
    assert len(lines) == 1, result.stderr
    return lines[0]


# ---- AWS: a before-send handler in every botocore session ----------------------------------------------

_WRITE_PREFIXES = ("Create", "Associate", "Update", "Delete", "Modify", "Put", "Disassociate")
_EC2_ERROR = "<Response><Errors><Error><Code>{code}</Code><Message>{message}</Message></Error></Errors></Response>"


def aws_error(request: Any, service: str, kind: str, headers: dict[str, str] | None = None) -> Any:
    """An AWS error answer in the service's own protocol (EC2: XML; EKS, Service Quotas: JSON)."""
    status, code = {
        "throttle": (503, "RequestLimitExceeded") if service == "ec2" else (429, "TooManyRequestsException"),
        "unavailable": (503, "Unavailable") if service == "ec2" else (503, "ServiceUnavailableException"),
        "denied": (403, "UnauthorizedOperation") if service == "ec2" else (403, "AccessDeniedException"),
    }[kind]
    message = f"injected {kind}"
    if service == "ec2":
        body = _EC2_ERROR.format(code=code, message=message).encode()
        return raw_response(request.url, status, body, {"Content-Type": "text/xml", **(headers or {})})
    body = json.dumps({"__type": code, "message": message}).encode()
    all_headers = {"Content-Type": "application/x-amz-json-1.1", "x-amzn-ErrorType": f"{code}:", **(headers or {})}
    return raw_response(request.url, status, body, all_headers)


class AwsFaults(Injector):
    def __init__(self, seed: int = SEEDS[0]) -> None:
        super().__init__("aws", seed)
        self.ops: list[str] = []
        self.rule: Callable[[str, str], Any] | None = None  # (service, op) -> (kind, headers) or None

    def __call__(self, request: Any, event_name: str = "", **_: Any) -> Any:
        _hook, service, op = event_name.split(".", 2)
        if self.active:
            self.ops.append(op)
        if self.rule is not None and self.active:
            decided = self.rule(service, op)
            if decided is not None:
                kind, headers = decided
                return aws_error(request, service, kind, headers)
            return None
        write = op.startswith(_WRITE_PREFIXES)
        body = request.body if isinstance(request.body, bytes | str) else b""
        kind = self.decide((op, request.url, body), write, ("throttle", "unavailable"), ("throttle",))
        return aws_error(request, service, kind) if kind else None


@pytest.fixture(scope="module", autouse=True)
def _fast_sessions() -> Iterator[None]:
    with shared_botocore_loader():
        yield


EksEstate = tuple[Any, World, FakeKubeServer, Hooks, str, AwsFaults]


EksEstate = tuple[Any, World, FakeKubeServer, Hooks, str, "AwsFaults"]


@contextlib.contextmanager
def eks_estate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int = SEEDS[0]) -> Iterator[EksEstate]:
    """The EKS incident in moto (in process) and in a fake API server, with the AWS injector installed."""
    import botocore.handlers
    from moto.core.models import botocore_stubber

    fake_aws_env(monkeypatch)
    for name in list(os.environ):
        if name.startswith("CIDRX_") or name == "KUBECONFIG":
            monkeypatch.delenv(name)
    faults = AwsFaults(seed)

    def in_front_of_moto(event_name: str, request: Any, **kwargs: Any) -> Any:
        # botocore calls *every* before-send handler and uses the first answer, so a fault returned next
        # to moto's stub would come after moto had carried the request out. A refused request must not
        # reach moto: the injector stands in front of the stub instead.
        return faults(request, event_name=event_name) or botocore_stubber(event_name, request, **kwargs)

    handlers = [
        (spec[0], in_front_of_moto, *spec[2:]) if spec[1] is botocore_stubber else spec
        for spec in botocore.handlers.BUILTIN_HANDLERS
    ]
    assert any(spec[1] is in_front_of_moto for spec in handlers)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(botocore.handlers, "BUILTIN_HANDLERS", handlers)
        with moto_incident(cluster=CLUSTER) as (session, world):
            kube, hooks, _controller = incident_server(world)
            try:
                kubeconfig = str(kube.kubeconfig(tmp_path / f"kubeconfig-{id(kube)}"))
                yield session, world, kube, hooks, kubeconfig, faults
            finally:
                kube.stop()
            assert not kube.errors


# ---- Kubernetes: the fake's fault switch, armed for the request being served ----------------------------


class KubeFaults(Injector):
    def __init__(self, server: FakeKubeServer, seed: int = SEEDS[0]) -> None:
        super().__init__("kube", seed)
        self.server = server

    def __call__(self, record: RequestRecord) -> None:
        write = record.method != "GET"
        key = (record.method, record.path, tuple(sorted(record.query.items())))
        choice = self.decide(key, write, ("429", "500", "503", "504"), ("429",))
        if choice:
            retry_after = 1 if choice == "429" and self.rng.random() < 0.5 else None
            self.server.inject(
                int(choice), method=record.method, path_contains=record.path, times=1, retry_after=retry_after
            )


# ---- GCP: the same, on the loopback fake ----------------------------------------------------------------


class GcpFaults(Injector):
    def __init__(self, fake: FakeGcp, seed: int = SEEDS[0]) -> None:
        super().__init__("gcp", seed)
        self.fake = fake
        fake.on_request = self

    def __call__(self, record: Any) -> None:
        write = record.method != "GET"
        key = (record.method, record.path, tuple(sorted(record.query.items())))
        choice = self.decide(key, write, ("429", "500", "502", "503", "504"), ("429",))
        if choice:
            self.fake.inject(int(choice), method=record.method, path_contains=record.path, times=1)


# ==== EKS ===================================================================================================


@pytest.mark.parametrize("seed", SEEDS)
def test_eks_diagnose_is_the_same_under_faults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    with eks_estate(tmp_path, monkeypatch, seed) as (_session, _world, kube, hooks, kubeconfig, aws):
        target = ["--eks", "--region", REGION, "--cluster", CLUSTER, "--kubeconfig", kubeconfig]
        clean = run("diagnose", *target, "-o", "json")
        assert clean.exit_code == 3, clean.output
        kube_faults = KubeFaults(kube, seed)
        hooks.hooks.insert(0, kube_faults)
        aws.active = kube_faults.active = True
        faulty = run("diagnose", *target, "-o", "json")
        aws.active = kube_faults.active = False
    assert faulty.exit_code == 3, faulty.output
    assert faulty.stdout == clean.stdout
    aws.survived()
    kube_faults.survived()


@pytest.mark.parametrize("seed", SEEDS)
def test_eks_custom_networking_apply_converges_under_faults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    def plan_and_apply(faulty: bool) -> tuple[dict[str, Any], list[Injector]]:
        with eks_estate(tmp_path, monkeypatch, seed) as (session, world, kube, hooks, kubeconfig, aws):
            target = ["--eks", "--region", REGION, "--cluster", CLUSTER, "--kubeconfig", kubeconfig]
            plan_path = tmp_path / f"plan-{faulty}.json"
            made = run("expand", *target, "--plan", "--out", str(plan_path))
            assert made.exit_code == 0, made.output
            plan = load_plan(plan_path)
            kube_faults = KubeFaults(kube, seed)
            hooks.hooks.insert(0, kube_faults)
            aws.active = kube_faults.active = faulty
            applied = run("expand", "--apply", str(plan_path), "--yes", "--kubeconfig", kubeconfig)
            aws.active = kube_faults.active = False
            assert applied.exit_code == 0, applied.output
            assert f"{len(plan.steps)} step(s) changed something, 0 were already done" in applied.stdout
            state = inventory(session.client("ec2"), session.client("eks"), kube, world, plan_id=plan.plan_id)
            return state, [aws, kube_faults]

    expected, _ = plan_and_apply(faulty=False)
    got, injectors = plan_and_apply(faulty=True)
    assert got == expected
    assert len([c for c in got["vpc_cidrs"] if c[0].startswith("100.64.")]) == 1  # associated once
    for injector in injectors:
        injector.survived()


def test_eks_permanent_errors_are_sent_once_and_map_to_their_exit_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, retry_sleeps: list[float]
) -> None:
    with eks_estate(tmp_path, monkeypatch) as (_session, _world, _kube, _hooks, kubeconfig, aws):
        aws.rule = lambda service, op: ("denied", None) if op == "DescribeVpcs" else None
        aws.active = True
        result = run("diagnose", "--eks", "--region", REGION, "--cluster", CLUSTER, "--kubeconfig", kubeconfig)
        aws.active = False
    assert result.exit_code == 6, result.output
    assert aws.ops.count("DescribeVpcs") == 1 and retry_sleeps == []
    assert "permission denied for ec2:DescribeVpcs" in error_line(result)
    assert "Traceback" not in result.output


def test_eks_retry_after_is_honoured_and_the_budget_ends_retries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, retry_sleeps: list[float]
) -> None:
    clock = [0.0]

    def sleep(seconds: float) -> None:
        retry_sleeps.append(seconds)
        clock[0] += seconds

    monkeypatch.setattr(retry, "sleep", sleep)
    monkeypatch.setattr(retry, "monotonic", lambda: clock[0])
    with eks_estate(tmp_path, monkeypatch) as (_session, _world, _kube, _hooks, kubeconfig, aws):
        target = ["--eks", "--region", REGION, "--cluster", CLUSTER, "--kubeconfig", kubeconfig, "-o", "json"]
        clean = run("diagnose", *target)
        # One throttle that asks for 3 s: slept exactly, then the same diagnosis.
        throttled: list[str] = []

        def once(service: str, op: str) -> Any:
            if op == "DescribeCluster" and not throttled:
                throttled.append(op)
                return ("throttle", {"Retry-After": "3"})
            return None

        aws.rule, aws.active = once, True
        again = run("diagnose", *target)
        assert (again.exit_code, again.stdout) == (clean.exit_code, clean.stdout)
        assert retry_sleeps == [3.0] and aws.ops.count("DescribeCluster") == 2

        # EC2 unavailable for good, asking for 25 s each time: the 60 s budget allows two sleeps.
        retry_sleeps.clear()
        aws.ops.clear()
        aws.rule = lambda service, op: ("unavailable", {"Retry-After": "25"}) if op == "DescribeVpcs" else None
        failed = run("diagnose", *target)
        aws.active = False
    assert failed.exit_code == 1, failed.output
    assert retry_sleeps == [25.0, 25.0] and aws.ops.count("DescribeVpcs") == 3
    line = error_line(failed)
    assert "ec2:DescribeVpcs" in line and "Unavailable" in line
    assert "gave up after 3 attempts over 50.0 s" in line
    assert "Traceback" not in failed.output and failed.stdout == ""


# ==== GKE ===================================================================================================

GKE_TARGET = [
    "--gke",
    "--project",
    gke_world.PROJECT,
    "--location",
    gke_world.LOCATION,
    "--cluster",
    gke_world.CLUSTER,
    "--no-kube",
]


def gke_end_state(fake: FakeGcp, plan_id: str) -> dict[str, Any]:
    subnet = fake.subnet(gke_world.PROJECT, gke_world.REGION, gke_world.SUBNET)
    cluster = fake.cluster(gke_world.PROJECT, gke_world.LOCATION, gke_world.CLUSTER)
    assert subnet is not None and cluster is not None
    pools = {}
    for pool in cluster.get("nodePools", []):
        name = pool["name"].replace(plan_id, "<plan>")
        labels = {k: ("<plan>" if v == plan_id else v) for k, v in pool["config"].get("resourceLabels", {}).items()}
        pools[name] = (pool.get("networkConfig", {}).get("podRange"), pool["config"]["machineType"], labels)
    return {
        "ranges": sorted((r["rangeName"], r["ipCidrRange"]) for r in subnet.get("secondaryIpRanges", [])),
        "pools": pools,
    }


@contextlib.contextmanager
def fresh_gcp() -> Iterator[FakeGcp]:
    with FakeGcp() as fake, pytest.MonkeyPatch.context() as mp:
        gke_world.build_incident(fake)
        for key, value in gke_world.gcp_env(fake).items():
            mp.setenv(key, value)
        yield fake
    fake.check()


@pytest.mark.parametrize("seed", SEEDS)
def test_gke_diagnose_is_the_same_under_faults(gcp: FakeGcp, seed: int) -> None:
    clean = run("diagnose", *GKE_TARGET, "-o", "json")
    assert clean.exit_code == 3, clean.output
    faults = GcpFaults(gcp, seed)
    faults.active = True
    faulty = run("diagnose", *GKE_TARGET, "-o", "json")
    faults.active = False
    assert faulty.exit_code == 3, faulty.output
    assert faulty.stdout == clean.stdout
    faults.survived()


@pytest.mark.parametrize("seed", SEEDS)
def test_gke_node_pool_apply_converges_under_faults(tmp_path: Path, seed: int) -> None:
    def plan_and_apply(faulty: bool) -> tuple[dict[str, Any], GcpFaults]:
        with fresh_gcp() as fake:
            plan_path = tmp_path / f"plan-{faulty}.json"
            made = run("expand", *GKE_TARGET, "--plan", "--strategy", "node-pool", "--out", str(plan_path))
            assert made.exit_code == 0, made.output
            plan = load_plan(plan_path)
            faults = GcpFaults(fake, seed)
            faults.active = faulty
            applied = run("expand", "--apply", str(plan_path), "--yes", "--no-kube")
            faults.active = False
            assert applied.exit_code == 0, applied.output
            assert len([r for r in fake.request_log if r.method == "POST" and "/nodePools" in r.path]) >= 1
            return gke_end_state(fake, plan.plan_id), faults

    expected, _ = plan_and_apply(faulty=False)
    got, faults = plan_and_apply(faulty=True)
    assert got == expected
    assert len(got["ranges"]) == 3 and len(got["pools"]) == 2  # one range and one pool added, once
    faults.survived()


def test_gke_permanent_errors_are_sent_once(gcp: FakeGcp, tmp_path: Path, retry_sleeps: list[float]) -> None:
    gcp.inject(403, method="GET", path_contains=f"/clusters/{gke_world.CLUSTER}", times=None)
    denied = run("diagnose", *GKE_TARGET)
    assert denied.exit_code == 6, denied.output
    assert "permission denied for container.clusters.get" in error_line(denied)
    assert gcp.count("GET", f"/clusters/{gke_world.CLUSTER}") == 1 and retry_sleeps == []
    gcp.clear_faults()

    plan_path = tmp_path / "plan.json"
    assert run("expand", *GKE_TARGET, "--plan", "--out", str(plan_path)).exit_code == 0
    gcp.reset_log()
    gcp.inject(400, method="PATCH", times=None)  # invalid parameter: the same answer however often it is asked
    applied = run("expand", "--apply", str(plan_path), "--yes", "--no-kube")
    assert applied.exit_code == 5, applied.output
    assert gcp.count("PATCH") == 1 and retry_sleeps == []
    assert "Traceback" not in applied.output


def test_gke_a_5xx_on_a_write_is_not_retried_blindly(gcp: FakeGcp, tmp_path: Path) -> None:
    """The write may have happened: the apply stops (exit 5) and the same command, re-run, converges."""
    plan_path = tmp_path / "plan.json"
    assert run("expand", *GKE_TARGET, "--plan", "--out", str(plan_path)).exit_code == 0
    plan = load_plan(plan_path)
    gcp.reset_log()
    gcp.inject(503, method="POST", path_contains="/nodePools", times=1)
    stopped = run("expand", "--apply", str(plan_path), "--yes", "--no-kube")
    assert stopped.exit_code == 5, stopped.output
    assert gcp.count("POST", "/nodePools") == 1
    resumed = run("expand", "--apply", str(plan_path), "--yes", "--no-kube")
    assert resumed.exit_code == 0, resumed.output
    state = gke_end_state(gcp, plan.plan_id)
    assert len(state["pools"]) == 2 and (plan.basis["range_name"], plan.basis["cidr"]) in state["ranges"]


# ==== Kubernetes (--k8s, Whereabouts) ===========================================================================


@contextlib.contextmanager
def whereabouts_cluster(tmp_path: Path) -> Iterator[tuple[FakeKubeServer, list[str]]]:
    with FakeKubeServer() as server, pytest.MonkeyPatch.context() as mp:
        mp.delenv("KUBECONFIG", raising=False)
        server.put_many(wc.crashed_node_objects())
        kubeconfig = str(server.kubeconfig(tmp_path / f"kubeconfig-{id(server)}"))
        yield server, ["--k8s", "--kubeconfig", kubeconfig]
    assert not server.errors


def whereabouts_state(server: FakeKubeServer) -> dict[str, Any]:
    return {
        "pools": sorted(
            (p["metadata"]["name"], json.dumps(p["spec"], sort_keys=True)) for p in server.objects_of("IPPool")
        ),
        "reservations": sorted(o["metadata"]["name"] for o in server.objects_of("OverlappingRangeIPReservation")),
    }


@pytest.mark.parametrize("seed", SEEDS)
def test_k8s_whereabouts_diagnose_is_the_same_under_faults(tmp_path: Path, seed: int) -> None:
    with whereabouts_cluster(tmp_path) as (server, target):
        clean = run("diagnose", *target, "-o", "json")
        assert clean.exit_code == 3, clean.output
        faults = KubeFaults(server, seed)
        server.on_request = faults
        faults.active = True
        faulty = run("diagnose", *target, "-o", "json")
        faults.active = False
    assert faulty.exit_code == 3, faulty.output
    assert faulty.stdout == clean.stdout
    faults.survived()


@pytest.mark.parametrize("seed", SEEDS)
def test_k8s_whereabouts_reclaim_converges_under_faults(tmp_path: Path, seed: int) -> None:
    def plan_and_apply(faulty: bool) -> tuple[dict[str, Any], KubeFaults]:
        with whereabouts_cluster(tmp_path) as (server, target):
            plan_path = tmp_path / f"reclaim-{faulty}.json"
            made = run("reclaim", *target, "--ipam", "whereabouts", "--plan", "--out", str(plan_path))
            assert made.exit_code == 0, made.output
            faults = KubeFaults(server, seed)
            server.on_request = faults
            faults.active = faulty
            applied = run("reclaim", "--apply", str(plan_path), "--yes", "--kubeconfig", target[2])
            faults.active = False
            assert applied.exit_code == 0, applied.output
            return whereabouts_state(server), faults

    expected, _ = plan_and_apply(faulty=False)
    got, faults = plan_and_apply(faulty=True)
    assert got == expected
    faults.survived()


def test_k8s_permanent_errors_retry_after_and_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, retry_sleeps: list[float]
) -> None:
    clock = [0.0]

    def sleep(seconds: float) -> None:
        retry_sleeps.append(seconds)
        clock[0] += seconds

    monkeypatch.setattr(retry, "sleep", sleep)
    monkeypatch.setattr(retry, "monotonic", lambda: clock[0])
    with whereabouts_cluster(tmp_path) as (server, target):
        clean = run("diagnose", *target, "-o", "json")

        server.inject(429, method="GET", path_contains="/ippools", retry_after=7, times=1)
        throttled = run("diagnose", *target, "-o", "json")
        assert (throttled.exit_code, throttled.stdout) == (clean.exit_code, clean.stdout)
        assert retry_sleeps == [7.0]

        retry_sleeps.clear()
        server.reset_log()
        server.inject(403, method="GET", path_contains="/ippools", times=None)
        denied = run("diagnose", *target, "-o", "json")
        server.clear_faults()
        assert denied.exit_code == 6, denied.output
        assert "forbidden: cannot list ippools.whereabouts.cni.cncf.io" in error_line(denied)
        assert server.count("GET", "ippools") == 1 and retry_sleeps == []

        server.reset_log()
        server.inject(503, method="GET", path_contains="/ippools", retry_after=20, times=None)
        failed = run("diagnose", *target, "-o", "json")
        server.clear_faults()
    assert failed.exit_code == 1, failed.output
    assert retry_sleeps == [20.0, 20.0, 20.0] and server.count("GET", "ippools") == 4
    assert "gave up after 4 attempts over 60.0 s" in error_line(failed)
    assert "Traceback" not in failed.output


def test_fault_totals() -> None:
    """Runs last in this module: every injected fault was survived (a run that then gave the expected result).
    The counts show with `pytest -s tests/test_faults.py`."""
    if not any(c["injected"] for c in STATS.values()):
        pytest.skip("run the whole module to count faults")
    print("\nfaults injected/survived:", json.dumps(STATS, sort_keys=True))
    for provider, counts in STATS.items():
        assert counts["injected"] > 0, provider
        assert counts["survived"] == counts["injected"], (provider, counts)
