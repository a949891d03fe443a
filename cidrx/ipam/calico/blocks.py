"""When Calico lets a block go: the rules an empty IPAM block is judged by, shared by the reclaim plan (which
blocks to list) and by apply (which it may release now).

Why it exists: planning and the executor must apply exactly the same rule (libcalico-go's
releaseBlockAffinity and findUnclaimedBlock, and kube-controllers' releaseUnusedBlocks), judged once on the
snapshot and once on the block as it is right before the write. Pure: no I/O.
"""

from __future__ import annotations

from cidrx.ipam.calico.analyze import blocks_by_node, is_empty
from cidrx.ipam.calico.model import BlockAffinity, CalicoSection, IPAMBlock
from cidrx.model.kube import parse_time

# libcalico-go/lib/ipam/ipam_block_reader_writer.go EmptyBlockMinReclaimAge (commit 87c15906f20c).
EMPTY_BLOCK_MIN_RECLAIM_AGE = 60.0


def block_age_seconds(block: IPAMBlock, now: str) -> float | None:
    """Seconds since the node claimed `block` (spec.affinityClaimTime), or None when unknown.

    Upstream takes a block without affinityClaimTime as claimed at time zero, i.e. old enough
    (libcalico-go/lib/ipam/ipam_block.go affinityClaimTime, commit 87c15906f20c)."""
    claimed, at = parse_time(block.affinity_claim_time or ""), parse_time(now)
    if claimed is None or at is None:
        return None
    return (at - claimed).total_seconds()


def empty_block_keep_reason(
    block: IPAMBlock, affinity: BlockAffinity | None, now: str, *, resuming: bool = False
) -> str | None:
    """Why an empty block must stay, whatever its node holds besides, or None.

    As libcalico-go's releaseBlockAffinity and findUnclaimedBlock (lib/ipam/ipam_block_reader_writer.go,
    commit 87c15906f20c4ca1fda55af92295e7678b0cc0b2): only a block whose BlockAffinity is `confirmed`
    (a `pending` one is a node mid-claim, `pendingDeletion` someone else's release), and not one claimed
    less than EmptyBlockMinReclaimAge (1 minute) ago. `resuming` (apply): a `pendingDeletion` affinity is
    a release already under way (an earlier run of this step, or Calico's own), which may be finished."""
    if block.deleted:
        return "it is being deleted by Calico"
    if affinity is None:
        return "it has no BlockAffinity"
    states = ("confirmed", "pendingDeletion") if resuming else ("confirmed",)
    if affinity.state not in states or affinity.deleted:
        return f"its BlockAffinity is {affinity.state or 'without state'}{' (deleted)' if affinity.deleted else ''}"
    age = block_age_seconds(block, now)
    if age is not None and age < EMPTY_BLOCK_MIN_RECLAIM_AGE:
        return f"it was claimed {max(0, int(age))}s ago (Calico keeps empty blocks younger than 1 minute)"
    return None


def releasable_empty_blocks(calico: CalicoSection, now: str = "") -> list[IPAMBlock]:
    """Empty blocks whose node keeps at least one other block (its busiest ones are kept first), whose
    affinity is confirmed and which are old enough (empty_block_keep_reason). kube-controllers never
    releases a node's last block (kube-controllers/pkg/controllers/node/ipam.go releaseUnusedBlocks)."""
    affinities = {(a.node, a.cidr): a for a in calico.affinities}
    out: list[IPAMBlock] = []
    for node, blocks in sorted(blocks_by_node(calico).items()):
        blocks = [b for b in blocks if not b.deleted]
        empty = [b for b in blocks if is_empty(b)]
        if len(empty) == len(blocks):
            empty = empty[1:]  # every block is empty: the node keeps its first one
        out += [b for b in empty if empty_block_keep_reason(b, affinities.get((node, b.cidr)), now) is None]
    return out
