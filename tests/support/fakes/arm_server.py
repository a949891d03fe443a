"""A loopback fake of the Azure Resource Manager paths cidrx calls, driven by the real azure-mgmt-network and
azure-mgmt-containerservice clients (pointed at it through CIDRX_ARM_ENDPOINT, with CIDRX_ARM_ANONYMOUS=1).

Why it exists: AKS collect, plans' applies and rollbacks must be exercised with the real SDKs, their
serialisation, ETag headers and long-running-operation pollers, without an Azure subscription. What it serves
and checks follows Azure/azure-rest-api-specs (tests/support/fakes/arm_schemas.py cites the files): every request
body is validated against the compact schemas there and every response too; a violation is recorded and fails
the test (`check`). Shapes of the seeded resources follow the specs' examples (ManagedClustersGet,
AgentPoolsGet, VirtualNetworkGet, SubnetGet).

Behaviour it keeps, as Azure documents it (docs/cloud-facts.md, "AKS"):
- ETags: every write changes the resource's etag (and the VNet's when a subnet or peering changes); `If-Match`
  with another etag, or `If-None-Match: *` on an existing resource, is refused with 412 PreconditionFailed;
- long-running operations: PUT/DELETE answer 201/202 with Azure-AsyncOperation (and Retry-After: 0, so pollers
  never sleep); the change takes effect when the operation is polled, or when `finish_operations` is called (time
  passing while no run watches);
- subnets must lie inside the VNet's address space and overlap no other subnet; a subnet with IP configurations
  cannot be deleted; a VNet's address space cannot drop a range a subnet uses; a changed address space leaves
  every peering `LocalNotInSync` until it is re-put with syncRemoteAddressSpace=true;
- an agent pool whose node subnet cannot hold (max nodes + 1) x (max pods + 1) addresses (Azure CNI node subnet;
  + 1 per node otherwise) is refused with InsufficientSubnetSize.
It does not run VMs: creating an agent pool adds no NIC to a subnet.
"""

from __future__ import annotations

import copy
import itertools
import json
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from ipaddress import IPv4Network
from typing import Any
from urllib.parse import parse_qs, urlsplit

import jsonschema

from tests.support.fakes import arm_schemas as schemas
from tests.support.fakes.loopback import LoopbackServer

JSON = dict[str, Any]
RESERVED = 5

_BASE = r"^/subscriptions/(?P<sub>[^/]+)/resourcegroups/(?P<rg>[^/]+)/providers/"
ROUTES = [
    (
        "cluster_list",
        re.compile(r"^/subscriptions/(?P<sub>[^/]+)/providers/microsoft\.containerservice/managedclusters$"),
    ),
    ("cluster", re.compile(_BASE + r"microsoft\.containerservice/managedclusters/(?P<name>[^/]+)$")),
    ("pools", re.compile(_BASE + r"microsoft\.containerservice/managedclusters/(?P<name>[^/]+)/agentpools$")),
    (
        "pool",
        re.compile(_BASE + r"microsoft\.containerservice/managedclusters/(?P<name>[^/]+)/agentpools/(?P<child>[^/]+)$"),
    ),
    ("vnet", re.compile(_BASE + r"microsoft\.network/virtualnetworks/(?P<name>[^/]+)$")),
    ("subnet", re.compile(_BASE + r"microsoft\.network/virtualnetworks/(?P<name>[^/]+)/subnets/(?P<child>[^/]+)$")),
    (
        "peering",
        re.compile(
            _BASE + r"microsoft\.network/virtualnetworks/(?P<name>[^/]+)/virtualnetworkpeerings/(?P<child>[^/]+)$"
        ),
    ),
    ("routetable", re.compile(_BASE + r"microsoft\.network/routetables/(?P<name>[^/]+)$")),
    ("op_status", re.compile(r"^/cidrx-fake/operations/(?P<name>[^/]+)$")),
]

ROUTE = dict(ROUTES)


@dataclass
class Answer:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    reset: str | None = None


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    body: Any
    headers: dict[str, str]


@dataclass
class _Op:
    effect: Callable[[], None]
    done: bool = False


class ArmError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def _key(*parts: str) -> tuple[str, ...]:
    return tuple(p.lower() for p in parts)


class FakeArm(LoopbackServer):
    label = "ARM fake"
    thread_name = "fake-arm"

    def __init__(self) -> None:
        super().__init__()
        self.clusters: dict[tuple[str, ...], JSON] = {}
        self.pools: dict[tuple[str, ...], JSON] = {}
        self.vnets: dict[tuple[str, ...], JSON] = {}
        self.route_tables: dict[tuple[str, ...], JSON] = {}
        self.ops: dict[str, _Op] = {}
        self.request_log: list[Request] = []
        self.violations: list[str] = []
        self._etags = itertools.count(1)

    def _etag(self) -> str:
        """A new etag: a counter, so that the same seeding gives the same etags (reproducible snapshots)."""
        return f'W/"{next(self._etags):08x}-0000-4000-8000-000000000000"'

    # ---- seeding and inspection ---------------------------------------------------------------------------

    def add_cluster(self, sub: str, rg: str, cluster: JSON) -> None:
        with self._lock:
            self.clusters[_key(sub, rg, cluster["name"])] = copy.deepcopy(cluster)

    def add_pool(self, sub: str, rg: str, cluster: str, pool: JSON) -> None:
        with self._lock:
            owner = self.clusters[_key(sub, rg, cluster)]
            made = {"id": f"{owner['id']}/agentPools/{pool['name']}", "etag": self._etag(), **copy.deepcopy(pool)}
            self.pools[_key(sub, rg, cluster, pool["name"])] = made

    def add_vnet(self, sub: str, rg: str, vnet: JSON) -> None:
        with self._lock:
            v = copy.deepcopy(vnet)
            v.setdefault("etag", self._etag())
            for s in v["properties"].get("subnets", []):
                s.setdefault("etag", v["etag"])
            self.vnets[_key(sub, rg, vnet["name"])] = v

    def add_route_table(self, sub: str, rg: str, table: JSON) -> None:
        with self._lock:
            self.route_tables[_key(sub, rg, table["name"])] = copy.deepcopy(table)

    def vnet(self, sub: str, rg: str, name: str) -> JSON:
        return self.vnets[_key(sub, rg, name)]

    def subnets(self, sub: str, rg: str, vnet: str) -> list[JSON]:
        subnets: list[JSON] = self.vnet(sub, rg, vnet)["properties"]["subnets"]
        return subnets

    def put_subnet(self, sub: str, rg: str, vnet: str, subnet: JSON) -> None:
        """Someone else adds or changes a subnet (no checks, as a seed)."""
        with self._lock:
            v = self.vnet(sub, rg, vnet)
            kept = [s for s in v["properties"]["subnets"] if s["name"] != subnet["name"]]
            v["properties"]["subnets"] = [*kept, {"etag": self._etag(), **copy.deepcopy(subnet)}]
            v["etag"] = self._etag()

    def finish_operations(self) -> int:
        with self._lock:
            pending = [op for op in self.ops.values() if not op.done]
            for op in pending:
                op.effect()
                op.done = True
            return len(pending)

    def reset_log(self) -> None:
        with self._lock:
            self.request_log.clear()

    def writes(self) -> list[str]:
        return [f"{r.method} {r.path}" for r in self.request_log if r.method in ("PUT", "PATCH", "POST", "DELETE")]

    def check(self) -> None:
        if self.violations:
            raise AssertionError("ARM fake saw schema violations:\n" + "\n".join(self.violations))

    # ---- serving ------------------------------------------------------------------------------------------

    def answer(self, method: str, path: str, content_type: str, body: bytes) -> Answer:
        split = urlsplit(path)
        query = {k: v[-1] for k, v in parse_qs(split.query).items()}
        headers = dict(getattr(self.request_headers, "value", {}) or {})
        parsed = json.loads(body) if body.strip() else None
        request = Request(method, split.path, query, parsed, headers)
        with self._lock:
            self.request_log.append(request)
            fault = self._take_fault(method, split.path)
            if fault is not None:
                return self._error(fault.status, "InjectedFault", fault.message or "injected")
            try:
                if "api-version" not in query and not split.path.startswith("/cidrx-fake/"):
                    raise ArmError(400, "MissingApiVersionParameter", "The api-version query parameter is required.")
                return self._route(request)
            except ArmError as exc:
                return self._error(exc.status, exc.code, exc.message)

    def _error(self, status: int, code: str, message: str) -> Answer:
        return Answer(status, json.dumps({"error": {"code": code, "message": message}}).encode())

    def _ok(self, kind: str, value: Any, status: int = 200, headers: dict[str, str] | None = None) -> Answer:
        if kind in schemas.RESPONSES:
            for item in value.get("value", [value]) if isinstance(value, dict) and "value" in value else [value]:
                self._validate(f"response {kind}", item, schemas.RESPONSES[kind])
        return Answer(status, json.dumps(value).encode(), headers or {})

    def _validate(self, what: str, value: Any, schema: JSON) -> bool:
        errors = list(jsonschema.Draft7Validator(schema).iter_errors(value))
        for e in errors:
            self.violations.append(f"{what}: {'/'.join(str(p) for p in e.absolute_path)}: {e.message}")
        return not errors

    def _request_body(self, what: str, request: Request, schema: JSON) -> JSON:
        if not isinstance(request.body, dict) or not self._validate(f"request {what}", request.body, schema):
            raise ArmError(400, "InvalidRequestContent", f"the {what} body does not match the API schema")
        return request.body

    @staticmethod
    def _guard(request: Request, current: JSON | None) -> None:
        """ARM's optimistic concurrency: If-Match (an etag, or * for any) and If-None-Match: *."""
        match = request.headers.get("if-match")
        none_match = request.headers.get("if-none-match")
        if none_match == "*" and current is not None:
            raise ArmError(412, "PreconditionFailed", "The resource already exists (If-None-Match: *).")
        if match is not None and (current is None or (match != "*" and match != current.get("etag"))):
            raise ArmError(412, "PreconditionFailed", "The etag does not match (If-Match).")

    def _route(self, request: Request) -> Answer:
        lower = request.path.lower()
        for name, pattern in ROUTES:
            m = pattern.match(lower)
            if m is None:
                continue
            # Names keep their case from the original path.
            original = {k: request.path[m.start(k) : m.end(k)] for k in m.groupdict() if m.group(k) is not None}
            return getattr(self, f"_{name}")(request, original)
        raise ArmError(404, "InvalidResourceType", f"the fake serves no {request.method} {request.path}")

    # ---- operations ---------------------------------------------------------------------------------------

    def _op_status(self, request: Request, p: dict[str, str]) -> Answer:
        op = self.ops.get(p["name"])
        if op is None:
            raise ArmError(404, "NotFound", "no such operation")
        if not op.done:
            op.effect()
            op.done = True
        return Answer(200, json.dumps({"status": "Succeeded", "name": p["name"]}).encode())

    def _start(self, effect: Callable[[], None], status: int, value: Any, kind: str, location: bool = False) -> Answer:
        op_id = uuid.uuid4().hex
        self.ops[op_id] = _Op(effect)
        url = f"{self.url}/cidrx-fake/operations/{op_id}"
        headers = {"Azure-AsyncOperation": url, "Retry-After": "0"}
        if location:
            headers["Location"] = url
        if value is None:
            return Answer(status, b"", headers)
        return self._ok(kind, value, status, headers)

    # ---- managed clusters and agent pools -----------------------------------------------------------------

    def _cluster(self, request: Request, p: dict[str, str]) -> Answer:
        found = self.clusters.get(_key(p["sub"], p["rg"], p["name"]))
        if request.method != "GET":
            raise ArmError(405, "MethodNotAllowed", "the fake only reads managed clusters")
        if found is None:
            raise ArmError(
                404,
                "ResourceNotFound",
                f"The Resource 'Microsoft.ContainerService/managedClusters/{p['name']}' was not found.",
            )
        value = copy.deepcopy(found)
        value["properties"]["agentPoolProfiles"] = [
            {"name": pool["name"], **pool["properties"]}
            for k, pool in sorted(self.pools.items())
            if k[:3] == _key(p["sub"], p["rg"], p["name"])
        ]
        return self._ok("managedCluster", value)

    def _cluster_list(self, request: Request, p: dict[str, str]) -> Answer:
        items = [self._cluster_view(k, v) for k, v in sorted(self.clusters.items()) if k[0] == p["sub"].lower()]
        return self._ok("managedCluster", {"value": items})

    def _cluster_view(self, key: tuple[str, ...], found: JSON) -> JSON:
        value = copy.deepcopy(found)
        value["properties"]["agentPoolProfiles"] = [
            {"name": pool["name"], **pool["properties"]} for k, pool in sorted(self.pools.items()) if k[:3] == key
        ]
        return value

    def _pools(self, request: Request, p: dict[str, str]) -> Answer:
        if _key(p["sub"], p["rg"], p["name"]) not in self.clusters:
            raise ArmError(404, "ResourceNotFound", f"cluster {p['name']} not found")
        items = [copy.deepcopy(v) for k, v in sorted(self.pools.items()) if k[:3] == _key(p["sub"], p["rg"], p["name"])]
        return self._ok("agentPool", {"value": items})

    def _pool(self, request: Request, p: dict[str, str]) -> Answer:
        key = _key(p["sub"], p["rg"], p["name"], p["child"])
        if _key(p["sub"], p["rg"], p["name"]) not in self.clusters:
            raise ArmError(404, "ResourceNotFound", f"cluster {p['name']} not found")
        current = self.pools.get(key)
        if request.method == "GET":
            if current is None:
                raise ArmError(404, "NotFound", f"agent pool {p['child']} not found")
            return self._ok("agentPool", copy.deepcopy(current))
        self._guard(request, current)
        if request.method == "PUT":
            body = self._request_body("agentPool", request, schemas.AGENT_POOL_REQUEST)
            props = copy.deepcopy(body["properties"])
            self._check_pool_subnets(p["sub"], props)
            pool = {
                "id": self.clusters[_key(p["sub"], p["rg"], p["name"])]["id"] + f"/agentPools/{p['child']}",
                "name": p["child"],
                "type": "Microsoft.ContainerService/managedClusters/agentPools",
                "etag": self._etag(),
                "properties": {**props, "provisioningState": "Creating" if current is None else "Updating"},
            }
            self.pools[key] = pool

            def done() -> None:
                if key in self.pools:
                    self.pools[key]["properties"]["provisioningState"] = "Succeeded"
                    self.pools[key]["etag"] = self._etag()

            return self._start(done, 201 if current is None else 200, copy.deepcopy(pool), "agentPool")
        if request.method == "DELETE":
            if current is None:
                return Answer(204, b"")
            current["properties"]["provisioningState"] = "Deleting"

            def gone() -> None:
                self.pools.pop(key, None)

            return self._start(gone, 202, None, "agentPool", location=True)
        raise ArmError(405, "MethodNotAllowed", request.method)

    def _find_subnet(self, subnet_id: str) -> JSON | None:
        m = ROUTE["subnet"].match(subnet_id.lower())
        if m is None:
            return None
        vnet = self.vnets.get(_key(m["sub"], m["rg"], m["name"]))
        if vnet is None:
            return None
        return next((s for s in vnet["properties"]["subnets"] if s["name"].lower() == m["child"]), None)

    def _check_pool_subnets(self, sub: str, props: JSON) -> None:
        """AKS's checks of a pool's subnets: they exist, and the node subnet holds the pool's autoscaler range up
        front ((max + 1) x (max pods + 1) with Azure CNI node subnet, (max + 1) otherwise)."""
        for key in ("vnetSubnetID", "podSubnetID"):
            if props.get(key) and self._find_subnet(props[key]) is None:
                raise ArmError(400, "InvalidSubnet", f"{key} {props[key]} does not exist")
        node = self._find_subnet(props.get("vnetSubnetID") or "")
        if node is None:
            return
        most = int(props.get("maxCount") or 0) if props.get("enableAutoScaling") else int(props.get("count") or 0)
        per_node = 1 if props.get("podSubnetID") else int(props.get("maxPods") or 30) + 1
        size = IPv4Network(node["properties"]["addressPrefix"]).num_addresses - RESERVED
        used = len(node["properties"].get("ipConfigurations") or [])
        if (most + 1) * per_node > size - used:
            raise ArmError(
                400,
                "InsufficientSubnetSize",
                f"Pre-allocated IPs {(most + 1) * per_node} exceeds IPs available {size - used} in Subnet "
                f"{node['name']}",
            )

    # ---- virtual networks, subnets, peerings, route tables -------------------------------------------------

    def _vnet_or_404(self, p: dict[str, str]) -> JSON:
        vnet = self.vnets.get(_key(p["sub"], p["rg"], p["name"]))
        if vnet is None:
            raise ArmError(404, "ResourceNotFound", f"virtual network {p['name']} not found")
        return vnet

    def _vnet(self, request: Request, p: dict[str, str]) -> Answer:
        vnet = self._vnet_or_404(p)
        if request.method == "GET":
            return self._ok("virtualNetwork", copy.deepcopy(vnet))
        if request.method != "PUT":
            raise ArmError(405, "MethodNotAllowed", request.method)
        self._guard(request, vnet)
        body = self._request_body("virtualNetwork", request, schemas.VNET_REQUEST)
        spaces = [IPv4Network(a) for a in body["properties"]["addressSpace"].get("addressPrefixes") or []]
        for a in spaces:
            for b in spaces:
                if a is not b and a.overlaps(b):
                    raise ArmError(400, "VnetAddressSpacesOverlap", f"address spaces {a} and {b} overlap")
        for s in vnet["properties"]["subnets"]:
            net = IPv4Network(s["properties"]["addressPrefix"])
            if not any(net.subnet_of(a) for a in spaces):
                raise ArmError(
                    400, "InUseSubnetCannotBeUpdated", f"subnet {s['name']} {net} would lie outside the address space"
                )
        old = list(vnet["properties"]["addressSpace"]["addressPrefixes"])
        vnet["properties"]["addressSpace"]["addressPrefixes"] = [str(a) for a in spaces]
        if old != vnet["properties"]["addressSpace"]["addressPrefixes"]:
            for peering in vnet["properties"].get("virtualNetworkPeerings") or []:
                peering["properties"]["peeringSyncLevel"] = "LocalNotInSync"
                peering["etag"] = self._etag()
        vnet["etag"] = self._etag()
        vnet["properties"]["provisioningState"] = "Updating"

        def done() -> None:
            vnet["properties"]["provisioningState"] = "Succeeded"

        return self._start(done, 200, copy.deepcopy(vnet), "virtualNetwork")

    def _subnet(self, request: Request, p: dict[str, str]) -> Answer:
        vnet = self._vnet_or_404(p)
        subnets = vnet["properties"]["subnets"]
        current = next((s for s in subnets if s["name"].lower() == p["child"].lower()), None)
        if request.method == "GET":
            if current is None:
                raise ArmError(404, "NotFound", f"subnet {p['child']} not found")
            return self._ok("subnet", copy.deepcopy(current))
        self._guard(request, current)
        if request.method == "PUT":
            body = self._request_body("subnet", request, schemas.SUBNET_REQUEST)
            props = copy.deepcopy(body["properties"])
            net = IPv4Network(props["addressPrefix"])
            spaces = [IPv4Network(a) for a in vnet["properties"]["addressSpace"]["addressPrefixes"]]
            if not any(net.subnet_of(a) for a in spaces):
                raise ArmError(
                    400,
                    "NetcfgSubnetRangeOutsideVnet",
                    f"subnet {p['child']} {net} is outside the VNet's address space",
                )
            for other in subnets:
                if other is not current and IPv4Network(other["properties"]["addressPrefix"]).overlaps(net):
                    raise ArmError(400, "NetcfgSubnetRangesOverlap", f"{net} overlaps subnet {other['name']}")
            for ref in ("routeTable", "networkSecurityGroup"):
                if ref in props and ref == "routeTable":
                    m = ROUTE["routetable"].match(props[ref]["id"].lower())
                    if m is None or _key(m["sub"], m["rg"], m["name"]) not in self.route_tables:
                        raise ArmError(400, "InvalidResourceReference", f"route table {props[ref]['id']} not found")
            subnet = {
                "id": f"{vnet['id']}/subnets/{p['child']}",
                "name": p["child"],
                "type": "Microsoft.Network/virtualNetworks/subnets",
                "etag": self._etag(),
                "properties": {**props, "provisioningState": "Updating"},
            }
            if current is not None:
                subnet["properties"]["ipConfigurations"] = current["properties"].get("ipConfigurations", [])
                subnets.remove(current)
            subnets.append(subnet)
            vnet["etag"] = self._etag()

            def done() -> None:
                subnet["properties"]["provisioningState"] = "Succeeded"

            return self._start(done, 201 if current is None else 200, copy.deepcopy(subnet), "subnet")
        if request.method == "DELETE":
            if current is None:
                return Answer(204, b"")
            if current["properties"].get("ipConfigurations"):
                raise ArmError(400, "InUseSubnetCannotBeDeleted", f"subnet {p['child']} is in use")
            current["properties"]["provisioningState"] = "Deleting"

            def gone() -> None:
                if current in subnets:
                    subnets.remove(current)
                    vnet["etag"] = self._etag()

            return self._start(gone, 202, None, "subnet", location=True)
        raise ArmError(405, "MethodNotAllowed", request.method)

    def _peering(self, request: Request, p: dict[str, str]) -> Answer:
        vnet = self._vnet_or_404(p)
        peerings = vnet["properties"].setdefault("virtualNetworkPeerings", [])
        current = next((x for x in peerings if x["name"].lower() == p["child"].lower()), None)
        if request.method == "GET":
            if current is None:
                raise ArmError(404, "NotFound", f"peering {p['child']} not found")
            return self._ok("virtualNetworkPeering", copy.deepcopy(current))
        if request.method != "PUT":
            raise ArmError(405, "MethodNotAllowed", request.method)
        self._guard(request, current)
        body = self._request_body("virtualNetworkPeering", request, schemas.PEERING_REQUEST)
        if current is None:
            raise ArmError(400, "InvalidRequest", "the fake only updates existing peerings")
        props = {k: v for k, v in body["properties"].items() if k not in ("peeringState", "peeringSyncLevel")}
        current["properties"].update(props)
        if request.query.get("syncRemoteAddressSpace") == "true":
            current["properties"]["peeringSyncLevel"] = "FullyInSync"
        current["etag"] = self._etag()
        vnet["etag"] = self._etag()
        return self._start(lambda: None, 200, copy.deepcopy(current), "virtualNetworkPeering")

    def _routetable(self, request: Request, p: dict[str, str]) -> Answer:
        table = self.route_tables.get(_key(p["sub"], p["rg"], p["name"]))
        if request.method != "GET":
            raise ArmError(405, "MethodNotAllowed", "the fake only reads route tables")
        if table is None:
            raise ArmError(404, "NotFound", f"route table {p['name']} not found")
        return self._ok("routeTable", copy.deepcopy(table))
