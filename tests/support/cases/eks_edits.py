"""What someone else changes in the EKS estate between `--plan` and `--apply` (shared by the EKS cases)."""

from __future__ import annotations

from ipaddress import IPv4Network
from typing import Any

from tests.support.cases import PlanDoc


def associate_overlapping_cidr(live: Any, plan: PlanDoc) -> list[str]:
    """A CIDR inside the planned secondary CIDR is associated with the VPC."""
    theirs = str(list(IPv4Network(plan.basis["cidr"]).subnets(new_prefix=24))[-1])
    live.estate.ec2.associate_vpc_cidr_block(VpcId=live.world.vpc_id, CidrBlock=theirs)
    return [f"{plan.basis['cidr']} now overlaps VPC {live.world.vpc_id} CIDR {theirs}"]


def reserve_in_planned_block(live: Any, plan: PlanDoc) -> list[str]:
    """Someone reserves a /28 inside a block the plan reserves for prefixes."""
    step = next(s for s in plan.steps if s["action"] == "eks.reserve-subnet-cidr")
    sid, cidr = step["params"]["subnet_id"], step["params"]["cidr"]
    theirs = str(next(IPv4Network(cidr).subnets(new_prefix=28)))
    live.estate.ec2.create_subnet_cidr_reservation(SubnetId=sid, Cidr=theirs, ReservationType="explicit")
    return [f"{theirs} was reserved in {sid} and overlaps the planned {cidr}"]


def subnet_in_planned_space(live: Any, plan: PlanDoc) -> list[str]:
    """Someone creates a subnet inside the space the plan takes for a zone's new subnet."""
    az, piece = sorted(plan.basis["subnets"].items())[0]
    theirs = str(next(IPv4Network(piece).subnets(new_prefix=26)))
    made = live.estate.ec2.create_subnet(VpcId=live.world.vpc_id, CidrBlock=theirs, AvailabilityZone=az)
    return [f"{piece} now overlaps subnet {made['Subnet']['SubnetId']}"]
