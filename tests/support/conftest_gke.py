"""Pytest plugin with the fixtures for tests against the GKE estate (gke_world.py) in the loopback GCP fake.

``gcp``: a started FakeGcp holding the GKE incident, the CIDRX_* endpoint variables pointing at it, checked
against Google's discovery documents at teardown. ``gke_api``: a GkeApi for the incident's cluster location.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cidrx.providers.gke.api import GkeApi
from tests.support.estates import gke as gke_world
from tests.support.fakes.gcp_server import FakeGcp


@pytest.fixture
def gcp(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGcp]:
    with gke_world.gke_estate(monkeypatch) as fake:
        yield fake


@pytest.fixture
def gke_api(gcp: FakeGcp) -> GkeApi:
    return GkeApi(gke_world.PROJECT, gke_world.LOCATION)
