"""The one module that talks to the Kubernetes API (through lightkube), for every provider.

Why it exists: collection must stay fast and small on a 2,000-node, 60,000-pod cluster (docs/performance.md), and
apply steps must write with optimistic concurrency. So reads are paginated list calls only (never a GET per
object), decoded straight from the response bytes into compact msgspec records that hold only the fields
cidrx reads (`pod_records` & co., which collection converts from directly), or as plain dicts shaped like
the Kubernetes objects (trimmed, `iter_pods` & co.); custom resources are yielded whole, as plain dicts.
Writes are guarded by resourceVersion (409 -> `Conflict`) or by a JSON-patch `test` (422 -> `PatchTestFailed`).
Every failure goes through `KubeApi._translate`, so callers see cidrx errors that say what to grant or fix.

lightkube is imported inside functions only, so `import cidrx.kube.api` (and `cidrx --help`) stays cheap. The
parts that need no lightkube live beside it: the records pages decode into (cidrx.kube.records), kubeconfig
resolution (cidrx.kube.kubeconfig) and the errors callers catch (cidrx.kube.errors).
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from types import TracebackType
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import msgspec

from cidrx import registry
from cidrx.errors import AccessDenied, CidrxError, CloudError, InvalidInput
from cidrx.kube.errors import AlreadyExists, Conflict, KubeUnavailable, NotFound, PatchTestFailed, one_line
from cidrx.kube.kubeconfig import SERVICE_ACCOUNT, in_cluster, kubeconfig_paths, merge_kubeconfigs
from cidrx.kube.records import ApiGroupList, EventRecord, ListHead, NodeRecord, PodRecord
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

if TYPE_CHECKING:
    from lightkube import Client, SingleConfig

JSON = dict[str, Any]
T = TypeVar("T")
S = TypeVar("S", bound=msgspec.Struct)
CHUNK_SIZE = 500  # items per list page (limit/continue)
TIMEOUT = 30.0  # seconds per request; connecting gets at most CONNECT_TIMEOUT
CONNECT_TIMEOUT = 5.0


class _Rows(NamedTuple):
    node: type[Any]
    pod: type[Any]
    event: type[Any]


@cache
def _rows() -> _Rows:
    """lightkube resource classes that decode list pages into the compact records above.

    lightkube 1.x decodes list items of a msgspec.Struct resource class directly from the page bytes
    (core/decoders.py), so these cost no intermediate dicts. Namespaced ones must subclass
    NamespacedResourceG for lightkube to build the all-namespaces list path.
    """
    from lightkube.core import resource as r

    def info(kind: str, plural: str) -> r.ApiInfo:
        return r.ApiInfo(resource=r.ResourceDef("", "v1", kind), plural=plural, verbs=["list", "global_list"])

    class NodeRows(r.GlobalResource, NodeRecord):
        _api_info = info("Node", "nodes")

    class PodRows(r.NamespacedResourceG, PodRecord):
        _api_info = info("Pod", "pods")

    class EventRows(r.NamespacedResourceG, EventRecord):
        _api_info = info("Event", "events")

    return _Rows(NodeRows, PodRows, EventRows)


@cache
def _record_resource(record: type[Any], group: str, version: str, plural: str, namespaced: bool) -> type[Any]:
    """A lightkube resource class whose list items decode straight into `record` (a msgspec.Struct), as the
    classes of _rows do; cluster-scoped serves cluster-wide lists of namespaced types (the path is the same)."""
    from lightkube.core import resource as r

    base = r.NamespacedResourceG if namespaced else r.GlobalResource
    info = r.ApiInfo(
        resource=r.ResourceDef(group, version, record.__name__), plural=plural, verbs=["list", "global_list"]
    )
    return type(f"Cidrx{record.__name__}Rows", (base, record), {"_api_info": info})


@cache
def _dict_resource(group: str, version: str, plural: str, namespaced: bool, kind: str = "") -> type[Any]:
    """A lightkube resource class whose objects are plain dicts (any group, core and apps included).

    Not put in lightkube's global resource registry, so it cannot clash with classes others register.
    A cluster-scoped class also serves cluster-wide lists of namespaced types: the path is the same.
    """
    from lightkube.generic_resource import GenericGlobalResource, GenericNamespacedResource, create_api_info

    base = GenericNamespacedResource if namespaced else GenericGlobalResource
    name = f"Cidrx{kind or plural.title()}"
    return type(name, (base,), {"_api_info": create_api_info(group, version, kind or plural, plural)})


def load_config(kubeconfig: str | None, context: str | None) -> tuple[SingleConfig, str]:
    """The connection settings to use and the context name to report, by standard kubeconfig resolution.

    Raises KubeUnavailable when there is no configuration at all, AccessDenied when `context` (or the
    current-context) is not defined.
    """
    from lightkube import ConfigError, KubeConfig
    from lightkube.config.models import User

    found = kubeconfig_paths(kubeconfig)
    if found is None:
        if not in_cluster():
            raise KubeUnavailable(
                "no Kubernetes configuration: --kubeconfig not given, $KUBECONFIG not set, ~/.kube/config "
                "missing, and not running in a pod",
                hint=f"pass --kubeconfig/--context (with {' or '.join(registry.cloud_flags())}, --no-kube skips the "
                "in-cluster checks)",
            )
        if context:
            raise AccessDenied(f"context {context} not found: running in a pod with no kubeconfig")
        try:
            single = KubeConfig.from_service_account(str(SERVICE_ACCOUNT)).get()
        except (ConfigError, KeyError, OSError) as exc:
            raise KubeUnavailable(f"in-cluster configuration unusable: {one_line(str(exc))}") from None
        assert single is not None
        return single, "in-cluster"
    paths, label = found
    doc = merge_kubeconfigs(paths)
    name = context or doc.get("current-context")
    if not name:
        raise KubeUnavailable(f"kubeconfig {label} has no current-context", hint="pass --context")
    contexts = {c["name"]: c["context"] for c in doc["contexts"]}
    if name not in contexts:
        raise AccessDenied(
            f"context {name} not found in kubeconfig {label}",
            hint=f"contexts there: {', '.join(sorted(contexts)) or 'none'}",
        )
    ctx = contexts[name]
    if ctx.get("cluster") not in {c["name"] for c in doc["clusters"]}:
        raise AccessDenied(
            f"context {name} in kubeconfig {label} names cluster {ctx.get('cluster')!r}, not defined there"
        )
    if ctx.get("user") and ctx["user"] not in {u["name"] for u in doc["users"]}:
        raise AccessDenied(f"context {name} in kubeconfig {label} names user {ctx['user']!r}, not defined there")
    try:
        single = KubeConfig.from_dict(doc, fname=paths[0]).get(name)
    except (ConfigError, KeyError, msgspec.ValidationError) as exc:
        raise KubeUnavailable(f"kubeconfig {label} is not valid: {one_line(str(exc))}") from None
    assert single is not None
    if single.user is None:  # lightkube's HTTP adapter asserts a user; no user means no credentials
        single = single._replace(user=User())
    return single, name


# --------------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Call:
    """What a request was doing, for error messages: an RBAC verb on a resource, a scope, an object."""

    verb: str
    group: str
    plural: str
    namespace: str | None = None
    name: str | None = None
    what: str = ""  # overrides the resource description (discovery)

    @property
    def resource(self) -> str:
        return self.what or (f"{self.plural}.{self.group}" if self.group else self.plural)

    @property
    def subject(self) -> str:
        if self.what:
            return self.what
        if self.name is not None:
            where = f" in namespace {self.namespace}" if self.namespace else ""
            return f'{self.resource} "{self.name}"{where}'
        scope = f"in namespace {self.namespace}" if self.namespace else "at cluster scope"
        return f"{self.resource} {scope}"


def _status_of(exc: BaseException) -> tuple[int, str, str] | None:
    """(HTTP code, Status reason, message) of an HTTP error response, or None."""
    import httpx2
    from lightkube import ApiError

    if isinstance(exc, ApiError):
        status = exc.status
        return (exc.response.status_code, status.reason or "", status.message or "")
    # lightkube turns an error into ApiError only when Content-Type is exactly application/json;
    # anything else (a proxy's HTML page, "application/json; charset=utf-8") stays an HTTPStatusError.
    if isinstance(exc, httpx2.HTTPStatusError):
        response = exc.response
        try:
            body = msgspec.json.decode(response.content)
        except msgspec.DecodeError:
            return (response.status_code, "", response.text[:300])
        if isinstance(body, dict):
            return (response.status_code, str(body.get("reason") or ""), str(body.get("message") or ""))
        return (response.status_code, "", response.text[:300])
    return None


# --------------------------------------------------------------------------------------------------
# The client
# --------------------------------------------------------------------------------------------------


class KubeApi:
    """A connected Kubernetes API client: paginated reads as plain dicts, guarded writes.

    `KubeApi(kubeconfig, context)` and `KubeApi.connect(kubeconfig, context)` are the same; neither
    touches the network (the first request does). Close it (or use `with`) to release the connection.
    """

    def __init__(
        self,
        kubeconfig: str | None = None,
        context: str | None = None,
        *,
        chunk_size: int = CHUNK_SIZE,
        timeout: float = TIMEOUT,
    ) -> None:
        import httpx2
        from lightkube import Client, ConfigError

        check_proxy_environment()
        config, self.context = load_config(kubeconfig, context)
        check_credential_plugin(config, self.context)
        self.server: str = config.cluster.server
        self.chunk_size = chunk_size
        timeout = request_timeout(timeout)
        try:
            self._client: Client = Client(
                config=config,
                timeout=httpx2.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT)),
                field_manager="cidrx",
            )
        except ConfigError as exc:  # e.g. an auth-provider user (removed from kubectl too)
            raise AccessDenied(
                f"context {self.context}: {one_line(str(exc))}",
                hint="use an exec credential plugin (the one your cloud's CLI writes into the kubeconfig)",
            ) from None
        except OSError as exc:  # unreadable CA / client certificate files
            raise KubeUnavailable(f"context {self.context}: {one_line(str(exc))}") from None

    @classmethod
    def connect(
        cls,
        kubeconfig: str | None,
        context: str | None,
        *,
        chunk_size: int = CHUNK_SIZE,
        timeout: float = TIMEOUT,
    ) -> KubeApi:
        return cls(kubeconfig, context, chunk_size=chunk_size, timeout=timeout)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> KubeApi:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # ---- errors ---------------------------------------------------------------------------------

    def _translate(self, exc: BaseException, call: _Call) -> CidrxError | None:
        """The one place a client/transport failure becomes a cidrx error; None: not ours, re-raise."""
        import httpx2
        from lightkube import ConfigError

        if isinstance(exc, CidrxError):
            return exc
        status = _status_of(exc)
        if status is not None:
            code, reason, message = status
            said = one_line(message) or f"HTTP {code}"
            if code == 401:
                return AccessDenied(
                    f"unauthorized: the Kubernetes API at {self.server} rejected the credentials of context "
                    f"{self.context}",
                    hint=f"refresh them ({', '.join(registry.context_commands())})",
                )
            if code == 403:
                group = f'"{call.group}"'
                return AccessDenied(
                    f"forbidden: cannot {call.verb} {call.subject}",
                    hint=f"grant verb {call.verb} on resource {call.plural or call.what} in apiGroup {group} "
                    f"to the identity of context {self.context}; the server said: {said}",
                )
            if code == 404:
                return NotFound(f"{call.subject} not found ({said})")
            if code == 409:
                cls = AlreadyExists if reason == "AlreadyExists" else Conflict
                return cls(f"cannot {call.verb} {call.subject}: {said}", hint="re-read it and decide again")
            if code == 422 and call.verb == "patch":
                return PatchTestFailed(f"cannot patch {call.subject}: {said}", hint="re-read it and decide again")
            if code == 410:
                return CloudError(
                    f"cannot {call.verb} {call.subject}: {said}",
                    hint="the list took longer than the API server keeps its continue token; run again",
                )
            if code == 429:
                return CloudError(f"the Kubernetes API at {self.server} is throttling requests: {said}")
            return CloudError(f"the Kubernetes API at {self.server} failed to {call.verb} {call.subject}: {said}")
        untrusted = certificate_failure(exc)
        if untrusted is not None:
            return AccessDenied(
                f"the TLS certificate of the Kubernetes API at {self.server} (context {self.context}) could not be "
                f"verified: {one_line(untrusted)}",
                hint="check the certificate-authority / certificate-authority-data of this cluster in the kubeconfig "
                "(or the CA bundle, SSL_CERT_FILE, for an endpoint behind a proxy)",
            )
        if isinstance(exc, httpx2.TransportError):
            detail = one_line(str(exc)) or type(exc).__name__
            return KubeUnavailable(
                f"cannot reach the Kubernetes API at {self.server} (context {self.context}): {detail}",
                hint="check network access to the cluster endpoint and the kubeconfig context",
            )
        if isinstance(exc, ConfigError | FileNotFoundError):  # exec credential plugin failed / missing
            return AccessDenied(
                f"cannot get credentials for context {self.context}: {one_line(str(exc))}",
                hint="log in again (aws sso login, gcloud auth login) and check the plugin is on PATH",
            )
        if _from_credential_plugin(exc):
            return InvalidInput(
                f"the credential plugin of context {self.context} did not print an ExecCredential "
                f"(JSON with status.token): {type(exc).__name__}: {one_line(str(exc))}",
                hint="run the kubeconfig's users[].user.exec command by hand to see what it prints",
            )
        if isinstance(exc, msgspec.ValidationError | msgspec.DecodeError | json.JSONDecodeError):
            # A 2xx whose body was cut off or garbled on the way: transient. A read was retried, and
            # `with_gave_up_note` makes this RetriesExhausted (exit 7); a write is not repeated (it reached the
            # server): like a 5xx answer to it, its apply stops (exit 5) and the same command checks first.
            return CloudError(
                f"unreadable answer to {call.verb} {call.subject} from {self.server}: {one_line(str(exc))[:200]}",
                hint=RETRY_LATER_HINT,
            )
        return None

    @contextmanager
    def _guard(self, call: _Call) -> Iterator[None]:
        activity.reading(f"Kubernetes {call.verb} {call.subject}")
        try:
            yield
        except Exception as exc:
            mapped = self._translate(exc, call)
            if mapped is None or mapped is exc:
                raise
            raise with_gave_up_note(mapped, exc) from exc

    @staticmethod
    def _retry(fn: Callable[[], T], *, write: bool = False) -> T:
        """One request under the retry policy (inside `_guard`, which translates what escapes)."""
        return call_with_retry(fn, _classify_write if write else _classify_read)

    def _list(self, res: type[Any], namespace: Any, fields: dict[str, Any] | None = None) -> Iterator[Any]:
        """The objects of a paginated list; each page is its own retried request that resumes at the
        continue token of the last page received, so the caller never sees an item twice. (lightkube's
        `Client.list` fetches its pages inside its iterator, out of the retry policy's reach.)"""
        from lightkube.core.decoders import decode_list
        from lightkube.core.selector import build_selector

        generic = self._client._client
        params = {
            "limit": self.chunk_size,
            "fieldSelector": build_selector(fields, for_fields=True) if fields else None,
        }
        request = generic.prepare_request("list", res=res, namespace=namespace, params=params)

        def page() -> tuple[bool, bytes]:
            response = generic.send(generic.build_adapter_request(request))
            generic.raise_for_status(response)  # type: ignore[no-untyped-call]  # an ApiError, as handle_response raises
            body: bytes = response.content
            head = msgspec.json.decode(body, type=ListHead)
            token = head.metadata.continue_ if head.metadata is not None else None
            if token:
                request.params["continue"] = token  # what lightkube's handle_response does
            return bool(token), body

        # The next page is requested as soon as this one's continue token is read (decoding only the
        # token skips the items), and this page is decoded and handed out while the server prepares the
        # next: the server's time and ours overlap instead of adding up (one request in flight, in order).
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="cidrx-list") as fetcher:
            fetch = activity.carried(lambda: self._retry(page))  # retries there name this thread's request
            pending = fetcher.submit(fetch)
            more = True
            while more:
                more, body = pending.result()
                if more:
                    pending = fetcher.submit(fetch)
                yield from decode_list(body, res)[2]

    # ---- reads ----------------------------------------------------------------------------------

    def api_groups(self) -> set[str]:
        """Names of the API groups the server serves (one GET /apis)."""
        with self._guard(_Call("get", "", "", what="API discovery (/apis)")):
            generic = self._client._client  # lightkube has no discovery call; use its HTTP client

            def discover() -> ApiGroupList:
                response = generic.send(generic._client.build_request("GET", "/apis"))
                response.raise_for_status()
                # Decoded inside the retried call: a body cut off or garbled on the way is retried (classify).
                return msgspec.json.decode(response.content, type=ApiGroupList)

            found = self._retry(discover)
        return {g.name for g in found.groups if g.name}

    def _list_records(
        self, res: type[Any], call: _Call, fields: dict[str, Any] | None = None, *, namespaced: bool = True
    ) -> Iterator[Any]:
        from lightkube import ALL_NS

        namespace = ALL_NS if namespaced else None
        with self._guard(call):
            yield from self._list(res, namespace, fields)

    def node_records(self) -> Iterator[NodeRecord]:
        """Every node as a compact NodeRecord (see iter_nodes for the fields kept)."""
        yield from self._list_records(_rows().node, _Call("list", "", "nodes"), namespaced=False)

    def pod_records(self, field_selector: str | None = None) -> Iterator[PodRecord]:
        """Pods in all namespaces as compact PodRecords (see iter_pods for the fields kept)."""
        yield from self._list_records(_rows().pod, _Call("list", "", "pods"), _fields(field_selector))

    def event_records(self, reason: str) -> Iterator[EventRecord]:
        """Events of one reason in all namespaces as compact EventRecords."""
        yield from self._list_records(_rows().event, _Call("list", "", "events"), _fields(f"reason={reason}"))

    def iter_nodes(self) -> Iterator[JSON]:
        """Every node, trimmed to name/creationTimestamp/labels/annotations, podCIDR(s), conditions, addresses,
        allocatable."""
        return map(msgspec.to_builtins, self.node_records())

    def iter_pods(self, field_selector: str | None = None) -> Iterator[JSON]:
        """Pods in all namespaces, trimmed to: metadata name/namespace/uid/creationTimestamp, the Multus
        network-status and the mirror-pod annotations, and ownerReferences kind/controller (a drain reads them);
        spec nodeName/hostNetwork/nodeSelector; status phase/podIP(s)/conditions and
        containerStatuses[].state.waiting.reason. `field_selector`: e.g. "status.phase!=Succeeded"."""
        return map(msgspec.to_builtins, self.pod_records(field_selector))

    def iter_events(self, reason: str) -> Iterator[JSON]:
        """Events of one reason in all namespaces (fieldSelector reason=X), trimmed to what KubeEvent keeps."""
        return map(msgspec.to_builtins, self.event_records(reason))

    def iter_custom(self, group: str, version: str, plural: str, namespace: str | None = None) -> Iterator[JSON]:
        """Every object of a resource type (cluster-wide, or in `namespace`) as a plain dict.

        A resource type the server does not serve (CRD not installed) yields nothing.
        """
        res = _dict_resource(group, version, plural, namespace is not None)
        call = _Call("list", group, plural, namespace)
        try:
            with self._guard(call):
                for item in self._list(res, namespace):
                    yield dict(item)
        except NotFound:
            return

    def iter_custom_records(
        self, group: str, version: str, plural: str, record: type[S], namespace: str | None = None
    ) -> Iterator[S]:
        """Every object of a resource type (cluster-wide, or in `namespace`) decoded into `record`, a
        msgspec.Struct naming only the fields the caller reads (unknown ones are skipped while decoding;
        a value of another type than the record's field is a CloudError, so type the fields to take what
        a CRD may hold). A resource type the server does not serve yields nothing."""
        res = _record_resource(record, group, version, plural, namespace is not None)
        try:
            with self._guard(_Call("list", group, plural, namespace)):
                yield from self._list(res, namespace)
        except NotFound:
            return

    def get_custom(self, group: str, version: str, plural: str, name: str, namespace: str | None = None) -> JSON | None:
        """One object as a plain dict; None when it (or its resource type) does not exist."""
        res = _dict_resource(group, version, plural, namespace is not None)
        try:
            with self._guard(_Call("get", group, plural, namespace, name)):
                return dict(self._retry(lambda: self._client.get(res, name, namespace=namespace)))
        except NotFound:
            return None

    def get_daemonset(self, namespace: str, name: str) -> JSON | None:
        """The whole DaemonSet (for a later guarded replace), or None."""
        return self.get_custom("apps", "v1", "daemonsets", name, namespace)

    # ---- writes ---------------------------------------------------------------------------------

    def create_custom(self, group: str, version: str, plural: str, kind: str, obj: Mapping[str, Any]) -> JSON:
        """Create `obj` (namespaced when its metadata names a namespace); AlreadyExists when the name is taken."""
        body = {**obj, "apiVersion": f"{group}/{version}" if group else version, "kind": kind}
        namespace = (body.get("metadata") or {}).get("namespace")
        res = _dict_resource(group, version, plural, namespace is not None, kind)
        name = (body.get("metadata") or {}).get("name")
        with self._guard(_Call("create", group, plural, namespace, name)):
            return dict(self._retry(lambda: self._client.create(res(body)), write=True))

    def replace_custom(self, group: str, version: str, plural: str, obj: Mapping[str, Any]) -> JSON:
        """Replace `obj` guarded by its metadata.resourceVersion: Conflict when someone wrote it since."""
        meta = obj.get("metadata") or {}
        if not meta.get("resourceVersion"):
            raise ValueError(f"replace of {plural} {meta.get('name')!r} needs metadata.resourceVersion")
        namespace = meta.get("namespace")
        res = _dict_resource(group, version, plural, namespace is not None)
        with self._guard(_Call("update", group, plural, namespace, meta.get("name"))):
            return dict(self._retry(lambda: self._client.replace(res(obj)), write=True))

    def replace_daemonset(self, obj: Mapping[str, Any]) -> JSON:
        """Replace a DaemonSet read with get_daemonset, guarded by its resourceVersion."""
        return self.replace_custom("apps", "v1", "daemonsets", obj)

    def json_patch(
        self,
        group: str,
        version: str,
        plural: str,
        name: str,
        ops: Sequence[Mapping[str, Any]],
        namespace: str | None = None,
    ) -> JSON:
        """Apply an RFC 6902 JSON patch; PatchTestFailed on 422 (start `ops` with a `test` of
        /metadata/resourceVersion to make it a compare-and-swap)."""
        from lightkube.types import PatchType

        res = _dict_resource(group, version, plural, namespace is not None)
        body = [dict(op) for op in ops]
        with self._guard(_Call("patch", group, plural, namespace, name)):
            patched = self._retry(
                lambda: self._client.patch(res, name, body, namespace=namespace, patch_type=PatchType.JSON), write=True
            )
            return dict(patched)

    def delete_custom(
        self,
        group: str,
        version: str,
        plural: str,
        name: str,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
    ) -> bool:
        """Delete one object; False when it was already gone. With `resource_version`, only that version
        is deleted (a DeleteOptions precondition): Conflict when the object changed since it was read."""
        res = _dict_resource(group, version, plural, namespace is not None)
        try:
            with self._guard(_Call("delete", group, plural, namespace, name)):
                if resource_version is None:
                    self._retry(lambda: self._client.delete(res, name, namespace=namespace), write=True)
                    return True
                # lightkube's delete sends no body; build its request and add the DeleteOptions.
                generic = self._client._client
                request = generic.prepare_request("delete", res=res, name=name, namespace=namespace)
                request.data = {
                    "apiVersion": "v1",
                    "kind": "DeleteOptions",
                    "preconditions": {"resourceVersion": resource_version},
                }
                self._retry(lambda: generic.send(generic.build_adapter_request(request)).raise_for_status(), write=True)
                return True
        except NotFound:
            return False

    def cordon(self, node: str, unschedulable: bool = True) -> JSON:
        """Mark a node unschedulable (or schedulable again) as `kubectl cordon`/`uncordon` do: spec.unschedulable."""
        return self.json_patch(
            "", "v1", "nodes", node, [{"op": "add", "path": "/spec/unschedulable", "value": unschedulable}]
        )

    def pods_on(self, node: str) -> list[JSON]:
        """The pods bound to `node` (every phase)."""
        return list(self.iter_pods(f"spec.nodeName={node}"))

    def evict(self, namespace: str, name: str) -> str | None:
        """Ask the API server to evict one pod: a policy/v1 Eviction POSTed to the pod's eviction subresource,
        admitted only if the pod's PodDisruptionBudget allows (never a plain delete). None: the pod is going or
        already gone. Otherwise the server's reason it refused now (429: the budget allows no disruption, or
        the server is throttling): the caller tries again later, within its own deadline. Not retried here."""
        from lightkube import ApiError
        from lightkube.models.meta_v1 import ObjectMeta
        from lightkube.resources.core_v1 import Pod

        body = Pod.Eviction(metadata=ObjectMeta(name=name, namespace=namespace))
        try:
            with self._guard(_Call("create", "", "pods/eviction", namespace, name)):
                try:
                    self._client.create(body, name=name, namespace=namespace)
                except ApiError as exc:
                    if exc.response.status_code != 429:
                        raise
                    causes = (exc.status.details.causes or []) if exc.status.details else []
                    said = "; ".join(c.message for c in causes if c.message) or exc.status.message or "HTTP 429"
                    return one_line(said)
        except NotFound:
            return None
        return None

    def pods_in(self, cidr: str) -> list[str]:
        """namespace/name of the pods (not host-network, not finished) whose address lies in `cidr`: what makes
        a range or pool "in use" for `cidrx rollback`."""
        import ipaddress

        net = ipaddress.ip_network(cidr, strict=False)
        found = []
        for p in self.iter_pods("status.phase!=Succeeded,status.phase!=Failed"):
            ip = (p.get("status") or {}).get("podIP")
            if not ip or (p.get("spec") or {}).get("hostNetwork"):
                continue
            try:
                inside = ipaddress.ip_address(ip) in net
            except ValueError:
                continue
            if inside:
                meta = p.get("metadata") or {}
                found.append(f"{meta.get('namespace')}/{meta.get('name')}")
        return sorted(found)


PLUGIN_TIMEOUT_ENV = "CIDRX_CREDENTIAL_PLUGIN_TIMEOUT"
PLUGIN_TIMEOUT = 60.0  # seconds; a login prompt that nobody answers in CI must not hang the run


def check_credential_plugin(config: SingleConfig, context: str) -> None:
    """Run the context's exec credential plugin once, with a timeout, before lightkube does (lightkube waits
    for it without one): a plugin that never returns is an unreachable cluster (exit 6, naming the plugin),
    one that prints no ExecCredential is bad input (exit 2). The Kubernetes client runs it again for its token
    (client-go's exec plugin protocol: the plugin prints an ExecCredential with status.token on stdout)."""
    import os
    import subprocess

    user = getattr(config, "user", None)
    plugin = getattr(user, "exec", None) if user is not None else None
    if plugin is None or not getattr(plugin, "command", None):
        return
    raw = os.environ.get(PLUGIN_TIMEOUT_ENV, "").strip()
    try:
        timeout = float(raw) if raw else PLUGIN_TIMEOUT
    except ValueError:
        raise InvalidInput(f"{PLUGIN_TIMEOUT_ENV}={raw!r} is not a number of seconds") from None
    env = dict(os.environ)
    env.update((var.name, var.value) for var in (plugin.env or ()))
    command = [plugin.command, *(plugin.args or [])]
    try:
        # Its own process group, so a timeout ends the plugin and whatever it started (which would keep
        # the output pipes open).
        proc = subprocess.Popen(
            command,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError:
        return  # not found / not executable: the client reports it as missing credentials
    try:
        stdout, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        import signal

        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise KubeUnavailable(
            f"the credential plugin {plugin.command!r} of context {context} did not finish within {timeout:.0f}s",
            hint="run it by hand: it may be waiting for a login (aws sso login, gcloud auth login); "
            f"{PLUGIN_TIMEOUT_ENV} sets the wait",
        ) from None
    if proc.returncode != 0:
        return  # the client reports the plugin's own error
    try:
        token = json.loads(stdout)["status"]["token"]
    except (ValueError, KeyError, TypeError):
        token = None
    if not isinstance(token, str):
        shown = one_line(stdout.decode(errors="replace"))[:120]
        raise InvalidInput(
            f"the credential plugin {plugin.command!r} of context {context} did not print an ExecCredential "
            f"(JSON with status.token); it printed {shown!r}",
            hint="run the kubeconfig's users[].user.exec command by hand to see what it prints",
        )


def _from_credential_plugin(exc: BaseException) -> bool:
    """Whether `exc` was raised while lightkube read an exec credential plugin's output (its ExecAuth parses
    the plugin's stdout with json.loads and indexes status.token, outside any request)."""
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_name in ("sync_auth_flow", "async_auth_flow"):
            return isinstance(exc, ValueError | KeyError | TypeError)
        tb = tb.tb_next
    return False


def classify(exc: BaseException, *, write: bool) -> Retryable | None:
    """The retry policy's view of a Kubernetes client failure (see cidrx.transport.retry for what is safe):
    429 (API priority and fairness, with Retry-After) and 503 always, other 5xx for reads; failures to connect always,
    a connection broken after the request was sent for reads only."""
    import httpx2

    if certificate_failure(exc) is not None:  # a configuration problem: the next attempt fails the same way
        return None
    if _from_credential_plugin(exc):
        return None
    if isinstance(exc, msgspec.ValidationError | msgspec.DecodeError | json.JSONDecodeError):
        return None if write else Retryable()  # a cut or garbled 2xx body; a write did reach the server
    status = _status_of(exc)
    if status is not None:
        code = status[0]
        if not status_is_transient(code, write=write, kube=True):
            return None
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None)
        hint = parse_retry_after(headers.get("Retry-After")) if headers is not None else None
        return Retryable(hint)
    if isinstance(exc, httpx2.ConnectError | httpx2.ConnectTimeout | httpx2.PoolTimeout):
        return Retryable()
    if not write and isinstance(exc, httpx2.ReadError | httpx2.RemoteProtocolError | httpx2.ReadTimeout):
        return Retryable()
    return None


_classify_read = functools.partial(classify, write=False)
_classify_write = functools.partial(classify, write=True)


def _fields(selector: str | None) -> dict[str, Any] | None:
    """A field-selector string ("a=b,c!=d,c!=e") as lightkube's selector mapping."""
    if not selector:
        return None
    from lightkube import operators

    equal: dict[str, str] = {}
    unequal: dict[str, list[str]] = {}
    for part in (p.strip() for p in selector.split(",")):
        if not part:
            continue
        if "!=" in part:
            key, value = part.split("!=", 1)
            unequal.setdefault(key.strip(), []).append(value.strip())
            continue
        key, sep, value = part.replace("==", "=", 1).partition("=")
        if not sep or key.strip() in equal:
            raise ValueError(f"unsupported field selector {selector!r}")
        equal[key.strip()] = value.strip()
    out: dict[str, Any] = {k: operators.equal(v) for k, v in equal.items()}
    for key, values in unequal.items():
        if key in out:
            raise ValueError(f"unsupported field selector {selector!r}: {key} has both = and !=")
        out[key] = operators.not_equal(values[0]) if len(values) == 1 else operators.not_in(values)
    return out


@dataclass(frozen=True)
class KubeApis:
    """What steps that touch only the cluster (in-cluster IPAM plans, plain-Kubernetes targets) reach
    through `ctx.apis`: the cluster, or None when it was not reachable."""

    kube: KubeApi | None
