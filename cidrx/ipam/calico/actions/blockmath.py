"""Block arithmetic as Calico's own IPAM does it (pure, on an IPAMBlock as JSON): release ordinals, return
cooled-down ones to `unallocated`, count a handle's addresses.

Why it exists: a block cidrx writes must keep Calico's invariants (projectcalico/calico libcalico-go/lib/ipam,
commit 87c15906f20c4ca1fda55af92295e7678b0cc0b2): every block update adds 1 to spec.sequenceNumber
(ipam_block_reader_writer.go updateBlock); a release points the ordinal at a new attribute holding only
`releasedAt`, records the block's sequence number in sequenceNumberForAllocation, and the ordinal returns
to `unallocated` only once IPAMConfig ipCooldownSeconds have passed (ipam_block.go release and
garbageCollect; so at 0 in the same write); attributes nothing points at are dropped and the indexes
renumbered.
"""

from __future__ import annotations

import copy

from cidrx.ipam.calico.actions.objects import JSON, now_rfc3339
from cidrx.model.kube import parse_time


def attr_at(spec: JSON, ordinal: int) -> JSON | None:
    allocations = spec.get("allocations") or []
    attributes = spec.get("attributes") or []
    if not 0 <= ordinal < len(allocations):
        return None
    index = allocations[ordinal]
    if not isinstance(index, int) or not 0 <= index < len(attributes):
        return None
    attr: JSON = attributes[index]
    return attr


def garbage_collect(spec: JSON, cooldown: int, now: str) -> None:
    """Return to `unallocated` every ordinal whose cooldown entry's `releasedAt` is `cooldown` seconds or
    more in the past, and drop the attributes nothing points at (renumbering the rest), as upstream's
    allocationBlock.garbageCollect does. In place."""
    allocations: list[int | None] = list(spec.get("allocations") or [])
    attributes: list[JSON] = list(spec.get("attributes") or [])
    at = parse_time(now)
    seq_for = spec.get("sequenceNumberForAllocation")
    unallocated = list(spec.get("unallocated") or [])
    for ordinal, index in enumerate(allocations):
        if index is None or not 0 <= index < len(attributes):
            continue
        released = parse_time(str(attributes[index].get("releasedAt") or ""))
        if released is None or at is None:
            continue
        if cooldown < 0 or (at - released).total_seconds() >= cooldown:
            allocations[ordinal] = None
            unallocated.append(ordinal)
            if isinstance(seq_for, dict):
                seq_for.pop(str(ordinal), None)
    kept = sorted({a for a in allocations if a is not None})
    renumber = {old: new_index for new_index, old in enumerate(kept)}
    spec["attributes"] = [attributes[old] for old in kept]
    spec["allocations"] = [None if a is None else renumber[a] for a in allocations]
    spec["unallocated"] = unallocated


def release_ordinals(block: JSON, ordinals: set[int], cooldown: int = 0, now: str = "") -> JSON:
    """A copy of the IPAMBlock `block` with `ordinals` released as upstream's allocationBlock.release does
    (module doc), its sequenceNumber bumped by one."""
    now = now or now_rfc3339()
    new = copy.deepcopy(block)
    spec = new.setdefault("spec", {})
    seq = int(spec.get("sequenceNumber") or 0)
    allocations: list[int | None] = list(spec.get("allocations") or [])
    attributes: list[JSON] = list(spec.get("attributes") or [])
    seq_for = spec.get("sequenceNumberForAllocation")
    if not isinstance(seq_for, dict):
        seq_for = {}
    spec["sequenceNumberForAllocation"] = seq_for
    if ordinals:
        attributes.append({"releasedAt": now})
        for o in sorted(ordinals):
            allocations[o] = len(attributes) - 1
            seq_for[str(o)] = seq
    spec["allocations"], spec["attributes"] = allocations, attributes
    garbage_collect(spec, cooldown, now)
    spec["sequenceNumber"] = seq + 1
    return new


def handle_count(spec: JSON, handle_id: str) -> int:
    attributes = spec.get("attributes") or []
    return sum(
        1
        for a in spec.get("allocations") or []
        if isinstance(a, int) and 0 <= a < len(attributes) and attributes[a].get("handle_id") == handle_id
    )
