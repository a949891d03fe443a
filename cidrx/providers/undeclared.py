"""TRANSITION: Kubernetes reads the plugins' collectors make that their declarations do not state yet.

Why it exists: `cidrx permissions` derives the ClusterRole from every spec's `kube_reads` (cidrx.registry), so
that no shared module names a plugin. Until every plugin declares the reads of its collectors there, they
are kept here, in this one clearly marked place outside the shared layers, keyed by the plugin that makes
them; a read declared in both places is granted once. Delete an entry when its plugin declares it, and this
module with the last one.
"""

from __future__ import annotations

# Reads by plugin name, granted for the targets the plugin is collected for (an IPAM's `providers`, or all).
KUBE_READS: dict[str, tuple[str, ...]] = {
    "whereabouts": (
        "kubernetes: ippools.whereabouts.cni.cncf.io list",
        "kubernetes: overlappingrangeipreservations.whereabouts.cni.cncf.io list",
        "kubernetes: network-attachment-definitions.k8s.cni.cncf.io list",
    ),
    "calico": (
        "kubernetes: ippools.crd.projectcalico.org list",
        "kubernetes: ipamblocks.crd.projectcalico.org list",
        "kubernetes: blockaffinities.crd.projectcalico.org list",
        "kubernetes: ipamhandles.crd.projectcalico.org list",
        "kubernetes: ipamconfigs.crd.projectcalico.org list",
    ),
    "nodeipam": ("kubernetes: configmaps get in kube-system",),
}

# Reads the cluster collector makes on every target whatever its provider (when the API group is served):
# ENIConfigs (EKS custom networking) and EgressNATPolicies (GKE Dataplane V2), by the plugin they belong to.
EVERY_TARGET_READS: dict[str, tuple[str, ...]] = {
    "eks": ("kubernetes: eniconfigs.crd.k8s.amazonaws.com list",),
    "gke": ("kubernetes: egressnatpolicies.networking.gke.io list",),
}

# The only objects of these (group, resource)s the collectors read, by the plugin that reads them: the
# ClusterRole names them.
RESOURCE_NAMES: dict[str, dict[tuple[str, str], tuple[str, ...]]] = {
    "nodeipam": {("", "configmaps"): ("kubeadm-config",)},
    "eks": {("apps", "deployments"): ("karpenter",)},
}
