"""The fake Kubernetes API server with Cilium's resources and a small cilium-operator simulation.

Why it exists: an apply of a `cilium-pool` plan is verified end to end by what the operator does next. The
real operator (cilium/cilium pkg/ipam/allocator/podcidr/podcidr.go, clusterpool/clusterpool.go) builds its
cluster-pool allocators from `cluster-pool-ipv4-cidr` when it starts and gives every CiliumNode without
`spec.ipam.podCIDRs` the next free per-node CIDR, or records "allocator full" in
`status.ipam.operator-status.error`; the multi-pool operator (multipool/pool_allocator.go) watches
CiliumPodIPPools and allocates blocks to nodes that request addresses (`spec.ipam.pools.requested` ->
`allocated`), recording "failed to allocate ipv4 address for node ... from pool ..." when it cannot. This fake
plays exactly that, and only when the real one would act: on a write to the cilium-operator Deployment (a
restart) and on a write to a CiliumPodIPPool. The inner error text after the multi-pool prefix is the fake's own.
"""

from __future__ import annotations

from ipaddress import IPv4Network
from typing import Any

from tests.support.fakes.kube_server import FakeKubeServer, Response

GROUP = "cilium.io"
JSON = dict[str, Any]
WRITES = ("POST", "PUT", "PATCH")
ALLOCATOR_FULL = "allocator full"


def _v4(text: str) -> IPv4Network | None:
    try:
        net = IPv4Network(text, strict=False)
    except ValueError:
        return None
    return net


class CiliumKubeServer(FakeKubeServer):
    """A fake cluster serving cilium.io (CiliumNode v2, CiliumPodIPPool in `pool_versions`), Services and
    ServiceCIDRs, whose cilium-operator allocates on restart (cluster pool) and on pool changes (multi-pool)."""

    def __init__(self, *, pool_versions: tuple[str, ...] = ("v2alpha1",), **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.register(GROUP, "v2", "ciliumnodes", "CiliumNode", False, status_subresource=True)
        for version in pool_versions:
            self.register(GROUP, version, "ciliumpodippools", "CiliumPodIPPool", False)
        if len(pool_versions) > 1:  # one CRD serving every version, as upstream's does
            crd = self.get("apiextensions.k8s.io", "v1", "customresourcedefinitions", f"ciliumpodippools.{GROUP}")
            assert crd is not None
            crd["spec"]["versions"] = [{"name": v, "served": True, "storage": v == "v2"} for v in pool_versions]
            self.put(crd)
        self.register("", "v1", "services", "Service", True)
        self.register("networking.k8s.io", "v1", "servicecidrs", "ServiceCIDR", False)
        self.restarts = 0

    def answer(self, method: str, path: str, content_type: str, body: bytes) -> Response:
        response = super().answer(method, path, content_type, body)
        if method in WRITES and 200 <= response.status < 300:
            if "/deployments/cilium-operator" in path:
                self.restarts += 1
                self.run_operator()
            elif "/ciliumpodippools" in path:
                self.allocate_pools()
        return response

    # ---- the operator ---------------------------------------------------------------------------

    def _config(self) -> JSON:
        cm = self.get("", "v1", "configmaps", "cilium-config", "kube-system")
        data: JSON = (cm or {}).get("data") or {}
        return data

    def _nodes(self) -> list[JSON]:
        return self.list(GROUP, "v2", "ciliumnodes")

    def run_operator(self) -> None:
        """What a (re)started operator does: cluster-pool allocation, or a multi-pool pass."""
        mode = self._config().get("ipam", "cluster-pool")
        if mode == "cluster-pool":
            self.allocate_cluster_pool()
        elif mode == "multi-pool":
            self.allocate_pools()

    def allocate_cluster_pool(self) -> None:
        data = self._config()
        entries = [n for n in map(_v4, str(data.get("cluster-pool-ipv4-cidr", "10.0.0.0/8")).split()) if n is not None]
        mask = int(data.get("cluster-pool-ipv4-mask-size", 24))
        nodes = self._nodes()
        taken = {n for node in nodes for n in map(_v4, node.get("spec", {}).get("ipam", {}).get("podCIDRs", []))}
        for node in nodes:
            ipam = node.setdefault("spec", {}).setdefault("ipam", {})
            if ipam.get("podCIDRs"):
                continue
            free = next((c for e in entries for c in e.subnets(new_prefix=mask) if c not in taken), None)
            status = node.setdefault("status", {}).setdefault("ipam", {})
            if free is None:
                status["operator-status"] = {"error": ALLOCATOR_FULL}
            else:
                taken.add(free)
                ipam["podCIDRs"] = [str(free)]
                status.pop("operator-status", None)
            self.put(node)

    def _pools(self) -> dict[str, tuple[list[IPv4Network], int]]:
        out: dict[str, tuple[list[IPv4Network], int]] = {}
        for rtype in self.resource_types():
            if rtype.group == GROUP and rtype.plural == "ciliumpodippools":
                for pool in self.list(GROUP, rtype.version, "ciliumpodippools"):
                    v4 = pool.get("spec", {}).get("ipv4") or {}
                    items = [i["cidr"] if isinstance(i, dict) else i for i in v4.get("cidrs", [])]
                    nets = [n for n in map(_v4, items) if n is not None]
                    out[pool["metadata"]["name"]] = (nets, int(v4.get("maskSize", 24)))
                break
        return out

    def allocate_pools(self) -> None:
        pools = self._pools()
        nodes = self._nodes()
        taken = {
            n
            for node in nodes
            for a in node.get("spec", {}).get("ipam", {}).get("pools", {}).get("allocated", [])
            for n in map(_v4, a.get("cidrs", []))
        }
        for node in nodes:
            spec_pools = node.setdefault("spec", {}).setdefault("ipam", {}).setdefault("pools", {})
            allocated = spec_pools.setdefault("allocated", [])
            errors = []
            changed = False
            for request in spec_pools.get("requested", []):
                name = request["pool"]
                if name not in pools:
                    continue
                nets, mask = pools[name]
                entry = next((a for a in allocated if a["pool"] == name), None)
                have = len(entry["cidrs"]) if entry else 0
                need = int((request.get("needed") or {}).get("ipv4-addrs", 0))
                usable = (1 << (32 - mask)) - 2
                while have * usable < need:
                    free = next((c for e in nets for c in e.subnets(new_prefix=mask) if c not in taken), None)
                    if free is None:
                        errors.append(
                            f'failed to allocate ipv4 address for node "{node["metadata"]["name"]}" from pool '
                            f'"{name}": no free /{mask} left'
                        )
                        break
                    taken.add(free)
                    if entry is None:
                        entry = {"pool": name, "cidrs": []}
                        allocated.append(entry)
                    entry["cidrs"].append(str(free))
                    have += 1
                    changed = True
            status = node.setdefault("status", {}).setdefault("ipam", {})
            before = status.get("operator-status")
            status["operator-status"] = {"error": "; ".join(errors)} if errors else None
            if not errors:
                status.pop("operator-status")
            if changed or before != status.get("operator-status"):
                self.put(node)
