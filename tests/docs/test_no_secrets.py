"""No secrets out (issue 5 part 6): snapshots, plans, journals, Terraform files, stdout, stderr and logs
never carry credentials, tokens or kubeconfig contents, even at -vv and on error paths.

Each run's environment holds sentinel secrets: AWS keys and a session token, a Google credentials file
(authorized_user, with a client secret and a refresh token), and a kubeconfig whose user has a bearer
token and client key data, or whose user gets its token from an exec credential plugin (a script that
prints an ExecCredential, as `aws eks get-token` and gke-gcloud-auth-plugin do). Then diagnose (in every
output format) / snapshot / expand --plan (also as Terraform) / --apply (or reclaim for the plain
Kubernetes target) run against moto's server (EKS), the loopback GCP fake (GKE) and the fake Kubernetes
API server, and every byte they produced is searched for the sentinels (and their base64 forms). Logs
are captured at DEBUG in process (the SDKs' own debug output included) and from real `python -m cidrx
-vv` processes, whose logging goes to stderr exactly as a CI job's does.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from cidrx.cli import cli
from tests.support.cases import whereabouts as wc
from tests.support.estates import gke as gke_world
from tests.support.estates.kube_objects import seed_cluster
from tests.support.fakes.gcp_server import FakeGcp
from tests.support.fakes.kube_server import FakeKubeServer

REPO = Path(__file__).resolve().parents[2]

AWS_SECRET = "sentinel-aws-secret-6f1d2c4a9e"
AWS_SESSION = "sentinel-aws-session-token-93be07"
GCP_CLIENT_SECRET = "sentinel-gcp-client-secret-77aa31"
GCP_REFRESH = "sentinel-gcp-refresh-token-1c0d58"
GCP_ACCESS = "sentinel-gcp-access-token-4d2e19"
KUBE_TOKEN = "sentinel-kube-token-5e2f0b"
KUBE_KEY = "-----BEGIN EC PRIVATE KEY-----\nsentinel-kube-client-key-0b9a\n-----END EC PRIVATE KEY-----\n"
KUBE_EXEC_TOKEN = "sentinel-kube-exec-token-a83c52"
SECRETS = (
    AWS_SECRET,
    AWS_SESSION,
    GCP_CLIENT_SECRET,
    GCP_REFRESH,
    GCP_ACCESS,
    KUBE_TOKEN,
    "sentinel-kube-client-key-0b9a",
    KUBE_EXEC_TOKEN,
)
DIAGNOSE_FORMATS = ("json", "markdown", "prometheus")


def needles() -> list[str]:
    out = list(SECRETS)
    out += [base64.b64encode(s.encode()).decode() for s in SECRETS]
    out.append(base64.b64encode(KUBE_KEY.encode()).decode())
    return out


def assert_clean(where: str, text: str) -> None:
    for needle in needles():
        assert needle not in text, f"secret {needle[:24]}... found in {where}"


def scan_files(root: Path) -> int:
    """Every file cidrx may have written under `root` (snapshots, plans, journals); returns how many."""
    count = 0
    for path in root.rglob("*"):
        if path.is_file() and path.name not in ("kubeconfig", "adc.json"):
            assert_clean(str(path), path.read_bytes().decode(errors="replace"))
            count += 1
    return count


def assert_terraform(path: Path, expected: str) -> None:
    """The .tf file `--emit terraform` wrote is there and holds `expected` (scan_files scans it)."""
    assert path.is_file(), f"{path} was not written"
    assert expected in path.read_text()


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Sentinel secrets in the environment; returns the directory for cidrx's own files."""
    for name in list(os.environ):
        if name.startswith("CIDRX_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("CIDRX_RETRY_MAX_ATTEMPTS", "1")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", AWS_SECRET)
    monkeypatch.setenv("AWS_SESSION_TOKEN", AWS_SESSION)
    adc = tmp_path / "adc.json"
    adc.write_text(
        json.dumps(
            {
                "type": "authorized_user",
                "client_id": "cidrx-test.apps.googleusercontent.com",
                "client_secret": GCP_CLIENT_SECRET,
                "refresh_token": GCP_REFRESH,
                # a current access token, so google-auth never refreshes (that would go to Google itself)
                "token": GCP_ACCESS,
                "expiry": "2099-01-01T00:00:00Z",
            }
        )
    )
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(adc))
    monkeypatch.setenv("NO_GCE_CHECK", "True")
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.chdir(out)
    return out


def secret_kubeconfig(server: FakeKubeServer, path: Path) -> str:
    doc = server.kubeconfig_dict()
    doc["users"][0]["user"] = {
        "token": KUBE_TOKEN,
        "client-key-data": base64.b64encode(KUBE_KEY.encode()).decode(),
    }
    path.write_text(yaml.safe_dump(doc))
    return str(path)


PLUGIN = "kube-credential-plugin"
PLUGIN_LOG = "plugin-runs"


def exec_kubeconfig(server: FakeKubeServer, where: Path) -> str:
    """A kubeconfig whose user runs an exec credential plugin (client.authentication.k8s.io/v1beta1) that
    prints an ExecCredential holding KUBE_EXEC_TOKEN, and notes each run in `where`/PLUGIN_LOG."""
    plugin = where / PLUGIN
    credential = {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "kind": "ExecCredential",
        "status": {"token": KUBE_EXEC_TOKEN, "expirationTimestamp": "2099-01-01T00:00:00Z"},
    }
    plugin.write_text(
        f"#!{sys.executable}\n"
        "import json, sys\n"
        f"with open({str(where / PLUGIN_LOG)!r}, 'a') as log:\n"
        "    log.write('ran\\n')\n"
        f"json.dump({credential!r}, sys.stdout)\n"
    )
    plugin.chmod(0o700)
    doc = server.kubeconfig_dict()
    doc["users"][0]["user"] = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": str(plugin),
            "args": ["--cluster", "fake"],
            "interactiveMode": "Never",
        }
    }
    path = where / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def plugin_runs(where: Path) -> int:
    log = where / PLUGIN_LOG
    return len(log.read_text().splitlines()) if log.exists() else 0


class Runs:
    """Every CLI run of a test, for one scan at the end."""

    def __init__(self, caplog: pytest.LogCaptureFixture) -> None:
        caplog.set_level(logging.DEBUG)  # the SDKs' debug logs are where headers would show up
        self.caplog = caplog
        self.results: list[tuple[list[str], Result]] = []

    def __call__(self, *args: str, code: int | None = None) -> Result:
        result = CliRunner().invoke(cli, list(args))
        assert "Traceback" not in result.output, result.output
        if code is not None:
            assert result.exit_code == code, result.output
        self.results.append((list(args), result))
        return result

    def scan(self) -> None:
        for args, result in self.results:
            assert_clean(f"stdout of {args}", result.stdout)
            assert_clean(f"stderr of {args}", result.stderr)
        assert_clean("the logs", self.caplog.text)


def process(*args: str) -> subprocess.CompletedProcess[str]:
    """A real `python -m cidrx` with the current (sentinel-holding) environment: logging reaches stderr."""
    proc = subprocess.run(
        [sys.executable, "-m", "cidrx", *args],
        env=dict(os.environ) | {"PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in proc.stderr or "-v" in args[0], proc.stderr
    assert_clean(f"stdout of cidrx {args}", proc.stdout)
    assert_clean(f"stderr of cidrx {args}", proc.stderr)
    return proc


# --- EKS: moto's server ----------------------------------------------------------------------------------


@pytest.fixture
def moto_server(secret_env: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    import boto3

    from tests.support.estates.eks import build_incident, fake_aws_env, moto_server

    with moto_server() as url:
        fake_aws_env(monkeypatch, AWS_ENDPOINT_URL=url, AWS_SECRET_ACCESS_KEY=AWS_SECRET)
        monkeypatch.setenv("AWS_SESSION_TOKEN", AWS_SESSION)  # fake_aws_env clears it
        session = boto3.Session(region_name="ap-southeast-2")
        world = build_incident(session.client("ec2"), session.client("eks"), cluster="demo-ip")
        yield world


def test_eks_outputs_hold_no_secrets(
    moto_server: Any, secret_env: Path, kube_server: FakeKubeServer, caplog: pytest.LogCaptureFixture
) -> None:
    world = moto_server
    seed_cluster(kube_server, world.node_ips)
    kubeconfig = secret_kubeconfig(kube_server, secret_env.parent / "kubeconfig")
    target = ["--eks", "--region", world.region, "--cluster", world.cluster, "--kubeconfig", kubeconfig]
    run = Runs(caplog)
    for fmt in DIAGNOSE_FORMATS:
        run("-vv", "diagnose", *target, "-o", fmt, code=3)
    run("snapshot", *target, "--out", "snap.json", code=0)
    run("expand", *target, "--plan", "--out", "plan.json", "--emit", "terraform", "-o", "markdown", code=0)
    assert_terraform(secret_env / "plan.tf", 'resource "aws_subnet"')
    hcl = run("expand", *target, "--plan", "--out", "-", "--emit", "terraform", code=0)
    assert 'resource "aws_subnet"' in hcl.stdout
    run("-vv", "expand", "--apply", "plan.json", "--yes", "--kubeconfig", kubeconfig, "--emit", "terraform", code=0)
    assert_terraform(secret_env / "plan.tf", "import {")  # rewritten with what the apply created
    run("-v", "diagnose", "--eks", "--region", world.region, "--cluster", "nope", "--no-kube", code=6)
    run.scan()
    assert scan_files(secret_env) >= 4  # snapshot, plan, journal, Terraform

    for verbosity in ("-v", "-vv"):
        proc = process(verbosity, "diagnose", *target, "-o", "json")
        assert proc.returncode == 3, proc.stderr
        proc = process(verbosity, "diagnose", "--eks", "--region", world.region, "--cluster", "nope", "--no-kube")
        assert proc.returncode == 6, proc.stderr


# --- GKE: the loopback GCP fake --------------------------------------------------------------------------

GKE = ["--gke", "--project", gke_world.PROJECT, "--location", gke_world.LOCATION, "--cluster", gke_world.CLUSTER]


def test_gke_outputs_hold_no_secrets(
    gcp: FakeGcp, secret_env: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The gcp fixture's variables were cleared by secret_env: point cidrx at the fake again, this time with
    # the sentinel credentials file (Application Default Credentials) instead of anonymous credentials.
    for key, value in gke_world.gcp_env(gcp).items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv(gke_world.ANONYMOUS_ENV)
    run = Runs(caplog)
    for fmt in DIAGNOSE_FORMATS:
        run("-vv", "diagnose", *GKE, "--no-kube", "-o", fmt, code=3)
    run("snapshot", *GKE, "--no-kube", "--out", "snap.json", code=0)
    run("expand", *GKE, "--no-kube", "--plan", "--out", "plan.json", "--emit", "terraform", "-o", "markdown", code=0)
    assert_terraform(secret_env / "plan.tf", 'resource "google_container_node_pool"')
    hcl = run("expand", *GKE, "--no-kube", "--plan", "--out", "-", "--emit", "terraform", code=0)
    assert 'resource "google_container_node_pool"' in hcl.stdout
    run("-vv", "expand", "--apply", "plan.json", "--yes", "--no-kube", "--emit", "terraform", code=0)
    assert_terraform(secret_env / "plan.tf", "import {")
    # The error path: the credentials are refused on one call.
    gcp.inject(403, method="GET", path_contains="/subnetworks", times=None)
    failed = run("-vv", "diagnose", *GKE, "--no-kube", code=6)
    assert "permission denied" in failed.stderr
    run.scan()
    assert scan_files(secret_env) >= 4

    for verbosity in ("-v", "-vv"):
        proc = process(verbosity, "diagnose", *GKE, "--no-kube")
        assert proc.returncode == 6, proc.stderr


# --- plain Kubernetes: the fake API server -----------------------------------------------------------------


def test_k8s_outputs_hold_no_secrets(
    kube_server: FakeKubeServer, secret_env: Path, caplog: pytest.LogCaptureFixture
) -> None:
    kube_server.put_many(wc.crashed_node_objects())
    kubeconfig = secret_kubeconfig(kube_server, secret_env.parent / "kubeconfig")
    target = ["--k8s", "--kubeconfig", kubeconfig]
    run = Runs(caplog)
    for fmt in DIAGNOSE_FORMATS:
        run("-vv", "diagnose", *target, "-o", fmt, code=3)
    run("snapshot", *target, "--out", "snap.json", code=0)
    run("reclaim", *target, "--ipam", "whereabouts", "--plan", "--out", "plan.json", "-o", "markdown", code=0)
    run("-vv", "reclaim", "--apply", "plan.json", "--yes", "--kubeconfig", kubeconfig, code=0)
    kube_server.inject(403, method="GET", path_contains="/nodes", times=None)
    run("-vv", "diagnose", *target, code=6)
    run.scan()
    assert scan_files(secret_env) >= 3

    for verbosity in ("-v", "-vv"):
        proc = process(verbosity, "diagnose", *target)
        assert proc.returncode == 6, proc.stderr
    kube_server.clear_faults()
    proc = process("-vv", "diagnose", *target, "-o", "json")
    assert proc.returncode == 0, proc.stderr  # the reclaim above released the stale addresses


def test_exec_credential_plugin_token_stays_out(
    kube_server: FakeKubeServer, secret_env: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The token an exec plugin hands over (in memory only, never in the kubeconfig) stays out of
    everything too, at -vv, through an apply and when the API server rejects it."""
    kube_server.put_many(wc.crashed_node_objects())
    kubeconfig = exec_kubeconfig(kube_server, secret_env.parent)
    target = ["--k8s", "--kubeconfig", kubeconfig]
    run = Runs(caplog)
    for fmt in DIAGNOSE_FORMATS:
        run("-vv", "diagnose", *target, "-o", fmt, code=3)
    assert plugin_runs(secret_env.parent) >= 1  # cidrx got its credentials from the plugin
    run("-vv", "snapshot", *target, "--out", "snap.json", code=0)
    run("-vv", "reclaim", *target, "--ipam", "whereabouts", "--plan", "--out", "plan.json", code=0)
    run("-vv", "reclaim", "--apply", "plan.json", "--yes", "--kubeconfig", kubeconfig, code=0)
    kube_server.inject(401, method="GET", path_contains="/nodes", times=None)
    rejected = run("-vv", "diagnose", *target, code=6)
    assert "rejected the credentials" in rejected.stderr
    run.scan()
    assert scan_files(secret_env) >= 3  # snapshot, plan, journal

    before = plugin_runs(secret_env.parent)
    proc = process("-vv", "diagnose", *target)
    assert proc.returncode == 6, proc.stderr
    kube_server.clear_faults()
    proc = process("-vv", "diagnose", *target, "-o", "prometheus")
    assert proc.returncode == 0, proc.stderr  # the apply released the stale addresses
    assert plugin_runs(secret_env.parent) > before


def test_the_sentinels_would_be_found() -> None:
    """The control: the scanner does see a secret where one is."""
    with pytest.raises(AssertionError):
        assert_clean("a leaky line", f"Authorization: Bearer {KUBE_TOKEN}")
    with pytest.raises(AssertionError):
        assert_clean("a leaky kubeconfig", base64.b64encode(KUBE_KEY.encode()).decode())
