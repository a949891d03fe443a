"""Findings and capacity rows of VPC CNI subnet discovery: tagged subnets that are ignored, missing or
out of reach of nodes at their ENI limit (the rules are cidrx.providers.eks.facts.discovery's).
"""

from __future__ import annotations

from cidrx import netmath
from cidrx.model.findings import Capacity, Finding, FindingKind, Severity, utilization
from cidrx.model.kube import KubeSection
from cidrx.providers.eks.facts.discovery import (
    CLUSTER_PREFIX,
    CLUSTER_PREFIX_V1220,
    ENV,
    ROLE_EXCLUDED,
    ROLE_TAG,
    VALUES_MATTER,
    DiscoveryState,
    ZoneDiscovery,
    version_text,
)
from cidrx.providers.eks.model import EksSection, Subnet

EKS_SUBNET_DISCOVERY_NODES_AT_ENI_LIMIT = FindingKind.parse(
    """EKS-SUBNET-DISCOVERY-NODES-AT-ENI-LIMIT (warning): Subnets tagged for VPC CNI subnet discovery have
    free addresses, but nodes in that zone already have every ENI they can attach: only new ENIs use tagged
    subnets, so these nodes gain nothing (new nodes do)."""
)


EKS_SUBNET_DISCOVERY_NO_SUBNETS = FindingKind.parse(
    """EKS-SUBNET-DISCOVERY-NO-SUBNETS (info): The VPC CNI supports subnet discovery but no subnet in a zone the
    cluster uses is tagged `kubernetes.io/role/cni`, so new ENIs can only use the (tight) node subnets."""
)


EKS_SUBNET_DISCOVERY_OFF = FindingKind.parse(
    """EKS-SUBNET-DISCOVERY-OFF (warning or info): Subnets are tagged for subnet discovery but the VPC CNI will
    not use them: ENABLE_SUBNET_DISCOVERY is off (warning), custom networking takes precedence or the
    installed VPC CNI predates v1.18 (info)."""
)


EKS_SUBNET_DISCOVERY_TAG_IGNORED = FindingKind.parse(
    """EKS-SUBNET-DISCOVERY-TAG-IGNORED (warning): A subnet's `kubernetes.io/role/cni` tag does not do what it
    says for the installed VPC CNI version: an empty value (ignored from v1.22), `0` (still used before
    v1.22), or a cluster restriction that excludes this cluster."""
)


KINDS = FindingKind.all_in(globals())


MAX_EVIDENCE = 6


def findings(
    eks: EksSection, kube: KubeSection, state: DiscoveryState, zones: list[ZoneDiscovery], tight: bool, expand: str
) -> list[Finding]:
    out: list[Finding] = []
    tagged = [s for z in zones for s in z.subnets]
    version = version_text(state.version) if state.version else "unknown"
    if tagged and not state.active:
        if not state.supported:
            why, severity = f"the installed VPC CNI ({version}) predates subnet discovery (v1.18)", Severity.INFO
            fix = "Upgrade the VPC CNI to v1.18 or later so ipamd uses the tagged subnets for new ENIs."
            if state.version is None:
                why = "the installed VPC CNI version is unknown (no aws-node image or add-on version)"
        elif state.custom_networking:
            why, severity = "custom networking is on, and ipamd then places ENIs by ENIConfig only", Severity.INFO
            fix = "Nothing to do while custom networking is the chosen setup; untag the subnets to avoid confusion."
        else:
            why, severity = f"{ENV}={state.env_value} ({state.source})", Severity.WARNING
            fix = f"Remove {ENV} or set it to true on aws-node (the vpc-cni add-on when managed)."
        out.append(
            EKS_SUBNET_DISCOVERY_OFF.finding(
                severity,
                "aws-node",
                f"{len(tagged)} subnet(s) are tagged {ROLE_TAG} but the VPC CNI does not use them: {why}",
                tuple(f"{_label(s)} in {s.az}: {s.available_ips} free" for s in tagged[:MAX_EVIDENCE]),
                fix,
            )
        )
    for z in zones:
        for s, why in z.ignored:
            if why.startswith(f"{ROLE_TAG}=0"):
                continue  # the owner's deliberate exclusion, obeyed
            out.append(
                EKS_SUBNET_DISCOVERY_TAG_IGNORED.finding(
                    Severity.WARNING,
                    _label(s),
                    f"VPC CNI {version} will not use {s.cidr} in {s.az}: {why}",
                    (f"tags: {', '.join(f'{k}={v!r}' for k, v in sorted(s.tags.items()) if _cni_tag(k))}",),
                    f"Tag the subnet {ROLE_TAG}=1 (and, with CLUSTER_NAME set, {CLUSTER_PREFIX}<cluster>) to use it.",
                )
            )
    if state.version is not None and state.version < VALUES_MATTER:
        for z in zones:
            for s in z.subnets:
                if s.tags.get(ROLE_TAG) == ROLE_EXCLUDED:
                    out.append(
                        EKS_SUBNET_DISCOVERY_TAG_IGNORED.finding(
                            Severity.WARNING,
                            _label(s),
                            f"{s.cidr} is tagged {ROLE_TAG}=0 but VPC CNI {version} uses it anyway "
                            "(before v1.22 only the tag key counts)",
                            (f"{_label(s)}: {s.available_ips} free",),
                            f"Remove the {ROLE_TAG} tag to keep ENIs out of this subnet, or upgrade to v1.22+.",
                        )
                    )
    if not state.active:
        return out
    for z in zones:
        if z.free <= 0 or not z.headroom_known or not z.full_nodes:
            continue
        all_full = not z.open_nodes
        out.append(
            EKS_SUBNET_DISCOVERY_NODES_AT_ENI_LIMIT.finding(
                Severity.WARNING,
                z.az,
                f"tagged subnets in {z.az} have {z.free} free addresses but {len(z.full_nodes)} of {len(z.nodes)} "
                f"node(s) there are at their ENI limit and gain nothing"
                + (": only new nodes can use them" if all_full else ""),
                tuple(
                    f"{n.node} ({n.instance_type.name}): {n.enis} of {n.max_enis} ENIs attached"
                    for n in z.full_nodes[:MAX_EVIDENCE]
                ),
                "New ENIs go to tagged subnets, existing ones never move: scale up (new nodes need a free address "
                "in their node subnet) or replace these nodes; see `" + expand + "`.",
            )
        )
    bare = [z.az for z in zones if not z.subnets]
    if bare and tight:
        out.append(
            EKS_SUBNET_DISCOVERY_NO_SUBNETS.finding(
                Severity.INFO,
                "subnet discovery",
                f"VPC CNI {version} can place new ENIs in tagged subnets, but {', '.join(bare)} "
                f"{'has' if len(bare) == 1 else 'have'} none",
                (f"{ENV} is {'unset (on by default)' if state.env_value is None else state.env_value}",),
                f"Add a subnet tagged {ROLE_TAG}=1 in each zone: `{expand} --strategy subnet-discovery`.",
            )
        )
    return out


def _cni_tag(key: str) -> bool:
    return key == ROLE_TAG or key.startswith((CLUSTER_PREFIX, CLUSTER_PREFIX_V1220))


def _label(s: Subnet) -> str:
    name = s.tags.get("Name")
    return f"{s.subnet_id} ({name})" if name else s.subnet_id


def capacity(zones: list[ZoneDiscovery], free_28: dict[str, int], state: DiscoveryState, pd: bool) -> list[Capacity]:
    """The usable tagged subnets as pod address space, with how much of it nodes can still reach."""
    out = []
    for z in zones:
        reach = z.reachable(sum(free_28.get(s.subnet_id, 0) for s in z.subnets), pd) if z.headroom_known else None
        for s in z.subnets:
            size = s.available_ips + _used(s)
            room = (
                f"{len(z.open_nodes)} of {len(z.nodes)} node(s) in {z.az} can still attach ENIs"
                if z.headroom_known
                else "ENI headroom of the nodes unknown"
            )
            state_note = "" if state.active else "; not used: subnet discovery is off"
            extra: dict[str, float] = {"nodes_with_free_eni_slots": float(len(z.open_nodes))}
            if reach is not None:
                extra["pod_addresses_reachable"] = float(reach)
            out.append(
                Capacity(
                    kind="subnet",
                    name=_label(s),
                    cidr=s.cidr,
                    size=size,
                    used=_used(s),
                    free=s.available_ips,
                    utilization=utilization(_used(s), size),
                    zone=s.az,
                    note=f"pods (subnet discovery); free /28: {free_28.get(s.subnet_id, 0)}; {room}{state_note}",
                    extra=extra,
                )
            )
    return out


def _used(s: Subnet) -> int:
    usable = netmath.parse_cidr(s.cidr).num_addresses - netmath.AWS_RESERVED_PER_SUBNET
    return max(0, usable - s.available_ips)
