"""Kubernetes node IPAM as a plugin: its declaration (`SPEC`; it has no strategies), read by cidrx.registry."""

from __future__ import annotations

from cidrx.registry import IpamSpec, Strategy

SPEC = IpamSpec(
    name="nodeipam",
    title="Kubernetes node IPAM",
    api_groups=(),
    finding_prefix="NODE-IPAM-",
    collect="cidrx.ipam.nodeipam.collect",
    field="node_ipam",
    section="cidrx.ipam.nodeipam.model:NodeIpamConfig",
    ipam="cidrx.ipam.nodeipam.ipam:IPAM",
    providers=("k8s",),
    # What cidrx.ipam.nodeipam.collect reads besides the pods every collection lists: kubeadm's
    # ClusterConfiguration, when the controller-manager's static pod tells nothing.
    kube_reads=("kubernetes: configmaps get in kube-system named kubeadm-config",),
)

STRATEGIES: tuple[Strategy, ...] = ()
