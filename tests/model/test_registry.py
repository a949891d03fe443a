"""A new provider is one package plus one `register()` line.

The package below is written into tmp_path by the test and registered by a one-line start-up script; no
file of cidrx is touched. `cidrx diagnose` and `cidrx permissions` must then work for it exactly as for
the bundled providers: its flag in --help, its target options validated, its findings in the diagnosis,
its cloud reads and the in-cluster plans' RBAC in the permissions document.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cidrx import registry

TOY_PROVIDER = '''
"""A throw-away provider for the registry test: one cloud read, one finding."""
import sys

from cidrx.model.findings import Capacity, Finding, Severity, make_diagnosis
from cidrx.model.snapshot import Snapshot


def collect(target, access, kube, taken_at):
    return Snapshot(target=target, taken_at=taken_at, kube=kube)


def analyze(snapshot):
    pool = Capacity(kind="toy-pool", name="main", cidr="10.9.0.0/24", size=256, used=250, free=6, utilization=0.977)
    full = Finding(
        id="TOY-POOL-FULL",
        severity=Severity.CRITICAL,
        subject=snapshot.target.cluster,
        summary="the toy pool has 6 addresses left",
        remediation="add a toy pool",
    )
    return make_diagnosis(snapshot.target, snapshot.fingerprint, [pool], [full])


def make_plan(snapshot, opts, created_at):
    from cidrx.errors import InvalidInput

    raise InvalidInput("toy clusters have no plans")


def check_drift(plan, snapshot):
    return None


def executors():
    return {}


def apis(plan, access, kube):
    return None


def address_maps(snapshot):
    return ()


def cloud_permissions():
    return ("toy.pools.list", "toy.clusters.get")


PROVIDER = sys.modules[__name__]
'''

REGISTER = """
import sys
from cidrx import registry
registry.register(
    registry.ProviderSpec(
        name="toy",
        title="Toy",
        help="Target a toy cluster.",
        requires=("cluster",),
        refuses=("region", "project", "location"),
        refuse_reason="toy clusters are named by --cluster",
        env_hint="(or CIDRX_CLUSTER)",
        finding_prefix="TOY-",
        context_hint="",
        provider="toyprov.provider:PROVIDER",
    )
)
from cidrx.cli import main
sys.argv[0] = "cidrx"
main()
"""


@pytest.fixture
def toy(tmp_path: Path) -> Path:
    pkg = tmp_path / "toyprov"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "provider.py").write_text(TOY_PROVIDER)
    return tmp_path


def cidrx(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), *sys.path]), "COLUMNS": "200"}
    env = {k: v for k, v in env.items() if not k.startswith("CIDRX_")}
    return subprocess.run(
        [sys.executable, "-c", REGISTER, *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )


def test_a_registered_provider_gets_its_target_flag(toy: Path) -> None:
    r = cidrx(toy, "diagnose", "--help")
    assert r.returncode == 0, r.stderr
    assert "--toy" in r.stdout and "Target a toy cluster." in r.stdout
    r = cidrx(toy, "diagnose", "--toy", "--no-kube")
    assert r.returncode == 2
    assert "--toy needs --cluster (or CIDRX_CLUSTER)" in r.stderr
    r = cidrx(toy, "diagnose", "--toy", "--cluster", "c1", "--region", "x", "--no-kube")
    assert r.returncode == 2
    assert "--region is not used with --toy; toy clusters are named by --cluster" in r.stderr


def test_diagnose_runs_a_registered_provider(toy: Path) -> None:
    r = cidrx(toy, "diagnose", "--toy", "--cluster", "c1", "--no-kube", "-o", "json")
    assert r.returncode == 3, r.stderr  # a critical finding
    doc = json.loads(r.stdout)
    assert doc["target"]["provider"] == "toy" and doc["target"]["cluster"] == "c1"
    assert [f["id"] for f in doc["findings"]] == ["TOY-POOL-FULL"]
    assert [(c["kind"], c["free"]) for c in doc["capacity"]] == [("toy-pool", 6)]


def test_permissions_covers_a_registered_provider(toy: Path) -> None:
    r = cidrx(toy, "permissions", "--toy", "--for", "all", "-o", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["provider"] == "toy"
    assert "iam_policy" not in doc and "gcp_role" not in doc
    # The in-cluster plans run on every provider's clusters, so their steps and RBAC are there too.
    assert {s["strategy"] for s in doc["steps"]} == set(registry.ipam_strategies())
    rules = doc["cluster_role"]["rules"]
    assert any(r.get("resources") == ["ippools"] and "create" in r["verbs"] for r in rules)
    r = cidrx(toy, "permissions", "--toy", "--eks")
    assert r.returncode == 2 and "choose one provider, not --eks and --toy" in r.stderr


def test_read_permissions_of_a_registered_provider_come_from_its_object(toy: Path) -> None:
    before = registry.provider_names()
    sys.path.insert(0, str(toy))
    try:
        registry.register(
            registry.ProviderSpec(
                name="toy",
                title="Toy",
                help="Target a toy cluster.",
                requires=("cluster",),
                refuses=(),
                refuse_reason="",
                env_hint="",
                finding_prefix="TOY-",
                context_hint="",
                provider="toyprov.provider:PROVIDER",
            )
        )
        from cidrx.app.permissions import needs

        n = needs("toy", "diagnose")
        assert n.read == ("toy.clusters.get", "toy.pools.list")
        assert n.write == () and n.steps == ()
    finally:
        registry.unregister("toy")
        sys.path.remove(str(toy))
        sys.modules.pop("toyprov.provider", None)
        sys.modules.pop("toyprov", None)
    assert registry.provider_spec("toy") is None
    assert registry.provider_names() == before
