"""AKS (Azure CNI, Overlay and kubenet) as a plugin: its declaration (`SPEC`, `STRATEGIES`), read by
cidrx.registry."""

from __future__ import annotations

from cidrx.registry import ProviderSpec, Strategy

# Linux agent pool names: lowercase letters and digits, starting with a letter, at most 12 characters
# (docs/cloud-facts.md, "AKS").
AGENT_POOL_NAME = (
    r"[a-z][a-z0-9]*",
    12,
    "lowercase letters and digits, starting with a letter, at most 12 characters (an AKS agent pool name)",
)

SPEC = ProviderSpec(
    name="aks",
    title="AKS",
    help="Target an AKS cluster (Azure CNI, Overlay or kubenet).",
    requires=("subscription", "resource_group", "cluster"),
    refuses=("region", "profile", "project", "location"),
    refuse_reason="AKS clusters are named by --subscription, --resource-group and --cluster",
    env_hint="(or CIDRX_SUBSCRIPTION / AZURE_SUBSCRIPTION_ID, CIDRX_RESOURCE_GROUP, CIDRX_CLUSTER)",
    finding_prefix="AKS-",
    context_hint="az aks get-credentials --resource-group {resource_group} --name {cluster}",
    provider="cidrx.providers.aks.provider:PROVIDER",
    iam="azure",
    why_not=(("allow_class_e", "it lets GKE use 240.0.0.0/4 (Azure VNets take private and public unicast space)"),),
    # The Azure SDKs' own variable for the subscription (azure-identity / Azure CLI conventions).
    env_defaults=(("subscription", ("AZURE_SUBSCRIPTION_ID",)),),
    section="cidrx.providers.aks.model:AksSection",
    terraform="cidrx.providers.aks.terraform:emit",
    default_strategy="cidrx.providers.aks.provider:default_strategy",
    fix_tools=("az",),
    kube_fields="cidrx.providers.aks.collect.cluster",
    kube_collect="cidrx.providers.aks.collect.cluster:READS",
    # The label AKS puts on every node of an agent pool (and the older short one).
    node_pool_labels=("kubernetes.azure.com/agentpool", "agentpool"),
    pod_pool_labels=("kubernetes.azure.com/agentpool", "agentpool"),
    # collect.cluster: Azure CNI's ClusterSubnetState (dynamic pod subnet exhaustion), when its group is served.
    kube_reads=("kubernetes: clustersubnetstates.acn.azure.com list",),
    permissions_help="Azure RBAC actions and a custom role definition (JSON) for AKS targets.",
    fleet_scope="subscription",
    list_clusters="cidrx.providers.aks.fleet:list_clusters",
    kube_context="cidrx.providers.aks.fleet:kube_context",
    applied_plans="cidrx.providers.aks.facts.applied:applied_plans",
)

STRATEGIES = (
    Strategy(
        "aks-node-pool",
        "aks",
        "a new node subnet in the VNet and an agent pool that uses it (Azure CNI node subnet, kubenet)",
        "cidrx.providers.aks.strategies.node_pool:ACTIONS",
        plan="cidrx.providers.aks.strategies.node_pool:make_plan",
        drift="cidrx.providers.aks.strategies.node_pool:check_drift",
        basis="cidrx.providers.aks.strategies.basis:read_basis",
        options=frozenset({"cidr", "add_nodes", "template", "pool_name", "max_pods_per_node"}),
        pool_name=AGENT_POOL_NAME,
    ),
    Strategy(
        "aks-pod-subnet",
        "aks",
        "a new pod subnet in the VNet and an agent pool whose pods use it (Azure CNI with a pod subnet)",
        "cidrx.providers.aks.strategies.pod_subnet:ACTIONS",
        plan="cidrx.providers.aks.strategies.pod_subnet:make_plan",
        drift="cidrx.providers.aks.strategies.pod_subnet:check_drift",
        basis="cidrx.providers.aks.strategies.basis:read_basis",
        options=frozenset({"cidr", "add_nodes", "template", "pool_name", "max_pods_per_node"}),
        pool_name=AGENT_POOL_NAME,
    ),
    Strategy(
        "aks-migrate",
        "aks",
        "after an applied pod-subnet expansion: cordon the nodes of the old pools on full pod subnets, evict their "
        "pods (Eviction API, PodDisruptionBudgets honoured), scale those pools to 0 (System pools: drain only)",
        "cidrx.providers.aks.strategies.migrate:ACTIONS",
        plan="cidrx.providers.aks.strategies.migrate:make_plan",
        drift="cidrx.providers.aks.strategies.migrate:check_drift",
        basis="cidrx.providers.aks.strategies.migrate:read_basis",
        options=frozenset(),
        migration=True,
    ),
)
