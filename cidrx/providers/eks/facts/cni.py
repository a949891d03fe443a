"""What the AWS VPC CNI is configured to do, read from the aws-node DaemonSet env or the managed add-on.

Analysis and planning both need the same answers (custom networking on? prefix delegation? warm pool
targets?), and both must agree on where the answer comes from: the DaemonSet env is what ipamd runs
with; the add-on's configurationValues is what EKS will write into it.
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
ZONE_LABEL = "topology.kubernetes.io/zone"


@dataclass(frozen=True)
class CniConfig:
    source: str  # "aws-node" | "addon" | "default"
    custom_networking: bool
    label_def: str
    prefix_delegation: bool
    warm_eni_target: int
    warm_ip_target: int | None
    minimum_ip_target: int | None
    warm_prefix_target: int
    annotation_def: str = ""  # ENI_CONFIG_ANNOTATION_DEF as set ("" when unset)


def _flag(value: str | None) -> bool:
    return (value or "").strip().lower() == "true"


def _int(value: str | None, default: int | None) -> int | None:
    try:
        return int(value) if value not in (None, "") else default
    except ValueError:
        return default


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
    return CniConfig(
        source=source,
        custom_networking=_flag(env.get(CUSTOM_NETWORK)),
        label_def=env.get(LABEL_DEF, ""),
        prefix_delegation=_flag(env.get(PREFIX_DELEGATION)),
        # ipamd's default is WARM_ENI_TARGET=1 (amazon-vpc-cni-k8s docs/eni-and-ip-target.md)
        warm_eni_target=_int(env.get("WARM_ENI_TARGET"), 1) or 0,
        warm_ip_target=_int(env.get("WARM_IP_TARGET"), None),
        minimum_ip_target=_int(env.get("MINIMUM_IP_TARGET"), None),
        warm_prefix_target=_int(env.get("WARM_PREFIX_TARGET"), 1) or 0,
        annotation_def=env.get(ANNOTATION_DEF, ""),
    )


def max_pods(itype: InstanceType, cni: CniConfig) -> int:
    raw = netmath.eni_max_pods(
        itype.max_enis,
        itype.ips_per_eni,
        prefix_delegation=cni.prefix_delegation,
        custom_networking=cni.custom_networking,
    )
    return netmath.aws_recommended_max_pods(itype.vcpus, raw) if cni.prefix_delegation else raw


def pod_ips_for_new_node(itype: InstanceType | None, cni: CniConfig) -> int:
    """Pod addresses ipamd takes from the pod subnet as soon as a new node joins (its warm pool).

    Without warm IP targets ipamd fills whole ENIs: the primary ENI's secondary addresses, plus
    WARM_ENI_TARGET spare ENIs once pods land (amazon-vpc-cni-k8s docs/eni-and-ip-target.md).
    With prefix delegation it takes /28 prefixes (16 addresses each).
    """
    if cni.prefix_delegation:
        return 16 * max(1, cni.warm_prefix_target)
    if cni.warm_ip_target is not None or cni.minimum_ip_target is not None:
        return max(cni.warm_ip_target or 0, cni.minimum_ip_target or 0, 1)
    per_eni = (itype.ips_per_eni - 1) if itype else 1
    return per_eni * max(1, cni.warm_eni_target)


def node_ips_for_new_node(itype: InstanceType | None, cni: CniConfig) -> int:
    """Addresses a new node takes from its node subnet: its own primary address, plus the pod warm pool
    when pods share the node subnet (no custom networking)."""
    return 1 if cni.custom_networking else 1 + pod_ips_for_new_node(itype, cni)
