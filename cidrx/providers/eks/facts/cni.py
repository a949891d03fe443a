"""What the AWS VPC CNI is configured to do, read from the aws-node DaemonSet env or the managed add-on, and
what that means per node: max pods and the addresses a node's warm pool takes.

Analysis and planning both need the same answers (custom networking on? prefix delegation? warm pool
targets?), and both must agree on where the answer comes from: the DaemonSet env is what ipamd runs
with; the add-on's configurationValues is what EKS will write into it.

Upstream rules followed here (docs/cloud-facts.md, "EKS max pods and warm pools", has the commits):
- max pods as awslabs/amazon-eks-ami's max-pods-calculator.sh computes it: ENIs of the default network card
  only, lowered by MAX_ENI, one fewer with custom networking, × 16 per secondary slot with prefix delegation on
  Nitro only, capped at 110 (≤ 30 vCPUs) or 250 for the recommended value (what managed node groups use).
- the warm pool as ipamd fills it (aws/amazon-vpc-cni-k8s pkg/ipamd/ipamd.go `isDatastorePoolTooLow`,
  `datastoreTargetState`, `increaseDatastorePool`, `GetENIResourcesToAllocate`): each ENI it attaches also takes
  its own primary address from the subnet; replayed against docs/eni-and-ip-target.md and
  docs/prefix-and-ip-target.md in tests/providers/eks/test_maxpods_upstream.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from cidrx import netmath
from cidrx.model.kube import KubeSection
from cidrx.providers.eks.model import EksSection, InstanceType

CUSTOM_NETWORK = "AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG"
LABEL_DEF = "ENI_CONFIG_LABEL_DEF"
ANNOTATION_DEF = "ENI_CONFIG_ANNOTATION_DEF"
PREFIX_DELEGATION = "ENABLE_PREFIX_DELEGATION"
MAX_ENI = "MAX_ENI"
ZONE_LABEL = "topology.kubernetes.io/zone"


@dataclass(frozen=True)
class CniConfig:
    source: str  # "aws-node" | "addon" | "default"
    custom_networking: bool
    label_def: str
    prefix_delegation: bool
    warm_eni_target: int
    warm_ip_target: int | None  # None: unset or 0 (ipamd's `warmIPTargetsDefined` treats 0 as unset)
    minimum_ip_target: int | None  # likewise
    warm_prefix_target: int
    annotation_def: str = ""  # ENI_CONFIG_ANNOTATION_DEF as set ("" when unset)
    max_eni: int | None = None  # MAX_ENI when it is 1 or more (ipamd `getMaxENI` ignores anything else)

    @property
    def warm_ip_targets(self) -> bool:
        """WARM_IP_TARGET or MINIMUM_IP_TARGET set (ipamd then ignores WARM_ENI_TARGET / WARM_PREFIX_TARGET)."""
        return self.warm_ip_target is not None or self.minimum_ip_target is not None


def _flag(value: str | None) -> bool:
    return (value or "").strip().lower() == "true"


def _int(value: str | None, default: int | None) -> int | None:
    try:
        return int(value) if value not in (None, "") else default
    except ValueError:
        return default


def _positive(value: str | None) -> int | None:
    """A count ipamd uses only when it is 1 or more (WARM_IP_TARGET, MINIMUM_IP_TARGET, MAX_ENI)."""
    n = _int(value, None)
    return n if n is not None and n >= 1 else None


def addon_env(configuration_values: str) -> dict[str, str]:
    """The `env` map of a vpc-cni add-on's configurationValues (JSON; EKS also accepts YAML there)."""
    from cidrx.errors import InvalidInput
    from cidrx.providers.eks.facts.addon_schema import parse_configuration

    try:
        data = parse_configuration(configuration_values)
    except InvalidInput:
        return {}
    env = data.get("env")
    return {str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else {}


def cni_env(eks: EksSection, kube: KubeSection) -> tuple[dict[str, str], str]:
    """The VPC CNI's env and where it was read: aws-node's own env, else the add-on's configurationValues."""
    if kube.aws_node is not None:
        return {v.name: v.value for v in kube.aws_node.env}, "aws-node"
    if eks.vpc_cni_addon is not None and eks.vpc_cni_addon.configuration_values:
        return addon_env(eks.vpc_cni_addon.configuration_values), "addon"
    return {}, "default"


def cni_config(eks: EksSection, kube: KubeSection) -> CniConfig:
    env, source = cni_env(eks, kube)
    # Unset WARM_PREFIX_TARGET: ipamd's own default is 0 (pkg/ipamd/ipamd.go defaultWarmPrefixTarget), but the
    # DaemonSet manifest (config/master/aws-k8s-cni.yaml) and so the add-on set 1; aws-node's env is the truth.
    prefix_default = 0 if source == "aws-node" else 1
    return CniConfig(
        source=source,
        custom_networking=_flag(env.get(CUSTOM_NETWORK)),
        label_def=env.get(LABEL_DEF, ""),
        prefix_delegation=_flag(env.get(PREFIX_DELEGATION)),
        # ipamd's default is WARM_ENI_TARGET=1 (amazon-vpc-cni-k8s docs/eni-and-ip-target.md)
        warm_eni_target=max(0, _int(env.get("WARM_ENI_TARGET"), 1) or 0),
        warm_ip_target=_positive(env.get("WARM_IP_TARGET")),
        minimum_ip_target=_positive(env.get("MINIMUM_IP_TARGET")),
        warm_prefix_target=max(0, _int(env.get("WARM_PREFIX_TARGET"), prefix_default) or 0),
        annotation_def=env.get(ANNOTATION_DEF, ""),
        max_eni=_positive(env.get(MAX_ENI)),
    )


# --- max pods (awslabs/amazon-eks-ami max-pods-calculator.sh) ------------------------------------------


def cni_enis(itype: InstanceType, cni: CniConfig) -> int:
    """ENIs ipamd may attach to a node: the default network card's, lowered by MAX_ENI (ipamd `getMaxENI`)."""
    return min(itype.pod_enis, cni.max_eni) if cni.max_eni else itype.pod_enis


def prefix_delegation_counts(itype: InstanceType, cni: CniConfig) -> bool:
    """The calculator multiplies by 16 only on Nitro instances (`IS_NITRO`); elsewhere ipamd falls back to
    secondary IPs (ipamd.go `isConfigValid`)."""
    return cni.prefix_delegation and itype.hypervisor == "nitro"


def supports_prefixes(itype: InstanceType) -> bool:
    """ipamd assigns prefixes on Nitro and bare-metal instances only (pkg/awsutils/awsutils.go
    `IsPrefixDelegationSupported`); elsewhere it falls back to secondary IPs."""
    return itype.hypervisor == "nitro" or itype.bare_metal


def max_pods_allowed(itype: InstanceType, cni: CniConfig) -> int:
    """The most pods the VPC CNI can address on one node (the calculator's `--show-max-allowed`)."""
    return netmath.eni_max_pods(
        cni_enis(itype, cni),
        itype.ips_per_eni,
        prefix_delegation=prefix_delegation_counts(itype, cni),
        custom_networking=cni.custom_networking,
    )


def max_pods(itype: InstanceType, cni: CniConfig) -> int:
    """The recommended max pods: what the calculator prints and managed node groups set, with or without
    prefix delegation (110 up to 30 vCPUs, 250 above)."""
    return netmath.aws_recommended_max_pods(itype.vcpus, max_pods_allowed(itype, cni))


# --- the warm pool (aws/amazon-vpc-cni-k8s pkg/ipamd/ipamd.go) -----------------------------------------

PREFIX_SIZE = 16  # a /28 (datastore.GetPrefixDelegationDefaults)


@dataclass(frozen=True)
class WarmPool:
    """What ipamd holds on one node once it settles with `pods` pod addresses in use (IPv4, default card).

    `enis` are the ENIs that hold pod addresses: under custom networking the primary ENI holds none and is
    not counted. `slots` per ENI are secondary IPs, or /28 prefixes with prefix delegation.
    """

    slots: tuple[int, ...]
    prefix_delegation: bool
    primary_counted: bool  # the primary ENI is among `slots` (not under custom networking)

    @property
    def enis(self) -> int:
        return len(self.slots)

    @property
    def pod_addresses(self) -> int:
        return sum(self.slots) * (PREFIX_SIZE if self.prefix_delegation else 1)

    @property
    def subnet_addresses(self) -> int:
        """Addresses taken from the ENIs' subnet: each ENI's own primary address plus what it holds."""
        return self.enis + self.pod_addresses


def warm_pool(itype: InstanceType, cni: CniConfig, pods: int = 0, kubelet_max_pods: int | None = None) -> WarmPool:
    """Replay ipamd's reconcile loop (`updateIPPoolIfRequired`) until the pool is no longer too low.

    Each round: the pool is low (`isDatastorePoolTooLow`) → fill an ENI that has room (`tryAssignIPs` /
    `tryAssignPrefixes`) or attach one more (`tryAllocateENI`, up to MAX_ENI / the default card's limit).
    ipamd stops once its addresses reach the node's max pods (`stats.TotalIPs >= c.maxPods`).
    """
    pd = cni.prefix_delegation and supports_prefixes(itype)
    unit = PREFIX_SIZE if pd else 1
    per_eni = max(0, itype.ips_per_eni - 1)  # GetENIIPv4Limit: the primary address is not for pods
    max_enis = cni_enis(itype, cni)
    cap = kubelet_max_pods if kubelet_max_pods is not None else max_pods(itype, cni)
    warm_target = cni.warm_prefix_target if pd else cni.warm_eni_target
    chunk = PREFIX_SIZE if pd else per_eni
    # ENIs: the primary exists from the start; under custom networking it holds nothing (GetAllocatableENIs)
    slots = [0]
    usable = [not cni.custom_networking]
    for _ in range(4 * (max_enis + 1) * max(1, per_eni)):
        total = sum(slots) * unit
        available = total - pods
        if total >= cap or per_eni == 0:
            break
        if cni.warm_ip_targets:
            short = max((cni.warm_ip_target or 0) - available, (cni.minimum_ip_target or 0) - total, 0)
            if pd:
                short = -(-short // PREFIX_SIZE)
            if short <= 0:
                break
            wanted = max(1, short) if pd else short
        else:
            if not (available < chunk * warm_target or (warm_target == 0 and available <= 0)):
                break
            if pd:
                free_prefixes = sum(slots) - -(-pods // PREFIX_SIZE)
                wanted = max(1, warm_target - free_prefixes)
            else:
                wanted = per_eni
        room = [i for i, ok in enumerate(usable) if ok and slots[i] < per_eni]
        if room:
            i = room[0]
            slots[i] += min(per_eni - slots[i], wanted)
        elif len(slots) < max_enis:
            slots.append(min(wanted, per_eni))
            usable.append(True)
        else:
            break
    if cni.custom_networking:
        return WarmPool(tuple(slots[1:]), pd, primary_counted=False)
    return WarmPool(tuple(slots), pd, primary_counted=True)


def pod_ips_for_new_node(itype: InstanceType | None, cni: CniConfig) -> int:
    """Addresses ipamd takes from the pod subnet (the ENIConfig's under custom networking) as soon as a new
    node joins: its warm pool with no pods yet, and each secondary ENI's own primary address."""
    if itype is None:  # type unknown: one address (or prefix), on a secondary ENI under custom networking
        return (PREFIX_SIZE if cni.prefix_delegation else 1) + (1 if cni.custom_networking else 0)
    pool = warm_pool(itype, cni)
    return pool.subnet_addresses - (1 if pool.primary_counted else 0)


def node_ips_for_new_node(itype: InstanceType | None, cni: CniConfig) -> int:
    """Addresses a new node takes from its node subnet: its own primary address, plus the pod warm pool
    (and its ENIs' primary addresses) when pods share the node subnet (no custom networking)."""
    return 1 if cni.custom_networking else 1 + pod_ips_for_new_node(itype, cni)
