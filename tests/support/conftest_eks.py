"""Pytest plugin with the fixtures for tests that drive cidrx against the live EKS estate (eks_estate.py).

``shared_botocore``: every botocore session shares one data loader for the module (a test module that makes
dozens of sessions opts in with ``pytestmark = pytest.mark.usefixtures("shared_botocore")``).
``eks``: a context-manager factory for the estate bound to the test's tmp_path and monkeypatch:
``with eks(builder=build_prefix_world, addon=True) as estate: ...``.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.estates.eks_cluster import shared_botocore_loader
from tests.support.estates.eks_live import EksEstate, eks_estate


@pytest.fixture(scope="module")
def shared_botocore() -> Iterator[None]:
    with shared_botocore_loader():
        yield


@pytest.fixture
def eks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., contextlib.AbstractContextManager[EksEstate]]:
    return functools.partial(eks_estate, tmp_path, monkeypatch)
