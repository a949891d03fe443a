"""The basis of the AKS plan kinds (aks-node-pool, aks-pod-subnet), re-read from a fresh snapshot for
cidrx.engine.basis to compare key by key.

Why it exists: a plan promises that apply refuses it if any basis fact changed. What the plan itself did is
discounted: the address space it adds to the VNet, its subnet (known by name and prefix: Azure subnets carry
no tags), its agent pool (tagged with the plan id). The CIDR, subnet and pool names are read from the plan's
own steps, so a basis re-signed by hand that disagrees with them is refused too.
"""

from __future__ import annotations

from typing import Any

from cidrx.model.plan import Plan
from cidrx.model.snapshot import Snapshot
from cidrx.providers.aks.actions.agent_pool import CREATE_AGENT_POOL
from cidrx.providers.aks.actions.network import ADD_ADDRESS_SPACE, CREATE_SUBNET
from cidrx.providers.aks.analyze.analyze import aks_section
from cidrx.providers.aks.facts.pool_copy import PLAN_TAG


def _param(plan: Plan, action: str, key: str) -> Any:
    return next((s.params.get(key) for s in plan.steps if s.action == action), None)


def read_basis(plan: Plan, snapshot: Snapshot) -> dict[str, Any]:
    aks = aks_section(snapshot)
    b = plan.basis
    space = _param(plan, ADD_ADDRESS_SPACE.name, "cidr")
    subnet = str(_param(plan, CREATE_SUBNET.name, "subnet") or "")
    body = _param(plan, CREATE_SUBNET.name, "body") or {}
    cidr = str((body.get("properties") or {}).get("addressPrefix", ""))
    vnet = aks.vnet
    current: dict[str, Any] = {
        "vnet": vnet.id if vnet is not None else None,
        "address_prefixes": [p for p in vnet.address_prefixes if p != space] if vnet is not None else [],
        "cidr": cidr,
        "service_cidr": aks.cluster.service_cidr,
        "network_plugin": aks.cluster.network_plugin,
        "network_plugin_mode": aks.cluster.network_plugin_mode,
    }
    # The subnet's name while it is free, or the subnet is this plan's own (same name and prefix).
    taken = next((s for s in vnet.subnets if s.name == subnet), None) if vnet is not None else None
    current["subnet"] = subnet if taken is None or taken.address_prefix == cidr else f"{subnet} (taken)"
    pools = {p.name: p for p in aks.agent_pools}
    # The template is named only in the basis: the fact held is that the pool still exists, on its subnet.
    template = pools.get(str(b.get("template_pool")))
    current["template_pool"] = template.name if template is not None else None
    role_subnet = ""
    if template is not None:
        role_subnet = template.pod_subnet_id if plan.summary.get("role") == "pods" else template.vnet_subnet_id
    found = vnet.subnet(role_subnet) if vnet is not None and role_subnet else None
    current["template_subnet"] = found.id if found is not None else None
    pool = str(_param(plan, CREATE_AGENT_POOL.name, "pool") or "")
    other = pools.get(pool)
    current["agent_pool"] = pool if other is None or other.tags.get(PLAN_TAG) == plan.plan_id else f"{pool} (taken)"
    if space is not None:
        current["new_address_space"] = str(space)
    return current
