"""AKS diagnosis: how many more nodes each subnet the cluster uses can take under its network plugin mode, and
why AKS says `SubnetIsFull` or `InsufficientSubnetSize`, as findings and capacity figures. A pure function of
the snapshot, so it runs the same online and offline.

The rules per mode are in cidrx.providers.aks.facts.subnets (Azure CNI node subnet reserves every pod address
of a node up front and checks the autoscaler's whole range; pod subnets hand out batches of 16; Overlay and
kubenet give each node a /24 of the pod CIDR; kubenet's routes live in a route table of at most 400 routes).
Finding ids are stable (docs/findings.md lists them).
"""

from __future__ import annotations

from cidrx.errors import InvalidInput
from cidrx.model.findings import Capacity, Diagnosis, Finding, FindingKind, Severity, make_diagnosis, utilization
from cidrx.model.kube import KubeSection
from cidrx.model.snapshot import Snapshot
from cidrx.providers.aks.facts.subnets import (
    AZURE_RESERVED_PER_SUBNET,
    KUBENET,
    KUBENET_ROUTE_LIMIT,
    OVERLAY,
    OVERLAY_NODE_PREFIX,
    PodCidrUse,
    SubnetUse,
    cluster_mode,
    pod_cidr_use,
    subnet_uses,
)
from cidrx.providers.aks.model import AksSection
from cidrx.providers.aks.netmap import network_space_capacity

AKS_SUBNET_FULL = FindingKind.parse(
    """AKS-SUBNET-FULL (critical): A node subnet has fewer free addresses than one more node takes there (its
    own address, and with Azure CNI node subnet every pod address too): scaling, upgrading or creating nodes
    fails with `SubnetIsFull`."""
)

AKS_SUBNET_TOO_SMALL = FindingKind.parse(
    """AKS-SUBNET-TOO-SMALL (warning or critical): The agent pools on a node subnet may autoscale to more nodes
    than it holds: AKS checks (max nodes + 1) x (max pods + 1) addresses up front and refuses with
    `InsufficientSubnetSize`; critical when not even the current nodes plus the upgrade surge fit."""
)

AKS_POD_SUBNET_EXHAUSTED = FindingKind.parse(
    """AKS-POD-SUBNET-EXHAUSTED (critical or warning): A pod subnet (dynamic allocation) has no batch of 16
    addresses left for another node, or Azure CNI's ClusterSubnetState says it is exhausted: new pods stay in
    ContainerCreating; warning when it runs low."""
)

AKS_OVERLAY_POD_CIDR_EXHAUSTED = FindingKind.parse(
    """AKS-OVERLAY-POD-CIDR-EXHAUSTED (critical or warning): Every /24 of the cluster's pod CIDR (Azure CNI
    Overlay, kubenet) is given to a node, or the pools may autoscale past what it holds. AKS cannot expand the
    pod CIDR of an existing cluster, so `cidrx expand` refuses and says what can be done instead."""
)

AKS_KUBENET_ROUTE_LIMIT = FindingKind.parse(
    """AKS-KUBENET-ROUTE-LIMIT (critical or warning): A kubenet cluster needs one route per node in its route
    table, which holds at most 400 routes: the cluster cannot grow past 400 nodes."""
)

AKS_SUBNET_ERRORS_SEEN = FindingKind.parse(
    """AKS-SUBNET-ERRORS-SEEN (critical): Cluster events report `SubnetIsFull` or `InsufficientSubnetSize`, or
    pods failing for lack of addresses: the shortage already stops work."""
)

KINDS = FindingKind.all_in(globals())

ERROR_WORDS = ("SubnetIsFull", "InsufficientSubnetSize", "subnet is full", "no available addresses")
UNREACHABLE = "Kubernetes API not reached: nodes, pending pods, events and ClusterSubnetStates were not read"
UNREACHABLE_FIX = "Run with a kubeconfig for the cluster (`az aks get-credentials`) for the in-cluster checks."


def aks_section(snapshot: Snapshot) -> AksSection:
    aks: AksSection | None = snapshot.aks
    if aks is None:
        raise InvalidInput("this snapshot has no AKS section; it was taken for another provider")
    return aks


def _pools(u: SubnetUse) -> str:
    return ", ".join(p.name for p in u.pools)


def _subnet_findings(aks: AksSection, uses: list[SubnetUse], fix: str, kube: KubeSection) -> list[Finding]:
    out: list[Finding] = []
    c = aks.cluster
    exhausted_states = {s.name for s in (getattr(kube, "cluster_subnet_states", None) or ()) if s.exhausted}
    for u in uses:
        s = u.subnet
        subject = f"subnet {s.name}"
        base = (
            f"{s.address_prefix}: {u.used} of {u.size} usable addresses taken ({AZURE_RESERVED_PER_SUBNET} kept by "
            f"Azure), {u.free} free",
        )
        if u.role == "nodes":
            if u.free < u.per_node:
                out.append(
                    AKS_SUBNET_FULL.finding(
                        Severity.CRITICAL,
                        subject,
                        f"node subnet {s.address_prefix} is full: {u.free} free, one more node takes {u.per_node} "
                        "(SubnetIsFull)",
                        (*base, f"pools on it: {_pools(u)} ({u.mode}; a node takes {u.per_node} address(es))"),
                        fix,
                    )
                )
            if u.required > u.size:
                surge = (u.nodes + len(u.pools)) * u.per_node
                severity = Severity.CRITICAL if surge > u.size else Severity.WARNING
                rule = " + ".join(f"({p.max_nodes} + 1) x {u.per_node}" for p in u.pools)
                out.append(
                    AKS_SUBNET_TOO_SMALL.finding(
                        severity,
                        subject,
                        f"node subnet {s.address_prefix} holds {u.max_nodes} node(s), but its pools may grow to "
                        f"{sum(p.max_nodes for p in u.pools)}: AKS needs {u.required} addresses up front "
                        "(InsufficientSubnetSize)",
                        (*base, f"up front: {rule} = {u.required} > {u.size}"),
                        fix,
                    )
                )
        else:
            flagged = s.name in exhausted_states
            if u.free < u.per_node or flagged:
                evidence: tuple[str, ...] = (
                    *base,
                    f"pools on it: {_pools(u)}; addresses are handed to nodes 16 at a time",
                )
                if flagged:
                    evidence = (*evidence, f"ClusterSubnetState {s.name}: status.exhausted is true")
                out.append(
                    AKS_POD_SUBNET_EXHAUSTED.finding(
                        Severity.CRITICAL,
                        subject,
                        f"pod subnet {s.address_prefix} is exhausted: {u.free} free, a node's next batch takes 16",
                        evidence,
                        fix,
                    )
                )
            elif u.required > u.size:
                out.append(
                    AKS_POD_SUBNET_EXHAUSTED.finding(
                        Severity.WARNING,
                        subject,
                        f"pod subnet {s.address_prefix} cannot give every node its pods at the autoscaler's max "
                        f"({u.required} addresses needed, {u.size} usable)",
                        (*base, f"pools on it: {_pools(u)}"),
                        fix,
                    )
                )
    del c
    return out


OVERLAY_WAY_OUT = (
    "AKS cannot expand the pod CIDR of an existing Overlay or kubenet cluster (Azure/AKS#4591). Instead: lower "
    "the pools' max node counts to what the CIDR holds, move workloads to another cluster with room, or create "
    "a new cluster with a larger --pod-cidr (a /16 holds 256 nodes) and migrate the workloads to it."
)


def _pod_cidr_findings(aks: AksSection, use: PodCidrUse) -> list[Finding]:
    evidence = (
        f"pod CIDR {use.cidr}: {use.max_nodes} node block(s) of /{OVERLAY_NODE_PREFIX}, {use.nodes} node(s) hold one",
        f"pools may autoscale to {use.autoscaler_max} node(s)",
    )
    if use.nodes >= use.max_nodes:
        severity, summary = Severity.CRITICAL, f"pod CIDR {use.cidr} is exhausted: every /24 is given to a node"
    elif use.autoscaler_max > use.max_nodes or use.nodes >= 0.9 * use.max_nodes:
        severity = Severity.WARNING
        summary = f"pod CIDR {use.cidr} holds {use.max_nodes} nodes; the pools may grow to {use.autoscaler_max}"
    else:
        return []
    return [
        AKS_OVERLAY_POD_CIDR_EXHAUSTED.finding(
            severity, f"cluster {aks.cluster.name}", summary, evidence, OVERLAY_WAY_OUT
        )
    ]


def _route_findings(aks: AksSection) -> list[Finding]:
    nodes = sum(p.count for p in aks.agent_pools)
    most = sum(p.max_nodes for p in aks.agent_pools)
    routes = max((len(t.routes) for t in aks.route_tables), default=0)
    if max(nodes, routes) >= KUBENET_ROUTE_LIMIT:
        severity = Severity.CRITICAL
    elif most > KUBENET_ROUTE_LIMIT:
        severity = Severity.WARNING
    else:
        return []
    return [
        AKS_KUBENET_ROUTE_LIMIT.finding(
            severity,
            f"cluster {aks.cluster.name}",
            f"kubenet needs a route per node and a route table holds {KUBENET_ROUTE_LIMIT}: {nodes} node(s) now, "
            f"up to {most} by the autoscaler",
            tuple(f"route table {t.name}: {len(t.routes)} route(s)" for t in aks.route_tables),
            "Migrate the cluster to Azure CNI Overlay (az aks update --network-plugin azure --network-plugin-mode "
            "overlay), which needs no route per node, or keep the pools' max counts under 400 nodes in total.",
        )
    ]


def _event_findings(kube: KubeSection, fix: str) -> list[Finding]:
    seen = [e for e in kube.events if any(w.lower() in e.message.lower() for w in ERROR_WORDS)]
    if not seen:
        return []
    return [
        AKS_SUBNET_ERRORS_SEEN.finding(
            Severity.CRITICAL,
            "cluster events",
            f"{len(seen)} event(s) report subnet exhaustion",
            tuple(f"{e.kind} {e.namespace}/{e.name} {e.reason}: {e.message[:160]}" for e in seen[:5]),
            fix,
        )
    ]


def _capacity(uses: list[SubnetUse], pod: PodCidrUse | None, aks: AksSection) -> list[Capacity]:
    out = [
        Capacity(
            "subnet",
            u.subnet.name,
            u.subnet.address_prefix,
            u.size,
            u.used,
            u.free,
            utilization(u.used, u.size),
            max_nodes=u.max_nodes,
            nodes=u.nodes,
            note=f"{u.role} ({u.mode}); {u.per_node} per node; pools {_pools(u)}; up front {u.required}",
        )
        for u in uses
    ]
    if pod is not None:
        out.append(
            Capacity(
                "pod-cidr",
                aks.cluster.name,
                pod.cidr,
                pod.max_nodes,
                pod.nodes,
                max(0, pod.max_nodes - pod.nodes),
                utilization(pod.nodes, pod.max_nodes),
                max_nodes=pod.max_nodes,
                nodes=pod.nodes,
                note=f"/{OVERLAY_NODE_PREFIX} per node; cannot be expanded",
            )
        )
    if cluster_mode(aks.cluster) == KUBENET:
        routes = max((len(t.routes) for t in aks.route_tables), default=sum(p.count for p in aks.agent_pools))
        out.append(
            Capacity(
                "route-table",
                aks.route_tables[0].name if aks.route_tables else aks.cluster.name,
                None,
                KUBENET_ROUTE_LIMIT,
                routes,
                max(0, KUBENET_ROUTE_LIMIT - routes),
                utilization(routes, KUBENET_ROUTE_LIMIT),
                note="a route per node",
            )
        )
    return out


def analyze(snapshot: Snapshot) -> Diagnosis:
    aks = aks_section(snapshot)
    kube = snapshot.kube
    uses = subnet_uses(aks)
    fix = f"Add a subnet and an agent pool using it: `cidrx expand {snapshot.target.flags()} --plan --out plan.json`."
    findings = _subnet_findings(aks, uses, fix, kube)
    pod = pod_cidr_use(aks)
    mode = cluster_mode(aks.cluster)
    if pod is not None and mode in (OVERLAY, KUBENET):
        findings += _pod_cidr_findings(aks, pod)
    if mode == KUBENET:
        findings += _route_findings(aks)
    findings += _event_findings(kube, OVERLAY_WAY_OUT if mode == OVERLAY else fix)
    if not kube.available:
        from cidrx.model.findings import kube_unreachable

        findings.append(kube_unreachable(UNREACHABLE, UNREACHABLE_FIX, reason=kube.reason or "no Kubernetes access"))
    capacity = _capacity(uses, pod, aks) + network_space_capacity(snapshot)
    return make_diagnosis(snapshot.target, snapshot.fingerprint, capacity, findings)
