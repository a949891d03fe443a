"""The compact records the Kubernetes client decodes list pages into: only the fields cidrx reads.

Why it exists: collection must stay small on a 60,000-pod cluster (docs/performance.md), so list pages are
decoded straight from the response bytes into these msgspec structs (unknown fields are skipped while decoding:
a pod costs a few hundred bytes instead of several kilobytes). They are plain data, free of the client library,
so collection code can name them without loading it.
"""

from __future__ import annotations

import msgspec

from cidrx.kube.drain import MIRROR_ANNOTATION

NETWORK_STATUS = "k8s.v1.cni.cncf.io/network-status"
NETWORKS_STATUS = "k8s.v1.cni.cncf.io/networks-status"  # the Multus name before network-status

# few hundred bytes instead of several kilobytes.
# --------------------------------------------------------------------------------------------------


class _Struct(msgspec.Struct, omit_defaults=True):
    pass


class _Condition(_Struct):
    type: str = ""
    status: str = ""
    reason: str | None = None


class _Address(_Struct):
    type: str = ""
    address: str = ""


class _Allocatable(_Struct):
    pods: str | int | None = None


class NodeMeta(_Struct):
    name: str = ""
    creationTimestamp: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None  # the collector keeps only the keys it reads


class NodeSpec(_Struct):
    podCIDR: str | None = None
    podCIDRs: list[str] | None = None
    providerID: str | None = None


class NodeStatus(_Struct):
    conditions: list[_Condition] | None = None
    addresses: list[_Address] | None = None
    allocatable: _Allocatable | None = None


class NodeRecord(_Struct):
    metadata: NodeMeta | None = None
    spec: NodeSpec | None = None
    status: NodeStatus | None = None


class _PodAnnotations(_Struct):
    network_status: str | None = msgspec.field(name=NETWORK_STATUS, default=None)
    networks_status: str | None = msgspec.field(name=NETWORKS_STATUS, default=None)
    # A drain leaves mirror pods (cidrx.kube.drain).
    config_mirror: str | None = msgspec.field(name=MIRROR_ANNOTATION, default=None)


class _OwnerRef(_Struct):
    kind: str | None = None
    controller: bool | None = None


class PodMeta(_Struct):
    name: str = ""
    namespace: str | None = None
    uid: str | None = None
    creationTimestamp: str | None = None
    annotations: _PodAnnotations | None = None
    ownerReferences: list[_OwnerRef] | None = None  # a drain leaves DaemonSet pods (cidrx.kube.drain)


class _PodSpec(_Struct):
    nodeName: str | None = None
    hostNetwork: bool | None = None
    nodeSelector: dict[str, str] | None = None


class _Waiting(_Struct):
    reason: str | None = None


class _ContainerState(_Struct):
    waiting: _Waiting | None = None


class _ContainerStatus(_Struct):
    name: str = ""
    state: _ContainerState | None = None


class _PodIP(_Struct):
    ip: str = ""


class PodStatus(_Struct):
    phase: str | None = None
    podIP: str | None = None
    podIPs: list[_PodIP] | None = None
    conditions: list[_Condition] | None = None
    containerStatuses: list[_ContainerStatus] | None = None


class PodRecord(_Struct):
    metadata: PodMeta | None = None
    spec: _PodSpec | None = None
    status: PodStatus | None = None


class _EventMeta(_Struct):
    name: str = ""
    namespace: str | None = None


class ObjectRef(_Struct):
    kind: str = ""
    namespace: str | None = None
    name: str = ""


class _EventSource(_Struct):
    component: str | None = None
    host: str | None = None


class EventSeries(_Struct):
    count: int | None = None
    lastObservedTime: str | None = None


class EventRecord(_Struct):
    metadata: _EventMeta | None = None
    involvedObject: ObjectRef | None = None
    reason: str | None = None
    type: str | None = None
    message: str | None = None
    count: int | None = None
    firstTimestamp: str | None = None
    lastTimestamp: str | None = None
    eventTime: str | None = None
    series: EventSeries | None = None
    source: _EventSource | None = None
    reportingComponent: str | None = None


class ApiGroup(_Struct):
    name: str = ""


class ApiGroupList(_Struct):
    groups: list[ApiGroup] = msgspec.field(default_factory=list)


class ListMeta(_Struct):
    continue_: str | None = msgspec.field(name="continue", default=None)


class ListHead(_Struct):
    """Only the continue token of a list page: decoding it skips the items (see KubeApi._list)."""

    metadata: ListMeta | None = None
