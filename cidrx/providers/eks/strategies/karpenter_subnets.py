"""Strategy karpenter-subnets: keep Karpenter off subnets that cannot take another node. Each EC2NodeClass that
selects a full subnet while its zone has a subnet with room (cidrx/providers/eks/facts/karpenter.py) gets
subnetSelectorTerms naming the subnets to keep by id: its selection without the full subnets, plus, in a zone
where none of the selected subnets has room, the cluster's own subnets there that have. The write is guarded
by the object's resourceVersion and rollback restores the recorded terms (kube.update-ec2nodeclass).

Pure: no I/O; check_drift compares the plan's basis with a fresh snapshot before apply.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from cidrx.errors import InvalidInput
from cidrx.model.options import PlanOptions
from cidrx.model.plan import Plan, Step, seal_plan
from cidrx.model.snapshot import Snapshot
from cidrx.providers.eks.actions.karpenter import UPDATE_EC2_NODE_CLASS
from cidrx.providers.eks.facts.cni import cni_config
from cidrx.providers.eks.facts.karpenter import placements
from cidrx.providers.eks.facts.provisioners import provisioners
from cidrx.providers.eks.model import EC2_NODE_CLASS, EksSection, SelectorTerm, eks_section
from cidrx.providers.eks.strategies.drift import check_plan_drift


def _terms(terms: tuple[SelectorTerm, ...]) -> list[dict[str, Any]]:
    out = []
    for t in terms:
        term: dict[str, Any] = {}
        if t.id:
            term["id"] = t.id
        if t.tags:
            term["tags"] = dict(t.tags)
        out.append(term)
    return out


def make_plan(snapshot: Snapshot, opts: PlanOptions, created_at: str) -> Plan:
    eks = eks_section(snapshot)
    if opts.cidr:
        raise InvalidInput("--cidr does not apply to --strategy karpenter-subnets (it chooses among existing subnets)")
    found = placements(eks, snapshot.kube, cni_config(eks, snapshot.kube))
    if not found:
        raise InvalidInput(
            "no EC2NodeClass selects a full subnet while its zone has a subnet with room: "
            "karpenter-subnets has nothing to do (add address space with another --strategy)"
        )
    by_id = {s.subnet_id: s for s in eks.subnets}
    steps: list[Step] = []
    notes: list[str] = []
    basis: dict[str, Any] = {"vpc_id": eks.vpc.vpc_id, "ec2nodeclasses": {}, "subnets": {}}
    for cp in found:
        c = cp.node_class
        dropped = sorted({s.subnet_id for z in cp.zones for s in z.full})
        added = sorted(set(cp.keep) - set(c.subnets or ()) - set(dropped))
        steps.append(
            Step(
                id=f"narrow-subnets-{c.name}",
                action=UPDATE_EC2_NODE_CLASS.name,
                params={"name": c.name, "subnet_ids": list(cp.keep)},
                description=f"select subnets {', '.join(cp.keep)} in EC2NodeClass {c.name} (by id), leaving out "
                f"the full {', '.join(dropped)}",
                permissions=UPDATE_EC2_NODE_CLASS.permissions,
            )
        )
        basis["ec2nodeclasses"][c.name] = {"subnet_terms": _terms(c.subnet_terms), "subnets": list(c.subnets)}
        for sid in (*cp.keep, *dropped):
            basis["subnets"][sid] = {"cidr": by_id[sid].cidr, "az": by_id[sid].az}
        notes.append(
            f"Changing EC2NodeClass {c.name}'s subnets makes Karpenter's drift replace its nodes: the "
            f"{len(cp.nodes_leaving)} node(s) in the subnets left out ({', '.join(cp.nodes_leaving) or 'none'}) "
            f"by SubnetDrift, and, since the plan tag in spec.tags is part of the hashed spec, all "
            f"{len(cp.nodes)} node(s) of the NodePools using it ({', '.join(cp.nodes) or 'none'}), within the "
            "NodePools' disruption budgets."
        )
        if added:
            notes.append(
                f"{', '.join(added)} {'is' if len(added) == 1 else 'are'} the cluster's own subnet(s) in "
                f"{', '.join(sorted({by_id[s].az for s in added}))} and {'was' if len(added) == 1 else 'were'} not "
                "selected: check their route tables give nodes the same way out (NAT or internet) before applying."
            )
        notes.append(
            "Subnets are now named by id: subnets tagged later are not picked up until the terms are widened "
            "again; `cidrx rollback` restores the previous terms."
        )
    summary = {
        "node_classes": {
            cp.node_class.name: {
                "keep": list(cp.keep),
                "nodes_rolled": len(cp.nodes),
                "nodes_in_left_out_subnets": len(cp.nodes_leaving),
            }
            for cp in found
        }
    }
    return seal_plan(snapshot, created_at, "karpenter-subnets", basis, steps, notes, summary)


def check_drift(plan: Plan, snapshot: Snapshot, begun: Collection[str] = ()) -> None:
    """Refuse (StalePlan) when a node class's terms changed (other than to the planned ones), or a subnet the
    plan keeps or leaves out is gone or moved."""
    check_plan_drift(plan, snapshot, _drift)


def _drift(plan: Plan, eks: EksSection, snapshot: Snapshot) -> list[str]:
    problems: list[str] = []
    have = {c.name: c for c in provisioners(eks).classes(EC2_NODE_CLASS)}
    planned = {s.params["name"]: s.params["subnet_ids"] for s in plan.steps if s.action == UPDATE_EC2_NODE_CLASS.name}
    for name, was in plan.basis["ec2nodeclasses"].items():
        c = have.get(name)
        if c is None:
            continue  # the shared check names it
        terms = _terms(c.subnet_terms)
        if terms != was["subnet_terms"] and terms != [{"id": i} for i in planned.get(name, [])]:
            problems.append(f"EC2NodeClass {name}'s subnetSelectorTerms changed since the plan")
    subnets = {s.subnet_id: s for s in eks.subnets}
    for sid, was in plan.basis["subnets"].items():
        s = subnets.get(sid)
        if s is None or (s.cidr, s.az) != (was["cidr"], was["az"]):
            problems.append(f"subnet {sid} ({was['cidr']}) is gone or changed")
    return problems


def read_basis(plan: Plan, snapshot: Snapshot) -> dict[str, Any]:
    """The basis as the estate shows it now (cidrx.engine.basis compares it key by key): each node class the
    plan names (in its steps or its basis) with its terms and resolved subnets, and each subnet it keeps or
    leaves out with its CIDR and zone. A node class that already carries the plan's terms is this plan's own
    progress: its earlier terms can no longer be read and stand as the plan recorded them."""
    eks = eks_section(snapshot)
    have = {c.name: c for c in provisioners(eks).classes(EC2_NODE_CLASS)}
    planned = {
        str(s.params["name"]): list(s.params["subnet_ids"])
        for s in plan.steps
        if s.action == UPDATE_EC2_NODE_CLASS.name
    }
    was = plan.basis.get("ec2nodeclasses") or {}
    classes: dict[str, Any] = {}
    for name in [*planned, *(n for n in was if n not in planned)]:
        c = have.get(name)
        if c is None:
            classes[name] = None
            continue
        terms = _terms(c.subnet_terms)
        if name in planned and name in was and terms == [{"id": i} for i in planned[name]]:
            classes[name] = was[name]
        else:
            classes[name] = {"subnet_terms": terms, "subnets": list(c.subnets)}
    by_id = {s.subnet_id: s for s in eks.subnets}
    wanted = [*(sid for keep in planned.values() for sid in keep), *(plan.basis.get("subnets") or {})]
    subnets: dict[str, Any] = {}
    for sid in wanted:
        s = by_id.get(sid)
        subnets[sid] = {"cidr": s.cidr, "az": s.az} if s is not None else None
    return {"vpc_id": eks.vpc.vpc_id, "ec2nodeclasses": classes, "subnets": subnets}


ACTIONS = (UPDATE_EC2_NODE_CLASS,)
