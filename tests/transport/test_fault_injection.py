"""A seeded, bounded fault injector in front of moto (a botocore `before-send` handler) and the fake Kubernetes
API server (its `on_request` hook): each request meets, with a fixed probability, a 503, a 429 with
Retry-After, a dropped connection or a 2xx answer cut off halfway. A diagnosis under faults must end with the
fault-free answer (the retries ride them out) or exit 7 (they lasted), never exit 1 or another answer.
Seeds are fixed, so a failure replays; the retry policy's sleeps are recorded, not slept (tests/support)."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import run
from tests.support.estates.kube_objects import seed_cluster
from tests.support.fakes import eks_addons
from tests.support.fakes.kube_server import FakeKubeServer, RequestRecord

SEEDS = (7, 23, 61)
RATE = 0.3
AWS_FAULTS = ("503", "throttled", "garbled")
KUBE_FAULTS = ("503", "429", "close", "truncated")


@pytest.fixture
def estate(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[tuple[Any, FakeKubeServer, str]]:
    from tests.support.estates.eks import fake_aws_env, moto_incident

    fake_aws_env(monkeypatch)
    with moto_incident(cluster="demo-ip") as (_, world), FakeKubeServer() as server:
        seed_cluster(server, world.node_ips)
        yield world, server, str(server.kubeconfig(tmp_path / "kubeconfig"))


def _aws_faults(monkeypatch: pytest.MonkeyPatch, rng: random.Random, counts: dict[str, int]) -> None:
    import botocore.handlers

    def handler(request: Any, **_: Any) -> Any:
        if rng.random() >= RATE:
            return None
        kind = rng.choice(AWS_FAULTS)
        counts[kind] = counts.get(kind, 0) + 1
        if kind == "garbled":
            return eks_addons.raw_response(request.url, 200, b"<Resp", {"Content-Type": "text/xml"})
        code, status = ("ServiceUnavailable", 503) if kind == "503" else ("Throttling", 400)
        body = f"<ErrorResponse><Error><Code>{code}</Code><Message>injected</Message></Error></ErrorResponse>"
        return eks_addons.raw_response(request.url, status, body.encode(), {"Content-Type": "text/xml"})

    handlers = [*botocore.handlers.BUILTIN_HANDLERS, ("before-send", handler)]
    monkeypatch.setattr(botocore.handlers, "BUILTIN_HANDLERS", handlers)


def _kube_faults(server: FakeKubeServer, rng: random.Random, counts: dict[str, int]) -> None:
    def hook(record: RequestRecord) -> None:
        if record.method != "GET" or rng.random() >= RATE:
            return
        kind = rng.choice(KUBE_FAULTS)
        counts[kind] = counts.get(kind, 0) + 1
        where = {"method": "GET", "path_contains": record.path, "times": 1}
        if kind == "503":
            server.inject(503, **where)  # type: ignore[arg-type]
        elif kind == "429":
            server.inject(429, retry_after=1, **where)  # type: ignore[arg-type]
        elif kind == "close":
            server.inject_reset("close", **where)  # type: ignore[arg-type]
        else:
            server.inject_truncated(**where)  # type: ignore[arg-type]

    server.on_request = hook


def _diagnose(world: Any, kubeconfig: str) -> Any:
    args = ["diagnose", "--eks", "--region", world.region, "--cluster", world.cluster, "--kubeconfig", kubeconfig]
    return run(*args, "-o", "json", "--fail-on", "never")


def _answer(stdout: str) -> Any:
    doc = json.loads(stdout)
    doc.pop("taken_at", None)
    return doc


@pytest.mark.parametrize("seed", SEEDS)
def test_a_diagnosis_under_faults_is_the_fault_free_one_or_exit_7(
    estate: tuple[Any, FakeKubeServer, str], monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    world, server, kubeconfig = estate
    clean = _diagnose(world, kubeconfig)
    assert clean.exit_code == 0, clean.output
    rng = random.Random(seed)
    counts: dict[str, int] = {}
    _aws_faults(monkeypatch, rng, counts)
    _kube_faults(server, rng, counts)
    faulty = _diagnose(world, kubeconfig)
    server.on_request = None
    server.clear_faults()
    assert sum(counts.values()) > 0  # the seed did inject faults
    assert "internal error" not in faulty.stderr and "Traceback" not in faulty.output
    assert faulty.exit_code in (0, 7), faulty.output
    if faulty.exit_code == 0:
        assert _answer(faulty.stdout) == _answer(clean.stdout), counts
