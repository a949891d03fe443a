"""The bulk records that are slotted (`slots=True`) keep the fingerprints of snapshots taken before.

A slotted instance always holds every field, while an unslotted one decoded from a document that lacks a
field holds it only on its class, and `msgspec.to_builtins` (so the fingerprint) leaves it out. A snapshot
taken before a field was added lacks it; so a class is slotted only while every one of its fields has been
there since the class first appeared (checked in the history when they were slotted, docs/performance.md),
and a field added to one changes the fingerprints of older snapshots. This test pins the fields: to add one,
first drop `slots=True` from the class.
"""

from __future__ import annotations

import dataclasses

import msgspec

from cidrx.ipam.calico.model import BlockAffinity, IPAMHandle
from cidrx.ipam.liveness import PodsByKey
from cidrx.ipam.whereabouts.model import Allocation, OverlappingReservation
from cidrx.model import codec
from cidrx.model.kube import KubeEvent, PodState

PINNED = {
    PodState: ("namespace", "name", "phase", "node", "ips", "has_network_status", "uid"),
    KubeEvent: ("namespace", "kind", "name", "reason", "type", "message", "count", "last_seen", "source"),
    IPAMHandle: ("name", "handle_id", "blocks", "resource_version"),
    BlockAffinity: ("name", "node", "cidr", "state", "deleted", "resource_version"),
    Allocation: ("offset", "ip", "podref", "ifname", "id"),
    OverlappingReservation: ("name", "namespace", "podref", "resource_version", "ifname"),
}


def test_slotted_records_keep_their_fields() -> None:
    for cls, names in PINNED.items():
        assert "__slots__" in cls.__dict__, cls
        assert tuple(f.name for f in dataclasses.fields(cls)) == names, (
            f"{cls.__name__} changed fields: drop slots=True before adding one (see this module's docstring)"
        )


def test_a_slotted_record_encodes_as_before() -> None:
    """Built or decoded from a document holding every field (what cidrx writes), the canonical bytes are
    those of the same fields in a dict."""
    pod = PodState("ns", "a", "Running", "n1", ips=("10.0.0.1",), uid="u")
    decoded = msgspec.json.decode(msgspec.json.encode(pod), type=PodState)
    plain = {f.name: getattr(pod, f.name) for f in dataclasses.fields(pod)}
    assert codec.canonical_bytes(pod) == codec.canonical_bytes(decoded) == codec.canonical_bytes(plain)


def test_pods_by_key_reads_like_a_dict_of_keys() -> None:
    pods = (
        PodState("a", "web", "Running", "n1"),
        PodState("b", "web", "Pending", "n2"),
        PodState("c", "x/y", "Running", "n3"),  # a "/" in a name (never valid, but a dict would find it)
        PodState("d/e", "z", "Running", "n4"),
    )
    index, plain = PodsByKey(pods), {p.key: p for p in pods}
    for key in [*plain, "a/nope", "nope/web", "web", "", "/", "c/x", "d/e/z"]:
        assert (key in index) == (key in plain), key
        assert index.get(key) is plain.get(key), key
    assert list(index) == list(plain) and len(index) == len(plain)
    assert list(index.values()) == list(plain.values())
