"""Read Calico's IPAM objects (list calls only) into the compact records of cidrx.calico.model.

Why it exists: analysis and planning are pure functions of a snapshot, so everything they need about
Calico is read here once, one paginated list per resource type, and nothing else.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from cidrx.calico.model import (
    DEFAULT_BLOCK_SIZE,
    AllocationAttribute,
    BlockAffinity,
    CalicoSection,
    IPAMBlock,
    IPAMConfig,
    IPAMHandle,
    IPPool,
)
from cidrx.model import validation
from cidrx.model.plan import DIGEST_TAG

if TYPE_CHECKING:
    from cidrx.kube.api import KubeApi

GROUP, VERSION = "crd.projectcalico.org", "v1"
JSON = Mapping[str, Any]
_Named = TypeVar("_Named", IPPool, IPAMBlock)
log = logging.getLogger(__name__)


def collect_calico(api: KubeApi) -> CalicoSection:
    """Pools, blocks, affinities, handles and the IPAM config (five list calls)."""

    def items(plural: str) -> Iterable[JSON]:
        return api.iter_custom(GROUP, VERSION, plural)

    return section_from(
        items("ippools"), items("ipamblocks"), items("blockaffinities"), items("ipamhandles"), items("ipamconfigs")
    )


def section_from(
    pools: Iterable[JSON],
    blocks: Iterable[JSON],
    affinities: Iterable[JSON],
    handles: Iterable[JSON],
    configs: Iterable[JSON],
) -> CalicoSection:
    """A CalicoSection from the objects as dicts, each kind sorted by name for a stable fingerprint."""
    config = None
    for obj in configs:
        if _meta(obj).get("name") == "default":
            config = config_from(obj)
    return CalicoSection(
        pools=tuple(sorted(_sound((pool_from(p) for p in pools), "IPPool"), key=lambda p: p.name)),
        blocks=tuple(sorted(_sound((block_from(b) for b in blocks), "IPAMBlock"), key=lambda b: b.name)),
        affinities=tuple(sorted((affinity_from(a) for a in affinities), key=lambda a: a.name)),
        handles=tuple(sorted((handle_from(h) for h in handles), key=lambda h: h.name)),
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
    )


def attribute_from(obj: JSON) -> AllocationAttribute:
    secondary = obj.get("secondary") or {}
    handle = obj.get("handle_id")
    return AllocationAttribute(
        handle_id=str(handle) if handle is not None else None,
        namespace=str(secondary.get("namespace") or ""),
        pod=str(secondary.get("pod") or ""),
        node=str(secondary.get("node") or ""),
        type=str(secondary.get("type") or ""),
    )


def block_from(obj: JSON) -> IPAMBlock:
    spec = _spec(obj)
    allocations = tuple(a if isinstance(a, int) else None for a in spec.get("allocations") or [])
    return IPAMBlock(
        name=str(_meta(obj).get("name") or ""),
        cidr=str(spec.get("cidr") or ""),
        affinity=str(spec["affinity"]) if spec.get("affinity") else None,
        allocations=allocations,
        unallocated=tuple(int(u) for u in spec.get("unallocated") or [] if isinstance(u, int)),
        attributes=tuple(attribute_from(a) for a in spec.get("attributes") or [] if isinstance(a, Mapping)),
        strict_affinity=_bool(spec.get("strictAffinity")),
        deleted=_bool(spec.get("deleted")),
        resource_version=str(_meta(obj).get("resourceVersion") or ""),
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


def handle_from(obj: JSON) -> IPAMHandle:
    spec = _spec(obj)
    name = str(_meta(obj).get("name") or "")
    blocks = {str(k): int(v) for k, v in (spec.get("block") or {}).items() if isinstance(v, int)}
    return IPAMHandle(
        name=name,
        handle_id=str(spec.get("handleID") or name),
        blocks=blocks,
        resource_version=str(_meta(obj).get("resourceVersion") or ""),
    )


def config_from(obj: JSON) -> IPAMConfig:
    spec = _spec(obj)
    auto = spec.get("autoAllocateBlocks")
    return IPAMConfig(
        strict_affinity=_bool(spec.get("strictAffinity")),
        max_blocks_per_host=int(spec.get("maxBlocksPerHost") or 0),
        auto_allocate_blocks=True if auto is None else _bool(auto),
    )


def pod_refs(section: CalicoSection) -> set[str]:
    """ "namespace/name" of every pod an allocation names (tunnel addresses name none)."""
    refs: set[str] = set()
    for block in section.blocks:
        used = {a for a in block.allocations if a is not None}
        for index in used:
            if 0 <= index < len(block.attributes):
                ref = block.attributes[index].pod_ref
                if ref is not None:
                    refs.add(ref)
    return refs
