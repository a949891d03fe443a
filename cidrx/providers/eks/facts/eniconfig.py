"""Which ENIConfig each node gets, decided exactly as the AWS VPC CNI's ipamd decides it, and which security
groups a new ENIConfig carries.

Why it exists: findings about missing or wrong ENIConfigs are only true if they follow ipamd's rule, and that
rule is not "the ENIConfig named after the node's zone": ipamd reads the label
`vpc.amazonaws.com/externalEniConfig`, then the node annotation named by ENI_CONFIG_ANNOTATION_DEF, then the
node label named by ENI_CONFIG_LABEL_DEF (both default to `k8s.amazonaws.com/eniConfig`), and falls back to
the ENIConfig named `default` (aws/amazon-vpc-cni-k8s pkg/eniconfig/eniconfig.go @
b52188387f2e2f10bf289ace929d6a63b176a4fa, GetNodeSpecificENIConfigName). A key that is present with an empty
value is taken as it is (Go's `value, ok := map[key]`), so ipamd then asks for an ENIConfig named "" and finds
none. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from cidrx.errors import InvalidInput
from cidrx.model.kube import KubeNode, KubeSection
from cidrx.providers.eks.collect.cluster import (
    ENICONFIG_ANNOTATION_ENV,
    ENICONFIG_DEFAULT_KEY,
    ENICONFIG_EXTERNAL_LABEL,
    ENICONFIG_LABEL_ENV,
    eniconfig_keys,
)
from cidrx.providers.eks.facts.cni import ZONE_LABEL, CniConfig
from cidrx.providers.eks.model import EksSection

DEFAULT_ENICONFIG = "default"


@dataclass(frozen=True)
class Selection:
    """The ENIConfig name ipamd asks for, and the rule that produced it (for evidence)."""

    name: str
    rule: str


def select(
    labels: Mapping[str, str], annotations: Mapping[str, str], *, annotation_def: str = "", label_def: str = ""
) -> Selection:
    """GetNodeSpecificENIConfigName for a node with these labels/annotations and this aws-node env
    (`annotation_def`/`label_def`: ENI_CONFIG_ANNOTATION_DEF / ENI_CONFIG_LABEL_DEF as set, "" when unset)."""
    annotation_key, label_key = eniconfig_keys(
        {ENICONFIG_ANNOTATION_ENV: annotation_def, ENICONFIG_LABEL_ENV: label_def}
    )
    if ENICONFIG_EXTERNAL_LABEL in labels:
        return Selection(labels[ENICONFIG_EXTERNAL_LABEL], f"label {ENICONFIG_EXTERNAL_LABEL}")
    if annotation_key in annotations:
        return Selection(annotations[annotation_key], f"annotation {annotation_key}")
    if label_key in labels:
        return Selection(labels[label_key], f"label {label_key} (ENI_CONFIG_LABEL_DEF)")
    unset = "is not set" if not label_def else f"is {label_def}"
    return Selection(
        DEFAULT_ENICONFIG,
        f"no label {ENICONFIG_EXTERNAL_LABEL}, no annotation {annotation_key}, no label {label_key} "
        f"(ENI_CONFIG_LABEL_DEF {unset}): ipamd falls back to {DEFAULT_ENICONFIG!r}",
    )


def node_labels(kube: KubeSection, node: KubeNode) -> dict[str, str]:
    """The node's labels ipamd may read. Snapshots made before these were kept carry none: the node's zone
    stands in for the zone label (the only label cidrx ever told ipamd to read)."""
    labels = dict(kube.node_eniconfig_labels.get(node.name) or {})
    if not kube.node_eniconfig_labels and node.zone:
        labels[ZONE_LABEL] = node.zone
    return labels


def node_selection(kube: KubeSection, node: KubeNode, cni: CniConfig) -> Selection:
    annotations = kube.node_eniconfig_annotations.get(node.name) or {}
    return select(node_labels(kube, node), annotations, annotation_def=cni.annotation_def, label_def=cni.label_def)


def new_node_selection(zone: str, labels: Mapping[str, str], cni: CniConfig) -> Selection:
    """What a node that joins in `zone` with `labels` (its provisioner's) would get; nodes join unannotated."""
    return select({ZONE_LABEL: zone, **labels}, {}, annotation_def=cni.annotation_def, label_def=cni.label_def)


def zone_named_unselected(names: list[str], zones: list[str], cni: CniConfig) -> bool:
    """ENIConfigs named after zones exist but ipamd does not look at the zone label: the classic setup mistake."""
    key = cni.label_def or ENICONFIG_DEFAULT_KEY
    return key != ZONE_LABEL and any(n in zones for n in names)


def security_groups(eks: EksSection) -> tuple[list[str], str]:
    """The security groups of an ENIConfig cidrx writes, and where they come from: the cluster security group,
    else the cluster's security groups, else the security groups of the nodes' primary ENIs.

    ipamd gives pod ENIs the ENIConfig's groups whenever the list is non-empty (pkg/awsutils/awsutils.go
    createENIUsingCustomCfg), so `['']` makes CreateNetworkInterface fail on every node: never write one.
    """
    if eks.cluster.cluster_security_group_id:
        return [eks.cluster.cluster_security_group_id], "cluster security group"
    listed = [g for g in eks.cluster.security_group_ids if g]
    if listed:
        return sorted(dict.fromkeys(listed)), "the cluster's security groups (EKS reports no cluster security group)"
    nodes = [g for g in eks.node_security_groups or () if g]
    if nodes:
        return sorted(dict.fromkeys(nodes)), "the security groups of the nodes' primary ENIs"
    raise InvalidInput(
        f"cannot tell which security groups pod ENIs of cluster {eks.cluster.name} should use: EKS reports no "
        "cluster security group, the cluster lists no security groups and no node's primary ENI was found",
        hint="check the cluster in the EKS console (resourcesVpcConfig), or create the ENIConfigs by hand",
    )
