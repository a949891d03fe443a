"""Compact schemas of the custom resources cidrx writes, keyed by (group, version, plural).

Each IPAM's module beside this one writes down, from the upstream CRD's openAPIV3Schema (file and commit
cited there), the fields cidrx reads and writes with their types, required fields and enums. The fake API
server checks every create, update and patch of those resources against them (422 Invalid otherwise).
"""

from __future__ import annotations

from collections.abc import Mapping

from tests.support.fakes.crd_schemas.structural import Schema

SCHEMAS: dict[tuple[str, str, str], Schema] = {}


def register(schemas: Mapping[tuple[str, str, str], Schema]) -> None:
    SCHEMAS.update(schemas)


def _load() -> None:
    # Each module registers its own schemas on import; a missing one just means none for that group.
    import importlib

    for name in ("calico", "whereabouts", "karpenter", "cilium"):
        try:
            importlib.import_module(f"tests.support.fakes.crd_schemas.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"tests.support.fakes.crd_schemas.{name}":
                raise


_load()
