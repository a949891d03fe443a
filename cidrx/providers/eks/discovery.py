"""VPC CNI subnet discovery: which subnets ipamd may put a node's *new* ENIs in, and what that is worth.

Since VPC CNI v1.18 (`ENABLE_SUBNET_DISCOVERY`, on by default) ipamd creates a node's secondary ENIs in any
subnet of the node's VPC and AZ tagged `kubernetes.io/role/cni`, not only in the node's own subnet. The
tag rules changed between versions, so every rule here takes the installed version (aws-node's image tag,
else the managed add-on's version). Existing ENIs never move: a node at its ENI limit gains nothing, and
a new node still needs its own primary address in its node subnet. Pure: analysis and planning both use it.

Upstream (aws/amazon-vpc-cni-k8s; docs/cloud-facts.md has the details):
- pkg/awsutils/awsutils.go `validTag` at v1.21.2 (d441678ab9076a16831e7a4ef07fc7aa2c4cec0f): v1.18–v1.21
  count a subnet when the tag key is present, whatever its value.
- pkg/awsutils/awsutils.go `isSubnetValidForENICreation` and `ValidSubnetTagsMatchingClusterName` at
  b52188387f2e2f10bf289ace929d6a63b176a4fa (v1.23.1): the value `0` excludes, an empty value counts as
  untagged, and when aws-node's `CLUSTER_NAME` is set a subnet carrying cluster tags is used only by the
  cluster whose tag it carries. The cluster tag prefix is `kubernetes.io/cluster/` in v1.22.0
  (e97bfe7e51cc496113b037f6f661c8046d7e4ddc) and `cni.networking.k8s.aws/cluster/` from v1.22.1
  (5359e6b0ffaedae2bb831dceeea0337891c6f2ad).
- pkg/ipamd/ipamd.go `UseSubnetDiscovery` (Go strconv.ParseBool, default true) and `getMaxENI` (MAX_ENI
  lowers the instance type's limit when it is 1 or more).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, replace

from cidrx import netmath
from cidrx.kube.model import KubeSection
from cidrx.model.findings import Capacity, Finding, FindingKind, Severity, utilization
from cidrx.providers.eks.cni import CniConfig, cni_env
from cidrx.providers.eks.model import EksSection, InstanceType, Subnet

Version = tuple[int, int, int]

ENV = "ENABLE_SUBNET_DISCOVERY"
CLUSTER_NAME = "CLUSTER_NAME"
MAX_ENI = "MAX_ENI"
ROLE_TAG = "kubernetes.io/role/cni"
ROLE_INCLUDED = "1"
ROLE_EXCLUDED = "0"
FIRST = (1, 18, 0)  # ENABLE_SUBNET_DISCOVERY appears in v1.18.0
VALUES_MATTER = (1, 22, 0)  # from here `0` excludes and an empty value counts as untagged
CLUSTER_PREFIX_V1220 = "kubernetes.io/cluster/"
CLUSTER_PREFIX = "cni.networking.k8s.aws/cluster/"

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


def parse_version(text: str) -> Version | None:
    """`v1.18.1-eksbuild.1`, or an image `...amazon-k8s-cni:v1.18.1-eksbuild.1` (a digest suffix is ignored)."""
    tag = text.split("@", 1)[0].rsplit("/", 1)[-1]
    tag = tag.split(":", 1)[1] if ":" in tag else tag
    m = re.match(r"v?(\d+)\.(\d+)\.(\d+)", tag)
    return (int(m[1]), int(m[2]), int(m[3])) if m else None


def version_text(v: Version) -> str:
    return "v{}.{}.{}".format(*v)


def _go_bool(value: str | None, default: bool) -> bool:
    """Go's strconv.ParseBool, as ipamd reads boolean env vars; anything else keeps the default."""
    if value in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if value in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    return default


@dataclass(frozen=True)
class DiscoveryState:
    """What the installed VPC CNI does about subnet discovery."""

    version: Version | None
    version_from: str  # e.g. "aws-node image amazon-k8s-cni:v1.18.1", "" when unknown
    env_value: str | None  # ENABLE_SUBNET_DISCOVERY as set, None when unset (default on)
    custom_networking: bool
    cluster_name: str  # aws-node CLUSTER_NAME ("" when unset)
    max_eni: int | None  # MAX_ENI when it lowers the limit (>= 1)
    source: str  # where the env was read ("aws-node" | "addon" | "default")

    @property
    def supported(self) -> bool:
        return self.version is not None and self.version >= FIRST

    @property
    def env_on(self) -> bool:
        return _go_bool(self.env_value, True)

    @property
    def active(self) -> bool:
        """ipamd places new ENIs in tagged subnets (custom networking takes precedence over discovery)."""
        return self.supported and self.env_on and not self.custom_networking


def installed_version(eks: EksSection, kube: KubeSection) -> tuple[Version | None, str]:
    """The running aws-node image's tag (what ipamd really is), else the managed add-on's version."""
    if kube.aws_node is not None and kube.aws_node.image:
        v = parse_version(kube.aws_node.image)
        if v is not None:
            return v, f"aws-node image {kube.aws_node.image.rsplit('/', 1)[-1]}"
    if eks.vpc_cni_addon is not None and eks.vpc_cni_addon.version:
        v = parse_version(eks.vpc_cni_addon.version)
        if v is not None:
            return v, f"add-on {eks.vpc_cni_addon.name} {eks.vpc_cni_addon.version}"
    return None, ""


def discovery_state(eks: EksSection, kube: KubeSection, cni: CniConfig) -> DiscoveryState:
    env, source = cni_env(eks, kube)
    version, where = installed_version(eks, kube)
    try:
        max_eni: int | None = int(env.get(MAX_ENI, ""))
    except ValueError:
        max_eni = None
    return DiscoveryState(
        version=version,
        version_from=where,
        env_value=env.get(ENV),
        custom_networking=cni.custom_networking,
        cluster_name=env.get(CLUSTER_NAME, ""),
        max_eni=max_eni if max_eni is not None and max_eni >= 1 else None,
        source=source,
    )


def tag_verdict(tags: dict[str, str], state: DiscoveryState) -> tuple[bool, str]:
    """(ipamd of this version may put another node's new ENIs in a subnet with these tags, why not)."""
    if ROLE_TAG not in tags:
        return False, "not tagged"
    version = state.version or FIRST
    if version < VALUES_MATTER:
        return True, ""  # v1.18-v1.21 `validTag`: the key alone counts
    value = tags[ROLE_TAG]
    if value == ROLE_EXCLUDED:
        return False, f"{ROLE_TAG}=0 excludes it"
    if value == "":
        return False, f"{ROLE_TAG} has an empty value, which {version_text(version)} treats as untagged"
    if state.cluster_name:
        prefix = CLUSTER_PREFIX_V1220 if version < (1, 22, 1) else CLUSTER_PREFIX
        keys = sorted(k for k in tags if k.startswith(prefix))
        if keys and f"{prefix}{state.cluster_name}" not in keys:
            return False, f"it is restricted to another cluster ({keys[0]}; CLUSTER_NAME={state.cluster_name})"
    return True, ""


@dataclass(frozen=True)
class NodeHeadroom:
    node: str
    zone: str
    instance_type: InstanceType
    enis: int
    max_enis: int

    @property
    def free_slots(self) -> int:
        return max(0, self.max_enis - self.enis)


def node_headroom(eks: EksSection, kube: KubeSection, state: DiscoveryState) -> list[NodeHeadroom]:
    """Nodes whose attached ENIs are known (matched to their primary ENI by InternalIP), with their limit."""
    by_ip = {i.primary_ip: i for i in eks.instance_enis if i.primary_ip}
    types = {t.name: t for t in eks.instance_types}
    out = []
    for n in sorted(kube.nodes, key=lambda n: n.name):
        found, itype = by_ip.get(n.internal_ip), types.get(n.instance_type)
        if found is None or itype is None:
            continue
        limit = min(itype.max_enis, state.max_eni) if state.max_eni else itype.max_enis
        out.append(NodeHeadroom(n.name, n.zone, itype, found.enis, limit))
    return out


@dataclass(frozen=True)
class ZoneDiscovery:
    """One AZ in use: its usable tagged subnets, the tagged ones ipamd ignores, and its nodes' headroom."""

    az: str
    subnets: tuple[Subnet, ...]
    ignored: tuple[tuple[Subnet, str], ...]
    nodes: tuple[NodeHeadroom, ...]
    headroom_known: bool

    @property
    def free(self) -> int:
        return sum(s.available_ips for s in self.subnets)

    @property
    def open_nodes(self) -> tuple[NodeHeadroom, ...]:
        return tuple(n for n in self.nodes if n.free_slots)

    @property
    def full_nodes(self) -> tuple[NodeHeadroom, ...]:
        return tuple(n for n in self.nodes if not n.free_slots)

    def reachable(self, free_28: int, prefix_delegation: bool) -> int:
        """Pod addresses the nodes that can still attach ENIs could take from the tagged subnets."""
        if prefix_delegation:
            slots = sum(n.free_slots * (n.instance_type.ips_per_eni - 1) * 16 for n in self.open_nodes)
            return min(slots, 16 * free_28)
        slots = sum(n.free_slots * (n.instance_type.ips_per_eni - 1) for n in self.open_nodes)
        return min(slots, self.free)


def zones_in_use(eks: EksSection, kube: KubeSection, node_subnets: set[str]) -> list[str]:
    zones = {s.az for s in eks.subnets if s.subnet_id in node_subnets}
    return sorted(zones | {n.zone for n in kube.nodes if n.zone})


def by_zone(eks: EksSection, kube: KubeSection, state: DiscoveryState, node_subnets: set[str]) -> list[ZoneDiscovery]:
    """Per AZ in use: the tagged subnets other than the node subnets (those are counted already)."""
    heads = node_headroom(eks, kube, state)
    per_zone: dict[str, list[NodeHeadroom]] = defaultdict(list)
    for h in heads:
        per_zone[h.zone].append(h)
    out = []
    for az in zones_in_use(eks, kube, node_subnets):
        good: list[Subnet] = []
        bad: list[tuple[Subnet, str]] = []
        for s in eks.subnets:
            if s.az != az or ROLE_TAG not in s.tags or s.subnet_id in node_subnets:
                continue
            ok, why = tag_verdict(s.tags, state)
            if ok:
                good.append(s)
            else:
                bad.append((s, why))
        out.append(ZoneDiscovery(az, tuple(good), tuple(bad), tuple(per_zone.get(az, ())), bool(heads)))
    return out


def relieves(zone: ZoneDiscovery | None, state: DiscoveryState) -> bool:
    """New ENIs of this zone's nodes can go to a tagged subnet with room."""
    return zone is not None and state.active and zone.free > 0


def relieved_need(
    need_node: int, roles: tuple[str, ...], zone: ZoneDiscovery | None, state: DiscoveryState
) -> tuple[int, tuple[str, ...]]:
    """With discovery subnets that have room, a new node needs only its own primary address from its node
    subnet (ipamd adds ENIs in the tagged subnets when the node subnet cannot give the primary ENI more)."""
    if need_node <= 1 or not relieves(zone, state):
        return need_node, roles
    return 1, tuple(r for r in roles if r != "pods")


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


def reworded(findings: list[Finding], state: DiscoveryState) -> list[Finding]:
    """Where subnet discovery is the default strategy, remediations that name the expand plan describe it."""
    from cidrx.providers.eks.analyze import EKS_PREFIX_DELEGATION_NOT_ENOUGH, EKS_SUBNET_EXHAUSTED

    if not state.supported or state.custom_networking:
        return findings
    fixes = {
        EKS_SUBNET_EXHAUSTED.id: "Add pod address space: `{EXPAND}` (subnet discovery: a subnet per AZ tagged "
        f"{ROLE_TAG}=1 for new ENIs; new nodes still need a free address in their node subnet).",
        EKS_PREFIX_DELEGATION_NOT_ENOUGH.id: "Add tagged subnets for subnet discovery (the default expand strategy "
        "here), or use custom networking with a secondary CIDR.",
    }
    return [replace(f, remediation=fixes.get(f.id, f.remediation)) for f in findings]
