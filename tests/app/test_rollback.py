"""`cidrx rollback PLAN.json`: for every cloud plan kind, apply then rollback leaves the fakes as they were
before the apply (normalised inventories of moto, the GCP fake and the fake Kubernetes API server); a second
rollback changes nothing; something in use is refused (exit 4) with nothing changed; a rollback that dies
right after any of its writes is finished by the same command; reclaim plans and steps without an undo are
refused up front (exit 2).

Worlds and inventories are those of tests/app/test_resume_cloud.py (the incident worlds, ids seeded), driven by
the real CLI; the crashed rollbacks run the engine with a fake clock and an undo that raises after its act.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from cidrx.app import rollback as app_rollback
from cidrx.app.permissions import needs
from cidrx.cli import cli
from cidrx.engine.journal import Journal
from cidrx.engine.waiting import Waiter
from cidrx.model.options import Access
from cidrx.model.plan import Plan, Step, save_plan
from cidrx.model.target import Target
from tests.app.test_resume_cloud import KINDS, Env, Kind, fresh
from tests.support.engine import small_plan
from tests.support.fakes.kube_server import FakeKubeServer

pytestmark = pytest.mark.usefixtures("shared_botocore")

ROLLBACK_KINDS = {
    **{k: KINDS[k] for k in ("gke-node-pool", "gke-cluster-range", "eks-prefix-delegation")},
    **{k: KINDS[k] for k in ("eks-addon-custom-networking", "eks-addon-prefix-delegation")},
    "eks-custom-networking": Kind("eks-custom-networking", "eks", "custom-networking", 9),
}


def normalised(inventory: dict[str, Any]) -> dict[str, Any]:
    """The inventory without VPC CIDR associations in state `disassociated`: EC2 lists an association it
    removed for a while after DisassociateVpcCidrBlock (moto keeps it), which is the CIDR being gone."""
    if "vpc_cidrs" in inventory:
        kept = [c for c in inventory["vpc_cidrs"] if c[1] != "disassociated"]
        return {**inventory, "vpc_cidrs": kept}
    return inventory


def cli_rollback(env: Env, path: Path, *extra: str) -> Result:
    return CliRunner().invoke(cli, ["rollback", str(path), "--yes", "--kubeconfig", env.kubeconfig, *extra])


@contextlib.contextmanager
def applied(kind: Kind, tmp: Path, mp: pytest.MonkeyPatch) -> Iterator[tuple[Env, Plan, Path, dict[str, Any]]]:
    """A fresh world of `kind`, its plan applied by the CLI, and the inventory from before the apply."""
    with fresh(kind, tmp, mp) as env, contextlib.ExitStack() as stack:
        if env.gcp is not None:  # the GKE worlds apply with --no-kube; rollback needs the cluster to check use
            env.kube = stack.enter_context(FakeKubeServer())
            env.kubeconfig = str(env.kube.kubeconfig(tmp / "kubeconfig"))
        path = tmp / "plan.json"
        plan = env.cli_plan(path)
        before = env.inventory(plan)
        result = env.cli_apply(path)
        assert result.exit_code == 0, result.output
        env.settle()
        assert env.inventory(plan) != before
        yield env, plan, path, before


@pytest.mark.parametrize("kind_name", list(ROLLBACK_KINDS))
def test_apply_then_rollback_restores_the_world_and_a_second_rollback_changes_nothing(
    kind_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with applied(ROLLBACK_KINDS[kind_name], tmp_path, monkeypatch) as (env, plan, path, before):
        env.reset_logs()
        result = cli_rollback(env, path)
        assert result.exit_code == 0, result.output
        env.settle()
        assert normalised(env.inventory(plan)) == before
        assert f"plan {plan.plan_id} rolled back:" in result.stdout
        if env.gcp is None:  # every cloud write the rollback made is granted by `permissions --for rollback`
            granted = needs("eks", "rollback")
            made = {w for w in env.writes() if not w.startswith("kube ")}
            assert made and made <= {*granted.read, *granted.write}
        assert f"cidrx rollback of plan {plan.plan_id}" in result.stderr
        events = Journal.open(f"{path}.rollback", plan).events
        assert {e.step for e in events if e.event == "done"} == {f"undo-{s.id}" for s in plan.steps} or (
            env.gcp is not None  # GKE's undo of the range and the cluster's range list are one step each
        )
        env.reset_logs()
        again = cli_rollback(env, path)
        assert again.exit_code == 0, again.output
        assert "nothing to roll back" in again.stdout
        assert env.writes() == []


def test_a_plan_never_applied_has_nothing_to_roll_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with fresh(ROLLBACK_KINDS["eks-custom-networking"], tmp_path, monkeypatch) as env:
        path = tmp_path / "plan.json"
        env.cli_plan(path)
        env.reset_logs()
        result = cli_rollback(env, path)
        assert result.exit_code == 0, result.output
        assert "nothing to roll back" in result.stdout and env.writes() == []


def test_a_node_group_with_nodes_is_in_use_exit_4_and_nothing_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with applied(ROLLBACK_KINDS["eks-custom-networking"], tmp_path, monkeypatch) as (env, plan, path, _):
        name = plan.basis["nodegroup_name"]
        env.kube.put(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": "ip-100-64-0-9", "labels": {"eks.amazonaws.com/nodegroup": name}},
            }
        )
        after_apply = env.inventory(plan)
        env.reset_logs()
        result = cli_rollback(env, path)
        assert result.exit_code == 4, result.output
        assert f"node group {name} still has 1 node(s) (ip-100-64-0-9)" in result.output
        assert "nothing was changed" in result.output
        assert env.writes() == [] and env.inventory(plan) == after_apply


def test_a_subnet_with_a_network_interface_is_in_use_exit_4(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with applied(ROLLBACK_KINDS["eks-custom-networking"], tmp_path, monkeypatch) as (env, plan, path, _):
        ec2 = env.session.client("ec2")
        ours = ec2.describe_subnets(Filters=[{"Name": "tag:cidrx.io/plan", "Values": [plan.plan_id]}])["Subnets"]
        eni = ec2.create_network_interface(SubnetId=ours[0]["SubnetId"])["NetworkInterface"]["NetworkInterfaceId"]
        after_apply = env.inventory(plan)
        env.reset_logs()
        result = cli_rollback(env, path)
        assert result.exit_code == 4, result.output
        assert f"still has 1 network interface(s) ({eni})" in result.output
        assert env.writes() == [] and env.inventory(plan) == after_apply


def test_without_the_journal_settings_cannot_be_restored_and_nothing_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with applied(ROLLBACK_KINDS["eks-prefix-delegation"], tmp_path, monkeypatch) as (env, _, path, _):
        Path(f"{path}.journal.jsonl").unlink()
        env.reset_logs()
        result = cli_rollback(env, path)
        assert result.exit_code == 4, result.output
        assert "no record of ENABLE_PREFIX_DELEGATION" in result.output and env.writes() == []


def test_reclaim_plans_cannot_be_rolled_back(tmp_path: Path) -> None:
    target = Target("k8s", "fake", context="fake")
    plan = small_plan(target, "whereabouts-reclaim", Step("release-a", "whereabouts.release-allocations", {}, "-"))
    save_plan(plan, tmp_path / "reclaim.json")
    result = CliRunner().invoke(cli, ["rollback", str(tmp_path / "reclaim.json"), "--yes"])
    assert result.exit_code == 2, result.output
    assert "reclaim plans cannot be rolled back" in result.output


def test_a_step_without_an_undo_is_refused_up_front_naming_it(tmp_path: Path) -> None:
    plan = small_plan(
        Target("eks", "demo", region="ap-southeast-2"),
        "custom-networking",
        Step("associate-vpc-cidr", "eks.associate-vpc-cidr", {}, "associate"),
        Step("tune-karpenter", "eks.patch-karpenter-nodeclass", {}, "a step of a newer cidrx"),
    )
    save_plan(plan, tmp_path / "plan.json")
    result = CliRunner().invoke(cli, ["rollback", str(tmp_path / "plan.json"), "--yes", "--no-kube"])
    assert result.exit_code == 2, result.output
    assert "tune-karpenter (eks.patch-karpenter-nodeclass): no undo is declared" in result.output
    assert "associate-vpc-cidr" not in result.output and not (tmp_path / "plan.json.lock").exists()


# --- a rollback that dies right after one of its writes, then the same command -------------------------


class CrashAfterUndo:
    """The real undo, except that `act` raises Ctrl-C after the real one returned when `crash_at` undoes."""

    def __init__(self, inner: Any, crash_at: str) -> None:
        self.inner, self.crash_at = inner, crash_at

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def act(self, step: Any, params: Any, found: Any, ctx: Any) -> Any:
        out = self.inner.act(step, params, found, ctx)
        if step.id == self.crash_at:
            raise KeyboardInterrupt
        return out


def _rollback_crash_points() -> list[Any]:
    return [
        pytest.param(name, i, id=f"{name}-undo{i + 1}")
        for name, k in ROLLBACK_KINDS.items()
        for i in range(k.steps)
        if name in ("eks-custom-networking", "eks-addon-prefix-delegation", "gke-node-pool", "gke-cluster-range")
    ]


@pytest.mark.parametrize(("kind_name", "index"), _rollback_crash_points())
def test_a_rollback_interrupted_right_after_a_write_is_finished_by_the_same_command(
    kind_name: str, index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cidrx.cli import boundary
    from cidrx.render.progress import NullProgress

    with applied(ROLLBACK_KINDS[kind_name], tmp_path, monkeypatch) as (env, plan, path, before):
        newest_first = list(reversed(plan.steps))
        crash_at = newest_first[index].id
        clock = env.clock()
        opts = Access(kubeconfig=env.kubeconfig)

        def rollback() -> None:
            app_rollback.rollback(
                plan,
                path,
                opts,
                NullProgress(),
                lambda items: None,
                waiter=Waiter(sleep=clock.sleep, monotonic=clock.monotonic),
                wrap=lambda undo: CrashAfterUndo(undo, crash_at),
                writing=boundary.applying,
            )

        assert boundary.run(rollback) == 5
        events = [
            (e.event, e.error) for e in Journal.open(f"{path}.rollback", plan).events if e.step == f"undo-{crash_at}"
        ]
        assert events == [("started", None), ("failed", "interrupted")]
        env.settle()
        result = cli_rollback(env, path)
        assert result.exit_code == 0, result.output
        env.settle()
        assert normalised(env.inventory(plan)) == before


# --- Calico: the calico-pool plan ---------------------------------------------------------------------

CALICO = "crd.projectcalico.org"


def calico_state(server: FakeKubeServer) -> dict[str, list[Any]]:
    """Every Calico object, without server-assigned metadata (lists: duplicates show)."""
    out: dict[str, list[Any]] = {}
    for kind in ("IPPool", "IPAMBlock", "BlockAffinity", "IPAMHandle"):
        objs = [
            {**o, "metadata": {k: v for k, v in o["metadata"].items() if k not in ("resourceVersion", "uid")}}
            for o in server.objects_of(kind, group=CALICO)
        ]
        out[kind] = sorted(objs, key=lambda o: o["metadata"]["name"])
    return out


@pytest.fixture
def calico_applied(kube_server: FakeKubeServer, kubeconfig_path: Path, tmp_path: Path) -> tuple[Plan, Path, Any]:
    from cidrx.model.plan import load_plan
    from tests.support.cases import calico as calico_cases

    kube_server.put_many(calico_cases.incident().objects())
    path = tmp_path / "pool.json"
    args = ["--k8s", "--kubeconfig", str(kubeconfig_path)]
    made = CliRunner().invoke(cli, ["expand", *args, "--plan", "--strategy", "calico-pool", "--out", str(path)])
    assert made.exit_code == 0, made.output
    before = calico_state(kube_server)
    applied = CliRunner().invoke(cli, ["expand", "--apply", str(path), "--yes", "--kubeconfig", str(kubeconfig_path)])
    assert applied.exit_code == 0, applied.output
    assert len(calico_state(kube_server)["IPPool"]) == len(before["IPPool"]) + 1
    return load_plan(path), path, before


def test_calico_pool_rollback_deletes_only_the_plans_pool(
    calico_applied: tuple[Plan, Path, Any], kube_server: FakeKubeServer, kubeconfig_path: Path
) -> None:
    plan, path, before = calico_applied
    result = CliRunner().invoke(cli, ["rollback", str(path), "--yes", "--kubeconfig", str(kubeconfig_path)])
    assert result.exit_code == 0, result.output
    assert calico_state(kube_server) == before
    name = plan.steps[0].params["name"]
    # Calico's order: disabled (a guarded update), then deleted with the resourceVersion just read.
    pool_writes = [r.method for r in kube_server.requests() if f"/ippools/{name}" in r.path and r.method != "GET"]
    assert pool_writes == ["PUT", "DELETE"]
    again = CliRunner().invoke(cli, ["rollback", str(path), "--yes", "--kubeconfig", str(kubeconfig_path)])
    assert again.exit_code == 0 and "nothing to roll back" in again.stdout


def test_calico_pool_with_a_block_is_in_use_exit_4(
    calico_applied: tuple[Plan, Path, Any], kube_server: FakeKubeServer, kubeconfig_path: Path
) -> None:
    plan, path, _ = calico_applied
    cidr = plan.steps[0].params["cidr"]
    block = cidr.split("/")[0] + f"/{plan.steps[0].params['block_size']}"
    kube_server.put(
        {
            "apiVersion": f"{CALICO}/v1",
            "kind": "IPAMBlock",
            "metadata": {"name": block.replace(".", "-").replace("/", "-")},
            "spec": {"cidr": block, "allocations": [0, None], "unallocated": [1], "attributes": [{}]},
        }
    )
    after_apply = calico_state(kube_server)
    kube_server.reset_log()
    result = CliRunner().invoke(cli, ["rollback", str(path), "--yes", "--kubeconfig", str(kubeconfig_path)])
    assert result.exit_code == 4, result.output
    assert f"has 1 IPAM block(s): {block} (1 allocated)" in result.output
    assert calico_state(kube_server) == after_apply
    assert [r for r in kube_server.requests() if r.method != "GET" and "/leases" not in r.path] == []


def test_a_gke_range_with_pods_is_in_use_exit_4(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with applied(ROLLBACK_KINDS["gke-cluster-range"], tmp_path, monkeypatch) as (env, plan, path, _):
        first = plan.basis["cidr"].split("/")[0].rsplit(".", 1)[0] + ".5"
        env.kube.put(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "web-1", "namespace": "shop"},
                "spec": {"nodeName": "gke-node-1", "containers": [{"name": "web", "image": "web"}]},
                "status": {"phase": "Running", "podIP": first},
            }
        )
        after_apply = env.inventory(plan)
        env.reset_logs()
        result = cli_rollback(env, path)
        assert result.exit_code == 4, result.output
        assert f"1 pod(s) have addresses in {plan.basis['cidr']} (shop/web-1)" in result.output
        assert env.writes() == [] and env.inventory(plan) == after_apply


def test_a_gke_rollback_without_the_cluster_refuses_naming_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with applied(ROLLBACK_KINDS["gke-node-pool"], tmp_path, monkeypatch) as (env, plan, path, _):
        env.reset_logs()
        result = CliRunner().invoke(cli, ["rollback", str(path), "--yes", "--no-kube"])
        assert result.exit_code == 4, result.output
        assert f"cannot see whether node pool {plan.basis['node_pool_name']} is in use" in result.output
        assert "no cluster Lease" in result.output and env.writes() == []
