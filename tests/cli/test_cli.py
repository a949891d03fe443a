"""The CLI contract (docs/cli.md): commands, flags, env vars, exit codes and one-line errors.

Offline cases use the example snapshot; live cases run the real boto3 clients against moto (which does not
enforce subnet exhaustion: the incident world fills the subnets with ENIs so the counts are real). A few
cases run `python -m cidrx` as a real subprocess, the way users and CI jobs do.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cidrx.cli import boundary
from cidrx.errors import InvalidInput
from cidrx.model import codec
from cidrx.model.plan import Plan, load_plan
from cidrx.model.snapshot import Snapshot, load_snapshot, save_snapshot, snapshot_type
from cidrx.model.snapshot import seal as seal_snapshot
from cidrx.model.target import Target
from tests.support.cases.eks import sample_plan
from tests.support.cli import one_line_error, run
from tests.support.estates.kube_objects import seed_cluster

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "eks-demo-ip.snapshot.json"
FULL_SUBNETS = {"subnet-0cd55c38980375d58": "10.0.208.0/27", "subnet-0a0bce6a1c1f38c54": "10.0.224.0/27"}


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No CIDRX_* settings from the developer's shell."""
    for name in list(os.environ):
        if name.startswith("CIDRX_"):
            monkeypatch.delenv(name)


def example() -> Snapshot:
    return load_snapshot(EXAMPLE)


def healthy_snapshot(path: Path) -> Path:
    """The example after the fix: every subnet has room and no pod is waiting."""
    snap = example()
    assert snap.eks is not None
    subnets = tuple(dataclasses.replace(s, available_ips=26, used=(s.used[0],)) for s in snap.eks.subnets)
    kube = dataclasses.replace(snap.kube, events=(), waiting_pods=())
    healthy = dataclasses.replace(snap, eks=dataclasses.replace(snap.eks, subnets=subnets), kube=kube)
    save_snapshot(seal_snapshot(healthy), path)
    return path


# --- group ---------------------------------------------------------------------------------------------


def test_help_lists_commands_and_exit_codes() -> None:
    result = run("--help")
    assert result.exit_code == 0
    for command in ("diagnose", "expand", "snapshot"):
        assert command in result.stdout
    assert "Exit codes:" in result.stdout
    for code, words in [
        ("0", "success"),
        ("1", "internal error"),
        ("2", "usage or invalid input"),
        ("3", "diagnose found problems"),
        ("4", "stale"),
        ("5", "partway"),
        ("6", "access"),
    ]:
        assert any(line.strip().startswith(code) and words in line for line in result.stdout.splitlines()), code


def test_version() -> None:
    from cidrx import __version__

    result = run("--version")
    assert (result.exit_code, result.stdout.strip()) == (0, f"cidrx {__version__}")


def test_unknown_command_is_a_usage_error() -> None:
    result = run("explode")
    assert result.exit_code == 2
    assert "Traceback" not in result.output


# --- diagnose offline ----------------------------------------------------------------------------------


def test_diagnose_example_exits_3_and_names_both_full_subnets() -> None:
    result = run("diagnose", "--snapshot", str(EXAMPLE), env={"COLUMNS": "200"})  # a row per line
    assert result.exit_code == 3, result.output
    for subnet_id, cidr in FULL_SUBNETS.items():
        rows = [line for line in result.stdout.splitlines() if subnet_id in line and cidr in line]
        assert rows and "100.0%" in rows[0]
        assert f"EKS-SUBNET-EXHAUSTED  {subnet_id}" in result.stdout
    assert "failed to assign an IP address to container" in result.stdout
    assert result.stderr == ""


def test_diagnose_json_is_diagnosis_v1() -> None:
    result = run("diagnose", "--snapshot", str(EXAMPLE), "-o", "json")
    assert result.exit_code == 3
    doc = json.loads(result.stdout)
    assert doc["schema"] == "cidrx.diagnosis/v1"
    assert doc["target"] == {
        "provider": "eks",
        "cluster": "demo-ip",
        "region": "ap-southeast-2",
        "project": None,
        "location": None,
        "context": None,
        "subscription": None,
        "resource_group": None,
    }
    assert doc["snapshot_fingerprint"] == example().fingerprint
    full = {c["cidr"] for c in doc["capacity"] if c["kind"] == "subnet" and c["free"] == 0}
    assert full == set(FULL_SUBNETS.values())
    for c in doc["capacity"]:
        assert {"kind", "name", "cidr", "size", "used", "free", "utilization", "max_nodes", "nodes"} <= set(c)
    exhausted = [f["subject"] for f in doc["findings"] if f["id"] == "EKS-SUBNET-EXHAUSTED"]
    assert {s.split()[0] for s in exhausted} == set(FULL_SUBNETS)
    assert doc["counts"]["critical"] == sum(1 for f in doc["findings"] if f["severity"] == "critical") > 0
    assert set(doc["counts"]) == {"critical", "warning", "info"}


def test_diagnose_markdown() -> None:
    result = run("diagnose", "--snapshot", str(EXAMPLE), "-o", "markdown")
    assert result.exit_code == 3
    assert result.stdout.startswith("### cidrx diagnosis: `eks:ap-southeast-2/demo-ip`")
    assert "- **CRITICAL** `EKS-SUBNET-EXHAUSTED`" in result.stdout


def test_fail_on_never_exits_0_and_warning_exits_3() -> None:
    assert run("diagnose", "--snapshot", str(EXAMPLE), "--fail-on", "never").exit_code == 0
    assert run("diagnose", "--snapshot", str(EXAMPLE), "--fail-on", "warning").exit_code == 3
    assert run("diagnose", "--snapshot", str(EXAMPLE), env={"CIDRX_FAIL_ON": "never"}).exit_code == 0


def test_healthy_cluster_exits_0_unless_fail_on_warning_finds_something(tmp_path: Path) -> None:
    path = healthy_snapshot(tmp_path / "healthy.json")
    result = run("diagnose", "--snapshot", str(path), "-o", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["counts"]["critical"] == 0
    warnings = doc["counts"]["warning"]
    assert run("diagnose", "--snapshot", str(path), "--fail-on", "warning").exit_code == (3 if warnings else 0)


def test_diagnose_snapshot_from_stdin() -> None:
    result = run("diagnose", "--snapshot", "-", "-o", "json", input=EXAMPLE.read_text())
    assert result.exit_code == 3
    assert json.loads(result.stdout)["schema"] == "cidrx.diagnosis/v1"


def test_missing_snapshot_file_is_one_line_exit_2(tmp_path: Path) -> None:
    result = run("diagnose", "--snapshot", str(tmp_path / "nope.json"))
    assert result.exit_code == 2
    assert "nope.json" in one_line_error(result)


def test_corrupt_snapshot_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "truncated.json"
    path.write_text(EXAMPLE.read_text()[:2000])
    result = run("diagnose", "--snapshot", str(path))
    assert result.exit_code == 2
    one_line_error(result)


def test_tampered_snapshot_exits_2(tmp_path: Path) -> None:
    doc = json.loads(EXAMPLE.read_text())
    full = next(s for s in doc["eks"]["subnets"] if s["available_ips"] == 0)
    full["available_ips"] = 20  # "fix" the incident by editing the evidence
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(doc))
    result = run("diagnose", "--snapshot", str(path))
    assert result.exit_code == 2
    assert "fingerprint mismatch" in one_line_error(result)


def test_snapshot_flags_must_match_the_snapshot_target() -> None:
    assert run("diagnose", "--snapshot", str(EXAMPLE), "--eks", "--region", "ap-southeast-2").exit_code == 3
    result = run("diagnose", "--snapshot", str(EXAMPLE), "--cluster", "prod")
    assert result.exit_code == 2
    assert "--cluster prod" in one_line_error(result)


# --- target validation ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "env", "expect"),
    [
        (["--eks", "--cluster", "demo-ip"], {}, "--region"),
        (["--eks"], {}, "--region and --cluster"),
        ([], {"CIDRX_EKS": "1", "CIDRX_CLUSTER": "demo-ip"}, "--region"),
        (["--eks", "--gke"], {}, "choose one provider"),
        ([], {}, "no target"),
        (["--eks", "--region", "r", "--cluster", "c", "--project", "p"], {}, "--project"),
        (["--gke", "--project", "p", "--location", "l", "--cluster", "c", "--region", "r"], {}, "--region"),
        (["--gke", "--cluster", "c"], {}, "--project and --location"),
        (["--k8s", "--no-kube"], {}, "drop --no-kube"),
        (["--k8s", "--region", "r"], {}, "--region"),
    ],
)
def test_bad_targets_exit_2_with_one_line(args: list[str], env: dict[str, str], expect: str) -> None:
    result = run("diagnose", *args, env=env)
    assert result.exit_code == 2, result.output
    assert expect in one_line_error(result)


def test_snapshot_command_needs_out() -> None:
    result = run("snapshot", "--eks", "--region", "ap-southeast-2", "--cluster", "demo-ip")
    assert result.exit_code == 2
    assert "--out" in result.stderr


# --- expand --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "expect"),
    [
        ([], "needs --plan"),
        (["--plan", "--apply", "p.json"], "mutually exclusive"),
        (["--apply", "p.json", "--cidr", "100.64.0.0/20"], "--cidr only work with --plan"),
        (["--plan", "--yes", "--snapshot", str(EXAMPLE)], "--yes only works with --apply"),
        (["--plan", "--snapshot", str(EXAMPLE), "--cidr", "100.64.0.1/20"], "host bits set"),
        (["--plan", "--snapshot", str(EXAMPLE), "--cidr", "banana"], "--cidr banana"),
    ],
)
def test_expand_flag_errors_exit_2(args: list[str], expect: str) -> None:
    result = run("expand", *args)
    assert result.exit_code == 2, result.output
    assert expect in one_line_error(result)


def test_expand_unknown_strategy_is_a_usage_error() -> None:
    result = run("expand", "--plan", "--snapshot", str(EXAMPLE), "--strategy", "magic")
    assert result.exit_code == 2
    assert "Traceback" not in result.output


def test_expand_plan_from_snapshot_writes_a_loadable_plan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = run("expand", "--plan", "--snapshot", str(EXAMPLE))
    assert result.exit_code == 0, result.output
    plan = load_plan(tmp_path / "cidrx-plan-demo-ip.json")  # the documented default path
    assert plan.target == example().target
    assert plan.snapshot_fingerprint == example().fingerprint
    assert plan.plan_id in result.stdout.splitlines()[0]
    assert "cidrx expand --apply cidrx-plan-demo-ip.json" in result.stderr
    for i, step in enumerate(plan.steps, start=1):
        assert any(line.split()[:2] == [str(i), step.id] for line in result.stdout.splitlines())


def test_expand_plan_out_dash_prints_the_plan_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = run("expand", "--plan", "--snapshot", str(EXAMPLE), "--out", "-")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["schema"] == "cidrx.plan/v1" and doc["digest"]
    assert list(tmp_path.iterdir()) == []


def test_expand_plan_json_output_equals_the_file(tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    result = run(
        "expand", "--plan", "--snapshot", str(EXAMPLE), "--out", str(out), "-o", "json", "--cidr", "100.64.0.0/20"
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == out.read_text()
    assert load_plan(out).basis["cidr"] == "100.64.0.0/20"


def test_apply_missing_plan_exits_2(tmp_path: Path) -> None:
    result = run("expand", "--apply", str(tmp_path / "missing.json"), "--yes")
    assert result.exit_code == 2
    assert "missing.json" in one_line_error(result)


def test_apply_tampered_plan_exits_2(tmp_path: Path) -> None:
    path = sample_plan(tmp_path / "plan.json")
    doc = json.loads(path.read_text())
    doc["steps"][0]["params"]["cidr"] = "10.0.0.0/16"
    path.write_text(json.dumps(doc))
    result = run("expand", "--apply", str(path), "--yes")
    assert result.exit_code == 2
    assert "modified after it was made" in one_line_error(result)


def test_apply_without_yes_refuses_when_stdin_is_not_a_terminal(tmp_path: Path) -> None:
    path = sample_plan(tmp_path / "plan.json")
    result = run("expand", "--apply", str(path))
    assert result.exit_code == 2
    assert one_line_error(result) == "cidrx: error: refusing to apply without --yes: stdin is not a terminal"
    assert not Path(f"{path}.journal.jsonl").exists()


def test_apply_refuses_a_plan_for_another_cluster(tmp_path: Path) -> None:
    path = sample_plan(tmp_path / "plan.json")
    result = run("expand", "--apply", str(path), "--yes", "--cluster", "prod")
    assert result.exit_code == 2
    assert "plan" in one_line_error(result) and "--cluster prod" in result.stderr


# --- the error boundary --------------------------------------------------------------------------------


def _raise(exc: BaseException) -> Any:
    raise exc


def test_boundary_reports_a_bug_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    boundary.set_verbosity(0)
    assert boundary.run(lambda: _raise(RuntimeError("boom\nsecond line"))) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    first = err.splitlines()[0]
    assert first.startswith("cidrx: internal error: RuntimeError: boom second line")
    assert "please report it with the output of `cidrx snapshot`" in first


def test_boundary_shows_the_traceback_with_verbose(capsys: pytest.CaptureFixture[str]) -> None:
    boundary.set_verbosity(1)
    try:
        assert boundary.run(lambda: _raise(RuntimeError("boom"))) == 1
    finally:
        boundary.set_verbosity(0)
    assert "Traceback" in capsys.readouterr().err


def test_boundary_cidrx_error_with_hint(capsys: pytest.CaptureFixture[str]) -> None:
    assert boundary.run(lambda: _raise(InvalidInput("bad thing", hint="do this"))) == 2
    assert capsys.readouterr().err == "cidrx: error: bad thing\nhint: do this\n"


def test_boundary_ctrl_c_is_130_outside_apply_and_5_inside(capsys: pytest.CaptureFixture[str]) -> None:
    assert boundary.run(lambda: _raise(KeyboardInterrupt())) == 130

    def interrupted_apply() -> None:
        with boundary.applying():
            raise KeyboardInterrupt

    assert boundary.run(interrupted_apply) == 5
    assert "run the same command again to resume" in capsys.readouterr().err


def test_boundary_passes_exit_codes_through() -> None:
    assert boundary.run(lambda: 3) == 3
    assert boundary.run(lambda: None) == 0


# --- live EKS through moto ------------------------------------------------------------------------------


@pytest.fixture
def moto_session(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any]]:
    from tests.support.estates.eks import fake_aws_env, moto_incident

    fake_aws_env(monkeypatch)
    with moto_incident(cluster="demo-ip") as pair:
        yield pair


@pytest.fixture
def moto_world(moto_session: tuple[Any, Any]) -> Any:
    return moto_session[1]


def test_live_diagnose_snapshot_and_plan(moto_world: Any, tmp_path: Path) -> None:
    target = ["--eks", "--region", moto_world.region, "--cluster", moto_world.cluster, "--no-kube"]
    result = run("diagnose", *target, "-o", "json")
    assert result.exit_code == 3, result.output
    doc = json.loads(result.stdout)
    full = {c["cidr"] for c in doc["capacity"] if c["kind"] == "subnet" and c["free"] == 0}
    assert full == set(FULL_SUBNETS.values())
    assert any(f["id"] == "KUBE-UNREACHABLE" for f in doc["findings"])

    snap_path = tmp_path / "snap.json"
    result = run("snapshot", *target, "--out", str(snap_path))
    assert result.exit_code == 0, result.output
    snap = load_snapshot(snap_path)
    assert snap.target == Target("eks", moto_world.cluster, region=moto_world.region)
    assert snap.taken_at.endswith("Z") and len(snap.taken_at) == len("2023-11-04T01:12:00Z")
    assert not snap.kube.available and "--no-kube" in snap.kube.reason
    offline = run("diagnose", "--snapshot", str(snap_path), "-o", "json")
    # The same findings; only the fix commands plan from the saved file instead of the live cluster.
    flags = f"--eks --region {moto_world.region} --cluster {moto_world.cluster}"
    online = [{**f, "remediation": f["remediation"].replace(flags, f"--snapshot {snap_path}")} for f in doc["findings"]]
    assert json.loads(offline.stdout)["findings"] == online
    assert doc["taken_at"] is None and json.loads(offline.stdout)["taken_at"] == snap.taken_at

    plan_path = tmp_path / "plan.json"
    result = run("expand", *target, "--plan", "--out", str(plan_path))
    assert result.exit_code == 0, result.output
    assert load_plan(plan_path).basis["vpc_id"] == moto_world.vpc_id


def test_live_snapshot_to_stdout(moto_world: Any) -> None:
    result = run(
        "snapshot",
        "--eks",
        "--no-kube",
        "--out",
        "-",
        env={
            "CIDRX_REGION": moto_world.region,
            "CIDRX_CLUSTER": moto_world.cluster,
        },
    )
    assert result.exit_code == 0, result.output
    snap = codec.loads(result.stdout, snapshot_type(), what="stdout")
    assert snap.eks is not None and snap.eks.vpc.vpc_id == moto_world.vpc_id


@dataclass(frozen=True)
class LivePlan:
    session: Any
    world: Any
    path: Path
    plan: Plan
    kubeconfig: str


@pytest.fixture
def live_plan(moto_session: tuple[Any, Any], kube_server: Any, tmp_path: Path) -> LivePlan:
    """A custom-networking plan of the moto world, and a kubeconfig for a fake cluster showing its nodes."""
    session, world = moto_session
    path = tmp_path / "plan.json"
    target = ["--eks", "--region", world.region, "--cluster", world.cluster, "--no-kube"]
    result = run("expand", *target, "--plan", "--out", str(path), "--cidr", "100.64.0.0/20")
    assert result.exit_code == 0, result.output
    kubeconfig = _reachable_cluster(kube_server, world, tmp_path)
    return LivePlan(session, world, path, load_plan(path), kubeconfig)


def _vpc_cidrs(session: Any, vpc_id: str) -> set[str]:
    vpc = session.client("ec2").describe_vpcs(VpcIds=[vpc_id])["Vpcs"][0]
    return {a["CidrBlock"] for a in vpc["CidrBlockAssociationSet"] if a["CidrBlockState"]["State"] == "associated"}


def _reachable_cluster(server: Any, world: Any, tmp_path: Path) -> str:
    """A kubeconfig for the fake API server showing the world's nodes: apply must reach the cluster its
    plan changes (the ENIConfigs) before it writes anything."""
    seed_cluster(server, world.node_ips)
    return str(server.kubeconfig(tmp_path / "kubeconfig"))


def test_live_apply_refuses_a_stale_plan_with_4_and_changes_nothing(live_plan: LivePlan, kube_server: Any) -> None:
    session, world, plan_path, kubeconfig = live_plan.session, live_plan.world, live_plan.path, live_plan.kubeconfig
    # Someone else takes overlapping space between plan and apply.
    session.client("ec2").associate_vpc_cidr_block(VpcId=world.vpc_id, CidrBlock="100.64.0.0/16")
    result = run("expand", "--apply", str(plan_path), "--yes", "--kubeconfig", kubeconfig)
    assert result.exit_code == 4, result.output
    assert "stale" in one_line_error(result)
    assert _vpc_cidrs(session, world.vpc_id) == {"10.0.0.0/16", "100.64.0.0/16"}
    assert result.stdout == ""


def test_live_apply_stops_partway_with_5_and_a_journal(live_plan: LivePlan, kube_server: Any) -> None:
    session, world, plan_path, kubeconfig = live_plan.session, live_plan.world, live_plan.path, live_plan.kubeconfig
    plan = live_plan.plan
    # The cloud steps run; the first in-cluster write (an ENIConfig) fails on the server's side.
    kube_server.inject(500, method="POST", path_contains="eniconfigs", times=None)
    result = run("expand", "--apply", str(plan_path), "--yes", "--kubeconfig", kubeconfig)
    assert result.exit_code == 5, result.output
    assert "run the same command again to resume" in one_line_error(result)
    assert "100.64.0.0/20" in _vpc_cidrs(session, world.vpc_id)
    events = [json.loads(line) for line in Path(f"{plan_path}.journal.jsonl").read_text().splitlines()]
    assert {e["plan_digest"] for e in events} == {plan.digest}
    assert any(e["step"] == "associate-vpc-cidr" and e["event"] == "done" for e in events)
    assert "[1/" in result.stderr  # progress went to stderr


def test_live_apply_resumes_after_stopping_partway(live_plan: LivePlan, kube_server: Any) -> None:
    session, world, plan_path, kubeconfig = live_plan.session, live_plan.world, live_plan.path, live_plan.kubeconfig
    kube_server.inject(500, method="POST", path_contains="eniconfigs", times=1)
    apply = ("expand", "--apply", str(plan_path), "--yes", "--kubeconfig", kubeconfig)
    assert run(*apply).exit_code == 5
    # The same command resumes: what was done is found again (by the plan tag), not redone.
    again = run(*apply)
    assert again.exit_code == 0, again.output
    assert "associate-vpc-cidr: skipped (already done)" in again.stderr
    assert _vpc_cidrs(session, world.vpc_id) == {"10.0.0.0/16", "100.64.0.0/20"}


# --- live EKS through moto, with the cluster side from the fake Kubernetes API server ------------------


def test_live_diagnose_reads_the_cluster_side(moto_world: Any, kube_server: Any, tmp_path: Path) -> None:
    seed_cluster(kube_server, moto_world.node_ips)
    kubeconfig = str(kube_server.kubeconfig(tmp_path / "kubeconfig"))
    target = ["--eks", "--region", moto_world.region, "--cluster", moto_world.cluster, "--kubeconfig", kubeconfig]
    result = run("diagnose", *target, "-o", "json")
    assert result.exit_code == 3, result.output
    doc = json.loads(result.stdout)
    ids = {f["id"] for f in doc["findings"]}
    assert "EKS-POD-IP-ASSIGN-FAILED" in ids and "KUBE-UNREACHABLE" not in ids
    failed = next(f for f in doc["findings"] if f["id"] == "EKS-POD-IP-ASSIGN-FAILED")
    assert any("failed to assign an IP address to container" in e for e in failed["evidence"])


def test_live_diagnose_refuses_a_context_of_another_cluster(moto_world: Any, kube_server: Any, tmp_path: Path) -> None:
    seed_cluster(kube_server, ("192.168.7.10", "192.168.9.20"))  # nodes of some other cluster
    kubeconfig = str(kube_server.kubeconfig(tmp_path / "kubeconfig", context="staging"))
    target = ["--eks", "--region", moto_world.region, "--cluster", moto_world.cluster, "--kubeconfig", kubeconfig]
    result = run("diagnose", *target)
    assert result.exit_code == 2, result.output
    assert "context staging does not look like eks:ap-southeast-2/demo-ip" in one_line_error(result)


def test_live_diagnose_goes_on_when_the_cluster_is_unreachable(moto_world: Any, tmp_path: Path) -> None:
    from tests.support.fakes.kube_server import FakeKubeServer

    with FakeKubeServer() as server:
        kubeconfig = str(server.kubeconfig(tmp_path / "kubeconfig"))
    # the server is stopped now: connections to it are refused
    target = ["--eks", "--region", moto_world.region, "--cluster", moto_world.cluster, "--kubeconfig", kubeconfig]
    result = run("diagnose", *target, "-o", "json")
    assert result.exit_code == 3, result.output
    unreachable = [f for f in json.loads(result.stdout)["findings"] if f["id"] == "KUBE-UNREACHABLE"]
    assert unreachable and unreachable[0]["evidence"]


def test_live_plan_and_apply_end_to_end(moto_session: tuple[Any, Any], kube_server: Any, tmp_path: Path) -> None:
    session, world = moto_session
    seed_cluster(kube_server, world.node_ips)
    kubeconfig = str(kube_server.kubeconfig(tmp_path / "kubeconfig"))
    target = ["--eks", "--region", world.region, "--cluster", world.cluster, "--kubeconfig", kubeconfig]
    plan_path = tmp_path / "plan.json"
    made = run("expand", *target, "--plan", "--out", str(plan_path))
    assert made.exit_code == 0, made.output
    plan = load_plan(plan_path)

    result = run("expand", "--apply", str(plan_path), "--yes", "--kubeconfig", kubeconfig)
    assert result.exit_code == 0, result.output
    # stdout: one row per step with its status, then the manual next steps from the plan
    for step in plan.steps:
        assert any(line.split()[:2] == [step.id, "done"] for line in result.stdout.splitlines()), step.id
    assert "Next steps (by hand)" in result.stdout
    # the cloud and the cluster now hold what the plan promised
    ec2 = session.client("ec2")
    assert plan.basis["cidr"] in _vpc_cidrs(session, world.vpc_id)
    tagged = ec2.describe_subnets(Filters=[{"Name": "tag:cidrx.io/plan", "Values": [plan.plan_id]}])["Subnets"]
    assert len(tagged) == 2
    eniconfigs = {e["metadata"]["name"]: e for e in kube_server.objects_of("ENIConfig")}
    assert set(eniconfigs) == {"ap-southeast-2a", "ap-southeast-2b"}
    assert {e["spec"]["subnet"] for e in eniconfigs.values()} == {s["SubnetId"] for s in tagged}
    ds = kube_server.get("apps", "v1", "daemonsets", "aws-node", "kube-system")
    env = {e["name"]: e.get("value") for e in ds["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG"] == "true"
    assert env["ENI_CONFIG_LABEL_DEF"] == "topology.kubernetes.io/zone"
    nodegroups = session.client("eks").list_nodegroups(clusterName=world.cluster)["nodegroups"]
    assert plan.basis["nodegroup_name"] in nodegroups


# --- real processes --------------------------------------------------------------------------------------


def cidrx_process(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CIDRX_")}
    return subprocess.run(
        [sys.executable, "-m", "cidrx", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
    )


def test_process_help() -> None:
    proc = cidrx_process("--help")
    assert proc.returncode == 0
    assert "Exit codes:" in proc.stdout and "diagnose" in proc.stdout


def test_process_diagnose_example_json() -> None:
    proc = cidrx_process("diagnose", "--snapshot", "examples/eks-demo-ip.snapshot.json", "-o", "json")
    assert proc.returncode == 3, proc.stderr
    doc = json.loads(proc.stdout)
    assert {c["cidr"] for c in doc["capacity"] if c["free"] == 0 and c["kind"] == "subnet"} == set(
        FULL_SUBNETS.values()
    )


def test_process_apply_on_a_terminal_shows_the_plan_and_asks(tmp_path: Path) -> None:
    """stdin is a pseudo-terminal: apply shows the plan, asks, and a "no" changes nothing (exit 2)."""
    import pty

    path = sample_plan(tmp_path / "plan.json")
    controller, terminal = pty.openpty()
    try:
        os.write(controller, b"n\n")
        env = {k: v for k, v in os.environ.items() if not k.startswith("CIDRX_")}
        proc = subprocess.run(
            [sys.executable, "-m", "cidrx", "expand", "--apply", str(path)],
            cwd=REPO,
            env=env,
            stdin=terminal,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        os.close(terminal)
        os.close(controller)
    assert proc.returncode == 2, proc.stderr
    assert "associate-vpc-cidr" in proc.stderr  # the plan, shown before the question
    assert f"Apply plan {load_plan(path).plan_id} to eks:ap-southeast-2/demo-ip? [y/N]" in proc.stderr
    assert "cidrx: error: apply cancelled at the prompt; nothing was changed" in proc.stderr
    assert proc.stdout == ""
    assert not Path(f"{path}.journal.jsonl").exists()


def test_process_missing_snapshot_is_one_line() -> None:
    proc = cidrx_process("diagnose", "--snapshot", "does-not-exist.json")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.startswith("cidrx: error: cannot read snapshot does-not-exist.json")
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
