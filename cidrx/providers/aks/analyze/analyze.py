"""AKS diagnosis: how many more nodes each subnet the cluster uses can take under its network plugin mode, and
why AKS says `SubnetIsFull` or `InsufficientSubnetSize`, as findings and capacity figures. A pure function of
the snapshot, so it runs the same online and offline.

The rules per mode are in cidrx.providers.aks.facts.subnets (Azure CNI node subnet reserves every pod address
of a node up front and checks the autoscaler's whole range; pod subnets hand out batches of 16; Overlay and
kubenet give each node a /24 of the pod CIDR; kubenet's routes live in a route table of at most 400 routes).
Finding ids are stable (docs/findings.md lists them).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from cidrx.errors import InvalidInput
from cidrx.model.findings import Capacity, Diagnosis, Finding, FindingKind, Severity, make_diagnosis, utilization
from cidrx.model.kube import KubeSection, parse_time
from cidrx.model.snapshot import Snapshot
from cidrx.providers.aks.facts.applied import AppliedPool, applied_pools
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
    """AKS-SUBNET-FULL (critical or info): A node subnet has fewer free addresses than one more node takes there
    (its own address, and with Azure CNI node subnet every pod address too): scaling, upgrading or creating nodes
    fails with `SubnetIsFull`; info once a pool cidrx added (AKS-PLAN-APPLIED) takes the new nodes."""
)

AKS_SUBNET_TOO_SMALL = FindingKind.parse(
    """AKS-SUBNET-TOO-SMALL (warning or critical or info): The agent pools on a node subnet may autoscale to more
    nodes than it holds: AKS checks (max nodes + 1) x (max pods + 1) addresses up front and refuses with
    `InsufficientSubnetSize`; critical when not even the current nodes plus the upgrade surge fit; info once a pool
    cidrx added (AKS-PLAN-APPLIED) takes the new nodes."""
)

AKS_POD_SUBNET_EXHAUSTED = FindingKind.parse(
    """AKS-POD-SUBNET-EXHAUSTED (critical or warning): A pod subnet (dynamic allocation) has no batch of 16
    addresses left for another node, or Azure CNI's ClusterSubnetState says it is exhausted: new pods stay in
    ContainerCreating; warning when it runs low, or once a pool cidrx added (AKS-PLAN-APPLIED) has a pod subnet
    with room (pods placed on the old pool's nodes still fail until they move)."""
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

AKS_PLAN_APPLIED = FindingKind.parse(
    """AKS-PLAN-APPLIED (info or warning): A plan cidrx applied (its agent pool carries the `cidrx-plan` tag), with
    the room its new subnet has left. After an `aks-node-pool` plan nothing has to move: Azure CNI gave every
    existing node its pods' addresses when it was created, so the full subnet stops only new nodes, and those go
    to the new pool; the full subnet is then reported as info. After an `aks-pod-subnet` plan the old
    pool's nodes still take batches of 16 from the old pod subnet as their pods grow, so pods placed on them keep
    failing until they move to the new pool (warning). The old subnet turns critical again when the new subnet
    runs out too, and `expand --plan` refuses another expansion while the new subnet has room."""
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


def _event_findings(kube: KubeSection, fix: str, since: datetime | None = None) -> tuple[list[Finding], int]:
    """AKS-SUBNET-ERRORS-SEEN, and how many such events were left out as older than `since` (the creation of an
    applied plan's pool with room: they tell of the shortage it answered)."""
    seen = [e for e in kube.events if any(w.lower() in e.message.lower() for w in ERROR_WORDS)]
    stale = [e for e in seen if since is not None and (t := parse_time(e.last_seen)) is not None and t < since]
    seen = [e for e in seen if e not in stale]
    if not seen:
        return [], len(stale)
    return [
        AKS_SUBNET_ERRORS_SEEN.finding(
            Severity.CRITICAL,
            "cluster events",
            f"{len(seen)} event(s) report subnet exhaustion",
            tuple(f"{e.kind} {e.namespace}/{e.name} {e.reason}: {e.message[:160]}" for e in seen[:5]),
            fix,
        )
    ], len(stale)


# What a full node subnet means once a node-pool plan's pool has room (docs/cloud-facts.md, "AKS after an
# expansion").
NO_MIGRATION = (
    "Nothing has to move: Azure CNI gave each node on subnet {old} its pods' addresses when the node was created, "
    "so those nodes and their pods carry on; the full subnet stops only new nodes, and cluster-autoscaler adds "
    "those to agent pool {pool} (subnet {new}, room for {room} more node(s)). Pool(s) {pools} cannot scale up or "
    "take an upgrade's surge node on the full subnet: set their max count to their node count (`az aks nodepool "
    "update --update-cluster-autoscaler --max-count N`), or move their workloads to {pool} before their next upgrade."
)
# What a full pod subnet means once a pod-subnet plan's pool has room (docs/cloud-facts.md, "AKS after an
# expansion").
MOVE_PODS = (
    "Move the workloads: the nodes of {pools} still take batches of 16 addresses from pod subnet {old} as their "
    "pods grow, and the scheduler keeps placing pods on them, where they stay in ContainerCreating. Move them to "
    "agent pool {pool} (pod subnet {new}, room for {room} more batch(es) of 16) with cidrx's migration plan (it "
    "cordons those nodes, evicts their pods through the Eviction API and scales {pools} to 0): "
    "`cidrx expand {flags} --plan --out plan.json --strategy aks-migrate`."
)
RELIEVED_KINDS = frozenset({AKS_SUBNET_FULL.id, AKS_SUBNET_TOO_SMALL.id, AKS_POD_SUBNET_EXHAUSTED.id})


def _relieved(uses: list[SubnetUse], roomy: list[AppliedPool], kube: KubeSection) -> dict[str, AppliedPool]:
    """The subnets (by subject) whose shortage an applied plan's pool with room answers, each with that pool: the
    node subnets when a node-pool plan's pool has room, the pod subnets when a pod-subnet plan's has, except the
    applied pools' own and a subnet whose pools a waiting pod is pinned to (its nodeSelector names the pool)."""
    own = {a.use.subnet.id.lower() for a in roomy}
    pinned = {p.node_pool for p in kube.waiting_pods if p.node_pool}
    out: dict[str, AppliedPool] = {}
    for u in uses:
        mates = [a for a in roomy if a.role == u.role]
        if not mates or u.subnet.id.lower() in own or {p.name for p in u.pools} & pinned:
            continue
        if u.role == "pods" and all(p.count == 0 for p in u.pools):
            continue  # its pools were scaled to 0 (aks-migrate): nothing is left on it to move
        out[f"subnet {u.subnet.name}"] = max(mates, key=lambda a: (a.room, a.plan_id))
    return out


def _relieve(
    findings: list[Finding], uses: list[SubnetUse], relieved: dict[str, AppliedPool], flags: str
) -> list[Finding]:
    """The relieved subnets' findings: info for node subnets (nothing has to move), warning for pod subnets (the
    old pool's nodes must be moved off)."""
    by_subject = {f"subnet {u.subnet.name}": u for u in uses}
    out = []
    for f in findings:
        a = relieved.get(f.subject)
        u = by_subject.get(f.subject)
        if a is not None and u is not None and f.id in RELIEVED_KINDS:
            pools = ", ".join(p.name for p in u.pools)
            words = {"old": u.subnet.name, "pool": a.pool.name, "new": a.use.subnet.name, "room": a.room}
            if a.role == "nodes":
                f = replace(
                    f,
                    severity=Severity.INFO,
                    summary=f"{f.summary}; no migration needed: new nodes go to agent pool {a.pool.name} "
                    f"(plan {a.plan_id})",
                    remediation=NO_MIGRATION.format(pools=pools, **words),
                )
            else:
                f = replace(
                    f,
                    severity=Severity.WARNING,
                    summary=f"{f.summary}; agent pool {a.pool.name} (plan {a.plan_id}) has room, but pods placed on "
                    f"the nodes of {pools} still fail until they move",
                    remediation=MOVE_PODS.format(pools=pools, flags=flags, **words),
                )
        out.append(f)
    return out


def _applied_findings(
    applied: list[AppliedPool], relieved: dict[str, AppliedPool], stale: int, flags: str
) -> list[Finding]:
    """AKS-PLAN-APPLIED, one per agent pool a cidrx plan created: what it relieves and the room it has left."""
    out = []
    for a in applied:
        s = a.use.subnet
        when = f" {a.applied_at}" if a.applied_at else ""
        unit = "node(s)" if a.role == "nodes" else "batch(es) of 16 pod addresses"
        kind = "subnet" if a.role == "nodes" else "pod subnet"
        evidence = [
            f"agent pool {a.pool.name} carries the tag cidrx-plan={a.plan_id}",
            f"{kind} {s.name} {s.address_prefix}: {a.use.used} of {a.use.size} usable addresses taken, "
            f"{a.use.free} free (room for {a.room} more {unit})",
        ]
        mine = sorted(subject for subject, by in relieved.items() if by == a)
        if mine:
            evidence.append(f"full subnet(s) it relieves: {', '.join(s.removeprefix('subnet ') for s in mine)}")
        if stale and mine:
            evidence.append(
                f"{stale} SubnetIsFull/InsufficientSubnetSize event(s) from before the pool was created no longer count"
            )
        severity = Severity.INFO
        if not a.room:
            summary = f"plan {a.plan_id} applied{when}: agent pool {a.pool.name}'s {kind} {s.name} is full too"
            fix = f"See the findings of subnet {s.name}: the new space needs more addresses as well."
        elif a.role == "nodes":
            summary = (
                f"plan {a.plan_id} applied{when}: agent pool {a.pool.name} takes new nodes in subnet {s.name} "
                f"({s.address_prefix}), {a.use.free} addresses free, room for {a.room} more node(s)"
            )
            fix = (
                "Nothing has to move (see the full subnet's findings). While this subnet has room, cidrx expand "
                "--plan refuses another expansion (--force plans one anyway and records why)."
            )
        else:
            summary = (
                f"plan {a.plan_id} applied{when}: agent pool {a.pool.name} takes pod addresses from pod subnet "
                f"{s.name} ({s.address_prefix}), {a.use.free} addresses free, room for {a.room} more batch(es)"
            )
            fix = (
                "Move the workloads off the nodes of the full pod subnet's pools: plan their migration (cordon, drain "
                f"through the Eviction API, scale the old pools to 0): `cidrx expand {flags} --plan --out plan.json "
                "--strategy aks-migrate`. While this pod subnet has room, cidrx expand --plan refuses another "
                "expansion (--force plans one anyway)."
            )
            if mine:
                severity = Severity.WARNING
                summary += "; migration pending"
        out.append(AKS_PLAN_APPLIED.finding(severity, f"plan {a.plan_id}", summary, tuple(evidence), fix))
    return out


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
    applied = applied_pools(aks, kube)
    roomy = [a for a in applied if a.room > 0]
    relieved = _relieved(uses, roomy, kube)
    findings = _relieve(_subnet_findings(aks, uses, fix, kube), uses, relieved, snapshot.target.flags())
    pod = pod_cidr_use(aks)
    mode = cluster_mode(aks.cluster)
    if pod is not None and mode in (OVERLAY, KUBENET):
        findings += _pod_cidr_findings(aks, pod)
    if mode == KUBENET:
        findings += _route_findings(aks)
    # Errors from before an applied pool with room was created tell of the shortage it answered; later ones count.
    times = [t for a in roomy if (t := parse_time(a.applied_at)) is not None]
    seen, stale = _event_findings(kube, OVERLAY_WAY_OUT if mode == OVERLAY else fix, min(times) if times else None)
    findings = _applied_findings(applied, relieved, stale, snapshot.target.flags()) + findings + seen
    if not kube.available:
        from cidrx.model.findings import kube_unreachable

        findings.append(kube_unreachable(UNREACHABLE, UNREACHABLE_FIX, reason=kube.reason or "no Kubernetes access"))
    capacity = _capacity(uses, pod, aks) + network_space_capacity(snapshot)
    return make_diagnosis(snapshot.target, snapshot.fingerprint, capacity, findings)
