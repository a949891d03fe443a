"""The subnet actions: create a pod subnet (tagged with the plan), associate it with a route table, and reserve
an aligned block of an existing subnet for /28 prefixes; with their executors, undos and Terraform
(aws_subnet, aws_route_table_association, aws_ec2_subnet_cidr_reservation).
"""

from __future__ import annotations

from typing import Any

from cidrx.engine.executor import Outputs, StepContext
from cidrx.errors import CloudError, StalePlan
from cidrx.model.plan import DIGEST_TAG, Step
from cidrx.providers.eks.actions.context import SHORT_TIMEOUT, eks_api, plan_tags, tag_of
from cidrx.providers.eks.actions.hcl import IGNORE_APPLIED_AT, plan_tags_hcl
from cidrx.providers.eks.facts.ipam_pools import subnet_cidr
from cidrx.registry import Action
from cidrx.render.hcl import Block, Expr, import_block, tf_name
from cidrx.render.terraform import REF, Emitter


class CreateSubnet:
    def _mine(self, params: dict[str, Any], ctx: StepContext) -> dict[str, Any] | None:
        for s in eks_api(ctx).find_subnets_by_tag(params["vpc_id"], DIGEST_TAG, ctx.plan_id):
            if s.get("CidrBlock") == subnet_cidr(params) and s.get("AvailabilityZone") == params["az"]:
                return s
        return None

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        found = self._mine(params, ctx)
        return {"subnet_id": found["SubnetId"]} if found else None

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        cidr = subnet_cidr(params)  # planned, or carved from the CIDR an IPAM pool gave
        for s in eks_api(ctx).describe_subnets(params["vpc_id"]):
            if s.get("CidrBlock") == cidr:
                tags = {t.get("Key"): t.get("Value") for t in s.get("Tags") or []}
                if tags.get(DIGEST_TAG) == ctx.plan_id:
                    # Created by another run of this very plan (a crashed one, or one racing us before the
                    # plan lock existed): adopt it, as a resume would.
                    return {"subnet_id": s["SubnetId"]}
                raise StalePlan(f"subnet {s['SubnetId']} with {cidr} exists but is not from this plan; make a new plan")
        subnet = eks_api(ctx).create_subnet(params["vpc_id"], params["az"], cidr, plan_tags(ctx, params["tags"]))
        return {"subnet_id": subnet["SubnetId"]}

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        def probe() -> bool | None:
            found = self._mine(params, ctx)
            return True if found and found.get("State", "available") == "available" else None

        ctx.wait_until(f"subnet {outputs['subnet_id']} to be available", probe, timeout=SHORT_TIMEOUT)

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        found = self._mine(params, ctx)
        if found is None or found["SubnetId"] != outputs["subnet_id"]:
            raise CloudError(f"subnet {outputs['subnet_id']} ({subnet_cidr(params)} in {params['az']}) is not there")


class AssociateRouteTable:
    def _association(self, params: dict[str, Any], ctx: StepContext) -> tuple[str, str] | None:
        vpc_id = ctx.plan.basis.get("vpc_id", "")
        for rt in eks_api(ctx).describe_route_tables(vpc_id):
            for assoc in rt.get("Associations", []):
                if assoc.get("SubnetId") == params["subnet_id"]:
                    return str(rt["RouteTableId"]), str(assoc["RouteTableAssociationId"])
        return None

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        found = self._association(params, ctx)
        if found is None:
            return None
        table, assoc = found
        if table != params["route_table_id"]:
            raise CloudError(
                f"subnet {params['subnet_id']} is associated with {table}, not {params['route_table_id']}; "
                "someone changed it during apply"
            )
        return {"association_id": assoc}

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        return {"association_id": eks_api(ctx).associate_route_table(params["route_table_id"], params["subnet_id"])}

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        return None

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        if self.check(step, params, ctx) is None:
            raise CloudError(f"subnet {params['subnet_id']} is not associated with {params['route_table_id']}")


class ReserveSubnetCidr:
    def _found(self, params: dict[str, Any], ctx: StepContext) -> dict[str, Any] | None:
        for r in eks_api(ctx).get_subnet_cidr_reservations(params["subnet_id"]):
            if r.get("Cidr") == params["cidr"]:
                return r
        return None

    def check(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        found = self._found(params, ctx)
        return {"reservation_id": found.get("SubnetCidrReservationId", "")} if found else None

    def act(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs:
        r = eks_api(ctx).create_subnet_cidr_reservation(
            params["subnet_id"],
            params["cidr"],
            f"cidrx plan {ctx.plan_id}: keep for /28 prefixes",
            reservation_type=params.get("type", "prefix"),
            tags=plan_tags(ctx),
        )
        return {"reservation_id": r.get("SubnetCidrReservationId", "")}

    def wait(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        return None

    def verify(self, step: Step, params: dict[str, Any], ctx: StepContext, outputs: Outputs) -> None:
        if self._found(params, ctx) is None:
            raise CloudError(f"reservation {params['cidr']} in {params['subnet_id']} is not there")


def _subnet_id(params: dict[str, Any]) -> str | None:
    """The subnet a step names, when its reference could be resolved (from the journal or the plan tag)."""
    value = params.get("subnet_id")
    if isinstance(value, str) and value.startswith("subnet-"):
        return value
    return None


class UndoRouteTableAssociation:
    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        subnet_id = _subnet_id(params)
        if subnet_id is None:
            return None  # its subnet is gone (or was never made): nothing is associated
        ours = eks_api(ctx).find_subnets_by_tag(ctx.plan.basis.get("vpc_id", ""), DIGEST_TAG, ctx.plan_id)
        if subnet_id not in {s["SubnetId"] for s in ours}:
            return None
        found = AssociateRouteTable()._association(params, ctx)
        return {"route_table_id": found[0], "association_id": found[1]} if found else None

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        return None  # a subnet in use is refused by its own undo

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        return f"disassociate subnet {params['subnet_id']} from route table {found['route_table_id']}"

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        eks_api(ctx).disassociate_route_table(found["association_id"])
        return {"association_id": found["association_id"]}

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        return None


class UndoSubnet:
    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        found = CreateSubnet()._mine(params, ctx)
        # The CIDR as created: planned, or carved from the CIDR an IPAM pool gave.
        return {"subnet_id": found["SubnetId"], "cidr": str(found.get("CidrBlock") or "")} if found else None

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        enis = [
            e.get("NetworkInterfaceId", "")
            for e in eks_api(ctx).describe_network_interfaces(params["vpc_id"])
            if e.get("SubnetId") == found["subnet_id"]
        ]
        if enis:
            return (
                f"subnet {found['subnet_id']} ({found['cidr']}) still has {len(enis)} network interface(s) "
                f"({', '.join(sorted(enis)[:3])})"
            )
        return None

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        return f"delete subnet {found['subnet_id']} ({found['cidr']} in {params['az']})"

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        eks_api(ctx).delete_subnet(found["subnet_id"])
        return {"subnet_id": found["subnet_id"]}

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        return None


class UndoSubnetCidrReservation:
    def find(self, step: Step, params: dict[str, Any], ctx: StepContext) -> Outputs | None:
        found = ReserveSubnetCidr()._found(params, ctx)
        if found is None:
            return None
        tag = tag_of(found)
        # Untagged (an endpoint that drops the tags, as moto does): the plan's when it reserves exactly the
        # plan's CIDR and the subnet had no such reservation when the plan was made.
        before = (ctx.plan.basis.get("reservations") or {}).get(params["subnet_id"]) or []
        if tag != ctx.plan_id and (tag is not None or params["cidr"] in before):
            return None
        return {"reservation_id": found.get("SubnetCidrReservationId", "")}

    def in_use(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> str | None:
        return None  # prefixes already assigned inside it stay assigned: EC2 only stops keeping the rest free

    def describe(self, step: Step, params: dict[str, Any], found: Outputs) -> str:
        return f"delete the reservation of {params['cidr']} in {params['subnet_id']}"

    def act(self, step: Step, params: dict[str, Any], found: Outputs, ctx: StepContext) -> Outputs:
        eks_api(ctx).delete_subnet_cidr_reservation(found["reservation_id"])
        return {"reservation_id": found["reservation_id"]}

    def wait(self, step: Step, params: dict[str, Any], outputs: Outputs, ctx: StepContext) -> None:
        return None


def _subnet_cidr(e: Emitter, p: dict[str, Any]) -> Any:
    """The planned CIDR, or cidrsubnet() of the CIDR an IPAM pool gave (split_equal's pieces: newbits is the
    log2 of the part count rounded up to a power of two, the piece number is the index)."""
    if p.get("cidr"):
        return p["cidr"]
    carve = p["carve"]
    newbits = (int(carve["parts"]) - 1).bit_length()
    ref = e.ref(str(carve["from"]).replace(".cidr}", ".cidr_block}"))
    return Expr(f"cidrsubnet({ref}, {newbits}, {int(carve['index'])})")


def _ref_step(value: str) -> str | None:
    m = REF.match(value)
    return m.group(1) if m else None


def _suffix(step_id: str) -> str:
    return tf_name(step_id.removeprefix("create-subnet-"))


def _subnet_hcl(e: Emitter, step: Step) -> None:
    p = step.params
    b = Block("resource", ("aws_subnet", f"pods_{tf_name(p['az'])}"))
    assoc = next((e.addresses[d] for d in step.depends_on if d in e.addresses), None)
    # Referencing the association orders the subnet after it (its CIDR must be associated first).
    b.attr("vpc_id", Expr(f"{assoc}.vpc_id") if assoc else p["vpc_id"])
    b.attr("availability_zone", p["az"]).attr("cidr_block", _subnet_cidr(e, p))
    b.attr("tags", plan_tags_hcl(e, p.get("tags", {})))
    b.block("lifecycle").attr("ignore_changes", [IGNORE_APPLIED_AT])
    address = e.add(step, b)
    if sid := e.out(step.id, "subnet_id"):
        e.imports.append(import_block(address, sid))


def _route_table_hcl(e: Emitter, step: Step) -> None:
    p = step.params
    subnet_step = _ref_step(p["subnet_id"])
    b = Block("resource", ("aws_route_table_association", f"pods_{_suffix(subnet_step or step.id)}"))
    b.attr("subnet_id", e.ref(p["subnet_id"])).attr("route_table_id", p["route_table_id"])
    address = e.add(step, b)
    sid = e.out(subnet_step, "subnet_id") if subnet_step else p["subnet_id"]
    if sid and e.out(step.id, "association_id"):
        e.imports.append(import_block(address, f"{sid}/{p['route_table_id']}"))


def _reservation_hcl(e: Emitter, step: Step) -> None:
    p = step.params
    b = Block("resource", ("aws_ec2_subnet_cidr_reservation", f"prefixes_{tf_name(p['subnet_id'])}"))
    b.attr("subnet_id", p["subnet_id"]).attr("cidr_block", p["cidr"])
    b.attr("reservation_type", p.get("type", "prefix"))
    b.attr("description", f"cidrx plan {e.plan.plan_id}: keep for /28 prefixes")
    address = e.add(step, b)
    if rid := e.out(step.id, "reservation_id"):
        e.imports.append(import_block(address, f"{p['subnet_id']}:{rid}"))


CREATE_SUBNET = Action(
    "eks.create-subnet",
    ("ec2:CreateSubnet", "ec2:CreateTags", "ec2:DescribeSubnets"),
    CreateSubnet,
    undo=UndoSubnet,
    undo_permissions=("ec2:DeleteSubnet", "ec2:DescribeSubnets", "ec2:DescribeNetworkInterfaces"),
    hcl=_subnet_hcl,
)
ASSOCIATE_ROUTE_TABLE = Action(
    "eks.associate-route-table",
    ("ec2:AssociateRouteTable", "ec2:DescribeRouteTables"),
    AssociateRouteTable,
    undo=UndoRouteTableAssociation,
    undo_permissions=("ec2:DisassociateRouteTable", "ec2:DescribeRouteTables", "ec2:DescribeSubnets"),
    hcl=_route_table_hcl,
)
RESERVE_SUBNET_CIDR = Action(
    "eks.reserve-subnet-cidr",
    ("ec2:CreateSubnetCidrReservation", "ec2:CreateTags", "ec2:GetSubnetCidrReservations"),
    ReserveSubnetCidr,
    undo=UndoSubnetCidrReservation,
    undo_permissions=("ec2:DeleteSubnetCidrReservation", "ec2:GetSubnetCidrReservations"),
    hcl=_reservation_hcl,
)
