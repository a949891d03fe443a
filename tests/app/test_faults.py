"""Transient faults on every call, with the real clients: cidrx still reaches the same answers.

An injector per provider fails a share (`RATE`) of the requests it sees. AWS: a botocore `before-send`
handler put in BUILTIN_HANDLERS (so it reaches the sessions cidrx makes for itself) in place of moto's own
stub, which it calls for the requests it lets through; it answers with an error or raises botocore's
connection errors. GCP and Kubernetes: their fakes' fault switches (`inject`, `inject_reset`), armed from
an `on_request` hook for the very request being served. Reads get throttling (sometimes with Retry-After),
5xx and lost connections (closed unanswered, reset, or cut off halfway through the answer); writes only
what certainly did not take effect: throttling and, for AWS, a connection refused before anything was
sent (cidrx's policy does not retry a 5xx or a reset after a write was sent: it might have happened;
test_gke_a_write_whose_answer_was_lost_is_not_retried_blindly shows that path stopping with exit 5 and
the same command, re-run, converging).

Whether a request fails is a pure function of the seed, the request (without the ids that differ
between two builds of the same world) and how many times it was seen, so the decisions do not depend on
the order of concurrent requests and every run is the same. At most `MAX_RUN` faults in a row hit the
same request, so a run cannot lose its last attempt by bad luck. The first write of a run always fails
(throttled or refused), so every apply retries at least one write.

Shown: diagnose gives byte-for-byte the same JSON as without faults (EKS, GKE with and without the
cluster side, --k8s Whereabouts and Calico); expand/reclaim --apply converges to the same end state as a
clean run for every plan kind (EKS custom networking and prefix delegation, GKE node pool and cluster
range, Whereabouts and Calico reclaim, Calico pool); permanent errors are sent once and map to their exit
codes (a 422 or 400 read as well); Retry-After is slept exactly (AWS, GCP, Kubernetes); the total budget
ends retries with one line.

Every faulted run asserts that each provider in it did inject faults, and records its requests, its
faults by kind and whether it converged in the session's ledger (tests/support/conftest_faults.py), which pytest
sums up in one line at the end of the session.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from cidrx.ipam.calico.collect import GROUP as CALICO_GROUP
from cidrx.model.plan import load_plan
from cidrx.providers.gke.api import GkeApi
from tests.support.cases import calico as calico_cases
from tests.support.cases import whereabouts as wc
from tests.support.cli import run
from tests.support.conftest_faults import FaultLedger, FaultRun
from tests.support.estates import gke as gke_world
from tests.support.estates.eks import REGION, World, build_incident
from tests.support.estates.eks_cluster import Hooks, build_prefix_world, inventory
from tests.support.estates.eks_live import eks_estate
from tests.support.fakes.eks_addons import raw_response
from tests.support.fakes.gcp_server import FakeGcp
from tests.support.fakes.kube_server import FakeKubeServer

pytestmark = pytest.mark.usefixtures("shared_botocore")  # sessions share one botocore loader

RATE = 0.3
SMALL_RUN_RATE = 0.5  # for a run of a handful of requests, so that it cannot get away without a fault
SEEDS = (20240501, 7, 1234)  # each convergence test runs once per seed
MAX_RUN = 3  # faults in a row on one request; the policy makes 6 attempts
CLUSTER = "demo"

JSON = dict[str, Any]
Option = tuple[str, str]  # (kind, as the ledger counts it; how the fault is made)


def error_line(result: Result) -> str:
    """The one error line the CLI prints (a hint may follow it)."""
    lines = [line for line in result.stderr.splitlines() if line.startswith("cidrx: error:")]
    assert len(lines) == 1, result.stderr
    return lines[0]


# ---- deciding, counting and recording faults ------------------------------------------------------------

# What differs between two builds of the same world: moto's resource ids, uids, plan ids (digests of
# plans that name those ids), idempotency tokens, operation names.
_VOLATILE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\b[0-9a-f]{8,}\b")


class Injector:
    """Decides which requests fail and how, and counts them (while `active`)."""

    def __init__(self, provider: str, seed: int, rate: float = RATE) -> None:
        self.provider = provider
        self.seed = seed
        self.rate = rate
        self.active = False
        self.requests = 0
        self.injected: Counter[str] = Counter()
        self.on_writes: Counter[str] = Counter()  # the part of `injected` that hit writes
        self._seen: Counter[str] = Counter()
        self._streak: Counter[str] = Counter()
        self._lock = threading.Lock()

    def decide(self, key: object, write: bool, reads: Sequence[Option], writes: Sequence[Option]) -> Option | None:
        with self._lock:
            if not self.active:
                return None
            self.requests += 1
            stable = _VOLATILE.sub("#", repr(key))
            self._seen[stable] += 1
            digest = hashlib.blake2b(
                f"{self.seed}|{self.provider}|{stable}|{self._seen[stable]}".encode(), digest_size=16
            ).digest()
            fail, pick = (int.from_bytes(digest[i : i + 8], "big") / 2**64 for i in (0, 8))
            first_write = write and not self.on_writes  # always fails, so every apply retries a write
            if not first_write and (self._streak[stable] >= MAX_RUN or fail >= self.rate):
                del self._streak[stable]
                return None
            self._streak[stable] += 1
            options = writes if write else reads
            option = options[int(pick * len(options))]
            self.injected[option[0]] += 1
            if write:
                self.on_writes[option[0]] += 1
            return option


@dataclass
class Run:
    """One faulted CLI run: the injectors armed for it, and whether its result equalled the clean one."""

    injectors: tuple[Injector, ...]
    converged: bool | None = None

    @contextlib.contextmanager
    def armed(self) -> Iterator[None]:
        for injector in self.injectors:
            injector.active = True
        try:
            yield
        finally:
            for injector in self.injectors:
                injector.active = False


@dataclass
class Runs:
    """The faulted runs of one test; recorded in the ledger at teardown, converged or not."""

    name: str
    runs: list[Run] = field(default_factory=list)

    def start(self, *injectors: Injector) -> Run:
        made = Run(injectors)
        self.runs.append(made)
        return made

    def on_writes(self) -> Counter[str]:
        """Faults by kind that hit writes, over every run of the test."""
        total: Counter[str] = Counter()
        for made in self.runs:
            for injector in made.injectors:
                total.update(injector.on_writes)
        return total

    def judge(self, converged: bool) -> None:
        """Say whether the runs reached the fault-free result; each provider must have injected faults."""
        for made in self.runs:
            if made.converged is None:
                made.converged = converged
            for injector in made.injectors:
                assert sum(injector.injected.values()) > 0, (
                    f"{self.name}: {injector.provider} injected no fault in {injector.requests} requests"
                )


@pytest.fixture
def runs(request: pytest.FixtureRequest, fault_ledger: FaultLedger) -> Iterator[Runs]:
    book = Runs(request.node.name)
    yield book
    for made in book.runs:
        kinds: Counter[str] = Counter()
        for injector in made.injectors:
            kinds.update(injector.injected)
        requests = sum(i.requests for i in made.injectors)
        fault_ledger.record(FaultRun(book.name, requests, dict(kinds), made.converged is True))


# ---- AWS: a before-send handler in every botocore session ----------------------------------------------

_WRITE_PREFIXES = ("Create", "Associate", "Update", "Delete", "Modify", "Put", "Disassociate")
_EC2_ERROR = "<Response><Errors><Error><Code>{code}</Code><Message>{message}</Message></Error></Errors></Response>"
# The query protocol's error document (Auto Scaling): ErrorResponse/Error with Type, Code, Message.
_QUERY_ERROR = (
    "<ErrorResponse><Error><Type>Sender</Type><Code>{code}</Code><Message>{message}</Message></Error>"
    "<RequestId>00000000-0000-0000-0000-000000000000</RequestId></ErrorResponse>"
)
_QUERY_CODES = {
    "throttle": (400, "Throttling"),
    "unavailable": (503, "ServiceUnavailable"),
    "internal": (500, "InternalFailure"),
    "denied": (403, "AccessDenied"),
}
AWS_READ: tuple[Option, ...] = (
    ("throttle", "throttle"),
    ("5xx", "unavailable"),
    ("5xx", "internal"),
    ("reset", "closed"),  # botocore's ConnectionClosedError: the connection broke after sending
    ("refused", "refused"),  # botocore's EndpointConnectionError: nothing was sent
)
AWS_WRITE: tuple[Option, ...] = (("throttle", "throttle"), ("refused", "refused"))


def aws_error(request: Any, service: str, kind: str, headers: dict[str, str] | None = None) -> Any:
    """An AWS error answer in the service's own protocol (EC2: XML; Auto Scaling: query XML; EKS, Service
    Quotas: JSON)."""
    if service in ("autoscaling", "auto-scaling"):  # botocore names its events by the service id "Auto Scaling"
        status, code = _QUERY_CODES[kind]
        body = _QUERY_ERROR.format(code=code, message=f"injected {kind}").encode()
        return raw_response(request.url, status, body, {"Content-Type": "text/xml", **(headers or {})})
    status, code = {
        "throttle": (503, "RequestLimitExceeded") if service == "ec2" else (429, "TooManyRequestsException"),
        "unavailable": (503, "Unavailable") if service == "ec2" else (503, "ServiceUnavailableException"),
        "internal": (500, "InternalError") if service == "ec2" else (500, "InternalFailure"),
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
        from botocore.exceptions import ConnectionClosedError, EndpointConnectionError

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
        option = self.decide((service, op, request.url, body), write, AWS_READ, AWS_WRITE)
        if option is None:
            return None
        if option[1] == "closed":
            raise ConnectionClosedError(endpoint_url=request.url)
        if option[1] == "refused":
            raise EndpointConnectionError(endpoint_url=request.url)
        return aws_error(request, service, option[1])


EksEnv = tuple[Any, World, FakeKubeServer, Hooks, str, AwsFaults]


@contextlib.contextmanager
def eks_env(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    seed: int = SEEDS[0],
    builder: Callable[..., World] = build_incident,
) -> Iterator[EksEnv]:
    """An EKS world (the incident by default) in moto, in process, and its cluster in a fake API server,
    with the AWS injector installed."""
    faults = AwsFaults(seed)

    def wrap_moto(stub: Callable[..., Any]) -> Callable[..., Any]:
        # A refused request must not reach moto: the injector stands in front of moto's stub.
        def in_front_of_moto(event_name: str, request: Any, **kwargs: Any) -> Any:
            return faults(request, event_name=event_name) or stub(event_name, request, **kwargs)

        return in_front_of_moto

    with eks_estate(tmp_path, monkeypatch, builder=builder, wrap_moto=wrap_moto) as estate:
        yield estate.session, estate.world, estate.kube, estate.hooks, estate.kubeconfig, faults


# ---- Kubernetes and GCP: the fakes' fault switches, armed for the request being served -----------------

KUBE_READ: tuple[Option, ...] = (
    ("throttle", "429"),
    ("throttle", "429 retry-after"),
    ("5xx", "500"),
    ("5xx", "503"),
    ("5xx", "504"),
    ("reset", "close"),
    ("reset", "rst"),
    ("reset", "partial"),
)
KUBE_WRITE: tuple[Option, ...] = (("throttle", "429"), ("throttle", "429 retry-after"))
GCP_READ: tuple[Option, ...] = (*KUBE_READ, ("5xx", "502"))
GCP_WRITE = KUBE_WRITE


class HttpFaults(Injector):
    """Faults for one of the project's HTTP fakes (both take `inject` and `inject_reset` the same way),
    decided per request from `reads` / `writes`."""

    def __init__(
        self, name: str, server: Any, reads: tuple[Option, ...], writes: tuple[Option, ...], seed: int, rate: float
    ) -> None:
        super().__init__(name, seed, rate)
        self.server, self.reads, self.writes = server, reads, writes

    def __call__(self, record: Any) -> None:
        write = record.method != "GET"
        key = (record.method, record.path, tuple(sorted(record.query.items())))
        option = self.decide(key, write, self.reads, self.writes)
        if option is None:
            return
        kind, how = option
        if kind == "reset":
            self.server.inject_reset(how, method=record.method, path_contains=record.path, times=1)
            return
        retry_after = 1 if how.endswith("retry-after") else None
        self.server.inject(
            int(how[:3]), method=record.method, path_contains=record.path, times=1, retry_after=retry_after
        )


class KubeFaults(HttpFaults):
    """Wired by the caller (the incident cluster's hook list, or the server's `on_request`)."""

    def __init__(self, server: FakeKubeServer, seed: int = SEEDS[0], rate: float = RATE) -> None:
        super().__init__("kube", server, KUBE_READ, KUBE_WRITE, seed, rate)


class GcpFaults(HttpFaults):
    def __init__(self, fake: FakeGcp, seed: int = SEEDS[0], rate: float = RATE) -> None:
        super().__init__("gcp", fake, GCP_READ, GCP_WRITE, seed, rate)
        fake.on_request = self


# ==== EKS ===================================================================================================


def eks_target(kubeconfig: str) -> list[str]:
    return ["--eks", "--region", REGION, "--cluster", CLUSTER, "--kubeconfig", kubeconfig]


@pytest.mark.parametrize("seed", SEEDS)
def test_eks_diagnose_is_the_same_under_faults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runs: Runs, seed: int
) -> None:
    with eks_env(tmp_path, monkeypatch, seed) as (_session, _world, kube, hooks, kubeconfig, aws):
        clean = run("diagnose", *eks_target(kubeconfig), "-o", "json")
        assert clean.exit_code == 3, clean.output
        kube_faults = KubeFaults(kube, seed)
        hooks.hooks.insert(0, kube_faults)
        with runs.start(aws, kube_faults).armed():
            faulty = run("diagnose", *eks_target(kubeconfig), "-o", "json")
    runs.judge((faulty.exit_code, faulty.stdout) == (clean.exit_code, clean.stdout))
    assert faulty.exit_code == 3, faulty.output
    assert faulty.stdout == clean.stdout


def cidr_reservations(ec2: Any, world: World) -> list[tuple[str, str, str]]:
    """(subnet CIDR, reserved CIDR, type) of every subnet CIDR reservation in the world's subnets."""
    subnets = ec2.describe_subnets(SubnetIds=list(world.subnet_ids))["Subnets"]
    return sorted(
        (s["CidrBlock"], r["Cidr"], r["ReservationType"])
        for s in subnets
        for r in ec2.get_subnet_cidr_reservations(SubnetId=s["SubnetId"])["SubnetIpv4CidrReservations"]
    )


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    ("strategy", "builder"),
    [("custom-networking", build_incident), ("prefix-delegation", build_prefix_world)],
    ids=["custom-networking", "prefix-delegation"],
)
def test_eks_apply_converges_under_faults(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    runs: Runs,
    seed: int,
    strategy: str,
    builder: Callable[..., World],
) -> None:
    def plan_and_apply(faulty: bool) -> JSON:
        with eks_env(tmp_path, monkeypatch, seed, builder) as (session, world, kube, hooks, kubeconfig, aws):
            plan_path = tmp_path / f"plan-{faulty}.json"
            made = run("expand", *eks_target(kubeconfig), "--plan", "--strategy", strategy, "--out", str(plan_path))
            assert made.exit_code == 0, made.output
            plan = load_plan(plan_path)
            kube_faults = KubeFaults(kube, seed)
            hooks.hooks.insert(0, kube_faults)
            with runs.start(aws, kube_faults).armed() if faulty else contextlib.nullcontext():
                applied = run("expand", "--apply", str(plan_path), "--yes", "--kubeconfig", kubeconfig)
            assert applied.exit_code == 0, applied.output
            assert f"{len(plan.steps)} step(s) changed something, 0 were already done" in applied.stdout
            ec2 = session.client("ec2")
            state = inventory(ec2, session.client("eks"), kube, world, plan_id=plan.plan_id)
            return {**state, "reservations": cidr_reservations(ec2, world)}

    expected = plan_and_apply(faulty=False)
    got = plan_and_apply(faulty=True)
    runs.judge(got == expected)
    assert got == expected
    assert sum(runs.on_writes().values()) > 0  # writes were refused or throttled, and retried
    if strategy == "custom-networking":
        assert len([c for c in got["vpc_cidrs"] if c[0].startswith("100.64.")]) == 1  # associated once
    else:
        assert len(got["reservations"]) == 2 and all(r[2] == "prefix" for r in got["reservations"])  # once each


def test_eks_permanent_errors_are_sent_once_and_map_to_their_exit_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, retry_sleeps: list[float]
) -> None:
    with eks_env(tmp_path, monkeypatch) as (_session, _world, _kube, _hooks, kubeconfig, aws):
        aws.rule = lambda service, op: ("denied", None) if op == "DescribeVpcs" else None
        aws.active = True
        result = run("diagnose", *eks_target(kubeconfig))
        aws.active = False
    assert result.exit_code == 6, result.output
    assert aws.ops.count("DescribeVpcs") == 1 and retry_sleeps == []
    assert "permission denied for ec2:DescribeVpcs" in error_line(result)
    assert "Traceback" not in result.output


def test_eks_retry_after_is_honoured_and_the_budget_ends_retries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, retry_sleeps: list[float], retry_clock: list[float]
) -> None:
    with eks_env(tmp_path, monkeypatch) as (_session, _world, _kube, _hooks, kubeconfig, aws):
        target = [*eks_target(kubeconfig), "-o", "json"]
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
    assert failed.exit_code == 7, failed.output  # kept failing after every retry: retry later, not a bug
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
]
GKE_NO_KUBE = [*GKE_TARGET, "--no-kube"]


@pytest.fixture(autouse=True)
def _small_gcp_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two items per compute list page, so faults also hit pages fetched with a page token."""
    monkeypatch.setattr(GkeApi, "page_size", 2)


def gke_end_state(fake: FakeGcp, plan_id: str) -> JSON:
    subnet = fake.subnet(gke_world.PROJECT, gke_world.REGION, gke_world.SUBNET)
    cluster = fake.cluster(gke_world.PROJECT, gke_world.LOCATION, gke_world.CLUSTER)
    assert subnet is not None and cluster is not None
    pools = {}
    for pool in cluster.get("nodePools", []):
        name = pool["name"].replace(plan_id, "<plan>")
        labels = {k: ("<plan>" if v == plan_id else v) for k, v in pool["config"].get("resourceLabels", {}).items()}
        pools[name] = (pool.get("networkConfig", {}).get("podRange"), pool["config"]["machineType"], labels)
    additional = cluster["ipAllocationPolicy"].get("additionalPodRangesConfig", {}).get("podRangeNames", [])
    return {
        "ranges": sorted((r["rangeName"], r["ipCidrRange"]) for r in subnet.get("secondaryIpRanges", [])),
        "pools": pools,
        "additional_pod_ranges": additional,
    }


@contextlib.contextmanager
def fresh_gcp() -> Iterator[FakeGcp]:
    with pytest.MonkeyPatch.context() as mp, gke_world.gke_estate(mp) as fake:
        yield fake


@pytest.mark.parametrize("seed", SEEDS)
def test_gke_diagnose_is_the_same_under_faults(gcp: FakeGcp, runs: Runs, seed: int) -> None:
    clean = run("diagnose", *GKE_NO_KUBE, "-o", "json")
    assert clean.exit_code == 3, clean.output
    with runs.start(GcpFaults(gcp, seed, SMALL_RUN_RATE)).armed():
        faulty = run("diagnose", *GKE_NO_KUBE, "-o", "json")
    runs.judge((faulty.exit_code, faulty.stdout) == (clean.exit_code, clean.stdout))
    assert faulty.exit_code == 3, faulty.output
    assert faulty.stdout == clean.stdout


@pytest.mark.parametrize("seed", SEEDS)
def test_gke_diagnose_with_the_cluster_side_is_the_same_under_faults(
    gcp: FakeGcp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runs: Runs, seed: int
) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    with FakeKubeServer() as kube:
        kube.put_many(gke_world.incident_kube_objects())
        target = [*GKE_TARGET, "--kubeconfig", str(kube.kubeconfig(tmp_path / "kubeconfig")), "-o", "json"]
        clean = run("diagnose", *target)
        assert clean.exit_code == 3, clean.output
        kube_faults = KubeFaults(kube, seed)
        kube.on_request = kube_faults
        with runs.start(GcpFaults(gcp, seed), kube_faults).armed():
            faulty = run("diagnose", *target)
    assert not kube.errors
    runs.judge((faulty.exit_code, faulty.stdout) == (clean.exit_code, clean.stdout))
    assert faulty.exit_code == 3, faulty.output
    assert faulty.stdout == clean.stdout
    doc = json.loads(clean.stdout)  # the cluster side was read: the scale-up failures are in the diagnosis
    assert "GKE-POD-RANGE-EXHAUSTED" in {f["id"] for f in doc["findings"]}
    assert json.loads(run("diagnose", *GKE_NO_KUBE, "-o", "json").stdout) != doc


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("strategy", ["node-pool", "cluster-range"])
def test_gke_apply_converges_under_faults(tmp_path: Path, runs: Runs, seed: int, strategy: str) -> None:
    def plan_and_apply(faulty: bool) -> JSON:
        with fresh_gcp() as fake:
            plan_path = tmp_path / f"plan-{faulty}.json"
            made = run("expand", *GKE_NO_KUBE, "--plan", "--strategy", strategy, "--out", str(plan_path))
            assert made.exit_code == 0, made.output
            plan = load_plan(plan_path)
            faults = GcpFaults(fake, seed)
            with runs.start(faults).armed() if faulty else contextlib.nullcontext():
                applied = run("expand", "--apply", str(plan_path), "--yes", "--no-kube")
            assert applied.exit_code == 0, applied.output
            assert f"{len(plan.steps)} step(s) changed something, 0 were already done" in applied.stdout
            return gke_end_state(fake, plan.plan_id)

    expected = plan_and_apply(faulty=False)
    got = plan_and_apply(faulty=True)
    runs.judge(got == expected)
    assert got == expected
    assert sum(runs.on_writes().values()) > 0  # writes were refused or throttled, and retried
    assert len(got["ranges"]) == 3  # one range added, once
    if strategy == "node-pool":
        assert len(got["pools"]) == 2 and got["additional_pod_ranges"] == []  # one pool added, once
    else:
        assert len(got["pools"]) == 1 and len(got["additional_pod_ranges"]) == 1


def test_gke_retry_after_is_honoured(gcp: FakeGcp, retry_sleeps: list[float]) -> None:
    cluster_path = f"/clusters/{gke_world.CLUSTER}"
    clean = run("diagnose", *GKE_NO_KUBE, "-o", "json")
    gets = gcp.count("GET", cluster_path)
    gcp.reset_log()
    gcp.inject(429, method="GET", path_contains=cluster_path, retry_after=5, times=1)
    throttled = run("diagnose", *GKE_NO_KUBE, "-o", "json")
    assert (throttled.exit_code, throttled.stdout) == (clean.exit_code, clean.stdout)
    assert retry_sleeps == [5.0]
    assert gcp.count("GET", cluster_path) == gets + 1


def test_gke_permanent_errors_are_sent_once(gcp: FakeGcp, tmp_path: Path, retry_sleeps: list[float]) -> None:
    gcp.inject(403, method="GET", path_contains=f"/clusters/{gke_world.CLUSTER}", times=None)
    denied = run("diagnose", *GKE_NO_KUBE)
    assert denied.exit_code == 6, denied.output
    assert "permission denied for container.clusters.get" in error_line(denied)
    assert gcp.count("GET", f"/clusters/{gke_world.CLUSTER}") == 1 and retry_sleeps == []
    gcp.clear_faults()

    # An invalid read (400) is not retried either: one request, one line, exit 1.
    gcp.reset_log()
    gcp.inject(400, method="GET", path_contains="/aggregated/subnetworks", times=None)
    invalid = run("diagnose", *GKE_NO_KUBE)
    gcp.clear_faults()
    assert invalid.exit_code == 1, invalid.output
    assert "Google Cloud rejected compute.subnetworks.list" in error_line(invalid)
    assert gcp.count("GET", "/aggregated/subnetworks") == 1 and retry_sleeps == []
    assert "Traceback" not in invalid.output

    plan_path = tmp_path / "plan.json"
    assert run("expand", *GKE_NO_KUBE, "--plan", "--out", str(plan_path)).exit_code == 0
    gcp.reset_log()
    gcp.inject(400, method="PATCH", times=None)  # invalid parameter: the same answer however often it is asked
    applied = run("expand", "--apply", str(plan_path), "--yes", "--no-kube")
    assert applied.exit_code == 5, applied.output
    assert gcp.count("PATCH") == 1 and retry_sleeps == []
    assert "Traceback" not in applied.output


@pytest.mark.parametrize(
    "lose",
    [
        pytest.param(lambda fake: fake.inject(503, method="POST", path_contains="/nodePools", times=1), id="5xx"),
        pytest.param(lambda fake: fake.inject_reset("partial", method="POST", path_contains="/nodePools"), id="reset"),
    ],
)
def test_gke_a_write_whose_answer_was_lost_is_not_retried_blindly(
    gcp: FakeGcp, tmp_path: Path, lose: Callable[[FakeGcp], object]
) -> None:
    """The write may have happened (after a reset mid-answer it did): the apply stops (exit 5) after one
    request, and the same command, re-run, converges without making the node pool twice."""
    plan_path = tmp_path / "plan.json"
    assert run("expand", *GKE_NO_KUBE, "--plan", "--out", str(plan_path)).exit_code == 0
    plan = load_plan(plan_path)
    gcp.reset_log()
    lose(gcp)
    stopped = run("expand", "--apply", str(plan_path), "--yes", "--no-kube")
    assert stopped.exit_code == 5, stopped.output
    assert gcp.count("POST", "/nodePools") == 1
    assert "Traceback" not in stopped.output
    gcp.finish_operations()  # meanwhile GKE carries out what it accepted (nobody polls an unseen operation)
    resumed = run("expand", "--apply", str(plan_path), "--yes", "--no-kube")
    assert resumed.exit_code == 0, resumed.output
    state = gke_end_state(gcp, plan.plan_id)
    assert len(state["pools"]) == 2 and (plan.basis["range_name"], plan.basis["cidr"]) in state["ranges"]


# ==== Kubernetes (--k8s: Whereabouts, Calico) ==================================================================


@contextlib.contextmanager
def k8s_cluster(tmp_path: Path, objects: list[JSON]) -> Iterator[tuple[FakeKubeServer, list[str]]]:
    with FakeKubeServer() as server, pytest.MonkeyPatch.context() as mp:
        mp.delenv("KUBECONFIG", raising=False)
        server.put_many(objects)
        kubeconfig = str(server.kubeconfig(tmp_path / f"kubeconfig-{id(server)}"))
        yield server, ["--k8s", "--kubeconfig", kubeconfig]
    assert not server.errors


def whereabouts_cluster(tmp_path: Path) -> contextlib.AbstractContextManager[tuple[FakeKubeServer, list[str]]]:
    return k8s_cluster(tmp_path, wc.crashed_node_objects())


def whereabouts_state(server: FakeKubeServer, plan_id: str) -> JSON:
    """The pools' allocations and the reservations (nothing a reclaim leaves names its plan)."""
    return {
        "pools": sorted(
            (p["metadata"]["name"], json.dumps(p["spec"], sort_keys=True)) for p in server.objects_of("IPPool")
        ),
        "reservations": sorted(o["metadata"]["name"] for o in server.objects_of("OverlappingRangeIPReservation")),
    }


CALICO_KINDS = ("IPPool", "IPAMBlock", "BlockAffinity", "IPAMHandle", "IPAMConfig")


def calico_state(server: FakeKubeServer, plan_id: str) -> JSON:
    """Every Calico object by kind: name, labels and spec (the plan id replaced), sorted."""

    def shown(obj: JSON) -> str:
        meta = obj["metadata"]
        text = json.dumps({"name": meta["name"], "labels": meta.get("labels"), "spec": obj["spec"]}, sort_keys=True)
        return text.replace(plan_id, "<plan>") if plan_id else text

    return {kind: sorted(shown(o) for o in server.objects_of(kind, group=CALICO_GROUP)) for kind in CALICO_KINDS}


IPAMS: dict[str, Callable[[], list[JSON]]] = {
    "whereabouts": wc.crashed_node_objects,
    "calico": lambda: calico_cases.incident().objects(),
}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("ipam", ["whereabouts", "calico"])
def test_k8s_diagnose_is_the_same_under_faults(tmp_path: Path, runs: Runs, seed: int, ipam: str) -> None:
    with k8s_cluster(tmp_path, IPAMS[ipam]()) as (server, target):
        clean = run("diagnose", *target, "-o", "json")
        assert clean.exit_code == 3, clean.output
        faults = KubeFaults(server, seed)
        server.on_request = faults
        with runs.start(faults).armed():
            faulty = run("diagnose", *target, "-o", "json")
    runs.judge((faulty.exit_code, faulty.stdout) == (clean.exit_code, clean.stdout))
    assert faulty.exit_code == 3, faulty.output
    assert faulty.stdout == clean.stdout


K8S_PLANS = {
    # name: (objects, command and options that make the plan, end state)
    "whereabouts-reclaim": (wc.crashed_node_objects, ("reclaim", "--ipam", "whereabouts"), whereabouts_state),
    "calico-reclaim": (IPAMS["calico"], ("reclaim", "--ipam", "calico"), calico_state),
    "calico-pool": (IPAMS["calico"], ("expand", "--strategy", "calico-pool"), calico_state),
}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("kind", list(K8S_PLANS))
def test_k8s_apply_converges_under_faults(tmp_path: Path, runs: Runs, seed: int, kind: str) -> None:
    objects, (command, *options), end_state = K8S_PLANS[kind]

    def plan_and_apply(faulty: bool) -> JSON:
        with k8s_cluster(tmp_path, objects()) as (server, target):
            plan_path = tmp_path / f"{kind}-{faulty}.json"
            made = run(command, *target, *options, "--plan", "--out", str(plan_path))
            assert made.exit_code == 0, made.output
            plan = load_plan(plan_path)
            assert plan.strategy == kind
            faults = KubeFaults(server, seed)
            server.on_request = faults
            with runs.start(faults).armed() if faulty else contextlib.nullcontext():
                applied = run(command, "--apply", str(plan_path), "--yes", "--kubeconfig", target[2])
            assert applied.exit_code == 0, applied.output
            assert f"{len(plan.steps)} step(s) changed something, 0 were already done" in applied.stdout
            return end_state(server, plan.plan_id)

    with k8s_cluster(tmp_path, objects()) as (server, _target):
        before = end_state(server, "")
    expected = plan_and_apply(faulty=False)
    got = plan_and_apply(faulty=True)
    runs.judge(got == expected)
    assert got == expected
    assert sum(runs.on_writes().values()) > 0  # writes were refused or throttled, and retried
    assert got != before  # the plan changed something


def test_k8s_permanent_errors_retry_after_and_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, retry_sleeps: list[float], retry_clock: list[float]
) -> None:
    with whereabouts_cluster(tmp_path) as (server, target):
        clean = run("diagnose", *target, "-o", "json")

        server.inject(429, method="GET", path_contains="/ippools", retry_after=7, times=1)
        throttled = run("diagnose", *target, "-o", "json")
        assert (throttled.exit_code, throttled.stdout) == (clean.exit_code, clean.stdout)
        assert retry_sleeps == [7.0]

        # 403, and 422 Invalid on a read: permanent errors, sent once, exiting with the server's message.
        permanent: list[tuple[int, str | None, int, str]] = [
            (403, None, 6, "forbidden: cannot list ippools.whereabouts.cni.cncf.io"),
            (422, "Invalid", 1, "failed to list ippools.whereabouts.cni.cncf.io"),
        ]
        for status, reason, code, message in permanent:
            retry_sleeps.clear()
            server.reset_log()
            server.inject(status, method="GET", path_contains="/ippools", times=None, reason=reason, message="bad")
            refused = run("diagnose", *target, "-o", "json")
            server.clear_faults()
            assert refused.exit_code == code, refused.output
            assert message in error_line(refused)
            assert server.count("GET", "ippools") == 1 and retry_sleeps == []

        server.reset_log()
        server.inject(503, method="GET", path_contains="/ippools", retry_after=20, times=None)
        failed = run("diagnose", *target, "-o", "json")
        server.clear_faults()
    assert failed.exit_code == 7, failed.output  # kept failing after every retry: retry later, not a bug
    assert retry_sleeps == [20.0, 20.0, 20.0] and server.count("GET", "ippools") == 4
    assert "gave up after 4 attempts over 60.0 s" in error_line(failed)
    assert "Traceback" not in failed.output
