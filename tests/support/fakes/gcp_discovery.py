"""Check HTTP requests and responses against Google's own discovery documents (compute v1, container v1).

Why: the loopback GCP fake (tests/support/fakes/gcp_server.py) is only worth something if what the real
google-cloud clients send to it would also be accepted by Google, and if what it answers is shaped like
what Google answers.  The REST clients parse responses with ``ignore_unknown_fields=True``, so a fake
that drifts (a misspelt field, a wrong enum) would otherwise go unnoticed.  google-api-python-client
ships the discovery documents (``googleapiclient/discovery_cache/documents/*.json``); this module reads
them once per process (about 0.1 s), indexes every method by HTTP method and path template, and checks:

  * the path names a discovery method (method + ``servicePath`` + ``flatPath``), and path parameters
    match their declared ``pattern``;
  * every query parameter is declared (by the method, or API-wide like ``alt``/``fields``; plus the
    ``$alt`` system parameter the GAPIC REST transports add), is not repeated unless declared
    ``repeated``, has the declared type/enum/range, and required query parameters are present;
  * the JSON body is present exactly when the method declares a request schema, and validates
    recursively against it: unknown fields, wrong basic types (object/array/string/boolean/integer/
    number), integers outside their format's range, int64/uint64 that are not integers (they travel as
    JSON strings), non-base64 ``byte`` fields, malformed durations, and enum values not in the schema;
  * the fake's JSON responses against the response schema, more strictly (int64 must be a JSON string,
    int32 a JSON number, enums names not numbers) because that is how Google serialises them.

Enums as numbers: the container client sends ``$alt=json;enum-encoding=int`` and serialises request
enums as numbers (google.api_core.rest_helpers.transcode_request, ``rest_numeric_enums=True``).  The
discovery document lists enum names only, so numbers are mapped through the protobuf descriptors of
google-cloud-container (imported lazily, only when a number shows up).  Compute's protos model enums as
strings and its client never sends numbers, so a number there is a violation.
"""

from __future__ import annotations

import base64
import binascii
import functools
import importlib
import importlib.util
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

JSON = dict[str, Any]

# API name -> discovery document file in googleapiclient/discovery_cache/documents/.
DOCUMENTS: dict[str, str] = {"compute": "compute.v1.json", "container": "container.v1.json"}

# APIs whose clients send enums as numbers: (protobuf package, module that registers its descriptors).
PROTO_ENUMS: dict[str, tuple[str, str]] = {
    "container": ("google.container.v1", "google.cloud.container_v1.types.cluster_service"),
}

# Added by google.api_core.rest_helpers.transcode_request when rest_numeric_enums=True; a system
# parameter Google's front end understands, not listed in any discovery document.
SYSTEM_ALT_VALUES = frozenset({"json", "json;enum-encoding=int"})
ENUMS_AS_NUMBERS = "json;enum-encoding=int"

_INT_RANGES: dict[str, tuple[int, int]] = {
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint64": (0, 2**64 - 1),
}
_DURATION_RE = re.compile(r"^-?\d+(\.\d{1,9})?s$")
_DATETIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$")
_PARAM_RE = re.compile(r"\{(\+?)([^}]+)\}")


def documents_dir() -> Path:
    """Where google-api-python-client keeps its discovery documents (found without importing it)."""
    spec = importlib.util.find_spec("googleapiclient")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("google-api-python-client is not installed; it is a test dependency (pyproject [test])")
    return Path(next(iter(spec.submodule_search_locations))) / "discovery_cache" / "documents"


@dataclass(frozen=True)
class Method:
    """One discovery method, with the path template it is served at (``/`` + servicePath + flatPath)."""

    api: str
    id: str  # e.g. "compute.subnetworks.patch"
    http_method: str
    template: str  # e.g. "/compute/v1/projects/{project}/regions/{region}/subnetworks/{subnetwork}"
    regex: re.Pattern[str]
    literal_len: int  # characters outside {params}: the more, the more specific the template
    parameters: JSON  # the method's own parameter definitions
    request_ref: str | None
    response_ref: str | None


@dataclass(frozen=True)
class Match:
    method: Method
    params: dict[str, str]  # path parameters by template name (flatPath names, e.g. "projectsId")


@dataclass(frozen=True)
class Violation:
    """A difference between what went over the wire and what Google's discovery document allows."""

    direction: str  # "request" or "response"
    http_method: str
    path: str
    method_id: str | None
    message: str

    def __str__(self) -> str:
        method = self.method_id or "no discovery method"
        return f"{self.direction} {self.http_method} {self.path} ({method}): {self.message}"


@dataclass
class _Walk:
    api: str
    strict: bool  # response mode: Google's own serialisation, not everything the parser accepts
    out: list[str] = field(default_factory=list)


class DiscoveryIndex:
    """Methods of the loaded APIs indexed by (HTTP method, number of path segments)."""

    def __init__(self, documents: dict[str, JSON]) -> None:
        self.documents = documents
        self.schemas: dict[str, dict[str, JSON]] = {api: doc.get("schemas", {}) for api, doc in documents.items()}
        self.global_params: dict[str, JSON] = {api: doc.get("parameters", {}) for api, doc in documents.items()}
        self._by_shape: dict[tuple[str, int], list[Method]] = {}
        self._open: list[Method] = []  # templates with a {+param} (any number of segments)
        self.methods: dict[str, Method] = {}
        for api, doc in documents.items():
            for method_doc in _iter_methods(doc.get("resources", {})):
                method = _make_method(api, doc, method_doc)
                self.methods[method.id] = method
                if "{+" in method.template:
                    self._open.append(method)
                else:
                    key = (method.http_method, method.template.count("/"))
                    self._by_shape.setdefault(key, []).append(method)
        for methods in self._by_shape.values():
            methods.sort(key=lambda m: -m.literal_len)
        self._open.sort(key=lambda m: -m.literal_len)
        self._enum_cache: dict[tuple[str, str, str], dict[int, str] | None] = {}

    # ---- routing --------------------------------------------------------------------------------

    def find(self, http_method: str, path: str) -> Match | None:
        """The most specific discovery method whose template matches the (still percent-encoded) path."""
        candidates = self._by_shape.get((http_method, path.count("/")), [])
        for method in [*candidates, *(m for m in self._open if m.http_method == http_method)]:
            found = method.regex.fullmatch(path)
            if found is not None:
                params = {_group_to_param(k): _unquote(v) for k, v in found.groupdict().items()}
                return Match(method, params)
        return None

    # ---- requests -------------------------------------------------------------------------------

    def check_request(self, match: Match, query: dict[str, list[str]], body: Any, has_body: bool) -> list[str]:
        """Problems with a request's path parameters, query parameters and JSON body (empty: valid)."""
        method = match.method
        problems: list[str] = []
        for name, value in match.params.items():
            spec = method.parameters.get(name)
            pattern = spec.get("pattern") if spec else None
            if pattern and re.fullmatch(pattern.removeprefix("^").removesuffix("$"), value) is None:
                problems.append(f"path parameter {name}={value!r} does not match pattern {pattern!r}")
        problems.extend(self._check_query(method, query))
        if method.request_ref is None:
            if has_body:
                problems.append("the method takes no request body, but one was sent")
        elif not has_body:
            problems.append(f"missing request body (schema {method.request_ref})")
        else:
            walk = _Walk(method.api, strict=False)
            self._check_value(walk, {"$ref": method.request_ref}, body, "body", None, None)
            problems.extend(walk.out)
        return problems

    def _check_query(self, method: Method, query: dict[str, list[str]]) -> list[str]:
        problems: list[str] = []
        api_params = self.global_params[method.api]
        for name, values in query.items():
            if name == "$alt":
                bad = [v for v in values if v not in SYSTEM_ALT_VALUES]
                if bad or len(values) > 1:
                    problems.append(f"query parameter $alt={values!r}: expected one of {sorted(SYSTEM_ALT_VALUES)}")
                continue
            spec = method.parameters.get(name)
            if spec is None or spec.get("location") != "query":
                spec = api_params.get(name)
            if spec is None:
                problems.append(f"unknown query parameter {name!r} (not declared for {method.id})")
                continue
            if len(values) > 1 and not spec.get("repeated"):
                problems.append(f"query parameter {name!r} given {len(values)} times but is not repeated")
            for value in values:
                problem = _check_query_value(spec, value)
                if problem:
                    problems.append(f"query parameter {name}={value!r}: {problem}")
        for name, spec in method.parameters.items():
            if spec.get("location") == "query" and spec.get("required") and name not in query:
                problems.append(f"missing required query parameter {name!r}")
        return problems

    # ---- responses ------------------------------------------------------------------------------

    def check_response(self, method: Method, payload: Any) -> list[str]:
        """Problems with a 2xx JSON response the fake is about to send (strict: as Google serialises)."""
        if method.response_ref is None:
            return [] if payload in (None, {}) else ["the method declares no response, but a body is sent"]
        walk = _Walk(method.api, strict=True)
        self._check_value(walk, {"$ref": method.response_ref}, payload, "response", None, None)
        return walk.out

    def encode_enums_as_numbers(self, method: Method, payload: Any) -> Any:
        """The response as Google serialises it for ``$alt=json;enum-encoding=int`` (enum names -> numbers).

        Names without a known number (no protobuf descriptor) stay names; json_format accepts both.
        """
        if method.response_ref is None:
            return payload
        return self._to_numbers(method.api, {"$ref": method.response_ref}, payload, None, None)

    def decode_enum_numbers(self, method: Method, body: Any) -> Any:
        """A request body as the real API stores it: enum numbers turned into names (a client that sent
        ``$alt=json;enum-encoding=int`` still reads names back from a client that did not), and int64/uint64
        sent as JSON numbers (parsers take both) read back as the JSON strings Google writes them as."""
        if method.request_ref is None:
            return body
        return self._to_numbers(method.api, {"$ref": method.request_ref}, body, None, None, to_names=True)

    def _to_numbers(
        self, api: str, schema: JSON, value: Any, owner: str | None, prop: str | None, *, to_names: bool = False
    ) -> Any:
        ref = schema.get("$ref")
        if ref is not None:
            target = self.schemas[api].get(ref)
            return value if target is None else self._to_numbers(api, target, value, ref, None, to_names=to_names)
        kind = schema.get("type")
        if kind == "object" and isinstance(value, dict):
            props: JSON = schema.get("properties") or {}
            extra = schema.get("additionalProperties")
            out: JSON = {}
            for key, item in value.items():
                if key in props:
                    out[key] = self._to_numbers(api, props[key], item, schema.get("id", owner), key, to_names=to_names)
                elif isinstance(extra, dict):
                    out[key] = self._to_numbers(api, extra, item, owner, None, to_names=to_names)
                else:
                    out[key] = item
            return out
        if kind == "array" and isinstance(value, list):
            items: JSON = schema.get("items") or {}
            return [self._to_numbers(api, items, item, owner, prop, to_names=to_names) for item in value]
        is_int = isinstance(value, int) and not isinstance(value, bool)
        if to_names and schema.get("format") in ("int64", "uint64") and is_int:
            return str(value)
        if to_names and "enum" in schema and isinstance(value, int) and owner is not None and prop is not None:
            return (self.proto_enum(api, owner, prop) or {}).get(value, value)
        if not to_names and "enum" in schema and isinstance(value, str) and owner is not None and prop is not None:
            numbers = self.proto_enum(api, owner, prop)
            if numbers:
                by_name = {name: number for number, name in numbers.items()}
                return by_name.get(value, value)
        return value

    # ---- the schema walk ------------------------------------------------------------------------

    def _check_value(
        self, walk: _Walk, schema: JSON, value: Any, where: str, owner: str | None, prop: str | None
    ) -> None:
        if value is None:
            return  # JSON null: the field's default value (proto3 JSON mapping)
        ref = schema.get("$ref")
        if ref is not None:
            target = self.schemas[walk.api].get(ref)
            if target is None:
                walk.out.append(f"{where}: schema {ref!r} is not in the {walk.api} discovery document")
                return
            self._check_value(walk, target, value, where, ref, None)
            return
        kind = schema.get("type")
        if kind == "object":
            self._check_object(walk, schema, value, where, owner)
        elif kind == "array":
            if not isinstance(value, list):
                walk.out.append(f"{where}: expected an array, got {_json_kind(value)}")
                return
            items: JSON = schema.get("items") or {}
            for i, item in enumerate(value):
                self._check_value(walk, items, item, f"{where}[{i}]", owner, prop)
        elif "enum" in schema:
            self._check_enum(walk, schema, value, where, owner, prop)
        elif kind == "string":
            _check_string(walk, schema.get("format"), value, where)
        elif kind == "integer":
            _check_integer(walk, schema, value, where)
        elif kind == "number":
            if isinstance(value, bool) or not (
                isinstance(value, int | float) or (not walk.strict and value in ("NaN", "Infinity", "-Infinity"))
            ):
                walk.out.append(f"{where}: expected a number, got {_json_kind(value)}")
        elif kind == "boolean":
            if not isinstance(value, bool):
                walk.out.append(f"{where}: expected a boolean, got {_json_kind(value)}")
        elif kind == "any" or kind is None:
            return
        else:
            walk.out.append(f"{where}: unsupported schema type {kind!r}")

    def _check_object(self, walk: _Walk, schema: JSON, value: Any, where: str, owner: str | None) -> None:
        if not isinstance(value, dict):
            walk.out.append(f"{where}: expected an object, got {_json_kind(value)}")
            return
        props: JSON = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        this = schema.get("id") or owner
        for key, item in value.items():
            if key in props:
                self._check_value(walk, props[key], item, f"{where}.{key}", schema.get("id"), key)
            elif isinstance(extra, dict):
                self._check_value(walk, extra, item, f"{where}[{key!r}]", None, None)
            else:
                name = schema.get("id") or f"an inline object of {this or '?'}"
                walk.out.append(f"{where}.{key}: unknown field (not in schema {name})")

    def _check_enum(
        self, walk: _Walk, schema: JSON, value: Any, where: str, owner: str | None, prop: str | None
    ) -> None:
        names: list[str] = schema["enum"]
        if isinstance(value, str):
            if value not in names:
                walk.out.append(f"{where}: {value!r} is not one of the enum values {names}")
            return
        if isinstance(value, bool) or not isinstance(value, int):
            walk.out.append(f"{where}: expected an enum name (string), got {_json_kind(value)}")
            return
        if walk.strict or walk.api not in PROTO_ENUMS:
            walk.out.append(f"{where}: enum given as the number {value}; {walk.api} expects one of {names}")
            return
        numbers = self.proto_enum(walk.api, owner, prop) if owner and prop else None
        if numbers is not None:
            if value not in numbers:
                walk.out.append(f"{where}: enum number {value} is not defined (known: {sorted(numbers)})")
        elif not 0 <= value < len(names):
            walk.out.append(f"{where}: enum number {value} is outside the {len(names)} declared values")

    def proto_enum(self, api: str, message: str | None, prop: str | None) -> dict[int, str] | None:
        """Enum numbers -> names of field ``prop`` (JSON name) of message ``message``, from the protos."""
        if api not in PROTO_ENUMS or not message or not prop:
            return None
        key = (api, message, prop)
        if key not in self._enum_cache:
            self._enum_cache[key] = _lookup_proto_enum(*PROTO_ENUMS[api], message, prop)
        return self._enum_cache[key]


# --------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------


def _iter_methods(resources: JSON) -> Iterable[JSON]:
    for resource in resources.values():
        yield from resource.get("methods", {}).values()
        yield from _iter_methods(resource.get("resources", {}))


def _param_to_group(name: str) -> str:
    return "p_" + re.sub(r"\W", lambda m: f"_{ord(m.group()):x}_", name)


def _group_to_param(group: str) -> str:
    return re.sub(r"_([0-9a-f]+)_", lambda m: chr(int(m.group(1), 16)), group[2:])


def _make_method(api: str, doc: JSON, method_doc: JSON) -> Method:
    service_path: str = doc.get("servicePath", "")
    template = "/" + service_path + (method_doc.get("flatPath") or method_doc["path"])
    pattern = []
    literal_len = 0
    pos = 0
    for found in _PARAM_RE.finditer(template):
        literal = template[pos : found.start()]
        pattern.append(re.escape(literal))
        literal_len += len(literal)
        open_ended, name = found.groups()
        pattern.append(f"(?P<{_param_to_group(name)}>{'.+' if open_ended else '[^/]+'})")
        pos = found.end()
    pattern.append(re.escape(template[pos:]))
    literal_len += len(template) - pos
    request = method_doc.get("request")
    response = method_doc.get("response")
    return Method(
        api=api,
        id=method_doc["id"],
        http_method=method_doc["httpMethod"],
        template=template,
        regex=re.compile("".join(pattern)),
        literal_len=literal_len,
        parameters=method_doc.get("parameters", {}),
        request_ref=request.get("$ref") if request else None,
        response_ref=response.get("$ref") if response else None,
    )


def _unquote(value: str) -> str:
    from urllib.parse import unquote

    return unquote(value)


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return f"boolean {value!r}"
    if isinstance(value, int | float):
        return f"number {value!r}"
    if isinstance(value, str):
        return f"string {value[:40]!r}"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _as_int(value: Any, *, allow_string: bool, allow_number: bool) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and allow_number:
        return value
    if isinstance(value, float) and allow_number and value.is_integer():
        return int(value)
    if isinstance(value, str) and allow_string and re.fullmatch(r"-?\d+", value):
        return int(value)
    return None


def _check_string(walk: _Walk, fmt: str | None, value: Any, where: str) -> None:
    if fmt in ("int64", "uint64"):
        # int64/uint64 travel as JSON strings (proto3 JSON mapping); parsers also take numbers.
        number = _as_int(value, allow_string=True, allow_number=not walk.strict)
        if number is None:
            expect = "an integer in a JSON string" if walk.strict else "an integer (JSON string or number)"
            walk.out.append(f"{where}: expected {expect} ({fmt}), got {_json_kind(value)}")
        else:
            low, high = _INT_RANGES[fmt]
            if not low <= number <= high:
                walk.out.append(f"{where}: {number} is outside the {fmt} range")
        return
    if not isinstance(value, str):
        walk.out.append(f"{where}: expected a string, got {_json_kind(value)}")
        return
    if fmt == "byte":
        try:
            padded = value + "=" * (-len(value) % 4)
            base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
        except (binascii.Error, ValueError):
            walk.out.append(f"{where}: {value!r} is not base64 (format byte)")
    elif fmt == "google-duration" and not _DURATION_RE.match(value):
        walk.out.append(f"{where}: {value!r} is not a duration like '3.5s'")
    elif fmt in ("date-time", "google-datetime") and not _DATETIME_RE.match(value):
        walk.out.append(f"{where}: {value!r} is not an RFC 3339 timestamp")


def _check_integer(walk: _Walk, schema: JSON, value: Any, where: str) -> None:
    number = _as_int(value, allow_string=not walk.strict, allow_number=True)
    if number is None:
        walk.out.append(f"{where}: expected an integer, got {_json_kind(value)}")
        return
    low, high = _INT_RANGES.get(schema.get("format") or "int32", _INT_RANGES["int32"])
    if not low <= number <= high:
        walk.out.append(f"{where}: {number} is outside the {schema.get('format')} range")


def _check_query_value(spec: JSON, value: str) -> str | None:
    kind = spec.get("type")
    if "enum" in spec and value not in spec["enum"]:
        return f"not one of {spec['enum']}"
    if kind == "boolean" and value not in ("true", "false"):
        return "expected true or false"
    if kind == "integer" or (kind == "string" and spec.get("format") in _INT_RANGES):
        if not re.fullmatch(r"-?\d+", value):
            return "expected an integer"
        number = int(value)
        low, high = _INT_RANGES.get(spec.get("format") or "int32", _INT_RANGES["int32"])
        if "minimum" in spec:
            low = max(low, int(spec["minimum"]))
        if "maximum" in spec:
            high = min(high, int(spec["maximum"]))
        if not low <= number <= high:
            return f"outside the range {low}..{high}"
    pattern = spec.get("pattern")
    if pattern and re.fullmatch(pattern.removeprefix("^").removesuffix("$"), value) is None:
        return f"does not match pattern {pattern!r}"
    return None


def _lookup_proto_enum(package: str, module: str, message: str, prop: str) -> dict[int, str] | None:
    from google.protobuf import descriptor_pool  # type: ignore[import-untyped]

    importlib.import_module(module)  # registers the API's descriptors in the default pool
    try:
        descriptor = descriptor_pool.Default().FindMessageTypeByName(f"{package}.{message}")
    except KeyError:
        # The discovery document flattens nested messages (`UpgradeSettings` is the proto's
        # `NodePool.UpgradeSettings`): look for a nested type of that name in the package's messages.
        descriptor = _nested_message(package, message)
        if descriptor is None:
            return None
    fdesc = descriptor.fields_by_camelcase_name.get(prop)
    if fdesc is None or fdesc.enum_type is None:
        return None
    return {value.number: value.name for value in fdesc.enum_type.values}


def _nested_message(package: str, name: str) -> Any:
    from google.protobuf import descriptor_pool

    pool = descriptor_pool.Default()
    try:
        files = [pool.FindFileContainingSymbol(f"{package}.Cluster")]
    except KeyError:
        return None
    todo = [m for f in files for m in f.message_types_by_name.values()]
    while todo:
        current = todo.pop()
        if current.name == name and current.full_name != f"{package}.{name}":
            return current
        todo.extend(current.nested_types)
    return None


@functools.cache
def discovery_index() -> DiscoveryIndex:
    """The index of compute v1 and container v1, loaded once per process."""
    base = documents_dir()
    documents = {api: json.loads((base / name).read_text(encoding="utf-8")) for api, name in DOCUMENTS.items()}
    return DiscoveryIndex(documents)
