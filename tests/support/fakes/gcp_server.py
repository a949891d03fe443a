"""A loopback fake of the GKE (container v1) and GCE (compute v1) REST APIs, driven by the real clients.

Why the project owns this (docs/architecture.md, tests): cidrx reads clusters, node pools, subnets, peering routes and
private-service-access allocations, and fixes pod-range exhaustion by patching a subnet (with its
``fingerprint``) and creating a node pool or calling UpdateCluster, then polling operations.  No
maintained fake covers those APIs, and mocking our own functions would test nothing.  This module is a
stdlib ``ThreadingHTTPServer`` on 127.0.0.1 (port 0) in a daemon thread that speaks the REST paths the
google-cloud-container and google-cloud-compute clients use, and checks every request and every answer
against Google's discovery documents (tests/support/fakes/gcp_discovery.py): a field or enum the real API would
reject is a *violation*; the fake answers 400 and keeps it in ``FakeGcp.violations`` so the test fails
at teardown (``FakeGcp.check()``).

Pointing the real clients at it (google-api-core keeps an ``http://`` scheme given in ``api_endpoint``:
the REST transports only add ``https://`` when the host has no scheme, and add ``:443`` only when it has
no ``:`` at all)::

    from google.api_core.client_options import ClientOptions
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import compute_v1, container_v1

    opts = ClientOptions(api_endpoint=fake.url)          # "http://127.0.0.1:PORT", no path
    creds = AnonymousCredentials()                       # no token, no ADC lookup
    clusters = container_v1.ClusterManagerClient(credentials=creds, transport="rest", client_options=opts)
    subnets = compute_v1.SubnetworksClient(credentials=creds, client_options=opts)   # compute is REST-only
    # ExtendedOperation pollers: compute builds them lazily with the *default* endpoint
    # (transports/base.py ``_region_operations_client``: RegionOperationsClient(credentials, transport)),
    # so with an endpoint override they must be pre-seeded on the transport, or every .result() goes to
    # compute.googleapis.com:
    subnets._transport._extended_operations_services["region_operations"] = compute_v1.RegionOperationsClient(
        credentials=creds, client_options=opts)
    # (NetworksClient / GlobalAddressesClient use key "global_operations" with GlobalOperationsClient.)

``compute_client()`` below does exactly that.  The public alternative is ``patch_unary()`` (returns the
raw ``compute_v1.Operation``) followed by ``RegionOperationsClient.wait()`` on the same options.

Decisions
  * Mutations take effect when their operation becomes DONE, not when they are accepted: the response is
    a RUNNING operation; the ``op_polls``-th ``get``/``wait`` of it (default 1) makes it DONE and applies
    the change, so code that verifies before waiting fails as it would against the real cloud.
    ``op_polls=0`` finishes at once; ``finish_operations()`` settles everything.  Visible meanwhile, as on
    GKE: a new node pool exists with status PROVISIONING, the cluster is RECONCILING, and a second
    mutation of the same cluster gets 400 FAILED_PRECONDITION "Cluster is running incompatible
    operation"; a second patch of a subnet whose patch is still running gets 400 ``resourceNotReady``.
    ``wait`` finishes the operation (the real ``wait`` returns at DONE or after ~2 minutes).
  * The fingerprint of ``subnetworks.patch`` is checked when the request arrives (412 conditionNotMet,
    the error shape below); a successful patch replaces ``secondaryIpRanges`` with the list sent (the
    field absent means unchanged: proto3 JSON cannot send an empty list) and changes the fingerprint.
    Other fields may be sent back unchanged (get-modify-patch); changing an immutable one is 400.
  * New secondary ranges are checked as GCE does: valid network CIDR, RFC 1035 name, unique names, not
    in 0/8 127/8 169.254/16 224/4, no overlap with any range of any subnet of the network (all regions),
    incoming peering routes, or VPC_PEERING allocations; removing a range a cluster or node pool uses is
    400 ``resourceInUseByAnotherResource``; more than ``secondary_range_limit`` ranges is 400.  The
    reasons are real GCE reasons; the message texts are the fake's.
  * Node pool ``networkConfig.podRange`` and UpdateCluster ``additionalPodRangesConfig`` names must be
    secondary ranges of the cluster's subnet when that subnet is seeded (else unchecked).
  * ``filter`` on compute lists is evaluated by the fake (AIP-160 ``=``/``!=``/``:`` terms, parenthesised
    and ANDed, and the ``eq``/``ne`` regex form).  The discovery document's description of ``filter``
    (globalAddresses.list included) documents AIP-160 "field name, an operator, and the value", so
    ``purpose="VPC_PEERING"`` is a valid server-side filter; re-checking ``purpose`` client-side costs
    nothing and is advised.  ``OR`` and ``orderBy`` other than ``name`` are fake gaps.
  * aggregatedList pages over all subnets ordered by (region, name); every known region (``regions`` plus
    regions with subnets) appears on every page, as ``{"subnetworks": [...]}`` or as a warning-only scope
    ``{"warning": {"code": "NO_RESULTS_ON_PAGE", ...}}`` like the real API.
  * Several projects are modelled (every store is keyed by project), so a Shared VPC is a host project
    holding the network and subnets and a service project holding a cluster whose ``networkConfig`` names
    the host's (``projects/HOST/global/networks/N``); clusters.list with location ``-`` lists a project's
    clusters in every location.  ``routes.list``/``get`` serve a project's routes: the stored ones
    (``add_route``), a default route to the internet per network, and one local route per subnet range
    derived from the subnets, shaped as gcpdiag's real dumps (GoogleCloudPlatform/gcpdiag commit
    06ec8584ec5919df53a4e6841ad2ad74a5f045b2, test-data/gke1/json-dumps/compute-network-routes.json,
    test-data/gce1/json-dumps/compute-network-routes.json); paged by name, ``filter`` applied.  A new
    secondary range that equals or contains a stored route's destination is 400, a range inside a broader
    route is accepted (``Subnetwork.allowSubnetCidrRoutesOverlap`` in the discovery document).  A
    routes-based cluster (``ipAllocationPolicy.useRoutes``) gets ``servicesIpv4Cidr`` from the last /20 of
    its ``clusterIpv4Cidr`` and ``nodeIpv4CidrSize`` 24, as test-data/gke1/json-dumps/container-clusters.json
    shows for ``gke2``.
  * Responses use enum names.  When the client asks ``$alt=json;enum-encoding=int`` (the container client
    always does) names are turned into numbers, as Google does.
  * A discovery method the fake does not implement, or an unsupported UpdateCluster field, is a fake gap:
    501 to the client and the exception kept in ``errors`` (fails the test at teardown).

Retries: GAPIC reads (get/list) retry ServiceUnavailable and DeadlineExceeded by default (first delay
0.1 s, real sleep); a test that injects 503 passes ``retry=None`` or a Retry with a tiny delay.

Faults: ``inject`` answers matching requests with an error status (optionally with ``Retry-After``),
``inject_operation_error`` lets a mutation's operation fail, and ``inject_reset`` drops the connection
instead of answering (see RESET_MODES), for the clients' connection-error paths.

Error bodies: compute ``{"error": {"code", "message", "errors": [{"message", "domain": "global",
"reason"}]}}`` (412 adds ``"location": "If-Match", "locationType": "header"``); container
``{"error": {"code", "message", "status"}}`` with the gRPC status name.  google.api_core maps them to
NotFound, PreconditionFailed, FailedPrecondition, ServiceUnavailable, ...
"""

from __future__ import annotations

import base64
import binascii
import bisect
import hashlib
import http
import ipaddress
import json
import re
import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import parse_qs, urlsplit

from tests.support.fakes.gcp_discovery import ENUMS_AS_NUMBERS, DiscoveryIndex, Match, Violation, discovery_index
from tests.support.fakes.gcp_firewalls import FirewallsMixin
from tests.support.fakes.gcp_node_addresses import NodeAddressesMixin
from tests.support.fakes.loopback import Fault, LoopbackServer, take_fault

if TYPE_CHECKING:
    from google.api_core.client_options import ClientOptions

JSON = dict[str, Any]
T = TypeVar("T")
Handler = Callable[[dict[str, str], dict[str, str], Any], JSON]

COMPUTE_LINK = "https://www.googleapis.com/compute/v1/"
CONTAINER_LINK = "https://container.googleapis.com/v1/"
DEFAULT_REGIONS: tuple[str, ...] = ("asia-east1", "australia-southeast1", "europe-west1", "us-central1")
MAX_RESULTS = 500  # compute lists: "Acceptable values are 0 to 500, inclusive. (Default: 500)"
FORBIDDEN_RANGES = tuple(ipaddress.ip_network(c) for c in ("0.0.0.0/8", "127.0.0.0/8", "169.254.0.0/16", "224.0.0.0/4"))
_RANGE_NAME_RE = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
_ZONE_RE = re.compile(r"^([a-z]+-[a-z]+\d+)-[a-z]$")
_SUBNET_REF_RE = re.compile(r"(?:^|/)projects/([^/]+)/regions/([^/]+)/subnetworks/([^/]+)$")
_NETWORK_REF_RE = re.compile(r"(?:^|/)projects/([^/]+)/global/networks/([^/]+)$")

GRPC_STATUS: dict[int, str] = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ALREADY_EXISTS",
    412: "FAILED_PRECONDITION",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
GRPC_CODE: dict[str, int] = {
    "CANCELLED": 1,
    "INVALID_ARGUMENT": 3,
    "DEADLINE_EXCEEDED": 4,
    "NOT_FOUND": 5,
    "ALREADY_EXISTS": 6,
    "PERMISSION_DENIED": 7,
    "RESOURCE_EXHAUSTED": 8,
    "FAILED_PRECONDITION": 9,
    "ABORTED": 10,
    "INTERNAL": 13,
    "UNAVAILABLE": 14,
    "UNAUTHENTICATED": 16,
    "UNIMPLEMENTED": 12,
}
COMPUTE_REASON: dict[int, str] = {
    400: "invalid",
    401: "authError",
    403: "forbidden",
    404: "notFound",
    409: "alreadyExists",
    412: "conditionNotMet",
    429: "rateLimitExceeded",
    500: "backendError",
    501: "notImplemented",
    503: "backendError",
}


# --------------------------------------------------------------------------------------------------
# Errors, records, faults
# --------------------------------------------------------------------------------------------------


class GcpError(Exception):
    """An API error the fake answers with (shape chosen by the API the request went to)."""

    def __init__(self, code: int, message: str, *, reason: str | None = None, status: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason or COMPUTE_REASON.get(code, "invalid")
        self.status = status or GRPC_STATUS.get(code, "UNKNOWN")

    def body(self, api: str) -> JSON:
        if api == "container":
            return {"error": {"code": self.code, "message": self.message, "status": self.status}}
        detail: JSON = {"message": self.message, "domain": "global", "reason": self.reason}
        if self.code == 412:
            detail.update(location="If-Match", locationType="header")
        return {"error": {"code": self.code, "message": self.message, "errors": [detail]}}


class FakeGap(NotImplementedError):
    """The request is valid for Google but this fake does not implement it (extend the fake)."""


@dataclass(frozen=True)
class RequestRecord:
    """One request the fake received: query keeps the last value of each parameter; body is parsed JSON."""

    method: str
    path: str
    query: dict[str, str]
    body: Any
    method_id: str | None  # discovery method id, e.g. "compute.subnetworks.patch"


@dataclass
class _Operation:
    api: str  # "container" or "compute"
    body: JSON
    polls_left: int
    effect: Callable[[], None]
    busy_key: tuple[str, ...] | None = None  # the cluster or subnet the operation holds
    on_failure: Callable[[str], None] | None = None
    failure: tuple[int, str] | None = None  # (HTTP status, message): ends DONE with this error
    done: bool = False


@dataclass
class _Response:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    reset: str | None = None  # how the HTTP handler drops the connection instead (RESET_MODES)


# --------------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------------


def clone(value: T) -> T:
    """A deep copy of plain JSON data."""
    result: T = json.loads(json.dumps(value))
    return result


def region_of(location: str) -> str:
    """``australia-southeast1-b`` -> ``australia-southeast1``; a region stays itself."""
    found = _ZONE_RE.match(location)
    return found.group(1) if found else location


def pod_block_prefix(max_pods: int) -> int:
    """GKE per-node pod block: next power of two >= 2 x max pods (at least 16 addresses) -> prefix length."""
    size = 1 << max(4, (2 * max_pods - 1).bit_length())
    return 33 - size.bit_length()


def new_fingerprint() -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(8)).decode()


def new_id() -> str:
    return str((1 << 62) | secrets.randbits(62))


def compute_time() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def container_time() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def network_url(project: str, network: str) -> str:
    if network.startswith("https://"):
        return network
    found = _NETWORK_REF_RE.search(network)
    if found:
        return f"{COMPUTE_LINK}projects/{found.group(1)}/global/networks/{found.group(2)}"
    return f"{COMPUTE_LINK}projects/{project}/global/networks/{network}"


def _enc_token(key: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(key).encode()).decode()


def _dec_token(token: str) -> Any:
    try:
        return json.loads(base64.urlsafe_b64decode(token.encode()))
    except (binascii.Error, ValueError, UnicodeDecodeError) as exc:
        raise GcpError(400, f"Invalid value for field 'pageToken': '{token}'.") from exc


def _field(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(obj, dict) or part not in obj:
            return None
        obj = obj[part]
    return obj


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


_TERM_RE = re.compile(r"^([A-Za-z_][\w.]*)\s*(!=|=|:|\s+eq\s+|\s+ne\s+)\s*(.*)$")


def compile_filter(expr: str) -> Callable[[JSON], bool]:
    """A compute list ``filter`` (subset: see the module docstring) as a predicate."""
    expr = expr.strip()
    if not expr:
        return lambda _obj: True
    if expr.startswith("("):
        terms = []
        rest = expr
        while rest:
            found = re.match(r"^\(([^()]*)\)\s*(?:AND\s+)?", rest)
            if found is None:
                if re.match(r"^OR\b", rest) or " OR " in rest:
                    raise FakeGap(f"compute filter with OR is not implemented by the fake: {expr!r}")
                raise GcpError(400, f"Invalid value for field 'filter': '{expr}'. Invalid list filter expression.")
            terms.append(found.group(1).strip())
            rest = rest[found.end() :].strip()
    else:
        terms = [expr]
    checks = [_compile_term(term, expr) for term in terms]
    return lambda obj: all(check(obj) for check in checks)


def _compile_term(term: str, expr: str) -> Callable[[JSON], bool]:
    found = _TERM_RE.match(term)
    if found is None:
        raise GcpError(400, f"Invalid value for field 'filter': '{expr}'. Invalid list filter expression.")
    name, op, raw = found.group(1), found.group(2).strip(), found.group(3).strip()
    value = raw[1:-1] if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"" else raw
    if op in ("eq", "ne"):
        pattern = re.compile(value)
        want = op == "eq"
        return lambda obj: (pattern.fullmatch(_text(_field(obj, name))) is not None) == want
    if op == ":":
        if value == "*":
            return lambda obj: _field(obj, name) is not None
        return lambda obj: value in _text(_field(obj, name))
    if op == "=":
        return lambda obj: _text(_field(obj, name)) == value
    return lambda obj: _text(_field(obj, name)) != value


def _page(items: list[tuple[Any, T]], query: dict[str, str]) -> tuple[list[T], str | None]:
    """One page of (sort key, item) pairs already ordered by key: ``maxResults`` + ``pageToken``."""
    raw = query.get("maxResults")
    limit = int(raw) if raw else MAX_RESULTS
    if limit > MAX_RESULTS:
        raise GcpError(400, f"Invalid value for field 'maxResults': '{limit}'. Must be less than or equal to 500")
    limit = limit or MAX_RESULTS
    start = 0
    token = query.get("pageToken")
    if token:
        # items are ordered by key: binary search (a linear scan made listing N items O(N^2 / page)).
        after = _dec_token(token)
        start = bisect.bisect_right(items, after, key=lambda item: json.loads(json.dumps(item[0])))
    chunk = items[start : start + limit]
    more = start + limit < len(items)
    return [item for _, item in chunk], (_enc_token(chunk[-1][0]) if more and chunk else None)


def _overlaps(a: str, b: str) -> bool:
    try:
        return ipaddress.ip_network(a, strict=False).overlaps(ipaddress.ip_network(b, strict=False))
    except (ValueError, TypeError):
        return False


# --------------------------------------------------------------------------------------------------
# The fake
# --------------------------------------------------------------------------------------------------


class FakeGcp(FirewallsMixin, NodeAddressesMixin, LoopbackServer):
    """Fake container v1 + compute v1 REST server.  Use as a context manager, or ``start()``/``stop()``."""

    label = "fake GCP server"
    thread_name = "fake-gcp"
    server_version = "cidrx-fake-gcp/1"
    content_type = "application/json; charset=UTF-8"

    def __init__(
        self,
        *,
        op_polls: int = 1,
        regions: Iterable[str] = DEFAULT_REGIONS,
        secondary_range_limit: int = 30,
        validate: bool = True,
        host: str = "127.0.0.1",
    ) -> None:
        super().__init__(host=host)
        self.op_polls = op_polls
        self.regions = set(regions)
        self.secondary_range_limit = secondary_range_limit
        self.validate = validate
        self.discovery: DiscoveryIndex = discovery_index()
        self.request_log: list[RequestRecord] = []
        self.violations: list[Violation] = []
        self.errors: list[BaseException] = []  # fake gaps and bugs (in the fake or in an on_request hook)
        self.on_request: Callable[[RequestRecord], None] | None = None
        self._op_faults: list[Fault] = []
        self._clusters: dict[tuple[str, str, str], JSON] = {}
        self._pools: dict[tuple[str, str, str], dict[str, JSON]] = {}
        self._container_ops: dict[tuple[str, str, str], _Operation] = {}
        self._subnets: dict[tuple[str, str, str], JSON] = {}
        self._networks: dict[tuple[str, str], JSON] = {}
        self._routes: list[tuple[str, str, str, str, JSON]] = []  # project, network, peering, direction, route
        self._addresses: dict[tuple[str, str], JSON] = {}
        self._net_routes: dict[tuple[str, str], JSON] = {}  # (project, name) -> compute#route (routes.list)
        self._routes_version = 0  # bumped by add_route; with the subnets' ranges, keys the routes.list cache
        self._routes_cache: dict[Any, list[tuple[Any, JSON]]] = {}
        self._firewalls: dict[tuple[str, str], JSON] = {}
        self._instances: dict[tuple[str, str, str], JSON] = {}  # (project, zone, name)
        self._regional_addresses: dict[tuple[str, str, str], JSON] = {}  # (project, region, name)
        self._forwarding_rules: dict[tuple[str, str, str], JSON] = {}  # (project, region, name)
        self._region_ops: dict[tuple[str, str, str], _Operation] = {}
        self._global_ops: dict[tuple[str, str], _Operation] = {}
        self._current = ("", "")  # (method, path) of the request being handled, for inject_operation_error
        self._handlers: dict[str, Handler] = {
            "container.projects.locations.clusters.list": self._clusters_list,
            "container.projects.locations.clusters.get": self._cluster_get,
            "container.projects.locations.clusters.update": self._cluster_update,
            "container.projects.locations.clusters.nodePools.list": self._pools_list,
            "container.projects.locations.clusters.nodePools.get": self._pool_get,
            "container.projects.locations.clusters.nodePools.create": self._pool_create,
            "container.projects.locations.clusters.nodePools.delete": self._pool_delete,
            "container.projects.locations.operations.get": self._container_op_get,
            "container.projects.locations.operations.list": self._container_ops_list,
            "compute.subnetworks.get": self._subnet_get,
            "compute.subnetworks.list": self._subnets_list,
            "compute.subnetworks.aggregatedList": self._subnets_aggregated,
            "compute.subnetworks.patch": self._subnet_patch,
            "compute.subnetworks.expandIpCidrRange": self._subnet_expand,
            "compute.networks.get": self._network_get,
            "compute.networks.list": self._networks_list,
            "compute.networks.listPeeringRoutes": self._peering_routes,
            "compute.routes.list": self._routes_list,
            "compute.routes.get": self._route_get,
            "compute.globalAddresses.get": self._address_get,
            "compute.globalAddresses.list": self._addresses_list,
            "compute.globalAddresses.insert": self._address_insert,
            "compute.regionOperations.get": self._region_op_get,
            "compute.regionOperations.wait": self._region_op_wait,
            "compute.globalOperations.get": self._global_op_get,
            "compute.globalOperations.wait": self._global_op_wait,
            **self.firewall_handlers(),
            **self.node_address_handlers(),
        }

    def answer(self, method: str, path: str, content_type: str, body: bytes) -> _Response:
        return self.handle(method, path, body)

    def client_options(self) -> ClientOptions:
        from google.api_core.client_options import ClientOptions

        return ClientOptions(api_endpoint=self.url)

    @property
    def implemented_methods(self) -> list[str]:
        """Discovery ids of the methods this fake serves; any other valid method is a fake gap (501)."""
        return sorted(self._handlers)

    def check(self) -> None:
        """Raise AssertionError if any request or response violated the discovery documents, or the fake failed."""
        with self._lock:
            problems = [str(v) for v in self.violations] + [f"fake error: {e!r}" for e in self.errors]
            first = self.errors[0] if self.errors else None
        if problems:
            raise AssertionError("fake GCP saw problems:\n  " + "\n  ".join(problems)) from first

    def take_violations(self) -> list[Violation]:
        """Return and forget the violations so far (for tests that provoke them on purpose)."""
        with self._lock:
            taken, self.violations = self.violations, []
        return taken

    # ---- seeding: container ---------------------------------------------------------------------

    def add_cluster(self, project: str, location: str, cluster: JSON) -> JSON:
        """Store a cluster (``nodePools`` inside it are stored as node pools); fills output fields."""
        data = clone(cluster)
        pools = data.pop("nodePools", None) or []
        name = data["name"]
        region = region_of(location)
        data.setdefault("location", location)
        data.setdefault("zone", location)
        data.setdefault("selfLink", f"{CONTAINER_LINK}projects/{project}/locations/{location}/clusters/{name}")
        data.setdefault("id", secrets.token_hex(16))
        data.setdefault("status", "RUNNING")
        data.setdefault("createTime", container_time())
        data.setdefault("currentMasterVersion", "1.27.3-gke.100")
        data.setdefault("currentNodeVersion", data["currentMasterVersion"])
        network = data.setdefault("network", "default")
        subnetwork = data.setdefault("subnetwork", "default")
        net_cfg = data.setdefault("networkConfig", {})
        net_cfg.setdefault("network", f"projects/{project}/global/networks/{network}")
        net_cfg.setdefault("subnetwork", f"projects/{project}/regions/{region}/subnetworks/{subnetwork}")
        policy = data.setdefault("ipAllocationPolicy", {})
        if policy.get("useRoutes"):
            # A routes-based cluster as gcpdiag test-data/gke1/json-dumps/container-clusters.json (commit
            # 06ec8584) shows `gke2`: ipAllocationPolicy {"useRoutes": true, "stackType": "IPV4"}, the pod
            # range only in clusterIpv4Cidr, services in its last /20 (10.4.0.0/14 -> 10.7.240.0/20) and
            # nodeIpv4CidrSize 24.
            policy.setdefault("stackType", "IPV4")
            cidr = ipaddress.ip_network(data["clusterIpv4Cidr"])
            last20 = list(cidr.subnets(new_prefix=20))[-1] if cidr.prefixlen <= 20 else cidr
            data.setdefault("servicesIpv4Cidr", str(last20))
            data.setdefault("nodeIpv4CidrSize", 24)
        else:
            policy.setdefault("useIpAliases", True)
        with self._lock:
            key = (project, location, name)
            self._clusters[key] = data
            self._pools[key] = {}
        for pool in pools:
            self.add_node_pool(project, location, name, pool)
        return self.cluster(project, location, name) or {}

    def add_node_pool(self, project: str, location: str, cluster: str, node_pool: JSON) -> JSON:
        """Store a node pool of a stored cluster; fills selfLink, status, version, podIpv4CidrSize, networkConfig."""
        with self._lock:
            key = (project, location, cluster)
            if key not in self._clusters:
                raise KeyError(f"no cluster {key}; add_cluster first")
            pool = self._fill_pool(key, clone(node_pool))
            self._pools[key][pool["name"]] = pool
            return clone(pool)

    def cluster(self, project: str, location: str, name: str) -> JSON | None:
        """The cluster as GET returns it (with its node pools), or None."""
        with self._lock:
            key = (project, location, name)
            return clone(self._render_cluster(key)) if key in self._clusters else None

    def node_pool(self, project: str, location: str, cluster: str, name: str) -> JSON | None:
        with self._lock:
            pool = self._pools.get((project, location, cluster), {}).get(name)
            return clone(pool) if pool is not None else None

    # ---- seeding: compute -----------------------------------------------------------------------

    def add_network(self, project: str, network: JSON) -> JSON:
        """Store a VPC network; fills kind, id, selfLink, creationTimestamp, routingConfig."""
        data = clone(network)
        name = data["name"]
        data.setdefault("kind", "compute#network")
        data.setdefault("id", new_id())
        data.setdefault("creationTimestamp", compute_time())
        data.setdefault("selfLink", network_url(project, name))
        data.setdefault("selfLinkWithId", f"{COMPUTE_LINK}projects/{project}/global/networks/{data['id']}")
        data.setdefault("autoCreateSubnetworks", False)
        data.setdefault("routingConfig", {"routingMode": "REGIONAL"})
        data.setdefault("mtu", 1460)
        data.setdefault("networkFirewallPolicyEnforcementOrder", "AFTER_CLASSIC_FIREWALL")
        with self._lock:
            self._networks[(project, name)] = data
        # Every new network gets GCE's default route to the internet (gcpdiag test-data/gke5/json-dumps/
        # compute-network-routes.json: destRange 0.0.0.0/0, nextHopGateway default-internet-gateway).
        digest = hashlib.sha256(data["selfLink"].encode()).hexdigest()[:16]
        self.add_route(
            project,
            {
                "name": f"default-route-{digest}",
                "description": "Default route to the Internet.",
                "network": name,
                "destRange": "0.0.0.0/0",
                "priority": 1000,
                "nextHopGateway": f"{COMPUTE_LINK}projects/{project}/global/gateways/default-internet-gateway",
            },
        )
        with self._lock:
            return clone(self._render_network((project, name)))

    def add_subnet(self, project: str, region: str, subnet: JSON) -> JSON:
        """Store a subnetwork; fills kind, id, selfLink, region, network URL, fingerprint, creationTimestamp."""
        data = clone(subnet)
        name = data["name"]
        data.setdefault("kind", "compute#subnetwork")
        data.setdefault("id", new_id())
        data.setdefault("creationTimestamp", compute_time())
        data["network"] = network_url(project, data.get("network", "default"))
        data.setdefault("region", f"{COMPUTE_LINK}projects/{project}/regions/{region}")
        data.setdefault("selfLink", f"{COMPUTE_LINK}projects/{project}/regions/{region}/subnetworks/{name}")
        data.setdefault("fingerprint", new_fingerprint())
        data.setdefault("privateIpGoogleAccess", False)
        data.setdefault("stackType", "IPV4_ONLY")
        data.setdefault("purpose", "PRIVATE")
        if "ipCidrRange" in data and "gatewayAddress" not in data:
            data["gatewayAddress"] = str(ipaddress.ip_network(data["ipCidrRange"], strict=False)[1])
        with self._lock:
            self._subnets[(project, region, name)] = data
            return clone(data)

    def update_subnet(
        self, project: str, region: str, name: str, changes: JSON, *, touch_fingerprint: bool = True
    ) -> JSON:
        """Change a stored subnet as another writer would (new fingerprint); for ``on_request`` hooks."""
        with self._lock:
            data = self._subnets[(project, region, name)]
            data.update(clone(changes))
            if touch_fingerprint:
                data["fingerprint"] = new_fingerprint()
            return clone(data)

    def subnet(self, project: str, region: str, name: str) -> JSON | None:
        with self._lock:
            data = self._subnets.get((project, region, name))
            return clone(data) if data is not None else None

    def network(self, project: str, name: str) -> JSON | None:
        with self._lock:
            return clone(self._render_network((project, name))) if (project, name) in self._networks else None

    def add_peering_route(
        self, project: str, network: str, peering: str, route: JSON, *, direction: str = "INCOMING"
    ) -> JSON:
        """Store a route exchanged over ``peering`` (defaults: SUBNET_PEERING_ROUTE, imported, priority 0).

        If the network is stored and has no peering of that name, a minimal ACTIVE one is added to it.
        """
        data = clone(route)
        data.setdefault("type", "SUBNET_PEERING_ROUTE")
        data.setdefault("imported", direction == "INCOMING")
        data.setdefault("priority", 0)
        with self._lock:
            net = self._networks.get((project, network))
            if net is not None and not any(p.get("name") == peering for p in net.get("peerings", [])):
                net.setdefault("peerings", []).append(
                    {
                        "name": peering,
                        "network": f"{COMPUTE_LINK}projects/{peering}-peer/global/networks/{peering}",
                        "state": "ACTIVE",
                        "stateDetails": f"[{compute_time()}]: Connected.",
                        "autoCreateRoutes": True,
                        "exchangeSubnetRoutes": True,
                        "exportCustomRoutes": False,
                        "importCustomRoutes": False,
                        "stackType": "IPV4_ONLY",
                    }
                )
            self._routes.append((project, network, peering, direction, data))
        return clone(data)

    def add_route(self, project: str, route: JSON) -> JSON:
        """Store a route of a network (routes.list), as gcpdiag test-data/gce1/json-dumps/
        compute-network-routes.json (commit 06ec8584) shows them: name, destRange, network URL, one
        nextHop* field, priority (default 1000), kind, id, selfLink, creationTimestamp.

        The subnets' own local routes are not stored: routes.list makes them from the subnets, as GCE lists
        them ("Default local route to the subnetwork ...", nextHopNetwork, priority 0)."""
        data = clone(route)
        name = data["name"]
        data["network"] = network_url(project, data.get("network", "default"))
        data.setdefault("kind", "compute#route")
        data.setdefault("id", new_id())
        data.setdefault("creationTimestamp", compute_time())
        data.setdefault("priority", 1000)
        data.setdefault("selfLink", f"{COMPUTE_LINK}projects/{project}/global/routes/{name}")
        with self._lock:
            self._net_routes[(project, name)] = data
            self._routes_version += 1
        return clone(data)

    def add_routes(self, project: str, routes: Iterable[JSON]) -> None:
        """add_route for many routes at once (a large estate)."""
        for route in routes:
            self.add_route(project, route)

    def route(self, project: str, name: str) -> JSON | None:
        with self._lock:
            data = self._net_routes.get((project, name))
            return clone(data) if data is not None else None

    def add_global_address(self, project: str, address: JSON) -> JSON:
        """Store a global address (e.g. a private-service-access allocation, purpose VPC_PEERING)."""
        data = clone(address)
        name = data["name"]
        data.setdefault("kind", "compute#address")
        data.setdefault("id", new_id())
        data.setdefault("creationTimestamp", compute_time())
        data.setdefault("selfLink", f"{COMPUTE_LINK}projects/{project}/global/addresses/{name}")
        data.setdefault("status", "RESERVED")
        if data.get("purpose") == "VPC_PEERING":
            data.setdefault("addressType", "INTERNAL")
        if "network" in data:
            data["network"] = network_url(project, data["network"])
        with self._lock:
            self._addresses[(project, name)] = data
            return clone(data)

    def global_address(self, project: str, name: str) -> JSON | None:
        with self._lock:
            data = self._addresses.get((project, name))
            return clone(data) if data is not None else None

    # ---- operations -----------------------------------------------------------------------------

    def operations(self, api: str | None = None) -> list[JSON]:
        """Every operation so far (container, then region, then global), as their GET shows them."""
        with self._lock:
            ops = [*self._container_ops.values(), *self._region_ops.values(), *self._global_ops.values()]
            return [clone(op.body) for op in ops if api is None or op.api == api]

    def finish_operations(self) -> int:
        """Make every pending operation DONE (applying its effect); returns how many were pending."""
        with self._lock:
            pending = [
                op
                for op in [*self._container_ops.values(), *self._region_ops.values(), *self._global_ops.values()]
                if not op.done
            ]
            for op in pending:
                self._finish(op)
            return len(pending)

    def inject_operation_error(
        self,
        status: int = 400,
        message: str = "injected operation failure",
        *,
        method: str | None = None,
        path_contains: str | None = None,
        times: int | None = 1,
    ) -> Fault:
        """The next matching mutation is accepted, but its operation ends DONE with this error (no effect).

        Compute: ``error.errors[]`` + ``httpErrorStatusCode``/``httpErrorMessage`` (ExtendedOperation.result()
        raises the mapped exception).  Container: ``error`` (google.rpc.Status) + ``statusMessage``; a node
        pool being created ends in status ERROR.
        """
        fault = Fault(status, method, path_contains, times, body=message)
        with self._lock:
            self._op_faults.append(fault)
        return fault

    # ---- request log and faults -----------------------------------------------------------------

    def reset_log(self) -> None:
        with self._lock:
            self.request_log.clear()

    def requests(self, method: str | None = None, path_contains: str = "") -> list[RequestRecord]:
        with self._lock:
            records = list(self.request_log)
        return [r for r in records if (method is None or r.method == method.upper()) and path_contains in r.path]

    def count(self, method: str | None = None, path_contains: str = "") -> int:
        """How many logged requests have this HTTP method (None: any) and a path containing the text."""
        return len(self.requests(method, path_contains))

    def inject(
        self,
        status: int,
        *,
        method: str | None = None,
        path_contains: str | None = None,
        times: int | None = 1,
        body: Any = None,
        retry_after: int | None = None,
    ) -> Fault:
        """Answer the next ``times`` matching (valid) requests with ``status`` (None: until ``clear_faults``).

        The body is ``body`` if given, else the API's error shape for that status; ``retry_after`` adds a
        ``Retry-After`` header (seconds), as Google's front ends send with some 429 and 503 answers.
        """
        return self._add_fault(Fault(status, method, path_contains, times, retry_after=retry_after, body=body))

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()
            self._op_faults.clear()

    # ---- serving --------------------------------------------------------------------------------

    def handle(self, method: str, raw_path: str, raw_body: bytes) -> _Response:
        """Serve one request; the HTTP handler only moves bytes."""
        cut: list[str] = []  # set when a "partial" reset fault matched: the answer is cut off
        response = self._respond(method, raw_path, raw_body, cut)
        if cut:
            response.reset = cut[0]
        return response

    def _respond(self, method: str, raw_path: str, raw_body: bytes, cut: list[str]) -> _Response:
        split = urlsplit(raw_path)
        path = split.path
        multi = parse_qs(split.query, keep_blank_values=True)
        query = {k: v[-1] for k, v in multi.items()}
        body: Any = None
        bad_json = None
        if raw_body.strip():
            try:
                body = json.loads(raw_body)
            except ValueError as exc:
                bad_json = f"the body is not JSON: {exc}"
        match = self.discovery.find(method, path)
        api = match.method.api if match else ("compute" if path.startswith("/compute/") else "container")
        record = RequestRecord(method, path, query, body, match.method.id if match else None)
        with self._lock:
            self.request_log.append(record)
        try:
            if self.on_request is not None:
                self.on_request(record)
            if match is None:
                if self.validate:
                    self._violate(
                        "request", record, [f"no {method} method at this path in the {api} discovery document"]
                    )
                raise GcpError(404, f"The requested URL {path} was not found on this server.")
            if self.validate:
                problems = [bad_json] if bad_json else []
                problems += self.discovery.check_request(match, multi, body, bool(raw_body.strip()))
                if problems:
                    self._violate("request", record, problems)
                    raise GcpError(400, "Invalid request (discovery document): " + "; ".join(problems))
            with self._lock:
                fault = take_fault(self._faults, method, path)
            if fault is not None and fault.reset in ("close", "rst"):
                return _Response(0, b"", reset=fault.reset)
            if fault is not None and fault.reset == "partial":
                cut.append(fault.reset)
            elif fault is not None:
                payload = fault.body if fault.body is not None else GcpError(fault.status, "injected").body(api)
                headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else {}
                return _Response(fault.status, _encode(payload), headers)
            if body is not None:  # stored as Google stores it, whichever JSON form of enums and int64 came
                body = self.discovery.decode_enum_numbers(match.method, body)
            handler = self._handlers.get(match.method.id)
            if handler is None:
                raise FakeGap(f"{match.method.id} ({method} {match.method.template}) is not implemented by the fake")
            with self._lock:  # held while encoding too: payloads are the stored dicts themselves
                self._current = (method, path)
                payload = handler(match.params, query, body)
                return self._answer(record, match, multi, payload)
        except GcpError as exc:
            return _Response(exc.code, _encode(exc.body(api)))
        except FakeGap as exc:
            with self._lock:
                self.errors.append(exc)
            return _Response(501, _encode(GcpError(501, f"fake GCP: {exc}").body(api)))
        except Exception as exc:  # a bug in the fake or in an on_request hook: 500 now, kept in .errors
            with self._lock:
                self.errors.append(exc)
            return _Response(500, _encode(GcpError(500, f"fake GCP server error: {exc!r}").body(api)))

    def _answer(self, record: RequestRecord, match: Match, multi: dict[str, list[str]], payload: JSON) -> _Response:
        if self.validate:
            problems = self.discovery.check_response(match.method, payload)
            if problems:
                self._violate("response", record, problems)
        if ENUMS_AS_NUMBERS in multi.get("$alt", []):
            payload = self.discovery.encode_enums_as_numbers(match.method, payload)
        return _Response(200, _encode(payload))

    def _violate(self, direction: str, record: RequestRecord, problems: list[str]) -> None:
        with self._lock:
            for problem in problems:
                self.violations.append(Violation(direction, record.method, record.path, record.method_id, problem))

    # ---- container: rendering and helpers (lock held) -------------------------------------------

    def _render_cluster(self, key: tuple[str, str, str]) -> JSON:
        data = dict(self._clusters[key])
        pools = list(self._pools.get(key, {}).values())
        if pools:
            data["nodePools"] = pools
        return data

    def _cluster_or_404(self, project: str, location: str, name: str) -> tuple[tuple[str, str, str], JSON]:
        key = (project, location, name)
        data = self._clusters.get(key)
        if data is None:
            raise GcpError(404, f"Not found: projects/{project}/locations/{location}/clusters/{name}.")
        return key, data

    def _cluster_subnet(self, key: tuple[str, str, str]) -> tuple[str, str, str] | None:
        data = self._clusters[key]
        found = _SUBNET_REF_RE.search(_field(data, "networkConfig.subnetwork") or "")
        if found:
            return (found.group(1), found.group(2), found.group(3))
        return (key[0], region_of(key[1]), data.get("subnetwork", "default"))

    def _subnet_ranges(self, subnet_key: tuple[str, str, str] | None) -> dict[str, str] | None:
        """Secondary ranges (name -> CIDR) of a stored subnet, or None when the subnet is not seeded."""
        subnet = self._subnets.get(subnet_key) if subnet_key else None
        if subnet is None:
            return None
        return {r["rangeName"]: r["ipCidrRange"] for r in subnet.get("secondaryIpRanges", [])}

    def _fill_pool(self, key: tuple[str, str, str], pool: JSON) -> JSON:
        project, location, cluster = key
        data = self._clusters[key]
        name = pool["name"]
        pool.setdefault(
            "selfLink", f"{CONTAINER_LINK}projects/{project}/locations/{location}/clusters/{cluster}/nodePools/{name}"
        )
        pool.setdefault("status", "RUNNING")
        pool.setdefault("version", data.get("currentNodeVersion", "1.27.3-gke.100"))
        max_pods = _field(pool, "maxPodsConstraint.maxPodsPerNode") or _field(
            data, "defaultMaxPodsConstraint.maxPodsPerNode"
        )
        pool.setdefault("podIpv4CidrSize", pod_block_prefix(int(max_pods or 110)))
        net = pool.setdefault("networkConfig", {})
        net.setdefault("podRange", _field(data, "ipAllocationPolicy.clusterSecondaryRangeName") or "")
        if not net["podRange"]:
            del net["podRange"]
        ranges = self._subnet_ranges(self._cluster_subnet(key)) or {}
        cidr = ranges.get(net.get("podRange", "")) or _field(data, "ipAllocationPolicy.clusterIpv4CidrBlock")
        if cidr and "podIpv4CidrBlock" not in net:
            net["podIpv4CidrBlock"] = cidr
        return pool

    def _ranges_in_use(self, subnet_key: tuple[str, str, str]) -> dict[str, str]:
        """Secondary range name -> who uses it (clusters and node pools on that subnet)."""
        used: dict[str, str] = {}
        for key, data in self._clusters.items():
            if self._cluster_subnet(key) != subnet_key:
                continue
            policy = data.get("ipAllocationPolicy", {})
            names = [policy.get("clusterSecondaryRangeName"), policy.get("servicesSecondaryRangeName")]
            names += _field(policy, "additionalPodRangesConfig.podRangeNames") or []
            names += [_field(p, "networkConfig.podRange") for p in self._pools.get(key, {}).values()]
            for name in names:
                if name:
                    used.setdefault(name, f"cluster '{key[2]}'")
        return used

    def _new_container_op(
        self,
        key: tuple[str, str, str],
        op_type: str,
        target_link: str,
        effect: Callable[[], None],
        on_failure: Callable[[str], None] | None = None,
    ) -> JSON:
        project, location, _ = key
        name = f"operation-{int(time.time() * 1000)}-{secrets.token_hex(4)}"
        body: JSON = {
            "name": name,
            "zone": location,
            "location": location,
            "operationType": op_type,
            "status": "RUNNING",
            "selfLink": f"{CONTAINER_LINK}projects/{project}/locations/{location}/operations/{name}",
            "targetLink": target_link,
            "startTime": container_time(),
        }
        op = _Operation("container", body, self.op_polls, effect, busy_key=key, on_failure=on_failure)
        self._arm(op)
        self._container_ops[(project, location, name)] = op
        if key in self._clusters:
            self._clusters[key]["status"] = "RECONCILING"
        if op.polls_left <= 0:
            self._finish(op)
        return clone(op.body)

    def _busy(self, key: tuple[str, ...]) -> _Operation | None:
        for op in [*self._container_ops.values(), *self._region_ops.values(), *self._global_ops.values()]:
            if not op.done and op.busy_key == key:
                return op
        return None

    def _arm(self, op: _Operation) -> None:
        fault = take_fault(self._op_faults, *self._current)
        if fault is not None:
            op.failure = (fault.status, str(fault.body))

    def _poll(self, op: _Operation) -> None:
        if op.done:
            return
        op.polls_left -= 1
        if op.polls_left <= 0:
            self._finish(op)

    def _finish(self, op: _Operation) -> None:
        if op.done:
            return
        failure = op.failure
        if failure is None:
            try:
                op.effect()
            except GcpError as exc:
                failure = (exc.code, exc.message)
        if failure is not None and op.on_failure is not None:
            op.on_failure(failure[1])
        op.done = True
        if op.api == "container":
            op.body.update(status="DONE", endTime=container_time())
            if failure is not None:
                status = GRPC_STATUS.get(failure[0], "UNKNOWN")
                op.body["error"] = {"code": GRPC_CODE.get(status, 2), "message": failure[1]}
                op.body["statusMessage"] = failure[1]
            if op.busy_key in self._clusters:
                self._clusters[op.busy_key]["status"] = "RUNNING"
        else:
            op.body.update(status="DONE", progress=100, endTime=compute_time())
            if failure is not None:
                reason = COMPUTE_REASON.get(failure[0], "invalid")
                code = re.sub(r"(?<!^)(?=[A-Z])", "_", reason).upper()
                op.body["error"] = {"errors": [{"code": code, "message": failure[1]}]}
                op.body["httpErrorStatusCode"] = failure[0]
                op.body["httpErrorMessage"] = http.HTTPStatus(failure[0]).phrase.upper()

    # ---- container handlers (lock held) ---------------------------------------------------------

    def _clusters_list(self, params: dict[str, str], query: dict[str, str], body: Any) -> JSON:
        project, location = params["projectsId"], params["locationsId"]
        keys = sorted(k for k in self._clusters if k[0] == project and location in ("-", k[1]))
        return {"clusters": [self._render_cluster(k) for k in keys]} if keys else {}

    def _cluster_get(self, params: dict[str, str], query: dict[str, str], body: Any) -> JSON:
        key, _ = self._cluster_or_404(params["projectsId"], params["locationsId"], params["clustersId"])
        return self._render_cluster(key)

    def _cluster_update(self, params: dict[str, str], query: dict[str, str], body: Any) -> JSON:
        key, data = self._cluster_or_404(params["projectsId"], params["locationsId"], params["clustersId"])
        update: JSON = (body or {}).get("update") or {}
        supported = {"additionalPodRangesConfig", "removedAdditionalPodRangesConfig"}
        unsupported = sorted(set(update) - supported)
        if unsupported:
            raise FakeGap(f"UpdateCluster with update.{', update.'.join(unsupported)} is not implemented by the fake")
        if not update:
            raise GcpError(400, "Update must specify at least one field to update.")
        self._refuse_if_busy(key)
        add = list(_field(update, "additionalPodRangesConfig.podRangeNames") or [])
        remove = list(_field(update, "removedAdditionalPodRangesConfig.podRangeNames") or [])
        policy = data.setdefault("ipAllocationPolicy", {})
        current = list(_field(policy, "additionalPodRangesConfig.podRangeNames") or [])
        ranges = self._subnet_ranges(self._cluster_subnet(key))
        taken = {policy.get("clusterSecondaryRangeName"), policy.get("servicesSecondaryRangeName"), *current}
        for name in add:
            if ranges is not None and name not in ranges:
                raise GcpError(400, f"Pod range '{name}' not found in the cluster's subnetwork {data['subnetwork']!r}.")
            if name in taken:
                raise GcpError(400, f"Pod range '{name}' is already used by the cluster.")
        for name in remove:
            if name not in current:
                raise GcpError(400, f"Pod range '{name}' is not an additional pod range of the cluster.")

        def effect() -> None:
            names = [n for n in current if n not in remove] + add
            info = {i["rangeName"]: i for i in _field(policy, "additionalPodRangesConfig.podRangeInfo") or []}
            if names:
                policy["additionalPodRangesConfig"] = {
                    "podRangeNames": names,
                    "podRangeInfo": [info.get(n, {"rangeName": n, "utilization": 0}) for n in names],
                }
            else:
                policy.pop("additionalPodRangesConfig", None)

        return self._new_container_op(key, "UPDATE_CLUSTER", data["selfLink"], effect)

    def _refuse_if_busy(self, key: tuple[str, ...]) -> None:
        running = self._busy(key)
        if running is not None:
            name = running.body["name"]
            raise GcpError(400, f"Cluster is running incompatible operation {name}.", status="FAILED_PRECONDITION")

    def _pools_list(self, params: dict[str, str], query: dict[str, str], body: Any) -> JSON:
        key, _ = self._cluster_or_404(params["projectsId"], params["locationsId"], params["clustersId"])
        pools = list(self._pools[key].values())
        return {"nodePools": pools} if pools else {}

    def _pool_get(self, params: dict[str, str], query: dict[str, str], body: Any) -> JSON:
        key, _ = self._cluster_or_404(params["projectsId"], params["locationsId"], params["clustersId"])
        pool = self._pools[key].get(params["nodePoolsId"])
        if pool is None:
            raise GcpError(
                404,
                f"Not found: projects/{key[0]}/locations/{key[1]}/clusters/{key[2]}/nodePools/{params['nodePoolsId']}.",
            )
        return pool

    def _pool_create(self, params: dict[str, str], query: dict[str, str], body: Any) -> JSON:
        key, _ = self._cluster_or_404(params["projectsId"], params["locationsId"], params["clustersId"])
        pool: JSON = clone((body or {}).get("nodePool") or {})
        name = pool.get("name")
        if not name:
            raise GcpError(400, "Node pool name must be specified.")
        if name in self._pools[key]:
            raise GcpError(
                409, f"Already exists: projects/{key[0]}/locations/{key[1]}/clusters/{key[2]}/nodePools/{name}."
            )
        self._refuse_if_busy(key)
        pod_range = _field(pool, "networkConfig.podRange")
        ranges = self._subnet_ranges(self._cluster_subnet(key))
        if pod_range and ranges is not None and pod_range not in ranges:
            raise GcpError(400, f"Pod range '{pod_range}' not found in the cluster's subnetwork.")
        for output_only in ("status", "statusMessage", "selfLink", "instanceGroupUrls", "podIpv4CidrSize"):
            pool.pop(output_only, None)
        pool = self._fill_pool(key, pool)
        pool["status"] = "PROVISIONING"
        self._pools[key][name] = pool

        def effect() -> None:
            pool["status"] = "RUNNING"

        def failed(message: str) -> None:
            pool["status"] = "ERROR"
            pool["statusMessage"] = message

        return self._new_container_op(key, "CREATE_NODE_POOL", pool["selfLink"], effect, failed)

    def _pool_delete(self, params: dict[str, str], query: dict[str, str], body: Any) -> JSON:
        """DeleteNodePool: the pool goes STOPPING, and is gone when its operation finishes."""
        pool = self._pool_get(params, query, body)
        key, _ = self._cluster_or_404(params["projectsId"], params["locationsId"], params["clustersId"])
        self._refuse_if_busy(key)
        pool["status"] = "STOPPING"
        name = pool["name"]

        def effect() -> None:
            self._pools[key].pop(name, None)

        return self._new_container_op(key, "DELETE_NODE_POOL", pool["selfLink"], effect)

    def _container_op_get(self, params: dict[str, str], query: dict[str, str], body: Any) -> JSON:
        key = (params["projectsId"], params["locationsId"], params["operationsId"])
        op = self._container_ops.get(key)
        if op is None:
            raise GcpError(404, f"Not found: projects/{key[0]}/locations/{key[1]}/operations/{key[2]}.")
        self._poll(op)
        return op.body

    def _container_ops_list(self, params: dict[str, str], query: dict[str, str], body: Any) -> JSON:
        project, location = params["projectsId"], params["locationsId"]
        ops = [op.body for k, op in self._container_ops.items() if k[0] == project and location in ("-", k[1])]
        return {"operations": ops} if ops else {}

    # ---- compute: helpers (lock held) -----------------------------------------------------------

    def _list_body(self, kind: str, list_id: str, items: list[JSON], token: str | None) -> JSON:
        out: JSON = {"kind": kind, "id": list_id, "selfLink": f"{COMPUTE_LINK}{list_id}"}
        if items:
            out["items"] = items
        if token:
            out["nextPageToken"] = token
        return out

    @staticmethod
    def _filtered(objs: Iterable[JSON], query: dict[str, str]) -> list[JSON]:
        order = query.get("orderBy")
        if order and order.strip() != "name":
            raise FakeGap(f"orderBy={order!r} is not implemented by the fake (lists are ordered by name)")
        keep = compile_filter(query.get("filter", ""))
        return [o for o in objs if keep(o)]

    def _subnet_or_404(self, project: str, region: str, name: str) -> JSON:
        data = self._subnets.get((project, region, name))
        if data is None:
            raise GcpError(404, f"The resource 'projects/{project}/regions/{region}/subnetworks/{name}' was not found")
        return data

    def _render_network(self, key: tuple[str, str]) -> JSON:
        data = dict(self._networks[key])
        url = data["selfLink"]
        links = [s["selfLink"] for k, s in sorted(self._subnets.items()) if s.get("network") == url]
        if links:
            data["subnetworks"] = links
        return data

    def _new_compute_op(
        self,
        scope: tuple[str, str | None],
        op_type: str,
        target: JSON,
        effect: Callable[[], None],
        busy_key: tuple[str, ...],
    ) -> JSON:
        project, region = scope
        name = (
            f"operation-{int(time.time() * 1000)}-{secrets.token_hex(6)}-{secrets.token_hex(4)}-{secrets.token_hex(4)}"
        )
        base = f"{COMPUTE_LINK}projects/{project}/" + (f"regions/{region}/" if region else "global/")
        body: JSON = {
            "kind": "compute#operation",
            "id": new_id(),
            "name": name,
            "operationType": op_type,
            "targetLink": target["selfLink"],
            "targetId": target.get("id", new_id()),
            "status": "RUNNING",
            "user": "fake-user@example.com",
            "progress": 0,
            "insertTime": compute_time(),
            "startTime": compute_time(),
            "selfLink": f"{base}operations/{name}",
        }
        if region:
            body["region"] = f"{COMPUTE_LINK}projects/{project}/regions/{region}"
        op = _Operation("compute", body, self.op_polls, effect, busy_key=busy_key)
        self._arm(op)
        if region:
            self._region_ops[(project, region, name)] = op
        else:
            self._global_ops[(project, name)] = op
        if op.polls_left <= 0:
            self._finish(op)
        return clone(op.body)

    def _occupied(self, network: str, *, skip_subnet: tuple[str, str, str] | None) -> list[tuple[str, str]]:
        """(CIDR, description) of everything routed in a network: subnet ranges, peering, PSA ranges."""
        out: list[tuple[str, str]] = []
        for key, subnet in self._subnets.items():
            if subnet.get("network") != network or key == skip_subnet:
                continue
            where = f"subnetwork '{key[2]}' in region '{key[1]}'"
            if subnet.get("ipCidrRange"):
                out.append((subnet["ipCidrRange"], where))
            out += [
                (r["ipCidrRange"], f"range '{r['rangeName']}' of {where}") for r in subnet.get("secondaryIpRanges", [])
            ]
        for project, net, peering, direction, route in self._routes:
            if network_url(project, net) == network and direction == "INCOMING" and route.get("destRange"):
                out.append((route["destRange"], f"a route imported from peering '{peering}'"))
        for (_, name), addr in self._addresses.items():
            if addr.get("purpose") == "VPC_PEERING" and addr.get("network") == network and "address" in addr:
                out.append((f"{addr['address']}/{addr.get('prefixLength', 32)}", f"allocated range '{name}'"))
        return out

    def _subnet_routes(self, project: str) -> list[JSON]:
        """The local routes GCE lists for every subnet range of the project's networks (routes.list)."""
        out: list[JSON] = []
        for (p, _region, _name), subnet in self._subnets.items():
            if p != project:
                continue
            ranges = [("", subnet.get("ipCidrRange"))]
            ranges += [("r-", r.get("ipCidrRange")) for r in subnet.get("secondaryIpRanges", [])]
            for prefix, cidr in ranges:
                if not cidr:
                    continue
                digest = hashlib.sha256(f"{subnet['selfLink']} {cidr}".encode()).hexdigest()[:16]
                route_name = f"default-route-{prefix}{digest}"
                out.append(
                    {
                        "kind": "compute#route",
                        "id": str(int(digest, 16) % 10**19),
                        "creationTimestamp": subnet.get("creationTimestamp", compute_time()),
                        "name": route_name,
                        "description": f"Default local route to the subnetwork {cidr}.",
                        "network": subnet["network"],
                        "destRange": cidr,
                        "priority": 0,
                        "nextHopNetwork": subnet["network"],
                        "selfLink": f"{COMPUTE_LINK}projects/{project}/global/routes/{route_name}",
                    }
                )
        return out

    def _route_conflict(self, network: str, cidr: str) -> str | None:
        """GCE refuses a subnet range that contains or equals a route's destination in the network (a
        range inside a broader route is allowed): Subnetwork.allowSubnetCidrRoutesOverlap, discovery doc."""
        try:
            new = ipaddress.ip_network(cidr, strict=False)
        except ValueError:
            return None
        for (_, name), route in self._net_routes.items():
            if route.get("network") != network or not route.get("destRange"):
                continue
            dest = ipaddress.ip_network(route["destRange"], strict=False)
            if dest.version == new.version and dest.prefixlen > 0 and dest.subnet_of(new):  # type: ignore[arg-type]
                return f"route '{name}' ({route['destRange']})"
        return None

    def _check_secondary_ranges(self, key: tuple[str, str, str], subnet: JSON, new: list[JSON]) -> None:
        where = "resource.secondaryIpRanges"
        if len(new) > self.secondary_range_limit:
            raise GcpError(
                400,
                f"Invalid value for field '{where}': subnetwork can have at most "
                f"{self.secondary_range_limit} secondary ranges, {len(new)} given.",
            )
        old = {(r.get("rangeName"), r.get("ipCidrRange")) for r in subnet.get("secondaryIpRanges", [])}
        names: set[str] = set()
        nets: list[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, str]] = []
        for i, rng in enumerate(new):
            name, cidr = rng.get("rangeName", ""), rng.get("ipCidrRange", "")
            if not _RANGE_NAME_RE.match(name):
                raise GcpError(
                    400,
                    f"Invalid value for field '{where}[{i}].rangeName': '{name}'. "
                    "Must be a match of regex '[a-z]([-a-z0-9]*[a-z0-9])?'",
                )
            if name in names:
                raise GcpError(
                    400, f"Invalid value for field '{where}[{i}].rangeName': '{name}'. Duplicate range name."
                )
            names.add(name)
            try:
                net = ipaddress.ip_network(cidr, strict=True)
            except ValueError as exc:
                raise GcpError(
                    400, f"Invalid value for field '{where}[{i}].ipCidrRange': '{cidr}'. Invalid IPCidrRange."
                ) from exc
            if any(net.overlaps(bad) for bad in FORBIDDEN_RANGES):
                raise GcpError(
                    400, f"Invalid value for field '{where}[{i}].ipCidrRange': '{cidr}'. The range is reserved."
                )
            for other, other_name in nets:
                if net.overlaps(other):
                    raise GcpError(
                        400, f"Invalid IPCidrRange: {cidr} conflicts with range '{other_name}' of the same subnetwork."
                    )
            nets.append((net, name))
            if (name, cidr) in old:
                continue
            if subnet.get("ipCidrRange") and _overlaps(cidr, subnet["ipCidrRange"]):
                raise GcpError(
                    400, f"Invalid IPCidrRange: {cidr} conflicts with the primary range of subnetwork '{key[2]}'."
                )
            for taken, what in self._occupied(subnet["network"], skip_subnet=key):
                if _overlaps(cidr, taken):
                    raise GcpError(400, f"Invalid IPCidrRange: {cidr} conflicts with {what} ({taken}).")
            conflict = self._route_conflict(subnet["network"], cidr)
            if conflict is not None:
                raise GcpError(400, f"Invalid IPCidrRange: {cidr} conflicts with existing {conflict}.")
        dropped = {name for name, _ in old} - {r.get("rangeName") for r in new}
        for name, user in self._ranges_in_use(key).items():
            if name in dropped:
                raise GcpError(
                    400,
                    f"The secondary range '{name}' of subnetwork '{key[2]}' is in use by {user}; it cannot be removed.",
                    reason="resourceInUseByAnotherResource",
                )

    # ---- compute handlers (lock held) -----------------------------------------------------------

    def _subnet_get(self, params: dict[str, str], query: dict[str, str], body: Any) -> JSON:
        return self._subnet_or_404(params["project"], params["region"], params["subnetwork"])

    def _subnets_list(self, params: dict[str, str], query: dict[str, str], body: Any) -> JSON:
        project, region = params["project"], params["region"]
        objs = [s for k, s in sorted(self._subnets.items()) if k[:2] == (project, region)]
        items, token = _page([(o["name"], o) for o in self._filtered(objs, query)], query)
        return self._list_body(
            "compute#subnetworkList", f"projects/{project}/regions/{region}/subnetworks", items, token
        )

    def _subnets_aggregated(self, params: dict[str, str], query: dict[str, str], body: Any) -> JSON:
        project = params["project"]
        objs = [s for k, s in sorted(self._subnets.items()) if k[0] == project]
        keyed = [((o["region"].rsplit("/", 1)[-1], o["name"]), o) for o in self._filtered(objs, query)]
        items, token = _page(keyed, query)
        regions = sorted(self.regions | {k[1] for k in self._subnets if k[0] == project})
        scopes: JSON = {}
        for region in regions:
            scope = f"regions/{region}"
            found = [o for o in items if o["region"].endswith(f"/regions/{region}")]
            if found:
                scopes[scope] = {"subnetworks": found}
            else:
                scopes[scope] = {
                    "warning": {
                        "code": "NO_RESULTS_ON_PAGE",
                        "message": f"There are no results for scope '{scope}' on this page.",
                        "data": [{"key": "scope", "value": scope}],
                    }
                }
        out = self._list_body(
            "compute#subnetworkAggregatedList", f"projects/{project}/aggregated/subnetworks", [], token
        )
        out["items"] = scopes
        return out

    def _subnet_patch(self, params: dict[str, str], query: dict[str, str], body: Any) -> JSON:
        project, region, name = params["project"], params["region"], params["subnetwork"]
        key = (project, region, name)
        subnet = self._subnet_or_404(project, region, name)
        change: JSON = body or {}
        given = change.get("fingerprint")
        if not given:
            raise GcpError(400, "Required field 'resource.fingerprint' not specified", reason="required")
        running = self._busy(key)
        if running is not None:
            raise GcpError(
                400,
                f"The resource 'projects/{project}/regions/{region}/subnetworks/{name}' is not ready",
                reason="resourceNotReady",
            )
        if given != subnet.get("fingerprint"):
            raise GcpError(
                412,
                "Supplied fingerprint does not match the current fingerprint of the subnetwork; "
                "get the subnetwork again and retry.",
            )
        mutable = {
            "fingerprint",
            "secondaryIpRanges",
            "description",
            "logConfig",
            "privateIpGoogleAccess",
            "enableFlowLogs",
        }
        for fname, value in change.items():
            if fname not in mutable and value != subnet.get(fname):
                raise GcpError(
                    400, f"Invalid value for field 'resource.{fname}': {json.dumps(value)}. Field cannot be updated."
                )
        if "secondaryIpRanges" in change:
            self._check_secondary_ranges(key, subnet, change["secondaryIpRanges"] or [])
        updates = {k: clone(v) for k, v in change.items() if k in mutable and k != "fingerprint"}

        def effect() -> None:
            subnet.update(updates)
            subnet["fingerprint"] = new_fingerprint()

        return self._new_compute_op((project, region), "patch", subnet, effect, key)

    def _subnet_expand(self, params: dict[str, str], query: dict[str, str], body: Any) -> JSON:
        """subnetworks.expandIpCidrRange as GCE decides it: the body's `ipCidrRange` (the only field of
        SubnetworksExpandIpCidrRangeRequest: no fingerprint) must be a valid network range that contains the
        current primary range and is larger ("can only be larger than (i.e. a superset of) the range previously
        defined", discovery document), disjoint from every other range of the network (other subnets' primary and
        secondary ranges in every region, the subnet's own secondary ranges, peering routes, PSA allocations) and
        containing no route (allowSubnetCidrRoutesOverlap); proxy-only subnets cannot be expanded (gcloud
        expand-ip-range help). The change lands when the operation is DONE, with a new fingerprint."""
        project, region, name = params["project"], params["region"], params["subnetwork"]
        key = (project, region, name)
        subnet = self._subnet_or_404(project, region, name)
        cidr = str((body or {}).get("ipCidrRange") or "")
        where = "resource.ipCidrRange"
        if not cidr:
            raise GcpError(400, f"Required field '{where}' not specified", reason="required")
        if self._busy(key) is not None:
            raise GcpError(
                400,
                f"The resource 'projects/{project}/regions/{region}/subnetworks/{name}' is not ready",
                reason="resourceNotReady",
            )
        if subnet.get("purpose") in ("REGIONAL_MANAGED_PROXY", "GLOBAL_MANAGED_PROXY", "INTERNAL_HTTPS_LOAD_BALANCER"):
            raise GcpError(400, f"Invalid value for field '{where}': proxy-only subnetworks cannot be expanded.")
        try:
            new = ipaddress.ip_network(cidr, strict=True)
        except ValueError as exc:
            raise GcpError(400, f"Invalid value for field '{where}': '{cidr}'. Invalid IPCidrRange.") from exc
        old = ipaddress.ip_network(subnet["ipCidrRange"], strict=False)
        if new.version != old.version or not old.subnet_of(new) or new.prefixlen >= old.prefixlen:  # type: ignore[arg-type]
            raise GcpError(
                400,
                f"Invalid value for field '{where}': '{cidr}'. The new range must be larger than and contain the "
                f"current range {subnet['ipCidrRange']}.",
            )
        if any(new.overlaps(bad) for bad in FORBIDDEN_RANGES):
            raise GcpError(400, f"Invalid value for field '{where}': '{cidr}'. The range is reserved.")
        for r in subnet.get("secondaryIpRanges", []):
            if _overlaps(cidr, r["ipCidrRange"]):
                raise GcpError(
                    400, f"Invalid IPCidrRange: {cidr} conflicts with range '{r['rangeName']}' of the same subnetwork."
                )
        for taken, what in self._occupied(subnet["network"], skip_subnet=key):
            if _overlaps(cidr, taken):
                raise GcpError(400, f"Invalid IPCidrRange: {cidr} conflicts with {what} ({taken}).")
        conflict = self._route_conflict(subnet["network"], cidr)
        if conflict is not None:
            raise GcpError(400, f"Invalid IPCidrRange: {cidr} conflicts with existing {conflict}.")

        def effect() -> None:
            subnet["ipCidrRange"] = str(new)
            subnet["fingerprint"] = new_fingerprint()

        return self._new_compute_op((project, region), "expandIpCidrRange", subnet, effect, key)

    def _network_get(self, params: dict[str, str], query: dict[str, str], body: Any) -> JSON:
        key = (params["project"], params["network"])
        if key not in self._networks:
            raise GcpError(404, f"The resource 'projects/{key[0]}/global/networks/{key[1]}' was not found")
        return self._render_network(key)

    def _networks_list(self, params: dict[str, str], query: dict[str, str], body: Any) -> JSON:
        project = params["project"]
        objs = [self._render_network(k) for k in sorted(self._networks) if k[0] == project]
        items, token = _page([(o["name"], o) for o in self._filtered(objs, query)], query)
        return self._list_body("compute#networkList", f"projects/{project}/global/networks", items, token)

    def _peering_routes(self, params: dict[str, str], query: dict[str, str], body: Any) -> JSON:
        project, network = params["project"], params["network"]
        if (project, network) not in self._networks:
            raise GcpError(404, f"The resource 'projects/{project}/global/networks/{network}' was not found")
        for required in ("peeringName", "direction"):
            if not query.get(required):
                raise GcpError(400, f"Required field '{required}' not specified", reason="required")
        peering, direction, region = query["peeringName"], query["direction"], query.get("region")
        routes = [
            r
            for p, n, peer, d, r in self._routes
            if (p, n, peer, d) == (project, network, peering, direction)
            and (region is None or r.get("type") != "DYNAMIC_PEERING_ROUTE" or r.get("nextHopRegion") == region)
        ]
        items, token = _page([(i, r) for i, r in enumerate(self._filtered(routes, {**query, "orderBy": ""}))], query)
        return self._list_body(
            "compute#exchangedPeeringRoutesList",
            f"projects/{project}/global/networks/{network}/listPeeringRoutes",
            items,
            token,
        )

    def _routes_list(self, params: dict[str, str], query: dict[str, str], body: Any) -> JSON:
        project = params["project"]
        # Listing tens of thousands of routes page by page would rebuild, sort and filter them on every page:
        # keep the filtered, ordered list while neither the routes nor the subnets' ranges changed.
        ranges = tuple(
            (s["selfLink"], s.get("ipCidrRange"), tuple(r.get("ipCidrRange") for r in s.get("secondaryIpRanges", [])))
            for k, s in self._subnets.items()
            if k[0] == project
        )
        key = (project, query.get("filter", ""), query.get("orderBy", ""), self._routes_version, ranges)
        keyed = self._routes_cache.get(key)
        if keyed is None:
            objs = [r for k, r in self._net_routes.items() if k[0] == project] + self._subnet_routes(project)
            objs.sort(key=lambda r: str(r["name"]))
            keyed = [(o["name"], o) for o in self._filtered(objs, query)]
            self._routes_cache = {key: keyed}
        items, token = _page(keyed, query)
        return self._list_body("compute#routeList", f"projects/{project}/global/routes", items, token)

    def _route_get(self, params: dict[str, str], query: dict[str, str], body: Any) -> JSON:
        project, name = params["project"], params["route"]
        found = self._net_routes.get((project, name)) or next(
            (r for r in self._subnet_routes(project) if r["name"] == name), None
        )
        if found is None:
            raise GcpError(404, f"The resource 'projects/{project}/global/routes/{name}' was not found")
        return found

    def _address_get(self, params: dict[str, str], query: dict[str, str], body: Any) -> JSON:
        addr = self._addresses.get((params["project"], params["address"]))
        if addr is None or addr.get("status") == "RESERVING":
            raise GcpError(
                404, f"The resource 'projects/{params['project']}/global/addresses/{params['address']}' was not found"
            )
        return addr

    def _addresses_list(self, params: dict[str, str], query: dict[str, str], body: Any) -> JSON:
        project = params["project"]
        objs = [a for k, a in sorted(self._addresses.items()) if k[0] == project and a.get("status") != "RESERVING"]
        items, token = _page([(o["name"], o) for o in self._filtered(objs, query)], query)
        return self._list_body("compute#addressList", f"projects/{project}/global/addresses", items, token)

    def _address_insert(self, params: dict[str, str], query: dict[str, str], body: Any) -> JSON:
        project = params["project"]
        data: JSON = clone(body or {})
        name = data.get("name", "")
        if not _RANGE_NAME_RE.match(name):
            raise GcpError(400, f"Invalid value for field 'resource.name': '{name}'.")
        if (project, name) in self._addresses:
            raise GcpError(409, f"The resource 'projects/{project}/global/addresses/{name}' already exists")
        if data.get("purpose") == "VPC_PEERING":
            if not data.get("network") or not data.get("prefixLength"):
                raise GcpError(
                    400, "Required field 'resource.network' / 'resource.prefixLength' not specified", reason="required"
                )
            net = network_url(project, data["network"])
            cidr = f"{data.get('address', '0.0.0.0')}/{data['prefixLength']}"
            if "address" in data:
                for taken, what in self._occupied(net, skip_subnet=None):
                    if _overlaps(cidr, taken):
                        raise GcpError(400, f"Invalid IPCidrRange: {cidr} conflicts with {what} ({taken}).")
        stored = self.add_global_address(project, {**data, "status": "RESERVING"})
        target = self._addresses[(project, name)]

        def effect() -> None:
            target["status"] = "RESERVED"

        return self._new_compute_op((project, None), "insert", stored, effect, (project, "address", name))

    def _region_op(self, params: dict[str, str]) -> _Operation:
        key = (params["project"], params["region"], params["operation"])
        op = self._region_ops.get(key)
        if op is None:
            raise GcpError(404, f"The resource 'projects/{key[0]}/regions/{key[1]}/operations/{key[2]}' was not found")
        return op

    def _region_op_get(self, params: dict[str, str], query: dict[str, str], body: Any) -> JSON:
        op = self._region_op(params)
        self._poll(op)
        return op.body

    def _region_op_wait(self, params: dict[str, str], query: dict[str, str], body: Any) -> JSON:
        op = self._region_op(params)
        self._finish(op)
        return op.body

    def _global_op(self, params: dict[str, str]) -> _Operation:
        key = (params["project"], params["operation"])
        op = self._global_ops.get(key)
        if op is None:
            raise GcpError(404, f"The resource 'projects/{key[0]}/global/operations/{key[1]}' was not found")
        return op

    def _global_op_get(self, params: dict[str, str], query: dict[str, str], body: Any) -> JSON:
        op = self._global_op(params)
        self._poll(op)
        return op.body

    def _global_op_wait(self, params: dict[str, str], query: dict[str, str], body: Any) -> JSON:
        op = self._global_op(params)
        self._finish(op)
        return op.body


# --------------------------------------------------------------------------------------------------
# Seeds and client construction
# --------------------------------------------------------------------------------------------------

DEMO_PROJECT = "demo-project"
DEMO_REGION = "australia-southeast1"


def seed_demo_ip(fake: FakeGcp, project: str = DEMO_PROJECT) -> JSON:
    """The GKE half of the incident talk: cluster demo-ip whose pod range 10.0.0.0/26 holds 2 nodes.

    Network demo-ip; subnet ``cluster`` 10.1.0.0/16 in australia-southeast1 with secondary ranges
    pod-range 10.0.0.0/26 and svc-range 172.16.0.0/20; node pools original-nodepool (2 nodes) and
    nodepool-2, max 16 pods per node (a /27 per node), both on pod-range.  Returns the cluster.
    """
    fake.add_network(project, {"name": "demo-ip"})
    fake.add_subnet(
        project,
        DEMO_REGION,
        {
            "name": "cluster",
            "network": "demo-ip",
            "ipCidrRange": "10.1.0.0/16",
            "secondaryIpRanges": [
                {"rangeName": "pod-range", "ipCidrRange": "10.0.0.0/26"},
                {"rangeName": "svc-range", "ipCidrRange": "172.16.0.0/20"},
            ],
        },
    )
    pool_common: JSON = {
        "config": {"machineType": "e2-medium", "diskSizeGb": 100},
        "maxPodsConstraint": {"maxPodsPerNode": "16"},
        "locations": [f"{DEMO_REGION}-b"],
        "version": "1.27.3-gke.100",
    }
    return fake.add_cluster(
        project,
        DEMO_REGION,
        {
            "name": "demo-ip",
            "network": "demo-ip",
            "subnetwork": "cluster",
            "locations": [f"{DEMO_REGION}-b"],
            "defaultMaxPodsConstraint": {"maxPodsPerNode": "16"},
            "ipAllocationPolicy": {
                "useIpAliases": True,
                "clusterSecondaryRangeName": "pod-range",
                "servicesSecondaryRangeName": "svc-range",
                "clusterIpv4CidrBlock": "10.0.0.0/26",
                "servicesIpv4CidrBlock": "172.16.0.0/20",
                "defaultPodIpv4RangeUtilization": 1.0,
            },
            "nodePools": [
                {
                    **pool_common,
                    "name": "original-nodepool",
                    "initialNodeCount": 2,
                    "autoscaling": {"enabled": True, "minNodeCount": 1, "maxNodeCount": 7},
                },
                {**pool_common, "name": "nodepool-2", "initialNodeCount": 0},
            ],
        },
    )


def compute_client(cls: type[T], fake: FakeGcp, credentials: Any = None) -> T:
    """A google-cloud-compute client against the fake, with its ExtendedOperation poller pointed there too.

    ``cls`` is e.g. ``compute_v1.SubnetworksClient``.  Both pollers are pre-seeded on the transport (see
    the module docstring); a client uses the one its methods need.
    """
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import compute_v1

    creds = credentials if credentials is not None else AnonymousCredentials()  # type: ignore[no-untyped-call]
    opts = fake.client_options()
    client = cls(credentials=creds, client_options=opts)  # type: ignore[call-arg]
    services = client._transport._extended_operations_services  # type: ignore[attr-defined]
    services["region_operations"] = compute_v1.RegionOperationsClient(credentials=creds, client_options=opts)
    services["global_operations"] = compute_v1.GlobalOperationsClient(credentials=creds, client_options=opts)
    return client


# --------------------------------------------------------------------------------------------------
# HTTP plumbing
# --------------------------------------------------------------------------------------------------


def _encode(payload: Any) -> bytes:
    return json.dumps(payload, separators=(",", ":")).encode()
