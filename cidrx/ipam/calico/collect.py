"""Read Calico's IPAM objects (list calls only) into the compact records of cidrx.ipam.calico.model.

Why it exists: analysis and planning are pure functions of a snapshot, so everything they need about
Calico is read here once, one paginated list per resource type, and nothing else.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from sys import intern
from typing import TYPE_CHECKING, Any, TypeVar, cast

import msgspec

from cidrx.ipam.calico.model import (
    DEFAULT_BLOCK_SIZE,
    V1_API,
    V3_API,
    AllocationAttribute,
    BlockAffinity,
    CalicoSection,
    IPAMBlock,
    IPAMConfig,
    IPAMHandle,
    IPPool,
)
from cidrx.ipam.records import Listed, listed, parts
from cidrx.model import validation
from cidrx.model.plan import DIGEST_TAG

if TYPE_CHECKING:
    from cidrx.kube.api import KubeApi

GROUP, VERSION = "crd.projectcalico.org", "v1"
V3_GROUP = "projectcalico.org"
JSON = Mapping[str, Any]
_Named = TypeVar("_Named", IPPool, IPAMBlock)
log = logging.getLogger(__name__)


def calico_api(groups: Iterable[str]) -> str | None:
    """The Calico API to read IPAM objects from, by libcalico-go's own rule: projectcalico.org/v3 only when
    that group is served and crd.projectcalico.org is not (both served means the v3 API server fronts the
    v1 CRDs). projectcalico/calico libcalico-go/lib/backend/k8s/discovery.go UsingV3CRDs, commit
    87c15906f20c4ca1fda55af92295e7678b0cc0b2. None: no Calico IPAM."""
    served = set(groups)
    if GROUP in served:
        return V1_API
    if V3_GROUP in served:
        return V3_API
    return None


def api_parts(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.partition("/")
    return group, version


def config_plural(api_version: str) -> tuple[str, str]:
    """(plural, kind) of the IPAM config: v3 renames IPAMConfig to IPAMConfiguration."""
    return ("ipamconfigurations", "IPAMConfiguration") if api_version == V3_API else ("ipamconfigs", "IPAMConfig")


def collect_calico(api: KubeApi, api_version: str = V1_API) -> CalicoSection:
    """Pools, blocks, affinities, handles and the IPAM config (five list calls), from `api_version`."""
    group, version = api_parts(api_version)

    def items(plural: str) -> Iterable[JSON]:
        return api.iter_custom(group, version, plural)

    section = section_from(
        items("ippools"),
        api.iter_custom_records(group, version, "ipamblocks", BlockRecord),
        items("blockaffinities"),
        api.iter_custom_records(group, version, "ipamhandles", HandleRecord),
        items(config_plural(api_version)[0]),
    )
    if api_version == V1_API:
        return section
    return CalicoSection(
        section.pools, section.blocks, section.affinities, section.handles, section.config, api_version
    )


def section_from(
    pools: Iterable[JSON],
    blocks: Iterable[Listed | JSON],
    affinities: Iterable[JSON],
    handles: Iterable[Listed | JSON],
    configs: Iterable[JSON],
) -> CalicoSection:
    """A CalicoSection from the objects as dicts (blocks and handles also as listed records), each kind
    sorted by name for a stable fingerprint."""
    config = None
    shared: dict[tuple[tuple[str, int], ...], dict[str, int]] = {}
    slots: dict[Ordinals, Ordinals] = {}
    for obj in configs:
        if _meta(obj).get("name") == "default":
            config = config_from(obj)
    return CalicoSection(
        pools=tuple(sorted(_sound((pool_from(p) for p in pools), "IPPool"), key=lambda p: p.name)),
        blocks=tuple(sorted(_sound((block_from(b, slots) for b in blocks), "IPAMBlock"), key=lambda b: b.name)),
        affinities=tuple(sorted((affinity_from(a) for a in affinities), key=lambda a: a.name)),
        handles=tuple(sorted((handle_from(h, shared) for h in handles), key=lambda h: h.name)),
        config=config,
    )


def _sound(objects: Iterable[_Named], kind: str) -> Iterator[_Named]:
    """The objects whose addresses and sizes hold together; others are left out with a warning.

    The CRDs validate little (a hand-applied IPPool may carry any cidr or blockSize), and analysis
    computes with these values; a snapshot file with them would also be refused at load.
    """
    for obj in objects:
        problem = next(validation.problems(obj), None)
        if problem is None:
            yield obj
        else:
            where = f"{problem.path[2:]} " if problem.path != "$" else ""
            log.warning("ignoring Calico %s %s: %s%s", kind, obj.name or "(unnamed)", where, problem.text)


def _meta(obj: JSON) -> JSON:
    meta: JSON = obj.get("metadata") or {}
    return meta


def _spec(obj: JSON) -> JSON:
    spec: JSON = obj.get("spec") or {}
    return spec


def _bool(value: Any) -> bool:
    # BlockAffinity spec.deleted is a string ("false"/"true") in the v1 CRD; elsewhere a boolean.
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return bool(value)


def pool_from(obj: JSON) -> IPPool:
    spec = _spec(obj)
    labels = _meta(obj).get("labels") or {}
    uses = spec.get("allowedUses")
    return IPPool(
        name=str(_meta(obj).get("name") or ""),
        cidr=str(spec.get("cidr") or ""),
        block_size=int(spec.get("blockSize") or DEFAULT_BLOCK_SIZE),
        disabled=_bool(spec.get("disabled")),
        node_selector=str(spec.get("nodeSelector") or ""),
        ipip_mode=str(spec.get("ipipMode") or ""),
        vxlan_mode=str(spec.get("vxlanMode") or ""),
        nat_outgoing=_bool(spec.get("natOutgoing")),
        plan_label=str(labels.get(DIGEST_TAG) or ""),
        allowed_uses=tuple(str(u) for u in uses) if isinstance(uses, list) else None,
        assignment_mode=str(spec["assignmentMode"]) if spec.get("assignmentMode") else None,
    )


def _object(value: Any) -> JSON:
    """`value` when it is a JSON object, else an empty one (absent, or a CRD field holding something else)."""
    # The class check first: 60,000 attributes come through here, and the Mapping ABC check costs more.
    return value if value.__class__ is dict or isinstance(value, Mapping) else {}


def _array(value: Any) -> list[Any]:
    """`value` when it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def _opt(value: Any) -> str | None:
    return str(value) if value else None


def attribute_from(obj: JSON) -> AllocationAttribute:
    """One IPAMBlock attribute. Field names from libcalico-go/lib/backend/model/block.go AllocationAttribute
    (`secondary` = ActiveOwnerAttrs, `alternateOwnerAttrs`, `releasedAt`), commit 87c15906f20c."""
    secondary = _object(obj.get("secondary"))
    alternate = _object(obj.get("alternateOwnerAttrs"))
    handle = obj.get("handle_id")
    alt_ref = None
    if alternate.get("namespace") and alternate.get("pod"):
        alt_ref = f"{alternate['namespace']}/{alternate['pod']}"
    vmi = secondary.get("vmi-name") or alternate.get("vmi-name")
    return AllocationAttribute(
        handle_id=intern(str(handle)) if handle is not None else None,
        namespace=intern(str(secondary.get("namespace") or "")),  # shared: they repeat in every block
        pod=str(secondary.get("pod") or ""),
        node=intern(str(secondary.get("node") or "")),
        type=intern(str(secondary.get("type") or "")),
        alternate=alt_ref,
        released_at=_opt(obj.get("releasedAt")),
        service=_opt(secondary.get("service")),
        vmi_name=_opt(vmi),
    )


class _BlockSpec(msgspec.Struct):
    cidr: Any = None
    affinity: Any = None
    allocations: Any = None
    unallocated: Any = None
    attributes: Any = None
    strictAffinity: Any = None
    deleted: Any = None
    affinityClaimTime: Any = None
    sequenceNumber: Any = None


BlockRecord = listed("IPAMBlock", _BlockSpec)  # what block_from reads (cidrx.ipam.records: any value taken)


Ordinals = tuple[int | None, ...]


def _one(values: Ordinals, shared: dict[Ordinals, Ordinals] | None) -> Ordinals:
    """`values`, or the equal tuple already in `shared`. A tuple holding a JSON `true` is never shared (it equals
    one holding 1, and must still be written as it was read)."""
    if shared is None or any(v.__class__ is bool for v in values):
        return values
    return shared.setdefault(values, values)


def block_from(obj: Listed | JSON, shared: dict[Ordinals, Ordinals] | None = None) -> IPAMBlock:
    """One IPAMBlock. With `shared` (one collection's memo), equal `allocations` and `unallocated` tuples are one
    tuple: Calico hands out ordinals lowest free first, so thousands of blocks repeat a few dozen patterns."""
    meta, spec = parts(obj, BlockRecord, _BlockSpec)
    allocations = _one(tuple(a if isinstance(a, int) else None for a in _array(spec.allocations)), shared)
    unallocated = _one(tuple(int(u) for u in _array(spec.unallocated) if isinstance(u, int)), shared)
    return IPAMBlock(
        name=str(meta.name or ""),
        cidr=str(spec.cidr or ""),
        affinity=str(spec.affinity) if spec.affinity else None,
        allocations=allocations,
        unallocated=cast("tuple[int, ...]", unallocated),  # ints only: built from ints above
        attributes=tuple(attribute_from(a) for a in _array(spec.attributes) if isinstance(a, Mapping)),
        strict_affinity=_bool(spec.strictAffinity),
        deleted=_bool(spec.deleted),
        resource_version=str(meta.resourceVersion or ""),
        affinity_claim_time=_opt(spec.affinityClaimTime),
        sequence_number=seq if isinstance((seq := spec.sequenceNumber), int) else None,
    )


def affinity_from(obj: JSON) -> BlockAffinity:
    spec = _spec(obj)
    return BlockAffinity(
        name=str(_meta(obj).get("name") or ""),
        node=str(spec.get("node") or ""),
        cidr=str(spec.get("cidr") or ""),
        state=str(spec.get("state") or ""),
        deleted=_bool(spec.get("deleted")),
        resource_version=str(_meta(obj).get("resourceVersion") or ""),
    )


class _HandleSpec(msgspec.Struct):
    handleID: Any = None
    block: Any = None


HandleRecord = listed("IPAMHandle", _HandleSpec)


def handle_from(
    obj: Listed | JSON, shared: dict[tuple[tuple[str, int], ...], dict[str, int]] | None = None
) -> IPAMHandle:
    """One IPAMHandle. With `shared` (one collection's memo), handles holding the same addresses per block
    share one `blocks` dict (never written after collection): most of 60,000 handles hold one address in
    one of a few thousand blocks, and a dict each would be a fifth of the Calico section's memory."""
    meta, spec = parts(obj, HandleRecord, _HandleSpec)
    name = intern(str(meta.name or ""))  # the handle id its blocks' attributes name (shared with them)
    blocks = {intern(str(k)): int(v) for k, v in _object(spec.block).items() if isinstance(v, int)}
    if shared is not None:
        blocks = shared.setdefault(tuple(blocks.items()), blocks)
    return IPAMHandle(
        name=name,
        handle_id=name if (given := str(spec.handleID or name)) == name else intern(given),
        blocks=blocks,
        resource_version=str(meta.resourceVersion or ""),
    )


def config_from(obj: JSON) -> IPAMConfig:
    spec = _spec(obj)
    auto = spec.get("autoAllocateBlocks")
    return IPAMConfig(
        strict_affinity=_bool(spec.get("strictAffinity")),
        max_blocks_per_host=int(spec.get("maxBlocksPerHost") or 0),
        auto_allocate_blocks=True if auto is None else _bool(auto),
        ip_cooldown_seconds=cool if isinstance((cool := spec.get("ipCooldownSeconds")), int) else None,
    )


def pod_refs(section: CalicoSection) -> set[str]:
    """ "namespace/name" of every pod an allocation names (tunnel addresses name none)."""
    refs: set[str] = set()
    for block in section.blocks:
        used = {a for a in block.allocations if a is not None}
        for index in used:
            if 0 <= index < len(block.attributes):
                refs.update(block.attributes[index].pod_refs)
    return refs


def pod_names(section: CalicoSection) -> Iterator[str]:
    """The pod name of every allocation attribute: the collected pods share these strings (one each instead of
    two for 60,000 pods, docs/performance.md)."""
    for block in section.blocks:
        for attr in block.attributes:
            if attr.pod:
                yield attr.pod


def collect_served(api: KubeApi, groups: set[str]) -> CalicoSection | None:
    """The section, when the cluster serves Calico's IPAM (crd.projectcalico.org/v1, or projectcalico.org/v3
    alone); otherwise None."""
    version = calico_api(groups)
    return collect_calico(api, version) if version is not None else None


def cidrs(section: CalicoSection) -> list[str]:
    """Every range Calico hands addresses out of: its pools and its blocks."""
    return [p.cidr for p in section.pools] + [b.cidr for b in section.blocks]
