"""The registry: the declaration types plugins describe themselves with, and the list of plugin packages.

Why it exists: the CLI's flags, `cidrx permissions`, the use cases, fleet mode and the docs all need the same
lists (which providers, which flags name their targets, which strategies run where, which step actions a
plan kind can hold). Each plugin package declares itself in its own `__init__.py` (`SPEC` and `STRATEGIES`);
this module lists the packages (`PACKAGES`) and answers for all of them, so nothing else keeps a copy. Only
the standard library is imported, and a package's `__init__` imports nothing but this module, so `cidrx --help`
loads no SDK: code is named by lazy "module:attr" paths, imported when a command first needs it. A new
provider or IPAM is one package plus one line in `PACKAGES`.
"""

from __future__ import annotations

import dataclasses
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
    # "module:attr" of `default_strategy(snapshot, opts) -> str`: the strategy `expand --plan` uses without
    # --strategy (empty: its first expand strategy).
    default_strategy: str = ""
    # The command-line tools its findings' fixes name (e.g. a cloud's CLI): a backticked span of a fix that starts
    # with one of them is printed as a command of its own (cidrx.render.fixes).
    fix_tools: tuple[str, ...] = ()
    # The Kubernetes reads of its collectors, in the "kubernetes: <plural>[.<group>] <verbs> [in <ns>]" notation
    # of step permissions (e.g. EKS's ENIConfigs and Karpenter node classes, Calico's IPAM resources): the
    # ClusterRole `cidrx permissions` writes is derived from them.
    kube_reads: tuple[str, ...] = ()
    # "module:attr" of `address_maps(...)` giving its address maps (cidrx.model.netmap.NetworkMap) for the HTML
    # report: a provider's takes the snapshot; an IPAM's takes its section of the kube section (None: not found)
    # and the kube section itself (the pods that say which addresses are live).
    maps: str = ""
    # Other renderings of its plans that `expand --plan --emit NAME` writes beside the plan's JSON (Terraform has its
    # own `terraform` field): (NAME, file suffix replacing ".json", "module:attr" of `emit(plan) -> str`, which raises
    # InvalidInput for a plan that has nothing to say in that format).
    emits: tuple[tuple[str, str, str], ...] = ()

    @property
    def package(self) -> str:
        """The package that declares it: where its code lives (e.g. for its findings' docs)."""
        path = self.collect if isinstance(self, IpamSpec) else self.provider if isinstance(self, ProviderSpec) else ""
        return path.partition(":")[0].rpartition(".")[0]

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
    context_hint: str
    provider: str  # "module:attr" of the object implementing `cidrx.providers.base.Provider`
    # The cloud IAM its permissions are written for ("aws": IAM actions and a policy document; "gcp": IAM
    # permissions and a custom role; "": Kubernetes RBAC only). `cidrx permissions` writes the documents.
    iam: str = ""
    # Why an `expand --plan` option its targets' plans do not read is refused (PlanOptions field, reason).
    why_not: tuple[tuple[str, str], ...] = ()
    # No longer read: the "needs --cluster (or CIDRX_CLUSTER)" message is derived from `requires` and
    # `env_defaults` (cidrx.cli.options.env_hint). Kept so that plugins declaring it still load; drop it there.
    env_hint: str = ""
    # TARGET options taken from other variables when not given (e.g. the AWS region variables).
    env_defaults: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # A DaemonSet (namespace, name) the cluster collector reads for it (the VPC CNI's aws-node on EKS).
    kube_daemonset: tuple[str, str] | None = None
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
    # The module declaring the fields it adds to the snapshot's kube section (`FIELDS`: (name, type, default)
    # triples; a callable default is a factory), and optionally `invariant_problem(section)`.
    kube_fields: str = ""
    # Node labels that name a node's group or pool, in the order they are tried, and the nodeSelector keys that
    # pin a pod to a pool (whose value plans read, e.g. GKE's template pool).
    node_pool_labels: tuple[str, ...] = ()
    pod_pool_labels: tuple[str, ...] = ()
    # "module:attr" of its cluster reads (cidrx.kube.collect.ClusterReads): what the cluster collector reads
    # for it besides nodes, pods and events, and the kube section fields made from them.
    kube_collect: str = ""
    # "module:attr" of `applied_plans(snapshot) -> tuple[cidrx.model.applied.AppliedPlan, ...]`: the plans cidrx
    # applied in its estate (told by the plan tag/label on what they created) and the room their new space has
    # left; `expand --plan` refuses another expansion while one has room (unless --force).
    applied_plans: str = ""

    @property
    def flag(self) -> str:
        return f"--{self.name}"


@dataclass(frozen=True, kw_only=True)
class IpamSpec(_Spec):
    """An in-cluster IPAM, found in any provider's clusters by the API groups it serves."""

    api_groups: tuple[str, ...]
    # The module whose `collect_served(api, groups)` reads its section (None when the cluster does not run
    # it), `pod_refs(section)` names the pods its records point at and `cidrs(section)` the ranges it hands
    # out; the section is stored in the snapshot's kube section under `field`, typed `section`. Optional:
    # `pod_names(section)`, the pod name strings its records hold, which the collected pods then share.
    collect: str
    field: str
    # Collected only for these providers' targets (empty: all); such an IPAM is analysed as part of those
    # providers' diagnosis (their provider object asks the registry for it), not by cidrx.app.diagnose.
    providers: tuple[str, ...] = ()
    # "module:attr" of its object: for every IPAM `analyze(section, kube)`; for those of all providers the
    # whole `cidrx.providers.base.Ipam` (analysis, maps, the step APIs of its plans).
    ipam: str = ""
    # "module:attr" of `f(section) -> str`: why, in a cluster where this IPAM's section was found, Node.spec.podCIDR
    # says nothing about pod addresses ("" when the IPAM hands them out of it). Node IPAM's analysis defers then.
    ignores_node_pod_cidr: str = ""


@dataclass(frozen=True)
class Action:
    """A step action, declared once beside its executor, its undo and its Terraform: the `name` its steps
    carry, the `permissions` each of them declares (what `cidrx permissions` and the docs print without making
    a plan) and `executor`, its `Executor` class (or the "module:attr" path of one, imported when a plan is
    applied)."""

    name: str
    permissions: tuple[str, ...]
    executor: Any
    # How `cidrx rollback` takes the step back: its `Undo` class (cidrx.engine.undo) or a "module:attr" path
    # to one, and the permissions that undo needs. An action without one makes rollback refuse the whole plan
    # up front (exit 2), saying `no_undo` (why it cannot be undone) or that none is declared yet.
    undo: Any = ""
    undo_permissions: tuple[str, ...] = ()
    no_undo: str = ""
    # Its Terraform: a function (step, plan) -> HCL blocks, or None when the action has no Terraform equivalent.
    hcl: Any = None


@dataclass(frozen=True)
class Strategy:
    """A plan kind, one unit: `owner` is the provider or IPAM whose plans they are; `reclaim` plans are made
    by `cidrx reclaim`, the others by `cidrx expand --plan`. Three "module:attr" paths name its code:
    `actions` the tuple of `Action`s its plans use, `plan` its `make_plan(snapshot, opts, created_at) -> Plan`
    and `drift` its `check_drift(plan, snapshot, begun) -> None` (raises StalePlan). `basis` names its
    `read_basis(plan, snapshot) -> dict`: for every key of its plans' `basis`, what a fresh snapshot shows now
    (the plan's own work discounted); apply refuses a plan any key of which changed (cidrx.engine.basis)."""

    name: str
    owner: str
    help: str
    actions: str
    plan: str = ""
    drift: str = ""
    basis: str = ""
    reclaim: bool = False
    # The `expand --plan` options it reads (PlanOptions fields; None: all); others given are refused.
    options: frozenset[str] | None = None
    # (pattern, max length, words) a --pool-name must match: the name rule of what the plan creates.
    pool_name: tuple[str, int, str] | None = None
    # A migration onto space an applied plan added: planned while that space has room (the expansions are not).
    migration: bool = False


# The plugin packages, in the order their flags, findings and docs appear. Each `__init__.py` declares
# `SPEC` (a ProviderSpec or IpamSpec) and `STRATEGIES` (its Strategy declarations).
PACKAGES = (
    "cidrx.providers.eks",
    "cidrx.providers.gke",
    "cidrx.providers.aks",
    "cidrx.providers.k8s",
    "cidrx.ipam.whereabouts",
    "cidrx.ipam.calico",
    "cidrx.ipam.nodeipam",
    "cidrx.ipam.cilium",
)

_PROVIDERS: dict[str, ProviderSpec] = {}
_IPAMS: dict[str, IpamSpec] = {}
_STRATEGIES: dict[str, Strategy] = {}
_loaded: list[str] = []


def _ensure() -> None:
    """Register the declarations of every package in PACKAGES (once; their `__init__` imports only this
    module, so this costs no SDK)."""
    if _loaded:
        return
    _loaded.append("yes")
    for name in PACKAGES:
        package = importlib.import_module(name)
        register(package.SPEC, *package.STRATEGIES)


def register(spec: ProviderSpec | IpamSpec, *strategies: Strategy) -> None:
    """Add a provider or IPAM and the strategies it owns (tests register throw-away ones), after the packages."""
    _ensure()
    _COMPOSED.clear()  # the snapshot and kube section classes take the new plugin's fields
    if isinstance(spec, ProviderSpec):
        _PROVIDERS[spec.name] = spec
    else:
        _IPAMS[spec.name] = spec
    for s in strategies:
        _STRATEGIES[s.name] = s


def unregister(name: str) -> None:
    """Remove a provider or IPAM and its strategies (for tests that registered one)."""
    _COMPOSED.clear()
    _PROVIDERS.pop(name, None)
    _IPAMS.pop(name, None)
    for s in [s for s in _STRATEGIES.values() if s.owner == name]:
        del _STRATEGIES[s.name]


def providers() -> tuple[ProviderSpec, ...]:
    _ensure()
    return tuple(_PROVIDERS.values())


def provider_names() -> tuple[str, ...]:
    _ensure()
    return tuple(_PROVIDERS)


def provider_spec(name: str) -> ProviderSpec | None:
    _ensure()
    return _PROVIDERS.get(name)


def cloud_flags() -> tuple[str, ...]:
    """The flags of the providers whose targets are clouds (not reached through kubeconfig alone)."""
    return tuple(p.flag for p in providers() if not p.in_cluster)


def context_commands() -> tuple[str, ...]:
    """The commands that write a kubeconfig context for a cloud's cluster (`context_hint` without its
    arguments), for hints about stale credentials."""
    return tuple(p.context_hint.split(" {")[0].split(" --")[0] for p in providers() if p.context_hint)


def ipams() -> tuple[IpamSpec, ...]:
    _ensure()
    return tuple(_IPAMS.values())


def ipam_spec(name: str) -> IpamSpec | None:
    _ensure()
    return _IPAMS.get(name)


def strategies() -> tuple[Strategy, ...]:
    _ensure()
    return tuple(_STRATEGIES.values())


def strategy(name: str) -> Strategy | None:
    _ensure()
    return _STRATEGIES.get(name)


def ipam_strategies() -> tuple[str, ...]:
    """Strategies served by an in-cluster IPAM, whichever cloud the cluster runs on."""
    _ensure()
    return tuple(s.name for s in _STRATEGIES.values() if s.owner in _IPAMS)


def expand_strategies() -> tuple[str, ...]:
    """Every strategy `cidrx expand --plan` takes: the providers', then the in-cluster ones."""
    _ensure()
    own = [s for p in _PROVIDERS.values() for s in p.strategies]
    ipam = [s.name for s in _STRATEGIES.values() if s.owner in _IPAMS and not s.reclaim]
    return tuple(dict.fromkeys([*own, *ipam]))


def reclaim_strategies() -> tuple[str, ...]:
    _ensure()
    return tuple(s.name for s in _STRATEGIES.values() if s.reclaim)


def actions(owner: str | None = None) -> tuple[Action, ...]:
    """Every step action the strategies declare (of `owner`'s strategies only, when given), each once, in
    declaration order."""
    _ensure()
    found: dict[str, Action] = {}
    for s in _STRATEGIES.values():
        if owner is None or s.owner == owner:
            for a in load(s.actions):
                found.setdefault(a.name, a)
    return tuple(found.values())


def emit_formats() -> tuple[str, ...]:
    """What `expand --emit` takes: Terraform, then every format a provider or IPAM declares (`emits`)."""
    _ensure()
    declared = (name for spec in (*_PROVIDERS.values(), *_IPAMS.values()) for name, _, _ in spec.emits)
    return tuple(dict.fromkeys(["terraform", *declared]))


def plan_emitter(strategy_name: str, fmt: str) -> tuple[str, str] | None:
    """(file suffix, "module:attr" of the emitter) of format `fmt` for plans of `strategy_name`, as its owner
    declares them; None when the owner declares no such format."""
    owner = owner_of(strategy_name)
    return next(((suffix, path) for name, suffix, path in (owner.emits if owner else ()) if name == fmt), None)


def owner_of(strategy_name: str) -> ProviderSpec | IpamSpec | None:
    """The provider or IPAM that owns the strategy `strategy_name` (None: no such strategy)."""
    s = strategy(strategy_name)
    if s is None:
        return None
    return _PROVIDERS.get(s.owner) or _IPAMS.get(s.owner)


def resolve(ref: Any) -> Any:
    """A declared piece of code: `ref` itself, or what its "module:attr" path names."""
    return load(ref) if isinstance(ref, str) else ref


def strategy_actions(s: Strategy) -> tuple[Action, ...]:
    """The step actions `s`'s plans use."""
    return tuple(load(s.actions))


def step_permissions() -> dict[str, tuple[str, ...]]:
    """Every step action and the permissions its steps declare."""
    return {a.name: a.permissions for a in actions()}


def executors(declared: Iterable[Action]) -> dict[str, Any]:
    """{action name: a new instance of its Executor}: the table the apply engine runs (imports the steps
    modules)."""
    return {a.name: resolve(a.executor)() for a in declared}


# The base classes of a snapshot and of its kube section: the fields every snapshot has. The plugins' fields
# are added to them by `snapshot_type` / `kube_section_type` from the declarations.
SNAPSHOT = "cidrx.model.snapshot:Snapshot"
KUBE_SECTION = "cidrx.model.kube:KubeSection"
_COMPOSED: dict[str, Any] = {}  # the classes of the plugins registered now
# Every class composed so far, by its fields: the plugins registered again give the same class, so snapshots made
# before a throw-away plugin came and went still compare equal to new ones.
_BY_FIELDS: dict[tuple[Any, ...], Any] = {}


def kube_section_type() -> Any:
    """The kube section class with every plugin's fields: each provider's `kube_fields` (a module holding
    `FIELDS`, (name, type, default) triples, and optionally `invariant_problem(section)`), then each IPAM's
    section (`field`, typed `section | None`). Built once; a subclass of the base, so isinstance holds."""
    _ensure()
    if "kube" not in _COMPOSED:
        base = load(KUBE_SECTION)
        fields: list[tuple[str, Any, Any]] = []
        checks: list[Any] = []
        for p in _PROVIDERS.values():
            if p.kube_fields:
                module = importlib.import_module(p.kube_fields)
                fields += [(name, kind, _default(default)) for name, kind, default in module.FIELDS]
                if hasattr(module, "invariant_problem"):
                    checks.append(module.invariant_problem)
        for i in _IPAMS.values():
            if i.section:
                fields.append((i.field, load(i.section) | None, dataclasses.field(default=None)))
        _COMPOSED["kube"] = _compose(base, fields, checks)
    return _COMPOSED["kube"]


def snapshot_type() -> Any:
    """The snapshot class with a section per provider that declares one (field = the provider's name, typed
    `section | None`), before `fingerprint` and `schema` (written last, so a truncated file lacks them)."""
    _ensure()
    if "snapshot" not in _COMPOSED:
        base = load(SNAPSHOT)
        kube = kube_section_type()
        fields: list[tuple[str, Any, Any]] = [("kube", kube, dataclasses.field())]
        fields += [
            (p.name, load(p.section) | None, dataclasses.field(default=None)) for p in _PROVIDERS.values() if p.section
        ]
        fields += [(name, kind, dataclasses.field(default=default)) for name, kind, default in base.TAIL_FIELDS]
        _COMPOSED["snapshot"] = _compose(base, fields, [])
    return _COMPOSED["snapshot"]


def _default(default: Any) -> Any:
    """A dataclass field for a declared default (a callable makes a fresh value each time)."""
    return dataclasses.field(default_factory=default) if callable(default) else dataclasses.field(default=default)


def _compose(base: Any, fields: list[tuple[str, Any, Any]], checks: list[Any]) -> Any:
    key = (base, *((name, kind) for name, kind, _ in fields), *checks)
    if key not in _BY_FIELDS:
        _BY_FIELDS[key] = _make(base, fields, checks)
    return _BY_FIELDS[key]


def _make(base: Any, fields: list[tuple[str, Any, Any]], checks: list[Any]) -> Any:
    namespace: dict[str, Any] = {"__module__": base.__module__, "__qualname__": base.__qualname__}
    if checks:
        own = base.invariant_problem

        def invariant_problem(self: Any) -> str | None:
            return own(self) or next((p for check in checks if (p := check(self)) is not None), None)

        namespace["invariant_problem"] = invariant_problem
    return dataclasses.make_dataclass(base.__name__, fields, bases=(base,), frozen=True, namespace=namespace)


def load(path: str) -> Any:
    """The object a lazy "module:attr" path names (imports the module)."""
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)
