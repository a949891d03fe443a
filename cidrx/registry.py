"""The registry: every provider, in-cluster IPAM and plan strategy cidrx knows, declared once.

Why it exists: the CLI's flags, `cidrx permissions`, dispatch, fleet mode and the docs all need the same
lists (which providers, which flags name their targets, which strategies run where, which step actions a
plan kind can hold). They read them here instead of keeping their own copies. Only the standard library is
imported, so `cidrx --help` loads no SDK: each provider or IPAM object is named by a lazy "module:attr"
path and imported when a command first needs it. A new provider is one package plus one `register()` line.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, kw_only=True)
class _Spec:
    """What providers and IPAMs both declare. Paths are "module:attr", imported when first needed."""

    name: str
    title: str
    finding_prefix: str
    section: str = ""  # its snapshot section's dataclass
    terraform: str = ""  # the Terraform emitter of its plans (`--emit terraform`)
    actions: str = ""  # the tuple of every `Action` its plans' steps use

    @property
    def strategies(self) -> tuple[str, ...]:
        """The strategies it owns (declared with `register`), in declaration order."""
        return tuple(s.name for s in _STRATEGIES.values() if s.owner == self.name)


@dataclass(frozen=True, kw_only=True)
class ProviderSpec(_Spec):
    """A cloud (or plain Kubernetes) that targets name with `--<flag>`.

    `requires` are the TARGET options that name a cluster, in the order `Target.flags()` writes them (the
    last is always `cluster`); `refuses` are options that make no sense for it, refused with `refuse_reason`.
    `in_cluster`: the target is reached through kubeconfig alone (its name defaults to the context).
    `context_hint` is the command that writes a kubeconfig context for the cluster (format fields are the
    Target's), shown when the current context points at another cluster.
    """

    help: str
    requires: tuple[str, ...]
    refuses: tuple[str, ...]
    refuse_reason: str
    env_hint: str
    context_hint: str
    provider: str  # "module:attr" of the object implementing `cidrx.dispatch.Provider`
    # The cloud IAM its permissions are written for ("aws": IAM actions and a policy document; "gcp": IAM
    # permissions and a custom role; "": Kubernetes RBAC only). `cidrx permissions` writes the documents.
    iam: str = ""
    # Why an `expand --plan` option its targets' plans do not read is refused (PlanOptions field, reason).
    why_not: tuple[tuple[str, str], ...] = ()
    # TARGET options taken from other variables when not given (e.g. the AWS region variables).
    env_defaults: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # A DaemonSet (namespace, name) the cluster collector reads for it (the VPC CNI's aws-node on EKS).
    kube_daemonset: tuple[str, str] | None = None
    # Further Kubernetes reads of its collector, in the "kubernetes: <plural>[.<group>] <verbs> [in <ns>]"
    # notation of step permissions (e.g. EKS's Karpenter and Auto Mode node classes).
    kube_reads: tuple[str, ...] = ()
    permissions_help: str = ""  # `cidrx permissions --<name>` help (default: `help`)
    # Fleet mode (`diagnose --all-clusters`): the TARGET option naming where its clusters are listed
    # (`--region`, `--project`); "module:attr" of `list_clusters(*, region, project, profile)` returning a
    # `cidrx.fleet.Listing`, and of `kube_context(target, contexts, account)` returning (the kubeconfig context
    # its tooling names for a cluster or None, the name a missing one would have). Empty: no fleet listing.
    fleet_scope: str = ""
    list_clusters: str = ""
    kube_context: str = ""
    in_cluster: bool = False
    # ConfigMaps (namespace, name) its plans read, collected with the cluster (GKE: ip-masq-agent).
    kube_configmaps: tuple[tuple[str, str], ...] = ()

    @property
    def flag(self) -> str:
        return f"--{self.name}"


@dataclass(frozen=True, kw_only=True)
class IpamSpec(_Spec):
    """An in-cluster IPAM, found in any provider's clusters by the API groups it serves."""

    api_groups: tuple[str, ...]
    # The module whose `collect_served(api, groups)` reads its section (None when the cluster does not run
    # it), `pod_refs(section)` names the pods its records point at and `cidrs(section)` the ranges it hands
    # out; the section is stored in the snapshot's kube section under `field`, typed `section`.
    collect: str
    field: str
    # Collected only for these providers' targets (empty: all); such an IPAM is analysed as part of those
    # providers' diagnosis (their provider object asks the registry for it), not by cidrx.ipam.dispatch.
    providers: tuple[str, ...] = ()
    # "module:attr" of its object: for every IPAM `analyze(section, kube)`; for those of all providers the
    # whole `cidrx.ipam.dispatch.Ipam` (analysis, plans, drift, executors).
    ipam: str = ""


@dataclass(frozen=True)
class Action:
    """A step action, declared once in its owner's plan module: the `name` its steps carry, the
    `permissions` each of them declares (what `cidrx permissions` and the docs print without making a plan)
    and `executor`, the "module:attr" path of its `Executor` class in the owner's steps module (imported
    when a plan is applied: the steps modules import the plan modules, so these cannot import them)."""

    name: str
    permissions: tuple[str, ...]
    executor: str
    # How `cidrx rollback` takes the step back: the "module:attr" path of its `Undo` class (cidrx.engine.undo),
    # declared beside the executor, and the permissions that undo needs. An action without one makes rollback
    # refuse the whole plan up front (exit 2), saying `no_undo` (why it cannot be undone) or that none is
    # declared yet.
    undo: str = ""
    undo_permissions: tuple[str, ...] = ()
    no_undo: str = ""


@dataclass(frozen=True)
class Strategy:
    """A plan kind: `owner` is the provider or IPAM whose plans they are; `reclaim` plans are made by
    `cidrx reclaim`, the others by `cidrx expand --plan`; `actions` is the "module:attr" path of the tuple
    of `Action`s its plans use."""

    name: str
    owner: str
    help: str
    actions: str
    reclaim: bool = False
    # The `expand --plan` options it reads (PlanOptions fields; None: all); others given are refused.
    options: frozenset[str] | None = None
    # (pattern, max length, words) a --pool-name must match: the name rule of what the plan creates.
    pool_name: tuple[str, int, str] | None = None


_PROVIDERS: dict[str, ProviderSpec] = {}
_IPAMS: dict[str, IpamSpec] = {}
_STRATEGIES: dict[str, Strategy] = {}


def register(spec: ProviderSpec | IpamSpec, *strategies: Strategy) -> None:
    """Add a provider or IPAM and the strategies it owns (tests register throw-away ones)."""
    if isinstance(spec, ProviderSpec):
        _PROVIDERS[spec.name] = spec
    else:
        _IPAMS[spec.name] = spec
    for s in strategies:
        _STRATEGIES[s.name] = s


def unregister(name: str) -> None:
    """Remove a provider or IPAM and its strategies (for tests that registered one)."""
    _PROVIDERS.pop(name, None)
    _IPAMS.pop(name, None)
    for s in [s for s in _STRATEGIES.values() if s.owner == name]:
        del _STRATEGIES[s.name]


def providers() -> tuple[ProviderSpec, ...]:
    return tuple(_PROVIDERS.values())


def provider_names() -> tuple[str, ...]:
    return tuple(_PROVIDERS)


def provider_spec(name: str) -> ProviderSpec | None:
    return _PROVIDERS.get(name)


def ipams() -> tuple[IpamSpec, ...]:
    return tuple(_IPAMS.values())


def ipam_spec(name: str) -> IpamSpec | None:
    return _IPAMS.get(name)


def strategies() -> tuple[Strategy, ...]:
    return tuple(_STRATEGIES.values())


def strategy(name: str) -> Strategy | None:
    return _STRATEGIES.get(name)


def ipam_strategies() -> tuple[str, ...]:
    """Strategies served by an in-cluster IPAM, whichever cloud the cluster runs on."""
    return tuple(s.name for s in _STRATEGIES.values() if s.owner in _IPAMS)


def expand_strategies() -> tuple[str, ...]:
    """Every strategy `cidrx expand --plan` takes: the providers', then the in-cluster ones."""
    own = [s for p in _PROVIDERS.values() for s in p.strategies]
    ipam = [s.name for s in _STRATEGIES.values() if s.owner in _IPAMS and not s.reclaim]
    return tuple(dict.fromkeys([*own, *ipam]))


def reclaim_strategies() -> tuple[str, ...]:
    return tuple(s.name for s in _STRATEGIES.values() if s.reclaim)


def actions() -> tuple[Action, ...]:
    """Every step action, from the plan modules the specs name."""
    paths = [p.actions for p in _PROVIDERS.values()] + [i.actions for i in _IPAMS.values()]
    return tuple(a for path in paths if path for a in load(path))


def strategy_actions(s: Strategy) -> tuple[Action, ...]:
    """The step actions `s`'s plans use."""
    return tuple(load(s.actions))


def step_permissions() -> dict[str, tuple[str, ...]]:
    """Every step action and the permissions its steps declare."""
    return {a.name: a.permissions for a in actions()}


def executors(declared: Iterable[Action]) -> dict[str, Any]:
    """{action name: a new instance of its Executor}: the table the apply engine runs (imports the steps
    modules)."""
    return {a.name: load(a.executor)() for a in declared}


# The kube section of a snapshot (its IPAM sections are the registered IPAMs' `section` types).
KUBE_SECTION = "cidrx.kube.model:KubeSection"


def bind_sections(snapshot_namespace: dict[str, Any]) -> None:
    """Make the section types the snapshot model names only as strings resolvable, for decoding and
    validation: the kube section and each provider's section into `snapshot_namespace` (the globals of
    cidrx.model.snapshot), each IPAM's into the kube section's module. The model layer so imports no
    provider or IPAM, and the JSON stays as it was."""
    kube = load(KUBE_SECTION)
    snapshot_namespace[kube.__name__] = kube
    for p in _PROVIDERS.values():
        if p.section:
            section = load(p.section)
            snapshot_namespace[section.__name__] = section
    kube_namespace = vars(importlib.import_module(KUBE_SECTION.partition(":")[0]))
    for i in _IPAMS.values():
        if i.section:
            section = load(i.section)
            kube_namespace.setdefault(section.__name__, section)


def load(path: str) -> Any:
    """The object a lazy "module:attr" path names (imports the module)."""
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


# -- what cidrx ships ------------------------------------------------------------------------------------

# Name rules (docs/cloud-facts.md, "Names of what expand creates"): GKE node pools are RFC 1035 labels of at
# most 40 characters; EKS node groups start with a letter or digit, then letters, digits, - and _, at most 63;
# Calico IPPools are DNS-1123 subdomains (projectcalico/calico libcalico-go/lib/validator/v3/validator.go,
# nameSubdomainFmt, at 87c15906f20c4ca1fda55af92295e7678b0cc0b2).
_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_GKE_NODE_POOL = (
    r"[a-z]([-a-z0-9]*[a-z0-9])?",
    40,
    "lowercase letters, digits and hyphens, starting with a letter and "
    "not ending with a hyphen, at most 40 characters (a GKE node pool name)",
)
_EKS_NODEGROUP = (
    r"[A-Za-z0-9][A-Za-z0-9_-]*",
    63,
    "letters, digits, hyphens and underscores, starting with a letter or "
    "digit, at most 63 characters (an EKS node group name)",
)
_CALICO_IPPOOL = (
    rf"{_LABEL}(\.{_LABEL})*",
    253,
    "lowercase letters, digits, '-' and '.', starting and ending "
    "with a letter or digit, at most 253 characters (a Calico IPPool name, DNS-1123 subdomain)",
)

register(
    ProviderSpec(
        name="eks",
        title="EKS",
        help="Target an EKS cluster (AWS VPC CNI).",
        requires=("region", "cluster"),
        refuses=("project", "location"),
        refuse_reason="EKS clusters are named by --region and --cluster",
        env_hint="(or CIDRX_REGION / AWS_REGION, CIDRX_CLUSTER)",
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
        # cidrx.providers.eks.provisioner_collect: node classes and NodePools when their groups are served,
        # and the Karpenter controller Deployment where its Helm chart installs it.
        kube_reads=(
            "kubernetes: ec2nodeclasses.karpenter.k8s.aws list",
            "kubernetes: nodepools.karpenter.sh list",
            "kubernetes: nodeclasses.eks.amazonaws.com list",
            "kubernetes: deployments.apps get in kube-system",
            "kubernetes: deployments.apps get in karpenter",
        ),
        permissions_help="AWS IAM policy (JSON) for EKS targets.",
        fleet_scope="region",
        list_clusters="cidrx.providers.eks.fleet:list_clusters",
        kube_context="cidrx.providers.eks.fleet:kube_context",
        actions="cidrx.providers.eks.plan:ACTIONS",
    ),
    Strategy(
        "custom-networking",
        "eks",
        "add a VPC CIDR and pod subnets (ENIConfigs) and a node group that uses them",
        "cidrx.providers.eks.plan:CUSTOM_NETWORKING_ACTIONS",
        options=frozenset({"cidr", "add_nodes", "pool_name", "template"}),
        pool_name=_EKS_NODEGROUP,
    ),
    Strategy(
        "prefix-delegation",
        "eks",
        "turn on VPC CNI prefix delegation (a /28 per ENI slot)",
        "cidrx.providers.eks.plan:PREFIX_DELEGATION_ACTIONS",
        options=frozenset({"template"}),
    ),
    Strategy(
        "subnet-discovery",
        "eks",
        "add a subnet per zone tagged kubernetes.io/role/cni for new pod ENIs (VPC CNI v1.18+; the default there)",
        "cidrx.providers.eks.discovery_plan:SUBNET_DISCOVERY_ACTIONS",
        options=frozenset({"cidr", "add_nodes"}),
    ),
)
register(
    ProviderSpec(
        name="gke",
        title="GKE",
        help="Target a GKE cluster.",
        requires=("project", "location", "cluster"),
        refuses=("region", "profile"),
        refuse_reason="GKE clusters are named by --project, --location and --cluster",
        env_hint="(or CIDRX_PROJECT / CIDRX_LOCATION / CIDRX_CLUSTER)",
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
        actions="cidrx.providers.gke.plan:ACTIONS",
        kube_configmaps=(("kube-system", "ip-masq-agent"),),
    ),
    Strategy(
        "node-pool",
        "gke",
        "a new pod range and a node pool that uses it",
        "cidrx.providers.gke.plan:NODE_POOL_ACTIONS",
        options=None,
        pool_name=_GKE_NODE_POOL,
    ),
    Strategy(
        "cluster-range",
        "gke",
        "a new pod range added to the cluster (multi-pod CIDR)",
        "cidrx.providers.gke.plan:CLUSTER_RANGE_ACTIONS",
        options=frozenset({"cidr", "add_nodes", "template", "max_pods_per_node", "allow_class_e"}),
    ),
)
register(
    ProviderSpec(
        name="k8s",
        title="Kubernetes",
        help="Target a plain Kubernetes cluster.",
        requires=(),
        refuses=("region", "profile", "project", "location"),
        refuse_reason="--k8s reads the cluster through kubeconfig",
        env_hint="",
        finding_prefix="NODEIPAM-",
        context_hint="",
        provider="cidrx.providers.k8s.provider:PROVIDER",
        permissions_help="Only the Kubernetes ClusterRole (plain clusters).",
        in_cluster=True,
    )
)
register(
    IpamSpec(
        name="whereabouts",
        title="Whereabouts",
        api_groups=("whereabouts.cni.cncf.io",),
        finding_prefix="WHEREABOUTS-",
        collect="cidrx.ipam.whereabouts.collect",
        ipam="cidrx.ipam.whereabouts.ipam:IPAM",
        field="whereabouts",
        section="cidrx.ipam.whereabouts.model:WhereaboutsSection",
        actions="cidrx.ipam.whereabouts.plan:ACTIONS",
    ),
    Strategy(
        "whereabouts-reclaim",
        "whereabouts",
        "release Whereabouts allocations of pods that are gone",
        "cidrx.ipam.whereabouts.plan:ACTIONS",
        reclaim=True,
    ),
)
register(
    IpamSpec(
        name="calico",
        title="Calico",
        api_groups=("crd.projectcalico.org",),
        finding_prefix="CALICO-",
        collect="cidrx.ipam.calico.collect",
        ipam="cidrx.ipam.calico.ipam:IPAM",
        field="calico",
        section="cidrx.ipam.calico.model:CalicoSection",
        terraform="cidrx.ipam.calico.terraform:emit",
        actions="cidrx.ipam.calico.plan:ACTIONS",
    ),
    Strategy(
        "calico-reclaim",
        "calico",
        "release Calico IPs of pods that are gone and empty blocks",
        "cidrx.ipam.calico.plan:RECLAIM_ACTIONS",
        reclaim=True,
    ),
    Strategy(
        "calico-pool",
        "calico",
        "a new Calico IPPool",
        "cidrx.ipam.calico.plan:POOL_ACTIONS",
        options=frozenset({"cidr", "add_nodes", "pool_name"}),
        pool_name=_CALICO_IPPOOL,
    ),
)
register(
    IpamSpec(
        name="nodeipam",
        title="Kubernetes node IPAM",
        api_groups=(),
        finding_prefix="NODE-IPAM-",
        collect="cidrx.ipam.nodeipam.collect",
        field="node_ipam",
        section="cidrx.ipam.nodeipam.model:NodeIpamConfig",
        ipam="cidrx.ipam.nodeipam.ipam:IPAM",
        providers=("k8s",),
    )
)
