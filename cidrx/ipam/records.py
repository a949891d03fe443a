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

R = TypeVar("R", bound=msgspec.Struct)


def record(obj: R | Mapping[str, Any], cls: type[R]) -> R:
    """`obj` as a `cls` record: as listed, or converted from a dict (tests, single reads) by the rules that
    decode a list page, so both ways in are read alike."""
    if isinstance(obj, cls):
        return obj
    return msgspec.convert(obj, cls)


def meta_of(value: Meta | NotAnObject) -> Meta:
    """The metadata record, or an empty one when the object's metadata was absent or no object."""
    return value if isinstance(value, Meta) else EMPTY_META
