"""deploy/kubernetes and deploy/Dockerfile: every manifest validates offline against the Kubernetes OpenAPI
schemas of each supported Kubernetes version (kubernetes-validate, strict: unknown fields are errors), the
ServiceMonitor against a compact schema of the Prometheus Operator CRD, and the pieces agree with each other
and with cidrx (the ClusterRole is what `cidrx permissions` prints, the arguments are ones cidrx accepts).
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from click.testing import CliRunner

from cidrx.app.exporter import parse_interval, parse_listen
from cidrx.cli import cli

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "kubernetes"
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
# Kubernetes minor versions the manifests must be valid for (kubernetes-validate ships each one's schemas).
VERSIONS = ("1.29", "1.30", "1.31", "1.32", "1.33")
MANIFESTS = sorted(p.name for p in K8S.glob("*.yaml") if p.name != "kustomization.yaml")

# The fields of a ServiceMonitor these manifests use, with their types and constraints as declared by the
# Prometheus Operator's CRD: prometheus-operator/prometheus-operator,
# example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml (operator 0.84.1, commit
# 01b1a0ea3113af46d69ae3d2ee717bd10b2de1d1): spec requires endpoints and selector; an endpoint's port is a
# Service port name, scheme is http or https, interval and scrapeTimeout are Prometheus durations.
DURATION = r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$"
SERVICE_MONITOR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "monitoring.coreos.com/v1"},
        "kind": {"const": "ServiceMonitor"},
        "metadata": {
            "type": "object",
            "required": ["name", "namespace"],
            "properties": {"name": {"type": "string"}, "namespace": {"type": "string"}, "labels": {"type": "object"}},
        },
        "spec": {
            "type": "object",
            "required": ["endpoints", "selector"],
            "additionalProperties": False,
            "properties": {
                "jobLabel": {"type": "string"},
                "namespaceSelector": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "any": {"type": "boolean"},
                        "matchNames": {"type": "array", "items": {"type": "string"}},
                    },
                },
                "selector": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}},
                        "matchExpressions": {"type": "array"},
                    },
                },
                "endpoints": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "port": {"type": "string"},
                            "path": {"type": "string"},
                            "scheme": {"enum": ["http", "https"]},
                            "interval": {"type": "string", "pattern": DURATION},
                            "scrapeTimeout": {"type": "string", "pattern": DURATION},
                            "honorLabels": {"type": "boolean"},
                        },
                    },
                },
            },
        },
    },
}


def load(name: str) -> dict[str, Any]:
    doc = yaml.safe_load((K8S / name).read_text())
    assert isinstance(doc, dict), name
    return doc


def by_kind() -> dict[str, dict[str, Any]]:
    docs = [load(n) for n in MANIFESTS]
    kinds = {d["kind"]: d for d in docs}
    assert len(kinds) == len(docs), "one object per kind"
    return kinds


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("name", [n for n in MANIFESTS if n != "servicemonitor.yaml"])
def test_manifest_is_valid_for_each_kubernetes_version(name: str, version: str) -> None:
    import kubernetes_validate

    try:
        checked = kubernetes_validate.validate(load(name), version, strict=True)
    except kubernetes_validate.ValidationError as exc:
        pytest.fail(f"{name} is not valid for Kubernetes {version}: {exc}")
    assert checked == version  # the schemas of that very version were used, not an older fallback


def test_a_wrong_manifest_is_rejected() -> None:
    """The validator can fail: a misspelt field and a wrong type are errors."""
    import kubernetes_validate

    bad = load("deployment.yaml")
    bad["spec"]["replica"] = 1
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, VERSIONS[-1], strict=True)
    bad = load("service.yaml")
    bad["spec"]["ports"][0]["port"] = "nine"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, VERSIONS[0], strict=True)


def test_service_monitor_shape() -> None:
    jsonschema.validate(load("servicemonitor.yaml"), SERVICE_MONITOR_SCHEMA)
    wrong = load("servicemonitor.yaml")
    wrong["spec"]["endpoints"][0]["interval"] = "one minute"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(wrong, SERVICE_MONITOR_SCHEMA)


def test_cluster_role_is_what_cidrx_permissions_prints() -> None:
    printed = CliRunner().invoke(cli, ["permissions", "--k8s", "--for", "diagnose", "-o", "json"])
    assert printed.exit_code == 0, printed.output
    assert load("clusterrole.yaml") == json.loads(printed.stdout)["cluster_role"]
    # Read-only: the exporter never writes.
    verbs = {v for rule in load("clusterrole.yaml")["rules"] for v in rule["verbs"]}
    assert verbs <= {"get", "list", "watch"}


def test_the_pieces_fit_together() -> None:
    k = by_kind()
    sa, role, binding = k["ServiceAccount"], k["ClusterRole"], k["ClusterRoleBinding"]
    deploy, svc, mon, cron = k["Deployment"], k["Service"], k["ServiceMonitor"], k["CronJob"]
    ns = k["Namespace"]["metadata"]["name"]
    assert {d["metadata"]["namespace"] for d in (sa, deploy, svc, mon, cron)} == {ns}
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": sa["metadata"]["name"], "namespace": ns}]
    pod = deploy["spec"]["template"]
    assert pod["spec"]["serviceAccountName"] == sa["metadata"]["name"]
    assert cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["serviceAccountName"] == sa["metadata"]["name"]
    labels = pod["metadata"]["labels"]
    assert deploy["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert svc["spec"]["selector"].items() <= labels.items()
    assert mon["spec"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items()
    container = pod["spec"]["containers"][0]
    port = container["ports"][0]
    assert svc["spec"]["ports"][0]["targetPort"] == port["name"] == mon["spec"]["endpoints"][0]["port"]
    args = container["args"]
    host, listen_port = parse_listen(args[args.index("--listen") + 1])
    assert (host, listen_port) == ("0.0.0.0", port["containerPort"])
    interval = parse_interval(args[args.index("--interval") + 1])
    scrape = int(mon["spec"]["endpoints"][0]["interval"].rstrip("s"))
    assert scrape <= interval, "scraping less often than collecting would hide collections"
    probe = container["livenessProbe"]["httpGet"]
    assert (probe["path"], probe["port"]) == ("/healthz", port["name"])
    kustomized = yaml.safe_load((K8S / "kustomization.yaml").read_text())["resources"]
    assert set(kustomized) == set(MANIFESTS) - {"cronjob-textfile.yaml"}


def test_the_commands_are_ones_cidrx_accepts() -> None:
    """The Deployment's and CronJob's cidrx arguments parse (checked with --help: the options are known)."""
    k = by_kind()
    exporter_args = k["Deployment"]["spec"]["template"]["spec"]["containers"][0]["args"]
    script = k["CronJob"]["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["command"][-1]
    diagnose_args = shlex.split(script.split(">")[0])[1:]
    assert "-o" in diagnose_args and diagnose_args[diagnose_args.index("-o") + 1] == "prometheus"
    for args in (exporter_args, diagnose_args):
        result = CliRunner().invoke(cli, [*args, "--help"])
        assert result.exit_code == 0, result.output
        bad = CliRunner().invoke(cli, [*args, "--no-such-option", "--help"])
        assert bad.exit_code == 2  # --help does not hide an unknown option


def test_dockerfile_installs_cidrx_from_the_repository_as_a_non_root_user() -> None:
    text = DOCKERFILE.read_text()
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    froms = [line for line in lines if line.startswith("FROM ")]
    assert froms and all(re.match(r"FROM python:3\.1[1-9]", line) for line in froms)
    for line in lines:
        if line.startswith("COPY ") and "--from=" not in line:
            sources = line.split()[1:-1]
            assert all((ROOT / s).exists() for s in sources), line
    users = [line.split()[1] for line in lines if line.startswith("USER ")]
    assert users and users[-1].isdigit() and int(users[-1]) != 0
    runs_as = by_kind()["Deployment"]["spec"]["template"]["spec"]["securityContext"]["runAsUser"]
    assert int(users[-1]) == runs_as
    assert 'ENTRYPOINT ["cidrx"]' in lines
