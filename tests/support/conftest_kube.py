"""Pytest plugin with fixtures for the fake Kubernetes API server (tests/support/fakes/kube_server.py).

Register it from the root conftest with ``pytest_plugins = ["tests.support.conftest_kube"]``.

Fixtures
  * ``kube_server``: a fresh, started ``FakeKubeServer`` per test, stopped afterwards; an exception raised
    while serving (an ``on_request`` hook's, or a bug in the fake) is re-raised at teardown.  Pass constructor
    options by indirect parametrization, e.g. a cluster without any CRD group::

        @pytest.mark.parametrize("kube_server", [{"crds": False}], indirect=True)

  * ``kubeconfig_path``: a kubeconfig for ``kube_server`` under ``tmp_path``, exported as ``KUBECONFIG``.
  * ``calico_incident_api``: ``kube_server`` serving the Calico incident (``calico_cases.incident()``), and
    a connected ``KubeApi`` for it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.fakes.kube_server import FakeKubeServer


@pytest.fixture
def kube_server(request: pytest.FixtureRequest) -> Iterator[FakeKubeServer]:
    options: dict[str, Any] = getattr(request, "param", None) or {}
    with FakeKubeServer(**options) as server:
        yield server
    if server.errors:  # an on_request hook raised, or the fake has a bug: the client only saw a 500
        raise server.errors[0]


@pytest.fixture
def kubeconfig_path(kube_server: FakeKubeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = kube_server.kubeconfig(tmp_path / "kubeconfig.yaml")
    monkeypatch.setenv("KUBECONFIG", str(path))
    return path


@pytest.fixture
def calico_incident_api(kube_server: FakeKubeServer, kubeconfig_path: Path) -> Iterator[Any]:
    from cidrx.kube.api import KubeApi
    from tests.support.cases import calico as calico_cases

    kube_server.put_many(calico_cases.incident().objects())
    with KubeApi.connect(str(kubeconfig_path), None) as connected:
        yield connected
