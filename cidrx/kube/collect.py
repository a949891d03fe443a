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
import functools
import importlib
import ipaddress
import json
import socket
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from itertools import chain
from sys import intern
from typing import Any, Protocol, TypeVar

import msgspec

from cidrx import registry
from cidrx.errors import CloudError, InvalidInput
from cidrx.kube.api import KubeApi
from cidrx.kube.errors import KubeUnavailable
from cidrx.kube.records import (
    NETWORK_STATUS,
    NETWORKS_STATUS,
    EventRecord,
    EventSeries,
    NodeMeta,
    NodeRecord,
    NodeSpec,
    NodeStatus,
    ObjectRef,
    PodMeta,
    PodRecord,
    PodStatus,
)
from cidrx.model.kube import (
    ConfigMapData,
    EnvVar,
    KubeEvent,
    KubeNode,
    KubePod,
    KubeSection,
    PodState,
    WorkloadEnv,
)
from cidrx.model.target import Target
from cidrx.model.validation import CANONICAL_V4, is_ip_address, v4_int

JSON = Mapping[str, Any]

EVENT_REASONS = (
    "FailedCreatePodSandBox",
    "InsufficientFreeAddressesInSubnet",
    "FailedScaleUp",
    "NotTriggerScaleUp",
    "FailedScheduling",
    "CIDRNotAvailable",
)
# Finished pods hold no address; leaving them out server-side keeps Job-heavy clusters' lists short.
POD_FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"

ZONE_LABELS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")
INSTANCE_TYPE_LABELS = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")


@functools.cache
def pool_labels() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The node labels that name a node's group or pool, and the nodeSelector keys that pin a pod to one, of
    every registered provider (`node_pool_labels`, `pod_pool_labels`): whatever the target, a node keeps the
    first it carries."""
    specs = registry.providers()
    return (
        tuple(dict.fromkeys(label for s in specs for label in s.node_pool_labels)),
        tuple(dict.fromkeys(label for s in specs for label in s.pod_pool_labels)),
    )


CLUSTER_SCOPED_KINDS = frozenset({"Node", "Namespace", "PersistentVolume"})


class ClusterReads(Protocol):
    """What a provider reads from the cluster besides nodes, pods and events (`ProviderSpec.kube_collect`
    names its object), and the fields of the kube section it makes of them (`ProviderSpec.kube_fields`).
    `read` does the I/O; `node_keys` and `fields` are pure, so the section can be built from JSON in tests."""

    def read(self, api: KubeApi, groups: set[str]) -> Any:
        """The objects it needs (whatever shape `node_keys` and `fields` take)."""
        ...

    def node_keys(self, raw: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The node labels and annotations to keep per node (only those keys)."""
        ...

    def fields(
        self, raw: Any, labels: dict[str, dict[str, str]], annotations: dict[str, dict[str, str]]
    ) -> dict[str, Any]:
        """Its kube section fields, from `raw` and the kept labels / annotations per node name."""
        ...


@dataclasses.dataclass(frozen=True)
class CustomResourceReads:
    """The `ClusterReads` of a provider whose only read of its own is one custom resource, kept as one kube
    section field: a tuple of records sorted by `key`, or None while the cluster does not serve the group."""

    group: str
    version: str
    plural: str
    field: str
    record: Callable[[Mapping[str, Any]], Any]
    key: Callable[[Any], Any]

    def read(self, api: KubeApi, groups: set[str]) -> Iterable[Mapping[str, Any]] | None:
        return api.iter_custom(self.group, self.version, self.plural) if self.group in groups else None

    def node_keys(self, raw: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
        return (), ()

    def fields(
        self,
        raw: Iterable[Mapping[str, Any]] | None,
        labels: dict[str, dict[str, str]],
        annotations: dict[str, dict[str, str]],
    ) -> dict[str, Any]:
        return {} if raw is None else {self.field: tuple(sorted((self.record(o) for o in raw), key=self.key))}


# What a record's absent part reads as (all fields at their defaults).
_NODE_META, _NODE_SPEC, _NODE_STATUS = NodeMeta(), NodeSpec(), NodeStatus()
_POD_META, _POD_STATUS = PodMeta(), PodStatus()
_OBJECT_REF, _EVENT_SERIES = ObjectRef(), EventSeries()


def collect_kube(kubeconfig: str | None, context: str | None, *, provider: str) -> KubeSection:
    """The cluster as cidrx needs it; `available=False` with a reason when it cannot be reached.

    Raises AccessDenied when the context does not exist or a needed list is forbidden.
    """
    from cidrx.kube.kubeconfig import tried

    try:
        api = KubeApi.connect(kubeconfig, context)
    except KubeUnavailable as exc:
        return KubeSection(available=False, reason=f"{exc} ({tried(kubeconfig, context)})", context=context or "")
    with api:
        section = collect_with(api, provider=provider)
    if not section.available and section.reason:  # say what was tried, so the hint fits (KUBECONFIG or not)
        return replace(section, reason=f"{section.reason} ({tried(kubeconfig, context)})")
    return section


def collect_with(api: KubeApi, *, provider: str) -> KubeSection:
    """Collect through an already connected `api` (one list per resource, one per event reason).

    In-cluster IPAMs are read first (only those whose API group the server serves), so that the single
    pod list can keep just the pods their records name.
    """
    try:
        groups = api.api_groups()
        spec = registry.provider_spec(provider)
        reads: ClusterReads | None = (
            registry.load(spec.kube_collect) if spec is not None and spec.kube_collect else None
        )
        raw = reads.read(api, groups) if reads is not None else None
        ipam = _collect_ipams(api, groups, provider)
        wanted = _ipam_pod_refs(ipam, provider)
        names = _ipam_pod_names(ipam, provider)
        ranges = AddressRanges.of(_ipam_cidrs(ipam, provider))
        events = chain.from_iterable(api.event_records(reason) for reason in EVENT_REASONS)
        section = section_from(
            groups,
            api.node_records(),
            api.pod_records(POD_FIELD_SELECTOR),
            events,
            api.context,
            reads=(reads, raw) if reads is not None else None,
            ipam_pod_refs=wanted,
            pod_names=names,
            ipam_ranges=ranges,
        )
        extra: dict[str, Any] = {}
        if spec is not None and spec.kube_configmaps:
            found = (
                api.get_custom("", "v1", "configmaps", name, namespace) for namespace, name in spec.kube_configmaps
            )
            extra["config_maps"] = tuple(config_map_from(c) for c in found if c is not None)
        return replace(section, **ipam, **extra)
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


def _ipam_pod_names(ipam: Mapping[str, Any], provider: str = "") -> dict[str, str]:
    """The pod name strings the IPAM records hold (collectors with `pod_names`), each as its own key: the
    pods listed next share them instead of holding equal strings of their own."""
    names: dict[str, str] = {}
    for name, collector in _collectors(provider):
        found = getattr(collector, "pod_names", None)
        if found is not None and ipam.get(name) is not None:
            for text in found(ipam[name]):
                names.setdefault(text, text)
    return names


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
            quad = CANONICAL_V4.fullmatch(cidr)
            if quad is not None:  # the common case, without ipaddress: a dotted quad, with or without a prefix
                host = (1 << (32 - int(quad[2] or 32))) - 1
                first = v4_int(quad[1]) & ~host
                spans.append((first, first | host))
                continue
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


def _reported_ips(status: PodStatus | None, meta: PodMeta | None) -> Iterator[str]:
    if status is not None:
        for entry in status.podIPs or ():
            if entry.ip:
                yield entry.ip
        if status.podIP:
            yield status.podIP
    annotations = meta.annotations if meta is not None else None
    if annotations is not None and (annotations.network_status is not None or annotations.networks_status is not None):
        yield from _network_status(annotations.network_status or annotations.networks_status)[0]


def section_from(
    api_groups: Iterable[str],
    nodes: Iterable[NodeRecord | JSON],
    pods: Iterable[PodRecord | JSON],
    events: Iterable[EventRecord | JSON],
    context: str,
    *,
    reads: tuple[ClusterReads, Any] | None = None,
    ipam_pod_refs: set[str] | frozenset[str] = frozenset(),
    ipam_ranges: AddressRanges = NO_RANGES,
    pod_names: Mapping[str, str] | None = None,
) -> KubeSection:
    """A KubeSection from Kubernetes objects: the compact records KubeApi lists (`pod_records` & co.), or
    dicts (whole or trimmed), converted to those records first; sorted for a stable fingerprint.

    `ipam_pod_refs` ("namespace/name") and `ipam_ranges` select the pods kept as PodState in `ipam_pods`:
    every pod an IPAM record names, and every listed (so unfinished) pod reporting an address in a range;
    `pod_names` (the name strings IPAM records hold) are shared by the PodStates of the same names.
    `reads`: the provider's cluster reads and what they read (their node keys are kept, their fields added)."""
    per_node: dict[str, int] = {}
    host_net: dict[str, int] = {}
    label_keys, annotation_keys = reads[0].node_keys(reads[1]) if reads is not None else ((), ())
    node_records: list[KubeNode] = []
    picked_labels: dict[str, dict[str, str]] = {}
    picked_annotations: dict[str, dict[str, str]] = {}
    for n in nodes:
        node_rec = _record(n, NodeRecord)
        record = node_from(node_rec)
        node_records.append(record)
        node_meta = node_rec.metadata or _NODE_META
        if label_keys and (labels := _picked(node_meta.labels or {}, label_keys)):
            picked_labels[record.name] = labels
        if annotation_keys and (annotations := _picked(node_meta.annotations or {}, annotation_keys)):
            picked_annotations[record.name] = annotations
    waiting: list[KubePod] = []
    named: list[PodState] = []
    for obj in pods:
        pod = _record(obj, PodRecord)
        meta, spec, status = pod.metadata, pod.spec, pod.status
        if (ipam_pod_refs and meta is not None and f"{meta.namespace}/{meta.name}" in ipam_pod_refs) or (
            ipam_ranges and any(ipam_ranges.contains(ip) for ip in _reported_ips(status, meta))
        ):
            named.append(pod_state_from(pod, pod_names))
        node = pod_ip_node(pod)
        if node:
            per_node[node] = per_node.get(node, 0) + 1
        elif spec is not None and spec.hostNetwork and spec.nodeName:
            host_net[spec.nodeName] = host_net.get(spec.nodeName, 0) + 1
        w = waiting_pod_from(pod)
        if w is not None:
            waiting.append(w)
    return KubeSection(
        available=True,
        context=context,
        api_groups=tuple(sorted(set(api_groups))),
        nodes=tuple(sorted(node_records, key=lambda n: n.name)),
        pods_per_node=dict(sorted(per_node.items())),
        host_network_pods_per_node=dict(sorted(host_net.items())),
        waiting_pods=tuple(sorted(waiting, key=lambda p: (p.namespace, p.name))),
        events=tuple(
            sorted((event_from(e) for e in events), key=lambda e: (e.reason, e.namespace, e.kind, e.name, e.last_seen))
        ),
        ipam_pods=tuple(sorted(named, key=lambda p: (p.namespace, p.name))),
        **(
            reads[0].fields(reads[1], dict(sorted(picked_labels.items())), dict(sorted(picked_annotations.items())))
            if reads is not None
            else {}
        ),
    )


# ---- converters -----------------------------------------------------------------------------------

_R = TypeVar("_R", NodeRecord, PodRecord, EventRecord)


def _record(obj: _R | JSON, cls: type[_R]) -> _R:
    """`obj` as the compact record KubeApi lists: a dict is converted by the same msgspec rules that decode
    a list page (unknown fields skipped, a wrong-typed field refused), so both ways in read alike."""
    if isinstance(obj, cls):
        return obj
    try:
        return msgspec.convert(obj, cls)
    except msgspec.ValidationError as exc:
        raise CloudError(f"unexpected {cls.__name__.removesuffix('Record').lower()} object: {exc}") from None


def dig(obj: JSON | None, *path: str) -> Any:
    """The value at `path` in nested mappings, None where a step is missing."""
    cur: Any = obj
    for key in path:
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(key)
    return cur


def _first_label(labels: Mapping[str, str], keys: Iterable[str]) -> str:
    return next((str(labels[k]) for k in keys if labels.get(k)), "")


def _int_or_none(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _picked(values: JSON, keys: Iterable[str]) -> dict[str, str]:
    """The entries of `values` (labels or annotations) under `keys`."""
    return {str(k): str(values[k]) for k in dict.fromkeys(keys) if k in values}


def node_from(obj: NodeRecord | JSON) -> KubeNode:
    node = _record(obj, NodeRecord)
    meta = node.metadata or _NODE_META
    spec = node.spec or _NODE_SPEC
    status = node.status or _NODE_STATUS
    labels = meta.labels or {}
    ready = any(c.type == "Ready" and c.status == "True" for c in status.conditions or ())
    cidrs = spec.podCIDRs or ([spec.podCIDR] if spec.podCIDR else [])
    internal = next((a.address for a in status.addresses or () if a.type == "InternalIP"), "")
    return KubeNode(
        name=meta.name,
        zone=_first_label(labels, ZONE_LABELS),
        instance_type=_first_label(labels, INSTANCE_TYPE_LABELS),
        created=meta.creationTimestamp or "",
        ready=ready,
        pod_cidrs=tuple(cidrs),
        internal_ip=internal if is_ip_address(internal) else "",
        allocatable_pods=_int_or_none(status.allocatable.pods) if status.allocatable is not None else None,
        pool=_first_label(labels, pool_labels()[0]),
    )


def pod_ip_node(pod: PodRecord | JSON) -> str:
    """The node whose pod addresses `pod` uses: scheduled, Running or Pending, not hostNetwork; else ""."""
    record = _record(pod, PodRecord)
    spec = record.spec
    if spec is None or not spec.nodeName or spec.hostNetwork:
        return ""
    phase = record.status.phase if record.status is not None else None
    return spec.nodeName if phase in ("Running", "Pending") else ""


def _waiting_reason(status: PodStatus) -> str:
    for cs in status.containerStatuses or ():
        waiting = cs.state.waiting if cs.state is not None else None
        if waiting is not None and waiting.reason:
            return waiting.reason
    return ""


def _node_selector(pod: PodRecord) -> dict[str, str]:
    return (pod.spec.nodeSelector if pod.spec is not None else None) or {}


def waiting_pod_from(pod: PodRecord | JSON) -> KubePod | None:
    """A KubePod when `pod` waits: phase Pending, or no phase yet while a container is ContainerCreating."""
    record = _record(pod, PodRecord)
    status = record.status or _POD_STATUS
    phase = status.phase or ""
    container_reason = _waiting_reason(status)
    if not (phase == "Pending" or (not phase and container_reason == "ContainerCreating")):
        return None
    scheduled = next((c.reason for c in status.conditions or () if c.type == "PodScheduled"), None)
    meta = record.metadata or _POD_META
    return KubePod(
        namespace=meta.namespace or "",
        name=meta.name,
        phase=phase,
        node=(record.spec.nodeName if record.spec is not None else None) or "",
        reason=container_reason or scheduled or phase or "Pending",
        created=meta.creationTimestamp or "",
        node_pool=(_first_label(selector, pool_labels()[1]) or None) if (selector := _node_selector(record)) else None,
    )


def config_map_from(obj: JSON) -> ConfigMapData:
    meta = obj.get("metadata") or {}
    return ConfigMapData(
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        data={str(k): str(v) for k, v in (obj.get("data") or {}).items()},
        resource_version=str(meta.get("resourceVersion") or ""),
    )


def network_status_ips(annotations: JSON) -> tuple[list[str], bool]:
    """Every address in the Multus network-status annotation (a JSON list of {name, interface, ips}),
    and whether the annotation was there at all. A malformed annotation counts as absent."""
    return _network_status(annotations.get(NETWORK_STATUS) or annotations.get(NETWORKS_STATUS))


def _network_status(raw: Any) -> tuple[list[str], bool]:
    if not raw:
        return [], False
    try:
        entries = msgspec.json.decode(raw)
    except (msgspec.DecodeError, TypeError, UnicodeError):
        # msgspec reads strict JSON; what it refuses json.loads may still take (NaN, Infinity), as before.
        try:
            entries = json.loads(raw)
        except (TypeError, ValueError):
            return [], False
    if not isinstance(entries, list):
        return [], False
    ips = [str(ip) for e in entries if isinstance(e, Mapping) for ip in e.get("ips") or []]
    return [ip for ip in ips if is_ip_address(ip)], True


def pod_state_from(pod: PodRecord | JSON, names: Mapping[str, str] | None = None) -> PodState:
    """The PodState of `pod`; its name is the equal string in `names` when there is one."""
    record = _record(pod, PodRecord)
    meta = record.metadata or _POD_META
    status = record.status or _POD_STATUS
    ips = [p.ip for p in status.podIPs or () if p.ip]
    if status.podIP and status.podIP not in ips:
        ips.append(status.podIP)
    annotations = meta.annotations
    extra, has_status = (
        _network_status(annotations.network_status or annotations.networks_status)
        if annotations is not None
        else ([], False)
    )
    # Namespaces, phases and node names repeat across 60,000 pods: one shared string each (docs/performance.md).
    return PodState(
        namespace=intern(meta.namespace or ""),
        name=names.get(meta.name, meta.name) if names else meta.name,
        phase=intern(status.phase or ""),
        node=intern((record.spec.nodeName if record.spec is not None else None) or ""),
        ips=tuple(dict.fromkeys([*ips, *extra])),
        has_network_status=has_status,
        uid=meta.uid or "",
    )


def event_from(obj: EventRecord | JSON) -> KubeEvent:
    event = _record(obj, EventRecord)
    involved = event.involvedObject or _OBJECT_REF
    kind = involved.kind
    # A Node's events are stored in "default" but concern no namespace.
    own_namespace = "" if kind in CLUSTER_SCOPED_KINDS or event.metadata is None else event.metadata.namespace
    namespace = involved.namespace or own_namespace
    series = event.series or _EVENT_SERIES
    # events.k8s.io-style events (written by newer components, read here through core/v1) leave count and
    # lastTimestamp empty and keep them in series; eventTime is the first occurrence, not the last.
    count = event.count or series.count or 1
    last_seen = event.lastTimestamp or series.lastObservedTime or event.eventTime or ""
    source = (event.source.component if event.source is not None else None) or event.reportingComponent
    return KubeEvent(
        namespace=intern(namespace or ""),
        kind=intern(kind),
        name=involved.name,
        reason=intern(event.reason or ""),
        type=intern(event.type or ""),
        message=event.message or "",
        count=count,
        last_seen=last_seen,
        source=intern(source or ""),
    )


def _containers(obj: JSON) -> Iterator[JSON]:
    yield from dig(obj, "spec", "template", "spec", "containers") or []


def workload_env_from(obj: JSON, container: str) -> WorkloadEnv | None:
    """The env of `container` in a DaemonSet/Deployment; valueFrom entries are kept with value ""."""
    found = next((c for c in _containers(obj) if c.get("name") == container), None)
    if found is None:
        return None
    env = tuple(EnvVar(str(e.get("name", "")), str(e.get("value") or "")) for e in found.get("env") or [])
    return WorkloadEnv(
        namespace=str(dig(obj, "metadata", "namespace") or ""),
        name=str(dig(obj, "metadata", "name") or ""),
        container=container,
        env=env,
        resource_version=str(dig(obj, "metadata", "resourceVersion") or ""),
        image=str(found.get("image") or ""),
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
