"""The VPC CIDR actions: associate a secondary CIDR with the VPC (a planned one, or one an AWS VPC IPAM pool
picks at apply time), with their executors, their undos (disassociate, only while no subnet the plan did not
make uses it) and their Terraform (aws_vpc_ipv4_cidr_block_association).
"""

from __future__ import annotations

from ipaddress import IPv4Network
from typing import Any

from cidrx.engine.executor import Outputs, StepContext
from cidrx.errors import CloudError
from cidrx.model.plan import Step
from cidrx.providers.eks.actions.context import SHORT_TIMEOUT, eks_api, tag_of
from cidrx.providers.eks.facts.ipam_pools import GONE
from cidrx.registry import Action
from cidrx.render.hcl import Block, import_block
from cidrx.render.terraform import Emitter


class AssociateVpcCidr:
    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        found = eks_api(ctx).find_vpc_cidr(params["vpc_id"], params["cidr"])
        return {"association_id": found["AssociationId"]} if found else None

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        assoc = eks_api(ctx).associate_vpc_cidr(params["vpc_id"], params["cidr"])
        return {"association_id": assoc["AssociationId"]}

    def _state(self, params: dict[str, Any], ctx: StepContext, association_id: str) -> str:
        vpc = eks_api(ctx).describe_vpc(params["vpc_id"])
        for assoc in vpc.get("CidrBlockAssociationSet", []):
            if assoc.get("AssociationId") == association_id:
                return str(assoc.get("CidrBlockState", {}).get("State", ""))
        return "missing"

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        def probe() -> str | None:
            state = self._state(params, ctx, outputs["association_id"])
            if state in ("failed", "failing", "disassociated", "missing"):
                raise CloudError(f"association of {cidr} with {params['vpc_id']} ended in state {state}")
            return state if state == "associated" else None

        cidr = outputs.get("cidr") or params["cidr"]
        ctx.wait_until(f"{cidr} to be associated", probe, timeout=SHORT_TIMEOUT, interval=2.0)

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        state = self._state(params, ctx, outputs["association_id"])
        if state != "associated":
            cidr = outputs.get("cidr") or params["cidr"]
            raise CloudError(f"{cidr} is {state} on {params['vpc_id']}, expected associated")


class AssociateVpcCidrFromPool(AssociateVpcCidr):
    """AssociateVpcCidrBlock from an IPAM pool (cidrx.providers.eks.facts.ipam_pools); its outputs carry the CIDR IPAM
    picked. Associations carry no tags: a CIDR of the planned size from the pool that the VPC gained after the
    plan was made is this plan's (the drift check refuses an apply when the VPC gained any other CIDR); the
    journal normally records it anyway."""

    def _find(self, params: dict[str, Any], ctx: StepContext) -> dict[str, Any] | None:
        vpc = eks_api(ctx).describe_vpc(params["vpc_id"])
        before = set(ctx.plan.basis.get("vpc_cidrs", ()))
        candidates = [
            a
            for a in vpc.get("CidrBlockAssociationSet", [])
            if a.get("CidrBlockState", {}).get("State") not in GONE
            and a.get("CidrBlock") not in before
            and IPv4Network(str(a.get("CidrBlock"))).prefixlen == int(params["netmask_length"])
        ]
        if not candidates:
            return None
        allocated = {
            str(a.get("Cidr"))
            for a in eks_api(ctx).get_ipam_pool_allocations(params["ipam_pool_id"])
            if a.get("ResourceId") == params["vpc_id"]
        }
        ours = [a for a in candidates if a.get("CidrBlock") in allocated]
        if len(ours) > 1:
            raise CloudError(
                f"{params['vpc_id']} holds {len(ours)} new /{params['netmask_length']} CIDRs from IPAM pool "
                f"{params['ipam_pool_id']}; cannot tell which one this plan made",
                hint="remove the extra association, then run the same command again",
            )
        return dict(ours[0]) if ours else None

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        found = self._find(params, ctx)
        return {"association_id": found["AssociationId"], "cidr": found["CidrBlock"]} if found else None

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        assoc = eks_api(ctx).associate_vpc_cidr(
            params["vpc_id"], pool_id=params["ipam_pool_id"], netmask_length=int(params["netmask_length"])
        )
        return {"association_id": assoc["AssociationId"], "cidr": assoc["CidrBlock"]}


class UndoVpcCidr:
    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        if params["cidr"] in ctx.plan.basis.get("vpc_cidrs", []):
            return None  # it was there before the plan: not the plan's to remove
        found = eks_api(ctx).find_vpc_cidr(params["vpc_id"], params["cidr"])
        return {"association_id": found["AssociationId"]} if found else None

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        from ipaddress import IPv4Network

        cidr = IPv4Network(params["cidr"])
        others = [
            s["SubnetId"]
            for s in eks_api(ctx).describe_subnets(params["vpc_id"])
            if IPv4Network(s["CidrBlock"]).subnet_of(cidr) and tag_of(s) != ctx.plan_id
        ]
        if others:
            return f"{params['cidr']} holds subnet(s) this plan did not make ({', '.join(sorted(others))})"
        return None

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        return f"disassociate secondary CIDR {params['cidr']} from {params['vpc_id']}"

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        eks_api(ctx).disassociate_vpc_cidr(found["association_id"])
        return {"association_id": found["association_id"]}

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        def gone() -> bool | None:
            return True if eks_api(ctx).find_vpc_cidr(params["vpc_id"], params["cidr"]) is None else None

        ctx.wait_until(f"{params['cidr']} to be disassociated", gone, timeout=SHORT_TIMEOUT, interval=2.0)


class UndoVpcCidrFromPool(UndoVpcCidr):
    """The CIDR an IPAM pool gave: found as the apply found it (new since the plan, of the planned size, allocated
    to this VPC by the pool); disassociating it returns the allocation to the pool."""

    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        found = AssociateVpcCidrFromPool()._find(params, ctx)
        return {"association_id": found["AssociationId"], "cidr": found["CidrBlock"]} if found else None

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        return super().in_use(step, {**params, "cidr": found["cidr"]}, found, ctx)

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        return f"disassociate {found['cidr']} (from IPAM pool {params['ipam_pool_id']}) from {params['vpc_id']}"

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        return {**super().act(step, params, found, ctx), "cidr": found["cidr"]}

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        super().wait(step, {**params, "cidr": outputs["cidr"]}, outputs, ctx)


def _association_hcl(e: Emitter, step: Step) -> None:
    p = step.params
    b = Block("resource", ("aws_vpc_ipv4_cidr_block_association", "pods"))
    b.attr("vpc_id", p["vpc_id"]).attr("cidr_block", p["cidr"])
    address = e.add(step, b)
    if assoc := e.out(step.id, "association_id"):
        e.imports.append(import_block(address, assoc))


def _pool_association_hcl(e: Emitter, step: Step) -> None:
    # IPAM picks the block; the subnets below carve theirs from the association's cidr_block.
    p = step.params
    b = Block("resource", ("aws_vpc_ipv4_cidr_block_association", "pods"))
    b.attr("vpc_id", p["vpc_id"]).attr("ipv4_ipam_pool_id", p["ipam_pool_id"])
    b.attr("ipv4_netmask_length", int(p["netmask_length"]))
    address = e.add(step, b)
    if assoc := e.out(step.id, "association_id"):
        e.imports.append(import_block(address, assoc))


ASSOCIATE_VPC_CIDR = Action(
    "eks.associate-vpc-cidr",
    ("ec2:AssociateVpcCidrBlock", "ec2:DescribeVpcs"),
    AssociateVpcCidr,
    undo=UndoVpcCidr,
    undo_permissions=("ec2:DisassociateVpcCidrBlock", "ec2:DescribeVpcs", "ec2:DescribeSubnets"),
    hcl=_association_hcl,
)
ASSOCIATE_VPC_CIDR_FROM_POOL = Action(
    "eks.associate-vpc-cidr-from-ipam-pool",
    ("ec2:AssociateVpcCidrBlock", "ec2:DescribeVpcs", "ec2:GetIpamPoolAllocations"),
    AssociateVpcCidrFromPool,
    undo=UndoVpcCidrFromPool,
    undo_permissions=(
        "ec2:DisassociateVpcCidrBlock",
        "ec2:DescribeVpcs",
        "ec2:DescribeSubnets",
        "ec2:GetIpamPoolAllocations",
    ),
    hcl=_pool_association_hcl,
)
