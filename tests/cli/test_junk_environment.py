"""A junk environment is the user's input: one line and exit 2 naming the variable, never exit 1 (a bug) or
exit 6/7 (an unreachable or failing cloud). Each row runs the real CLI in process with the variable set."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import one_line_error, run

AWS = {
    "AWS_ACCESS_KEY_ID": "x",
    "AWS_SECRET_ACCESS_KEY": "y",
    "AWS_REGION": "us-east-1",
    "AWS_ENDPOINT_URL": None,
    "CIDRX_RETRY_MAX_ATTEMPTS": "1",
}
EKS = ("diagnose", "--eks", "--cluster", "c", "--no-kube")


@pytest.mark.parametrize(
    ("env", "fragment"),
    [
        ({"AWS_ENDPOINT_URL": "not a url"}, "the AWS endpoint is not usable: Invalid endpoint"),
        ({"AWS_ENDPOINT_URL": "http://[::1"}, "the AWS endpoint is not usable: Invalid IPv6 URL"),
        ({"AWS_ENDPOINT_URL": "ftp://x.example"}, "'ftp://x.example' is not an http:// or https:// URL"),
        ({"AWS_REGION": "junk region!"}, "'junk region!' doesn't match a supported format"),
        ({"HTTPS_PROXY": "junk://x"}, "HTTPS_PROXY='junk://x' is not a proxy URL"),
        ({"https_proxy": "http://[::1"}, "https_proxy='http://[::1' is not a proxy URL"),
    ],
    ids=["endpoint-not-a-url", "endpoint-bad-ipv6", "endpoint-ftp", "region-junk", "proxy-scheme", "proxy-ipv6"],
)
def test_junk_aws_environment_is_exit_2(env: dict[str, str], fragment: str) -> None:
    result = run(*EKS, env={**AWS, **env})
    assert result.exit_code == 2, result.output
    assert fragment in one_line_error(result)


def test_an_unparseable_aws_config_file_is_exit_2(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text("[default\nregion = x\n")
    result = run(*EKS, env={**AWS, "AWS_CONFIG_FILE": str(config)})
    assert result.exit_code == 2, result.output
    assert "cannot read the AWS configuration" in one_line_error(result)


def test_a_junk_proxy_is_exit_2_for_kubernetes_too(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:9'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
    )
    result = run("diagnose", "--k8s", "--kubeconfig", str(kubeconfig), env={"HTTPS_PROXY": "junk://x"})
    assert result.exit_code == 2, result.output
    assert "HTTPS_PROXY='junk://x' is not a proxy URL" in one_line_error(result)


def test_an_output_encoding_that_cannot_print_a_name_is_exit_2(tmp_path: Path) -> None:
    import dataclasses
    import os
    import subprocess
    import sys

    from cidrx.model.snapshot import load_snapshot, save_snapshot, seal

    repo = Path(__file__).resolve().parents[2]
    snap = load_snapshot(repo / "examples" / "whereabouts-stale.snapshot.json")
    named = dataclasses.replace(snap.target, cluster="實驗", context="實驗")
    save_snapshot(seal(dataclasses.replace(snap, target=named)), tmp_path / "s.json")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CIDRX_")}
    proc = subprocess.run(
        [sys.executable, "-m", "cidrx", "diagnose", "--snapshot", str(tmp_path / "s.json")],
        env={**env, "PYTHONIOENCODING": "latin-1"},
        capture_output=True,
        timeout=60,
    )
    err = proc.stderr.decode("latin-1")
    assert proc.returncode == 2, err
    assert err.startswith("cidrx: error: cannot print") and "latin-1" in err and "internal error" not in err
