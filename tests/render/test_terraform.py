"""Terraform: `--emit terraform` writes HCL equivalent to each kind of plan (parsed back with python-hcl2 and
checked against the plan's own values), import blocks adopt what a journal says an apply created, and the
hand-written root modules under terraform-examples/ parse and are `terraform fmt` clean.

Plans come from the real planners and the bundled example snapshots; `terraform` itself is only needed for
the fmt checks (skipped, with the reason, when it is not on PATH).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from cidrx.app import plan as app_plan
from cidrx.engine.journal import Journal
from cidrx.errors import InvalidInput
from cidrx.model.options import PlanOptions
from cidrx.model.plan import DIGEST_TAG, Plan, save_plan, seal
from cidrx.model.snapshot import Snapshot, load_snapshot
from cidrx.render.terraform import extract_snippets, quote, render_terraform
from tests.support.cases import eks as eks_cases
from tests.support.cli import run
from tests.support.terraform_check import (
    HCL2_REASON,
    TERRAFORM,
    fmt_check,
    imports,
    needs_terraform,
    parse,
    ref,
    resources,
)

pytest.importorskip("hcl2", reason=HCL2_REASON)

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
TF_EXAMPLES = REPO / "terraform-examples"


def of_type(doc: dict[str, Any], rtype: str) -> list[dict[str, Any]]:
    return [body for (t, _), body in resources(doc).items() if t == rtype]


def block(body: dict[str, Any], name: str) -> dict[str, Any]:
    """A nested block (python-hcl2 lists them, even when there is one)."""
    value = body[name]
    return dict(value[0] if isinstance(value, list) else value)


# --- plans from the real planners ------------------------------------------------------------------------


def plan_from(snapshot: Snapshot | str, strategy: str | None = None) -> Plan:
    snap = load_snapshot(EXAMPLES / snapshot) if isinstance(snapshot, str) else snapshot
    return app_plan.make_plan(snap, PlanOptions(strategy=strategy))


@pytest.fixture(scope="module")
def eks_cn() -> Plan:
    return plan_from("eks-demo-ip.snapshot.json", "custom-networking")


@pytest.fixture(scope="module")
def gke_pool() -> Plan:
    return plan_from("gke-demo-ip.snapshot.json", "node-pool")


def steps(plan: Plan, action: str) -> list[Any]:
    return [s for s in plan.steps if s.action == action]


# --- EKS -------------------------------------------------------------------------------------------------


def test_eks_custom_networking_resources_match_the_plan(eks_cn: Plan) -> None:
    doc = parse(render_terraform(eks_cn))
    res = resources(doc)
    assoc = res[("aws_vpc_ipv4_cidr_block_association", "pods")]
    assert assoc["cidr_block"] == eks_cn.basis["cidr"] == "100.64.0.0/20"
    assert assoc["vpc_id"] == eks_cn.basis["vpc_id"]

    subnets = {s["availability_zone"]: s for s in of_type(doc, "aws_subnet")}
    assert {az: s["cidr_block"] for az, s in subnets.items()} == eks_cn.summary["subnets"]
    for s in subnets.values():
        assert ref(s["vpc_id"]) == "aws_vpc_ipv4_cidr_block_association.pods.vpc_id"
        assert s["tags"]["kubernetes.io/cluster/demo-ip"] == "shared"
        assert s["tags"][DIGEST_TAG] == eks_cn.plan_id

    routes = {ref(r["subnet_id"]): r["route_table_id"] for r in of_type(doc, "aws_route_table_association")}
    assert routes == {
        f"aws_subnet.pods_{az.replace('-', '_')}.id": rt for az, rt in eks_cn.basis["route_tables"].items()
    }

    eniconfigs = {m["manifest"]["metadata"]["name"]: m["manifest"] for m in of_type(doc, "kubernetes_manifest")}
    assert set(eniconfigs) == set(subnets)
    for az, m in eniconfigs.items():
        assert (m["apiVersion"], m["kind"]) == ("crd.k8s.amazonaws.com/v1alpha1", "ENIConfig")
        assert ref(m["spec"]["subnet"]) == f"aws_subnet.pods_{az.replace('-', '_')}.id"
        assert m["spec"]["securityGroups"] == [eks_cn.basis["cluster_security_group"]]
        assert m["metadata"]["labels"][DIGEST_TAG] == eks_cn.plan_id

    # No vpc-cni add-on in the example: the aws-node DaemonSet env is set with kubernetes_env.
    env = res[("kubernetes_env", "aws_node")]
    assert (env["kind"], env["container"], block(env, "metadata")["namespace"]) == (
        "DaemonSet",
        "aws-node",
        "kube-system",
    )
    assert {e["name"]: e["value"] for e in env["env"]} == eks_cn.step("enable-custom-networking").params["env"]
    assert not of_type(doc, "aws_eks_addon")

    ng_params = eks_cn.step("create-nodegroup").params
    ng = res[("aws_eks_node_group", "managed_ng_cn")]
    assert ng["node_group_name"] == ng_params["name"] and ng["cluster_name"] == "demo-ip"
    assert ng["subnet_ids"] == ng_params["subnets"]
    assert ng["instance_types"] == ["m5.large"]
    assert block(ng, "scaling_config") == {
        "desired_size": ng_params["scaling"]["desiredSize"],
        "max_size": ng_params["scaling"]["maxSize"],
        "min_size": ng_params["scaling"]["minSize"],
    }
    assert ng["tags"][DIGEST_TAG] == eks_cn.plan_id
    assert "kubernetes_env.aws_node" in [ref(d) for d in ng["depends_on"]]
    assert "import" not in doc  # nothing applied yet


def test_node_group_in_the_new_subnets_references_them() -> None:
    snap = eks_cases.example()
    for sid in ("subnet-0bae4d2bf017995b8", "subnet-06d8153845fa5e9cb"):  # the private subnets: no room either
        snap = eks_cases.with_subnet(snap, sid, available_ips=2)
    plan = plan_from(snap, "custom-networking")
    ng = of_type(parse(render_terraform(plan)), "aws_eks_node_group")[0]
    assert [ref(s) for s in ng["subnet_ids"]] == [
        "aws_subnet.pods_ap_southeast_2a.id",
        "aws_subnet.pods_ap_southeast_2b.id",
    ]


def test_managed_vpc_cni_gets_aws_eks_addon_configuration_and_is_imported() -> None:
    plan = plan_from(eks_cases.managed_addon(), "custom-networking")
    doc = parse(render_terraform(plan))
    (addon,) = of_type(doc, "aws_eks_addon")
    assert addon["addon_name"] == "vpc-cni" and addon["cluster_name"] == "demo-ip"
    config = ref(addon["configuration_values"])
    assert config.startswith("jsonencode(")
    for key, value in plan.step("enable-custom-networking").params["env"].items():
        assert f'{key} = "{value}"' in config
    assert not of_type(doc, "kubernetes_env")
    assert imports(doc) == {"aws_eks_addon.vpc_cni": "demo-ip:vpc-cni"}  # it exists already


def test_eks_prefix_delegation_reserves_the_planned_blocks() -> None:
    plan = plan_from(eks_cases.roomy(), "prefix-delegation")
    doc = parse(render_terraform(plan))
    reservations = {r["subnet_id"]: r for r in of_type(doc, "aws_ec2_subnet_cidr_reservation")}
    want = {s.params["subnet_id"]: s.params["cidr"] for s in steps(plan, "eks.reserve-subnet-cidr")}
    assert want and {sid: r["cidr_block"] for sid, r in reservations.items()} == want
    assert {r["reservation_type"] for r in reservations.values()} == {"prefix"}
    (env,) = of_type(doc, "kubernetes_env")
    assert {e["name"]: e["value"] for e in env["env"]} == {
        "ENABLE_PREFIX_DELEGATION": "true",
        "WARM_PREFIX_TARGET": "1",
    }


def test_eks_prefix_delegation_on_the_incident_example_is_not_plannable() -> None:
    # The example's node subnets have no free /28: the planner refuses, so there is no HCL to emit for it.
    with pytest.raises(InvalidInput, match="no pod subnet has a free aligned /28"):
        plan_from("eks-demo-ip.snapshot.json", "prefix-delegation")


def test_eks_imports_from_journal_outputs(eks_cn: Plan) -> None:
    outputs = {"associate-vpc-cidr": {"association_id": "vpc-cidr-assoc-0abc"}, "create-nodegroup": {"nodegroup": "x"}}
    for i, s in enumerate(steps(eks_cn, "eks.create-subnet")):
        outputs[s.id] = {"subnet_id": f"subnet-new{i}"}
        outputs[f"route-subnet-{s.params['az']}"] = {"association_id": f"rtbassoc-{i}"}
        outputs[f"eniconfig-{s.params['az']}"] = {"name": s.params["az"]}
    found = imports(parse(render_terraform(eks_cn, outputs)))
    rt = eks_cn.basis["route_tables"]
    assert found == {
        "aws_vpc_ipv4_cidr_block_association.pods": "vpc-cidr-assoc-0abc",
        "aws_subnet.pods_ap_southeast_2a": "subnet-new0",
        "aws_subnet.pods_ap_southeast_2b": "subnet-new1",
        "aws_route_table_association.pods_ap_southeast_2a": f"subnet-new0/{rt['ap-southeast-2a']}",
        "aws_route_table_association.pods_ap_southeast_2b": f"subnet-new1/{rt['ap-southeast-2b']}",
        "kubernetes_manifest.eniconfig_ap_southeast_2a": (
            "apiVersion=crd.k8s.amazonaws.com/v1alpha1,kind=ENIConfig,name=ap-southeast-2a"
        ),
        "kubernetes_manifest.eniconfig_ap_southeast_2b": (
            "apiVersion=crd.k8s.amazonaws.com/v1alpha1,kind=ENIConfig,name=ap-southeast-2b"
        ),
        "aws_eks_node_group.managed_ng_cn": "demo-ip:managed-ng-cn",
    }


def test_prefix_reservation_import_id() -> None:
    plan = plan_from(eks_cases.roomy(), "prefix-delegation")
    step = steps(plan, "eks.reserve-subnet-cidr")[0]
    found = imports(parse(render_terraform(plan, {step.id: {"reservation_id": "scr-0123"}})))
    sid = step.params["subnet_id"]
    assert found == {f"aws_ec2_subnet_cidr_reservation.prefixes_{sid.replace('-', '_')}": f"{sid}:scr-0123"}


# --- GKE -------------------------------------------------------------------------------------------------


def test_gke_node_pool_resource_and_subnet_snippet(gke_pool: Plan) -> None:
    text = render_terraform(gke_pool)
    doc = parse(text)
    range_name, cidr = gke_pool.basis["range_name"], gke_pool.basis["cidr"]
    pool_params = gke_pool.step("create-node-pool").params
    (pool,) = of_type(doc, "google_container_node_pool")
    assert (pool["project"], pool["location"], pool["cluster"]) == ("p1", "australia-southeast1", "demo-ip")
    assert pool["name"] == pool_params["node_pool"]["name"] == gke_pool.summary["node_pool"]
    assert block(pool, "network_config") == {"pod_range": range_name}
    assert pool["max_pods_per_node"] == gke_pool.summary["max_pods_per_node"]
    config = block(pool, "node_config")
    assert config["machine_type"] == "e2-standard-4"
    assert config["resource_labels"] == {"team": "platform", "cidrx-plan": gke_pool.plan_id}
    assert block(pool, "autoscaling")["max_node_count"] == 3
    assert pool["node_locations"] == pool_params["node_pool"]["locations"]
    # The subnet is not a resource here (a partial copy would drop its other ranges): a snippet to merge.
    assert not of_type(doc, "google_compute_subnetwork")
    snip, firewall = extract_snippets(text)
    assert parse(snip)["secondary_ip_range"] == [{"range_name": range_name, "ip_cidr_range": cidr}]
    # GKE's own rule allowing the pod range gets the new range too (a snippet: GKE's rules are not in Terraform).
    [(name, rule)] = parse(firewall)["resource"][0]["google_compute_firewall"].items()
    assert name == "gke_demo_ip_5f2c9a7e_all"
    assert rule["source_ranges"] == ["10.4.0.0/22", cidr]
    assert "removes the range" in text and "pods 10.4.0.0/22" in text


def test_gke_cluster_range_is_a_snippet_for_the_cluster() -> None:
    plan = plan_from("gke-demo-ip.snapshot.json", "cluster-range")
    text = render_terraform(plan)
    assert not resources(parse(text))
    subnet, _firewall, cluster = extract_snippets(text)
    assert parse(subnet)["secondary_ip_range"][0]["ip_cidr_range"] == plan.basis["cidr"]
    policy = block(parse(cluster), "ip_allocation_policy")
    assert block(policy, "additional_pod_ranges_config") == {"pod_range_names": [plan.basis["range_name"]]}


def test_gke_node_pool_import_id(gke_pool: Plan) -> None:
    found = imports(parse(render_terraform(gke_pool, {"create-node-pool": {"node_pool": "default-pool-pods2"}})))
    assert found == {
        "google_container_node_pool.default_pool_pods2": (
            "projects/p1/locations/australia-southeast1/clusters/demo-ip/nodePools/default-pool-pods2"
        )
    }


# --- Calico and reclaim ----------------------------------------------------------------------------------


def test_calico_pool_is_a_kubernetes_manifest_ippool() -> None:
    plan = plan_from("calico-borrowing.snapshot.json", "calico-pool")
    doc = parse(render_terraform(plan, {"create-ippool": {"name": plan.summary["name"]}}))
    (m,) = [r["manifest"] for r in of_type(doc, "kubernetes_manifest")]
    assert (m["apiVersion"], m["kind"], m["metadata"]["name"]) == (
        "crd.projectcalico.org/v1",
        "IPPool",
        plan.summary["name"],
    )
    assert (m["spec"]["cidr"], m["spec"]["blockSize"]) == (plan.summary["cidr"], plan.summary["block_size"])
    assert m["spec"]["natOutgoing"] is True and m["spec"]["ipipMode"] == "Always"
    assert list(imports(doc).values()) == [
        f"apiVersion=crd.projectcalico.org/v1,kind=IPPool,name={plan.summary['name']}"
    ]


@pytest.mark.parametrize(("example", "ipam"), [("whereabouts-stale", "whereabouts"), ("calico-borrowing", "calico")])
def test_reclaim_plans_are_refused(example: str, ipam: str) -> None:
    plan = app_plan.make_reclaim_plan(load_snapshot(EXAMPLES / f"{example}.snapshot.json"), ipam)
    with pytest.raises(InvalidInput, match="nothing in it for Terraform"):
        render_terraform(plan)


# --- every emitted file: header, fmt -------------------------------------------------------------------


def all_plans() -> list[Plan]:
    return [
        plan_from("eks-demo-ip.snapshot.json", "custom-networking"),
        plan_from(eks_cases.managed_addon(), "custom-networking"),
        plan_from(eks_cases.roomy(), "prefix-delegation"),
        plan_from("gke-demo-ip.snapshot.json", "node-pool"),
        plan_from("gke-demo-ip.snapshot.json", "cluster-range"),
        plan_from("calico-borrowing.snapshot.json", "calico-pool"),
    ]


def test_every_file_starts_with_the_plan_id_and_how_it_was_made() -> None:
    for plan in all_plans():
        first = render_terraform(plan, generated_by="cidrx test").splitlines()[:3]
        assert first[0].startswith(f"# cidrx plan {plan.plan_id} ({plan.strategy})")
        assert "Generated by `cidrx test`" in first[1]


@needs_terraform
def test_emitted_hcl_is_terraform_fmt_clean(tmp_path: Path) -> None:
    for i, plan in enumerate(all_plans()):
        ids = {"association_id": "a-1", "subnet_id": "s-1", "name": "n", "nodegroup": "n", "reservation_id": "r-1"}
        outputs = {s.id: {**ids, "node_pool": "p"} for s in plan.steps}
        (tmp_path / f"plan{i}.tf").write_text(render_terraform(plan, outputs))
    result = fmt_check(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_strings_are_escaped() -> None:
    assert quote('a"b${x}%{y}\\') == '"a\\"b$${x}%%{y}\\\\"'
    assert parse(f"x = {quote('a${b}')}\n")["x"] == "a${b}"


# --- CLI -------------------------------------------------------------------------------------------------


def _plan_with_terraform(out: Path) -> Result:
    """`expand --plan --emit terraform` of the bundled GKE example, the plan written to `out`."""
    snapshot = str(EXAMPLES / "gke-demo-ip.snapshot.json")
    return run("expand", "--snapshot", snapshot, "--plan", "--out", str(out), "--emit", "terraform")


def test_cli_writes_the_plan_and_the_tf_beside_it(tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    result = _plan_with_terraform(out)
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["strategy"] == "node-pool"
    tf = tmp_path / "plan.tf"
    doc = parse(tf.read_text())
    assert of_type(doc, "google_container_node_pool") and "import" not in doc
    assert str(tf) in result.stderr


def test_cli_imports_what_the_journal_recorded(tmp_path: Path) -> None:
    """A plan already applied (its journal beside it): planning the same again emits import blocks."""
    out = tmp_path / "plan.json"
    snapshot = str(EXAMPLES / "gke-demo-ip.snapshot.json")
    assert run("expand", "--snapshot", snapshot, "--plan", "--out", str(out)).exit_code == 0
    from cidrx.model.plan import load_plan

    plan = load_plan(out)
    journal = Journal.open(out, plan)
    journal.record("add-secondary-range", "done", {"range_name": "pods-2", "cidr": plan.basis["cidr"]})
    journal.record("create-node-pool", "done", {"node_pool": "default-pool-pods2"})
    result = run("expand", "--snapshot", snapshot, "--plan", "--out", str(out), "--emit", "terraform")
    assert result.exit_code == 0, result.output
    assert list(imports(parse((tmp_path / "plan.tf").read_text()))) == ["google_container_node_pool.default_pool_pods2"]


def test_cli_ignores_an_orphaned_journal_of_another_plan(tmp_path: Path) -> None:
    """A journal left beside a path whose plan file is gone: the new plan is written (with a warning) and the
    journal's ids are not taken for this plan's."""
    out = tmp_path / "plan.json"
    other = plan_from("gke-demo-ip.snapshot.json", "cluster-range")
    Journal.open(out, other).record("add-secondary-range", "done", {"range_name": "pods-2"})
    result = _plan_with_terraform(out)
    assert result.exit_code == 0, result.output
    assert "belongs to another plan" in result.stderr and "apply will refuse until it is moved" in result.stderr
    assert "import" not in parse((tmp_path / "plan.tf").read_text())


def test_cli_refuses_to_overwrite_an_applied_plan_and_points_at_adoption(tmp_path: Path) -> None:
    """Re-planning over a plan whose own journal is beside it would orphan the journal: exit 2, one line,
    nothing written."""
    out = tmp_path / "plan.json"
    # Made (and sealed) at another time than any plan the CLI makes below, so its digest differs from theirs.
    applied = seal(replace(plan_from("gke-demo-ip.snapshot.json", "cluster-range"), created_at="2026-01-01T00:00:00Z"))
    save_plan(applied, out)
    Journal.open(out, applied).record("add-secondary-range", "done", {"range_name": "pods-2"})
    before = out.read_bytes()
    snapshot = str(EXAMPLES / "gke-demo-ip.snapshot.json")
    for emit in ([], ["--emit", "terraform"]):
        result = run("expand", "--snapshot", snapshot, "--plan", "--out", str(out), *emit)
        assert result.exit_code == 2, result.output
        assert result.stdout == ""
        (line,) = result.stderr.splitlines()
        assert line.startswith(f"cidrx: error: {out} holds plan {applied.plan_id}, applied with its journal")
        assert "choose another --out" in line
        assert line.endswith(f"cidrx expand --apply {out} --emit terraform")
    assert out.read_bytes() == before
    assert not (tmp_path / "plan.tf").exists()
    # Another --out is fine. The same strategy again is another plan (its digest seals when it was made),
    # so it would orphan the journal just the same: refused, the applied plan kept.
    other = tmp_path / "other.json"
    assert run("expand", "--snapshot", snapshot, "--plan", "--out", str(other)).exit_code == 0
    again = run("expand", "--snapshot", snapshot, "--plan", "--strategy", "cluster-range", "--out", str(out))
    assert again.exit_code == 2, again.output
    assert json.loads(out.read_text())["digest"] == applied.digest


def test_cli_overwrites_a_plan_whose_journal_is_empty_or_not_its_own(tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    snapshot = str(EXAMPLES / "gke-demo-ip.snapshot.json")
    old = plan_from("gke-demo-ip.snapshot.json", "cluster-range")
    save_plan(old, out)
    (tmp_path / "plan.json.journal.jsonl").write_text("")  # nothing recorded: nothing to orphan
    assert run("expand", "--snapshot", snapshot, "--plan", "--out", str(out)).exit_code == 0
    assert json.loads(out.read_text())["strategy"] == "node-pool"


def test_reclaim_plan_shares_the_guard(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    applied = app_plan.make_reclaim_plan(load_snapshot(EXAMPLES / "whereabouts-stale.snapshot.json"), "whereabouts")
    save_plan(applied, out)
    Journal.open(out, applied).record(applied.steps[0].id, "done", {})
    snapshot = str(EXAMPLES / "calico-borrowing.snapshot.json")
    result = run("reclaim", "--snapshot", snapshot, "--ipam", "calico", "--plan", "--out", str(out))
    assert result.exit_code == 2, result.output
    (line,) = result.stderr.splitlines()
    assert f"holds plan {applied.plan_id}" in line and line.endswith(f"finish it with: cidrx reclaim --apply {out}")
    assert json.loads(out.read_text())["digest"] == applied.digest


def test_apply_emit_of_a_reclaim_plan_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    save_plan(
        app_plan.make_reclaim_plan(load_snapshot(EXAMPLES / "whereabouts-stale.snapshot.json"), "whereabouts"), out
    )
    result = run("expand", "--apply", str(out), "--yes", "--emit", "terraform")
    assert result.exit_code == 2, result.output
    assert f"is a whereabouts-reclaim plan; apply it with: cidrx reclaim --apply {out}" in result.stderr
    assert not (tmp_path / "r.tf").exists()


def test_cli_out_dash_prints_hcl_instead_of_json() -> None:
    result = run(
        "expand",
        "--snapshot",
        str(EXAMPLES / "eks-demo-ip.snapshot.json"),
        "--plan",
        "--out",
        "-",
        "--emit",
        "terraform",
    )
    assert result.exit_code == 0, result.output
    assert of_type(parse(result.stdout), "aws_subnet")


# --- terraform-examples/ ---------------------------------------------------------------------------------

EXAMPLE_DIRS = sorted(p for p in TF_EXAMPLES.iterdir() if p.is_dir()) if TF_EXAMPLES.is_dir() else []


def test_examples_exist() -> None:
    names = {p.name for p in EXAMPLE_DIRS}
    assert {"eks-custom-networking", "gke-multi-pod-cidr", "calico-ippool"} <= names


def test_calico_example_sets_every_field_cidrx_emits() -> None:
    """The hand-written module and `--strategy calico-pool --emit terraform` describe the same object."""
    plan = plan_from("calico-borrowing.snapshot.json", "calico-pool")
    (emitted,) = [r["manifest"] for r in of_type(parse(render_terraform(plan)), "kubernetes_manifest")]
    module = TF_EXAMPLES / "calico-ippool"
    (manifest,) = [r["manifest"] for r in of_type(parse((module / "main.tf").read_text()), "kubernetes_manifest")]
    assert manifest["kind"] == emitted["kind"] == "IPPool"
    assert set(emitted["spec"]) | {"ipipMode", "vxlanMode"} == set(manifest["spec"])
    assert set(emitted["metadata"]) == set(manifest["metadata"]) == {"name", "labels"}
    variables = {n: b for e in parse((module / "variables.tf").read_text())["variable"] for n, b in e.items()}
    assert variables["api_version"]["default"] == emitted["apiVersion"]
    assert variables["block_size"]["default"] == 26 and variables["node_selector"]["default"] == "all()"
    assert variables["nat_outgoing"]["default"] is True and variables["disabled"]["default"] is False


@pytest.mark.parametrize("example", EXAMPLE_DIRS, ids=lambda p: p.name)
def test_example_is_a_complete_documented_root_module(example: Path) -> None:
    for name in ("main.tf", "variables.tf", "outputs.tf", "versions.tf", "README.md"):
        assert (example / name).is_file(), name
    docs = {p.name: parse(p.read_text()) for p in sorted(example.glob("*.tf"))}
    terraform = block(docs["versions.tf"], "terraform")
    assert terraform["required_version"].startswith(">=")
    providers = block(terraform, "required_providers")
    assert providers and all(p["version"] and p["source"] for p in providers.values())
    for entry in docs["variables.tf"]["variable"]:
        for name, body in entry.items():
            assert body.get("description"), f"variable {name} has no description"
    for entry in docs["outputs.tf"]["output"]:
        for name, body in entry.items():
            assert body.get("description"), f"output {name} has no description"
    readme = (example / "README.md").read_text()
    assert "--emit terraform" in readme and "https://" in readme
    assert "111122223333" not in "".join(p.read_text() for p in example.glob("*.tf"))


@needs_terraform
def test_examples_are_terraform_fmt_clean() -> None:
    result = subprocess.run(
        [TERRAFORM or "terraform", "fmt", "-check", "-recursive", "-diff", str(TF_EXAMPLES)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
