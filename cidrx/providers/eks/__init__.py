"""EKS (AWS VPC CNI) as a plugin: its declaration (`SPEC`, `STRATEGIES`), read by cidrx.registry."""

from __future__ import annotations

from cidrx.registry import ProviderSpec, Strategy

# EKS node groups start with a letter or digit, then letters, digits, - and _, at most 63 (docs/cloud-facts.md,
# "Names of what expand creates").
NODEGROUP_NAME = (
    r"[A-Za-z0-9][A-Za-z0-9_-]*",
    63,
    "letters, digits, hyphens and underscores, starting with a letter or "
    "digit, at most 63 characters (an EKS node group name)",
)

SPEC = ProviderSpec(
    name="eks",
    title="EKS",
    help="Target an EKS cluster (AWS VPC CNI).",
    requires=("region", "cluster"),
    refuses=("project", "location"),
    refuse_reason="EKS clusters are named by --region and --cluster",
    finding_prefix="EKS-",
    context_hint="aws eks update-kubeconfig --name {cluster}",
    provider="cidrx.providers.eks.provider:PROVIDER",
    iam="aws",
    why_not=(
        (
            "max_pods_per_node",
            "it sets the max pods of a new GKE node pool (EKS nodes' max pods follow the instance "
            "type and the VPC CNI's settings)",
        ),
        ("allow_class_e", "it lets GKE use 240.0.0.0/4 (AWS does not accept class E as a VPC CIDR)"),
    ),
    # The region variables of the AWS tooling: AWS_REGION (AWS CLI v2 and the SDKs' shared config, taking
    # precedence), then AWS_DEFAULT_REGION (botocore's session variable "region",
    # botocore/configprovider.py BOTOCORE_DEFAULT_SESSION_VARIABLES, botocore 1.43).
    env_defaults=(("region", ("AWS_REGION", "AWS_DEFAULT_REGION")),),
    section="cidrx.providers.eks.model:EksSection",
    terraform="cidrx.providers.eks.terraform:emit",
    kube_daemonset=("kube-system", "aws-node"),
    kube_fields="cidrx.providers.eks.collect.cluster",
    kube_collect="cidrx.providers.eks.collect.cluster:READS",
    applied_plans="cidrx.providers.eks.facts.applied:applied_plans",
    # Managed node groups, eksctl's groups, Karpenter's and EKS Auto Mode's nodes.
    node_pool_labels=("eks.amazonaws.com/nodegroup", "alpha.eksctl.io/nodegroup-name", "karpenter.sh/nodepool"),
    # cidrx.providers.eks.collect.provisioners: node classes and NodePools when their groups are served,
    # and the Karpenter controller Deployment where its Helm chart installs it; collect.cluster: ENIConfigs.
    kube_reads=(
        "kubernetes: ec2nodeclasses.karpenter.k8s.aws list",
        "kubernetes: nodepools.karpenter.sh list",
        "kubernetes: nodeclasses.eks.amazonaws.com list",
        "kubernetes: deployments.apps get in kube-system named karpenter",
        "kubernetes: deployments.apps get in karpenter named karpenter",
        "kubernetes: eniconfigs.crd.k8s.amazonaws.com list",
    ),
    permissions_help="AWS IAM policy (JSON) for EKS targets.",
    fleet_scope="region",
    list_clusters="cidrx.providers.eks.fleet:list_clusters",
    kube_context="cidrx.providers.eks.fleet:kube_context",
    default_strategy="cidrx.providers.eks.strategies.default:default_strategy",
    fix_tools=("aws", "eksctl"),
)

STRATEGIES = (
    Strategy(
        "custom-networking",
        "eks",
        "add a VPC CIDR and pod subnets (ENIConfigs) and a node group that uses them",
        "cidrx.providers.eks.strategies.custom_networking:ACTIONS",
        plan="cidrx.providers.eks.strategies.custom_networking:make_plan",
        drift="cidrx.providers.eks.strategies.custom_networking:check_drift",
        basis="cidrx.providers.eks.strategies.basis:custom_networking",
        options=frozenset({"cidr", "add_nodes", "pool_name", "template"}),
        pool_name=NODEGROUP_NAME,
    ),
    Strategy(
        "prefix-delegation",
        "eks",
        "turn on VPC CNI prefix delegation (a /28 per ENI slot)",
        "cidrx.providers.eks.strategies.prefix_delegation:ACTIONS",
        plan="cidrx.providers.eks.strategies.prefix_delegation:make_plan",
        drift="cidrx.providers.eks.strategies.prefix_delegation:check_drift",
        basis="cidrx.providers.eks.strategies.basis:prefix_delegation",
        options=frozenset({"template"}),
    ),
    Strategy(
        "subnet-discovery",
        "eks",
        "add a subnet per zone tagged kubernetes.io/role/cni for new pod ENIs (VPC CNI v1.18+; the default there)",
        "cidrx.providers.eks.strategies.subnet_discovery:ACTIONS",
        plan="cidrx.providers.eks.strategies.subnet_discovery:make_plan",
        drift="cidrx.providers.eks.strategies.subnet_discovery:check_drift",
        basis="cidrx.providers.eks.strategies.basis:subnet_discovery",
        options=frozenset({"cidr", "add_nodes"}),
    ),
    Strategy(
        "control-plane-subnets",
        "eks",
        "add subnets with free addresses to the EKS control plane (UpdateClusterConfig) in the cluster's zones",
        "cidrx.providers.eks.strategies.control_plane_subnets:ACTIONS",
        plan="cidrx.providers.eks.strategies.control_plane_subnets:make_plan",
        drift="cidrx.providers.eks.strategies.control_plane_subnets:check_drift",
        basis="cidrx.providers.eks.strategies.control_plane_subnets:read_basis",
        options=frozenset(),
    ),
    Strategy(
        "karpenter-subnets",
        "eks",
        "narrow EC2NodeClasses' subnetSelectorTerms to subnets with room for a node (Karpenter rolls the nodes)",
        "cidrx.providers.eks.strategies.karpenter_subnets:ACTIONS",
        plan="cidrx.providers.eks.strategies.karpenter_subnets:make_plan",
        drift="cidrx.providers.eks.strategies.karpenter_subnets:check_drift",
        basis="cidrx.providers.eks.strategies.karpenter_subnets:read_basis",
        options=frozenset(),
    ),
    Strategy(
        "eks-migrate",
        "eks",
        "after an applied expansion: cordon the nodes in full subnets, evict their pods (Eviction API, "
        "PodDisruptionBudgets honoured), scale their old managed and self-managed node groups to 0",
        "cidrx.providers.eks.strategies.migrate:ACTIONS",
        plan="cidrx.providers.eks.strategies.migrate:make_plan",
        drift="cidrx.providers.eks.strategies.migrate:check_drift",
        basis="cidrx.providers.eks.strategies.migrate:read_basis",
        options=frozenset(),
        migration=True,
    ),
)
