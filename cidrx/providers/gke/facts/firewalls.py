"""VPC firewall rules that must learn a new pod range, so pods in it are let through like the others.

Why: GKE's own `gke-<cluster>-<hash>-all` rule (and often user rules) allow traffic *from the pod range*
(sourceRanges) to the nodes' tag (GKE "Automatically created firewall rules"; the real rules in
GoogleCloudPlatform/gcpdiag test-data/gke1/json-dumps/compute-effective-firewalls-default.json at
06ec8584ec5919df53a4e6841ad2ad74a5f045b2 carry the cluster's pod CIDR as their only source range). A
node pool on a new range whose pods are not in those rules gets pod-to-pod traffic across nodes dropped.

Which rules: a rule one of whose ranges (sourceRanges for INGRESS, destinationRanges for EGRESS) equals a
pod range of the cluster or lies inside one names the pods: it gets the new range, allow and deny rules
alike, so new pods are treated as the old ones are. A broader range that merely contains a pod range
(10.0.0.0/8) is a statement about more than pods: cidrx does not widen it, and says so when it does not
cover the new range. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from ipaddress import IPv4Network, ip_network

from cidrx.providers.gke.model import FirewallRule, GkeSection


def _v4(text: str) -> IPv4Network | None:
    try:
        net = ip_network(text.strip(), strict=False)
    except ValueError:
        return None
    return net if isinstance(net, IPv4Network) else None


def pod_cidrs(gke: GkeSection) -> list[IPv4Network]:
    """Every pod range of the cluster: its default range, its node pools' and its additional ranges."""
    by_name = {r.range_name: r.ip_cidr_range for r in gke.subnet.secondary_ranges}
    texts = [gke.cluster.pod_cidr, *(p.pod_cidr for p in gke.node_pools)]
    texts += [by_name.get(p.pod_range, "") for p in gke.node_pools]
    texts += [by_name.get(r.range_name, "") for r in gke.cluster.additional_pod_ranges]
    nets = {n for n in (_v4(t) for t in texts if t) if n is not None and n.prefixlen > 0}
    return sorted(nets)


@dataclass(frozen=True)
class FirewallReview:
    """What the plan does about firewall rules for a new pod range."""

    widen: tuple[FirewallRule, ...]  # rules that name a pod range and not yet the new one: patched
    broad: tuple[FirewallRule, ...]  # rules that contain a pod range in a broader range missing the new one
    covered: tuple[FirewallRule, ...]  # rules that name a pod range and already cover the new range


def _covers(ranges: Iterable[str], net: IPv4Network) -> bool:
    return any(r is not None and net.subnet_of(r) for r in (_v4(t) for t in ranges))


def review(gke: GkeSection, new: IPv4Network) -> FirewallReview | None:
    """None when the snapshot holds no firewall rules (taken before cidrx read them)."""
    if gke.firewalls is None:
        return None
    pods = pod_cidrs(gke)
    widen: list[FirewallRule] = []
    broad: list[FirewallRule] = []
    covered: list[FirewallRule] = []
    for rule in gke.firewalls:
        nets = [n for n in (_v4(t) for t in rule.ranges) if n is not None and n.prefixlen > 0]
        names_pods = any(n.subnet_of(p) for n in nets for p in pods)
        contains_pods = any(p.subnet_of(n) and n not in pods for n in nets for p in pods)
        if not (names_pods or contains_pods):
            continue
        if _covers(rule.ranges, new):
            covered.append(rule)
        elif names_pods:
            widen.append(rule)
        else:
            broad.append(rule)
    return FirewallReview(tuple(widen), tuple(broad), tuple(covered))


def note(found: FirewallReview | None, new: IPv4Network, old: str) -> str:
    """The plan's note on firewall rules."""
    if found is None:
        return (
            f"Firewall rules (and on-premises ACLs) naming the pod range {old} need {new} as well "
            "(this snapshot holds no firewall rules; take a new one to have cidrx plan it)."
        )
    parts = []
    if found.widen:
        names = ", ".join(r.name for r in found.widen)
        parts.append(f"cidrx adds {new} to the firewall rules that name a pod range: {names}.")
    else:
        parts.append(f"No firewall rule of the network names a pod range without covering {new} already.")
    for r in found.broad:
        parts.append(
            f"Firewall rule {r.name} ({r.action}, {r.direction}, {', '.join(r.ranges)}) covers today's pods but "
            f"not {new}; cidrx does not widen a range broader than the pods: if the rule is meant for pods, add "
            f"{new} (gcloud compute firewall-rules update {r.name} --project {r.project} "
            f"--{'destination' if r.direction == 'EGRESS' else 'source'}-ranges=<its ranges>,{new})."
        )
    parts.append(f"On-premises ACLs and firewall policies naming {old} need {new} as well.")
    return " ".join(parts)
