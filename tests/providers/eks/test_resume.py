"""A custom-networking apply that dies after any step's cloud write still converges when the same command
is run again, with the journal kept or lost: the proof behind exit code 5's "run the same command again".

In-process: moto (`mock_aws`) for AWS and the fake Kubernetes API server for the cluster, both seeded with
the incident (tests/support/estates/eks_live.py). The interrupted run goes through the engine with
the real executors, each wrapped so that step k raises KeyboardInterrupt from inside `act` right after the
real `act` returned: the write reached the cloud, the journal never heard of it (and, in one case, the
process is killed outright while writing the journal). The resumed run is the real CLI
(`expand --apply PLAN --yes`). Its end state is compared with that of an uninterrupted apply of
the same plan in an identical world, as a normalised inventory (ids replaced by what they stand for), so
a duplicate subnet, association, node group, ENIConfig or env entry shows up as a difference.

Step ids are read from a plan, so a step added to the planner is covered without touching this file.
Waits never sleep: the interrupted runs use a fake clock, and in the CLI runs every wait is satisfied at the
first probe (moto and the fake DaemonSet controller answer at once).
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from cidrx.app import plan as app_plan
from cidrx.cli import cli
from cidrx.engine.executor import Executor, Outputs
from cidrx.engine.journal import Journal, journal_path
from cidrx.kube.api import KubeApi
from cidrx.model.options import PlanOptions
from cidrx.model.plan import Plan, load_plan, save_plan
from cidrx.model.snapshot import load_snapshot
from cidrx.providers.eks.actions.context import EksApis
from cidrx.providers.eks.api import EksApi
from cidrx.providers.eks.provider import PROVIDER
from tests.support.engine import CrashAfterAct, FakeClock, apply_in_boundary
from tests.support.estates.eks import World
from tests.support.estates.eks_cluster import DaemonSetController, inventory
from tests.support.estates.eks_live import eks_estate
from tests.support.fakes.kube_server import FakeKubeServer

pytestmark = pytest.mark.usefixtures("shared_botocore")  # sessions share one botocore loader

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "examples" / "eks-demo-ip.snapshot.json"
CLUSTER = "demo"
WORLD_SEED = 2023_11_04


def _example_step_ids() -> list[str]:
    """Step ids of the default plan for the incident (the bundled snapshot of it); pure, so cheap at import."""
    return [s.id for s in app_plan.make_plan(load_snapshot(EXAMPLE), PlanOptions()).steps]


STEP_IDS = _example_step_ids()


class Killed(BaseException):
    """What the engine sees of SIGKILL or a power cut: nothing. Not even its `failed` record gets written."""


@dataclass
class Incident:
    session: Any
    world: World
    kube: FakeKubeServer
    controller: DaemonSetController
    kubeconfig: str
    tmp: Path

    def apply_in_engine(self, plan: Plan, plan_path: Path, executors: Mapping[str, Executor], clock: FakeClock) -> int:
        """What `dispatch.apply_plan` does, with other executors and a fake clock (it takes neither), through
        the CLI's error boundary so the outcome is the exit code a user would get.

        No drift check: the plan was made for an identical world (the CLI run after this one checks)."""
        assert plan.target.region is not None

        @contextlib.contextmanager
        def apis() -> Iterator[EksApis]:
            with KubeApi(self.kubeconfig, None) as kube:
                yield EksApis(eks=EksApi(plan.target.region or ""), kube=kube)

        return apply_in_boundary(plan, plan_path, executors, apis, clock)

    def cli_apply(self, plan_path: Path) -> Result:
        return CliRunner().invoke(cli, ["expand", "--apply", str(plan_path), "--yes", "--kubeconfig", self.kubeconfig])

    @functools.cached_property
    def ec2(self) -> Any:
        return self.session.client("ec2")

    @functools.cached_property
    def eks(self) -> Any:
        return self.session.client("eks")

    def inventory(self, plan: Plan) -> dict[str, Any]:
        return inventory(self.ec2, self.eks, self.kube, self.world, plan_id=plan.plan_id)


def step_statuses(stdout: str, plan: Plan) -> dict[str, str]:
    """step id -> status from the result table `expand --apply` prints."""
    ids = {s.id for s in plan.steps}
    rows = [line.split() for line in stdout.splitlines()]
    return {row[0]: row[1] for row in rows if len(row) >= 2 and row[0] in ids}


def journal_events(plan_path: Path, plan: Plan, step_id: str) -> list[tuple[str, str | None]]:
    return [(e.event, e.error) for e in Journal.open(plan_path, plan).events if e.step == step_id]


@contextlib.contextmanager
def incident(tmp: Path, mp: pytest.MonkeyPatch) -> Iterator[Incident]:
    """The incident in moto and in a fake API server, in the fake AWS environment.

    moto draws its ids from one generator; seeded, every world built here has the same ids, so one plan
    fits them all (the tests check that it does)."""
    with eks_estate(tmp, mp, cluster=CLUSTER, seed=WORLD_SEED) as e:
        yield Incident(e.session, e.world, e.kube, e.controller, e.kubeconfig, tmp)


@dataclass(frozen=True)
class Baseline:
    plan: Plan
    world: World
    inventory: dict[str, Any]


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> Baseline:
    """The default plan for the incident (`expand --plan`) and what an uninterrupted apply leaves behind."""
    with pytest.MonkeyPatch.context() as mp, incident(tmp_path_factory.mktemp("baseline"), mp) as inc:
        plan_path = inc.tmp / "plan.json"
        made = CliRunner().invoke(
            cli,
            [
                *("expand", "--eks", "--region", inc.world.region, "--cluster", CLUSTER),
                *("--kubeconfig", inc.kubeconfig, "--plan", "--out", str(plan_path)),
            ],
        )
        assert made.exit_code == 0, made.output
        plan = load_plan(plan_path)
        result = inc.cli_apply(plan_path)
        assert result.exit_code == 0, result.output
        assert set(step_statuses(result.stdout, plan).values()) == {"done"}
        return Baseline(plan, inc.world, inc.inventory(plan))


@pytest.fixture
def inc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, baseline: Baseline) -> Iterator[Incident]:
    """A fresh incident, identical to the baseline's, with the baseline's plan in `tmp_path/plan.json`."""
    with incident(tmp_path, monkeypatch) as value:
        # Instance ids may differ: moto spends random numbers on first-use setup during the first world.
        assert replace(value.world, node_instance_ids=()) == replace(baseline.world, node_instance_ids=())
        save_plan(baseline.plan, tmp_path / "plan.json")
        yield value


def test_the_uninterrupted_apply_is_the_fix(baseline: Baseline) -> None:
    """The reference the resume tests compare with is itself the fix: one pod subnet per AZ in 100.64.0.0/20,
    routed like the subnet the new nodes use, its ENIConfig, custom networking on, and a second node group."""
    assert [s.id for s in baseline.plan.steps] == STEP_IDS  # the parametrisation covers this plan's steps
    inv = baseline.inventory
    ours = sorted((cidr, az) for cidr, az, tags in inv["subnets"] if ("cidrx.io/plan", "<plan>") in tags)
    assert ours == [("100.64.0.0/21", "ap-southeast-2a"), ("100.64.8.0/21", "ap-southeast-2b")]
    assert ("100.64.0.0/20", "associated") in inv["vpc_cidrs"]
    private = "eks-demo-ip-vpc-stack-PrivateRouteTable"
    assert {(private, "100.64.0.0/21"), (private, "100.64.8.0/21")} <= set(inv["route_table_associations"])
    assert [(e["name"], e["subnet"]) for e in inv["eniconfigs"]] == [
        ("ap-southeast-2a", "100.64.0.0/21"),
        ("ap-southeast-2b", "100.64.8.0/21"),
    ]
    assert dict(inv["aws_node_env"])["AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG"] == "true"
    assert [g["name"] for g in inv["nodegroups"]] == ["managed-ng", "managed-ng-cn"]


@pytest.mark.parametrize("journal", ["kept", "lost"])
@pytest.mark.parametrize("step_id", STEP_IDS)
def test_interrupted_right_after_a_write_the_same_command_finishes_the_job(
    step_id: str, journal: str, inc: Incident, baseline: Baseline
) -> None:
    plan, plan_path = baseline.plan, inc.tmp / "plan.json"
    acted: dict[str, Outputs] = {}
    crashing = {action: CrashAfterAct(ex, step_id, acted) for action, ex in PROVIDER.executors().items()}
    assert inc.apply_in_engine(plan, plan_path, crashing, FakeClock()) == 5
    assert step_id in acted  # the cloud (or the cluster) took the write ...
    assert journal_events(plan_path, plan, step_id) == [("started", None), ("failed", "interrupted")]  # ... unrecorded
    if journal == "lost":
        journal_path(plan_path).unlink()

    result = inc.cli_apply(plan_path)
    assert result.exit_code == 0, result.output
    crashed = STEP_IDS.index(step_id)
    # Everything up to the interrupted step is found already done (by the plan tag, not the journal).
    assert step_statuses(result.stdout, plan) == {
        sid: "skipped" if i <= crashed else "done" for i, sid in enumerate(STEP_IDS)
    }
    assert inc.inventory(plan) == baseline.inventory


def test_a_wait_that_times_out_exits_5_and_the_same_command_finishes(
    inc: Incident, baseline: Baseline, capsys: pytest.CaptureFixture[str]
) -> None:
    plan, plan_path = baseline.plan, inc.tmp / "plan.json"
    inc.controller.running = False  # aws-node's new pods never become ready
    clock = FakeClock()
    assert inc.apply_in_engine(plan, plan_path, PROVIDER.executors(), clock) == 5
    err = capsys.readouterr().err
    assert "step enable-custom-networking" in err and "timed out after 900s waiting for DaemonSet aws-node" in err
    assert "run the same command again" in err
    assert clock.slept == 900.0  # gave up at the deadline, on the fake clock
    assert [e for e, _ in journal_events(plan_path, plan, "enable-custom-networking")] == ["started", "acted", "failed"]
    eks = inc.eks
    assert eks.list_nodegroups(clusterName=CLUSTER)["nodegroups"] == ["managed-ng"]  # nothing after it ran

    # Still stuck: the rerun waits for the rollout again instead of going on to the node group.
    assert inc.apply_in_engine(plan, plan_path, PROVIDER.executors(), FakeClock()) == 5
    events = journal_events(plan_path, plan, "enable-custom-networking")
    assert [e for e, _ in events] == ["started", "acted", "failed"] * 2
    assert eks.list_nodegroups(clusterName=CLUSTER)["nodegroups"] == ["managed-ng"]

    inc.controller.running = True  # the rollout finishes after all
    result = inc.cli_apply(plan_path)
    assert result.exit_code == 0, result.output
    statuses = step_statuses(result.stdout, plan)
    assert statuses["enable-custom-networking"] == "skipped" and statuses["create-nodegroup"] == "done"
    assert inc.inventory(plan) == baseline.inventory
    records = [json.loads(line) for line in journal_path(plan_path).read_text().splitlines()]
    assert {r["step"] for r in records if r["event"] in ("done", "skipped")} == set(STEP_IDS)


def test_killed_while_journaling_a_write_the_same_command_finishes_the_job(inc: Incident, baseline: Baseline) -> None:
    plan, plan_path = baseline.plan, inc.tmp / "plan.json"
    step_id = "create-nodegroup"  # the longest step: the likeliest to be killed in
    acted: dict[str, Outputs] = {}
    killing = {action: CrashAfterAct(ex, step_id, acted, Killed) for action, ex in PROVIDER.executors().items()}
    with pytest.raises(Killed):
        inc.apply_in_engine(plan, plan_path, killing, FakeClock())
    assert step_id in acted
    with journal_path(plan_path).open("a") as fh:  # died halfway through writing the `acted` record
        fh.write(f'{{"ts":"2023-11-04T01:20:00.000Z","plan_digest":"{plan.digest}","step":"{step_id}","ev')
    assert journal_events(plan_path, plan, step_id) == [("started", None)]

    result = inc.cli_apply(plan_path)
    assert result.exit_code == 0, result.output
    assert step_statuses(result.stdout, plan) == {sid: "skipped" for sid in STEP_IDS}
    assert inc.inventory(plan) == baseline.inventory
    assert journal_events(plan_path, plan, step_id)[-1] == ("skipped", None)  # the torn tail was cut, not kept
