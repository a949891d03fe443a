"""Issue 16 (part A): cidrx never misleads about what went wrong, and its exit codes say what to do.

Each test here failed on the behaviour the issue reported: an apply that writes before proving it can reach
the cluster, a digest that leaves what reviewers read unsealed, a target named "current-context", plan
JSON written into a .tf file, a TLS failure retried and called "cannot reach", options only before the
subcommand, flags accepted and ignored, an unknown snapshot schema reported as a missing field, fix text
with "..." in it. Live rows use the real clients against moto and the fake Kubernetes API server.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import Result

from cidrx import registry
from tests.support.cli import run
from tests.support.estates.eks import AwsCalls, fake_aws_env, moto_incident
from tests.support.fakes.kube_server import FakeKubeServer, is_lock
from tests.support.ports import refused_port

REPO = Path(__file__).resolve().parents[2]
EKS_EX = str(REPO / "examples" / "eks-demo-ip.snapshot.json")
GKE_EX = str(REPO / "examples" / "gke-demo-ip.snapshot.json")
WB_EX = str(REPO / "examples" / "whereabouts-stale.snapshot.json")
CALICO_EX = str(REPO / "examples" / "calico-borrowing.snapshot.json")
WRITES = ("POST", "PUT", "PATCH", "DELETE")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("CIDRX_") or name == "KUBECONFIG":
            monkeypatch.delenv(name)
    monkeypatch.setenv("CIDRX_RETRY_MAX_ATTEMPTS", "2")


def error_line(result: Result) -> str:
    """The `cidrx: error:` line (there must be one, and no traceback)."""
    assert "Traceback" not in result.output, result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("cidrx: error: ")]
    assert lines, result.stderr
    return lines[-1]


# --- item 1: access to everything a plan needs is proven before its first write ---------------------------


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any, AwsCalls]]:
    import botocore.handlers
    import moto  # noqa: F401  (registers its own handler first; the patch below must not drop it)

    fake_aws_env(monkeypatch)
    calls = AwsCalls()
    monkeypatch.setattr(
        botocore.handlers, "BUILTIN_HANDLERS", [*botocore.handlers.BUILTIN_HANDLERS, ("before-call", calls)]
    )
    with moto_incident(cluster="demo-ip") as (session, world):
        yield session, world, calls


@pytest.fixture
def eks_plan(aws: tuple[Any, Any, AwsCalls], tmp_path: Path) -> tuple[Path, AwsCalls]:
    """A custom-networking plan of the moto incident, and the AWS calls made after it was written."""
    _, world, calls = aws
    path = tmp_path / "plan.json"
    target = ["--eks", "--region", world.region, "--cluster", world.cluster, "--no-kube"]
    made = run("expand", *target, "--plan", "--out", str(path), "--cidr", "100.64.0.0/20")
    assert made.exit_code == 0, made.output
    assert "eniconfig" in path.read_text().lower()  # the plan changes in-cluster objects too
    calls.calls.clear()
    return path, calls


def _closed_port_kubeconfig(tmp_path: Path) -> str:
    with FakeKubeServer() as server:
        config = server.kubeconfig_dict()
    config["clusters"][0]["cluster"]["server"] = f"http://127.0.0.1:{refused_port()}"  # connections are refused
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def test_eks_apply_with_an_unreachable_cluster_is_6_and_writes_nothing(
    eks_plan: tuple[Path, AwsCalls], tmp_path: Path
) -> None:
    plan, calls = eks_plan
    result = run("expand", "--apply", str(plan), "--yes", "--kubeconfig", _closed_port_kubeconfig(tmp_path))
    assert result.exit_code == 6, result.output
    line = error_line(result)
    assert "cannot reach the cluster" in line and "nothing was changed" in line
    assert "to take the lock of plan" in line  # refused before the first cloud call: the lock comes first
    assert calls.writes() == []
    assert not Path(f"{plan}.journal.jsonl").exists()


def test_eks_apply_without_any_kubeconfig_is_6_and_writes_nothing(
    eks_plan: tuple[Path, AwsCalls], tmp_path: Path
) -> None:
    plan, calls = eks_plan
    result = run("expand", "--apply", str(plan), "--yes", env={"HOME": str(tmp_path), "KUBECONFIG": None})
    assert result.exit_code == 6, result.output
    assert "cannot reach the cluster" in error_line(result)
    assert calls.writes() == []


def test_eks_apply_of_a_plan_that_changes_the_cluster_refuses_no_kube_before_writing(
    eks_plan: tuple[Path, AwsCalls], tmp_path: Path
) -> None:
    plan, calls = eks_plan
    result = run("expand", "--apply", str(plan), "--yes", "--no-kube")
    assert result.exit_code == 2, result.output
    assert "drop --no-kube" in error_line(result)
    assert calls.writes() == []


def test_eks_apply_with_an_unreachable_cloud_is_6_and_writes_nothing(
    eks_plan: tuple[Path, AwsCalls], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan, _calls = eks_plan
    with FakeKubeServer() as server:
        kubeconfig = str(server.kubeconfig(tmp_path / "kubeconfig"))
        monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
        result = run("expand", "--apply", str(plan), "--yes", "--kubeconfig", kubeconfig)
        assert [r for r in server.requests() if r.method in WRITES and not is_lock(r)] == []
    assert result.exit_code == 6, result.output
    assert "cannot reach" in error_line(result)


def test_reclaim_apply_against_an_unreachable_cluster_says_cannot_reach_not_stale(tmp_path: Path) -> None:
    from tests.support.cases import whereabouts as wc

    path = tmp_path / "reclaim.json"
    with FakeKubeServer() as server:
        server.put_many(wc.crashed_node_objects())
        kubeconfig = str(server.kubeconfig(tmp_path / "kubeconfig"))
        made = run(
            "reclaim", "--k8s", "--kubeconfig", kubeconfig, "--ipam", "whereabouts", "--plan", "--out", str(path)
        )
        assert made.exit_code == 0, made.output
    result = run("reclaim", "--apply", str(path), "--yes", "--kubeconfig", kubeconfig)
    assert result.exit_code == 6, result.output
    line = error_line(result)
    assert "cannot reach" in line and "stale" not in line


# --- item 2: the digest seals the whole plan document -----------------------------------------------------


def _offline_plan(tmp_path: Path) -> Path:
    path = tmp_path / "plan.json"
    made = run("expand", "--snapshot", EKS_EX, "--plan", "--out", str(path))
    assert made.exit_code == 0, made.output
    return path


@pytest.mark.parametrize(
    "edit",
    [
        lambda doc: doc.update(notes=["all good, nothing to drain"]),
        lambda doc: doc["summary"].update(cidr="10.99.0.0/16"),
        lambda doc: doc.update(created_at="2030-01-01T00:00:00Z"),
        lambda doc: doc.update(snapshot_fingerprint="0" * 64),
    ],
    ids=["notes", "summary", "created_at", "snapshot_fingerprint"],
)
def test_editing_what_reviewers_read_breaks_the_digest(tmp_path: Path, edit: Any) -> None:
    path = _offline_plan(tmp_path)
    doc = json.loads(path.read_text())
    assert doc["summary"], "the example plan has a summary to edit"
    edit(doc)
    path.write_text(json.dumps(doc, indent=2))
    result = run("expand", "--apply", str(path), "--yes", "--no-kube")
    assert result.exit_code == 2, result.output
    assert "was modified after it was made" in error_line(result)


def test_a_plan_sealed_the_old_way_is_refused_with_a_message_to_re_plan(tmp_path: Path) -> None:
    from cidrx.model import codec
    from cidrx.model.plan import Plan

    path = _offline_plan(tmp_path)
    doc = json.loads(path.read_text())
    plan = codec.loads(path.read_bytes(), Plan, what="plan")
    # The digest cidrx 0.1.0 wrote: over the model's target, strategy, basis and steps only.
    old = {"target": plan.target, "strategy": plan.strategy, "basis": plan.basis, "steps": plan.steps}
    doc["digest"] = codec.sha256_of(old)
    path.write_text(json.dumps(doc, indent=2))
    result = run("expand", "--apply", str(path), "--yes", "--no-kube")
    assert result.exit_code == 2, result.output
    line = error_line(result)
    assert "made by an older cidrx" in line and "make a new one with --plan" in line


def test_the_digest_is_the_whole_document_but_the_digest(tmp_path: Path) -> None:
    from cidrx.model import codec

    doc = json.loads(_offline_plan(tmp_path).read_text())
    digest = doc.pop("digest")
    assert digest == codec.sha256_of(doc)


# --- items 6 and 7: TLS failures are permanent, persistent 5xx exits 7, retries are logged ----------------


@pytest.fixture
def untrusted_tls_server(tmp_path: Path) -> Iterator[str]:
    """An HTTPS server on 127.0.0.1 whose certificate no CA the client knows has signed; yields its URL."""
    import datetime
    import ssl
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "untrusted.test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(__import__("ipaddress").ip_address("127.0.0.1"))]), False
        )
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / "tls.crt", tmp_path / "tls.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # never reached: the client refuses the certificate
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_path, key_path)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_tls_verification_failure_is_not_retried_nor_called_unreachable(
    untrusted_tls_server: str, tmp_path: Path, retry_sleeps: list[float]
) -> None:
    import yaml

    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": untrusted_tls_server}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "prod", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "prod",
            }
        )
    )
    result = run("diagnose", "--k8s", "--kubeconfig", str(kubeconfig), env={"CIDRX_RETRY_MAX_ATTEMPTS": "6"})
    assert result.exit_code == 6, result.output
    line = error_line(result)
    assert "certificate" in line and "could not be verified" in line
    assert "cannot reach" not in line
    assert "certificate-authority" in result.stderr  # the hint says what to check
    assert retry_sleeps == []  # tried once


def test_a_cluster_failing_after_every_retry_exits_7_with_retry_later(
    kube_server: FakeKubeServer, tmp_path: Path, retry_sleeps: list[float]
) -> None:
    kubeconfig = str(kube_server.kubeconfig(tmp_path / "kubeconfig"))
    kube_server.inject(503, method="GET", path_contains="/nodes", times=None)
    result = run("-v", "diagnose", "--k8s", "--kubeconfig", kubeconfig)
    assert result.exit_code == 7, result.output
    assert "gave up after 2 attempts" in error_line(result)
    assert "hint: the cloud or cluster kept failing after every retry; nothing is wrong with the input" in result.stderr
    assert "internal error" not in result.stderr
    # -v: one line per retry, saying what failed and how long cidrx waits
    retries = [line for line in result.stderr.splitlines() if "retrying" in line and "attempt" in line]
    assert len(retries) == len(retry_sleeps) == 1
    assert "503" in retries[0] and "attempt 2 of 2" in retries[0]  # the retry is the second attempt


def test_exit_code_7_is_documented_everywhere() -> None:
    from cidrx.cli import EXIT_CODES_HELP
    from cidrx.errors import EXIT_RETRY_LATER

    assert EXIT_RETRY_LATER == 7
    assert "7  " in EXIT_CODES_HELP and "retry later" in EXIT_CODES_HELP
    for doc in ("README.md", "docs/cli.md"):
        text = (REPO / doc).read_text()
        assert "| 7 |" in text and "retry later" in text, doc
    catalogue = (REPO / "docs" / "exit-codes.md").read_text()
    assert not catalogue.startswith("# Bad input\n") and "| 7 |" in catalogue


# --- item 7: global options anywhere, AWS_REGION, no advice that is then refused, disk and pipe ----------


@pytest.mark.parametrize("where", ["before", "after"])
def test_verbose_works_before_or_after_the_subcommand(where: str) -> None:
    args = ["diagnose", "--k8s", "--context", "a", "--context", "b", "--kubeconfig", "/nonexistent"]
    argv = ["-v", *args] if where == "before" else [*args, "-v"]
    result = run(*argv, "--no-color")
    assert "no such option" not in result.output
    assert result.exit_code in (2, 3, 6), result.output


def test_quiet_and_no_color_after_the_subcommand_are_accepted() -> None:
    result = run("diagnose", "--snapshot", EKS_EX, "-q", "--no-color")
    assert result.exit_code == 3, result.output
    assert "subnet-0cd55c38980375d58" in result.stdout
    assert "\x1b[" not in result.stdout


def test_a_bug_traceback_is_shown_with_verbose_after_the_subcommand(tmp_path: Path) -> None:
    from cidrx.cli import hoist_global_options

    commands = {"diagnose": None}
    assert hoist_global_options(["diagnose", "--snapshot", "x", "-vv"], commands) == [
        "-vv",
        "diagnose",
        "--snapshot",
        "x",
    ]
    assert hoist_global_options(["-v", "diagnose", "-q"], commands) == ["-v", "-q", "diagnose"]
    # after `--` nothing is an option any more
    assert hoist_global_options(["diagnose", "--", "-v"], commands) == ["diagnose", "--", "-v"]


def test_aws_region_is_honoured_for_the_region(aws: tuple[Any, Any, AwsCalls]) -> None:
    _, world, _ = aws
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        env: dict[str, str | None] = {"AWS_REGION": None, "AWS_DEFAULT_REGION": None, name: world.region}
        result = run("diagnose", "--eks", "--cluster", world.cluster, "--no-kube", "-o", "json", env=env)
        assert result.exit_code == 3, (name, result.output)
        assert json.loads(result.stdout)["target"]["region"] == world.region
    result = run(
        "diagnose",
        "--eks",
        "--cluster",
        world.cluster,
        "--no-kube",
        env={"AWS_REGION": None, "AWS_DEFAULT_REGION": None},
    )
    assert result.exit_code == 2 and "--eks needs --region" in error_line(result)


def test_no_advice_to_pass_no_kube_where_it_is_refused(tmp_path: Path) -> None:
    # --k8s refuses --no-kube: its errors must not advise it
    result = run("diagnose", "--k8s", env={"HOME": str(tmp_path), "KUBECONFIG": None})
    assert result.exit_code == 6, result.output
    clouds = " or ".join(registry.cloud_flags())
    assert "--no-kube" not in result.stderr.replace(f"with {clouds}, --no-kube", "")
    with FakeKubeServer() as server:
        kubeconfig = str(server.kubeconfig(tmp_path / "kubeconfig"))
    result = run("diagnose", "--k8s", "--kubeconfig", kubeconfig)
    assert result.exit_code == 6, result.output
    assert "--no-kube" not in result.stderr


def test_a_full_disk_is_one_line_and_not_a_bug(tmp_path: Path) -> None:
    import subprocess
    import sys

    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CIDRX_")}
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "cidrx", "diagnose", "--snapshot", EKS_EX, "-o", "json"],
            cwd=REPO,
            env=env,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    assert proc.returncode == 2, proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("cidrx: error: cannot write") and "No space left on device" in proc.stderr


def test_a_closed_pipe_ends_quietly() -> None:
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("CIDRX_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "cidrx", "diagnose", "--snapshot", WB_EX, "-o", "json"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader goes away before cidrx writes
    err = proc.stderr.read().decode()
    code = proc.wait(timeout=60)
    # Quiet, and the diagnosis's own code (this snapshot has critical findings: 3), not 0.
    assert err == "" and code == 3, (code, err)


# --- item 3: --k8s without --context is named after the kubeconfig's current context ----------------------


def test_k8s_target_is_named_after_the_real_current_context(
    kube_server: FakeKubeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support.cases import whereabouts as wc

    kube_server.put_many(wc.crashed_node_objects())
    kubeconfig = str(kube_server.kubeconfig(tmp_path / "kubeconfig", context="staging-eu"))
    monkeypatch.chdir(tmp_path)
    table = run("diagnose", "--k8s", "--kubeconfig", kubeconfig)
    assert table.exit_code in (0, 3), table.output
    assert "k8s:staging-eu" in table.stdout and "current-context" not in table.output
    metrics = run("diagnose", "--k8s", "--kubeconfig", kubeconfig, "-o", "prometheus", "--fail-on", "never")
    assert 'target="k8s:staging-eu"' in metrics.stdout or 'target="staging-eu"' in metrics.stdout, metrics.stdout
    assert "current-context" not in metrics.stdout
    made = run("reclaim", "--k8s", "--kubeconfig", kubeconfig, "--ipam", "whereabouts", "--plan")
    assert made.exit_code == 0, made.output
    assert (tmp_path / "cidrx-plan-staging-eu.json").is_file()
    assert not list(tmp_path.glob("*current-context*"))


# --- item 4: --out names the plan's JSON; the HCL goes beside it ------------------------------------------


def test_out_ending_in_tf_is_refused_with_the_rule(tmp_path: Path) -> None:
    out = tmp_path / "X.tf"
    result = run("expand", "--snapshot", EKS_EX, "--plan", "--out", str(out), "--emit", "terraform")
    assert result.exit_code == 2, result.output
    assert "--out names the plan's JSON file" in error_line(result)
    assert f"--out {tmp_path}/X.json --emit terraform" in result.stderr
    assert list(tmp_path.iterdir()) == []  # neither X.tf nor X.tf.tf


def test_out_json_with_emit_terraform_writes_json_and_hcl_beside_it(tmp_path: Path) -> None:
    out = tmp_path / "X.json"
    result = run("expand", "--snapshot", EKS_EX, "--plan", "--out", str(out), "--emit", "terraform")
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["X.json", "X.tf"]
    assert json.loads(out.read_text())["schema"] == "cidrx.plan/v1"
    assert "resource " in (tmp_path / "X.tf").read_text()


# --- item 8: no flag is accepted and silently ignored --------------------------------------------------


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--max-pods-per-node", "32"), "--max-pods-per-node does not apply to --strategy custom-networking"),
        (("--allow-class-e",), "--allow-class-e does not apply to --strategy custom-networking"),
        (("--strategy", "prefix-delegation", "--pool-name", "ng2"), "--pool-name does not apply"),
        (("--pool-name", "Bad_Name!"), "--pool-name 'Bad_Name!' is not a valid name"),
        (("--pool-name", "x" * 64), "at most 63 characters"),
    ],
)
def test_eks_plan_refuses_flags_it_would_ignore(args: tuple[str, ...], fragment: str, tmp_path: Path) -> None:
    result = run("expand", "--snapshot", EKS_EX, "--plan", "--out", str(tmp_path / "p.json"), *args)
    assert result.exit_code == 2, result.output
    assert fragment in error_line(result)
    assert not (tmp_path / "p.json").exists()


@pytest.mark.parametrize(
    ("name", "ok"),
    [("pool-2", True), ("Bad_Name!", False), ("2pool", False), ("pool-", False), ("p" * 40, True), ("p" * 41, False)],
)
def test_gke_pool_name_is_checked_before_it_goes_into_the_plan(name: str, ok: bool, tmp_path: Path) -> None:
    out = tmp_path / "p.json"
    result = run("expand", "--snapshot", GKE_EX, "--plan", "--out", str(out), "--pool-name", name)
    if ok:
        assert result.exit_code == 0, result.output
        assert json.loads(out.read_text())["basis"]["node_pool_name"] == name
    else:
        assert result.exit_code == 2, result.output
        assert "is not a valid name: use lowercase letters, digits and hyphens" in error_line(result)
        assert not out.exists()


def test_gke_cluster_range_refuses_pool_name(tmp_path: Path) -> None:
    result = run("expand", "--snapshot", GKE_EX, "--plan", "--strategy", "cluster-range", "--pool-name", "p2")
    assert result.exit_code == 2 and "--pool-name does not apply to --strategy cluster-range" in error_line(result)


def test_calico_pool_name_must_be_a_dns_subdomain(tmp_path: Path) -> None:
    base = ("expand", "--snapshot", CALICO_EX, "--plan", "--strategy", "calico-pool", "--out", str(tmp_path / "p.json"))
    bad = run(*base, "--pool-name", "Bad_Name!")
    assert bad.exit_code == 2 and "DNS-1123 subdomain" in error_line(bad)
    ignored = run(*base, "--max-pods-per-node", "32")
    assert ignored.exit_code == 2 and "--max-pods-per-node does not apply to --strategy calico-pool" in error_line(
        ignored
    )
    good = run(*base, "--pool-name", "extra.pool-1")
    assert good.exit_code == 0, good.output


@pytest.mark.parametrize("mode", [("--plan", "--ipam", "whereabouts"), ("--apply", "plan.json", "--yes")])
def test_reclaim_refuses_no_kube(mode: tuple[str, ...]) -> None:
    result = run("reclaim", "--k8s", "--no-kube", *mode) if mode[0] == "--plan" else run("reclaim", "--no-kube", *mode)
    assert result.exit_code == 2, result.output
    assert "drop --no-kube" in error_line(result)


def test_permissions_refuses_two_providers_like_diagnose() -> None:
    perms = run("permissions", "--eks", "--gke")
    diag = run("diagnose", "--eks", "--gke")
    assert perms.exit_code == diag.exit_code == 2
    assert error_line(perms) == error_line(diag) == "cidrx: error: choose one provider, not --eks and --gke"


def test_output_text_is_table_and_fail_on_info_is_accepted() -> None:
    text = run("diagnose", "--snapshot", EKS_EX, "-o", "text", "--fail-on", "never")
    table = run("diagnose", "--snapshot", EKS_EX, "-o", "table", "--fail-on", "never")
    assert text.exit_code == table.exit_code == 0
    assert text.stdout == table.stdout
    info = run("diagnose", "--snapshot", EKS_EX, "--fail-on", "info")
    assert info.exit_code == 3, info.output


# --- item 9: an unsupported schema version is named before any field is checked ---------------------------


def test_a_snapshot_of_another_schema_version_is_named_as_such(tmp_path: Path) -> None:
    doc = json.loads(Path(EKS_EX).read_text())
    doc["schema"] = "cidrx.snapshot/v999"
    del doc["kube"]["available"]  # a newer format may lack what v1 requires: the version is the news
    path = tmp_path / "future.json"
    path.write_text(json.dumps(doc))
    result = run("diagnose", "--snapshot", str(path))
    assert result.exit_code == 2, result.output
    line = error_line(result)
    assert "unsupported snapshot schema cidrx.snapshot/v999 (this cidrx reads cidrx.snapshot/v1)" in line
    assert "missing required field" not in line


def test_a_plan_of_another_schema_version_is_named_as_such(tmp_path: Path) -> None:
    path = _offline_plan(tmp_path)
    doc = json.loads(path.read_text())
    doc["schema"] = "cidrx.plan/v2"
    del doc["steps"]
    path.write_text(json.dumps(doc))
    result = run("expand", "--apply", str(path), "--yes", "--no-kube")
    assert result.exit_code == 2, result.output
    assert "unsupported plan schema cidrx.plan/v2 (this cidrx reads cidrx.plan/v1)" in error_line(result)


# --- item 10: fix text is a complete command, for this cluster ---------------------------------------------


def _diagnosis(path: str) -> dict[str, Any]:
    result = run("diagnose", "--snapshot", path, "-o", "json", "--fail-on", "never")
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def test_eks_fix_text_is_the_full_command() -> None:
    from cidrx.app import diagnose as app_diagnose
    from cidrx.model.snapshot import load_snapshot

    d = app_diagnose.analyze(load_snapshot(EKS_EX))  # live wording: the target's own flags
    fixes = [f.remediation for f in d.findings if "cidrx expand" in f.remediation]
    assert fixes and all("..." not in fix for fix in fixes)
    assert all(
        "cidrx expand --eks --region ap-southeast-2 --cluster demo-ip --plan --out plan.json" in fix for fix in fixes
    )


def test_in_cluster_fixes_name_the_context_they_were_read_through() -> None:
    from cidrx.app import diagnose as app_diagnose
    from cidrx.model.snapshot import load_snapshot

    for path in (WB_EX, CALICO_EX):
        d = app_diagnose.analyze(load_snapshot(path))
        fixes = [f.remediation for f in d.findings if "cidrx reclaim" in f.remediation]
        assert fixes, path
        assert all("cidrx reclaim --k8s --context lab --ipam" in fix for fix in fixes), fixes


def test_diagnosing_a_snapshot_suggests_planning_from_it() -> None:
    for path, verb in ((EKS_EX, "expand"), (GKE_EX, "expand"), (WB_EX, "reclaim")):
        doc = _diagnosis(path)
        fixes = [f["remediation"] for f in doc["findings"] if f"cidrx {verb}" in f["remediation"]]
        assert fixes, path
        assert all(f"cidrx {verb} --snapshot {path}" in fix for fix in fixes), fixes
        assert not any("--eks --region" in fix or "--gke --project" in fix for fix in fixes)


def test_a_snapshot_plan_suggested_by_diagnose_is_a_command_that_works(tmp_path: Path, monkeypatch: Any) -> None:
    import re
    import shlex

    monkeypatch.chdir(tmp_path)
    fix = next(f["remediation"] for f in _diagnosis(EKS_EX)["findings"] if "cidrx expand" in f["remediation"])
    command = re.search(r"`(cidrx expand [^`]+)`", fix)
    assert command is not None, fix
    result = run(*shlex.split(command[1])[1:])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "plan.json").read_text())["schema"] == "cidrx.plan/v1"


def test_no_advice_to_free_empty_blocks_of_a_node_that_has_none() -> None:
    from cidrx.ipam.calico.analyze import analyze_calico
    from tests.support.cases import calico as calico_cases

    world = calico_cases.incident()
    _, findings = analyze_calico(world.calico(), world.pod_states(), world.kube_nodes())
    hoarding = {f.subject: f for f in findings if f.id == "CALICO-NODE-HOARDING-BLOCKS"}
    assert "(0 empty)" in hoarding["node node-1"].summary
    assert "empty block" not in hoarding["node node-1"].remediation
    assert "(1 empty)" in hoarding["node node-2"].summary
    assert "Free its 1 empty block(s)" in hoarding["node node-2"].remediation


def test_the_snapshot_age_is_in_the_header() -> None:
    from datetime import UTC, datetime

    from cidrx.render.age import age_text

    table = run("diagnose", "--snapshot", EKS_EX, "--fail-on", "never", env={"COLUMNS": "200"})
    assert table.stdout.splitlines()[1].startswith(
        "cidrx diagnosis of eks:ap-southeast-2/demo-ip (snapshot a352e0c701ac taken 2023-11-04T01:12:00Z, "
    )
    assert "years ago)" in table.stdout.splitlines()[1]
    markdown = run("diagnose", "--snapshot", WB_EX, "-o", "markdown", "--fail-on", "never")
    assert "taken 2024-12-09T03:41:00Z, " in markdown.stdout
    assert json.loads(run("diagnose", "--snapshot", EKS_EX, "-o", "json").stdout)["taken_at"] == "2023-11-04T01:12:00Z"
    now = datetime(2026, 11, 24, 9, 0, tzinfo=UTC)
    assert age_text("2023-11-04T01:12:00Z", now) == "3 years ago"
    assert age_text("2026-11-24T08:59:30Z", now) == "just now"
    assert age_text("2026-11-24T07:00:00Z", now) == "2 hours ago"
    assert age_text("not a time", now) == ""


# --- item 11: the docs say what is true --------------------------------------------------------------------


def test_readme_test_command_prints_the_summary_line() -> None:
    import re
    import shlex
    import tomllib

    readme = (REPO / "README.md").read_text()
    commands = set(re.findall(r"(python -m pytest[^\n&]*)", readme))
    ci = [line for line in (REPO / ".ci" / "run").read_text().splitlines() if line.startswith("python -m pytest")]
    assert ci and set(ci) <= commands  # CI runs exactly README's command
    addopts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    for command in commands:
        quiet = sum(a.count("q") for a in [*shlex.split(addopts), *shlex.split(command)] if re.fullmatch(r"-q+", a))
        assert quiet <= 1, f"{command!r} with addopts {addopts!r} is -qq: pytest would print no 'N passed' line"


def test_readme_environment_table_lists_every_variable_cidrx_reads() -> None:
    import re

    names: set[str] = set()
    for path in (REPO / "cidrx").rglob("*.py"):
        names |= set(re.findall(r"""envvar="(CIDRX_[A-Z_]+)\"""", path.read_text()))
        names |= set(re.findall(r"""_ENV = "(CIDRX_[A-Z_]+)\"""", path.read_text()))
    assert {"CIDRX_ALL_CLUSTERS", "CIDRX_ALL_CONTEXTS", "CIDRX_PARALLEL"} <= names
    section = (REPO / "README.md").read_text().split("## Environment", 1)[1].split("\n## ", 1)[0]
    missing = sorted(n for n in names if f"`{n}" not in section)
    assert not missing, f"README's environment table misses {missing}"
    assert "AWS_REGION" in section and "AWS_DEFAULT_REGION" in section


def test_no_doc_or_docstring_cites_a_path_outside_the_repository() -> None:
    import subprocess

    found = subprocess.run(
        [
            "git",
            "grep",
            "-n",
            "-E",
            r"DESIGN\.md|shared[/]incidents|/work[/]shared",
            "--",
            ".",
            ":!tests/cli/test_ux_errors.py",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
    ).stdout
    assert found == "", found
    assert (REPO / "docs" / "cloud-facts.md").is_file()
    mitigations = (REPO / "docs" / "mitigations.md").read_text()
    assert "Examples below are the plans" not in mitigations


def _verify_error() -> Exception:
    import ssl

    err = ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")
    err.verify_message = "self-signed certificate"
    return err


def test_aws_and_google_tls_failures_are_permanent_and_named() -> None:
    import requests
    from botocore import exceptions as bx

    from cidrx.providers.eks import api as eks_api
    from cidrx.providers.gke import api as gke_api

    aws = bx.SSLError(endpoint_url="https://ec2.ap-southeast-2.amazonaws.com/", error=_verify_error())
    assert eks_api.classify(aws, write=False) is None
    said = eks_api.translate(aws, "ec2:DescribeVpcs")
    assert said.exit_code == 6 and "TLS certificate of https://ec2.ap-southeast-2.amazonaws.com/" in said.message
    assert "cannot reach" not in said.message and "AWS_CA_BUNDLE" in (said.hint or "")

    google = requests.exceptions.SSLError(_verify_error())
    assert gke_api.classify(google, write=False) is None
    said = gke_api.translate(google, "container.clusters.get")
    assert said.exit_code == 6 and "TLS certificate of Google Cloud could not be verified" in said.message
    assert "self-signed certificate" in said.message


def test_quiet_and_verbose_together_are_refused() -> None:
    result = run("-q", "diagnose", "--snapshot", EKS_EX, "-v")
    assert result.exit_code == 2 and "-q and -v contradict each other" in error_line(result)
