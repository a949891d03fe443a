"""The one door to Azure for the AKS target: a thin adapter over azure-mgmt-containerservice and
azure-mgmt-network, the client factory, and the single Azure-error translator.

Why it exists: collect and the step executors must run against the loopback ARM fake
(tests/support/fakes/arm_server.py) with the real clients, must not pay for the azure imports at import time
(`cidrx --help` loads none of them), and every Azure failure must reach the user as one line with the right
exit code. So:
- azure.* is imported only inside functions;
- every method returns plain ARM JSON dicts (camelCase, `properties` nested, as the REST API writes them), so
  no caller touches SDK types;
- writes are guarded: a create sends `If-None-Match: *` (it never replaces what someone else made), an update
  or delete sends `If-Match` with the ETag the caller read (412 when it changed: the plan is stale);
- long-running operations return azure-core pollers (ARM's Azure-AsyncOperation protocol), waited on by
  `wait_poller`.

Credentials: azure-identity's DefaultAzureCredential (environment, workload identity, managed identity, Azure
CLI, ...). `CIDRX_ARM_ENDPOINT` replaces the Resource Manager URL (http allowed, for tests and private
endpoints); `CIDRX_ARM_ANONYMOUS=1` sends a fixed test token instead of asking azure-identity, and is refused
without an endpoint override.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from cidrx.errors import AccessDenied, CidrxError, CloudError, InvalidInput, RetriesExhausted, StalePlan, Unreachable
from cidrx.transport.retry import RETRY_LATER_HINT, Retryable, call_with_retry, with_gave_up_note

Json = dict[str, Any]
T = TypeVar("T")

ENDPOINT_ENV = "CIDRX_ARM_ENDPOINT"
ANONYMOUS_ENV = "CIDRX_ARM_ANONYMOUS"
DEFAULT_ENDPOINT = "https://management.azure.com"

# What fleet mode (`diagnose --aks --subscription S --all-clusters`) adds: listing the subscription's clusters
# (the same action reads one cluster and lists them).
FLEET_PERMISSIONS = ("Microsoft.ContainerService/managedClusters/read",)
# What collect reads (Azure RBAC actions): the cluster and its pools, the VNet with its subnets and peerings,
# and the route tables on the subnets.
COLLECT_PERMISSIONS = (
    "Microsoft.ContainerService/managedClusters/read",
    "Microsoft.ContainerService/managedClusters/agentPools/read",
    "Microsoft.Network/virtualNetworks/read",
    "Microsoft.Network/virtualNetworks/subnets/read",
    "Microsoft.Network/virtualNetworks/virtualNetworkPeerings/read",
    "Microsoft.Network/routeTables/read",
)

_ID = re.compile(
    r"^/subscriptions/(?P<sub>[^/]+)/resourceGroups/(?P<rg>[^/]+)/providers/(?P<provider>[^/]+)/(?P<type>[^/]+)/"
    r"(?P<name>[^/]+)(/(?P<child_type>[^/]+)/(?P<child>[^/]+))?$",
    re.IGNORECASE,
)


def parse_id(resource_id: str) -> dict[str, str]:
    """The parts of an ARM resource id (subscription, resource group, type, name and one child level)."""
    m = _ID.match(resource_id.strip())
    if m is None:
        raise InvalidInput(f"{resource_id!r} is not an Azure resource id")
    return {k: v or "" for k, v in m.groupdict().items()}


def subnet_id(subscription: str, resource_group: str, vnet: str, subnet: str) -> str:
    return (
        f"/subscriptions/{subscription}/resourceGroups/{resource_group}/providers/Microsoft.Network/"
        f"virtualNetworks/{vnet}/subnets/{subnet}"
    )


def translate(exc: Exception, what: str, *, write: bool = False) -> CidrxError:
    """The one translation of an Azure SDK failure into a cidrx error (`write`: of a call that asked for a
    change, which may have been made when its answer could not be read)."""
    from azure.core.exceptions import (
        ClientAuthenticationError,
        HttpResponseError,
        ResourceModifiedError,
        ResourceNotFoundError,
        ServiceRequestError,
    )

    if isinstance(exc, CidrxError):
        return exc
    if unreadable(exc):
        detail = f"{type(exc).__name__}: {_message(exc)}"[:200]
        if write:
            return CloudError(
                f"{what}: Azure's answer could not be read ({detail}); the change may have been made",
                hint="run the same command again: it checks what was done before doing anything",
            )
        return CloudError(f"{what}: Azure's answer could not be read ({detail})", hint=RETRY_LATER_HINT)
    if isinstance(exc, ClientAuthenticationError):
        return AccessDenied(
            f"Azure refused the credentials while {what}: {_message(exc)}",
            hint="sign in (az login) or set AZURE_CLIENT_ID / AZURE_TENANT_ID / AZURE_CLIENT_SECRET",
        )
    if isinstance(exc, ResourceModifiedError):
        return StalePlan(f"{what}: someone changed it since it was read (ETag mismatch); make a new plan")
    if isinstance(exc, ResourceNotFoundError):
        return AccessDenied(f"{what}: not found ({_message(exc)})", hint="check --subscription/--resource-group")
    if isinstance(exc, HttpResponseError):
        status = exc.status_code or 0
        if status in (401, 403):
            return AccessDenied(f"Azure denied {what}: {_message(exc)}", hint="`cidrx permissions --aks`")
        if status == 412:
            return StalePlan(f"{what}: someone changed it since it was read (ETag mismatch); make a new plan")
        if status == 429 or status >= 500:
            return RetriesExhausted(f"Azure kept failing while {what} ({status}): {_message(exc)}")
        return CloudError(f"Azure refused {what} ({status}): {_message(exc)}")
    if isinstance(exc, ServiceRequestError):
        return Unreachable(f"cannot reach Azure Resource Manager while {what}: {exc}")
    try:
        from azure.identity import CredentialUnavailableError
    except ImportError:  # pragma: no cover - azure-identity is a dependency
        return CloudError(f"{what}: {exc}")
    if isinstance(exc, CredentialUnavailableError):
        return AccessDenied(
            f"no Azure credentials found while {what}",
            hint="sign in with `az login`, or set AZURE_CLIENT_ID / AZURE_TENANT_ID / AZURE_CLIENT_SECRET",
        )
    return CloudError(f"{what}: {exc}")


def _message(exc: Any) -> str:
    error = getattr(exc, "error", None)
    code = getattr(error, "code", None)
    text = getattr(error, "message", None) or getattr(exc, "message", None) or str(exc)
    first = str(text).strip().splitlines()[0] if str(text).strip() else ""
    return f"{code}: {first}" if code else first


def unreadable(exc: BaseException) -> bool:
    """Whether `exc` is a success answer whose body could not be read: cut short or garbled between Azure and
    cidrx. azure-core's RetryPolicy retries status codes (408, 429, 5xx) and broken connections, but an answer
    that arrived whole with a body that does not parse is raised at once: azure-core's ContentDecodePolicy as
    DecodeError (an HttpResponseError carrying the 200), the generated clients' deserializer as
    DeserializationError, bytes that are not UTF-8 as UnicodeDecodeError (azure-core
    pipeline/policies/_universal.py, ContentDecodePolicy.deserialize_from_text)."""
    from azure.core.exceptions import DecodeError, DeserializationError

    return isinstance(exc, DecodeError | DeserializationError | UnicodeDecodeError)


def _classify_read(exc: BaseException) -> Retryable | None:
    """cidrx's retry of a read, on top of azure-core's own: an unreadable answer is transient."""
    return Retryable() if unreadable(exc) else None


def call(what: str, fn: Callable[[], T], *, write: bool = False) -> T:
    """Run one SDK call, translating its failures. A read whose answer could not be read is sent again
    (within the retry policy; it ends as exit 7); a write is not repeated: it may have been carried out, so
    its apply stops and the same command checks first."""
    try:
        return fn() if write else call_with_retry(fn, _classify_read)
    except Exception as exc:
        raise with_gave_up_note(translate(exc, what, write=write), exc) from exc


def _if_missing(exc: Exception) -> bool:
    from azure.core.exceptions import ResourceNotFoundError

    return isinstance(exc, ResourceNotFoundError)


class _TestToken:
    """A bearer token for a loopback Resource Manager (`CIDRX_ARM_ANONYMOUS=1`): no identity is asked."""

    def on_request(self, request: Any) -> None:
        request.http_request.headers["Authorization"] = "Bearer cidrx-test-token"


def _client_options() -> dict[str, Any]:
    endpoint = os.environ.get(ENDPOINT_ENV, "").strip().rstrip("/")
    anonymous = os.environ.get(ANONYMOUS_ENV, "").strip() not in ("", "0")
    if anonymous and not endpoint:
        raise InvalidInput(f"{ANONYMOUS_ENV} is only for a test endpoint: set {ENDPOINT_ENV} too, or unset it")
    options: dict[str, Any] = {"base_url": endpoint or DEFAULT_ENDPOINT}
    if anonymous:
        from azure.core.pipeline.policies import SansIOHTTPPolicy

        policy = type("CidrxTestToken", (_TestToken, SansIOHTTPPolicy), {})()
        options.update(credential=object(), authentication_policy=policy)
    else:
        from azure.identity import DefaultAzureCredential

        options.update(credential=DefaultAzureCredential())
    return options


class AksApi:
    """The ARM reads and writes of one subscription (clients are made on first use)."""

    def __init__(self, subscription: str) -> None:
        self.subscription = subscription
        self._network: Any = None
        self._containers: Any = None

    def _clients(self) -> tuple[Any, Any]:
        if self._network is None:
            from azure.mgmt.containerservice import ContainerServiceClient
            from azure.mgmt.network import NetworkManagementClient

            options = _client_options()
            credential = options.pop("credential")
            self._network = NetworkManagementClient(credential, self.subscription, **options)
            self._containers = ContainerServiceClient(credential, self.subscription, **options)
        return self._network, self._containers

    @property
    def network(self) -> Any:
        return self._clients()[0]

    @property
    def containers(self) -> Any:
        return self._clients()[1]

    # -- reads ------------------------------------------------------------------------------------------------

    def get_cluster(self, resource_group: str, name: str) -> Json:
        what = f"reading AKS cluster {resource_group}/{name}"
        return _json(call(what, lambda: self.containers.managed_clusters.get(resource_group, name)))

    def list_clusters(self) -> list[Json]:
        """Every managed cluster of the subscription (fleet mode)."""
        what = f"listing the AKS clusters of subscription {self.subscription}"
        return [_json(c) for c in call(what, lambda: list(self.containers.managed_clusters.list()))]

    def list_agent_pools(self, resource_group: str, cluster: str) -> list[Json]:
        what = f"listing the agent pools of {cluster}"
        return [_json(p) for p in call(what, lambda: list(self.containers.agent_pools.list(resource_group, cluster)))]

    def get_agent_pool(self, resource_group: str, cluster: str, name: str) -> Json | None:
        return self._maybe(
            f"reading agent pool {name}", lambda: self.containers.agent_pools.get(resource_group, cluster, name)
        )

    def get_vnet(self, resource_group: str, name: str) -> Json:
        what = f"reading virtual network {resource_group}/{name}"
        return _json(call(what, lambda: self.network.virtual_networks.get(resource_group, name)))

    def get_subnet(self, resource_group: str, vnet: str, name: str) -> Json | None:
        return self._maybe(
            f"reading subnet {vnet}/{name}", lambda: self.network.subnets.get(resource_group, vnet, name)
        )

    def get_route_table(self, resource_group: str, name: str) -> Json | None:
        return self._maybe(f"reading route table {name}", lambda: self.network.route_tables.get(resource_group, name))

    def get_peering_remote(self, remote_id: str) -> Json | None:
        """The remote VNet of a peering, when it is readable (another subscription may not be)."""
        parts = parse_id(remote_id)
        other = AksApi(parts["sub"]) if parts["sub"] != self.subscription else self
        try:
            return other._maybe(
                "reading a peered VNet", lambda: other.network.virtual_networks.get(parts["rg"], parts["name"])
            )
        except AccessDenied:
            return None

    def _maybe(self, what: str, fn: Callable[[], Any]) -> Json | None:
        try:
            return _json(call_with_retry(fn, _classify_read))
        except Exception as exc:
            if _if_missing(exc):
                return None
            raise with_gave_up_note(translate(exc, what), exc) from exc

    # -- writes (guarded; long-running ones return pollers) ---------------------------------------------------

    def create_subnet(self, resource_group: str, vnet: str, name: str, body: Json) -> Any:
        return call(
            f"creating subnet {vnet}/{name}",
            lambda: self.network.subnets.begin_create_or_update(
                resource_group, vnet, name, body, headers={"If-None-Match": "*"}
            ),
            write=True,
        )

    def delete_subnet(self, resource_group: str, vnet: str, name: str, etag: str) -> Any:
        return call(
            f"deleting subnet {vnet}/{name}",
            lambda: self.network.subnets.begin_delete(resource_group, vnet, name, headers={"If-Match": etag}),
            write=True,
        )

    def update_vnet(self, resource_group: str, name: str, body: Json, etag: str) -> Any:
        return call(
            f"updating the address space of virtual network {name}",
            lambda: self.network.virtual_networks.begin_create_or_update(
                resource_group, name, body, headers={"If-Match": etag}
            ),
            write=True,
        )

    def sync_peering(self, resource_group: str, vnet: str, peering: Json) -> Any:
        """Re-put a peering with syncRemoteAddressSpace=true: the remote side learns the VNet's new space."""
        name = peering["name"]
        # Read-only properties of VirtualNetworkPeeringPropertiesFormat are not sent back.
        readonly = ("provisioningState", "resourceGuid", "remoteVirtualNetworkEncryption")
        body = {"properties": {k: v for k, v in (peering.get("properties") or {}).items() if k not in readonly}}
        etag = str(peering.get("etag") or "")
        return call(
            f"syncing peering {name} of {vnet}",
            lambda: self.network.virtual_network_peerings.begin_create_or_update(
                resource_group, vnet, name, body, sync_remote_address_space="true", headers={"If-Match": etag}
            ),
            write=True,
        )

    def create_agent_pool(self, resource_group: str, cluster: str, name: str, body: Json) -> Any:
        from azure.core import MatchConditions

        return call(
            f"creating agent pool {name} in {cluster}",
            lambda: self.containers.agent_pools.begin_create_or_update(
                resource_group, cluster, name, body, match_condition=MatchConditions.IfMissing
            ),
            write=True,
        )

    def update_agent_pool(self, resource_group: str, cluster: str, name: str, body: Json, etag: str) -> Any:
        """Replace an existing agent pool's writable properties (PUT), guarded by the ETag the caller read."""
        from azure.core import MatchConditions

        return call(
            f"updating agent pool {name} of {cluster}",
            lambda: self.containers.agent_pools.begin_create_or_update(
                resource_group, cluster, name, body, etag=etag, match_condition=MatchConditions.IfNotModified
            ),
        )

    def delete_agent_pool(self, resource_group: str, cluster: str, name: str, etag: str) -> Any:
        from azure.core import MatchConditions

        return call(
            f"deleting agent pool {name} of {cluster}",
            lambda: self.containers.agent_pools.begin_delete(
                resource_group, cluster, name, etag=etag, match_condition=MatchConditions.IfNotModified
            ),
            write=True,
        )


def wait_poller(poller: Any, what: str, timeout: float) -> None:
    """Wait for a long-running operation; its failure as a CloudError naming `what`. The operation was
    accepted: a poll whose answer could not be read ends the step as a write's would (the poller keeps its
    failure, so it is not polled again here; the same command, run again, finds what the operation did)."""
    call(what, lambda: poller.result(timeout=timeout), write=True)
    if not poller.done():
        raise CloudError(f"{what} did not finish within {int(timeout)} s; run the same command again to resume")


def _json(value: Any) -> Json:
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    out: Json = value.as_dict()
    return out


def ids(values: Iterable[Json]) -> list[str]:
    return [str(v.get("id") or "") for v in values]
