"""EKS estates as real organisations run them, built on the incident (eks_world.py / eks_cluster.py):

- `use_annotated_eniconfigs`: custom networking with ENIConfigs chosen by the node annotation
  `k8s.amazonaws.com/eniConfig` (ENI_CONFIG_LABEL_DEF unset), a documented setup that ipamd serves through
  its annotation rule (aws/amazon-vpc-cni-k8s pkg/eniconfig/eniconfig.go).

Each function changes a live estate (moto and the fake API server) in place, so the `eks` fixture's estate
stays the one place that builds and tears down worlds.
"""

from __future__ import annotations

from typing import Any

from tests.support.eks_cluster import node_name
from tests.support.eks_estate import EksEstate

ANNOTATION = "k8s.amazonaws.com/eniConfig"
ENICONFIG_API = "crd.k8s.amazonaws.com/v1alpha1"


def set_aws_node_env(estate: EksEstate, **env: str | None) -> None:
    """Set (None: remove) variables of the aws-node container, as `kubectl set env` would."""
    ds = estate.kube.get("apps", "v1", "daemonsets", "aws-node", "kube-system")
    assert ds is not None
    for c in ds["spec"]["template"]["spec"]["containers"]:
        if c["name"] == "aws-node":
            kept = [e for e in c.get("env") or [] if e["name"] not in env]
            c["env"] = kept + [{"name": k, "value": v} for k, v in env.items() if v is not None]
    estate.kube.put(ds)


def annotate_node(estate: EksEstate, ip: str, annotations: dict[str, str | None]) -> None:
    node = estate.kube.get("", "v1", "nodes", node_name(ip))
    assert node is not None
    current: dict[str, Any] = node["metadata"].setdefault("annotations", {})
    for key, value in annotations.items():
        if value is None:
            current.pop(key, None)
        else:
            current[key] = value
    estate.kube.put(node)


def put_eniconfig(estate: EksEstate, name: str, subnet: str, groups: list[str]) -> None:
    estate.kube.put(
        {
            "apiVersion": ENICONFIG_API,
            "kind": "ENIConfig",
            "metadata": {"name": name, "creationTimestamp": "2023-11-03T23:00:00Z"},
            "spec": {"subnet": subnet, "securityGroups": groups},
        }
    )


def use_annotated_eniconfigs(estate: EksEstate) -> dict[str, str]:
    """Custom networking on, ENI_CONFIG_LABEL_DEF unset, ENIConfigs `pods-a`/`pods-b` on the private subnets
    and each node annotated with its own; returns node name -> ENIConfig name."""
    w = estate.world
    set_aws_node_env(estate, AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG="true", ENI_CONFIG_LABEL_DEF=None)
    chosen = {}
    for ip, name, subnet in zip(w.node_ips, ("pods-a", "pods-b"), w.private_subnets, strict=True):
        put_eniconfig(estate, name, subnet, [w.cluster_security_group_id])
        annotate_node(estate, ip, {ANNOTATION: name})
        chosen[node_name(ip)] = name
    return chosen
