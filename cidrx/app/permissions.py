"""Least privilege: what cidrx needs from AWS IAM, Google Cloud IAM and Kubernetes RBAC, per provider.

Why it exists: cidrx runs from CI with credentials someone has to grant, and a grant wider than needed is a
risk while a narrower one fails mid-incident. So the lists are not kept by hand here: cloud reads come from
each provider object (`cloud_permissions`), Kubernetes reads from each plugin's declaration (`kube_reads`,
its DaemonSet and ConfigMaps), and writes from the `Action`s each plan module declares (a
step action's name, permissions and executor) and attaches to its Steps. No plan is made, so the command
works wherever cidrx is installed (no example snapshots needed); tests check that every step real plans
carry is covered, and that the calls a real diagnose and apply make are granted. Pure: documents (plain
dicts) out.

Step notation: cloud permissions are given as the cloud names them ("ec2:CreateSubnet",
"compute.subnetworks.update"); Kubernetes ones as "kubernetes: <plural>[.<group>] <verb>,<verb> [in <ns>]".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cidrx import registry
from cidrx.errors import CidrxError

PURPOSES = ("diagnose", "apply", "rollback", "all")
# The plan's lock an apply or rollback holds in the cluster (cidrx.engine.lock): a Lease it creates, renews
# (update) and deletes, in the namespace cidrx.engine.lock.LEASE_NAMESPACE.
LOCK_GRANT = "kubernetes: leases.coordination.k8s.io get,create,update,delete in kube-system"
KUBE_PREFIX = "kubernetes:"
READ_VERBS = frozenset({"get", "list", "watch"})
# Verbs RBAC can limit to named objects (list/create/watch cannot be: RBAC docs, "Referring to resources").
NAMEABLE_VERBS = frozenset({"get", "update", "patch", "delete"})
# Plurals the step notation writes without a group: the core ("") and apps groups.
UNGROUPED = {
    "pods": "",
    "nodes": "",
    "events": "",
    "configmaps": "",
    "namespaces": "",
    "services": "",
    "daemonsets": "apps",
}
DISCOVERY_PATHS = ("/apis",)  # collect reads the served API groups once (GET /apis)
PASS_ROLE = "iam:PassRole"
AWS_VERSION = "2012-10-17"

_AWS_ACTION = re.compile(r"^[a-z0-9-]+:[A-Za-z0-9]+$")
_GCP_PERMISSION = re.compile(r"^[a-z]+(\.[A-Za-z]+){2,}$")
# The cloud IAM systems a provider's permissions are written for (`ProviderSpec.iam`), by their notation.
_AZURE_ACTION = re.compile(r"^Microsoft\.[A-Za-z]+(/[A-Za-z]+)+/(read|write|delete|action)$")
_NOTATIONS = {"aws": _AWS_ACTION, "gcp": _GCP_PERMISSION, "azure": _AZURE_ACTION}
_KUBE = re.compile(
    r"^kubernetes:\s*(?P<res>[a-z0-9-]+(/[a-z]+)?(\.[a-z0-9.-]+)?)\s+(?P<verbs>[a-z]+(,[a-z]+)*)(\s+in\s+(?P<ns>[a-z0-9-]+))?"
    r"(\s+named\s+(?P<names>[a-z0-9.-]+(,[a-z0-9.-]+)*))?$"
)


class PermissionNotation(CidrxError):
    """A step declares a permission cidrx cannot turn into a policy (a bug in the step's plan module)."""


@dataclass(frozen=True)
class KubeGrant:
    group: str
    resource: str
    verbs: tuple[str, ...]
    namespace: str | None = None
    names: tuple[str, ...] = ()  # the only objects read or written (`... named a,b`), when the verbs allow naming

    def notation(self) -> str:
        res = f"{self.resource}.{self.group}" if self.group and UNGROUPED.get(self.resource) != self.group else ""
        where = f" in {self.namespace}" if self.namespace else ""
        named = f" named {','.join(self.names)}" if self.names else ""
        return f"{KUBE_PREFIX} {res or self.resource} {','.join(self.verbs)}{where}{named}"


@dataclass(frozen=True)
class StepNeed:
    """What the steps of one action declare, in one plan kind, for the per-step table."""

    strategy: str
    action: str
    permissions: tuple[str, ...]


@dataclass(frozen=True)
class Needs:
    """Everything one provider needs for one purpose."""

    provider: str
    purpose: str
    read: tuple[str, ...]  # cloud permissions for collect (diagnose, snapshot, plan, and apply's re-collect)
    write: tuple[str, ...]  # cloud permissions the apply steps add (empty for diagnose)
    kube: tuple[KubeGrant, ...]
    steps: tuple[StepNeed, ...]


def parse_kube(text: str) -> KubeGrant:
    """`kubernetes: leases.coordination.k8s.io get,update in kube-system` as a KubeGrant."""
    m = _KUBE.match(text.strip())
    if m is None:
        raise PermissionNotation(f"cannot read Kubernetes permission {text!r}")
    res = m["res"]
    # A subresource is named after its resource (`pods/eviction`): RBAC grants it as one resource name.
    base = res.split(".", 1)[0].split("/", 1)[0]
    if "." in res:
        plural, group = res.split(".", 1)
    elif base in UNGROUPED:
        plural, group = res, UNGROUPED[base]
    else:
        raise PermissionNotation(f"Kubernetes permission {text!r}: name the API group of {res!r}")
    names = tuple(m["names"].split(",")) if m["names"] else ()
    return KubeGrant(group, plural, tuple(m["verbs"].split(",")), m["ns"], names)


def _kube(group: str, resource: str, *verbs: str, namespace: str | None = None) -> KubeGrant:
    return KubeGrant(group, resource, verbs, namespace)


def resource_names() -> dict[tuple[str, str], tuple[str, ...]]:
    """The only objects of these resources cidrx touches; rules for them name the objects: the DaemonSets
    and ConfigMaps the providers declare, and what the plugins' reads name (`kube_reads` ... `named X`)."""
    names: dict[tuple[str, str], list[str]] = {}

    def add(key: tuple[str, str], *found: str) -> None:
        kept = names.setdefault(key, [])
        kept += [n for n in found if n not in kept]

    for spec in registry.providers():
        if spec.kube_daemonset is not None:
            add(("apps", "daemonsets"), spec.kube_daemonset[1])
    for declared in (*registry.ipams(), *registry.providers()):
        for grant in (parse_kube(text) for text in declared.kube_reads):
            add((grant.group, grant.resource), *grant.names)
    for spec in registry.providers():
        add(("", "configmaps"), *(name for _ns, name in spec.kube_configmaps))
    return {key: tuple(found) for key, found in names.items() if found}


# What the cluster collector (cidrx.kube.collect.collect_with) lists on every target, whatever its plugins.
CLUSTER_READS = ("kubernetes: nodes list", "kubernetes: pods list", "kubernetes: events list")


def collect_kube_grants(provider: str) -> tuple[KubeGrant, ...]:
    """What the Kubernetes collector reads for `provider` (cidrx.kube.collect.collect_with and the IPAM
    collectors it calls): one list per resource, and what each plugin read for its targets declares
    (`kube_reads`, the provider's DaemonSet and ConfigMaps)."""
    spec = registry.provider_spec(provider)
    reads = list(CLUSTER_READS)
    for ipam in registry.ipams():
        if not ipam.providers or provider in ipam.providers:
            reads += ipam.kube_reads
    grants = [parse_kube(text) for text in reads]
    if spec is not None and spec.kube_daemonset is not None:
        grants.append(_kube("apps", "daemonsets", "get", namespace=spec.kube_daemonset[0]))
    for namespace, _name in spec.kube_configmaps if spec is not None else ():
        grants.append(_kube("", "configmaps", "get", namespace=namespace))
    grants += [parse_kube(text) for text in (spec.kube_reads if spec is not None else ())]
    return tuple(grants)


def collect_cloud_permissions(provider: str) -> tuple[str, ...]:
    """What collect reads, plus the listing of fleet mode (`diagnose --all-clusters`)."""
    from cidrx.app.owners import provider_named

    return provider_named(provider).cloud_permissions()


# -- what the apply steps need ---------------------------------------------------------------------------


def strategy_provider(strategy: str) -> str | None:
    """The provider whose targets a plan kind runs on; None for the in-cluster plans, which run on all."""
    s = registry.strategy(strategy)
    return s.owner if s is not None and registry.provider_spec(s.owner) is not None else None


def step_permissions() -> dict[str, tuple[str, ...]]:
    """Every step action and the permissions its steps declare, from the plan modules."""
    return registry.step_permissions()


def step_needs(provider: str) -> list[StepNeed]:
    """What the steps of every plan kind that can run on `provider`'s targets declare."""
    out = []
    for s in registry.strategies():
        if strategy_provider(s.name) not in (None, provider):
            continue
        out += [StepNeed(s.name, a.name, a.permissions) for a in registry.strategy_actions(s)]
    return sorted(out, key=lambda n: (n.strategy, n.action))


def undo_needs(provider: str) -> list[StepNeed]:
    """What `cidrx rollback` needs per step action of every expand plan kind that can run on `provider`'s
    targets: each Action's `undo_permissions` (actions without an undo are left out: rollback refuses them)."""
    out = []
    for s in registry.strategies():
        if s.reclaim or strategy_provider(s.name) not in (None, provider):
            continue
        out += [StepNeed(s.name, f"undo {a.name}", a.undo_permissions) for a in registry.strategy_actions(s) if a.undo]
    return sorted(out, key=lambda n: (n.strategy, n.action))


# -- what a provider needs ---------------------------------------------------------------------------


def _is_kube(permission: str) -> bool:
    return permission.startswith(KUBE_PREFIX)


def _check_cloud(provider: str, permission: str) -> None:
    spec = registry.provider_spec(provider)
    pattern = _NOTATIONS.get(spec.iam) if spec is not None and spec.iam else None
    if pattern is None or not pattern.match(permission):
        raise PermissionNotation(f"{permission!r} is not a {provider.upper()} permission")


def needs(provider: str, purpose: str) -> Needs:
    """What `provider` needs for `purpose`: diagnose = what collect reads (also enough for snapshot and
    --plan); apply = that (apply collects again before it writes) plus what the steps of every plan kind
    that runs on `provider`'s targets declare; rollback = the reads plus what each step's undo declares;
    apply and rollback also hold the plan's Lease. "all" is apply and rollback together."""
    if registry.provider_spec(provider) is None:
        raise ValueError(f"unknown provider {provider!r}")
    if purpose not in PURPOSES:
        raise ValueError(f"unknown purpose {purpose!r}")
    read = collect_cloud_permissions(provider)
    kube = list(collect_kube_grants(provider))
    write: list[str] = []
    steps = step_needs(provider) if purpose in ("apply", "all") else []
    if purpose in ("rollback", "all"):
        steps += undo_needs(provider)
    if purpose != "diagnose":
        kube.append(parse_kube(LOCK_GRANT))
    for need in steps:
        for perm in need.permissions:
            if _is_kube(perm):
                kube.append(parse_kube(perm))
            else:
                _check_cloud(provider, perm)
                write.append(perm)
    extra = tuple(sorted(set(write) - set(read)))
    return Needs(provider, purpose, tuple(sorted(set(read))), extra, tuple(kube), tuple(steps))


# -- documents -----------------------------------------------------------------------------------------


def iam_policy(n: Needs) -> dict[str, Any]:
    """The AWS IAM policy document: reads, writes, and iam:PassRole only towards EKS (for the node
    role of a new node group; the role's ARN is not known before a plan is made)."""
    statements: list[dict[str, Any]] = [
        {"Sid": "CidrxRead", "Effect": "Allow", "Action": list(n.read), "Resource": "*"},
    ]
    writes = [a for a in n.write if a != PASS_ROLE]
    if writes:
        statements.append({"Sid": "CidrxApply", "Effect": "Allow", "Action": writes, "Resource": "*"})
    if PASS_ROLE in n.write:
        statements.append(
            {
                "Sid": "CidrxPassNodeRoleToEks",
                "Effect": "Allow",
                "Action": PASS_ROLE,
                "Resource": "*",
                "Condition": {"StringEquals": {"iam:PassedToService": "eks.amazonaws.com"}},
            }
        )
    return {"Version": AWS_VERSION, "Statement": statements}


def gcp_permissions(n: Needs) -> list[str]:
    return sorted({*n.read, *n.write})


def by_project(n: Needs) -> dict[str, list[str]]:
    """The provider's permissions split by project (GKE under Shared VPC: host and service project), when the
    provider says how (`permissions_by_project`); else {}."""
    from cidrx.app.owners import provider_named

    split = getattr(provider_named(n.provider), "permissions_by_project", None)
    return dict(split(gcp_permissions(n))) if split is not None else {}


def gcp_role(n: Needs) -> dict[str, Any]:
    """A custom role in the format `gcloud iam roles create ROLE --project P --file FILE` reads."""
    what = {
        "diagnose": "diagnose GKE pod IP exhaustion",
        "rollback": "roll back what it added to GKE pod ranges",
    }.get(n.purpose, "diagnose and expand GKE pod ranges")
    return {
        "title": f"cidrx {n.purpose}",
        "description": f"Least privilege for cidrx to {what} (`cidrx permissions --gke --for {n.purpose}`)",
        "stage": "GA",
        "includedPermissions": gcp_permissions(n),
    }


def azure_role(n: Needs) -> dict[str, Any]:
    """An Azure custom role definition, as `az role definition create --role-definition FILE` reads it; the
    assignable scope is a placeholder for the subscription (or resource groups) it is created in."""
    return {
        "Name": f"cidrx {n.purpose}",
        "IsCustom": True,
        "Description": f"Least privilege for cidrx (`cidrx permissions --{n.provider} --for {n.purpose}`)",
        "Actions": sorted({*n.read, *n.write}),
        "NotActions": [],
        "DataActions": [],
        "NotDataActions": [],
        "AssignableScopes": ["/subscriptions/SUBSCRIPTION_ID"],
    }


def rbac_rules(grants: Iterable[KubeGrant]) -> list[dict[str, Any]]:
    """ClusterRole rules: one per (group, resource) with the union of verbs, naming the objects where the
    verbs allow it (`resource_names`), then the discovery read."""
    named = resource_names()
    verbs: dict[tuple[str, str], set[str]] = {}
    for g in grants:
        verbs.setdefault((g.group, g.resource), set()).update(g.verbs)
    rules: list[dict[str, Any]] = []
    for (group, resource), vs in sorted(verbs.items()):
        rule: dict[str, Any] = {"apiGroups": [group], "resources": [resource], "verbs": sorted(vs)}
        names = named.get((group, resource))
        if names and vs <= NAMEABLE_VERBS:
            rule["resourceNames"] = list(names)
        rules.append(rule)
    rules.append({"nonResourceURLs": list(DISCOVERY_PATHS), "verbs": ["get"]})
    return rules


def role_name(n: Needs) -> str:
    """The ClusterRole's name: one per provider and purpose (`cidrx-eks-diagnose`), so the roles of several
    targets and purposes can live side by side in one cluster without overwriting each other."""
    return f"cidrx-{n.provider}-{n.purpose}"


def gcp_role_id(n: Needs) -> str:
    """The custom role's id for `gcloud iam roles create` (letters, digits, `_` and `.` only): one per purpose,
    `cidrx_gke_diagnose`, so a project can hold the diagnose and apply roles at once."""
    return f"cidrx_{n.provider}_{n.purpose}"


def cluster_role(n: Needs) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {
            "name": role_name(n),
            "labels": {"app.kubernetes.io/name": "cidrx"},
        },
        "rules": rbac_rules(n.kube),
    }


def allows(rules: Sequence[Mapping[str, Any]], verb: str, group: str, resource: str, name: str | None = None) -> bool:
    """Whether `rules` let `verb` on `resource` in `group` (object `name`) through, as RBAC decides."""
    for r in rules:
        if "nonResourceURLs" in r:
            continue
        if group not in r["apiGroups"] and "*" not in r["apiGroups"]:
            continue
        if resource not in r["resources"] and "*" not in r["resources"]:
            continue
        if verb not in r["verbs"] and "*" not in r["verbs"]:
            continue
        names = r.get("resourceNames")
        if names and (name is None or name not in names):
            continue
        return True
    return False


def allows_path(rules: Sequence[Mapping[str, Any]], verb: str, path: str) -> bool:
    return any(path in r.get("nonResourceURLs", ()) and verb in r["verbs"] for r in rules)


def document(n: Needs) -> dict[str, Any]:
    """Everything `cidrx permissions -o json` prints."""
    doc: dict[str, Any] = {"schema": "cidrx.permissions/v1", "provider": n.provider, "for": n.purpose}
    spec = registry.provider_spec(n.provider)
    iam = spec.iam if spec is not None else ""
    if iam == "aws":
        doc["iam_policy"] = iam_policy(n)
    elif iam == "gcp":
        doc["gcp_permissions"] = gcp_permissions(n)
        doc["gcp_role"] = gcp_role(n)
        split = by_project(n)
        if split:
            doc["gcp_projects"] = split
    elif iam == "azure":
        doc["azure_role"] = azure_role(n)
    doc["cluster_role"] = cluster_role(n)
    doc["steps"] = [{"strategy": s.strategy, "action": s.action, "permissions": list(s.permissions)} for s in n.steps]
    return doc
