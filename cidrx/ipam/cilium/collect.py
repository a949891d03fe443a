"""Read Cilium's IPAM state (a few gets and list calls) into the records of cidrx.ipam.cilium.model.

Why it exists: analysis and planning are pure functions of a snapshot, so everything they need about Cilium
is read here once: `cilium-config` (the mode and the cluster pool), CiliumNodes, CiliumPodIPPools (from
whichever of cilium.io/v2 and v2alpha1 the cluster serves), the Service ranges a new pod range must stay clear
of, and whether the cilium-operator Deployment exists. A cluster is Cilium's when it serves cilium.io and
holds `kube-system/cilium-config`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from cidrx.ipam.cilium.model import (
    CIDR_KEY,
    CONFIG_NAME,
    CONFIG_NAMESPACE,
    DEFAULT_CLUSTER_POOL,
    DEFAULT_MASK,
    DEFAULT_MODE,
    MASK_KEY,
    MODE_KEY,
    OPERATOR_NAME,
    POOL_GROUP,
    POOL_VERSIONS,
    CiliumConfig,
    CiliumNode,
    CiliumSection,
    PodIPPool,
    PoolAllocation,
    PoolRequest,
)
from cidrx.model.plan import DIGEST_TAG

if TYPE_CHECKING:
    from cidrx.kube.api import KubeApi

JSON = Mapping[str, Any]
POOL_CRD = f"ciliumpodippools.{POOL_GROUP}"


def _obj(value: Any) -> JSON:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    try:
        return int(str(value).strip())
    except ValueError:
        return None


def split_list(value: str) -> tuple[str, ...]:
    """The entries of `cluster-pool-ipv4-cidr`: the Helm chart joins the list with spaces; the operator splits
    on whitespace (a comma-separated value is read the same way, as older charts wrote it)."""
    return tuple(part for part in value.replace(",", " ").split() if part)


def config_from(obj: JSON | None) -> CiliumConfig | None:
    """The IPAM settings of a `cilium-config` ConfigMap (None: no ConfigMap)."""
    if obj is None:
        return None
    data = _obj(obj.get("data"))
    meta = _obj(obj.get("metadata"))
    raw = data.get(CIDR_KEY)
    mask = _int(data.get(MASK_KEY))
    return CiliumConfig(
        mode=str(data.get(MODE_KEY) or DEFAULT_MODE).strip(),
        cluster_pool=split_list(str(raw)) if raw is not None else DEFAULT_CLUSTER_POOL,
        mask_size=mask if mask is not None else DEFAULT_MASK,
        cluster_pool_raw=str(raw) if raw is not None else None,
        resource_version=str(meta.get("resourceVersion") or ""),
        plan_label=str(_obj(meta.get("annotations")).get(DIGEST_TAG) or ""),
    )


def node_from(obj: JSON) -> CiliumNode:
    spec_ipam = _obj(_obj(obj.get("spec")).get("ipam"))
    status_ipam = _obj(_obj(obj.get("status")).get("ipam"))
    pools = _obj(spec_ipam.get("pools"))
    requested = []
    for r in _list(pools.get("requested")):
        r = _obj(r)
        needed = _obj(r.get("needed"))
        if r.get("pool"):
            requested.append(PoolRequest(str(r["pool"]), _int(needed.get("ipv4-addrs")) or 0))
    allocated = [
        PoolAllocation(str(a["pool"]), tuple(str(c) for c in _list(a.get("cidrs")) if c))
        for a in map(_obj, _list(pools.get("allocated")))
        if a.get("pool")
    ]
    return CiliumNode(
        name=str(_obj(obj.get("metadata")).get("name") or ""),
        pod_cidrs=tuple(str(c) for c in _list(spec_ipam.get("podCIDRs")) if c),
        operator_error=str(_obj(status_ipam.get("operator-status")).get("error") or ""),
        requested=tuple(sorted(requested, key=lambda r: r.pool)),
        allocated=tuple(sorted(allocated, key=lambda a: a.pool)),
    )


def pool_cidr_text(item: Any) -> str:
    """One entry of a CiliumPodIPPool's spec.ipv4.cidrs: a string in v2alpha1, {cidr, reservedRange} in v2."""
    if isinstance(item, Mapping):
        return str(item.get("cidr") or "")
    return str(item or "")


def pool_from(obj: JSON) -> PodIPPool:
    meta = _obj(obj.get("metadata"))
    v4 = _obj(_obj(obj.get("spec")).get("ipv4"))
    return PodIPPool(
        name=str(meta.get("name") or ""),
        cidrs=tuple(c for c in (pool_cidr_text(i) for i in _list(v4.get("cidrs"))) if c),
        mask_size=_int(v4.get("maskSize")),
        resource_version=str(meta.get("resourceVersion") or ""),
        plan_label=str(_obj(meta.get("annotations")).get(DIGEST_TAG) or ""),
    )


def served_pool_version(crd: JSON | None) -> str | None:
    """The CiliumPodIPPool version to read: v2 when the CRD serves it, else v2alpha1 (None: no CRD)."""
    if crd is None:
        return None
    served = {str(v.get("name")) for v in map(_obj, _list(_obj(crd.get("spec")).get("versions"))) if v.get("served")}
    return next((v for v in POOL_VERSIONS if v in served), None)


def section_from(
    config: CiliumConfig,
    nodes: Iterable[JSON],
    pools: Iterable[JSON] = (),
    *,
    pool_api: str = "",
    service_cidrs: Iterable[str] = (),
    kubernetes_service_ip: str = "",
    operator: str = "",
) -> CiliumSection:
    """A CiliumSection from the objects as dicts, each kind sorted by name for a stable fingerprint."""
    return CiliumSection(
        config=config,
        nodes=tuple(sorted((node_from(n) for n in nodes), key=lambda n: n.name)),
        ippools=tuple(sorted((pool_from(p) for p in pools), key=lambda p: p.name)),
        pool_api=pool_api,
        service_cidrs=tuple(sorted(set(service_cidrs))),
        kubernetes_service_ip=kubernetes_service_ip,
        operator=operator,
    )


def collect_served(api: KubeApi, groups: set[str]) -> CiliumSection | None:
    """The section, when the cluster serves cilium.io and holds kube-system/cilium-config; otherwise None."""
    if POOL_GROUP not in groups:
        return None
    config = config_from(api.get_custom("", "v1", "configmaps", CONFIG_NAME, CONFIG_NAMESPACE))
    if config is None:
        return None
    version = served_pool_version(api.get_custom("apiextensions.k8s.io", "v1", "customresourcedefinitions", POOL_CRD))
    pools = list(api.iter_custom(POOL_GROUP, version, "ciliumpodippools")) if version else []
    service = api.get_custom("", "v1", "services", "kubernetes", "default")
    ranges = [
        str(c)
        for obj in api.iter_custom("networking.k8s.io", "v1", "servicecidrs")
        for c in _list(_obj(obj.get("spec")).get("cidrs"))
        if c
    ]
    operator = api.get_custom("apps", "v1", "deployments", OPERATOR_NAME, CONFIG_NAMESPACE)
    return section_from(
        config,
        api.iter_custom(POOL_GROUP, "v2", "ciliumnodes"),
        pools,
        pool_api=f"{POOL_GROUP}/{version}" if version else "",
        service_cidrs=ranges,
        kubernetes_service_ip=str(_obj(service.get("spec") if service else None).get("clusterIP") or ""),
        operator=f"{CONFIG_NAMESPACE}/{OPERATOR_NAME}" if operator is not None else "",
    )


def pod_refs(section: CiliumSection) -> set[str]:
    """Cilium's records name no pods (the agent allocates in memory in cluster-pool mode)."""
    return set()


def cidrs(section: CiliumSection) -> list[str]:
    """None: the ranges named here select the pods kept one by one (cidrx.kube.collect), and Cilium's analysis
    needs only the per-node pod counts every collection keeps (its default pool, 10.0.0.0/8, would keep every
    pod of the cluster)."""
    return []


def ignores_node_pod_cidr(section: CiliumSection | None) -> str:
    """Why Node.spec.podCIDR says nothing about this cluster's pod addresses ("" when Cilium uses it): every
    mode but `kubernetes` hands out its own ranges."""
    if section is None or section.config.mode == "kubernetes":
        return ""
    return f"Cilium IPAM mode {section.config.mode} does not use Node.spec.podCIDR (see the Cilium findings)"
