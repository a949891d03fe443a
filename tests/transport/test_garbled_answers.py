"""A success answer cut off or garbled on the way (a truncated DescribeCluster body, EC2 XML that does not parse)
is a transient failure of that call: retried like a 5xx, exit 7 when it lasts, never a KeyError or exit 1.
Faults are injected where botocore sends (a `before-send` handler registered like moto's own)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.support.cli import one_line_error, run
from tests.support.fakes import eks_addons


@pytest.fixture
def eks(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any]]:
    from tests.support.estates.eks import fake_aws_env, moto_incident

    fake_aws_env(monkeypatch)
    with moto_incident(cluster="demo-ip") as pair:
        yield pair


def hook_aws(monkeypatch: pytest.MonkeyPatch, event: str, handler: Callable[..., Any]) -> None:
    import botocore.handlers

    monkeypatch.setattr(botocore.handlers, "BUILTIN_HANDLERS", [*botocore.handlers.BUILTIN_HANDLERS, (event, handler)])


def garble(times: int | None, body: bytes, content_type: str) -> tuple[Callable[..., Any], list[int]]:
    """A handler answering the first `times` requests (None: all) with a 200 and `body`."""
    sent = [0]

    def handler(request: Any, **_: Any) -> Any:
        sent[0] += 1
        if times is None or sent[0] <= times:
            return eks_addons.raw_response(request.url, 200, body, {"Content-Type": content_type})
        return None

    return handler, sent


CUT_CLUSTER = b'{"cluster": {"name": "demo-i'  # botocore reads an unparseable JSON body as {} plus a message
BAD_XML = b"<DescribeRouteTablesResponse><routeTableSet><item><routeTableId>rtb-1</rou"


def _diagnose(world: Any) -> Any:
    return run("diagnose", "--eks", "--region", world.region, "--cluster", world.cluster, "--no-kube", "-o", "json")


@pytest.mark.parametrize(
    ("event", "body", "content_type"),
    [
        ("before-send.eks.DescribeCluster", CUT_CLUSTER, "application/json"),
        ("before-send.ec2.DescribeRouteTables", BAD_XML, "text/xml"),
    ],
    ids=["cut-json", "garbled-xml"],
)
def test_a_garbled_answer_is_retried_and_the_result_is_the_fault_free_one(
    eks: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch, event: str, body: bytes, content_type: str
) -> None:
    _, world = eks
    clean = _diagnose(world)
    handler, sent = garble(2, body, content_type)
    hook_aws(monkeypatch, event, handler)
    faulty = _diagnose(world)
    assert sent[0] >= 3 and faulty.exit_code == clean.exit_code, faulty.output
    strip = lambda text: "\n".join(line for line in text.splitlines() if "taken_at" not in line)  # noqa: E731
    assert strip(faulty.stdout) == strip(clean.stdout)


@pytest.mark.parametrize(
    ("event", "body", "content_type"),
    [
        ("before-send.eks.DescribeCluster", CUT_CLUSTER, "application/json"),
        ("before-send.ec2.DescribeRouteTables", BAD_XML, "text/xml"),
    ],
    ids=["cut-json", "garbled-xml"],
)
def test_a_garbled_answer_that_lasts_is_exit_7(
    eks: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch, event: str, body: bytes, content_type: str
) -> None:
    _, world = eks
    handler, _ = garble(None, body, content_type)
    hook_aws(monkeypatch, event, handler)
    result = _diagnose(world)
    assert result.exit_code == 7, result.output
    assert "answer" in one_line_error(result) and "internal error" not in result.stderr


# --- Kubernetes: the fake API server cuts the real answer off halfway --------------------------------------


def _k8s(kubeconfig: str) -> Any:
    return run("diagnose", "--k8s", "--kubeconfig", kubeconfig, "-o", "json")


def test_a_cut_kubernetes_list_is_retried_and_a_lasting_one_is_exit_7(tmp_path: Any) -> None:
    from tests.support.fakes.kube_server import FakeKubeServer

    with FakeKubeServer() as server:
        kubeconfig = str(server.kubeconfig(tmp_path / "kubeconfig"))
        clean = _k8s(kubeconfig)
        server.inject_truncated(method="GET", path_contains="/nodes", times=2)
        once = _k8s(kubeconfig)
        assert once.exit_code == clean.exit_code, once.output
        server.inject_truncated(method="GET", path_contains="/nodes", times=None)
        lasting = _k8s(kubeconfig)
        server.clear_faults()
    assert lasting.exit_code == 7, lasting.output
    assert "unreadable answer to list nodes" in one_line_error(lasting)


def test_an_exec_credential_plugin_printing_no_json_is_exit_2_naming_it(tmp_path: Any) -> None:
    import yaml

    from tests.support.fakes.kube_server import FakeKubeServer

    with FakeKubeServer() as server:
        config = server.kubeconfig_dict()
        config["users"] = [
            {
                "name": "fake",
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": "sh",
                        "args": ["-c", "echo 'Please log in first'"],
                    }
                },
            }
        ]
        path = tmp_path / "kubeconfig"
        path.write_text(yaml.safe_dump(config))
        result = _k8s(str(path))
    assert result.exit_code == 2, result.output
    assert "the credential plugin 'sh' of context fake did not print an ExecCredential" in one_line_error(result)
    assert "Please log in first" in result.stderr


def test_an_exec_credential_plugin_that_never_returns_is_exit_6_naming_it(tmp_path: Any) -> None:
    import yaml

    from tests.support.fakes.kube_server import FakeKubeServer

    with FakeKubeServer() as server:
        config = server.kubeconfig_dict()
        # The plugin starts a child that outlives it: the timeout must end both (its process group).
        plugin = {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "sh", "args": ["-c", "sleep 60"]}
        config["users"] = [{"name": "fake", "user": {"exec": plugin}}]
        path = tmp_path / "kubeconfig"
        path.write_text(yaml.safe_dump(config))
        result = run("diagnose", "--k8s", "--kubeconfig", str(path), env={"CIDRX_CREDENTIAL_PLUGIN_TIMEOUT": "0.5"})
    assert result.exit_code == 6, result.output
    assert "the credential plugin 'sh' of context fake did not finish within" in one_line_error(result)


def test_a_hung_aws_endpoint_is_unreachable_like_a_refused_one() -> None:
    from botocore import exceptions as bx

    from cidrx.errors import ExitStatus
    from cidrx.providers.eks.api import translate

    hung = translate(bx.ReadTimeoutError(endpoint_url="https://eks.us-east-1.amazonaws.com"), "eks:DescribeCluster")
    refused = translate(bx.EndpointConnectionError(endpoint_url="https://eks.us-east-1.amazonaws.com"), "eks:X")
    assert hung.exit_code == refused.exit_code == ExitStatus.ACCESS
    assert "did not answer eks:DescribeCluster" in hung.message
