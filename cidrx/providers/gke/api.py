"""The one door to Google Cloud for the GKE target: reads as REST JSON through google-auth's authorized
session, writes through the container v1 and compute v1 clients, the client factory, and the single
Google-error translator.

Why it exists: collect/steps code must run against the loopback fake (tests/support/fakes/gcp_server.py) with
the real clients, must not pay for the google-cloud imports at import time (`cidrx --help` budget:
compute_v1 alone costs ~1.3 s), and every Google failure must reach the user as one actionable line with
the right exit code. So:

- google.* is imported only inside functions (`cidrx --help` stays fast); a missing SDK (a broken install:
  cidrx depends on it) is one line saying so.
- Every method returns plain REST JSON dicts (camelCase keys, enum names, int64 fields as strings as in
  the REST API), so no caller touches SDK types.
- Every call goes through `_call`, the one place that sets retry/timeout and hands SDK exceptions to
  `translate()`.
- Writes return an operation handle ({"api": "container"|"compute", "name", "region" (compute)}) and do
  not wait; `get_operation` polls it once.

Endpoint overrides (README, environment variables): CIDRX_CONTAINER_ENDPOINT / CIDRX_COMPUTE_ENDPOINT are base URLs
(http allowed), CIDRX_GCP_ANONYMOUS=1 uses anonymous credentials and is refused unless the API it is
used for has an override. Otherwise credentials are Application Default Credentials.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from cidrx.errors import AccessDenied, CidrxError, CloudError, InvalidInput
from cidrx.transport import activity
from cidrx.transport.environment import check_proxy_environment
from cidrx.transport.retry import (
    RETRY_LATER_HINT,
    Retryable,
    call_with_retry,
    certificate_failure,
    parse_retry_after,
    request_timeout,
    status_is_transient,
    with_gave_up_note,
)

Json = dict[str, Any]
T = TypeVar("T")

CONTAINER_ENDPOINT_ENV = "CIDRX_CONTAINER_ENDPOINT"
COMPUTE_ENDPOINT_ENV = "CIDRX_COMPUTE_ENDPOINT"
ANONYMOUS_ENV = "CIDRX_GCP_ANONYMOUS"
SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)
CALL_TIMEOUT = 60.0  # seconds per HTTP call; operations are polled, never waited on server-side

# What `collect_gke` needs (IAM permissions); docs and plan `permissions` can quote it.
COLLECT_PERMISSIONS = (
    "container.clusters.get",
    "compute.networks.get",
    "compute.networks.listPeeringRoutes",
    "compute.subnetworks.list",
    "compute.subnetworks.get",
    "compute.globalAddresses.list",
    "compute.firewalls.list",
    "compute.instances.list",
    "compute.addresses.list",
    "compute.forwardingRules.list",
)
# The reads of what holds addresses of the cluster subnet's primary range (VMs, internal forwarding rules,
# reserved internal addresses): made in the cluster's project and, on Shared VPC, in the host project too.
SUBNET_ADDRESS_READS = ("compute.instances.list", "compute.addresses.list", "compute.forwardingRules.list")
# What collect reads besides, for every route and routes-based cluster of the network: in the project that
# owns the network (the Shared VPC host) and, for clusters, in the cluster's own project too.
ROUTE_PERMISSIONS = ("compute.routes.list", "container.clusters.list")
# Of the reads, those made in the project that owns the network (the host project under Shared VPC); the
# rest (the cluster, its node pools) are made in the cluster's project.
NETWORK_PROJECT_READS = (
    "compute.networks.get",
    "compute.networks.listPeeringRoutes",
    "compute.subnetworks.list",
    "compute.subnetworks.get",
    "compute.globalAddresses.list",
    "compute.routes.list",
    "compute.firewalls.list",
    "container.clusters.list",
)
# What fleet mode (`diagnose --gke --project P --all-clusters`) adds: listing the project's clusters.
FLEET_PERMISSIONS = ("container.clusters.list",)
# The location wildcard of container v1 lists: every region and zone of the project.
ALL_LOCATIONS = "-"

# cidrx depends on the Google Cloud libraries, so a missing one means a broken environment; the hint names no
# package to install (a name on a package index is not proof of what it installs).
_INSTALL_HINT = "the Python environment cidrx runs in is incomplete: reinstall cidrx the way it was installed"
_CREDENTIALS_HINT = "run `gcloud auth application-default login` or set GOOGLE_APPLICATION_CREDENTIALS"


class StaleFingerprint(CloudError):
    """subnetworks.patch answered 412: the subnet changed since its fingerprint was read."""


class AlreadyExists(CloudError):
    """The resource to create exists already (HTTP 409)."""


class ClusterBusy(CloudError):
    """GKE refused a cluster mutation because another operation is running on the cluster (400
    FAILED_PRECONDITION "... incompatible operation ..."): wait for it and retry."""


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def _api_message(exc: Any) -> tuple[str, str]:
    """(the API's own error message, its gRPC status name or "") from a google.api_core exception.

    api_core prefixes the message with "METHOD URL: "; the response body has the bare text.
    """
    response = getattr(exc, "response", None)
    try:
        err = response.json().get("error", {}) if response is not None else {}
    except (ValueError, AttributeError):
        err = {}
    message = err.get("message") if isinstance(err, dict) else None
    status = err.get("status", "") if isinstance(err, dict) else ""
    return _one_line(message or getattr(exc, "message", None) or exc), str(status or "")


def translate(exc: BaseException, action: str, subject: str | None = None) -> CidrxError:
    """Map an exception raised while doing `action` (the IAM permission, e.g. "container.clusters.get")
    on `subject` (e.g. "GKE cluster 'demo-ip' in p1/australia-southeast1") to the error the user sees."""
    from google.api_core import exceptions as gx
    from google.auth import exceptions as ax

    on = f" on {subject}" if subject else ""
    if isinstance(exc, CidrxError):
        return exc
    if isinstance(exc, ax.DefaultCredentialsError):
        return AccessDenied(f"no Google Cloud credentials found for {action}", hint=_CREDENTIALS_HINT)
    if isinstance(exc, ax.RefreshError):
        return AccessDenied(
            f"Google Cloud credentials could not be refreshed for {action}: {_one_line(exc)}", hint=_CREDENTIALS_HINT
        )
    if isinstance(exc, gx.RetryError) and exc.cause is not None:
        return translate(exc.cause, action, subject)
    if isinstance(exc, gx.GoogleAPICallError):
        message, status = _api_message(exc)
        code = exc.code
        if isinstance(exc, gx.Unauthorized | gx.Unauthenticated):
            return AccessDenied(
                f"Google Cloud rejected the credentials for {action}: {message}", hint=_CREDENTIALS_HINT
            )
        if isinstance(exc, gx.Forbidden | gx.PermissionDenied):
            return AccessDenied(
                f"permission denied for {action}{on}: {message}",
                hint=f"grant the caller an IAM role with {action}, or check --project",
            )
        if isinstance(exc, gx.NotFound):
            what = subject or "Google Cloud resource"
            return AccessDenied(
                f"{what} not found ({action}: {message})",
                hint="check --project, --location and --cluster (and the project the credentials can see)",
            )
        if isinstance(exc, gx.PreconditionFailed) or code == 412:
            return StaleFingerprint(
                f"{action}{on} was refused: the resource changed since it was read ({message})",
                hint="read it again and retry",
            )
        if isinstance(exc, gx.Conflict):
            return AlreadyExists(f"{action}{on}: already exists ({message})")
        if isinstance(exc, gx.BadRequest):
            low = message.lower()
            if "incompatible operation" in low or ("operation" in low and "currently" in low):
                return ClusterBusy(f"{action}{on}: another operation is running ({message})", hint="wait and retry")
            head = f"Google Cloud rejected {action}{on}"
            return CloudError(f"{head}: {status + ': ' if status else ''}{message}")
        return CloudError(
            f"{action}{on} failed: HTTP {code}: {message}", hint="retry; if it persists, check the Google Cloud status"
        )
    untrusted = certificate_failure(exc)
    if untrusted is not None:
        return AccessDenied(
            f"the TLS certificate of Google Cloud could not be verified for {action}: {_one_line(untrusted)}",
            hint="check the CA bundle (REQUESTS_CA_BUNDLE, SSL_CERT_FILE) and any proxy in between",
        )
    if isinstance(exc, ax.TransportError):
        return AccessDenied(f"cannot reach Google Cloud for {action}: {_one_line(exc)}", hint="check the network")
    try:
        import requests
    except ImportError:  # pragma: no cover - requests ships with google-auth's transport
        requests = None  # type: ignore[assignment]
    if requests is not None and isinstance(exc, requests.exceptions.ChunkedEncodingError):
        # The server answered and the answer was cut off on the way (cut, not refused): as a garbled answer.
        return CloudError(f"{action}{on}: Google's answer was cut off ({_one_line(exc)})", hint=RETRY_LATER_HINT)
    if requests is not None and isinstance(exc, requests.exceptions.ConnectionError | requests.exceptions.Timeout):
        return AccessDenied(
            f"cannot reach the Google Cloud endpoint for {action}: {_one_line(exc)}",
            hint=f"check the network and {CONTAINER_ENDPOINT_ENV} / {COMPUTE_ENDPOINT_ENV}",
        )
    return CidrxError(f"internal error during {action}: {type(exc).__name__}: {_one_line(exc)}")


def _import_sdk(name: str) -> Any:
    """The client module `name` (google.cloud.container_v1 or compute_v1; each is imported only when used:
    compute_v1 alone holds about 110 MB), or InvalidInput telling how to install it."""
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError:
        raise InvalidInput(
            f"the GKE target needs the Google Cloud client libraries ({name} cannot be imported)",
            hint=_INSTALL_HINT,
        ) from None


def to_json(message: Any) -> Json:
    """A proto-plus message as REST JSON: camelCase keys, enum names, fields left unset omitted."""
    data: Json = type(message).to_dict(
        message,
        use_integers_for_enums=False,
        preserving_proto_field_name=False,
        always_print_fields_with_no_presence=False,
    )
    return data


# Scalar fields of the container v1 Cluster and NodePool messages (and the messages inside them) declared
# `optional` in google/container/v1/cluster_service.proto (googleapis/google-cloud-python,
# packages/google-cloud-container 2.67.0): proto3 JSON keeps them when they hold their default (false, 0,
# "", an enum's zero), and leaves out every other default. A name that is `optional` in one message and not
# in another (`enabled`, `mode`, ...) is kept: no converter reads a default of those as anything but unset.
_PRESENCE_FIELDS = frozenset(
    {
        "allowExternalTraffic",
        "allowNetAdmin",
        "architectureTaintBehavior",
        "autopilotCompatibilityAuditingEnabled",
        "batchNodeCount",
        "batchPercentage",
        "currentState",
        "defaultEnablePrivateNodes",
        "disableL4LbFirewallReconciliation",
        "disabled",
        "dmaEntryLimit",
        "enableCiliumClusterwideNetworkPolicy",
        "enableFqdnNetworkPolicy",
        "enableInsecureBindingSystemAuthenticated",
        "enableInsecureBindingSystemUnauthenticated",
        "enableK8sCertsViaDns",
        "enableK8sTokensViaDns",
        "enableNestedVirtualization",
        "enablePrivateNodes",
        "enablePtpKvmTimeSync",
        "enablePublicEndpoint",
        "enableRelay",
        "enabled",
        "flexStart",
        "gcpPublicCidrsAccessEnabled",
        "gcpSecretManagerSecretUri",
        "globalAccess",
        "gpuDirectStrategy",
        "gpuDriverVersion",
        "gpuSharingStrategy",
        "hpaProfile",
        "hugepageSize1g",
        "hugepageSize2m",
        "inTransitEncryptionConfig",
        "insecureKubeletReadonlyPortEnabled",
        "localSsdEncryptionMode",
        "minNodeCpus",
        "mode",
        "noStandardNodePools",
        "noSystemImpersonation",
        "noSystemMutation",
        "noUnsafeWebhooks",
        "performanceMonitoringUnit",
        "privateEndpointEnforcementEnabled",
        "respectPdbDuringNodePoolDeletion",
        "satisfiesPzi",
        "satisfiesPzs",
        "scalabilityMode",
        "scope",
        "shutdownGracePeriodCriticalPodsSeconds",
        "shutdownGracePeriodSeconds",
        "singleProcessOomKill",
        "standard",
        "strategy",
        "swapSizeGib",
        "swapSizePercent",
        "threadsPerCore",
        "totalEgressBandwidthTier",
        "vulnerabilityMode",
    }
)

# The map fields of those messages (same source): JSON objects keyed by the user, not messages.
_MAP_FIELDS = frozenset({"labels", "maintenanceExclusions", "metadata", "resourceLabels", "sysctls", "tags"})


def proto_json(value: Any) -> Any:
    """Container v1 REST JSON as the container client rendered it (`to_json` of the parsed message): fields
    that hold their proto3 default (false, 0, "", [], null, an enum's `..._UNSPECIFIED`) are left out unless
    declared `optional`. GKE (and the loopback fake) may send such defaults explicitly (`"utilization": 0`,
    `"accelerators": []`); the collect converters and the snapshot were written against the client's view,
    which never held them. Fields the client did not know are kept (it dropped them)."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key in _MAP_FIELDS and isinstance(item, dict):
                # A map keeps entries holding a default ({"team": ""}); an empty map is left out.
                if item:
                    out[key] = {k: proto_json(v) for k, v in item.items()}
                continue
            item = proto_json(item)
            if (key in _PRESENCE_FIELDS and item is not None and item != []) or not _proto_default(item):
                out[key] = item
        return out
    if isinstance(value, list):
        return [proto_json(v) for v in value]
    return value


def _proto_default(value: Any) -> bool:
    if value is None or value is False or value == "" or value == []:
        return True
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value == 0
    return isinstance(value, str) and value.endswith("_UNSPECIFIED")


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def short_name(ref: str) -> str:
    """The last path segment of a resource name or URL (".../regions/us-central1" -> "us-central1")."""
    return ref.rstrip("/").rsplit("/", 1)[-1]


class GkeApi:
    """Thin adapter over the GKE and GCE clients for one project and cluster location.

    No I/O and no SDK import in the constructor: credentials and clients are created on first use and
    kept for the adapter's lifetime.
    """

    # maxResults of compute list calls (the API's maximum and default is 500); tests page with less.
    page_size = 500

    def __init__(self, project: str, location: str) -> None:
        self.project = project
        self.location = location
        self._credentials: Any = None
        self._clients: dict[str, Any] = {}

    # -- plumbing -----------------------------------------------------------------------------------

    def _creds(self, api: str, endpoint: str | None) -> Any:
        if _truthy(os.environ.get(ANONYMOUS_ENV)):
            if not endpoint:
                env = CONTAINER_ENDPOINT_ENV if api == "container" else COMPUTE_ENDPOINT_ENV
                raise InvalidInput(
                    f"{ANONYMOUS_ENV}=1 is only allowed with an endpoint override, and {env} is not set",
                    hint=f"set {env} to the endpoint's base URL, or unset {ANONYMOUS_ENV}",
                )
            from google.auth.credentials import AnonymousCredentials

            return AnonymousCredentials()  # type: ignore[no-untyped-call]
        if self._credentials is None:
            import google.auth

            with _translating("loading Application Default Credentials"):
                self._credentials, _ = google.auth.default(scopes=list(SCOPES))
        return self._credentials

    def _client(self, kind: str) -> Any:
        """The client of `kind` ("container", or a compute client class name), created once."""
        client = self._clients.get(kind)
        if client is not None:
            return client
        check_proxy_environment()
        from google.api_core.client_options import ClientOptions

        if kind == "container":
            container_v1 = _import_sdk("google.cloud.container_v1")
            endpoint = os.environ.get(CONTAINER_ENDPOINT_ENV) or None
            opts = ClientOptions(api_endpoint=endpoint.rstrip("/")) if endpoint else None
            creds = self._creds("container", endpoint)
            client = container_v1.ClusterManagerClient(credentials=creds, transport="rest", client_options=opts)
        else:
            endpoint = os.environ.get(COMPUTE_ENDPOINT_ENV) or None
            opts = ClientOptions(api_endpoint=endpoint.rstrip("/")) if endpoint else None
            compute_v1 = _import_sdk("google.cloud.compute_v1")
            creds = self._creds("compute", endpoint)
            client = getattr(compute_v1, kind)(credentials=creds, client_options=opts)
            if endpoint:
                # compute builds its ExtendedOperation pollers lazily with the *default* endpoint
                # (transports/base.py `_region_operations_client`), so `.result()` on an operation would
                # go to compute.googleapis.com: seed them with clients on the override.
                services = getattr(getattr(client, "_transport", None), "_extended_operations_services", None)
                if isinstance(services, dict):
                    services["region_operations"] = compute_v1.RegionOperationsClient(
                        credentials=creds, client_options=opts
                    )
                    services["global_operations"] = compute_v1.GlobalOperationsClient(
                        credentials=creds, client_options=opts
                    )
        self._clients[kind] = client
        return client

    def _call(
        self,
        action: str,
        subject: str | None,
        fn: Callable[..., T],
        /,
        *args: Any,
        write: bool = False,
        want: str | None = None,
        **kwargs: Any,
    ) -> T:
        """Run one SDK call under cidrx's retry policy (cidrx.transport.retry) and timeout; errors leave
        translated. retry=None turns the GAPIC default retries off (they would sleep for real, and retry
        writes too): there is one policy, and `classify` says what it retries. `want`: a field every success
        answer holds (a resource's `name`); one without it was cut or garbled on the way (the REST transport
        parses such a body to an empty message), a transient failure like a 5xx."""

        def once() -> T:
            try:
                result = fn(*args, retry=None, timeout=request_timeout(CALL_TIMEOUT), **kwargs)
            except UnicodeDecodeError as exc:  # the REST transport decodes a 2xx body as UTF-8 before parsing it
                raise GarbledAnswer(f"the answer is not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
            except Exception as exc:
                if _unparsable(exc):
                    raise GarbledAnswer(f"the answer is not JSON ({_one_line(str(exc))[:120]})") from exc
                raise
            if want is not None and not getattr(result, want, None):
                raise GarbledAnswer(f"the answer has no {want!r}: it was cut off or garbled on the way")
            return result

        activity.reading(f"{action} {subject}" if subject else action)
        try:
            return call_with_retry(once, _classify_write if write else _classify_read)
        except CidrxError:
            raise
        except GarbledAnswer as exc:
            raise with_gave_up_note(_unreadable(action, subject, str(exc), write=write), exc) from exc
        except Exception as exc:
            err = _translated(exc, action, subject)
            if isinstance(err, CidrxError):
                err = with_gave_up_note(err, exc)
            raise err from exc

    def _session(self, api: str) -> tuple[Any, str]:
        """An authorized HTTP session for the `api` ("compute" or "container") REST API and its base URL,
        created once per API.

        Reads go through it rather than through the SDK clients: importing compute_v1 loads its one types
        module of several thousand proto-plus message classes, about 110 MB of resident memory before the
        first request (bench/bench_diagnose.py measured a GKE diagnose at 184 MB, 147 MB of it imports),
        and its list methods parse every page into protobuf messages that `to_json` turns back into the
        REST JSON the API sent; container_v1 and the gRPC/proto-plus stack it imports held another ~23 MB
        of an 86 MB collect. The writes still use the clients (their operations and request types)."""
        cached = self._clients.get(f"{api}-session")
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        check_proxy_environment()
        try:
            from google.auth.transport.requests import AuthorizedSession
        except ImportError:
            raise InvalidInput(
                "the GKE target needs the Google Cloud client libraries (google.auth cannot be imported)",
                hint=_INSTALL_HINT,
            ) from None
        env, default_host = (
            (CONTAINER_ENDPOINT_ENV, "container.googleapis.com")
            if api == "container"
            else (COMPUTE_ENDPOINT_ENV, "compute.googleapis.com")
        )
        endpoint = (os.environ.get(env) or "").rstrip("/")
        creds = self._creds(api, endpoint or None)
        # As the SDK's REST transports do: an endpoint without a scheme is https.
        host = (endpoint if "://" in endpoint else f"https://{endpoint}") if endpoint else f"https://{default_host}"
        session = AuthorizedSession(creds, default_host=default_host)  # type: ignore[no-untyped-call]
        self._clients[f"{api}-session"] = (session, host)
        return session, host

    def _json_get(
        self, action: str, subject: str, uri: str, params: Json, want: str | None = None, *, api: str = "compute"
    ) -> Json:
        """One GET of the `api` REST API as REST JSON, retried under cidrx's policy; errors are raised as
        the clients raise them (google.api_core.exceptions.from_http_response), so `translate` applies.
        `want`: as for `_call`."""
        return self._json_request("GET", action, subject, uri, params, None, want, api=api)

    def _json_request(
        self,
        method: str,
        action: str,
        subject: str,
        uri: str,
        params: Json,
        body: Json | None,
        want: str | None = None,
        *,
        api: str = "compute",
    ) -> Json:
        """One request of the `api` REST API with a JSON body (`body`, None for none), its answer as REST JSON:
        `_json_get`'s checks; a request with a body is a write (cidrx's write classification: not repeated after
        an answer that may mean it was carried out)."""
        from google.api_core import exceptions as gx

        session, host = self._session(api)

        def fetch(retry: object = None, timeout: float = CALL_TIMEOUT) -> Json:  # _call passes the timeout
            response = session.request(
                method,
                f"{host}{uri}",
                params=params,
                json=body,
                timeout=timeout,
                headers={"Content-Type": "application/json"},
            )
            if response.status_code >= 400:
                raise gx.from_http_response(response)  # type: ignore[no-untyped-call]
            try:
                page = response.json()
            except ValueError as exc:
                raise GarbledAnswer(f"the answer is not JSON ({exc})") from exc
            if not isinstance(page, dict):
                raise GarbledAnswer("the answer is not a JSON object: it was cut off or garbled on the way")
            if want is not None and not page.get(want):
                raise GarbledAnswer(f"the answer has no {want!r}: it was cut off or garbled on the way")
            return page

        return self._call(action, subject, fetch, write=body is not None)

    def _json_pages(self, action: str, subject: str, uri: str, params: Json) -> Iterator[Json]:
        """The pages of a compute list as REST JSON (`_json_get`), each page its own retried request
        resuming at its page token."""
        token = ""
        while True:
            page = self._json_get(action, subject, uri, {**params, **({"pageToken": token} if token else {})})
            yield page
            token = str(page.get("nextPageToken") or "")
            if not token:
                return

    def _cluster_name(self, cluster: str) -> str:
        return f"projects/{self.project}/locations/{self.location}/clusters/{cluster}"

    def _cluster_subject(self, cluster: str) -> str:
        return f"GKE cluster {cluster!r} in {self.project}/{self.location}"

    # -- reads --------------------------------------------------------------------------------------

    def list_clusters(self) -> Json:
        """ListClusters in this adapter's location (ALL_LOCATIONS for the whole project), as REST JSON:
        `clusters` (each with `name` and `location`) and `missingZones`, the zones GKE could not reach,
        whose clusters are left out of the answer. Not paginated by the API."""
        return self._list_clusters(self.project, self.location)

    def _list_clusters(self, project: str, location: str) -> Json:
        where = "every location" if location == ALL_LOCATIONS else location
        subject = f"GKE clusters of project {project} in {where}"
        uri = f"/v1/projects/{project}/locations/{location}/clusters"
        return proto_json(self._json_get("container.clusters.list", subject, uri, {}, api="container"))  # type: ignore[no-any-return]

    def get_cluster(self, cluster: str) -> Json:
        uri = f"/v1/{self._cluster_name(cluster)}"
        answer = self._json_get(
            "container.clusters.get", self._cluster_subject(cluster), uri, {}, want="name", api="container"
        )
        return proto_json(answer)  # type: ignore[no-any-return]

    def list_node_pools(self, cluster: str) -> list[Json]:
        uri = f"/v1/{self._cluster_name(cluster)}/nodePools"
        page = self._json_get("container.clusters.get", self._cluster_subject(cluster), uri, {}, api="container")
        return [proto_json(p) for p in page.get("nodePools") or []]

    def list_clusters_of(self, project: str) -> list[Json]:
        """Every cluster of `project` in every location (clusters.list with location `-`), as REST JSON."""
        return list(self._list_clusters(project, ALL_LOCATIONS).get("clusters") or [])

    def get_network(self, network: str, project: str | None = None) -> Json:
        project = project or self.project
        subject = f"VPC network {network!r} in project {project}"
        uri = f"/compute/v1/projects/{project}/global/networks/{network}"
        return self._json_get("compute.networks.get", subject, uri, {}, want="name")

    def get_subnetwork(self, region: str, subnet: str, project: str | None = None) -> Json:
        project = project or self.project
        client = self._client("SubnetworksClient")
        subject = f"subnetwork {subnet!r} in {project}/{region}"
        msg = self._call(
            "compute.subnetworks.get", subject, client.get, project=project, region=region, subnetwork=subnet
        )
        return to_json(msg)

    def iter_routes(self, network_url: str, project: str | None = None) -> Iterator[Json]:
        """Every route of the network (routes.list filtered by network, paged), as REST JSON."""
        project = project or self.project
        subject = f"routes of {short_name(network_url)!r} in project {project}"
        uri = f"/compute/v1/projects/{project}/global/routes"
        params: Json = {"filter": f'network="{network_url}"', "maxResults": self.page_size}
        for page in self._json_pages("compute.routes.list", subject, uri, params):
            yield from page.get("items") or ()

    def iter_subnetworks(self, project: str | None = None) -> Iterator[Json]:
        """Every subnet of the project, all regions (subnetworks.aggregatedList, paged); warning-only
        scopes (regions without subnets on a page: NO_RESULTS_ON_PAGE) are skipped."""
        project = project or self.project
        subject = f"project {project}"
        uri = f"/compute/v1/projects/{project}/aggregated/subnetworks"
        params: Json = {"maxResults": self.page_size}
        for page in self._json_pages("compute.subnetworks.list", subject, uri, params):
            for scoped in (page.get("items") or {}).values():
                yield from scoped.get("subnetworks") or ()

    def iter_instances(self, project: str | None = None) -> Iterator[Json]:
        """Every VM of the project, all zones (instances.aggregatedList, paged), as REST JSON; warning-only
        scopes (zones without VMs on a page) are skipped."""
        project = project or self.project
        uri = f"/compute/v1/projects/{project}/aggregated/instances"
        params: Json = {"maxResults": self.page_size}
        subject = f"VM instances of project {project}"
        for page in self._json_pages("compute.instances.list", subject, uri, params):
            for scoped in (page.get("items") or {}).values():
                yield from scoped.get("instances") or ()

    def iter_addresses(self, region: str, project: str | None = None) -> Iterator[Json]:
        """The regional addresses of `region` (addresses.list, paged), INTERNAL ones only (filtered by the
        server, re-checked here)."""
        project = project or self.project
        subject = f"addresses of project {project} in {region}"
        uri = f"/compute/v1/projects/{project}/regions/{region}/addresses"
        params: Json = {"filter": 'addressType="INTERNAL"', "maxResults": self.page_size}
        for page in self._json_pages("compute.addresses.list", subject, uri, params):
            yield from (a for a in page.get("items") or () if a.get("addressType") == "INTERNAL")

    def iter_forwarding_rules(self, region: str, project: str | None = None) -> Iterator[Json]:
        """The regional forwarding rules of `region` (forwardingRules.list, paged), as REST JSON."""
        project = project or self.project
        subject = f"forwarding rules of project {project} in {region}"
        uri = f"/compute/v1/projects/{project}/regions/{region}/forwardingRules"
        for page in self._json_pages("compute.forwardingRules.list", subject, uri, {"maxResults": self.page_size}):
            yield from page.get("items") or ()

    def iter_peering_routes(
        self, network: str, peering: str, region: str, project: str | None = None
    ) -> Iterator[Json]:
        """Routes imported over `peering` into `network` (networks.listPeeringRoutes, direction INCOMING)."""
        subject = f"peering {peering!r} of VPC network {network!r}"
        uri = f"/compute/v1/projects/{project or self.project}/global/networks/{network}/listPeeringRoutes"
        params: Json = {
            "peeringName": peering,
            "direction": "INCOMING",
            "region": region,
            "maxResults": self.page_size,
        }
        for page in self._json_pages("compute.networks.listPeeringRoutes", subject, uri, params):
            yield from page.get("items") or ()

    def iter_global_addresses(self, project: str | None = None) -> Iterator[Json]:
        """Global addresses with purpose VPC_PEERING (private services access allocations)."""
        project = project or self.project
        uri = f"/compute/v1/projects/{project}/global/addresses"
        params: Json = {"filter": 'purpose="VPC_PEERING"', "maxResults": self.page_size}
        for page in self._json_pages("compute.globalAddresses.list", f"project {project}", uri, params):
            # the filter is server-side; re-checked for safety
            yield from (a for a in page.get("items") or () if a.get("purpose") == "VPC_PEERING")

    def iter_firewalls(self, network: str, project: str | None = None) -> Iterator[Json]:
        """The VPC firewall rules of `network` (a name) in `project` (the network's own project: the host
        project for Shared VPC; default this adapter's), firewalls.list filtered by network, paged."""
        owner = project or self.project
        url = f"https://www.googleapis.com/compute/v1/projects/{owner}/global/networks/{network}"
        uri = f"/compute/v1/projects/{owner}/global/firewalls"
        params: Json = {"filter": f'network="{url}"', "maxResults": self.page_size}
        for page in self._json_pages("compute.firewalls.list", f"firewall rules of project {owner}", uri, params):
            yield from page.get("items") or ()

    def get_firewall(self, name: str, project: str | None = None) -> Json:
        owner = project or self.project
        client = self._client("FirewallsClient")
        subject = f"firewall rule {name!r} in project {owner}"
        return to_json(self._call("compute.firewalls.get", subject, client.get, project=owner, firewall=name))

    # -- writes: each returns an operation handle and does not wait ---------------------------------

    def patch_firewall_ranges(self, name: str, field: str, ranges: list[str], project: str | None = None) -> Json:
        """Set the rule's `field` ("sourceRanges" or "destinationRanges") to `ranges`, the FULL list (a JSON
        merge patch replaces lists). compute v1 Firewall has no fingerprint, so there is no stale-write guard
        on the server: callers re-read the rule right before and check the result after."""
        compute_v1 = _import_sdk("google.cloud.compute_v1")
        owner = project or self.project
        client = self._client("FirewallsClient")
        attr = {"sourceRanges": "source_ranges", "destinationRanges": "destination_ranges"}[field]
        body = compute_v1.Firewall(**{attr: list(ranges)})
        op = self._call(
            "compute.firewalls.update",
            f"firewall rule {name!r} in project {owner}",
            client.patch_unary,
            write=True,
            project=owner,
            firewall=name,
            firewall_resource=body,
        )
        return {"api": "compute", "name": str(op.name), "project": owner}

    def patch_subnetwork_secondary_ranges(
        self, region: str, subnet: str, fingerprint: str, ranges: list[Json], project: str | None = None
    ) -> Json:
        """Set the subnet's secondary ranges to `ranges` (the FULL list: existing + new, REST JSON
        {"rangeName", "ipCidrRange"}). Raises StaleFingerprint when GCE answers 412. `project` is the
        subnet's (the Shared VPC host project's) when it is not this adapter's."""
        project = project or self.project
        compute_v1 = _import_sdk("google.cloud.compute_v1")
        client = self._client("SubnetworksClient")
        body = compute_v1.Subnetwork(
            fingerprint=fingerprint,
            secondary_ip_ranges=[
                compute_v1.SubnetworkSecondaryRange(range_name=str(r["rangeName"]), ip_cidr_range=str(r["ipCidrRange"]))
                for r in ranges
            ],
        )
        op = self._call(
            "compute.subnetworks.update",
            f"subnetwork {subnet!r} in {project}/{region}",
            client.patch_unary,
            write=True,
            project=project,
            region=region,
            subnetwork=subnet,
            subnetwork_resource=body,
        )
        handle = {"api": "compute", "name": str(op.name), "region": region}
        return handle if project == self.project else {**handle, "project": project}

    def expand_subnetwork(self, region: str, subnet: str, cidr: str, project: str | None = None) -> Json:
        """subnetworks.expandIpCidrRange: widen the subnet's primary range to `cidr` (a superset of it). The
        request carries no fingerprint (discovery document, SubnetworksExpandIpCidrRangeRequest); GCE refuses a
        range that does not contain the current one or overlaps another range of the network. It cannot be
        undone. `project` is the subnet's (the Shared VPC host project's) when it is not this adapter's."""
        project = project or self.project
        compute_v1 = _import_sdk("google.cloud.compute_v1")
        client = self._client("SubnetworksClient")
        op = self._call(
            "compute.subnetworks.expandIpCidrRange",
            f"subnetwork {subnet!r} in {project}/{region}",
            client.expand_ip_cidr_range_unary,
            write=True,
            project=project,
            region=region,
            subnetwork=subnet,
            subnetworks_expand_ip_cidr_range_request_resource=compute_v1.SubnetworksExpandIpCidrRangeRequest(
                ip_cidr_range=cidr
            ),
        )
        handle = {"api": "compute", "name": str(op.name), "region": region}
        return handle if project == self.project else {**handle, "project": project}

    def create_node_pool(self, cluster: str, node_pool: Json) -> Json:
        """Create a node pool from its REST JSON (name, config, initialNodeCount, networkConfig, ...), sent as it
        is (nodePools.create): the copy was read as REST JSON, so a setting GKE added after the installed client
        library reaches the new pool unchanged instead of failing to convert."""
        name = node_pool.get("name", "")
        op = self._json_request(
            "POST",
            "container.clusters.update",
            f"node pool {name!r} of {self._cluster_subject(cluster)}",
            f"/v1/{self._cluster_name(cluster)}/nodePools",
            {},
            {"nodePool": node_pool},
            want="name",
            api="container",
        )
        return {"api": "container", "name": str(op["name"])}

    def add_cluster_pod_ranges(self, cluster: str, range_names: list[str]) -> Json:
        """UpdateCluster with update.additionalPodRangesConfig.podRangeNames = `range_names`."""
        container_v1 = _import_sdk("google.cloud.container_v1")
        update = container_v1.ClusterUpdate(
            additional_pod_ranges_config=container_v1.AdditionalPodRangesConfig(pod_range_names=list(range_names))
        )
        return self._update_cluster(cluster, update)

    def _update_cluster(self, cluster: str, update: Any) -> Json:
        """UpdateCluster with `update` (a container_v1.ClusterUpdate); returns the operation handle."""
        op = self._call(
            "container.clusters.update",
            self._cluster_subject(cluster),
            self._client("container").update_cluster,
            write=True,
            name=self._cluster_name(cluster),
            update=update,
        )
        return {"api": "container", "name": str(op.name)}

    def delete_node_pool(self, cluster: str, name: str) -> Json:
        """DeleteNodePool (for `cidrx rollback`); returns the operation handle."""
        gke = self._client("container")
        op = self._call(
            "container.clusters.update",
            f"node pool {name!r} of {self._cluster_subject(cluster)}",
            gke.delete_node_pool,
            write=True,
            name=f"{self._cluster_name(cluster)}/nodePools/{name}",
        )
        return {"api": "container", "name": str(op.name)}

    def remove_cluster_pod_ranges(self, cluster: str, range_names: list[str]) -> Json:
        """UpdateCluster with update.removedAdditionalPodRangesConfig.podRangeNames = `range_names`."""
        container_v1 = _import_sdk("google.cloud.container_v1")
        update = container_v1.ClusterUpdate(
            removed_additional_pod_ranges_config=container_v1.AdditionalPodRangesConfig(
                pod_range_names=list(range_names)
            )
        )
        return self._update_cluster(cluster, update)

    def get_operation(self, op: Json) -> Json:
        """Poll an operation handle once: {"done", "error" (one line or None), "status", "progress"}."""
        name = str(op["name"])
        if op.get("api") == "container":
            gke = self._client("container")
            msg = self._call(
                "container.operations.get",
                f"operation {name} in {self.project}/{self.location}",
                gke.get_operation,
                name=f"projects/{self.project}/locations/{self.location}/operations/{name}",
            )
            return container_operation_state(to_json(msg))
        region = op.get("region")
        project = str(op.get("project") or self.project)  # a Shared VPC host's subnet operation runs there
        if region:
            client = self._client("RegionOperationsClient")
            msg = self._call(
                "compute.regionOperations.get",
                f"operation {name} in {project}/{region}",
                client.get,
                project=project,
                region=str(region),
                operation=name,
            )
        else:
            client = self._client("GlobalOperationsClient")
            owner = str(op.get("project") or self.project)  # a firewall of a Shared VPC host project
            msg = self._call(
                "compute.globalOperations.get",
                f"operation {name} in {owner}",
                client.get,
                project=owner,
                operation=name,
            )
        return compute_operation_state(to_json(msg))


# Errors a Google API reports for "slow down" with a status other than 429 (older compute rate limits: 403).
_RATE_LIMIT_REASONS = frozenset({"rateLimitExceeded", "userRateLimitExceeded"})


def _error_reasons(exc: Any) -> set[str]:
    reasons = {str(getattr(exc, "reason", "") or "")}
    for item in getattr(exc, "errors", None) or []:
        if isinstance(item, dict):
            reasons.add(str(item.get("reason", "")))
    return reasons - {""}


def _refused_before_sending(exc: BaseException) -> bool:
    """A requests/urllib3 failure to connect (refused, DNS, connect timeout): nothing reached Google."""
    import requests
    import urllib3.exceptions as ux

    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return True
    if not isinstance(exc, requests.exceptions.ConnectionError) or isinstance(exc, requests.exceptions.SSLError):
        return False
    reason = exc.args[0] if exc.args else None
    reason = getattr(reason, "reason", reason)  # MaxRetryError wraps the underlying urllib3 error
    return isinstance(reason, ux.NewConnectionError | ux.ConnectTimeoutError)


def classify(exc: BaseException, *, write: bool) -> Retryable | None:
    """The retry policy's view of a Google client failure (see cidrx.transport.retry for what is safe)."""
    from google.api_core import exceptions as gx
    from google.auth import exceptions as ax

    if certificate_failure(exc) is not None:  # a configuration problem: the next attempt fails the same way
        return None
    if isinstance(exc, GarbledAnswer):
        return None if write else Retryable()
    if isinstance(exc, gx.GoogleAPICallError):
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None) or {}
        hint = parse_retry_after(headers.get("Retry-After") if hasattr(headers, "get") else None)
        code = int(exc.code or 0)
        if isinstance(exc, gx.TooManyRequests) or code == 429:
            return Retryable(hint)
        if code == 403 and _error_reasons(exc) & _RATE_LIMIT_REASONS:
            return Retryable(hint)
        if not write and status_is_transient(code, write=False):
            return Retryable(hint)
        return None
    if isinstance(exc, ax.TransportError):  # fetching a token failed; the API call was not made
        return Retryable()
    import requests

    rx = requests.exceptions
    if _refused_before_sending(exc):
        return Retryable()
    if not write and isinstance(exc, rx.ConnectionError | rx.Timeout | rx.ChunkedEncodingError):
        return None if isinstance(exc, rx.SSLError) else Retryable()
    return None


_classify_read = functools.partial(classify, write=False)
_classify_write = functools.partial(classify, write=True)


class GarbledAnswer(Exception):
    """A success answer without what it must hold: cut off or garbled between Google and cidrx."""


def _unreadable(action: str, subject: str | None, detail: str, *, write: bool) -> CidrxError:
    """The error for an answer that was cut off or garbled on the way. A read was retried, so it ends as
    RetriesExhausted (exit 7: `with_gave_up_note` makes it so); a write is never repeated (it may have been
    carried out), so its apply stops (exit 5) and the same command finds what it did."""
    on = f" on {subject}" if subject else ""
    if write:
        return CloudError(
            f"{action}{on}: Google's answer could not be read ({detail}); the change may have been made",
            hint="run the same command again: it checks what was done before doing anything",
        )
    return CloudError(f"{action}{on}: Google's answer could not be read ({detail})", hint=RETRY_LATER_HINT)


def _unparsable(exc: BaseException) -> bool:
    """Whether `exc` is the REST transports' failure to parse a 2xx body (google.protobuf.json_format.Parse
    raises ParseError for JSON that is cut off or garbled)."""
    kind = type(exc)
    return kind.__name__ == "ParseError" and kind.__module__ == "google.protobuf.json_format"


class _translating:
    """`with _translating(action):` turns SDK exceptions raised inside into cidrx errors."""

    def __init__(self, action: str, subject: str | None = None) -> None:
        self.action, self.subject = action, subject

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        if exc is not None and isinstance(exc, Exception) and not isinstance(exc, CidrxError):
            raise _translated(exc, self.action, self.subject) from exc


def _translated(exc: Exception, action: str, subject: str | None) -> Exception:
    """translate() for exceptions from google.* / requests; anything else is a bug and stays as it is."""
    module = type(exc).__module__
    if module.startswith(("google.", "requests", "urllib3")):
        return translate(exc, action, subject)
    return exc


def container_operation_state(data: Json) -> Json:
    """A container v1 Operation (REST JSON) as {"done", "error", "status", "progress"}."""
    status = str(data.get("status") or "STATUS_UNSPECIFIED")
    err = data.get("error") or {}
    error = None
    if err.get("code") or err.get("message"):
        error = _one_line(err.get("message") or data.get("statusMessage") or f"error code {err.get('code')}")
    elif status == "ABORTING":
        error = _one_line(data.get("statusMessage") or "the operation was aborted")
    metrics = (data.get("progress") or {}).get("metrics") or []
    parts = [
        f"{m.get('name')}={m.get('intValue', m.get('doubleValue', m.get('stringValue', '')))}"
        for m in metrics
        if m.get("name")
    ]
    return {
        "done": status == "DONE",
        "error": error,
        "status": status,
        "progress": ", ".join(parts) or (_one_line(data["detail"]) if data.get("detail") else None),
    }


def compute_operation_state(data: Json) -> Json:
    """A compute v1 Operation (REST JSON) as {"done", "error", "status", "progress"}."""
    status = str(data.get("status") or "")
    errors = (data.get("error") or {}).get("errors") or []
    error = None
    if errors:
        text = "; ".join(_one_line(e.get("message") or e.get("code") or "") for e in errors)
        http = data.get("httpErrorStatusCode")
        error = f"HTTP {http}: {text}" if http else text
    progress = data.get("progress")
    return {
        "done": status == "DONE",
        "error": error,
        "status": status,
        "progress": f"{progress}%" if progress is not None else None,
    }
