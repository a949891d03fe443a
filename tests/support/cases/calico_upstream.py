"""Calico's own IPAM test cases, replayed as cidrx cases.

Each case names the upstream test it comes from (projectcalico/calico at commit
87c15906f20c4ca1fda55af92295e7678b0cc0b2), what upstream decides, and what cidrx decides. cidrx may be
safer than upstream (keep an address upstream would free), never less safe.

Block cases: libcalico-go/lib/ipam/ipam_block_test.go ("Releasing IPs", "Block garbage collection") and
garbage_collect_test.go (GarbageCollectColdIPs, in tests/ipam/calico/test_upstream.py),
on a 100.64.0.0/24 block as upstream's makeTestBlock. Liveness cases: kube-controllers/pkg/controllers/
node/ipam.go allocationIsValid / isVMAllocationValid and ipam_allocation.go isTunnelAddress.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

JSON = dict[str, Any]
CIDR = "100.64.0.0/24"
NOW = "2024-05-01T10:00:00Z"
MINUTE_AGO = "2024-05-01T09:59:00Z"
IN_A_MINUTE = "2024-05-01T10:01:00Z"


def block(allocs: dict[int, JSON]) -> JSON:
    """A block of CIDR whose ordinals hold the given attributes (equal attributes share one entry)."""
    attributes: list[JSON] = []
    allocations: list[int | None] = [None] * 256
    for ordinal in sorted(allocs):
        attr = allocs[ordinal]
        if attr not in attributes:
            attributes.append(attr)
        allocations[ordinal] = attributes.index(attr)
    spec = {
        "cidr": CIDR,
        "affinity": "host:node-1",
        "strictAffinity": False,
        "allocations": allocations,
        "unallocated": [o for o in range(256) if allocations[o] is None],
        "attributes": attributes,
        "sequenceNumber": 7,
        "sequenceNumberForAllocation": {str(o): 7 for o in allocs},
        "deleted": False,
    }
    return {"apiVersion": "crd.projectcalico.org/v1", "kind": "IPAMBlock", "metadata": {"name": "b"}, "spec": spec}


def handle(name: str) -> JSON:
    return {"handle_id": name, "secondary": {"namespace": "default", "pod": name, "node": "node-1"}}


@dataclass(frozen=True)
class BlockCase:
    upstream: str  # the upstream test
    allocs: dict[int, JSON]
    release: tuple[int, ...]  # ordinals released
    cooldown: int
    allocated_after: tuple[int, ...]  # ordinals still in allocations[] afterwards
    attributes_after: int
    upstream_decides: str
    cidrx_decides: str
    extra_cooldown: dict[int, str] = field(default_factory=dict)  # ordinal -> releasedAt already there


BLOCK_CASES: tuple[BlockCase, ...] = (
    BlockCase(
        "Releasing IPs / deallocates a single IP",
        {13: handle("unlucky")},
        (13,),
        0,
        (),
        0,
        "ordinal 13 unallocated at once (no cooldown), its attribute dropped",
        "the same, in one block update that adds 1 to sequenceNumber",
    ),
    BlockCase(
        "Releasing IPs / deallocates one IP leaving its shared attributes behind",
        {13: handle("lucky"), 26: handle("lucky"), 39: handle("lucky")},
        (13,),
        0,
        (26, 39),
        1,
        "13 freed; 26 and 39 keep the shared attribute",
        "the same",
    ),
    BlockCase(
        "Releasing IPs / deallocates all IPs with a shared attribute",
        {13: handle("lucky"), 26: handle("lucky"), 39: handle("lucky")},
        (13, 26, 39),
        0,
        (),
        0,
        "all three freed, no attribute left",
        "the same",
    ),
    BlockCase(
        "Block garbage collection / Clears unused attributes (via a release with cooldown 0)",
        {32: handle("thirty-two"), 40: handle("forty")},
        (40,),
        0,
        (32,),
        1,
        "unreferenced attributes are dropped, the rest renumbered",
        "the same",
    ),
    BlockCase(
        "Block garbage collection / some old and some new released IPs (cooldown 30s)",
        {52: handle("fifties"), 54: handle("fifties"), 60: handle("sixty")},
        (60,),
        30,
        (42, 44, 52, 54, 60),
        3,
        "31 and 33 (released a minute ago) unallocated; 42 and 44 (released 'in a minute') stay in cooldown",
        "the same; 60, released now, stays in cooldown pointing at a new {releasedAt} attribute",
        {31: MINUTE_AGO, 33: MINUTE_AGO, 42: IN_A_MINUTE, 44: IN_A_MINUTE},
    ),
)


@dataclass(frozen=True)
class ApplyCase:
    """A release request upstream refuses or skips, replayed through cidrx apply (the real client against
    the fake API server)."""

    upstream: str
    planned_handle: str  # the handle the plan names for ordinal 13
    upstream_decides: str
    cidrx_decides: str


APPLY_CASES: tuple[ApplyCase, ...] = (
    ApplyCase(
        "Releasing IPs / returns an error if the handles do not match",
        "oldstuff",
        "the whole release fails (ErrorBadHandle), nothing written",
        "the address is kept ('now allocated to ...'), the block not written",
    ),
    ApplyCase(
        "Releasing IPs / does nothing when no such IP exists",
        "",
        "the address is reported unallocated, nothing released",
        "the address is skipped (already free), the block not written",
    ),
)


@dataclass(frozen=True)
class LivenessCase:
    """kube-controllers' allocationIsValid on one allocation, and cidrx's leak_reason on the same."""

    upstream: str
    secondary: JSON
    alternate: JSON | None
    pods: tuple[tuple[str, str, str | None], ...]  # (namespace/name, phase, ip)
    upstream_leak: bool
    cidrx_leak: bool
    why_differs: str = ""


IP = "100.64.0.13"
LIVENESS_CASES: tuple[LivenessCase, ...] = (
    LivenessCase(
        "allocationIsValid: pod not found",
        {"namespace": "default", "pod": "gone", "node": "node-1"},
        None,
        (),
        True,
        True,
    ),
    LivenessCase(
        "allocationIsValid: pod exists and reports the IP",
        {"namespace": "default", "pod": "web", "node": "node-1"},
        None,
        (("default/web", "Running", IP),),
        False,
        False,
    ),
    LivenessCase(
        "allocationIsValid: pod has not reported an IP yet",
        {"namespace": "default", "pod": "web", "node": "node-1"},
        None,
        (("default/web", "Pending", None),),
        False,
        False,
    ),
    LivenessCase(
        "allocationIsValid: pod exists with another IP (mismatched)",
        {"namespace": "default", "pod": "web", "node": "node-1"},
        None,
        (("default/web", "Running", "100.64.0.99"),),
        True,
        False,
        "cidrx keeps every allocation naming an existing pod: the pod may hold several addresses (Multus) "
        "that its status does not list",
    ),
    LivenessCase(
        "allocationIsValid: missing metadata (no namespace/pod) is assumed valid",
        {"node": "node-1"},
        None,
        (),
        False,
        False,
    ),
    LivenessCase(
        "isTunnelAddress: a node's IPIP address is valid while its node exists",
        {"node": "node-1", "type": "ipipTunnelAddress"},
        None,
        (),
        False,
        False,
        "",
    ),
    LivenessCase(
        "loadbalancer controller: a Service's LoadBalancer address names no pod",
        {"namespace": "default", "service": "web", "type": "LoadBalancer"},
        None,
        (),
        False,
        False,
    ),
    LivenessCase(
        "isVMAllocationValid: VM gone, pods gone",
        {"namespace": "vms", "pod": "virt-launcher-a", "node": "node-1", "vmi-name": "vm-a"},
        None,
        (),
        True,
        False,
        "cidrx does not read KubeVirt VirtualMachine objects, so it never releases a VM's address",
    ),
    LivenessCase(
        "vmipam live migration: secondary names the deleted source pod, alternate the Running target",
        {"namespace": "vms", "pod": "virt-launcher-a-old", "node": "node-1", "vmi-name": "vm-a"},
        {"namespace": "vms", "pod": "virt-launcher-a-new", "node": "node-2", "vmi-name": "vm-a"},
        (("vms/virt-launcher-a-new", "Running", IP),),
        False,
        False,
    ),
    LivenessCase(
        "another pod reports the address (a pod whose allocation names someone else)",
        {"namespace": "default", "pod": "gone", "node": "node-1"},
        None,
        (("default/other", "Running", IP),),
        True,
        False,
        "cidrx never frees an address any unfinished pod reports (two pods would share it)",
    ),
)
