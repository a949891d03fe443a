"""A small checker for Kubernetes structural schemas (the openAPIV3Schema subset CRDs use).

Why it exists: the fake API server must refuse a write that a real cluster would refuse or silently
mangle, judged by the upstream CRDs' own schemas rather than by what cidrx believes. The project keeps
compact schemas of the fields it reads and writes (see the modules beside this one, each citing the
upstream CRD file and commit); this checks an object against one. It knows `type`, `properties`,
`required`, `items`, `enum`, `additionalProperties`, `nullable`, `minimum`/`maximum`, `format: int32/int64`,
`x-kubernetes-int-or-string` and `x-kubernetes-preserve-unknown-fields`.

A real apiserver prunes unknown fields instead of rejecting them; the fake rejects them, because a field
that upstream does not define would be dropped in a real cluster, and cidrx must never rely on it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

Schema = Mapping[str, Any]

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "boolean": (bool,),
    "integer": (int,),
    "number": (int, float),
}


def problems(value: Any, schema: Schema, path: str = "") -> Iterator[str]:
    """Every way `value` breaks `schema`, as "path: what" lines (the apiserver's own wording where it has one)."""
    where = path or "<root>"
    if value is None:
        if not schema.get("nullable"):
            yield f"{where}: Invalid value: null: must not be null"
        return
    if schema.get("x-kubernetes-int-or-string"):
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            yield f"{where}: Invalid value: {value!r}: must be an integer or a string"
        return
    kind = schema.get("type")
    if kind is not None:
        wanted = _TYPES[kind]
        if (isinstance(value, bool) and kind != "boolean") or not isinstance(value, wanted):
            yield f'{where}: Invalid value: "{_short(value)}": {where} in body must be of type {kind}'
            return
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(f'"{v}"' for v in schema["enum"])
        yield f'{where}: Unsupported value: "{_short(value)}": supported values: {allowed}'
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            yield f"{where}: Invalid value: {value}: should be greater than or equal to {schema['minimum']}"
        if "maximum" in schema and value > schema["maximum"]:
            yield f"{where}: Invalid value: {value}: should be less than or equal to {schema['maximum']}"
        if schema.get("format") == "int32" and not -(2**31) <= value < 2**31:
            yield f"{where}: Invalid value: {value}: out of the int32 range"
    if isinstance(value, dict):
        yield from _object_problems(value, schema, path)
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            yield from problems(item, schema["items"], f"{path}[{i}]")


def _object_problems(value: dict[str, Any], schema: Schema, path: str) -> Iterator[str]:
    props: Mapping[str, Schema] = schema.get("properties") or {}
    for name in schema.get("required") or ():
        if name not in value:
            yield f"{_join(path, name)}: Required value"
    extra = schema.get("additionalProperties")
    for key, item in value.items():
        if key in props:
            yield from problems(item, props[key], _join(path, key))
        elif isinstance(extra, Mapping):
            yield from problems(item, extra, _join(path, key))
        elif props and not schema.get("x-kubernetes-preserve-unknown-fields") and extra is not True:
            yield f"{_join(path, key)}: Invalid value: field not declared in schema (a real apiserver prunes it)"


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _short(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def object_schema(spec: Schema, *, status: Schema | None = None) -> Schema:
    """A whole custom object's schema: apiVersion/kind/metadata as every CRD has them, plus `spec`."""
    props: dict[str, Any] = {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "spec": spec,
    }
    if status is not None:
        props["status"] = status
    return {"type": "object", "properties": props}
