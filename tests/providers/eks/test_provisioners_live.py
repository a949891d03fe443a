"""Karpenter-only, EKS Auto Mode and self-managed clusters end to end through the CLI, against moto and the fake
Kubernetes API server (tests/support/estates/eks_provisioners.py): diagnose shows who provisions the nodes,
`expand --plan` makes a plan without a managed node group, `expand --apply` carries it out, a second apply
changes nothing; an apply interrupted right after any step's write finishes when run again (journal kept or
lost), writing nothing twice; and a plan whose node classes changed is refused as stale.

moto does not model EKS Auto Mode's `computeConfig`: the Auto Mode world adds it to DescribeCluster answers
with a botocore after-call handler (AUTO_MODE_HANDLERS), as fakes/eks_addons.py does for add-ons.
"""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from cidrx.app import apply as app_apply
from cidrx.app import rollback as app_rollback
from cidrx.cli import cli
from cidrx.engine.executor import Executor, Outputs
from cidrx.engine.journal import journal_path
from cidrx.model.options import Access
from cidrx.model.plan import DIGEST_TAG, Plan, load_plan, save_plan
from tests.app.test_rollback import normalised
from tests.support.engine import CrashAfterAct, FakeClock, apply_in_boundary
from tests.support.estates import eks_provisioners as pw
from tests.support.estates.eks import REGION, AwsCalls
from tests.support.estates.eks_live import EksEstate, eks_estate
from tests.support.fakes.ec2_launch_templates import LAUNCH_TEMPLATE_HANDLERS
from tests.support.fakes.kube_server import is_lock

pytestmark = pytest.mark.usefixtures("shared_botocore")

WORLD_SEED = 2024_07_01
WRITES = ("POST", "PUT", "PATCH", "DELETE")


@dataclass(frozen=True)
class Variant:
    name: str
    builder: Any
    kube_setup: Any
    handlers: tuple[Any, ...] = ()


VARIANTS = {
    v.name: v
    for v in (
        Variant("karpenter", pw.build_without_nodegroup, pw.karpenter_cluster),
        Variant("auto-mode", pw.build_without_nodegroup, pw.auto_mode_cluster, pw.AUTO_MODE_HANDLERS),
        Variant("self-managed", pw.build_self_managed, pw.self_managed_cluster, LAUNCH_TEMPLATE_HANDLERS),
    )
}


@dataclass
class Env:
    estate: EksEstate
    tmp: Path
    aws: AwsCalls = field(default_factory=AwsCalls)

    def cli(self, *args: str) -> Result:
        return CliRunner().invoke(cli, list(args))

    def plan(self, path: Path, strategy: str = "custom-networking") -> Plan:
        made = self.cli("expand", *self.estate.target, "--plan", "--strategy", strategy, "--out", str(path))
        assert made.exit_code == 0, made.output
        return load_plan(path)

    def apply(self, path: Path) -> Result:
        return self.cli("expand", "--apply", str(path), "--yes", "--kubeconfig", self.estate.kubeconfig)

    def rollback(self, path: Path) -> Result:
        return self.cli("rollback", str(path), "--yes", "--kubeconfig", self.estate.kubeconfig)

    def reset(self) -> None:
        self.aws.calls.clear()
        self.estate.kube.reset_log()

    def writes(self) -> list[str]:
        kube = [
            f"kube {r.method} {r.path}"
            for r in self.estate.kube.requests()
            if r.method in WRITES and not is_lock(r)  # the plan lock's Lease is not one of the plan's changes
        ]
        return [*self.aws.writes(), *kube]

    def inventory(self, plan: Plan) -> dict[str, Any]:
        return pw.provisioner_inventory(self.estate.ec2, self.estate.kube, self.estate.world, plan_id=plan.plan_id)

    @contextlib.contextmanager
    def engine_apis(self) -> Iterator[Any]:
        from cidrx.kube.api import KubeApi
        from cidrx.providers.eks.actions.context import EksApis
        from cidrx.providers.eks.api import EksApi

        with KubeApi(self.estate.kubeconfig, None) as kube:
            yield EksApis(eks=EksApi(REGION), kube=kube)


@contextlib.contextmanager
def world(variant: str, tmp: Path, mp: pytest.MonkeyPatch) -> Iterator[Env]:
    v = VARIANTS[variant]
    calls = AwsCalls()
    with eks_estate(
        tmp,
        mp,
        builder=v.builder,
        kube_setup=v.kube_setup,
        handlers=[("before-call", calls), *v.handlers],
        seed=WORLD_SEED,
    ) as estate:
        env = Env(estate, tmp, calls)
        env.reset()
        yield env


def statuses(result: Result, plan: Plan) -> dict[str, str]:
    ids = {s.id for s in plan.steps}
    rows = [line.split() for line in result.stdout.splitlines()]
    return {row[0]: row[1] for row in rows if len(row) >= 2 and row[0] in ids}


def _capacity(env: Env) -> dict[str, dict[str, Any]]:
    shown = env.cli("diagnose", *env.estate.target, "-o", "json", "--fail-on", "never")
    assert shown.exit_code == 0, shown.output
    return {f"{c['kind']}/{c['name']}": c for c in json.loads(shown.stdout)["capacity"]}


# --- diagnose ---------------------------------------------------------------------------------------------


def test_diagnose_shows_karpenter_nodepool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with world("karpenter", tmp_path, monkeypatch) as env:
        row = _capacity(env)[f"karpenter-nodepool/{pw.NODE_POOL}"]
        assert row["nodes"] == 2 and row["size"] == 58  # two nodes reporting 29 allocatable pods
        assert env.estate.world.public_subnet_a in row["note"] and "kubelet maxPods 29" in row["note"]
        assert env.writes() == []


def test_diagnose_shows_auto_mode_nodepools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with world("auto-mode", tmp_path, monkeypatch) as env:
        rows = _capacity(env)
        assert {"auto-mode-nodepool/general-purpose", "auto-mode-nodepool/system"} <= set(rows)
        assert rows[f"auto-mode-nodepool/{pw.AUTO_POOL}"]["nodes"] == 2


def test_diagnose_shows_the_self_managed_group_and_its_launch_template(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with world("self-managed", tmp_path, monkeypatch) as env:
        row = _capacity(env)[f"self-managed-group/{pw.ASG}"]
        assert (row["nodes"], row["size"]) == (2, 58)  # 29 pods from --max-pods in the launch template's user data
        assert "--max-pods in user data" in row["note"] and pw.LAUNCH_TEMPLATE in row["note"]


# --- plan, apply, apply again -----------------------------------------------------------------------------


def test_karpenter_only_cluster_plan_apply_and_reapply(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with world("karpenter", tmp_path, monkeypatch) as env:
        path = tmp_path / "plan.json"
        plan = env.plan(path)
        assert "eks.create-nodegroup" not in [s.action for s in plan.steps]
        result = env.apply(path)
        assert result.exit_code == 0, result.output
        assert set(statuses(result, plan).values()) == {"done"}
        kube = env.estate.kube
        nc = kube.get("karpenter.k8s.aws", "v1", "ec2nodeclasses", pw.NODE_CLASS)
        assert nc is not None
        assert nc["spec"]["tags"][DIGEST_TAG] == plan.plan_id and nc["metadata"]["labels"][DIGEST_TAG] == plan.plan_id
        assert nc["spec"]["kubelet"]["maxPods"] == 20  # m5.large with the primary ENI reserved
        private = [env.estate.world.private_subnet_a, env.estate.world.private_subnet_b]
        assert nc["spec"]["subnetSelectorTerms"] == [{"id": s} for s in private]  # the public ones are full
        deploy = kube.get("apps", "v1", "deployments", pw.KARPENTER, pw.KARPENTER_NS)
        assert deploy is not None
        env_vars = {e["name"]: e.get("value") for e in deploy["spec"]["template"]["spec"]["containers"][0]["env"]}
        assert env_vars["RESERVED_ENIS"] == "1" and env_vars["CLUSTER_NAME"] == "demo"
        assert deploy["metadata"]["annotations"][DIGEST_TAG] == plan.plan_id
        assert {e["metadata"]["name"] for e in kube.objects_of("ENIConfig")} == {f"{REGION}a", f"{REGION}b"}
        assert env.estate.eks.list_nodegroups(clusterName="demo")["nodegroups"] == []

        env.reset()
        again = env.apply(path)
        assert again.exit_code == 0, again.output
        assert set(statuses(again, plan).values()) == {"skipped"}
        assert env.writes() == []


def test_auto_mode_cluster_plan_apply_and_reapply(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with world("auto-mode", tmp_path, monkeypatch) as env:
        path = tmp_path / "plan.json"
        plan = env.plan(path)
        result = env.apply(path)
        assert result.exit_code == 0, result.output
        kube = env.estate.kube
        assert kube.objects_of("ENIConfig") == []  # Auto Mode ignores them: none is made
        ec2 = env.estate.ec2
        new = ec2.describe_subnets(Filters=[{"Name": f"tag:{DIGEST_TAG}", "Values": [plan.plan_id]}])["Subnets"]
        new_ids = [s["SubnetId"] for s in sorted(new, key=lambda s: s["AvailabilityZone"])]
        assert len(new_ids) == 2
        for name in (pw.AUTO_CLASS, "cidrx-pod-subnets"):
            nc = kube.get("eks.amazonaws.com", "v1", "nodeclasses", name)
            assert nc is not None, name
            assert nc["spec"]["podSubnetSelectorTerms"] == [{"id": s} for s in new_ids]
            assert nc["spec"]["podSecurityGroupSelectorTerms"] == [{"id": env.estate.world.cluster_security_group_id}]
            assert nc["metadata"]["labels"][DIGEST_TAG] == plan.plan_id
            private = [env.estate.world.private_subnet_a, env.estate.world.private_subnet_b]
            assert nc["spec"]["subnetSelectorTerms"] == [{"id": s} for s in private]  # room for the nodes
        builtin = kube.get("eks.amazonaws.com", "v1", "nodeclasses", "default")
        assert builtin is not None and "podSubnetSelectorTerms" not in builtin["spec"]  # EKS's own: untouched

        env.reset()
        again = env.apply(path)
        assert again.exit_code == 0, again.output
        assert set(statuses(again, plan).values()) == {"skipped"} and env.writes() == []


def test_auto_mode_refuses_prefix_delegation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with world("auto-mode", tmp_path, monkeypatch) as env:
        made = env.cli("expand", *env.estate.target, "--plan", "--strategy", "prefix-delegation", "--out", "-")
        assert made.exit_code == 2
        assert "Auto Mode" in made.output and "Traceback" not in made.output


def test_self_managed_cluster_plan_apply_and_reapply(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with world("self-managed", tmp_path, monkeypatch) as env:
        path = tmp_path / "plan.json"
        plan = env.plan(path)
        note = next(n for n in plan.notes if pw.ASG in n)
        assert "start-instance-refresh" in note
        result = env.apply(path)
        assert result.exit_code == 0, result.output
        templates = env.inventory(plan)["launch_templates"]
        versions = templates[pw.LAUNCH_TEMPLATE]
        assert [v[0] for v in versions] == [1, 2]
        assert versions[1][1] == "cidrx plan <plan>: max pods"
        assert versions[1][2] == pw.USER_DATA.replace("--max-pods=29", "--max-pods=20")  # nothing else changed
        assert templates[f"group {pw.ASG}"] == "$Latest"  # new instances launch with version 2
        assert {e["metadata"]["name"] for e in env.estate.kube.objects_of("ENIConfig")} == {f"{REGION}a", f"{REGION}b"}

        env.reset()
        again = env.apply(path)
        assert again.exit_code == 0, again.output
        assert set(statuses(again, plan).values()) == {"skipped"} and env.writes() == []


# --- crash right after step k's write, then the same command ----------------------------------------------


@pytest.fixture(scope="module")
def baselines(tmp_path_factory: pytest.TempPathFactory) -> Any:
    made: dict[str, tuple[Plan, dict[str, Any], tuple[str, ...]]] = {}

    def get(variant: str) -> tuple[Plan, dict[str, Any], tuple[str, ...]]:
        if variant not in made:
            tmp = tmp_path_factory.mktemp(variant)
            with pytest.MonkeyPatch.context() as mp, world(variant, tmp, mp) as env:
                plan = env.plan(tmp / "plan.json")
                env.reset()
                result = env.apply(tmp / "plan.json")
                assert result.exit_code == 0, result.output
                made[variant] = (plan, env.inventory(plan), tuple(env.writes()))
        return made[variant]

    return get


STEPS = {"karpenter": 10, "auto-mode": 7, "self-managed": 9}


def _crash_points() -> list[Any]:
    return [pytest.param(v, i, id=f"{v}-step{i + 1}") for v, n in STEPS.items() for i in range(n)]


@pytest.mark.parametrize("variant", list(STEPS))
def test_the_plans_have_the_steps_the_crash_tests_cover(variant: str, baselines: Any) -> None:
    plan, inventory, writes = baselines(variant)
    assert len(plan.steps) == STEPS[variant]
    assert writes and (inventory["node_classes"] or inventory["launch_templates"])


@pytest.mark.parametrize("journal", ["kept", "lost"])
@pytest.mark.parametrize(("variant", "index"), _crash_points())
def test_interrupted_right_after_a_write_the_same_command_finishes_the_job(
    variant: str, index: int, journal: str, baselines: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan, inventory, writes = baselines(variant)
    path = tmp_path / "plan.json"
    step_id = plan.steps[index].id
    with world(variant, tmp_path, monkeypatch) as env:
        assert plan.basis["vpc_id"] == env.estate.world.vpc_id  # seeded: the baseline's plan fits this world
        save_plan(plan, path)
        acted: dict[str, Outputs] = {}
        real = app_apply.executors(plan)
        crashing: dict[str, Executor] = {a: CrashAfterAct(ex, step_id, acted) for a, ex in real.items()}
        assert apply_in_boundary(plan, path, crashing, env.engine_apis, FakeClock()) == 5
        assert step_id in acted and env.writes()
        if journal == "lost":
            journal_path(path).unlink()

        result = env.apply(path)
        assert result.exit_code == 0, result.output
        assert statuses(result, plan) == {s.id: "skipped" if i <= index else "done" for i, s in enumerate(plan.steps)}
        assert env.inventory(plan) == inventory
        assert Counter(env.writes()) == Counter(writes)  # crashed + resumed run: every write exactly once


# --- drift ------------------------------------------------------------------------------------------------


def test_apply_refuses_when_the_ec2nodeclass_was_deleted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with world("karpenter", tmp_path, monkeypatch) as env:
        path = tmp_path / "plan.json"
        env.plan(path)
        env.estate.kube.delete("karpenter.k8s.aws", "v1", "ec2nodeclasses", pw.NODE_CLASS)
        env.reset()
        result = env.apply(path)
        assert result.exit_code == 4, result.output
        assert "EC2NodeClass default no longer exists" in result.output and env.writes() == []


def test_apply_refuses_when_someone_else_made_the_nodeclass_cidrx_would_create(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with world("auto-mode", tmp_path, monkeypatch) as env:
        path = tmp_path / "plan.json"
        env.plan(path)
        env.estate.kube.put(
            {
                "apiVersion": "eks.amazonaws.com/v1",
                "kind": "NodeClass",
                "metadata": {"name": "cidrx-pod-subnets", "labels": {"team": "network"}},
                "spec": {"subnetSelectorTerms": [{"id": env.estate.world.private_subnet_a}]},
            }
        )
        env.reset()
        result = env.apply(path)
        assert result.exit_code == 4, result.output
        assert "created by someone else" in result.output and env.writes() == []


def test_an_untagged_group_is_found_through_its_nodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not every self-managed group carries the cluster tag: its nodes find it (their addresses name the
    instances, DescribeAutoScalingInstances their group). A managed node group's own Auto Scaling group is
    never counted."""
    import boto3

    with world("self-managed", tmp_path, monkeypatch) as env:
        asg = boto3.Session(region_name=REGION).client("autoscaling")
        tag = {"ResourceId": pw.ASG, "ResourceType": "auto-scaling-group", "Key": "kubernetes.io/cluster/demo"}
        asg.delete_tags(Tags=[tag])
        managed = "eks-managed-ng-0ac5e5a7"
        asg.create_auto_scaling_group(
            AutoScalingGroupName=managed,
            LaunchTemplate={"LaunchTemplateName": pw.LAUNCH_TEMPLATE, "Version": "$Latest"},
            MinSize=0,
            MaxSize=2,
            DesiredCapacity=0,
            VPCZoneIdentifier=env.estate.world.private_subnet_a,
            Tags=[
                {
                    "ResourceId": managed,
                    "ResourceType": "auto-scaling-group",
                    "Key": k,
                    "Value": v,
                    "PropagateAtLaunch": True,
                }
                for k, v in (("eks:nodegroup-name", "managed-ng"), ("kubernetes.io/cluster/demo", "owned"))
            ],
        )
        rows = _capacity(env)
        assert f"self-managed-group/{pw.ASG}" in rows and rows[f"self-managed-group/{pw.ASG}"]["nodes"] == 2
        assert f"self-managed-group/{managed}" not in rows
        assert {"ec2:DescribeInstances", "autoscaling:DescribeAutoScalingInstances"} <= set(env.aws.calls)


# --- rollback -----------------------------------------------------------------------------------------------


def _env_unordered(inventory: dict[str, Any]) -> dict[str, Any]:
    """The inventory with each container's env sorted by name: an undo puts a variable that existed before
    back to its value where it is now (the apply moved it last); the order of env entries without $(VAR)
    references means nothing to the kubelet."""
    for kind in ("daemonsets", "deployments"):
        for value in inventory[kind].values():
            containers = value["containers"] if kind == "deployments" else value
            for c in containers:
                c["env"] = sorted(c.get("env") or [], key=lambda e: e["name"])
    return inventory


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_apply_then_rollback_puts_the_provisioners_back(
    variant: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Node classes, Karpenter's env, launch template versions and groups as they were before the apply;
    a second rollback writes nothing."""
    with world(variant, tmp_path, monkeypatch) as env:
        path = tmp_path / "plan.json"
        plan = env.plan(path)
        before = env.inventory(plan)
        applied = env.apply(path)
        assert applied.exit_code == 0, applied.output
        assert env.inventory(plan) != before

        back = env.rollback(path)
        assert back.exit_code == 0, back.output
        assert _env_unordered(normalised(env.inventory(plan))) == _env_unordered(normalised(before))

        env.reset()
        again = env.rollback(path)
        assert again.exit_code == 0, again.output
        assert "nothing to roll back" in again.output and env.writes() == []


def test_rollback_points_a_pinned_group_back_before_deleting_the_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A group pinned to v1: the plan points it at the new version; rollback points it back at v1 first,
    then deletes the version (no group launches with it any more)."""
    import boto3

    with world("self-managed", tmp_path, monkeypatch) as env:
        asg = boto3.Session(region_name=REGION).client("autoscaling")
        template = {"LaunchTemplateName": pw.LAUNCH_TEMPLATE, "Version": "1"}
        asg.update_auto_scaling_group(AutoScalingGroupName=pw.ASG, LaunchTemplate=template)
        path = tmp_path / "plan.json"
        plan = env.plan(path)
        assert "eks.set-group-launch-template" in [s.action for s in plan.steps]
        before = env.inventory(plan)
        assert env.apply(path).exit_code == 0
        assert env.inventory(plan)["launch_templates"][f"group {pw.ASG}"] == "2"

        back = env.rollback(path)
        assert back.exit_code == 0, back.output
        after = env.inventory(plan)["launch_templates"]
        assert after[f"group {pw.ASG}"] == "1" and [v[0] for v in after[pw.LAUNCH_TEMPLATE]] == [1]
        assert _env_unordered(normalised(env.inventory(plan))) == _env_unordered(normalised(before))


def _group_back_on_the_plans_version(env: Env) -> None:
    import boto3

    asg = boto3.Session(region_name=REGION).client("autoscaling")
    template = {"LaunchTemplateName": pw.LAUNCH_TEMPLATE, "Version": "2"}
    asg.update_auto_scaling_group(AutoScalingGroupName=pw.ASG, LaunchTemplate=template)


def _nodepool_on_cidrx_nodeclass(env: Env) -> None:
    env.estate.kube.put(pw._node_pool("moved", "eks.amazonaws.com", "NodeClass", "cidrx-pod-subnets"))


def _max_pods_changed(env: Env) -> None:
    nc = env.estate.kube.get("karpenter.k8s.aws", "v1", "ec2nodeclasses", pw.NODE_CLASS)
    assert nc is not None
    nc["spec"]["kubelet"]["maxPods"] = 42
    env.estate.kube.put(nc)


@pytest.mark.parametrize(
    ("variant", "disturb", "said"),
    [
        ("self-managed", _group_back_on_the_plans_version, f"{pw.ASG} launch with"),
        ("auto-mode", _nodepool_on_cidrx_nodeclass, "NodeClass cidrx-pod-subnets is used by NodePool(s) moved"),
        ("karpenter", _max_pods_changed, "maxPods of EC2NodeClass default changed since the apply"),
    ],
    ids=["group-on-the-version", "nodepool-on-the-nodeclass", "maxpods-changed"],
)
def test_rollback_refuses_what_is_in_use_or_changed_since_and_changes_nothing(
    variant: str, disturb: Any, said: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with world(variant, tmp_path, monkeypatch) as env:
        path = tmp_path / "plan.json"
        plan = env.plan(path)
        assert env.apply(path).exit_code == 0
        disturb(env)
        kept = env.inventory(plan)
        env.reset()
        result = env.rollback(path)
        assert result.exit_code == 4, result.output
        assert said in result.output and env.writes() == []
        assert env.inventory(plan) == kept


_PROVISIONER_ACTIONS = {
    "kube.set-deployment-env",
    "kube.update-ec2nodeclass",
    "kube.apply-auto-nodeclass",
    "eks.create-launch-template-version",
    "eks.set-group-launch-template",
}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_a_rollback_interrupted_after_each_provisioner_undo_is_finished_by_the_same_command(
    variant: str, baselines: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cidrx.cli import boundary
    from cidrx.engine.waiting import Waiter
    from cidrx.render.progress import NullProgress
    from tests.app.test_rollback import CrashAfterUndo

    plan = baselines(variant)[0]
    crash_points = [s.id for s in plan.steps if s.action in _PROVISIONER_ACTIONS]
    assert crash_points
    for n, crash_at in enumerate(crash_points):
        tmp = tmp_path / str(n)
        tmp.mkdir()
        path = tmp / "plan.json"
        with world(variant, tmp, monkeypatch) as env:
            save_plan(plan, path)
            before = env.inventory(plan)
            assert env.apply(path).exit_code == 0
            clock = FakeClock()

            def rollback(env: Env = env, crash_at: str = crash_at, path: Path = path, clock: FakeClock = clock) -> None:
                app_rollback.rollback(
                    plan,
                    path,
                    Access(kubeconfig=env.estate.kubeconfig),
                    NullProgress(),
                    lambda items: None,
                    waiter=Waiter(sleep=clock.sleep, monotonic=clock.monotonic),
                    wrap=lambda undo: CrashAfterUndo(undo, crash_at),
                    writing=boundary.applying,
                )

            assert boundary.run(rollback) == 5, crash_at
            result = env.rollback(path)
            assert result.exit_code == 0, result.output
            assert _env_unordered(normalised(env.inventory(plan))) == _env_unordered(normalised(before)), crash_at
