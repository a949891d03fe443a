"""Fixtures of the AKS tests: the three AKS estates in one loopback ARM fake (tests/support/estates/aks.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.support.estates import aks as aw
from tests.support.fakes.arm_server import FakeArm


@pytest.fixture
def arm(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeArm]:
    for name in list(os.environ):
        if name.startswith("CIDRX_"):
            monkeypatch.delenv(name)
    with aw.aks_estate(monkeypatch) as fake:
        yield fake
