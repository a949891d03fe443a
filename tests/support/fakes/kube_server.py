"""A project-owned fake Kubernetes API server for tests, driven by the real client (lightkube).

Why the project owns this (docs/architecture.md, tests): cidrx reads 60,000-pod clusters page by page and writes fixes
with optimistic concurrency, so its tests need an API server that behaves like a real one on exactly those
points. kmock and mockernetes were tried and are not enough: neither enforces ``resourceVersion``
conflicts on PUT, neither answers a failed JSON-patch ``test`` with 422, and neither implements
``limit``/``continue`` pagination. This module is stdlib only: a ``ThreadingHTTPServer`` on 127.0.0.1
(port 0) in a daemon thread, speaking the Kubernetes REST paths, so production code is exercised
through its real HTTP client exactly as it would drive a real cluster.

What it implements
  * Storage of plain JSON dicts, keyed by (group, version, plural) and then (namespace or "", name);
    thread safe.  Stored objects are never mutated in place (every write stores a new dict), so reads
    serialise them without copying.
  * A registry of resource types: core v1, apps/v1, apiextensions and the CNI/IPAM CRDs cidrx reads,
    plus ``register()`` for more.  ``crds=False`` (or a set of groups) leaves CRD groups out; a
    registered CRD type also has its CustomResourceDefinition object stored.
  * Metadata: uid, creationTimestamp, generation and a global monotonically increasing resourceVersion.
  * Verbs: list (cluster-wide and namespaced), get, create (409 AlreadyExists), replace (409 Conflict on
    a stale resourceVersion), patch (merge; JSON patch with ``test``, 422 on failure; a strategic-merge
    subset, 415 for custom resources as on a real cluster; apply is 415), delete (with preconditions),
    deletecollection.  With a ``/status`` subresource, main-resource writes keep ``.status`` and
    ``/status`` writes change only ``.status``.
  * Lists: ``limit``/``continue`` (ordered by namespace/name), label selectors, and field selectors
    limited to the fields a real apiserver supports for the type (others are 400).
  * Discovery: ``/version``, ``/api``, ``/api/v1``, ``/apis``, ``/apis/{g}``, ``/apis/{g}/{v}``.
  * Test hooks: seeding, inspection, a request log, fault injection (error answers, and connections
    dropped instead of answered: ``inject_reset``) and an ``on_request`` callback.

Deliberately missing: watch (405), server-side apply (415), finalizers and graceful deletion (deletes are
immediate), namespace existence checks, admission and schema validation beyond object names, expired
continue tokens (pages are served from live data, not a snapshot).
"""

from __future__ import annotations

import base64
import binascii
import bisect
import json
import re
import secrets
import time
import uuid
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, TypeVar
from urllib.parse import parse_qs, unquote, urlsplit

import yaml

from tests.support.fakes import crd_schemas, disruption
from tests.support.fakes.crd_schemas import structural
from tests.support.fakes.crd_schemas.structural import Schema
from tests.support.fakes.loopback import Fault, LoopbackServer

JSON = dict[str, Any]
T = TypeVar("T")
ObjKey = tuple[str, str]  # (namespace or "", name)
TypeKey = tuple[str, str, str]  # (group, version, plural)

DEFAULT_VERBS: tuple[str, ...] = (
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
)
STATUS_VERBS: tuple[str, ...] = ("get", "patch", "update")
FAKE_TOKEN = "fake-token"
_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")

REASONS: dict[int, str] = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


# --------------------------------------------------------------------------------------------------
# Resource types
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ResourceType:
    """One REST resource: ``/api[s]/{group}/{version}/[namespaces/{ns}/]{plural}``."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    singular: str = ""
    verbs: tuple[str, ...] = DEFAULT_VERBS
    short_names: tuple[str, ...] = ()
    custom: bool = False  # a CRD: registering it also stores its CustomResourceDefinition object
    # Field selectors the real apiserver accepts beyond metadata.name/metadata.namespace; others are 400.
    selectable_fields: tuple[str, ...] = ()
    # With a /status subresource, writes to the main resource keep the stored .status (as a real
    # apiserver does) and /status writes change only .status.  Without one, /status is 404.
    status_subresource: bool = False

    @property
    def key(self) -> TypeKey:
        return (self.group, self.version, self.plural)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular_name(self) -> str:
        return self.singular or self.kind.lower()

    @property
    def field_selectors(self) -> frozenset[str]:
        return frozenset(("metadata.name", "metadata.namespace", *self.selectable_fields))


POD_FIELDS = (
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.nominatedNodeName",
)
EVENT_FIELDS = (
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
)
FIELD_ALIASES = {"source": "source.component"}  # event field selector "source" reads source.component


BUILTIN_TYPES: tuple[ResourceType, ...] = (
    ResourceType(
        "",
        "v1",
        "namespaces",
        "Namespace",
        False,
        short_names=("ns",),
        selectable_fields=("status.phase",),
        status_subresource=True,
    ),
    ResourceType(
        "",
        "v1",
        "nodes",
        "Node",
        False,
        short_names=("no",),
        selectable_fields=("spec.unschedulable",),
        status_subresource=True,
    ),
    ResourceType(
        "", "v1", "pods", "Pod", True, short_names=("po",), selectable_fields=POD_FIELDS, status_subresource=True
    ),
    ResourceType("", "v1", "events", "Event", True, short_names=("ev",), selectable_fields=EVENT_FIELDS),
    ResourceType("", "v1", "configmaps", "ConfigMap", True, short_names=("cm",)),
    ResourceType("", "v1", "serviceaccounts", "ServiceAccount", True, short_names=("sa",)),
    ResourceType("apps", "v1", "daemonsets", "DaemonSet", True, short_names=("ds",), status_subresource=True),
    ResourceType("apps", "v1", "deployments", "Deployment", True, short_names=("deploy",), status_subresource=True),
    # Budgets a migration's evictions honour; their status is computed on read (tests/support/fakes/disruption.py).
    ResourceType(
        "policy",
        "v1",
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        True,
        short_names=("pdb",),
        status_subresource=True,
    ),
    # The lock `expand --apply`, `reclaim --apply` and `rollback` hold while they run (cidrx.engine.lock).
    ResourceType("coordination.k8s.io", "v1", "leases", "Lease", True),
    ResourceType(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        False,
        status_subresource=True,
    ),
)

CRD_TYPES: tuple[ResourceType, ...] = (
    ResourceType("crd.k8s.amazonaws.com", "v1alpha1", "eniconfigs", "ENIConfig", False, custom=True),
    ResourceType("whereabouts.cni.cncf.io", "v1alpha1", "ippools", "IPPool", True, custom=True),
    ResourceType(
        "whereabouts.cni.cncf.io",
        "v1alpha1",
        "overlappingrangeipreservations",
        "OverlappingRangeIPReservation",
        True,
        custom=True,
    ),
    ResourceType(
        "k8s.cni.cncf.io",
        "v1",
        "network-attachment-definitions",
        "NetworkAttachmentDefinition",
        True,
        singular="network-attachment-definition",
        short_names=("net-attach-def",),
        custom=True,
    ),
    ResourceType("crd.projectcalico.org", "v1", "ippools", "IPPool", False, custom=True),
    ResourceType("crd.projectcalico.org", "v1", "ipamblocks", "IPAMBlock", False, custom=True),
    ResourceType("crd.projectcalico.org", "v1", "blockaffinities", "BlockAffinity", False, custom=True),
    ResourceType("crd.projectcalico.org", "v1", "ipamhandles", "IPAMHandle", False, custom=True),
    ResourceType("crd.projectcalico.org", "v1", "ipamconfigs", "IPAMConfig", False, custom=True),
)
CRD_GROUPS: frozenset[str] = frozenset(t.group for t in CRD_TYPES)
# Calico's projectcalico.org/v3 IPAM CRDs (api/config/crd in projectcalico/calico): served only when a test
# names the group in `crds`, so that clusters of the default fixture see crd.projectcalico.org/v1 alone.
OPTIONAL_CRD_TYPES: tuple[ResourceType, ...] = (
    ResourceType("projectcalico.org", "v3", "ippools", "IPPool", False, custom=True),
    ResourceType("projectcalico.org", "v3", "ipamblocks", "IPAMBlock", False, custom=True),
    ResourceType("projectcalico.org", "v3", "blockaffinities", "BlockAffinity", False, custom=True),
    ResourceType("projectcalico.org", "v3", "ipamhandles", "IPAMHandle", False, custom=True),
    ResourceType("projectcalico.org", "v3", "ipamconfigurations", "IPAMConfiguration", False, custom=True),
)


def crd_object(rtype: ResourceType) -> JSON:
    """The CustomResourceDefinition a real cluster would hold for ``rtype``."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{rtype.plural}.{rtype.group}"},
        "spec": {
            "group": rtype.group,
            "names": {
                "plural": rtype.plural,
                "singular": rtype.singular_name,
                "kind": rtype.kind,
                "listKind": f"{rtype.kind}List",
            },
            "scope": "Namespaced" if rtype.namespaced else "Cluster",
            "versions": [
                {
                    "name": rtype.version,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}} if rtype.status_subresource else {},
                }
            ],
        },
    }


# --------------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------------


class ApiFailure(Exception):
    """Raised inside the fake; turned into a ``kind: Status`` response body."""

    def __init__(
        self,
        code: int,
        message: str,
        *,
        reason: str | None = None,
        details: JSON | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason or REASONS.get(code, "Unknown")
        self.details = details
        self.retry_after = retry_after

    def status(self) -> JSON:
        body: JSON = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        details = dict(self.details or {})
        if self.retry_after is not None:
            details["retryAfterSeconds"] = self.retry_after
        if details:
            body["details"] = details
        return body


def _details(rtype: ResourceType, name: str | None) -> JSON:
    out: JSON = {"group": rtype.group, "kind": rtype.plural}
    if name:
        out["name"] = name
    return out


def not_found(rtype: ResourceType, name: str) -> ApiFailure:
    return ApiFailure(404, f'{_gr(rtype)} "{name}" not found', details=_details(rtype, name))


def conflict(rtype: ResourceType, name: str, why: str) -> ApiFailure:
    return ApiFailure(
        409,
        f'Operation cannot be fulfilled on {_gr(rtype)} "{name}": {why}',
        reason="Conflict",
        details=_details(rtype, name),
    )


def _gr(rtype: ResourceType) -> str:
    return f"{rtype.plural}.{rtype.group}" if rtype.group else rtype.plural


STALE = "the object has been modified; please apply your changes to the latest version and try again"


# --------------------------------------------------------------------------------------------------
# Label and field selectors
# --------------------------------------------------------------------------------------------------

Predicate = Callable[[JSON], bool]
_SET_RE = re.compile(r"^\s*([^\s!=<>(),]+)\s+(in|notin)\s*\(([^()]*)\)\s*$")
_CMP_RE = re.compile(r"^\s*([^\s!=<>(),]+)\s*(==|!=|=|>|<)\s*([^\s!=<>(),]*)\s*$")
_KEY_RE = re.compile(r"^\s*(!?)\s*([^\s!=<>(),]+)\s*$")


def split_selector(selector: str) -> list[str]:
    """Split on commas that are not inside ``( ... )``."""
    parts: list[str] = []
    depth, start = 0, 0
    for i, ch in enumerate(selector):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(selector[start:i])
            start = i + 1
    parts.append(selector[start:])
    return [p for p in (s.strip() for s in parts) if p]


def label_requirement(text: str) -> Callable[[dict[str, str]], bool]:
    """One label requirement (``a=b``, ``a!=b``, ``a in (x,y)``, ``a notin (x)``, ``a``, ``!a``, ``a>1``)."""
    if m := _SET_RE.match(text):
        key, op = m.group(1), m.group(2)
        values = frozenset(v.strip() for v in m.group(3).split(",") if v.strip())
        if op == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    if m := _CMP_RE.match(text):
        key, op, value = m.group(1), m.group(2), m.group(3)
        if op in ("=", "=="):
            return lambda labels: labels.get(key) == value
        if op == "!=":
            return lambda labels: labels.get(key) != value
        return numeric_requirement(text, key, op, value)
    if m := _KEY_RE.match(text):
        negate, key = m.group(1) == "!", m.group(2)
        if negate:
            return lambda labels: key not in labels
        return lambda labels: key in labels
    raise ApiFailure(400, f"unable to parse requirement: {text!r}")


def numeric_requirement(text: str, key: str, op: str, value: str) -> Callable[[dict[str, str]], bool]:
    """``key>N`` / ``key<N``: labels whose value is an integer compared with N."""
    try:
        bound = int(value)
    except ValueError:
        raise ApiFailure(400, f"unable to parse requirement: {text!r}: not an integer") from None

    def matches(labels: dict[str, str]) -> bool:
        try:
            actual = int(labels[key])
        except (KeyError, ValueError):
            return False
        return actual > bound if op == ">" else actual < bound

    return matches


def parse_label_selector(selector: str | None) -> Predicate | None:
    """Compile a label selector to a predicate on objects; ``None`` when the selector is empty."""
    if not selector:
        return None
    reqs = [label_requirement(part) for part in split_selector(selector)]

    def matches(obj: JSON) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(req(labels) for req in reqs)

    return matches


def field_value(obj: JSON, dotted: str) -> str:
    """Field selector lookup by dotted path; missing fields read as "" (as for ``spec.nodeName``)."""
    cur: Any = obj
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return ""
        cur = cur[part]
    if isinstance(cur, bool):
        return "true" if cur else "false"
    if cur is None:
        return ""
    return str(cur)


def field_requirement(text: str, allowed: frozenset[str] | None = None) -> Predicate:
    """One field requirement: ``path=value``, ``path==value`` or ``path!=value``.

    ``allowed``: the field paths the resource supports (a real apiserver answers 400 for others).
    """
    for op in ("!=", "==", "="):
        if op in text:
            label, value = (s.strip() for s in text.split(op, 1))
            if not label:
                break
            if allowed is not None and label not in allowed:
                raise ApiFailure(400, f'field label not supported: "{label}"')
            path = FIELD_ALIASES.get(label, label)
            if op == "!=":
                return lambda obj: field_value(obj, path) != value
            return lambda obj: field_value(obj, path) == value
    raise ApiFailure(400, f"invalid field selector: {text!r}")


def parse_field_selector(selector: str | None, allowed: frozenset[str] | None = None) -> Predicate | None:
    if not selector:
        return None
    reqs = [field_requirement(part, allowed) for part in split_selector(selector)]
    return lambda obj: all(req(obj) for req in reqs)


# --------------------------------------------------------------------------------------------------
# Patches
# --------------------------------------------------------------------------------------------------


class PatchFailed(Exception):
    """A well-formed patch that cannot be applied (422)."""


def clone(value: T) -> T:
    """Deep copy of a JSON value (3x faster than copy.deepcopy; tuples become lists)."""
    return _clone(value)  # type: ignore[no-any-return]


def _clone(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        return {k: _clone(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [_clone(v) for v in value]
    if kind is str or kind is int or kind is bool or kind is float or value is None:
        return value
    if isinstance(value, dict):  # e.g. lightkube generic resources
        return {k: _clone(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clone(v) for v in value]
    return value


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch.  Returns a new value; unchanged subtrees are shared with ``target``."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _is_named_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(item, dict) and "name" in item for item in value)


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """A strategic-merge subset: merge patch, except lists of objects with ``name`` merge by name.

    Supports ``$patch: replace`` on a map and ``$patch: delete`` on a named list item; other ``$``
    directives (``$setElementOrder/...``, ``$retainKeys``) are ignored.
    """
    if not isinstance(patch, dict):
        return patch
    if patch.get("$patch") == "replace":
        return {k: v for k, v in patch.items() if k != "$patch"}
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$"):
            continue
        if value is None or (isinstance(value, dict) and value.get("$patch") == "delete"):
            result.pop(key, None)
        elif _is_named_list(value) and isinstance(result.get(key), list):
            result[key] = merge_named_list(result[key], value)
        elif isinstance(value, list):
            result[key] = [_strip_directives(item) for item in value]
        else:
            result[key] = strategic_merge_patch(result.get(key), value)
    return result


def _strip_directives(value: Any) -> Any:
    if isinstance(value, dict):
        return strategic_merge_patch(None, value)
    return value


def merge_named_list(current: list[Any], patch: list[JSON]) -> list[Any]:
    """Merge ``patch`` items into ``current`` by their ``name`` (containers, env, volumes...)."""
    out: list[Any] = list(current)
    index = {item["name"]: i for i, item in enumerate(out) if isinstance(item, dict) and "name" in item}
    deleted: set[int] = set()
    for item in patch:
        pos = index.get(item["name"])
        if item.get("$patch") == "delete":
            if pos is not None:
                deleted.add(pos)
        elif pos is not None:
            out[pos] = strategic_merge_patch(out[pos], item)
        else:
            index[item["name"]] = len(out)
            out.append(strategic_merge_patch(None, item))
    return [item for i, item in enumerate(out) if i not in deleted]


def json_pointer(pointer: str) -> list[str]:
    """RFC 6901 pointer to reference tokens."""
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise ApiFailure(400, f"invalid JSON pointer {pointer!r}")
    return [tok.replace("~1", "/").replace("~0", "~") for tok in pointer[1:].split("/")]


def _list_index(token: str, length: int, *, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return length
    if not token.isdigit() or (len(token) > 1 and token.startswith("0")):
        raise PatchFailed(f"invalid array index {token!r}")
    index = int(token)
    if index > length or (index == length and not allow_end):
        raise PatchFailed(f"array index {index} out of bounds")
    return index


def pointer_get(doc: Any, tokens: list[str]) -> Any:
    cur = doc
    for i, tok in enumerate(tokens):
        if isinstance(cur, dict):
            if tok not in cur:
                raise PatchFailed(f"path /{'/'.join(tokens[: i + 1])} does not exist")
            cur = cur[tok]
        elif isinstance(cur, list):
            cur = cur[_list_index(tok, len(cur), allow_end=False)]
        else:
            raise PatchFailed(f"path /{'/'.join(tokens[: i + 1])} does not exist")
    return cur


def pointer_add(doc: Any, tokens: list[str], value: Any) -> Any:
    if not tokens:
        return value
    parent, last = pointer_get(doc, tokens[:-1]), tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_list_index(last, len(parent), allow_end=True), value)
    else:
        raise PatchFailed(f"cannot add to a scalar at /{'/'.join(tokens)}")
    return doc


def pointer_remove(doc: Any, tokens: list[str]) -> Any:
    """Remove and return the value at ``tokens`` (which must exist)."""
    if not tokens:
        raise PatchFailed("cannot remove the whole document")
    parent, last = pointer_get(doc, tokens[:-1]), tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchFailed(f"path /{'/'.join(tokens)} does not exist")
        return parent.pop(last)
    if isinstance(parent, list):
        return parent.pop(_list_index(last, len(parent), allow_end=False))
    raise PatchFailed(f"path /{'/'.join(tokens)} does not exist")


def pointer_replace(doc: Any, tokens: list[str], value: Any) -> Any:
    if not tokens:
        return value
    parent, last = pointer_get(doc, tokens[:-1]), tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchFailed(f"path /{'/'.join(tokens)} does not exist")
        parent[last] = value
    elif isinstance(parent, list):
        parent[_list_index(last, len(parent), allow_end=False)] = value
    else:
        raise PatchFailed(f"path /{'/'.join(tokens)} does not exist")
    return doc


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality (``true`` is not ``1``)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def json_patch(doc: Any, ops: Any) -> Any:
    """RFC 6902 JSON patch applied in place to ``doc`` (pass a copy); returns the new document."""
    if not isinstance(ops, list):
        raise ApiFailure(400, "a JSON patch must be a list of operations")
    for op in ops:
        if not isinstance(op, dict) or not isinstance(op.get("path"), str):
            raise ApiFailure(400, f"invalid JSON patch operation: {op!r}")
        doc = json_patch_op(doc, op)
    return doc


def json_patch_op(doc: Any, op: JSON) -> Any:
    name, path = op.get("op"), json_pointer(op["path"])
    if name in ("add", "replace", "test") and "value" not in op:
        raise ApiFailure(400, f"JSON patch {name} operation needs a value")
    if name == "add":
        return pointer_add(doc, path, op["value"])
    if name == "remove":
        pointer_remove(doc, path)
        return doc
    if name == "replace":
        return pointer_replace(doc, path, op["value"])
    if name == "test":
        if not json_equal(pointer_get(doc, path), op["value"]):
            raise PatchFailed(f"testing value {op['path']} failed")
        return doc
    if name in ("move", "copy"):
        if not isinstance(op.get("from"), str):
            raise ApiFailure(400, f"JSON patch {name} operation needs 'from'")
        source = json_pointer(op["from"])
        if name == "copy":
            return pointer_add(doc, path, clone(pointer_get(doc, source)))
        if source == path:
            return doc
        if path[: len(source)] == source:
            raise PatchFailed(f"cannot move {op['from']} into its own child {op['path']}")
        return pointer_add(doc, path, pointer_remove(doc, source))
    raise ApiFailure(400, f"unknown JSON patch operation {name!r}")


PATCH_TYPES = {
    "application/json-patch+json": "json",
    "application/merge-patch+json": "merge",
    "application/strategic-merge-patch+json": "strategic",
    "application/apply-patch+yaml": "apply",
}


def apply_patch(current: JSON, patch_type: str, patch: Any) -> Any:
    """Apply a ``json``/``merge``/``strategic`` patch to a stored object without mutating it."""
    if patch_type == "json":
        try:
            return json_patch(clone(current), patch)
        except PatchFailed as exc:
            raise ApiFailure(422, f"the server rejected our request due to an error in our request: {exc}") from None
    if patch_type == "merge":
        return merge_patch(current, patch)
    if patch_type == "strategic":
        if not isinstance(patch, dict):
            raise ApiFailure(400, "a strategic merge patch must be a JSON object")
        return strategic_merge_patch(current, patch)
    raise ApiFailure(415, f"the patch type {patch_type!r} is not supported by the fake")


# --------------------------------------------------------------------------------------------------
# Paths and continue tokens
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """A resolved resource path."""

    rtype: ResourceType
    namespace: str | None  # None: cluster-scoped, or a list across all namespaces
    name: str | None
    subresource: str | None


def encode_continue(rv: str, last: ObjKey) -> str:
    raw = json.dumps({"rv": rv, "start": list(last)}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode()


def decode_continue(token: str) -> ObjKey:
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()))
        ns, name = data["start"]
        return (str(ns), str(name))
    except (ValueError, KeyError, TypeError, binascii.Error):
        raise ApiFailure(400, "continue key is not valid: invalid continue token") from None


def now_rfc3339() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class RequestRecord(NamedTuple):
    """One request the server received: method, path without the query, and the query (last values)."""

    method: str
    path: str
    query: dict[str, str]


def is_lock(record: RequestRecord) -> bool:
    """A request for the Lease an apply holds as its plan's lock (not one of the plan's own changes)."""
    return record.path.startswith("/apis/coordination.k8s.io/")


# The status of a fault that answers with a cut-off body instead of an error (inject_truncated).
TRUNCATED = -200


class Response(NamedTuple):
    status: int
    body: bytes
    headers: dict[str, str]
    reset: str | None = None  # how the HTTP handler drops the connection instead (RESET_MODES)


# --------------------------------------------------------------------------------------------------
# The server
# --------------------------------------------------------------------------------------------------


# Aliases so annotations inside FakeKubeServer (which defines a ``list`` method) mean the builtin.
Objects = list[JSON]
Keys = list[ObjKey]
Records = list[RequestRecord]


class FakeKubeServer(LoopbackServer):
    """Fake Kubernetes API server.  Use as a context manager, or call ``start()``/``stop()``."""

    label = "fake Kubernetes API server"
    thread_name = "fake-kube"
    server_version = "cidrx-fake-kube/1"
    content_type = "application/json"  # exactly this, or lightkube won't raise ApiError

    def __init__(self, *, crds: bool | Collection[str] = True, host: str = "127.0.0.1") -> None:
        """``crds``: True registers every default CRD group, False none, or a collection of group names."""
        super().__init__(host=host)
        self._rv = 0
        self._types: dict[TypeKey, ResourceType] = {}
        self._by_kind: dict[tuple[str, str], ResourceType] = {}  # (apiVersion, kind)
        self._store: dict[TypeKey, dict[ObjKey, JSON]] = {}
        self._sorted: dict[TypeKey, list[ObjKey]] = {}
        self.request_log: Records = []
        self.on_request: Callable[[RequestRecord], None] | None = None
        self.errors: list[Exception] = []  # unexpected exceptions while serving (fake or hook bugs)
        self.evicted: list[ObjKey] = []  # (namespace, name) of each pod the eviction subresource deleted
        # Schemas every write of a custom resource is checked against (see tests/support/fakes/crd_schemas).
        self.write_schemas: dict[TypeKey, Schema] = dict(crd_schemas.SCHEMAS)
        for rtype in BUILTIN_TYPES:
            self.register_type(rtype)
        wanted = CRD_GROUPS if crds is True else frozenset() if crds is False else frozenset(crds)
        for rtype in CRD_TYPES:
            if rtype.group in wanted:
                self.register_type(rtype)
        for rtype in OPTIONAL_CRD_TYPES:
            if crds is not True and rtype.group in wanted:
                self.register_type(rtype)

    def answer(self, method: str, path: str, content_type: str, body: bytes) -> Response:
        return self.handle(method, path, content_type, body)

    @property
    def resource_version(self) -> str:
        """The latest resourceVersion handed out."""
        with self._lock:
            return str(self._rv)

    def kubeconfig_dict(self, *, context: str = "fake", namespace: str | None = None) -> JSON:
        ctx: JSON = {"cluster": "fake", "user": "fake"}
        if namespace:
            ctx["namespace"] = namespace
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "contexts": [{"name": context, "context": ctx}],
            "users": [{"name": "fake", "user": {"token": FAKE_TOKEN}}],
            "current-context": context,
            "preferences": {},
        }

    def kubeconfig(self, path: str | Path, *, context: str = "fake", namespace: str | None = None) -> Path:
        """Write a kubeconfig (YAML) pointing at this server; returns the path."""
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(yaml.safe_dump(self.kubeconfig_dict(context=context, namespace=namespace)))
        return out

    # ---- registry -------------------------------------------------------------------------------

    def register(
        self,
        group: str,
        version: str,
        plural: str,
        kind: str,
        namespaced: bool,
        *,
        singular: str = "",
        verbs: Iterable[str] = DEFAULT_VERBS,
        crd: bool | None = None,
        selectable_fields: Iterable[str] = (),
        status_subresource: bool = False,
    ) -> ResourceType:
        """Register a resource type.

        ``crd`` (default: True outside the built-in groups) also stores its CustomResourceDefinition.
        ``selectable_fields``: field-selector paths accepted besides metadata.name/metadata.namespace.
        ``status_subresource``: serve ``/status`` and protect ``.status`` from main-resource writes.
        """
        custom = crd if crd is not None else (group not in {t.group for t in BUILTIN_TYPES})
        rtype = ResourceType(
            group,
            version,
            plural,
            kind,
            namespaced,
            singular=singular,
            verbs=tuple(verbs),
            custom=custom,
            selectable_fields=tuple(selectable_fields),
            status_subresource=status_subresource,
        )
        return self.register_type(rtype)

    def register_type(self, rtype: ResourceType) -> ResourceType:
        with self._lock:
            self._types[rtype.key] = rtype
            self._by_kind[(rtype.api_version, rtype.kind)] = rtype
            self._store.setdefault(rtype.key, {})
            if rtype.custom:
                self.put(crd_object(rtype))
        return rtype

    def unregister(self, group: str, version: str, plural: str) -> None:
        """Forget a resource type, its objects and its CRD (simulates an uninstalled CRD)."""
        with self._lock:
            rtype = self._types.pop((group, version, plural), None)
            if rtype is not None:
                self._by_kind.pop((rtype.api_version, rtype.kind), None)
            self._store.pop((group, version, plural), None)
            self._sorted.pop((group, version, plural), None)
            if rtype is not None and rtype.custom:
                self.delete("apiextensions.k8s.io", "v1", "customresourcedefinitions", f"{plural}.{group}")

    def resource_types(self) -> tuple[ResourceType, ...]:
        with self._lock:
            return tuple(self._types.values())

    def _type(self, group: str, version: str, plural: str) -> ResourceType:
        rtype = self._types.get((group, version, plural))
        if rtype is None:
            raise KeyError(f"resource type {group}/{version} {plural} is not registered")
        return rtype

    # ---- test hooks: store ----------------------------------------------------------------------

    def put(self, obj: JSON, *, copy: bool = True) -> JSON:
        """Seed (create or overwrite) an object directly, filling metadata; returns a copy of it.

        The type comes from ``apiVersion``/``kind``; namespaced objects default to namespace "default".
        Given uid/creationTimestamp/generation are kept.  ``copy=False`` hands ``obj`` over to the store
        and returns it (faster seeding of very large clusters; do not mutate it afterwards).
        """
        new = clone(obj) if copy else obj
        with self._lock:
            self._put_locked(new)
        return clone(new) if copy else new

    def put_many(self, objs: Iterable[JSON], *, copy: bool = True) -> int:
        """Seed many objects under one lock without returning copies; returns how many were stored."""
        n = 0
        with self._lock:
            for obj in objs:
                self._put_locked(clone(obj) if copy else obj)
                n += 1
        return n

    def _put_locked(self, new: JSON) -> None:
        rtype = self._by_kind.get((new.get("apiVersion", ""), new.get("kind", "")))
        if rtype is None:
            raise KeyError(f"no resource type registered for {new.get('apiVersion')} {new.get('kind')}")
        meta = new.setdefault("metadata", {})
        if rtype.namespaced:
            meta.setdefault("namespace", "default")
        else:
            meta.pop("namespace", None)
        key = (meta.get("namespace", ""), meta["name"])
        old = self._store[rtype.key].get(key)
        if old is None:
            self._fill_new(rtype, new, keep_given=True)
        else:
            self._fill_update(rtype, old, new, keep_given=True)
        self._save(rtype, key, new)

    def get(self, group: str, version: str, plural: str, name: str, namespace: str | None = None) -> JSON | None:
        """A copy of a stored object, or None."""
        with self._lock:
            obj = self._store[self._type(group, version, plural).key].get((namespace or "", name))
        return None if obj is None else clone(obj)

    def list(
        self,
        group: str,
        version: str,
        plural: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> Objects:
        """Copies of stored objects ordered by (namespace, name)."""
        labels, fields = parse_label_selector(label_selector), parse_field_selector(field_selector)
        with self._lock:
            rtype = self._type(group, version, plural)
            bucket = self._store[rtype.key]
            objs = [bucket[k] for k in self._keys(rtype) if namespace is None or k[0] == namespace]
        return [clone(o) for o in objs if _selected(o, labels, fields)]

    def delete(self, group: str, version: str, plural: str, name: str, namespace: str | None = None) -> bool:
        """Remove an object directly; True when it existed."""
        with self._lock:
            rtype = self._type(group, version, plural)
            return self._remove(rtype, (namespace or "", name)) is not None

    def patch(
        self,
        group: str,
        version: str,
        plural: str,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: str = "merge",
    ) -> JSON:
        """Patch an object directly (``merge``/``json``/``strategic``), bumping its resourceVersion.

        Handy in an ``on_request`` callback to play a concurrent writer.
        """
        with self._lock:
            rtype = self._type(group, version, plural)
            key = (namespace or "", name)
            old = self._store[rtype.key].get(key)
            if old is None:
                raise KeyError(f"{plural} {key} not found")
            new: JSON = clone(apply_patch(old, patch_type, patch))
            self._fill_update(rtype, old, new, keep_given=False)
            self._save(rtype, key, new)
            return clone(new)

    def objects_of(self, kind: str, *, group: str | None = None) -> Objects:
        """Copies of every stored object of ``kind`` (optionally only in ``group``)."""
        with self._lock:
            objs = [
                self._store[rtype.key][k]
                for rtype in self._types.values()
                if rtype.kind == kind and (group is None or rtype.group == group)
                for k in self._keys(rtype)
            ]
        return [clone(o) for o in objs]

    # ---- test hooks: requests and faults --------------------------------------------------------

    def reset_log(self) -> None:
        with self._lock:
            self.request_log.clear()

    def count(self, method: str | None = None, plural: str | None = None, *, path_contains: str = "") -> int:
        """How many logged requests match the method, the resource plural and a path substring."""
        with self._lock:
            records = list(self.request_log)
        return sum(
            1
            for rec in records
            if (method is None or rec.method == method.upper())
            and (plural is None or self.plural_of(rec.path) == plural)
            and path_contains in rec.path
        )

    def requests(self, method: str | None = None, plural: str | None = None) -> Records:
        with self._lock:
            records = list(self.request_log)
        return [
            rec
            for rec in records
            if (method is None or rec.method == method.upper())
            and (plural is None or self.plural_of(rec.path) == plural)
        ]

    def plural_of(self, path: str) -> str | None:
        """The resource plural a request path addresses, or None (discovery, unknown)."""
        try:
            target = self._resolve(path)
        except ApiFailure:
            return None
        return target.rtype.plural if target is not None else None

    def inject_truncated(
        self, *, method: str | None = None, path_contains: str | None = None, times: int | None = 1
    ) -> Fault:
        """Make the next ``times`` matching requests succeed (the write happens) but answer with only the first
        half of the body, as a connection cut after the headers leaves it."""
        return self._add_fault(Fault(TRUNCATED, method, path_contains, times))

    def inject(
        self,
        status: int,
        *,
        method: str | None = None,
        path_contains: str | None = None,
        times: int | None = 1,
        retry_after: int | None = None,
        reason: str | None = None,
        message: str | None = None,
    ) -> Fault:
        """Make the next ``times`` matching requests (None: all until ``clear_faults``) fail with ``status``.

        The response is a ``kind: Status`` body; ``retry_after`` adds a ``Retry-After`` header and
        ``details.retryAfterSeconds``.
        """
        return self._add_fault(Fault(status, method, path_contains, times, retry_after, reason, message))

    # ---- storage internals (call with the lock held) --------------------------------------------

    def _next_rv(self) -> str:
        self._rv += 1
        return str(self._rv)

    def _keys(self, rtype: ResourceType) -> Keys:
        keys = self._sorted.get(rtype.key)
        if keys is None:
            keys = sorted(self._store[rtype.key])
            self._sorted[rtype.key] = keys
        return keys

    def _save(self, rtype: ResourceType, key: ObjKey, obj: JSON) -> None:
        bucket = self._store[rtype.key]
        if key not in bucket:
            self._sorted.pop(rtype.key, None)
        bucket[key] = obj

    def _remove(self, rtype: ResourceType, key: ObjKey) -> JSON | None:
        obj = self._store[rtype.key].pop(key, None)
        if obj is not None:
            self._sorted.pop(rtype.key, None)
            self._rv += 1  # a delete is a write too
        return obj

    def _fill_new(self, rtype: ResourceType, obj: JSON, *, keep_given: bool) -> None:
        obj["apiVersion"], obj["kind"] = rtype.api_version, rtype.kind
        meta = obj["metadata"]
        meta["uid"] = meta.get("uid") if keep_given and meta.get("uid") else str(uuid.uuid4())
        meta.setdefault("creationTimestamp", now_rfc3339())
        if not (keep_given and meta.get("generation")):
            meta["generation"] = 1
        meta["resourceVersion"] = self._next_rv()

    def _fill_update(self, rtype: ResourceType, old: JSON, new: JSON, *, keep_given: bool) -> None:
        new["apiVersion"], new["kind"] = rtype.api_version, rtype.kind
        old_meta, meta = old["metadata"], new.setdefault("metadata", {})
        for key in ("name", "namespace", "uid", "creationTimestamp"):
            if key in old_meta and not (keep_given and meta.get(key)):
                meta[key] = old_meta[key]
        generation = int(old_meta.get("generation", 1))
        if _spec_changed(old, new):
            generation += 1
        if not (keep_given and meta.get("generation")):
            meta["generation"] = generation
        meta["resourceVersion"] = self._next_rv()

    # ---- HTTP-independent request handling ------------------------------------------------------

    def handle(self, method: str, raw_path: str, content_type: str, body: bytes) -> Response:
        """Serve one request; the HTTP handler only moves bytes."""
        split = urlsplit(raw_path)
        path = split.path.rstrip("/") or "/"
        query = {k: v[-1] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
        record = RequestRecord(method, path, query)
        with self._lock:
            self.request_log.append(record)
        try:
            if self.on_request is not None:
                self.on_request(record)
            fault = self._take_fault(method, path)
            if fault is not None and fault.reset in ("close", "rst"):
                return Response(0, b"", {}, fault.reset)
            if fault is not None and fault.status == TRUNCATED:
                status, payload = self._route(method, path, query, content_type, body)
                whole = _encode(payload)
                return Response(status, whole[: len(whole) // 2], {})  # the real answer, cut off halfway
            if fault is not None and fault.reset is None:
                raise ApiFailure(
                    fault.status,
                    fault.message or f"injected {fault.status} for {method} {path}",
                    reason=fault.reason,
                    retry_after=fault.retry_after,
                )
            status, payload = self._route(method, path, query, content_type, body)
            return Response(status, _encode(payload), {}, fault.reset if fault is not None else None)
        except ApiFailure as exc:
            headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after is not None else {}
            return Response(exc.code, _encode(exc.status()), headers)
        except Exception as exc:  # a bug in the fake or in a test hook: a 500 now, and kept in .errors
            with self._lock:
                self.errors.append(exc)
            return Response(500, _encode(ApiFailure(500, f"fake server error: {exc!r}").status()), {})

    def _route(self, method: str, path: str, query: dict[str, str], ctype: str, body: bytes) -> tuple[int, Any]:
        discovery = self._discovery(path)
        if discovery is not None:
            if method != "GET":
                raise ApiFailure(405, f"{method} is not allowed on {path}")
            return 200, discovery
        target = self._resolve(path)
        if target is None:
            raise ApiFailure(404, "the server could not find the requested resource")
        if query.get("watch") in ("true", "1"):
            raise ApiFailure(405, "watch is not supported by the fake Kubernetes API server")
        dry_run = bool(query.get("dryRun"))
        if target.subresource == "eviction":
            if method != "POST":
                raise ApiFailure(405, f"{method} is not allowed on the eviction subresource")
            return 201, self._evict(target, _parse_body(body), dry_run)
        if method == "GET" and target.rtype.plural == "poddisruptionbudgets" and target.rtype.group == "policy":
            return 200, self._with_budget_status(
                self._get(target) if target.name else self._list_response(target, query)
            )
        if target.name is None:
            if method == "GET":
                return 200, self._list_response(target, query)
            if method == "POST":
                return 201, self._create(target, _parse_body(body), dry_run)
            if method == "DELETE":
                return 200, self._delete_collection(target, query, dry_run)
            raise ApiFailure(405, f"{method} is not allowed on a collection")
        if method == "GET":
            return 200, self._get(target)
        if method == "PUT":
            return 200, self._replace(target, _parse_body(body), dry_run)
        if method == "PATCH":
            patch_type = PATCH_TYPES.get(ctype.split(";")[0].strip().lower())
            if patch_type is None:
                raise ApiFailure(415, f"the body of the request was in an unknown format: {ctype}")
            return 200, self._patch(target, patch_type, _parse_body(body, allow_list=True), dry_run)
        if method == "DELETE":
            return 200, self._delete(target, _parse_body(body) if body.strip() else {}, dry_run)
        raise ApiFailure(405, f"{method} is not allowed on an object")

    def _resolve(self, path: str) -> Target | None:
        """Map a resource path to a Target; None when the path is not a resource path."""
        parts = [unquote(p) for p in path.strip("/").split("/")]
        if len(parts) >= 2 and parts[0] == "api":
            group, version, rest = "", parts[1], parts[2:]
        elif len(parts) >= 3 and parts[0] == "apis":
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            return None
        if not rest:
            return None
        with self._lock:
            types = {t.plural: t for t in self._types.values() if t.group == group and t.version == version}
        namespace: str | None = None
        if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] in types and types[rest[2]].namespaced:
            namespace, rest = rest[1], rest[2:]
        rtype = types.get(rest[0])
        if rtype is None or len(rest) > 3:
            raise ApiFailure(404, "the server could not find the requested resource")
        name = rest[1] if len(rest) >= 2 else None
        sub = rest[2] if len(rest) == 3 else None
        if sub == "eviction" and rtype.key == ("", "v1", "pods") and name is not None:
            pass
        elif sub is not None and (sub != "status" or not rtype.status_subresource):
            raise ApiFailure(404, f"the fake does not serve the {sub!r} subresource")
        if name is not None and rtype.namespaced != (namespace is not None):
            raise ApiFailure(404, "the server could not find the requested resource")
        return Target(rtype, namespace, name, sub)

    # ---- verbs ----------------------------------------------------------------------------------

    def _get(self, target: Target) -> JSON:
        assert target.name is not None
        with self._lock:
            obj = self._store[target.rtype.key].get((target.namespace or "", target.name))
        if obj is None:
            raise not_found(target.rtype, target.name)
        return obj

    def _list_response(self, target: Target, query: dict[str, str]) -> JSON:
        rtype = target.rtype
        labels = parse_label_selector(query.get("labelSelector"))
        fields = parse_field_selector(query.get("fieldSelector"), rtype.field_selectors)
        try:
            limit = int(query.get("limit") or 0)
        except ValueError:
            raise ApiFailure(400, f"invalid limit {query.get('limit')!r}") from None
        after = decode_continue(query["continue"]) if query.get("continue") else None
        with self._lock:
            rv = str(self._rv)
            items, last, more, remaining = page(
                self._keys(rtype), self._store[rtype.key], target.namespace, after, limit, labels, fields
            )
        meta: JSON = {"resourceVersion": rv}
        if more and last is not None:
            meta["continue"] = encode_continue(rv, last)
            if labels is None and fields is None:
                meta["remainingItemCount"] = remaining
        return {"kind": f"{rtype.kind}List", "apiVersion": rtype.api_version, "metadata": meta, "items": items}

    def _create(self, target: Target, obj: JSON, dry_run: bool) -> JSON:
        rtype = target.rtype
        if target.subresource is not None:
            raise ApiFailure(405, "create is not allowed on a subresource")
        if rtype.namespaced and target.namespace is None:
            raise ApiFailure(405, f"create {rtype.plural} needs a namespaced path")
        _check_kind(rtype, obj)
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise ApiFailure(400, "metadata must be an object")
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = f"{meta['generateName']}{secrets.token_hex(3)[:5]}"
        _validate_name(rtype, meta.get("name"))
        if rtype.namespaced:
            if meta.get("namespace") not in (None, "", target.namespace):
                raise ApiFailure(
                    400, "the namespace of the provided object does not match the namespace sent on the request"
                )
            meta["namespace"] = target.namespace
        else:
            meta.pop("namespace", None)
        if meta.get("resourceVersion"):  # a real apiserver rejects this too
            raise ApiFailure(400, "resourceVersion should not be set on objects to be created")
        meta.pop("uid", None)
        meta.pop("generation", None)
        key = (target.namespace or "", meta["name"])
        with self._lock:
            if key in self._store[rtype.key]:
                raise ApiFailure(
                    409,
                    f'{_gr(rtype)} "{key[1]}" already exists',
                    reason="AlreadyExists",
                    details=_details(rtype, key[1]),
                )
            self._fill_new(rtype, obj, keep_given=False)
            self._check_schema(rtype, obj)
            if not dry_run:
                self._save(rtype, key, obj)
        return obj

    def _check_schema(self, rtype: ResourceType, obj: JSON) -> None:
        """422 Invalid, as a real apiserver answers, when a write breaks the resource's upstream schema."""
        schema = self.write_schemas.get(rtype.key)
        if schema is None:
            return
        found = list(structural.problems(obj, schema))
        if found:
            name = (obj.get("metadata") or {}).get("name", "")
            raise ApiFailure(422, f'{rtype.kind}.{rtype.group} "{name}" is invalid: ' + "; ".join(found[:5]))

    def _replace(self, target: Target, obj: JSON, dry_run: bool) -> JSON:
        rtype, name = target.rtype, target.name
        assert name is not None
        _check_kind(rtype, obj)
        meta = obj.setdefault("metadata", {})
        if meta.get("name", name) != name:
            raise ApiFailure(
                400, f"the name of the object ({meta.get('name')}) does not match the name on the URL ({name})"
            )
        if rtype.namespaced and meta.get("namespace") not in (None, "", target.namespace):
            raise ApiFailure(
                400, "the namespace of the provided object does not match the namespace sent on the request"
            )
        key = (target.namespace or "", name)
        with self._lock:
            old = self._store[rtype.key].get(key)
            if old is None:
                raise not_found(rtype, name)
            given_rv = meta.get("resourceVersion")
            if given_rv and given_rv != old["metadata"].get("resourceVersion"):
                raise conflict(rtype, name, STALE)
            new = _merge_status(rtype, target, old, obj)
            self._fill_update(rtype, old, new, keep_given=False)
            self._check_schema(rtype, new)
            if not dry_run:
                self._save(rtype, key, new)
        return new

    def _patch(self, target: Target, patch_type: str, patch: Any, dry_run: bool) -> JSON:
        rtype, name = target.rtype, target.name
        assert name is not None
        if patch_type == "apply":
            raise ApiFailure(415, "server-side apply (application/apply-patch+yaml) is not supported by the fake")
        if patch_type == "strategic" and rtype.custom:  # as on a real apiserver
            raise ApiFailure(
                415,
                "the body of the request was in an unknown format - accepted media types include: "
                "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
            )
        key = (target.namespace or "", name)
        with self._lock:
            old = self._store[rtype.key].get(key)
            if old is None:
                raise not_found(rtype, name)
            patched = apply_patch(old, patch_type, patch)
            if not isinstance(patched, dict) or not isinstance(patched.get("metadata", {}), dict):
                raise ApiFailure(422, "the patched object is not a Kubernetes object")
            new: JSON = clone(patched)
            meta = new.setdefault("metadata", {})
            if meta.get("name", name) != name:
                raise ApiFailure(
                    400, f"the name of the object ({meta.get('name')}) does not match the name on the URL ({name})"
                )
            if meta.get("resourceVersion") and meta["resourceVersion"] != old["metadata"].get("resourceVersion"):
                raise conflict(rtype, name, STALE)
            new = _merge_status(rtype, target, old, new)
            self._fill_update(rtype, old, new, keep_given=False)
            self._check_schema(rtype, new)
            if not dry_run:
                self._save(rtype, key, new)
        return new

    def _pods_and_budgets(self, namespace: str) -> tuple[list[JSON], list[JSON]]:
        pods = [o for (ns, _), o in self._store[("", "v1", "pods")].items() if ns == namespace]
        pdbs = [
            o for (ns, _), o in self._store.get(("policy", "v1", "poddisruptionbudgets"), {}).items() if ns == namespace
        ]
        return pods, pdbs

    def _with_budget_status(self, payload: JSON) -> JSON:
        """A budget (or list of them) with the status the disruption controller would give it now."""
        with self._lock:
            items = payload.get("items", [payload])
            out = []
            for pdb in items:
                pods, _ = self._pods_and_budgets(pdb["metadata"].get("namespace", ""))
                out.append({**pdb, "status": disruption.budget_status(pdb, pods)})
        return {**payload, "items": out} if "items" in payload else out[0]

    def _evict(self, target: Target, body: JSON, dry_run: bool) -> JSON:
        """POST pods/{name}/eviction (policy/v1 Eviction): tests/support/fakes/disruption.py says how."""
        name, namespace = target.name, target.namespace or ""
        assert name is not None
        if body.get("kind") != "Eviction" or body.get("apiVersion") not in ("policy/v1", "policy/v1beta1"):
            raise ApiFailure(400, "the body of an eviction must be a policy/v1 Eviction")
        if (body.get("metadata") or {}).get("name") not in (None, name):
            raise ApiFailure(400, "the name in the Eviction does not match the pod's")
        key = (namespace, name)
        with self._lock:
            pod = self._store[target.rtype.key].get(key)
            if pod is None:
                raise not_found(target.rtype, name)
            pods, pdbs = self._pods_and_budgets(namespace)
            if (pod.get("status") or {}).get("phase") not in disruption.FINISHED:
                budgets = disruption.budgets_of(pod, pdbs)
                if len(budgets) > 1:
                    raise ApiFailure(
                        500, f"pod {name} is selected by more than one PodDisruptionBudget; eviction is refused"
                    )
                if budgets:
                    status = disruption.budget_status(budgets[0], pods)
                    if status["disruptionsAllowed"] < 1:
                        budget = budgets[0]["metadata"]["name"]
                        raise ApiFailure(
                            429,
                            f"evicting pod {name} would violate PodDisruptionBudget {budget}",
                            reason="TooManyRequests",
                            details={
                                "causes": [
                                    {
                                        "reason": "DisruptionBudget",
                                        "message": f"budget {budget} wants {status['desiredHealthy']} healthy pod(s), "
                                        f"{status['currentHealthy']} are",
                                    }
                                ]
                            },
                        )
            if not dry_run:
                self.evicted.append(key)
                self._remove(target.rtype, key)
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}

    def _delete(self, target: Target, options: JSON, dry_run: bool) -> JSON:
        rtype, name = target.rtype, target.name
        assert name is not None
        if target.subresource is not None:
            raise ApiFailure(405, "delete is not allowed on a subresource")
        key = (target.namespace or "", name)
        pre = options.get("preconditions") or {}
        with self._lock:
            old = self._store[rtype.key].get(key)
            if old is None:
                raise not_found(rtype, name)
            old_meta = old["metadata"]
            for field_name in ("resourceVersion", "uid"):
                want = pre.get(field_name)
                if want and want != old_meta.get(field_name):
                    raise conflict(
                        rtype,
                        name,
                        f"Precondition failed: {field_name[0].upper()}{field_name[1:]} in precondition: {want}, "
                        f"{field_name[0].upper()}{field_name[1:]} in object meta: {old_meta.get(field_name)}",
                    )
            if not dry_run:
                self._remove(rtype, key)
        details = _details(rtype, name) | {"uid": old_meta.get("uid")}
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}

    def _delete_collection(self, target: Target, query: dict[str, str], dry_run: bool) -> JSON:
        rtype = target.rtype
        labels = parse_label_selector(query.get("labelSelector"))
        fields = parse_field_selector(query.get("fieldSelector"), rtype.field_selectors)
        with self._lock:
            bucket = self._store[rtype.key]
            keys = [
                k
                for k in self._keys(rtype)
                if (target.namespace is None or k[0] == target.namespace) and _selected(bucket[k], labels, fields)
            ]
            items = [bucket[k] for k in keys]
            if not dry_run:
                for k in keys:
                    self._remove(rtype, k)
            rv = str(self._rv)
        return {
            "kind": f"{rtype.kind}List",
            "apiVersion": rtype.api_version,
            "metadata": {"resourceVersion": rv},
            "items": items,
        }

    # ---- discovery ------------------------------------------------------------------------------

    def _discovery(self, path: str) -> JSON | None:
        parts = [p for p in path.split("/") if p]
        with self._lock:
            types = list(self._types.values())
        if parts == ["version"]:
            return {
                "major": "1",
                "minor": "30",
                "gitVersion": "v1.30.0-cidrx-fake",
                "gitCommit": "0" * 40,
                "gitTreeState": "clean",
                "buildDate": "2024-01-01T00:00:00Z",
                "goVersion": "go1.22.0",
                "compiler": "gc",
                "platform": "linux/amd64",
            }
        if parts == ["api"]:
            return {
                "kind": "APIVersions",
                "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": self._host}],
            }
        if parts == ["api", "v1"]:
            return resource_list("v1", [t for t in types if t.group == ""])
        if parts and parts[0] == "openapi":
            raise ApiFailure(404, "the fake does not serve OpenAPI documents")
        if parts == ["apis"]:
            return {"kind": "APIGroupList", "apiVersion": "v1", "groups": api_groups(types)}
        if len(parts) == 2 and parts[0] == "apis":
            for group in api_groups(types):
                if group["name"] == parts[1]:
                    return {"kind": "APIGroup", "apiVersion": "v1", **group}
            raise ApiFailure(404, "the server could not find the requested resource")
        if len(parts) == 3 and parts[0] == "apis":
            listed = [t for t in types if t.group == parts[1] and t.version == parts[2]]
            if not listed:
                raise ApiFailure(404, "the server could not find the requested resource")
            return resource_list(f"{parts[1]}/{parts[2]}", listed)
        return None


def page(
    keys: list[ObjKey],
    bucket: dict[ObjKey, JSON],
    namespace: str | None,
    after: ObjKey | None,
    limit: int,
    labels: Predicate | None,
    fields: Predicate | None,
) -> tuple[list[JSON], ObjKey | None, bool, int]:
    """One list page: (items, last key examined, more keys left, count of keys left)."""
    start = bisect.bisect_left(keys, (namespace, "")) if namespace is not None else 0
    if after is not None:
        start = max(start, bisect.bisect_right(keys, after))
    end = bisect.bisect_left(keys, (namespace + "\x00", "")) if namespace is not None else len(keys)
    items: list[JSON] = []
    last: ObjKey | None = None
    i = start
    while i < end:
        key = keys[i]
        i += 1
        obj = bucket[key]
        if _selected(obj, labels, fields):
            items.append(obj)
            last = key
            if limit and len(items) >= limit:
                break
    if limit and i < end:
        last = keys[i - 1]
        return items, last, True, end - i
    return items, last, False, 0


def _selected(obj: JSON, labels: Predicate | None, fields: Predicate | None) -> bool:
    return (labels is None or labels(obj)) and (fields is None or fields(obj))


def _spec_changed(old: JSON, new: JSON) -> bool:
    """Generation moves when anything but metadata/status changes (what CRDs do; spec for built-ins)."""
    ignored = {"metadata", "status", "apiVersion", "kind"}
    keys = (set(old) | set(new)) - ignored
    return any(old.get(k) != new.get(k) for k in keys)


def _merge_status(rtype: ResourceType, target: Target, old: JSON, new: JSON) -> JSON:
    """Split a write between the main resource and its ``/status`` subresource.

    ``/status`` writes keep everything stored but ``.status``; main-resource writes keep the stored
    ``.status`` when the type has a status subresource.  ``new`` is a fresh dict and may be reused.
    """
    if target.subresource == "status":
        out: JSON = clone(old)
        _set_or_drop(out, "status", new)
        return out
    if rtype.status_subresource:
        _set_or_drop(new, "status", old)
    return new


def _set_or_drop(out: JSON, key: str, source: JSON) -> None:
    if key in source:
        out[key] = clone(source[key])
    else:
        out.pop(key, None)


def _check_kind(rtype: ResourceType, obj: JSON) -> None:
    if obj.get("kind") not in (None, "", rtype.kind):
        raise ApiFailure(400, f"the kind {obj.get('kind')!r} does not match the resource {rtype.plural}")
    if obj.get("apiVersion") not in (None, "", rtype.api_version):
        raise ApiFailure(400, f"the apiVersion {obj.get('apiVersion')!r} does not match {rtype.api_version}")


def _validate_name(rtype: ResourceType, name: Any) -> None:
    if not isinstance(name, str) or not name:
        raise ApiFailure(422, f"{rtype.kind} is invalid: metadata.name: Required value: name is required")
    if len(name) > 253 or not _NAME_RE.match(name):
        raise ApiFailure(
            422,
            f'{rtype.kind} "{name}" is invalid: metadata.name: Invalid value: "{name}": '
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'",
            details=_details(rtype, name),
        )


def _parse_body(body: bytes, *, allow_list: bool = False) -> Any:
    try:
        data = json.loads(body or b"null")
    except ValueError as exc:
        raise ApiFailure(400, f"the request body is not JSON: {exc}") from None
    if isinstance(data, dict) or (allow_list and isinstance(data, list)):
        return data
    raise ApiFailure(400, "the request body must be a JSON object")


def _encode(payload: Any) -> bytes:
    return json.dumps(payload, separators=(",", ":")).encode()


def resource_list(group_version: str, types: Iterable[ResourceType]) -> JSON:
    resources: list[JSON] = []
    for t in types:
        entry: JSON = {
            "name": t.plural,
            "singularName": t.singular_name,
            "namespaced": t.namespaced,
            "kind": t.kind,
            "verbs": list(t.verbs),
        }
        if t.short_names:
            entry["shortNames"] = list(t.short_names)
        resources.append(entry)
        if not t.status_subresource:
            continue
        resources.append(
            {
                "name": f"{t.plural}/status",
                "singularName": "",
                "namespaced": t.namespaced,
                "kind": t.kind,
                "verbs": list(STATUS_VERBS),
            }
        )
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}


def api_groups(types: Iterable[ResourceType]) -> list[JSON]:
    """APIGroup entries for the registered non-core groups, in registration order."""
    versions: dict[str, list[str]] = {}
    for t in types:
        if t.group and t.version not in versions.setdefault(t.group, []):
            versions[t.group].append(t.version)
    groups: list[JSON] = []
    for name, vers in versions.items():
        entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in vers]
        groups.append({"name": name, "versions": entries, "preferredVersion": entries[0]})
    return groups
