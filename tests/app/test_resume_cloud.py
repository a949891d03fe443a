"""Crash and resume for the cloud plans tests/test_eks_resume.py does not cover: GKE node-pool and
cluster-range, EKS prefix delegation, and the EKS managed add-on branch (vpc-cni installed as an EKS
add-on, so the CNI settings go through UpdateAddon: step action `eks.update-addon-env`) of both EKS plans.

Why it exists: exit code 5 promises "run the same command again". For every step k of each plan, with the
journal kept and with it deleted, an apply dies right after the cloud accepted step k's write and before
the journal recorded it (the real executor's `act` returned, then Ctrl-C inside the CLI's error boundary:
exit 5). The same plan is then applied by the real CLI (`expand --apply PLAN --yes`, drift check
included) and must finish the job. Its end state is compared with that of an uninterrupted apply of the
same plan on an identical fresh world, as a normalised inventory of everything the plan could touch
(subnets with their secondary ranges, networks, node pools, cluster pod ranges, global addresses and
subnet CIDR reservations, VPC CIDRs, route tables, node groups, ENIConfigs, aws-node env, the add-on's
configuration, tags and labels, with ids and timestamps replaced), and the writes of the crashed and the
resumed run together must be exactly those of the uninterrupted one: nothing done twice.

Estates: the GKE incident in the loopback GCP fake (tests/support/estates/gke.py, --no-kube); the EKS incident in
moto (`mock_aws`, ids seeded so every estate built here has the same ones and one plan fits them all) with its
cluster in the fake Kubernetes API server (tests/support/estates/eks_cluster.py), and the EKS add-on operations
moto lacks answered by tests/support/fakes/eks_addons.py. Waits never sleep: the crashed runs use a fake clock,
and the CLI runs' waits are satisfied at the first probe.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import pytest
from click.testing import CliRunner, Result

from cidrx.app import apply as app_apply
from cidrx.cli import cli
from cidrx.engine.executor import Executor, Outputs
from cidrx.engine.journal import Journal, journal_path
from cidrx.model.plan import Plan, load_plan, save_plan
from tests.support.engine import CrashAfterAct, FakeClock, apply_in_boundary
from tests.support.estates import gke as gw
from tests.support.estates.eks import REGION, AwsCalls, World, build_incident
from tests.support.estates.eks_cluster import build_prefix_world, inventory
from tests.support.estates.eks_discovery import build_discovery_off
from tests.support.estates.eks_live import ADDON_BEFORE, eks_estate
from tests.support.fakes.eks_addons import FakeEksAddons
from tests.support.fakes.gcp_server import FakeGcp
from tests.support.fakes.kube_server import is_lock

pytestmark = pytest.mark.usefixtures("shared_botocore")  # sessions share one botocore loader

JSON = dict[str, Any]
CLUSTER = "demo"
WORLD_SEED = 2023_11_04
WRITES = ("POST", "PUT", "PATCH", "DELETE")
# What the vpc-cni add-on was configured with before cidrx: the add-on step must keep all of it.


@dataclass(frozen=True)
class Kind:
    """One plan kind: where it runs, the strategy `expand --plan` is given, and how many steps its plan has
    (the baseline test checks the count, so a step added to a planner fails here until covered)."""

    name: str
    cloud: Literal["gke", "eks"]
    strategy: str
    steps: int
    addon: bool = False

    @property
    def prefix_world(self) -> bool:
        return self.strategy == "prefix-delegation"

    @property
    def switch(self) -> str:
        """The VPC CNI env the plan turns on."""
        return {
            "prefix-delegation": "ENABLE_PREFIX_DELEGATION",
            "subnet-discovery": "ENABLE_SUBNET_DISCOVERY",
        }.get(self.strategy, "AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG")


KINDS = {
    k.name: k
    for k in (
        Kind("gke-node-pool", "gke", "node-pool", 3),
        Kind("gke-cluster-range", "gke", "cluster-range", 3),
        Kind("eks-prefix-delegation", "eks", "prefix-delegation", 3),
        Kind("eks-addon-custom-networking", "eks", "custom-networking", 9, addon=True),
        Kind("eks-addon-prefix-delegation", "eks", "prefix-delegation", 3, addon=True),
        # tests/support/estates/eks_discovery.py with ENABLE_SUBNET_DISCOVERY=false on aws-node
        Kind("eks-subnet-discovery", "eks", "subnet-discovery", 5),
        Kind("eks-addon-subnet-discovery", "eks", "subnet-discovery", 5, addon=True),
    )
}


# --- clocks, recorders ---------------------------------------------------------------------------------


# --- normalised inventories ------------------------------------------------------------------------------

# Fields a fake fills with fresh random or time values: two identical worlds differ in them and nothing else.
VOLATILE = frozenset(
    {
        "id",
        "fingerprint",
        "creationTimestamp",
        "createTime",
        "selfLinkWithId",
        "startTime",
        "endTime",
        "targetId",
        "stateDetails",  # a peering's "[<time>]: Connected."
    }
)


def scrub(value: Any, plan_id: str) -> Any:
    """`value` without volatile fields, the plan id replaced by "<plan>" (lists kept: duplicates show)."""
    if isinstance(value, dict):
        return {k: scrub(v, plan_id) for k, v in sorted(value.items()) if k not in VOLATILE}
    if isinstance(value, list):
        return [scrub(v, plan_id) for v in value]
    if isinstance(value, str) and plan_id in value:
        return value.replace(plan_id, "<plan>")
    return value


def gke_inventory(fake: FakeGcp, plan_id: str) -> JSON:
    """Every network, subnet (with its secondary ranges), global address and cluster (with its node pools
    and additional pod ranges) in the fake. The fake has no list-everything call, so its stores are read
    under its lock, the way its list handlers read them."""
    with fake._lock:
        subnets = {"/".join(k): scrub(v, plan_id) for k, v in sorted(fake._subnets.items())}
        networks = sorted(fake._networks)
        addresses = {"/".join(k): scrub(v, plan_id) for k, v in sorted(fake._addresses.items())}
        clusters = sorted(fake._clusters)
    return {
        "subnets": subnets,
        "networks": {"/".join(k): scrub(fake.network(*k), plan_id) for k in networks},
        "addresses": addresses,
        "clusters": {"/".join(k): scrub(fake.cluster(*k), plan_id) for k in clusters},
    }


def eks_inventory(env: Env, plan_id: str) -> JSON:
    """tests/support/estates/eks_cluster.py's inventory, plus every subnet's CIDR reservations and the vpc-cni
    add-on."""
    assert env.world is not None and env.kube is not None
    ec2, eks = env.session.client("ec2"), env.session.client("eks")
    inv = inventory(ec2, eks, env.kube, env.world, plan_id=plan_id)
    subnets = ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [env.world.vpc_id]}])["Subnets"]
    reservations = []
    for s in subnets:
        found = ec2.get_subnet_cidr_reservations(SubnetId=s["SubnetId"])
        for r in [*found.get("SubnetIpv4CidrReservations", []), *found.get("SubnetIpv6CidrReservations", [])]:
            tags = sorted((t["Key"], t["Value"]) for t in r.get("Tags") or [])
            reservations.append(
                (s["CidrBlock"], r["Cidr"], r["ReservationType"], r.get("Description", ""), scrub(tags, plan_id))
            )
    inv["reservations"] = scrub(sorted(reservations), plan_id)
    if env.addons is not None:
        addon = env.addons.addon(CLUSTER)
        assert addon is not None
        inv["addon"] = {
            "status": addon["status"],
            "version": addon["addonVersion"],
            "configuration": json.loads(addon.get("configurationValues") or "{}"),
        }
    return inv


# --- worlds ----------------------------------------------------------------------------------------------


@dataclass
class Env:
    """A fresh world of one kind, with what the tests need to drive and inspect it."""

    kind: Kind
    tmp: Path
    gcp: FakeGcp | None = None
    session: Any = None
    world: World | None = None
    kube: Any = None
    kubeconfig: str = ""
    aws: AwsCalls = field(default_factory=AwsCalls)
    addons: FakeEksAddons | None = None

    @property
    def target(self) -> list[str]:
        if self.gcp is not None:
            return ["--gke", "--project", gw.PROJECT, "--location", gw.LOCATION, "--cluster", gw.CLUSTER, "--no-kube"]
        return ["--eks", "--region", REGION, "--cluster", CLUSTER, "--kubeconfig", self.kubeconfig]

    def cli_plan(self, path: Path) -> Plan:
        made = CliRunner().invoke(
            cli, ["expand", *self.target, "--plan", "--strategy", self.kind.strategy, "--out", str(path)]
        )
        assert made.exit_code == 0, made.output
        return load_plan(path)

    def cli_apply(self, path: Path) -> Result:
        where = ["--no-kube"] if self.gcp is not None else ["--kubeconfig", self.kubeconfig]
        return CliRunner().invoke(cli, ["expand", "--apply", str(path), "--yes", *where])

    @contextlib.contextmanager
    def engine_apis(self) -> Iterator[Any]:
        """What `dispatch.apply_plan` hands the executors (it takes no fake clock, so the engine runs here)."""
        if self.gcp is not None:
            from cidrx.providers.gke.actions.operations import GkeApis
            from cidrx.providers.gke.api import GkeApi

            yield GkeApis(gke=GkeApi(gw.PROJECT, gw.LOCATION), kube=None)
            return
        from cidrx.kube.api import KubeApi
        from cidrx.providers.eks.actions.context import EksApis
        from cidrx.providers.eks.api import EksApi

        with KubeApi(self.kubeconfig, None) as kube:
            yield EksApis(eks=EksApi(REGION), kube=kube)

    def clock(self) -> FakeClock:
        gcp = self.gcp
        return FakeClock(on_sleep=gcp.finish_operations) if gcp is not None else FakeClock()

    def settle(self) -> None:
        """What time does after a crash: an operation the dead run started (a GCP operation, an EKS add-on
        update) finishes while nobody watches. The fakes finish them only when polled, so this plays time."""
        if self.gcp is not None:
            self.gcp.finish_operations()
        if self.addons is not None:
            for entry in self.addons.updates.values():
                if entry["update"]["status"] == "InProgress":
                    entry["update"]["status"] = "Successful"
                    self.addons.addons[(entry["cluster"], entry["addon"])]["status"] = "ACTIVE"

    def reset_logs(self) -> None:
        if self.gcp is not None:
            self.gcp.reset_log()
        else:
            self.aws.calls.clear()
            self.kube.reset_log()

    def writes(self) -> list[str]:
        """Every write the cloud (and cluster) received since the last reset; GCP operation polls
        (`.../operations/...:wait` is a POST) are reads."""
        if self.gcp is not None:
            return [
                f"{r.method} {r.path}"
                for r in self.gcp.request_log
                if r.method in WRITES and "/operations/" not in r.path
            ]
        kube = [f"kube {r.method} {r.path}" for r in self.kube.requests() if r.method in WRITES and not is_lock(r)]
        return [*self.aws.writes(), *kube]

    def inventory(self, plan: Plan) -> JSON:
        if self.gcp is not None:
            return gke_inventory(self.gcp, plan.plan_id)
        return eks_inventory(self, plan.plan_id)


def _clean_env(mp: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("CIDRX_") or name == "KUBECONFIG":
            mp.delenv(name)


@contextlib.contextmanager
def gke_env(kind: Kind, tmp: Path, mp: pytest.MonkeyPatch) -> Iterator[Env]:
    _clean_env(mp)
    with gw.gke_estate(mp) as fake:  # fails on any request or answer outside Google's discovery documents
        yield Env(kind, tmp, gcp=fake)


@contextlib.contextmanager
def eks_env(kind: Kind, tmp: Path, mp: pytest.MonkeyPatch) -> Iterator[Env]:
    env = Env(kind, tmp)
    builder = {"prefix-delegation": build_prefix_world, "subnet-discovery": build_discovery_off}.get(
        kind.strategy, build_incident
    )
    handlers = [("before-call", env.aws)]
    with eks_estate(
        tmp, mp, builder=builder, handlers=handlers, addon=kind.addon, addon_config=ADDON_BEFORE, seed=WORLD_SEED
    ) as estate:
        env.session, env.world, env.kube, env.addons = estate.session, estate.world, estate.kube, estate.addons
        env.kubeconfig = estate.kubeconfig
        env.reset_logs()
        yield env


def fresh(kind: Kind, tmp: Path, mp: pytest.MonkeyPatch) -> contextlib.AbstractContextManager[Env]:
    return gke_env(kind, tmp, mp) if kind.cloud == "gke" else eks_env(kind, tmp, mp)


# --- the reference: an uninterrupted apply ---------------------------------------------------------------


@dataclass(frozen=True)
class Baseline:
    plan: Plan
    world: World | None
    inventory: JSON
    writes: tuple[str, ...]


@pytest.fixture(scope="module")
def baselines(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Kind], Baseline]:
    """Per kind (made on first use): the plan `expand --plan` makes for a fresh world, and what the
    uninterrupted `expand --apply` of it leaves behind and writes."""
    made: dict[str, Baseline] = {}

    def get(kind: Kind) -> Baseline:
        if kind.name not in made:
            tmp = tmp_path_factory.mktemp(kind.name)
            with pytest.MonkeyPatch.context() as mp, fresh(kind, tmp, mp) as env:
                plan = env.cli_plan(tmp / "plan.json")
                env.reset_logs()
                result = env.cli_apply(tmp / "plan.json")
                assert result.exit_code == 0, result.output
                assert set(statuses(result, plan).values()) == {"done"}, result.output
                made[kind.name] = Baseline(plan, env.world, env.inventory(plan), tuple(env.writes()))
        return made[kind.name]

    return get


def statuses(result: Result, plan: Plan) -> dict[str, str]:
    """step id -> status from the result table `expand --apply` prints."""
    ids = {s.id for s in plan.steps}
    rows = [line.split() for line in result.stdout.splitlines()]
    return {row[0]: row[1] for row in rows if len(row) >= 2 and row[0] in ids}


@pytest.mark.parametrize("kind_name", list(KINDS))
def test_the_uninterrupted_apply_is_the_fix(kind_name: str, baselines: Callable[[Kind], Baseline]) -> None:
    """The reference the resume tests compare with is itself the fix, and the parametrisation covers
    every step of the plan the CLI makes."""
    kind = KINDS[kind_name]
    base = baselines(kind)
    assert len(base.plan.steps) == kind.steps
    inv, b = base.inventory, base.plan.basis
    if kind.cloud == "gke":
        subnet = inv["subnets"][f"{gw.PROJECT}/{gw.REGION}/{gw.SUBNET}"]
        ranges = [(r["rangeName"], r["ipCidrRange"]) for r in subnet["secondaryIpRanges"]]
        assert ranges == [*b["subnet_ranges"].items(), (b["range_name"], b["cidr"])]
        cluster = inv["clusters"][f"{gw.PROJECT}/{gw.LOCATION}/{gw.CLUSTER}"]
        listed = cluster["ipAllocationPolicy"].get("additionalPodRangesConfig", {}).get("podRangeNames", [])
        pools = {p["name"]: p for p in cluster["nodePools"]}
        if kind.strategy == "node-pool":
            assert listed == [] and sorted(pools) == sorted([gw.POOL, b["node_pool_name"]])
            ours = pools[b["node_pool_name"]]
            assert ours["networkConfig"]["podRange"] == b["range_name"] and ours["status"] == "RUNNING"
            assert ours["config"]["resourceLabels"]["cidrx-plan"] == "<plan>"
        else:
            assert listed == [b["range_name"]] and list(pools) == [gw.POOL]
        assert len(base.writes) == kind.steps  # one write per step
        return
    actions = [s.action for s in base.plan.steps]
    assert ("eks.update-addon-env" in actions) == kind.addon
    assert ("kube.set-daemonset-env" in actions) != kind.addon
    if kind.prefix_world:
        reserve = [s for s in base.plan.steps if s.action == "eks.reserve-subnet-cidr"]
        assert sorted((r[1], r[2]) for r in inv["reservations"]) == sorted(
            (s.params["cidr"], "prefix") for s in reserve
        )
    elif kind.strategy == "subnet-discovery":
        tagged = [(cidr, az) for cidr, az, tags in inv["subnets"] if ("kubernetes.io/role/cni", "1") in tags]
        assert tagged == sorted((s.params["cidr"], s.params["az"]) for s in base.plan.steps[::2][:2])
        assert {("eks-demo-ip-vpc-stack-PublicRouteTable", c) for c, _ in tagged} <= set(
            inv["route_table_associations"]
        )
        assert [g["name"] for g in inv["nodegroups"]] == ["managed-ng"] and inv["eniconfigs"] == []
    else:
        assert [g["name"] for g in inv["nodegroups"]] == ["managed-ng", "managed-ng-cn"]
        assert [e["name"] for e in inv["eniconfigs"]] == [f"{REGION}a", f"{REGION}b"]
    wanted = kind.switch
    if kind.addon:
        config = inv["addon"]["configuration"]
        assert config["init"] == ADDON_BEFORE["init"]  # what others configured is kept
        assert config["env"]["WARM_IP_TARGET"] == "5"
        assert config["env"][wanted] == "true" and inv["addon"]["status"] == "ACTIVE"
        assert dict(inv["aws_node_env"])[wanted] == "false"  # EKS owns aws-node: cidrx leaves it alone
        assert base.writes.count("eks:UpdateAddon") == 1
    else:
        assert dict(inv["aws_node_env"])[wanted] == "true"


# --- crash right after step k's write, then the same command ----------------------------------------------


def crash_after_step(env: Env, plan: Plan, path: Path, step_id: str) -> None:
    """Apply `plan` with the provider's real executors until step `step_id`'s act returned (the cloud took
    the write), then Ctrl-C, inside the CLI's error boundary: exit 5, and the journal never heard of it."""
    acted: dict[str, Outputs] = {}
    real = app_apply.executors(plan)
    crashing: dict[str, Executor] = {a: CrashAfterAct(ex, step_id, acted) for a, ex in real.items()}
    clock = env.clock()

    assert apply_in_boundary(plan, path, crashing, env.engine_apis, clock) == 5
    assert step_id in acted
    events = [(e.event, e.error) for e in Journal.open(path, plan).events if e.step == step_id]
    assert events == [("started", None), ("failed", "interrupted")]


def _crash_points() -> list[Any]:
    return [pytest.param(k.name, i, id=f"{k.name}-step{i + 1}") for k in KINDS.values() for i in range(k.steps)]


@pytest.mark.parametrize("journal", ["kept", "lost"])
@pytest.mark.parametrize(("kind_name", "index"), _crash_points())
def test_interrupted_right_after_a_write_the_same_command_finishes_the_job(
    kind_name: str,
    index: int,
    journal: str,
    baselines: Callable[[Kind], Baseline],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kind = KINDS[kind_name]
    base = baselines(kind)
    plan, path = base.plan, tmp_path / "plan.json"
    step_id = plan.steps[index].id
    with fresh(kind, tmp_path, monkeypatch) as env:
        if env.world is not None:  # the same ids, so the baseline's plan fits (instance ids are not in it)
            assert base.world is not None
            assert replace(env.world, node_instance_ids=()) == replace(base.world, node_instance_ids=())
        save_plan(plan, path)
        crash_after_step(env, plan, path, step_id)
        assert env.writes()  # the step's write reached the cloud
        env.settle()
        if journal == "lost":
            journal_path(path).unlink()

        result = env.cli_apply(path)
        assert result.exit_code == 0, result.output
        assert statuses(result, plan) == {s.id: "skipped" if i <= index else "done" for i, s in enumerate(plan.steps)}
        assert env.inventory(plan) == base.inventory
        assert Counter(env.writes()) == Counter(base.writes)  # crashed + resumed run: every write exactly once

        env.reset_logs()  # and a third run finds nothing left to do
        again = env.cli_apply(path)
        assert again.exit_code == 0, again.output
        assert set(statuses(again, plan).values()) == {"skipped"}
        assert env.writes() == []


@pytest.mark.parametrize("kind_name", [k.name for k in KINDS.values() if k.addon])
def test_a_rerun_waits_for_the_add_on_update_the_crashed_run_started(
    kind_name: str, baselines: Callable[[Kind], Baseline], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Crash right after UpdateAddon and rerun at once: the add-on already shows the new env but is still
    UPDATING. The rerun must wait until it is ACTIVE (as the first run would have) before later steps."""
    kind = KINDS[kind_name]
    base = baselines(kind)
    plan, path = base.plan, tmp_path / "plan.json"
    step = next(s for s in plan.steps if s.action == "eks.update-addon-env")
    with fresh(kind, tmp_path, monkeypatch) as env:
        assert env.addons is not None
        save_plan(plan, path)
        crash_after_step(env, plan, path, step.id)
        assert (env.addons.addon(CLUSTER) or {})["status"] == "UPDATING"  # no settle(): still in progress
        env.aws.calls.clear()
        env.addons.answered.clear()

        result = env.cli_apply(path)
        assert result.exit_code == 0, result.output
        assert env.inventory(plan) == base.inventory
        # Every DescribeAddon before the first later write: the rerun looked until the update had settled.
        later = [c for c in env.aws.calls if c in ("eks:CreateNodegroup", "ec2:CreateSubnetCidrReservation")]
        first_write = env.aws.calls.index(later[0]) if later else len(env.aws.calls)
        looks = env.aws.calls[:first_write].count("eks:DescribeAddon")
        assert env.addons.answered[:looks][:1] == ["UPDATING"] and "ACTIVE" in env.addons.answered[:looks]
