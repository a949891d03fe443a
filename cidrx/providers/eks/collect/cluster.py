"""What EKS reads from the cluster itself: the VPC CNI's aws-node settings, the ENIConfigs, and the node
labels and annotations ipamd picks a node's ENIConfig by.

The cluster collector (cidrx.kube.collect) reads nodes, pods and events the same way for every provider and
asks this module (the provider's `kube_collect` and `kube_fields`) for the rest, so the shared layer names
nothing of the AWS VPC CNI.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cidrx.model.kube import WorkloadEnv
from cidrx.model.validation import first_problem, repeated

if TYPE_CHECKING:
    from cidrx.kube.api import KubeApi
    from cidrx.model.kube import KubeSection

ENICONFIG_GROUP, ENICONFIG_VERSION, ENICONFIG_PLURAL = "crd.k8s.amazonaws.com", "v1alpha1", "eniconfigs"
AWS_NODE = ("kube-system", "aws-node", "aws-node")  # namespace, DaemonSet, container
# What the AWS VPC CNI's ipamd reads to pick a node's ENIConfig (aws/amazon-vpc-cni-k8s
# pkg/eniconfig/eniconfig.go @ b52188387f2e2f10bf289ace929d6a63b176a4fa, GetNodeSpecificENIConfigName):
# this label first, then the node annotation named by ENI_CONFIG_ANNOTATION_DEF, then the node label named
# by ENI_CONFIG_LABEL_DEF (both default to k8s.amazonaws.com/eniConfig when unset or empty), else "default".
ENICONFIG_EXTERNAL_LABEL = "vpc.amazonaws.com/externalEniConfig"
ENICONFIG_DEFAULT_KEY = "k8s.amazonaws.com/eniConfig"
ENICONFIG_ANNOTATION_ENV = "ENI_CONFIG_ANNOTATION_DEF"
ENICONFIG_LABEL_ENV = "ENI_CONFIG_LABEL_DEF"


@dataclass(frozen=True)
class EniConfig:
    name: str
    subnet: str
    security_groups: tuple[str, ...]
    created: str
    labels: dict[str, str] = field(default_factory=dict)


# The fields EKS adds to the snapshot's kube section: (name, type, default; a callable is a factory).
# node_eniconfig_labels / _annotations: per node name, the labels and annotations ipamd reads to pick the node's
# ENIConfig (only those keys), for nodes that carry any. Kept on the section rather than on KubeNode: records
# inside a tuple are not pruned, so a field there would change every node's encoding.
FIELDS: tuple[tuple[str, Any, Any], ...] = (
    ("aws_node", WorkloadEnv | None, None),
    ("eniconfigs", tuple[EniConfig, ...], ()),
    ("node_eniconfig_labels", dict[str, dict[str, str]], dict),
    ("node_eniconfig_annotations", dict[str, dict[str, str]], dict),
)


def invariant_problem(section: KubeSection) -> str | None:
    eniconfigs: tuple[EniConfig, ...] = section.eniconfigs
    return first_problem(repeated("eniconfigs", eniconfigs, lambda e: e.name, "ENIConfig"))


def eniconfig_keys(env: Mapping[str, str]) -> tuple[str, str]:
    """(annotation key, label key) ipamd reads with this aws-node env: the variable's value, or the
    default when it is unset or empty (getEniConfigAnnotationDef / getEniConfigLabelDef)."""
    return (
        env.get(ENICONFIG_ANNOTATION_ENV) or ENICONFIG_DEFAULT_KEY,
        env.get(ENICONFIG_LABEL_ENV) or ENICONFIG_DEFAULT_KEY,
    )


def eniconfig_from(obj: Mapping[str, Any]) -> EniConfig:
    from cidrx.kube.collect import dig

    spec = obj.get("spec") or {}
    return EniConfig(
        name=str(dig(obj, "metadata", "name") or ""),
        subnet=str(spec.get("subnet") or ""),
        security_groups=tuple(str(g) for g in spec.get("securityGroups") or []),
        created=str(dig(obj, "metadata", "creationTimestamp") or ""),
        labels={str(k): str(v) for k, v in (dig(obj, "metadata", "labels") or {}).items()},
    )


@dataclass(frozen=True)
class Read:
    """What `EksClusterReads.read` found: the aws-node DaemonSet (None: absent) and the ENIConfig objects."""

    aws_node: Mapping[str, Any] | None = None
    eniconfigs: Iterable[Mapping[str, Any]] = ()

    def env(self) -> WorkloadEnv | None:
        from cidrx.kube.collect import workload_env_from

        return workload_env_from(self.aws_node, AWS_NODE[2]) if self.aws_node is not None else None


class EksClusterReads:
    """The `cidrx.kube.collect.ClusterReads` of EKS targets."""

    def read(self, api: KubeApi, groups: set[str]) -> Read:
        eniconfigs: Iterable[Mapping[str, Any]] = ()
        if ENICONFIG_GROUP in groups:
            eniconfigs = api.iter_custom(ENICONFIG_GROUP, ENICONFIG_VERSION, ENICONFIG_PLURAL)
        return Read(api.get_daemonset(AWS_NODE[0], AWS_NODE[1]), eniconfigs)

    def node_keys(self, raw: Read) -> tuple[tuple[str, ...], tuple[str, ...]]:
        env = raw.env()
        annotation_key, label_key = eniconfig_keys({v.name: v.value for v in env.env} if env is not None else {})
        # Kept whatever the CNI's configuration: the default keys too, so a plan that changes ENI_CONFIG_LABEL_DEF
        # can still tell what nodes carry.
        return (ENICONFIG_EXTERNAL_LABEL, label_key, ENICONFIG_DEFAULT_KEY), (annotation_key, ENICONFIG_DEFAULT_KEY)

    def fields(
        self, raw: Read, labels: dict[str, dict[str, str]], annotations: dict[str, dict[str, str]]
    ) -> dict[str, Any]:
        return {
            "aws_node": raw.env(),
            "eniconfigs": tuple(sorted((eniconfig_from(e) for e in raw.eniconfigs), key=lambda e: e.name)),
            "node_eniconfig_labels": labels,
            "node_eniconfig_annotations": annotations,
        }


READS = EksClusterReads()
