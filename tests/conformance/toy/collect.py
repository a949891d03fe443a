"""Reads the toy IPAM's pools (one list call) when the cluster serves its API group."""

from __future__ import annotations

from typing import Any

from tests.conformance.toy.model import GROUP, PLURAL, VERSION, ToyPool, ToySection


def collect_served(api: Any, groups: set[str]) -> ToySection | None:
    if GROUP not in groups:
        return None
    pools = api.iter_custom(GROUP, VERSION, PLURAL)
    return ToySection(tuple(ToyPool(p["metadata"]["name"], p["spec"]["cidr"], p["spec"].get("used", 0)) for p in pools))


def pod_refs(section: ToySection) -> set[str]:
    return set()


def cidrs(section: ToySection) -> list[str]:
    return [p.cidr for p in section.pools]
