"""VPC CNI subnet discovery: which subnets ipamd may put a node's *new* ENIs in, and what that is worth.

Since VPC CNI v1.18 (`ENABLE_SUBNET_DISCOVERY`, on by default) ipamd creates a node's secondary ENIs in any
subnet of the node's VPC and AZ tagged `kubernetes.io/role/cni`, not only in the node's own subnet. The
tag rules changed between versions, so every rule here takes the installed version (aws-node's image tag,
else the managed add-on's version). Existing ENIs never move: a node at its ENI limit gains nothing, and
a new node still needs its own primary address in its node subnet. Pure: analysis and planning both use it
(its findings are cidrx.providers.eks.analyze.discovery's).

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
  lowers the instance type's limit when it is 1 or more); the limit is the default network card's
  (pkg/vpc/vpc_ip_resource_limit.go ENILimit).
- aws/karpenter-provider-aws pkg/providers/instancetype/types.go `ENILimitedPods`: Karpenter gives its nodes no
  more pods than the default card's ENIs less RESERVED_ENIS can address, so on its nodes the reserved slots
  are no headroom for pod addresses.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

from cidrx.model.kube import KubeSection
from cidrx.providers.eks.facts.cni import CniConfig, cni_env, supports_prefixes
from cidrx.providers.eks.model import EC2_NODE_CLASS, EksSection, InstanceType, Subnet

Version = tuple[int, int, int]

ENV = "ENABLE_SUBNET_DISCOVERY"
CLUSTER_NAME = "CLUSTER_NAME"
ROLE_TAG = "kubernetes.io/role/cni"
ROLE_INCLUDED = "1"
ROLE_EXCLUDED = "0"
# The version the aws-node manifests declare in the container env (aws/amazon-vpc-cni-k8s
# charts/aws-vpc-cni/values.yaml, env.VPC_CNI_VERSION).
VERSION_ENV = "VPC_CNI_VERSION"
FIRST = (1, 18, 0)  # ENABLE_SUBNET_DISCOVERY appears in v1.18.0
VALUES_MATTER = (1, 22, 0)  # from here `0` excludes and an empty value counts as untagged
CLUSTER_PREFIX_V1220 = "kubernetes.io/cluster/"
CLUSTER_PREFIX = "cni.networking.k8s.aws/cluster/"


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
    reserved_enis: int = 0  # Karpenter's RESERVED_ENIS
    karpenter_pools: tuple[str, ...] = ()  # NodePools whose nodes Karpenter launches (EC2NodeClass)

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
    """The running aws-node image's tag (what ipamd really is), else the VPC_CNI_VERSION env the upstream
    manifests and Helm chart set on aws-node (an image pinned by digest or mirrored under another tag still
    has it; see docs/cloud-facts.md), else the managed add-on's version."""
    if kube.aws_node is not None and kube.aws_node.image:
        v = parse_version(kube.aws_node.image)
        if v is not None:
            return v, f"aws-node image {kube.aws_node.image.rsplit('/', 1)[-1]}"
    declared = kube.aws_node.get(VERSION_ENV) if kube.aws_node is not None else None
    if declared:
        v = parse_version(declared)
        if v is not None:
            return v, f"aws-node env {VERSION_ENV}={declared}"
    if eks.vpc_cni_addon is not None and eks.vpc_cni_addon.version:
        v = parse_version(eks.vpc_cni_addon.version)
        if v is not None:
            return v, f"add-on {eks.vpc_cni_addon.name} {eks.vpc_cni_addon.version}"
    return None, ""


def discovery_state(eks: EksSection, kube: KubeSection, cni: CniConfig) -> DiscoveryState:
    env, source = cni_env(eks, kube)
    version, where = installed_version(eks, kube)
    return DiscoveryState(
        version=version,
        version_from=where,
        env_value=env.get(ENV),
        custom_networking=cni.custom_networking,
        cluster_name=env.get(CLUSTER_NAME, ""),
        max_eni=cni.max_eni,
        source=source,
        reserved_enis=(eks.provisioners.karpenter.reserved_enis or 0)
        if eks.provisioners is not None and eks.provisioners.karpenter is not None
        else 0,
        karpenter_pools=tuple(
            sorted(p.name for p in eks.provisioners.node_pools if p.node_class_kind == EC2_NODE_CLASS)
        )
        if eks.provisioners is not None
        else (),
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
        limit = min(itype.pod_enis, state.max_eni) if state.max_eni else itype.pod_enis
        if n.pool and n.pool in state.karpenter_pools:
            limit = max(0, limit - state.reserved_enis)
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
        prefixes = ips = 0
        for n in self.open_nodes:
            slots = n.free_slots * (n.instance_type.ips_per_eni - 1)
            if prefix_delegation and supports_prefixes(n.instance_type):
                prefixes += slots  # a /28 per slot
            else:
                ips += slots  # secondary IPs: no prefixes, or ipamd fell back on a non-Nitro node
        return min(min(16 * prefixes, 16 * free_28) + ips, self.free)


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
