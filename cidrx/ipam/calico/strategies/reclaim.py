"""The `calico-reclaim` strategy: release leaked addresses and idle blocks.

Why it exists: the incident's fix was deleting IPAMBlock and BlockAffinity objects by hand after checking
them with calicoctl; this plan does the same checks and lists exactly what will change for review, and the
executors (cidrx.ipam.calico.actions) re-check at apply time. `check_drift` refuses a plan (exit 4, before
any write) whose addresses or blocks someone else changed since it was made: an address now held by
another handle, a leaked address whose pod is back, a block now another node's or no longer empty.
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

from cidrx.errors import InvalidInput, StalePlan
from cidrx.ipam.calico.actions.release_empty_block import RELEASE_EMPTY_BLOCK
from cidrx.ipam.calico.actions.release_ips import RELEASE_IPS
from cidrx.ipam.calico.analyze import leak_reason, leaked_ips
from cidrx.ipam.calico.blocks import releasable_empty_blocks
from cidrx.ipam.calico.model import AllocationAttribute, CalicoSection
from cidrx.ipam.calico.strategies.section import calico_section, current_section
from cidrx.ipam.liveness import AddressHolders, PodsByKey
from cidrx.model.kube import PodState
from cidrx.model.plan import Plan, Step, seal_plan
from cidrx.model.snapshot import Snapshot

if TYPE_CHECKING:
    from cidrx.model.options import PlanOptions

STRATEGY = "calico-reclaim"
ACTIONS = (RELEASE_IPS, RELEASE_EMPTY_BLOCK)  # the step actions its plans use


def _handle_names(calico: CalicoSection) -> dict[str, str]:
    return {h.handle_id: h.name for h in calico.handles}


def make_plan(snapshot: Snapshot, opts: PlanOptions, created_at: str) -> Plan:
    """One `calico.release-ips` step per block with leaked addresses, one `calico.release-empty-block`
    per empty block its node can spare. Apply re-reads and re-decides every one of them. `opts` is not read."""
    calico = calico_section(snapshot)
    if not snapshot.kube.available:
        raise InvalidInput(f"a Calico reclaim plan needs the Kubernetes API: {snapshot.kube.reason}")
    pods = PodsByKey(snapshot.kube.ipam_pods)
    handles = _handle_names(calico)
    # Written back in the API the objects were read from; the key only appears for v3 (older plans have none).
    api_param = {"api": calico.api_version} if calico.api_version else {}
    steps: list[Step] = []
    by_block: dict[str, list[dict[str, Any]]] = {}
    cidrs: dict[str, str] = {}
    for leak in leaked_ips(calico, pods):
        cidrs[leak.block] = leak.cidr
        by_block.setdefault(leak.block, []).append(
            {
                "ordinal": leak.ordinal,
                "ip": leak.ip,
                "handle_id": leak.handle_id,
                "handle": handles.get(leak.handle_id or "", (leak.handle_id or "").lower()),
                "pod": leak.pod,
                "why": leak.why,
            }
        )
    for name, ips in by_block.items():
        steps.append(
            Step(
                id=f"release-ips-{name}",
                action=RELEASE_IPS.name,
                params={"block": name, "cidr": cidrs[name], "ips": ips, **api_param},
                description=f"release {len(ips)} leaked address(es) of block {cidrs[name]}: "
                + ", ".join(i["ip"] for i in ips[:8])
                + (" ..." if len(ips) > 8 else ""),
                permissions=RELEASE_IPS.permissions,
            )
        )
    affinities = {(a.node, a.cidr): a.name for a in calico.affinities}
    empty = releasable_empty_blocks(calico, snapshot.taken_at)
    for block in empty:
        node = block.host or ""
        steps.append(
            Step(
                id=f"release-empty-block-{block.name}",
                action=RELEASE_EMPTY_BLOCK.name,
                params={
                    "block": block.name,
                    "cidr": block.cidr,
                    "node": node,
                    "affinity": affinities.get((node, block.cidr), ""),
                    **api_param,
                },
                description=f"release empty block {block.cidr} of node {node} (it keeps another block)",
                permissions=RELEASE_EMPTY_BLOCK.permissions,
            )
        )
    released = sum(len(v) for v in by_block.values())
    notes = [
        "apply refuses (exit 4, nothing written) when an address or block of this plan changed hands since "
        "it was made; it re-reads every block and pod right before writing, and an address whose pod comes "
        "back, or that is reassigned, while it runs is left alone; writes are compare-and-swap on resourceVersion",
        "a block emptied by this plan is released by the next reclaim plan, not this one",
    ]
    if not steps:
        notes.insert(0, "nothing to reclaim: no leaked addresses and no spare empty blocks")
    hosts = {b.name: b.host or "" for b in [*empty, *(b for b in calico.blocks if b.name in cidrs)]}
    gone = sorted({ip["pod"] for ips in by_block.values() for ip in ips if ip["pod"] not in pods})
    basis = {
        "blocks": {b: c for b, c in sorted({**cidrs, **{e.name: e.cidr for e in empty}}.items())},
        "hosts": dict(sorted(hosts.items())),
        "gone_pods": gone,
    }
    summary = {"leaked_ips": released, "blocks_with_leaks": len(by_block), "empty_blocks": len(empty)}
    return seal_plan(snapshot, created_at, STRATEGY, basis, steps, notes, summary)


def check_drift(plan: Plan, snapshot: Snapshot, begun: Collection[str] = ()) -> None:
    """Refuse (StalePlan, exit 4) when the plan's facts no longer hold. What the plan already did (released
    addresses and blocks) is progress, not drift: `begun` names the steps an earlier apply started (from the
    journal), whose addresses may have been handed out again after this plan released them; those are
    re-decided per address at apply instead."""
    calico = current_section(plan, snapshot)
    problems: list[str] = []
    blocks = {b.name: b.cidr for b in calico.blocks}
    for name, cidr in plan.basis.get("blocks", {}).items():
        if name in blocks and blocks[name] != cidr:
            problems.append(f"IPAMBlock {name} now covers {blocks[name]}, not {cidr}")
    pods = PodsByKey(snapshot.kube.ipam_pods)
    holders = AddressHolders.of(pods.values())
    for step in plan.steps:
        if step.id not in begun:
            problems += _reclaim_step_drift(plan, step, calico, pods, holders)
    if problems:
        done = "Nothing more was applied" if begun else "Nothing was applied"
        raise StalePlan(f"the plan is stale: {'; '.join(problems)}. {done}; make a new plan")


def _holder(attr: AllocationAttribute) -> str:
    who = attr.pod_ref or attr.type or "no pod"
    return f"handle {attr.handle_id or '(none)'} ({who})"


def _reclaim_step_drift(
    plan: Plan, step: Step, calico: CalicoSection, pods: Mapping[str, PodState], holders: AddressHolders
) -> list[str]:
    """What someone else changed in the block one reclaim step would write, since the plan was made."""
    name = str(step.params.get("block") or "")
    block = next((b for b in calico.blocks if b.name == name), None)
    if block is None or block.cidr != step.params.get("cidr"):
        return []  # released meanwhile: nothing left to do; a changed CIDR is reported for the whole plan
    problems: list[str] = []
    planned_host = (plan.basis.get("hosts") or {}).get(name)
    if planned_host is not None and (block.host or "") != planned_host:
        problems.append(
            f"IPAMBlock {name} ({block.cidr}) now belongs to {block.affinity or 'no node'}, not host:{planned_host} "
            "(released and claimed again)"
        )
        return problems
    if step.action == RELEASE_EMPTY_BLOCK.name:
        if block.used:
            problems.append(
                f"IPAMBlock {name} ({block.cidr}), planned for release as empty, now holds {block.used} address(es)"
            )
        return problems
    gone = set(plan.basis.get("gone_pods") or [])
    for entry in step.params.get("ips") or []:
        ip, ordinal = str(entry.get("ip")), int(entry.get("ordinal", -1))
        attr = block.attribute(ordinal)
        if attr is None:
            continue  # released by someone else meanwhile
        was = (
            f"{ip} of IPAMBlock {name}, planned for release from handle {entry.get('handle_id')} ({entry.get('pod')}),"
        )
        if attr.handle_id != entry.get("handle_id") or attr.pod_ref != entry.get("pod"):
            problems.append(f"{was} is now allocated to {_holder(attr)}")
            continue
        pod = pods.get(attr.pod_ref or "")
        if pod is not None:
            phase = pod.phase or "unknown phase"
            reports = not pod.ips or ip in pod.ips
            again = "is live again" if reports else "exists again" if attr.pod_ref in gone else "exists"
            problems.append(f"{was} is in use: its pod {attr.pod_ref} {again} ({phase})")
        elif holders.is_live(ip):
            problems.append(f"{was} is in use: {holders.describe(ip)}")
        elif leak_reason(attr, ip, pods, holders) is None:
            problems.append(f"{was} is in use: {', '.join(attr.pod_refs)} (a pod its allocation names) exists")
    return problems
