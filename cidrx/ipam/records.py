"""Tolerant msgspec records for the IPAM custom resources that are listed by the ten thousand.

Why it exists: a large cluster lists tens of thousands of IPAMHandles and OverlappingRangeIPReservations;
decoding each whole object into dicts (managedFields and all) and reading it back key by key was most of
collection's time. These records hold only the fields the collectors read and are decoded straight from
the list pages (`KubeApi.iter_custom_records`). CRDs validate little, so no field may refuse a value: an
object where the collector expects one becomes a record and anything else is kept as it is (and read as
absent), and the leaves are `Any`, so the collectors see exactly the JSON values they saw as dicts.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any, TypeVar

import msgspec

# Every JSON value but an object: with a record type in a union, what a record field takes when the
# object it expects is something else (msgspec allows one object-like type per union).
NotAnObject = str | int | float | bool | list[Any] | None


class Meta(msgspec.Struct):
    name: Any = None
    namespace: Any = None
    resourceVersion: Any = None


EMPTY_META = Meta()


class Listed(msgspec.Struct):
    """An object as listed: its metadata and its spec (a subclass types `spec` with a record of its fields)."""

    metadata: Meta | NotAnObject = None
    spec: Any = None


R = TypeVar("R", bound=msgspec.Struct)
P = TypeVar("P", bound=msgspec.Struct)


def record(obj: R | Mapping[str, Any], cls: type[R]) -> R:
    """`obj` as a `cls` record: as listed, or converted from a dict (tests, single reads) by the rules that
    decode a list page, so both ways in are read alike."""
    if isinstance(obj, cls):
        return obj
    return msgspec.convert(obj, cls)


def listed(kind: str, spec_type: type[msgspec.Struct]) -> type[Listed]:
    """The record of a `kind` object whose spec holds the fields of `spec_type` (any other JSON value taken)."""
    fields = [("spec", spec_type | NotAnObject, None)]
    made: type[Listed] = msgspec.defstruct(f"{kind}Record", fields, bases=(Listed,))  # type: ignore[assignment]
    return made


def parts(obj: Listed | Mapping[str, Any], cls: type[Listed], spec_type: type[P]) -> tuple[Meta, P]:
    """The metadata and spec of `obj` read as a `cls` record; an empty record for either when it is absent
    or no object."""
    listed = record(obj, cls)
    meta, spec = listed.metadata, listed.spec
    return meta if isinstance(meta, Meta) else EMPTY_META, spec if isinstance(spec, spec_type) else _empty(spec_type)


@cache
def _empty(spec_type: type[P]) -> P:
    return spec_type()
