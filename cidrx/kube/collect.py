"""Collect the in-cluster part of a snapshot (KubeSection), the same way for every provider.

Two layers: `collect_kube` / `collect_with` do the I/O through KubeApi (list calls only), and
`section_from` builds the section from iterables of plain dicts with small pure converters, so the
conversion is testable from JSON and the records stay compact (only the fields the model keeps).
An unreachable or unconfigured cluster gives `KubeSection(available=False, reason=...)`; access denied
on a list cidrx needs is an error (exit 6), because a silently partial snapshot would mislead the plan.
"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import importlib
import ipaddress
import json
import socket
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from itertools import chain
from typing import Any

from cidrx import registry
from cidrx.errors import InvalidInput
from cidrx.kube.api import NETWORK_STATUS, NETWORKS_STATUS, KubeApi, KubeUnavailable
from cidrx.kube.model import EniConfig, EnvVar, KubeEvent, KubeNode, KubePod, KubeSection, PodState, WorkloadEnv
from cidrx.model.target import Target
from cidrx.model.validation import is_ip_address

JSON = Mapping[str, Any]

EVENT_REASONS = (
    "FailedCreatePodSandBox",
    "InsufficientFreeAddressesInSubnet",
    "FailedScaleUp",
    "NotTriggerScaleUp",
    "FailedScheduling",
    "CIDRNotAvailable",
)
ENICONFIG_GROUP, ENICONFIG_VERSION, ENICONFIG_PLURAL = "crd.k8s.amazonaws.com", "v1alpha1", "eniconfigs"
AWS_NODE = ("kube-system", "aws-node", "aws-node")  # namespace, DaemonSet, container
# Finished pods hold no address; leaving them out server-side keeps Job-heavy clusters' lists short.
POD_FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"

ZONE_LABELS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")
INSTANCE_TYPE_LABELS = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")
POOL_LABELS = (
    "eks.amazonaws.com/nodegroup",
    "cloud.google.com/gke-nodepool",
    "alpha.eksctl.io/nodegroup-name",
    "karpenter.sh/nodepool",  # Karpenter's and EKS Auto Mode's nodes
)
CLUSTER_SCOPED_KINDS = frozenset({"Node", "Namespace", "PersistentVolume"})


def collect_kube(kubeconfig: str | None, context: str | None, *, provider: str) -> KubeSection:
    """The cluster as cidrx needs it; `available=False` with a reason when it cannot be reached.

    Raises AccessDenied when the context does not exist or a needed list is forbidden.
    """
    try:
        api = KubeApi.connect(kubeconfig, context)
    except KubeUnavailable as exc:
        return KubeSection(available=False, reason=str(exc), context=context or "")
    with api:
        return collect_with(api, provider=provider)


def collect_with(api: KubeApi, *, provider: str) -> KubeSection:
    """Collect through an already connected `api` (one list per resource, one per event reason).

    In-cluster IPAMs are read first (only those whose API group the server serves), so that the single
    pod list can keep just the pods their records name.
    """
    try:
        groups = api.api_groups()
        spec = registry.provider_spec(provider)
        daemonset = spec.kube_daemonset if spec is not None else None
        aws_node = api.get_daemonset(*daemonset) if daemonset is not None else None
        eniconfigs: Iterable[JSON] = ()
        if ENICONFIG_GROUP in groups:
            eniconfigs = api.iter_custom(ENICONFIG_GROUP, ENICONFIG_VERSION, ENICONFIG_PLURAL)
        ipam = _collect_ipams(api, groups, provider)
        wanted = _ipam_pod_refs(ipam, provider)
        ranges = AddressRanges.of(_ipam_cidrs(ipam, provider))
        events = chain.from_iterable(api.iter_events(reason) for reason in EVENT_REASONS)
        section = section_from(
            groups,
            api.iter_nodes(),
            api.iter_pods(POD_FIELD_SELECTOR),
            events,
            aws_node,
            eniconfigs,
            api.context,
            ipam_pod_refs=wanted,
            ipam_ranges=ranges,
        )
        return replace(section, **ipam)
    except KubeUnavailable as exc:
        return KubeSection(available=False, reason=str(exc), context=api.context)


def _collectors(provider: str) -> list[tuple[str, Any]]:
    """(snapshot field, collector module) of every registered IPAM that is read for `provider`'s targets."""
    return [
        (i.field, importlib.import_module(i.collect))
        for i in registry.ipams()
        if not i.providers or provider in i.providers
    ]


def _collect_ipams(api: KubeApi, groups: set[str], provider: str) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for name, collector in _collectors(provider):
        section = collector.collect_served(api, groups)
        if section is not None:
            found[name] = section
    return found


def _ipam_pod_refs(ipam: Mapping[str, Any], provider: str = "") -> set[str]:
    refs: set[str] = set()
    for name, collector in _collectors(provider):
        if ipam.get(name) is not None:
            refs |= collector.pod_refs(ipam[name])
    return refs


def _ipam_cidrs(ipam: Mapping[str, Any], provider: str = "") -> list[str]:
    """Every range an in-cluster IPAM hands addresses out of (pools, blocks, configured ranges)."""
    cidrs: list[str] = []
    for name, collector in _collectors(provider):
        if ipam.get(name) is not None:
            cidrs += collector.cidrs(ipam[name])
    return cidrs


class AddressRanges:
    """Merged address intervals, for asking cheaply whether a pod's address lies in an IPAM's range.

    A pod whose address lies in one is kept as PodState: liveness (cidrx.ipam.liveness) is decided by
    which unfinished pods report an address, not only by the pod an IPAM record names.
    """

    def __init__(self, intervals: Sequence[tuple[int, int]]) -> None:
        self._starts = [lo for lo, _ in intervals]
        self._ends = [hi for _, hi in intervals]

    @classmethod
    def of(cls, cidrs: Iterable[str]) -> AddressRanges:
        spans: list[tuple[int, int]] = []
        for cidr in cidrs:
            try:
                net = ipaddress.ip_network(cidr, strict=False)
            except ValueError:
                continue
            # IPv6 intervals are shifted past the IPv4 space so one sorted list serves both families.
            base = 0 if net.version == 4 else 1 << 32
            spans.append((base + int(net.network_address), base + int(net.broadcast_address)))
        merged: list[tuple[int, int]] = []
        for lo, hi in sorted(spans):
            if merged and lo <= merged[-1][1] + 1:
                merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
            else:
                merged.append((lo, hi))
        return cls(merged)

    def __bool__(self) -> bool:
        return bool(self._starts)

    def contains(self, text: str) -> bool:
        # inet_pton, not ipaddress: this runs for every pod address of a large cluster.
        v6 = ":" in text
        try:
            packed = socket.inet_pton(socket.AF_INET6 if v6 else socket.AF_INET, text)
        except (OSError, ValueError):
            return False
        value = int.from_bytes(packed, "big") + ((1 << 32) if v6 else 0)
        i = bisect.bisect_right(self._starts, value) - 1
        return i >= 0 and value <= self._ends[i]


NO_RANGES = AddressRanges(())


def _reported_ips(pod: JSON) -> Iterator[str]:
    status = pod.get("status") or {}
    for entry in status.get("podIPs") or ():
        if isinstance(entry, Mapping) and entry.get("ip"):
            yield str(entry["ip"])
    if status.get("podIP"):
        yield str(status["podIP"])
    annotations = _get(pod, "metadata", "annotations") or {}
    if NETWORK_STATUS in annotations or NETWORKS_STATUS in annotations:
        yield from network_status_ips(annotations)[0]


def section_from(
    api_groups: Iterable[str],
    nodes: Iterable[JSON],
    pods: Iterable[JSON],
    events: Iterable[JSON],
    aws_node: JSON | None,
    eniconfigs: Iterable[JSON],
    context: str,
    *,
    ipam_pod_refs: set[str] | frozenset[str] = frozenset(),
    ipam_ranges: AddressRanges = NO_RANGES,
) -> KubeSection:
    """A KubeSection from Kubernetes objects as dicts (whole or trimmed); sorted for a stable fingerprint.

    `ipam_pod_refs` ("namespace/name") and `ipam_ranges` select the pods kept as PodState in `ipam_pods`:
    every pod an IPAM record names, and every listed (so unfinished) pod reporting an address in a range."""
    per_node: dict[str, int] = {}
    host_net: dict[str, int] = {}
    waiting: list[KubePod] = []
    named: list[PodState] = []
    for pod in pods:
        if (
            ipam_pod_refs and f"{_get(pod, 'metadata', 'namespace')}/{_get(pod, 'metadata', 'name')}" in ipam_pod_refs
        ) or (ipam_ranges and any(ipam_ranges.contains(ip) for ip in _reported_ips(pod))):
            named.append(pod_state_from(pod))
        node = pod_ip_node(pod)
        if node:
            per_node[node] = per_node.get(node, 0) + 1
        elif _get(pod, "spec", "hostNetwork") and _get(pod, "spec", "nodeName"):
            name = str(_get(pod, "spec", "nodeName"))
            host_net[name] = host_net.get(name, 0) + 1
        w = waiting_pod_from(pod)
        if w is not None:
            waiting.append(w)
    return KubeSection(
        available=True,
        context=context,
        api_groups=tuple(sorted(set(api_groups))),
        nodes=tuple(sorted((node_from(n) for n in nodes), key=lambda n: n.name)),
        pods_per_node=dict(sorted(per_node.items())),
        host_network_pods_per_node=dict(sorted(host_net.items())),
        waiting_pods=tuple(sorted(waiting, key=lambda p: (p.namespace, p.name))),
        events=tuple(
            sorted((event_from(e) for e in events), key=lambda e: (e.reason, e.namespace, e.kind, e.name, e.last_seen))
        ),
        aws_node=workload_env_from(aws_node, AWS_NODE[2]) if aws_node is not None else None,
        eniconfigs=tuple(sorted((eniconfig_from(e) for e in eniconfigs), key=lambda e: e.name)),
        ipam_pods=tuple(sorted(named, key=lambda p: (p.namespace, p.name))),
    )


# ---- converters -----------------------------------------------------------------------------------


def _get(obj: JSON | None, *path: str) -> Any:
    cur: Any = obj
    for key in path:
        # Plain dicts first: an isinstance check against the Mapping ABC costs more than the lookup, and
        # this runs a dozen times for each of 60,000 pods.
        if cur.__class__ is not dict and not isinstance(cur, Mapping):
            return None
        cur = cur.get(key)
    return cur


def _first_label(labels: JSON, keys: Iterable[str]) -> str:
    return next((str(labels[k]) for k in keys if labels.get(k)), "")


def _int_or_none(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def node_from(obj: JSON) -> KubeNode:
    labels = _get(obj, "metadata", "labels") or {}
    status = obj.get("status") or {}
    conditions = status.get("conditions") or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    cidrs = _get(obj, "spec", "podCIDRs") or ([_get(obj, "spec", "podCIDR")] if _get(obj, "spec", "podCIDR") else [])
    internal = next((a.get("address", "") for a in status.get("addresses") or [] if a.get("type") == "InternalIP"), "")
    return KubeNode(
        name=str(_get(obj, "metadata", "name") or ""),
        zone=_first_label(labels, ZONE_LABELS),
        instance_type=_first_label(labels, INSTANCE_TYPE_LABELS),
        created=str(_get(obj, "metadata", "creationTimestamp") or ""),
        ready=ready,
        pod_cidrs=tuple(str(c) for c in cidrs),
        internal_ip=str(internal) if is_ip_address(str(internal)) else "",
        allocatable_pods=_int_or_none(_get(status, "allocatable", "pods")),
        pool=_first_label(labels, POOL_LABELS),
    )


def pod_ip_node(pod: JSON) -> str:
    """The node whose pod addresses `pod` uses: scheduled, Running or Pending, not hostNetwork; else ""."""
    node = _get(pod, "spec", "nodeName")
    if not node or _get(pod, "spec", "hostNetwork"):
        return ""
    return str(node) if _get(pod, "status", "phase") in ("Running", "Pending") else ""


def _waiting_reason(status: JSON) -> str:
    for cs in status.get("containerStatuses") or []:
        reason = _get(cs, "state", "waiting", "reason")
        if reason:
            return str(reason)
    return ""


def waiting_pod_from(pod: JSON) -> KubePod | None:
    """A KubePod when `pod` waits: phase Pending, or no phase yet while a container is ContainerCreating."""
    status = pod.get("status") or {}
    phase = status.get("phase") or ""
    container_reason = _waiting_reason(status)
    if not (phase == "Pending" or (not phase and container_reason == "ContainerCreating")):
        return None
    scheduled: JSON = next((c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), {})
    reason = container_reason or scheduled.get("reason") or phase or "Pending"
    return KubePod(
        namespace=str(_get(pod, "metadata", "namespace") or ""),
        name=str(_get(pod, "metadata", "name") or ""),
        phase=phase,
        node=str(_get(pod, "spec", "nodeName") or ""),
        reason=str(reason),
        created=str(_get(pod, "metadata", "creationTimestamp") or ""),
    )


def network_status_ips(annotations: JSON) -> tuple[list[str], bool]:
    """Every address in the Multus network-status annotation (a JSON list of {name, interface, ips}),
    and whether the annotation was there at all. A malformed annotation counts as absent."""
    raw = annotations.get(NETWORK_STATUS) or annotations.get(NETWORKS_STATUS)
    if not raw:
        return [], False
    try:
        entries = json.loads(raw)
    except (TypeError, ValueError):
        return [], False
    if not isinstance(entries, list):
        return [], False
    ips = [str(ip) for e in entries if isinstance(e, Mapping) for ip in e.get("ips") or []]
    return [ip for ip in ips if is_ip_address(ip)], True


def pod_state_from(pod: JSON) -> PodState:
    status = pod.get("status") or {}
    ips = [str(p.get("ip")) for p in status.get("podIPs") or [] if p.get("ip")]
    if status.get("podIP") and status["podIP"] not in ips:
        ips.append(str(status["podIP"]))
    extra, has_status = network_status_ips(_get(pod, "metadata", "annotations") or {})
    return PodState(
        namespace=str(_get(pod, "metadata", "namespace") or ""),
        name=str(_get(pod, "metadata", "name") or ""),
        phase=str(status.get("phase") or ""),
        node=str(_get(pod, "spec", "nodeName") or ""),
        ips=tuple(dict.fromkeys([*ips, *extra])),
        has_network_status=has_status,
        uid=str(_get(pod, "metadata", "uid") or ""),
    )


def event_from(obj: JSON) -> KubeEvent:
    involved = obj.get("involvedObject") or {}
    kind = str(involved.get("kind") or "")
    # A Node's events are stored in "default" but concern no namespace.
    own_namespace = "" if kind in CLUSTER_SCOPED_KINDS else _get(obj, "metadata", "namespace")
    namespace = involved.get("namespace") or own_namespace
    series = obj.get("series") or {}
    # events.k8s.io-style events (written by newer components, read here through core/v1) leave count and
    # lastTimestamp empty and keep them in series; eventTime is the first occurrence, not the last.
    count = obj.get("count") or series.get("count") or 1
    last_seen = obj.get("lastTimestamp") or series.get("lastObservedTime") or obj.get("eventTime") or ""
    source = _get(obj, "source", "component") or obj.get("reportingComponent") or obj.get("reportingController")
    return KubeEvent(
        namespace=str(namespace or ""),
        kind=kind,
        name=str(involved.get("name") or ""),
        reason=str(obj.get("reason") or ""),
        type=str(obj.get("type") or ""),
        message=str(obj.get("message") or ""),
        count=int(count),
        last_seen=str(last_seen),
        source=str(source or ""),
    )


def _containers(obj: JSON) -> Iterator[JSON]:
    yield from _get(obj, "spec", "template", "spec", "containers") or []


def workload_env_from(obj: JSON, container: str) -> WorkloadEnv | None:
    """The env of `container` in a DaemonSet/Deployment; valueFrom entries are kept with value ""."""
    found = next((c for c in _containers(obj) if c.get("name") == container), None)
    if found is None:
        return None
    env = tuple(EnvVar(str(e.get("name", "")), str(e.get("value") or "")) for e in found.get("env") or [])
    return WorkloadEnv(
        namespace=str(_get(obj, "metadata", "namespace") or ""),
        name=str(_get(obj, "metadata", "name") or ""),
        container=container,
        env=env,
        resource_version=str(_get(obj, "metadata", "resourceVersion") or ""),
    )


def eniconfig_from(obj: JSON) -> EniConfig:
    spec = obj.get("spec") or {}
    return EniConfig(
        name=str(_get(obj, "metadata", "name") or ""),
        subnet=str(spec.get("subnet") or ""),
        security_groups=tuple(str(g) for g in spec.get("securityGroups") or []),
        created=str(_get(obj, "metadata", "creationTimestamp") or ""),
        labels={str(k): str(v) for k, v in (_get(obj, "metadata", "labels") or {}).items()},
    )


def check_same_cluster(kube: KubeSection, networks: Iterable[str], target: Target) -> None:
    """Refuse a kubeconfig context that points at another cluster than the cloud target (the current
    context is often a different cluster): its nodes' addresses must lie in the cluster's `networks`."""
    if not kube.available or not kube.nodes:
        return
    nets = [ipaddress.ip_network(c, strict=False) for c in networks]
    for node in kube.nodes:
        with contextlib.suppress(ValueError):
            if any(ipaddress.ip_address(node.internal_ip) in net for net in nets):
                return
    spec = registry.provider_spec(target.provider)
    hint = spec.context_hint.format(**dataclasses.asdict(target)) if spec and spec.context_hint else ""
    raise InvalidInput(
        f"Kubernetes context {kube.context or '(current)'} does not look like {target.label()}: none of its "
        f"{len(kube.nodes)} node(s) has an address in the cluster's network",
        hint=f"pass --context for this cluster ({hint}), or --no-kube" if hint else "pass --context, or --no-kube",
    )
