"""Property: the IPAM custom resources listed as typed records (cidrx.ipam.records) take any JSON value in any
field without failing, and a record decoded from the list page's bytes gives the same compact record as
the same object handed in as a dict (how tests and single reads come in); odd values read as absent.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from cidrx.ipam.calico.collect import BlockRecord, HandleRecord, block_from, handle_from
from cidrx.ipam.whereabouts.collect import PoolRecord, ReservationRecord, pool_from, reservation_from

FLOATS = st.floats(allow_nan=False, allow_infinity=False)
SCALARS = st.none() | st.booleans() | st.integers(-3, 70) | FLOATS | st.text(max_size=4)
VALUES = st.recursive(
    SCALARS | st.sampled_from(["10.0.0.0/26", "fd00::/120", "host:n1", "ns/pod", "true", "5"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "5", "podref", "ip"]), inner),
    max_leaves=8,
)


def _object(fields: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    """An object with any subset of `fields`, or (sometimes) any other JSON value in its place."""
    return st.fixed_dictionaries({}, optional=fields) | VALUES


META = _object({k: VALUES for k in ("name", "namespace", "resourceVersion", "uid")})
ATTRIBUTE = _object(
    {
        "handle_id": VALUES,
        "secondary": _object({k: VALUES for k in ("namespace", "pod", "node", "type", "vmi-name", "service")}),
        "alternateOwnerAttrs": _object({k: VALUES for k in ("namespace", "pod", "vmi-name")}),
        "releasedAt": VALUES,
    }
)
SPECS: dict[str, st.SearchStrategy[Any]] = {
    "block": _object(
        {
            "cidr": VALUES,
            "affinity": VALUES,
            "allocations": st.lists(st.none() | st.integers(-1, 4) | VALUES, max_size=5) | VALUES,
            "unallocated": st.lists(VALUES, max_size=3) | VALUES,
            "attributes": st.lists(ATTRIBUTE, max_size=3) | VALUES,
            "strictAffinity": VALUES,
            "deleted": VALUES,
            "affinityClaimTime": VALUES,
            "sequenceNumber": VALUES,
        }
    ),
    "handle": _object({"handleID": VALUES, "block": st.dictionaries(st.text(max_size=4), VALUES) | VALUES}),
    "pool": _object(
        {
            "range": st.sampled_from(["10.0.0.0/28", "10.0.0.4/28", "fd00::/124", "x"]) | VALUES,
            "allocations": st.dictionaries(
                st.sampled_from(["1", "2", "-1", "01", "x", "99"]), _object({"podref": VALUES, "id": VALUES})
            )
            | VALUES,
        }
    ),
    "reservation": _object({"podref": VALUES, "ifname": VALUES}),
}
KINDS: dict[str, tuple[type[msgspec.Struct], Callable[[Any], Any]]] = {
    "block": (BlockRecord, block_from),
    "handle": (HandleRecord, handle_from),
    "pool": (PoolRecord, pool_from),
    "reservation": (ReservationRecord, reservation_from),
}


@given(st.sampled_from(sorted(KINDS)).flatmap(lambda k: st.tuples(st.just(k), META, SPECS[k])))
def test_listed_records_take_any_value_and_read_as_dicts(case: tuple[str, Any, Any]) -> None:
    kind, meta, spec = case
    obj = {"apiVersion": "x/v1", "kind": kind, "metadata": meta, "spec": spec, "status": {"other": [1]}}
    record_type, convert = KINDS[kind]
    [listed] = msgspec.json.decode(json.dumps([obj]), type=list[record_type])  # as lightkube decodes a page
    assert convert(listed) == convert(obj)


def test_odd_values_read_as_absent() -> None:
    block = block_from(
        {
            "metadata": ["not", "an", "object"],
            "spec": {
                "cidr": "10.0.0.0/30",
                "allocations": "0123",
                "attributes": [{"secondary": ["x"], "alternateOwnerAttrs": "y", "handle_id": 7}],
                "unallocated": {"1": 1},
            },
        }
    )
    assert (block.name, block.allocations, block.unallocated) == ("", (), ())
    (attribute,) = block.attributes
    assert (attribute.handle_id, attribute.pod, attribute.alternate) == ("7", "", None)
    handle = handle_from({"metadata": {"name": "h"}, "spec": {"block": ["10.0.0.0/30"]}})
    assert (handle.handle_id, handle.blocks) == ("h", {})
    pool = pool_from({"metadata": "x", "spec": {"range": "10.0.0.0/28", "allocations": {"1": "x"}}})
    assert [(a.ip, a.podref) for a in pool.allocations] == [("10.0.0.1", "")]
    assert reservation_from({"metadata": {"name": "10.0.0.1"}, "spec": 5}).podref == ""
