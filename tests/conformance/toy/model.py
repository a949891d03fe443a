"""The toy IPAM's snapshot section: its pools, as compact records."""

from __future__ import annotations

from dataclasses import dataclass

GROUP, VERSION, PLURAL = "toy.cidrx.test", "v1", "toypools"


@dataclass(frozen=True)
class ToyPool:
    name: str
    cidr: str
    used: int = 0


@dataclass(frozen=True)
class ToySection:
    pools: tuple[ToyPool, ...] = ()
