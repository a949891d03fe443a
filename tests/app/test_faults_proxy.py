"""Faults on the wire, made by the seeded fault proxy (tests/support/fakes/fault_proxy.py) in front of the GCP
fake, moto's server, the fake API server and the ARM fake (AKS), and SIGKILL at chosen requests of an apply
and of a rollback.

test_faults.py fails requests from inside the fakes (and botocore); here they fail between cidrx's real
clients and the servers, as a load balancer or a bad network would: 502/503 pages, 429 with Retry-After,
resets, answers cut off mid-body, 2xx answers truncated to a complete but broken document or garbled with
bytes no JSON or XML may hold. Shown, per target (GKE, EKS with its cluster, --k8s, AKS):
- diagnose gives the fault-free JSON, or exits 6/7 with one error line (never 1, never a traceback);
- an apply reaches exactly the fault-free end state, re-running the same command at most MAX_RUNS times,
  every stop an exit 5, 6 or 7 with one error line;
- an apply killed (SIGKILL) when the proxy sees its Nth request (before forwarding it, or after the server
  carried it out and before the answer reaches cidrx) is resumed by the same command: it takes over the
  lock the killed run left (saying so), ends in the uninterrupted apply's end state, and rollback then
  returns the estate to what it was before;
- a rollback killed the same way at a chosen undo write is taken over by the next `cidrx rollback`, which ends
  with the estate exactly as before the apply;
- a Kubernetes write answered 429 or 503 (not processed) is sent again after Retry-After; other 5xx stop the
  apply (exit 5) and its re-run converges.
Seeds are fixed, so every run is the same; each faulted run goes to the session's fault ledger.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import Result

from cidrx.engine.lock import lease_name
from cidrx.model.plan import load_plan
from tests.support.cli import one_line_error, run
from tests.support.conftest_faults import FaultLedger, FaultRun
from tests.support.estates import aks as aks_world
from tests.support.estates import gke as gke_world
from tests.support.estates.eks import REGION, World, build_incident, moto_server
from tests.support.estates.eks_cluster import incident_server, inventory
from tests.support.estates.eks_live import clean_env
from tests.support.fakes.arm_server import FakeArm
from tests.support.fakes.fault_proxy import FaultProxy, Seen
from tests.support.fakes.gcp_server import FakeGcp
from tests.support.fakes.kube_server import FakeKubeServer

SEEDS = (20261129, 31)
RATE = 0.3
WIRE_KINDS = ("5xx", "429", "reset", "cut", "truncate", "garble")
MAX_RUNS = 6  # runs of the same command an apply under faults may take to converge
EKS_CLUSTER = "demo"
JSON = dict[str, Any]

pytestmark = pytest.mark.usefixtures("shared_botocore")  # sessions share one botocore loader

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


def record(ledger: FaultLedger, name: str, proxies: list[FaultProxy], converged: bool, killed: bool = False) -> None:
    kinds: Counter[str] = Counter({"sigkill": 1} if killed else {})
    for proxy in proxies:
        kinds.update({("throttle" if k == "429" else k): v for k, v in proxy.injected.items()})
    ledger.record(FaultRun(name, sum(p.requests for p in proxies), dict(kinds), converged))


def transient_stop(result: Result | subprocess.CompletedProcess[str], allowed: tuple[int, ...]) -> None:
    """A run that did not succeed stopped with one of `allowed` and one error line, never a traceback."""
    code = result.exit_code if isinstance(result, Result) else result.returncode
    output = result.output if isinstance(result, Result) else result.stdout + result.stderr
    assert code in allowed, output
    assert "Traceback" not in output and "internal error" not in output, output
    if isinstance(result, Result):
        one_line_error(result)


def kubeconfig_via(server: FakeKubeServer, proxy: FaultProxy, path: Path) -> str:
    """A kubeconfig for `server` that goes through `proxy`."""
    doc = server.kubeconfig_dict()
    doc["clusters"][0]["cluster"]["server"] = proxy.url
    path.write_text(yaml.safe_dump(doc))
    return str(path)


# ---- SIGKILL at the Nth request --------------------------------------------------------------------------


def step_write(seen: Seen) -> bool:
    """A write of a plan step (the lock's Lease is written before the steps and released after them; AWS's
    query protocol POSTs its reads too)."""
    if seen.method == "GET" or "/leases" in seen.path:
        return False
    return not seen.action.startswith(("Describe", "Get", "List"))


@dataclass
class KillSwitch:
    """A proxy hook that SIGKILLs `pid` at the `k`th step write (counted over every proxy it hooks): when it
    arrives ("request": never forwarded), after the server carried it out ("answer": its answer is lost), or
    at the next request after its answer ("next": between the write and what follows it)."""

    k: int
    phase: str
    pid: int = 0
    fired: Seen | None = None
    writes: int = 0
    _target: int | None = None  # id() of the kth write
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, phase: str, proxy: FaultProxy, seen: Seen) -> bool:
        with self._lock:
            if self.fired is not None:
                return True  # what the dead run had in flight goes nowhere
            if phase == "request" and self._target is not None and self.phase == "next":
                return self._kill(seen)
            if phase == "request" and step_write(seen):
                self.writes += 1
                if self.writes == self.k:
                    self._target = id(seen)
                    if self.phase == "request":
                        return self._kill(seen)
            if phase == "answer" and id(seen) == self._target and self.phase == "answer":
                return self._kill(seen)
            return False

    def _kill(self, seen: Seen) -> bool:
        self.fired = seen
        os.kill(self.pid, signal.SIGKILL)
        return True


def kill_points(log: list[Seen], seed: int) -> list[tuple[int, str]]:
    """(k, phase) pairs, one per phase: a seeded kth step write of a clean apply and where around it to kill."""
    writes = sum(step_write(s) for s in log)
    assert writes, "the clean apply wrote nothing"
    rng = random.Random(seed)
    return [(rng.randint(1, writes), phase) for phase in ("request", "answer", "next")]


def killed_child(args: list[str], env: dict[str, str], switch: KillSwitch, proxies: list[FaultProxy], cwd: Path) -> str:
    """Run `python -m cidrx ARGS` until `switch` kills it; its stderr."""
    err = cwd / "killed.stderr"
    with open(err, "w") as stderr:
        child = subprocess.Popen(
            [sys.executable, "-m", "cidrx", *args], env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=stderr
        )
        switch.pid = child.pid
        for proxy in proxies:
            proxy.hooks.append(switch)
        try:
            code = child.wait(timeout=120)
        finally:
            child.kill()
            for proxy in proxies:
                proxy.hooks.remove(switch)
    text = err.read_text()
    assert switch.fired is not None, f"the run ended ({code}) before step write {switch.k}: {text}"
    assert code == -signal.SIGKILL, text
    return text


# ==== GKE ===================================================================================================


@dataclass
class Gke:
    fake: FakeGcp
    kube: FakeKubeServer
    proxies: list[FaultProxy]  # in front of the GCP fake, and of the cluster's API server
    env: dict[str, str]  # points cidrx at the proxies
    kubeconfig: str

    @property
    def target(self) -> list[str]:
        return [*GKE_TARGET[:-1], "--kubeconfig", self.kubeconfig]

    def set_rate(self, rate: float) -> None:
        for proxy in self.proxies:
            proxy.rate = rate


@contextlib.contextmanager
def gke_behind_proxy(tmp: Path, seed: int = 0) -> Iterator[Gke]:
    """A fresh GKE incident in the GCP fake and its cluster in a fake API server (holding the Lease of an
    apply's lock), a fault proxy in front of each (faults off until `set_rate`)."""
    with (
        pytest.MonkeyPatch.context() as mp,
        gke_world.gke_estate(mp) as fake,
        FakeKubeServer() as kube,
        FaultProxy(fake.url, name="gcp", seed=seed, kinds=WIRE_KINDS) as gcp_proxy,
        FaultProxy(kube.url, name="kube", seed=seed, kinds=WIRE_KINDS) as kube_proxy,
    ):
        mp.delenv("KUBECONFIG", raising=False)
        kube.put_many(gke_world.incident_kube_objects())
        env = {
            **gke_world.gcp_env(fake),
            "CIDRX_CONTAINER_ENDPOINT": gcp_proxy.url,
            "CIDRX_COMPUTE_ENDPOINT": gcp_proxy.url,
        }
        kubeconfig = kubeconfig_via(kube, kube_proxy, tmp / f"kubeconfig-{kube.port}")
        yield Gke(fake, kube, [gcp_proxy, kube_proxy], env, kubeconfig)
    assert not kube.errors


def gke_state(fake: FakeGcp, plan_id: str = "") -> JSON:
    """The subnet's ranges, the firewall rules' sources and the cluster's node pools (`plan_id` written as
    <plan>, so applies of two plans made from the same estate compare)."""
    subnet = fake.subnet(gke_world.PROJECT, gke_world.REGION, gke_world.SUBNET)
    cluster = fake.cluster(gke_world.PROJECT, gke_world.LOCATION, gke_world.CLUSTER)
    assert subnet is not None and cluster is not None
    pools = sorted(
        (
            p["name"],
            p.get("networkConfig", {}).get("podRange"),
            json.dumps(p["config"].get("resourceLabels", {}), sort_keys=True),
        )
        for p in cluster.get("nodePools", [])
    )
    additional = cluster["ipAllocationPolicy"].get("additionalPodRangesConfig", {}).get("podRangeNames", [])
    rules = (fake.firewall(gke_world.PROJECT, r["name"]) for r in gke_world.incident_firewalls())
    firewalls = sorted((r["name"], sorted(r.get("sourceRanges", []))) for r in rules if r is not None)
    state = {
        "ranges": sorted((r["rangeName"], r["ipCidrRange"]) for r in subnet.get("secondaryIpRanges", [])),
        "pools": pools,
        "additional_pod_ranges": additional,
        "firewalls": firewalls,
    }
    return json.loads(json.dumps(state).replace(plan_id, "<plan>")) if plan_id else state


@pytest.mark.parametrize("seed", SEEDS)
def test_gke_diagnose_through_the_fault_proxy(seed: int, tmp_path: Path, fault_ledger: FaultLedger) -> None:
    with gke_behind_proxy(tmp_path, seed) as gke:
        clean = run("diagnose", *gke.target, "-o", "json", env=gke.env)
        assert clean.exit_code == 3, clean.output
        gke.set_rate(RATE)
        faulty = run("diagnose", *gke.target, "-o", "json", env=gke.env)
    same = (faulty.exit_code, faulty.stdout) == (clean.exit_code, clean.stdout)
    record(fault_ledger, f"gke diagnose via proxy [{seed}]", gke.proxies, same)
    assert all(sum(p.injected.values()) > 0 for p in gke.proxies)
    if not same:
        transient_stop(faulty, (6, 7))


def apply_until_done(command: list[str], env: dict[str, str], between: Callable[[], object] = lambda: None) -> int:
    """Run the same apply until it succeeds (at most MAX_RUNS times); every stop is transient. Its runs."""
    for runs in range(1, MAX_RUNS + 1):
        result = run(*command, env=env)
        if result.exit_code == 0:
            return runs
        transient_stop(result, (5, 6, 7))
        between()
    raise AssertionError(f"{' '.join(command)} did not converge in {MAX_RUNS} runs")


@pytest.mark.parametrize("strategy", ["node-pool", "cluster-range"])
def test_gke_apply_through_the_fault_proxy_converges(strategy: str, tmp_path: Path, fault_ledger: FaultLedger) -> None:
    def apply(rate: float) -> tuple[JSON, list[FaultProxy], int]:
        with gke_behind_proxy(tmp_path, SEEDS[0]) as gke:
            plan_path = tmp_path / f"plan-{rate}.json"
            made = run("expand", *gke.target, "--plan", "--strategy", strategy, "--out", str(plan_path), env=gke.env)
            assert made.exit_code == 0, made.output
            gke.set_rate(rate)
            command = ["expand", "--apply", str(plan_path), "--yes", "--kubeconfig", gke.kubeconfig]
            # What the fake accepted before a run stopped is carried out meanwhile, as GKE would.
            runs = apply_until_done(command, gke.env, gke.fake.finish_operations)
            return gke_state(gke.fake, load_plan(plan_path).plan_id), gke.proxies, runs

    expected, _, _ = apply(0.0)
    got, proxies, runs = apply(RATE)
    record(fault_ledger, f"gke apply {strategy} via proxy ({runs} runs)", proxies, got == expected)
    assert got == expected
    assert all(sum(p.injected.values()) > 0 for p in proxies)


def lease_of(kube: FakeKubeServer, plan_path: Path) -> JSON | None:
    return kube.get("coordination.k8s.io", "v1", "leases", lease_name(load_plan(plan_path)), "kube-system")


def test_gke_apply_killed_at_chosen_requests_resumes_and_rolls_back(
    tmp_path: Path, fault_ledger: FaultLedger, retry_sleeps: list[float]
) -> None:
    def apply_args(gke: Gke) -> list[str]:
        return ["expand", "--apply", "plan.json", "--yes", "--kubeconfig", gke.kubeconfig]

    with gke_behind_proxy(tmp_path) as gke:
        before = gke_state(gke.fake)
        assert run("expand", *gke.target, "--plan", "--out", str(tmp_path / "plan.json"), env=gke.env).exit_code == 0
        with contextlib.chdir(tmp_path):
            assert run(*apply_args(gke), env=gke.env).exit_code == 0
        expected = gke_state(gke.fake, load_plan(tmp_path / "plan.json").plan_id)
        clean_log = sorted((*gke.proxies[0].log, *gke.proxies[1].log), key=lambda s: s.at)
    assert expected != before

    for n, phase in kill_points(clean_log, SEEDS[0]):
        work = tmp_path / f"kill-{n}-{phase}"
        work.mkdir()
        with gke_behind_proxy(work) as gke:
            made = run("expand", *gke.target, "--plan", "--out", str(work / "plan.json"), env=gke.env)
            assert made.exit_code == 0, made.output
            switch = KillSwitch(n, phase)
            killed_child(apply_args(gke), {**os.environ, **gke.env}, switch, gke.proxies, work)
            assert (work / "plan.json.lock").exists()  # SIGKILL left the lock file behind
            orphaned = lease_of(gke.kube, work / "plan.json")
            gke.fake.finish_operations()  # what GKE accepted goes on without the dead client
            with contextlib.chdir(work):
                resumed = run(*apply_args(gke), env=gke.env)
                assert resumed.exit_code == 0, resumed.output
                assert "whose run ended without releasing it; resuming" in resumed.stderr, resumed.stderr
                if orphaned is not None:
                    assert "whose process is gone from this host; resuming" in resumed.stderr, resumed.stderr
                assert gke_state(gke.fake, load_plan(work / "plan.json").plan_id) == expected, (n, phase)
                assert not (work / "plan.json.lock").exists() and lease_of(gke.kube, work / "plan.json") is None
                back = run("rollback", "plan.json", "--yes", "--kubeconfig", gke.kubeconfig, env=gke.env)
                assert back.exit_code == 0, back.output
                assert gke_state(gke.fake) == before
        record(fault_ledger, f"gke apply killed at step write {n} ({phase})", gke.proxies, True, killed=True)


def test_gke_rollback_killed_at_chosen_undo_writes_is_taken_over_and_ends_where_the_estate_began(
    tmp_path: Path, fault_ledger: FaultLedger
) -> None:
    """`cidrx rollback` SIGKILLed at a seeded undo write (before it is forwarded, and after the server carried
    it out with its answer lost): the same command takes over the lock the dead run left, says so, resumes
    from the rollback journal and what is left live, and leaves the estate exactly as before the apply."""

    def applied(work: Path) -> contextlib.AbstractContextManager[Gke]:
        @contextlib.contextmanager
        def world() -> Iterator[Gke]:
            with gke_behind_proxy(work) as gke, contextlib.chdir(work):
                made = run("expand", *gke.target, "--plan", "--out", "plan.json", env=gke.env)
                assert made.exit_code == 0, made.output
                done = run("expand", "--apply", "plan.json", "--yes", "--kubeconfig", gke.kubeconfig, env=gke.env)
                assert done.exit_code == 0, done.output
                gke.fake.finish_operations()
                for proxy in gke.proxies:
                    proxy.log.clear()
                yield gke

        return world()

    def rollback_args(gke: Gke) -> list[str]:
        return ["rollback", "plan.json", "--yes", "--kubeconfig", gke.kubeconfig]

    clean = tmp_path / "clean"
    clean.mkdir()
    with gke_behind_proxy(clean) as gke:
        before = gke_state(gke.fake)
    with applied(clean) as gke:
        assert run(*rollback_args(gke), env=gke.env).exit_code == 0
        assert gke_state(gke.fake) == before
        writes = sum(step_write(s) for s in (*gke.proxies[0].log, *gke.proxies[1].log))
    assert writes >= 2, "the rollback undid fewer than two writes"
    rng = random.Random(SEEDS[1])
    for n, phase in ((rng.randint(1, writes), "request"), (rng.randint(1, writes), "answer")):
        work = tmp_path / f"kill-{n}-{phase}"
        work.mkdir()
        with applied(work) as gke:
            switch = KillSwitch(n, phase)
            killed_child(rollback_args(gke), {**os.environ, **gke.env}, switch, gke.proxies, work)
            assert (work / "plan.json.lock").exists()  # SIGKILL left the lock file behind
            orphaned = lease_of(gke.kube, work / "plan.json")
            gke.fake.finish_operations()  # what GKE accepted goes on without the dead client
            back = run(*rollback_args(gke), env=gke.env)
            assert back.exit_code == 0, back.output
            assert "whose run ended without releasing it; resuming" in back.stderr, back.stderr
            if orphaned is not None:
                assert "whose process is gone from this host; resuming" in back.stderr, back.stderr
            gke.fake.finish_operations()
            assert gke_state(gke.fake) == before, (n, phase)
            assert not (work / "plan.json.lock").exists() and lease_of(gke.kube, work / "plan.json") is None
        record(fault_ledger, f"gke rollback killed at undo write {n} ({phase})", gke.proxies, True, killed=True)


# ==== EKS (moto's server) and its cluster ======================================================================


@pytest.fixture(scope="module")
def moto_url() -> Iterator[str]:
    """moto's server on a free loopback port, for this process and the children it kills."""
    with moto_server() as url, pytest.MonkeyPatch.context() as mp:
        clean_env(mp, AWS_ENDPOINT_URL=url)
        yield url


@dataclass
class Eks:
    session: Any
    world: World
    kube: FakeKubeServer
    proxies: list[FaultProxy]  # in front of moto, and of the cluster's API server
    env: dict[str, str]
    kubeconfig: str

    @property
    def target(self) -> list[str]:
        return ["--eks", "--region", REGION, "--cluster", EKS_CLUSTER, "--kubeconfig", self.kubeconfig]

    def set_rate(self, rate: float) -> None:
        for proxy in self.proxies:
            proxy.rate = rate

    def state(self, plan_id: str = "") -> JSON:
        ec2, eks = self.session.client("ec2"), self.session.client("eks")
        state = inventory(ec2, eks, self.kube, self.world, plan_id=plan_id)
        # A disassociated CIDR stays listed for a while (state "disassociated"), in EC2 as in moto.
        state["vpc_cidrs"] = [c for c in state["vpc_cidrs"] if c[1] != "disassociated"]
        return state


@contextlib.contextmanager
def eks_behind_proxy(moto_url: str, tmp: Path, seed: int = 0) -> Iterator[Eks]:
    """The EKS incident in moto's server (reset first) and its cluster in a fake API server, a fault proxy in
    front of each (faults off until `set_rate`)."""
    import boto3
    import requests

    requests.post(f"{moto_url}/moto-api/reset", timeout=10).raise_for_status()
    session = boto3.Session(region_name=REGION)
    world = build_incident(session.client("ec2"), session.client("eks"), region=REGION, cluster=EKS_CLUSTER)
    kube, _hooks, _controller = incident_server(world)
    try:
        with (
            FaultProxy(moto_url, name="aws", seed=seed, kinds=WIRE_KINDS) as aws_proxy,
            FaultProxy(kube.url, name="kube", seed=seed, kinds=WIRE_KINDS) as kube_proxy,
        ):
            kubeconfig = kubeconfig_via(kube, kube_proxy, tmp / f"kubeconfig-{kube.port}")
            yield Eks(session, world, kube, [aws_proxy, kube_proxy], {"AWS_ENDPOINT_URL": aws_proxy.url}, kubeconfig)
    finally:
        kube.stop()
    assert not kube.errors


@pytest.mark.parametrize("seed", SEEDS)
def test_eks_diagnose_through_the_fault_proxy(
    seed: int, moto_url: str, tmp_path: Path, fault_ledger: FaultLedger
) -> None:
    with eks_behind_proxy(moto_url, tmp_path, seed) as eks:
        clean = run("diagnose", *eks.target, "-o", "json", env=eks.env)
        assert clean.exit_code == 3, clean.output
        eks.set_rate(RATE)
        faulty = run("diagnose", *eks.target, "-o", "json", env=eks.env)
    same = (faulty.exit_code, faulty.stdout) == (clean.exit_code, clean.stdout)
    record(fault_ledger, f"eks diagnose via proxy [{seed}]", eks.proxies, same)
    assert all(sum(p.injected.values()) > 0 for p in eks.proxies)
    if not same:
        transient_stop(faulty, (6, 7))


def test_eks_apply_through_the_fault_proxy_converges(moto_url: str, tmp_path: Path, fault_ledger: FaultLedger) -> None:
    def apply(rate: float) -> tuple[JSON, list[FaultProxy], int]:
        with eks_behind_proxy(moto_url, tmp_path, SEEDS[0]) as eks:
            plan_path = tmp_path / f"plan-{rate}.json"
            made = run("expand", *eks.target, "--plan", "--out", str(plan_path), env=eks.env)
            assert made.exit_code == 0, made.output
            eks.set_rate(rate)
            runs = apply_until_done(
                ["expand", "--apply", str(plan_path), "--yes", "--kubeconfig", eks.kubeconfig], eks.env
            )
            return eks.state(load_plan(plan_path).plan_id), eks.proxies, runs

    expected, _, _ = apply(0.0)
    got, proxies, runs = apply(RATE)
    record(fault_ledger, f"eks apply via proxy ({runs} runs)", proxies, got == expected)
    assert got == expected
    assert all(sum(p.injected.values()) > 0 for p in proxies)


def test_eks_apply_killed_at_chosen_requests_resumes_and_rolls_back(
    moto_url: str, tmp_path: Path, fault_ledger: FaultLedger
) -> None:
    def apply_args(eks: Eks) -> list[str]:
        return ["expand", "--apply", "plan.json", "--yes", "--kubeconfig", eks.kubeconfig]

    with eks_behind_proxy(moto_url, tmp_path) as eks:
        assert run("expand", *eks.target, "--plan", "--out", str(tmp_path / "plan.json"), env=eks.env).exit_code == 0
        with contextlib.chdir(tmp_path):
            assert run(*apply_args(eks), env=eks.env).exit_code == 0
        expected = eks.state(load_plan(tmp_path / "plan.json").plan_id)
        clean_log = sorted((*eks.proxies[0].log, *eks.proxies[1].log), key=lambda s: s.at)

    for n, phase in kill_points(clean_log, SEEDS[1]):
        work = tmp_path / f"kill-{n}-{phase}"
        work.mkdir()
        with eks_behind_proxy(moto_url, work) as eks:
            before = eks.state()
            made = run("expand", *eks.target, "--plan", "--out", str(work / "plan.json"), env=eks.env)
            assert made.exit_code == 0, made.output
            switch = KillSwitch(n, phase)
            killed_child(apply_args(eks), {**os.environ, **eks.env}, switch, eks.proxies, work)
            assert (work / "plan.json.lock").exists()
            orphaned = lease_of(eks.kube, work / "plan.json")
            with contextlib.chdir(work):
                resumed = run(*apply_args(eks), env=eks.env)
                assert resumed.exit_code == 0, resumed.output
                assert "whose run ended without releasing it; resuming" in resumed.stderr, resumed.stderr
                if orphaned is not None:
                    assert "whose process is gone from this host; resuming" in resumed.stderr, resumed.stderr
                assert eks.state(load_plan(work / "plan.json").plan_id) == expected, (n, phase)
                assert not (work / "plan.json.lock").exists() and lease_of(eks.kube, work / "plan.json") is None
                back = run("rollback", "plan.json", "--yes", "--kubeconfig", eks.kubeconfig, env=eks.env)
                assert back.exit_code == 0, back.output
                assert eks.state() == before
        record(fault_ledger, f"eks apply killed at step write {n} ({phase})", eks.proxies, True, killed=True)


# ==== delays past the client's timeout, and endpoints that hang ================================================

TIMEOUT = {"CIDRX_HTTP_TIMEOUT": "0.3"}  # seconds; each delay fault holds a request for DELAY
DELAY = 0.6


def hang(proxy: FaultProxy, rate: float) -> None:
    proxy.kinds, proxy.delay, proxy.rate = ("delay",), DELAY, rate
    if rate >= 1:
        proxy.max_run = 1_000  # every request, however often it is retried


def test_gke_delays_past_the_timeout_are_retried_and_a_hung_endpoint_is_exit_6(
    tmp_path: Path, fault_ledger: FaultLedger
) -> None:
    with gke_behind_proxy(tmp_path, SEEDS[0]) as gke:
        target = [*GKE_TARGET, "-o", "json"]
        clean = run("diagnose", *target, env=gke.env)
        gcp = gke.proxies[0]
        hang(gcp, 0.2)
        slow = run("diagnose", *target, env={**gke.env, **TIMEOUT})
        record(fault_ledger, "gke diagnose with delays", [gcp], slow.stdout == clean.stdout)
        assert gcp.injected["delay"] > 0
        assert (slow.exit_code, slow.stdout) == (clean.exit_code, clean.stdout)
        hang(gcp, 1.0)
        hung = run("diagnose", *target, env={**gke.env, **TIMEOUT, "CIDRX_RETRY_MAX_ATTEMPTS": "2"})
    transient_stop(hung, (6,))
    assert "Read timed out" in one_line_error(hung) and "gave up after 2 attempts" in one_line_error(hung)


def test_eks_and_kubernetes_endpoints_that_hang_are_exit_6(moto_url: str, tmp_path: Path) -> None:
    with eks_behind_proxy(moto_url, tmp_path) as eks:
        aws, kube = eks.proxies
        env = {**eks.env, **TIMEOUT, "CIDRX_RETRY_MAX_ATTEMPTS": "2"}
        hang(aws, 1.0)
        aws_hung = run("diagnose", *eks.target, env=env)
        hang(aws, 0.0)
        hang(kube, 1.0)
        kube_hung = run("diagnose", "--k8s", "--kubeconfig", eks.kubeconfig, env=env)
    transient_stop(aws_hung, (6,))
    assert "did not answer" in one_line_error(aws_hung)
    # An EKS diagnosis reads its cluster only if it can (a hung API server is a finding there): --k8s needs it.
    transient_stop(kube_hung, (6,))
    assert "cannot reach the Kubernetes API" in one_line_error(kube_hung) and "timed out" in one_line_error(kube_hung)


# ==== one fault at one place: the bugs the seeded runs found ==================================================


def test_gke_garbled_truncated_and_cut_answers_are_transient(tmp_path: Path) -> None:
    """The container REST transport raised UnicodeDecodeError (garbled) and protobuf's ParseError (truncated)
    past the retry policy (exit 1); a compute answer cut mid-body that lasted was an "internal error" (exit 1);
    a write's garbled answer was exit 7 after one request."""
    with gke_behind_proxy(tmp_path) as gke:
        target = [*GKE_TARGET, "-o", "json"]
        clean = run("diagnose", *target, env=gke.env)
        gcp = gke.proxies[0]
        # clusters.get is the first request of a collect (the script matches by substring, so the pattern
        # also fits its nodePools.list, which comes after the get succeeds).
        cluster_get = f"/clusters/{gke_world.CLUSTER}"
        gcp.script = [("GET", cluster_get, "garble"), ("GET", cluster_get, "truncate")]
        again = run("diagnose", *target, env=gke.env)
        assert (again.exit_code, again.stdout) == (clean.exit_code, clean.stdout)
        gets = sum(s.path.split("?")[0].endswith(cluster_get) for s in gcp.log)
        assert gcp.script == [] and gets == 4  # clean 1 + 3

        gcp.script = [("GET", "/aggregated/subnetworks", "cut")] * 2
        lasting = run("diagnose", *target, env={**gke.env, "CIDRX_RETRY_MAX_ATTEMPTS": "2"})
        transient_stop(lasting, (7,))
        assert "compute.subnetworks.list" in one_line_error(lasting) and "was cut off" in one_line_error(lasting)

        plan_path = tmp_path / "plan.json"
        assert run("expand", *gke.target, "--plan", "--out", str(plan_path), env=gke.env).exit_code == 0
        gcp.script = [("PATCH", "/subnetworks/", "garble")]  # carried out, its answer garbled
        apply = ["expand", "--apply", str(plan_path), "--yes", "--kubeconfig", gke.kubeconfig]
        stopped = run(*apply, env=gke.env)
        transient_stop(stopped, (5,))
        assert "Google's answer could not be read" in one_line_error(stopped)
        assert "the change may have been made" in one_line_error(stopped)
        gke.fake.finish_operations()
        resumed = run(*apply, env=gke.env)
        assert resumed.exit_code == 0, resumed.output
        ranges = gke_state(gke.fake)["ranges"]
        assert len(ranges) == 3 and [r[0] for r in ranges].count("pods-2") == 1  # added once


def test_eks_truncated_json_is_not_read_as_an_empty_answer(moto_url: str, tmp_path: Path) -> None:
    """botocore reads a JSON-protocol body that does not parse as {"message": body}: a ListNodegroups cut in
    half was an answer without node groups (a different diagnosis, exit 3), and a garbled byte raised
    UnicodeDecodeError (exit 1). Both are now retried."""
    with eks_behind_proxy(moto_url, tmp_path) as eks:
        target = [*eks.target, "-o", "json"]
        clean = run("diagnose", *target, env=eks.env)
        aws = eks.proxies[0]
        aws.script = [("GET", "/node-groups", "truncate"), ("GET", f"/clusters/{EKS_CLUSTER}", "garble")]
        again = run("diagnose", *target, env=eks.env)
        assert (again.exit_code, again.stdout) == (clean.exit_code, clean.stdout)
        assert aws.script == [] and aws.injected == Counter({"truncate": 1, "garble": 1})


def test_kubernetes_discovery_garbled_once_is_retried(tmp_path: Path) -> None:
    """GET /apis was decoded outside its retried call: one garbled answer ended the run with exit 7 (after a
    single request, "after every retry")."""
    from tests.support.cases import whereabouts as wc

    with FakeKubeServer() as server, FaultProxy(server.url, name="kube") as proxy:
        server.put_many(wc.crashed_node_objects())
        target = ["--k8s", "--kubeconfig", kubeconfig_via(server, proxy, tmp_path / "kubeconfig"), "-o", "json"]
        clean = run("diagnose", *target, env={"KUBECONFIG": None})
        proxy.script = [("GET", "/apis", "garble")]
        again = run("diagnose", *target, env={"KUBECONFIG": None})
    assert (again.exit_code, again.stdout) == (clean.exit_code, clean.stdout)
    assert proxy.injected == Counter({"garble": 1})


def test_kubernetes_write_with_a_garbled_answer_stops_the_apply_and_the_rerun_converges(tmp_path: Path) -> None:
    """A write whose answer cannot be read reached the server: it is not repeated, the apply stops with exit 5
    (as after a 5xx), not 7 after a single request; the same command finds it done."""
    from tests.app.test_faults import whereabouts_state
    from tests.support.cases import whereabouts as wc

    env: dict[str, str | None] = {"KUBECONFIG": None}

    def reclaim(garble: bool) -> JSON:
        with FakeKubeServer() as server, FaultProxy(server.url, name="kube") as proxy:
            server.put_many(wc.crashed_node_objects())
            kubeconfig = kubeconfig_via(server, proxy, tmp_path / f"kubeconfig-{garble}")
            plan_path = tmp_path / f"reclaim-{garble}.json"
            target = ["--k8s", "--kubeconfig", kubeconfig, "--ipam", "whereabouts"]
            made = run("reclaim", *target, "--plan", "--out", str(plan_path), env=env)
            assert made.exit_code == 0, made.output
            apply = ["reclaim", "--apply", str(plan_path), "--yes", "--kubeconfig", kubeconfig]
            if garble:
                proxy.script = [(method, "/ippools/", "garble") for method in ("PUT", "PATCH")]
                stopped = run(*apply, env=env)
                transient_stop(stopped, (5,))
                assert "unreadable answer to" in one_line_error(stopped)
                assert sum(proxy.injected.values()) == 1
            done = run(*apply, env=env)
            assert done.exit_code == 0, done.output
            return whereabouts_state(server, "")

    assert reclaim(garble=True) == reclaim(garble=False)


def test_kubernetes_write_answered_429_or_503_is_repeated_and_other_5xx_stop_the_apply(
    tmp_path: Path, retry_sleeps: list[float]
) -> None:
    """429 (priority and fairness) and 503 say the API server did not process the write: it is sent again
    after Retry-After and the apply goes on (before, a 503 stopped it with exit 5). A 502 may hide a write
    that happened: the apply stops with exit 5 and the same command, re-run, checks before it writes."""
    from tests.app.test_faults import whereabouts_state
    from tests.support.cases import whereabouts as wc

    env: dict[str, str | None] = {"KUBECONFIG": None}
    pool_write = ("PATCH", "/ippools/")

    def reclaim(name: str, script: list[str]) -> tuple[JSON, list[Result], FaultProxy]:
        with FakeKubeServer() as server, FaultProxy(server.url, name="kube", retry_after=4) as proxy:
            server.put_many(wc.crashed_node_objects())
            kubeconfig = kubeconfig_via(server, proxy, tmp_path / f"kubeconfig-{name}")
            plan_path = tmp_path / f"reclaim-{name}.json"
            target = ["--k8s", "--kubeconfig", kubeconfig, "--ipam", "whereabouts"]
            made = run("reclaim", *target, "--plan", "--out", str(plan_path), env=env)
            assert made.exit_code == 0, made.output
            proxy.script = [(*pool_write, kind) for kind in script]
            apply = ["reclaim", "--apply", str(plan_path), "--yes", "--kubeconfig", kubeconfig]
            results = [run(*apply, env=env)]
            if results[0].exit_code != 0:
                results.append(run(*apply, env=env))
            assert results[-1].exit_code == 0, results[-1].output
            assert proxy.script == []
            return whereabouts_state(server, ""), results, proxy

    expected, _, _ = reclaim("clean", [])
    retry_sleeps.clear()
    got, results, proxy = reclaim("throttled", ["429", "503"])
    assert got == expected and len(results) == 1  # one run: both refusals were repeated
    assert retry_sleeps == [4.0, 4.0]  # Retry-After, as the proxy said
    first_pool = next(s.path for s in proxy.log if s.method == "PATCH")
    assert [s.fault for s in proxy.log if s.path == first_pool and s.method == "PATCH"][:3] == ["429", "503", None]

    got, results, proxy = reclaim("bad-gateway", ["502"])
    assert got == expected and len(results) == 2
    transient_stop(results[0], (5,))
    assert "502 Bad Gateway" in one_line_error(results[0]) and "run the same command again" in one_line_error(
        results[0]
    )
    assert proxy.injected == Counter({"502": 1})


# ==== AKS (the ARM fake) =======================================================================================


@contextlib.contextmanager
def aks_behind_proxy(seed: int = 0) -> Iterator[tuple[FakeArm, FaultProxy, dict[str, str]]]:
    """The three AKS estates in the ARM fake, a fault proxy in front of it (faults off until its rate is set),
    and the environment that points cidrx's azure-mgmt clients at the proxy."""
    with (
        pytest.MonkeyPatch.context() as mp,
        aks_world.aks_estate(mp) as arm,
        FaultProxy(arm.url, name="arm", seed=seed, kinds=WIRE_KINDS) as proxy,
    ):
        yield arm, proxy, {aks_world.ENDPOINT_ENV: proxy.url}


def aks_state(arm: FakeArm, plan_id: str = "") -> JSON:
    """The node cluster's VNet (address space, subnets with their prefixes) and its agent pools with their
    subnets (`plan_id` written as <plan>)."""
    vnet = arm.vnet(aks_world.SUB, aks_world.RG, aks_world.NODE_VNET)["properties"]
    pools = sorted(
        (p["name"], str(p["properties"].get("vnetSubnetID", "")).rsplit("/", 1)[-1], p["properties"].get("count"))
        for key, p in arm.pools.items()
        if key[2].lower() == aks_world.NODE_CLUSTER.lower()
    )
    state = {
        "space": vnet["addressSpace"]["addressPrefixes"],
        "subnets": sorted((s["name"], s["properties"].get("addressPrefix")) for s in vnet["subnets"]),
        "pools": pools,
    }
    return json.loads(json.dumps(state).replace(plan_id, "<plan>")) if plan_id else state


AKS_TARGET = [*aks_world.target_flags(aks_world.NODE_CLUSTER), "--no-kube"]


@pytest.mark.parametrize("seed", SEEDS)
def test_aks_diagnose_through_the_fault_proxy(seed: int, fault_ledger: FaultLedger) -> None:
    with aks_behind_proxy(seed) as (_arm, proxy, env):
        clean = run("diagnose", *AKS_TARGET, "-o", "json", env=env)
        assert clean.exit_code == 3, clean.output
        proxy.rate = 0.5  # a diagnosis of a handful of requests: make it meet faults
        faulty = run("diagnose", *AKS_TARGET, "-o", "json", env=env)
    same = (faulty.exit_code, faulty.stdout) == (clean.exit_code, clean.stdout)
    record(fault_ledger, f"aks diagnose via proxy [{seed}]", [proxy], same)
    assert sum(proxy.injected.values()) > 0
    if not same:
        transient_stop(faulty, (6, 7))


@pytest.mark.parametrize("kind", ["garble", "truncate"])
def test_aks_unreadable_success_answers_are_transient(kind: str, tmp_path: Path) -> None:
    """azure-core retries status codes and broken connections but raises a 200 whose body does not parse
    (DecodeError, an HttpResponseError with status 200): it was "Azure refused ... (200)", exit 1. A read is
    now retried (the same JSON); on every attempt it is exit 7; a write's is not repeated: exit 5, and the same
    command, run again, converges."""
    with aks_behind_proxy() as (arm, proxy, env):
        target = [*AKS_TARGET, "-o", "json"]
        clean = run("diagnose", *target, env=env)
        proxy.script = [
            ("GET", "/managedClusters/", kind),
            ("GET", "/agentPools", kind),
            ("GET", "/virtualNetworks/", kind),
        ]
        again = run("diagnose", *target, env=env)
        assert (again.exit_code, again.stdout) == (clean.exit_code, clean.stdout)
        assert proxy.script == [] and proxy.injected == Counter({kind: 3})

        proxy.script = [("GET", "/virtualNetworks/", kind)] * 2
        lasting = run("diagnose", *target, env={**env, "CIDRX_RETRY_MAX_ATTEMPTS": "2"})
        transient_stop(lasting, (7,))
        assert "Azure's answer could not be read" in one_line_error(lasting)

        plan_path = tmp_path / "plan.json"
        assert run("expand", *AKS_TARGET, "--plan", "--out", str(plan_path), env=env).exit_code == 0
        expected_steps = len(load_plan(plan_path).steps)
        # The PUT's own answer only starts the operation (its body is not read); the subnet's GET that ends the
        # operation is the answer cidrx reads. The first GET (is it there already? 404) is left alone.
        proxy.script = [("GET", "/subnets/", kind)] * 2
        apply = ["expand", "--apply", str(plan_path), "--yes", "--no-kube"]
        stopped = run(*apply, env=env)
        transient_stop(stopped, (5,))
        assert "the change may have been made" in one_line_error(stopped)
        assert proxy.script == [] and "/subnets/" in next(s.path for s in reversed(proxy.log) if s.fault == kind)
        arm.finish_operations()
        resumed = run(*apply, env=env)
        assert resumed.exit_code == 0, resumed.output
        state = aks_state(arm)
        assert expected_steps >= 2 and len(state["pools"]) == 2 and len(state["subnets"]) == 4  # added once


@pytest.mark.parametrize("seed", SEEDS)
def test_aks_apply_through_the_fault_proxy_converges(seed: int, tmp_path: Path, fault_ledger: FaultLedger) -> None:
    def apply(rate: float) -> tuple[JSON, FaultProxy, int]:
        with aks_behind_proxy(seed) as (arm, proxy, env):
            plan_path = tmp_path / f"plan-{rate}.json"
            made = run("expand", *AKS_TARGET, "--plan", "--out", str(plan_path), env=env)
            assert made.exit_code == 0, made.output
            proxy.rate = rate
            command = ["expand", "--apply", str(plan_path), "--yes", "--no-kube"]
            # What ARM accepted before a run stopped is carried out meanwhile, as Azure would.
            runs = apply_until_done(command, env, arm.finish_operations)
            return aks_state(arm, load_plan(plan_path).plan_id), proxy, runs

    expected, _, _ = apply(0.0)
    got, proxy, runs = apply(0.5)
    record(fault_ledger, f"aks apply via proxy [{seed}] ({runs} runs)", [proxy], got == expected)
    assert got == expected
    assert sum(proxy.injected.values()) > 0
