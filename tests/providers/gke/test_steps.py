"""The GKE step executors (cidrx/providers/gke/actions/) run by the real apply engine, through the real GkeApi and
google-cloud clients, against the loopback GCP fake (every request checked against Google's discovery
documents). Plans are built by hand here so these tests pin the executors, not the planner.

The world is the incident's: project p1, regional cluster demo-ip in australia-southeast1, subnet
demo-ip-subnet 10.0.0.0/24 with secondary ranges pods 10.4.0.0/22 (full: 4 nodes of /24) and services
10.8.0.0/24, node pool default-pool (e2-standard-4, 3 zones, max pods 110).

Time: the waiter's clock is fake, and each fake sleep lets the cloud's pending operations finish (as
real time would), so a wait for a busy cluster or a half-finished operation costs nothing.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from cidrx.engine.apply import ApplyResult, run_plan
from cidrx.engine.executor import Executor, Outputs, StepContext
from cidrx.engine.journal import Journal, journal_path
from cidrx.engine.waiting import Waiter
from cidrx.errors import CidrxError, StalePlan
from cidrx.model.plan import Plan, Step, save_plan, seal
from cidrx.model.target import Target
from cidrx.providers.gke.actions.operations import GkeApis
from cidrx.providers.gke.api import GkeApi
from cidrx.providers.gke.facts.pool_copy import PLAN_LABEL
from cidrx.providers.gke.provider import PROVIDER
from cidrx.render.progress import NullProgress
from tests.support.engine import FakeClock
from tests.support.fakes.gcp_server import FakeGcp, RequestRecord

P = "p1"
LOC = "australia-southeast1"
ZONES = [f"{LOC}-a", f"{LOC}-b", f"{LOC}-c"]
CLUSTER = "demo-ip"
SUBNET = "demo-ip-subnet"
NETWORK = "demo-vpc"
NEW_RANGE = "pods-2"
NEW_CIDR = "10.4.4.0/22"
NEW_POOL = "default-pool-2"
OLD_RANGES = {"pods": "10.4.0.0/22", "services": "10.8.0.0/24"}
EXECUTORS = PROVIDER.executors()
JSON = dict[str, Any]


# --- world and plans --------------------------------------------------------------------------------


def seed(gcp: FakeGcp) -> None:
    gcp.add_network(P, {"name": NETWORK})
    gcp.add_subnet(
        P,
        LOC,
        {
            "name": SUBNET,
            "network": NETWORK,
            "ipCidrRange": "10.0.0.0/24",
            "secondaryIpRanges": [{"rangeName": k, "ipCidrRange": v} for k, v in OLD_RANGES.items()],
        },
    )
    gcp.add_cluster(
        P,
        LOC,
        {
            "name": CLUSTER,
            "network": NETWORK,
            "subnetwork": SUBNET,
            "locations": ZONES,
            "defaultMaxPodsConstraint": {"maxPodsPerNode": "110"},
            "ipAllocationPolicy": {
                "useIpAliases": True,
                "clusterSecondaryRangeName": "pods",
                "servicesSecondaryRangeName": "services",
                "clusterIpv4CidrBlock": OLD_RANGES["pods"],
                "servicesIpv4CidrBlock": OLD_RANGES["services"],
            },
            "nodePools": [
                {
                    "name": "default-pool",
                    "config": {"machineType": "e2-standard-4", "diskSizeGb": 100},
                    "initialNodeCount": 1,
                    "locations": ZONES,
                    "autoscaling": {"enabled": True, "minNodeCount": 1, "maxNodeCount": 5},
                    "maxPodsConstraint": {"maxPodsPerNode": "110"},
                }
            ],
        },
    )


def node_pool_body() -> JSON:
    return {
        "name": NEW_POOL,
        "config": {"machineType": "e2-standard-4", "diskSizeGb": 100, "resourceLabels": {"team": "platform"}},
        "initialNodeCount": 1,
        "locations": ZONES,
        "autoscaling": {"enabled": True, "minNodeCount": 1, "maxNodeCount": 5},
        "maxPodsConstraint": {"maxPodsPerNode": 110},
        "management": {"autoRepair": True, "autoUpgrade": True},
        "networkConfig": {"podRange": NEW_RANGE},
    }


def make_plan(strategy: str, *, cidr: str = NEW_CIDR) -> Plan:
    steps = [
        Step(
            id="add-secondary-range",
            action="gke.add-secondary-range",
            params={"project": P, "region": LOC, "subnet": SUBNET, "range_name": NEW_RANGE, "cidr": cidr},
            description=f"add {NEW_RANGE} {cidr} to {SUBNET}",
        )
    ]
    basis: JSON = {
        "network": NETWORK,
        "subnet_region": LOC,
        "subnet": SUBNET,
        "subnet_ranges": dict(OLD_RANGES),
        "cidr": cidr,
        "range_name": NEW_RANGE,
        "template_pool": "default-pool",
        "cluster_pod_ranges": [],
    }
    if strategy == "node-pool":
        basis["node_pool_name"] = NEW_POOL
        steps.append(
            Step(
                id="create-node-pool",
                action="gke.create-node-pool",
                params={"project": P, "location": LOC, "cluster": CLUSTER, "node_pool": node_pool_body()},
                description=f"create node pool {NEW_POOL} on {NEW_RANGE}",
                depends_on=("add-secondary-range",),
            )
        )
    else:
        steps.append(
            Step(
                id="add-cluster-pod-ranges",
                action="gke.add-cluster-pod-ranges",
                params={"project": P, "location": LOC, "cluster": CLUSTER, "range_names": [NEW_RANGE]},
                description=f"add {NEW_RANGE} to {CLUSTER}",
                depends_on=("add-secondary-range",),
            )
        )
    target = Target(provider="gke", cluster=CLUSTER, project=P, location=LOC)
    return seal(
        Plan(
            target=target,
            created_at="2023-11-04T01:00:00Z",
            snapshot_fingerprint="sha256:test",
            strategy=strategy,
            basis=basis,
            steps=tuple(steps),
        )
    )


STRATEGIES = ("node-pool", "cluster-range")


# --- harness ----------------------------------------------------------------------------------------


@dataclass
class RecordingProgress(NullProgress):
    waits: list[tuple[str, float]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def waiting(self, what: str, elapsed: float) -> None:
        self.waits.append((what, elapsed))

    def note(self, text: str) -> None:
        self.notes.append(text)


@dataclass
class Outcome:
    result: ApplyResult | None
    error: CidrxError | None

    @property
    def exit_code(self) -> int:
        return 0 if self.error is None else self.error.exit_code

    def statuses(self) -> dict[str, str]:
        assert self.result is not None, self.error
        return {s.step_id: s.status for s in self.result.steps}


@dataclass
class World:
    gcp: FakeGcp
    tmp: Path
    progress: RecordingProgress = field(default_factory=RecordingProgress)

    def apply(self, plan: Plan, executors: Mapping[str, Executor] = EXECUTORS) -> Outcome:
        plan_path = self.tmp / f"{plan.strategy}.plan.json"
        if not plan_path.exists():
            save_plan(plan, plan_path)
        clock = FakeClock(on_sleep=self.gcp.finish_operations)
        ctx = StepContext(
            plan=plan,
            apis=GkeApis(gke=GkeApi(P, LOC), kube=None),
            waiter=Waiter(sleep=clock.sleep, monotonic=clock.monotonic),
            progress=self.progress,
        )
        try:
            return Outcome(run_plan(plan, executors, ctx, Journal.open(plan_path, plan)), None)
        except CidrxError as exc:
            return Outcome(None, exc)

    def journal(self, plan: Plan) -> Path:
        return journal_path(self.tmp / f"{plan.strategy}.plan.json")

    # -- the cloud as the test sees it (the fake's store, not through cidrx) --

    def ranges(self) -> list[tuple[str, str]]:
        subnet = self.gcp.subnet(P, LOC, SUBNET)
        assert subnet is not None
        return [(r["rangeName"], r["ipCidrRange"]) for r in subnet.get("secondaryIpRanges", [])]

    def pool(self, name: str = NEW_POOL) -> JSON | None:
        return self.gcp.node_pool(P, LOC, CLUSTER, name)

    def cluster_ranges(self) -> list[str]:
        cluster = self.gcp.cluster(P, LOC, CLUSTER)
        assert cluster is not None
        policy = cluster.get("ipAllocationPolicy", {})
        return list(policy.get("additionalPodRangesConfig", {}).get("podRangeNames", []))

    def writes(self) -> list[RequestRecord]:
        return [r for r in self.gcp.request_log if r.method != "GET"]

    def assert_fixed(self, plan: Plan) -> None:
        """The end state of a complete apply: exactly one new range, the old ones intact, and the pool or
        the cluster's range list using it, once."""
        assert self.ranges() == [*OLD_RANGES.items(), (NEW_RANGE, NEW_CIDR)]
        if plan.strategy == "node-pool":
            pool = self.pool()
            assert pool is not None
            assert pool["status"] == "RUNNING"
            assert pool["networkConfig"]["podRange"] == NEW_RANGE
            assert pool["config"]["resourceLabels"] == {"team": "platform", PLAN_LABEL: plan.plan_id}
            assert pool["config"]["machineType"] == "e2-standard-4"
            assert pool["locations"] == ZONES
            assert self.cluster_ranges() == []
        else:
            assert self.cluster_ranges() == [NEW_RANGE]
            assert self.pool() is None


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    with FakeGcp() as gcp:
        seed(gcp)
        monkeypatch.setenv("CIDRX_CONTAINER_ENDPOINT", gcp.url)
        monkeypatch.setenv("CIDRX_COMPUTE_ENDPOINT", gcp.url)
        monkeypatch.setenv("CIDRX_GCP_ANONYMOUS", "1")
        yield World(gcp, tmp_path)
    gcp.check()  # no request or answer outside Google's discovery documents


# --- the happy path and idempotence -----------------------------------------------------------------


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_apply_adds_the_range_and_puts_it_to_use(world: World, strategy: str) -> None:
    plan = make_plan(strategy)
    out = world.apply(plan)
    assert out.exit_code == 0, out.error
    assert set(out.statuses().values()) == {"done"}
    world.assert_fixed(plan)
    assert out.result is not None
    assert out.result.outputs("add-secondary-range")["cidr"] == NEW_CIDR
    # The subnet patch carried the fingerprint and the FULL list of ranges (existing + new).
    (patch,) = world.gcp.requests("PATCH", f"/subnetworks/{SUBNET}")
    assert patch.body["fingerprint"]
    assert [r["rangeName"] for r in patch.body["secondaryIpRanges"]] == ["pods", "services", NEW_RANGE]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_second_apply_changes_nothing(world: World, strategy: str) -> None:
    plan = make_plan(strategy)
    assert world.apply(plan).exit_code == 0
    world.gcp.reset_log()
    again = world.apply(plan)
    assert again.exit_code == 0, again.error
    assert set(again.statuses().values()) == {"skipped"}
    assert world.writes() == []
    world.assert_fixed(plan)


def test_the_create_node_pool_request_carries_the_plan_label(world: World) -> None:
    plan = make_plan("node-pool")
    assert world.apply(plan).exit_code == 0
    (create,) = world.gcp.requests("POST", "/nodePools")
    sent = create.body["nodePool"]
    assert sent["config"]["resourceLabels"][PLAN_LABEL] == plan.plan_id
    assert sent["networkConfig"]["podRange"] == NEW_RANGE
    assert plan.steps[1].params["node_pool"]["config"]["resourceLabels"] == {"team": "platform"}  # plan untouched


def test_operations_are_polled_with_progress(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A node pool that takes a while: the wait goes through ctx.wait_until, which reports progress."""
    with FakeGcp(op_polls=6) as gcp:
        seed(gcp)
        for name in ("CIDRX_CONTAINER_ENDPOINT", "CIDRX_COMPUTE_ENDPOINT"):
            monkeypatch.setenv(name, gcp.url)
        monkeypatch.setenv("CIDRX_GCP_ANONYMOUS", "1")
        w = World(gcp, tmp_path)
        plan = make_plan("node-pool")

        # Without the clock finishing operations (no on_sleep), only polling moves them on.
        clock = FakeClock()
        ctx = StepContext(
            plan=plan,
            apis=GkeApis(gke=GkeApi(P, LOC), kube=None),
            waiter=Waiter(sleep=clock.sleep, monotonic=clock.monotonic),
            progress=w.progress,
        )
        result = run_plan(plan, EXECUTORS, ctx, Journal.open(tmp_path / "plan.json", plan))
        assert result.done == 2
        w.assert_fixed(plan)
        assert gcp.count("GET", "/operations/") >= 12  # both operations polled until DONE
        waited = {what for what, _ in w.progress.waits}
        assert any(NEW_RANGE in what for what in waited)
        assert any(f"node pool {NEW_POOL}" in what for what in waited)
    gcp.check()


# --- the subnet fingerprint race --------------------------------------------------------------------


def race_on_first_patch(world: World, changes: JSON) -> None:
    """Another writer changes the subnet right after we read it, before our patch arrives."""
    fired: list[RequestRecord] = []

    def hook(record: RequestRecord) -> None:
        if record.method == "PATCH" and SUBNET in record.path and not fired:
            fired.append(record)
            world.gcp.update_subnet(P, LOC, SUBNET, changes)

    world.gcp.on_request = hook


def test_a_harmless_concurrent_change_is_re_read_and_kept(world: World) -> None:
    plan = make_plan("node-pool")
    other = {"rangeName": "batch", "ipCidrRange": "10.12.0.0/22"}
    current = world.gcp.subnet(P, LOC, SUBNET)
    assert current is not None
    race_on_first_patch(
        world, {"description": "edited meanwhile", "secondaryIpRanges": [*current["secondaryIpRanges"], other]}
    )
    out = world.apply(plan)
    assert out.exit_code == 0, out.error
    patches = world.gcp.requests("PATCH", f"/subnetworks/{SUBNET}")
    assert len(patches) == 2  # 412, then the patch built from a fresh read
    assert patches[0].body["fingerprint"] != patches[1].body["fingerprint"]
    assert world.ranges() == [*OLD_RANGES.items(), ("batch", "10.12.0.0/22"), (NEW_RANGE, NEW_CIDR)]
    subnet = world.gcp.subnet(P, LOC, SUBNET)
    assert subnet is not None and subnet["description"] == "edited meanwhile"
    assert world.pool() is not None


@pytest.mark.parametrize(
    ("change", "named"),
    [
        pytest.param({"rangeName": "intruder", "ipCidrRange": "10.4.6.0/23"}, "intruder (10.4.6.0/23)", id="overlap"),
        pytest.param(None, "services (10.8.0.0/24) was removed", id="basis-range-removed"),
    ],
)
def test_a_concurrent_change_that_breaks_the_plan_is_stale_and_writes_nothing(
    world: World, change: JSON | None, named: str
) -> None:
    plan = make_plan("node-pool")
    current = world.gcp.subnet(P, LOC, SUBNET)
    assert current is not None
    if change:  # someone adds a range that overlaps ours
        ranges = [*current["secondaryIpRanges"], change]
    else:  # someone removes a range the plan saw
        ranges = [r for r in current["secondaryIpRanges"] if r["rangeName"] != "services"]
    race_on_first_patch(world, {"secondaryIpRanges": ranges})
    out = world.apply(plan)
    assert isinstance(out.error, StalePlan) and out.exit_code == 4
    assert named in out.error.message and "make a new plan" in out.error.message
    assert (NEW_RANGE, NEW_CIDR) not in world.ranges()
    assert len(world.gcp.requests("PATCH", f"/subnetworks/{SUBNET}")) == 1  # only the refused one
    assert world.gcp.count("POST", "/nodePools") == 0
    assert world.pool() is None


def test_an_overlap_that_was_there_before_the_first_read_is_stale_with_no_write(world: World) -> None:
    current = world.gcp.subnet(P, LOC, SUBNET)
    assert current is not None
    intruder = {"rangeName": "intruder", "ipCidrRange": "10.4.4.0/24"}
    world.gcp.update_subnet(P, LOC, SUBNET, {"secondaryIpRanges": [*current["secondaryIpRanges"], intruder]})
    out = world.apply(make_plan("cluster-range"))
    assert isinstance(out.error, StalePlan), out.error
    assert world.writes() == []


def test_our_range_name_with_another_cidr_is_stale(world: World) -> None:
    current = world.gcp.subnet(P, LOC, SUBNET)
    assert current is not None
    taken = {"rangeName": NEW_RANGE, "ipCidrRange": "10.20.0.0/22"}
    world.gcp.update_subnet(P, LOC, SUBNET, {"secondaryIpRanges": [*current["secondaryIpRanges"], taken]})
    out = world.apply(make_plan("node-pool"))
    assert isinstance(out.error, StalePlan)
    assert "10.20.0.0/22" in out.error.message
    assert world.writes() == []


def test_a_subnet_that_never_stops_changing_gives_up_resumably(world: World) -> None:
    def hook(record: RequestRecord) -> None:
        if record.method == "PATCH" and SUBNET in record.path:
            world.gcp.update_subnet(P, LOC, SUBNET, {"description": f"edit {world.gcp.count('PATCH')}"})

    world.gcp.on_request = hook
    out = world.apply(make_plan("node-pool"))
    assert out.exit_code == 5
    assert "kept changing" in str(out.error)
    assert len(world.gcp.requests("PATCH", f"/subnetworks/{SUBNET}")) == 4  # first try + 3 re-reads
    world.gcp.on_request = None
    assert world.apply(make_plan("node-pool")).exit_code == 0


# --- node pools that are not ours -------------------------------------------------------------------


@pytest.mark.parametrize("label", [None, "0123456789abcdef"], ids=["unlabelled", "other-plan"])
def test_a_same_named_pool_that_is_not_ours_is_stale(world: World, label: str | None) -> None:
    config: JSON = {"machineType": "e2-standard-2"}
    if label:
        config["resourceLabels"] = {PLAN_LABEL: label}
    world.gcp.add_node_pool(P, LOC, CLUSTER, {"name": NEW_POOL, "config": config, "initialNodeCount": 1})
    out = world.apply(make_plan("node-pool"))
    assert isinstance(out.error, StalePlan) and out.exit_code == 4
    assert f"a node pool named {NEW_POOL} was created" in out.error.message
    assert world.gcp.count("POST", "/nodePools") == 0
    pool = world.pool()
    assert pool is not None and pool["config"]["machineType"] == "e2-standard-2"  # left alone


# --- serialised cluster operations --------------------------------------------------------------------


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_busy_cluster_is_waited_for(world: World, strategy: str) -> None:
    """Someone else's operation is running on the cluster: GKE refuses ours with 400 FAILED_PRECONDITION
    "incompatible operation"; the step waits (with progress) and retries once it is over."""
    plan = make_plan(strategy)
    # Let the range step go through, then occupy the cluster just before our cluster write.
    blocker = {"name": "blocker", "config": {"machineType": "e2-small"}, "initialNodeCount": 1}
    write = "POST" if strategy == "node-pool" else "PUT"
    started: list[bool] = []

    def hook(record: RequestRecord) -> None:
        if record.method == write and "/clusters/" in record.path and not started:
            started.append(True)
            GkeApi(P, LOC).create_node_pool(CLUSTER, blocker)  # its operation stays RUNNING until time passes

    world.gcp.on_request = hook
    out = world.apply(plan)
    assert out.exit_code == 0, out.error
    world.gcp.on_request = None
    if strategy == "node-pool":
        assert world.gcp.count("POST", "/nodePools") == 3  # ours refused, the blocker, ours again
    else:
        assert world.gcp.count("PUT", f"/clusters/{CLUSTER}") == 2  # refused, then accepted
    assert world.pool("blocker") is not None
    if strategy == "node-pool":
        pool = world.pool()
        assert pool is not None and pool["networkConfig"]["podRange"] == NEW_RANGE
    else:
        assert world.cluster_ranges() == [NEW_RANGE]


# --- operations that fail ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("strategy", "failing", "path"),
    [
        ("node-pool", "add-secondary-range", f"/subnetworks/{SUBNET}"),
        ("cluster-range", "add-secondary-range", f"/subnetworks/{SUBNET}"),
        ("cluster-range", "add-cluster-pod-ranges", f"/clusters/{CLUSTER}"),
    ],
)
def test_an_operation_that_fails_exits_5_and_the_rerun_finishes(
    world: World, strategy: str, failing: str, path: str
) -> None:
    plan = make_plan(strategy)
    world.gcp.inject_operation_error(400, "quota exceeded for the moment", path_contains=path)
    out = world.apply(plan)
    assert out.exit_code == 5
    assert f"step {failing}" in str(out.error) and "quota exceeded for the moment" in str(out.error)
    again = world.apply(plan)
    assert again.exit_code == 0, again.error
    world.assert_fixed(plan)


def test_a_node_pool_whose_creation_fails_exits_5_and_says_how_to_recover(world: World) -> None:
    plan = make_plan("node-pool")
    world.gcp.inject_operation_error(400, "zone stockout", method="POST", path_contains="/nodePools")
    out = world.apply(plan)
    assert out.exit_code == 5
    assert "zone stockout" in str(out.error)
    pool = world.pool()
    assert pool is not None and pool["status"] == "ERROR"  # GKE leaves the failed pool behind
    # The rerun finds our pool in ERROR: no second create, and the message says what to do.
    again = world.apply(plan)
    assert again.exit_code == 5
    assert f"gcloud container node-pools delete {NEW_POOL}" in str(again.error)
    assert world.gcp.count("POST", "/nodePools") == 1


# --- crash anywhere, rerun converges ----------------------------------------------------------------


class Crash(KeyboardInterrupt):
    """Ctrl-C (or a kill) at a chosen point of the apply."""


class CrashAt:
    """The real executor, except that at (`step_id`, `point`) the run dies: `check` (the step before
    finished completely, this one has not started), `act` (our write reached the cloud, its operation
    is still running and the journal has not heard of it) or `wait` (the journal has the operation too)."""

    def __init__(self, inner: Executor, step_id: str, point: str) -> None:
        self.inner, self.step_id, self.point = inner, step_id, point

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        if (step.id, "check") == (self.step_id, self.point):
            raise Crash
        return self.inner.check(step, params, ctx)

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        outputs = self.inner.act(step, params, ctx)
        if (step.id, "act") == (self.step_id, self.point):
            raise Crash
        return outputs

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        if (step.id, "wait") == (self.step_id, self.point):
            raise Crash
        self.inner.wait(step, params, ctx, outputs)

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        self.inner.verify(step, params, ctx, outputs)


def crash_points() -> list[Any]:
    points = []
    for strategy in STRATEGIES:
        ids = [s.id for s in make_plan(strategy).steps]
        for i, step_id in enumerate(ids):
            points.append(pytest.param(strategy, step_id, "act", id=f"{strategy}-{step_id}-after-write"))
            points.append(pytest.param(strategy, step_id, "wait", id=f"{strategy}-{step_id}-while-waiting"))
            if i > 0:  # raising in step k+1's check = dying right after step k finished
                points.append(pytest.param(strategy, step_id, "check", id=f"{strategy}-after-{ids[i - 1]}"))
    return points


@pytest.mark.parametrize("journal", ["kept", "lost"])
@pytest.mark.parametrize(("strategy", "step_id", "point"), crash_points())
def test_a_crash_anywhere_then_the_same_apply_converges(
    world: World, strategy: str, step_id: str, point: str, journal: str
) -> None:
    plan = make_plan(strategy)
    crashing = {action: CrashAt(ex, step_id, point) for action, ex in EXECUTORS.items()}
    out = world.apply(plan, crashing)
    assert out.exit_code == 5, out.error
    if journal == "lost":
        world.journal(plan).unlink()

    again = world.apply(plan)
    assert again.exit_code == 0, again.error
    ids = [s.id for s in plan.steps]
    crashed = ids.index(step_id)
    statuses = again.statuses()
    for i, sid in enumerate(ids):
        if i < crashed:
            assert statuses[sid] == "skipped"
    world.assert_fixed(plan)  # exactly one new range, one pool / one listed range: no duplicates
    assert world.gcp.count("POST", "/nodePools") == (1 if strategy == "node-pool" else 0)

    world.gcp.reset_log()
    third = world.apply(plan)
    assert set(third.statuses().values()) == {"skipped"} and world.writes() == []
