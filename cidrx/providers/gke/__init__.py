"""GKE as a plugin: its declaration (`SPEC`, `STRATEGIES`), read by cidrx.registry."""

from __future__ import annotations

from cidrx.registry import ProviderSpec, Strategy

# GKE node pools are RFC 1035 labels of at most 40 characters (docs/cloud-facts.md, "Names of what expand creates").
NODE_POOL_NAME = (
    r"[a-z]([-a-z0-9]*[a-z0-9])?",
    40,
    "lowercase letters, digits and hyphens, starting with a letter and "
    "not ending with a hyphen, at most 40 characters (a GKE node pool name)",
)

SPEC = ProviderSpec(
    name="gke",
    title="GKE",
    help="Target a GKE cluster.",
    requires=("project", "location", "cluster"),
    refuses=("region", "profile"),
    refuse_reason="GKE clusters are named by --project, --location and --cluster",
    finding_prefix="GKE-",
    context_hint="gcloud container clusters get-credentials {cluster} --location {location}",
    provider="cidrx.providers.gke.provider:PROVIDER",
    iam="gcp",
    section="cidrx.providers.gke.model:GkeSection",
    terraform="cidrx.providers.gke.terraform:emit",
    permissions_help="Google Cloud permissions and custom role for GKE.",
    fleet_scope="project",
    list_clusters="cidrx.providers.gke.fleet:list_clusters",
    kube_context="cidrx.providers.gke.fleet:kube_context",
    default_strategy="cidrx.providers.gke.provider:default_strategy",
    fix_tools=("gcloud",),
    kube_configmaps=(("kube-system", "ip-masq-agent"),),
    kube_fields="cidrx.providers.gke.collect.cluster",
    node_pool_labels=("cloud.google.com/gke-nodepool",),
    pod_pool_labels=("cloud.google.com/gke-nodepool",),
    kube_collect="cidrx.providers.gke.collect.cluster:READS",
    applied_plans="cidrx.providers.gke.facts.applied:applied_plans",
    # collect.cluster: Dataplane V2's EgressNATPolicies, when their group is served.
    kube_reads=("kubernetes: egressnatpolicies.networking.gke.io list",),
)

STRATEGIES = (
    Strategy(
        "node-pool",
        "gke",
        "a new pod range and a node pool that uses it",
        "cidrx.providers.gke.strategies.node_pool:ACTIONS",
        plan="cidrx.providers.gke.strategies.node_pool:make_plan",
        drift="cidrx.providers.gke.strategies.node_pool:check_drift",
        basis="cidrx.providers.gke.strategies.basis:pod_range",
        options=None,
        pool_name=NODE_POOL_NAME,
    ),
    Strategy(
        "cluster-range",
        "gke",
        "a new pod range added to the cluster (multi-pod CIDR)",
        "cidrx.providers.gke.strategies.cluster_range:ACTIONS",
        plan="cidrx.providers.gke.strategies.cluster_range:make_plan",
        drift="cidrx.providers.gke.strategies.cluster_range:check_drift",
        basis="cidrx.providers.gke.strategies.basis:pod_range",
        options=frozenset({"cidr", "add_nodes", "template", "max_pods_per_node", "allow_class_e"}),
    ),
    Strategy(
        "subnet-expand",
        "gke",
        "the subnet's primary range expanded in place (node addresses), and GKE's -vms firewall rule widened",
        "cidrx.providers.gke.strategies.subnet_expand:ACTIONS",
        plan="cidrx.providers.gke.strategies.subnet_expand:make_plan",
        drift="cidrx.providers.gke.strategies.subnet_expand:check_drift",
        basis="cidrx.providers.gke.strategies.subnet_expand:read_basis",
        options=frozenset({"add_nodes"}),
    ),
)
