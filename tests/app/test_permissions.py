"""`cidrx permissions`: the printed policies parse, cover every step of every plan kind and every Kubernetes
call the collector makes, and are enough (and needed) for diagnose under moto's IAM enforcement.

moto enforces IAM only when its INITIAL_NO_AUTH_ACTION_COUNT setting is finite (the environment variable of
that name is read when moto.settings is imported; in server mode `POST /moto-api/reset-auth` sets it and
restarts the count, which is what moto's own `set_initial_no_auth_action_count` does there). moto's EKS
enforcement is broken: it recomputes the SigV4 signature of EKS's REST-JSON GET requests over the wrong
payload and answers SignatureDoesNotMatch to every correctly signed call. So the printed policy is checked
against EC2 (and Service Quotas) only: EKS calls go (AWS_ENDPOINT_URL_EKS) to a second moto server in its
own process, where enforcement stays off.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from cidrx import registry
from cidrx.app.permissions import allows, allows_path, collect_kube_grants
from cidrx.cli import cli
from cidrx.kube.api import KubeApi
from cidrx.kube.collect import collect_with
from cidrx.model.plan import Plan
from cidrx.model.snapshot import Snapshot, load_snapshot
from cidrx.providers.gke.api import SUBNET_ADDRESS_READS
from tests.support.cases import aks as aks_cases
from tests.support.cases import eks as eks_cases
from tests.support.cases import eks_provisioners as eks_provisioner_cases
from tests.support.cases import gke as gke_cases
from tests.support.cli import run as cli_run
from tests.support.estates.eks import REGION, build_incident, fake_aws_env, moto_server
from tests.support.estates.kube_objects import seed_eks_cluster
from tests.support.fakes.kube_server import FakeKubeServer
from tests.support.permissions import iam_actions, printed, request_to_rbac

pytestmark = pytest.mark.usefixtures("shared_botocore")  # sessions share one botocore loader

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PACKAGE = Path(__file__).resolve().parents[2] / "cidrx"
# Every registered strategy: `_plans()` must make a plan of each, so a new strategy cannot go unchecked.
PLAN_KINDS = {s.name for s in registry.strategies()}


def run(*args: str) -> Result:
    return cli_run("permissions", *args)


# -- shapes ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["eks", "gke", "k8s"])
@pytest.mark.parametrize("purpose", ["diagnose", "apply", "all"])
def test_json_and_text_outputs_parse(provider: str, purpose: str) -> None:
    doc = printed(provider, purpose)
    assert doc["schema"] == "cidrx.permissions/v1"
    role = doc["cluster_role"]
    assert role["apiVersion"] == "rbac.authorization.k8s.io/v1" and role["kind"] == "ClusterRole"
    if provider == "eks":
        assert doc["iam_policy"]["Version"] == "2012-10-17"
        assert all(st["Effect"] == "Allow" for st in doc["iam_policy"]["Statement"])
    if provider == "gke":
        assert set(doc["gcp_role"]) == {"title", "description", "stage", "includedPermissions"}
        assert doc["gcp_role"]["includedPermissions"] == doc["gcp_permissions"]

    text = run(f"--{provider}", "--for", purpose)
    assert text.exit_code == 0, text.output
    docs = list(yaml.safe_load_all(text.stdout))
    assert docs[-1] == role
    if provider == "eks":
        assert docs[0] == doc["iam_policy"]
        assert json.loads(text.stdout.split("\n---\n")[0].split("\n", 1)[1]) == doc["iam_policy"]
    if provider == "gke":
        assert docs[0] == doc["gcp_role"]
    assert len(docs) == (1 if provider == "k8s" else 2)


def test_diagnose_is_read_only() -> None:
    eks = printed("eks", "diagnose")
    actions = iam_actions(eks["iam_policy"])
    assert all(a.split(":")[1].startswith(("Describe", "List", "Get", "Search")) for a in actions), actions
    assert {"ec2:DescribeSubnets", "eks:DescribeCluster", "eks:ListNodegroups"} <= actions
    gke = printed("gke", "diagnose")
    assert not any(p.endswith((".update", ".create", ".delete", ".actAs")) for p in gke["gcp_permissions"])
    for doc in (eks, gke, printed("k8s", "diagnose")):
        verbs = {v for r in doc["cluster_role"]["rules"] for v in r["verbs"]}
        assert verbs <= {"get", "list"}, verbs
        assert doc["steps"] == []


def test_apply_adds_the_writes() -> None:
    eks = iam_actions(printed("eks", "apply")["iam_policy"])
    assert {
        "ec2:AssociateVpcCidrBlock",
        "ec2:CreateSubnet",
        "ec2:CreateTags",
        "ec2:AssociateRouteTable",
        "ec2:CreateSubnetCidrReservation",
        "eks:CreateNodegroup",
        "eks:UpdateAddon",
        "iam:PassRole",
    } <= eks
    assert eks >= iam_actions(printed("eks", "diagnose")["iam_policy"])
    gke = set(printed("gke", "apply")["gcp_permissions"])
    assert {"compute.subnetworks.update", "container.clusters.update", "compute.regionOperations.get"} <= gke
    rules = printed("eks", "apply")["cluster_role"]["rules"]
    assert allows(rules, "update", "apps", "daemonsets", "aws-node")
    assert not allows(rules, "update", "apps", "daemonsets", "kube-proxy")
    assert allows(rules, "create", "crd.k8s.amazonaws.com", "eniconfigs")


def test_gke_permissions_are_split_by_project_for_shared_vpc() -> None:
    doc = printed("gke", "apply")
    host, service = doc["gcp_projects"]["host_project"], doc["gcp_projects"]["service_project"]
    # The subnet patch and every network read happen in the host project; the cluster's in the service one.
    assert {"compute.subnetworks.update", "compute.regionOperations.get", "compute.routes.list"} <= set(host)
    assert {"container.clusters.update", "container.operations.get", "iam.serviceAccounts.actAs"} <= set(service)
    # Of compute, only what holds the host subnet's addresses is read in the service project too (its nodes, ILBs).
    assert {p for p in service if p.startswith("compute.")} == set(SUBNET_ADDRESS_READS) <= set(host)
    assert "compute.subnetworks.expandIpCidrRange" in host
    assert "container.clusters.list" in host and "container.clusters.list" in service  # routes-based clusters
    assert set(host) | set(service) == set(doc["gcp_permissions"])
    text = run("--gke", "--for", "apply").stdout
    assert "grant these in the HOST project" in text and "in the SERVICE project" in text
    assert "  compute.subnetworks.update" in text.split("in the SERVICE project")[0]


def test_without_provider_is_usage_error() -> None:
    result = run()
    flags = [p.flag for p in registry.providers()]
    assert result.exit_code == 2 and f"{', '.join(flags[:-1])} or {flags[-1]}" in result.output


def test_steps_table_holds_the_plan_kinds_that_run_on_the_provider() -> None:
    kinds = {p: {s["strategy"] for s in printed(p, "apply")["steps"]} for p in ("eks", "gke", "k8s")}
    ipam = set(registry.ipam_strategies())  # the in-cluster IPAMs' plans run on every provider's clusters
    assert kinds == {
        "eks": {
            "custom-networking",
            "prefix-delegation",
            "subnet-discovery",
            "control-plane-subnets",
            "karpenter-subnets",
            "eks-migrate",
            *ipam,
        },
        "gke": {"node-pool", "cluster-range", "subnet-expand", *ipam},
        "k8s": ipam,
    }
    rows = printed("eks", "apply")["steps"]
    nodegroup = next(r for r in rows if r["action"] == "eks.create-nodegroup")
    assert nodegroup == {"strategy": "custom-networking", "action": "eks.create-nodegroup", "permissions": list(NG)}


NG = ("eks:CreateNodegroup", "eks:ListNodegroups", "eks:DescribeNodegroup", "iam:PassRole")


@pytest.mark.parametrize(("provider", "purpose"), [("eks", "all"), ("gke", "apply"), ("k8s", "all")])
def test_an_installed_copy_without_examples_prints_the_same(provider: str, purpose: str, tmp_path: Path) -> None:
    """Installed anywhere but a source checkout (no examples/ beside the package), the command works and
    prints what the checkout prints: nothing it needs is read from files outside the package."""
    site = tmp_path / "site"
    shutil.copytree(PACKAGE, site / "cidrx", ignore=shutil.ignore_patterns("__pycache__"))
    assert not (site / "examples").exists()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CIDRX_")} | {"PYTHONPATH": str(site)}
    code = "import sys, cidrx; print(cidrx.__file__, file=sys.stderr); from cidrx.cli import main; main()"
    proc = subprocess.run(
        [sys.executable, "-c", code, "permissions", f"--{provider}", "--for", purpose, "-o", "json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines()[0] == str(site / "cidrx" / "__init__.py")  # the copy ran, not the checkout
    doc = json.loads(proc.stdout)
    assert doc == printed(provider, purpose)
    assert doc["steps"], "the write side is there"


# -- docs/permissions.md -----------------------------------------------------------------------------------

PAGE = PACKAGE.parent / "docs" / "permissions.md"


def _blocks(page: str) -> dict[str, str]:
    from tools.docgen import GENERATED_BLOCK

    return {m["name"]: m["body"] for m in GENERATED_BLOCK.finditer(page)}


def _fenced(block: str) -> str:
    lines = block.strip().splitlines()
    assert lines[0].startswith("```") and lines[-1] == "```", block
    return "\n".join(lines[1:-1])


def test_permissions_page_shows_what_the_command_prints() -> None:
    from tools import docgen

    page = PAGE.read_text()
    assert page == docgen.render_permissions_md(page), "docs/permissions.md is out of date: run python -m tools.docgen"
    blocks = _blocks(page)
    assert json.loads(_fenced(blocks["eks-iam-policy"])) == printed("eks")["iam_policy"]
    assert yaml.safe_load(_fenced(blocks["gke-role"])) == printed("gke")["gcp_role"]
    assert yaml.safe_load(_fenced(blocks["eks-cluster-role"])) == printed("eks")["cluster_role"]
    assert yaml.safe_load(_fenced(blocks["k8s-cluster-role"])) == printed("k8s")["cluster_role"]
    for p in printed("gke", "diagnose")["gcp_permissions"]:
        assert f"`{p}`" in blocks["gke-diagnose"]
    rows = {tuple(c.strip(" `") for c in line.strip("|").split("|")[:2]) for line in blocks["steps"].splitlines()[2:]}
    steps = [s for p in registry.provider_names() for s in printed(p)["steps"]]
    assert rows == {(s["strategy"], s["action"]) for s in steps}
    assert "Where the lists come from" in page and "What fails, and how" in page  # the prose stays


def test_regenerating_the_page_rewrites_only_the_blocks() -> None:
    from tools import docgen

    page = PAGE.read_text()
    body = _blocks(page)["gke-role"]
    stale = page.replace(body, "```yaml\nincludedPermissions: [compute.everything]\n```\n").replace(
        "## Where the lists come from", "## Where the lists come from (edited by hand)"
    )
    assert stale != page
    fresh = docgen.render_permissions_md(stale)
    assert _blocks(fresh) == _blocks(page)
    assert "(edited by hand)" in fresh
    with pytest.raises(docgen.DocgenError, match="steps"):
        docgen.render_permissions_md(page.replace("<!-- generated: steps (python -m tools.docgen) -->", ""))


# -- coverage: every step of every plan kind -------------------------------------------------------------


def _expanded(snapshot: Snapshot) -> Snapshot:
    """`snapshot` after an expansion was applied: a pod subnet with room carrying a plan's tag."""
    from dataclasses import replace

    from cidrx.model.plan import DIGEST_TAG
    from cidrx.providers.eks.model import Subnet

    eks = snapshot.eks
    new = Subnet(
        "subnet-0feedfacecafe0001", eks.vpc.vpc_id, "100.64.0.0/21", "ap-southeast-2a", "apse2-az1", 2043, None
    )
    tagged = replace(new, tags={DIGEST_TAG: "0123456789abcdef"})
    return replace(snapshot, eks=replace(eks, subnets=(*eks.subnets, tagged)))


def _plans() -> list[Plan]:
    """Every plan kind, made by the real planners from the tests' own estates (not the examples the
    command reads), so a step the command's variants miss fails here."""
    from cidrx.app import plan as app_plan
    from cidrx.model.options import PlanOptions

    eks = [
        eks_cases.example(),
        eks_cases.roomy(),
        eks_cases.managed_addon(),
        eks_cases.managed_addon(eks_cases.roomy()),
        eks_cases.ipam_pool(),  # the secondary CIDR from the VPC's IPAM pool
    ]
    plans = [app_plan.make_plan(s, PlanOptions(strategy="custom-networking")) for s in eks]
    plans += [app_plan.make_plan(s, PlanOptions(strategy="prefix-delegation")) for s in eks[1::2]]
    discovery = [eks_cases.subnet_discovery_off(), eks_cases.subnet_discovery_off(managed=True)]
    plans += [app_plan.make_plan(s, PlanOptions(strategy="subnet-discovery", cidr="100.65.0.0/20")) for s in discovery]
    pooled = eks_cases.ipam_pool(eks_cases.subnet_discovery(enis=1, free=3, tagged=False))
    plans.append(app_plan.make_plan(pooled, PlanOptions(strategy="subnet-discovery", add_nodes=2000)))
    plans.append(app_plan.make_plan(eks_cases.discovery_example(), PlanOptions(strategy="control-plane-subnets")))
    for migrating in (eks_cases.example(), eks_provisioner_cases.self_managed(version="4")):
        plans.append(app_plan.make_plan(_expanded(migrating), PlanOptions(strategy="eks-migrate")))
    gke = gke_cases.with_ip_masq(gke_cases.with_firewalls(gke_cases.incident()))
    plans += [app_plan.make_plan(gke, PlanOptions(strategy=s)) for s in ("node-pool", "cluster-range")]
    aks = [aks_cases.node_subnet(), aks_cases.pod_subnet(), aks_cases.full_vnet()]
    aks.append(aks_cases.full_vnet(aks_cases.pod_subnet(), "10.30.0.0/23"))
    plans += [app_plan.make_plan(s, PlanOptions()) for s in aks]
    plans.append(app_plan.make_plan(aks_cases.pod_subnet_expanded(), PlanOptions(strategy="aks-migrate")))
    plans.append(app_plan.make_plan(gke_cases.node_subnet_full(), PlanOptions(strategy="subnet-expand")))
    # Clusters without managed node groups: their follow-up steps (Karpenter, Auto Mode).
    pinned = eks_provisioner_cases.self_managed(version="4")
    others = [eks_provisioner_cases.karpenter(), eks_provisioner_cases.auto_mode(), pinned]
    plans += [app_plan.make_plan(s, PlanOptions(strategy="custom-networking")) for s in others]
    for roomy in (
        eks_provisioner_cases.karpenter(eks_cases.roomy()),
        eks_provisioner_cases.self_managed(eks_cases.roomy(), version="4"),
    ):
        plans.append(app_plan.make_plan(roomy, PlanOptions(strategy="prefix-delegation")))
    karpenter = load_snapshot(EXAMPLES / "eks-karpenter.snapshot.json")
    plans.append(app_plan.make_plan(karpenter, PlanOptions(strategy="karpenter-subnets")))
    calico = load_snapshot(EXAMPLES / "calico-borrowing.snapshot.json")
    plans.append(app_plan.make_reclaim_plan(load_snapshot(EXAMPLES / "whereabouts-stale.snapshot.json"), "whereabouts"))
    plans.append(app_plan.make_reclaim_plan(calico, "calico"))
    plans.append(app_plan.make_plan(calico, PlanOptions(strategy="calico-pool")))
    for cilium in ("cilium-cluster-pool", "cilium-multi-pool"):
        snap = load_snapshot(EXAMPLES / f"{cilium}.snapshot.json")
        plans.append(app_plan.make_plan(snap, PlanOptions(strategy="cilium-pool")))
    return plans


def test_every_step_of_every_plan_kind_is_in_the_printed_lists() -> None:
    from cidrx.app.permissions import parse_kube

    plans = _plans()
    assert {p.strategy for p in plans} == PLAN_KINDS
    actions = {s.action for p in plans for s in p.steps}
    assert {"eks.update-addon-env", "kube.set-daemonset-env", "eks.reserve-subnet-cidr"} <= actions
    docs = {p: printed(p) for p in registry.provider_names()}
    clouds = {p.name for p in registry.providers() if not p.in_cluster}
    checked = 0
    for plan in plans:
        owner = registry.strategy(plan.strategy)
        assert owner is not None
        # A cloud's plans run on its targets; in-cluster plans run on any target.
        providers = [plan.target.provider] if owner.owner in clouds else list(registry.provider_names())
        for step in plan.steps:
            assert step.permissions, f"{plan.strategy} step {step.id} declares no permissions"
            for perm in step.permissions:
                for provider in providers:
                    doc = docs[provider]
                    if perm.startswith("kubernetes:"):
                        g = parse_kube(perm)
                        for verb in g.verbs:
                            assert allows(doc["cluster_role"]["rules"], verb, g.group, g.resource, _name(g.resource)), (
                                f"{provider}: {perm} of {plan.strategy}/{step.id} not in the ClusterRole"
                            )
                    elif provider == "eks":
                        assert perm in iam_actions(doc["iam_policy"]), f"{perm} of {plan.strategy}/{step.id}"
                    elif "azure_role" in doc:
                        assert perm in doc["azure_role"]["Actions"], f"{perm} of {plan.strategy}/{step.id}"
                    else:
                        assert perm in doc["gcp_permissions"], f"{perm} of {plan.strategy}/{step.id}"
                    checked += 1
    assert checked > 40


def _unscoped(permission: str) -> object:
    """A permission as a policy grants it: Kubernetes ones without the namespace a step names."""
    from cidrx.app.permissions import parse_kube

    if not permission.startswith("kubernetes:"):
        return permission
    g = parse_kube(permission)
    return (g.group, g.resource, g.verbs)


def test_steps_carry_what_their_plan_module_declares_for_their_action() -> None:
    """`cidrx permissions` prints the declarations (the `Action`s of cidrx/*/plan.py) without making plans:
    the steps real plans carry must be exactly those, and each plan kind's actions those it lists."""
    from cidrx import registry
    from cidrx.app.permissions import step_permissions

    STRATEGY_ACTIONS = {s.name: tuple(a.name for a in registry.strategy_actions(s)) for s in registry.strategies()}
    declared = step_permissions()
    actions: dict[str, set[str]] = {}
    for plan in _plans():
        for step in plan.steps:
            actions.setdefault(plan.strategy, set()).add(step.action)
            assert step.action in declared, f"{step.action} of {plan.strategy} is not a declared Action"
            assert [_unscoped(p) for p in step.permissions] == [_unscoped(p) for p in declared[step.action]], step.id
    assert actions == {k: set(v) for k, v in STRATEGY_ACTIONS.items()}


def test_every_action_an_executor_runs_is_declared() -> None:
    """Each package's EXECUTORS derive from its ACTIONS, so they cannot drift apart; what can: a strategy
    naming an Action its package does not declare (or one no strategy uses), and an executor path that
    names nothing or no executor."""
    from cidrx import registry
    from cidrx.providers.aks import STRATEGIES as AKS_DECLARED
    from cidrx.providers.eks import STRATEGIES as EKS_DECLARED
    from cidrx.providers.gke import STRATEGIES as GKE_DECLARED

    GKE = [s.name for s in GKE_DECLARED]
    declared = registry.actions()
    assert len({a.name for a in declared}) == len(declared)
    used = {a for s in registry.strategies() for a in registry.strategy_actions(s)}
    assert used == set(declared)
    for action, executor in registry.executors(declared).items():
        assert all(callable(getattr(executor, phase, None)) for phase in ("check", "act", "wait", "verify")), action
    EKS = [s.name for s in EKS_DECLARED]
    AKS = [s.name for s in AKS_DECLARED]
    assert {s.name for s in registry.strategies()} == {*EKS, *GKE, *AKS, *registry.ipam_strategies()} == PLAN_KINDS


def _name(resource: str) -> str | None:
    """The object a step names for the resources ClusterRoles restrict by name."""
    return {"daemonsets": "aws-node", "configmaps": "kubeadm-config", "deployments": "karpenter"}.get(resource)


# -- coverage: every Kubernetes call the collector makes -------------------------------------------------


@pytest.mark.parametrize("provider", [*(p.name for p in registry.providers()), "k8s"])
def test_cluster_role_allows_every_call_of_a_collect_run(
    provider: str, kube_server: FakeKubeServer, kubeconfig_path: Path
) -> None:
    seed_eks_cluster(kube_server)
    kube_server.reset_log()
    with KubeApi.connect(str(kubeconfig_path), None) as api:
        section = collect_with(api, provider=provider)
    assert section.available
    rules = printed(provider, "diagnose")["cluster_role"]["rules"]
    seen = set()
    for rec in kube_server.request_log:
        rbac = request_to_rbac(kube_server, rec.method, rec.path)
        if rbac is None:
            assert allows_path(rules, "get", rec.path), rec.path
            seen.add(("get", rec.path))
            continue
        verb, group, resource, name = rbac
        assert allows(rules, verb, group, resource, name), f"{rec.method} {rec.path} ({verb} {resource}.{group})"
        seen.add((verb, resource))
    # the fake serves every CRD group, so each IPAM's lists were made
    assert {("list", "ipamblocks"), ("list", "overlappingrangeipreservations"), ("list", "pods")} <= seen
    if provider == "k8s":
        assert ("get", "configmaps") in seen or ("list", "pods") in seen
    # and nothing the collector never does is granted for diagnose
    granted = {(g.resource, v) for g in collect_kube_grants(provider) for v in g.verbs}
    assert {(r, v) for v, r in seen if not r.startswith("/")} <= granted


def _declared_groups(declared: Any) -> set[str]:
    """The API groups a plugin's declarations name: its Kubernetes reads and, for a provider, the
    Kubernetes permissions of the steps (and undos) of the plan kinds it owns."""
    from cidrx.app.permissions import parse_kube

    texts = list(declared.kube_reads)
    for s in registry.strategies():
        if s.owner == declared.name:
            for a in registry.strategy_actions(s):
                texts += [t for t in (*a.permissions, *a.undo_permissions) if t.startswith("kubernetes:")]
    return {parse_kube(t).group for t in texts}


@pytest.mark.parametrize("purpose", ["diagnose", "all"])
def test_no_provider_role_holds_another_providers_groups(purpose: str) -> None:
    """The IPAMs' rules are in every provider's role (the collector reads every IPAM on every target); what
    only another provider declares (GKE EgressNATPolicies, AKS ClusterSubnetStates, EKS ENIConfigs) is not."""
    providers = registry.providers()
    for p in providers:
        shared = set().union(
            *(_declared_groups(i) for i in registry.ipams() if not i.providers or p.name in i.providers)
        )
        groups = {g for r in printed(p.name, purpose)["cluster_role"]["rules"] for g in r.get("apiGroups", [])}
        mine = _declared_groups(p) | shared
        for q in providers:
            foreign = _declared_groups(q) - mine
            assert not groups & foreign, (p.name, q.name, sorted(groups & foreign))
        assert shared <= groups | {""}, (p.name, sorted(shared - groups))


# -- moto IAM enforcement --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def two_motos(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """(enforcing moto in this process, non-enforcing moto in a child process for EKS)."""
    # Port 0: the child binds a free port itself and says which (werkzeug's " * Running on URL", once it listens),
    # so no other process (another pytest-xdist worker's server) can take the port in between.
    log = tmp_path_factory.mktemp("moto-eks") / "stderr"
    with log.open("wb") as err:
        child = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", "0"], stdout=subprocess.DEVNULL, stderr=err
        )
    try:
        deadline = time.monotonic() + 30
        while not (running := re.search(r"Running on (http://127\.0\.0\.1:\d+)", log.read_text())):
            if time.monotonic() > deadline or child.poll() is not None:
                raise RuntimeError(f"moto's server did not start: {log.read_text()}")
            time.sleep(0.05)  # waiting for a child process to listen, not for a cloud state
        eks_url = running.group(1)
        with moto_server() as url:
            yield url, eks_url
    finally:
        child.terminate()
        child.wait(timeout=10)


@pytest.fixture
def enforced_world(two_motos: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The incident (EC2 in the enforcing moto, its EKS cluster in the other), and a function that makes
    an IAM user with a given policy and turns enforcement on; yields that function."""
    import boto3
    import requests

    url, eks_url = two_motos
    fake_aws_env(monkeypatch, AWS_ENDPOINT_URL=url, AWS_ENDPOINT_URL_EKS=eks_url)
    for name in list(os.environ):
        if name.startswith("CIDRX_") or name == "KUBECONFIG":
            monkeypatch.delenv(name)
    for u in (url, eks_url):
        requests.post(f"{u}/moto-api/reset", timeout=10).raise_for_status()
    admin = boto3.Session(region_name=REGION)
    eks_admin = boto3.Session(region_name=REGION).client("eks", endpoint_url=eks_url)
    build_incident(admin.client("ec2"), eks_admin, region=REGION, cluster="demo")
    iam = admin.client("iam")

    def user_with(name: str, policy: dict[str, Any]) -> None:
        iam.create_user(UserName=name)
        iam.put_user_policy(UserName=name, PolicyName="cidrx", PolicyDocument=json.dumps(policy))
        key = iam.create_access_key(UserName=name)["AccessKey"]
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", key["AccessKeyId"])
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", key["SecretAccessKey"])
        requests.post(f"{url}/moto-api/reset-auth", data=b"0", timeout=10).raise_for_status()

    try:
        yield user_with
    finally:
        requests.post(f"{url}/moto-api/reset-auth", data=b"inf", timeout=10).raise_for_status()


def diagnose() -> Result:
    args = ["diagnose", "--eks", "--region", REGION, "--cluster", "demo", "--no-kube", "-o", "json"]
    return CliRunner().invoke(cli, [*args, "--fail-on", "never"])


def test_diagnose_succeeds_under_the_printed_read_only_policy(enforced_world: Any) -> None:
    policy = printed("eks", "diagnose")["iam_policy"]
    enforced_world("ci-diagnose", policy)
    result = diagnose()
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert any(f["id"].startswith("EKS-") for f in doc["findings"])


def test_enforcement_is_on(enforced_world: Any) -> None:
    """The check above means something: with no EC2 permission at all, the first EC2 read is refused."""
    enforced_world(
        "ci-nothing", {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "eks:*", "Resource": "*"}]}
    )
    result = diagnose()
    assert result.exit_code == 6, result.output
    assert "permission denied for ec2:" in result.output


@pytest.mark.parametrize("missing", ["ec2:DescribeRouteTables", "ec2:DescribeSubnets", "ec2:DescribeNetworkInterfaces"])
def test_diagnose_under_a_narrower_policy_fails_cleanly_naming_the_permission(
    enforced_world: Any, missing: str
) -> None:
    policy = printed("eks", "diagnose")["iam_policy"]
    for st in policy["Statement"]:
        st["Action"] = [a for a in st["Action"] if a != missing]
    enforced_world("ci-narrow", policy)
    result = diagnose()
    assert result.exit_code == 6, result.output
    assert f"permission denied for {missing}" in result.output
    assert f"grant IAM permission {missing}" in result.output
    assert "Traceback" not in result.output


def test_every_role_has_its_own_name_per_provider_and_purpose() -> None:
    """Roles of different providers or purposes never share a name (applying one would overwrite another)."""
    from cidrx import registry
    from cidrx.app.permissions import PURPOSES, document, gcp_role_id, needs

    names = {}
    for p in registry.providers():
        for purpose in PURPOSES:
            n = needs(p.name, purpose)
            names[(p.name, purpose)] = document(n)["cluster_role"]["metadata"]["name"]
            assert names[(p.name, purpose)] == f"cidrx-{p.name}-{purpose}"
            assert re.fullmatch(r"[a-zA-Z0-9_.]{3,64}", gcp_role_id(n))  # gcloud's role id rule
    assert len(set(names.values())) == len(names)


def test_permissions_output_is_table_or_json_and_text_still_works() -> None:
    from click.testing import CliRunner

    from cidrx.cli import cli

    table = CliRunner().invoke(cli, ["permissions", "--gke", "--for", "apply"])
    text = CliRunner().invoke(cli, ["permissions", "--gke", "--for", "apply", "-o", "text"])
    assert table.exit_code == text.exit_code == 0 and table.stdout == text.stdout
    assert "gcloud iam roles create cidrx_gke_apply " in table.stdout
    assert "name: cidrx-gke-apply" in table.stdout
    helped = CliRunner().invoke(cli, ["permissions", "--help"]).stdout
    assert "[table|json]" in helped and "text|" not in helped


def test_a_subresource_grant_reads_as_its_own_rbac_resource() -> None:
    """A migration evicts pods through their eviction subresource: `kubernetes: pods/eviction create` is RBAC's
    resource `pods/eviction` in the core group, allowed apart from `pods`."""
    from cidrx.app.permissions import allows, parse_kube, rbac_rules

    grant = parse_kube("kubernetes: pods/eviction create")
    assert (grant.group, grant.resource, grant.verbs) == ("", "pods/eviction", ("create",))
    assert grant.notation() == "kubernetes: pods/eviction create"
    scaled = parse_kube("kubernetes: deployments/scale.apps get,update")
    assert (scaled.group, scaled.resource) == ("apps", "deployments/scale")
    rules = rbac_rules([grant, parse_kube("kubernetes: poddisruptionbudgets.policy list")])
    assert allows(rules, "create", "", "pods/eviction") and not allows(rules, "delete", "", "pods")
    assert allows(rules, "list", "policy", "poddisruptionbudgets")
