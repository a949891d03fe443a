"""The basis of the GKE plan kinds (node-pool, cluster-range), re-read from a fresh snapshot for
cidrx.engine.basis to compare key by key.

Why it exists: a plan promises that apply refuses it if any basis fact changed. What the plan itself did is
discounted: its secondary range on the subnet (and the new subnet fingerprint that write brings), its range in
the cluster's list, its CIDR in the firewall rules and the ip-masq-agent ConfigMap, its labelled node pool.
The range the plan adds is read from its own step, so a basis re-signed by hand that disagrees is refused.
The subnet's fingerprint is not a basis fact: its ranges are, and the subnet step sends the fingerprint it
reads just before its write (GCE refuses a stale one with 412).
"""

from __future__ import annotations

from typing import Any

from cidrx import netmath
from cidrx.model.plan import Plan
from cidrx.model.snapshot import Snapshot
from cidrx.providers.gke.actions.firewall import ADD_FIREWALL_RANGE
from cidrx.providers.gke.actions.node_pool import CREATE_NODE_POOL
from cidrx.providers.gke.actions.subnet_ranges import ADD_SECONDARY_RANGE
from cidrx.providers.gke.facts.masquerade import review_ip_masq
from cidrx.providers.gke.facts.occupied import short_region
from cidrx.providers.gke.facts.pool_copy import PLAN_LABEL, labels
from cidrx.providers.gke.strategies.pod_range import gke_section


def _added(plan: Plan) -> tuple[str, str]:
    """(range name, CIDR) of the plan's add-secondary-range step."""
    step = next((s for s in plan.steps if s.action == ADD_SECONDARY_RANGE.name), None)
    if step is None:
        return "", ""
    return str(step.params.get("range_name", "")), str(step.params.get("cidr", ""))


def pod_range(plan: Plan, snapshot: Snapshot) -> dict[str, Any]:
    gke = gke_section(snapshot)
    b = plan.basis
    c, subnet = gke.cluster, gke.subnet
    range_name, cidr = _added(plan)
    now = {r.range_name: r.ip_cidr_range for r in subnet.secondary_ranges}
    ours = range_name not in (b.get("subnet_ranges") or {}) and now.get(range_name) == cidr
    current: dict[str, Any] = {
        "network": c.network,
        "network_project": gke.network_project or "",
        "subnet_region": short_region(subnet.region),
        "subnet": subnet.name,
        "subnet_ranges": {k: v for k, v in now.items() if not (ours and k == range_name)},
        "cidr": cidr,
        "range_name": range_name,
        "template_pool": b.get("template_pool") if b.get("template_pool") in {p.name for p in gke.node_pools} else "",
        "cluster_pod_ranges": [i.range_name for i in c.additional_pod_ranges if i.range_name != range_name],
    }
    rules = {r.name: r for r in gke.firewalls or ()}
    widened = [str(s.params.get("firewall")) for s in plan.steps if s.action == ADD_FIREWALL_RANGE.name]
    # Unread firewalls (None) cannot show the rules the plan widens: that is drift, not a pass.
    current["firewalls"] = (
        None
        if gke.firewalls is None
        else {name: [r for r in rules[name].ranges if r != cidr] for name in widened if name in rules}
    )
    if cidr:
        masq = review_ip_masq(snapshot.kube, netmath.parse_cidr(cidr))
        seen = None if masq is None or masq.config_map is None else [x for x in masq.cidrs if x != cidr]
        current["ip_masq_agent"] = seen
    wanted = next(
        (
            str((s.params.get("node_pool") or {}).get("name", ""))
            for s in plan.steps
            if s.action == CREATE_NODE_POOL.name
        ),
        "",
    )
    taken = next((p for p in gke.node_pools if p.name == wanted), None)
    if wanted:
        mine = taken is None or labels(taken).get(PLAN_LABEL) == plan.plan_id
        current["node_pool_name"] = wanted if mine else f"{wanted} (taken)"
    return current
