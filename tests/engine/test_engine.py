"""The apply engine against a small dict-backed cloud: ordering, `${...}` outputs, resume after a crash at
every point (with and without the journal), error policy and exit codes, waiting with a fake clock, and
progress output.

`Cloud` below is a test double of a cloud API (resources with ids, tags and a pending -> available
state), not of cidrx code: the executors in this file drive it the way the EKS/GKE executors drive the
real APIs, finding what an earlier run made by the plan tag.
"""

from __future__ import annotations

import io
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from cidrx.engine.apply import ApplyResult, execution_order, run_plan
from cidrx.engine.executor import Executor, Outputs, StepContext, parse_ref, resolve_params
from cidrx.engine.journal import Journal, journal_path
from cidrx.engine.waiting import Waiter
from cidrx.errors import AccessDenied, ApplyInterrupted, CidrxError, CloudError, InvalidInput, StalePlan
from cidrx.model.plan import DIGEST_TAG, Plan, Step, load_plan, save_plan
from cidrx.render.progress import LiveProgress, NullProgress, PlainProgress, Progress, make_progress
from tests.support.engine import FakeClock, sealed_eks_plan

STEP_TAG = "cidrx.io/step"


# --- the fake cloud ------------------------------------------------------------------------------------


class Killed(BaseException):
    """Stands in for the process dying (SIGKILL, OOM, power loss): nothing after the raise point runs,
    not even the engine's failure record."""


class Cloud:
    """Dict-backed stand-in for a cloud API. Resources become `available` `ready_after` seconds after
    creation; `faults[(step_id, point)]` is raised once when an executor reaches that point."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.resources: dict[str, dict[str, Any]] = {}
        self.env: dict[str, str] = {}
        self.writes = 0
        self.ready_after = 5.0
        self.faults: dict[tuple[str, str], BaseException] = {}
        self.drop_fields: set[str] = set()  # fields the "cloud" silently ignores on create
        self._ids: Counter[str] = Counter()

    def fault(self, step_id: str, point: str) -> None:
        exc = self.faults.pop((step_id, point), None)
        if exc is not None:
            raise exc

    def create(self, kind: str, attrs: dict[str, Any], tags: dict[str, str]) -> str:
        self._ids[kind] += 1
        rid = f"{kind}-{self._ids[kind]:04d}"
        kept = {k: v for k, v in attrs.items() if k not in self.drop_fields}
        self.resources[rid] = {"kind": kind, "attrs": kept, "tags": dict(tags), "created": self.clock.now}
        self.writes += 1
        return rid

    def find(self, kind: str, tags: dict[str, str]) -> list[str]:
        return [
            rid
            for rid, r in self.resources.items()
            if r["kind"] == kind and all(r["tags"].get(k) == v for k, v in tags.items())
        ]

    def state(self, rid: str) -> str:
        return "available" if self.clock.now >= self.resources[rid]["created"] + self.ready_after else "pending"

    def set_env(self, env: dict[str, str]) -> None:
        self.env.update(env)
        self.writes += 1

    def contents(self) -> dict[str, Any]:
        return {
            "resources": {rid: {k: v for k, v in r.items() if k != "created"} for rid, r in self.resources.items()},
            "env": dict(self.env),
        }


# --- executors driving it ------------------------------------------------------------------------------


class TaggedResource:
    """Creates one `kind` resource per step from its params, tagged with the plan id and the step id."""

    def __init__(self, kind: str, output_key: str) -> None:
        self.kind = kind
        self.output_key = output_key
        self.seen_hints: list[dict[str, Outputs]] = []

    def _tags(self, step: Step, ctx: StepContext) -> dict[str, str]:
        return {DIGEST_TAG: ctx.plan_id, STEP_TAG: step.id}

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        self.seen_hints.append(dict(ctx.journal_outputs))
        found = ctx.apis.find(self.kind, self._tags(step, ctx))
        if len(found) > 1:
            raise CloudError(f"{len(found)} {self.kind}s carry the tag of step {step.id}")
        return {self.output_key: found[0]} if found else None

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        rid = ctx.apis.create(self.kind, params, self._tags(step, ctx))
        ctx.apis.fault(step.id, "after-write")
        return {self.output_key: rid}

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        ctx.apis.fault(step.id, "wait")
        rid = outputs[self.output_key]
        ctx.wait_until(
            f"{self.kind} {rid} to be available",
            lambda: True if ctx.apis.state(rid) == "available" else None,
            timeout=60,
            interval=1,
            max_interval=8,
        )

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        rid = outputs[self.output_key]
        attrs = ctx.apis.resources[rid]["attrs"]
        for key, want in params.items():
            if attrs.get(key) != want:
                raise CloudError(f"{rid} has {key}={attrs.get(key)!r}, the plan says {want!r}")


class SetEnv:
    """A patch with no resource id: done when the environment already has the values."""

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        env: dict[str, str] = params["env"]
        return {} if all(ctx.apis.env.get(k) == v for k, v in env.items()) else None

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        ctx.apis.set_env(params["env"])
        ctx.apis.fault(step.id, "after-write")
        return {}

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        ctx.apis.fault(step.id, "wait")

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        if self.check(step, params, ctx) is None:
            raise CloudError("aws-node environment does not have the custom networking settings")


def make_executors() -> dict[str, Executor]:
    return {
        "associate-cidr": TaggedResource("vpc-cidr-assoc", "association_id"),
        "create-subnet": TaggedResource("subnet", "subnet_id"),
        "create-eniconfig": TaggedResource("eniconfig", "name"),
        "set-env": SetEnv(),
        "create-nodegroup": TaggedResource("nodegroup", "nodegroup_arn"),
    }


# --- plans ---------------------------------------------------------------------------------------------

SG = "sg-0c1a2b3c4d5e6f708"


def eks_steps() -> tuple[Step, ...]:
    def subnet(az: str, cidr: str) -> Step:
        return Step(
            f"subnet-{az}",
            "create-subnet",
            {"vpc_id": "vpc-0a1b2c3d", "cidr": cidr, "az": az, "association": "${vpc-cidr.association_id}"},
            f"Create subnet {cidr} in {az}",
            depends_on=("vpc-cidr",),
        )

    def eniconfig(az: str) -> Step:
        return Step(
            f"eniconfig-{az}",
            "create-eniconfig",
            {"name": az, "spec": {"subnet": f"${{subnet-{az}.subnet_id}}", "securityGroups": [SG]}},
            f"Create ENIConfig {az}",
            depends_on=(f"subnet-{az}",),
        )

    return (
        Step(
            "vpc-cidr",
            "associate-cidr",
            {"vpc_id": "vpc-0a1b2c3d", "cidr": "100.64.0.0/20"},
            "Associate 100.64.0.0/20 with vpc-0a1b2c3d",
        ),
        subnet("ap-southeast-2a", "100.64.0.0/21"),
        subnet("ap-southeast-2b", "100.64.8.0/21"),
        eniconfig("ap-southeast-2a"),
        eniconfig("ap-southeast-2b"),
        Step(
            "aws-node-env",
            "set-env",
            {
                "env": {
                    "AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG": "true",
                    "ENI_CONFIG_LABEL_DEF": "topology.kubernetes.io/zone",
                }
            },
            "Turn on custom networking in aws-node",
        ),
        Step(
            "nodegroup",
            "create-nodegroup",
            {
                "name": "cidrx-100-64",
                "subnets": ["${subnet-ap-southeast-2a.subnet_id}", "${subnet-ap-southeast-2b.subnet_id}"],
            },
            "Create node group cidrx-100-64",
            depends_on=("eniconfig-ap-southeast-2a", "eniconfig-ap-southeast-2b", "aws-node-env"),
        ),
    )


STEP_IDS = [s.id for s in eks_steps()]


def make_plan(steps: tuple[Step, ...] | None = None) -> Plan:
    return sealed_eks_plan(steps if steps is not None else eks_steps())


@dataclass
class World:
    """One cluster's cloud plus a plan file on disk; `apply()` is one `cidrx expand --apply` run."""

    tmp_path: Path
    clock: FakeClock = field(default_factory=FakeClock)
    cloud: Cloud = field(init=False)
    plan_path: Path = field(init=False)
    executors: dict[str, Executor] = field(default_factory=make_executors)

    def __post_init__(self) -> None:
        self.cloud = Cloud(self.clock)
        self.plan_path = self.tmp_path / "plan.json"
        save_plan(make_plan(), self.plan_path)

    def use_plan(self, plan: Plan) -> None:
        save_plan(plan, self.plan_path)

    def apply(
        self, *, progress: Progress | None = None, preflight: Any = None, report_every: float = 10.0
    ) -> ApplyResult:
        plan = load_plan(self.plan_path)
        journal = Journal.open(self.plan_path, plan)
        ctx = StepContext(
            plan=plan,
            apis=self.cloud,
            waiter=Waiter(sleep=self.clock.sleep, monotonic=self.clock.monotonic, report_every=report_every),
            progress=progress or NullProgress(),
        )
        return run_plan(plan, self.executors, ctx, journal, preflight=preflight)

    def journal_events(self) -> list[tuple[str, str]]:
        plan = load_plan(self.plan_path)
        return [(e.step, e.event) for e in Journal.open(self.plan_path, plan).events]


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The cloud after one uninterrupted apply: what every resumed apply must converge to."""
    w = World(tmp_path_factory.mktemp("reference"))
    w.apply()
    return w.cloud.contents()


# --- fresh run, rerun ----------------------------------------------------------------------------------


def test_fresh_run_executes_every_step_in_order_with_outputs_flowing(world: World) -> None:
    result = world.apply()

    assert [(s.step_id, s.status) for s in result.steps] == [(i, "done") for i in STEP_IDS]
    assert (result.done, result.skipped, result.changed) == (7, 0, True)
    assert world.journal_events() == [(i, e) for i in STEP_IDS for e in ("started", "acted", "done")]

    res = world.cloud.resources
    assoc = result.outputs("vpc-cidr")["association_id"]
    subnet_a = result.outputs("subnet-ap-southeast-2a")["subnet_id"]
    subnet_b = result.outputs("subnet-ap-southeast-2b")["subnet_id"]
    assert res[subnet_a]["attrs"] == {
        "vpc_id": "vpc-0a1b2c3d",
        "cidr": "100.64.0.0/21",
        "az": "ap-southeast-2a",
        "association": assoc,
    }
    eni_a = res[result.outputs("eniconfig-ap-southeast-2a")["name"]]
    assert eni_a["attrs"]["spec"] == {"subnet": subnet_a, "securityGroups": [SG]}
    nodegroup = res[result.outputs("nodegroup")["nodegroup_arn"]]
    assert nodegroup["attrs"]["subnets"] == [subnet_a, subnet_b]
    assert all(r["tags"][DIGEST_TAG] == load_plan(world.plan_path).plan_id for r in res.values())
    assert world.cloud.env["AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG"] == "true"
    assert sum(world.clock.sleeps) >= 5 * 6  # every resource was waited for, on the fake clock


def test_second_run_skips_every_step_and_creates_nothing(world: World) -> None:
    first = world.apply()
    before, writes = world.cloud.contents(), world.cloud.writes

    second = world.apply()

    assert [(s.step_id, s.status) for s in second.steps] == [(i, "skipped") for i in STEP_IDS]
    assert (second.done, second.skipped, second.changed) == (0, 7, False)
    assert [s.outputs for s in second.steps] == [s.outputs for s in first.steps]
    assert world.cloud.contents() == before
    assert world.cloud.writes == writes
    assert world.journal_events()[-7:] == [(i, "skipped") for i in STEP_IDS]


def test_step_undone_behind_the_journals_back_is_redone_with_a_note(world: World) -> None:
    world.apply()
    world.cloud.env.clear()  # someone rolled aws-node back by hand
    out = io.StringIO()

    result = world.apply(progress=PlainProgress(out))

    assert [s.step_id for s in result.steps if s.status == "done"] == ["aws-node-env"]
    assert world.cloud.env["ENI_CONFIG_LABEL_DEF"] == "topology.kubernetes.io/zone"
    assert "aws-node-env: the journal says this step was done, but the cloud no longer shows it" in out.getvalue()


# --- crashes and resume --------------------------------------------------------------------------------

CRASHES: dict[str, tuple[str, Callable[[], BaseException]]] = {
    "cloud-error-after-write": ("after-write", lambda: CloudError("connection reset by peer")),
    "killed-after-write": ("after-write", lambda: Killed()),
    "killed-while-waiting": ("wait", lambda: Killed()),
}


@pytest.mark.parametrize("keep_journal", [True, False], ids=["journal-kept", "journal-deleted"])
@pytest.mark.parametrize("crash", list(CRASHES))
@pytest.mark.parametrize("k", range(len(STEP_IDS)), ids=STEP_IDS)
def test_crash_after_the_cloud_accepted_step_k_then_rerun_converges(
    world: World, reference: dict[str, Any], k: int, crash: str, keep_journal: bool
) -> None:
    point, make_exc = CRASHES[crash]
    world.cloud.faults[(STEP_IDS[k], point)] = make_exc()

    if crash.startswith("killed"):
        with pytest.raises(Killed):
            world.apply()
        assert world.journal_events()[-1][0] == STEP_IDS[k]
    else:
        with pytest.raises(ApplyInterrupted) as err:
            world.apply()
        assert err.value.exit_code == 5
        assert f"step {STEP_IDS[k]} (" in str(err.value)
        assert "connection reset by peer" in str(err.value)
        assert "run the same command again to resume" in str(err.value)
        assert world.journal_events()[-1] == (STEP_IDS[k], "failed")

    if not keep_journal:
        journal_path(world.plan_path).unlink()

    result = world.apply()

    assert world.cloud.contents() == reference  # same resources, same ids: nothing created twice
    statuses = [s.status for s in result.steps]
    assert statuses == ["skipped"] * (k + 1) + ["done"] * (len(STEP_IDS) - k - 1)

    writes = world.cloud.writes
    again = world.apply()
    assert again.done == 0
    assert world.cloud.writes == writes


def test_resumed_executors_get_the_journal_outputs_as_hints(world: World) -> None:
    world.cloud.faults[("subnet-ap-southeast-2a", "wait")] = CloudError("throttled")
    with pytest.raises(ApplyInterrupted):
        world.apply()
    subnet_exec = world.executors["create-subnet"]
    assert isinstance(subnet_exec, TaggedResource)

    world.apply()

    hints = subnet_exec.seen_hints[-1]
    assert hints["vpc-cidr"] == {"association_id": "vpc-cidr-assoc-0001"}
    assert hints["subnet-ap-southeast-2a"] == {"subnet_id": "subnet-0001"}
    assert "subnet-ap-southeast-2b" not in hints


def test_torn_journal_line_after_a_crash_is_tolerated(world: World, reference: dict[str, Any]) -> None:
    world.cloud.faults[("subnet-ap-southeast-2b", "after-write")] = Killed()
    with pytest.raises(Killed):
        world.apply()
    with journal_path(world.plan_path).open("ab") as f:
        f.write(b'{"ts":"2024-05-01T10:00:0')  # the process died mid-write

    result = world.apply()

    assert result.done == 4
    assert world.cloud.contents() == reference
    lines = journal_path(world.plan_path).read_text().splitlines()
    assert all(line.startswith('{"ts":') and line.endswith("}") for line in lines)


def test_journal_from_another_plan_is_refused(world: World) -> None:
    world.apply()
    writes = world.cloud.writes
    other = make_plan(eks_steps()[:1])
    world.use_plan(other)

    with pytest.raises(InvalidInput) as err:
        world.apply()

    assert err.value.exit_code == 2
    assert "belongs to another plan; move it away or re-plan" in str(err.value)
    assert world.cloud.writes == writes


def test_keyboard_interrupt_stops_with_exit_5_and_resumes(world: World, reference: dict[str, Any]) -> None:
    world.cloud.faults[("subnet-ap-southeast-2a", "wait")] = KeyboardInterrupt()

    with pytest.raises(ApplyInterrupted) as err:
        world.apply()

    assert err.value.exit_code == 5
    assert str(err.value) == "interrupted during step subnet-ap-southeast-2a; run the same command again to resume"
    assert world.journal_events()[-2:] == [("subnet-ap-southeast-2a", "acted"), ("subnet-ap-southeast-2a", "failed")]

    world.apply()
    assert world.cloud.contents() == reference


def test_wait_that_times_out_stops_with_exit_5_and_resumes(world: World, reference: dict[str, Any]) -> None:
    world.cloud.ready_after = 10_000
    start = world.clock.now

    with pytest.raises(ApplyInterrupted) as err:
        world.apply()

    assert err.value.exit_code == 5
    assert str(err.value) == (
        "step vpc-cidr (Associate 100.64.0.0/20 with vpc-0a1b2c3d): timed out after 60s waiting for "
        "vpc-cidr-assoc vpc-cidr-assoc-0001 to be available; run the same command again to resume"
    )
    assert world.clock.now - start == pytest.approx(60)  # the fake clock ran, nothing slept for real
    assert world.journal_events() == [("vpc-cidr", "started"), ("vpc-cidr", "acted"), ("vpc-cidr", "failed")]

    world.cloud.ready_after = 5
    world.apply()
    assert world.cloud.contents() == reference


# --- error policy --------------------------------------------------------------------------------------


def test_unknown_action_is_refused_before_anything_runs(world: World) -> None:
    steps = (*eks_steps(), Step("frob", "frobnicate-vpc", {}, "Frobnicate"))
    world.use_plan(make_plan(steps))
    preflights: list[str] = []

    with pytest.raises(InvalidInput) as err:
        world.apply(preflight=lambda: preflights.append("ran"))

    assert err.value.exit_code == 2
    assert "frobnicate-vpc" in str(err.value)
    assert world.cloud.writes == 0
    assert preflights == []
    assert not journal_path(world.plan_path).exists()


def test_preflight_runs_before_any_write_and_a_stale_plan_changes_nothing(world: World) -> None:
    def drifted() -> None:
        raise StalePlan("vpc-0a1b2c3d now has CIDRs 10.0.0.0/16, 100.64.0.0/16; make a new plan")

    with pytest.raises(StalePlan) as err:
        world.apply(preflight=drifted)

    assert err.value.exit_code == 4
    assert world.cloud.writes == 0
    assert not journal_path(world.plan_path).exists()

    calls: list[int] = []
    world.apply(preflight=lambda: calls.append(world.cloud.writes))
    assert calls == [0]


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (AccessDenied("ec2:CreateSubnet denied for role ci-deployer; see docs/iam.md"), 6),
        (StalePlan("subnet fingerprint changed; make a new plan"), 4),
    ],
    ids=["access", "stale"],
)
def test_access_and_stale_errors_pass_through_unchanged(world: World, exc: CidrxError, code: int) -> None:
    world.cloud.faults[("subnet-ap-southeast-2b", "after-write")] = exc

    with pytest.raises(type(exc)) as err:
        world.apply()

    assert err.value is exc
    assert err.value.exit_code == code
    assert world.journal_events()[-1] == ("subnet-ap-southeast-2b", "failed")


def test_unexpected_exception_is_recorded_and_reraised(world: World) -> None:
    world.cloud.faults[("aws-node-env", "wait")] = RuntimeError("bug in executor")

    with pytest.raises(RuntimeError, match="bug in executor"):
        world.apply()

    events = Journal.open(world.plan_path, load_plan(world.plan_path)).events
    assert (events[-1].step, events[-1].event) == ("aws-node-env", "failed")
    assert events[-1].error == "RuntimeError: bug in executor"


def test_failed_verify_stops_with_exit_5_naming_step_and_cause(world: World) -> None:
    world.cloud.drop_fields = {"az"}

    with pytest.raises(ApplyInterrupted) as err:
        world.apply()

    assert err.value.exit_code == 5
    assert str(err.value) == (
        "step subnet-ap-southeast-2a (Create subnet 100.64.0.0/21 in ap-southeast-2a) failed: subnet-0001 has "
        "az=None, the plan says 'ap-southeast-2a'; fix the cause and run the same command again to resume"
    )
    assert isinstance(err.value.__cause__, CloudError)


def test_unresolvable_reference_stops_with_exit_5_naming_it(world: World) -> None:
    steps = (
        eks_steps()[0],
        Step(
            "subnet-x",
            "create-subnet",
            {"association": "${vpc-cidr.association}"},
            "Subnet with a typo",
            depends_on=("vpc-cidr",),
        ),
    )
    world.use_plan(make_plan(steps))

    with pytest.raises(ApplyInterrupted) as err:
        world.apply()

    assert err.value.exit_code == 5
    assert "${vpc-cidr.association}" in str(err.value)
    assert world.journal_events()[-1] == ("subnet-x", "failed")


# --- ordering and references ---------------------------------------------------------------------------


def test_a_step_never_runs_before_its_dependencies(world: World) -> None:
    by_id = {s.id: s for s in eks_steps()}
    shuffled = tuple(
        by_id[i]
        for i in (
            "nodegroup",
            "eniconfig-ap-southeast-2b",
            "aws-node-env",
            "subnet-ap-southeast-2b",
            "vpc-cidr",
            "eniconfig-ap-southeast-2a",
            "subnet-ap-southeast-2a",
        )
    )
    world.use_plan(make_plan(shuffled))

    result = world.apply()

    order = [s.step_id for s in result.steps]
    assert order == [
        "aws-node-env",
        "vpc-cidr",
        "subnet-ap-southeast-2b",
        "eniconfig-ap-southeast-2b",
        "subnet-ap-southeast-2a",
        "eniconfig-ap-southeast-2a",
        "nodegroup",
    ]
    for step in shuffled:
        assert all(order.index(d) < order.index(step.id) for d in step.depends_on)


def test_dependency_cycle_is_invalid_input() -> None:
    plan = make_plan(
        (
            Step("a", "create-subnet", {}, "A", depends_on=("b",)),
            Step("b", "create-subnet", {}, "B", depends_on=("a",)),
        )
    )
    with pytest.raises(InvalidInput) as err:
        execution_order(plan)
    assert err.value.exit_code == 2
    assert "cycle" in str(err.value)


def test_resolve_params_replaces_whole_string_references_recursively() -> None:
    outputs: dict[str, Outputs] = {
        "subnet-a": {"subnet_id": "subnet-0a", "route": {"table_id": "rtb-01"}},
        "vpc-cidr": {"association_id": "vpc-cidr-assoc-1", "cidr.block": "100.64.0.0/20"},
    }
    params = {
        "subnet": "${subnet-a.subnet_id}",
        "nested": {"list": ["${subnet-a.subnet_id}", "literal", 3, ("${vpc-cidr.association_id}",)]},
        "path": "${subnet-a.route.table_id}",
        "dotted_key": "${vpc-cidr.cidr.block}",
        "embedded": "arn:aws:ec2:${subnet-a.subnet_id}",
        "count": 2,
    }

    assert resolve_params(params, outputs) == {
        "subnet": "subnet-0a",
        "nested": {"list": ["subnet-0a", "literal", 3, ["vpc-cidr-assoc-1"]]},
        "path": "rtb-01",
        "dotted_key": "100.64.0.0/20",
        "embedded": "arn:aws:ec2:${subnet-a.subnet_id}",
        "count": 2,
    }
    assert params["subnet"] == "${subnet-a.subnet_id}"  # input untouched
    assert parse_ref("${subnet-a.subnet_id}") == ("subnet-a", "subnet_id")
    assert parse_ref("$subnet-a.subnet_id") is None


@pytest.mark.parametrize("ref", ["${nope.subnet_id}", "${subnet-a.missing}", "${subnet-a.subnet_id.deeper}"])
def test_unresolvable_reference_is_a_cloud_error_naming_it(ref: str) -> None:
    with pytest.raises(CloudError) as err:
        resolve_params({"x": [ref]}, {"subnet-a": {"subnet_id": "subnet-0a"}})
    assert ref in str(err.value)


# --- waiting -------------------------------------------------------------------------------------------


def test_waiter_backs_off_exponentially_up_to_the_cap() -> None:
    clock = FakeClock()
    probes: list[float] = []

    def probe() -> str | None:
        probes.append(clock.now)
        return "available" if clock.now - 1000 >= 60 else None

    waiter = Waiter(sleep=clock.sleep, monotonic=clock.monotonic)
    assert waiter.wait_until("subnet", probe, timeout=300, interval=2, max_interval=16) == "available"
    assert clock.sleeps == [2, 4, 8, 16, 16, 16]
    assert probes[0] == 1000  # the first probe does not wait


def test_waiter_reports_at_most_every_n_seconds() -> None:
    clock = FakeClock()
    reports: list[tuple[str, float]] = []
    waiter = Waiter(
        sleep=clock.sleep,
        monotonic=clock.monotonic,
        report=lambda what, elapsed: reports.append((what, elapsed)),
        report_every=10,
    )
    waiter.wait_until(
        "node group", lambda: True if clock.now >= 1100 else None, timeout=600, interval=1, max_interval=1
    )

    assert [e for _, e in reports] == [10, 20, 30, 40, 50, 60, 70, 80, 90]
    assert {w for w, _ in reports} == {"node group"}


def test_waiter_times_out_at_the_deadline_with_a_resume_hint() -> None:
    clock = FakeClock()
    probes: list[float] = []

    def never() -> None:
        probes.append(clock.now)

    with pytest.raises(ApplyInterrupted) as err:
        Waiter(sleep=clock.sleep, monotonic=clock.monotonic).wait_until(
            "node group cidrx-100-64 to be ACTIVE", never, timeout=45, interval=5, max_interval=20
        )

    assert err.value.exit_code == 5
    assert str(err.value) == (
        "timed out after 45s waiting for node group cidrx-100-64 to be ACTIVE; run the same command again to resume"
    )
    assert probes[-1] == 1045  # one last look exactly at the deadline
    assert clock.sleeps == [5, 10, 20, 10]


# --- progress ------------------------------------------------------------------------------------------


def test_plain_progress_prints_timestamped_lines_with_step_ids_and_statuses(world: World) -> None:
    out = io.StringIO()
    world.apply(progress=PlainProgress(out), report_every=2)
    world.apply(progress=PlainProgress(out))
    lines = out.getvalue().splitlines()

    assert all(line[:4].isdigit() and line[19] == "Z" for line in lines)  # 2024-05-01T10:00:00Z …
    text = "\n".join(lines)
    assert "[1/7] vpc-cidr: started: Associate 100.64.0.0/20 with vpc-0a1b2c3d" in text
    assert "[1/7] vpc-cidr: done (association_id=vpc-cidr-assoc-0001)" in text
    assert "[7/7] nodegroup: done (nodegroup_arn=nodegroup-0001)" in text
    assert "[2/7] subnet-ap-southeast-2a: waiting for subnet subnet-0001 to be available (" in text
    assert "[6/7] aws-node-env: done" in text
    assert "[1/7] vpc-cidr: skipped (already done) (association_id=vpc-cidr-assoc-0001)" in text
    assert sum("skipped (already done)" in line for line in lines) == 7


def test_plain_progress_reports_failures(world: World) -> None:
    out = io.StringIO()
    world.cloud.faults[("vpc-cidr", "after-write")] = CloudError("boom")
    with pytest.raises(ApplyInterrupted):
        world.apply(progress=PlainProgress(out))
    assert out.getvalue().splitlines()[-1].endswith("[1/7] vpc-cidr: failed")


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_live_progress_redraws_one_line_and_ends_each_step_with_a_final_line(world: World) -> None:
    out = FakeTerminal()
    progress = make_progress(out)
    assert isinstance(progress, LiveProgress)

    world.apply(progress=progress, report_every=progress.report_every)
    progress.note("applied 7 steps")
    text = out.getvalue()

    assert "\r\x1b[K[2/7] subnet-ap-southeast-2a: waiting for subnet subnet-0001 to be available (" in text
    finals = text.split("\n")
    assert finals[-1] == ""
    assert finals[0].endswith("[1/7] vpc-cidr: done (association_id=vpc-cidr-assoc-0001)")
    assert finals[-2] == "\r\x1b[Kapplied 7 steps"
    assert len(finals) == 9  # one final line per step, one for the note, and nothing left on the live line


def test_make_progress_picks_plain_lines_when_not_a_terminal() -> None:
    assert isinstance(make_progress(io.StringIO()), PlainProgress)


# --- step parameters are checked before the first write ----------------------------------------------------


@pytest.mark.parametrize(
    ("step_id", "params", "fragment"),
    [
        ("subnet-ap-southeast-2b", {"cidr": "300.0.0.0/8"}, "parameter cidr is '300.0.0.0/8', not a CIDR"),
        (
            "eniconfig-ap-southeast-2a",
            {"spec": {"subnet": "${subnet-ap-southeast-2b.subnet_id}"}},
            "parameter spec.subnet refers to step subnet-ap-southeast-2b, which it does not come after",
        ),
    ],
)
def test_a_step_parameter_no_retry_can_fix_is_refused_before_the_first_write(
    world: World, step_id: str, params: dict[str, Any], fragment: str
) -> None:
    steps = tuple(
        Step(s.id, s.action, {**s.params, **params}, s.description, s.depends_on) if s.id == step_id else s
        for s in eks_steps()
    )
    world.use_plan(make_plan(steps))
    with pytest.raises(InvalidInput, match=re.escape(fragment)):
        world.apply()
    assert world.cloud.contents() == Cloud(world.clock).contents()
    assert not journal_path(world.plan_path).exists()
